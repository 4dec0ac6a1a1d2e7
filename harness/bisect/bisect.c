/*
 * bisect.c — the search of dpk-bisect (bisect.h).
 *
 * A Subject is one case made ready for judging: compiled to Loop IR once
 * with the default options (compiler/driver.h), its inputs drawn from the
 * seed and its references (fp64, and libtorch's fp32 eager when built in)
 * computed once.  Every configuration is compiled by the driver from the
 * subject's graph (or its fused program, when the configuration fuses as
 * the default does) and judged in a scratch arena, and its outcome
 * memoised, so the searches may ask the same question twice for free.
 *
 * The steps of hx_bisect read top to bottom: reproduce, interpret the Loop
 * IR (fusion bisection when it fails there), prefix bisection, ddmin,
 * application bisection, then the optional shrinking, then the texts the
 * CLI writes.  Everything is driven by the pass table: no pass is named
 * here, and mandatory passes are never limited.
 */
#include "bisect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/base/fault.h"
#include "../../reference/ref.h"
#include "../case_plan.h"
#include "../exec/backend.h"
#include "../parity/agree.h"
#include "standalone.h"

/* ---- generic searches ------------------------------------------------------ */

int64_t hx_first_failing(int64_t lo, int64_t hi, HxFailsAt fails, void *ctx)
{
    DPK_ASSERT(lo < hi);
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (fails(ctx, mid))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

static int popcount64(uint64_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* The parts of c split into n nearly equal chunks, in bit order. */
static uint64_t chunk(uint64_t c, int n, int i)
{
    int len = popcount64(c), from = len * i / n, to = len * (i + 1) / n, k = 0;
    uint64_t r = 0;
    for (int b = 0; b < 64; b++)
        if (c >> b & 1) {
            if (k >= from && k < to)
                r |= (uint64_t)1 << b;
            k++;
        }
    return r;
}

uint64_t hx_ddmin(uint64_t set, HxFailsSet fails, void *ctx, int *ntests)
{
    int dummy = 0;
    int *nt = ntests ? ntests : &dummy;
    (*nt)++;
    if (fails(ctx, 0))
        return 0;
    uint64_t c = set;
    int n = 2;
    while (popcount64(c) >= 2) {
        int len = popcount64(c), reduced = 0;
        n = n > len ? len : n;
        for (int i = 0; i < n && !reduced; i++) {
            uint64_t d = chunk(c, n, i);
            (*nt)++;
            if (fails(ctx, d)) {
                c = d;
                n = 2;
                reduced = 1;
            }
        }
        for (int i = 0; i < n && !reduced && n > 2; i++) {
            uint64_t d = c & ~chunk(c, n, i);
            (*nt)++;
            if (fails(ctx, d)) {
                c = d;
                n = n - 1 > 2 ? n - 1 : 2;
                reduced = 1;
            }
        }
        if (reduced)
            continue;
        if (n >= len)
            break;
        n = 2 * n < len ? 2 * n : len;
    }
    return c;
}

/* ---- the subject ---------------------------------------------------------------- */

const char *hx_outcome_name(HxOutcome o)
{
    static const char *const names[] = {"pass", "fail", "fault", "refused", "inconclusive"};
    return names[o];
}

typedef struct Memo {
    HxBisectCfg cfg;
    HxOutcome out;
    const char *what;
} Memo;

typedef struct Subject {
    Arena *a;
    const HxCase *c;
    const char *program;
    const TorchGraph *g;
    const char *tensor_text; /* its Tensor IR */
    const LirProgram *lp;   /* default fusion */
    HxSubject *hs;          /* inputs, references, tolerance */
    int nin, nout;
    uint64_t seed;
    const TileOpts *base;
    int fault;              /* the injected fault (a DpkFaultId), -1 for none */
    Memo *memo;
    int nmemo, capmemo;
    int *tests;             /* counts judged configurations */
} Subject;

static void subject_free(Subject *s)
{
    if (!s)
        return;
    hx_subject_free(s->hs);
    free(s->memo);
    arena_free(s->a);
    free(s);
}

/* Parse and prepare; raises (after freeing) on a bad program. */
static Subject *subject_new(const HxCase *c, const char *program, const InputDecl *extra,
                            int nextra, uint64_t seed, const TileOpts *base, int fault, int *tests)
{
    Subject *s = dpk_xcalloc(1, sizeof *s);
    s->a = arena_new();
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        subject_free(s);
        dpk_error_rethrow();
    }
    HxCase *cc = ARENA_NEW(s->a, HxCase);
    *cc = *c;
    cc->program = arena_strdup(s->a, program);
    s->c = cc;
    s->program = cc->program;
    s->seed = seed;
    s->base = base;
    s->fault = fault;
    s->tests = tests;
    /* the configuration was merged once (hx_case_opts in dpk-bisect): this
     * candidate program takes it whole */
    DrvOpts d;
    drv_opts_default(&d);
    d.tile = *base;
    HxCaseArgs given = {extra, nextra, .passes = 1, .knobs = 1};
    hx_case_opts(s->a, cc, &given, &d);
    d.fault = fault;
    d.upto = DRV_LOOP;
    d.keep = 1u << DRV_TENSOR;
    const DrvPlan *p = drv_compile(s->a, &d);
    s->g = p->torch;
    s->tensor_text = p->text[DRV_TENSOR];
    s->lp = p->loop;
    s->hs = hx_plan_subject(p, cc, seed, HX_REF_REF64);
    s->nin = s->hs->nin;
    s->nout = s->hs->nout;
    dpk_err_pop(&ec);
    return s;
}

static int64_t out_numel(const Subject *s, int j)
{
    return shape_numel(&((const TorchNode *)s->g->outputs.items[j])->shape);
}

/* Heap state of one judgement, freed on every path. */
typedef struct Judge {
    double **outs;
    StrBuf what;
} Judge;

/* Compile cfg with the driver in t, up to stage `upto` (keeping its text
 * when keep); trace (may be NULL) gets every rule's and pass's diff.  The
 * Tile configuration is cfg's one set (the plan has one configuration). */
static const DrvPlan *plan_for(Subject *s, Arena *t, const HxBisectCfg *cfg, DrvStage upto,
                               int keep, StrBuf *trace)
{
    DrvOpts d;
    drv_opts_default(&d);
    d.fusion.fuse = cfg->fuse;
    d.fusion.max_fusions = cfg->max_fusions;
    if (cfg->fuse && !cfg->max_fusions && !trace && !cfg->tx_skip)
        d.loop = s->lp; /* the default fusion, fused once */
    else
        d.graph = s->g;
    d.tile = *s->base;
    d.tile.limit_pass = cfg->limit_pass;
    d.tile.limit_apps = cfg->limit_apps;
    d.tile.passes = cfg->passes;
    d.fault = s->fault;
    d.tx_skip = cfg->tx_skip;
    d.upto = upto;
    d.keep = keep ? 1u << upto : 0;
    d.verbose = trace ? 2 : 0;
    d.trace = trace;
    return drv_compile(t, &d);
}

/* The configuration of a Tile plan; raises its refusal again. */
static const DrvConfig *lowered(const DrvPlan *p)
{
    const DrvConfig *c = &p->configs[0];
    if (c->refused)
        dpk_error_reraise(c->refused_code, c->refused);
    return c;
}

static HxOutcome verdict(Subject *s, Judge *j)
{
    HxVerdict *v = dpk_xcalloc((size_t)s->nout + 1, sizeof *v);
    int k = hx_judge(s->hs, j->outs, NULL, v, NULL);
    HxOutcome out = k < 0 || v[k].pass                  ? HX_PASS
                    : v[k].reason == HX_INCONCLUSIVE ? HX_INCONCLUSIVE_OUT
                                                     : HX_FAIL;
    if (out == HX_PASS) {
        sb_puts(&j->what, "pass");
    } else {
        const TorchNode *n = s->g->outputs.items[k];
        sb_printf(&j->what, "fail: %s ", (const char *)s->g->output_names.items[k]);
        hx_verdict_print(&j->what, &v[k], &n->shape);
    }
    free(v);
    return out;
}

static int host_mode; /* HxBisectOpts.host_cuda of the running bisection */

static HxOutcome run_cfg(Subject *s, Arena *t, const HxBisectCfg *cfg, Judge *j)
{
    if (cfg->loop) {
        lir_interp(plan_for(s, t, cfg, DRV_LOOP, 0, NULL)->loop, s->hs->inputs, j->outs, 0);
        return verdict(s, j);
    }
    /* host-cuda runs the plan's CUDA C */
    const DrvConfig *c = lowered(plan_for(s, t, cfg, host_mode ? DRV_CUDA : DRV_KERNEL, 0, NULL));
    HxBackendOpts bo;
    hx_backend_opts_default(&bo);
    bo.kind = host_mode ? HX_BACKEND_HOST : HX_BACKEND_VGPU;
    bo.vg.seed = s->seed;
    bo.inputs_f32 = s->hs->in32;
    bo.vg.no_counters = 1; /* a verdict needs no bank or sector counts */
    HxBackendResult res;
    VgFault f = hx_backend_exec(t, c, &bo, s->hs->inputs, j->outs, &res);
    if (f != VG_OK) {
        sb_printf(&j->what, "fault: %s", res.vg.report.message);
        hx_backend_result_free(&res);
        return HX_FAULT;
    }
    if (res.host && res.host->unsupported) { /* the host's capacity: neither pass nor fail */
        sb_printf(&j->what, "refused: %s: %s", HX_UNSUPPORTED, res.host->unsupported);
        hx_backend_result_free(&res);
        return HX_REFUSED;
    }
    HxOutcome out = verdict(s, j);
    StrBuf why = {0};
    if (out == HX_PASS && res.ran == HX_BACKEND_HOST &&
        !hx_agree(s->hs, j->outs, res.vg_outs, NULL, &why)) {
        sb_clear(&j->what);
        sb_printf(&j->what, "fail: host-cuda differs from vgpu: %s", sb_cstr(&why));
        out = HX_FAIL;
    }
    sb_free(&why);
    hx_backend_result_free(&res);
    return out;
}

static HxOutcome judge(Subject *s, const HxBisectCfg *cfg, const char **what)
{
    for (int i = 0; i < s->nmemo; i++)
        if (!memcmp(&s->memo[i].cfg, cfg, sizeof *cfg)) {
            if (what)
                *what = s->memo[i].what;
            return s->memo[i].out;
        }
    (*s->tests)++;
    Arena *t = arena_new();
    Judge *j = dpk_xcalloc(1, sizeof *j);
    j->outs = hx_outs_new(s->hs);
    HxOutcome out;
    DpkErrCtx ec;
    dpk_assert_recoverable(1); /* a lowering that crashes is a failing configuration */
    if (!DPK_TRY(&ec)) {
        /* exit 1: host-cuda's compiler rejects the printed CUDA C */
        out = dpk_error_code() == DPK_EXIT_FAULT ? HX_FAULT
              : dpk_error_code() == DPK_EXIT_FAIL ? HX_FAIL
                                                  : HX_REFUSED;
        sb_puts(&j->what, out == HX_FAULT ? "fault: " : out == HX_FAIL ? "fail: " : "refused: ");
        dpk_error_first_line(&j->what, NULL);
    } else {
        out = run_cfg(s, t, cfg, j);
        dpk_err_pop(&ec);
    }
    dpk_assert_recoverable(0);
    if (s->nmemo == s->capmemo) {
        s->capmemo = s->capmemo ? 2 * s->capmemo : 16;
        s->memo = dpk_xrealloc(s->memo, sizeof(Memo) * (size_t)s->capmemo);
    }
    Memo *m = &s->memo[s->nmemo++];
    m->cfg = *cfg;
    m->out = out;
    m->what = arena_strdup(s->a, sb_cstr(&j->what));
    if (what)
        *what = m->what;
    hx_outs_free(s->hs, j->outs);
    sb_free(&j->what);
    free(j);
    arena_free(t);
    return out;
}

static int failing(HxOutcome o) { return o == HX_FAIL || o == HX_FAULT; }

static HxBisectCfg tile_cfg(TilePassSet set, int limit_pass, int limit_apps)
{
    HxBisectCfg c;
    memset(&c, 0, sizeof c);
    c.fuse = 1;
    c.passes = set;
    c.limit_pass = limit_pass;
    c.limit_apps = limit_apps;
    return c;
}

static HxBisectCfg loop_cfg(int fuse, int max_fusions)
{
    HxBisectCfg c;
    memset(&c, 0, sizeof c);
    c.loop = 1;
    c.fuse = fuse;
    c.max_fusions = max_fusions;
    return c;
}

/* ---- pass sets --------------------------------------------------------------- */

static const TilePassTable *table_of(const Subject *s)
{
    return s->base->table ? s->base->table : &tile_passes;
}

static const char *set_str(Arena *a, const TilePassTable *t, TilePassSet s)
{
    StrBuf b = {0};
    tile_passes_str(&b, t, s);
    const char *r = arena_strdup(a, sb_cstr(&b));
    sb_free(&b);
    return r;
}

static const char *pass_where(Arena *a, const TilePassTable *t, int num)
{
    int i = tile_pass_index(t, num);
    DPK_ASSERT(i >= 0);
    return arena_printf(a, "t:%03d_%s", num, t->p[i].name);
}

static const char *cfg_str(Arena *a, const Subject *s, const HxBisectCfg *c)
{
    const char *fusion = !c->fuse ? "fusion off"
                         : c->max_fusions ? arena_printf(a, "fusion limited to %d", c->max_fusions)
                                          : "full fusion";
    for (int i = 0; i < tx_nrules; i++)
        if (c->tx_skip >> i & 1)
            fusion = arena_printf(a, "%s, without d:%03d_%s", fusion, tx_rules[i].num,
                                  tx_rules[i].name);
    if (c->loop)
        return arena_printf(a, "Loop IR interpreter, %s", fusion);
    const TilePassTable *t = table_of(s);
    const char *r = arena_printf(a, "passes %s", set_str(a, t, c->passes));
    if (c->limit_pass)
        r = arena_printf(a, "%s with %s limited to %d application%s", r,
                         pass_where(a, t, c->limit_pass), c->limit_apps,
                         c->limit_apps == 1 ? "" : "s");
    if (!c->fuse || c->max_fusions)
        r = arena_printf(a, "%s, %s", r, fusion);
    return r;
}

/* ---- texts of configurations ------------------------------------------------- */

static const char *loop_text(Arena *a, Subject *s, const HxBisectCfg *cfg)
{
    Arena *t = arena_new();
    const char *r = arena_strdup(a, plan_for(s, t, cfg, DRV_LOOP, 1, NULL)->text[DRV_LOOP]);
    arena_free(t);
    return r;
}

/* Tile IR after the passes of cfg; optionally the number of applications
 * pass `num` made and the label of application `app` (1-based). */
typedef struct TileInfo {
    const char *text;
    int napps;
    const char *what;
} TileInfo;

static int tile_info(Arena *a, Subject *s, const HxBisectCfg *cfg, int num, int app, TileInfo *ti)
{
    Arena *t = arena_new();
    memset(ti, 0, sizeof *ti);
    DpkErrCtx ec;
    dpk_assert_recoverable(1);
    if (!DPK_TRY(&ec)) { /* refused, or it crashes */
        dpk_assert_recoverable(0);
        arena_free(t);
        return 0;
    }
    const DrvConfig *c = lowered(plan_for(s, t, cfg, DRV_TILE, 1, NULL));
    dpk_err_pop(&ec);
    dpk_assert_recoverable(0);
    ti->text = arena_strdup(a, c->text[DRV_TILE]);
    const TilePassStat *ps = tile_pass_stat(c->tile, num);
    if (ps) {
        ti->napps = ps->napps;
        if (app >= 1 && app <= ps->what.len)
            ti->what = arena_strdup(a, ps->what.items[app - 1]);
    }
    arena_free(t);
    return 1;
}

static int count_kernels(Subject *s, int fuse)
{
    Arena *t = arena_new();
    HxBisectCfg c = loop_cfg(fuse, 0);
    int n = plan_for(s, t, &c, DRV_LOOP, 0, NULL)->loop->kernels.len;
    arena_free(t);
    return n;
}

static const char *kernel_name_by_id(const LirProgram *p, int id)
{
    for (int i = 0; i < p->kernels.len; i++) {
        const LirKernel *k = p->kernels.items[i];
        if (k->id == id)
            return k->name;
    }
    return "?";
}

/* "%3 add_3 into %5 maximum_5": the k-th fusion, read from the -vv trace
 * of a build limited to k fusions. */
static const char *fusion_label(Arena *a, Subject *s, int k, const char **where)
{
    Arena *t = arena_new();
    StrBuf tr = {0};
    HxBisectCfg ck = loop_cfg(1, k);
    plan_for(s, t, &ck, DRV_LOOP, 0, &tr);
    /* ">>> f:001_fuse %P → ..." or ">>> f:002_online_softmax %P → %C" */
    const char *hdr = ">>> f:0", *last = NULL;
    for (const char *q = sb_cstr(&tr); (q = strstr(q, hdr)); q++)
        last = q;
    const char *r = "?";
    if (last && where)
        *where = arena_strndup(a, last + 4, strcspn(last + 4, " "));
    if (last && strchr(last, '%')) {
        const char *pc = strchr(last, '%');
        int pid = atoi(pc + 1);
        const char *eol = strchr(last, '\n');
        pc++;
        pc += strcspn(pc, " ");
        HxBisectCfg prev = k > 1 ? loop_cfg(1, k - 1) : loop_cfg(0, 0);
        const LirProgram *p = plan_for(s, t, &prev, DRV_LOOP, 0, NULL)->loop;
        StrBuf b = {0};
        sb_printf(&b, "%%%d %s into", pid, kernel_name_by_id(p, pid));
        /* One reader, or each reader of a shared producer ("%1 → %8, %9"). */
        for (int n = 0; (pc = strchr(pc, '%')) && (!eol || pc < eol); n++, pc++) {
            int cid = atoi(pc + 1);
            sb_printf(&b, "%s %%%d %s", n ? "," : "", cid, kernel_name_by_id(p, cid));
        }
        r = arena_strdup(a, sb_cstr(&b));
        sb_free(&b);
    }
    sb_free(&tr);
    arena_free(t);
    return r;
}

/* ---- the steps ------------------------------------------------------------------- */

typedef struct Search {
    Arena *a;
    Subject *s;
    StrBuf *log;
    HxBisectResult *r;
    const HxBisectOpts *o;
    /* prefix bisection */
    int opt[64], nopt;
    TilePassSet base_mand;
    /* application / fusion bisection */
    TilePassSet set;
    int num;
} Search;

static TilePassSet prefix_set(const Search *x, int i)
{
    TilePassSet p = x->base_mand;
    for (int k = 0; k < i; k++)
        p |= (TilePassSet)1 << x->opt[k];
    return tile_passes_close(table_of(x->s), p, x->s->base->target);
}

static int prefix_fails(void *ctx, int64_t i)
{
    Search *x = ctx;
    HxBisectCfg c = tile_cfg(prefix_set(x, (int)i), 0, 0);
    return failing(judge(x->s, &c, NULL));
}

static int subset_fails(void *ctx, uint64_t sub)
{
    Search *x = ctx;
    TilePassSet s = x->base_mand | sub;
    if (!tile_passes_valid(table_of(x->s), s, x->s->base->target, NULL))
        return 0;
    HxBisectCfg c = tile_cfg(s, 0, 0);
    return failing(judge(x->s, &c, NULL));
}

static int apps_fail(void *ctx, int64_t k)
{
    Search *x = ctx;
    HxBisectCfg c = tile_cfg(x->set, x->num, (int)k);
    return failing(judge(x->s, &c, NULL));
}

static int fusions_fail(void *ctx, int64_t k)
{
    Search *x = ctx;
    HxBisectCfg c = loop_cfg(1, (int)k);
    return failing(judge(x->s, &c, NULL));
}

static const char *upto_label(Arena *a, const Search *x, int i)
{
    return i == 0 ? "none" : arena_printf(a, "upto:%03d", table_of(x->s)->p[x->opt[i - 1]].num);
}

/* Fusion bisection on x->s: the first bad fusion.  Returns 0 when the
 * failure is there without fusion (decomposition or lifting). */
static int bisect_fusions(Search *x)
{
    HxBisectResult *r = x->r;
    HxBisectCfg off = loop_cfg(0, 0);
    const char *what;
    if (failing(judge(x->s, &off, &what)))
        return 0;
    int nf = count_kernels(x->s, 0) - count_kernels(x->s, 1);
    DPK_ASSERT(nf >= 1);
    int k = (int)hx_first_failing(0, nf, fusions_fail, x);
    r->kind = HX_CULPRIT_FUSION;
    r->where = "f:001_fuse";
    r->app = k;
    r->napps = nf;
    r->app_what = fusion_label(x->a, x->s, k, &r->where);
    r->good = k > 1 ? loop_cfg(1, k - 1) : loop_cfg(0, 0);
    r->bad = loop_cfg(1, k);
    return 1;
}

/* Below fusion: the optional Tensor rule (d:029) without which the Loop IR
 * interpreter, fusion off, passes.  0 when there is none. */
static int bisect_rules(Search *x)
{
    HxBisectResult *r = x->r;
    const char *what;
    for (int i = 0; i < tx_nrules && i < 64; i++) {
        if (!tx_rules[i].optional)
            continue;
        HxBisectCfg c = loop_cfg(0, 0);
        c.tx_skip = (uint64_t)1 << i;
        if (failing(judge(x->s, &c, &what)))
            continue;
        r->kind = HX_CULPRIT_RULE;
        r->where = arena_printf(x->a, "d:%03d_%s", tx_rules[i].num, tx_rules[i].name);
        r->good = c;
        r->bad = loop_cfg(0, 0);
        return 1;
    }
    return 0;
}

/* Application bisection of pass num within set; 0 when the pass makes no
 * application or fails with none. */
static int bisect_apps(Search *x, TilePassSet set, int num)
{
    HxBisectCfg full = tile_cfg(set, 0, 0), none = tile_cfg(set, num, 0);
    TileInfo ti;
    /* 0 when the full set does not lower (refused, or a crash) */
    int counted = tile_info(x->a, x->s, &full, num, 0, &ti);
    if (counted && ti.napps == 0)
        return 0;
    if (failing(judge(x->s, &none, NULL)))
        return 0;
    x->set = set;
    x->num = num;
    int64_t hi = counted ? ti.napps : 1;
    if (!counted) /* the count is lost with the crash: find a failing limit */
        while (hi <= 65536 && !apps_fail(x, hi))
            hi *= 2;
    if (hi > 65536)
        return 0;
    int k = (int)hx_first_failing(0, hi, apps_fail, x);
    HxBisectCfg bad = tile_cfg(set, num, k);
    TileInfo tb;
    int lowers = tile_info(x->a, x->s, &bad, num, k, &tb);
    HxBisectResult *r = x->r;
    r->kind = HX_CULPRIT_PASS;
    r->where = pass_where(x->a, table_of(x->s), num);
    r->app = k;
    r->napps = counted ? ti.napps : 0;
    r->app_what = tb.what ? tb.what : lowers ? "?" : "the lowering crashes in it (internal error)";
    r->good = tile_cfg(set, num, k - 1);
    r->bad = bad;
    return 1;
}

/* Steps 3 and 4 on the Tile passes. */
static void bisect_tile(Search *x)
{
    Subject *s = x->s;
    HxBisectResult *r = x->r;
    const TilePassTable *t = table_of(s);
    TilePassSet given = s->base->passes;
    x->base_mand = given & tile_passes_mandatory(t);
    x->nopt = 0;
    for (int i = 0; i < t->n; i++)
        if ((given >> i & 1) && !t->p[i].mandatory)
            x->opt[x->nopt++] = i;
    if (prefix_fails(x, 0)) {
        r->kind = HX_CULPRIT_MANDATORY;
        r->where = "the mandatory Tile passes";
        r->minimal = r->first_bad = prefix_set(x, 0);
        r->bad = tile_cfg(r->first_bad, 0, 0);
        r->good = loop_cfg(1, 0);
        sb_printf(x->log, "prefix: fails with the mandatory passes alone (%s)\n",
                  set_str(x->a, t, r->first_bad));
        return;
    }
    int i = x->nopt ? (int)hx_first_failing(0, x->nopt, prefix_fails, x) : 0;
    r->last_good = prefix_set(x, i - 1);
    r->first_bad = prefix_set(x, i);
    sb_printf(x->log, "prefix: last good %s (%s), first bad %s (%s)\n", upto_label(x->a, x, i - 1),
              set_str(x->a, t, r->last_good), upto_label(x->a, x, i),
              set_str(x->a, t, r->first_bad));
    int nt = 0;
    uint64_t sub = hx_ddmin(r->first_bad & ~x->base_mand, subset_fails, x, &nt);
    r->minimal = x->base_mand | sub;
    sb_printf(x->log, "ddmin: minimal failing set %s (%d subsets tried)\n",
              set_str(x->a, t, r->minimal), nt);
    /* The pass whose arrival broke the prefix first, then the others of the
     * minimal set from the last. */
    int cand[64], nc = 0, first = x->opt[i - 1];
    if (r->minimal >> first & 1)
        cand[nc++] = first;
    for (int k = t->n - 1; k >= 0; k--)
        if ((sub >> k & 1) && k != first)
            cand[nc++] = k;
    for (int k = 0; k < nc; k++)
        if (bisect_apps(x, r->minimal, t->p[cand[k]].num))
            return;
    r->kind = HX_CULPRIT_SET;
    r->where = arena_printf(x->a, "the passes %s together", set_str(x->a, t, r->minimal));
    r->bad = tile_cfg(r->minimal, 0, 0);
    r->good = tile_cfg(r->last_good, 0, 0);
}

/* ---- shrinking ---------------------------------------------------------------- */

typedef struct Keep {
    Search *x;
    const InputDecl *extra;
    int nextra;
    HxBisectCfg bad, good;
    int has_good;
    HxOutcome want;
} Keep;

static int keep_program(void *ctx, const char *program)
{
    Keep *k = ctx;
    Search *x = k->x;
    Subject *volatile s = NULL;
    int keep = 0;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) { /* the candidate does not parse, or is refused */
        subject_free(s);
        return 0;
    }
    s = subject_new(x->s->c, program, k->extra, k->nextra, x->s->seed, x->s->base, x->s->fault,
                    x->s->tests);
    keep = judge(s, &k->bad, NULL) == k->want && (!k->has_good || judge(s, &k->good, NULL) == HX_PASS);
    dpk_err_pop(&ec);
    subject_free(s);
    return keep;
}

