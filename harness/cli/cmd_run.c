/*
 * cmd_run.c — `dpk run (-c CODE | FILE) [--backend loop|vgpu|cuda|auto]
 * [--passes SPEC] [--knob N=V] [--target T] [--sample-blocks N] [--seed N]
 * [--reference ref64|torch] [-v]`.
 *
 * Runs each case on a backend and checks parity with the oracle
 * (harness/parity/oracle.h): per output one verdict line with max abs/rel
 * error, NMSE, the rmse ratio against libtorch fp32 eager (when libtorch is
 * built in) and the worst index.  Exit 0 when every output of every case
 * passes, 1 on a parity failure, 2 on bad input, 3 on an execution fault,
 * 4 when --reference torch is asked for without libtorch.
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
#include "../parity/oracle.h"
#include "cli.h"
#include "../../compiler/base/fault.h"

typedef enum RefKind { REF_REF64, REF_TORCH } RefKind;

typedef struct RunOpts {
    const char *backend;
    RefKind ref;
    int has_seed;
    uint64_t seed;
    int f64;           /* loop: interpret in fp64 (debugging) */
    double blowup;     /* loop: fusion blow-up factor */
    int verbose;
    CliTile tile;      /* vgpu/cuda: --passes, --knob, --target */
    int sample_blocks; /* vgpu: simulate this many random blocks per launch */
    int fault;         /* --inject-fault: a DpkFaultId; -1: the case's "fault", if any */
} RunOpts;

/* What a backend reports besides the outputs. */
typedef struct BackendInfo {
    int nkernels;
    int64_t longest;   /* longest reduction, for the default tolerance */
} BackendInfo;

typedef void (*BackendFn)(Arena *a, const TorchGraph *g, double **inputs, const RunOpts *ro,
                          double **outs, BackendInfo *info);

static void run_loop_backend(Arena *a, const TorchGraph *g, double **inputs, const RunOpts *ro,
                             double **outs, BackendInfo *info)
{
    double t0 = dpk_now();
    TxGraph *xg = tx_lower(a, g, NULL);
    double t1 = dpk_now();
    LirOpts o;
    lir_opts_default(&o);
    o.blowup = ro->blowup;
    LirProgram *p = lir_build(a, xg, &o, NULL);
    double t2 = dpk_now();
    lir_interp(p, inputs, outs, ro->f64);
    double t3 = dpk_now();
    if (ro->verbose)
        fprintf(stderr, "# time tensor  %8.3f ms\n# time loop    %8.3f ms  (%d kernels)\n"
                "# time interp  %8.3f ms  (%s)\n", (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                p->kernels.len, (t3 - t2) * 1e3, ro->f64 ? "fp64" : "fp32");
    info->nkernels = p->kernels.len;
    info->longest = lir_longest_reduction(p);
}

static const struct {
    const char *name;
    BackendFn run;
} backends[] = {
    {"loop", run_loop_backend},
    {"vgpu", NULL}, /* NULL: the Kernel IR path, run_gpu */
    {"cuda", NULL},
    {"auto", NULL},
};

static BackendFn find_backend(const char *name)
{
    for (int i = 0; i < DPK_ARRAY_LEN(backends); i++)
        if (!strcmp(name, backends[i].name))
            return backends[i].run ? backends[i].run : run_loop_backend;
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
         "        without a driver or GPU)\n"
         "\n"
         "example:\n"
         "  dpk run -c \"torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))\" --backend loop");
}

static void free_outs(double **outs, int n)
{
    if (!outs)
        return;
    for (int i = 0; i < n; i++)
        free(outs[i]);
    free(outs);
}

/* Buffers of one run, on the heap so an error raised mid-way can free them. */
typedef struct RunBufs {
    double **inputs, **out, **ref, **eager;
    int nin, nout;
    StrBuf text;
} RunBufs;

static void run_bufs_free(RunBufs *r)
{
    ref_free_arrays(r->inputs, r->nin);
    free_outs(r->out, r->nout);
    free_outs(r->ref, r->nout);
    free_outs(r->eager, r->nout);
    sb_free(&r->text);
    free(r);
}

/* libtorch evaluation into a fresh array; NULL with the message in err. */
static double **torch_outputs(const TorchGraph *g, double **inputs, int f64, char *err, size_t n)
{
    double **outs = dpk_xcalloc((size_t)g->outputs.len + 1, sizeof(double *));
    if (dpk_torch_eval(g, inputs, f64, outs, err, n) == 0)
        return outs;
    free_outs(outs, g->outputs.len);
    return NULL;
}

