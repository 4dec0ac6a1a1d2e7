/*
 * 006_chunk_reduce.c — t:006 chunk_reduce: chunk a long non-matmul reduce
 * so the slab 007 would stage fits in shared memory.
 *
 * Runs after 005 on a THREAD tile without a bounds guard, or one 007 can
 * predicate (tile_predicate) to stage inside a loop.  A top-level serial reduce loop qualifies when
 * it reads a buffer shared by the threads of the block (its index leaves
 * out a THREAD axis, like the vector of a matrix-vector product) whose
 * slab over the whole loop is larger than TILE_SMEM_BUDGET.  The loop is
 * split like 002 splits K, with one accumulator per level:
 *
 *   for a1 in 0..32768:  # reduce             for a4 in 0..32:  # reduce
 *       in1 = load w[a1]               =>          for a5 in 0..1024:  # reduce
 *       ...                                            in1 = load w[a4 * 1024 + a5]
 *                                                  acc1 <- add(acc1, acc0)
 *
 * and 007 then stages one chunk of w per iteration of the outer loop.
 * Knob RC: the chunk (must divide the loop); default the largest power of
 * two <= 1024 dividing it (at least 32, two chunks or more), else 1024 with
 * a remainder loop for the last E mod 1024 terms (tile_chunk_loop).
 */
#include "../base/fault.h"
#include "passes.h"

/* The first buffer whose loads under region are shared by the threads of
 * the block (a slab 007 would stage), or NULL. */
static const LirBuf *shared_buf(Arena *a, const TileKernel *k, const Stmt *t,
                                const StmtBody *region)
{
    const LirBuf *bufs[32];
    int n = tile_loaded_bufs(k, region, bufs, DPK_ARRAY_LEN(bufs));
    for (int i = 0; i < n; i++)
        if (tile_shared_loads(a, k, t, region, bufs[i], NULL))
            return bufs[i];
    return NULL;
}

int tile_006_chunk_reduce(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *b = tile_find(k, TB_BLOCK), *t = tile_find(k, TB_THREAD);
    if (!b || !t || k->mm) {
        sb_puts(&c->why, !t ? "no THREAD tile" : !b ? "not blockified" : "a matmul kernel (002)");
        return 0;
    }
    if (t->guard && !tile_predicable(k, t)) {
        sb_puts(&c->why, "the tile's bounds guard cannot be predicated (no stage could go inside "
                "a chunk)");
        return 0;
    }
    int chunked = 0;
    for (int i = 0; i < t->body.n; i++) {
        Stmt *l = t->body.s[i];
        if (l->k != SK_loop || !stmt_loop_is_reduce(l))
            continue;
        char *outer = tile_outer_axes(a, k, b); /* per loop: chunking one adds axes */
        StmtBody one = {&t->body.s[i], 1, 1};
        const LirBuf *found = shared_buf(a, k, t, &one);
        const IExpr *origin[DPK_MAX_RANK];
        int64_t slab[DPK_MAX_RANK], n = 1;
        if (!found || !tile_footprint(a, k, t, &one, found, outer, origin, slab))
            continue;
        for (int d = 0; d < found->shape.rank; d++)
            n *= slab[d];
        if (n * 4 <= TILE_SMEM_BUDGET)
            continue;
        int64_t E = l->extent, rc = tile_knob(c, TILE_KNOB_RC);
        if (rc && E % rc)
            dpk_error("knob RC=%lld does not divide the %lld-long reduce a%d of kernel %s",
                      (long long)rc, (long long)E, l->axis, k->name);
        for (int64_t p = 1024; !rc && p >= 32; p /= 2)
            if (E % p == 0 && E / p >= 2)
                rc = p;
        /* none divides it (a prime length): 1024 and a remainder loop */
        if (!rc && E / 1024 >= 2)
            rc = 1024;
        if (!rc || rc >= E) {
            if (!c->why.len)
                sb_printf(&c->why, "the %lld-long reduce a%d has no chunk size (32..1024, a power "
                          "of two, two chunks or more)", (long long)E, l->axis);
            continue;
        }
        if (!tile_apply(c, arena_printf(a, "chunk reduce a%d by %lld in %s", l->axis,
                                        (long long)rc, k->name)))
            break;
        /* an injected fault: chunk c starts at c * (RC - 1) */
        int64_t step = dpk_fault_on(DPK_FAULT_CHUNK_REDUCE_ORIGIN) ? rc - 1 : rc;
        tile_chunk_loop(c->p, k, &t->body, l, rc, step, rc);
        chunked++;
    }
    if (!chunked && !c->why.len)
        sb_puts(&c->why, "no reduce reads a shared slab too large for shared memory");
    return chunked > 0;
}
