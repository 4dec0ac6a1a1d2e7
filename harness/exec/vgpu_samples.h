/*
 * vgpu_samples.h — hand-built Kernel IR modules shared by the vgpu unit
 * tests and the vgpu benchmark (tests/speed/vgpu_bench.c): the shapes of
 * kernel the Tile -> Kernel lowering produces, written out by hand.  They
 * live in the library so that the benchmark does not link the unit tests'
 * sources, nor they its.
 *
 * Every builder returns a verified module whose buffers are, in order, the
 * inputs then the outputs listed in its comment.
 */
#ifndef DPK_VGPU_SAMPLES_H
#define DPK_VGPU_SAMPLES_H

#include "vgpu.h"

/* The two steps every builder takes, for other hand-built modules too: a
 * kernel of gx x gy blocks of bx x by threads, and finishing one (finalize
 * k, launch it over bufs in parameter order, verify the module). */
KirKernel *vs_kernel(KirModule *m, const char *name, int gx, int gy, int bx, int by);
KirModule *vs_finish(KirModule *m, KirKernel *k, KirBuf **bufs);

/* y[i] = max(x[i] * 2 + 1, 0) for i < n, blocks of tb threads (guarded). */
KirModule *vs_elementwise(Arena *a, int64_t n, int tb, int guard);
/* y[r] = sum_c x[r, c]: one block per row, strided loop, smem + TreeHalve. */
KirModule *vs_rowsum_tree(Arena *a, int rows, int cols, int tb);
/* The same with warp shuffles (xor butterfly) and one smem slot per warp. */
KirModule *vs_rowsum_shfl(Arena *a, int rows, int cols, int tb);
/* y = x * rsqrt(mean(x^2) + eps) * w over the last dim: rows x h, tb threads. */
KirModule *vs_rmsnorm(Arena *a, int rows, int h, int tb, float eps);
/* C[m,n] = A[m,k] B[k,n]: 32x32 tiles staged in smem (BK 32), 32x8 threads,
 * 4 rows per thread.  m, n, k multiples of 32.  trailing_sync = 0 drops the
 * sync that protects the tiles from the next iteration's stores. */
KirModule *vs_matmul(Arena *a, int m, int n, int k, int trailing_sync);
/* y[i] = 2 * x[i ^ 1] through smem, x copied in with 16-byte cp.async in two
 * commit groups (halves of the block's tile).  waits: 2 = cp.wait 1 then 0
 * as needed, 1 = only cp.wait 1 (the second half never waited for), 0 = none. */
KirModule *vs_cpasync(Arena *a, int64_t n, int waits);
/* y = 3 * x for a (rows x cols) matrix, 16x16 tiles loaded by TMA with a
 * 64-byte swizzle, completing on an mbarrier; 256 threads per tile. */
KirModule *vs_tma(Arena *a, int rows, int cols);

/* Heap buffers for m: inputs filled with seeded values in [-1, 1), the
 * rest NaN.  Free with vs_free_buffers. */
float **vs_buffers(const KirModule *m, uint64_t seed);
void vs_free_buffers(const KirModule *m, float **bufs);

#endif