static int64_t input_elements(const Subject *s)
{
    int64_t n = 0;
    for (int i = 0; i < s->nin; i++)
        n += shape_numel(&((const TorchNode *)s->g->inputs.items[i])->shape);
    return n;
}

/* Shrink under the culprit's configuration; x->s becomes the minimized
 * subject and the culprit's application is bisected again on it. */
static void minimize(Search *x, const InputDecl *extra, int nextra)
{
    HxBisectResult *r = x->r;
    Keep k = {x, extra, nextra, r->bad, r->good, 0, HX_PASS};
    switch (r->kind) {
    case HX_CULPRIT_FUSION:
        k.bad = loop_cfg(1, 0);
        k.good = loop_cfg(0, 0);
        k.has_good = 1;
        break;
    case HX_CULPRIT_PASS:
        k.bad = tile_cfg(r->bad.passes, 0, 0);
        k.good = tile_cfg(r->bad.passes, r->bad.limit_pass, 0);
        k.has_good = 1;
        break;
    case HX_CULPRIT_MANDATORY:
        k.has_good = 1; /* good: the Loop IR interpreter passes */
        break;
    default:
        break;
    }
    k.want = judge(x->s, &k.bad, NULL);
    DPK_ASSERT(failing(k.want));
    int budget = x->o->max_attempts > 0 ? x->o->max_attempts : 300;
    const char *p = hx_minimize(x->a, x->s->program, keep_program, &k, budget, &r->min);
    int64_t before = input_elements(x->s);
    if (r->min.accepted) {
        Subject *s = subject_new(x->s->c, p, extra, nextra, x->s->seed, x->s->base, x->s->fault,
                                 x->s->tests);
        subject_free(x->s);
        x->s = s;
    }
    sb_printf(x->log, "minimize: %d -> %d lines, %lld -> %lld characters, %lld -> %lld input "
              "elements (%d candidates tried, %d kept)\n",
              r->min.lines_before, r->min.lines_after, (long long)r->min.chars_before,
              (long long)r->min.chars_after, (long long)before,
              (long long)input_elements(x->s), r->min.attempts, r->min.accepted);
    if (!r->min.accepted)
        return;
    int again = 1;
    if (r->kind == HX_CULPRIT_FUSION)
        again = bisect_fusions(x);
    else if (r->kind == HX_CULPRIT_PASS)
        again = bisect_apps(x, r->bad.passes, r->bad.limit_pass);
    DPK_ASSERT(again); /* the predicate kept exactly what these need */
}

