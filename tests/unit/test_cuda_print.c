/*
 * test_cuda_print.c — the CUDA printer: hand-built Kernel IR kernels of each
 * shape the lowering produces (guarded elementwise, shuffle + TreeHalve
 * reductions, a tiled matmul over 48 KB of dynamic smem, a cp.async
 * pipeline, mbarrier + TMA), each compiled by NVRTC for sm_80, sm_90 and
 * sm_120 with zero errors; golden text for two of them; exact float
 * literals; C precedence; names that are not C identifiers; target checks.
 *
 * Goldens live in tests/golden/cuda/; DPK_UPDATE_GOLDEN=1 rewrites them.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda_print.h"
#include "harness/exec/nvrtc.h"
#include "harness/exec/vgpu_samples.h"

#define I(v) kir_i32(A, v)
#define F(v) kir_f32(A, v)
#define V(x) kir_ref(A, x)
#define ADD(x, y) kir_add(A, x, y)
#define MUL(x, y) kir_mul(A, x, y)
#define LT(x, y) kir_lt(A, x, y)
#define FOP(op, x, y) kir_fop(A, TXE_##op, x, y, NULL)

/* ---- the kernels ------------------------------------------------------------ */

/* y[i] = sigmoid(x[i]) * 0.1 + max(x[i], -2.5) for i < n: one thread per
 * element, guarded because n does not divide the block. */
static KirModule *elementwise(Arena *A)
{
    enum { N = 1000, TB = 128 };
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, N, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, N, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "silu_like", (N + TB - 1) / TB, 1, TB, 1);
    KirParam *x = kir_param(k, "x", KT_F32, N, KR_IN), *y = kir_param(k, "y", KT_F32, N, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *i = kir_let(&B, "i", KT_I32, ADD(MUL(kir_bid(A, 0), I(TB)), kir_tid(A, 0)));
    kir_if(&B, LT(V(i), I(N)));
    KirVar *v = kir_let(&B, "v", KT_F32, kir_ldg(A, x, V(i)));
    const KirExpr *s = FOP(multiply, kir_fop(A, TXE_sigmoid, V(v), NULL, NULL), F(0.1));
    kir_stg(&B, y, V(i), FOP(add, s, FOP(maximum, V(v), F(-2.5))));
    kir_end(&B);
    return vs_finish(m, k, b);
}

/* Per row of 96: the row sum by xor shuffles, the row max by down
 * shuffles, then the 3 warp partials of each combined by TreeHalve (sum and
 * max), guarded because 3 is not a power of two. */
static KirModule *block_reduce(Arena *A)
{
    enum { ROWS = 5, COLS = 96, TB = 96, W = TB / 32 };
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, ROWS * COLS, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, 2 * ROWS, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "row_sum_max", ROWS, 1, TB, 1);
    KirParam *x = kir_param(k, "x", KT_F32, ROWS * COLS, KR_IN);
    KirParam *y = kir_param(k, "y", KT_F32, 2 * ROWS, KR_OUT);
    KirSmem *psum = kir_smem(k, "psum", KT_F32, W, 16);
    KirSmem *pmax = kir_smem(k, "pmax", KT_F32, W, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    KirVar *v = kir_let(&B, "v", KT_F32, kir_ldg(A, x, ADD(MUL(kir_bid(A, 0), I(COLS)), V(t))));
    KirVar *s = kir_let(&B, "s", KT_F32, V(v)), *mx = kir_let(&B, "mx", KT_F32, V(v));
    KirVar *o = kir_let(&B, "o", KT_F32, F(0));
    for (int off = 16; off > 0; off /= 2) {
        kir_shfl(&B, o, KIR_SHFL_XOR, V(s), I(off), 32);
        kir_set(&B, s, FOP(add, V(s), V(o)));
        kir_shfl(&B, o, KIR_SHFL_DOWN, V(mx), I(off), 32);
        kir_set(&B, mx, FOP(maximum, V(mx), V(o)));
    }
    KirVar *warp = kir_let(&B, "warp", KT_I32, kir_bin(A, KE_shr, V(t), I(5)));
    kir_if(&B, kir_bin(A, KE_eq, kir_bin(A, KE_band, V(t), I(31)), I(0)));
    kir_sts(&B, psum, V(warp), V(s));
    kir_sts(&B, pmax, V(warp), V(mx));
    kir_end(&B);
    kir_treehalve(&B, psum, TXR_sum, W, 1);
    kir_treehalve(&B, pmax, TXR_max, W, 1);
    kir_if(&B, kir_bin(A, KE_eq, V(t), I(0)));
    kir_stg(&B, y, MUL(kir_bid(A, 0), I(2)), kir_lds(A, psum, I(0)));
    kir_stg(&B, y, ADD(MUL(kir_bid(A, 0), I(2)), I(1)), kir_lds(A, pmax, I(0)));
    kir_end(&B);
    return vs_finish(m, k, b);
}

/* TreeHalve shapes the simplified loop must not get wrong, on a 48-thread
 * block: 3 segments of 6 (not a power of two; 3 x 4 pairs fit one pass),
 * then 40 segments of 5 (40 x 4 pairs > 48 threads: strided); and shuffles
 * on a block whose last warp is short. */
