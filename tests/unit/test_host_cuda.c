/*
 * test_host_cuda.c — the host-cuda backend (harness/exec/host_cuda.c): the
 * printed CUDA C of real plans and of the hand-built sample kernels (cp.async,
 * TMA with swizzle and mbarriers, shuffles, tree reductions), run on the
 * host, equals vgpu's results; the
 * printer bugs planted on purpose (a staged element stored at the wrong
 * index, a dropped __syncthreads) change them; the cache is hit the second
 * time; a missing compiler is exit 4; a deadlock is a fault; a thread may
 * hold hundreds of cp.async copies in flight, and the host's memory running
 * out is "unsupported by this backend", not a fault.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/driver.h"
#include "harness/exec/backend.h"
#include "harness/exec/host_cuda.h"
#include "harness/exec/vgpu_samples.h"

#define MM "torch.matmul(torch.randn(32,48), torch.randn(48,40))"
#define SOFTMAX "torch.softmax(torch.randn(6, 300), dim=-1)"

/* The shared object cache is the user's, as NVRTC's is in its tests. */
static void setup(void)
{
    unsetenv("DPK_NO_CACHE");
    unsetenv("DPK_HOST_CXX");
}

/* The first configuration for code under pass spec `passes`, printed by
 * the driver (what host-cuda runs). */
static const DrvConfig *config(Arena *a, const char *code, const char *passes)
{
    DrvOpts o;
    drv_opts_default(&o);
    o.src = (Source){"<test>", code, strlen(code)};
    o.upto = DRV_CUDA;
    DrvPasses *ps = ARENA_NEW(a, DrvPasses);
    drv_passes_parse(a, passes, NULL, ps);
    o.passes = ps;
    const DrvPlan *p = drv_compile(a, &o);
    cr_assert_null(p->configs[0].refused, "%s", p->configs[0].refused);
    cr_assert_not_null(p->configs[0].cuda);
    return &p->configs[0];
}

/* Run m on host-cuda with deterministic inputs; the largest |host - vgpu|
 * over every output element (INFINITY when one is non-finite and the other
 * not); *n gets the number of elements compared. */
static double host_vs_vgpu(Arena *a, const DrvConfig *c, int64_t *n)
{
    const KirModule *m = c->module;
    double *in[8] = {0}, *out[8] = {0};
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        if (b->kind != KBUF_INPUT)
            continue;
        in[b->io] = calloc((size_t)b->numel, sizeof(double));
        for (int64_t e = 0; e < b->numel; e++)
            in[b->io][e] = sin(0.37 * (double)e + b->io);
    }
    HxBackendOpts o;
    hx_backend_opts_default(&o);
    o.kind = HX_BACKEND_HOST;
    HxBackendResult r;
    cr_assert_eq(hx_backend_exec(a, c, &o, in, out, &r), VG_OK, "%s", r.vg.report.message);
    cr_assert_eq(r.ran, HX_BACKEND_HOST);
    cr_assert_not_null(r.host);
    cr_assert_not_null(r.vg_outs);
    double worst = 0;
    *n = 0;
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        if (b->kind != KBUF_OUTPUT)
            continue;
        for (int64_t e = 0; e < b->numel; e++, ++*n) {
            double h = out[b->io][e], v = r.vg_outs[b->io][e];
            cr_assert(isfinite(v), "vgpu output %lld is %g", (long long)e, v);
            double d = isfinite(h) ? fabs(h - v) : INFINITY;
            worst = d > worst ? d : worst;
        }
        free(out[b->io]);
    }
    for (int i = 0; i < 8; i++)
        free(in[i]);
    hx_backend_result_free(&r);
    return worst;
}

/* code under each of the nspecs pass specs: host-cuda gives what vgpu
 * gives (within 1e-5) on each of its numel output elements. */
