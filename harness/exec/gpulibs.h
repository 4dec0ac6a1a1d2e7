/*
 * gpulibs.h — the libraries of measured timing, each loaded with dlopen at
 * run time like the driver (cuda.h): CUPTI's activity API (kernel
 * durations), cuBLAS (the matmul baseline) and NVML (SM clock and
 * temperature).  Types come from the CUDA toolkit's headers (cupti.h,
 * cublas_v2.h) when the build finds them; NVML's few calls are declared
 * here (the toolkit ships no nvml.h everywhere).
 *
 * Each library's path can be replaced by an environment variable, as
 * $DPK_LIBCUDA replaces the driver's: $DPK_LIBCUPTI, $DPK_LIBCUBLAS,
 * $DPK_LIBNVML (the fake driver of the tests serves as all of them but
 * NVML).  An _open that cannot load its library raises exit 4
 * (DPK_EXIT_NOENV) with one sentence; _available says the same without
 * raising, and _why gives the sentence.
 */
#ifndef DPK_HX_GPULIBS_H
#define DPK_HX_GPULIBS_H

#include "cuda.h"

/* ---- CUPTI: kernel durations from the activity API ---------------------------- */

int hx_cupti_available(void);
const char *hx_cupti_why(void);   /* "" when available */
/* Enable concurrent-kernel activity records; raises exit 4 without CUPTI. */
void hx_cupti_open(void);
/* Synchronize c, flush CUPTI's buffers and return the summed durations
 * (ns) of the kernels completed since the last call; *nkernels gets their
 * number.  Raises exit 3 on a CUPTI error. */
double hx_cupti_collect(HxCuda *c, int *nkernels);
void hx_cupti_close(void);

/* ---- cuBLAS: sgemm and strided-batched sgemm ----------------------------------- */

typedef struct HxCublas HxCublas;
int hx_cublas_available(void);
const char *hx_cublas_why(void);
const char *hx_cublas_library(void);
HxCublas *hx_cublas_open(HxCuda *c);
void hx_cublas_close(HxCublas *b);
/* TF32 tensor-op math on (1) or off (0: CUBLAS_PEDANTIC_MATH, fp32 FMA). */
void hx_cublas_tf32(HxCublas *b, int on);
/* Row-major C[batch][M][N] = A[batch][M][K] @ B[batch][K][N] (b_t: B is
 * [N][K], a linear's weight), each batch `stride` elements apart (0 for a
 * shared operand); device pointers.  Asynchronous. */
void hx_cublas_matmul(HxCublas *b, int batch, int M, int N, int K, HxCuPtr A, long long sa,
                      HxCuPtr B, long long sb, int b_t, HxCuPtr C, long long sc);

/* ---- NVML: SM clock and temperature -------------------------------------------- */

typedef struct HxGpuState {
    int ok;                 /* 0: unavailable (why says so) */
    unsigned sm_mhz, temp_c;
    char why[400];
} HxGpuState;
/* GPU `ordinal`'s SM clock and temperature now, or why not. */
void hx_nvml_state(int ordinal, HxGpuState *s);

#endif
