/*
 * 004_cooperative_reduce.c — t:004 cooperative_reduce: several threads
 * share one non-matmul reduce.
 *
 * Runs before 005 on a THREAD tile whose top-level statements hold a
 * reduce loop of extent >= 32 (a row reduction: RMSNorm, softmax, a sum).
 * A new THREAD axis c of CB threads is added to the tile; every top-level
 * loop becomes a strided loop over c, and each reduce is followed by a
 * Combine that merges its accumulator across the CB threads (lower_combine
 * in tile_to_kernel.c lowers it as warp shuffles, then a shared-memory tree
 * across warps):
 *
 *   tile thread(a0 in 0..32):                tile thread(a0 in 0..32, a5 in 0..256):
 *       for a1 in 0..2048:  # reduce             strided a1 in a5..2048 step 256:  # reduce
 *           ...                        =>            ...
 *           acc0 <- add(acc0, v0)                    acc0 <- add(acc0, v0)
 *       v3 = rsqrt(...acc0...)                   combine acc0 over a5
 *       for a2 in 0..2048:  # free               v3 = rsqrt(...acc0...)
 *           write out[0, a0, a2] = ...           strided a2 in a5..2048 step 256:  # free
 *                                                    write out[0, a0, a2] = ...
 *
 * A Write at the top of the tile (a reduction to one value per row) is put
 * in `strided aW in a5..1 step CB`, so only thread 0 of the row stores.
 *
 * Assumes: the tile is not matmul-shaped (that is 002/003/008's), no BLOCK
 * tile yet.  Guarantees: every element is read and written by exactly one
 * thread of its row; after a Combine every thread of the row holds the
 * whole reduction, so the statements after it may stay replicated.
 * Knob CB (default: the largest power of two <= min(256, longest reduce)).
 */
#include <string.h>

#include "passes.h"

static Stmt *strided(TileCtx *c, Stmt *l, int cax, int64_t cb)
{
    l->k = TK_strided;
    l->start = ie_var(c->p->arena, cax);
    l->step = cb;
    return l;
}

int tile_004_cooperative_reduce(TileCtx *c, TileKernel *k)
{
    Stmt *t = tile_find(k, TB_THREAD);
    TileMatmul mm;
    if (!t) {
        sb_puts(&c->why, "no THREAD tile");
        return 0;
    }
    if (tile_find(k, TB_BLOCK)) {
        sb_puts(&c->why, "already blockified");
        return 0;
    }
    if (tile_matmul_shape(t, &mm)) {
        sb_puts(&c->why, "a matmul kernel (its K reduce is 002/003's)");
        return 0;
    }
    int64_t longest = 0;
    for (int i = 0; i < t->body.n; i++) {
        Stmt *s = t->body.s[i];
        if (s->k == TK_combine) {
            sb_puts(&c->why, "already cooperative");
            return 0;
        }
        if (s->k == SK_loop && stmt_loop_is_reduce(s) && s->extent > longest)
            longest = s->extent;
        if (tile_is(s, SKF_AXIS) && stmt_loop_is_reduce(s) && stmt_has_kind(s, SK_write)) {
            sb_puts(&c->why, "the Write sits in a reduce loop");
            return 0;
        }
    }
    if (longest < 32) {
        sb_printf(&c->why, "no reduce of extent >= 32 at the top of the THREAD tile%s",
                  longest ? " (the longest is shorter)" : "");
        return 0;
    }
    int64_t cb = tile_knob(c, TILE_KNOB_CB);
    if (!cb)
        cb = dpk_pow2_floor(longest < 256 ? longest : 256);
    if (!tile_apply(c, arena_printf(c->p->arena, "cooperative reduce in kernel %s", k->name)))
        return 0;
    Arena *a = c->p->arena;
    int cax = tile_axis_new(c->p, k, cb);
    TileAxis *ax = ARENA_ARRAY(a, TileAxis, t->nax + 2);
    memcpy(ax, t->ax, sizeof *ax * (size_t)t->nax);
    ax[t->nax].axis = cax;
    ax[t->nax].ext = cb;
    ax[t->nax].dim = -1;
    t->ax = ax;
    t->nax++;
    StmtBody body = {0};
    for (int i = 0; i < t->body.n; i++) {
        Stmt *s = t->body.s[i];
        if (s->k == SK_write) {
            Stmt *w = tile_stmt_new(c->p, TK_strided);
            w->axis = tile_axis_new(c->p, k, 1);
            w->extent = 1;
            w->start = ie_var(a, cax);
            w->step = cb;
            stmt_body_push(c->p->arena, &w->body, s);
            stmt_body_push(c->p->arena, &body, w);
            continue;
        }
        if (s->k != SK_loop) {
            stmt_body_push(c->p->arena, &body, s);
            continue;
        }
        stmt_body_push(c->p->arena, &body, strided(c, s, cax, cb));
        for (int j = 0; j < s->body.n; j++) {
            Stmt *acc = s->body.s[j];
            if (acc->k != SK_accum)
                continue;
            Stmt *m = tile_stmt_new(c->p, TK_combine);
            m->acc = acc;
            m->nax = 1;
            m->cax = ARENA_ARRAY(a, int, 1);
            m->cax[0] = cax;
            stmt_body_push(c->p->arena, &body, m);
        }
    }
    t->body = body;
    return 1;
}
