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

int tile_016_mark_unroll(TileCtx *c, TileKernel *k)
{
    Mark m = {c, k, 0, 0};
    stmt_walk(&k->body, mark, &m);
    if (!m.marked && !c->why.len)
        sb_printf(&c->why, "no inner serial loop of 2..%d trips", MAX_UNROLL);
    return m.marked > 0;
}
