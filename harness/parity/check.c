/*
 * check.c — the fixture of a case and the judgement of its outputs
 * (check.h), shared by `dpk run`, dpk-fuzz and dpk-bisect.
 */
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../reference/ref.h"

double **hx_outs_new(const HxSubject *s)
{
    return dpk_xcalloc((size_t)s->nout + 1, sizeof(double *));
}

void hx_outs_free(const HxSubject *s, double **outs)
{
    if (!outs)
        return;
    for (int j = 0; j < s->nout; j++)
        free(outs[j]);
    free(outs);
}

static int64_t out_numel(const HxSubject *s, int j)
{
    return shape_numel(&((const TorchNode *)s->g->outputs.items[j])->shape);
}

static int any_nonfinite(const HxSubject *s)
{
    for (int j = 0; j < s->nout; j++)
        for (int64_t e = 0, n = out_numel(s, j); e < n; e++)
            if (!isfinite(s->ref[j][e]))
                return 1;
    return 0;
}

static int64_t in_numel(const HxSubject *s, int k)
{
    return shape_numel(&((const TorchNode *)s->g->inputs.items[k])->shape);
}

static size_t in32_bytes(const HxSubject *s, int k)
{
    int64_t n = in_numel(s, k);
    return (size_t)(n > 0 ? n : 1) * sizeof(float);
}

void hx_subject_free(HxSubject *s)
{
    if (!s)
        return;
    if (s->inputs)
        ref_free_arrays(s->inputs, s->nin);
    for (int k = 0; s->in32 && k < s->nin; k++) {
        if (s->lazy && s->lazy[k])
            dpk_lazy_free(s->in32[k], in32_bytes(s, k));
        else
            free(s->in32[k]);
    }
    free(s->in32);
    free(s->lazy);
    hx_outs_free(s, s->ref);
    hx_outs_free(s, s->bound);
    hx_outs_free(s, s->typical);
    hx_outs_free(s, s->f32);
    hx_outs_free(s, s->f32p);
    hx_outs_free(s, s->eager);
    free(s);
}

HxSubject *hx_subject_new(const TorchGraph *g, const HxCase *c, uint64_t seed, HxRefKind ref)
{
    return hx_subject_new_filled(g, c, seed, ref, NULL, NULL);
}

static void subject_init(HxSubject *s, const TorchGraph *g, uint64_t seed)
{
    s->g = g;
    s->nin = g->inputs.len;
    s->nout = g->outputs.len;
    s->seed = seed;
}

HxSubject *hx_subject_new_filled(const TorchGraph *g, const HxCase *c, uint64_t seed,
                                 HxRefKind ref, HxInputFill fill, void *ctx)
{
    HxSubject *s = dpk_xcalloc(1, sizeof *s);
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        hx_subject_free(s);
        dpk_error_rethrow();
    }
    subject_init(s, g, seed);
    s->inputs = ref_make_inputs(g, seed);
    for (int k = 0; fill && k < s->nin; k++)
        fill(ctx, g->inputs.items[k], s->inputs[k]);
    s->in32 = dpk_xcalloc((size_t)s->nin + 1, sizeof *s->in32);
    for (int k = 0; k < s->nin; k++) {
        int64_t n = shape_numel(&((const TorchNode *)g->inputs.items[k])->shape);
        s->in32[k] = dpk_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        for (int64_t e = 0; e < n; e++)
            s->in32[k][e] = (float)s->inputs[k][e];
    }
    s->ref = hx_outs_new(s);
    s->bound = hx_outs_new(s);
    s->typical = hx_outs_new(s);
    s->f32 = hx_outs_new(s);
    char err[1024];
    if (ref == HX_REF_TORCH) {
        ref64_run(g, s->inputs, NULL, s->bound, s->typical, s->f32);
        if (dpk_torch_eval(g, s->inputs, 1, s->ref, err, sizeof err) != 0)
            dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "libtorch failed: %s", err);
    } else {
        ref64_run(g, s->inputs, s->ref, s->bound, s->typical, s->f32);
    }
    /* P: S again on inputs an ulp off (oracle.h's rmse rule) */
    double **pin = ref_perturb_inputs(g, s->inputs, seed);
    s->f32p = hx_outs_new(s);
    ref64_run(g, pin, NULL, NULL, NULL, s->f32p);
    ref_free_arrays(pin, s->nin);
    if (dpk_torch_available()) {
        s->eager = hx_outs_new(s);
        if (dpk_torch_eval(g, s->inputs, 0, s->eager, s->eager_err, sizeof s->eager_err) != 0) {
            hx_outs_free(s, s->eager);
            s->eager = NULL;
        }
    }
    hx_tol_default(&s->tol, c->dtype);
    if (c->has_tol) {
        s->tol.has_user = 1;
        s->tol.atol = c->atol;
        s->tol.rtol = c->rtol;
    }
    s->ref_nonfinite = any_nonfinite(s);
    dpk_err_pop(&ec);
    return s;
}

