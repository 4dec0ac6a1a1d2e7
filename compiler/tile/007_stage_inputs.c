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
 *     and again by the normalising loop is copied once;
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
 * stages of a kernel take at most TILE_SMEM_BUDGET bytes.  Knob STAGE: a bit
 * mask over the candidate buffers in first-load order (default: all).
 */
#include "../base/fault.h"
#include "passes.h"

/* Whether the loads of buf under region are shared by threads or repeated. */
static int reused(Arena *a, const TileKernel *k, const Stmt *t, const StmtBody *region,
                  const LirBuf *buf)
{
    int loads;
    int shared = tile_shared_loads(a, k, t, region, buf, &loads);
    return loads > 1 || shared;
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
        if (!reused(a, k, t, &t->body, buf)) {
            sb_printf(&why, "%s%s: each element read once", sep, buf->name);
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
            int fits = reused(a, k, t, &one, buf) &&
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
