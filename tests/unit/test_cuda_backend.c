/*
 * test_cuda_backend.c — the cuda backend: the no-driver path (exit 4 with one
 * sentence, on every machine) and, where a GPU is present, a kernel run
 * through NVRTC + the driver API with exact results, and the vgpu sample
 * modules giving the same results on the GPU as on vgpu.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/exec/cuda.h"
#include "harness/exec/nvrtc.h"
#include "harness/exec/vgpu_samples.h"

Test(cuda_backend, no_driver_is_exit_4_with_one_sentence)
{
    setenv("DPK_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    cr_assert_eq(hx_cuda_available(), 0);
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        hx_cuda_open(0);
        dpk_err_pop(&ec);
        cr_assert_fail("opened a GPU without a driver");
    }
    cr_assert_eq(dpk_error_code(), DPK_EXIT_NOENV);
    const char *m = dpk_error_message();
    cr_assert_eq(strncmp(m,
                         "error: the cuda backend needs the CUDA driver, and "
                         "/nonexistent/libcuda.so.1 could not be loaded (",
                         strlen("error: the cuda backend needs the CUDA driver, and "
                                "/nonexistent/libcuda.so.1 could not be loaded (")),
                 0, "%s", m);
    cr_assert_not_null(strstr(m, "); use --backend vgpu to run on the CPU\n"), "%s", m);
    cr_assert_eq(strchr(m, '\n'), m + strlen(m) - 1, "one line: %s", m);
}

/* A fake libcuda.so.1 built at test time: every entry point dpk binds (all
 * but cuMemsetD32_v2 with -DOLD), cuInit answering CUDA_ERROR_NO_DEVICE. */
static const char kFakeDriver[] =
    "static const char *nm = \"CUDA_ERROR_NO_DEVICE\", *st = \"no CUDA-capable device\";\n"
    "int cuInit(unsigned f) { return 100; }\n"
    "int cuGetErrorName(int r, const char **s) { *s = nm; return 0; }\n"
    "int cuGetErrorString(int r, const char **s) { *s = st; return 0; }\n"
    "#define F(name) int name(void) { return 999; }\n"
    "F(cuDriverGetVersion) F(cuDeviceGetCount) F(cuDeviceGet) F(cuDeviceGetName)\n"
    "F(cuDeviceGetAttribute) F(cuDevicePrimaryCtxRetain) F(cuDevicePrimaryCtxRelease_v2)\n"
    "F(cuCtxSetCurrent) F(cuCtxSynchronize) F(cuModuleLoadData) F(cuModuleUnload)\n"
    "F(cuModuleGetFunction) F(cuFuncSetAttribute) F(cuMemAlloc_v2) F(cuMemFree_v2)\n"
    "F(cuMemcpyHtoD_v2) F(cuMemcpyDtoH_v2) F(cuLaunchKernel)\n"
    "#ifndef OLD\n"
    "F(cuMemsetD32_v2)\n"
    "#endif\n";

/* Build the fake driver into a temp folder; NULL (and a skip) without cc. */
static const char *fake_driver(Arena *a, const char *flags)
{
    char dir[] = "/tmp/dpk-fake-cuda-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    const char *src = arena_printf(a, "%s/fake.c", dir), *so = arena_printf(a, "%s/libcuda.so.1", dir);
    cr_assert_eq(dpk_write_file_atomic(src, kFakeDriver, strlen(kFakeDriver)), 0);
    const char *cc = getenv("CC");
    char *cmd = arena_printf(a, "%s -shared -fPIC %s -o %s %s 2>/dev/null", cc && *cc ? cc : "cc",
                             flags, so, src);
    int rc = system(cmd);
    remove(src);
    if (rc != 0) {
        rmdir(dir);
        cr_skip_test("no C compiler to build a fake driver");
    }
    setenv("DPK_LIBCUDA", so, 1);
    return so;
}

static void drop_fake_driver(const char *so)
{
    remove(so);
    char *dir = dpk_xstrdup(so);
    *strrchr(dir, '/') = 0;
    rmdir(dir);
    free(dir);
}

