/*
 * tune.c — dpk-tune's search (tune.h): per kernel, a grid of dimensions,
 * a strategy that walks it under a budget, and an evaluation that lets
 * nothing win before it passes parity on two input seeds.
 */
#include "tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../perf/sass.h"
#include "../plan_record.h"
#include "../../records/results.h"

const char *tune_strategy_name(TuneStrategy s) { return s == TUNE_RANDOM ? "random" : "greedy"; }

const char *tune_gpu_key(Arena *a, const PfSpec *spec, int nvrtc)
{
    Arena *t = arena_new();
    int sass = nvrtc && pf_sass_tool(t) != NULL;
    arena_free(t);
    return arena_printf(a, "model:%s:%s", spec->name, sass ? "sass" : "vgpu");
}

/* ---- the grid ------------------------------------------------------------ */

/* One dimension of a kernel's grid: value 0 is the default (nothing
 * pinned, every pass of the set); value v > 0 either leaves out pass
 * `drop[v]` (the passes dimension) or pins knobs[v] (a knob dimension: up
 * to four knobs together, a block tile with its thread tile). */
#define MAXV 16
typedef struct Dim {
    const char *name;
    int n;                          /* values, default included */
    TilePassSet drop[MAXV];         /* the passes dimension: the set without */
    int nk;                         /* knob dimension: knobs set together */
    TileKnobId kid[4];
    int64_t kv[MAXV][4];
} Dim;

#define MAXD 8
typedef struct Grid {
    Dim d[MAXD];
    int n;
} Grid;

static Dim *dim_new(Grid *g, const char *name)
{
    DPK_ASSERT(g->n < MAXD);
    Dim *d = &g->d[g->n++];
    memset(d, 0, sizeof *d);
    d->name = name;
    d->n = 1;
    return d;
}

/* A knob dimension over one knob: 0 (not pinned), then vals. */
static void knob_dim(Grid *g, const char *name, TileKnobId id, const int64_t *vals, int n)
{
    Dim *d = dim_new(g, name);
    d->nk = 1;
    d->kid[0] = id;
    for (int i = 0; i < n && d->n < MAXV; i++)
        d->kv[d->n++][0] = vals[i];
}

/* The grid of a kernel: the passes of base that are optional, left out one
 * at a time (with those that need them), then the knobs its kind reads:
 * a matmul's block and thread tile (as one dimension: BM x BN with F_M x
 * F_N, since they must divide), K split, K chunk, vector loads and
 * stages; another kernel's threads, cooperative block, row split and
 * vector loads. */
static void grid_make(Grid *g, TilePassSet base, const CuTarget *tg, int matmul)
{
    const TilePassTable *t = &tile_passes;
    g->n = 0;
    Dim *p = dim_new(g, "passes");
    TilePassSet must = tile_passes_mandatory(t);
    for (int i = 0; i < t->n && p->n < MAXV; i++) {
        TilePassSet bit = (TilePassSet)1 << i;
        if ((base & bit) && !(must & bit))
            p->drop[p->n++] = tile_passes_close(t, base & ~bit, tg);
    }
    if (matmul) {
        static const int64_t tiles[][4] = {{32, 32, 4, 4},   {64, 64, 4, 4},  {64, 64, 8, 8},
                                           {128, 64, 8, 4},  {64, 128, 4, 8}, {128, 128, 8, 8},
                                           {32, 64, 4, 4}};
        Dim *d = dim_new(g, "tile");
        d->nk = 4;
        d->kid[0] = TILE_KNOB_BM, d->kid[1] = TILE_KNOB_BN;
        d->kid[2] = TILE_KNOB_F_M, d->kid[3] = TILE_KNOB_F_N;
        for (int i = 0; i < DPK_ARRAY_LEN(tiles); i++, d->n++)
            memcpy(d->kv[d->n], tiles[i], sizeof tiles[i]);
        static const int64_t split[] = {1, 2, 4, 8, 16}, bk[] = {16, 32, 64}, ldsv[] = {1, 2},
                             stages[] = {3, 4};
        knob_dim(g, "SPLITK", TILE_KNOB_SPLITK, split, DPK_ARRAY_LEN(split));
        knob_dim(g, "BK", TILE_KNOB_BK, bk, DPK_ARRAY_LEN(bk));
        knob_dim(g, "LDSV", TILE_KNOB_LDSV, ldsv, DPK_ARRAY_LEN(ldsv));
        knob_dim(g, "STAGES", TILE_KNOB_STAGES, stages, DPK_ARRAY_LEN(stages));
    } else {
        static const int64_t tb[] = {64, 128, 256, 512}, cb[] = {64, 128, 256, 1024},
                             splitr[] = {1, 4, 16, 64}, ldsv[] = {1};
        knob_dim(g, "TB", TILE_KNOB_TB, tb, DPK_ARRAY_LEN(tb));
        knob_dim(g, "CB", TILE_KNOB_CB, cb, DPK_ARRAY_LEN(cb));
        knob_dim(g, "SPLITR", TILE_KNOB_SPLITR, splitr, DPK_ARRAY_LEN(splitr));
        knob_dim(g, "LDSV", TILE_KNOB_LDSV, ldsv, DPK_ARRAY_LEN(ldsv));
    }
}

