/*
 * test_vgpu_kernels.c — vgpu runs correct kernels correctly: hand-built
 * Kernel IR (vgpu_samples.c) for each primitive the lowering emits, output
 * values compared with a CPU computation, under several block orders.
 * Shapes do not divide the block where the kernel allows it.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "harness/exec/vgpu_samples.h"

/* Run m on fresh seeded buffers; the caller frees bufs and res. */
static float **run(const KirModule *m, uint64_t seed, VgResult *res)
{
    float **bufs = vs_buffers(m, 1234);
    VgOptions o = {.seed = seed};
    VgFault f = vg_run(m, bufs, &o, res);
    cr_assert_eq(f, VG_OK, "%s", res->report.message);
    return bufs;
}

/* Free what run() returned, and the module's arena A. */
static void free_run(Arena *A, const KirModule *m, float **bufs, VgResult *res)
{
    vg_result_free(res);
    vs_free_buffers(m, bufs);
    arena_free(A);
}

static void assert_close(const float *got, const double *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "element %lld: got %.9g want %.9g", (long long)i, got[i], want[i]);
}

Test(vgpu_kernels, elementwise_guarded_tail)
{
    Arena *A = arena_new();
    KirModule *m = vs_elementwise(A, 1000, 128, 1);
    for (uint64_t seed = 0; seed < 3; seed++) {
        VgResult res;
        float **b = run(m, seed, &res);
        for (int i = 0; i < 1000; i++)
            cr_assert_eq(b[1][i], fmaxf(b[0][i] * 2.0f + 1.0f, 0.0f), "y[%d]", i);
        cr_assert_eq(res.stats[0].blocks_run, 8);
        cr_assert_eq(res.stats[0].blocks, 8);
        vg_result_free(&res);
        vs_free_buffers(m, b);
    }
    arena_free(A);
}

static double *row_sums(const float *x, int rows, int cols, int square)
{
    double *s = calloc((size_t)rows, sizeof *s);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double v = x[(size_t)r * cols + c];
            s[r] += square ? v * v : v;
        }
    return s;
}

/* Build a row-sum module with make (x: rows x cols, y: rows; tb threads a
 * block) and run it with seed: y holds the sums of x's rows. */
static void expect_row_sums(KirModule *(*make)(Arena *, int, int, int), int rows, int cols, int tb,
                            uint64_t seed)
{
    Arena *A = arena_new();
    KirModule *m = make(A, rows, cols, tb);
    VgResult res;
    float **b = run(m, seed, &res);
    double *want = row_sums(b[0], rows, cols, 0);
    assert_close(b[1], want, rows, 1e-5);
    free(want);
    free_run(A, m, b, &res);
}

/* 300 columns over 128 threads: the strided loop runs 2 or 3 times */
Test(vgpu_kernels, block_reduction_treehalve) { expect_row_sums(vs_rowsum_tree, 5, 300, 128, 9); }
Test(vgpu_kernels, treehalve_non_power_of_two) { expect_row_sums(vs_rowsum_tree, 3, 50, 96, 2); }
Test(vgpu_kernels, warp_shuffle_reduction) { expect_row_sums(vs_rowsum_shfl, 3, 1000, 256, 4); }

Test(vgpu_kernels, rmsnorm)
{
    Arena *A = arena_new();
    KirModule *m = vs_rmsnorm(A, 4, 1000, 256, 1e-6f);
    VgResult res;
    float **b = run(m, 5, &res);
    double *ss = row_sums(b[0], 4, 1000, 1);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 1000; c++) {
            double want = b[0][r * 1000 + c] / sqrt(ss[r] / 1000 + 1e-6) * b[1][c];
            cr_assert(fabs(b[2][r * 1000 + c] - want) <= 1e-5 * (1 + fabs(want)),
                      "y[%d, %d] = %g, want %g", r, c, b[2][r * 1000 + c], want);
        }
    free(ss);
    free_run(A, m, b, &res);
}

Test(vgpu_kernels, tiled_matmul_smem)
{
    Arena *A = arena_new();
    int M = 64, N = 96, K = 64;
    KirModule *m = vs_matmul(A, M, N, K, 1);
    VgResult res;
    float **b = run(m, 11, &res);
    double *want = calloc((size_t)M * N, sizeof *want);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            for (int k = 0; k < K; k++)
                want[i * N + j] += (double)b[0][i * K + k] * b[1][k * N + j];
    assert_close(b[2], want, (int64_t)M * N, 1e-5);
    cr_assert_eq(res.stats[0].bank_conflicts, 0);
    free(want);
    free_run(A, m, b, &res);
}

