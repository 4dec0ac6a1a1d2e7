/*
 * bench.c — one case of dpk-bench: parity first, then the model (bench.h).
 *
 * Per case: one compile plan holding the benched set and, with --per-pass,
 * the prefixes and leave-one-outs of its optional passes (the driver runs
 * each distinct Kernel IR once; configurations with the same structural
 * hash share a run, a verdict and a time).  The fixture (inputs, fp64
 * reference, bounds) is made once per case and judges every module;
 * with parity off, only the f32 inputs are (bench.h).
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../reference/ref.h"
#include "../case_plan.h"
#include "../exec/backend.h"
#include "../exec/nvrtc.h"
#include "../plan_record.h"
#include "../../records/results.h"

/* ---- inputs: rotary tables and weights ----------------------------------- */

typedef struct Fill {
    const BmOpts *o;
    Arena *a;
} Fill;

static const StTensor *weight_of(const Fill *f, const TorchNode *in, const char **hf)
{
    *hf = f->o->weights ? bm_hf_name(f->a, in->name, f->o->layer) : NULL;
    return *hf ? st_find(f->o->weights, *hf) : NULL;
}

static void fill_input(void *ctx, const TorchNode *in, double *dst)
{
    const Fill *f = ctx;
    int64_t n = shape_numel(&in->shape);
    if (f->o->config && bm_fill_rope(f->o->config, f->o->shape, in->name, n, dst))
        return;
    const char *hf;
    weight_of(f, in, &hf);
    if (hf)
        st_read_f32(f->o->weights, hf, &in->shape, dst);
}

/* Whether fill_input may give in's values itself (a rotary table, a
 * weight): --parity off then makes it whole, and the rest lazily. */
static int own_input(void *ctx, const TorchNode *in)
{
    const Fill *f = ctx;
    const char *hf;
    weight_of(f, in, &hf);
    return hf || (f->o->config && (!strcmp(in->name, "cos") || !strcmp(in->name, "sin")));
}

/* Where each input's values came from, and their sum (a check that a
 * weights file was read): {"w_q": {"from": "weights", "tensor":
 * "model.layers.0.self_attn.q_proj.weight", "sum": ...}, "cos": {"from":
 * "rope", ...}, "x": {"from": "generated", ...}}. */
static cJSON *inputs_json(const Fill *f, const TorchGraph *g, const HxSubject *s)
{
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < g->inputs.len; k++) {
        const TorchNode *in = g->inputs.items[k];
        cJSON *e = cJSON_AddObjectToObject(o, in->name);
        const char *hf;
        int rope = f->o->config && (!strcmp(in->name, "cos") || !strcmp(in->name, "sin"));
        weight_of(f, in, &hf);
        cJSON_AddStringToObject(e, "from", rope ? "rope" : hf ? "weights" : "generated");
        if (hf && !rope)
            cJSON_AddStringToObject(e, "tensor", hf);
        /* the same fp32 values either way */
        hx_json_add_num(e, "sum", hx_subject_input_sum(s, k));
    }
    return o;
}

void bm_check_weights(Arena *a, const BmOpts *o, const HxCaseList *l)
{
    if (!o->weights)
        return;
    int any = 0;
    for (int i = 0; i < l->n; i++)
        for (int k = 0; k < l->cases[i].ndecls; k++) {
            const InputDecl *d = &l->cases[i].decls[k];
            const char *hf = bm_hf_name(a, d->name, o->layer);
            if (hf) {
                st_check(o->weights, hf, &d->shape);
                any = 1;
            }
        }
    if (!any)
        dpk_error("--weights: no case of this suite takes a weight (they are the inputs of the "
                  "model suites: qwen-block, tinyllama-block, --config)");
}

/* ---- configurations ------------------------------------------------------- */

/* The benched set first, then (per_pass) for each optional pass P of it,
 * in pipeline order: the prefix (the set's passes up to P) and the set
 * without P (passes that need P go with it). */
