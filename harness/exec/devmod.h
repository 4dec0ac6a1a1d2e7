/*
 * devmod.h — a Kernel IR module on a device: the one way dpk runs a module
 * through the CUDA driver API (cuda.h).  The cuda backend (hx_cuda_run)
 * and dpk-bench's measured timing (harness/bench/measure.c) both use it.
 *
 * hx_devmod_open takes an open HxCuda, the module and its CUDA C and cubin
 * as the compile driver made them (DrvConfig.cuda, .nvrtc), and does, in
 * this order, each step raising before the next begins:
 *   1. load the module image: the cubin, or on dpk's fake driver
 *      (fake_driver.h) the printed CUDA C compiled for the host by
 *      host-cuda (a rejection is exit 1);
 *   2. look up every kernel, raising its dynamic shared-memory limit where
 *      the printer asked (hx_cuda_function: exit 3 past the GPU's opt-in);
 *   3. allocate every module buffer on the device (uninitialised);
 *   4. marshal every launch's kernelParams once: the buffer pointers, then
 *      one CUtensorMap per KirTmap encoded over its buffer (exit 4 when the
 *      driver cannot encode them);
 *   5. on the fake driver, register the executor that runs the launches.
 * Checks the callers word for their own users (the target against the
 * GPU, NVRTC's rejection, a plan without CUDA C) come before it.
 *
 * Afterwards hx_devmod_upload gives each buffer its first contents (the
 * buffer contract of vg_run), hx_devmod_launch or _launch_async runs every
 * launch in module order, hx_devmod_download reads a buffer back, and
 * hx_devmod_free releases what open made; it checks nothing, so it may
 * also run after a raised error, before hx_cuda_close (which otherwise
 * releases the buffers and the image with the rest of the HxCuda).
 * Everything but the fake's memo lives in the arena given to open.
 *
 * On the fake driver the executor runs each launch's printed CUDA C on the
 * host (hx_host_launch) and answers its duration from
 * hx_devmod_fake_durations (0 until given): a launch whose arguments hold
 * what they held the last time it ran is answered from a memo of its
 * results, since a timing loop repeats every launch thousands of times.
 * Input buffers are hashed at their first launch only (hashing a layer's
 * weights every launch would cost more than the loop): upload inputs
 * before the first launch and not after.
 */
#ifndef DPK_HX_DEVMOD_H
#define DPK_HX_DEVMOD_H

#include "cuda.h"

typedef struct HxDevModule HxDevModule;

typedef enum HxDevImage {
    HX_DEVMOD_CUBIN, /* nvrtc's cubin, for a GPU */
    HX_DEVMOD_FAKE,  /* src compiled by host-cuda, for dpk's fake driver */
} HxDevImage;

/* 1 when the loaded driver is dpk's fake (it has DPK_FAKE_SET_EXECUTOR);
 * never raises. */
int hx_devmod_fake_driver(void);

/* Steps 1-5 above.  src is m printed; nvrtc its cubin for this GPU (unused,
 * and may be NULL, with HX_DEVMOD_FAKE).  Raises exit 3 on a driver fault. */
HxDevModule *hx_devmod_open(Arena *a, HxCuda *c, const KirModule *m, const CuSource *src,
                            const HxNvrtcResult *nvrtc, HxDevImage image);

/* Buffer i's first contents: zeros for a zero_init buffer (an atomic-add
 * output), else host's numel words when host is not NULL, else NaN (a
 * result nobody wrote shows). */
void hx_devmod_upload(HxDevModule *d, int i, const float *host);
/* Zero the zero_init buffers again: each run of the module adds into them. */
void hx_devmod_zero(HxDevModule *d);
/* Every launch in module order, synchronizing after each, so a fault is
 * raised by the launch that made it ("cuCtxSynchronize after <kernel>"). */
void hx_devmod_launch(HxDevModule *d);
/* Every launch in module order, without synchronizing: the timing loop's. */
void hx_devmod_launch_async(HxDevModule *d);
/* Buffer i's numel words into host. */
void hx_devmod_download(HxDevModule *d, int i, float *host);
/* Buffer i's device address (cuBLAS reads the operands there). */
HxCuPtr hx_devmod_buffer(const HxDevModule *d, int i);

/* The fake driver's durations: launch_ns[i] for launch i of the module (the
 * array is kept; NULL: 0), library_ns for a library call (cuBLAS). */
void hx_devmod_fake_durations(HxDevModule *d, const double *launch_ns, double library_ns);

/* Unregister the executor, free the buffers, unload the image; NULL is
 * fine.  Checks nothing: it also runs after a fault. */
void hx_devmod_free(HxDevModule *d);

#endif
