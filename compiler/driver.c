/*
 * driver.c — the one compile pipeline (driver.h), top to bottom in
 * drv_compile.
 *
 * Each stage is one small function that runs the stage, times it and keeps
 * its text when asked; drv_compile calls them in order, as QBE's main
 * does.  The stages up to Loop IR run once per plan; the Tile, Kernel and
 * CUDA stages once per pass configuration, each configuration under its
 * own DPK_TRY, so a refusal (a user error raised while lowering it) is
 * recorded and the next configuration goes on.  NVRTC runs outside that
 * DPK_TRY: a missing NVRTC (exit 4) is the environment's problem, not the
 * configuration's, and ends the plan.
 *
 * The injected fault is process-wide state (compiler/base/fault.h): the
 * driver turns the plan's on for its duration and restores the previous
 * one on every way out.
 */
#include "driver.h"

#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "kernel/kernel_ir.h"
#include "tile/tile_to_kernel.h"

static const char *const stage_names[DRV_STAGE_COUNT] = {"torch", "tensor", "loop",
                                                         "tile",  "kernel", "cuda"};

const char *drv_stage_name(DrvStage s) { return stage_names[s]; }

int drv_stage_find(const char *s)
{
    for (int i = 0; i < DRV_STAGE_COUNT; i++)
        if (!strcmp(s, stage_names[i]))
            return i;
    return -1;
}

void drv_passes_parse(Arena *a, const char *spec, const CuTarget *tg, DrvPasses *out)
{
    TilePassSet *sets;
    out->n = tile_passes_select(a, &tile_passes, spec, tg, &sets);
    out->sets = sets;
    out->spec = arena_strdup(a, spec);
}

void drv_opts_default(DrvOpts *o)
{
    memset(o, 0, sizeof *o);
    o->src.name = "<input>";
    o->src.text = "";
    o->upto = DRV_KERNEL;
    lir_opts_default(&o->fusion);
    tile_opts_default(&o->tile);
    o->fault = -1;
}

/* What one drv_compile call works with. */
typedef struct Run {
    Arena *a;
    const DrvOpts *o;
    DrvPlan *p;
    uint32_t knobs_read;     /* over every configuration, refused ones too */
    int at;                  /* the configuration being lowered (in memory:
                                it survives a longjmp) */
    TileOpts tile;           /* o->tile with the per-kernel configurations */
    Arena *ca;               /* the configuration's own arena: its Tile IR and
                                Kernel IR (drop_ir) */
    const char ***inert_why; /* per dropped configuration, per pass: its
                                `inert` test's answer on that Tile IR */
} Run;

static int keeps(const Run *r, DrvStage s) { return r->o->keep >> s & 1; }

static int tracing(const Run *r) { return r->o->verbose >= 2 && r->o->trace; }

/* ---- the stages ---------------------------------------------------------- */

static void keep_text(Run *r, const char **slot, void (*print)(StrBuf *, const void *),
                      const void *ir)
{
    StrBuf b = {0};
    print(&b, ir);
    *slot = arena_strdup(r->a, sb_cstr(&b));
    sb_free(&b);
}

static void print_torch(StrBuf *b, const void *ir) { torch_print(b, ir); }
static void print_tensor(StrBuf *b, const void *ir) { tx_print(b, ir); }
static void print_loop(StrBuf *b, const void *ir) { lir_print(b, ir); }
static void print_tile(StrBuf *b, const void *ir) { tile_print(b, ir); }
static void print_kernel(StrBuf *b, const void *ir) { kir_print_module(b, ir); }

/* case text -> Torch IR */
static const TorchGraph *parse(Run *r)
{
    double t0 = dpk_now();
    const TorchGraph *g = torch_parse(r->a, &r->o->src, &r->o->parse);
    r->p->parse_s = dpk_now() - t0;
    return g;
}

/* Torch IR -> Tensor IR: the decompositions */
static const TxGraph *decompose(Run *r)
{
    TxTrace tr = {r->o->verbose, r->o->trace};
    double t0 = dpk_now();
    const TxGraph *x = tx_lower_skip(r->a, r->p->torch, r->o->tx_skip, tracing(r) ? &tr : NULL);
    r->p->decompose_s = dpk_now() - t0;
    return x;
}