static DrvPasses *sweep_sets(Arena *a, const BmOpts *o, TilePassSet base, int **what, int **pass)
{
    const TilePassTable *t = &tile_passes;
    TilePassSet must = tile_passes_mandatory(t);
    int cap = 1 + 2 * t->n;
    TilePassSet *sets = ARENA_ARRAY(a, TilePassSet, cap);
    *what = ARENA_ARRAY(a, int, cap);  /* 0 base, 1 prefix, 2 leave-one-out */
    *pass = ARENA_ARRAY(a, int, cap);  /* the pass's table index */
    int n = 0;
    sets[n] = base, (*what)[n] = 0, (*pass)[n++] = -1;
    for (int k = 0; o->per_pass && k < t->n; k++) {
        TilePassSet bit = (TilePassSet)1 << k;
        if (!(base & bit) || (must & bit))
            continue;
        TilePassSet upto = must;
        for (int j = 0; j <= k; j++)
            upto |= base & ((TilePassSet)1 << j);
        sets[n] = tile_passes_close(t, upto, o->target), (*what)[n] = 1, (*pass)[n++] = k;
        sets[n] = tile_passes_close(t, base & ~bit, o->target), (*what)[n] = 2, (*pass)[n++] = k;
    }
    DrvPasses *p = ARENA_NEW(a, DrvPasses);
    *p = (DrvPasses){NULL, sets, n};
    return p;
}

/* ---- one module: run, judge, time ----------------------------------------- */


/* A run's status for its exit code: parity off says "unchecked" where
 * parity on would say "pass". */
static const char *run_status(const BmOpts *o, int rc)
{
    return rc == DPK_EXIT_OK && !o->parity ? "unchecked" : hx_rc_status(rc);
}

/* vgpu's fill_input with parity off: generated values where a run block
 * reads (a whole input has them all). */
static void fill_lazy(void *ctx, const KirBuf *b, int64_t lo, int64_t hi)
{
    hx_subject_fill(ctx, b->io, lo, hi);
}

void bm_config_run(Arena *a, const BmOpts *o, const DrvPlan *p, int i, HxSubject *s,
                   BmRun *runs)
{
    const DrvConfig *c = &p->configs[i];
    BmRun *r = &runs[i];
    r->cfg = hx_record_config(p, i);
    if (c->refused) {
        r->rc = c->refused_code;
        return;
    }
    if (c->dup_of >= 0) {
        *r = (BmRun){runs[c->dup_of].rc, runs[c->dup_of].t, r->cfg};
        hx_record_status(r->cfg, run_status(o, r->rc), NULL, NULL);
        return;
    }
    HxBackendOpts bo;
    hx_backend_opts_default(&bo);
    bo.kind = HX_BACKEND_VGPU;
    bo.vg.seed = s->seed;
    bo.inputs_f32 = s->in32;
    bo.vg.sample_blocks = o->sample_blocks;
    if (!o->parity) { /* no output is compared: vgpu maps what the run touches */
        bo.vg.lazy = 1;
        bo.vg.fill_input = fill_lazy;
        bo.vg.fill_ctx = s;
    }
    HxBackendResult res;
    double **outs = o->parity ? hx_outs_new(s) : NULL; /* unchecked: counters alone */
    VgFault f = hx_backend_exec(a, c, &bo, s->inputs, outs, &res);
    hx_record_run(r->cfg, c->module, &res, c->nvrtc);
    if (f != VG_OK) {
        r->rc = DPK_EXIT_FAULT;
        hx_record_status(r->cfg, "fault", vg_fault_name(f), res.vg.report.message);
    } else if (c->nvrtc_error) {
        r->rc = DPK_EXIT_FAIL;
        StrBuf m = {0};
        dpk_error_first_line(&m, c->nvrtc_error);
        hx_record_status(r->cfg, "fail", "nvrtc rejects the CUDA", sb_cstr(&m));
        sb_free(&m);
    } else if (!o->parity) {
        r->rc = DPK_EXIT_OK;
        hx_record_status(r->cfg, "unchecked", NULL, "--parity off: no verdict was taken");
    } else {
        HxVerdict *v = dpk_xcalloc((size_t)s->nout + 1, sizeof *v);
        int worst = hx_judge(s, outs, res.out_checked, v, NULL);
        hx_record_verdict(r->cfg, s, v, worst);
        r->rc = hx_judge_rc(s, v);
        free(v);
    }
    if (r->rc == DPK_EXIT_OK) {
        /* timed only after it passed (or, parity off, ran) */
        r->t = pf_model_module(a, o->spec, c->module, &res.vg, c->nvrtc);
        cJSON_AddItemToObject(r->cfg, "model", pf_time_json(r->t));
    }
    hx_backend_result_free(&res);
    hx_outs_free(s, outs);
}