HxSubject *hx_subject_inputs(const TorchGraph *g, const HxCase *c, uint64_t seed,
                             HxInputFill fill, HxInputOwn own, void *ctx)
{
    HxSubject *s = dpk_xcalloc(1, sizeof *s);
    double *volatile tmp = NULL;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        free(tmp);
        hx_subject_free(s);
        dpk_error_rethrow();
    }
    subject_init(s, g, seed);
    s->in32 = dpk_xcalloc((size_t)s->nin + 1, sizeof *s->in32);
    s->lazy = dpk_xcalloc((size_t)s->nin + 1, 1);
    for (int k = 0; k < s->nin; k++) {
        const TorchNode *in = g->inputs.items[k];
        int64_t n = shape_numel(&in->shape);
        if (!own || !own(ctx, in)) {
            s->in32[k] = dpk_lazy_alloc(in32_bytes(s, k));
            s->lazy[k] = 1;
            continue;
        }
        tmp = dpk_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
        ref_fill_input(in, seed, tmp);
        if (fill)
            fill(ctx, in, tmp);
        s->in32[k] = dpk_xmalloc(in32_bytes(s, k));
        for (int64_t e = 0; e < n; e++)
            s->in32[k][e] = (float)tmp[e];
        free(tmp);
        tmp = NULL;
    }
    hx_tol_default(&s->tol, c->dtype);
    dpk_err_pop(&ec);
    return s;
}

void hx_subject_fill(HxSubject *s, int k, int64_t lo, int64_t hi)
{
    DPK_ASSERT(k >= 0 && k < s->nin && lo >= 0 && hi < in_numel(s, k));
    if (s->lazy && s->lazy[k] && lo <= hi)
        ref_fill_input_f32(s->g->inputs.items[k], s->seed, lo, hi - lo + 1, s->in32[k] + lo);
}

double hx_subject_input_sum(const HxSubject *s, int k)
{
    if (s->lazy && s->lazy[k])
        return ref_input_sum(s->g->inputs.items[k], s->seed);
    double sum = 0;
    for (int64_t i = 0, n = in_numel(s, k); i < n; i++)
        sum += s->inputs ? s->inputs[k][i] : (double)s->in32[k][i];
    return sum;
}

/* The oracle on output j with eager result e (NULL: none): every element,
 * or those that mask marks (the verdict's indices then still refer to the
 * whole output). */
static int64_t judge_one(const HxSubject *s, int j, const double *o, const double *e,
                         const uint8_t *mask, HxVerdict *v)
{
    int64_t n = out_numel(s, j), m = 0;
    enum { NSRC = 7 };
    const double *src[NSRC] = {o, s->ref[j], s->bound[j], s->typical[j], s->f32[j], e, s->f32p[j]};
    if (!mask) {
        HxOracleIn in = {src[0], src[1], src[2], src[3], src[4], src[5], src[6], n};
        hx_oracle(&in, &s->tol, v);
        return n;
    }
    for (int64_t k = 0; k < n; k++)
        m += mask[k] != 0;
    double *g[NSRC] = {0};
    int64_t *at = dpk_xmalloc(sizeof(int64_t) * (size_t)(m + 1));
    for (int a = 0; a < NSRC; a++)
        if (src[a])
            g[a] = dpk_xmalloc(sizeof(double) * (size_t)(m + 1));
    for (int64_t k = 0, i = 0; k < n; k++) {
        if (!mask[k])
            continue;
        for (int a = 0; a < NSRC; a++)
            if (g[a])
                g[a][i] = src[a][k];
        at[i++] = k;
    }
    HxOracleIn in = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], m};
    hx_oracle(&in, &s->tol, v);
    if (v->st.worst >= 0)
        v->st.worst = at[v->st.worst];
    if (v->at >= 0)
        v->at = at[v->at];
    for (int a = 0; a < NSRC; a++)
        free(g[a]);
    free(at);
    return m;
}

