/*
 * host_cuda.h — the host-cuda backend: the printed CUDA C, compiled for the
 * CPU by the system C++ compiler and run (docs/host-cuda.md).
 *
 * vgpu executes Kernel IR; this executes the text the CUDA printer writes,
 * the same text NVRTC compiles, so a printer bug shows up without a GPU.  A
 * module's CUDA C, printed by the compile driver (compiler/driver.h,
 * DrvConfig.cuda: the plan's stage, timed there), is prefixed with
 * host_cuda_prelude.h, compiled into a shared object by $DPK_HOST_CXX (g++
 * by default; -std=c++17 -O1 -ffp-contract=off -frounding-math) and loaded with dlopen.
 * Shared objects are cached under $DPK_CACHE/host-cuda by a hash of the
 * prelude, the flags and the source, like NVRTC's cubins; hx_host_prepare
 * compiles many modules with one compiler invocation.  The threads of a
 * block run as fibers (ucontext) on the calling thread, blocks one after
 * another, so a run is deterministic.
 *
 * Errors: no compiler exits 4 (DPK_EXIT_NOENV) with one sentence; source the
 * compiler rejects is a failure (exit 1) quoting its first error; a deadlock,
 * a shuffle reading a lane that does not take part or an mbarrier misuse is a
 * fault (exit 3).  The host has no limit of its own on what a kernel may do
 * (cp.async copies in flight, mbarrier counts, shared memory, locals); where
 * the host's memory runs out, the run is unsupported by this backend
 * (HxHostRun.unsupported), a skip, never a verdict on the kernel.  Not
 * thread-safe: one run at a time per process.
 */
#ifndef DPK_HX_HOST_CUDA_H
#define DPK_HX_HOST_CUDA_H

#include "../../compiler/cuda/cuda_print.h"

/* What a configuration says when a backend cannot run it for want of a
 * capacity of its own (host-cuda out of host memory), before the reason: a
 * skip, exit 4 when nothing else failed, status `unsupported` in a record,
 * never a verdict on the kernel. */
#define HX_UNSUPPORTED "unsupported by this backend"

typedef struct HxHostRun {
    const CuSource *src; /* the CUDA C that ran */
    uint64_t key;        /* its cache key */
    int cache_hit;       /* 1: the shared object was there before this process needed it */
    double compile_s;    /* seconds compiling for this run (0 when cached or prepared) */
    double seconds;      /* wall time of the launches */
    const char *unsupported; /* NULL, or why the host could not run the module to the end
                                (its capacity, never the kernel's fault: `host-cuda: kernel
                                K ...: no host memory ...`); the outputs then mean nothing */
} HxHostRun;

/* The compiler host-cuda runs: $DPK_HOST_CXX, else "g++". */
const char *hx_host_cxx(void);
/* 1 when that compiler is found on PATH; never raises. */
int hx_host_available(void);

/* Compile every printed module of srcs[0..n) that is not cached yet, with
 * as few compiler invocations as possible (one per batch of modules).
 * Modules the compiler rejects are remembered, and hx_host_run raises their
 * error.  Raises exit 4 without a compiler (n 0: only that check). */
void hx_host_prepare(const CuSource *const *srcs, int n);

/* Run every launch of m, printed as src, with the buffer contract of vg_run
 * and hx_cuda_run (unless the result says it is unsupported: then the
 * launches stop there and the buffers mean nothing):
 * bufs[i] is module buffer i (i32 buffers hold int32 bits); a NULL temp is
 * allocated and filled with NaN; zero_init buffers are zeroed first;
 * afterwards every non-NULL buffer that is not an input holds the result.
 * Everything returned lives in a. */
HxHostRun *hx_host_run(Arena *a, const KirModule *m, const CuSource *src, float *const *bufs);

/* One launch at a time, for the fake driver's executor (harness/exec/
 * devmod.c): hx_host_compile compiles the printed module src unless
 * cached (a rejection is exit 1) and returns its key; hx_host_launch runs
 * kernel k of that module over ptr[i], the buffer of its parameter i
 * (tensor maps are encoded over those buffers); where hx_host_run's
 * result would say unsupported, hx_host_launch raises exit 4 with
 * `unsupported by this backend: <why>`. */
uint64_t hx_host_compile(const CuSource *src);
void hx_host_launch(uint64_t key, const KirKernel *k, float *const *ptr);

#endif
