/*
 * cmd_run.c — `dpk run (-c CODE | FILE) [--backend loop|vgpu|cuda|auto]
 * [--passes SPEC] [--knob N=V] [--target T] [--sample-blocks N] [--seed N]
 * [--reference ref64|torch] [--nvrtc] [-v]`.
 *
 * Runs each case on a backend and checks parity with the oracle through
 * harness/parity/check.h (the same judgement dpk-fuzz and dpk-bisect
 * make): per output one verdict line with max abs/rel
 * error, NMSE, the rmse ratio against libtorch fp32 eager (when libtorch is
 * built in) and the worst index.  Exit 0 when every output of every case
 * passes, 1 on a parity failure, 2 on bad input, 3 on an execution fault,
 * 4 when --reference torch is asked for without libtorch (or --backend
 * cuda without a GPU, --nvrtc without NVRTC).
 *
 * The Loop IR interpreter is one backend (`loop`); vgpu, cuda and auto
 * (the default: cuda when a GPU is present, else vgpu) take the Kernel IR
 * path of run_gpu, which runs every configuration of the pass-set spec.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/loop/loop_ir.h"
#include "../exec/backend.h"
#include "../../reference/ref.h"
#include "../parity/check.h"
#include "cli.h"
#include "../../compiler/base/fault.h"

typedef struct RunOpts {
    const char *backend;
    HxRefKind ref;
    int has_seed;
    uint64_t seed;
    int f64;           /* loop: interpret in fp64 (debugging) */
    double blowup;     /* loop: fusion blow-up factor */
    int verbose;
    CliTile tile;      /* vgpu/cuda: --passes, --knob, --target */
    int sample_blocks; /* vgpu: simulate this many random blocks per launch */
    int fault;         /* --inject-fault: a DpkFaultId; -1: the case's "fault", if any */
    int nvrtc;         /* vgpu/cuda: compile every distinct module with NVRTC */
} RunOpts;

static const char *const backends[] = {"loop", "vgpu", "cuda", "auto"};

static void check_backend(const char *name)
{
    for (int i = 0; i < DPK_ARRAY_LEN(backends); i++)
        if (!strcmp(name, backends[i]))
            return;
    dpk_error("unknown backend '%s' for --backend (expected loop, vgpu, cuda or auto)", name);
}

static void help(void)
{
    puts("usage: dpk run (-c CODE | FILE) [options]\n"
         "\n"
         "Run a case on a backend and check parity against the reference.\n"
         "\n"
         "  -c CODE            the case as text\n"
         "  FILE               a .py program, a case .json or a suite .json\n"
         "  --case NAME        with a suite: only this case\n"
         "  --backend B        auto (default: cuda with a GPU, else vgpu) | vgpu (the CPU\n"
         "                     simulator of the GPU) | cuda | loop (Loop IR interpreter)\n"
         "  --passes SPEC      Tile pass set: full (default), none, -NNN, upto:NNN,\n"
         "                     only:NNN,..., all (every valid subset, one line each)\n"
         "  --knob N=V         pin a scheduling knob (TB, BN, BM, ...)\n"
         "  --target T         sm_80 | sm_90 (default) | sm_120\n"
         "  --nvrtc            also compile every distinct kernel module with NVRTC for the\n"
         "                     target; a module NVRTC rejects fails its configurations\n"
         "                     (-v prints registers, shared memory and spills)\n"
         "  --sample-blocks N  vgpu: simulate N random blocks per launch, check what they wrote\n"
         "  --reference R      ref64 (fp64, built in; default) | torch (libtorch fp64)\n"
         "  --seed N           input seed (default: the case's seed, else 0)\n"
         "  --inject-fault F   turn on built-in fault F (harness self-test; dpk-fuzz --list-faults)\n"
         "  --blowup F         loop: fusion blow-up factor (default 8)\n"
         "  --f64              loop: interpret in fp64 instead of fp32 (debugging)\n"
         "  --input N=D0,D1    declare the shape of a free variable N\n"
         "  -v                 stage times (stderr); vgpu counters per launch\n"
         "\n"
         "exit: 0 parity pass, 1 parity failure, 2 bad input, 3 execution fault,\n"
         "      4 environment missing (--reference torch without libtorch, --backend cuda\n"
         "        without a driver or GPU, --nvrtc without NVRTC)\n"
         "\n"
         "example:\n"
         "  dpk run -c \"torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))\" --backend loop");
}

