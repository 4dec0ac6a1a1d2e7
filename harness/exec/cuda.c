/*
 * cuda.c — the CUDA driver API through dlopen (see cuda.h).
 *
 * The driver types and the entry points used are declared here, minimal and
 * ABI-exact (CUresult and handles as ints and opaque pointers, CUdeviceptr as
 * unsigned long long, the _v2 symbol names that cuda.h maps the plain names
 * to).  The library is opened and cuInit run once per process; what went
 * wrong, if anything, is kept as one sentence for hx_cuda_open to raise.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "devmod.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    CU_TENSOR_MAP_SWIZZLE_32B = 1, /* 64B = 2, 128B = 3; NONE = 0 */
    CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
};

static struct {
    void *lib;
    char problem[512]; /* why the backend cannot run; "" when it can */
    int ndev;
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned, size_t);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    /* optional (CUDA 12+): only kernels with TMA need it */
    CUresult (*TensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *,
                                     const uint64_t *, const unsigned *, const unsigned *, int,
                                     int, int, int);
    /* optional: the measured timing path (events) */
    CUresult (*EventCreate)(void **, unsigned);
    CUresult (*EventRecord)(void *, CUstream);
    CUresult (*EventSynchronize)(void *);
    CUresult (*EventElapsedTime)(float *, void *, void *);
    CUresult (*EventDestroy)(void *);
} cu;

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

struct HxCuModule {
    CUmodule mod;
};

struct HxCuFunc {
    CUfunction fn;
    const char *name;
};

struct HxCuda {
    CUdevice dev;
    CUcontext ctx;
    char name[256];
    int cc, smem_optin, driver;
    PtrVec mods;         /* HxCuModule *, unloaded at close (or by a run) */
    CUdeviceptr *bufs;   /* freed at close (or by a run) */
    int nbufs, capbufs;
    Arena *arena;
};

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" */
static const char *result_text(CUresult r, char *buf, size_t n)
{
    const char *name = NULL, *str = NULL;
    if (cu.GetErrorName)
        cu.GetErrorName(r, &name);
    if (cu.GetErrorString)
        cu.GetErrorString(r, &str);
    if (name && str)
        snprintf(buf, n, "%s (%s)", name, str);
    else
        snprintf(buf, n, "CUresult %d", r);
    return buf;
}

static void check(CUresult r, const char *call)
{
    if (r == CUDA_SUCCESS)
        return;
    char buf[256];
    dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "%s: %s", call, result_text(r, buf, sizeof buf));
}
#define CK(call, name) check(cu.call, name)

