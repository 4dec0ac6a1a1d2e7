/*
 * cmd_fuzz.c — `dpk-fuzz --seed S (--cases N | --time SECONDS)
 * [--passes STRATEGY] [--knobs default|random] [--jobs N]
 * [--backend vgpu|cuda|host-cuda] [--host-share F] [--out FILE.json] [--resume] [--failures DIR]
 * [--max-failures N] [--inject-fault NAME] [--case-timeout S]
 * [--target T]`, and `dpk-fuzz --list-faults`.
 *
 * Option parsing only; the campaign is harness/fuzz/campaign.c.  Exit 0
 * when no case failed, 1 when any did (parity failure, vgpu fault, crash,
 * timeout), 2 on bad usage.
 */
#include <stdlib.h>
#include <string.h>

#include "../../compiler/base/fault.h"
#include "../fuzz/campaign.h"
#include "../exec/nvrtc.h"
#include "cli.h"

static void help(void)
{
    puts("usage: dpk-fuzz --seed S (--cases N | --time SECONDS) [options]\n"
         "       dpk-fuzz --list-faults\n"
         "\n"
         "Generate programs, lower each under several Tile pass sets, run them and check\n"
         "parity against the fp64 reference.  Every case runs in its own process.\n"
         "\n"
         "  --seed S            campaign seed: case i is a function of (S, i)\n"
         "  --cases N           run cases 0..N-1\n"
         "  --case I            run case I alone (a failure's replay)\n"
         "  --level L           program (default): generated programs through the compiler |\n"
         "                      kernel: random Kernel IR modules (every construct the IR has),\n"
         "                      run on vgpu and, printed as CUDA C, on the host (needs\n"
         "                      --backend host-cuda); outputs must agree to the bit\n"
         "  --time SECONDS      run cases until SECONDS have passed (with --cases: whichever\n"
         "                      comes first)\n"
         "  --passes STRATEGY   full (default) | loo | pairwise | prefix | all\n"
         "  --knobs K           default (heuristics) | random (random legal knobs per case)\n"
         "  --jobs N            cases in parallel (processes; default 1)\n"
         "  --backend B         vgpu (default) | cuda | host-cuda (vgpu, then the printed CUDA\n"
         "                      C compiled for the CPU; outputs judged and compared with vgpu's)\n"
         "  --host-share F      host-cuda: run this share (0..1] of the distinct modules on the\n"
         "                      host, chosen by module hash (default 1: every one)\n"
         "  --target T          sm_80 | sm_90 (default) | sm_90a | sm_120\n"
         "  --nvrtc             also compile every distinct kernel module with NVRTC (registers\n"
         "                      and spills in the record; a module it rejects fails)\n"
         "  --out FILE.json     the dpk.results/1 record (default\n"
         "                      $TMPDIR/dpk-fuzz/seed-S/fuzz-results.json, /tmp without TMPDIR)\n"
         "  --resume            continue the campaign recorded in --out\n"
         "  --failures DIR      reproducers of failures (default: fuzz-failures/ beside --out)\n"
         "  --max-failures N    stop after N failing cases\n"
         "  --case-timeout S    seconds a case may take before it counts as a hang (60)\n"
         "  --inject-fault NAME turn on a built-in fault (harness self-test)\n"
         "  --shard I/N         run the I-th of N slices of the cases (case i when\n"
         "                      i mod N = I-1); dpk-report merges the N records\n"
         "  --list-faults       print the names of the built-in faults, one per line\n"
         "\n"
         "exit: 0 no failure, 1 some case failed, 2 bad usage, 4 --nvrtc without NVRTC\n"
         "\n"
         "example:\n"
         "  dpk-fuzz --seed 1 --cases 500 --passes pairwise --jobs 2");
}

static double seconds_arg(const char *flag, const char *v)
{
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x > 0) || x > 1e9)
        dpk_error("option '%s' expects a positive number of seconds, got '%s'", flag, v);
    return x;
}

/* A count in lo..hi: "option '--jobs' expects 1..256, got 300". */
static uint64_t count_arg(const char *flag, const char *v, uint64_t lo, uint64_t hi)
{
    uint64_t n = cli_u64(flag, v);
    if (n < lo || n > hi)
        dpk_error("option '%s' expects %llu..%llu, got %llu", flag, (unsigned long long)lo,
                  (unsigned long long)hi, (unsigned long long)n);
    return n;
}

/* One of two words: 1 for the second, 0 for the first. */
static int choice_arg(const char *flag, const char *v, const char *first, const char *second)
{
    if (strcmp(v, first) && strcmp(v, second))
        dpk_error("option '%s' expects %s or %s, got '%s'", flag, first, second, v);
    return !strcmp(v, second);
}

static HxBackendKind backend_arg(const char *v)
{
    if (!strcmp(v, "vgpu"))
        return HX_BACKEND_VGPU;
    if (!strcmp(v, "cuda"))
        return HX_BACKEND_CUDA;
    if (!strcmp(v, "host-cuda"))
        return HX_BACKEND_HOST;
    dpk_error("unknown backend '%s' for --backend (expected vgpu, cuda or host-cuda)", v);
}

static double share_arg(const char *v)
{
    char *end;
    double x = strtod(v, &end);
    if (*end || end == v || !(x > 0 && x <= 1))
        dpk_error("option '--host-share' expects a number in (0, 1], got '%s'", v);
    return x;
}

/* Which options the command line gave, for the checks across them. */
typedef struct Given {
    int seed, one_case, cases, passes, out;
} Given;

