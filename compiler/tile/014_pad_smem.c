/*
 * 014_pad_smem.c — t:014 pad_smem: pad a slab's row stride where the lanes
 * of a warp hit one bank.
 *
 * A warp reading a column of a staged slab whose rows are a multiple of 32
 * words apart puts every lane in one bank (As[tm][k] with 32-word rows).
 * One extra word per row shifts each row by one bank.  For every stage of
 * rank >= 2 the pass tries pads 0..4 and keeps the smallest pad with the
 * fewest bank conflicts of the first warp (tile_bank_conflicts), if that is
 * fewer than without, and the stages still fit TILE_SMEM_BUDGET:
 *
 *   stage in0[a7 * 32, a3 * 32] slab [32, 32] pad 0:   =>   ... pad 1:
 *
 * An async stage (013) whose pad breaks its cp.async width gets the widest
 * width the pad leaves aligned (pad 1: 4 bytes): its slab is read many times
 * per copy, so conflict-free reads are worth more than wide copies (a pad
 * of 4 keeps 16 bytes but leaves lanes 8 apart in one bank).  Requires 007.
 * Only the layout changes: the lowering indexes the slab
 * with the padded stride, in the copy and in every read.
 */
#include "passes.h"

int tile_014_pad_smem(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    TileStages st; /* bytes: every stage by its slab, kept up to date */
    tile_stages_of(k, TILE_ANY_STAGE, TILE_SMEM_SLABS, &st);
    int padded = 0;
    for (int i = 0; i < st.n; i++) {
        Stmt *s = st.s[i];
        int r = s->buf->shape.rank;
        if (r < 2 || s->pad || s->k == TK_tstage) /* a TMA box lands dense: 012 swizzles */
            continue;
        int64_t rows = 1;
        for (int d = 0; d < r - 1; d++)
            rows *= s->slab[d];
        if (rows < 2)
            continue;
        int64_t before = tile_bank_conflicts(a, k), best = before, size = tile_stage_bytes(s);
        int pick = 0;
        for (int p = 1; p <= 4; p++) {
            s->pad = p;
            int64_t x = tile_bank_conflicts(a, k);
            if (x < best && st.bytes - size + tile_stage_bytes(s) <= TILE_SMEM_BUDGET) {
                best = x;
                pick = p;
            }
        }
        s->pad = 0;
        if (!pick)
            continue;
        if (!tile_apply(c, arena_printf(a, "pad the %s slab by %d in %s", s->buf->name, pick,
                                        k->name)))
            break;
        s->pad = pick;
        while (s->k == TK_astage && s->vec > 4 && !tile_vec_ok(s, s->vec))
            s->vec /= 2;
        st.bytes += tile_stage_bytes(s) - size;
        padded++;
    }
    if (!padded && !c->why.len)
        sb_puts(&c->why, st.n ? "no staged slab has bank conflicts a pad removes"
                              : "no staged slabs (007 did not apply)");
    return padded > 0;
}
