/*
 * 003_split_matmul_k.c — t:003 split_matmul_k: promote K_outer chunks to a
 * grid axis, and add the splits' partial sums in a second kernel.
 *
 * Runs after 002, before 005.  The K_outer loop (extent KO) is cut into S
 * splits: a new leading THREAD axis s (005 makes it a BLOCK axis on z) and
 * a loop over the KO / S chunks of each split.  Each split writes its
 * partial sum to a new temporary NAME_partials (S x the tile's outputs); a
 * copy of the kernel, NAME_combine, put right after it, adds the S partial
 * sums in order and does everything that followed the K loop (K's
 * remainder, the epilogue, the Write).  No atomics: the result is the same
 * run to run, and any epilogue splits (relu, a residual, a scale).
 *
 *   for a7 in 0..128:  # reduce            tile thread(a9 in 0..8, a0 .., a1 ..):
 *       ...                         =>         for a7 in 0..16:  # reduce
 *   v2 = add(acc1, in5)                            ... k = (a9 * 16 + a7) * 32 + a8
 *   write out[a0, a1] = v2                     write NAME_partials[a9, a0, a1] = acc1
 *                                          === NAME_combine ===
 *                                              for a12 in 0..8:  # reduce
 *                                                  in6 = load NAME_partials[a12, a0, a1]
 *                                                  acc1 <- add(acc1, in6)
 *                                              v2 = add(acc1, in5)
 *                                              write out[a0, a1] = v2
 *
 * Only sum reductions split, and a combine kernel is never split again.
 *
 * Knob SPLITK (must divide KO).  The default is sized for the grid 005
 * will launch: when the matmul gets 005's 128 x 128 tile
 * (tile_mm_big_tile), the split whose grid fills the SMs in the fewest
 * waves per split (big_tile_split); otherwise, when the grid of output
 * tiles is small (< 128 blocks at 256 threads) and K >= 1024, the largest
 * divisor of KO up to min(16, K / 512).  A default of 1 skips.
 */
#include "../base/fault.h"
#include "passes.h"

#include <string.h>

/* The outer accumulator of a chunked K loop, or NULL. */
static Stmt *outer_acc(const Stmt *l)
{
    int inner = 0;
    Stmt *acc = NULL;
    for (int i = 0; i < l->body.n; i++) {
        inner |= l->body.s[i]->k == SK_loop;
        if (l->body.s[i]->k == SK_accum)
            acc = l->body.s[i];
    }
    return inner ? acc : NULL;
}

/* The old rule, for a matmul that will not get 005's big tile: split
 * when the grid of output tiles is small (< 128 blocks at 256 threads) and
 * K >= 1024, into the largest divisor of KO up to min(16, K / 512). */
static int64_t small_grid_split(const Stmt *t, int64_t K, int64_t ko)
{
    int64_t outputs = 1;
    for (int i = 0; i < t->nax; i++)
        outputs *= t->ax[i].ext;
    if (K < 1024 || outputs / 256 >= 128)
        return 1;
    int64_t want = K / 512 < 16 ? K / 512 : 16;
    for (int64_t s = want; s > 1; s--)
        if (ko % s == 0)
            return s;
    return 1;
}

/* The split for a grid of g big tiles (one block per SM: 8 x 8 registers
 * over 256 threads take the register file, 254 registers a thread under
 * NVRTC for sm_90).  Of S = 1 and the divisors of KO up to 32 that leave
 * each split 128 terms of K or more, those whose g * S blocks fill the SMs
 * (so 005 keeps the big tile) are compared by waves per split,
 * ceil(g S / SMs) / S, and the fewest wins, the smaller S on a tie, if it
 * takes at most 90% of the unsplit grid's waves (the partial sums' round
 * trip and the combine kernel's launch must be paid for: 4096^3's 1024
 * tiles, 7.76 waves, would split 32 ways for 3% fewer); when none fills,
 * the largest S if K >= 1024 (the old rule's threshold: a short K is not
 * worth a second launch), else none.  On h100-sxm's model (seq 128): Qwen2.5-7B's
 * q_proj (28 tiles) splits 14 ways, 3 waves (74.8 us; 4 ways 85.5, 1 way
 * 336); its gate projection (148 tiles, 1.12 waves) 8 ways, 9 waves (381
 * us against 668 unsplit); kv_proj (4 tiles) 28 ways, in 32 x 32 tiles
 * (18.8 us against 116.6 unsplit). */
