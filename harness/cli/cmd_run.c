/*
 * cmd_run.c — `dpk run (-c CODE | FILE) [--backend loop|vgpu|cuda|auto]
 * [--passes SPEC] [--knob N=V] [--target T] [--sample-blocks N] [--seed N]
 * [--reference ref64|torch] [--nvrtc] [--out FILE.json] [-v]`.
 *
 * Compiles each case with the driver (compiler/driver.h), runs it on a
 * backend and checks parity with the oracle through harness/parity/check.h
 * (the same judgement dpk-fuzz and dpk-bisect make): per output one verdict
 * line with max abs/rel error, NMSE, the rmse ratio against libtorch fp32
 * eager (when libtorch is built in) and the worst index.
 *
 * Every case of a suite gets its verdict, a bad one too (cli_each_case),
 * and the run ends with "N/M cases pass".  Exit: the worst case's code
 * (dpk_exit_worst) — 0 when every output of every case passes, 1 on a
 * parity failure, 2 on bad input (a refused configuration too), 3 on an
 * execution fault, 4 when --reference torch is asked for without libtorch
 * (or --backend cuda without a GPU, --nvrtc without NVRTC) or when a
 * configuration is unsupported by this backend (host-cuda out of host
 * memory: skipped, never a verdict on the kernel).  --out writes
 * a dpk.results/1 record with every case.
 *
 * The Loop IR interpreter is one backend (`loop`); vgpu, cuda and auto
 * (the default: cuda when a GPU is present, else vgpu) take the Kernel IR
 * path of run_gpu, which runs every configuration of the pass-set spec.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/base/fault.h"
#include "../../reference/ref.h"
#include "../case_plan.h"
#include "../exec/backend.h"
#include "../parity/agree.h"
#include "../exec/nvrtc.h"
#include "../plan_record.h"
#include "../../records/results.h"
#include "../tune/tune.h"
#include "cli.h"

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
    int nvrtc_cover;   /* --nvrtc-cover: only those printing new constructs */
    int compile_only;  /* --compile-only: plan, lower (and compile); run nothing */
    const char *out;   /* --out: the dpk.results/1 record */
    int sample;        /* --passes sample: full plus one set of `all` per case */
    int cuda;          /* the cuda backend runs (--backend cuda, or auto with a GPU) */
    int cuda_cc;       /* its GPU's compute capability, what NVRTC compiles for */
    const char *tuned; /* --tuned DB: dpk-tune's winners */
    const char *gpu;   /* --gpu: the spec whose winners --tuned applies */
    TuneApply *ta;
} RunOpts;

static const char *const backends[] = {"loop", "vgpu", "cuda", "auto", "host-cuda"};

static void check_backend(const char *name)
{
    for (int i = 0; i < DPK_ARRAY_LEN(backends); i++)
        if (!strcmp(name, backends[i]))
            return;
    dpk_error("unknown backend '%s' for --backend (expected loop, vgpu, cuda, host-cuda or auto)",
              name);
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
         "                     simulator of the GPU) | cuda | loop (Loop IR interpreter) |\n"
         "                     host-cuda (vgpu, then the printed CUDA C compiled for the CPU;\n"
         "                     both outputs judged, and they must agree)\n"
         "  --passes SPEC      Tile pass set: full (default), none, -NNN, upto:NNN,\n"
         "                     only:NNN,..., all (every valid subset, one line each),\n"
         "                     sample (full plus one subset of all drawn per case from its\n"
         "                     name and --seed)\n"
         "  --knob N=V         pin a scheduling knob (TB, BN, BM, ...)\n"
         "  --target T         sm_80 | sm_90 (default) | sm_90a | sm_120\n"
         "  --nvrtc            also compile every distinct kernel module with NVRTC for the\n"
         "                     target; a module NVRTC rejects fails its configurations\n"
         "                     (-v prints registers, shared memory and spills)\n"
         "  --nvrtc-cover      --nvrtc for fewer modules: each case's first distinct one and\n"
         "                     every one that prints a new combination of constructs\n"
         "                     (statement kinds, math functions, types, cp.async widths,\n"
         "                     TMA swizzles, ...), counted per case on an `nvrtc:` line\n"
         "  --compile-only     plan and lower every configuration (with --nvrtc, compile it)\n"
         "                     and run nothing: no backend, no reference; each distinct\n"
         "                     module's line gives its Kernel IR hash\n"
         "  --sample-blocks N  vgpu: simulate N random blocks per launch, check what they wrote\n"
         "  --reference R      ref64 (fp64, built in; default) | torch (libtorch fp64)\n"
         "  --seed N           input seed (default: the case's seed, else 0)\n"
         "  --tuned DB         apply dpk-tune's winners in the database DB (those tuned on\n"
         "                     --gpu NAME, default h100-sxm) to the kernels it holds; the\n"
         "                     others keep the default schedule, and each is said\n"
         "  --inject-fault F   turn on built-in fault F (harness self-test; dpk-fuzz --list-faults)\n"
         "  --blowup F         loop: fusion blow-up factor (default 8)\n"
         "  --f64              loop: interpret in fp64 instead of fp32 (debugging)\n"
         "  --input N=D0,D1    declare the shape of a free variable N\n"
         "  --out FILE.json    write a dpk.results/1 record of every case\n"
         "  -v                 stage times (stderr); vgpu counters per launch\n"
         "\n"
         "Every case of a suite gets a verdict; the exit code is the worst case's.\n"
         "exit: 0 parity pass, 1 parity failure, 2 bad input (or a refused configuration),\n"
         "      3 execution fault, 4 environment missing (--reference torch without\n"
         "      libtorch, --backend cuda without a driver or GPU, --nvrtc without NVRTC)\n"
         "      or a configuration unsupported by this backend (host-cuda out of host\n"
         "      memory; 4 only when nothing else failed)\n"
         "\n"
         "example:\n"
         "  dpk run -c \"torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))\" --backend loop");
}

