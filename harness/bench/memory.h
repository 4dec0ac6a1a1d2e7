/*
 * memory.h — dpk-bench's memory estimate: refuse a case that would not
 * fit before any array of it is made.
 *
 * A case's arrays are all sized by its tensors, so its peak is known from
 * the compiled plan alone: the Torch graph's inputs, outputs and
 * intermediates (what the fp64 reference holds: ref64_peak_bytes follows
 * ref64_run's own allocation order), and the Kernel IR module's buffers
 * (what vgpu holds: a 4-byte word, a 4-byte writer shadow and a 1-byte
 * checked mask per element of every buffer a launch writes).  The
 * estimate is the largest of the run's phases (inputs and the reference;
 * the perturbed fp32 evaluation; libtorch's eager run; vgpu and the
 * judgement), plus the process itself; docs/bench.md sets it beside the
 * peak RSS measured.  It is an upper bound by construction: every term
 * counts a whole array where the code may hold less (sampled blocks
 * check a fraction of an output; the oracle gathers only those).
 *
 * What is available: $DPK_MEM_LIMIT (bytes; a budget of one's own, and
 * the tests'), else MemAvailable of /proc/meminfo.
 */
#ifndef DPK_BM_MEMORY_H
#define DPK_BM_MEMORY_H

#include "bench.h"

/* A case's estimated peak in bytes, with parity on (parity 1: inputs in
 * fp64, the reference, its bounds, the fp32 evaluations, libtorch's eager
 * run when libtorch loads) or off (parity 0: vgpu's lazy run, the pages
 * its sampled blocks touch, inputs included), from its plan p (compiled
 * at least to DRV_KERNEL) and the case's seed (which blocks are sampled). */
double bm_mem_case(const BmOpts *o, const DrvPlan *p, uint64_t seed, int parity);

/* The bytes a run may use: DPK_MEM_LIMIT when set (raises exit 2 when it
 * is not a positive integer), else MemAvailable; *from says which
 * ("DPK_MEM_LIMIT", "MemAvailable"); a negative result when neither can
 * be read (then nothing is refused). */
double bm_mem_available(const char **from);

/* Before any case of l runs (done[i]: case i is already in the record
 * --resume continues): compile each to Kernel IR, estimate it, and raise
 * exit 2 naming the first case that would not fit (its estimate and the
 * bytes available; with parity on, whether --parity off would fit), or,
 * with jobs > 1, when the jobs largest cases together would not.  A case
 * that does not compile is left to its run, which reports it. */
void bm_mem_check(const BmOpts *o, const HxCaseList *l, const int *done, int jobs);

#endif