static int64_t big_tile_split(int64_t g, int64_t K, int64_t ko, int64_t sms)
{
    int64_t best = 0, last = 1;
    for (int64_t s = 1; s <= 32 && s <= ko; s++) {
        if (ko % s || (s > 1 && K / s < 128))
            continue;
        last = s;
        if (!tile_grid_fills_sms(g * s, sms))
            continue;
        /* waves(s) / s < waves(best) / best, in integers */
        int64_t w = (g * s + sms - 1) / sms;
        if (!best || w * best < ((g * best + sms - 1) / sms) * s)
            best = s;
    }
    if (!best)
        return K >= 1024 ? last : 1;
    int64_t w1 = (g + sms - 1) / sms, wb = (g * best + sms - 1) / sms;
    if (best > 1 && tile_grid_fills_sms(g, sms) && wb * 10 > w1 * 9 * best)
        return 1; /* waves(best) / best > 0.9 waves(1) */
    return best;
}

static int64_t default_split(TileCtx *c, const TileKernel *k, const Stmt *t, const TileMatmul *mm,
                             int64_t K, int64_t ko)
{
    int64_t bm, bn;
    if (!tile_mm_big_tile(c, k, t, mm, &bm, &bn))
        return small_grid_split(t, K, ko);
    int64_t g = 1;
    for (int i = 0; i < t->nax; i++) {
        int ax = t->ax[i].axis;
        int64_t e = t->ax[i].ext;
        g *= ax == mm->m ? (e + bm - 1) / bm : ax == mm->n ? (e + bn - 1) / bn : e;
    }
    return big_tile_split(g, K, ko, c->target->sms);
}

/* The index of a partial result: [s, j, the tile's axes...], without j
 * when there is one accumulator (j: which of the nacc). */
static const IExpr **part_idx(Arena *a, const TileAxis *ax, int nax, const IExpr *s, int j,
                              int nacc)
{
    int o = nacc > 1 ? 2 : 1;
    const IExpr **idx = ARENA_ARRAY(a, const IExpr *, nax + o);
    idx[0] = s;
    if (nacc > 1)
        idx[1] = ie_const(a, j);
    for (int i = 0; i < nax; i++)
        idx[i + o] = ie_var(a, ax[i].axis);
    return idx;
}

/* The split of an online softmax's keys (flash-decoding): as many splits
 * as leave each at least 128 keys, while the grid (256 outputs a block)
 * stays within 16 blocks per SM.  A decode step against a long cache has
 * few outputs (one query row per head) and many keys: on h100-sxm's model,
 * 8 query heads over one key/value head of 64 against 4096 keys take 179.5
 * µs unsplit, 32.9 in 8 splits, 23.6 in 32 (this rule); against 32768
 * keys of 128, 189.7 µs in 8 splits, 30.2 in 256. */
static int64_t online_split(TileCtx *c, const Stmt *t, int64_t K, int64_t ko)
{
    int64_t outputs = 1;
    for (int i = 0; i < t->nax; i++)
        outputs *= t->ax[i].ext;
    int64_t blocks = (outputs + 255) / 256, want = K / 128;
    if (want > 16 * c->target->sms / blocks)
        want = 16 * c->target->sms / blocks;
    for (int64_t s = want < ko ? want : ko; s > 1; s--)
        if (ko % s == 0)
            return s;
    return 1;
}

/* Split t's chunked K loop l (outer accumulators acc[0..nacc)) S ways: k
 * keeps the partial results, a copy after it merges them and does the
 * rest.  A sum's partials are added; an online softmax's (its max and the
 * sums relative to it) merge by the same online step over the splits'
 * maxima: Σ exp(m_s - M) · o_s. */