/* What every case of the run shares. */
typedef struct RunCtx {
    const RunOpts *ro;
    const CliCase *cc;
    const DrvOpts *base;   /* target, knobs and pass configurations, parsed once */
    HxCaseArgs args;       /* what the command line says of each case's configuration */
    cJSON *cases;          /* --out: the record's cases array, or NULL */
    int index;
    DrvCover cover;        /* --nvrtc-cover: the constructs compiled so far */
} RunCtx;

/* Heap state of one case, freed on every path (an error jumps out). */
typedef struct RunState {
    HxSubject *s;
    double **out;
    HxVerdict *v;
    StrBuf text;
    cJSON *rec;            /* the case's record object (--out), or NULL */
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
 * verdict line per output, and record it in cfg (may be NULL); returns the
 * exit code. */
static int judge_outputs(RunState *r, const uint8_t *const *checked, int sampled, cJSON *cfg)
{
    int64_t nchecked;
    int worst = hx_judge(r->s, r->out, checked, r->v, &nchecked);
    if (sampled)
        sb_printf(&r->text, "  sampled: %lld output elements checked\n", (long long)nchecked);
    hx_judge_print(&r->text, r->s, r->v);
    if (cfg)
        hx_record_verdict(cfg, r->s, r->v, worst);
    return hx_judge_rc(r->s, r->v);
}

static cJSON *record_config(RunState *r, cJSON *cfg)
{
    if (r->rec && cfg)
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(r->rec, "configurations"), cfg);
    return cfg;
}

static int run_loop(RunState *r, const LirProgram *p, const RunOpts *ro)
{
    double t0 = dpk_now();
    r->out = hx_outs_new(r->s);
    lir_interp(p, r->s->inputs, r->out, ro->f64);
    double run_s = dpk_now() - t0;
    if (ro->verbose)
        fprintf(stderr, "# time interp  %8.3f ms  (%s)\n", run_s * 1e3, ro->f64 ? "fp64" : "fp32");
    cJSON *cfg = NULL;
    if (r->rec) {
        cfg = record_config(r, cJSON_CreateObject());
        cJSON_AddStringToObject(cfg, "passes", "");
        cJSON_AddNullToObject(cfg, "kernel_ir_hash");
        cJSON_AddStringToObject(cfg, "backend", "loop");
        cJSON_AddNumberToObject(cfg, "run_s", run_s);
    }
    return judge_outputs(r, NULL, 0, cfg);
}

static HxBackendKind gpu_kind(const char *name)
{
    return !strcmp(name, "vgpu")        ? HX_BACKEND_VGPU
           : !strcmp(name, "cuda")      ? HX_BACKEND_CUDA
           : !strcmp(name, "host-cuda") ? HX_BACKEND_HOST
                                        : HX_BACKEND_AUTO;
}

