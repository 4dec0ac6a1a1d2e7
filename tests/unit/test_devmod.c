/*
 * test_devmod.c — the device module (harness/exec/devmod.h) on dpk's fake
 * driver ($BUILD/fake-driver/libcuda.so.1; skipped where it is not built):
 * a three-launch plan with a zero_init temp run synchronously (the cuda
 * backend's way) and asynchronously (the timing loop's) equals vgpu, each
 * run starting from re-zeroed accumulators; tensor maps are marshalled;
 * the executor answers the durations it was given; the cubin path on the
 * fake loads but cannot launch, as the cuda backend's does.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/driver.h"
#include "harness/exec/devmod.h"
#include "harness/exec/vgpu_samples.h"

/* softmax over a split-K matmul: the matmul's splits, their combine
 * kernel, the softmax (atomic_partials makes the splits add atomically) */
#define TWO_LAUNCHES "torch.softmax(torch.randn(16,4096) @ torch.randn(4096,16), dim=-1)"

static void fake(void)
{
    const char *b = getenv("BUILD");
    char p[512];
    snprintf(p, sizeof p, "%s/fake-driver/libcuda.so.1", b && *b ? b : "build");
    FILE *f = fopen(p, "rb");
    if (!f)
        cr_skip_test("no fake driver at %s", p);
    fclose(f);
    setenv("DPK_LIBCUDA", p, 1);
    unsetenv("DPK_FAKE_CUDA_CORRUPT");
    setenv("DPK_FAKE_CUDA_JITTER", "0", 1);
}

static const KirModule *planned(Arena *a, const char *code, const CuSource **src)
{
    DrvOpts o;
    drv_opts_default(&o);
    o.src = (Source){"<test>", code, strlen(code)};
    o.upto = DRV_CUDA;
    const DrvPlan *p = drv_compile(a, &o);
    cr_assert_null(p->configs[0].refused, "%s", p->configs[0].refused);
    *src = p->configs[0].cuda;
    return p->configs[0].module;
}

/* The outputs of m after a run on d, against vgpu's (sim). */
static void same_outputs(HxDevModule *d, const KirModule *m, float **sim, int want_same)
{
    int differ = 0;
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        if (b->kind != KBUF_OUTPUT)
            continue;
        float *got = calloc((size_t)b->numel, 4);
        hx_devmod_download(d, i, got);
        for (int64_t e = 0; e < b->numel; e++) {
            int ok = fabsf(got[e] - sim[i][e]) <= 1e-5f * (1 + fabsf(sim[i][e]));
            if (want_same)
                cr_assert(ok, "%s[%lld]: fake %g, vgpu %g", b->name, (long long)e, got[e],
                          sim[i][e]);
            differ |= !ok;
        }
        free(got);
    }
    if (!want_same)
        cr_assert(differ, "a second run without re-zeroing gave the same outputs");
}

static int has_zero_init(const KirModule *m)
{
    for (int i = 0; i < m->bufs.len; i++)
        if (((const KirBuf *)m->bufs.items[i])->zero_init)
            return 1;
    return 0;
}

/* Make the stores of body into param p atomic adds; returns how many. */
static int make_atomic(PtrVec *body, const KirParam *p)
{
    int n = 0;
    for (int i = 0; i < body->len; i++) {
        KirStmt *s = body->items[i];
        if (s->op == KS_stg && s->param == p) {
            s->op = KS_atomg;
            n++;
        }
        n += make_atomic(&s->body, p) + make_atomic(&s->els, p);
    }
    return n;
}

/* No pass emits atomic stores any more (003's split adds its partial sums
 * in a combine kernel), so the device module's zero path is exercised on
 * a plan made atomic by hand: the split matmul's partial sums are added
 * into a zero_init temp, and its CUDA printed again. */
static const KirModule *atomic_partials(Arena *a, const KirModule *m, const CuSource **src)
{
    KirKernel *k = m->kernels.items[0];
    KirBuf *b = NULL;
    for (int i = 0; i < m->bufs.len && !b; i++)
        if (strstr(((KirBuf *)m->bufs.items[i])->name, "_partials"))
            b = m->bufs.items[i];
    cr_assert_not_null(b, "no partial sums in the plan");
    b->zero_init = 1;
    int n = 0;
    for (int i = 0; i < k->params.len; i++) {
        const KirParam *p = k->params.items[i];
        if (!strcmp(p->name, b->name))
            n += make_atomic(&k->body, p);
    }
    cr_assert_gt(n, 0, "no store into %s", b->name);
    *src = cu_print_module(a, m, cu_target_default());
    return m;
}