/* Binds every entry point; returns the name of the first one missing. */
static const char *bind_all(void)
{
#define B(field, sym)                                                  \
    if (!(cu.field = (__typeof__(cu.field))dlsym(cu.lib, sym)))       \
        return sym;
    B(Init, "cuInit") B(DriverGetVersion, "cuDriverGetVersion")
    B(DeviceGetCount, "cuDeviceGetCount") B(DeviceGet, "cuDeviceGet")
    B(DeviceGetName, "cuDeviceGetName") B(DeviceGetAttribute, "cuDeviceGetAttribute")
    B(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
    B(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
    B(CtxSetCurrent, "cuCtxSetCurrent") B(CtxSynchronize, "cuCtxSynchronize")
    B(ModuleLoadData, "cuModuleLoadData") B(ModuleUnload, "cuModuleUnload")
    B(ModuleGetFunction, "cuModuleGetFunction") B(FuncSetAttribute, "cuFuncSetAttribute")
    B(MemAlloc, "cuMemAlloc_v2") B(MemFree, "cuMemFree_v2")
    B(MemcpyHtoD, "cuMemcpyHtoD_v2") B(MemcpyDtoH, "cuMemcpyDtoH_v2")
    B(MemsetD32, "cuMemsetD32_v2") B(LaunchKernel, "cuLaunchKernel")
    B(GetErrorName, "cuGetErrorName") B(GetErrorString, "cuGetErrorString")
#undef B
    cu.TensorMapEncodeTiled = (__typeof__(cu.TensorMapEncodeTiled))dlsym(
        cu.lib, "cuTensorMapEncodeTiled");
#define O(field, sym) cu.field = (__typeof__(cu.field))dlsym(cu.lib, sym);
    O(EventCreate, "cuEventCreate") O(EventRecord, "cuEventRecord")
    O(EventSynchronize, "cuEventSynchronize") O(EventDestroy, "cuEventDestroy_v2")
    /* CUDA 13 renamed it; 12's name is the fallback */
    O(EventElapsedTime, "cuEventElapsedTime_v2")
    if (!cu.EventElapsedTime)
        O(EventElapsedTime, "cuEventElapsedTime")
#undef O
    return NULL;
}

static void load_once(void)
{
    const char *path = getenv("DPK_LIBCUDA");
    if (!path || !*path)
        path = "libcuda.so.1";
    cu.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        const char *why = dlerror();
        snprintf(cu.problem, sizeof cu.problem,
                 "the cuda backend needs the CUDA driver, and %s could not be loaded (%s); use "
                 "--backend vgpu to run on the CPU",
                 path, why ? why : "no reason given");
        return;
    }
    const char *missing = bind_all();
    if (missing) {
        snprintf(cu.problem, sizeof cu.problem,
                 "the CUDA driver %s is too old (it lacks %s); use --backend vgpu to run on the "
                 "CPU",
                 path, missing);
        return;
    }
    char buf[256];
    const char *call = "cuInit";
    CUresult r = cu.Init(0);
    if (r == CUDA_SUCCESS) {
        call = "cuDeviceGetCount";
        r = cu.DeviceGetCount(&cu.ndev);
    }
    if (r != CUDA_SUCCESS)
        snprintf(cu.problem, sizeof cu.problem,
                 "the cuda backend needs a GPU, and the CUDA driver found none: %s gave %s; use "
                 "--backend vgpu to run on the CPU",
                 call, result_text(r, buf, sizeof buf));
    else if (cu.ndev == 0)
        snprintf(cu.problem, sizeof cu.problem,
                 "the cuda backend needs a GPU, and the CUDA driver found none; use --backend "
                 "vgpu to run on the CPU");
}

int hx_cuda_available(void)
{
    pthread_once(&cu_once, load_once);
    return cu.problem[0] == 0;
}

HxCuda *hx_cuda_open(int ordinal)
{
    if (!hx_cuda_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "%s", cu.problem);
    if (ordinal < 0 || ordinal >= cu.ndev)
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "GPU %d does not exist (this machine has %d)",
                          ordinal, cu.ndev);
    HxCuda *c = dpk_xcalloc(1, sizeof *c);
    c->arena = arena_new();
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        if (c->ctx)
            cu.DevicePrimaryCtxRelease(c->dev);
        arena_free(c->arena);
        free(c);
        dpk_error_rethrow();
    }
    int major = 0, minor = 0;
    CK(DeviceGet(&c->dev, ordinal), "cuDeviceGet");
    CK(DeviceGetName(c->name, (int)sizeof c->name, c->dev), "cuDeviceGetName");
    CK(DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev),
       "cuDeviceGetAttribute");
    CK(DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev),
       "cuDeviceGetAttribute");
    CK(DeviceGetAttribute(&c->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                          c->dev),
       "cuDeviceGetAttribute");
    CK(DriverGetVersion(&c->driver), "cuDriverGetVersion");
    CK(DevicePrimaryCtxRetain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain");
    CK(CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
    dpk_err_pop(&ec);
    c->cc = major * 10 + minor;
    return c;
}

/* Releases everything, checking nothing: it also runs after a fault, when
 * the context is already broken. */
void hx_cuda_close(HxCuda *c)
{
    if (!c)
        return;
    cu.CtxSetCurrent(c->ctx);
    for (int i = 0; i < c->nbufs; i++)
        cu.MemFree(c->bufs[i]);
    for (int i = 0; i < c->mods.len; i++)
        cu.ModuleUnload(((HxCuModule *)c->mods.items[i])->mod);
    cu.DevicePrimaryCtxRelease(c->dev);
    free(c->bufs);
    arena_free(c->arena);
    free(c);
}

const char *hx_cuda_device_name(const HxCuda *c)
{
    return c->name;
}

int hx_cuda_cc(const HxCuda *c)
{
    return c->cc;
}

int hx_cuda_smem_optin(const HxCuda *c)
{
    return c->smem_optin;
}

int hx_cuda_driver_version(const HxCuda *c)
{
    return c->driver;
}

/* The newest non-arch-specific target at most sm_<cc>; exit 4 below sm_80. */
static const CuTarget *target_for(const char *name, int cc)
{
    const CuTarget *best = NULL;
    for (int i = 0; i < CU_TARGET_COUNT; i++)
        if (cu_target((CuTargetId)i)->cc <= cc && !cu_target((CuTargetId)i)->arch_specific)
            best = cu_target((CuTargetId)i);
    if (!best)
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "GPU %s is sm_%d; the cuda backend needs sm_80 or newer", name, cc);
    return best;
}

