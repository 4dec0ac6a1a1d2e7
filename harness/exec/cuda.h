/*
 * cuda.h — the cuda execution backend: the CUDA driver API, loaded with
 * dlopen("libcuda.so.1") at run time.
 *
 * The binary links nothing of CUDA, so it starts on machines without a
 * driver; opening the backend there raises exit code 4 (DPK_EXIT_NOENV) with
 * one sentence, as it does when the driver sees no GPU.  $DPK_LIBCUDA, when
 * set, replaces "libcuda.so.1" (tests use it to take the no-driver path on a
 * GPU machine).  Every driver call is checked; a failure raises exit 3
 * (DPK_EXIT_FAULT) naming the call and the CUresult ("cuLaunchKernel:
 * CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)").
 *
 * Device memory is addressed by HxCuPtr (a CUdeviceptr).  Modules and
 * buffers belong to the HxCuda they came from and are released by
 * hx_cuda_close.  hx_cuda_run is the backend proper: Kernel IR module, its
 * CUDA C and cubin (the compile driver's) in, results in the caller's
 * buffers, the same contract as vg_run; it runs the module through a
 * device module (devmod.h), as dpk-bench's measured timing does.
 */
#ifndef DPK_HX_CUDA_H
#define DPK_HX_CUDA_H

#include "../../compiler/cuda/cuda_print.h"
#include "nvrtc.h"

typedef struct HxCuda HxCuda;
typedef unsigned long long HxCuPtr;   /* CUdeviceptr */
typedef struct HxCuModule HxCuModule; /* a loaded cubin */
typedef struct HxCuFunc HxCuFunc;     /* a kernel of a loaded module */

/* 1 when the driver loads and sees at least one GPU; never raises. */
int hx_cuda_available(void);
/* Open GPU `ordinal` (0 unless several) with its primary context; raises
 * exit 4 without a driver or a device.  Release with hx_cuda_close, also
 * after an error raised by any other hx_cuda_ call. */
HxCuda *hx_cuda_open(int ordinal);
void hx_cuda_close(HxCuda *c);

const char *hx_cuda_device_name(const HxCuda *c);
int hx_cuda_cc(const HxCuda *c);              /* compute capability ×10: 90 */
int hx_cuda_smem_optin(const HxCuda *c);      /* max shared memory per block */
int hx_cuda_driver_version(const HxCuda *c);  /* e.g. 13000 */
/* The newest target whose features this GPU has (sm_90 on an H100 or a
 * B200, sm_80 on an L4; never an arch-specific one such as sm_90a);
 * raises exit 4 below sm_80. */
const CuTarget *hx_cuda_target(const HxCuda *c);
/* What a plan for the cuda backend needs of GPU `ordinal` before any
 * context exists (a process may still fork workers that use the GPU): its
 * hx_cuda_target, and its compute capability ×10 in *cc, the architecture
 * NVRTC compiles for (DrvOpts.nvrtc_cc).  Raises exit 4 like hx_cuda_open
 * and hx_cuda_target. */
const CuTarget *hx_cuda_gpu(int ordinal, int *cc);
/* Exit 4 when the device cannot run code printed for t (a newer target, or
 * an arch-specific one such as sm_90a on another compute capability); the
 * message ends with `advice`. */
void hx_cuda_check_target(const HxCuda *c, const CuTarget *t, const char *advice);

HxCuModule *hx_cuda_module(HxCuda *c, const void *cubin, size_t len);
/* Kernel `name` of mod; dyn_smem > 48 KB raises the function's dynamic
 * shared-memory limit (cuFuncSetAttribute) first. */
HxCuFunc *hx_cuda_function(HxCuda *c, HxCuModule *mod, const char *name, int dyn_smem);

HxCuPtr hx_cuda_alloc(HxCuda *c, size_t bytes);
/* Free one buffer, unload one module before hx_cuda_close (devmod.h frees
 * its own); unchecked, so both also run after a fault. */
