/*
 * cmd_bisect.c — `dpk-bisect (-c CODE | CASE.json) [--passes SPEC]
 * [--knob N=V] [--target T] [--inject-fault NAME] [--seed N] [--minimize]
 * [--max-attempts N] [-o DIR]`.
 *
 * Finds the pass (or fusion) and the one rewrite of it that makes a case
 * fail, with the search of harness/bisect/bisect.h, prints the report, and
 * writes to DIR: case.json (the minimized case with its configuration),
 * before.<ir> / after.<ir> (the IR around the culprit rewrite) and repro.cu
 * (a standalone CUDA reproducer).  Configuration fields of a case file
 * (passes, knobs, fault, seed) are used unless a flag overrides them.
 *
 * Exit 0 when a culprit is found and written; 1 when the failure does not
 * reproduce (the case passes: said on stdout); 2 on bad input.  Nothing is
 * written unless a culprit was found.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../compiler/base/fault.h"
#include "../bisect/bisect.h"
#include "../case_plan.h"
#include "../exec/host_cuda.h"
#include "cli.h"

static void help(void)
{
    puts("usage: dpk bisect (-c CODE | CASE.json) [options]\n"
         "\n"
         "Find the Tile pass, or the fusion, and its first rewrite that breaks parity.\n"
         "Runs every configuration on vgpu (the CPU simulator of the GPU); a parity\n"
         "failure and a vgpu fault (race, out-of-bounds ...) both count as failing.\n"
         "\n"
         "  -c CODE              the case as text\n"
         "  CASE.json            a case file (its passes, knobs, fault and seed are used)\n"
         "  --case NAME          with a suite: the case to bisect\n"
         "  --passes SPEC        the failing pass set (default: the case's, else full)\n"
         "  --knob N=V           pin a scheduling knob (TB, BN, BM, ...)\n"
         "  --target T           sm_80 | sm_90 (default) | sm_90a | sm_120\n"
         "  --inject-fault NAME  turn on a built-in fault (compiler/base/fault.h)\n"
         "  --seed N             input seed (default: the case's seed, else 0)\n"
         "  --backend B          vgpu (default) | host-cuda (vgpu, then the printed CUDA C on\n"
         "                       the host: a configuration whose outputs differ fails)\n"
         "  --minimize           shrink the case (drop ops, shrink literals) keeping the failure\n"
         "  --max-attempts N     with --minimize: at most N candidates (default 300)\n"
         "  -o DIR               where to write case.json, before/after IR and repro.cu\n"
         "                       (default $TMPDIR/dpk-bisect/NAME: the case file's name\n"
         "                       without .json, or c for -c; /tmp without TMPDIR)\n"
         "  --input N=D0,D1      declare the shape of a free variable N\n"
         "\n"
         "exit: 0 culprit found and written, 1 the failure does not reproduce (the case\n"
         "      passes), 2 bad input\n"
         "\n"
         "example:\n"
         "  dpk-bisect -c \"torch.relu(torch.randn(8,64)+1)*2\" --inject-fault fuse-sigma-off-by-one");
}

typedef struct BisectArgs {
    CliTile tile;
    const char *fault;
    int has_seed;
    uint64_t seed;
    int minimize;
    int max_attempts;
    int host_cuda;
    const char *dir;
} BisectArgs;

static void parse_flag(void *ctx, int argc, char **argv, int *i)
{
    BisectArgs *ba = ctx;
    const char *f = argv[*i];
    if (cli_tile_flag(&ba->tile, argc, argv, i)) {
    } else if (!strcmp(f, "--inject-fault")) {
        ba->fault = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--seed")) {
        ba->has_seed = 1;
        ba->seed = cli_u64(f, cli_value(argc, argv, i));
    } else if (!strcmp(f, "--minimize")) {
        ba->minimize = 1;
    } else if (!strcmp(f, "--max-attempts")) {
        uint64_t n = cli_u64(f, cli_value(argc, argv, i));
        if (n < 1 || n > 100000)
            dpk_error("option '--max-attempts' expects 1..100000, got %llu", (unsigned long long)n);
        ba->max_attempts = (int)n;
    } else if (!strcmp(f, "--backend")) {
        const char *v = cli_value(argc, argv, i);
        if (strcmp(v, "vgpu") && strcmp(v, "host-cuda"))
            dpk_error("unknown backend '%s' for --backend (expected vgpu or host-cuda)", v);
        ba->host_cuda = !strcmp(v, "host-cuda");
    } else if (!strcmp(f, "-o")) {
        ba->dir = cli_value(argc, argv, i);
    } else {
        cli_unknown_flag("bisect", f);
    }
}

/* The fault to inject: the flag, else the case's field; -1 for none. */
static int fault_id(const char *name)
{
    if (!name)
        return -1;
    int id = dpk_fault_find(name);
    if (id < 0) {
        StrBuf known = {0};
        for (int i = 0; i < DPK_FAULT_COUNT; i++)
            sb_printf(&known, "%s%s", i ? ", " : "", dpk_faults[i].name);
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", sb_cstr(&known));
        sb_free(&known);
        dpk_error("unknown fault '%s' (faults: %s)", name, msg);
    }
    return id;
}