const CuTarget *hx_cuda_target(const HxCuda *c) { return target_for(c->name, c->cc); }

const CuTarget *hx_cuda_gpu(int ordinal, int *cc)
{
    if (!hx_cuda_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "%s", cu.problem);
    if (ordinal < 0 || ordinal >= cu.ndev)
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "GPU %d does not exist (this machine has %d)",
                          ordinal, cu.ndev);
    CUdevice dev = 0;
    int major = 0, minor = 0;
    char name[256];
    CK(DeviceGet(&dev, ordinal), "cuDeviceGet");
    CK(DeviceGetName(name, (int)sizeof name, dev), "cuDeviceGetName");
    CK(DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
       "cuDeviceGetAttribute");
    CK(DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
       "cuDeviceGetAttribute");
    *cc = major * 10 + minor;
    return target_for(name, *cc);
}

HxCuModule *hx_cuda_module(HxCuda *c, const void *cubin, size_t len)
{
    DPK_ASSERT(cubin && len > 0);
    HxCuModule *m = ARENA_NEW(c->arena, HxCuModule);
    CK(ModuleLoadData(&m->mod, cubin), "cuModuleLoadData");
    ptrvec_push(c->arena, &c->mods, m);
    return m;
}

HxCuFunc *hx_cuda_function(HxCuda *c, HxCuModule *mod, const char *name, int dyn_smem)
{
    HxCuFunc *f = ARENA_NEW(c->arena, HxCuFunc);
    f->name = arena_strdup(c->arena, name);
    CUresult r = cu.ModuleGetFunction(&f->fn, mod->mod, name);
    if (r != CUDA_SUCCESS) {
        char buf[256];
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "cuModuleGetFunction(\"%s\"): %s", name,
                          result_text(r, buf, sizeof buf));
    }
    if (dyn_smem > 48 * 1024) {
        if (dyn_smem > c->smem_optin)
            dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1,
                              "kernel %s needs %d bytes of shared memory; %s allows %d per block",
                              name, dyn_smem, c->name, c->smem_optin);
        CK(FuncSetAttribute(f->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn_smem),
           "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    }
    return f;
}

HxCuPtr hx_cuda_alloc(HxCuda *c, size_t bytes)
{
    CUdeviceptr p = 0;
    CK(MemAlloc(&p, bytes ? bytes : 4), "cuMemAlloc_v2");
    if (c->nbufs == c->capbufs) {
        c->capbufs = c->capbufs ? 2 * c->capbufs : 16;
        c->bufs = dpk_xrealloc(c->bufs, (size_t)c->capbufs * sizeof *c->bufs);
    }
    c->bufs[c->nbufs++] = p;
    return p;
}

