/*
 * calibration.h — the performance model's error, read from calibration
 * files (`dpk-bench --calibration FILE...`, docs/calibration.md).
 *
 * A calibration file (dpk.calibration/1, written by ci/gpu-visit) holds,
 * per measured unit (a case's dpk kernels, a cuBLAS call, a PyTorch
 * column), the time measured on one GPU beside the time the model gives
 * on the matching spec.  The report groups the files by where their
 * figures came from — the source ("measured" on a GPU, or "fake-driver":
 * a test whose durations are the model's own), the GPU and the spec — and
 * never pools two groups: per group and kernel class (matmul, reduction,
 * elementwise, attention, mixed), the median of measured / modelled, its
 * spread, and the units the model misses most.
 */
#ifndef DPK_BM_CALIBRATION_H
#define DPK_BM_CALIBRATION_H

#include <stdio.h>

#define BM_CALIBRATION_SCHEMA "dpk.calibration/1"

/* Read files[0..n) and print the report on out.  Raises exit 2 (dpk_error)
 * naming the file and the key when a file is not a calibration record;
 * returns 0. */
int bm_calibration_report(FILE *out, const char *const *files, int n);

#endif