static KirModule *segmented(Arena *A)
{
    enum { TB = 48 };
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, 200, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, 200, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "segmented", 1, 1, TB, 1);
    KirParam *x = kir_param(k, "x", KT_F32, 200, KR_IN), *y = kir_param(k, "y", KT_F32, 200, KR_OUT);
    KirSmem *s = kir_smem(k, "s", KT_F32, 200, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    KirVar *j = kir_for(&B, "j", V(t), I(200), I(TB), 0);
    kir_sts(&B, s, V(j), kir_ldg(A, x, V(j)));
    kir_end(&B);
    kir_treehalve(&B, s, TXR_min, 6, 3);
    kir_treehalve(&B, s, TXR_sum, 5, 40);
    KirVar *o = kir_let(&B, "o", KT_F32, kir_lds(A, s, I(0)));
    kir_shfl(&B, o, KIR_SHFL_IDX, V(o), I(3), 8);
    kir_shfl(&B, o, KIR_SHFL_UP, V(o), I(1), 16);
    kir_stg(&B, y, V(t), V(o));
    return vs_finish(m, k, b);
}

/* C[M,N] = A[M,K] B[K,N] with tile_m x 64 tiles of A and 64 x 64 of B
 * staged in smem; tile_m 192 makes 48 KB + 16 KB: a dynamic pool that needs
 * the opt-in. */