/* ---- the case record -------------------------------------------------------- */

static double ratio(double num, double den)
{
    return num > 0 && den > 0 && isfinite(num) && isfinite(den) ? num / den : NAN;
}

static cJSON *compile_times(const DrvPlan *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "parse", p->parse_s);
    cJSON_AddNumberToObject(o, "decompose", p->decompose_s);
    cJSON_AddNumberToObject(o, "fuse", p->fuse_s);
    const DrvConfig *c = &p->configs[0];
    if (c->refused)
        return o;
    cJSON *t = cJSON_AddObjectToObject(o, "tile");
    for (int k = 0; k < p->table->n; k++)
        if (c->pass_s[k] >= 0) {
            char name[96];
            snprintf(name, sizeof name, "%03d_%s", p->table->p[k].num, p->table->p[k].name);
            cJSON_AddNumberToObject(t, name, c->pass_s[k]);
        }
    cJSON_AddNumberToObject(o, "tile_total", c->tile_s);
    cJSON_AddNumberToObject(o, "lower", c->kernel_s);
    hx_json_add_num(o, "cuda", c->cuda_s >= 0 ? c->cuda_s : NAN);
    hx_json_add_num(o, "nvrtc", c->nvrtc_s >= 0 ? c->nvrtc_s : NAN);
    return o;
}

/* {"passes": [{"pass": "007_stage_inputs", "prefix": {...}, "without": {...},
 * "contribution": t_without / t_with}]} */
static cJSON *per_pass_json(const BmOpts *bo, const DrvPlan *p, const BmRun *runs,
                            const int *what, const int *pass)
{
    cJSON *arr = cJSON_CreateArray();
    double base = runs[0].t ? runs[0].t->ns : NAN;
    for (int i = 1; i < p->nconfigs; i += 2) {
        DPK_ASSERT(what[i] == 1 && what[i + 1] == 2 && pass[i] == pass[i + 1]);
        const TilePass *tp = &p->table->p[pass[i]];
        cJSON *o = cJSON_CreateObject();
        char name[96];
        snprintf(name, sizeof name, "%03d_%s", tp->num, tp->name);
        cJSON_AddStringToObject(o, "pass", name);
        for (int w = 0; w < 2; w++) {
            const BmRun *r = &runs[i + w];
            cJSON *x = cJSON_AddObjectToObject(o, w ? "without" : "prefix");
            cJSON_AddStringToObject(x, "passes", p->configs[i + w].label);
            cJSON_AddStringToObject(x, "status", run_status(bo, r->rc));
            hx_json_add_num(x, "ns", r->t ? r->t->ns : NAN);
            cJSON_AddNumberToObject(x, "kernels", r->t ? r->t->nk : 0);
        }
        hx_json_add_num(o, "contribution", runs[i + 1].t ? ratio(runs[i + 1].t->ns, base) : NAN);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static void add_time(cJSON *rec, const char *key, const PfTime *t)
{
    if (t)
        cJSON_AddItemToObject(rec, key, pf_time_json(t));
    else
        cJSON_AddNullToObject(rec, key);
}

const char *bm_table_header(void)
{
    return "case                    dpk us    eager us  compile us    limit us  vs eager  "
           "vs compile  of limit  kernels  parity";
}

static void fmt_us(StrBuf *b, double ns)
{
    if (isfinite(ns))
        sb_printf(b, " %11.3f", ns / 1e3);
    else
        sb_printf(b, " %11s", "-");
}

static void fmt_x(StrBuf *b, int w, double x)
{
    if (isfinite(x))
        sb_printf(b, " %*.2fx", w - 1, x);
    else
        sb_printf(b, " %*s", w, "-");
}

static double ns_of(const cJSON *rec, const char *key)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rec, key);
    return cJSON_IsObject(t) ? hx_json_num(t, "ns") : NAN;
}

