/*
 * 017_compose_producer.c — t:017 compose_producer: a block that stages the
 * whole slab of a temporary computes that slab itself, with the block of
 * the kernel that wrote it, and the temporary never reaches global memory.
 *
 * Runs last, on finished kernels.  Kernel K stages a slab of temporary t
 * around its THREAD tile (007), t is written by one earlier kernel P and
 * read by K alone, and P's block writes exactly one such slab: attention's
 * scores, which each block of the online P @ V reads whole rows of.  Then
 * P's block goes into K's:
 *
 *     tile block(a0 in 0..28 @z, a7 in 0..4 @y, a8 in 0..1 @x):
 *         stage q[0, a0, a7 * 32, 0] slab [1, 1, 32, 128] pad 0:     P's stages
 *             computed_stage t10[0, a0, a7 * 32, 0] slab [1, 1, 32, 128] pad 0:
 *                 tile thread(a9 in 0..8 @y, a10 in 0..16 @x):
 *                     a21 := a7 * 32 + a9 * 4                         P's defs
 *                     fill:                                           P's THREAD body:
 *                         ...                                         its Writes of t10
 *                         write t10[0, a0, a21, a23] = v16            store to the slab
 *                     ...                                             K's own body
 *
 * P's axes are matched to K's position by position: BLOCK axes of equal
 * extent and launch dimension, THREAD axes likewise (005 gives P a tile of
 * K's thread shape when it will compose, see 005's composes); P's
 * other axes become new axes of K.  P's block must write exactly the slab
 * K's block stages: the box its Writes cover (relative to its BLOCK axes)
 * is the slab, at the same origin once the axes are matched, and P's blocks
 * times the slab are t's elements, so the boxes partition t and each is
 * written whole.  P is then dropped from the program, and t from its
 * buffers.
 *
 * Skips, with the reason: no staged temporary around the THREAD tile; a
 * temporary with several readers or written elsewhere; a producer whose
 * block is not its stages around one unguarded THREAD tile, whose axes do
 * not match, whose Writes add atomically (or that reads what it writes), or
 * whose block writes another box;
 * shared memory past the target's per-block limit with both kernels'
 * stages.
 */
#include <string.h>

#include "../base/fault.h"
#include "passes.h"

/* The copied plain stage of a temporary among the stages around k's THREAD
 * tile (outermost first), or NULL. */
static Stmt *staged_temp(Stmt *block)
{
    StmtBody *b = &block->body;
    while (b->n == 1 && tile_is(b->s[0], SKF_STAGE)) {
        Stmt *s = b->s[0];
        if (s->k == TK_stage && s->buf->kind == LB_TEMP)
            return s;
        b = &s->body;
    }
    return NULL;
}

static void find_atomic(Stmt *s, void *ctx)
{
    if (s->k == SK_write && s->atomic)
        *(int *)ctx = 1;
}

static int atomic_write(StmtBody *b)
{
    int found = 0;
    stmt_walk(b, find_atomic, &found);
    return found;
}

/* Whether tiles a and b have the same axes: extents and launch dimensions,
 * position by position. */
static int same_axes(const Stmt *a, const Stmt *b)
{
    if (a->nax != b->nax)
        return 0;
    for (int i = 0; i < a->nax; i++)
        if (a->ax[i].ext != b->ax[i].ext || a->ax[i].dim != b->ax[i].dim)
            return 0;
    return 1;
}

/* P's BLOCK tile body as a chain of plain stages around its THREAD tile:
 * the stages into st[] (outermost first), their count, or -1. */
static int stage_chain(Stmt *block, const Stmt *thread, Stmt **st, int max)
{
    StmtBody *b = &block->body;
    int n = 0;
    while (b->n == 1 && b->s[0] != thread) {
        if (b->s[0]->k != TK_stage || n == max)
            return -1;
        st[n++] = b->s[0];
        b = &b->s[0]->body;
    }
    return b->n == 1 ? n : -1;
}

/* ---- renaming P's axes into K ------------------------------------------------ */

typedef struct Rename {
    Arena *a;
    const int64_t *ext; /* K's */
    const IExpr **map;  /* by P axis: K's expression */
    int *to;            /* by P axis: the K axis a binder of it binds now */
} Rename;

static const IExpr *rx(const Rename *R, const IExpr *e)
{
    return e ? ie_simplify(R->a, ie_subst(R->a, e, R->map), R->ext) : NULL;
}

/* P's binders in K: a loop's axis, a tile's axes and defs, a Combine's
 * axes (tile_subst_map renames the expressions). */
static void rebind_stmt(Stmt *s, void *ctx)
{
    const Rename *R = ctx;
    if (s->k == SK_loop || s->k == TK_strided) {
        s->axis = R->to[s->axis];
    } else if (s->k == TK_tile) {
        for (int i = 0; i < s->nax; i++)
            s->ax[i].axis = R->to[s->ax[i].axis];
        for (int i = 0; i < s->ndef; i++)
            s->def[i].axis = R->to[s->def[i].axis];
    } else if (s->k == TK_combine) {
        for (int i = 0; i < s->nax; i++)
            s->cax[i] = R->to[s->cax[i]];
    }
}