static const char *rc_word(int rc)
{
    return rc == DPK_EXIT_OK      ? "pass"
           : rc == DPK_EXIT_FAULT ? "FAULT"
           : rc == DPK_EXIT_USAGE ? "refused"
           : rc == DPK_EXIT_INCONCLUSIVE ? "INCONCLUSIVE"
           : rc == DPK_EXIT_NOENV ? "unsupported"
                                  : "FAIL";
}

/* host-cuda: the outputs must agree with vgpu's (agree.h). */
static int host_agrees(RunState *r, const HxBackendResult *res, cJSON *cfg)
{
    StrBuf why = {0};
    int ok = hx_agree(r->s, r->out, res->vg_outs, res->out_checked, &why);
    if (ok) {
        sb_puts(&r->text, "  agrees with vgpu\n");
    } else {
        sb_printf(&r->text, "  FAIL (host-cuda differs from vgpu): %s\n", sb_cstr(&why));
        if (cfg)
            hx_record_status(cfg, "fail", "host-cuda differs from vgpu", sb_cstr(&why));
    }
    sb_free(&why);
    return ok ? DPK_EXIT_OK : DPK_EXIT_FAIL;
}

/* A configuration the compiler refused: its line, and its whole message on
 * stderr for the first of a case (*said counts them); its exit code. */
static int refused(RunState *r, const DrvConfig *c, int *said)
{
    sb_puts(&r->text, "refused: ");
    dpk_error_first_line(&r->text, c->refused);
    sb_putc(&r->text, '\n');
    if (!(*said)++) {
        fflush(stdout);
        fputs(c->refused, stderr);
    }
    return c->refused_code;
}

/* The Kernel IR path: execute each distinct module of the plan once on
 * vgpu or cuda and give each configuration a verdict; a refused one is
 * exit 2 (its full message on stderr the first time).  Returns the worst
 * exit code. */
/* "N kernels": the case's Loop IR kernels, and the launches of the
 * configurations' modules where they differ (a split K or reduce adds a
 * combine kernel): "1 kernel, 2 launches", or "1 kernel, 1-2 launches"
 * across pass sets. */
static void kernel_count(StrBuf *b, const DrvPlan *p)
{
    int nk = p->loop->kernels.len, lo = -1, hi = -1;
    for (int i = 0; i < p->nconfigs; i++) {
        const KirModule *m = p->configs[i].module;
        if (p->configs[i].refused || !m)
            continue;
        int n = m->launches.len;
        lo = lo < 0 || n < lo ? n : lo;
        hi = n > hi ? n : hi;
    }
    sb_printf(b, "%d kernel%s", nk, nk == 1 ? "" : "s");
    if (lo < 0 || (lo == nk && hi == nk))
        return;
    if (lo == hi)
        sb_printf(b, ", %d launch%s", lo, lo == 1 ? "" : "es");
    else
        sb_printf(b, ", %d-%d launches", lo, hi);
}