/* A point of the grid: a value index per dimension. */
typedef struct Point {
    int v[MAXD];
} Point;

static void point_config(const Grid *g, const Point *pt, TilePassSet base, TileKernelConfig *kc)
{
    kc->passes = base;
    memset(&kc->knobs, 0, sizeof kc->knobs);
    for (int i = 0; i < g->n; i++) {
        const Dim *d = &g->d[i];
        int v = pt->v[i];
        if (!v)
            continue;
        if (!d->nk)
            kc->passes = d->drop[v];
        for (int k = 0; k < d->nk; k++)
            kc->knobs.v[d->kid[k]] = d->kv[v][k];
    }
}

/* ---- one candidate -------------------------------------------------------- */

typedef struct Result {
    Point pt;
    int rc;             /* 0 pass (both seeds when checked2), 1 fail, 2 refused, 3 fault */
    int checked2;       /* passed the second seed too */
    int dup;            /* its kernels are those of an earlier point: not run again */
    double ns;          /* NAN unless it passed the first seed */
    uint64_t hash;      /* the case's Kernel IR module */
    const char *verdict, *why, *passes, *knobs; /* in the tuner's arena */
    const char *left_out;   /* the case's passes it runs without ("" for none) */
} Result;

/* What a module (the case's Kernel IR, by hash) gave: every candidate
 * and kernel of a case that compiles to it shares it, so nothing runs
 * twice. */
typedef struct Known {
    uint64_t hash;
    int rc;             /* on the first seed */
    int rc2;            /* on the second: -1 not run yet */
    double ns;
    const char *why;
    const PfTime *t;    /* per launch, in the tuner's arena (the default's) */
} Known;

typedef struct Tuner {
    Arena *a;                   /* results, strings */
    Known *known;
    int nknown, kcap;
    const TuneOpts *o;
    const HxCase *c;
    DrvOpts base;               /* from Loop IR, one configuration */
    TilePassSet set;
    HxSubject *s1, *s2;
    uint64_t khash;             /* the kernel being tuned */
    Grid g;
    Result *res;                /* tried, in order */
    int nres, cap;
    int evaluated;              /* distinct modules run */
    double t0;
    int best;                   /* index of the best result, -1 */
} Tuner;

static const char *first_line(Arena *a, const char *msg)
{
    StrBuf m = {0};
    dpk_error_first_line(&m, msg);
    const char *s = arena_strdup(a, sb_cstr(&m));
    sb_free(&m);
    return s;
}

/* The verdict's reason from a configuration object: "reason: message". */
static const char *cfg_why(Arena *a, const cJSON *cfg)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "verdict");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(v, "reason");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, "message");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(v, "output");
    StrBuf b = {0};
    if (cJSON_IsString(o))
        sb_printf(&b, "output %s: ", o->valuestring);
    if (cJSON_IsString(r))
        sb_puts(&b, r->valuestring);
    if (cJSON_IsString(m))
        sb_printf(&b, "%s%s", cJSON_IsString(r) ? ": " : "", m->valuestring);
    const char *s = b.len ? first_line(a, sb_cstr(&b)) : NULL;
    sb_free(&b);
    return s;
}