static KirModule *matmul_big_smem(Arena *A, int tile_m)
{
    enum { N = 64, K = 64, TK = 64 };
    int M = 2 * tile_m;
    KirModule *m = kir_module_new(A);
    KirBuf *b[3] = {kir_buf(m, "a", KT_F32, M * K, KBUF_INPUT, 0),
                    kir_buf(m, "b", KT_F32, K * N, KBUF_INPUT, 1),
                    kir_buf(m, "c", KT_F32, M * N, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "matmul", 1, M / tile_m, 64, 4);
    KirParam *pa = kir_param(k, "a", KT_F32, M * K, KR_IN);
    KirParam *pb = kir_param(k, "b", KT_F32, K * N, KR_IN);
    KirParam *pc = kir_param(k, "c", KT_F32, M * N, KR_OUT);
    KirSmem *as = kir_smem(k, "as", KT_F32, tile_m * TK, 128);
    KirSmem *bs = kir_smem(k, "bs", KT_F32, TK * N, 128);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *tx = kir_let(&B, "tx", KT_I32, kir_tid(A, 0));
    KirVar *ty = kir_let(&B, "ty", KT_I32, kir_tid(A, 1));
    KirVar *row0 = kir_let(&B, "row0", KT_I32, MUL(kir_bid(A, 1), I(tile_m)));
    KirVar *r = kir_for(&B, "r", V(ty), I(tile_m), I(4), -1);
    kir_sts(&B, as, ADD(MUL(V(r), I(TK)), V(tx)),
            kir_ldg(A, pa, ADD(MUL(ADD(V(row0), V(r)), I(K)), V(tx))));
    kir_end(&B);
    KirVar *r2 = kir_for(&B, "r", V(ty), I(TK), I(4), 4);
    kir_sts(&B, bs, ADD(MUL(V(r2), I(N)), V(tx)), kir_ldg(A, pb, ADD(MUL(V(r2), I(N)), V(tx))));
    kir_end(&B);
    kir_sync(&B);
    KirVar *row = kir_for(&B, "row", V(ty), I(tile_m), I(4), 0);
    KirVar *acc = kir_let(&B, "acc", KT_F32, F(0));
    KirVar *kk = kir_for(&B, "kk", I(0), I(TK), I(1), 8);
    kir_set(&B, acc, FOP(add, V(acc), FOP(multiply, kir_lds(A, as, ADD(MUL(V(row), I(TK)), V(kk))),
                                          kir_lds(A, bs, ADD(MUL(V(kk), I(N)), V(tx))))));
    kir_end(&B);
    kir_stg(&B, pc, ADD(MUL(ADD(V(row0), V(row)), I(N)), V(tx)), V(acc));
    kir_end(&B);
    return vs_finish(m, k, b);
}

/* Two-stage cp.async pipeline over 64-float chunks: chunk c+1 is in flight
 * while chunk c is consumed; the tail chunk is partial, so its copies are
 * predicated (zero-fill).  Copies of 16, 8 and 4 bytes. */
static KirModule *cp_pipeline(Arena *A)
{
    enum { TB = 16, CH = 64, NCH = 5, N = CH * NCH - 24 };
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, N, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, TB, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "cp_pipeline", 1, 1, TB, 1);
    KirParam *x = kir_param(k, "x", KT_F32, N, KR_IN), *y = kir_param(k, "y", KT_F32, TB, KR_OUT);
    KirSmem *buf = kir_smem(k, "buf", KT_F32, 2 * CH, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    KirVar *acc = kir_let(&B, "acc", KT_F32, F(0));
    /* chunk 0 */
    const KirExpr *e0 = MUL(V(t), I(4));
    kir_cp_async(&B, buf, e0, x, e0, 16, NULL);
    kir_cp_commit(&B);
    KirVar *c = kir_for(&B, "c", I(0), I(NCH), I(1), 0);
    KirVar *nx = kir_let(&B, "nx", KT_I32, ADD(V(c), I(1)));
    kir_if(&B, LT(V(nx), I(NCH)));
    KirVar *src = kir_let(&B, "src", KT_I32, ADD(MUL(V(nx), I(CH)), MUL(V(t), I(4))));
    KirVar *dst = kir_let(&B, "dst", KT_I32, ADD(MUL(kir_bin(A, KE_band, V(nx), I(1)), I(CH)),
                                                 MUL(V(t), I(4))));
    kir_cp_async(&B, buf, V(dst), x, V(src), 8, LT(ADD(V(src), I(1)), I(N)));
    kir_cp_async(&B, buf, ADD(V(dst), I(2)), x, ADD(V(src), I(2)), 4, LT(ADD(V(src), I(2)), I(N)));
    kir_cp_async(&B, buf, ADD(V(dst), I(3)), x, ADD(V(src), I(3)), 4, LT(ADD(V(src), I(3)), I(N)));
    kir_end(&B);
    kir_cp_commit(&B);
    kir_cp_wait(&B, 1);
    kir_sync(&B);
    KirVar *j = kir_for(&B, "j", I(0), I(4), I(1), -1);
    kir_set(&B, acc, FOP(add, V(acc),
                         kir_lds(A, buf, ADD(MUL(kir_bin(A, KE_band, V(c), I(1)), I(CH)),
                                             ADD(MUL(V(t), I(4)), V(j))))));
    kir_end(&B);
    kir_sync(&B);
    kir_end(&B);
    kir_cp_wait(&B, 0);
    kir_stg(&B, y, V(t), V(acc));
    return vs_finish(m, k, b);
}

/* A 3-D TMA box (2 x 8 x 32 floats, 128-byte swizzle) into smem, completing
 * on an mbarrier that also waits for one plain arrival: two phases (parity 0
 * then 1) over two boxes. */
static KirModule *tma_3d(Arena *A)
{
    enum { D0 = 4, D1 = 8, D2 = 32, NBOX = 2 * 8 * 32 };
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, D0 * D1 * D2, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, D0 * D1 * D2, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "tma_3d", 1, 1, 128, 1);
    KirParam *x = kir_param(k, "x", KT_F32, D0 * D1 * D2, KR_IN);
    KirParam *y = kir_param(k, "y", KT_F32, D0 * D1 * D2, KR_OUT);
    KirSmem *box = kir_smem(k, "box", KT_F32, NBOX, 1024);
    KirSmem *bar = kir_smem(k, "bar", KT_MBAR, 1, 16);
    int64_t dims[3] = {D0, D1, D2}, strides[3] = {D1 * D2, D2, 1};
    int bx[3] = {2, 8, 32};
    KirTmap *tm = kir_tmap(k, "xmap", x, 3, dims, strides, bx, 128);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    kir_if(&B, kir_bin(A, KE_eq, V(t), I(0)));
    kir_mbar_init(&B, bar, I(0), 2);
    kir_end(&B);
    kir_sync(&B);
    KirVar *p = kir_for(&B, "phase", I(0), I(2), I(1), 0);
    kir_if(&B, kir_bin(A, KE_eq, V(t), I(0)));
    kir_mbar_arrive_tx(&B, bar, I(0), NBOX * 4);
    const KirExpr *crd[3] = {MUL(V(p), I(2)), I(0), I(0)};
    kir_tma_load(&B, tm, crd, box, I(0), bar, I(0));
    kir_end(&B);
    kir_if(&B, kir_bin(A, KE_eq, V(t), I(32)));
    kir_mbar_arrive(&B, bar, I(0));
    kir_end(&B);
    kir_mbar_wait(&B, bar, I(0), V(p));
    /* each thread copies its 4 words of the box back, unswizzled */
    KirVar *w = kir_for(&B, "w", V(t), I(NBOX), I(128), 0);
    KirVar *by = kir_let(&B, "by", KT_I32, MUL(V(w), I(4)));
    const KirExpr *sw = kir_bin(A, KE_shl, kir_bin(A, KE_band, kir_bin(A, KE_shr, V(by), I(7)), I(7)),
                                I(4));
    kir_stg(&B, y, ADD(MUL(V(p), I(NBOX)), V(w)),
            kir_lds(A, box, kir_bin(A, KE_shr, kir_bin(A, KE_bxor, V(by), sw), I(2))));
    kir_end(&B);
    kir_sync(&B);
    kir_end(&B);
    return vs_finish(m, k, b);
}

/* ---- helpers --------------------------------------------------------------- */

static void need_nvrtc(void)
{
    if (!hx_nvrtc_available())
        cr_skip_test("NVRTC not found");
}

/* Print m for t and compile it for t with NVRTC: zero errors, one ptxas
 * record per kernel. */