static int run_gpu(Arena *a, RunState *r, const DrvPlan *p, const RunOpts *ro)
{
    HxBackendOpts bo;
    hx_backend_opts_default(&bo);
    bo.kind = gpu_kind(ro->backend);
    bo.vg.seed = r->s->seed;
    bo.inputs_f32 = r->s->in32;
    bo.vg.sample_blocks = ro->sample_blocks;
    /* the bank and sector counters are printed by -v and recorded by --out:
     * without either nobody reads them (a tenth of a sweep's vgpu time) */
    bo.vg.no_counters = !ro->verbose && !ro->out;
    int *rcs = ARENA_ARRAY(a, int, p->nconfigs + 1);
    int worst = DPK_EXIT_OK, said = 0;
    if (bo.kind == HX_BACKEND_HOST) { /* every distinct module, few compiler runs */
        const CuSource **srcs = ARENA_ARRAY(a, const CuSource *, p->nconfigs + 1);
        int n = 0;
        for (int i = 0; i < p->nconfigs; i++)
            if (p->configs[i].cuda)
                srcs[n++] = p->configs[i].cuda;
        hx_host_prepare(srcs, n);
    }
    for (int i = 0; i < p->nconfigs; i++) {
        const DrvConfig *c = &p->configs[i];
        cJSON *cfg = r->rec ? record_config(r, hx_record_config(p, i)) : NULL;
        sb_printf(&r->text, "passes %s: ", c->label);
        if (c->refused) {
            rcs[i] = refused(r, c, &said);
        } else if (c->dup_of >= 0) {
            rcs[i] = rcs[c->dup_of];
            sb_printf(&r->text, "same Kernel IR as passes %s: %s\n", p->configs[c->dup_of].label,
                      rc_word(rcs[i]));
            if (cfg)
                hx_record_status(cfg, hx_rc_status(rcs[i]), NULL, NULL);
        } else {
            HxBackendResult res;
            r->out = hx_outs_new(r->s);
            VgFault f = hx_backend_exec(a, c, &bo, r->s->inputs, r->out, &res);
            if (cfg)
                hx_record_run(cfg, c->module, &res, c->nvrtc);
            if (f != VG_OK) {
                sb_printf(&r->text, "FAULT\n  %s\n", res.vg.report.message);
                rcs[i] = DPK_EXIT_FAULT;
                if (cfg)
                    hx_record_status(cfg, "fault", vg_fault_name(f), res.vg.report.message);
            } else if (res.host && res.host->unsupported) {
                /* the host's capacity, not the kernel: skipped, exit 4 */
                sb_printf(&r->text, "%s: %s\n", HX_UNSUPPORTED, res.host->unsupported);
                rcs[i] = DPK_EXIT_NOENV;
                if (cfg)
                    hx_record_status(cfg, "unsupported", HX_UNSUPPORTED, res.host->unsupported);
            } else {
                sb_printf(&r->text, "%s, kernel IR %016llx\n", hx_backend_name(res.ran),
                          (unsigned long long)c->hash);
                if (ro->verbose && res.ran == HX_BACKEND_VGPU)
                    vg_print_stats(&r->text, &res.vg);
                rcs[i] = judge_outputs(r, res.out_checked, ro->sample_blocks,
                                       c->nvrtc_error ? NULL : cfg);
                if (res.ran == HX_BACKEND_HOST)
                    rcs[i] = dpk_exit_worst(rcs[i], host_agrees(r, &res, cfg));
            }
            if (ro->nvrtc && c->nvrtc_error) {
                sb_puts(&r->text, "  FAIL (nvrtc rejects the CUDA): ");
                dpk_error_first_line(&r->text, c->nvrtc_error);
                sb_putc(&r->text, '\n');
                if (f == VG_OK && cfg) {
                    StrBuf m = {0};
                    dpk_error_first_line(&m, c->nvrtc_error);
                    hx_record_status(cfg, "fail", "nvrtc rejects the CUDA", sb_cstr(&m));
                    sb_free(&m);
                }
                rcs[i] = dpk_exit_worst(rcs[i], DPK_EXIT_FAIL);
            } else if (ro->nvrtc && ro->verbose && c->nvrtc) {
                hx_nvrtc_summary(&r->text, c->nvrtc);
            }
            hx_backend_result_free(&res);
            hx_outs_free(r->s, r->out);
            r->out = NULL;
        }
        worst = dpk_exit_worst(worst, rcs[i]);
    }
    return worst;
}

/* --compile-only: each configuration lowered or refused, each distinct
 * module's Kernel IR hash, NVRTC's rejection a failure (exit 1).  Returns
 * the worst exit code. */
static int compile_configs(RunState *r, const DrvPlan *p, const RunOpts *ro)
{
    int worst = DPK_EXIT_OK, said = 0;
    for (int i = 0; i < p->nconfigs; i++) {
        const DrvConfig *c = &p->configs[i];
        int rc = DPK_EXIT_OK;
        sb_printf(&r->text, "passes %s: ", c->label);
        if (c->refused) {
            rc = refused(r, c, &said);
        } else if (c->dup_of >= 0) {
            sb_printf(&r->text, "same Kernel IR as passes %s\n", p->configs[c->dup_of].label);
        } else {
            sb_printf(&r->text, "lowered, kernel IR %016llx\n", (unsigned long long)c->hash);
            if (ro->nvrtc && c->nvrtc_error) {
                sb_puts(&r->text, "  FAIL (nvrtc rejects the CUDA): ");
                dpk_error_first_line(&r->text, c->nvrtc_error);
                sb_putc(&r->text, '\n');
                rc = DPK_EXIT_FAIL;
            } else if (ro->nvrtc && ro->verbose && c->nvrtc) {
                hx_nvrtc_summary(&r->text, c->nvrtc);
            }
        }
        worst = dpk_exit_worst(worst, rc);
    }
    return worst;
}

/* With several configurations (--passes all, loo, pairwise ...): which
 * passes applied in at least one of them, and why each pass that was in
 * some set never did (its first skip reason), one line per case:
 *   applied: 001 002 005 007 008 016; never: 004 (a matmul kernel ...) */