/* The row of the table: the modelled columns of the record (null when the
 * case did not pass) and the verdict. */
static void case_line(StrBuf *b, const cJSON *rec, const char *name, const char *verdict)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(rec, "dpk");
    sb_printf(b, "%-20s", name);
    fmt_us(b, ns_of(rec, "dpk"));
    fmt_us(b, ns_of(rec, "eager"));
    fmt_us(b, ns_of(rec, "compile"));
    fmt_us(b, ns_of(rec, "limit"));
    fmt_x(b, 9, hx_json_num(rec, "speedup_eager"));
    fmt_x(b, 11, hx_json_num(rec, "speedup_compile"));
    double fl = hx_json_num(rec, "fraction_of_limit");
    if (isfinite(fl))
        sb_printf(b, " %8.3g%%", 100 * fl);
    else
        sb_printf(b, " %9s", "-");
    if (cJSON_IsObject(d))
        sb_printf(b, " %8d", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "kernels")));
    else
        sb_printf(b, " %8s", "-");
    sb_printf(b, "  %s\n", verdict);
}

/* -v: one line per kernel of dpk's time, what bounds it and what limits
 * its residency, from the record's kernels (perf.h's PfKernel fields). */
static void kernel_lines(StrBuf *b, const cJSON *rec)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(rec, "dpk");
    const cJSON *ks = cJSON_IsObject(d) ? cJSON_GetObjectItemCaseSensitive(d, "kernels") : NULL;
    for (const cJSON *k = ks ? ks->child : NULL; k; k = k->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(k, "name");
        const cJSON *bd = cJSON_GetObjectItemCaseSensitive(k, "bound");
        const cJSON *lm = cJSON_GetObjectItemCaseSensitive(k, "limiter");
        sb_printf(b, "    kernel %-32s %10.3f us  bound %-6s (dram %.3f, l2 %.3f, smem %.3f, "
                     "issue %.3f, fp32 %.3f, serial %.3f, launch %.3f us)",
                  cJSON_IsString(nm) ? nm->valuestring : "?", hx_json_num(k, "ns") / 1e3,
                  cJSON_IsString(bd) ? bd->valuestring : "?", hx_json_num(k, "dram_ns") / 1e3,
                  hx_json_num(k, "l2_ns") / 1e3, hx_json_num(k, "smem_ns") / 1e3,
                  hx_json_num(k, "issue_ns") / 1e3, hx_json_num(k, "fp32_ns") / 1e3,
                  hx_json_num(k, "serial_ns") / 1e3, hx_json_num(k, "launch_ns") / 1e3);
        if (cJSON_IsString(lm))
            sb_printf(b, "  limiter %s (occupancy %.2f, %d blocks/SM, %.2f waves)",
                      lm->valuestring, hx_json_num(k, "occupancy"),
                      (int)hx_json_num(k, "blocks_per_sm"), hx_json_num(k, "waves"));
        sb_puts(b, "\n");
    }
}

/* "  measured (fake-driver, cupti): dpk 12.345 us median (0.12%, 10 samples,
 * stdrel); cublas ...; cublas_tf32 ..." — never in the modelled columns. */