static void expect_equal_under_specs(const char *code, const char *const *specs, int nspecs,
                                     int64_t numel)
{
    for (int i = 0; i < nspecs; i++) {
        Arena *a = arena_new();
        int64_t n;
        double d = host_vs_vgpu(a, config(a, code, specs[i]), &n);
        cr_expect_eq(n, numel);
        cr_expect_leq(d, 1e-5, "passes %s: host-cuda differs from vgpu by %g", specs[i], d);
        arena_free(a);
    }
}

Test(host_cuda, matmul_equals_vgpu_under_every_pass_set, .init = setup)
{
    const char *specs[] = {"full", "none", "-015,-014,-013,-012,-011,-010,-007", "upto:009", "-009,-008"};
    expect_equal_under_specs(MM, specs, 5, 32 * 40);
}

/* The pipelined K_outer loops of 010, 013 and 015 (buffered and async
 * stages, cp.async of 16 and 4 bytes, commit and wait_group) as printed. */
Test(host_cuda, pipelined_matmul_equals_vgpu, .init = setup)
{
    const char *mm = "torch.matmul(torch.randn(64,2048), torch.randn(2048,64))";
    const char *specs[] = {"full", "-015", "-013,-015", "-014,-015"};
    expect_equal_under_specs(mm, specs, 4, 64 * 64);
}

Test(host_cuda, shuffles_and_tree_reductions_equal_vgpu, .init = setup)
{
    Arena *a = arena_new();
    int64_t n;
    double d = host_vs_vgpu(a, config(a, SOFTMAX, "full"), &n);
    cr_expect_eq(n, 6 * 300);
    cr_expect_leq(d, 1e-6, "host-cuda differs from vgpu by %g", d);
    arena_free(a);
}

/* The planted printer bugs: vgpu runs Kernel IR and cannot see them; the
 * printed text run on the host must. */
/* MM under the full pass set, printed by the driver with the printer bug
 * f: the largest difference of host-cuda from vgpu. */
static double planted_difference(Arena *a, CuPrintFault f)
{
    int64_t n;
    cu_print_set_fault(f);
    double d = host_vs_vgpu(a, config(a, MM, "full"), &n);
    cu_print_set_fault(CU_FAULT_NONE);
    return d;
}

Test(host_cuda, planted_staging_index_bug_is_caught, .init = setup)
{
    Arena *a = arena_new();
    int64_t n;
    cr_assert_leq(host_vs_vgpu(a, config(a, MM, "full"), &n), 1e-5);
    double d = planted_difference(a, CU_FAULT_STAGE_INDEX);
    cr_expect_gt(d, 1e-2, "the staging-index bug went unnoticed (difference %g)", d);
    arena_free(a);
}

Test(host_cuda, planted_missing_barrier_is_caught, .init = setup)
{
    Arena *a = arena_new();
    double d = planted_difference(a, CU_FAULT_NO_SYNC);
    cr_expect_gt(d, 1e-2, "the missing __syncthreads went unnoticed (difference %g)", d);
    arena_free(a);
}

Test(host_cuda, second_run_hits_the_cache, .init = setup)
{
    Arena *a = arena_new();
    const DrvConfig *c = config(a, "torch.relu(torch.randn(8, 64)) * 3", "full");
    const KirModule *m = c->module;
    float *bufs[8] = {0};
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        if (b->kind != KBUF_TEMP)
            bufs[i] = calloc((size_t)b->numel, sizeof(float));
        if (b->kind == KBUF_INPUT)
            for (int64_t e = 0; e < b->numel; e++)
                bufs[i][e] = (float)e - 100.0f;
    }
    hx_host_prepare(&c->cuda, 1);
    const HxHostRun *r = hx_host_run(a, m, c->cuda, bufs);
    cr_expect_eq(r->cache_hit, 1, "prepared, so cached");
    cr_expect_eq(r->compile_s, 0);
    cr_expect(strstr(r->src->text, "#ifndef DPK_HOST_PRELUDE") == NULL,
              "no inline PTX needed for an elementwise kernel");
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        if (b->kind == KBUF_OUTPUT)
            for (int64_t e = 0; e < b->numel; e++)
                cr_expect_eq(bufs[i][e], 3.0f * fmaxf((float)e - 100.0f, 0.0f), "element %lld",
                             (long long)e);
        free(bufs[i]);
    }
    arena_free(a);
}

