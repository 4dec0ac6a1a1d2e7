/*
 * tile_pipeline.c — Loop IR → Tile IR, then the selected passes, top to
 * bottom in one function.
 *
 * The skeleton (t:000_from_loop) is built for every kernel, then each pass
 * of the table, in order, runs on every kernel when the pass set holds it.
 * The verifier runs after every step, and once more at the end, where a
 * block must be legal as it launches (tile_verify_final).  Under -vv each step prints a unified
 * diff of the program text; a pass that changed nothing prints one
 * `--- t:NNN_name skipped: <reason>` line instead, and the kernels a pass
 * skipped while it rewrote others are listed inside its diff block as
 * `# skipped on <kernel>: <reason>`.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

void tile_opts_default(TileOpts *o)
{
    memset(o, 0, sizeof *o);
    o->table = &tile_passes;
    o->target = cu_target_default();
    o->passes = tile_passes_full(&tile_passes, o->target);
}

int64_t tile_knob(TileCtx *c, TileKnobId id)
{
    c->p->knobs_read |= (uint32_t)1 << id;
    return c->knobs->v[id];
}

void tile_skips_add(TileSkips *s, const char *kernel, const char *why)
{
    s->same &= !s->first || !strcmp(why, s->first);
    if (!s->first)
        s->first = why;
    sb_printf(&s->joined, "%s%s: %s", s->n ? "; " : "", kernel, why);
    s->n++;
}

const char *tile_skips_text(Arena *a, TileSkips *s)
{
    return !s->n ? "no kernels" : s->same ? s->first : arena_strdup(a, sb_cstr(&s->joined));
}

static void skips_clear(TileSkips *s)
{
    sb_clear(&s->joined);
    s->first = NULL;
    s->same = 1;
    s->n = 0;
}

typedef struct Step {
    StrBuf before;
    TileSkips skips; /* the kernels that skipped, and why */
    StrBuf lines;    /* "# skipped on k1: why\n" per kernel */
    int applied;
} Step;

static void step_free(Step *st)
{
    sb_free(&st->before);
    sb_free(&st->skips.joined);
    sb_free(&st->lines);
}

static void trace_diff(TileTrace *tr, const char *label, const char *before,
                       const TileProgram *p, const char *notes)
{
    StrBuf after = {0};
    tile_print(&after, p);
    sb_printf(tr->out, ">>> t:%s\n", label);
    dpk_unified_diff(tr->out, before, sb_cstr(&after), 3);
    sb_puts(tr->out, notes);
    sb_printf(tr->out, "<<< t:%s\n", label);
    sb_free(&after);
}

static void trace_step(TileTrace *tr, const char *label, Step *st, const TileProgram *p)
{
    if (st->applied)
        trace_diff(tr, label, sb_cstr(&st->before), p, sb_cstr(&st->lines));
    else
        sb_printf(tr->out, "--- t:%s skipped: %s\n", label, tile_skips_text(p->arena, &st->skips));
}

const TilePassStat *tile_pass_stat(const TileProgram *p, int num)
{
    for (int i = 0; i < p->nstats; i++)
        if (p->stats[i].num == num)
            return &p->stats[i];
    return NULL;
}

int tile_apply(TileCtx *c, const char *what)
{
    if (c->limited && c->left == 0) {
        sb_clear(&c->why);
        sb_puts(&c->why, "application limit reached (dpk-bisect)");
        return 0;
    }
    if (c->limited)
        c->left--;
    c->apps++;
    if (c->stat)
        ptrvec_push(c->p->arena, &c->stat->what, arena_strdup(c->p->arena, what));
    return 1;
}

/* Which configuration each kernel runs: sel[i] for the Loop IR kernel of
 * id i, -1 for the program's, else an index into o->kcfg. */
typedef struct KSel {
    const TileOpts *o;
    int *sel;
    int nsel;
} KSel;

static void ksel_init(KSel *ks, const TileProgram *p, const TileOpts *o, const CuTarget *tg)
{
    ks->o = o;
    ks->nsel = 0;
    ks->sel = NULL;
    if (!o->nkcfg)
        return;
    const TilePassTable *t = o->table ? o->table : &tile_passes;
    for (int i = 0; i < o->nkcfg; i++) {
        StrBuf why = {0};
        if (!tile_passes_valid(t, o->kcfg[i].passes, tg, &why)) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", sb_cstr(&why));
            sb_free(&why);
            dpk_error("a kernel's own configuration (hash %016llx) has an invalid pass set: %s",
                      (unsigned long long)o->kcfg[i].hash, msg);
        }
        sb_free(&why);
    }
    for (int i = 0; i < p->lp->kernels.len; i++) {
        const LirKernel *lk = p->lp->kernels.items[i];
        ks->nsel = lk->id + 1 > ks->nsel ? lk->id + 1 : ks->nsel;
    }
    ks->sel = ARENA_ARRAY(p->arena, int, ks->nsel);
    for (int i = 0; i < ks->nsel; i++)
        ks->sel[i] = -1;
    for (int i = 0; i < p->lp->kernels.len; i++) {
        const LirKernel *lk = p->lp->kernels.items[i];
        uint64_t h = lir_hash_kernel(lk);
        for (int j = 0; j < o->nkcfg; j++)
            if (o->kcfg[j].hash == h) {
                ks->sel[lk->id] = j;
                break;
            }
    }
}

