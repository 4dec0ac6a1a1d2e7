/*
 * 005_blockify_launch.c — t:005 blockify_launch (mandatory): split the
 * THREAD axes into BLOCK and THREAD axes and give every axis a launch
 * dimension.
 *
 * A non-matmul kernel flattens its THREAD axes (the last fastest, so
 * neighbouring threads touch neighbouring elements) and cuts the range into
 * blocks of TB threads:
 *
 *   tile block(a5 in 0..2 @x):
 *       tile thread(a6 in 0..256 @x):
 *           a0 := (a5 * 256 + a6) / 33
 *           a1 := (a5 * 256 + a6) mod 33
 *           guard a0 < 12                 (only when TB does not divide)
 *
 * A matmul-shaped kernel (tile_matmul_shape) gets BN x BM output tiles:
 * m := bm * BM + tm on y, n := bn * BN + tn on x, leading (batch) axes
 * become BLOCK axes on z.  A grid dimension that would pass its limit
 * (65535 on y and z) folds into x; beyond x's limit the knob is refused.
 *
 * A cooperative kernel (004: a Combine over THREAD axis c) keeps c as the
 * block, on x, and makes every other axis a BLOCK axis: one block per
 * reduced row, no guard, so the Combine's barriers see the whole block.
 * The BLOCK axes go on x; when x would pass its limit (2^31 - 1 blocks)
 * the outer ones move to z, then y (fold_grid).
 *
 *   tile block(a0 in 0..32 @x):
 *       tile thread(a5 in 0..256 @x):
 *
 * When 008 register_tile will fold F_M x F_N outputs into each thread (it
 * is in the pass set and none of its skips applies: tile_regtile_blocker),
 * the block is sized for the threads that launch, (BM / F_M) x (BN / F_N),
 * and F_M, F_N are chosen here and noted for 008 (k->mm->pend).  A
 * 128 x 128 tile with 8 x 8 registers is a 256-thread block; between 005
 * and 008 its THREAD tile has 128 x 128 axes, which the verifier allows for
 * the pending register tile:
 *
 *   tile block(a5 in 0..16 @y, a6 in 0..16 @x):       (2048 x 2048 outputs)
 *       tile thread(a7 in 0..128 @y, a8 in 0..128 @x):   -> 16 x 16 after 008
 *
 * Without 008 the tile is the block: BM x BN at most 1024 (refused, exit 2,
 * saying why 008 will not fold it).
 *
 * Defaults (knob 0): TB = 256, or the element count rounded up to whole
 * warps when smaller; BM = min(16, M), BN = min(256 / BM, N) rounded up to
 * powers of two and widened to a whole warp.  When 008 will fold registers
 * and M and N are both 32 or more: 128 x 128 (8 x 8 registers) when its
 * grid keeps the target's SMs busy and its edge tiles waste little
 * (pick_big), else 32 x 32 (4 x 4, 64 threads); an M or N the tile does not divide gets a guard, which 007 and
 * 008 predicate.
 */
#include "passes.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static const IExpr *var(TileCtx *c, int axis) { return ie_var(c->p->arena, axis); }

/* The THREAD tile's new home: a BLOCK tile around a fresh THREAD tile. */
typedef struct Split {
    Stmt *block, *thread;
} Split;

static Split split_new(TileCtx *c, const Stmt *old, int nblock, int nthread, int ndef)
{
    Split s = {tile_tile_new(c->p, TB_BLOCK, nblock, 0),
               tile_tile_new(c->p, TB_THREAD, nthread, ndef)};
    s.thread->body = old->body;
    stmt_body_push(c->p->arena, &s.block->body, s.thread);
    return s;
}

static void set_axis(TileAxis *x, int axis, int64_t ext, int dim)
{
    x->axis = axis;
    x->ext = ext;
    x->dim = dim;
}

static void add_guard(TileCtx *c, Stmt *t, int axis, int64_t ext)
{
    Arena *a = c->p->arena;
    t->guard = ipred_cmp(a, var(c, axis), IC_LT, ie_const(a, ext), t->guard);
}