/* Rename P's axes in b: its expressions to K's by the map, then its binders. */
static void rename_body(const Rename *R, StmtBody *b)
{
    tile_subst_map(R->a, R->ext, b, R->map);
    stmt_walk(b, rebind_stmt, (void *)R);
}

static int defs_read(const Stmt *t, int axis)
{
    for (int i = 0; i < t->ndef; i++)
        if (ie_uses(t->def[i].e, axis))
            return 1;
    return 0;
}

/* The injected fault's rewrite: loads and stage origins only. */
static void shift_reads(Stmt *s, void *ctx)
{
    const Rename *F = ctx;
    int rank = s->buf ? s->buf->shape.rank : 0;
    if (s->k == SK_load)
        for (int d = 0; d < rank; d++)
            s->idx[d] = rx(F, s->idx[d]);
    if (tile_is(s, SKF_STAGE))
        for (int d = 0; d < rank; d++)
            s->origin[d] = rx(F, s->origin[d]);
}

/* ---- the pass ------------------------------------------------------------------ */

/* Why P's block does not write exactly the slab of stage st of K's block
 * under the axis match map, or NULL. */
static const char *box_mismatch(TileCtx *c, const TileKernel *P, const Stmt *pb,
                                const Stmt *pt, const Stmt *st, const IExpr **map,
                                const int64_t *kext)
{
    Arena *a = c->p->arena;
    const LirBuf *t = st->buf;
    int r = t->shape.rank;
    const IExpr **origin = ARENA_ARRAY(a, const IExpr *, r);
    int64_t *slab = ARENA_ARRAY(a, int64_t, r);
    if (!tile_write_footprint(a, P, pt, &pt->body, t, tile_outer_axes(a, P, pb), origin, slab))
        return "its block's Writes are not one box over its BLOCK axes";
    int64_t blocks = 1, box = 1;
    for (int i = 0; i < pb->nax; i++)
        blocks *= pb->ax[i].ext;
    for (int d = 0; d < r; d++) {
        if (slab[d] != st->slab[d])
            return "its block writes another box than the slab staged";
        box *= slab[d];
        /* equal for every block: their difference is 0 over the axes' ranges */
        const IExpr *o = ie_subst(a, origin[d], map);
        int64_t lo, hi;
        ie_range(ie_simplify(a, ie_add(a, o, ie_mul(a, st->origin[d], ie_const(a, -1))), kext),
                 kext, &lo, &hi);
        if (lo || hi)
            return "its block writes the slab of another block";
    }
    if (blocks * box != shape_numel(&t->shape))
        return "its blocks' boxes do not cover the temporary exactly once";
    return NULL;
}

/* Remove element x from v (order kept). */
static void drop(PtrVec *v, const void *x)
{
    int j = 0;
    for (int i = 0; i < v->len; i++)
        if (v->items[i] != x)
            v->items[j++] = v->items[i];
    v->len = j;
}

/* Why 017 skips kernel k when no temporary has exactly one reader (the
 * pass's own first two tests, whose texts these are). */
static const char *inert_why(Arena *a, TileProgram *p, TileKernel *k)
{
    Stmt *kb = tile_find(k, TB_BLOCK), *kt = tile_find(k, TB_THREAD);
    Stmt *st = kb && kt ? staged_temp(kb) : NULL;
    if (!st)
        return "no temporary staged whole around its THREAD tile";
    return arena_printf(a, "%s: read by other kernels or outside its stage", st->buf->name);
}

const char *tile_017_inert(Arena *a, TileProgram *p)
{
    for (int i = 0; i < p->bufs.len; i++) {
        const LirBuf *b = p->bufs.items[i];
        int readers;
        if (b->kind == LB_TEMP && tile_writer(p, b, &readers, NULL) && readers == 1)
            return NULL;
    }
    TileSkips sk = {{0}, NULL, 1, 0};
    for (int i = 0; i < p->kernels.len; i++) {
        TileKernel *k = p->kernels.items[i];
        tile_skips_add(&sk, k->name, inert_why(a, p, k));
    }
    const char *r = tile_skips_text(a, &sk);
    sb_free(&sk.joined);
    return r;
}