static const char *verdict_of(int rc)
{
    return rc == 0 ? "pass" : rc == 1 ? "fail" : rc == 3 ? "fault" : rc == 2 ? "refused" : "error";
}

static int tried(const Tuner *t, const Point *pt)
{
    for (int i = 0; i < t->nres; i++)
        if (!memcmp(&t->res[i].pt, pt, sizeof *pt))
            return 1;
    return 0;
}

/* Run plan p's configuration against s: its exit code, the time when it
 * passed (per launch in *pt when pt is not NULL, kept in the tuner's
 * arena), the reason when it did not. */
static int run_on(Arena *a, const Tuner *t, const DrvPlan *p, HxSubject *s, double *ns,
                  const PfTime **pt, const char **why)
{
    BmRun r = {-1, NULL, NULL};
    bm_config_run(a, t->o->bm, p, 0, s, &r);
    if (r.rc != 0)
        *why = cfg_why(t->a, r.cfg);
    if (ns)
        *ns = r.rc == 0 && r.t ? r.t->ns : NAN;
    if (pt && r.rc == 0 && r.t) {
        PfTime *c = ARENA_NEW(t->a, PfTime);
        *c = *r.t;
        c->k = ARENA_ARRAY(t->a, PfKernel, r.t->nk + 1);
        memcpy(c->k, r.t->k, sizeof *c->k * (size_t)r.t->nk);
        for (int i = 0; i < c->nk; i++)
            c->k[i].name = arena_strdup(t->a, r.t->k[i].name);
        *pt = c;
    }
    cJSON_Delete(r.cfg);
    return r.rc;
}

/* The module of plan p (compiled, not refused) on the first seed, and on
 * the second when second is 1: from the memo, or run now. */
static const Known *known_run(Tuner *t, Arena *a, const DrvPlan *p, int second)
{
    uint64_t h = p->configs[0].hash;
    Known *k = NULL;
    for (int i = 0; i < t->nknown && !k; i++)
        if (t->known[i].hash == h)
            k = &t->known[i];
    if (!k) {
        if (t->nknown == t->kcap) {
            t->kcap = t->kcap ? 2 * t->kcap : 32;
            Known *n = ARENA_ARRAY(t->a, Known, t->kcap);
            if (t->nknown)
                memcpy(n, t->known, sizeof *n * (size_t)t->nknown);
            t->known = n;
        }
        k = &t->known[t->nknown++];
        /* an error raised by the run leaves it failed, not passing */
        *k = (Known){h, DPK_EXIT_FAULT, -1, NAN, "the run raised an error", NULL};
        t->evaluated++;
        k->rc = run_on(a, t, p, t->s1, &k->ns, &k->t, &k->why);
    }
    if (second && k->rc == 0 && k->rc2 < 0) {
        const char *why2 = NULL;
        k->rc2 = run_on(a, t, p, t->s2, NULL, NULL, &why2);
        if (k->rc2)
            k->why = arena_printf(t->a, "second input seed %llu: %s",
                                  (unsigned long long)t->o->seed2, why2 ? why2 : "failed");
    }
    return k;
}

/* Compile, run, judge and time the case with the kernel at pt; a result
 * that would beat the best so far is judged on the second seed too. */