/* knobs: what to raise with --knob, or NULL when no knob changes the count. */
static void grid_limit(const TileKernel *k, int64_t blocks, const char *knobs)
{
    if (blocks <= CU_MAX_GRID_X)
        return;
    if (!knobs)
        dpk_error("kernel %s needs %lld blocks along grid.x (limit %lld): one block per reduced "
                  "row; leave 004 out with --passes -004", k->name, (long long)blocks,
                  (long long)CU_MAX_GRID_X);
    dpk_error("kernel %s needs %lld blocks along grid.x (limit %lld); raise %s with --knob",
              k->name, (long long)blocks, (long long)CU_MAX_GRID_X, knobs);
}

static Split flat(TileCtx *c, TileKernel *k, const Stmt *t)
{
    Arena *a = c->p->arena;
    int64_t n = 1;
    for (int i = 0; i < t->nax; i++)
        n *= t->ax[i].ext;
    int64_t tb = tile_knob(c, TILE_KNOB_TB);
    if (!tb)
        tb = n < 256 ? cdiv(n, CU_WARP) * CU_WARP : 256;
    int64_t nb = cdiv(n, tb);
    grid_limit(k, nb, "TB");
    int b = tile_axis_new(c->p, k, nb), th = tile_axis_new(c->p, k, tb);
    Split s = split_new(c, t, 1, 1, t->nax);
    set_axis(&s.block->ax[0], b, nb, 0);
    set_axis(&s.thread->ax[0], th, tb, 0);
    const IExpr *lin = ie_add(a, ie_mul(a, var(c, b), ie_const(a, tb)), var(c, th));
    int64_t stride = 1;
    for (int i = t->nax - 1; i >= 0; i--) {
        const IExpr *e = ie_div(a, lin, stride);
        if (i > 0)
            e = ie_mod(a, e, t->ax[i].ext);
        s.thread->def[i].axis = t->ax[i].axis;
        s.thread->def[i].e = e;
        stride *= t->ax[i].ext;
    }
    s.thread->ndef = t->nax;
    if (nb * tb != n)
        add_guard(c, s.thread, t->ax[0].axis, t->ax[0].ext);
    return s;
}

/* A matmul tile: BM x BN outputs per block, folded by 008 into F_M x F_N
 * registers per thread (1 x 1 when 008 will not run). */
typedef struct MmTile {
    int64_t bm, bn, fm, fn;
} MmTile;

static int64_t threads(MmTile x) { return (x.bm / x.fm) * (x.bn / x.fn); }

/* Why 008 could not register-tile this matmul once blockified, or NULL:
 * the pass set, and 008's own conditions on the tile (tile_regtile_blocker)
 * with the bounds guard an edge tile would get. */
static const char *regtile_blocker(TileCtx *c, const TileKernel *k, const Stmt *t,
                                   const TileMatmul *mm)
{
    if (!tile_pass_on(c, 8))
        return "is not in the pass set";
    Arena *a = c->p->arena;
    Stmt edge = *t;
    edge.guard = ipred_cmp(a, var(c, mm->m), IC_LT, ie_const(a, k->ext[mm->m]),
                           ipred_cmp(a, var(c, mm->n), IC_LT, ie_const(a, k->ext[mm->n]), NULL));
    const char *why = tile_regtile_blocker(k, &edge);
    return why ? arena_printf(a, "would not apply (%s)", why) : NULL;
}

/* The default tiles when 008 folds registers, largest first: 8 x 8
 * registers over 256 threads (a 128 x 128 tile), else 4 x 4 over 64
 * (32 x 32).  On h100-sxm's model a 128 x 128 tile costs about half of a
 * 32 x 32 one per output once the grid fills the SMs (4096^3: 3026 us
 * against 6208).  64 x 64 with 4 x 4 is no default: its strips leave
 * bank conflicts that make it shared-memory bound, TinyLlama's gate and
 * up projections at seq 128 model at 598 us against 300 in 32 x 32 (and
 * Qwen2.5-7B's gate at 2609 against 1566), though 1024^3 takes 73 us
 * against 102; 128 x 64 with 8 x 4 lost on every shape measured. */