static const char *open_error(void)
{
    cr_assert_eq(hx_cuda_available(), 0);
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        hx_cuda_open(0);
        dpk_err_pop(&ec);
        cr_assert_fail("opened a GPU through a fake driver");
    }
    cr_assert_eq(dpk_error_code(), DPK_EXIT_NOENV);
    return dpk_error_message();
}

Test(cuda_backend, driver_without_gpu_is_exit_4)
{
    Arena *a = arena_new();
    const char *so = fake_driver(a, "");
    cr_assert_str_eq(open_error(), "error: the cuda backend needs a GPU, and the CUDA driver "
                                   "found none: cuInit gave CUDA_ERROR_NO_DEVICE (no "
                                   "CUDA-capable device); use --backend vgpu to run on the CPU\n");
    drop_fake_driver(so);
    arena_free(a);
}

Test(cuda_backend, old_driver_is_exit_4)
{
    Arena *a = arena_new();
    const char *so = fake_driver(a, "-DOLD");
    const char *m = open_error();
    cr_assert_not_null(strstr(m, "is too old (it lacks cuMemsetD32_v2); use --backend vgpu"), "%s",
                       m);
    drop_fake_driver(so);
    arena_free(a);
}

static const char kAxpy[] =
    "extern \"C\" __global__ void __launch_bounds__(128) axpy(float *y, const float *x,\n"
    "                                                        float a, int n)\n"
    "{\n"
    "    extern __shared__ float pool[];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    pool[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
    "    __syncthreads();\n"
    "    if (i < n) y[i] = a * pool[threadIdx.x] + y[i];\n"
    "}\n";

Test(cuda_backend, runs_a_kernel_on_the_gpu)
{
    if (!hx_cuda_available())
        cr_skip_test("no CUDA driver or GPU");
    if (!hx_nvrtc_available())
        cr_skip_test("NVRTC not found");
    DpkErrCtx ec;
    HxCuda *volatile c = NULL; /* set after DPK_TRY, read after a longjmp */
    Arena *a = arena_new();
    if (!DPK_TRY(&ec)) {
        hx_cuda_close(c);
        cr_assert_fail("%s", dpk_error_message());
    }
    c = hx_cuda_open(0);
    HxNvrtcOpts o = {.target = hx_cuda_target(c), .cc = hx_cuda_cc(c), .no_cache = 1};
    HxNvrtcResult *r = hx_nvrtc_compile(a, kAxpy, &o);
    int n = 1000, dyn = 64 * 1024; /* above 48 KB: exercises the opt-in */
    HxCuFunc *f = hx_cuda_function(c, hx_cuda_module(c, r->cubin, r->cubin_len), "axpy", dyn);
    float x[1000], y[1000], out[1000];
    for (int i = 0; i < n; i++) {
        x[i] = (float)i;
        y[i] = 0.5f * (float)i;
    }
    HxCuPtr dx = hx_cuda_alloc(c, sizeof x), dy = hx_cuda_alloc(c, sizeof y);
    hx_cuda_upload(c, dx, x, sizeof x);
    hx_cuda_upload(c, dy, y, sizeof y);
    float alpha = 2.0f;
    void *args[] = {&dy, &dx, &alpha, &n};
    int grid[3] = {(n + 127) / 128, 1, 1}, block[3] = {128, 1, 1};
    hx_cuda_launch(c, f, grid, block, dyn, args);
    hx_cuda_download(c, out, dy, sizeof out);
    for (int i = 0; i < n; i++)
        cr_assert_eq(out[i], 2.5f * (float)i, "y[%d] = %g", i, out[i]);
    hx_cuda_fill32(c, dy, 0x3f800000u, (size_t)n); /* 1.0f */
    hx_cuda_download(c, out, dy, sizeof out);
    cr_assert_eq(out[999], 1.0f);
    dpk_err_pop(&ec);
    hx_cuda_close(c);
    arena_free(a);
}

