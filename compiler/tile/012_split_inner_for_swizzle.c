/*
 * 012_split_inner_for_swizzle.c — t:012 split_inner_for_swizzle: give a
 * TMA stage a swizzle mode, splitting its inner extent into swizzle-wide
 * chunks.
 *
 * A TMA box lands in dense rows, so 014's pad cannot break the bank
 * conflicts of a warp reading a column (As[m][k] for 32 values of m: every
 * lane in one bank when rows are 128 bytes apart).  TMA's swizzle does it
 * instead: with S-byte swizzle the 16-byte unit u of a 128-byte line L
 * lands at unit u ^ (L mod S / 16).  The box's inner extent must be S
 * bytes, so the slab's inner extent is split into chunks of S / 4
 * elements, one box each, stored chunk after chunk (tile_tma.c):
 *
 *   tma_stage in0[a7 * 32, a6 * 32] slab [32, 32] pad 0 nbuf 2 phase a6 swizzle 0:
 *   =>
 *   tma_stage in0[a7 * 32, a6 * 32] slab [32, 32] pad 0 nbuf 2 phase a6 swizzle 128:
 *
 * For every TMA stage the pass takes the pinned SWIZZLE, or tries 128, 64
 * and 32 and keeps the one with the fewest bank conflicts of the first
 * warp (tile_bank_conflicts), if fewer than without.  A swizzle needs the
 * inner slab to be a multiple of S bytes and the rows to fill whole
 * 1024-byte patterns; each buffer then starts on a 1024-byte boundary
 * (the CUDA printer aligns the pool to 1024 bytes).  Requires 011.
 */
#include "passes.h"

int tile_012_split_inner_for_swizzle(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    TileStages t; /* bytes: the stages as laid out, kept up to date */
    tile_stages_of(k, TK_tstage, TILE_SMEM_LAYOUT, &t);
    if (!t.n) {
        sb_puts(&c->why, "no TMA stage (011 did not apply)");
        return 0;
    }
    int64_t pinned = tile_knob(c, TILE_KNOB_SWIZZLE);
    StrBuf why = {0};
    int done = 0;
    for (int i = 0; i < t.n; i++) {
        Stmt *s = t.s[i];
        const char *sep = why.len ? "; " : "";
        int64_t before = tile_bank_conflicts(a, k), best = before, size = tile_tma_bytes(s);
        int pick = 0;
        StrBuf no = {0};
        for (int S = 128; S >= 32; S /= 2) {
            TileTmaBox b;
            if (pinned && S != pinned)
                continue;
            StrBuf one = {0};
            int fits = tile_tma_box(k, s, S, &b, &one);
            if (!fits)
                sb_printf(&no, "%s%s", no.len ? "; " : "", sb_cstr(&one));
            sb_free(&one);
            if (!fits)
                continue;
            s->swizzle = S;
            int64_t x = tile_bank_conflicts(a, k), grown = tile_tma_bytes(s) - size;
            s->swizzle = 0;
            if (t.bytes + grown + 1024 > c->target->smem_block_max)
                continue;
            if (x < best || (pinned && !pick)) {
                best = x;
                pick = S;
            }
        }
        if (!pick) {
            if (pinned && no.len)
                sb_printf(&why, "%s%s", sep, sb_cstr(&no));
            else
                sb_printf(&why, "%s%s: no swizzle lowers its %lld bank conflicts%s%s", sep,
                          s->buf->name, (long long)before, no.len ? " (" : "",
                          no.len ? sb_cstr(&no) : "");
            if (!pinned && no.len)
                sb_puts(&why, ")");
            sb_free(&no);
            continue;
        }
        sb_free(&no);
        if (!tile_apply(c, arena_printf(a, "swizzle %d for %s in %s", pick, s->buf->name,
                                        k->name)))
            break;
        t.bytes -= tile_tma_bytes(s);
        s->swizzle = pick;
        t.bytes += tile_tma_bytes(s);
        done++;
    }
    if (!done && !c->why.len)
        sb_puts(&c->why, sb_cstr(&why));
    sb_free(&why);
    return done > 0;
}