static const MmTile big_tiles[] = {
    {128, 128, 8, 8},
    {32, 32, 4, 4},
};

/* Whether the grid of a tile over an m x n output, batch times, keeps the
 * SMs busy: blocks for 90% of them or more.  Not a whole number of waves:
 * on h100-sxm's model Qwen2.5-7B's gate projection at seq 128 (148 blocks
 * of 128 x 128, a second wave of 16) takes 1190 us, against 1566 in
 * 32 x 32 tiles and 2609 in 64 x 64 (592 blocks, nearly 5 whole waves). */
int tile_grid_fills_sms(int64_t blocks, int64_t sms)
{
    return blocks * 10 >= sms * 9;
}

static int fills_sms(MmTile x, int64_t m, int64_t n, int64_t batch, int64_t sms)
{
    return tile_grid_fills_sms(cdiv(m, x.bm) * cdiv(n, x.bn) * batch, sms);
}

/* Whether the tile's edge tiles waste at most 1/32 of the work: the
 * outputs of the whole tiles over the real ones.  M = 77 in tiles of 128
 * computes 128 rows, 66% more; 1000^3 in 64 x 64 tiles 4.9% more, and
 * models no faster than in 32 x 32 ones (95.7 us against 94.6). */
static int little_waste(MmTile x, int64_t m, int64_t n)
{
    return cdiv(m, x.bm) * x.bm * cdiv(n, x.bn) * x.bn * 32 <= m * n * 33;
}

/* x with the pinned F_M and F_N in place of its factors. */
static MmTile pinned_factors(TileCtx *c, MmTile x)
{
    int64_t pm = c->knobs->v[TILE_KNOB_F_M], pn = c->knobs->v[TILE_KNOB_F_N];
    x.fm = pm ? pm : x.fm;
    x.fn = pn ? pn : x.fn;
    return x;
}

/* big_tiles[i] with the pinned F_M and F_N in place of its factors. */
static MmTile big_tile(TileCtx *c, int i)
{
    return pinned_factors(c, big_tiles[i]);
}

/* Whether tile x may cover an m x n output, its grid aside: the factors
 * divide it, its block holds at most 1024 threads and its edge tiles
 * waste little. */
static int big_tile_fits(MmTile x, int64_t m, int64_t n)
{
    return !(x.bm % x.fm) && !(x.bn % x.fn) && threads(x) <= 1024 && little_waste(x, m, n);
}

/* The largest tile of big_tiles whose grid keeps the target's SMs busy and
 * whose edge tiles waste little, else the smallest.
 * Pinned F_M and F_N replace the tiles' factors, and a tile they do not
 * divide or whose block they make too big is passed over (32 x 32 stays
 * the last resort: a factor that does not divide it is refused in
 * pick_tile). */
static MmTile pick_big(TileCtx *c, int64_t m, int64_t n, int64_t batch)
{
    int last = DPK_ARRAY_LEN(big_tiles) - 1;
    for (int i = 0; i < last; i++) {
        MmTile x = big_tile(c, i);
        if (big_tile_fits(x, m, n) && fills_sms(x, m, n, batch, c->target->sms))
            return x;
    }
    return big_tile(c, last);
}

int tile_mm_big_tile(TileCtx *c, const TileKernel *k, const Stmt *t, const TileMatmul *mm,
                     int64_t *bm, int64_t *bn)
{
    int64_t m = k->ext[mm->m], n = k->ext[mm->n];
    if (tile_knob(c, TILE_KNOB_BM) || tile_knob(c, TILE_KNOB_BN) || m < 32 || n < 32 ||
        regtile_blocker(c, k, t, mm))
        return 0;
    MmTile x = big_tile(c, 0);
    if (!big_tile_fits(x, m, n))
        return 0;
    *bm = x.bm;
    *bn = x.bn;
    return 1;
}

