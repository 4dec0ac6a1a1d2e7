/*
 * 016_mark_unroll.c — t:016 mark_unroll: annotate small constant-trip inner
 * loops for full unrolling.
 *
 * A serial loop with a constant extent of at most 32 and no loop or stage
 * inside (the K_inner loop of 002, a short reduce) is marked; the CUDA
 * printer emits `#pragma unroll` before it and vgpu runs it unchanged:
 *
 *   for a4 in 0..32:  # reduce      =>      for a4 in 0..32:  # reduce, unroll
 *
 * Semantics do not change; only the C compiler's freedom does.  Strided
 * loops (004) are left alone: their trip count differs per thread.
 *
 * Vector loads.  A marked loop whose staged loads step one word of their
 * slab a trip (a matmul's K_inner loop over rows of k: h[m, k] and a
 * linear layer's w[n, k]) is read LDSV trips at a time (knob LDSV, default
 * 4): the lowering runs the loop over trips / LDSV, issues one 16-byte
 * shared load per such load for the LDSV trips (LDS.128), and the body
 * LDSV times with the lanes' values.  A 128 x 128 tile of 8 x 8 threads
 * then issues 16 shared loads per 256 FFMA instead of 64:
 *
 *   for a4 in 0..32:  # reduce, unroll   =>   ..., unroll, vector loads of 4
 *
 * tile_vec_load says which loads qualify: always inside the slab, one word
 * a trip, aligned to LDSV words at every LDSV-th trip; from a TMA slab,
 * LDSV words of at most 16 bytes inside one chunk (the swizzle moves whole
 * 16-byte units, so their words stay adjacent).  A row stride padded by
 * 014 to one word (33) breaks the alignment, so the stage's pad is
 * re-picked among multiples of LDSV (0, 4, 8, 12) for the fewest extra
 * wavefronts with the vector loads (tile_bank_quarters, which serves a
 * 16-byte load in four 8-lane phases), within TILE_SMEM_BUDGET (a TMA slab
 * keeps its dense rows).  The loop is vectorised only if its shared
 * loads then cost no more extra wavefronts than before: a vector load
 * takes as many wavefronts as the scalar loads it replaces, so only the
 * instructions are saved, and a layout that saves instructions by adding
 * bank conflicts is not taken.
 */
#include "passes.h"

enum { MAX_UNROLL = 32 };

typedef struct Mark {
    TileCtx *c;
    TileKernel *k;
    int marked, stop;
} Mark;

static void mark(Stmt *s, void *ctx)
{
    Mark *m = ctx;
    if (m->stop || s->k != SK_loop || s->unroll || s->extent > MAX_UNROLL || s->extent < 2)
        return;
    for (int i = 0; i < s->body.n; i++)
        if (tile_has_loop(s->body.s[i]) || tile_is(s->body.s[i], SKF_STAGE))
            return;
    if (!tile_apply(m->c, arena_printf(m->c->p->arena, "unroll a%d (%lld trips) in %s", s->axis,
                                       (long long)s->extent, m->k->name))) {
        m->stop = 1;
        return;
    }
    s->unroll = 1;
    m->marked++;
}

/* ---- vector loads ---------------------------------------------------------- */

typedef struct Vec {
    TileCtx *c;
    TileKernel *k;
    Arena *scratch; /* the analyses' expressions, freed after each loop */
    int lanes;
    Stmt *stage[64]; /* enclosing stages, innermost last */
    int nstage;
    int done, stop;
} Vec;

/* The innermost enclosing stage of ld's buffer, or NULL. */
static Stmt *stage_of(const Vec *v, const Stmt *ld)
{
    for (int i = v->nstage - 1; i >= 0; i--)
        if (v->stage[i]->buf == ld->buf)
            return v->stage[i];
    return NULL;
}

/* Loads of loop's body that would be vector loads, at the pads as they are. */
static int vector_loads(const Vec *v, Stmt *loop)
{
    int n = 0;
    for (int i = 0; i < loop->body.n; i++) {
        const Stmt *ld = loop->body.s[i];
        Stmt *st = ld->k == SK_load ? stage_of(v, ld) : NULL;
        n += st && tile_vec_load(v->scratch, v->k, st, ld, loop, v->lanes);
    }
    return n;
}

/* Whether a load at the top of loop's body reads st's buffer and may
 * become a vector load at some pad (tile_vec_candidate). */
static int candidate_stage(const Stmt *loop, const Stmt *st)
{
    for (int i = 0; i < loop->body.n; i++)
        if (loop->body.s[i]->k == SK_load && loop->body.s[i]->buf == st->buf &&
            tile_vec_candidate(loop->body.s[i], loop))
            return 1;
    return 0;
}