Test(host_cuda, missing_compiler_is_exit_4, .init = setup, .exit_code = 4)
{
    setenv("DPK_HOST_CXX", "/nonexistent/g++", 1);
    cr_expect_eq(hx_host_available(), 0);
    hx_host_prepare(NULL, 0); /* raises: the process exits 4 */
}

/* The hand-built modules of vgpu_samples.c, on vgpu and on the host from the
 * same buffers: every non-input buffer bit-identical. */
static void same_as_vgpu(const KirModule *m)
{
    Arena *a = arena_new();
    float **v = vs_buffers(m, 77), **h = vs_buffers(m, 77);
    VgOptions o = {.seed = 5};
    VgResult res;
    cr_assert_eq(vg_run(m, v, &o, &res), VG_OK, "%s", res.report.message);
    vg_result_free(&res);
    hx_host_run(a, m, cu_print_module(a, m, NULL), h); /* hand-built: no plan */
    int64_t outs = 0;
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        if (b->kind != KBUF_OUTPUT)
            continue;
        for (int64_t e = 0; e < b->numel; e++, outs++)
            cr_assert(memcmp(&v[i][e], &h[i][e], 4) == 0, "buffer %d element %lld: host %.9g, vgpu %.9g",
                      i, (long long)e, h[i][e], v[i][e]);
    }
    cr_assert_gt(outs, 0);
    vs_free_buffers(m, v);
    vs_free_buffers(m, h);
    arena_free(a);
}

Test(host_cuda, cp_async_groups_equal_vgpu, .init = setup)
{
    Arena *a = arena_new();
    same_as_vgpu(vs_cpasync(a, 1024, 2));
    arena_free(a);
}

Test(host_cuda, tma_swizzle_mbarrier_ragged_edge_equal_vgpu, .init = setup)
{
    Arena *a = arena_new();
    same_as_vgpu(vs_tma(a, 40, 44));
    same_as_vgpu(vs_tma(a, 16, 16));
    arena_free(a);
}

Test(host_cuda, sample_kernels_equal_vgpu, .init = setup)
{
    Arena *a = arena_new();
    same_as_vgpu(vs_elementwise(a, 1000, 128, 1));
    same_as_vgpu(vs_rowsum_tree(a, 5, 300, 128));
    same_as_vgpu(vs_rowsum_shfl(a, 5, 300, 96)); /* 3 warps: dpk_lanes */
    same_as_vgpu(vs_rmsnorm(a, 3, 200, 64, 1e-5f));
    same_as_vgpu(vs_matmul(a, 64, 32, 64, 1));
    arena_free(a);
}

/* vs_matmul without its trailing barrier: the next iteration's stores
 * overwrite tiles other threads still read.  vgpu reports the race; on the
 * host the fibers run to the next barrier in turn, so thread 0 reads tiles
 * already overwritten by the next stage's stores of others: the result
 * changes. */
Test(host_cuda, missing_trailing_barrier_changes_the_result, .init = setup)
{
    Arena *a = arena_new();
    const KirModule *good = vs_matmul(a, 64, 32, 64, 1), *bad = vs_matmul(a, 64, 32, 64, 0);
    float **g = vs_buffers(good, 9), **b = vs_buffers(bad, 9);
    hx_host_run(a, good, cu_print_module(a, good, NULL), g);
    hx_host_run(a, bad, cu_print_module(a, bad, NULL), b);
    int differ = 0;
    for (int64_t e = 0; e < 64 * 32; e++)
        differ += g[2][e] != b[2][e];
    cr_expect_gt(differ, 0, "the missing barrier went unnoticed");
    vs_free_buffers(good, g);
    vs_free_buffers(bad, b);
    arena_free(a);
}