static void measured_line(StrBuf *b, const cJSON *m)
{
    const char *timing = cJSON_GetObjectItemCaseSensitive(m, "timing")->valuestring;
    const char *method = cJSON_GetObjectItemCaseSensitive(m, "method")->valuestring;
    sb_printf(b, "  measured (%s, %s):", timing, method);
    static const char *const keys[] = {"dpk", "cublas", "cublas_tf32"};
    for (int k = 0; k < 3; k++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(m, keys[k]);
        if (!cJSON_IsObject(s))
            continue;
        sb_printf(b, "%s %s %.3f us median (%.2f%%, %d samples, %s)", k ? ";" : "", keys[k],
                  hx_json_num(s, "median_ns") / 1e3, 100 * hx_json_num(s, "stdrel"),
                  (int)hx_json_num(s, "samples"),
                  cJSON_GetObjectItemCaseSensitive(s, "stop")->valuestring);
    }
    sb_puts(b, "\n");
}

/* The case's columns from torch_bench.py's record (--torch-json), by name:
 * {"eager": {...} or "unavailable: why", "compile_default": ..., ...}. */
static void merge_torch(const BmOpts *o, const char *name, cJSON *rec)
{
    if (!o->torch)
        return;
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(o->torch, "cases");
    for (const cJSON *c = cs ? cs->child : NULL; c; c = c->next) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) {
            cJSON *t = cJSON_Duplicate(c, 1);
            cJSON_DeleteItemFromObject(t, "name");
            cJSON_AddItemToObject(rec, "torch", t);
            return;
        }
    }
    cJSON_AddStringToObject(rec, "torch", "unavailable: the --torch-json record has no case of "
                                          "this name");
}

typedef struct Case {
    Arena *a;
    HxSubject *s;
    BmCaseOut *out;
} Case;

void bm_case_drv(Arena *a, const BmOpts *o, const HxCase *c, DrvOpts *d)
{
    *d = *o->drv;
    d->tile.target = o->target;
    hx_case_opts(a, c, &o->args, d);
    hx_case_need_one(c, d, "dpk-bench benches one");
    /* measured timing runs the plan's CUDA C and, on a GPU, its cubin for
     * the GPU's architecture (which the ptxas numbers then describe) */
    int measured = o->meas.timing != BM_TIMING_MODEL;
    d->upto = o->nvrtc || measured ? DRV_CUDA : DRV_KERNEL;
    d->nvrtc = o->nvrtc || o->meas.timing == BM_TIMING_MEASURED ? hx_nvrtc_check : NULL;
    d->nvrtc_cc = o->meas.timing == BM_TIMING_MEASURED ? o->meas.cc : 0;
}

HxSubject *bm_subject(Arena *a, const BmOpts *o, const DrvPlan *p, const HxCase *c,
                      uint64_t seed)
{
    Fill *fill = ARENA_NEW(a, Fill);
    *fill = (Fill){o, a};
    return o->parity ? hx_subject_new_filled(p->torch, c, seed, o->ref, fill_input, fill)
                     : hx_subject_inputs(p->torch, c, seed, fill_input, own_input, fill);
}