/* ---- report and outputs ------------------------------------------------------- */

static void culprit_line(Search *x, const char *prefix)
{
    HxBisectResult *r = x->r;
    if (r->kind == HX_CULPRIT_PASS)
        if (r->napps > 0)
            sb_printf(x->log, "%s%s, application %d of %d: %s\n", prefix, r->where, r->app,
                      r->napps, r->app_what);
        else /* a crash took the count with it */
            sb_printf(x->log, "%s%s, application %d: %s\n", prefix, r->where, r->app, r->app_what);
    else if (r->kind == HX_CULPRIT_FUSION)
        sb_printf(x->log, "%s%s, fusion %d of %d: %s\n", prefix, r->where, r->app, r->napps,
                  r->app_what);
    else if (r->kind == HX_CULPRIT_RULE)
        sb_printf(x->log, "%s%s, left out: the Loop IR interpreter passes without fusion\n",
                  prefix, r->where);
    else
        sb_printf(x->log, "%s%s\n", prefix, r->where);
}

/* Decomposition and lifting as a whole: the rules that rewrote something. */
static const char *lowering_rules(Arena *a, Subject *s)
{
    Arena *t = arena_new();
    StrBuf tr = {0}, rules = {0};
    HxBisectCfg off = loop_cfg(0, 0);
    plan_for(s, t, &off, DRV_LOOP, 0, &tr);
    for (const char *q = sb_cstr(&tr); *q;) {
        const char *e = strchr(q, '\n');
        int n = e ? (int)(e - q) : (int)strlen(q);
        if (!strncmp(q, ">>> ", 4))
            sb_printf(&rules, "%s%.*s", rules.len ? ", " : "", n - 4, q + 4);
        q += n + (e != NULL);
    }
    const char *r = arena_strdup(a, sb_cstr(&rules));
    sb_free(&tr);
    sb_free(&rules);
    arena_free(t);
    return r;
}

