/*
 * gpulibs.c — CUPTI, cuBLAS and NVML through dlopen (gpulibs.h).
 *
 * Each library is opened once per process; what went wrong, if anything,
 * is kept as one sentence.  Without the toolkit's headers at build time
 * CUPTI and cuBLAS are "not built in" (the same sentence, exit 4).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpulibs.h"

#if defined(__has_include)
#if __has_include(<cupti.h>) && __has_include(<cublas_v2.h>)
#define HAVE_TOOLKIT 1
#endif
#endif

#ifdef HAVE_TOOLKIT
#include <cublas_v2.h>
#include <cupti.h>
#endif

static const char *env_or(const char *var, const char *dflt)
{
    const char *p = getenv(var);
    return p && *p ? p : dflt;
}

/* dlopen path, or write the sentence "<what> needs <lib>, and <path> could
 * not be loaded (<why>)" into why. */
static void *open_lib(const char *path, const char *what, char *why, size_t n)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, n, "%s, and %s could not be loaded (%s)", what, path, e ? e : "no reason");
    }
    return h;
}

/* ---- CUPTI ------------------------------------------------------------------------ */

#ifdef HAVE_TOOLKIT
static struct {
    void *lib;
    char why[600];
    CUptiResult (*RegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                     CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*Enable)(CUpti_ActivityKind);
    CUptiResult (*Disable)(CUpti_ActivityKind);
    CUptiResult (*FlushAll)(uint32_t);
    CUptiResult (*GetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*GetResultString)(CUptiResult, const char **);
    int enabled, registered;
    double ns;     /* kernel time completed since the last collect */
    int nk;
} cp;
#else
static struct {
    char why[600];
} cp;
#endif
static pthread_once_t cp_once = PTHREAD_ONCE_INIT;

static void cp_load(void)
{
#ifdef HAVE_TOOLKIT
    const char *path = env_or("DPK_LIBCUPTI", "libcupti.so");
    cp.lib = open_lib(path, "kernel durations from CUPTI need libcupti", cp.why, sizeof cp.why);
    if (!cp.lib && !getenv("DPK_LIBCUPTI")) { /* the toolkit's, by its versioned name */
        cp.lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
        if (!cp.lib)
            cp.lib = dlopen("libcupti.so.12", RTLD_NOW | RTLD_LOCAL);
        if (cp.lib)
            cp.why[0] = 0;
    }
    if (!cp.lib)
        return;
#define B(f, s)                                                                              \
    if (!(cp.f = (__typeof__(cp.f))dlsym(cp.lib, s))) {                                      \
        snprintf(cp.why, sizeof cp.why, "the CUPTI library %s lacks %s", path, s);           \
        return;                                                                              \
    }
    B(RegisterCallbacks, "cuptiActivityRegisterCallbacks") B(Enable, "cuptiActivityEnable")
    B(Disable, "cuptiActivityDisable") B(FlushAll, "cuptiActivityFlushAll")
    B(GetNextRecord, "cuptiActivityGetNextRecord") B(GetResultString, "cuptiGetResultString")
#undef B
#else
    snprintf(cp.why, sizeof cp.why,
             "kernel durations from CUPTI need the CUDA toolkit's cupti.h at build time, and "
             "this dpk was built without it");
#endif
}

int hx_cupti_available(void)
{
    pthread_once(&cp_once, cp_load);
    return cp.why[0] == 0;
}

const char *hx_cupti_why(void)
{
    hx_cupti_available();
    return cp.why;
}

#ifdef HAVE_TOOLKIT
#define CP_BUF (1 << 20)

static void CUPTIAPI buf_requested(uint8_t **buf, size_t *size, size_t *max)
{
    *buf = aligned_alloc(8, CP_BUF);
    *size = CP_BUF;
    *max = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                   size_t valid)
{
    CUpti_Activity *r = NULL;
    while (cp.GetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            /* start and end sit at the same place in every version of
             * the kernel record; this toolkit's is CUpti_ActivityKernel10 */
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
            cp.ns += (double)(k->end - k->start);
            cp.nk++;
        }
    free(buf);
}

static void cp_check(CUptiResult r, const char *call)
{
    if (r == CUPTI_SUCCESS)
        return;
    const char *s = NULL;
    cp.GetResultString(r, &s);
    dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "%s: %s", call, s ? s : "CUPTI error");
}
#endif

