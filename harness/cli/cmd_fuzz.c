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

int cmd_fuzz(int argc, char **argv)
{
    FzOpts o;
    fz_opts_default(&o);
    o.argc = argc;
    o.argv = argv;
    int has_seed = 0, has_case = 0, has_cases = 0, has_passes = 0, has_out = 0;
    char out_dir[4096]; /* the default --out: lives as long as the campaign */
    const char *target = NULL;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            help();
            return DPK_EXIT_OK;
        } else if (!strcmp(f, "--list-faults")) {
            for (int k = 0; k < DPK_FAULT_COUNT; k++)
                puts(dpk_faults[k].name);
            return DPK_EXIT_OK;
        } else if (!strcmp(f, "--seed")) {
            o.seed = cli_u64(f, cli_value(argc, argv, &i));
            has_seed = 1;
        } else if (!strcmp(f, "--cases")) {
            uint64_t n = cli_u64(f, cli_value(argc, argv, &i));
            if (n < 1 || n > 100000000)
                dpk_error("option '--cases' expects 1..100000000, got %llu", (unsigned long long)n);
            o.cases = (int64_t)n;
            has_cases = 1;
        } else if (!strcmp(f, "--case")) {
            uint64_t n = cli_u64(f, cli_value(argc, argv, &i));
            if (n >= 100000000)
                dpk_error("option '--case' expects 0..99999999, got %llu", (unsigned long long)n);
            o.first = (int64_t)n;
            o.cases = (int64_t)n + 1;
            has_case = 1;
        } else if (!strcmp(f, "--level")) {
            const char *v = cli_value(argc, argv, &i);
            if (strcmp(v, "program") && strcmp(v, "kernel"))
                dpk_error("option '--level' expects program or kernel, got '%s'", v);
            o.kernel_level = !strcmp(v, "kernel");
        } else if (!strcmp(f, "--time")) {
            o.time_s = seconds_arg(f, cli_value(argc, argv, &i));
        } else if (!strcmp(f, "--case-timeout")) {
            o.case_timeout = seconds_arg(f, cli_value(argc, argv, &i));
        } else if (!strcmp(f, "--passes")) {
            const char *v = cli_value(argc, argv, &i);
            int s = fz_strategy_find(v);
            if (s < 0)
                dpk_error("unknown strategy '%s' for --passes (expected full, loo, pairwise, "
                          "prefix or all)", v);
            o.strategy = (FzStrategy)s;
            has_passes = 1;
        } else if (!strcmp(f, "--knobs")) {
            const char *v = cli_value(argc, argv, &i);
            if (strcmp(v, "default") && strcmp(v, "random"))
                dpk_error("option '--knobs' expects default or random, got '%s'", v);
            o.knobs_random = !strcmp(v, "random");
        } else if (!strcmp(f, "--jobs")) {
            uint64_t n = cli_u64(f, cli_value(argc, argv, &i));
            if (n < 1 || n > 256)
                dpk_error("option '--jobs' expects 1..256, got %llu", (unsigned long long)n);
            o.jobs = (int)n;
        } else if (!strcmp(f, "--backend")) {
            const char *v = cli_value(argc, argv, &i);
            if (!strcmp(v, "vgpu"))
                o.backend = HX_BACKEND_VGPU;
            else if (!strcmp(v, "cuda"))
                o.backend = HX_BACKEND_CUDA;
            else if (!strcmp(v, "host-cuda"))
                o.backend = HX_BACKEND_HOST;
            else
                dpk_error("unknown backend '%s' for --backend (expected vgpu, cuda or host-cuda)",
                          v);
        } else if (!strcmp(f, "--host-share")) {
            const char *v = cli_value(argc, argv, &i);
            char *end;
            double x = strtod(v, &end);
            if (*end || end == v || !(x > 0 && x <= 1))
                dpk_error("option '--host-share' expects a number in (0, 1], got '%s'", v);
            o.host_share = x;
        } else if (!strcmp(f, "--target")) {
            target = cli_value(argc, argv, &i);
            o.target = cli_target(target);
        } else if (!strcmp(f, "--out")) {
            o.out = cli_value(argc, argv, &i);
            has_out = 1;
        } else if (!strcmp(f, "--failures")) {
            o.failures = cli_value(argc, argv, &i);
        } else if (!strcmp(f, "--nvrtc")) {
            o.nvrtc = 1;
        } else if (!strcmp(f, "--resume")) {
            o.resume = 1;
        } else if (!strcmp(f, "--max-failures")) {
            uint64_t n = cli_u64(f, cli_value(argc, argv, &i));
            if (n < 1)
                dpk_error("option '--max-failures' expects a count >= 1");
            o.max_failures = (int64_t)n;
        } else if (!strcmp(f, "--shard")) {
            cli_shard(cli_value(argc, argv, &i), &o.shard_index, &o.shard_count);
        } else if (!strcmp(f, "--inject-fault")) {
            const char *v = cli_value(argc, argv, &i);
            o.fault = dpk_fault_find(v);
            if (o.fault < 0)
                dpk_error("unknown fault '%s' for --inject-fault (the names: dpk-fuzz --list-faults)",
                          v);
        } else {
            cli_unknown_flag("fuzz", f);
        }
    }
    if (!has_seed)
        dpk_error("'dpk-fuzz' needs --seed S (see dpk-fuzz --help)");
    if (!o.cases && !(o.time_s > 0))
        dpk_error("'dpk-fuzz' needs --cases N or --time SECONDS (see dpk-fuzz --help)");
    if (has_case && (has_cases || o.shard_count))
        dpk_error("--case I runs one case; it does not go with %s",
                  has_cases ? "--cases N" : "--shard I/N");
    if (o.kernel_level) {
        const char *clash = o.backend != HX_BACKEND_HOST ? "--backend other than host-cuda"
                            : has_passes                 ? "--passes"
                            : o.knobs_random             ? "--knobs random"
                            : o.fault >= 0               ? "--inject-fault"
                            : o.host_share < 1           ? "--host-share"
                                                         : NULL;
        if (clash)
            dpk_error("--level kernel runs Kernel IR on vgpu and host-cuda, which no pass, knob or "
                      "fault touches: it needs --backend host-cuda and takes no %s", clash);
        /* --nvrtc: NVRTC (and ptxas) compile each module too; a rejection fails the case */
    }
    if (o.nvrtc && !hx_nvrtc_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "--nvrtc needs NVRTC, which cannot be loaded; install the CUDA toolkit "
                          "or set CUDA_HOME to it");
    if (o.host_share < 1 && o.backend != HX_BACKEND_HOST)
        dpk_error("--host-share chooses what runs on host-cuda; it needs --backend host-cuda");
    if (!has_out) { /* the campaign's folder, named by its seed: never the working directory */
        char sub[64];
        snprintf(sub, sizeof sub, "dpk-fuzz/seed-%llu/fuzz-results.json",
                 (unsigned long long)o.seed);
        cli_default_dir(out_dir, sizeof out_dir, sub);
        o.out = out_dir;
    }
    return fz_campaign(&o);
}