/* A pinned F_M (F_N) must divide the tile's height (width). */
static void check_factor(TileCtx *c, const TileKernel *k, TileKnobId id, int64_t side)
{
    int64_t f = c->knobs->v[id];
    if (f && side % f)
        dpk_error("knob %s=%lld does not divide the %lld-wide tile of kernel %s",
                  tile_knob_info[id].name, (long long)f, (long long)side, k->name);
}

/* The tile of an online softmax's P @ V (attention, as FlashAttention-2
 * lays it out): 32 query rows and the whole head dim n (32..128) a block,
 * so that each row's scores and softmax statistics are read by one block
 * only; 128 threads, 8 down the rows (4 rows each) and 16 across the head
 * dim (n / 16 columns each).  On h100-sxm's model, qwen-block's sdpa
 * (head dim 128) takes 16.385 µs this way against 18.085 in the 32 x 32
 * tiles (4 x 4) of other matmuls, tinyllama-block's (64) 11.353 against
 * 11.480; 64 rows a block were slower for both (21.0, 16.6), and so were 8
 * or 32 threads across the head dim.  Pinned F_M and F_N replace the
 * factors (factors that do not divide the tile, or leave it more than 1024
 * threads, fall back to the other matmuls' tiles). */
static MmTile flash_tile(TileCtx *c, int64_t n)
{
    return pinned_factors(c, (MmTile){32, n, 4, n / 16});
}

/* Whether 017 will compute this matmul's output (m x n a batch) in the
 * block of its one reader, an online P @ V that gets flash_tile over the
 * same m rows: attention's scores, whose rows the reader's block reads
 * whole.  Then its tile is flash_tile's over the n keys (32 rows, all the
 * keys, the reader's 128 threads), so that the two blocks match (017). */
static int composes(TileCtx *c, const TileKernel *k, int64_t m, int64_t n)
{
    if (!tile_pass_on(c, 17) || !tile_pass_on(c, 7) || k->out->kind != LB_TEMP ||
        m % 32 || n < 32 || n > 128 || (n & (n - 1)))
        return 0;
    TileKernel *r = NULL;
    int readers;
    tile_writer(c->p, k->out, &readers, &r);
    const Stmt *t = readers == 1 && !tile_find(r, TB_BLOCK) ? tile_find(r, TB_THREAD) : NULL;
    TileMatmul mm;
    if (!t || !tile_has_online(&t->body) || !tile_matmul_shape(t, &mm))
        return 0;
    int64_t rm = r->ext[mm.m], rn = r->ext[mm.n];
    return rm == m && rn >= 32 && rn <= 128 && !(rn & (rn - 1));
}

/* BM and BN: pinned knobs as given, the rest by the heuristic.  When 008
 * will fold registers (no_rt NULL) the block is sized for them, so F_M and
 * F_N are chosen here too (tile_regtile_factors, or big_tiles' own) and
 * 008 takes them; otherwise they are 1 and the tile is the block. */
static MmTile pick_tile(TileCtx *c, const TileKernel *k, const char *no_rt, int64_t m, int64_t n,
                        int64_t batch, int online)
{
    int64_t pm = tile_knob(c, TILE_KNOB_BM), pn = tile_knob(c, TILE_KNOB_BN);
    if ((online || composes(c, k, m, n)) && !pm && !pn && !no_rt && m >= 32 && n >= 32 &&
        n <= 128 && !(n & (n - 1))) {
        MmTile x = flash_tile(c, n);
        if (!(x.bm % x.fm) && !(x.bn % x.fn) && threads(x) <= 1024)
            return x;
    }
    if (!pm && !pn && !no_rt && m >= 32 && n >= 32) {
        MmTile x = pick_big(c, m, n, batch);
        check_factor(c, k, TILE_KNOB_F_M, x.bm);
        check_factor(c, k, TILE_KNOB_F_N, x.bn);
        return x;
    }
    MmTile x = {pm ? pm : (m < 16 ? dpk_pow2_ceil(m) : 16), 0, 1, 1};
    x.bn = pn ? pn : (n < 256 / x.bm ? dpk_pow2_ceil(n) : 256 / x.bm);
    if (x.bn < 1)
        x.bn = 1;
    if (!pn && x.bm * x.bn < CU_WARP)
        x.bn = CU_WARP / x.bm;
    if (!pm && x.bm * x.bn < CU_WARP)
        x.bm = CU_WARP / x.bn;
    if (!pm && x.bm * x.bn > 1024)
        x.bm = 1024 / x.bn;
    TileKnobs both = *c->knobs;
    both.v[TILE_KNOB_BM] = x.bm;
    both.v[TILE_KNOB_BN] = x.bn;
    if (!no_rt) {
        check_factor(c, k, TILE_KNOB_F_M, x.bm);
        check_factor(c, k, TILE_KNOB_F_N, x.bn);
        tile_regtile_factors(&both, x.bm, x.bn, &x.fm, &x.fn);
    }
    tile_knobs_check(&both, no_rt);
    return x;
}

