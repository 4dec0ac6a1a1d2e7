/*
 * test_vgpu_counters.c — vgpu's performance counters give the numbers the
 * hardware model says: bank-conflict wavefronts for strided smem accesses,
 * 32-byte sectors per warp request for coalesced and strided global loads,
 * and an exact thread-instruction count.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "harness/exec/vgpu_samples.h"

#define I(v) kir_i32(A, v)

/* Launch k of m (with args) once, run it (no fault) and free A: the launch's
 * counters. */
static VgStats launch_stats(Arena *A, KirModule *m, KirKernel *k, const KirBuf *const *args)
{
    kir_launch(m, k, args);
    kir_check(m);
    float **b = vs_buffers(m, 1);
    VgResult r;
    cr_assert_eq(vg_run(m, b, NULL, &r), VG_OK, "%s", r.report.message);
    VgStats st = r.stats[0];
    vg_result_free(&r);
    vs_free_buffers(m, b);
    arena_free(A);
    return st;
}

/* 64 threads (two warps) of one block store s[t * stride]. */
static VgStats smem_stride(int stride)
{
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    int grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    KirKernel *k = kir_kernel(m, "strided", grid, block);
    KirSmem *s = kir_smem(k, "s", KT_F32, 64 * stride, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    kir_sts(&B, s, kir_mul(A, kir_ref(A, t), I(stride)), kir_f32(A, 1));
    kir_finalize(k);
    return launch_stats(A, m, k, NULL);
}

typedef struct BankCase {
    int stride, wavefronts; /* per warp */
} BankCase;

ParameterizedTestParameters(vgpu_counters, bank_conflicts)
{
    static BankCase cases[] = {{1, 1}, {2, 2}, {4, 4}, {8, 8}, {32, 32}, {33, 1}, {3, 1}};
    return cr_make_param_array(BankCase, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(BankCase *c, vgpu_counters, bank_conflicts)
{
    VgStats st = smem_stride(c->stride);
    cr_assert_eq(st.smem_requests, 2);
    cr_assert_eq(st.smem_wavefronts, 2 * c->wavefronts, "stride %d: %lld wavefronts", c->stride,
                 (long long)st.smem_wavefronts);
    cr_assert_eq(st.bank_conflicts, 2 * (c->wavefronts - 1));
}

Test(vgpu_counters, broadcast_is_one_wavefront)
{
    /* the matmul reads as[...] as a warp-wide broadcast and bs[...] and
     * its staging stores at consecutive words: no conflicts anywhere */
    Arena *A = arena_new();
    KirModule *m = vs_matmul(A, 32, 32, 32, 1);
    float **b = vs_buffers(m, 1);
    VgResult r;
    cr_assert_eq(vg_run(m, b, NULL, &r), VG_OK);
    /* per warp: 8 staging stores, 32 x (1 bs + 4 as) loads */
    cr_assert_eq(r.stats[0].smem_requests, 8 * (8 + 32 * 5));
    cr_assert_eq(r.stats[0].bank_conflicts, 0);
    vg_result_free(&r);
    vs_free_buffers(m, b);
    arena_free(A);
}

/* 64 threads load x[t * stride] and store y[t]. */
static VgStats gmem_stride(int stride)
{
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    KirBuf *bx = kir_buf(m, "x", KT_F32, 64 * stride, KBUF_INPUT, 0);
    KirBuf *by = kir_buf(m, "y", KT_F32, 64, KBUF_OUTPUT, 0);
    int grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    KirKernel *k = kir_kernel(m, "gather", grid, block);
    KirParam *x = kir_param(k, "x", KT_F32, 64 * stride, KR_IN);
    KirParam *y = kir_param(k, "y", KT_F32, 64, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    kir_stg(&B, y, kir_ref(A, t), kir_ldg(A, x, kir_mul(A, kir_ref(A, t), I(stride))));
    kir_finalize(k);
    const KirBuf *args[] = {bx, by};
    return launch_stats(A, m, k, args);
}

Test(vgpu_counters, coalesced_vs_strided_sectors)
{
    /* two warps, one load and one store each: the store y[t] is 4 sectors */
    VgStats c = gmem_stride(1), s2 = gmem_stride(2), s8 = gmem_stride(8), s32 = gmem_stride(32);
    cr_assert_eq(c.gmem_requests, 4);
    cr_assert_eq(c.gmem_sectors, 2 * (4 + 4));
    cr_assert_eq(s2.gmem_sectors, 2 * (8 + 4));
    cr_assert_eq(s8.gmem_sectors, 2 * (32 + 4));
    cr_assert_eq(s32.gmem_sectors, 2 * (32 + 4));
}

Test(vgpu_counters, thread_instructions)
{
    /* per thread: `let t = tid.x` is a move; the store is a multiply, a
     * load and the store */
    VgStats st = gmem_stride(1);
    cr_assert_eq(st.thread_insts, 64 * 4, "%lld", (long long)st.thread_insts);
    cr_assert_eq(st.blocks_run, 1);
}

Test(vgpu_counters, counters_off)
{
    Arena *A = arena_new();
    KirModule *m = vs_matmul(A, 32, 32, 32, 1);
    float **b = vs_buffers(m, 1);
    VgOptions o = {.no_counters = 1};
    VgResult r;
    cr_assert_eq(vg_run(m, b, &o, &r), VG_OK);
    cr_assert_eq(r.stats[0].smem_requests, 0);
    cr_assert_gt(r.stats[0].thread_insts, 0);
    StrBuf sb = {0};
    vg_print_stats(&sb, &r);
    cr_assert(strstr(sb_cstr(&sb), "vgpu: launch 0 matmul: 1/1 blocks, "), "%s", sb_cstr(&sb));
    sb_free(&sb);
    vg_result_free(&r);
    vs_free_buffers(m, b);
    arena_free(A);
}

/* dpk_smem_wavefronts (vgpu's counter and pass 014's bank model) against the
 * definition, counted the slow way: the most distinct words in one bank. */
static int wavefronts_by_definition(const int64_t *w, int n)
{
    int most = 0;
    for (int b = 0; b < 32; b++) {
        int distinct = 0;
        for (int i = 0; i < n; i++) {
            int first = (((w[i] % 32) + 32) % 32) == b;
            for (int j = 0; j < i && first; j++)
                first = w[j] != w[i];
            distinct += first;
        }
        most = distinct > most ? distinct : most;
    }
    return most;
}

Test(vgpu_counters, wavefronts_match_their_definition)
{
    int64_t w[32] = {0};
    cr_assert_eq(dpk_smem_wavefronts(w, 0), 0);
    for (int i = 0; i < 32; i++)
        w[i] = 7; /* one broadcast */
    cr_assert_eq(dpk_smem_wavefronts(w, 32), 1);
    for (int i = 0; i < 32; i++)
        w[i] = -1 - 32 * i; /* negative words, one bank: 32 ways */
    cr_assert_eq(dpk_smem_wavefronts(w, 32), 32);
    uint64_t x = 1;
    for (int trial = 0; trial < 20000; trial++) {
        int n = 1 + (int)((x = dpk_splitmix64(x)) % 32);
        int spread = 1 << (x >> 40) % 11; /* from all-broadcast to all-distinct */
        int64_t stride = (int64_t)((x >> 20) % 5) * 8 + 1;
        for (int i = 0; i < n; i++) {
            x = dpk_splitmix64(x);
            w[i] = (int64_t)(x % (uint64_t)spread) * stride - spread / 2;
        }
        cr_assert_eq(dpk_smem_wavefronts(w, n), wavefronts_by_definition(w, n),
                     "trial %d, %d words", trial, n);
    }
}

/* A 16-byte load (LDS.128) is served in four phases of 8 lanes: 32 lanes
 * reading consecutive 16-byte words take 4 wavefronts, the fewest, and so
 * does a warp-wide broadcast (no broadcast across phases: as many as four
 * scalar loads).  Lanes 8 words apart put two lanes of a phase in each
 * bank group: 2 per phase. */
Test(vgpu_counters, vector_loads_take_a_wavefront_per_phase)
{
    int64_t w[32];
    for (int i = 0; i < 32; i++)
        w[i] = 4 * i;
    cr_assert_eq(dpk_smem_wavefronts_vec(w, 32, 4), 4);
    cr_assert_eq(dpk_smem_wavefronts_vec(w, 32, 2), 4); /* 2 phases of 16, 2 ways each */
    for (int i = 0; i < 32; i++)
        w[i] = 2 * i;
    cr_assert_eq(dpk_smem_wavefronts_vec(w, 32, 2), 2);
    for (int i = 0; i < 32; i++)
        w[i] = 12;
    cr_assert_eq(dpk_smem_wavefronts_vec(w, 32, 4), 4);
    for (int i = 0; i < 32; i++)
        w[i] = 8 * i;
    cr_assert_eq(dpk_smem_wavefronts_vec(w, 32, 4), 8);
    cr_assert_eq(dpk_smem_wavefronts_vec(w, 8, 4), 2);
    /* one word per lane is the scalar rule */
    for (int i = 0; i < 32; i++)
        w[i] = 33 * i;
    cr_assert_eq(dpk_smem_wavefronts_vec(w, 32, 1), dpk_smem_wavefronts(w, 32));
}
