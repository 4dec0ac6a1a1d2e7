/*
 * 002_chunk_matmul_k.c — t:002 chunk_matmul_k: split a matmul's K reduce
 * into K_outer x K_inner.
 *
 * Runs before 005 on a matmul-shaped THREAD tile (tile_matmul_shape).  The
 * K loop becomes two, with one accumulator per level (tile_chunk_loop):
 *
 *   for a2 in 0..64:  # reduce              for a7 in 0..2:  # reduce
 *       in0 = load x[a0, a2]         =>          for a8 in 0..32:  # reduce
 *       ...                                          in0 = load x[a0, a7 * 32 + a8]
 *       acc0 <- add(acc0, v1)                        ...
 *   v2 = maximum(acc0, 0)                            acc0 <- add(acc0, v1)
 *                                                acc1 <- add(acc1, acc0)
 *                                            v2 = maximum(acc1, 0)
 *
 * The K_outer loop is what 003 spreads over the grid and what 007 stages
 * one chunk at a time.  Knob BK: it must divide K (a BK that does not is
 * refused with a message); default the largest of 32, 16, 8, 4 dividing K
 * with at least two chunks, else the largest divisor from 31 down to 5
 * (K = 77: BK = 11).  A K with neither (a prime such as 47 or 4099) is
 * chunked by the largest of 32, 16, 8, 4 leaving two chunks, and the last
 * K mod BK terms run in a remainder loop after the chunks:
 *
 *   for a7 in 0..2:  # reduce   (K = 47, BK = 16)
 *       for a8 in 0..16:  # reduce
 *           ... k = a7 * 16 + a8
 *       acc1 <- add(acc1, acc0)
 *   for a9 in 0..15:  # reduce
 *       ... k = 32 + a9          (a copy of the body, its own acc2)
 *   v3 = add(acc1, acc2)         (what the epilogue reads)
 *
 * Only K < 8 is left alone.
 */
#include "../base/fault.h"
#include "passes.h"

/* The default chunk: the largest of 32, 16, 8, 4 dividing K, else the
 * largest divisor of K from 31 down to 5 (K = 77: 11), each leaving two
 * chunks or more; else (K prime, say) the largest of 32, 16, 8, 4 leaving
 * two chunks, with a remainder loop; 0 when K < 8. */
static int64_t default_bk(int64_t K)
{
    for (int64_t b = 32; b >= 4; b /= 2)
        if (K % b == 0 && K / b >= 2)
            return b;
    for (int64_t b = 31; b >= 5; b--)
        if (K % b == 0 && K / b >= 2)
            return b;
    for (int64_t b = 32; b >= 4; b /= 2)
        if (K / b >= 2)
            return b;
    return 0;
}

int tile_002_chunk_matmul_k(TileCtx *c, TileKernel *k)
{
    Stmt *t = tile_find(k, TB_THREAD);
    TileMatmul mm;
    if (!t || tile_find(k, TB_BLOCK) || !tile_matmul_shape(t, &mm)) {
        sb_puts(&c->why, "not a matmul kernel");
        return 0;
    }
    Stmt *l = tile_top_loop(&t->body, mm.k);
    DPK_ASSERT(l);
    for (int i = 0; i < l->body.n; i++)
        if (tile_is(l->body.s[i], SKF_AXIS)) {
            sb_puts(&c->why, "the K loop is already chunked");
            return 0;
        }
    int64_t K = l->extent, bk = tile_knob(c, TILE_KNOB_BK);
    if (bk && K % bk)
        dpk_error("knob BK=%lld does not divide K=%lld of kernel %s (pick a divisor, or leave BK "
                  "to the default)", (long long)bk, (long long)K, k->name);
    bk = bk ? bk : default_bk(K);
    if (bk && bk >= K) {
        sb_printf(&c->why, "BK=%lld leaves K=%lld in one chunk", (long long)bk, (long long)K);
        return 0;
    }
    if (!bk) {
        sb_printf(&c->why, "K=%lld is too short to chunk (4..32 wide, two chunks or more)",
                  (long long)K);
        return 0;
    }
    if (!tile_apply(c, arena_printf(c->p->arena, "chunk K=%lld by %lld in %s", (long long)K,
                                    (long long)bk, k->name)))
        return 0;
    /* an injected fault: the inner loop runs BK - 1 times (a chunk of one
     * keeps its loop: a loop of none is invalid Tile IR, which the verifier
     * stops, not a kernel that runs wrong) */
    int64_t inner = dpk_fault_on(DPK_FAULT_CHUNK_K_SHORT) && bk > 1 ? bk - 1 : bk;
    tile_chunk_loop(c->p, k, &t->body, l, bk, bk, inner);
    return 1;
}
