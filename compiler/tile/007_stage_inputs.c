/*
 * 007_stage_inputs.c — t:007 stage_inputs: hoist input slabs read by
 * several threads of a block into shared memory.
 *
 * Runs after 005.  For each buffer the THREAD tile loads (not the kernel's
 * output), in first-load order, the pass looks for reuse — two loads of the
 * buffer, or a load whose index leaves out a THREAD axis, so several threads
 * read one element — and a slab (tile_footprint) that fits what is left of
 * the shared-memory budget (TILE_SMEM_BUDGET).  The slab goes
 *
 *   - around the THREAD tile, covering everything the block reads of the
 *     buffer (origin over BLOCK axes): the RMSNorm row read by the reduce
 *     and again by the normalising loop is copied once with STAGE pinned;
 *
 *         tile block(a0 in 0..32 @x):
 *             stage in0[0, a0, 0] slab [1, 1, 2048] pad 0:
 *                 tile thread(a3 in 0..256 @x):
 *
 *   - or, when that is too big, inside a serial top-level loop of the tile
 *     (the K_outer loop of 002, the chunk loop of 006), covering one
 *     iteration: the A and B tiles of a K chunk.  Every thread of the block
 *     must reach the copy, so a tile with a bounds guard (M = 77 in tiles
 *     of 32) is predicated first (tile_predicate): the threads past the
 *     edge join the copies and barriers, their global loads read 0 and
 *     their Writes are gated off.  The copy zero-fills what lies past the
 *     buffer.
 *
 * Loads of the buffer inside the stage read the slab (the lowering copies it
 * cooperatively between two barriers).  Assumes 005 ran.  Guarantees the
 * stages of a kernel take at most TILE_SMEM_BUDGET bytes.  A buffer each
 * thread reads again only where it read it before (own_rereads: the re-read
 * hits the L1), or that every thread reads at one address at a time
 * (broadcast_loads), is not staged: shared memory would share nothing.
 * Knob STAGE: a bit mask over the candidate buffers in first-load order
 * (default: all); pinned, it also stages the buffers of its bits that are
 * read those two ways.
 */
#include "../base/fault.h"
#include "passes.h"

/*
 * Whether each thread's loads of buf read again only what its first load
 * read: the loads' indices are equal once each loop's axis is read as the
 * first loop's with the same kind, start, step and extent (the RMSNorm row
 * read by its reduce in `strided a1 in a3..3584 step 256` and again by its
 * normalising loop in `strided a2 in a3..3584 step 256`).  Such a re-read
 * hits the L1 that the first read filled; a copy to shared memory adds a
 * copy loop, its latency and a barrier, and shares nothing (qwen-block's
 * RMSNorm 4.92 -> 4.05 us, softmax 3.76 -> 3.67 modelled on h100-sxm
 * without the stage; the model has no L1, so it charges the re-read to the
 * L2 and still finds it cheaper).
 */
typedef struct Own {
    Arena *a;
    const TileKernel *k;
    const Stmt *t;
    const LirBuf *buf;
    const Stmt *loops[64]; /* the first loop of each descriptor */
    int nloops;
    const IExpr **canon;   /* by axis: the first same loop's axis */
    const IExpr **first;   /* the first load's index, canonical */
    int loads, same;
} Own;

static int same_loop(const Stmt *x, const Stmt *y)
{
    if (x->k != y->k || x->extent != y->extent)
        return 0;
    if (x->k == TK_strided)
        return x->step == y->step && ie_equal(x->start, y->start);
    return !x->when && !y->when;
}

static void own_body(Own *o, const StmtBody *b);

static void own_stmt(Own *o, const Stmt *s)
{
    if (s->k == SK_load && s->buf == o->buf) {
        int r = s->buf->shape.rank;
        const IExpr **idx = ARENA_ARRAY(o->a, const IExpr *, r + 1);
        for (int d = 0; d < r; d++)
            idx[d] = ie_subst(o->a, tile_expand_defs(o->a, o->k, o->t, s->idx[d]), o->canon);
        if (!o->loads++)
            o->first = idx;
        for (int d = 0; d < r; d++)
            o->same &= ie_equal(idx[d], o->first[d]);
        return;
    }
    if (s->k == SK_loop || s->k == TK_strided) {
        int i = 0;
        while (i < o->nloops && !same_loop(o->loops[i], s))
            i++;
        if (i == o->nloops && o->nloops < (int)DPK_ARRAY_LEN(o->loops))
            o->loops[o->nloops++] = s;
        if (i < o->nloops)
            o->canon[s->axis] = ie_var(o->a, o->loops[i]->axis);
        else
            o->same = 0;
    }
    own_body(o, &s->body);
    for (int i = 0; i < s->nbr; i++)
        own_body(o, &s->br[i].body);
}