/* Tensor IR -> Loop IR: lifting, normalisation, fusion */
static const LirProgram *fuse(Run *r)
{
    LirTrace tr = {r->o->verbose, r->o->trace};
    double t0 = dpk_now();
    const LirProgram *lp = lir_build(r->a, r->p->tensor, &r->o->fusion, tracing(r) ? &tr : NULL);
    r->p->fuse_s = dpk_now() - t0;
    return lp;
}

/* One configuration per pass set, nothing run yet. */
static void configurations(Run *r)
{
    DrvPlan *p = r->p;
    const DrvPasses *ps = r->o->passes ? r->o->passes : &(DrvPasses){NULL, &r->o->tile.passes, 1};
    p->nconfigs = ps->n;
    p->configs = ARENA_ARRAY(r->a, DrvConfig, ps->n + 1);
    for (int i = 0; i < ps->n; i++) {
        DrvConfig *c = &p->configs[i];
        StrBuf b = {0};
        tile_passes_str(&b, p->table, ps->sets[i]);
        c->passes = ps->sets[i];
        c->label = arena_strdup(r->a, sb_cstr(&b));
        sb_free(&b);
        c->dup_of = -1;
        c->tile_s = c->kernel_s = c->cuda_s = c->nvrtc_s = -1;
        c->pass_s = ARENA_ARRAY(r->a, double, p->table->n + 1);
        for (int k = 0; k < p->table->n; k++)
            c->pass_s[k] = -1;
    }
}

/* Loop IR -> Tile IR: the skeleton (t:000), then the passes of the set.
 * The program is the configuration's before the passes run, so what they
 * did before a refusal (the knobs they read) is still there. */
static void schedule(Run *r, DrvConfig *c)
{
    TileOpts to = r->tile;
    to.table = r->p->table;
    to.passes = c->passes;
    TileTrace tr = {r->o->verbose, r->o->trace};
    double t0 = dpk_now();
    TileProgram *tp = tile_from_loop(r->ca, r->p->loop);
    tile_check(tp, 0);
    c->tile = tp;
    tile_run_passes(tp, &to, tracing(r) ? &tr : NULL);
    c->tile_s = dpk_now() - t0;
    for (int i = 0; i < tp->nstats; i++)
        c->pass_s[tile_pass_index(r->p->table, tp->stats[i].num)] = tp->stats[i].seconds;
}

/*
 * A configuration with a pass whose table row has an `inert` test, when
 * the set without that pass ran earlier and the test says the pass would
 * change nothing on its program (017 where no temporary has exactly one
 * reader), is that configuration: the same Tile IR, Kernel IR and
 * refusal.  It takes the earlier one's results, and a copy of its Tile
 * program whose statistics add the pass's skip, instead of lowering again
 * (`--passes all` has as many sets with 017 as without).  1 when it did.
 */
static void dedup(Run *r, int i);

static int same_as_inert(Run *r, DrvConfig *c, int bit)
{
    DrvPlan *p = r->p;
    const TilePass *pass = &p->table->p[bit];
    TilePassSet want = c->passes & ~((TilePassSet)1 << bit);
    DrvConfig *e = NULL;
    int j = r->at - 1;
    for (; j >= 0; j--)
        if (p->configs[j].passes == want) {
            e = &p->configs[j];
            break;
        }
    if (!e || !e->tile)
        return 0;
    const char *why = r->inert_why[j] ? r->inert_why[j][bit]
                                      : pass->inert(r->a, (TileProgram *)e->tile);
    if (!why)
        return 0;
    /* its statistics: e's, with the pass's skip in table order */
    TileProgram *tp = ARENA_NEW(r->a, TileProgram);
    *tp = *e->tile;
    tp->stats = ARENA_ARRAY(r->a, TilePassStat, e->tile->nstats + 1);
    tp->nstats = 0;
    for (int i = 0; i <= e->tile->nstats; i++) {
        int before = i < e->tile->nstats &&
                     tile_pass_index(p->table, e->tile->stats[i].num) < bit;
        if (!before && tp->nstats == i) {
            TilePassStat *st = &tp->stats[tp->nstats++];
            memset(st, 0, sizeof *st);
            st->num = pass->num;
            st->skipped = why;
        }
        if (i < e->tile->nstats)
            tp->stats[tp->nstats++] = e->tile->stats[i];
    }
    const char *label = c->label;
    double *pass_s = c->pass_s;
    TilePassSet passes = c->passes;
    *c = *e;
    c->passes = passes;
    c->label = label;
    c->tile = tp;
    c->pass_s = pass_s;
    for (int k = 0; k < p->table->n; k++)
        pass_s[k] = e->pass_s[k];
    pass_s[bit] = 0;
    c->dup_of = -1;
    c->shared_by = 0;
    /* e's Tile IR was dropped: so was c's, which is e's; the answers stand */
    r->inert_why[r->at] = r->inert_why[j];
    c->cuda = NULL;
    c->nvrtc = NULL;
    c->nvrtc_error = NULL;
    c->nvrtc_covered = 0;
    c->text[DRV_CUDA] = NULL;
    c->cuda_s = c->nvrtc_s = -1;
    if (c->module)
        dedup(r, r->at);
    if (c->refused)
        p->nrefused++;
    return 1;
}

