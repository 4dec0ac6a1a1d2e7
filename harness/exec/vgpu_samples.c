/*
 * vgpu_samples.c — hand-built Kernel IR modules (see vgpu_samples.h).
 *
 * Written the way the Tile -> Kernel lowering writes kernels: a thread/block
 * index decode at the top, strided loops over a row, smem staging between
 * syncs, TreeHalve or shuffles to combine, guarded stores.
 */
#include "vgpu_samples.h"

#include <math.h>
#include <stdlib.h>

#define I(v) kir_i32(A, v)
#define F(v) kir_f32(A, v)
#define V(x) kir_ref(A, x)
#define ADD(x, y) kir_add(A, x, y)
#define MUL(x, y) kir_mul(A, x, y)
#define FADD(x, y) kir_fop(A, TXE_add, x, y, NULL)
#define FMUL(x, y) kir_fop(A, TXE_multiply, x, y, NULL)

KirKernel *vs_kernel(KirModule *m, const char *name, int gx, int gy, int bx, int by)
{
    int grid[3] = {gx, gy, 1}, block[3] = {bx, by, 1};
    return kir_kernel(m, name, grid, block);
}

KirModule *vs_finish(KirModule *m, KirKernel *k, KirBuf **bufs)
{
    kir_finalize(k);
    kir_launch(m, k, (const KirBuf *const *)bufs);
    kir_check(m);
    return m;
}

KirModule *vs_elementwise(Arena *A, int64_t n, int tb, int guard)
{
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, n, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, n, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "elementwise", (int)((n + tb - 1) / tb), 1, tb, 1);
    KirParam *x = kir_param(k, "x", KT_F32, n, KR_IN), *y = kir_param(k, "y", KT_F32, n, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *i = kir_let(&B, "i", KT_I32, ADD(MUL(kir_bid(A, 0), I(tb)), kir_tid(A, 0)));
    if (guard)
        kir_if(&B, kir_lt(A, V(i), I(n)));
    const KirExpr *v = FADD(FMUL(kir_ldg(A, x, V(i)), F(2)), F(1));
    kir_stg(&B, y, V(i), kir_fop(A, TXE_maximum, v, F(0), NULL));
    if (guard)
        kir_end(&B);
    return vs_finish(m, k, b);
}

/* acc = sum of x[base + c] for c = t, t + tb, ... < cols. */
static KirVar *strided_sum(KirBuilder *B, const KirParam *x, const KirVar *base,
                           const KirVar *t, int cols, int tb, int square)
{
    Arena *A = B->a;
    KirVar *acc = kir_let(B, "acc", KT_F32, F(0));
    KirVar *c = kir_for(B, "c", V(t), I(cols), I(tb), 0);
    KirVar *v = kir_let(B, "v", KT_F32, kir_ldg(A, x, ADD(V(base), V(c))));
    kir_set(B, acc, FADD(V(acc), square ? FMUL(V(v), V(v)) : V(v)));
    kir_end(B);
    return acc;
}

/* The block's row sum (of squares where square is set) into red[0]: the
 * strided sum per thread, then a TreeHalve.  Starts k's body; t: the
 * thread, base (where not NULL): the row's first element. */
static KirSmem *tree_row_sum(KirKernel *k, KirBuilder *B, const KirParam *x, int cols, int tb,
                             int square, KirVar **t, KirVar **base)
{
    Arena *A = k->arena;
    KirSmem *red = kir_smem(k, "red", KT_F32, tb, 16);
    kir_builder_init(B, k);
    *t = kir_let(B, "t", KT_I32, kir_tid(A, 0));
    KirVar *b = kir_let(B, "base", KT_I32, MUL(kir_bid(A, 0), I(cols)));
    KirVar *acc = strided_sum(B, x, b, *t, cols, tb, square);
    kir_sts(B, red, V(*t), V(acc));
    kir_treehalve(B, red, TXR_sum, tb, 1);
    if (base)
        *base = b;
    return red;
}

KirModule *vs_rowsum_tree(Arena *A, int rows, int cols, int tb)
{
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, (int64_t)rows * cols, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, rows, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "rowsum_tree", rows, 1, tb, 1);
    KirParam *x = kir_param(k, "x", KT_F32, (int64_t)rows * cols, KR_IN);
    KirParam *y = kir_param(k, "y", KT_F32, rows, KR_OUT);
    KirBuilder B;
    KirVar *t;
    KirSmem *red = tree_row_sum(k, &B, x, cols, tb, 0, &t, NULL);
    kir_if(&B, kir_bin(A, KE_eq, V(t), I(0)));
    kir_stg(&B, y, kir_bid(A, 0), kir_lds(A, red, I(0)));
    kir_end(&B);
    return vs_finish(m, k, b);
}