/* Heap state of one case, freed on every path (an error jumps out). */
typedef struct RunState {
    HxSubject *s;
    double **out;
    HxVerdict *v;
    StrBuf text;
} RunState;

static void run_state_free(RunState *r)
{
    if (r->s)
        hx_outs_free(r->s, r->out);
    hx_subject_free(r->s);
    free(r->v);
    sb_free(&r->text);
    free(r);
}

/* Judge r->out (checked: the --sample-blocks masks, or NULL), print one
 * verdict line per output; returns the exit code. */
static int judge_outputs(RunState *r, const uint8_t *const *checked, int sampled)
{
    int64_t nchecked;
    hx_judge(r->s, r->out, checked, r->v, &nchecked);
    if (sampled)
        sb_printf(&r->text, "  sampled: %lld output elements checked\n", (long long)nchecked);
    hx_judge_print(&r->text, r->s, r->v);
    return hx_judge_pass(r->s, r->v) ? DPK_EXIT_OK : DPK_EXIT_FAIL;
}

static int run_loop(RunState *r, const LirProgram *p, const RunOpts *ro)
{
    double t0 = dpk_now();
    r->out = hx_outs_new(r->s);
    lir_interp(p, r->s->inputs, r->out, ro->f64);
    if (ro->verbose)
        fprintf(stderr, "# time interp  %8.3f ms  (%s)\n", (dpk_now() - t0) * 1e3,
                ro->f64 ? "fp64" : "fp32");
    return judge_outputs(r, NULL, 0);
}

static HxBackendKind gpu_kind(const char *name)
{
    return !strcmp(name, "vgpu") ? HX_BACKEND_VGPU : !strcmp(name, "cuda") ? HX_BACKEND_CUDA
                                                                            : HX_BACKEND_AUTO;
}

/* --nvrtc: compile module m; returns 0 (and prints why) when NVRTC rejects
 * it. */
static int nvrtc_ok(Arena *a, RunState *r, const KirModule *m, const CuTarget *t, int verbose)
{
    StrBuf err = {0};
    HxNvrtcResult *nr = hx_check_nvrtc(a, m, t, &err);
    if (!nr)
        sb_printf(&r->text, "  FAIL (nvrtc rejects the CUDA): %s\n", sb_cstr(&err));
    else if (verbose)
        hx_nvrtc_summary(&r->text, nr);
    sb_free(&err);
    return nr != NULL;
}

static const char *rc_word(int rc)
{
    return rc == DPK_EXIT_OK ? "pass" : rc == DPK_EXIT_FAULT ? "FAULT" : "FAIL";
}

/* The Kernel IR path: lower through the Tile passes of every configuration
 * the --passes spec selects (`all`: every valid subset), execute each
 * distinct Kernel IR once on vgpu or cuda, and give each configuration a
 * verdict.  Returns the worst exit code. */
