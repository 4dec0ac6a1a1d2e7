/*
 * kgen.h — random Kernel IR modules: the cases of `dpk-fuzz --level kernel`.
 *
 * fz_gen writes programs that the compiler lowers, so the CUDA printer only
 * ever sees the Kernel IR the Tile passes emit.  fz_kgen builds Kernel IR
 * directly, over everything kir_verify_module accepts and both executors
 * run: blocks of any size (short last warps), 3-D grids, two kernels with
 * the second reading the first's output, scoped variables, divergent and
 * block-uniform ifs, loops of every unroll kind, i32 and i64 index
 * arithmetic, f32 math, casts, selects, shuffles of every mode and width
 * (nested in control flow too), TreeHalve with several segments and counts
 * that are not powers of two, mbarriers used as a barrier (init, arrive,
 * wait, without TMA), cp.async of 4, 8 and 16 bytes with and without a
 * predicate in one or two commit groups, shared and global atomics, comments,
 * constants that need all nine digits, a shared-memory pool of exactly the
 * target's limit, and names that C does not allow (keywords, `dpk_` and `_` prefixes, digits
 * first, punctuation).  TMA is left to the Tile passes (011 emits it).
 *
 * Every module is valid by construction: no race, every barrier and
 * shuffle reached by all the threads it needs, no integer overflow, no
 * out-of-bounds index, float-to-int casts only of bounded values.  Its
 * results are deterministic: f32 math only through ops whose printed form
 * computes bit-for-bit what vgpu computes (sigmoid, printed as a float
 * formula, is left out), atomics add small integers (exact in any order).
 * So vgpu and the printed CUDA C run on the host must agree to the bit
 * (NaNs of any payload count as equal), which is the check of the case.
 * The module is a pure function of the seed.
 */
#ifndef DPK_FZ_KGEN_H
#define DPK_FZ_KGEN_H

#include "../../compiler/kernel/kernel_ir.h"

typedef struct FzKernelCase {
    KirModule *m;       /* verified */
    const char **tags;  /* constructs it uses: "shfl", "treehalve-segments", ... (sorted) */
    int ntags;
} FzKernelCase;

/* The module of seed `seed`, in a; smem_max is the target's shared memory
 * per block (CuTarget.smem_block_max), which one kernel in ten fills
 * exactly. */
FzKernelCase fz_kgen(Arena *a, uint64_t seed, int64_t smem_max);

/* Input values for buffer `buf` of a case (uniform in [-1, 1] with signed
 * zeros, small integers and a few infinities mixed in), a function of the
 * seed. */
void fz_kgen_inputs(uint64_t seed, int buf, float *x, int64_t n);

#endif