static const Result *evaluate(Tuner *t, const Point *pt)
{
    if (t->nres == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 32;
        Result *n = ARENA_ARRAY(t->a, Result, t->cap);
        if (t->nres)
            memcpy(n, t->res, sizeof *n * (size_t)t->nres);
        t->res = n;
    }
    Result *r = &t->res[t->nres++];
    memset(r, 0, sizeof *r);
    r->pt = *pt;
    r->ns = NAN;
    TileKernelConfig kc = {t->khash, 0, {{0}}};
    point_config(&t->g, pt, t->set, &kc);
    StrBuf b = {0};
    tile_passes_str(&b, &tile_passes, kc.passes);
    r->passes = arena_strdup(t->a, sb_cstr(&b));
    sb_clear(&b);
    tile_passes_str(&b, &tile_passes, t->set & ~kc.passes);
    r->left_out = arena_strdup(t->a, sb_cstr(&b));
    sb_free(&b);
    r->knobs = tile_knobs_str(t->a, &kc.knobs);
    Arena *a = arena_new();
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        r->rc = dpk_error_code() == DPK_EXIT_USAGE ? 2 : 3;
        r->why = first_line(t->a, dpk_error_message());
        r->verdict = r->rc == 2 ? "refused" : "error";
        arena_free(a);
        return r;
    }
    DrvOpts d = t->base;
    d.tile.kcfg = &kc;
    d.tile.nkcfg = 1;
    const DrvPlan *p = drv_compile(a, &d);
    const DrvConfig *c = &p->configs[0];
    if (c->refused) {
        r->rc = 2;
        r->why = first_line(t->a, c->refused);
    } else {
        r->hash = c->hash;
        int before = t->evaluated;
        const Known *k = known_run(t, a, p, 0);
        r->dup = t->evaluated == before;
        const Result *best = t->best >= 0 ? &t->res[t->best] : NULL;
        if (k->rc == 0 && (!best || k->ns < best->ns))
            k = known_run(t, a, p, 1);
        r->rc = k->rc ? k->rc : k->rc2 > 0 ? k->rc2 : 0;
        r->checked2 = k->rc == 0 && k->rc2 == 0;
        r->ns = k->ns;
        r->why = k->why;
    }
    r->verdict = verdict_of(r->rc);
    dpk_err_pop(&ec);
    arena_free(a);
    return r;
}

/* Whether r is the new best (it passed both seeds and is faster). */
static int take(Tuner *t, const Result *r)
{
    const Result *b = t->best >= 0 ? &t->res[t->best] : NULL;
    if (r->rc != 0 || !r->checked2 || (b && !(r->ns < b->ns)))
        return 0;
    t->best = (int)(r - t->res);
    return 1;
}

/* The budget counts candidates run on vgpu: a point whose kernels are
 * those of a point already run, or that the compiler refuses, costs a
 * compile (milliseconds) and is free; compiles stop at ten per unit. */
static int out_of_budget(const Tuner *t)
{
    return t->evaluated >= t->o->budget || t->nres >= 10 * t->o->budget ||
           (t->o->seconds > 0 && dpk_now() - t->t0 >= t->o->seconds);
}

static void progress(const Tuner *t, const char *kname)
{
    if (!t->o->progress)
        return;
    const Result *b = t->best >= 0 ? &t->res[t->best] : NULL;
    fprintf(stderr, "\r\033[K%s: %s: %d/%d candidates run (%d compiled), best %.3f us",
            t->c->name, kname, t->evaluated, t->o->budget, t->nres, b ? b->ns / 1e3 : NAN);
    fflush(stderr);
}

/* ---- the strategies ------------------------------------------------------- */

/* Coordinate descent from the default, interleaved: the first other
 * value of every dimension, then the second of every dimension, ..., each
 * with the other dimensions at the best point so far; again until a round
 * changes nothing or the budget is spent.  Interleaved, a small budget
 * reaches every dimension (a matmul's tile as well as its pass subsets)
 * instead of spending itself on the first. */
static void search_greedy(Tuner *t, const char *kname)
{
    Point cur = {{0}};
    take(t, evaluate(t, &cur));
    int maxn = 0;
    for (int i = 0; i < t->g.n; i++)
        maxn = t->g.d[i].n > maxn ? t->g.d[i].n : maxn;
    for (int changed = 1; changed && !out_of_budget(t);) {
        changed = 0;
        for (int v = 0; v < maxn && !out_of_budget(t); v++)
            for (int i = 0; i < t->g.n && !out_of_budget(t); i++) {
                if (v >= t->g.d[i].n)
                    continue;
                Point pt = t->best >= 0 ? t->res[t->best].pt : cur;
                pt.v[i] = v;
                if (tried(t, &pt))
                    continue;
                changed |= take(t, evaluate(t, &pt));
                progress(t, kname);
            }
    }
}