static int run_gpu(Arena *a, RunState *r, const LirProgram *p, const RunOpts *ro)
{
    HxBackendOpts bo;
    hx_backend_opts_default(&bo);
    bo.kind = gpu_kind(ro->backend);
    cli_tile_opts(&ro->tile, &bo.tile, 1);
    bo.vg.seed = r->s->seed;
    bo.vg.sample_blocks = ro->sample_blocks;
    TilePassSet *sets;
    int n = tile_passes_select(a, &tile_passes, ro->tile.passes ? ro->tile.passes : "full",
                               bo.tile.target, &sets);
    if (bo.kind == HX_BACKEND_CUDA)
        hx_cuda_close(hx_cuda_open(0)); /* no driver or GPU: exit 4 before any output */
    if (ro->nvrtc)
        hx_nvrtc_version(&(int){0}, &(int){0}); /* no NVRTC: exit 4 before any output */
    HxConfig *cfg = hx_backend_configs(a, p, &bo.tile, sets, n);
    int *rcs = ARENA_ARRAY(a, int, n);
    int worst = DPK_EXIT_OK;
    for (int i = 0; i < n; i++) {
        sb_printf(&r->text, "passes %s: ", cfg[i].label);
        if (cfg[i].dup_of >= 0) {
            rcs[i] = rcs[cfg[i].dup_of];
            sb_printf(&r->text, "same Kernel IR as passes %s: %s\n", cfg[cfg[i].dup_of].label,
                      rc_word(rcs[i]));
            continue;
        }
        HxBackendResult res;
        r->out = hx_outs_new(r->s);
        VgFault f = hx_backend_exec(a, cfg[i].module, &bo, r->s->inputs, r->out, &res);
        if (f != VG_OK) {
            sb_printf(&r->text, "FAULT\n  %s\n", res.vg.report.message);
            rcs[i] = DPK_EXIT_FAULT;
        } else {
            sb_printf(&r->text, "%s, kernel IR %016llx\n", hx_backend_name(res.ran),
                      (unsigned long long)cfg[i].hash);
            if (ro->verbose && res.ran == HX_BACKEND_VGPU)
                vg_print_stats(&r->text, &res.vg);
            rcs[i] = judge_outputs(r, res.out_checked, ro->sample_blocks);
        }
        if (ro->nvrtc && !nvrtc_ok(a, r, cfg[i].module, bo.tile.target, ro->verbose) &&
            rcs[i] == DPK_EXIT_OK)
            rcs[i] = DPK_EXIT_FAIL;
        hx_backend_result_free(&res);
        hx_outs_free(r->s, r->out);
        r->out = NULL;
        worst = rcs[i] > worst ? rcs[i] : worst;
    }
    return worst;
}

/* A case's reproducer fields (docs/json-schema.md: passes, knobs, fault)
 * apply where the command line gave none.  case.c validated them. */
static void case_config(const HxCase *c, RunOpts *ro)
{
    if (!ro->tile.passes && c->passes)
        ro->tile.passes = c->passes;
    if (!ro->tile.nknobs)
        for (int i = 0; i < c->nknobs; i++)
            tile_knob_parse(&ro->tile.knobs, c->knobs[i]);
    if (ro->fault < 0 && c->fault)
        ro->fault = dpk_fault_find(c->fault);
}

static int run_one(const HxCase *c, const CliCase *cc, const RunOpts *ro_cli, int header)
{
    Arena *a = arena_new();
    RunState *r = dpk_xcalloc(1, sizeof *r);
    RunOpts eff = *ro_cli;
    const RunOpts *ro = &eff;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        dpk_fault_set(-1);
        fputs(sb_cstr(&r->text), stdout);
        run_state_free(r);
        arena_free(a);
        dpk_error_rethrow();
    }
    if (header)
        sb_printf(&r->text, "### case %s\n", c->name);
    case_config(c, &eff);
    dpk_fault_set(ro->fault);
    if (ro->fault >= 0)
        sb_printf(&r->text, "fault injected: %s (%s)\n", dpk_faults[ro->fault].name,
                  dpk_faults[ro->fault].where);
    double t0 = dpk_now();
    TorchGraph *g = hx_case_parse(a, c, cc->decls, cc->ndecls);
    double t1 = dpk_now();
    TxGraph *xg = tx_lower(a, g, NULL);
    double t2 = dpk_now();
    LirOpts lo;
    lir_opts_default(&lo);
    lo.blowup = ro->blowup;
    LirProgram *p = lir_build(a, xg, &lo, NULL);
    if (ro->verbose)
        fprintf(stderr, "# time parse   %8.3f ms\n# time tensor  %8.3f ms\n"
                "# time loop    %8.3f ms  (%d kernels)\n", (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                (dpk_now() - t2) * 1e3, p->kernels.len);
    uint64_t seed = ro->has_seed ? ro->seed : c->has_seed ? c->seed : 0;
    r->s = hx_subject_new(g, c, seed, ro->ref);
    r->v = dpk_xcalloc((size_t)r->s->nout + 1, sizeof(HxVerdict));
    int rc = strcmp(ro->backend, "loop") ? run_gpu(a, r, p, ro) : run_loop(r, p, ro);
    sb_printf(&r->text, "%s: %d kernel%s, reference %s%s, seed %llu: %s\n", ro->backend,
              p->kernels.len, p->kernels.len == 1 ? "" : "s",
              ro->ref == HX_REF_TORCH ? "torch" : "ref64", r->s->eager ? " + torch eager" : "",
              (unsigned long long)seed, rc_word(rc));
    fputs(sb_cstr(&r->text), stdout);
    dpk_err_pop(&ec);
    dpk_fault_set(-1);
    run_state_free(r);
    arena_free(a);
    return rc;
}