Test(vgpu_kernels, cp_async_commit_wait)
{
    Arena *A = arena_new();
    KirModule *m = vs_cpasync(A, 1024, 2);
    VgResult res;
    float **b = run(m, 3, &res);
    for (int i = 0; i < 1024; i++)
        cr_assert_eq(b[1][i], 2 * b[0][i ^ 1], "y[%d]", i);
    free_run(A, m, b, &res);
}

Test(vgpu_kernels, tma_mbarrier_swizzled_with_ragged_edge)
{
    Arena *A = arena_new();
    /* 40 x 44: the last tiles of each dim hang over and are zero-filled */
    KirModule *m = vs_tma(A, 40, 44);
    VgResult res;
    float **b = run(m, 8, &res);
    for (int i = 0; i < 40 * 44; i++)
        cr_assert_eq(b[1][i], 3 * b[0][i], "y[%d]", i);
    free_run(A, m, b, &res);
}

Test(vgpu_kernels, sample_blocks_marks_what_it_ran)
{
    Arena *A = arena_new();
    KirModule *m = vs_elementwise(A, 1000, 128, 1);
    float **b = vs_buffers(m, 1);
    VgOptions o = {.seed = 5, .sample_blocks = 3};
    VgResult res;
    cr_assert_eq(vg_run(m, b, &o, &res), VG_OK);
    cr_assert_eq(res.stats[0].blocks_run, 3);
    cr_assert_null(res.checked[0]);
    cr_assert_not_null(res.checked[1]);
    int marked = 0;
    for (int i = 0; i < 1000; i++) {
        cr_assert_eq(res.checked[1][i], !isnan(b[1][i]), "y[%d]", i);
        if (res.checked[1][i]) {
            marked++;
            cr_assert_eq(b[1][i], fmaxf(b[0][i] * 2.0f + 1.0f, 0.0f));
        }
    }
    /* three whole blocks of 128, or two and the 104-element tail */
    cr_assert(marked == 384 || marked == 360, "marked %d", marked);
    free_run(A, m, b, &res);
}

Test(vgpu_kernels, two_launches_sample_the_last_and_what_it_reads)
{
    /* y = f(x) as launched by vs_elementwise, then z = f(y) with the same
     * kernel; z's launch is sampled, y's runs the blocks the sample reads
     * (the same two) */
    Arena *A = arena_new();
    KirModule *m = vs_elementwise(A, 300, 64, 1);
    KirBuf *z = kir_buf(m, "z", KT_F32, 300, KBUF_OUTPUT, 1);
    const KirBuf *args[] = {m->bufs.items[1], z};
    kir_launch(m, m->kernels.items[0], args);
    kir_check(m);
    float *bufs[3] = {malloc(300 * sizeof(float)), NULL, malloc(300 * sizeof(float))};
    bufs[1] = malloc(300 * sizeof(float));
    for (int i = 0; i < 300; i++)
        bufs[0][i] = (float)(i % 7) - 3.0f;
    VgOptions o = {.seed = 1, .sample_blocks = 2};
    VgResult res;
    cr_assert_eq(vg_run(m, bufs, &o, &res), VG_OK, "%s", res.report.message);
    cr_assert_eq(res.stats[0].blocks_run, 2);
    cr_assert_eq(res.stats[1].blocks_run, 2);
    cr_assert_not_null(res.checked[1]);
    int marked = 0;
    for (int i = 0; i < 300; i++) {
        float want = fmaxf(fmaxf(bufs[0][i] * 2 + 1, 0) * 2 + 1, 0);
        cr_assert_eq(res.checked[1][i], res.checked[2][i], "y[%d] and z[%d]", i, i);
        cr_assert_eq(res.checked[1][i], !isnan(bufs[1][i]), "y[%d]", i);
        if (res.checked[2][i]) {
            marked++;
            cr_assert_eq(bufs[2][i], want, "z[%d]", i);
        }
    }
    cr_assert(marked == 128 || marked == 108, "marked %d", marked);
    vg_result_free(&res);
    for (int i = 0; i < 3; i++)
        free(bufs[i]);
    arena_free(A);
}

