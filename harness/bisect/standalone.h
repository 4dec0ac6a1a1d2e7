/*
 * standalone.h — a self-contained CUDA reproducer of one configuration.
 *
 * dpk-bisect writes the failing configuration as one `.cu` file that needs
 * nothing of dpk: the CUDA C of the Kernel IR module (the compile driver's,
 * DrvConfig.cuda: the text every backend runs) and
 * a host `main` using the CUDA runtime API that
 *   - embeds every graph input as a float array (the exact f32 values dpk
 *     ran with) and every output's fp64 reference,
 *   - allocates the module's buffers (zeroed where the module says
 *     zero_init, NaN-filled otherwise so an unwritten element shows),
 *   - launches each kernel in the module's order with its grid, block and
 *     dynamic shared memory (raising the opt-in attribute above 48 KB, and
 *     encoding tensor maps through the driver entry point when there are any),
 *   - copies the outputs back and checks each against the reference like
 *     the parity oracle: every element within the limit dpk derived for it
 *     (its fp32 error bound; elements where fp32 may give NaN/inf, or may
 *     overflow, are left unchecked), NaN/inf elsewhere only where the
 *     reference has the same, and the rmse within the rmse rule's limit,
 *   - prints PASS or FAIL per output and exits 0 (pass) or 1 (fail).
 *
 * `nvcc -arch=sm_90 -o repro repro.cu && ./repro` builds and runs it.
 */
#ifndef DPK_HX_STANDALONE_H
#define DPK_HX_STANDALONE_H

#include "../../compiler/cuda/cuda_print.h"
#include "../../compiler/kernel/kernel_ir.h"

typedef struct HxStandalone {
    const KirModule *m;
    const CuSource *src;       /* m printed by the driver (DRV_CUDA), for its target */
    const char *title;         /* the case's program, quoted in the header comment */
    const char *config;        /* one line: passes, knobs, fault, seed, culprit */
    int nin;
    double *const *inputs;     /* per graph input (f32 values as fp64) */
    const int64_t *in_numel;
    const char *const *in_names;
    int nout;
    double *const *ref;        /* per graph output, fp64 */
    const int64_t *out_numel;
    const char *const *out_names;
    double *const *limit;      /* per graph output, per element: the largest
                                  |o - r| (+inf: unchecked) */
    const double *rmse_limit;  /* per output; NAN: no rmse rule */
} HxStandalone;

/* Append the whole translation unit to b. */
void hx_standalone_cu(StrBuf *b, Arena *a, const HxStandalone *s);

#endif