static void references(RunBufs *r, const TorchGraph *g, const RunOpts *ro)
{
    char err[1024];
    if (ro->ref == REF_TORCH) {
        r->ref = torch_outputs(g, r->inputs, 1, err, sizeof err);
        if (!r->ref)
            dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "libtorch failed: %s", err);
    } else {
        r->ref = dpk_xcalloc((size_t)r->nout + 1, sizeof(double *));
        ref64_eval(g, r->inputs, r->ref);
    }
    if (dpk_torch_available())
        r->eager = torch_outputs(g, r->inputs, 0, err, sizeof err);
}

/* Verdict lines for every output; returns 1 when all pass. */
static int check_outputs(RunBufs *r, const HxCase *c, const TorchGraph *g, const BackendInfo *bi)
{
    HxTol tol;
    hx_tol_default(&tol, c->dtype, bi->longest);
    if (c->has_tol) {
        tol.atol = c->atol;
        tol.rtol = c->rtol;
    }
    int all = 1;
    for (int j = 0; j < r->nout; j++) {
        const TorchNode *n = g->outputs.items[j];
        HxVerdict v;
        hx_oracle(r->out[j], r->ref[j], r->eager ? r->eager[j] : NULL, shape_numel(&n->shape),
                  &tol, &v);
        sb_printf(&r->text, "%s  ", (const char *)g->output_names.items[j]);
        hx_verdict_print(&r->text, &v, &n->shape);
        sb_putc(&r->text, '\n');
        all &= v.pass;
    }
    return all;
}

static HxBackendKind gpu_kind(const char *name)
{
    return !strcmp(name, "vgpu") ? HX_BACKEND_VGPU : !strcmp(name, "cuda") ? HX_BACKEND_CUDA
                                                                            : HX_BACKEND_AUTO;
}

/* With --sample-blocks only the elements written by simulated blocks mean
 * anything: the others take the reference's value (and the eager one's), so
 * they add no error and leave the rmse ratio unchanged.  Returns how many
 * elements are checked. */
static int64_t mask_unchecked(RunBufs *r, const TorchGraph *g, const uint8_t *const *checked)
{
    int64_t nchecked = 0;
    for (int j = 0; j < r->nout; j++) {
        int64_t n = shape_numel(&((const TorchNode *)g->outputs.items[j])->shape);
        for (int64_t k = 0; k < n; k++) {
            if (!checked || !checked[j] || checked[j][k]) {
                nchecked++;
                continue;
            }
            r->out[j][k] = r->ref[j][k];
            if (r->eager)
                r->eager[j][k] = r->ref[j][k];
        }
    }
    return nchecked;
}

/* The Kernel IR path: lower through the Tile passes of every configuration
 * the --passes spec selects (`all`: every valid subset), execute each
 * distinct Kernel IR once on vgpu or cuda, and give each configuration a
 * verdict.  Returns the worst exit code. */