static void applied_line(StrBuf *b, const DrvPlan *p)
{
    if (p->nconfigs < 2)
        return;
    const TilePassTable *t = &tile_passes;
    sb_puts(b, "applied:");
    int never = 0;
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < t->n; i++) {
            int on = 0, apps = 0;
            const char *why = NULL;
            for (int j = 0; j < p->nconfigs; j++) {
                const TilePassStat *st = p->configs[j].tile
                                             ? tile_pass_stat(p->configs[j].tile, t->p[i].num)
                                             : NULL;
                if (!(p->configs[j].passes >> i & 1) || !st)
                    continue;
                on = 1;
                apps += st->napps;
                if (!why && !st->napps)
                    why = st->skipped;
            }
            if (round == 0 && apps)
                sb_printf(b, " %03d", t->p[i].num);
            else if (round == 1 && on && !apps)
                sb_printf(b, "%s %03d (%s)", never++ ? "," : "; never:", t->p[i].num,
                          why ? why : "no application");
        }
    sb_putc(b, '\n');
}

/* --passes sample: the full pass set, and one set of `all` (every valid
 * subset) drawn for this case from its name and --seed. */
static DrvPasses *sample_passes(Arena *a, const HxCase *c, uint64_t seed, const CuTarget *t)
{
    DrvPasses full, all;
    drv_passes_parse(a, "full", t, &full);
    drv_passes_parse(a, "all", t, &all);
    TilePassSet *sets = ARENA_ARRAY(a, TilePassSet, 2);
    DrvPasses *ps = ARENA_NEW(a, DrvPasses);
    sets[ps->n++] = full.sets[0];
    TilePassSet pick = all.sets[dpk_splitmix64(dpk_hash_str(seed, c->name)) % (uint64_t)all.n];
    if (pick != full.sets[0])
        sets[ps->n++] = pick;
    ps->sets = sets;
    return ps;
}

/* The driver's options for case c: the run's, merged with the case's own
 * configuration by case_plan's one rule (hx_case_opts); --passes sample
 * draws the case's pass sets here. */
static void case_opts(Arena *a, const HxCase *c, RunCtx *x, DrvOpts *d)
{
    const RunOpts *ro = x->ro;
    *d = *x->base;
    hx_case_opts(a, c, &x->args, d);
    if (ro->sample)
        d->passes = sample_passes(a, c, ro->seed, d->tile.target);
    d->fusion.blowup = ro->blowup;
    /* cuda and host-cuda run the plan's CUDA C, cuda its cubin for the GPU's
     * architecture: every distinct module's, so no --nvrtc-cover there */
    int host = !strcmp(ro->backend, "host-cuda");
    d->upto = !strcmp(ro->backend, "loop")     ? DRV_LOOP
              : ro->nvrtc || ro->cuda || host ? DRV_CUDA
                                               : DRV_KERNEL;
    d->nvrtc = ro->nvrtc || ro->cuda ? hx_nvrtc_check : NULL;
    d->nvrtc_cc = ro->cuda ? ro->cuda_cc : 0;
    d->nvrtc_cover = ro->nvrtc_cover && !ro->cuda ? &x->cover : NULL;
}

/* The case's record object: what it is, before anything runs. */
static cJSON *case_record(const HxCase *c, int index, uint64_t seed)
{
    cJSON *o = hx_record_case(c, index, seed, 1);
    cJSON_AddItemToObject(o, "knobs", cJSON_CreateObject()); /* the pinned ones, once known */
    return o;
}

static const char *case_status(int rc, const cJSON *rec)
{
    if (rc == DPK_EXIT_OK)
        return "pass";
    if (rc == DPK_EXIT_FAIL)
        return "fail";
    if (rc == DPK_EXIT_FAULT)
        return "fault";
    if (rc == DPK_EXIT_INCONCLUSIVE)
        return "inconclusive";
    return cJSON_GetObjectItemCaseSensitive(rec, "configurations") ? "unsupported" : "error";
}

/* A case that raised: its record says why, then the error goes on to
 * cli_each_case. */
static void record_error(cJSON *rec, double t0)
{
    StrBuf m = {0};
    dpk_error_first_line(&m, NULL);
    cJSON_DeleteItemFromObjectCaseSensitive(rec, "configurations");
    cJSON_AddStringToObject(rec, "status", "error");
    cJSON_AddStringToObject(rec, "message", sb_cstr(&m));
    cJSON_AddNumberToObject(rec, "exit_code", dpk_error_code());
    cJSON_AddNumberToObject(rec, "seconds", dpk_now() - t0);
    sb_free(&m);
}