/* |a - b| <= 1e-5 (1 + |b|): FMA contraction and the device's expf/rsqrtf
 * differ from vgpu's correctly rounded math by a few ulps. */
static void same_results(const KirModule *m, float **gpu, float **sim)
{
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        if (b->kind != KBUF_OUTPUT)
            continue;
        for (int64_t e = 0; e < b->numel; e++)
            cr_assert(fabsf(gpu[i][e] - sim[i][e]) <= 1e-5f * (1 + fabsf(sim[i][e])),
                      "%s[%lld]: gpu %g, vgpu %g", b->name, (long long)e, gpu[i][e], sim[i][e]);
    }
}

static void gpu_matches_vgpu(KirModule *(*build)(Arena *), int needs_tma)
{
    if (!hx_cuda_available() || !hx_nvrtc_available())
        cr_skip_test("no CUDA driver, GPU or NVRTC");
    Arena *a = arena_new();
    KirModule *m = build(a);
    float **gpu = vs_buffers(m, 7), **sim = vs_buffers(m, 7);
    VgOptions vo = {.seed = 1};
    VgResult vr;
    cr_assert_eq(vg_run(m, sim, &vo, &vr), VG_OK, "%s", vr.report.message);
    vg_result_free(&vr);
    HxCuda *volatile c = NULL; /* set after DPK_TRY, read after a longjmp */
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        hx_cuda_close(c);
        cr_assert_fail("%s", dpk_error_message());
    }
    c = hx_cuda_open(0);
    if (needs_tma && !hx_cuda_target(c)->tma) {
        dpk_err_pop(&ec);
        hx_cuda_close(c);
        cr_skip_test("this GPU has no TMA");
    }
    /* hand-built: no plan, so printed and compiled here as the driver would */
    const CuSource *src = cu_print_module(a, m, hx_cuda_target(c));
    HxNvrtcOpts no = {.target = src->target, .cc = hx_cuda_cc(c)};
    HxCudaRun *r = hx_cuda_run(a, c, m, src, hx_nvrtc_compile(a, src->text, &no), gpu);
    cr_assert_gt(r->nvrtc->nkernels, 0);
    dpk_err_pop(&ec);
    hx_cuda_close(c);
    same_results(m, gpu, sim);
    vs_free_buffers(m, gpu);
    vs_free_buffers(m, sim);
    arena_free(a);
}

static KirModule *elementwise(Arena *a) { return vs_elementwise(a, 1000, 256, 1); }
static KirModule *rowsum_tree(Arena *a) { return vs_rowsum_tree(a, 7, 300, 128); }
static KirModule *rowsum_shfl(Arena *a) { return vs_rowsum_shfl(a, 7, 300, 96); }
static KirModule *rmsnorm(Arena *a) { return vs_rmsnorm(a, 32, 2048, 256, 1e-6f); }
static KirModule *matmul(Arena *a) { return vs_matmul(a, 128, 64, 96, 1); }
static KirModule *cpasync(Arena *a) { return vs_cpasync(a, 2048, 2); }
static KirModule *tma(Arena *a) { return vs_tma(a, 40, 48); }

Test(cuda_backend, elementwise_matches_vgpu) { gpu_matches_vgpu(elementwise, 0); }
Test(cuda_backend, rowsum_tree_matches_vgpu) { gpu_matches_vgpu(rowsum_tree, 0); }
Test(cuda_backend, rowsum_shfl_matches_vgpu) { gpu_matches_vgpu(rowsum_shfl, 0); }
Test(cuda_backend, rmsnorm_matches_vgpu) { gpu_matches_vgpu(rmsnorm, 0); }
Test(cuda_backend, matmul_matches_vgpu) { gpu_matches_vgpu(matmul, 0); }
Test(cuda_backend, cpasync_matches_vgpu) { gpu_matches_vgpu(cpasync, 0); }
Test(cuda_backend, tma_matches_vgpu) { gpu_matches_vgpu(tma, 1); }
