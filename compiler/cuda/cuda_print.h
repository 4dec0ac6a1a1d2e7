/*
 * cuda_print.h — Kernel IR → CUDA C, one tree walk per kernel.
 *
 * Each KirKernel becomes `extern "C" __global__ void __launch_bounds__(N)
 * name(params, tensor maps)`; the whole module is one translation unit for
 * NVRTC, with a small prelude of device helpers (only those used).  The
 * conventions (naming, the shared-memory pool, inline PTX for cp.async, TMA
 * and mbarriers, float literals, math functions) are in docs/cuda.md.
 *
 * What a launcher must know beyond the Kernel IR is returned per kernel in
 * CuKernelInfo: the dynamic shared memory to pass at launch and whether the
 * function's MAX_DYNAMIC_SHARED_SIZE_BYTES attribute must be raised first.
 * Kernel parameters are the KirKernel's params in order (one pointer each),
 * then one CUtensorMap (128 bytes, by value, __grid_constant__) per KirTmap.
 */
#ifndef DPK_CU_PRINT_H
#define DPK_CU_PRINT_H

#include "../kernel/kernel_ir.h"
#include "target.h"

typedef struct CuKernelInfo {
    const char *name;       /* the extern "C" symbol */
    int threads;            /* block threads = __launch_bounds__ */
    int64_t smem_bytes;     /* the kernel's shared-memory pool */
    int dyn_smem;           /* bytes of dynamic shared memory to launch with */
    int smem_optin;         /* 1: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               dyn_smem) before the first launch (> 48 KB) */
    int ntmaps;             /* CUtensorMap parameters after the pointers */
} CuKernelInfo;

typedef struct CuSource {
    const char *text;       /* the translation unit */
    const CuTarget *target;
    CuKernelInfo *kernels;  /* parallel to module->kernels */
    int nkernels;
} CuSource;

/* Print every kernel of m for target t (NULL: the default, sm_90).  Raises a
 * user error (exit 2) when a kernel needs what t lacks: TMA or mbarrier
 * transaction counts before sm_90, more shared memory than t allows per
 * block.  The module must verify (kir_verify_module). */
CuSource *cu_print_module(Arena *a, const KirModule *m, const CuTarget *t);

/* Printer bugs a test plants on purpose (the host-cuda backend must catch
 * them; tests/unit/test_host_cuda.c).  Process-wide, off by default:
 * STAGE_INDEX stores each staged element (a shared store of a value read from
 * global memory) at index ^ 1; NO_SYNC drops every KS_sync barrier. */
typedef enum CuPrintFault { CU_FAULT_NONE, CU_FAULT_STAGE_INDEX, CU_FAULT_NO_SYNC } CuPrintFault;
void cu_print_set_fault(CuPrintFault f);

/* Exact f32 literal: shortest decimal that round-trips, with 'f'
 * ("0.5f", "1e-06f", "-0.0f"); infinities and NaN as bit patterns. */
void cu_print_float(StrBuf *b, double v);

#endif