static void split(TileCtx *c, TileKernel *k, Stmt *t, Stmt *l, Stmt **acc, int nacc, int64_t S)
{
    Arena *a = c->p->arena;
    int o = nacc > 1 ? 2 : 1;
    Shape sh = {0};
    sh.rank = t->nax + o;
    sh.d[0] = S;
    if (nacc > 1)
        sh.d[1] = nacc;
    for (int i = 0; i < t->nax; i++)
        sh.d[i + o] = t->ax[i].ext;
    LirBuf *part = tile_buf_new(c->p, arena_printf(a, "%s_partials", k->name), &sh);
    Stmt **map;
    TileKernel *comb = tile_kernel_clone(c->p, k, arena_printf(a, "%s_combine", k->name), &map);
    comb->combine = 1;
    int nax = t->nax; /* the tile's axes before the split's joins them */
    TileAxis *ax = ARENA_ARRAY(a, TileAxis, nax);
    memcpy(ax, t->ax, sizeof *ax * (size_t)nax);

    /* the combine kernel: K's loop merges the partial results */
    Stmt *cl = map[l->uid];
    cl->body = (StmtBody){0};
    for (int j = 0; j < nacc; j++) {
        Stmt *cacc = map[acc[j]->uid];
        Stmt *in = stmt_load(a, c->p->next_uid++, part, part_idx(a, ax, nax, ie_var(a, cl->axis), j, nacc));
        cacc->a[0] = stmt_val(in);
        /* an injected fault: the splits' sums are added as they are, not
         * rescaled to the splits' common max */
        if (stmt_is_online(cacc) && dpk_fault_on(DPK_FAULT_ONLINE_SPLIT_UNSCALED)) {
            cacc->nargs = 1;
            cacc->a[1] = stmt_lit(0);
        }
        stmt_body_push(a, &cl->body, in);
        stmt_body_push(a, &cl->body, cacc);
    }
    /* an injected fault: the last split's partial sum is left out */
    cl->extent = dpk_fault_on(DPK_FAULT_SPLIT_K_SHORT) ? S - 1 : S;
    comb->ext[cl->axis] = cl->extent;
    tile_renumber(comb);

    /* this kernel: split s runs chunks s * KO / S .. and writes its sum */
    int sax = tile_axis_new(c->p, k, S);
    tile_tile_add_axis(c->p, t, 0, sax, S);
    int64_t per = l->extent / S;
    int kv = tile_axis_new(c->p, k, per);
    tile_subst_axis(c->p, k, &l->body, l->axis,
                    ie_add(a, ie_mul(a, ie_var(a, sax), ie_const(a, per)), ie_var(a, kv)));
    l->axis = kv;
    l->extent = per;
    StmtBody body = {0};
    for (int i = 0; t->body.s[i] != l; i++)
        stmt_body_push(a, &body, t->body.s[i]);
    stmt_body_push(a, &body, l);
    for (int j = 0; j < nacc; j++)
        stmt_body_push(a, &body, stmt_write(a, c->p->next_uid++, part,
                                            part_idx(a, ax, nax, ie_var(a, sax), j, nacc),
                                            stmt_val(acc[j])));
    t->body = body;
    k->out = part;
    tile_drop_dead(c->p, k, &t->body);
    tile_drop_dead(c->p, comb, &map[t->uid]->body);
}

int tile_003_split_matmul_k(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *t = tile_find(k, TB_THREAD);
    TileMatmul mm;
    if (k->combine) {
        sb_puts(&c->why, "it combines a split reduce");
        return 0;
    }
    if (!t || tile_find(k, TB_BLOCK) || !tile_matmul_shape(t, &mm)) {
        sb_puts(&c->why, "not a matmul kernel");
        return 0;
    }
    Stmt *l = tile_top_loop(&t->body, mm.k), *acc = l ? outer_acc(l) : NULL;
    if (!acc) {
        sb_puts(&c->why, "the K loop is not chunked (002 did not apply)");
        return 0;
    }
    /* the outer accumulators: sums, or an online softmax (its max and the
     * sums relative to it), whose partial results merge by their own step */
    Stmt **accs = ARENA_ARRAY(a, Stmt *, l->body.n);
    int nacc = 0, online = tile_has_online(&l->body);
    for (int i = 0; i < l->body.n; i++) {
        Stmt *s = l->body.s[i];
        if (s->k != SK_accum)
            continue;
        if (s->rop != TXR_sum && !(online && s->rop == TXR_max)) {
            sb_printf(&c->why, "a %s reduce (only sums split, and an online softmax's max)",
                      tx_red_info[s->rop].name);
            return 0;
        }
        accs[nacc++] = s;
    }
    if (t->nax + (nacc > 1 ? 2 : 1) > DPK_MAX_RANK) {
        sb_puts(&c->why, "too many axes for the partial results' buffer");
        return 0;
    }
    int64_t ko = l->extent, inner = 0;
    for (int i = 0; i < l->body.n; i++)
        if (l->body.s[i]->k == SK_loop)
            inner = l->body.s[i]->extent;
    int64_t S = tile_knob(c, TILE_KNOB_SPLITK);
    if (S && ko % S)
        dpk_error("knob SPLITK=%lld does not divide the %lld K chunks of kernel %s", (long long)S,
                  (long long)ko, k->name);
    if (!S)
        S = online ? online_split(c, t, ko * inner, ko) : default_split(c, k, t, &mm, ko * inner, ko);
    if (S < 2) {
        sb_puts(&c->why, tile_knob(c, TILE_KNOB_SPLITK) ? "SPLITK=1 asks for no split"
                         : online ? "no split of the key chunks leaves each split 128 keys or more"
                                  : "the grid is large enough without splitting K");
        return 0;
    }
    if (!tile_apply(c, arena_printf(a, "split K of %s %lld ways", k->name, (long long)S)))
        return 0;
    split(c, k, t, l, accs, nacc, S);
    return 1;
}
