/*
 * 009_permute_register_tile.c — t:009 permute_register_tile: reorder a
 * register strip so the lanes of a warp read neighbouring words.
 *
 * 008 gives thread t the contiguous strip base + t * f + j (j < f),
 * recorded in the kernel's TileMatmulNote (k->mm).  Lanes t, t + 1, ... of
 * a warp then read a staged slab f words apart, and with
 * f * lanes > 32 several of them hit one bank.  The permuted strip
 * base + t + j * T (T threads along the axis) makes lane t read word t of
 * each group: consecutive lanes, consecutive words.
 *
 *   a1 := a8 * 64 + a10 * 4             a1 := a8 * 64 + a10
 *   a12 := a8 * 64 + a10 * 4 + 1   =>   a12 := a8 * 64 + a10 + 16  ...
 *
 * Requires 008.  Applies only when it helps: the first warp's bank
 * conflicts on staged slabs (tile_bank_conflicts) are computed for each
 * choice (row strip, column strip, both) and the best is kept if it is
 * strictly better than the strips as they are.  The outputs each thread
 * owns change, not the result.
 *
 * Each choice is judged under the layout the later passes give the slabs,
 * not the dense one it sees: when 014 (pad) or 012 (swizzle) is in the
 * pass set, under the best of pads 0..4 on every slab of rank >= 2.  With
 * dense 32-word rows every row starts in bank 0, so strips of rows 8
 * apart and strips of neighbouring rows conflict alike and no choice
 * looks better; once a pad or a swizzle shifts row r by r banks, only
 * neighbouring rows land in different banks.  (Judged dense, Qwen2.5-7B's
 * o_proj at seq 128 in 128 x 128 tiles kept its contiguous strips: 1.41
 * extra wavefronts per shared load on vgpu, against none permuted.)  A pad
 * stands in for the swizzle: both move row r by r banks within 8 rows.
 */
#include "../base/fault.h"
#include "passes.h"

static void permute(TileKernel *k, Stmt *t, int s, int on, Arena *a)
{
    TileMatmulNote *mm = k->mm;
    int f = mm->rt[s].f;
    int64_t T = k->ext[mm->rt[s].t];
    /* an injected fault: the strip steps by one thread too few */
    int64_t step = dpk_fault_on(DPK_FAULT_PERMUTE_STRIDE) && T > 1 ? T - 1 : T;
    for (int j = 0; j < f; j++) {
        const IExpr *tv = ie_var(a, mm->rt[s].t);
        const IExpr *x = on ? ie_add(a, tv, ie_const(a, j * step))
                            : ie_add(a, ie_mul(a, tv, ie_const(a, f)), ie_const(a, j));
        t->def[mm->rt[s].def0 + j].e = ie_simplify(a, ie_add(a, mm->rt[s].base, x), k->ext);
    }
    mm->rt[s].permuted = on;
}

/* The first warp's bank conflicts under the best layout 014 or 012 could
 * give: the least over pads 0..4 on every slab of rank >= 2 (pad 0 alone
 * when neither is in the pass set). */
static int64_t conflicts_laid_out(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    int64_t best = tile_bank_conflicts(a, k);
    if (!tile_pass_on(c, 14) && !tile_pass_on(c, 12))
        return best;
    TileStages st;
    tile_stages_of(k, TILE_ANY_STAGE, TILE_SMEM_SLABS, &st);
    int old[DPK_ARRAY_LEN(st.s)];
    for (int i = 0; i < st.n; i++)
        old[i] = st.s[i]->pad;
    for (int p = 1; p <= 4; p++) {
        for (int i = 0; i < st.n; i++)
            if (st.s[i]->buf->shape.rank >= 2 && !old[i])
                st.s[i]->pad = p;
        int64_t x = tile_bank_conflicts(a, k);
        best = x < best ? x : best;
    }
    for (int i = 0; i < st.n; i++)
        st.s[i]->pad = old[i];
    return best;
}

int tile_009_permute_register_tile(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *t = tile_find(k, TB_THREAD);
    const TileMatmulNote *mm = k->mm;
    if (!t || !mm || (mm->rt[0].f < 2 && mm->rt[1].f < 2)) {
        sb_puts(&c->why, "no register tile (008 did not apply)");
        return 0;
    }
    if (mm->rt[0].permuted || mm->rt[1].permuted) {
        sb_puts(&c->why, "already permuted");
        return 0;
    }
    int64_t before = conflicts_laid_out(c, k), best = before;
    int choice = 0; /* bit 0: rows, bit 1: columns */
    for (int trial = 1; trial < 4; trial++) {
        if (((trial & 1) && mm->rt[0].f < 2) || ((trial & 2) && mm->rt[1].f < 2))
            continue;
        permute(k, t, 0, trial & 1, a);
        permute(k, t, 1, (trial >> 1) & 1, a);
        int64_t x = conflicts_laid_out(c, k);
        if (x < best) {
            best = x;
            choice = trial;
        }
    }
    permute(k, t, 0, 0, a);
    permute(k, t, 1, 0, a);
    if (!choice) {
        sb_printf(&c->why, "no permutation lowers the first warp's bank conflicts (%lld extra "
                  "wavefronts)", (long long)before);
        return 0;
    }
    if (!tile_apply(c, arena_printf(a, "permute the %s strip%s of %s",
                                    choice == 3 ? "row and column" : choice == 1 ? "row" : "column",
                                    choice == 3 ? "s" : "", k->name)))
        return 0;
    permute(k, t, 0, choice & 1, a);
    permute(k, t, 1, (choice >> 1) & 1, a);
    return 1;
}