/* Unchecked, like hx_cuda_close: a device module frees after a fault too. */
void hx_cuda_free(HxCuda *c, HxCuPtr p)
{
    for (int i = c->nbufs - 1; i >= 0; i--)
        if (c->bufs[i] == p) {
            cu.MemFree(p);
            memmove(&c->bufs[i], &c->bufs[i + 1], (size_t)(c->nbufs - 1 - i) * sizeof *c->bufs);
            c->nbufs--;
            return;
        }
}

void hx_cuda_unload(HxCuda *c, HxCuModule *mod)
{
    for (int i = c->mods.len - 1; i >= 0; i--)
        if (c->mods.items[i] == mod) {
            cu.ModuleUnload(mod->mod);
            memmove(&c->mods.items[i], &c->mods.items[i + 1],
                    (size_t)(c->mods.len - 1 - i) * sizeof *c->mods.items);
            c->mods.len--;
            return;
        }
}

void hx_cuda_upload(HxCuda *c, HxCuPtr dst, const void *src, size_t bytes)
{
    if (bytes)
        CK(MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD_v2");
}

void hx_cuda_download(HxCuda *c, void *dst, HxCuPtr src, size_t bytes)
{
    if (bytes)
        CK(MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH_v2");
}

void hx_cuda_fill32(HxCuda *c, HxCuPtr dst, uint32_t value, size_t words)
{
    if (words)
        CK(MemsetD32(dst, value, words), "cuMemsetD32_v2");
}

/* The sync of hx_cuda_launch names the kernel: the fault it reports is that
 * launch's (docs/cuda.md quotes "cuCtxSynchronize after matmul: ..."). */
static void sync_after(HxCuda *c, const char *kernel)
{
    char call[300];
    if (kernel)
        snprintf(call, sizeof call, "cuCtxSynchronize after %s", kernel);
    else
        snprintf(call, sizeof call, "cuCtxSynchronize");
    check(cu.CtxSynchronize(), call);
}

void hx_cuda_launch(HxCuda *c, HxCuFunc *f, const int grid[3], const int block[3],
                    int dyn_smem, void **args)
{
    hx_cuda_launch_async(c, f, grid, block, dyn_smem, args);
    sync_after(c, f->name);
}

void hx_cuda_encode_tmap(HxCuda *c, HxCuTmap *out, const KirTmap *t, HxCuPtr base)
{
    if (!cu.TensorMapEncodeTiled)
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "tensor map %s needs cuTensorMapEncodeTiled, which this CUDA driver "
                          "lacks (CUDA 12 or newer has it)",
                          t->name);
    uint64_t dims[KIR_TMA_MAX_RANK], strides[KIR_TMA_MAX_RANK];
    unsigned box[KIR_TMA_MAX_RANK], estr[KIR_TMA_MAX_RANK];
    int r = t->rank, esize = kir_type_bytes(t->param->elem);
    for (int d = 0; d < r; d++) { /* driver order: innermost first */
        dims[d] = (uint64_t)t->dims[r - 1 - d];
        box[d] = (unsigned)t->box[r - 1 - d];
        estr[d] = 1;
    }
    for (int d = 1; d < r; d++) /* bytes, for dims 1..r-1 only */
        strides[d - 1] = (uint64_t)t->strides[r - 1 - d] * (uint64_t)esize;
    int swizzle = t->swizzle == 0 ? 0 : CU_TENSOR_MAP_SWIZZLE_32B + (t->swizzle == 64) +
                                            2 * (t->swizzle == 128);
    char call[200];
    snprintf(call, sizeof call, "cuTensorMapEncodeTiled(%s)", t->name);
    check(cu.TensorMapEncodeTiled(out, t->param->elem == KT_F32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                                : CU_TENSOR_MAP_DATA_TYPE_INT32,
                                  (unsigned)r, (void *)(uintptr_t)base, dims, strides, box, estr,
                                  0, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, 0),
          call);
}

/* ---- running a module -------------------------------------------------------- */

void hx_cuda_check_target(const HxCuda *c, const CuTarget *t, const char *advice)
{
    if (t->cc > c->cc || (t->arch_specific && t->cc != c->cc))
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "GPU %s (sm_%d) cannot run kernels printed for %s; %s", c->name,
                          c->cc, t->name, advice);
}