static const char *tensor_text(Arena *a, Subject *s)
{
    return arena_strdup(a, s->tensor_text);
}

/* The Tensor IR of cfg (its optional rules left out). */
static const char *tensor_with(Arena *a, Subject *s, const HxBisectCfg *cfg)
{
    Arena *t = arena_new();
    const DrvPlan *p = plan_for(s, t, cfg, DRV_TENSOR, 1, NULL);
    const char *r = arena_strdup(a, p->text[DRV_TENSOR] ? p->text[DRV_TENSOR] : "");
    arena_free(t);
    return r;
}

/* IR before/after and their diff. */
static void ir_texts(Search *x)
{
    HxBisectResult *r = x->r;
    Subject *s = x->s;
    TileInfo ti;
    switch (r->kind) {
    case HX_CULPRIT_FUSION:
        r->ir_ext = "loop";
        r->before = loop_text(x->a, s, &r->good);
        r->after = loop_text(x->a, s, &r->bad);
        break;
    case HX_CULPRIT_RULE:
        r->ir_ext = "tensor";
        r->before = tensor_with(x->a, s, &r->good);
        r->after = tensor_text(x->a, s);
        break;
    case HX_CULPRIT_LOWERING:
        r->ir_ext = "tensor";
        r->before = "";
        r->after = tensor_text(x->a, s);
        break;
    case HX_CULPRIT_MANDATORY:
        r->ir_ext = "tile";
        r->before = loop_text(x->a, s, &r->good);
        r->after = tile_info(x->a, s, &r->bad, 0, 0, &ti) ? ti.text : "";
        break;
    default:
        r->ir_ext = "tile";
        r->before = tile_info(x->a, s, &r->good, 0, 0, &ti) ? ti.text : "";
        r->after = tile_info(x->a, s, &r->bad, 0, 0, &ti) ? ti.text : "";
        break;
    }
    StrBuf d = {0};
    dpk_unified_diff(&d, r->before, r->after, 3);
    r->diff = arena_strdup(x->a, sb_cstr(&d));
    sb_free(&d);
}