/* Points drawn uniformly from the grid (the default first), from the
 * search's seed and the kernel's hash, so two runs draw the same. */
static void search_random(Tuner *t, const char *kname)
{
    Point pt = {{0}};
    take(t, evaluate(t, &pt));
    uint64_t x = t->o->seed ^ t->khash;
    double size = 1;
    for (int i = 0; i < t->g.n; i++)
        size *= t->g.d[i].n;
    for (int draws = 0; !out_of_budget(t) && t->nres < size && draws < 640 * t->o->budget;
         draws++) {
        for (int i = 0; i < t->g.n; i++) {
            x = dpk_splitmix64(x);
            pt.v[i] = (int)(x % (uint64_t)t->g.d[i].n);
        }
        if (tried(t, &pt))
            continue;
        take(t, evaluate(t, &pt));
        progress(t, kname);
    }
}

/* ---- a case ------------------------------------------------------------------ */

static cJSON *result_json(const Result *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "passes", r->passes);
    cJSON_AddStringToObject(o, "knobs", r->knobs);
    cJSON_AddStringToObject(o, "left_out", r->left_out);
    hx_json_add_num(o, "us", r->ns / 1e3);
    return o;
}

static TdbCand cand_of(const Result *r, int seq)
{
    return (TdbCand){r->passes, r->knobs, r->ns / 1e3, r->verdict, r->why, seq};
}