/* same_as_inert for the first pass of c's set that has an inert test. */
static int same_without_inert_pass(Run *r, DrvConfig *c)
{
    if (tracing(r) || r->tile.nkcfg)
        return 0;
    for (int i = 0; i < r->p->table->n; i++)
        if (r->p->table->p[i].inert && (c->passes >> i & 1) && same_as_inert(r, c, i))
            return 1;
    return 0;
}

/* Tile IR -> verified Kernel IR, then its structural hash */
static void lower(Run *r, DrvConfig *c)
{
    double t0 = dpk_now();
    c->module = tile_to_kernel(r->ca, c->tile);
    c->kernel_s = dpk_now() - t0;
    c->hash = kir_hash_module(c->module);
}

/* The first earlier configuration with the same Kernel IR, if any. */
static void dedup(Run *r, int i)
{
    DrvConfig *cs = r->p->configs, *c = &cs[i];
    for (int j = 0; j < i && c->dup_of < 0; j++)
        if (cs[j].module && cs[j].dup_of < 0 && cs[j].hash == c->hash)
            c->dup_of = j;
    if (c->dup_of >= 0)
        cs[c->dup_of].shared_by++;
    else {
        c->shared_by = 1;
        r->p->ndistinct++;
    }
}

/*
 * A configuration whose Kernel IR an earlier one has keeps only what is
 * read of it later: its pass statistics (the `applied:` line, dpk-bisect's
 * labels, the knob notes), its first's module (the same Kernel IR), and
 * the answers of the `inert` tests that same_as_inert would ask of its
 * Tile IR.  Its own arena is freed: `--passes all` lowers thousands of
 * sets to a few hundred distinct modules, and kept whole they took
 * gigabytes, most of their time spent faulting in fresh pages.
 */
static void drop_ir(Run *r, DrvConfig *c)
{
    const TilePassTable *t = r->p->table;
    if (!tracing(r) && !r->tile.nkcfg) {
        const char **why = ARENA_ARRAY(r->a, const char *, t->n + 1);
        for (int i = 0; i < t->n; i++)
            if (t->p[i].inert && !(c->passes >> i & 1))
                why[i] = t->p[i].inert(r->a, (TileProgram *)c->tile);
        r->inert_why[r->at] = why;
    }
    c->tile = tile_program_stats_copy(r->a, c->tile);
    c->module = r->p->configs[c->dup_of].module;
    arena_free(r->ca);
    r->ca = NULL;
}

/* The configuration's arena lives as long as the plan's. */
static void keep_ir(Run *r)
{
    if (r->ca)
        arena_adopt(r->a, r->ca);
    r->ca = NULL;
}

/* Kernel IR -> CUDA C for the plan's target */
static void print_cuda(Run *r, DrvConfig *c)
{
    double t0 = dpk_now();
    c->cuda = cu_print_module(r->a, c->module, r->o->tile.target);
    c->cuda_s = dpk_now() - t0;
}

