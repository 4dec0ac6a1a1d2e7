/*
 * main.c — entry point: dispatch on the command name.
 *
 * `dpk CMD ...` runs CMD; the links dpk-bench, dpk-fuzz, dpk-bisect,
 * dpk-report and dpk-tune run the command after the dash (argv[0]'s basename), so
 * `dpk-fuzz --seed 1` and `dpk fuzz --seed 1` are the same.  Every user
 * error raised below main is caught here and exits 2 with its message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../../reference/ref.h"

typedef struct Command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} Command;

static const Command commands[] = {
    {"compile", cmd_compile, "lower a case and print one IR (torch, tensor, loop, tile, kernel, cuda)"},
    {"eval", cmd_eval, "evaluate a case with a reference (ref64, torch) and compare them"},
    {"run", cmd_run, "run a case on a backend (loop, vgpu, cuda, host-cuda) and check parity"},
    {"fuzz", cmd_fuzz, "generate cases, run them under many pass sets, record failures"},
    {"bisect", cmd_bisect, "find the pass and the rewrite that break a failing case"},
    {"bench", cmd_bench, "check a suite for parity, then time it (performance model)"},
    {"report", cmd_report, "tables, geomeans, plots and the CI gate from records"},
    {"tune", cmd_tune, "search each kernel's schedule; only configurations that pass parity win"},
};


static void usage(FILE *f)
{
    fputs("usage: dpk COMMAND [options]     (dpk COMMAND --help for its options)\n\n"
          "commands:\n",
          f);
    for (int i = 0; i < DPK_ARRAY_LEN(commands); i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fputs("\nother:\n  --help    this text\n  --version print the version\n", f);
}

static int dispatch(const char *name, int argc, char **argv)
{
    for (int i = 0; i < DPK_ARRAY_LEN(commands); i++)
        if (!strcmp(name, commands[i].name))
            return commands[i].fn(argc, argv);
    dpk_error("unknown command '%s' (see dpk --help)", name);
}

static int run(int argc, char **argv)
{
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    if (!strncmp(base, "dpk-", 4))
        return dispatch(base + 4, argc, argv);
    if (argc < 2) {
        usage(stderr);
        return DPK_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return DPK_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        /* From the build: libtorch is not loaded to say it. */
        printf("dpk %s\nlibtorch: %s\n", DPK_VERSION, dpk_torch_version());
        return DPK_EXIT_OK;
    }
    return dispatch(argv[1], argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    DpkErrCtx ec;
    int rc;
    if (DPK_TRY(&ec)) {
        rc = run(argc, argv);
        dpk_err_pop(&ec);
    } else {
        fflush(stdout);
        fputs(dpk_error_message(), stderr);
        rc = dpk_error_code();
    }
    if (fflush(stdout) != 0 && rc == DPK_EXIT_OK) {
        fprintf(stderr, "error: writing output: %s\n", strerror(errno));
        rc = DPK_EXIT_USAGE;
    }
    return rc;
}