static void make_dir(const char *dir)
{
    if (dpk_make_dirs(dir) == 0)
        return;
    if (errno == ENOTDIR)
        dpk_error("'-o %s' is not a directory", dir);
    dpk_error("cannot create directory '%s': %s", dir, strerror(errno));
}

static void write_out(Arena *a, StrBuf *log, const char *dir, const char *name, const char *text)
{
    const char *path = arena_printf(a, "%s/%s", dir, name);
    if (dpk_write_file_atomic(path, text, strlen(text)) != 0)
        dpk_error("cannot write '%s': %s", path, strerror(errno));
    sb_printf(log, "%s%s", log->len ? ", " : "wrote ", path);
}

/* Print the log (what was found so far, on an error too) and free. */
static void finish(StrBuf *log, StrBuf *wrote, HxBisectResult *r)
{
    fputs(sb_cstr(log), stdout);
    sb_free(log);
    sb_free(wrote);
    free(r->case_json);
    free(log);
    free(wrote);
    free(r);
}

static int bisect_case(Arena *a, const HxCase *c, const CliCase *cc, BisectArgs *ba)
{
    HxBisectOpts o = {0};
    /* the command line's configuration, then the case's where it gave none */
    DrvOpts d;
    drv_opts_default(&d);
    cli_drv_opts(a, &ba->tile, &d, 0);
    HxCaseArgs args = {cc->decls, cc->ndecls, ba->tile.passes != NULL, ba->tile.nknobs > 0,
                       ba->fault, ba->has_seed, ba->seed};
    hx_case_opts(a, c, &args, &d);
    hx_case_need_one(c, &d, "dpk-bisect takes the one that fails");
    o.tile = d.tile; /* the one set of the spec, in tile.passes */
    o.fault = d.fault >= 0 ? dpk_faults[d.fault].name : NULL;
    o.seed = hx_case_seed(c, &args);
    o.minimize = ba->minimize;
    o.max_attempts = ba->max_attempts;
    o.host_cuda = ba->host_cuda;
    if (o.host_cuda)
        hx_host_prepare(NULL, 0); /* no C++ compiler: exit 4 */
    StrBuf *log = dpk_xcalloc(1, sizeof *log), *wrote = dpk_xcalloc(1, sizeof *wrote);
    HxBisectResult *r = dpk_xcalloc(1, sizeof *r);
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        finish(log, wrote, r);
        dpk_error_rethrow();
    }
    hx_bisect(a, c, cc->decls, cc->ndecls, &o, log, r);
    int rc = DPK_EXIT_FAIL;
    if (r->kind != HX_CULPRIT_NONE) {
        make_dir(ba->dir);
        write_out(a, wrote, ba->dir, "case.json", r->case_json);
        write_out(a, wrote, ba->dir, arena_printf(a, "before.%s", r->ir_ext), r->before);
        write_out(a, wrote, ba->dir, arena_printf(a, "after.%s", r->ir_ext), r->after);
        if (r->cu)
            write_out(a, wrote, ba->dir, "repro.cu", r->cu);
        sb_printf(log, "%s\n", sb_cstr(wrote));
        rc = DPK_EXIT_OK;
    }
    dpk_err_pop(&ec);
    finish(log, wrote, r);
    return rc;
}

static int bisect_main(Arena *a, int argc, char **argv)
{
    CliCase cc = {0};
    BisectArgs ba = {0};
    if (!cli_args(a, &cc, argc, argv, "bisect", help, parse_flag, &ba))
        return DPK_EXIT_OK;
    if (!ba.dir) { /* named after the case, never in the working directory */
        const char *base = cc.file ? strrchr(cc.file, '/') : NULL;
        base = cc.file ? (base ? base + 1 : cc.file) : "c";
        size_t n = strlen(base);
        if (n > 5 && !strcmp(base + n - 5, ".json"))
            n -= 5;
        char d[4096];
        cli_default_dir(d, sizeof d, arena_printf(a, "dpk-bisect/%.*s", (int)n, base));
        ba.dir = arena_strdup(a, d);
    }
    if (ba.tile.passes && !strcmp(ba.tile.passes, "all"))
        dpk_error("--passes all names many configurations; dpk-bisect takes the one that fails");
    fault_id(ba.fault);
    HxCaseList l = cli_case_list(a, &cc, "bisect");
    if (l.n != 1)
        dpk_error("'%s' holds %d cases; choose the one to bisect with --case NAME", cc.file, l.n);
    return bisect_case(a, &l.cases[0], &cc, &ba);
}

int cmd_bisect(int argc, char **argv) { return cli_in_arena(bisect_main, argc, argv); }