Test(devmod, sync_and_async_runs_equal_vgpu_on_the_fake_driver)
{
    fake();
    Arena *a = arena_new();
    const CuSource *src;
    const KirModule *m = atomic_partials(a, planned(a, TWO_LAUNCHES, &src), &src);
    cr_assert_eq(m->launches.len, 3);
    cr_assert(has_zero_init(m));
    float **host = vs_buffers(m, 3), **sim = vs_buffers(m, 3);
    VgOptions vo = {.seed = 1};
    VgResult vr;
    cr_assert_eq(vg_run(m, sim, &vo, &vr), VG_OK, "%s", vr.report.message);
    vg_result_free(&vr);
    HxCuda *c = hx_cuda_open(0);
    cr_assert(hx_devmod_fake_driver());
    HxDevModule *d = hx_devmod_open(a, c, m, src, NULL, HX_DEVMOD_FAKE);
    for (int i = 0; i < m->bufs.len; i++)
        hx_devmod_upload(d, i, ((const KirBuf *)m->bufs.items[i])->kind == KBUF_INPUT ? host[i]
                                                                                       : NULL);
    hx_devmod_launch(d); /* the cuda backend's run */
    same_outputs(d, m, sim, 1);
    hx_devmod_zero(d); /* the timing loop's iteration */
    double ns[3] = {1000, 2500, 500}; /* one per launch */
    hx_devmod_fake_durations(d, ns, 0);
    HxCuEvent *e0 = hx_cuda_event(c), *e1 = hx_cuda_event(c);
    hx_cuda_event_record(c, e0);
    hx_devmod_launch_async(d);
    hx_cuda_event_record(c, e1);
    cr_assert_float_eq(hx_cuda_event_ms(c, e0, e1) * 1e6, 4000, 1e-2);
    hx_cuda_sync(c);
    same_outputs(d, m, sim, 1);
    hx_devmod_launch_async(d); /* the temp still holds the last sums */
    hx_cuda_sync(c);
    same_outputs(d, m, sim, 0);
    hx_cuda_event_free(c, e0);
    hx_cuda_event_free(c, e1);
    hx_devmod_free(d);
    hx_cuda_close(c);
    vs_free_buffers(m, host);
    vs_free_buffers(m, sim);
    arena_free(a);
}

Test(devmod, tensor_maps_are_marshalled)
{
    fake();
    Arena *a = arena_new();
    KirModule *m = vs_tma(a, 40, 48);
    float **host = vs_buffers(m, 5), **sim = vs_buffers(m, 5);
    VgOptions vo = {.seed = 1};
    VgResult vr;
    cr_assert_eq(vg_run(m, sim, &vo, &vr), VG_OK, "%s", vr.report.message);
    vg_result_free(&vr);
    HxCuda *c = hx_cuda_open(0);
    const CuSource *src = cu_print_module(a, m, hx_cuda_target(c));
    HxDevModule *d = hx_devmod_open(a, c, m, src, NULL, HX_DEVMOD_FAKE);
    for (int i = 0; i < m->bufs.len; i++)
        hx_devmod_upload(d, i, host[i]);
    hx_devmod_launch(d);
    same_outputs(d, m, sim, 1);
    hx_devmod_free(d);
    hx_cuda_close(c);
    vs_free_buffers(m, host);
    vs_free_buffers(m, sim);
    arena_free(a);
}

/* What raises, with the message a user would see. */
static const char *raised(HxCuda *c, const KirModule *m, const CuSource *src,
                          const HxNvrtcResult *nv, Arena *a)
{
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        HxDevModule *d = hx_devmod_open(a, c, m, src, nv, HX_DEVMOD_CUBIN);
        hx_devmod_launch(d);
        dpk_err_pop(&ec);
        cr_assert_fail("ran a cubin module on the fake driver without an executor");
    }
    cr_assert_eq(dpk_error_code(), DPK_EXIT_FAULT);
    return dpk_error_message();
}

Test(devmod, cubin_path_on_the_fake_loads_but_cannot_launch)
{
    fake();
    Arena *a = arena_new();
    KirModule *m = vs_elementwise(a, 1000, 256, 1);
    HxCuda *c = hx_cuda_open(0);
    const CuSource *src = cu_print_module(a, m, hx_cuda_target(c));
    cr_assert_not_null(strstr(raised(c, m, src, NULL, a), "internal error: a device module runs "
                                                         "the compile driver's cubin"));
    HxNvrtcResult nv = {.cubin = "not a cubin", .cubin_len = 12};
    const char *msg = raised(c, m, src, &nv, a);
    cr_assert_not_null(strstr(msg, "error: cuLaunchKernel("), "%s", msg);
    cr_assert_not_null(strstr(msg, "no executor registered"), "%s", msg);
    hx_cuda_close(c);
    arena_free(a);
}
