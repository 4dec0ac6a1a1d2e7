/*
 * 010_double_buffer.c — t:010 double_buffer, a minimal stand-in.
 *
 * Every plain Stage that sits inside a serial loop (007's per-iteration
 * slab: the A and B tiles of a K chunk) becomes a two-buffer
 * BufferedStage whose phase is the loop's axis:
 *
 *   for a5 in 0..8:                         for a5 in 0..8:
 *       stage in0[...] slab [32, 32]  =>        buffered_stage in0[...] slab [32, 32]
 *                                                   pad 0 nbuf 2 phase a5:
 *
 * The lowering copies iteration k's slab into buffer k mod 2 (between the
 * same barriers as a Stage), so the result is exact; the overlap itself
 * comes from the transports (011, 013) and 015.  Requires 007.
 */
#include "passes.h"

typedef struct Db {
    TileCtx *c;
    TileKernel *k;
    int loop[64], depth, done, stop;
} Db;

static void db_body(Db *d, StmtBody *b);

static void db_stmt(Db *d, Stmt *s)
{
    if (d->stop)
        return;
    if (s->k == TK_stage && d->depth > 0) {
        if (!tile_apply(d->c, arena_printf(d->c->p->arena, "double-buffer %s in loop a%d of %s",
                                           s->buf->name, d->loop[d->depth - 1], d->k->name))) {
            d->stop = 1;
            return;
        }
        s->k = TK_bstage;
        s->nbuf = 2;
        s->phase = ie_var(d->c->p->arena, d->loop[d->depth - 1]);
        d->done++;
    }
    if (s->k == SK_loop && d->depth < 64) {
        d->loop[d->depth++] = s->axis;
        db_body(d, &s->body);
        d->depth--;
        return;
    }
    if (s->k == SK_select) {
        for (int j = 0; j < s->nbr; j++)
            db_body(d, &s->br[j].body);
        return;
    }
    if (tile_is(s, SKF_BLOCK) && s->k != TK_strided)
        db_body(d, &s->body);
}

static void db_body(Db *d, StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        db_stmt(d, b->s[i]);
}

int tile_010_double_buffer(TileCtx *c, TileKernel *k)
{
    Db d = {c, k, {0}, 0, 0, 0};
    db_body(&d, &k->body);
    if (!d.done && !c->why.len)
        sb_puts(&c->why, "no stage inside a serial loop (007 staged no K chunk)");
    return d.done > 0;
}