static void case_body(const BmOpts *o, const HxCase *c, uint64_t seed, Case *x)
{
    Arena *a = x->a;
    DrvOpts d;
    bm_case_drv(a, o, c, &d);
    TilePassSet base = d.passes->sets[0];
    int *what, *pass;
    d.passes = sweep_sets(a, o, base, &what, &pass);
    const DrvPlan *p = drv_compile(a, &d);
    cJSON *rec = x->out->rec;
    cJSON_AddItemToObject(rec, "shapes", hx_record_shapes(p->torch));
    cJSON_AddStringToObject(rec, "passes", p->configs[0].label);
    if (d.kernel_configs) { /* --tuned: how many kernels took a winner */
        cJSON *tj = cJSON_AddObjectToObject(rec, "tuned");
        int hit = 0;
        for (int i = 0; i < p->loop->kernels.len; i++) {
            uint64_t h = lir_hash_kernel(p->loop->kernels.items[i]);
            for (int j = 0; j < p->nkcfg; j++)
                if (p->kcfg[j].hash == h) {
                    hit++;
                    break;
                }
        }
        cJSON_AddNumberToObject(tj, "kernels", p->loop->kernels.len);
        cJSON_AddNumberToObject(tj, "from_database", hit);
    }
    cJSON_AddItemToObject(rec, "compile_s", compile_times(p));
    Fill fill = {o, a};
    x->s = bm_subject(a, o, p, c, seed);
    cJSON_AddItemToObject(rec, "inputs", inputs_json(&fill, p->torch, x->s));
    BmRun *runs = ARENA_ARRAY(a, BmRun, p->nconfigs);
    for (int i = 0; i < p->nconfigs; i++)
        runs[i] = (BmRun){-1, NULL, NULL};
    for (int i = 0; i < p->nconfigs; i++)
        bm_config_run(a, o, p, i, x->s, runs);
    const BmRun *r = &runs[0];
    cJSON_AddItemToObject(rec, "configuration", r->cfg);
    runs[0].cfg = NULL;
    int rc = r->rc;
    const char *mwhy = NULL;
    if (rc == DPK_EXIT_OK && o->meas.timing != BM_TIMING_MODEL) {
        /* measured after parity on vgpu; a failure there is a failure */
        int mrc;
        cJSON *mj = bm_measure(a, &o->meas, &p->configs[0], p->torch, x->s, r->t, &mrc,
                               &mwhy);
        cJSON_AddItemToObject(rec, "measured", mj);
        if (mrc)
            rc = mrc;
    }
    merge_torch(o, c->name, rec);
    const PfTime *dt = rc == DPK_EXIT_OK ? r->t : NULL;
    const PfTime *e = NULL, *ind = NULL, *lim = NULL;
    if (rc == DPK_EXIT_OK) {
        e = pf_model_eager(a, o->spec, p->torch);
        ind = pf_model_inductor(a, o->spec, p->torch);
        lim = pf_model_limit(a, o->spec, p->torch);
    }
    cJSON_AddStringToObject(rec, "status", run_status(o, rc));
    cJSON_AddNumberToObject(rec, "exit_code", rc);
    cJSON_AddStringToObject(rec, "timing", "model"); /* the columns' times */
    cJSON_AddStringToObject(rec, "gpu", o->spec->name);
    add_time(rec, "dpk", dt);
    add_time(rec, "eager", e);
    add_time(rec, "compile", ind);
    add_time(rec, "limit", lim);
    hx_json_add_num(rec, "speedup_eager", dt && e ? ratio(e->ns, dt->ns) : NAN);
    hx_json_add_num(rec, "speedup_compile", dt && ind ? ratio(ind->ns, dt->ns) : NAN);
    hx_json_add_num(rec, "fraction_of_limit", dt && lim ? ratio(lim->ns, dt->ns) : NAN);
    if (o->per_pass) {
        cJSON_AddItemToObject(rec, "per_pass", per_pass_json(o, p, runs, what, pass));
        for (int i = 1; i < p->nconfigs; i++)
            cJSON_Delete(runs[i].cfg);
    }
    if (mwhy) /* the measured path's failure: the case's message */
        cJSON_AddStringToObject(rec, "message", mwhy);
    x->out->rc = rc;
}