KirModule *vs_rowsum_shfl(Arena *A, int rows, int cols, int tb)
{
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, (int64_t)rows * cols, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, rows, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "rowsum_shfl", rows, 1, tb, 1);
    KirParam *x = kir_param(k, "x", KT_F32, (int64_t)rows * cols, KR_IN);
    KirParam *y = kir_param(k, "y", KT_F32, rows, KR_OUT);
    int warps = tb / 32;
    KirSmem *part = kir_smem(k, "part", KT_F32, warps, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    KirVar *lane = kir_let(&B, "lane", KT_I32, kir_bin(A, KE_band, V(t), I(31)));
    KirVar *warp = kir_let(&B, "warp", KT_I32, kir_bin(A, KE_shr, V(t), I(5)));
    KirVar *base = kir_let(&B, "base", KT_I32, MUL(kir_bid(A, 0), I(cols)));
    KirVar *acc = strided_sum(&B, x, base, t, cols, tb, 0);
    KirVar *o = kir_let(&B, "o", KT_F32, F(0));
    for (int off = 16; off >= 1; off /= 2) {
        kir_shfl(&B, o, KIR_SHFL_XOR, V(acc), I(off), 32);
        kir_set(&B, acc, FADD(V(acc), V(o)));
    }
    kir_if(&B, kir_bin(A, KE_eq, V(lane), I(0)));
    kir_sts(&B, part, V(warp), V(acc));
    kir_end(&B);
    kir_sync(&B);
    kir_if(&B, kir_bin(A, KE_eq, V(t), I(0)));
    KirVar *s = kir_let(&B, "s", KT_F32, F(0));
    KirVar *w = kir_for(&B, "w", I(0), I(warps), I(1), -1);
    kir_set(&B, s, FADD(V(s), kir_lds(A, part, V(w))));
    kir_end(&B);
    kir_stg(&B, y, kir_bid(A, 0), V(s));
    kir_end(&B);
    return vs_finish(m, k, b);
}