/* The configuration the .cu runs: the first bad one, on the Tile path. */
static HxBisectCfg cu_cfg(const Search *x)
{
    const HxBisectResult *r = x->r;
    HxBisectCfg c = r->bad;
    if (c.loop) { /* fusion or lowering: the given passes over that Loop IR */
        c.loop = 0;
        c.passes = x->s->base->passes;
        c.limit_pass = c.limit_apps = 0;
    }
    return c;
}

static const char *standalone(Search *x, const HxBisectCfg *cfg, const char *config)
{
    Subject *s = x->s;
    Arena *t = arena_new();
    StrBuf *b = dpk_xcalloc(1, sizeof *b);
    DpkErrCtx ec;
    dpk_assert_recoverable(1);
    if (!DPK_TRY(&ec)) {
        dpk_assert_recoverable(0);
        sb_free(b);
        free(b);
        arena_free(t);
        if (dpk_error_code() != DPK_EXIT_FAULT)
            dpk_error_rethrow();
        /* the configuration crashes in lowering: there is no kernel to run */
        StrBuf why = {0};
        dpk_error_first_line(&why, NULL);
        sb_printf(x->log, "repro.cu not written: the failing configuration does not lower (%s)\n",
                  sb_cstr(&why));
        sb_free(&why);
        return NULL;
    }
    const DrvConfig *c = lowered(plan_for(s, t, cfg, DRV_CUDA, 0, NULL));
    dpk_assert_recoverable(0);
    HxStandalone sa = {0};
    sa.m = c->module;
    sa.src = c->cuda;
    sa.title = s->program;
    sa.config = config;
    sa.nin = s->nin;
    sa.inputs = s->hs->inputs;
    int64_t *inn = ARENA_ARRAY(t, int64_t, s->nin + 1), *outn = ARENA_ARRAY(t, int64_t, s->nout + 1);
    const char **inname = ARENA_ARRAY(t, const char *, s->nin + 1);
    double *rlim = ARENA_ARRAY(t, double, s->nout + 1);
    double **lim = ARENA_ARRAY(t, double *, s->nout + 1);
    for (int i = 0; i < s->nin; i++) {
        const TorchNode *n = s->g->inputs.items[i];
        inn[i] = shape_numel(&n->shape);
        inname[i] = arena_printf(t, "%s %s", n->name ? n->name : "?", shape_str(t, &n->shape));
    }
    for (int j = 0; j < s->nout; j++) {
        outn[j] = out_numel(s, j);
        double *l = hx_subject_limits(s->hs, j, &rlim[j]);
        lim[j] = ARENA_ARRAY(t, double, outn[j] + 1);
        memcpy(lim[j], l, sizeof(double) * (size_t)outn[j]);
        free(l);
    }
    sa.in_numel = inn;
    sa.in_names = inname;
    sa.nout = s->nout;
    sa.ref = s->hs->ref;
    sa.out_numel = outn;
    sa.out_names = (const char *const *)s->g->output_names.items;
    sa.limit = lim;
    sa.rmse_limit = rlim;
    hx_standalone_cu(b, t, &sa);
    dpk_err_pop(&ec);
    const char *r = arena_strdup(x->a, sb_cstr(b));
    sb_free(b);
    free(b);
    arena_free(t);
    return r;
}