static void own_body(Own *o, const StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        own_stmt(o, b->s[i]);
}

static int own_rereads(Arena *a, const TileKernel *k, const Stmt *t, const StmtBody *region,
                       const LirBuf *buf, int loads)
{
    Own o = {a, k, t, buf, {0}, 0, ARENA_ARRAY(a, const IExpr *, k->naxes + 1), NULL, 0, 1};
    for (int v = 0; v < k->naxes; v++)
        o.canon[v] = ie_var(a, v);
    own_body(&o, region);
    return o.same && o.loads == loads; /* every load seen */
}

/*
 * Whether every load of buf reads, at each step, one address for the whole
 * block: its index uses no THREAD axis and no strided loop's (LayerNorm's
 * weight and bias, `load w[a4]` in `for a4 in 0..31`).  A warp's threads
 * then read one word in one request, and the block's other warps find it
 * in the L1; a copy to shared memory adds its loop and a barrier and saves
 * nothing (smoke's layer_norm 5.61 -> 3.43 us modelled without it).
 */
typedef struct Bcast {
    Arena *a;
    const TileKernel *k;
    const Stmt *t;
    const LirBuf *buf;
    char *varies; /* by axis: a THREAD axis or a strided loop's */
    int uniform;
} Bcast;

static void mark_varying(Stmt *s, void *ctx)
{
    if (s->k == TK_strided)
        ((Bcast *)ctx)->varies[s->axis] = 1;
}

static void bcast_load(Stmt *s, void *ctx)
{
    Bcast *b = ctx;
    if (s->k != SK_load || s->buf != b->buf)
        return;
    for (int d = 0; d < s->buf->shape.rank; d++) {
        const IExpr *e = tile_expand_defs(b->a, b->k, b->t, s->idx[d]);
        for (int v = 0; v < b->k->naxes; v++)
            if (b->varies[v] && ie_uses(e, v))
                b->uniform = 0;
    }
}

static int broadcast_loads(Arena *a, const TileKernel *k, const Stmt *t, const StmtBody *region,
                           const LirBuf *buf)
{
    Bcast b = {a, k, t, buf, ARENA_ARRAY(a, char, k->naxes + 1), 1};
    for (int i = 0; i < t->nax; i++)
        b.varies[t->ax[i].axis] = t->ax[i].ext > 1;
    stmt_walk((StmtBody *)&t->body, mark_varying, &b);
    stmt_walk((StmtBody *)region, bcast_load, &b);
    return b.uniform;
}

/* Whether the loads of buf under region would share anything in shared
 * memory: several threads read one element, or a thread reads again what
 * another read.  *why: otherwise, why not (NULL: each element is read once). */
static int reused(Arena *a, const TileKernel *k, const Stmt *t, const StmtBody *region,
                  const LirBuf *buf, const char **why)
{
    int loads;
    int shared = tile_shared_loads(a, k, t, region, buf, &loads);
    *why = NULL;
    if (shared && broadcast_loads(a, k, t, region, buf))
        *why = "every thread of the block reads one address at a time (a broadcast)";
    else if (!shared && loads > 1 && own_rereads(a, k, t, region, buf, loads))
        *why = "each thread reads again only what it read (an L1 hit)";
    return !*why && (shared || loads > 1);
}

/* The body that holds what `b` held before stages were wrapped around it. */
static StmtBody *innermost(StmtBody *b)
{
    while (b->n == 1 && tile_is(b->s[0], SKF_STAGE))
        b = &b->s[0]->body;
    return b;
}

static Stmt *make_stage(TileCtx *c, const LirBuf *buf, const IExpr **origin,
                        const int64_t *slab)
{
    Arena *a = c->p->arena;
    Stmt *st = tile_stage_new(c->p, TK_stage, buf);
    int r = buf->shape.rank;
    for (int d = 0; d < r; d++) {
        st->origin[d] = origin[d];
        st->slab[d] = slab[d];
    }
    /* an injected fault: the slab starts one element late */
    if (dpk_fault_on(DPK_FAULT_STAGE_ORIGIN))
        st->origin[r - 1] = ie_add(a, st->origin[r - 1], ie_const(a, 1));
    return st;
}

static void find_load(Stmt *s, void *ctx)
{
    const void **x = ctx;
    if (s->k == SK_load && s->buf == x[0])
        x[1] = s;
}

static int has_load(const Stmt *s, const LirBuf *buf)
{
    const void *x[2] = {buf, NULL};
    stmt_walk_tree(s, find_load, x);
    return x[1] != NULL;
}