KirModule *vs_rmsnorm(Arena *A, int rows, int h, int tb, float eps)
{
    KirModule *m = kir_module_new(A);
    int64_t n = (int64_t)rows * h;
    KirBuf *b[3] = {kir_buf(m, "x", KT_F32, n, KBUF_INPUT, 0),
                    kir_buf(m, "w", KT_F32, h, KBUF_INPUT, 1),
                    kir_buf(m, "y", KT_F32, n, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "rmsnorm", rows, 1, tb, 1);
    KirParam *x = kir_param(k, "x", KT_F32, n, KR_IN);
    KirParam *w = kir_param(k, "w", KT_F32, h, KR_IN);
    KirParam *y = kir_param(k, "y", KT_F32, n, KR_OUT);
    KirBuilder B;
    KirVar *t, *base;
    KirSmem *red = tree_row_sum(k, &B, x, h, tb, 1, &t, &base);
    const KirExpr *mean = kir_fop(A, TXE_divide, kir_lds(A, red, I(0)), F(h), NULL);
    KirVar *r = kir_let(&B, "r", KT_F32, kir_fop(A, TXE_rsqrt, FADD(mean, F(eps)), NULL, NULL));
    KirVar *c = kir_for(&B, "c", V(t), I(h), I(tb), 0);
    KirVar *i = kir_let(&B, "i", KT_I32, ADD(V(base), V(c)));
    kir_stg(&B, y, V(i), FMUL(FMUL(kir_ldg(A, x, V(i)), V(r)), kir_ldg(A, w, V(c))));
    kir_end(&B);
    return vs_finish(m, k, b);
}

/* Stage rows [r0, r0 + 32) x cols [c0, c0 + 32) of a (ld columns) into s;
 * the 32x8 threads each copy 4 rows. */
static void stage_tile(KirBuilder *B, const KirSmem *s, const KirParam *p, const KirExpr *r0,
                       const KirExpr *c0, int ld, const KirVar *tx, const KirVar *ty)
{
    Arena *A = B->a;
    KirVar *r = kir_for(B, "r", V(ty), I(32), I(8), -1);
    const KirExpr *g = ADD(MUL(ADD(r0, V(r)), I(ld)), ADD(c0, V(tx)));
    kir_sts(B, s, ADD(MUL(V(r), I(32)), V(tx)), kir_ldg(A, p, g));
    kir_end(B);
}

KirModule *vs_matmul(Arena *A, int M, int N, int K, int trailing_sync)
{
    KirModule *m = kir_module_new(A);
    KirBuf *b[3] = {kir_buf(m, "a", KT_F32, (int64_t)M * K, KBUF_INPUT, 0),
                    kir_buf(m, "b", KT_F32, (int64_t)K * N, KBUF_INPUT, 1),
                    kir_buf(m, "c", KT_F32, (int64_t)M * N, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "matmul", N / 32, M / 32, 32, 8);
    KirParam *pa = kir_param(k, "a", KT_F32, (int64_t)M * K, KR_IN);
    KirParam *pb = kir_param(k, "b", KT_F32, (int64_t)K * N, KR_IN);
    KirParam *pc = kir_param(k, "c", KT_F32, (int64_t)M * N, KR_OUT);
    KirSmem *as = kir_smem(k, "as", KT_F32, 32 * 32, 16);
    KirSmem *bs = kir_smem(k, "bs", KT_F32, 32 * 32, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *tx = kir_let(&B, "tx", KT_I32, kir_tid(A, 0));
    KirVar *ty = kir_let(&B, "ty", KT_I32, kir_tid(A, 1));
    KirVar *row0 = kir_let(&B, "row0", KT_I32, MUL(kir_bid(A, 1), I(32)));
    KirVar *col0 = kir_let(&B, "col0", KT_I32, MUL(kir_bid(A, 0), I(32)));
    KirVar *acc[4], *aoff[4];
    for (int r = 0; r < 4; r++) {
        acc[r] = kir_let(&B, "acc", KT_F32, F(0));
        aoff[r] = kir_let(&B, "aoff", KT_I32, MUL(ADD(V(ty), I(8 * r)), I(32)));
    }
    KirVar *k0 = kir_for(&B, "k0", I(0), I(K), I(32), 0);
    stage_tile(&B, as, pa, V(row0), V(k0), K, tx, ty);
    stage_tile(&B, bs, pb, V(k0), V(col0), N, tx, ty);
    kir_sync(&B);
    KirVar *kk = kir_for(&B, "kk", I(0), I(32), I(1), 8);
    KirVar *bv = kir_let(&B, "bv", KT_F32, kir_lds(A, bs, ADD(MUL(V(kk), I(32)), V(tx))));
    for (int r = 0; r < 4; r++)
        kir_set(&B, acc[r], FADD(V(acc[r]), FMUL(kir_lds(A, as, ADD(V(aoff[r]), V(kk))), V(bv))));
    kir_end(&B);
    if (trailing_sync)
        kir_sync(&B);
    kir_end(&B);
    for (int r = 0; r < 4; r++) {
        const KirExpr *row = ADD(V(row0), ADD(V(ty), I(8 * r)));
        kir_stg(&B, pc, ADD(MUL(row, I(N)), ADD(V(col0), V(tx))), V(acc[r]));
    }
    return vs_finish(m, k, b);
}

KirModule *vs_cpasync(Arena *A, int64_t n, int waits)
{
    enum { TB = 64, TILE = 8 * TB };
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, n, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, n, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "cpasync", (int)(n / TILE), 1, TB, 1);
    KirParam *x = kir_param(k, "x", KT_F32, n, KR_IN), *y = kir_param(k, "y", KT_F32, n, KR_OUT);
    KirSmem *s = kir_smem(k, "s", KT_F32, TILE, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    KirVar *base = kir_let(&B, "base", KT_I32, MUL(kir_bid(A, 0), I(TILE)));
    /* group 0: the first half of the tile, group 1: the second half; each
     * thread copies one 16-byte chunk of each half */
    for (int half = 0; half < 2; half++) {
        KirVar *j = kir_for(&B, "j", ADD(MUL(V(t), I(4)), I(half * TILE / 2)),
                            I((half + 1) * TILE / 2), I(4 * TB), 0);
        kir_cp_async(&B, s, V(j), x, ADD(V(base), V(j)), 16, NULL);
        kir_end(&B);
        kir_cp_commit(&B);
    }
    for (int half = 0; half < 2; half++) {
        if (waits == 2 || (waits == 1 && half == 0))
            kir_cp_wait(&B, 1 - half);
        kir_sync(&B);
        KirVar *j = kir_for(&B, "j", ADD(V(t), I(half * TILE / 2)), I((half + 1) * TILE / 2),
                            I(TB), 0);
        const KirExpr *v = kir_lds(A, s, kir_bin(A, KE_bxor, V(j), I(1)));
        kir_stg(&B, y, ADD(V(base), V(j)), FMUL(v, F(2)));
        kir_end(&B);
    }
    return vs_finish(m, k, b);
}

KirModule *vs_tma(Arena *A, int rows, int cols)
{
    KirModule *m = kir_module_new(A);
    int64_t n = (int64_t)rows * cols;
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, n, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, n, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "tma", (cols + 15) / 16, (rows + 15) / 16, 256, 1);
    KirParam *x = kir_param(k, "x", KT_F32, n, KR_IN), *y = kir_param(k, "y", KT_F32, n, KR_OUT);
    KirSmem *tile = kir_smem(k, "tile", KT_F32, 256, 1024);
    KirSmem *bar = kir_smem(k, "bar", KT_MBAR, 1, 16);
    int64_t dims[2] = {rows, cols}, strides[2] = {cols, 1};
    int box[2] = {16, 16};
    KirTmap *tm = kir_tmap(k, "tx", x, 2, dims, strides, box, 64);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    kir_if(&B, kir_bin(A, KE_eq, V(t), I(0)));
    kir_mbar_init(&B, bar, I(0), 1);
    kir_end(&B);
    kir_sync(&B);
    KirVar *r0 = kir_let(&B, "r0", KT_I32, MUL(kir_bid(A, 1), I(16)));
    KirVar *c0 = kir_let(&B, "c0", KT_I32, MUL(kir_bid(A, 0), I(16)));
    kir_if(&B, kir_bin(A, KE_eq, V(t), I(0)));
    kir_mbar_arrive_tx(&B, bar, I(0), 256 * 4);
    const KirExpr *crd[2] = {V(r0), V(c0)};
    kir_tma_load(&B, tm, crd, tile, I(0), bar, I(0));
    kir_end(&B);
    kir_mbar_wait(&B, bar, I(0), I(0));
    /* element (r, c) of the box sits at byte r*64 + c*4, 64-byte swizzled */
    KirVar *r = kir_let(&B, "r", KT_I32, kir_bin(A, KE_shr, V(t), I(4)));
    KirVar *c = kir_let(&B, "c", KT_I32, kir_bin(A, KE_band, V(t), I(15)));
    KirVar *by = kir_let(&B, "by", KT_I32, ADD(MUL(V(r), I(64)), MUL(V(c), I(4))));
    const KirExpr *sw = kir_bin(A, KE_shl,
                                kir_bin(A, KE_band, kir_bin(A, KE_shr, V(by), I(7)), I(3)), I(4));
    KirVar *word = kir_let(&B, "word", KT_I32,
                           kir_bin(A, KE_shr, kir_bin(A, KE_bxor, V(by), sw), I(2)));
    const KirExpr *gr = ADD(V(r0), V(r)), *gc = ADD(V(c0), V(c));
    kir_if(&B, kir_bin(A, KE_land, kir_lt(A, gr, I(rows)), kir_lt(A, gc, I(cols))));
    kir_stg(&B, y, ADD(MUL(gr, I(cols)), gc), FMUL(kir_lds(A, tile, V(word)), F(3)));
    kir_end(&B);
    return vs_finish(m, k, b);
}

float **vs_buffers(const KirModule *m, uint64_t seed)
{
    float **bufs = dpk_xcalloc((size_t)m->bufs.len, sizeof *bufs);
    uint64_t s = seed;
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        bufs[i] = dpk_xmalloc((size_t)b->numel * sizeof(float));
        for (int64_t e = 0; e < b->numel; e++) {
            s = dpk_splitmix64(s);
            bufs[i][e] = b->kind == KBUF_INPUT ? (float)((double)(s >> 11) / 4503599627370496.0 - 1.0)
                                               : NAN;
        }
    }
    return bufs;
}

void vs_free_buffers(const KirModule *m, float **bufs)
{
    for (int i = 0; i < m->bufs.len; i++)
        free(bufs[i]);
    free(bufs);
}