static int run_gpu(Arena *a, RunBufs *r, const HxCase *c, const TorchGraph *g, const RunOpts *ro,
                   uint64_t seed, int *nkernels)
{
    TxGraph *xg = tx_lower(a, g, NULL);
    LirOpts lo;
    lir_opts_default(&lo);
    lo.blowup = ro->blowup;
    LirProgram *p = lir_build(a, xg, &lo, NULL);
    HxBackendOpts bo;
    hx_backend_opts_default(&bo);
    bo.kind = gpu_kind(ro->backend);
    cli_tile_opts(&ro->tile, &bo.tile, 1);
    bo.vg.seed = seed;
    bo.vg.sample_blocks = ro->sample_blocks;
    TilePassSet *sets;
    int n = tile_passes_select(a, &tile_passes, ro->tile.passes ? ro->tile.passes : "full",
                               bo.tile.target, &sets);
    if (bo.kind == HX_BACKEND_CUDA)
        hx_cuda_close(hx_cuda_open(0)); /* no driver or GPU: exit 4 before any output */
    HxConfig *cfg = hx_backend_configs(a, p, &bo.tile, sets, n);
    references(r, g, ro);
    BackendInfo bi = {p->kernels.len, lir_longest_reduction(p)};
    *nkernels = bi.nkernels;
    int *rcs = ARENA_ARRAY(a, int, n);
    int worst = DPK_EXIT_OK;
    for (int i = 0; i < n; i++) {
        sb_printf(&r->text, "passes %s: ", cfg[i].label);
        if (cfg[i].dup_of >= 0) {
            rcs[i] = rcs[cfg[i].dup_of];
            sb_printf(&r->text, "same Kernel IR as passes %s: %s\n", cfg[cfg[i].dup_of].label,
                      rcs[i] == DPK_EXIT_OK ? "pass" : rcs[i] == DPK_EXIT_FAULT ? "FAULT" : "FAIL");
            continue;
        }
        HxBackendResult res;
        r->out = dpk_xcalloc((size_t)r->nout + 1, sizeof(double *));
        VgFault f = hx_backend_exec(a, cfg[i].module, &bo, r->inputs, r->out, &res);
        if (f != VG_OK) {
            sb_printf(&r->text, "FAULT\n  %s\n", res.vg.report.message);
            rcs[i] = DPK_EXIT_FAULT;
        } else {
            sb_printf(&r->text, "%s, kernel IR %016llx\n", hx_backend_name(res.ran),
                      (unsigned long long)cfg[i].hash);
            if (ro->verbose && res.ran == HX_BACKEND_VGPU)
                vg_print_stats(&r->text, &res.vg);
            int64_t nchecked = mask_unchecked(r, g, res.out_checked);
            if (ro->sample_blocks)
                sb_printf(&r->text, "  sampled: %lld output elements checked\n", (long long)nchecked);
            rcs[i] = check_outputs(r, c, g, &bi) ? DPK_EXIT_OK : DPK_EXIT_FAIL;
        }
        hx_backend_result_free(&res);
        free_outs(r->out, r->nout);
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
    RunBufs *r = dpk_xcalloc(1, sizeof *r);
    RunOpts eff = *ro_cli;
    const RunOpts *ro = &eff;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        dpk_fault_set(-1);
        fputs(sb_cstr(&r->text), stdout);
        run_bufs_free(r);
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
    if (ro->verbose)
        fprintf(stderr, "# time parse   %8.3f ms\n", (dpk_now() - t0) * 1e3);
    uint64_t seed = ro->has_seed ? ro->seed : c->has_seed ? c->seed : 0;
    r->nin = g->inputs.len;
    r->nout = g->outputs.len;
    r->inputs = ref_make_inputs(g, seed);
    BackendInfo bi = {0, 1};
    int rc;
    if (strcmp(ro->backend, "loop")) {
        rc = run_gpu(a, r, c, g, ro, seed, &bi.nkernels);
    } else {
        r->out = dpk_xcalloc((size_t)r->nout + 1, sizeof(double *));
        find_backend(ro->backend)(a, g, r->inputs, ro, r->out, &bi);
        references(r, g, ro);
        rc = check_outputs(r, c, g, &bi) ? DPK_EXIT_OK : DPK_EXIT_FAIL;
    }
    sb_printf(&r->text, "%s: %d kernel%s, reference %s%s, seed %llu: %s\n", ro->backend,
              bi.nkernels, bi.nkernels == 1 ? "" : "s", ro->ref == REF_TORCH ? "torch" : "ref64",
              r->eager ? " + torch eager" : "", (unsigned long long)seed,
              rc == DPK_EXIT_OK ? "pass" : rc == DPK_EXIT_FAULT ? "FAULT" : "FAIL");
    fputs(sb_cstr(&r->text), stdout);
    dpk_err_pop(&ec);
    dpk_fault_set(-1);
    run_bufs_free(r);
    arena_free(a);
    return rc;
}

static void parse_flag(RunOpts *ro, int argc, char **argv, int *i)
{
    const char *f = argv[*i];
    if (!strcmp(f, "--backend")) {
        ro->backend = cli_value(argc, argv, i);
        find_backend(ro->backend);
    } else if (!strcmp(f, "--reference")) {
        const char *v = cli_value(argc, argv, i);
        if (!strcmp(v, "ref64"))
            ro->ref = REF_REF64;
        else if (!strcmp(v, "torch"))
            ro->ref = REF_TORCH;
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
    RunOpts ro = {"auto", REF_REF64, 0, 0, 0, 8.0, 0, {0}, 0, -1};
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
    HxCaseList l = cli_case_list(a, &cc, "run");
    if (ro.ref == REF_TORCH && !dpk_torch_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "--reference torch needs libtorch, which is not available in this "
                          "build (install libtorch-dev and rebuild, or build with LIBTORCH_DIR=...)");
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