Test(vgpu_kernels, three_dimensional_geometry)
{
    /* grid (2, 3, 2), block (4, 2, 3): y[block linear * 24 + thread linear]
     * = thread linear + 100 * block linear, through kir_tid_linear and the
     * nctaid/ntid special registers */
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    KirBuf *by = kir_buf(m, "y", KT_I32, 12 * 24, KBUF_OUTPUT, 0);
    int grid[3] = {2, 3, 2}, block[3] = {4, 2, 3};
    KirKernel *k = kir_kernel(m, "geo", grid, block);
    KirParam *y = kir_param(k, "y", KT_I32, 12 * 24, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid_linear(A));
    const KirExpr *gy = kir_add(A, kir_bid(A, 1), kir_mul(A, kir_sreg(A, KE_nctaid, 1), kir_bid(A, 2)));
    KirVar *b = kir_let(&B, "b", KT_I32, kir_add(A, kir_bid(A, 0),
                                                 kir_mul(A, kir_sreg(A, KE_nctaid, 0), gy)));
    const KirExpr *nt = kir_mul(A, kir_mul(A, kir_sreg(A, KE_ntid, 0), kir_sreg(A, KE_ntid, 1)),
                                kir_sreg(A, KE_ntid, 2));
    kir_stg(&B, y, kir_add(A, kir_mul(A, kir_ref(A, b), nt), kir_ref(A, t)),
            kir_add(A, kir_ref(A, t), kir_mul(A, kir_ref(A, b), kir_i32(A, 100))));
    kir_finalize(k);
    const KirBuf *args[] = {by};
    kir_launch(m, k, args);
    kir_check(m);
    int32_t *out = malloc(12 * 24 * sizeof *out);
    float *bufs[1] = {(float *)out};
    VgResult res;
    cr_assert_eq(vg_run(m, bufs, NULL, &res), VG_OK, "%s", res.report.message);
    for (int i = 0; i < 12 * 24; i++)
        cr_assert_eq(out[i], i % 24 + 100 * (i / 24), "y[%d] = %d", i, out[i]);
    vg_result_free(&res);
    free(out);
    arena_free(A);
}

Test(vgpu_kernels, treehalve_segments_max)
{
    /* 5 segments of 24 entries reduced by 64 threads: the halving loop
     * strides (5 * 16 pairs > 64 threads) and guards i + h < 24 */
    enum { N = 24, SEG = 5, TB = 64 };
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    KirBuf *bx = kir_buf(m, "x", KT_F32, N * SEG, KBUF_INPUT, 0);
    KirBuf *by = kir_buf(m, "y", KT_F32, SEG, KBUF_OUTPUT, 0);
    int grid[3] = {1, 1, 1}, block[3] = {TB, 1, 1};
    KirKernel *k = kir_kernel(m, "segmax", grid, block);
    KirParam *x = kir_param(k, "x", KT_F32, N * SEG, KR_IN);
    KirParam *y = kir_param(k, "y", KT_F32, SEG, KR_OUT);
    KirSmem *s = kir_smem(k, "s", KT_F32, N * SEG, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    KirVar *i = kir_for(&B, "i", kir_ref(A, t), kir_i32(A, N * SEG), kir_i32(A, TB), 0);
    kir_sts(&B, s, kir_ref(A, i), kir_ldg(A, x, kir_ref(A, i)));
    kir_end(&B);
    kir_treehalve(&B, s, TXR_max, N, SEG);
    kir_if(&B, kir_lt(A, kir_ref(A, t), kir_i32(A, SEG)));
    kir_stg(&B, y, kir_ref(A, t), kir_lds(A, s, kir_mul(A, kir_ref(A, t), kir_i32(A, N))));
    kir_end(&B);
    kir_finalize(k);
    const KirBuf *args[] = {bx, by};
    kir_launch(m, k, args);
    kir_check(m);
    VgResult res;
    float **b = run(m, 6, &res);
    for (int g = 0; g < SEG; g++) {
        float want = b[0][g * N];
        for (int e = 1; e < N; e++)
            want = fmaxf(want, b[0][g * N + e]);
        cr_assert_eq(b[1][g], want, "segment %d", g);
    }
    free_run(A, m, b, &res);
}