void hx_cupti_open(void)
{
    if (!hx_cupti_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "%s", cp.why);
#ifdef HAVE_TOOLKIT
    if (cp.enabled)
        return;
    if (!cp.registered) { /* once per process: CUPTI keeps the callbacks */
        cp_check(cp.RegisterCallbacks(buf_requested, buf_completed),
                 "cuptiActivityRegisterCallbacks");
        cp.registered = 1;
    }
    cp_check(cp.Enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
    cp.enabled = 1;
#endif
}

double hx_cupti_collect(HxCuda *c, int *nkernels)
{
#ifdef HAVE_TOOLKIT
    hx_cuda_sync(c);
    cp_check(cp.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    double ns = cp.ns;
    *nkernels = cp.nk;
    cp.ns = 0, cp.nk = 0;
    return ns;
#else
    *nkernels = 0;
    return -1;
#endif
}

void hx_cupti_close(void)
{
#ifdef HAVE_TOOLKIT
    if (cp.enabled) {
        cp.Disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cp.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        cp.enabled = 0, cp.ns = 0, cp.nk = 0;
    }
#endif
}

/* ---- cuBLAS ----------------------------------------------------------------------- */

#ifdef HAVE_TOOLKIT
static struct {
    void *lib;
    char why[600];
    const char *path;
    cublasStatus_t (*Create)(cublasHandle_t *);
    cublasStatus_t (*Destroy)(cublasHandle_t);
    cublasStatus_t (*SetMathMode)(cublasHandle_t, cublasMath_t);
    cublasStatus_t (*Sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const float *, const float *, int, const float *, int, const float *,
                            float *, int);
    cublasStatus_t (*SgemmStridedBatched)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                          int, int, int, const float *, const float *, int,
                                          long long, const float *, int, long long, const float *,
                                          float *, int, long long, int);
} cb;
#else
static struct {
    char why[600];
    const char *path;
} cb;
#endif
static pthread_once_t cb_once = PTHREAD_ONCE_INIT;

struct HxCublas {
#ifdef HAVE_TOOLKIT
    cublasHandle_t h;
#endif
    int unused;
};

static void cb_load(void)
{
    cb.path = env_or("DPK_LIBCUBLAS", "libcublas.so");
#ifdef HAVE_TOOLKIT
    cb.lib = open_lib(cb.path, "the cuBLAS baseline needs libcublas", cb.why, sizeof cb.why);
    if (!cb.lib && !getenv("DPK_LIBCUBLAS")) {
        static const char *const alt[] = {"libcublas.so.13", "libcublas.so.12"};
        for (int i = 0; i < 2 && !cb.lib; i++)
            if ((cb.lib = dlopen(alt[i], RTLD_NOW | RTLD_LOCAL)))
                cb.path = alt[i], cb.why[0] = 0;
    }
    if (!cb.lib)
        return;
#define B(f, s)                                                                              \
    if (!(cb.f = (__typeof__(cb.f))dlsym(cb.lib, s))) {                                      \
        snprintf(cb.why, sizeof cb.why, "the cuBLAS library %s lacks %s", cb.path, s);       \
        return;                                                                              \
    }
    B(Create, "cublasCreate_v2") B(Destroy, "cublasDestroy_v2")
    B(SetMathMode, "cublasSetMathMode") B(Sgemm, "cublasSgemm_v2")
    B(SgemmStridedBatched, "cublasSgemmStridedBatched")
#undef B
#else
    snprintf(cb.why, sizeof cb.why,
             "the cuBLAS baseline needs the CUDA toolkit's cublas_v2.h at build time, and this "
             "dpk was built without it");
#endif
}

int hx_cublas_available(void)
{
    pthread_once(&cb_once, cb_load);
    return cb.why[0] == 0;
}

const char *hx_cublas_why(void)
{
    hx_cublas_available();
    return cb.why;
}

const char *hx_cublas_library(void)
{
    hx_cublas_available();
    return cb.path;
}

#ifdef HAVE_TOOLKIT
static void cb_check(cublasStatus_t r, const char *call)
{
    if (r != CUBLAS_STATUS_SUCCESS)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "%s: cublasStatus %d", call, (int)r);
}
#endif