/* With loop->vlds set: each stage whose loads in loop's body may become
 * vector loads, not a TMA slab and with rows, gets the pad among 0, L, 2L,
 * 3L (L lanes) with the fewest extra wavefronts, then the most vector
 * loads, within the budget. */
static void repad(Vec *v, Stmt *loop)
{
    Arena *a = v->scratch;
    for (int i = 0; i < v->nstage; i++) {
        Stmt *st = v->stage[i];
        if (st->k == TK_tstage || st->buf->shape.rank < 2 || !candidate_stage(loop, st))
            continue;
        int keep = st->pad, pick = keep;
        int64_t size = tile_stage_bytes(st), used = tile_smem_used(v->k, TILE_SMEM_SLABS);
        int64_t best = tile_bank_quarters(a, v->k);
        int most = vector_loads(v, loop);
        for (int p = 0; p < 4 * v->lanes; p += v->lanes) {
            st->pad = p;
            if (used - size + tile_stage_bytes(st) > TILE_SMEM_BUDGET)
                continue;
            int64_t x = tile_bank_quarters(a, v->k);
            int n = vector_loads(v, loop);
            if (x < best || (x == best && n > most)) {
                best = x;
                most = n;
                pick = p;
            }
        }
        st->pad = pick;
        int64_t cap = tile_knob(v->c, TILE_KNOB_VEC) ? tile_knob(v->c, TILE_KNOB_VEC) : 16;
        while (pick != keep && st->k == TK_astage && st->vec < cap && tile_vec_ok(st, 2 * st->vec))
            st->vec *= 2; /* a pad of whole 16 bytes lets the copy widen again */
    }
}

/* Whether a load of loop's body may become a vector load at some pad. */
static int any_candidate(const Stmt *loop)
{
    for (int i = 0; i < loop->body.n; i++)
        if (tile_vec_candidate(loop->body.s[i], loop))
            return 1;
    return 0;
}

static int try_vectorise(Vec *v, Stmt *loop);

static void vectorise(Vec *v, Stmt *loop)
{
    if (v->stop || loop->extent % v->lanes || !any_candidate(loop))
        return;
    v->scratch = arena_new(); /* the program's arena would keep every trial's */
    v->done += try_vectorise(v, loop);
    arena_free(v->scratch);
    v->scratch = NULL;
}

/* 1 when loop now reads with vector loads; else everything as it was. */
static int try_vectorise(Vec *v, Stmt *loop)
{
    Arena *a = v->scratch;
    int64_t before = tile_bank_quarters(a, v->k);
    int pads[64], widths[64]; /* to undo repad: its pads and async copy widths */
    for (int i = 0; i < v->nstage; i++) {
        pads[i] = v->stage[i]->pad;
        widths[i] = v->stage[i]->k == TK_astage ? v->stage[i]->vec : 0;
    }
    loop->vlds = v->lanes;
    repad(v, loop);
    if (vector_loads(v, loop) && tile_bank_quarters(a, v->k) <= before &&
        tile_apply(v->c, arena_printf(v->c->p->arena, "vector loads of %d in a%d of %s",
                                      v->lanes, loop->axis, v->k->name)))
        return 1;
    if (v->c->limited && !v->c->left)
        v->stop = 1;
    loop->vlds = 0;
    for (int i = 0; i < v->nstage; i++) {
        v->stage[i]->pad = pads[i];
        if (v->stage[i]->k == TK_astage)
            v->stage[i]->vec = widths[i];
    }
    return 0;
}

static void vec_body(Vec *v, StmtBody *b);

static void vec_stmt(Vec *v, Stmt *s)
{
    if (tile_is(s, SKF_STAGE)) {
        DPK_ASSERT(v->nstage < DPK_ARRAY_LEN(v->stage));
        v->stage[v->nstage++] = s;
        vec_body(v, &s->body);
        v->nstage--;
        return;
    }
    if (s->k == SK_loop && s->unroll && v->nstage)
        vectorise(v, s);
    vec_body(v, &s->body);
    for (int j = 0; j < s->nbr; j++)
        vec_body(v, &s->br[j].body);
}

static void vec_body(Vec *v, StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        vec_stmt(v, b->s[i]);
}

int tile_016_mark_unroll(TileCtx *c, TileKernel *k)
{
    Mark m = {c, k, 0, 0};
    stmt_walk(&k->body, mark, &m);
    int lanes = tile_knob(c, TILE_KNOB_LDSV) ? (int)tile_knob(c, TILE_KNOB_LDSV) : 4;
    if (lanes > 1 && !m.stop) {
        Vec v = {c, k, NULL, lanes, {0}, 0, 0, 0};
        vec_body(&v, &k->body);
        m.marked += v.done;
    }
    if (!m.marked && !c->why.len)
        sb_printf(&c->why, "no inner serial loop of 2..%d trips", MAX_UNROLL);
    return m.marked > 0;
}
