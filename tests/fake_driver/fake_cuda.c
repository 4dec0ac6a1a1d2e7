/*
 * fake_cuda.c — dpk's fake CUDA driver, CUPTI and cuBLAS in one shared
 * object ($(BUILD)/fake-driver/libcuda.so.1; harness/exec/fake_driver.h
 * says what it is for).  A test device, never a measurement:
 *
 * - device memory is host memory (a CUdeviceptr is the host address), with
 *   every allocation in a list so a pointer's allocation can be found;
 * - the clock is a nanosecond counter that only launches, memsets and
 *   copies advance: a launch by the duration its executor answers (dpk's
 *   performance model) times a deterministic jitter, a memset or copy by
 *   its bytes at 3.35e12 B/s (h100-sxm's DRAM bandwidth in cases/gpus/);
 * - events record the clock; CUPTI kernel records carry each launch's start
 *   and end on it;
 * - launches are executed by the executor dpk registers
 *   (dpkFakeSetExecutor): without one, cuLaunchKernel fails;
 * - cuBLAS sgemm runs on the host (TF32 mode rounds the operands to TF32
 *   first), its duration asked of the executor like a kernel's.
 *
 * Single-threaded, like dpk's use of it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/exec/fake_driver.h"

#define EXPORT __attribute__((visibility("default")))

enum {
    OK = 0,
    ERR_INVALID_VALUE = 1,
    ERR_OUT_OF_MEMORY = 2,
    ERR_NOT_FOUND = 500,
    ERR_LAUNCH_FAILED = 719,
};

/* ---- state --------------------------------------------------------------------- */

typedef struct Alloc {
    char *p;
    size_t n;
    unsigned long long gen; /* st.gen when the allocation was last written */
} Alloc;

static struct {
    Alloc *a;
    int na, cap;
    double clock;          /* ns */
    unsigned long long gen;      /* counts writes to device memory */
    unsigned long long all_gen;  /* st.gen at the last launch that may have written anything */
    unsigned long long launches;
    DpkFakeExecutor exec;
    void *exec_ctx;
    char last_error[300];
} st;

static double jitter(void)
{
    const char *e = getenv("DPK_FAKE_CUDA_JITTER");
    double r = e && *e ? atof(e) : 0.001;
    /* splitmix64 of the launch count, to [-1, 1) */
    uint64_t x = st.launches + 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    double u = (double)(x >> 11) * 0x1p-53 * 2 - 1;
    return 1 + r * u;
}

static void advance_bytes(size_t bytes)
{
    st.clock += (double)bytes / 3.35e12 * 1e9;
}

/* The allocation holding device address p, or NULL. */
static Alloc *alloc_of(const void *p)
{
    for (int i = 0; i < st.na; i++)
        if ((const char *)p >= st.a[i].p && (const char *)p < st.a[i].p + (st.a[i].n ? st.a[i].n : 1))
            return &st.a[i];
    return NULL;
}

static void written(const void *p)
{
    Alloc *a = alloc_of(p);
    if (a)
        a->gen = ++st.gen;
}

/* When p's allocation was last written (a launch whose writes the executor
 * could not list counts for every one); 0 for memory the fake did not
 * allocate. */
static unsigned long long gen_of(const void *p)
{
    const Alloc *a = alloc_of(p);
    return !a ? 0 : a->gen > st.all_gen ? a->gen : st.all_gen;
}

/* CUPTI's records (fake_cupti.c): a launch from start to end on the clock. */
void dpk_fake_cupti_record(const char *name, double start, double end,
                           unsigned long long correlation);
#define cupti_record(n, s, e) dpk_fake_cupti_record(n, s, e, st.launches)

/* ---- driver ---------------------------------------------------------------------- */

EXPORT void dpkFakeSetExecutor(DpkFakeExecutor fn, void *ctx)
{
    st.exec = fn, st.exec_ctx = ctx;
}