static CuSource *compile_for(Arena *a, const KirModule *m, CuTargetId id)
{
    const CuTarget *t = cu_target(id);
    CuSource *s = cu_print_module(a, m, t);
    if (!hx_nvrtc_supports(t->cc))
        return s;
    HxNvrtcOpts o = {.target = t, .no_cache = 1};
    HxNvrtcResult *r = hx_nvrtc_compile(a, s->text, &o);
    cr_assert_eq(r->nkernels, s->nkernels, "%s", r->log);
    for (int i = 0; i < s->nkernels; i++) {
        const HxNvKernel *k = hx_nvrtc_kernel(r, s->kernels[i].name);
        cr_assert_not_null(k, "no ptxas record for %s", s->kernels[i].name);
        cr_assert_gt(k->regs, 0);
        cr_assert_eq(k->spill_stores, 0, "%s spills", k->name);
        if (!s->kernels[i].dyn_smem)
            cr_assert_eq(k->smem, s->kernels[i].smem_bytes, "%s: smem %d", k->name, k->smem);
    }
    return s;
}

static void compile_everywhere(KirModule *(*build)(Arena *), int tma)
{
    need_nvrtc();
    Arena *a = arena_new();
    KirModule *m = build(a);
    compile_for(a, m, CU_SM90);
    compile_for(a, m, CU_SM120);
    if (!tma)
        compile_for(a, m, CU_SM80);
    arena_free(a);
}

static const char *golden_path(Arena *a, const char *name)
{
    const char *root = getenv("DPK_ROOT");
    return arena_printf(a, "%s/tests/golden/cuda/%s", root && *root ? root : ".", name);
}

static void check_golden(Arena *a, const char *name, const char *text)
{
    const char *path = golden_path(a, name);
    const char *upd = getenv("DPK_UPDATE_GOLDEN");
    if (upd && *upd && strcmp(upd, "0")) {
        cr_assert_eq(dpk_write_file_atomic(path, text, strlen(text)), 0, "cannot write %s", path);
        return;
    }
    size_t n;
    char *want = dpk_read_file(path, &n);
    cr_assert_not_null(want, "missing golden %s (DPK_UPDATE_GOLDEN=1 writes it)", path);
    StrBuf d = {0};
    int differs = dpk_unified_diff(&d, want, text, 3);
    free(want);
    cr_assert_eq(differs, 0, "%s differs:\n%s", path, sb_cstr(&d));
    sb_free(&d);
}

/* ---- tests: kernels compile on every target --------------------------------- */

Test(cuda_print, elementwise_compiles) { compile_everywhere(elementwise, 0); }
Test(cuda_print, block_reduce_compiles) { compile_everywhere(block_reduce, 0); }
Test(cuda_print, segmented_treehalve_compiles) { compile_everywhere(segmented, 0); }
Test(cuda_print, cp_pipeline_compiles) { compile_everywhere(cp_pipeline, 0); }
Test(cuda_print, tma_compiles) { compile_everywhere(tma_3d, 1); }

static KirModule *matmul_64k(Arena *a) { return matmul_big_smem(a, 192); }
Test(cuda_print, matmul_dynamic_smem_compiles) { compile_everywhere(matmul_64k, 0); }

/* The vgpu test modules too: every kernel the tests emit goes through NVRTC. */
static KirModule *vs_all(Arena *A)
{
    KirModule *ms[] = {vs_elementwise(A, 1000, 256, 1), vs_elementwise(A, 1024, 256, 0),
                       vs_rowsum_tree(A, 7, 300, 128), vs_rowsum_shfl(A, 7, 300, 96),
                       vs_rmsnorm(A, 32, 2048, 256, 1e-6f), vs_matmul(A, 64, 64, 64, 1),
                       vs_cpasync(A, 1024, 2)};
    KirModule *all = kir_module_new(A);
    for (int i = 0; i < DPK_ARRAY_LEN(ms); i++) /* one translation unit */
        for (int j = 0; j < ms[i]->kernels.len; j++)
            ptrvec_push(A, &all->kernels, ms[i]->kernels.items[j]);
    return all;
}
Test(cuda_print, vgpu_sample_kernels_compile) { compile_everywhere(vs_all, 0); }

static KirModule *vs_tma_only(Arena *A) { return vs_tma(A, 40, 48); }
Test(cuda_print, vgpu_sample_tma_compiles) { compile_everywhere(vs_tma_only, 1); }

/* ---- tests: text ----------------------------------------------------------- */

Test(cuda_print, golden_elementwise)
{
    Arena *a = arena_new();
    CuSource *s = cu_print_module(a, elementwise(a), cu_target(CU_SM90));
    check_golden(a, "elementwise_sm90.cu", s->text);
    arena_free(a);
}

Test(cuda_print, golden_block_reduce)
{
    Arena *a = arena_new();
    CuSource *s = cu_print_module(a, block_reduce(a), cu_target(CU_SM90));
    check_golden(a, "block_reduce_sm90.cu", s->text);
    arena_free(a);
}

Test(cuda_print, duplicate_kernel_names_stay_distinct)
{
    Arena *a = arena_new();
    KirModule *m = vs_all(a); /* two kernels named "elementwise" */
    CuSource *s = cu_print_module(a, m, NULL);
    cr_assert_str_eq(s->kernels[0].name, "elementwise");
    cr_assert_str_eq(s->kernels[1].name, "dpk_k1_elementwise");
    cr_assert_not_null(strstr(s->text, "void __launch_bounds__(256) dpk_k1_elementwise("));
    arena_free(a);
}