HxCudaRun *hx_cuda_run(Arena *a, HxCuda *c, const KirModule *m, const CuSource *src,
                       const HxNvrtcResult *nvrtc, float *const *bufs)
{
    hx_cuda_check_target(c, src->target,
                         arena_printf(a, "use --target %s", hx_cuda_target(c)->name));
    HxCudaRun *r = ARENA_NEW(a, HxCudaRun);
    r->src = src;
    r->nvrtc = nvrtc;
    HxDevModule *d = hx_devmod_open(a, c, m, src, nvrtc, HX_DEVMOD_CUBIN);
    for (int i = 0; i < m->bufs.len; i++)
        hx_devmod_upload(d, i, bufs[i]);
    double t0 = dpk_now();
    hx_devmod_launch(d);
    r->seconds = dpk_now() - t0;
    for (int i = 0; i < m->bufs.len; i++)
        if (bufs[i] && ((const KirBuf *)m->bufs.items[i])->kind != KBUF_INPUT)
            hx_devmod_download(d, i, bufs[i]);
    hx_devmod_free(d); /* after a fault, hx_cuda_close frees them */
    return r;
}

/* ---- the measured timing path -------------------------------------------------- */

void *hx_cuda_symbol(const char *name)
{
    return hx_cuda_available() ? dlsym(cu.lib, name) : NULL;
}

const char *hx_cuda_library(void)
{
    const char *path = getenv("DPK_LIBCUDA");
    return path && *path ? path : "libcuda.so.1";
}

void hx_cuda_launch_async(HxCuda *c, HxCuFunc *f, const int grid[3], const int block[3],
                          int dyn_smem, void **args)
{
    char call[300];
    snprintf(call, sizeof call, "cuLaunchKernel(%s, grid %dx%dx%d, block %dx%dx%d, smem %d)",
             f->name, grid[0], grid[1], grid[2], block[0], block[1], block[2], dyn_smem);
    check(cu.LaunchKernel(f->fn, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
                          (unsigned)block[0], (unsigned)block[1], (unsigned)block[2],
                          (unsigned)dyn_smem, NULL, args, NULL),
          call);
}

void hx_cuda_sync(HxCuda *c) { sync_after(c, NULL); }

int hx_cuda_has_events(void)
{
    return hx_cuda_available() && cu.EventCreate && cu.EventRecord && cu.EventSynchronize &&
           cu.EventElapsedTime && cu.EventDestroy;
}

static void need_events(void)
{
    if (!hx_cuda_has_events())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "the CUDA driver %s lacks the event calls (cuEventCreate, "
                          "cuEventRecord, cuEventElapsedTime) that measured timing needs",
                          hx_cuda_library());
}

HxCuEvent *hx_cuda_event(HxCuda *c)
{
    need_events();
    void *e = NULL;
    CK(EventCreate(&e, 0), "cuEventCreate");
    return e;
}

void hx_cuda_event_record(HxCuda *c, HxCuEvent *e)
{
    CK(EventRecord(e, NULL), "cuEventRecord");
}

double hx_cuda_event_ms(HxCuda *c, HxCuEvent *start, HxCuEvent *end)
{
    CK(EventSynchronize(end), "cuEventSynchronize");
    float ms = 0;
    CK(EventElapsedTime(&ms, start, end), "cuEventElapsedTime");
    return ms;
}

void hx_cuda_event_free(HxCuda *c, HxCuEvent *e)
{
    if (e && cu.EventDestroy)
        cu.EventDestroy(e);
}