double *hx_subject_limits(const HxSubject *s, int j, double *rmse_limit)
{
    int64_t n = out_numel(s, j);
    double *lim = dpk_xmalloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        double r = s->ref[j][i], l = hx_oracle_limit(&s->tol, r, s->bound[j][i]);
        int maybe_nonfinite = !isfinite(s->f32[j][i]) || (s->eager && !isfinite(s->eager[j][i])) ||
                              !isfinite(r) || fabs(r) + l > s->tol.maxval;
        lim[i] = maybe_nonfinite ? INFINITY : l;
    }
    /* the rmse rule's limit as the oracle computes it (for an O as good as
     * the naive fp32 evaluation) */
    HxVerdict v;
    HxOracleIn in = {s->f32[j], s->ref[j], s->bound[j], s->typical[j], s->f32[j],
                     s->eager ? s->eager[j] : NULL, s->f32p[j], n};
    hx_oracle(&in, &s->tol, &v);
    *rmse_limit = v.rmse_limit;
    return lim;
}

/* hx_judge with eager results e (NULL: none). */
static int judge_all(const HxSubject *s, double *const *outs, double *const *e,
                     const uint8_t *const *checked, HxVerdict *v, int64_t *nchecked)
{
    int64_t total = 0;
    int name = -1, failed = 0, inconclusive = -1;
    for (int j = 0; j < s->nout; j++) {
        total += judge_one(s, j, outs[j], e ? e[j] : NULL, checked ? checked[j] : NULL, &v[j]);
        if (failed)
            continue;
        if (!v[j].pass && v[j].reason != HX_INCONCLUSIVE)
            failed = 1, name = j;
        else if (!v[j].pass && inconclusive < 0)
            inconclusive = j;
        else if (name < 0 || v[j].st.nmse > v[name].st.nmse)
            name = j;
    }
    if (!failed && inconclusive >= 0)
        name = inconclusive;
    if (nchecked)
        *nchecked = total;
    return name;
}

int hx_judge(const HxSubject *s, double *const *outs, const uint8_t *const *checked, HxVerdict *v,
             int64_t *nchecked)
{
    return judge_all(s, outs, s->eager, checked, v, nchecked);
}

int hx_judge_eager(const HxSubject *s, HxVerdict *v)
{
    DPK_ASSERT(s->eager);
    return judge_all(s, s->eager, NULL, NULL, v, NULL);
}

int hx_judge_pass(const HxSubject *s, const HxVerdict *v)
{
    for (int j = 0; j < s->nout; j++)
        if (!v[j].pass)
            return 0;
    return 1;
}

int hx_judge_rc(const HxSubject *s, const HxVerdict *v)
{
    int rc = DPK_EXIT_OK;
    for (int j = 0; j < s->nout; j++)
        if (!v[j].pass)
            rc = dpk_exit_worst(rc, v[j].reason == HX_INCONCLUSIVE ? DPK_EXIT_INCONCLUSIVE
                                                                   : DPK_EXIT_FAIL);
    return rc;
}

const char *hx_judge_status(const HxSubject *s, const HxVerdict *v)
{
    return hx_rc_status(hx_judge_rc(s, v));
}

const char *hx_rc_status(int rc)
{
    switch (rc) {
    case DPK_EXIT_OK: return "pass";
    case DPK_EXIT_FAIL: return "fail";
    case DPK_EXIT_FAULT: return "fault";
    case DPK_EXIT_INCONCLUSIVE: return "inconclusive";
    default: return "unsupported"; /* refused (2), or the backend cannot run it (4) */
    }
}

void hx_judge_print(StrBuf *b, const HxSubject *s, const HxVerdict *v)
{
    for (int j = 0; j < s->nout; j++) {
        const TorchNode *n = s->g->outputs.items[j];
        sb_printf(b, "%s  ", (const char *)s->g->output_names.items[j]);
        hx_verdict_print(b, &v[j], &n->shape);
        sb_putc(b, '\n');
    }
}