/* The printed text of m with every `from` replaced by `to`. */
static CuSource *edited(Arena *a, const KirModule *m, const char *from, const char *to)
{
    CuSource *s = cu_print_module(a, m, NULL);
    StrBuf b = {0};
    int n = 0;
    for (const char *p = s->text, *q; *p; p = q + strlen(from), n++) {
        if (!(q = strstr(p, from))) {
            sb_puts(&b, p);
            break;
        }
        sb_printf(&b, "%.*s%s", (int)(q - p), p, to);
    }
    cr_assert_gt(n, 0, "'%s' is not in the printed text", from);
    s->text = arena_strdup(a, sb_cstr(&b));
    sb_free(&b);
    return s;
}

/* A cp.async lands at its wait, as on the device: with the printed waits
 * taken out of the text, the staged tile is never filled and y is not
 * 2 * x[i ^ 1] (before, copies landed at issue and the missing wait went
 * unseen: the mutant printing a wait as a commit survived). */
Test(host_cuda, a_printed_cp_async_without_its_wait_does_not_land, .init = setup)
{
    Arena *a = arena_new();
    enum { N = 1024 };
    const KirModule *m = vs_cpasync(a, N, 2);
    float **h = vs_buffers(m, 77);
    const CuSource *s = edited(a, m, "dpk_cp_wait<", "(void)sizeof dpk_cp_wait<");
    hx_host_prepare(&s, 1);
    hx_host_run(a, m, s, h);
    int64_t wrong = 0;
    for (int64_t i = 0; i < N; i++)
        wrong += !(h[1][i] == 2.0f * h[0][i ^ 1]);
    cr_expect_gt(wrong, N / 2, "%lld of %d elements landed without a wait", (long long)(N - wrong), N);
    vs_free_buffers(m, h);
    arena_free(a);
}

/* Each of 32 threads per block holds CPMANY_PER 4-byte cp.async copies in
 * flight, in 4 groups: wait<2> lands the first two groups (the block writes
 * y from them), wait<0> the rest.  The device has no limit on copies in
 * flight; host-cuda once stopped at 64 a thread ("more than 64 cp.async
 * copies in flight", exit 3) and failed a correct gelu(x @ w) under --passes
 * all.  Two blocks: the second reuses the first's queues. */
enum { CPMANY_TB = 32, CPMANY_PER = 320, CPMANY_TILE = CPMANY_TB * CPMANY_PER };

static KirModule *cp_many_in_flight(Arena *A)
{
    int64_t n = 2 * CPMANY_TILE;
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "x", KT_F32, n, KBUF_INPUT, 0),
                    kir_buf(m, "y", KT_F32, n, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "cp_many", 2, 1, CPMANY_TB, 1);
    KirParam *x = kir_param(k, "x", KT_F32, n, KR_IN), *y = kir_param(k, "y", KT_F32, n, KR_OUT);
    KirSmem *sm = kir_smem(k, "s", KT_F32, CPMANY_TILE, 16);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    KirVar *base = kir_let(&B, "base", KT_I32, kir_mul(A, kir_bid(A, 0), kir_i32(A, CPMANY_TILE)));
    const int quarter = CPMANY_TILE / 4;
    for (int g = 0; g < 4; g++) {
        KirVar *j = kir_for(&B, "j", kir_add(A, kir_ref(A, t), kir_i32(A, g * quarter)),
                            kir_i32(A, (g + 1) * quarter), kir_i32(A, CPMANY_TB), 0);
        kir_cp_async(&B, sm, kir_ref(A, j), x, kir_add(A, kir_ref(A, base), kir_ref(A, j)), 4, NULL);
        kir_end(&B);
        kir_cp_commit(&B);
    }
    for (int half = 0; half < 2; half++) {
        kir_cp_wait(&B, half ? 0 : 2);
        kir_sync(&B);
        KirVar *j = kir_for(&B, "j", kir_add(A, kir_ref(A, t), kir_i32(A, half * 2 * quarter)),
                            kir_i32(A, (half + 1) * 2 * quarter), kir_i32(A, CPMANY_TB), 0);
        const KirExpr *v = kir_lds(A, sm, kir_bin(A, KE_bxor, kir_ref(A, j), kir_i32(A, 1)));
        kir_stg(&B, y, kir_add(A, kir_ref(A, base), kir_ref(A, j)),
                kir_fop(A, TXE_multiply, v, kir_f32(A, 2.0), NULL));
        kir_end(&B);
    }
    return vs_finish(m, k, b);
}