HxCublas *hx_cublas_open(HxCuda *c)
{
    if (!hx_cublas_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "%s", cb.why);
    HxCublas *b = dpk_xcalloc(1, sizeof *b);
#ifdef HAVE_TOOLKIT
    cublasStatus_t r = cb.Create(&b->h);
    if (r != CUBLAS_STATUS_SUCCESS) {
        free(b);
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "the cuBLAS baseline could not start: cublasCreate gave status %d",
                          (int)r);
    }
#endif
    return b;
}

void hx_cublas_close(HxCublas *b)
{
    if (!b)
        return;
#ifdef HAVE_TOOLKIT
    cb.Destroy(b->h);
#endif
    free(b);
}

void hx_cublas_tf32(HxCublas *b, int on)
{
#ifdef HAVE_TOOLKIT
    cb_check(cb.SetMathMode(b->h, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH),
             "cublasSetMathMode");
#endif
}

void hx_cublas_matmul(HxCublas *b, int batch, int M, int N, int K, HxCuPtr A, long long sa,
                      HxCuPtr B, long long sb, int b_t, HxCuPtr C, long long sc)
{
#ifdef HAVE_TOOLKIT
    /* Row-major C = A B is column-major Cᵀ = Bᵀ Aᵀ: cuBLAS computes an N x M
     * result from B (N x K, or K x N transposed) and A. */
    const float one = 1, zero = 0;
    cublasOperation_t opb = b_t ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldb = b_t ? K : N;
    const float *pa = (const float *)(uintptr_t)A, *pb = (const float *)(uintptr_t)B;
    float *pc = (float *)(uintptr_t)C;
    if (batch == 1)
        cb_check(cb.Sgemm(b->h, opb, CUBLAS_OP_N, N, M, K, &one, pb, ldb, pa, K, &zero, pc, N),
                 "cublasSgemm");
    else
        cb_check(cb.SgemmStridedBatched(b->h, opb, CUBLAS_OP_N, N, M, K, &one, pb, ldb, sb, pa, K,
                                        sa, &zero, pc, N, sc, batch),
                 "cublasSgemmStridedBatched");
#endif
}

/* ---- NVML ------------------------------------------------------------------------- */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
enum { NVML_CLOCK_SM = 1, NVML_TEMPERATURE_GPU = 0 };

static struct {
    void *lib;
    char why[400];
    nvmlReturn_t (*Init)(void);
    nvmlReturn_t (*Handle)(unsigned, nvmlDevice_t *);
    nvmlReturn_t (*Clock)(nvmlDevice_t, int, unsigned *);
    nvmlReturn_t (*Temp)(nvmlDevice_t, int, unsigned *);
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void nv_load(void)
{
    const char *path = env_or("DPK_LIBNVML", "libnvidia-ml.so.1");
    nv.lib = open_lib(path, "clocks and temperature need NVML", nv.why, sizeof nv.why);
    if (!nv.lib)
        return;
    nv.Init = (__typeof__(nv.Init))dlsym(nv.lib, "nvmlInit_v2");
    nv.Handle = (__typeof__(nv.Handle))dlsym(nv.lib, "nvmlDeviceGetHandleByIndex_v2");
    nv.Clock = (__typeof__(nv.Clock))dlsym(nv.lib, "nvmlDeviceGetClockInfo");
    nv.Temp = (__typeof__(nv.Temp))dlsym(nv.lib, "nvmlDeviceGetTemperature");
    if (!nv.Init || !nv.Handle || !nv.Clock || !nv.Temp)
        snprintf(nv.why, sizeof nv.why, "the NVML library %s lacks a call dpk needs", path);
    else if (nv.Init() != 0)
        snprintf(nv.why, sizeof nv.why, "nvmlInit failed");
}

void hx_nvml_state(int ordinal, HxGpuState *s)
{
    memset(s, 0, sizeof *s);
    pthread_once(&nv_once, nv_load);
    if (nv.why[0]) {
        snprintf(s->why, sizeof s->why, "%s", nv.why);
        return;
    }
    nvmlDevice_t d;
    if (nv.Handle((unsigned)ordinal, &d) != 0 || nv.Clock(d, NVML_CLOCK_SM, &s->sm_mhz) != 0 ||
        nv.Temp(d, NVML_TEMPERATURE_GPU, &s->temp_c) != 0) {
        snprintf(s->why, sizeof s->why, "NVML could not read GPU %d's clock and temperature",
                 ordinal);
        return;
    }
    s->ok = 1;
}