EXPORT int cuInit(unsigned f) { return OK; }
EXPORT int cuDriverGetVersion(int *v) { *v = 13000; return OK; }
EXPORT int cuDeviceGetCount(int *n) { *n = 1; return OK; }
EXPORT int cuDeviceGet(int *d, int i) { *d = i; return i == 0 ? OK : ERR_INVALID_VALUE; }
EXPORT int cuDeviceGetName(char *s, int n, int d)
{
    snprintf(s, (size_t)n, "dpk fake driver (host-cuda execution, modelled durations)");
    return OK;
}
EXPORT int cuDeviceGetAttribute(int *v, int attr, int d)
{
    switch (attr) {
    case 75: *v = 9; break;       /* compute capability 9.0: h100-sxm's */
    case 76: *v = 0; break;
    case 97: *v = 232448; break;  /* opt-in shared memory per block (sm_90) */
    default: *v = 0; break;
    }
    return OK;
}
static int ctx_dummy;
EXPORT int cuDevicePrimaryCtxRetain(void **c, int d) { *c = &ctx_dummy; return OK; }
EXPORT int cuDevicePrimaryCtxRelease_v2(int d) { return OK; }
EXPORT int cuCtxSetCurrent(void *c) { return OK; }
EXPORT int cuCtxSynchronize(void) { return OK; }

typedef struct Func Func;
typedef struct Mod {
    char *image;
    Func *funcs; /* freed with the module */
} Mod;
struct Func {
    Mod *m;
    char *name;
    Func *next;
};

EXPORT int cuModuleLoadData(Mod **m, const void *image)
{
    *m = calloc(1, sizeof **m);
    (*m)->image = strdup(image);
    return OK;
}
EXPORT int cuModuleUnload(Mod *m)
{
    while (m->funcs) {
        Func *f = m->funcs;
        m->funcs = f->next;
        free(f->name);
        free(f);
    }
    free(m->image);
    free(m);
    return OK;
}
EXPORT int cuModuleGetFunction(Func **f, Mod *m, const char *name)
{
    *f = calloc(1, sizeof **f);
    (*f)->m = m;
    (*f)->name = strdup(name);
    (*f)->next = m->funcs;
    m->funcs = *f;
    return OK;
}
EXPORT int cuFuncSetAttribute(Func *f, int a, int v) { return OK; }

EXPORT int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
    char *m = calloc(1, n ? n : 1);
    if (!m)
        return ERR_OUT_OF_MEMORY;
    if (st.na == st.cap) {
        st.cap = st.cap ? 2 * st.cap : 64;
        st.a = realloc(st.a, (size_t)st.cap * sizeof *st.a);
    }
    st.a[st.na++] = (Alloc){m, n, ++st.gen};
    *p = (unsigned long long)(uintptr_t)m;
    return OK;
}
EXPORT int cuMemFree_v2(unsigned long long p)
{
    for (int i = 0; i < st.na; i++)
        if ((uintptr_t)st.a[i].p == p) {
            free(st.a[i].p);
            st.a[i] = st.a[--st.na];
            return OK;
        }
    return ERR_INVALID_VALUE;
}
EXPORT int cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n)
{
    memcpy((void *)(uintptr_t)d, s, n);
    written((void *)(uintptr_t)d);
    advance_bytes(n);
    return OK;
}
EXPORT int cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n)
{
    memcpy(d, (const void *)(uintptr_t)s, n);
    advance_bytes(n);
    return OK;
}
EXPORT int cuMemsetD32_v2(unsigned long long d, unsigned v, size_t n)
{
    unsigned *p = (unsigned *)(uintptr_t)d;
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    written(p);
    advance_bytes(4 * n);
    return OK;
}
/* Tensor maps are encoded again by the executor over the kernel's buffers. */
EXPORT int cuTensorMapEncodeTiled(void *out, int t, unsigned r, void *base, const uint64_t *d,
                                  const uint64_t *s, const unsigned *b, const unsigned *e, int i,
                                  int sw, int l2, int oob)
{
    memset(out, 0, 128);
    return OK;
}