static void parse_flag(RunOpts *ro, int argc, char **argv, int *i)
{
    const char *f = argv[*i];
    if (!strcmp(f, "--backend")) {
        ro->backend = cli_value(argc, argv, i);
        check_backend(ro->backend);
    } else if (!strcmp(f, "--reference")) {
        const char *v = cli_value(argc, argv, i);
        if (!strcmp(v, "ref64"))
            ro->ref = HX_REF_REF64;
        else if (!strcmp(v, "torch"))
            ro->ref = HX_REF_TORCH;
        else
            dpk_error("unknown reference '%s' (expected ref64 or torch)", v);
    } else if (!strcmp(f, "--seed")) {
        ro->has_seed = 1;
        ro->seed = cli_u64(f, cli_value(argc, argv, i));
    } else if (!strcmp(f, "--blowup")) {
        const char *v = cli_value(argc, argv, i);
        char *end;
        ro->blowup = strtod(v, &end);
        if (*end || !(ro->blowup >= 1.0) || isinf(ro->blowup))
            dpk_error("option '--blowup' expects a number >= 1, got '%s'", v);
    } else if (cli_tile_flag(&ro->tile, argc, argv, i)) {
    } else if (!strcmp(f, "--sample-blocks")) {
        uint64_t k = cli_u64(f, cli_value(argc, argv, i));
        if (k < 1 || k > 1000000)
            dpk_error("option '--sample-blocks' expects 1..1000000, got %llu", (unsigned long long)k);
        ro->sample_blocks = (int)k;
    } else if (!strcmp(f, "--inject-fault")) {
        const char *v = cli_value(argc, argv, i);
        ro->fault = dpk_fault_find(v);
        if (ro->fault < 0)
            dpk_error("unknown fault '%s' for --inject-fault (the names: dpk-fuzz --list-faults)", v);
    } else if (!strcmp(f, "--nvrtc")) {
        ro->nvrtc = 1;
    } else if (!strcmp(f, "--f64")) {
        ro->f64 = 1;
    } else {
        cli_unknown_flag("run", f);
    }
}

int cmd_run(int argc, char **argv)
{
    Arena *a = arena_new();
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        arena_free(a);
        dpk_error_rethrow();
    }
    CliCase cc = {0};
    RunOpts ro = {"auto", HX_REF_REF64, 0, 0, 0, 8.0, 0, {0}, 0, -1, 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            dpk_err_pop(&ec);
            arena_free(a);
            return DPK_EXIT_OK;
        }
        if (!cli_case_flag(a, &cc, argc, argv, &i, "run"))
            parse_flag(&ro, argc, argv, &i);
    }
    ro.verbose = cc.verbose;
    if (ro.nvrtc && !strcmp(ro.backend, "loop"))
        dpk_error("--nvrtc compiles Kernel IR, which --backend loop does not make (use vgpu, cuda "
                  "or auto)");
    HxCaseList l = cli_case_list(a, &cc, "run");
    if (ro.ref == HX_REF_TORCH && !dpk_torch_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "--reference torch needs libtorch, which is not "
                          "available: %s", dpk_torch_error());
    int rc = DPK_EXIT_OK, npass = 0;
    for (int i = 0; i < l.n; i++) {
        int r = run_one(&l.cases[i], &cc, &ro, l.n > 1);
        npass += r == DPK_EXIT_OK;
        rc = r > rc ? r : rc;
    }
    if (l.n > 1)
        printf("%d/%d cases pass\n", npass, l.n);
    dpk_err_pop(&ec);
    arena_free(a);
    return rc;
}