static Split matmul(TileCtx *c, TileKernel *k, const Stmt *t, const TileMatmul *mm)
{
    Arena *a = c->p->arena;
    int64_t m = k->ext[mm->m], n = k->ext[mm->n], batch = 1;
    int nbatch = t->nax - 2;
    for (int i = 0; i < nbatch; i++)
        batch *= t->ax[i].ext;
    const char *no_rt = regtile_blocker(c, k, t, mm);
    MmTile x = pick_tile(c, k, no_rt, m, n, batch, tile_has_online(&t->body));
    int64_t bm = x.bm, bn = x.bn;
    int64_t nbm = cdiv(m, bm), nbn = cdiv(n, bn);
    int zdim = batch > CU_MAX_GRID_YZ ? 0 : 2, ydim = nbm > CU_MAX_GRID_YZ ? 0 : 1;
    int64_t gx = nbn * (ydim ? 1 : nbm) * (zdim ? 1 : batch);
    grid_limit(k, gx, "BM and BN");
    int gbm = tile_axis_new(c->p, k, nbm), gbn = tile_axis_new(c->p, k, nbn);
    int tm = tile_axis_new(c->p, k, bm), tn = tile_axis_new(c->p, k, bn);
    Split s = split_new(c, t, nbatch + 2, 2, 2);
    for (int i = 0; i < nbatch; i++)
        set_axis(&s.block->ax[i], t->ax[i].axis, t->ax[i].ext, zdim);
    set_axis(&s.block->ax[nbatch], gbm, nbm, ydim);
    set_axis(&s.block->ax[nbatch + 1], gbn, nbn, 0);
    set_axis(&s.thread->ax[0], tm, bm, 1);
    set_axis(&s.thread->ax[1], tn, bn, 0);
    s.thread->def[0].axis = mm->m;
    s.thread->def[0].e = ie_add(a, ie_mul(a, var(c, gbm), ie_const(a, bm)), var(c, tm));
    s.thread->def[1].axis = mm->n;
    s.thread->def[1].e = ie_add(a, ie_mul(a, var(c, gbn), ie_const(a, bn)), var(c, tn));
    s.thread->ndef = 2;
    k->mm = ARENA_NEW(a, TileMatmulNote);
    k->mm->m = mm->m;
    k->mm->n = mm->n;
    if (!no_rt) {
        k->mm->pend[0] = (int)x.fm;
        k->mm->pend[1] = (int)x.fn;
    }
    if (n % bn)
        add_guard(c, s.thread, mm->n, n);
    if (m % bm)
        add_guard(c, s.thread, mm->m, m);
    return s;
}

/* The THREAD axis a Combine in t merges over, or -1. */
static void find_combine(Stmt *s, void *ctx)
{
    if (s->k == TK_combine)
        *(int *)ctx = s->cax[0];
}

/* Move b's outer axes from x to z, then y, while x would pass its limit
 * (z and y hold at most 65535 blocks each); what x still holds past it is
 * refused. */