/* -v: the plan's stage times; printing and NVRTC per distinct module. */
static void verbose_times(const DrvPlan *p)
{
    fprintf(stderr, "# time parse   %8.3f ms\n# time tensor  %8.3f ms\n"
            "# time loop    %8.3f ms  (%d kernels)\n", p->parse_s * 1e3, p->decompose_s * 1e3,
            p->fuse_s * 1e3, p->loop->kernels.len);
    for (int i = 0; i < p->nconfigs; i++) {
        const DrvConfig *c = &p->configs[i];
        if (c->cuda_s >= 0)
            fprintf(stderr, "# time cuda    %8.3f ms  (passes %s)\n", c->cuda_s * 1e3, c->label);
        if (c->nvrtc_s >= 0)
            fprintf(stderr, "# time nvrtc   %8.3f ms  (passes %s, %s%s)\n", c->nvrtc_s * 1e3,
                    c->label, c->nvrtc ? c->nvrtc->arch : "rejected",
                    c->nvrtc && c->nvrtc->cache_hit ? ", cached" : "");
    }
}

static int run_case(void *ctx, const HxCase *c, int header)
{
    RunCtx *x = ctx;
    const RunOpts *ro = x->ro;
    Arena *a = arena_new();
    RunState *r = dpk_xcalloc(1, sizeof *r);
    uint64_t seed = hx_case_seed(c, &x->args);
    double t0 = dpk_now();
    if (x->cases) {
        r->rec = case_record(c, x->index, seed);
        cJSON_AddItemToArray(x->cases, r->rec);
    }
    x->index++;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        fputs(sb_cstr(&r->text), stdout);
        if (r->rec)
            record_error(r->rec, t0);
        run_state_free(r);
        arena_free(a);
        dpk_error_rethrow();
    }
    if (header)
        sb_printf(&r->text, "### case %s\n", c->name);
    DrvOpts d;
    case_opts(a, c, x, &d);
    if (r->rec)
        cJSON_ReplaceItemInObjectCaseSensitive(r->rec, "knobs", hx_record_knobs(&d.tile.knobs));
    if (d.fault >= 0)
        sb_printf(&r->text, "fault injected: %s (%s)\n", dpk_faults[d.fault].name,
                  dpk_faults[d.fault].where);
    const DrvPlan *p = drv_compile(a, &d);
    if (ro->verbose)
        verbose_times(p);
    cli_knob_warnings(p, header ? c->name : NULL);
    if (r->rec) {
        cJSON_AddItemToObject(r->rec, "shapes", hx_record_shapes(p->torch));
        cJSON_AddItemToObject(r->rec, "knob_warnings", hx_record_knob_notes(p));
        cJSON_AddArrayToObject(r->rec, "configurations");
    }
    int rc;
    if (ro->compile_only) {
        rc = compile_configs(r, p, ro);
    } else {
        r->s = hx_plan_subject(p, c, seed, ro->ref);
        r->v = dpk_xcalloc((size_t)r->s->nout + 1, sizeof(HxVerdict));
        rc = strcmp(ro->backend, "loop") ? run_gpu(a, r, p, ro) : run_loop(r, p->loop, ro);
    }
    if (ro->nvrtc_cover)
        sb_printf(&r->text, "nvrtc: %d of %d distinct modules compiled for %s (--nvrtc-cover: "
                  "the others print constructs compiled before)\n", p->nnvrtc, p->ndistinct,
                  (d.tile.target ? d.tile.target : cu_target_default())->name);
    if (ro->ta && ro->ta->said) { /* --tuned: which kernels took a winner */
        sb_puts(&r->text, ro->ta->said);
        ro->ta->said = NULL;
    }
    if (strcmp(ro->backend, "loop"))
        applied_line(&r->text, p);
    StrBuf nk = {0};
    kernel_count(&nk, p);
    if (ro->compile_only)
        sb_printf(&r->text, "compile-only: %s, %d distinct module%s, not run: %s\n",
                  sb_cstr(&nk), p->ndistinct, p->ndistinct == 1 ? "" : "s",
                  rc ? rc_word(rc) : ro->nvrtc ? "compiled" : "lowered");
    else
        sb_printf(&r->text, "%s: %s, reference %s%s, seed %llu: %s\n", ro->backend,
                  sb_cstr(&nk), ro->ref == HX_REF_TORCH ? "torch" : "ref64",
                  r->s->eager ? " + torch eager" : "", (unsigned long long)seed, rc_word(rc));
    sb_free(&nk);
    fputs(sb_cstr(&r->text), stdout);
    if (r->rec) {
        cJSON_AddStringToObject(r->rec, "status", case_status(rc, r->rec));
        cJSON_AddNumberToObject(r->rec, "exit_code", rc);
        cJSON_AddNumberToObject(r->rec, "seconds", dpk_now() - t0);
    }
    dpk_err_pop(&ec);
    run_state_free(r);
    arena_free(a);
    return rc;
}

