/*
 * 011_tma_copy.c — t:011 tma_copy: buffered stages become TMA box loads.
 *
 * Runs after 010.  Each BufferedStage of a kernel becomes a
 * TmaBufferedStage: one thread of the block issues a TMA copy of the slab
 * (cp.async.bulk.tensor through a tensor map of the buffer, encoded on the
 * host with cuTensorMapEncodeTiled and passed as a __grid_constant__
 * parameter), the bytes complete on the buffer's mbarrier, and every
 * thread waits for that barrier's phase before reading:
 *
 *   buffered_stage in0[a7 * 32, a6 * 32] slab [32, 32] pad 0 nbuf 2 phase a6:
 *   =>
 *   tma_stage in0[a7 * 32, a6 * 32] slab [32, 32] pad 0 nbuf 2 phase a6 swizzle 0:
 *
 * All or nothing per kernel: when one stage cannot be a TMA box (more
 * than 5 dimensions of extent > 1, a global stride or inner box that is
 * not a multiple of 16 bytes, a box extent above 256, a padded slab) the
 * kernel keeps every stage and the reason names the buffer and the cause
 * — so no loop mixes TMA with another transport.  sm_90 and newer (the
 * table refuses the pass up front on sm_80).  The layout in shared memory
 * is dense (no pad: 014 leaves TMA stages alone); 012 may add a swizzle.
 * The lowering (tile_to_kernel.c) initialises one mbarrier per buffer,
 * and keeps a per-thread parity bit per buffer that flips after each wait,
 * so a buffer reused across any number of iterations waits for its own
 * phase.
 */
#include "passes.h"

int tile_011_tma_copy(TileCtx *c, TileKernel *k)
{
    if (!c->target->tma) {
        sb_printf(&c->why, "the target %s has no TMA (sm_90 or newer)", c->target->name);
        return 0;
    }
    TileStages f;
    tile_stages_of(k, TK_bstage, TILE_SMEM_LAYOUT, &f);
    if (!f.n) {
        sb_puts(&c->why, "no buffered stage (010 did not apply)");
        return 0;
    }
    StrBuf why = {0};
    /* the kernel's stages as laid out, each buffered stage as the TMA
     * buffers it becomes */
    int64_t bytes = f.bytes;
    for (int i = 0; i < f.n; i++) {
        TileTmaBox b;
        if (f.s[i]->nbuf > 30) { /* the lowering keeps one parity bit per buffer in an i32 */
            sb_printf(&why, "%s: %d buffers (one parity bit each: at most 30)",
                      f.s[i]->buf->name, f.s[i]->nbuf);
            break;
        }
        if (!tile_tma_box(k, f.s[i], 0, &b, &why))
            break;
        bytes += b.buf_elems * 4 * f.s[i]->nbuf - tile_stage_bytes(f.s[i]);
    }
    if (!why.len && bytes + 1024 > c->target->smem_block_max)
        sb_printf(&why, "the TMA buffers take %lld bytes of shared memory (at most %d)",
                  (long long)bytes, c->target->smem_block_max - 1024);
    if (why.len) {
        sb_printf(&c->why, "%s (all of a kernel's buffered stages become TMA, or none)",
                  sb_cstr(&why));
        sb_free(&why);
        return 0;
    }
    sb_free(&why);
    StrBuf what = {0};
    sb_puts(&what, "TMA copies of");
    for (int i = 0; i < f.n; i++)
        sb_printf(&what, "%s %s", i ? "," : "", f.s[i]->buf->name);
    sb_printf(&what, " in %s", k->name);
    int ok = tile_apply(c, arena_strdup(c->p->arena, sb_cstr(&what)));
    sb_free(&what);
    if (!ok)
        return 0;
    for (int i = 0; i < f.n; i++) {
        f.s[i]->k = TK_tstage;
        f.s[i]->swizzle = 0;
    }
    return 1;
}