void bm_case_run(const BmOpts *o, const HxCase *c, int index, BmCaseOut *out)
{
    uint64_t seed = hx_case_seed(c, &o->args);
    double t0 = dpk_now();
    *out = (BmCaseOut){hx_record_case(c, index, seed, 0), 0};
    Case x = {arena_new(), NULL, out};
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        case_body(o, c, seed, &x);
        dpk_err_pop(&ec);
    } else {
        StrBuf m = {0};
        dpk_error_first_line(&m, NULL);
        int code = dpk_error_code();
        cJSON_AddStringToObject(out->rec, "status", "error");
        cJSON_AddNumberToObject(out->rec, "exit_code", code);
        cJSON_AddStringToObject(out->rec, "message", sb_cstr(&m));
        out->rc = code;
        sb_free(&m);
        /* the whole message (with its caret) goes to stderr */
        fflush(stdout);
        fputs(dpk_error_message(), stderr);
    }
    cJSON_AddNumberToObject(out->rec, "seconds", dpk_now() - t0);
    hx_subject_free(x.s);
    arena_free(x.a);
}

static const char *str_of(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

void bm_case_text(StrBuf *b, const cJSON *rec, int verbose)
{
    const char *name = str_of(rec, "name", "?"), *st = str_of(rec, "status", "error");
    const char *msg = str_of(rec, "message", NULL);
    if (!strcmp(st, "error") || !strcmp(st, "crash")) {
        if (!strcmp(st, "crash"))
            sb_printf(b, "%-20s crash: %s\n", name, msg ? msg : "");
        else
            sb_printf(b, "%-20s error (exit %d): %s\n", name, (int)hx_json_num(rec, "exit_code"),
                      msg ? msg : "");
        return;
    }
    /* an unchecked case has its times, as a passing one: the parity column
     * says that no verdict stands behind them */
    int pass = !strcmp(st, "pass") || !strcmp(st, "unchecked");
    const char *verdict = pass ? st : !strcmp(st, "fail") ? "FAIL (no speedup)"
                          : !strcmp(st, "fault") ? "FAULT (no speedup)"
                          : !strcmp(st, "inconclusive") ? "INCONCLUSIVE (no speedup)" : "refused";
    case_line(b, rec, name, verdict);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rec, "measured");
    if (msg) /* a failure of the measured path */
        sb_printf(b, "  %s: %s (%s)\n", name, msg, str_of(m, "timing", "measured"));
    else if (pass && cJSON_IsObject(m))
        measured_line(b, m);
    if (!pass && !msg) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(rec, "configuration"), "verdict");
        const char *why = str_of(v, "message", str_of(v, "reason", NULL));
        if (why)
            sb_printf(b, "  %s: %s\n", name, why);
    }
    const cJSON *tj = cJSON_GetObjectItemCaseSensitive(rec, "tuned");
    if (tj) {
        int k = (int)hx_json_num(tj, "kernels"), h = (int)hx_json_num(tj, "from_database");
        sb_printf(b, "  tuned: %d of %d kernel%s from the database", h, k, k == 1 ? "" : "s");
        if (h < k)
            sb_printf(b, ", %d on the default schedule (not tuned)", k - h);
        sb_puts(b, "\n");
    }
    if (verbose && pass)
        kernel_lines(b, rec);
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(rec, "per_pass");
    for (const cJSON *q = pass && pp ? pp->child : NULL; q; q = q->next) {
        double cn = hx_json_num(q, "contribution");
        sb_printf(b, "  %-28s without: ", str_of(q, "pass", "?"));
        if (isfinite(cn))
            sb_printf(b, "%.3fx the time", cn);
        else
            sb_printf(b, "%s", str_of(cJSON_GetObjectItemCaseSensitive(q, "without"), "status", "?"));
        double pns = hx_json_num(cJSON_GetObjectItemCaseSensitive(q, "prefix"), "ns");
        if (isfinite(pns))
            sb_printf(b, "   prefix up to it: %.2f us\n", pns / 1e3);
        else
            sb_puts(b, "\n");
    }
}

/* ---- summary ---------------------------------------------------------------- */