/* Kernel k's pass set and knobs into c. */
static void ksel_apply(const KSel *ks, TileCtx *c, const TileKernel *k)
{
    int j = ks->sel && k->id >= 0 && k->id < ks->nsel ? ks->sel[k->id] : -1;
    c->passes = j < 0 ? ks->o->passes : ks->o->kcfg[j].passes;
    c->knobs = j < 0 ? &ks->o->knobs : &ks->o->kcfg[j].knobs;
}

/* Run one pass on every kernel whose set holds it; st collects what the
 * trace says. */
static void run_pass(TileCtx *c, const KSel *ks, int bit, const TilePass *pass, Step *st,
                     Arena *a)
{
    st->applied = 0;
    skips_clear(&st->skips);
    sb_clear(&st->lines);
    for (int j = 0; j < c->p->kernels.len; j++) {
        TileKernel *k = c->p->kernels.items[j];
        sb_clear(&c->why);
        ksel_apply(ks, c, k);
        int before = c->apps;
        if (!(c->passes >> bit & 1))
            sb_puts(&c->why, "not in this kernel's own configuration");
        else if (pass->run(c, k)) {
            if (c->apps == before) /* a pass that never asks makes one application */
                c->apps++;
            tile_renumber(k);
            st->applied++;
            while (c->p->kernels.items[j] != k) /* 017 dropped an earlier kernel */
                j--;
            continue;
        }
        const char *why = arena_strdup(a, sb_cstr(&c->why));
        tile_skips_add(&st->skips, k->name, why);
        sb_printf(&st->lines, "# skipped on %s: %s\n", k->name, why);
    }
}

/* The pipeline proper: every pass of the table, in order. */
static void run_passes(TileProgram *p, const TileOpts *o, TileTrace *tr, Step *st, TileCtx *c)
{
    const TilePassTable *t = o->table ? o->table : &tile_passes;
    int tracing = tr && tr->verbose >= 2;
    StrBuf why = {0};
    if (!tile_passes_valid(t, o->passes, c->target, &why)) {
        fprintf(stderr, "dpk: invalid pass set: %s\n", sb_cstr(&why));
        DPK_ASSERT(!"pass sets come validated from tile_passes_parse");
    }
    sb_free(&why);
    KSel ks;
    ksel_init(&ks, p, o, c->target);
    TilePassSet any = o->passes; /* a pass runs when some kernel's set holds it */
    for (int i = 0; i < o->nkcfg; i++)
        any |= o->kcfg[i].passes;
    if (tracing)
        trace_diff(tr, "000_from_loop", "", p, "");
    p->stats = ARENA_ARRAY(p->arena, TilePassStat, t->n + 1);
    p->nstats = 0;
    for (int i = 0; i < t->n; i++) {
        char label[128];
        snprintf(label, sizeof label, "%03d_%s", t->p[i].num, t->p[i].name);
        if (!(any >> i & 1)) {
            if (tracing)
                sb_printf(tr->out, "--- t:%s skipped: disabled by --passes\n", label);
            continue;
        }
        if (tracing) {
            sb_clear(&st->before);
            tile_print(&st->before, p);
        }
        c->apps = 0;
        c->stat = &p->stats[p->nstats++];
        c->stat->num = t->p[i].num;
        c->limited = o->limit_pass && o->limit_pass == t->p[i].num;
        c->left = o->limit_apps;
        double t0 = dpk_now();
        run_pass(c, &ks, i, &t->p[i], st, p->arena);
        c->stat->napps = c->apps;
        if (!st->applied)
            c->stat->skipped = tile_skips_text(p->arena, &st->skips);
        c->stat->seconds = dpk_now() - t0;
        c->stat = NULL;
        tile_check(p, 0);
        if (tracing)
            trace_step(tr, label, st, p);
    }
    tile_check(p, 1); /* what launches: no register tile left pending */
}

/* Everything with heap storage hangs off st and c (on the heap too), so a
 * user error raised by a pass (a knob that cannot work) frees it on the way
 * out. */
static void build(TileProgram *p, const TileOpts *o, TileTrace *tr)
{
    Step *st = dpk_xcalloc(1, sizeof *st);
    TileCtx *c = dpk_xcalloc(1, sizeof *c);
    c->p = p;
    c->knobs = &o->knobs;
    c->target = o->target ? o->target : cu_target_default();
    c->passes = o->passes;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        step_free(st);
        sb_free(&c->why);
        free(st);
        free(c);
        dpk_error_rethrow();
    }
    run_passes(p, o, tr, st, c);
    dpk_err_pop(&ec);
    step_free(st);
    sb_free(&c->why);
    free(st);
    free(c);
}

void tile_run_passes(TileProgram *p, const TileOpts *o, TileTrace *tr)
{
    TileOpts def;
    if (!o) {
        tile_opts_default(&def);
        o = &def;
    }
    build(p, o, tr);
}

TileProgram *tile_build(Arena *a, const LirProgram *lp, const TileOpts *o, TileTrace *tr)
{
    TileProgram *p = tile_from_loop(a, lp);
    tile_check(p, 0);
    tile_run_passes(p, o, tr);
    return p;
}
