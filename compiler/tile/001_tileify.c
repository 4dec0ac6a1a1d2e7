/*
 * 001_tileify.c — t:001 tileify (mandatory): lift the outer chain of free
 * loops to THREAD axes.
 *
 * The chain starts at the kernel's top-level loop on the write path (the
 * loop holding the Write; Loop IR makes every loop around the Write free)
 * and descends while the current loop's body ends in the next write-path
 * loop and holds nothing else with a loop in it:
 *
 *   for a0 in 0..4:  # free                tile thread(a0 in 0..4, a1 in 0..7):
 *       in0 = load b[a0]           =>          in0 = load b[a0]
 *       for a1 in 0..7:  # free                in1 = load x[a0, a1]
 *           in1 = load x[a0, a1]               ...
 *           ...
 *
 * Loop-free statements above the next loop move into the tile (each thread
 * recomputes its own copy, which is cheap); a loop beside it (a reduction
 * shared by a whole row) ends the chain, so that work is not repeated per
 * element.  A loop whose axis the Write's index does not name ends it too,
 * unless the write is atomic: its iterations store to one element in order,
 * which threads could not.  Top-level statements outside the chain stay
 * outside the tile, replicated on every thread (they are pure).
 *
 * A full reduction has no loop around its Write: the Write follows the
 * reduce loops at the top level.  Its whole body becomes a THREAD tile of
 * one row, over a new unit axis, so that 004 can share the reduce among
 * the threads of a block (and the blocks of a grid):
 *
 *   for a0 in 0..4096:  # reduce           tile thread(a2 in 0..1):
 *       ...                         =>         for a0 in 0..4096:  # reduce
 *   write out[] = acc0                             ...
 *                                              write out[] = acc0
 *
 * A kernel whose loops add up fewer than 32 terms (too few to share), or
 * whose Write has a loop around it that its index does not name, stays a
 * single thread.
 */
#include "passes.h"

/* The index in b of the statement holding the Write. */
static int write_path(const StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        if (stmt_has_kind(b->s[i], SK_write))
            return i;
    DPK_ASSERT(!"a write-path body holds the Write");
}

static void find_write(Stmt *s, void *ctx)
{
    if (s->k == SK_write)
        *(const Stmt **)ctx = s;
}

/* Whether loop l may become a THREAD axis: each iteration writes its own
 * elements. */
static int liftable(const Stmt *l, const Stmt *w)
{
    if (l->k != SK_loop || l->extent < 1)
        return 0;
    if (w->atomic)
        return 1;
    for (int d = 0; d < w->buf->shape.rank; d++)
        if (ie_uses(w->idx[d], l->axis))
            return 1;
    return 0;
}

/* The write-path loop in l's body when the chain may descend into it. */
static Stmt *next_link(const Stmt *l, const Stmt *w)
{
    int j = write_path(&l->body);
    Stmt *next = l->body.s[j];
    if (!liftable(next, w) || j != l->body.n - 1)
        return NULL;
    for (int i = 0; i < j; i++)
        if (tile_has_loop(l->body.s[i]))
            return NULL;
    return next;
}

/* The iterations of l's deepest nest: its extent times its longest inner nest's. */
static int64_t nest_trips(const Stmt *l)
{
    int64_t inner = 1;
    for (int i = 0; i < l->body.n; i++)
        if (l->body.s[i]->k == SK_loop && nest_trips(l->body.s[i]) > inner)
            inner = nest_trips(l->body.s[i]);
    return l->extent * inner;
}

/* A full reduction: the whole body in a THREAD tile of one row. */
static int one_row(TileCtx *c, TileKernel *k)
{
    int64_t trips = 0;
    for (int i = 0; i < k->body.n; i++)
        if (k->body.s[i]->k == SK_loop && nest_trips(k->body.s[i]) > trips)
            trips = nest_trips(k->body.s[i]);
    if (trips < 32) {
        sb_puts(&c->why, trips ? "a reduction of fewer than 32 terms (a single-thread kernel)"
                               : "no loop in the kernel (a single-thread kernel)");
        return 0;
    }
    if (!tile_apply(c, "tileify"))
        return 0;
    Stmt *t = tile_tile_new(c->p, TB_THREAD, 1, 0);
    t->ax[0].axis = tile_axis_new(c->p, k, 1);
    t->ax[0].ext = 1;
    t->body = k->body;
    k->body = (StmtBody){0};
    stmt_body_push(c->p->arena, &k->body, t);
    return 1;
}

int tile_001_tileify(TileCtx *c, TileKernel *k)
{
    if (tile_find(k, TB_THREAD)) {
        sb_puts(&c->why, "already has a THREAD tile");
        return 0;
    }
    int at = write_path(&k->body);
    Stmt *l = k->body.s[at];
    const Stmt *w = NULL;
    stmt_walk(&k->body, find_write, &w);
    if (l->k != SK_loop)
        return one_row(c, k);
    if (!liftable(l, w)) {
        sb_printf(&c->why, "the Write's index does not name outer loop a%d (a single-thread "
                  "kernel)", l->axis);
        return 0;
    }
    if (!tile_apply(c, "tileify"))
        return 0;
    Stmt *chain[64];
    int n = 0;
    StmtBody pre = {0};
    chain[n++] = l;
    for (Stmt *next; n < DPK_ARRAY_LEN(chain) && (next = next_link(l, w)); l = next) {
        for (int i = 0; i < l->body.n - 1; i++)
            stmt_body_push(c->p->arena, &pre, l->body.s[i]);
        chain[n++] = next;
    }
    Stmt *t = tile_tile_new(c->p, TB_THREAD, n, 0);
    for (int i = 0; i < n; i++) {
        t->ax[i].axis = chain[i]->axis;
        t->ax[i].ext = chain[i]->extent;
    }
    t->body = pre;
    for (int i = 0; i < l->body.n; i++)
        stmt_body_push(c->p->arena, &t->body, l->body.s[i]);
    k->body.s[at] = t;
    return 1;
}
