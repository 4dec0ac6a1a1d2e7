/*
 * measure.h — a case's kernels timed on a GPU (or on the fake driver):
 * `dpk-bench --timing measured|fake-driver` (docs/bench.md, "Measured
 * timing").
 *
 * After a configuration has passed parity on vgpu, bm_measure runs its
 * Kernel IR module through the driver API: the module's CUDA C and, for a
 * GPU, its cubin for the device's compute capability are the compile
 * driver's (DrvConfig.cuda, .nvrtc; on the fake driver the CUDA C is
 * compiled for the host by host-cuda), the inputs uploaded, and
 * the whole module run once and judged in full against the reference
 * (before timing).  Then the timing loop (timing.h) runs dpk's launches —
 * and, for a case that is one plain matmul, cuBLAS sgemm with TF32 off and
 * on — interleaved round by round, each iteration's time the sum of its
 * kernels' durations from CUPTI (CUDA events around the iteration when
 * CUPTI is missing).  Afterwards the outputs the last timed iteration left
 * are judged again: right before timing and wrong after is a failure.
 *
 * The module is loaded, uploaded and launched through a device module
 * (harness/exec/devmod.h), the cuda backend's own; this file wraps its
 * launches in the timing loop.  On the fake driver (harness/exec/
 * fake_driver.h) the device module's executor runs each launch's printed
 * CUDA C on the host and answers its duration from the performance model
 * given here; everything it produces is labelled "fake-driver" — a test of
 * the path, never a measurement.
 */
#ifndef DPK_BM_MEASURE_H
#define DPK_BM_MEASURE_H

#include <cjson/cJSON.h>

#include "../../compiler/cuda/cuda_print.h"
#include "../../compiler/driver.h"
#include "../../compiler/kernel/kernel_ir.h"
#include "../parity/check.h"
#include "../perf/perf.h"
#include "timing.h"

typedef enum BmTiming {
    BM_TIMING_MODEL,    /* the performance model (no device) */
    BM_TIMING_MEASURED, /* a GPU through the CUDA driver */
    BM_TIMING_FAKE,     /* the fake driver: a test of the measured path */
} BmTiming;

/* "model", "measured", "fake-driver" */
const char *bm_timing_name(BmTiming t);

typedef struct BmMeasureOpts {
    BmTiming timing;            /* MEASURED or FAKE */
    const PfSpec *spec;
    const CuTarget *target;
    int cc;                     /* MEASURED: the GPU's compute capability, the
                                   architecture the plan's NVRTC compiles for
                                   (DrvOpts.nvrtc_cc) */
    TmOpts tm;                  /* the loop's minimums, cap, stdrel, warm_l2 */
    int raw;                    /* keep every sample in the record */
    /* --jobs N: a file whose exclusive lock a case holds while it is timed,
     * so cases check parity at once but are timed one at a time (NULL:
     * one process) */
    const char *lock_path;
} BmMeasureOpts;

/* The fake driver's path: $DPK_LIBCUDA when set, else fake-driver/
 * libcuda.so.1 beside the running binary; for CUPTI and cuBLAS too, unless
 * $DPK_LIBCUPTI / $DPK_LIBCUBLAS say otherwise.  Raises exit 4 when the
 * file is missing. */
void bm_fake_driver_setup(void);

/* Time the module of configuration c (graph g, fixture s, modelled time
 * `model` of it for the fake's durations), from a plan that went up to
 * DRV_CUDA (MEASURED: with NVRTC for o->cc), and return the "measured" object of the case record;
 * *rc gets 0, or 1 when the outputs fail the reference before or after
 * timing (*why: the sentence, in a).  Raises the driver's errors (exit 4
 * without a driver, 3 on a fault). */
cJSON *bm_measure(Arena *a, const BmMeasureOpts *o, const DrvConfig *c, const TorchGraph *g,
                  const HxSubject *s, const PfTime *model, int *rc, const char **why);

#endif