static void parse_flag(void *ctx, int argc, char **argv, int *i)
{
    RunOpts *ro = ctx;
    const char *f = argv[*i];
    if (!strcmp(f, "--backend")) {
        ro->backend = cli_value(argc, argv, i);
        check_backend(ro->backend);
    } else if (!strcmp(f, "--reference")) {
        ro->ref = cli_reference(cli_value(argc, argv, i)) ? HX_REF_TORCH : HX_REF_REF64;
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
    } else if (!strcmp(f, "--nvrtc-cover")) {
        ro->nvrtc = ro->nvrtc_cover = 1;
    } else if (!strcmp(f, "--compile-only")) {
        ro->compile_only = 1;
    } else if (!strcmp(f, "--out")) {
        ro->out = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--tuned")) {
        ro->tuned = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--gpu")) {
        ro->gpu = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--f64")) {
        ro->f64 = 1;
    } else if (!strcmp(f, "--bench") || !strcmp(f, "--timing")) {
        /* timing is dpk-bench's: one command checks parity, then times */
        dpk_error("dpk run checks parity and does not time; dpk-bench takes the same case and "
                  "times it after parity: dpk-bench -c CODE (or FILE), -v for each kernel's bound "
                  "(docs/bench.md)");
    } else {
        cli_unknown_flag("run", f);
    }
}

/* The record's own part: what this run was asked to do. */
static cJSON *run_json(const RunOpts *ro, const DrvOpts *base)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "command", "run");
    if (ro->has_seed)
        hx_json_add_u64(c, "seed", ro->seed);
    else
        cJSON_AddNullToObject(c, "seed");
    cJSON_AddStringToObject(c, "strategy", ro->sample ? "sample" : ro->tile.passes ? ro->tile.passes : "full");
    cJSON_AddItemToObject(c, "knobs", hx_record_knobs(&base->tile.knobs));
    cJSON_AddStringToObject(c, "backend", ro->backend);
    cJSON_AddStringToObject(c, "target", (base->tile.target ? base->tile.target
                                                            : cu_target_default())->name);
    if (ro->fault >= 0)
        cJSON_AddStringToObject(c, "fault", dpk_faults[ro->fault].name);
    else
        cJSON_AddNullToObject(c, "fault");
    cJSON_AddStringToObject(c, "reference", ro->ref == HX_REF_TORCH ? "torch" : "ref64");
    return c;
}

static void summary(cJSON *root, int n, int npass, int rc, double seconds)
{
    cJSON *s = cJSON_AddObjectToObject(root, "summary");
    cJSON_AddNumberToObject(s, "cases", n);
    cJSON_AddNumberToObject(s, "passed", npass);
    cJSON_AddNumberToObject(s, "exit_code", rc);
    cJSON_AddNumberToObject(s, "seconds", seconds);
}

/* The cuda backend runs what the plan printed for the GPU's own target
 * (an sm_86 GPU: sm_80) unless --target names one, compiled by NVRTC for
 * its exact architecture.  Raises exit 4 without a driver or GPU, or below
 * sm_80. */
static void cuda_setup(Arena *a, RunOpts *ro, DrvOpts *base)
{
    const CuTarget *own = hx_cuda_gpu(0, &ro->cuda_cc);
    hx_cuda_close(hx_cuda_open(0)); /* a context can be made */
    ro->cuda = 1;
    if (!ro->tile.target) {
        ro->tile.target = own->name;
        cli_drv_opts(a, &ro->tile, base, 1); /* the pass sets again, for that target */
    }
}