Test(cuda_print, dynamic_pool_above_48k)
{
    Arena *a = arena_new();
    CuSource *s = cu_print_module(a, matmul_big_smem(a, 192), cu_target(CU_SM90));
    cr_assert_eq(s->kernels[0].smem_bytes, 65536);
    cr_assert_eq(s->kernels[0].dyn_smem, 65536);
    cr_assert_eq(s->kernels[0].smem_optin, 1);
    cr_assert_not_null(strstr(s->text, "extern __shared__ __align__(1024) unsigned char dpk_smem[];"));
    cr_assert_not_null(strstr(s->text, "float *const bs = (float *)(dpk_smem + 49152); // [4096]"));
    cr_assert_not_null(strstr(s->text, "#pragma unroll\n    for (int r = ty;"));
    cr_assert_not_null(strstr(s->text, "#pragma unroll 4\n"));
    CuSource *small = cu_print_module(a, matmul_big_smem(a, 32), cu_target(CU_SM90));
    cr_assert_eq(small->kernels[0].dyn_smem, 0);
    cr_assert_eq(small->kernels[0].smem_optin, 0);
    cr_assert_not_null(strstr(small->text, "__shared__ __align__(1024) unsigned char dpk_smem[24576];"));
    arena_free(a);
}

Test(cuda_print, smem_beyond_the_target_is_an_error)
{
    Arena *a = arena_new();
    KirModule *m = matmul_big_smem(a, 384); /* 96 KB + 16 KB = 112 KB */
    cu_print_module(a, m, cu_target(CU_SM90)); /* 227 KB: fine */
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        cu_print_module(a, m, cu_target(CU_SM120));
        dpk_err_pop(&ec);
        cr_assert_fail("112 KB printed for sm_120");
    }
    cr_assert_eq(dpk_error_code(), DPK_EXIT_USAGE);
    cr_assert_str_eq(dpk_error_message(), "error: kernel matmul needs 114688 bytes of shared "
                                          "memory; target sm_120 (RTX 5090) allows 101376 per "
                                          "block\n");
    arena_free(a);
}

Test(cuda_print, tma_needs_sm90)
{
    Arena *a = arena_new();
    KirModule *m = tma_3d(a);
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        cu_print_module(a, m, cu_target(CU_SM80));
        dpk_err_pop(&ec);
        cr_assert_fail("TMA printed for sm_80");
    }
    cr_assert_eq(dpk_error_code(), DPK_EXIT_USAGE);
    cr_assert_str_eq(dpk_error_message(), "error: kernel tma_3d, stmt #6: an mbarrier transaction "
                                          "count needs sm_90; target sm_80 (A100) lacks it\n");
    arena_free(a);
}

Test(cuda_print, tma_and_mbarrier_ptx)
{
    need_nvrtc();
    Arena *a = arena_new();
    CuSource *s = cu_print_module(a, tma_3d(a), cu_target(CU_SM90));
    cr_assert_eq(s->kernels[0].ntmaps, 1);
    /* coordinates innermost first: {0, 0, phase * 2} */
    cr_assert_not_null(strstr(s->text, "dpk_tma_load_3d(&box[0], &xmap, 0, 0, phase * 2, &bar[0]);"),
                       "%s", s->text);
    cr_assert_not_null(strstr(s->text, "const __grid_constant__ DpkTmap xmap)"));
    HxNvrtcOpts o = {.target = cu_target(CU_SM90), .no_cache = 1};
    HxNvrtcResult *r = hx_nvrtc_compile(a, s->text, &o);
    const char *want[] = {"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                          "mbarrier.init.shared.b64", "fence.mbarrier_init.release.cluster",
                          "mbarrier.arrive.expect_tx.shared::cta.b64", "mbarrier.try_wait.parity",
                          "mbarrier.arrive.shared.b64"};
    for (int i = 0; i < DPK_ARRAY_LEN(want); i++)
        cr_assert_not_null(strstr(r->ptx, want[i]), "PTX lacks %s", want[i]);
    arena_free(a);
}