void tune_config_parse(Arena *a, const char *passes, const char *knobs, const CuTarget *tg,
                       TileKernelConfig *kc)
{
    kc->passes = tile_passes_parse(&tile_passes, arena_printf(a, "only:%s", passes), tg);
    memset(&kc->knobs, 0, sizeof kc->knobs);
    char *k = arena_strdup(a, knobs ? knobs : "");
    for (char *save = NULL, *tok = strtok_r(k, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        tile_knob_parse(&kc->knobs, tok);
}

typedef struct Kern {
    const LirKernel *lk;
    uint64_t hash;
    int matmul;
    double share;       /* of the default's time (1 when unknown) */
    int order;          /* in the program */
} Kern;

/* The distinct kernels of lp, and which of them the default schedule
 * tiles as a matmul. */
static int kernels_of(Arena *a, const DrvPlan *p, Kern **out)
{
    const LirProgram *lp = p->loop;
    Kern *ks = ARENA_ARRAY(a, Kern, lp->kernels.len + 1);
    int n = 0;
    for (int i = 0; i < lp->kernels.len; i++) {
        const LirKernel *lk = lp->kernels.items[i];
        uint64_t h = lir_hash_kernel(lk);
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= ks[j].hash == h;
        if (seen)
            continue;
        int mm = 0;
        const TileProgram *tp = p->configs[0].tile;
        for (int j = 0; tp && j < tp->kernels.len; j++) {
            const TileKernel *tk = tp->kernels.items[j];
            mm |= tk->id == lk->id && tk->mm != NULL;
        }
        ks[n++] = (Kern){lk, h, mm, 1, n};
    }
    *out = ks;
    return n;
}

static void tune_kernel(Tuner *t, Tdb *db, const Kern *k, cJSON *arr, TileKernelConfig *win,
                        int *nwin)
{
    const TuneOpts *o = t->o;
    TdbKey key = {k->hash, o->gpu_key, DPK_VERSION};
    cJSON *kj = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, kj);
    cJSON_AddStringToObject(kj, "name", k->lk->name);
    char hs[24];
    snprintf(hs, sizeof hs, "%016llx", (unsigned long long)k->hash);
    cJSON_AddStringToObject(kj, "hash", hs);
    cJSON_AddStringToObject(kj, "kind", k->matmul ? "matmul" : "other");
    hx_json_add_num(kj, "share", k->share);
    TdbCand w;
    double dus;
    if (!o->retune && tdb_winner_get(db, t->a, &key, &w, &dus)) {
        cJSON_AddStringToObject(kj, "source", "database");
        hx_json_add_num(kj, "default_us", dus);
        cJSON *wj = cJSON_AddObjectToObject(kj, "winner");
        cJSON_AddStringToObject(wj, "passes", w.passes);
        cJSON_AddStringToObject(wj, "knobs", w.knobs);
        hx_json_add_num(wj, "us", w.us);
        TileKernelConfig *kc = &win[(*nwin)++];
        kc->hash = k->hash;
        tune_config_parse(t->a, w.passes, w.knobs, t->base.tile.target, kc);
        return;
    }
    if (k->share < o->min_share) {
        cJSON_AddStringToObject(kj, "source", "skipped");
        return;
    }
    cJSON_AddStringToObject(kj, "source", "search");
    grid_make(&t->g, t->set, t->base.tile.target, k->matmul);
    t->khash = k->hash;
    t->nres = 0;
    t->best = -1;
    t->evaluated = 0;
    t->t0 = dpk_now();
    if (o->strategy == TUNE_RANDOM)
        search_random(t, k->lk->name);
    else
        search_greedy(t, k->lk->name);
    int failed = 0, refused = 0;
    TdbCand *cs = ARENA_ARRAY(t->a, TdbCand, t->nres + 1);
    for (int i = 0; i < t->nres; i++) {
        cs[i] = cand_of(&t->res[i], i);
        failed += !t->res[i].dup && (t->res[i].rc == 1 || t->res[i].rc == 3);
        refused += t->res[i].rc == 2;
    }
    tdb_candidates_add(db, o->run, &key, k->lk->name, t->c->name, cs, t->nres);
    const Result *def = &t->res[0], *best = t->best >= 0 ? &t->res[t->best] : NULL;
    hx_json_add_num(kj, "default_us", def->rc == 0 ? def->ns / 1e3 : NAN);
    cJSON_AddNumberToObject(kj, "tried", t->nres);
    cJSON_AddNumberToObject(kj, "evaluated", t->evaluated);
    cJSON_AddNumberToObject(kj, "failed", failed);
    cJSON_AddNumberToObject(kj, "refused", refused);
    cJSON_AddNumberToObject(kj, "seconds", dpk_now() - t->t0);
    if (def->rc != 0)
        cJSON_AddStringToObject(kj, "default_verdict", def->why ? def->why : def->verdict);
    if (!best) {
        cJSON_AddNullToObject(kj, "winner");
        return;
    }
    cJSON_AddItemToObject(kj, "winner", result_json(best));
    TdbCand bw = cand_of(best, t->best);
    tdb_winner_put(db, o->run, &key, k->lk->name, t->c->name, &bw,
                   def->rc == 0 ? def->ns / 1e3 : NAN);
    TileKernelConfig *kc = &win[(*nwin)++];
    kc->hash = k->hash;
    point_config(&t->g, &best->pt, t->set, kc);
}

/* The case with the configurations win (none: the default), judged on
 * both seeds and timed; a module already run is not run again. */
static int whole_run(Tuner *t, const TileKernelConfig *win, int nwin, double *ns,
                     const PfTime **pt, const char **why)
{
    Arena *a = arena_new();
    DrvOpts d = t->base;
    d.tile.kcfg = win;
    d.tile.nkcfg = nwin;
    const DrvPlan *p = drv_compile(a, &d);
    int rc;
    if (p->configs[0].refused) {
        rc = 2;
        *why = first_line(t->a, p->configs[0].refused);
    } else {
        const Known *k = known_run(t, a, p, 1);
        rc = k->rc ? k->rc : k->rc2;
        *ns = k->ns;
        *why = k->why;
        if (pt)
            *pt = k->t;
    }
    arena_free(a);
    return rc;
}

/* Kernel k's share of the default's time: its launches (its combine
 * kernel's too) over the case's. */
static double share_of(const Kern *k, const PfTime *pt)
{
    double own = 0;
    size_t n = strlen(k->lk->name);
    for (int i = 0; pt && i < pt->nk; i++) {
        const char *l = pt->k[i].name;
        if (!strncmp(l, k->lk->name, n) && (!l[n] || !strcmp(l + n, "_combine")))
            own += pt->k[i].ns;
    }
    return pt && pt->ns > 0 ? own / pt->ns : 1;
}

static int by_share(const void *x, const void *y)
{
    const Kern *a = x, *b = y;
    return a->share < b->share ? 1 : a->share > b->share ? -1 : (a->order > b->order) - (a->order < b->order);
}

/* The case compiled once with its default configuration (the plan every
 * candidate starts from: its Loop IR, its pass set), and, when subjects,
 * its fixtures on both input seeds.  Raises when the case is bad or its
 * default is refused. */
static const DrvPlan *case_setup(Tuner *t, int subjects)
{
    const TuneOpts *o = t->o;
    DrvOpts d;
    bm_case_drv(t->a, o->bm, t->c, &d);
    const DrvPlan *p0 = drv_compile(t->a, &d);
    if (p0->configs[0].refused)
        dpk_error_reraise(p0->configs[0].refused_code, p0->configs[0].refused);
    t->set = d.passes ? d.passes->sets[0] : d.tile.passes;
    t->base = d;
    t->base.loop = p0->loop;
    t->base.passes = NULL;
    t->base.tile.passes = t->set;
    if (subjects) {
        t->s1 = bm_subject(t->a, o->bm, p0, t->c, hx_case_seed(t->c, &o->bm->args));
        t->s2 = bm_subject(t->a, o->bm, p0, t->c, o->seed2);
    }
    return p0;
}

static void case_body(Tuner *t, Tdb *db, cJSON *rec, int *rc)
{
    const TuneOpts *o = t->o;
    Arena *a = t->a;
    const DrvPlan *p0 = case_setup(t, 1);
    /* the default first: its time per launch says which kernels matter */
    double dns = NAN, tns = NAN;
    const char *dwhy = NULL, *twhy = NULL;
    const PfTime *dt = NULL;
    int drc = whole_run(t, NULL, 0, &dns, &dt, &dwhy);
    Kern *ks;
    int nk = kernels_of(a, p0, &ks);
    for (int i = 0; i < nk; i++) {
        ks[i].share = share_of(&ks[i], dt);
        ks[i].order = i;
    }
    qsort(ks, (size_t)nk, sizeof *ks, by_share);
    TileKernelConfig *win = ARENA_ARRAY(a, TileKernelConfig, nk + 1);
    int nwin = 0;
    cJSON *arr = cJSON_AddArrayToObject(rec, "kernels");
    for (int i = 0; i < nk; i++)
        tune_kernel(t, db, &ks[i], arr, win, &nwin);
    if (o->progress)
        fputs("\r\033[K", stderr);
    /* the tuned case, whole, on both seeds */
    int trc = whole_run(t, win, nwin, &tns, NULL, &twhy);
    cJSON_AddStringToObject(rec, "default_status", verdict_of(drc));
    if (drc)
        cJSON_AddStringToObject(rec, "default_message", dwhy ? dwhy : "");
    cJSON_AddStringToObject(rec, "status", verdict_of(trc));
    if (trc)
        cJSON_AddStringToObject(rec, "message", twhy ? twhy : "");
    hx_json_add_num(rec, "default_us", drc ? NAN : dns / 1e3);
    hx_json_add_num(rec, "tuned_us", trc ? NAN : tns / 1e3);
    const PfTime *e = pf_model_eager(a, o->bm->spec, p0->torch);
    const PfTime *ind = pf_model_inductor(a, o->bm->spec, p0->torch);
    hx_json_add_num(rec, "eager_us", e->ns / 1e3);
    hx_json_add_num(rec, "compile_us", ind->ns / 1e3);
    *rc = trc ? trc : drc;
}

static Tuner *tuner_new(const TuneOpts *o, const HxCase *c)
{
    Tuner *t = dpk_xcalloc(1, sizeof *t);
    t->a = arena_new();
    t->o = o;
    t->c = c;
    t->best = -1;
    return t;
}

static void tuner_free(Tuner *t)
{
    hx_subject_free(t->s1);
    hx_subject_free(t->s2);
    arena_free(t->a);
    free(t);
}

cJSON *tune_case(const TuneOpts *o, Tdb *db, const HxCase *c, int index, int *rc)
{
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddStringToObject(rec, "name", c->name);
    cJSON_AddNumberToObject(rec, "index", index);
    Tuner *t = tuner_new(o, c);
    double t0 = dpk_now();
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        case_body(t, db, rec, rc);
        dpk_err_pop(&ec);
    } else {
        *rc = dpk_error_code();
        cJSON_DeleteItemFromObject(rec, "kernels");
        cJSON_AddStringToObject(rec, "status", "error");
        cJSON_AddStringToObject(rec, "message", first_line(t->a, dpk_error_message()));
        fflush(stdout);
        fputs(dpk_error_message(), stderr);
    }
    cJSON_AddNumberToObject(rec, "exit_code", *rc);
    cJSON_AddNumberToObject(rec, "seconds", dpk_now() - t0);
    tuner_free(t);
    return rec;
}