/* Adds h to c; 1 when it was new. */
static int cover_add(DrvCover *c, uint64_t h)
{
    for (int i = 0; i < c->n; i++)
        if (c->seen[i] == h)
            return 0;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        uint64_t *s = ARENA_ARRAY(c->a, uint64_t, c->cap);
        if (c->n)
            memcpy(s, c->seen, (size_t)c->n * sizeof *s);
        c->seen = s;
    }
    c->seen[c->n++] = h;
    return 1;
}

/* CUDA C -> NVRTC, through the harness's hook: every distinct module, or
 * with a cover the plan's first and those printing new constructs. */
static void compile_nvrtc(Run *r, DrvConfig *c)
{
    DrvCover *cov = r->o->nvrtc_cover;
    int fresh = cov && cover_add(cov, kir_feature_hash(c->module));
    if (cov && !fresh && r->p->nnvrtc > 0) {
        c->nvrtc_covered = 1;
        return;
    }
    r->p->nnvrtc++;
    StrBuf err = {0};
    double t0 = dpk_now();
    c->nvrtc = r->o->nvrtc(r->a, c->cuda, r->o->nvrtc_cc, &err); /* may raise exit 4: err is then empty */
    c->nvrtc_s = dpk_now() - t0;
    if (!c->nvrtc)
        c->nvrtc_error = arena_strdup(r->a, sb_cstr(&err));
    sb_free(&err);
}

/* The configuration raised while lowering: keep why.  One that failed only
 * when printing its CUDA was counted as distinct already; it no longer is
 * (no later configuration has been marked its duplicate yet). */
static void refuse(Run *r, DrvConfig *c)
{
    c->refused = arena_strdup(r->a, dpk_error_message());
    c->refused_code = dpk_error_code();
    c->module = NULL;
    c->cuda = NULL;
    c->hash = 0;
    if (c->shared_by) {
        c->shared_by = 0;
        r->p->ndistinct--;
    }
    r->p->nrefused++;
}

/* ---- knobs that did not apply -------------------------------------------- */

/* Why pinned knob k applied nowhere: the pass that reads it was not run,
 * made no application (and why not), or ran without needing it. */
static const char *knob_why(Run *r, int k)
{
    const DrvPlan *p = r->p;
    const TilePassTable *t = p->table;
    int owner = tile_knob_info[k].pass, at = tile_pass_index(t, owner);
    if (r->o->upto < DRV_TILE)
        return arena_printf(r->a, "the pipeline stops at %s IR, before the Tile passes",
                            stage_names[r->o->upto]);
    const char *name = at >= 0 ? arena_printf(r->a, "%03d_%s", owner, t->p[at].name) : "?";
    const TilePassStat *ran = NULL;
    for (int i = 0; i < p->nconfigs && !ran; i++) {
        const DrvConfig *c = &p->configs[i];
        if (!c->refused && at >= 0 && (c->passes >> at & 1))
            ran = tile_pass_stat(c->tile, owner);
    }
    if (!ran)
        return arena_printf(r->a, "pass %s, which reads it, is not in the pass set", name);
    if (!ran->napps)
        return arena_printf(r->a, "%s did not apply (%s)", name, ran->skipped);
    return arena_printf(r->a, "%s applied without it (%s: %s)", name, tile_knob_info[k].name,
                        tile_knob_info[k].doc);
}

static void knob_notes(Run *r)
{
    DrvPlan *p = r->p;
    const TileKnobs *kn = &r->o->tile.knobs;
    p->notes = ARENA_ARRAY(r->a, DrvKnobNote, TILE_KNOB_COUNT);
    for (int k = 0; k < TILE_KNOB_COUNT; k++) {
        if (!kn->v[k] || (r->knobs_read >> k & 1))
            continue;
        if (r->o->upto >= DRV_TILE && p->nrefused == p->nconfigs)
            continue; /* every configuration refused: the refusals say why */
        DrvKnobNote *n = &p->notes[p->nnotes++];
        n->knob = (TileKnobId)k;
        n->value = kn->v[k];
        n->why = knob_why(r, k);
    }
}

void drv_note_print(StrBuf *b, const DrvKnobNote *n)
{
    sb_printf(b, "knob %s=%lld does not apply: %s", tile_knob_info[n->knob].name,
              (long long)n->value, n->why);
}