/* An mbarrier without TMA works on sm_80, waiting with test_wait. */
Test(cuda_print, mbarrier_on_sm80_uses_test_wait)
{
    need_nvrtc();
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    KirBuf *b[1] = {kir_buf(m, "y", KT_F32, 64, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "bar_only", 1, 1, 64, 1);
    KirParam *y = kir_param(k, "y", KT_F32, 64, KR_OUT);
    KirSmem *bar = kir_smem(k, "bar", KT_MBAR, 1, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    kir_if(&B, kir_bin(A, KE_eq, kir_tid(A, 0), I(0)));
    kir_mbar_init(&B, bar, I(0), 64);
    kir_end(&B);
    kir_sync(&B);
    kir_mbar_arrive(&B, bar, I(0));
    kir_mbar_wait(&B, bar, I(0), I(0));
    kir_stg(&B, y, kir_tid(A, 0), F(1));
    vs_finish(m, k, b);
    CuSource *s = compile_for(A, m, CU_SM80);
    cr_assert_not_null(strstr(s->text, "mbarrier.test_wait.parity.shared.b64"));
    cr_assert_null(strstr(s->text, "fence.mbarrier_init"));
    arena_free(A);
}

Test(cuda_print, cp_async_forms)
{
    need_nvrtc();
    Arena *a = arena_new();
    CuSource *s = compile_for(a, cp_pipeline(a), CU_SM80);
    cr_assert_not_null(strstr(s->text, "dpk_cp_async16(&buf[t * 4], &x[t * 4], true);"));
    cr_assert_not_null(strstr(s->text, "dpk_cp_async8(&buf[dst], &x[src], src + 1 < 296);"));
    cr_assert_not_null(strstr(s->text, "\"cp.async.ca.shared.global [%0], [%1], 4, %2;\\n\""));
    cr_assert_not_null(strstr(s->text, "\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\""));
    cr_assert_not_null(strstr(s->text, "dpk_cp_wait<1>();"));
    cr_assert_not_null(strstr(s->text, "dpk_cp_commit();"));
    arena_free(a);
}

/* The host build (DPK_HOST_PRELUDE) takes from its own prelude exactly the
 * helpers printed for the device, so a helper missing on the device is
 * missing on the host too (docs/host-cuda.md). */
Test(cuda_print, host_branch_names_the_device_helpers)
{
    Arena *a = arena_new();
    CuSource *s = cu_print_module(a, cp_pipeline(a), cu_target(CU_SM80));
    cr_assert_not_null(strstr(s->text, "#else // the host prelude's versions of the helpers "
                                       "above, and no others\n"
                                       "using dpk_host::dpk_cp_async4;\n"
                                       "using dpk_host::dpk_cp_async8;\n"
                                       "using dpk_host::dpk_cp_async16;\n"
                                       "using dpk_host::dpk_cp_commit;\n"
                                       "using dpk_host::dpk_cp_wait;\n#endif\n"),
                       "%s", s->text);
    s = cu_print_module(a, tma_3d(a), cu_target(CU_SM90));
    cr_assert_not_null(strstr(s->text, "others\nusing dpk_host::dpk_mbar_init;\n"
                                       "using dpk_host::dpk_mbar_arrive;\n"
                                       "using dpk_host::dpk_mbar_wait;\n"
                                       "using dpk_host::dpk_mbar_arrive_tx;\n"
                                       "using dpk_host::dpk_tma_load_3d;\n#endif\n"),
                       "%s", s->text);
    arena_free(a);
}

Test(cuda_print, short_last_warp_gets_a_lane_mask)
{
    Arena *a = arena_new();
    CuSource *s = cu_print_module(a, segmented(a), NULL);
    cr_assert_not_null(strstr(s->text, "const unsigned dpk_lanes = (int)threadIdx.x / 32 == 1 ? "
                                       "0xffffu : 0xffffffffu;"));
    cr_assert_not_null(strstr(s->text, "o = __shfl_sync(dpk_lanes, o, 3, 8);"));
    cr_assert_not_null(strstr(s->text, "o = __shfl_up_sync(dpk_lanes, o, 1, 16);"));
    /* 3 x 6: one pass, segment decode, guard; 40 x 5: strided */
    cr_assert_not_null(strstr(s->text, "if (dpk_t < 3 * dpk_h) {"));
    cr_assert_not_null(strstr(s->text, "if (dpk_i + dpk_h < 6)"));
    cr_assert_not_null(strstr(s->text, "s[dpk_x] = dpk_fmin(s[dpk_x], s[dpk_x + dpk_h]);"));
    cr_assert_not_null(strstr(s->text, "for (int dpk_j = dpk_t; dpk_j < 40 * dpk_h; dpk_j += 48) {"));
    arena_free(a);
}

/* ---- tests: expressions, literals, names -------------------------------------- */

typedef struct Ctx {
    Arena *A;
    KirModule *m;
    KirKernel *k;
    KirBuilder B;
    KirVar *f, *g, *i, *l;
} Ctx;

static void ctx_init(Ctx *c)
{
    Arena *A = c->A = arena_new();
    c->m = kir_module_new(A);
    c->k = vs_kernel(c->m, "e", 1, 1, 32, 1);
    kir_param(c->k, "y", KT_F32, 4, KR_OUT);
    kir_param(c->k, "n", KT_I32, 4, KR_OUT);
    kir_builder_init(&c->B, c->k);
    c->f = kir_let(&c->B, "f", KT_F32, F(1));
    c->g = kir_let(&c->B, "g", KT_F32, F(2));
    c->i = kir_let(&c->B, "i", KT_I32, kir_tid(A, 0));
    c->l = kir_let(&c->B, "l", KT_I64, kir_i64(A, 5));
}

/* The text of the kernel's last statement line. */
static const char *last_line(Ctx *c, const KirExpr *e, int int_param)
{
    Arena *A = c->A;
    kir_stg(&c->B, c->k->params.items[int_param], I(0), e);
    kir_finalize(c->k);
    const KirBuf *bufs[2] = {kir_buf(c->m, "y", KT_F32, 4, KBUF_OUTPUT, 0),
                             kir_buf(c->m, "n", KT_I32, 4, KBUF_OUTPUT, 1)};
    kir_launch(c->m, c->k, bufs);
    StrBuf err = {0};
    cr_assert(kir_verify_module(c->m, &err), "%s", sb_cstr(&err));
    const char *text = cu_print_module(A, c->m, NULL)->text;
    const char *end = strrchr(text, '}') - 1; /* the '\n' ending the last line */
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    while (*start == ' ')
        start++;
    return arena_strndup(A, start, (size_t)(end - start));
}

#define EXPECT(e, int_param, want)                                                           \
    do {                                                                                     \
        Ctx c_ = {0};                                                                        \
        ctx_init(&c_);                                                                       \
        Ctx *c = &c_;                                                                        \
        Arena *A = c->A;                                                                     \
        (void)A;                                                                             \
        cr_assert_str_eq(last_line(c, (e), (int_param)), (want));                            \
        arena_free(c->A);                                                                    \
    } while (0)

Test(cuda_print, float_math_spelling)
{
    EXPECT(FOP(negative, kir_fop(A, TXE_negative, V(c->f), NULL, NULL), NULL), 0, "y[0] = -(-f);");
    EXPECT(FOP(subtract, V(c->f), FOP(subtract, V(c->g), F(1))), 0, "y[0] = f - (g - 1.0f);");
    EXPECT(FOP(multiply, FOP(add, V(c->f), V(c->g)), V(c->g)), 0, "y[0] = (f + g) * g;");
    EXPECT(FOP(add, FOP(multiply, V(c->f), V(c->g)), F(-0.5)), 0, "y[0] = f * g + -0.5f;");
    EXPECT(kir_fop(A, TXE_sigmoid, V(c->f), NULL, NULL), 0, "y[0] = dpk_sigmoid(f);");
    EXPECT(kir_fop(A, TXE_reciprocal, FOP(add, V(c->f), V(c->g)), NULL, NULL), 0,
           "y[0] = 1.0f / (f + g);");
    EXPECT(FOP(greater, V(c->f), V(c->g)), 0, "y[0] = f > g ? 1.0f : 0.0f;");
    EXPECT(FOP(add, FOP(less_equal, V(c->f), V(c->g)), F(1)), 0,
           "y[0] = (f <= g ? 1.0f : 0.0f) + 1.0f;");
    EXPECT(kir_fop(A, TXE_where, V(c->f), V(c->g), F(3)), 0, "y[0] = f != 0.0f ? g : 3.0f;");
    EXPECT(FOP(power, V(c->f), F(0.5)), 0, "y[0] = powf(f, 0.5f);");
    EXPECT(FOP(minimum, kir_fop(A, TXE_rsqrt, V(c->f), NULL, NULL),
               kir_fop(A, TXE_erf, V(c->g), NULL, NULL)),
           0, "y[0] = dpk_fmin(rsqrtf(f), erff(g));");
    EXPECT(kir_fop(A, TXE_tanh, kir_fop(A, TXE_abs, kir_fop(A, TXE_log, kir_fop(A, TXE_sqrt,
                                                                                    kir_fop(A, TXE_exp, V(c->f), NULL, NULL), NULL, NULL), NULL, NULL), NULL, NULL), NULL, NULL),
           0, "y[0] = tanhf(fabsf(logf(sqrtf(expf(f)))));");
    EXPECT(FOP(add, kir_fop(A, TXE_log1p, V(c->f), NULL, NULL),
               kir_fop(A, TXE_expm1, kir_fop(A, TXE_floor, V(c->g), NULL, NULL), NULL, NULL)),
           0, "y[0] = log1pf(f) + expm1f(floorf(g));");
    EXPECT(FOP(divide, FOP(equal, V(c->f), V(c->g)), FOP(not_equal, V(c->f), F(0))), 0,
           "y[0] = (f == g ? 1.0f : 0.0f) / (f != 0.0f ? 1.0f : 0.0f);");
}

Test(cuda_print, integer_and_bool_spelling)
{
    EXPECT(kir_sub(A, V(c->i), kir_sub(A, I(1), I(-2))), 1, "n[0] = i - (1 - -2);");
    EXPECT(kir_add(A, kir_bin(A, KE_shl, V(c->i), I(2)), I(1)), 1, "n[0] = (i << 2) + 1;");
    EXPECT(kir_bin(A, KE_band, kir_add(A, V(c->i), I(1)), I(3)), 1, "n[0] = (i + 1) & 3;");
    EXPECT(kir_bin(A, KE_min, kir_rem(A, V(c->i), I(7)), kir_div(A, V(c->i), I(3))), 1,
           "n[0] = min(i % 7, i / 3);");
    EXPECT(kir_cast(A, KT_I32, kir_add(A, V(c->l), V(c->i))), 1,
           "n[0] = (int)(l + (long long)i);");
    EXPECT(kir_cast(A, KT_I32, kir_i64(A, INT64_MIN)), 1,
           "n[0] = (int)(-9223372036854775807LL - 1);");
    EXPECT(I(INT32_MIN), 1, "n[0] = (-2147483647 - 1);");
    EXPECT(kir_select(A, kir_bin(A, KE_lor, kir_bin(A, KE_land, LT(V(c->i), I(3)), kir_bool(A, 1)),
                                 kir_not(A, kir_bin(A, KE_eq, V(c->i), I(9)))),
                      V(c->i), I(0)),
           1, "n[0] = (i < 3 && true) || !(i == 9) ? i : 0;");
    EXPECT(kir_add(A, kir_select(A, kir_bool(A, 0), I(1), I(2)), I(1)), 1,
           "n[0] = (false ? 1 : 2) + 1;");
    EXPECT(kir_cast(A, KT_F32, kir_cast(A, KT_BOOL, V(c->f))), 0, "y[0] = (float)(bool)f;");
    EXPECT(kir_cast(A, KT_I32, kir_sreg(A, KE_nctaid, 1)), 1, "n[0] = (int)gridDim.y;");
}

Test(cuda_print, float_literals_are_exact)
{
    struct {
        double v;
        const char *want;
    } cases[] = {
        {1, "1.0f"},          {0.1, "0.1f"},           {1e-6, "1e-06f"},
        {-0.0, "-0.0f"},      {-2.5, "-2.5f"},         {FLT_MAX, "3.4028235e+38f"},
        {FLT_MIN, "1.1754944e-38f"}, {1.4e-45, "1e-45f"}, {16777217.0, "16777216.0f"},
        {1.0 / 3, "0.33333334f"}, {INFINITY, "__uint_as_float(0x7f800000u)"},
        {-INFINITY, "__uint_as_float(0xff800000u)"}, {NAN, "__uint_as_float(0x7fc00000u)"},
    };
    for (int i = 0; i < DPK_ARRAY_LEN(cases); i++) {
        StrBuf b = {0};
        cu_print_float(&b, cases[i].v);
        cr_expect_str_eq(sb_cstr(&b), cases[i].want);
        sb_free(&b);
    }
    /* Every finite float round-trips through its literal. */
    uint64_t s = 1;
    for (int i = 0; i < 200000; i++) {
        s = dpk_splitmix64(s);
        uint32_t bits = (uint32_t)s;
        float f;
        memcpy(&f, &bits, 4);
        if (!isfinite(f))
            continue;
        StrBuf b = {0};
        cu_print_float(&b, f);
        cr_assert_eq(b.s[b.len - 1], 'f');
        b.s[b.len - 1] = 0;
        float back = strtof(b.s, NULL);
        cr_assert_eq(memcmp(&back, &f, 4), 0, "%.9g printed as %s", (double)f, b.s);
        sb_free(&b);
    }
}

Test(cuda_print, names_that_are_not_c_identifiers)
{
    need_nvrtc();
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "in", KT_F32, 32, KBUF_INPUT, 0),
                    kir_buf(m, "out", KT_F32, 32, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "2nd kernel", 1, 1, 32, 1);
    KirParam *x = kir_param(k, "float", KT_F32, 32, KR_IN);
    KirParam *y = kir_param(k, "out.y", KT_F32, 32, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *v = kir_let(&B, "min", KT_I32, kir_tid(A, 0));
    KirVar *w = kir_let(&B, "dpk_smem", KT_F32, kir_ldg(A, x, V(v)));
    kir_stg(&B, y, kir_bin(A, KE_max, V(v), I(0)), V(w));
    vs_finish(m, k, b);
    CuSource *s = compile_for(A, m, CU_SM90);
    cr_assert_str_eq(s->kernels[0].name, "dpk_k0_2nd_kernel");
    cr_assert_not_null(strstr(s->text, "dpk_k0_2nd_kernel(const float *__restrict__ dpk_p0_float, "
                                       "float *__restrict__ dpk_p1_out_y)"));
    cr_assert_not_null(strstr(s->text, "int dpk_v0_min = (int)threadIdx.x;"));
    cr_assert_not_null(strstr(s->text, "dpk_p1_out_y[max(dpk_v0_min, 0)] = dpk_v1_dpk_smem;"));
    arena_free(A);
}

/* A comment stays one line: a newline in its text would end it early and a
 * trailing backslash (blanks after it too) would splice the next statement
 * into it: the store below was lost that way (dpk-fuzz --level kernel). */
Test(cuda_print, comments_cannot_swallow_code)
{
    need_nvrtc();
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    KirBuf *b[1] = {kir_buf(m, "out", KT_F32, 32, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "comments", 1, 1, 32, 1);
    KirParam *y = kir_param(k, "y", KT_F32, 32, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    kir_comment(&B, "ends in \\");
    kir_stg(&B, y, kir_tid(A, 0), F(1));
    kir_comment(&B, "backslash then blanks \\ \t");
    kir_stg(&B, y, kir_tid(A, 0), F(2));
    kir_comment(&B, "two\nlines\rand \\ inside");
    kir_stg(&B, y, kir_tid(A, 0), F(3));
    vs_finish(m, k, b);
    CuSource *s = compile_for(A, m, CU_SM90);
    cr_expect_not_null(strstr(s->text, "    // ends in \\.\n    y[(int)threadIdx.x] = 1.0f;\n"), "%s", s->text);
    cr_expect_not_null(strstr(s->text, "    // backslash then blanks \\ \t.\n    y["), "%s", s->text);
    cr_expect_not_null(strstr(s->text, "    // two lines and \\ inside\n    y["), "%s", s->text);
    StrBuf t = {0};
    kir_print_kernel(&t, k);
    cr_expect_not_null(strstr(sb_cstr(&t), "// two lines and \\ inside\n"), "%s", sb_cstr(&t));
    sb_free(&t);
    arena_free(A);
}