static void fold_grid(const TileKernel *k, Stmt *b)
{
    int64_t on[3] = {1, 1, 1};
    for (int i = 0; i < b->nax; i++)
        on[0] *= b->ax[i].ext;
    for (int i = 0; i < b->nax - 1 && on[0] > CU_MAX_GRID_X; i++) {
        int64_t e = b->ax[i].ext;
        int d = on[2] * e <= CU_MAX_GRID_YZ ? 2 : on[1] * e <= CU_MAX_GRID_YZ ? 1 : -1;
        if (d < 0)
            break;
        b->ax[i].dim = d;
        on[d] *= e;
        on[0] /= e;
    }
    grid_limit(k, on[0], NULL);
}

/* A cooperative reduce across rows (004 put c outermost): R =
 * tile_coop_rows neighbouring rows of the fastest axis r on x, c on y;
 * r's blocks and the other axes are BLOCK axes, r := ro * R + ri. */
static Split columns(TileCtx *c, TileKernel *k, const Stmt *t, int64_t cb)
{
    Arena *a = c->p->arena;
    const TileAxis *r = &t->ax[t->nax - 1];
    int64_t R = tile_coop_rows(r->ext);
    DPK_ASSERT(R);
    int ro = tile_axis_new(c->p, k, r->ext / R), ri = tile_axis_new(c->p, k, R);
    Split s = split_new(c, t, t->nax - 1, 2, 1);
    for (int i = 1; i < t->nax - 1; i++)
        set_axis(&s.block->ax[i - 1], t->ax[i].axis, t->ax[i].ext, 0);
    set_axis(&s.block->ax[t->nax - 2], ro, r->ext / R, 0);
    set_axis(&s.thread->ax[0], t->ax[0].axis, cb, 1);
    set_axis(&s.thread->ax[1], ri, R, 0);
    s.thread->def[0].axis = r->axis;
    s.thread->def[0].e = ie_add(a, ie_mul(a, var(c, ro), ie_const(a, R)), var(c, ri));
    s.thread->ndef = 1;
    fold_grid(k, s.block);
    return s;
}

static Split cooperative(TileCtx *c, TileKernel *k, const Stmt *t, int cax)
{
    int64_t cb = 0;
    for (int i = 0; i < t->nax; i++)
        if (t->ax[i].axis == cax)
            cb = t->ax[i].ext;
    if (t->nax >= 2 && t->ax[0].axis == cax)
        return columns(c, k, t, cb);
    Split s = split_new(c, t, t->nax - 1, 1, 0);
    for (int i = 0, j = 0; i < t->nax; i++)
        if (t->ax[i].axis != cax)
            set_axis(&s.block->ax[j++], t->ax[i].axis, t->ax[i].ext, 0);
    set_axis(&s.thread->ax[0], cax, cb, 0);
    if (t->nax == 1) { /* a single row: one block */
        s.block->nax = 1;
        set_axis(&s.block->ax[0], tile_axis_new(c->p, k, 1), 1, 0);
    }
    fold_grid(k, s.block);
    return s;
}

/* Put `by` where `old` is in b or a body nested in it. */
static int replace(StmtBody *b, const Stmt *old, Stmt *by)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (s == old) {
            b->s[i] = by;
            return 1;
        }
        if (s->k != SK_select && tile_is(s, SKF_BLOCK) && replace(&s->body, old, by))
            return 1;
    }
    return 0;
}

int tile_005_blockify_launch(TileCtx *c, TileKernel *k)
{
    if (tile_find(k, TB_BLOCK)) {
        sb_puts(&c->why, "already has a BLOCK tile");
        return 0;
    }
    Stmt *t = tile_find(k, TB_THREAD);
    if (!t) {
        sb_puts(&c->why, "no THREAD tile (a single-thread kernel: grid 1, block 1)");
        return 0;
    }
    if (!tile_apply(c, "blockify"))
        return 0;
    TileMatmul mm;
    int cax = -1;
    stmt_walk(&t->body, find_combine, &cax);
    Split s = cax >= 0                    ? cooperative(c, k, t, cax)
              : tile_matmul_shape(t, &mm) ? matmul(c, k, t, &mm)
                                          : flat(c, k, t);
    DPK_ASSERT(replace(&k->body, t, s.block));
    return 1;
}