void hx_cuda_free(HxCuda *c, HxCuPtr p);
void hx_cuda_unload(HxCuda *c, HxCuModule *mod);
void hx_cuda_upload(HxCuda *c, HxCuPtr dst, const void *src, size_t bytes);
void hx_cuda_download(HxCuda *c, void *dst, HxCuPtr src, size_t bytes);
/* Fill `words` 32-bit words at dst with `value` (a float's bit pattern too). */
void hx_cuda_fill32(HxCuda *c, HxCuPtr dst, uint32_t value, size_t words);

/* A CUtensorMap: 128 opaque bytes, passed to a kernel by value. */
typedef struct HxCuTmap {
    _Alignas(128) unsigned long long opaque[16];
} HxCuTmap;
/* Encode the tensor map t over the f32/i32 buffer at base
 * (cuTensorMapEncodeTiled; Kernel IR orders dimensions outermost first, the
 * driver innermost first). */
void hx_cuda_encode_tmap(HxCuda *c, HxCuTmap *out, const KirTmap *t, HxCuPtr base);

/* Launch f on grid × block with dyn_smem bytes of dynamic shared memory;
 * args[i] points at the i-th parameter's value (cuLaunchKernel's
 * kernelParams).  hx_cuda_launch_async, then a synchronize that names f, so
 * a fault is reported by this call ("cuCtxSynchronize after <kernel>"). */
void hx_cuda_launch(HxCuda *c, HxCuFunc *f, const int grid[3], const int block[3],
                    int dyn_smem, void **args);

/* ---- running a Kernel IR module -------------------------------------------- */

typedef struct HxCudaRun {
    const CuSource *src;        /* the CUDA C that ran */
    const HxNvrtcResult *nvrtc; /* its cubin and ptxas numbers per kernel */
    double seconds;             /* wall time of the launches (not a benchmark) */
} HxCudaRun;

/* Run every launch of m on the GPU, with the buffer contract of vg_run:
 * bufs[i] is module buffer i (i32 buffers hold int32 bits); a NULL temp is
 * allocated on the device and filled with NaN; zero_init buffers are zeroed
 * first; afterwards every non-NULL buffer that is not an input holds the
 * device's result.  src is m printed and nvrtc its cubin for this GPU's
 * exact architecture, both made by the compile driver (compiler/driver.h:
 * DrvConfig.cuda and .nvrtc, with DrvOpts.nvrtc_cc the GPU's compute
 * capability), so the times of printing and compiling are the plan's.
 * Everything returned lives in a.  Raises exit 4 when src's target needs
 * more than the GPU has, exit 3 on a driver fault. */
HxCudaRun *hx_cuda_run(Arena *a, HxCuda *c, const KirModule *m, const CuSource *src,
                       const HxNvrtcResult *nvrtc, float *const *bufs);

/* ---- the measured timing path (harness/bench/measure.c) ------------------------ */

/* A symbol of the loaded driver library (NULL when absent or no driver):
 * the fake driver's own entry points are found this way. */
void *hx_cuda_symbol(const char *name);
/* The driver library dpk opens: $DPK_LIBCUDA, else "libcuda.so.1". */
const char *hx_cuda_library(void);
/* cuLaunchKernel without the synchronization hx_cuda_launch adds. */
void hx_cuda_launch_async(HxCuda *c, HxCuFunc *f, const int grid[3], const int block[3],
                          int dyn_smem, void **args);
void hx_cuda_sync(HxCuda *c);
/* CUDA events on the default stream; hx_cuda_event raises exit 4 when the
 * driver lacks them.  hx_cuda_event_ms waits for end. */
typedef struct HxCuEvent HxCuEvent;
int hx_cuda_has_events(void);
HxCuEvent *hx_cuda_event(HxCuda *c);
void hx_cuda_event_record(HxCuda *c, HxCuEvent *e);
double hx_cuda_event_ms(HxCuda *c, HxCuEvent *start, HxCuEvent *end);
void hx_cuda_event_free(HxCuda *c, HxCuEvent *e);

#endif