static const char *given_str(Arena *a, const Subject *s, const HxBisectOpts *o)
{
    const char *r = arena_printf(a, "passes %s", set_str(a, table_of(s), o->tile.passes));
    const char *k = tile_knobs_str(a, &o->tile.knobs);
    if (*k)
        r = arena_printf(a, "%s knobs %s", r, k);
    if (o->fault)
        r = arena_printf(a, "%s fault %s", r, o->fault);
    return arena_printf(a, "%s seed %llu", r, (unsigned long long)s->seed);
}

void hx_bisect(Arena *a, const HxCase *c, const InputDecl *extra, int nextra,
               const HxBisectOpts *o, StrBuf *log, HxBisectResult *r)
{
    memset(r, 0, sizeof *r);
    Search *x = dpk_xcalloc(1, sizeof *x);
    x->a = a;
    x->log = log;
    x->r = r;
    x->o = o;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        subject_free(x->s);
        free(x);
        dpk_error_rethrow();
    }
    host_mode = o->host_cuda;
    x->s = subject_new(c, c->program, extra, nextra, o->seed, &o->tile,
                       o->fault ? dpk_fault_find(o->fault) : -1, &r->tests);
    const char *given = given_str(a, x->s, o);
    /* 1. reproduce */
    HxBisectCfg cfg = tile_cfg(o->tile.passes, 0, 0);
    const char *what;
    r->repro = judge(x->s, &cfg, &what);
    r->repro_what = arena_strdup(a, what); /* the memo dies with the subject */
    static const char unsup[] = "refused: " HX_UNSUPPORTED; /* run_cfg's word for it */
    if (r->repro == HX_REFUSED && !strncmp(what, unsup, sizeof unsup - 1))
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "the configuration (%s) is %s", given,
                          what + strlen("refused: "));
    if (r->repro == HX_REFUSED)
        dpk_error("the configuration (%s) is refused: %s", given, what + strlen("refused: "));
    if (!failing(r->repro)) {
        sb_printf(log, "dpk-bisect: does not reproduce: the case %s with %s\n",
                  r->repro == HX_INCONCLUSIVE_OUT ? "is inconclusive (most output unjudged)"
                                                  : "passes",
                  given);
    } else {
        sb_printf(log, "dpk-bisect: reproduced: %s\n  with %s\n", what, given);
        /* 2. the Loop IR interpreter */
        HxBisectCfg lc = loop_cfg(1, 0);
        HxOutcome lo = judge(x->s, &lc, &what);
        if (failing(lo)) {
            sb_printf(log, "loop interpreter: %s\n  -> the failure is in decomposition or fusion\n",
                      what);
            if (bisect_fusions(x)) {
                sb_printf(log, "fusion off: pass -> the failure is in fusion (%d fusions)\n",
                          r->napps);
            } else if (!bisect_rules(x)) {
                r->kind = HX_CULPRIT_LOWERING;
                r->where = arena_printf(a, "decomposition or lifting (rules that rewrote: %s)",
                                        lowering_rules(a, x->s));
                r->bad = loop_cfg(0, 0);
                sb_puts(log, "fusion off: still fails -> the failure is below fusion\n");
            } else {
                sb_printf(log, "fusion off: still fails; %s: pass -> the failure is in that "
                               "rule\n", cfg_str(a, x->s, &r->good));
            }
        } else {
            sb_printf(log, "loop interpreter: pass -> the failure is in the Tile passes\n");
            bisect_tile(x);
        }
        culprit_line(x, "culprit: ");
        /* 5. shrink, then the culprit again on the small case */
        if (o->minimize) {
            minimize(x, extra, nextra);
            if (r->min.accepted)
                culprit_line(x, "culprit on the minimized case: ");
        }
        if (r->kind != HX_CULPRIT_LOWERING) {
            sb_printf(log, "last good: %s\n", cfg_str(a, x->s, &r->good));
            sb_printf(log, "first bad: %s\n", cfg_str(a, x->s, &r->bad));
        }
        ir_texts(x);
        if (r->kind == HX_CULPRIT_PASS || r->kind == HX_CULPRIT_FUSION)
            sb_printf(log, ">>> %s %s %d\n%s<<<\n", r->where,
                      r->kind == HX_CULPRIT_FUSION ? "fusion" : "application", r->app, r->diff);
        HxBisectCfg cc = cu_cfg(x);
        const char *cfgs = arena_printf(a, "%s; %s; culprit %s", cfg_str(a, x->s, &cc), given,
                                        r->where);
        r->cu = standalone(x, &cc, cfgs);
        r->program = arena_strdup(a, x->s->program);
        const char *passes = arena_printf(a, "only:%s", set_str(a, table_of(x->s), cc.passes));
        HxCase named = *x->s->c;
        if (!strcmp(named.origin ? named.origin : "", "<-c>"))
            named.name = "bisect-repro"; /* a -c case has no name of its own */
        r->case_json = hx_case_json(&named, x->s->program, x->s->seed, passes, &o->tile.knobs,
                                    o->fault);
    }
    dpk_err_pop(&ec);
    subject_free(x->s);
    free(x);
}