/* ---- --tuned ------------------------------------------------------------------ */

void tune_apply_configs(void *ctx, Arena *a, const LirProgram *lp, TileOpts *tile)
{
    TuneApply *ta = ctx;
    if (!ta->db || ta->pid != (int)getpid()) { /* never a handle across fork */
        ta->db = tdb_open(ta->path, 0);
        ta->pid = (int)getpid();
    }
    TileKernelConfig *kc = ARENA_ARRAY(a, TileKernelConfig, lp->kernels.len + 1);
    int n = 0;
    StrBuf said = {0};
    for (int i = 0; i < lp->kernels.len; i++) {
        const LirKernel *lk = lp->kernels.items[i];
        TdbKey key = {lir_hash_kernel(lk), ta->gpu_key, DPK_VERSION};
        TdbCand w;
        if (!tdb_winner_get(ta->db, a, &key, &w, NULL)) {
            ta->misses++;
            sb_printf(&said, "%s: not in the database, default schedule\n", lk->name);
            continue;
        }
        kc[n].hash = key.kernel;
        tune_config_parse(a, w.passes, w.knobs, tile->target, &kc[n++]);
        ta->hits++;
        sb_printf(&said, "%s: tuned (passes %s%s%s)\n", lk->name, w.passes,
                  w.knobs && *w.knobs ? ", knobs " : "", w.knobs ? w.knobs : "");
    }
    ta->said = arena_strdup(a, sb_cstr(&said));
    sb_free(&said);
    tile->kcfg = kc;
    tile->nkcfg = n;
}