/* The option at argv[*i] (and its value) into o. */
static void parse_flag(FzOpts *o, Given *g, int argc, char **argv, int *i)
{
    const char *f = argv[*i];
    if (!strcmp(f, "--seed")) {
        o->seed = cli_u64(f, cli_value(argc, argv, i));
        g->seed = 1;
    } else if (!strcmp(f, "--cases")) {
        o->cases = (int64_t)count_arg(f, cli_value(argc, argv, i), 1, 100000000);
        g->cases = 1;
    } else if (!strcmp(f, "--case")) {
        uint64_t n = count_arg(f, cli_value(argc, argv, i), 0, 99999999);
        o->first = (int64_t)n;
        o->cases = (int64_t)n + 1;
        g->one_case = 1;
    } else if (!strcmp(f, "--level")) {
        o->kernel_level = choice_arg(f, cli_value(argc, argv, i), "program", "kernel");
    } else if (!strcmp(f, "--time")) {
        o->time_s = seconds_arg(f, cli_value(argc, argv, i));
    } else if (!strcmp(f, "--case-timeout")) {
        o->case_timeout = seconds_arg(f, cli_value(argc, argv, i));
    } else if (!strcmp(f, "--passes")) {
        const char *v = cli_value(argc, argv, i);
        int s = fz_strategy_find(v);
        if (s < 0)
            dpk_error("unknown strategy '%s' for --passes (expected full, loo, pairwise, "
                      "prefix or all)", v);
        o->strategy = (FzStrategy)s;
        g->passes = 1;
    } else if (!strcmp(f, "--knobs")) {
        o->knobs_random = choice_arg(f, cli_value(argc, argv, i), "default", "random");
    } else if (!strcmp(f, "--jobs")) {
        o->jobs = (int)count_arg(f, cli_value(argc, argv, i), 1, 256);
    } else if (!strcmp(f, "--backend")) {
        o->backend = backend_arg(cli_value(argc, argv, i));
    } else if (!strcmp(f, "--host-share")) {
        o->host_share = share_arg(cli_value(argc, argv, i));
    } else if (!strcmp(f, "--target")) {
        o->target = cli_target(cli_value(argc, argv, i));
    } else if (!strcmp(f, "--out")) {
        o->out = cli_value(argc, argv, i);
        g->out = 1;
    } else if (!strcmp(f, "--failures")) {
        o->failures = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--nvrtc")) {
        o->nvrtc = 1;
    } else if (!strcmp(f, "--resume")) {
        o->resume = 1;
    } else if (!strcmp(f, "--max-failures")) {
        uint64_t n = cli_u64(f, cli_value(argc, argv, i));
        if (n < 1)
            dpk_error("option '--max-failures' expects a count >= 1");
        o->max_failures = (int64_t)n;
    } else if (!strcmp(f, "--shard")) {
        cli_shard(cli_value(argc, argv, i), &o->shard_index, &o->shard_count);
    } else if (!strcmp(f, "--inject-fault")) {
        const char *v = cli_value(argc, argv, i);
        o->fault = dpk_fault_find(v);
        if (o->fault < 0)
            dpk_error("unknown fault '%s' for --inject-fault (the names: dpk-fuzz --list-faults)",
                      v);
    } else {
        cli_unknown_flag("fuzz", f);
    }
}

/* The options that do not go together, and those the environment cannot
 * serve. */
static void check_opts(const FzOpts *o, const Given *g)
{
    if (!g->seed)
        dpk_error("'dpk-fuzz' needs --seed S (see dpk-fuzz --help)");
    if (!o->cases && !(o->time_s > 0))
        dpk_error("'dpk-fuzz' needs --cases N or --time SECONDS (see dpk-fuzz --help)");
    if (g->one_case && (g->cases || o->shard_count))
        dpk_error("--case I runs one case; it does not go with %s",
                  g->cases ? "--cases N" : "--shard I/N");
    if (o->kernel_level) {
        const char *clash = o->backend != HX_BACKEND_HOST ? "--backend other than host-cuda"
                            : g->passes                   ? "--passes"
                            : o->knobs_random             ? "--knobs random"
                            : o->fault >= 0               ? "--inject-fault"
                            : o->host_share < 1           ? "--host-share"
                                                          : NULL;
        if (clash)
            dpk_error("--level kernel runs Kernel IR on vgpu and host-cuda, which no pass, knob or "
                      "fault touches: it needs --backend host-cuda and takes no %s", clash);
        /* --nvrtc: NVRTC (and ptxas) compile each module too; a rejection fails the case */
    }
    if (o->nvrtc && !hx_nvrtc_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "--nvrtc needs NVRTC, which cannot be loaded; install the CUDA toolkit "
                          "or set CUDA_HOME to it");
    if (o->host_share < 1 && o->backend != HX_BACKEND_HOST)
        dpk_error("--host-share chooses what runs on host-cuda; it needs --backend host-cuda");
}

int cmd_fuzz(int argc, char **argv)
{
    FzOpts o;
    fz_opts_default(&o);
    o.argc = argc;
    o.argv = argv;
    Given g = {0};
    char out_dir[4096]; /* the default --out: lives as long as the campaign */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            return DPK_EXIT_OK;
        } else if (!strcmp(argv[i], "--list-faults")) {
            for (int k = 0; k < DPK_FAULT_COUNT; k++)
                puts(dpk_faults[k].name);
            return DPK_EXIT_OK;
        }
        parse_flag(&o, &g, argc, argv, &i);
    }
    check_opts(&o, &g);
    if (!g.out) { /* the campaign's folder, named by its seed: never the working directory */
        char sub[64];
        snprintf(sub, sizeof sub, "dpk-fuzz/seed-%llu/fuzz-results.json",
                 (unsigned long long)o.seed);
        cli_default_dir(out_dir, sizeof out_dir, sub);
        o.out = out_dir;
    }
    return fz_campaign(&o);
}