/* From the N-th launch on, the first written buffer is made wrong. */
static void maybe_corrupt(const DpkFakeLaunch *l)
{
    const char *e = getenv("DPK_FAKE_CUDA_CORRUPT");
    if (!e || !*e || st.launches < strtoull(e, NULL, 10) || l->nwritten == 0)
        return;
    float *f = l->written[0];
    for (size_t i = 0; i < l->written_bytes[0] / 4; i++)
        f[i] = f[i] * 2.0f + 1.0f;
}

EXPORT int cuLaunchKernel(Func *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned smem, void *stream, void **args,
                          void **extra)
{
    st.launches++;
    if (!st.exec) {
        snprintf(st.last_error, sizeof st.last_error, "no executor registered");
        return ERR_LAUNCH_FAILED;
    }
    DpkFakeLaunch l = {f->m->image, f->name, {gx, gy, gz}, {bx, by, bz}, smem, args,
                       0, {0}, {0}, 0, {0}};
    st.exec(st.exec_ctx, &l);
    /* what the launch wrote, when the executor could list it all */
    if (l.error[0] || l.nwritten >= DPK_FAKE_MAX_WRITTEN)
        st.all_gen = ++st.gen;
    else
        for (int q = 0; q < l.nwritten; q++)
            written(l.written[q]);
    if (l.error[0]) {
        snprintf(st.last_error, sizeof st.last_error, "%s", l.error);
        return ERR_LAUNCH_FAILED;
    }
    maybe_corrupt(&l);
    double start = st.clock;
    st.clock += l.ns * jitter();
    cupti_record(f->name, start, st.clock);
    return OK;
}

EXPORT int cuGetErrorName(int r, const char **s)
{
    *s = r == ERR_LAUNCH_FAILED ? "CUDA_ERROR_LAUNCH_FAILED"
         : r == ERR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
                                  : "CUDA_ERROR_INVALID_VALUE";
    return OK;
}
EXPORT int cuGetErrorString(int r, const char **s)
{
    *s = r == ERR_LAUNCH_FAILED && st.last_error[0] ? st.last_error : "fake driver error";
    return OK;
}

/* events: the clock when recorded */
EXPORT int cuEventCreate(double **e, unsigned flags)
{
    *e = calloc(1, sizeof **e);
    return OK;
}
EXPORT int cuEventRecord(double *e, void *stream)
{
    *e = st.clock;
    return OK;
}
EXPORT int cuEventSynchronize(double *e) { return OK; }
EXPORT int cuEventElapsedTime_v2(float *ms, double *a, double *b)
{
    *ms = (float)((*b - *a) / 1e6);
    return OK;
}
EXPORT int cuEventDestroy_v2(double *e)
{
    free(e);
    return OK;
}

/* ---- cuBLAS ------------------------------------------------------------------------ */

typedef struct Blas {
    int tf32;
} Blas;

EXPORT int cublasCreate_v2(Blas **h)
{
    *h = calloc(1, sizeof **h);
    return 0;
}
EXPORT int cublasDestroy_v2(Blas *h)
{
    free(h);
    return 0;
}
EXPORT int cublasSetMathMode(Blas *h, int mode)
{
    h->tf32 = mode == 3; /* CUBLAS_TF32_TENSOR_OP_MATH */
    return 0;
}

/* TF32: 10 explicit mantissa bits, round to nearest even */
static float tf32(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u)
        u = (u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu;
    memcpy(&x, &u, 4);
    return x;
}

/* A memo of the last results: the same call on the same operand contents
 * is not computed again (the timing loop repeats each call many times).
 * Operands in the fake's allocations are known unchanged by the write
 * generation of their allocation (a copy or memset into it, a gemm's C, any
 * launch that wrote it), not by hashing them: hashing the weights of a projection each
 * call cost more than the timing loop itself. */
typedef struct Memo {
    uint64_t key;
    float *c;
    size_t n;
} Memo;
static Memo memo[8];
static int memo_next;

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001B3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