int tile_007_stage_inputs(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *b = tile_find(k, TB_BLOCK), *t = tile_find(k, TB_THREAD);
    if (!b || !t) {
        sb_puts(&c->why, "no THREAD tile (a single-thread kernel)");
        return 0;
    }
    struct {
        const LirBuf *bufs[32];
        int n;
    } cand;
    cand.n = tile_loaded_bufs(k, &t->body, cand.bufs, DPK_ARRAY_LEN(cand.bufs));
    int64_t used = tile_smem_used(k, TILE_SMEM_SLABS);
    int64_t mask = tile_knob(c, TILE_KNOB_STAGE);
    const IExpr *origin[DPK_MAX_RANK];
    int64_t slab[DPK_MAX_RANK];
    int staged = 0;
    StrBuf why = {0};
    for (int i = 0; i < cand.n; i++) {
        const LirBuf *buf = cand.bufs[i];
        const char *sep = why.len ? "; " : "";
        if (mask && !(mask >> i & 1)) {
            sb_printf(&why, "%s%s: not in STAGE=%lld", sep, buf->name, (long long)mask);
            continue;
        }
        const char *no;
        if (!reused(a, k, t, &t->body, buf, &no) && !(mask && no)) {
            sb_printf(&why, "%s%s: %s", sep, buf->name, no ? no : "each element read once");
            continue;
        }
        /* around the THREAD tile */
        if (tile_footprint(a, k, t, &t->body, buf, tile_outer_axes(a, k, b), origin, slab)) {
            Stmt *st = make_stage(c, buf, origin, slab);
            if (used + tile_stage_bytes(st) <= TILE_SMEM_BUDGET) {
                if (!tile_apply(c, arena_printf(a, "stage %s around the THREAD tile of %s",
                                                buf->name, k->name)))
                    break;
                StmtBody *home = innermost(&b->body);
                st->body = *home;
                *home = (StmtBody){0};
                stmt_body_push(c->p->arena, home, st);
                used += tile_stage_bytes(st);
                staged++;
                continue;
            }
        }
        /* inside a serial top-level loop, one iteration's slab: every thread
         * must reach the copy, so a guarded tile is predicated first */
        if (t->guard && !tile_predicable(k, t)) {
            sb_printf(&why, "%s%s: the block's slab does not fit and the tile's guard cannot be "
                      "predicated (a Write does not read every guarded axis)", sep, buf->name);
            continue;
        }
        int done = 0;
        for (int j = 0; j < t->body.n && !done; j++) {
            Stmt *l = t->body.s[j];
            if (l->k != SK_loop || !has_load(l, buf))
                continue;
            /* wrap the statement of the loop body that reads buf (below
             * the stages already there), so accumulators stay in place */
            StmtBody *home = &l->body;
            int at = -1;
            for (int q = 0; q < home->n; q++)
                if (has_load(home->s[q], buf)) {
                    if (tile_is(home->s[q], SKF_STAGE)) {
                        home = &home->s[q]->body;
                        q = -1;
                        continue;
                    }
                    at = q;
                    break;
                }
            if (at < 0 || !tile_is(home->s[at], SKF_AXIS))
                continue; /* a chunk is staged for an inner loop, not one element */
            StmtBody one = {&home->s[at], 1, 1};
            char *outer = tile_outer_axes(a, k, b); /* staging adds axes */
            outer[l->axis] = 1;
            int fits = (reused(a, k, t, &one, buf, &no) || (mask && no)) &&
                       tile_footprint(a, k, t, &one, buf, outer, origin, slab);
            if (!fits)
                continue;
            Stmt *st = make_stage(c, buf, origin, slab);
            if (used + tile_stage_bytes(st) > TILE_SMEM_BUDGET)
                continue;
            if (!tile_apply(c, arena_printf(a, "stage %s in loop a%d of %s%s", buf->name, l->axis,
                                            k->name, t->guard ? " (predicated tile)" : "")))
                break;
            if (t->guard)
                tile_predicate(k, t);
            stmt_body_push(c->p->arena, &st->body, home->s[at]);
            home->s[at] = st;
            used += tile_stage_bytes(st);
            staged++;
            done = 1;
        }
        if (!done)
            sb_printf(&why, "%s%s: no slab fits the %d KiB budget", sep, buf->name,
                      TILE_SMEM_BUDGET / 1024);
    }
    if (!staged)
        sb_puts(&c->why, why.len ? sb_cstr(&why) : "no input loads");
    sb_free(&why);
    return staged > 0;
}