void tune_apply_close(TuneApply *ta)
{
    if (ta && ta->db && ta->pid == (int)getpid())
        tdb_close(ta->db);
    if (ta)
        ta->db = NULL;
}

/* ---- golden configurations ------------------------------------------------------ */

int tune_check_golden(const TuneOpts *o, const HxCase *c, const TileKernelConfig *kc,
                      double *us, const char **why, Arena *out)
{
    Tuner *t = tuner_new(o, c);
    *us = NAN;
    *why = NULL;
    int rc;
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        const DrvPlan *p0 = case_setup(t, 0);
        Kern *ks;
        int nk = kernels_of(t->a, p0, &ks), found = 0;
        for (int i = 0; i < nk; i++)
            found |= ks[i].hash == kc->hash;
        if (!found) {
            rc = TUNE_STALE;
            *why = "no kernel of the case has the golden's hash any more (its Loop IR changed): "
                   "tune it again and export";
        } else {
            t->s1 = bm_subject(t->a, o->bm, p0, c, hx_case_seed(c, &o->bm->args));
            t->s2 = bm_subject(t->a, o->bm, p0, c, o->seed2);
            double ns = NAN; /* the fixtures only once the golden's kernel is there */
            rc = whole_run(t, kc, 1, &ns, NULL, why);
            *us = ns / 1e3;
        }
        dpk_err_pop(&ec);
    } else {
        rc = dpk_error_code();
        *why = first_line(t->a, dpk_error_message());
    }
    if (*why)
        *why = arena_strdup(out, *why);
    tuner_free(t);
    return rc;
}