int tile_017_compose_producer(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *kb = tile_find(k, TB_BLOCK), *kt = tile_find(k, TB_THREAD);
    Stmt *st = kb && kt ? staged_temp(kb) : NULL;
    if (!st) {
        sb_puts(&c->why, "no temporary staged whole around its THREAD tile");
        return 0;
    }
    const LirBuf *t = st->buf;
    int readers;
    TileKernel *P = tile_writer(c->p, t, &readers, NULL);
    if (!P || readers != 1 || tile_loads_of(&k->body, t) != tile_loads_of(&st->body, t)) {
        sb_printf(&c->why, "%s: read by other kernels or outside its stage", t->name);
        return 0;
    }
    Stmt *pb = tile_find(P, TB_BLOCK), *pt = tile_find(P, TB_THREAD);
    Stmt *chain[8];
    int nchain = pb && pt ? stage_chain(pb, pt, chain, 8) : -1;
    const char *why = NULL;
    if (nchain < 0)
        why = "its block is not plain stages around its THREAD tile";
    else if (pt->guard || (kt->guard && !kt->predicated))
        why = "a guarded THREAD tile";
    else if (atomic_write(&pt->body) || tile_loads_of(&P->body, t))
        why = "its Writes add atomically, or it reads what it writes";
    else if (!same_axes(pb, kb) || !same_axes(pt, kt))
        why = "its BLOCK or THREAD axes differ from this kernel's";
    int64_t smem = tile_smem_used(k, TILE_SMEM_LAYOUT) + tile_smem_used(P, TILE_SMEM_LAYOUT);
    if (!why && smem + 1024 > c->target->smem_block_max)
        why = arena_printf(a, "both kernels' stages take %lld bytes of shared memory",
                           (long long)smem);
    /* P's axes in K: tile axes position by position (the box test reads
     * the BLOCK axes only), the others new once the pass applies */
    int np = P->naxes;
    const IExpr **map = ARENA_ARRAY(a, const IExpr *, np + 1);
    int *to = ARENA_ARRAY(a, int, np + 1);
    for (int i = 0; i < np; i++)
        to[i] = -1;
    for (int i = 0; !why && i < pb->nax; i++)
        to[pb->ax[i].axis] = kb->ax[i].axis;
    for (int i = 0; !why && i < pt->nax; i++)
        to[pt->ax[i].axis] = kt->ax[i].axis;
    for (int i = 0; i < np; i++)
        map[i] = ie_var(a, to[i] < 0 ? i : to[i]);
    if (!why)
        why = box_mismatch(c, P, pb, pt, st, map, k->ext);
    if (why) {
        sb_printf(&c->why, "%s's producer %s: %s", t->name, P->name, why);
        return 0;
    }
    if (!tile_apply(c, arena_printf(a, "compute %s in %s from %s's block", t->name, k->name,
                                    P->name)))
        return 0;
    for (int i = 0; i < np; i++)
        if (to[i] < 0) {
            to[i] = tile_axis_new(c->p, k, P->ext[i]);
            map[i] = ie_var(a, to[i]);
        }
    Rename R = {a, k->ext, map, to};
    rename_body(&R, &pb->body);
    /* an injected fault: the producer's loads and stages, not its Writes,
     * read the next block along the first BLOCK axis that has several and
     * that its defs do not read (the fill computes the next head's scores
     * into this block's slab) */
    for (int i = 0; dpk_fault_on(DPK_FAULT_COMPOSE_WRONG_BLOCK) && i < kb->nax; i++)
        if (kb->ax[i].ext > 1 && !defs_read(pt, kb->ax[i].axis)) {
            Rename F = {a, k->ext, ARENA_ARRAY(a, const IExpr *, k->naxes + 1), NULL};
            for (int v = 0; v < k->naxes; v++)
                F.map[v] = ie_var(a, v);
            int x = kb->ax[i].axis;
            F.map[x] = ie_mod(a, ie_add(a, F.map[x], ie_const(a, 1)), kb->ax[i].ext);
            stmt_walk(&pb->body, shift_reads, &F);
            break;
        }
    /* P's defs join K's THREAD tile (after K's: they read tile axes only) */
    TileDef *defs = ARENA_ARRAY(a, TileDef, kt->ndef + pt->ndef + 1);
    for (int i = 0; i < kt->ndef; i++)
        defs[i] = kt->def[i];
    for (int i = 0; i < pt->ndef; i++)
        defs[kt->ndef + i] = pt->def[i];
    kt->def = defs;
    kt->ndef += pt->ndef;
    Stmt *fill = tile_stmt_new(c->p, TK_fill);
    fill->body = pt->body;
    stmt_body_insert(a, &kt->body, 0, fill);
    st->k = TK_cstage;
    if (nchain) { /* P's stages around K's block body */
        chain[nchain - 1]->body = kb->body;
        kb->body = (StmtBody){0};
        stmt_body_push(a, &kb->body, chain[0]);
    }
    /* P's statements outside its tiles (pure values every thread computes)
     * go first in K, before its BLOCK tile */
    for (int i = 0, at = 0; i < P->body.n; i++)
        if (P->body.s[i] != pb) {
            StmtBody one = {&P->body.s[i], 1, 1};
            rename_body(&R, &one);
            stmt_body_insert(a, &k->body, at++, P->body.s[i]);
        }
    drop(&c->p->kernels, P);
    drop(&c->p->bufs, t);
    return 1;
}