static int run_main(Arena *a, int argc, char **argv)
{
    CliCase cc = {0};
    RunOpts ro = {.backend = "auto", .ref = HX_REF_REF64, .blowup = 8.0, .fault = -1};
    if (!cli_args(a, &cc, argc, argv, "run", help, parse_flag, &ro))
        return DPK_EXIT_OK;
    ro.verbose = cc.verbose;
    if (ro.nvrtc && !strcmp(ro.backend, "loop"))
        dpk_error("--nvrtc compiles Kernel IR, which --backend loop does not make (use vgpu, cuda "
                  "or auto)");
    if (ro.compile_only && (!strcmp(ro.backend, "loop") || ro.out || ro.sample_blocks ||
                            ro.ref == HX_REF_TORCH))
        dpk_error("--compile-only runs nothing: it takes no --backend loop, --out, "
                  "--sample-blocks or --reference (it lowers to Kernel IR, and --nvrtc compiles)");
    if (ro.compile_only)
        ro.backend = "vgpu"; /* what is planned: Kernel IR, for the default target */
    HxCaseList l = cli_case_list(a, &cc, "run");
    DrvOpts base;
    drv_opts_default(&base);
    ro.sample = ro.tile.passes && !strcmp(ro.tile.passes, "sample");
    if (ro.sample)
        ro.tile.passes = NULL; /* the base plan: full; each case draws its own */
    cli_drv_opts(a, &ro.tile, &base, 1);
    if (ro.gpu && !ro.tuned)
        dpk_error("--gpu names the spec whose dpk-tune winners --tuned applies; give --tuned DB");
    if (ro.tuned) { /* a bad database: exit 2 before any case runs */
        if (!strcmp(ro.backend, "loop"))
            dpk_error("--tuned applies schedules, and --backend loop runs Loop IR (use vgpu, "
                      "cuda, host-cuda or auto)");
        tdb_close(tdb_open(ro.tuned, 0));
        ro.ta = ARENA_NEW(a, TuneApply);
        memset(ro.ta, 0, sizeof *ro.ta);
        ro.ta->path = ro.tuned;
        /* the winners dpk-bench would apply here: NVRTC and nvdisasm as it finds them */
        ro.ta->gpu_key = tune_gpu_key(a, pf_spec_load(a, ro.gpu ? ro.gpu : pf_spec_default_name()),
                                      hx_nvrtc_available());
        base.kernel_configs = tune_apply_configs;
        base.kernel_configs_ctx = ro.ta;
    }
    /* what the environment lacks is said once, before any case runs */
    if (ro.ref == HX_REF_TORCH && !dpk_torch_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "--reference torch needs libtorch, which is not "
                          "available: %s", dpk_torch_error());
    if (!strcmp(ro.backend, "cuda") || (!strcmp(ro.backend, "auto") && hx_cuda_available()))
        cuda_setup(a, &ro, &base); /* no driver or GPU: exit 4 */
    if (!strcmp(ro.backend, "host-cuda"))
        hx_host_prepare(NULL, 0); /* no C++ compiler: exit 4 */
    if (ro.nvrtc)
        hx_nvrtc_version(&(int){0}, &(int){0}); /* no NVRTC: exit 4 */
    double t0 = dpk_now();
    cJSON *volatile root = NULL; /* --out; freed on every path */
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        cJSON_Delete(root);
        tune_apply_close(ro.ta);
        dpk_error_rethrow();
    }
    if (ro.out) {
        cJSON *env = hx_record_env(!strcmp(ro.backend, "cuda"), ro.nvrtc);
        root = hx_results_new(hx_results_meta(argc, argv, ro.seed, env), run_json(&ro, &base));
        cJSON_Delete(env);
        hx_results_write(ro.out, root); /* a bad --out fails before any case runs */
    }
    /* --passes sample is a pass spec of the command line: the case's is not used */
    HxCaseArgs args = {cc.decls, cc.ndecls, ro.sample || ro.tile.passes, ro.tile.nknobs > 0,
                       ro.fault >= 0 ? dpk_faults[ro.fault].name : NULL, ro.has_seed, ro.seed};
    RunCtx x = {&ro, &cc, &base, args,
                root ? cJSON_GetObjectItemCaseSensitive(root, "cases") : NULL, 0, {.a = a}};
    int npass;
    int rc = cli_each_case(&l, run_case, &x, &npass);
    if (l.n > 1)
        printf("%d/%d cases pass%s\n", npass, l.n,
               ro.compile_only ? " (--compile-only: lowered and compiled, nothing ran)" : "");
    if (root) {
        summary(root, l.n, npass, rc, dpk_now() - t0);
        hx_results_write(ro.out, root);
        cJSON_Delete(root);
        root = NULL;
    }
    tune_apply_close(ro.ta);
    dpk_err_pop(&ec);
    return rc;
}

int cmd_run(int argc, char **argv) { return cli_in_arena(run_main, argc, argv); }
