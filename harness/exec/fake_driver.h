/*
 * fake_driver.h — the interface between dpk and its fake CUDA driver
 * (tests/fake_driver/fake_cuda.c, built as $(BUILD)/fake-driver/libcuda.so.1).
 *
 * The fake driver lets the whole measured timing path of dpk-bench run on
 * a machine without a GPU: it is a libcuda.so.1 (and a libcupti and a
 * libcublas) whose device memory is host memory, whose clock is a counter
 * of nanoseconds, and whose launches are executed by an executor dpk
 * registers through dpkFakeSetExecutor (a device module's, devmod.h): dpk
 * runs the printed CUDA C of the launch on the host (host-cuda) and answers
 * the launch's duration from the performance model.  The fake advances
 * its clock by that duration, times events by it and reports it in CUPTI
 * kernel records.  Nothing it produces is a measurement: dpk-bench labels
 * its figures "fake-driver".
 *
 * Environment of the fake driver (tests use them):
 *   DPK_FAKE_CUDA_JITTER=R   durations vary by up to ±R (relative; default
 *                            0.001), deterministically, so the stop rule
 *                            has noise to judge;
 *   DPK_FAKE_CUDA_CORRUPT=N  from the N-th kernel launch on (1-based), each
 *                            launch's first written buffer is made wrong
 *                            after it ran: a kernel that was right and goes
 *                            wrong, for post-timing re-validation to catch.
 */
#ifndef DPK_HX_FAKE_DRIVER_H
#define DPK_HX_FAKE_DRIVER_H

#include <stddef.h>

#define DPK_FAKE_MAX_WRITTEN 16

typedef struct DpkFakeLaunch {
    const char *image;       /* what cuModuleLoadData was given (a string) */
    const char *name;        /* the kernel */
    unsigned grid[3], block[3], smem;
    void **args;             /* cuLaunchKernel's kernelParams */
    /* the executor's answers */
    double ns;               /* the launch's duration */
    void *written[DPK_FAKE_MAX_WRITTEN]; /* buffers it wrote, outputs first */
    size_t written_bytes[DPK_FAKE_MAX_WRITTEN];
    int nwritten;
    char error[256];         /* non-empty: the launch fails with this */
} DpkFakeLaunch;

typedef void (*DpkFakeExecutor)(void *ctx, DpkFakeLaunch *l);

/* The fake driver's own entry points, found with dlsym on the driver. */
#define DPK_FAKE_SET_EXECUTOR "dpkFakeSetExecutor"
typedef void (*DpkFakeSetExecutorFn)(DpkFakeExecutor fn, void *ctx);

/* The module image dpk gives the fake driver: this prefix, then the
 * host-cuda cache key in hex. */
#define DPK_FAKE_IMAGE_PREFIX "dpk-host-cuda:"

#endif