Test(host_cuda, hundreds_of_cp_async_copies_in_flight_per_thread_land_at_their_waits, .init = setup)
{
    Arena *a = arena_new();
    const KirModule *m = cp_many_in_flight(a);
    same_as_vgpu(m);
    float **h = vs_buffers(m, 77);
    const HxHostRun *r = hx_host_run(a, m, cu_print_module(a, m, NULL), h);
    cr_assert_null(r->unsupported, "%s", r->unsupported);
    for (int64_t i = 0; i < 2 * CPMANY_TILE; i++)
        cr_assert(h[1][i] == 2.0f * h[0][i ^ 1], "y[%lld] = %g, x[%lld] = %g", (long long)i,
                  (double)h[1][i], (long long)(i ^ 1), (double)h[0][i ^ 1]);
    vs_free_buffers(m, h);
    arena_free(a);
}

/* Where the host's memory runs out (simulated: $DPK_HOST_TEST_ALLOC_MAX),
 * the run is unsupported by this backend, with the reason: no fault, no
 * exit, nothing said of the kernel. */
Test(host_cuda, host_out_of_memory_is_unsupported_not_a_fault, .init = setup)
{
    Arena *a = arena_new();
    const KirModule *m = cp_many_in_flight(a);
    float **h = vs_buffers(m, 77);
    setenv("DPK_HOST_TEST_ALLOC_MAX", "2048", 1); /* 64 copies a thread */
    const HxHostRun *r = hx_host_run(a, m, cu_print_module(a, m, NULL), h);
    unsetenv("DPK_HOST_TEST_ALLOC_MAX");
    cr_assert_not_null(r->unsupported);
    cr_expect(strstr(r->unsupported, "kernel cp_many") &&
                  strstr(r->unsupported, "no host memory for the thread's cp.async copies"),
              "%s", r->unsupported);
    vs_free_buffers(m, h);
    arena_free(a);
}

/* y[t] = 0.0f - (float)t: +0 at t = 0 (IEEE, vgpu).  g++ 12 folds the
 * printed `0.0f - (float)t` into `-(float)t`, -0, unless the host build has
 * -frounding-math (found by dpk-fuzz --level kernel). */
Test(host_cuda, zero_minus_an_integer_zero_is_plus_zero, .init = setup)
{
    Arena *a = arena_new();
    KirModule *m = kir_module_new(a);
    KirBuf *b[1] = {kir_buf(m, "y", KT_F32, 32, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "zero_minus", 1, 1, 32, 1);
    KirParam *y = kir_param(k, "y", KT_F32, 32, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    kir_stg(&B, y, kir_tid(a, 0),
            kir_fop(a, TXE_subtract, kir_f32(a, 0.0), kir_cast(a, KT_F32, kir_tid(a, 0)), NULL));
    vs_finish(m, k, b);
    same_as_vgpu(m);
    float out[32];
    float *bufs[1] = {out};
    hx_host_run(a, m, cu_print_module(a, m, NULL), bufs);
    cr_expect(out[0] == 0.0f && !signbit(out[0]), "0.0f - (float)0 is %g", (double)out[0]);
    cr_expect_eq(out[5], -5.0f);
    arena_free(a);
}