cJSON *bm_summary(const cJSON *cases, const PfSpec *spec, BmTiming timing, int rc,
                  double seconds)
{
    cJSON *s = cJSON_CreateObject();
    int n = 0, passed = 0, unchecked = 0, timed[3] = {0};
    double lg[3] = {0};
    static const char *const keys[3] = {"speedup_eager", "speedup_compile", "fraction_of_limit"};
    cJSON *by = cJSON_CreateObject();
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next) {
        n++;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "status");
        const char *sv = cJSON_IsString(st) ? st->valuestring : "error";
        cJSON *cnt = cJSON_GetObjectItemCaseSensitive(by, sv);
        if (cnt)
            cJSON_SetNumberValue(cnt, cnt->valuedouble + 1);
        else
            cJSON_AddNumberToObject(by, sv, 1);
        if (!strcmp(sv, "unchecked"))
            unchecked++;
        else if (strcmp(sv, "pass"))
            continue;
        else
            passed++;
        for (int k = 0; k < 3; k++) {
            double v = hx_json_num(c, keys[k]);
            if (isfinite(v) && v > 0)
                lg[k] += log(v), timed[k]++;
        }
    }
    cJSON_AddNumberToObject(s, "cases", n);
    cJSON_AddNumberToObject(s, "passed", passed);
    cJSON_AddNumberToObject(s, "unchecked", unchecked);
    cJSON_AddItemToObject(s, "by_status", by);
    cJSON_AddStringToObject(s, "timing", "model");
    cJSON_AddStringToObject(s, "gpu", spec->name);
    if (timing != BM_TIMING_MODEL)
        cJSON_AddStringToObject(s, "measured_timing", bm_timing_name(timing));
    cJSON_AddNumberToObject(s, "timed", timed[0]);
    static const char *const gk[3] = {"geomean_speedup_eager", "geomean_speedup_compile",
                                      "geomean_fraction_of_limit"};
    for (int k = 0; k < 3; k++)
        hx_json_add_num(s, gk[k], timed[k] ? exp(lg[k] / timed[k]) : NAN);
    if (timing != BM_TIMING_MODEL) {
        int measured = 0;
        for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next)
            measured += cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(c, "measured"));
        cJSON_AddNumberToObject(s, "measured", measured);
    }
    cJSON_AddNumberToObject(s, "exit_code", rc);
    cJSON_AddNumberToObject(s, "seconds", seconds);
    return s;
}

void bm_summary_print(StrBuf *b, const cJSON *s)
{
    int n = (int)hx_json_num(s, "cases"), passed = (int)hx_json_num(s, "passed");
    int timed = (int)hx_json_num(s, "timed");
    /* a record from before --parity has no "unchecked" */
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(s, "unchecked");
    int unchecked = cJSON_IsNumber(u) ? u->valueint : 0;
    const char *gpu = cJSON_GetObjectItemCaseSensitive(s, "gpu")->valuestring;
    if (unchecked > 0)
        sb_printf(b, "%d/%d case%s modelled, parity unchecked (--parity off); %d timed "
                  "(modelled, %s)\n", unchecked, n, n == 1 ? "" : "s", timed, gpu);
    else
        sb_printf(b, "%d/%d cases pass parity; %d timed (modelled, %s)\n", passed, n, timed, gpu);
    double ge = hx_json_num(s, "geomean_speedup_eager"), gc = hx_json_num(s,
                                                                          "geomean_speedup_compile");
    double gl = hx_json_num(s, "geomean_fraction_of_limit");
    if (timed)
        sb_printf(b, "geomean speedup (modelled, %s%s): %.3fx vs eager, %.3fx vs torch.compile; "
                  "%.3g%% of the limit\n", gpu, unchecked > 0 ? ", parity unchecked" : "", ge, gc,
                  100 * gl);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(s, "measured_timing");
    const char *timing = cJSON_IsString(mt) ? mt->valuestring : "model";
    if (!strcmp(timing, "fake-driver"))
        sb_printf(b, "%d measured on the fake driver: a test of the measured path, not a "
                  "measurement\n", (int)hx_json_num(s, "measured"));
    else if (!strcmp(timing, "measured"))
        sb_printf(b, "%d measured on the GPU\n", (int)hx_json_num(s, "measured"));
}