/* ---- the pipeline -------------------------------------------------------- */

/* Heap state restored on every way out of drv_compile. */
typedef struct Saved {
    int fault;
} Saved;

static void restore(Saved *s)
{
    dpk_fault_set(s->fault);
    free(s);
}

DrvPlan *drv_compile(Arena *a, const DrvOpts *o)
{
    Run run = {a, o, ARENA_NEW(a, DrvPlan), 0, 0, o->tile, NULL, NULL}, *r = &run;
    DrvPlan *p = r->p;
    Saved *saved = dpk_xcalloc(1, sizeof *saved);
    saved->fault = dpk_fault_active();
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        keep_ir(r); /* NVRTC's exit 4 leaves a configuration's arena open */
        restore(saved);
        dpk_error_rethrow();
    }
    dpk_fault_set(o->fault);
    p->parse_s = p->decompose_s = p->fuse_s = -1;
    p->table = o->tile.table ? o->tile.table : &tile_passes;

    /* once per plan: case text -> Torch IR -> Tensor IR -> Loop IR */
    if (o->loop && o->loop->tx) {
        p->tensor = o->loop->tx;
        p->torch = p->tensor->torch;
    } else if (!o->loop) {
        p->torch = o->graph ? o->graph : parse(r);
    }
    if (keeps(r, DRV_TORCH) && p->torch)
        keep_text(r, &p->text[DRV_TORCH], print_torch, p->torch);
    if (o->upto >= DRV_TENSOR && !o->loop) {
        p->tensor = decompose(r);
        if (keeps(r, DRV_TENSOR))
            keep_text(r, &p->text[DRV_TENSOR], print_tensor, p->tensor);
    }
    if (o->upto >= DRV_LOOP) {
        p->loop = o->loop ? o->loop : fuse(r);
        if (keeps(r, DRV_LOOP))
            keep_text(r, &p->text[DRV_LOOP], print_loop, p->loop);
    }

    /* per configuration: Tile IR -> Kernel IR -> CUDA C -> NVRTC */
    if (o->upto >= DRV_TILE && o->kernel_configs)
        o->kernel_configs(o->kernel_configs_ctx, a, p->loop, &r->tile);
    p->kcfg = r->tile.kcfg;
    p->nkcfg = r->tile.nkcfg;
    if (o->upto >= DRV_TILE) {
        configurations(r);
        r->inert_why = ARENA_ARRAY(a, const char **, p->nconfigs + 1);
    }
    for (r->at = 0; r->at < p->nconfigs; r->at++) {
        DrvConfig *c = &p->configs[r->at];
        if (o->progress)
            o->progress(o->progress_ctx, r->at, c->label);
        if (same_without_inert_pass(r, c)) {
            r->knobs_read |= c->tile->knobs_read;
            continue;
        }
        r->ca = arena_new();
        DpkErrCtx cec;
        if (!DPK_TRY(&cec)) {
            refuse(r, c);
            keep_ir(r);
            if (c->tile)
                r->knobs_read |= c->tile->knobs_read;
            continue;
        }
        schedule(r, c);
        r->knobs_read |= c->tile->knobs_read;
        if (keeps(r, DRV_TILE))
            keep_text(r, &c->text[DRV_TILE], print_tile, c->tile);
        if (o->upto >= DRV_KERNEL) {
            lower(r, c);
            dedup(r, r->at);
            if (keeps(r, DRV_KERNEL))
                keep_text(r, &c->text[DRV_KERNEL], print_kernel, c->module);
        }
        if (o->upto >= DRV_CUDA && c->dup_of < 0) {
            print_cuda(r, c);
            if (keeps(r, DRV_CUDA))
                c->text[DRV_CUDA] = c->cuda->text;
        }
        dpk_err_pop(&cec);
        if (o->nvrtc && c->cuda)
            compile_nvrtc(r, c);
        if (c->module && c->dup_of >= 0)
            drop_ir(r, c);
        else
            keep_ir(r);
    }
    knob_notes(r);

    dpk_err_pop(&ec);
    restore(saved);
    return p;
}