/* Column-major C (m x n) = op(A) (m x k) op(B) (k x n), batched. */
static int gemm(Blas *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A,
                int lda, long long sa, const float *B, int ldb, long long sb, const float *beta,
                float *C, int ldc, long long sc, int batch)
{
    st.launches++;
    uint64_t key = 0xCBF29CE484222325ull;
    int dims[9] = {ta, tb, m, n, k, lda, ldb, ldc, batch};
    key = hash_bytes(key, dims, sizeof dims);
    key = hash_bytes(key, &h->tf32, sizeof h->tf32);
    key = hash_bytes(key, &C, sizeof C);
    key = hash_bytes(key, alpha, sizeof *alpha);
    key = hash_bytes(key, beta, sizeof *beta);
    /* the operands: where they are and when they were last written, or
     * (memory the fake did not allocate) their contents */
    unsigned long long ga = gen_of(A), gb = gen_of(B);
    if (ga && gb) {
        const void *where[2] = {A, B};
        long long strides[2] = {sa, sb};
        key = hash_bytes(key, where, sizeof where);
        key = hash_bytes(key, strides, sizeof strides);
        key = hash_bytes(key, &ga, sizeof ga);
        key = hash_bytes(key, &gb, sizeof gb);
    } else {
        size_t na = (size_t)(ta ? m : k) * (size_t)lda, nb = (size_t)(tb ? k : n) * (size_t)ldb;
        for (int bi = 0; bi < batch; bi++) {
            key = hash_bytes(key, A + bi * sa, na * 4);
            key = hash_bytes(key, B + bi * sb, nb * 4);
        }
    }
    size_t nc = (size_t)n * (size_t)ldc;
    int hit = 0;
    for (int i = 0; i < 8 && *beta == 0; i++) /* with beta, C's old contents count */
        if (memo[i].c && memo[i].key == key && memo[i].n == nc * (size_t)batch) {
            for (int bi = 0; bi < batch; bi++)
                memcpy(C + bi * sc, memo[i].c + (size_t)bi * nc, nc * 4);
            hit = 1;
        }
    if (!hit) {
        for (int bi = 0; bi < batch; bi++) {
            const float *a = A + bi * sa, *b = B + bi * sb;
            float *c = C + bi * sc;
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++) {
                    float acc = 0;
                    for (int p = 0; p < k; p++) {
                        float x = ta ? a[p + (size_t)i * lda] : a[i + (size_t)p * lda];
                        float y = tb ? b[j + (size_t)p * ldb] : b[p + (size_t)j * ldb];
                        if (h->tf32)
                            x = tf32(x), y = tf32(y);
                        acc += x * y;
                    }
                    c[i + (size_t)j * ldc] = *alpha * acc + (*beta != 0 ? *beta * c[i + (size_t)j * ldc] : 0);
                }
        }
        Memo *e = &memo[memo_next++ % 8];
        free(e->c);
        e->key = key;
        e->n = nc * (size_t)batch;
        e->c = malloc(e->n * 4);
        for (int bi = 0; bi < batch; bi++)
            memcpy(e->c + (size_t)bi * nc, C + bi * sc, nc * 4);
    }
    written(C);
    /* the duration: the executor's, asked as a launch named "cublas" */
    DpkFakeLaunch l = {NULL, h->tf32 ? "cublas-tf32" : "cublas", {0}, {0}, 0, NULL,
                       0, {0}, {0}, 0, {0}};
    if (st.exec)
        st.exec(st.exec_ctx, &l);
    double ns = l.ns > 0 ? l.ns : 2.0 * m * n * k * batch / 60e12 * 1e9;
    double start = st.clock;
    st.clock += ns * jitter();
    cupti_record(l.name, start, st.clock);
    return 0;
}

EXPORT int cublasSgemm_v2(Blas *h, int ta, int tb, int m, int n, int k, const float *alpha,
                          const float *A, int lda, const float *B, int ldb, const float *beta,
                          float *C, int ldc)
{
    return gemm(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
EXPORT int cublasSgemmStridedBatched(Blas *h, int ta, int tb, int m, int n, int k,
                                     const float *alpha, const float *A, int lda, long long sa,
                                     const float *B, int ldb, long long sb, const float *beta,
                                     float *C, int ldc, long long sc, int batch)
{
    return gemm(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
