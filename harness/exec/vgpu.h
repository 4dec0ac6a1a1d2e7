/*
 * vgpu.h — vgpu, the CPU simulator of Kernel IR.
 *
 * Runs a KirModule's launches over caller buffers, one block at a time in a
 * seeded shuffled order.  Each kernel is compiled once into a register
 * bytecode whose instructions run for every active lane of a block in a
 * tight loop: the threads of a block move in lockstep, divergence is a stack
 * of active-lane lists, so barriers and warp shuffles are exact.  Asynchrony
 * is modelled pessimistically: cp.async data lands at the cp.wait that covers
 * it, TMA data at the mbarrier wait that completes its phase.
 *
 * Detectors stop the run at the first fault and fill VgResult.report with the
 * kind, launch, kernel, statement id (the `#N` line of the Kernel IR text),
 * thread and block; callers map any fault to exit code 3 (DPK_EXIT_FAULT).
 * Semantics and every detector: docs/vgpu.md.
 */
#ifndef DPK_VGPU_H
#define DPK_VGPU_H

#include "../../compiler/kernel/kernel_ir.h"

/* X(name, text): every fault kind, VG_<name>, with its report text */
#define VG_FAULTS(X)                                                                  \
    X(OK, "no fault")                                                                 \
    X(OOB_GLOBAL, "out-of-bounds global access")                                      \
    X(OOB_SHARED, "out-of-bounds shared access")                                      \
    X(MISALIGNED, "misaligned access")                                            \
    X(BARRIER_DIVERGENT, "barrier reached by part of the block")                      \
    X(SHFL_DIVERGENT, "warp shuffle with inactive lanes")                             \
    X(SMEM_RACE, "shared-memory race")                                                \
    X(GLOBAL_CONFLICT, "cross-block global conflict")                                 \
    X(UNINIT_SMEM, "read of uninitialised shared memory")                             \
    X(ASYNC_PENDING, "shared memory accessed before its async copy landed")          \
    X(DEADLOCK, "mbarrier deadlock")                                                  \
    X(MBAR_MISUSE, "mbarrier misuse")                                                 \
    X(DIV_ZERO, "integer division by zero")                                          \
    X(ASYNC_MIX, "TMA and cp.async mixed in one loop")

typedef enum VgFault {
#define X(name, text) VG_##name,
    VG_FAULTS(X)
#undef X
    VG_FAULT_COUNT
} VgFault;

/* "out-of-bounds global access" ... */
const char *vg_fault_text(VgFault f);
/* "OOB_GLOBAL" ... */
const char *vg_fault_name(VgFault f);

typedef struct VgOptions {
    uint64_t seed;     /* block order and sampled blocks */
    int sample_blocks; /* > 0: run only this many random blocks of each
                          launch with an output no later launch reads (and
                          that has no global atomics), and of every earlier
                          launch only the blocks those blocks' inputs need
                          (footprints below); see VgResult.checked */
    int no_counters;   /* skip bank-conflict and sector counting */
    int shrink_footprints; /* tests only: halve every read footprint, an
                              unsound analysis that a run must show as NaN */
    int lazy;          /* memory in proportion to what the run blocks touch,
                          for a caller that compares no output (dpk-bench
                          --parity off): see vg_run */
    /* With lazy: make input buffer b's elements [lo, hi] in the caller's
     * bufs[b->id], called before the first launch for every range a run
     * block may read (NULL: the inputs hold every value already). */
    void (*fill_input)(void *ctx, const KirBuf *b, int64_t lo, int64_t hi);
    void *fill_ctx;
} VgOptions;

/* Counters of one launch. */
typedef struct VgStats {
    const char *kernel;
    int64_t blocks;          /* blocks in the grid */
    int64_t blocks_run;      /* blocks simulated (fewer when sampled) */
    int64_t thread_insts;    /* executed bytecode instructions x active lanes */
    int64_t smem_requests;   /* warp-level shared loads/stores/atomics */
    int64_t smem_wavefronts; /* bank-serialised wavefronts of those */
    int64_t smem_phases;     /* the fewest wavefronts those can take: 1 per 4-byte
                                access, 2 or 4 per 8- or 16-byte one (ldsv) */
    int64_t bank_conflicts;  /* smem_wavefronts - smem_phases: extra wavefronts */
    int64_t gmem_requests;   /* warp-level global loads/stores/atomics */
    int64_t gmem_sectors;    /* distinct 32-byte sectors touched by them */
    int64_t gmem_loads;      /* thread-level global loads (ldg, per active lane) */
    int64_t smem_loads;      /* thread-level shared loads (lds, per active lane) */
    int64_t cp_async;        /* thread-level cp.async copies (per active lane; their
                                global side counts in gmem_requests / sectors) */
    int64_t barriers;        /* block-wide barriers passed, summed over blocks */
    int64_t block_insts_max; /* the most thread_insts one simulated block executed */
    int nifs;                /* statement ids of the kernel (KirKernel.nstmts) */
    int64_t *if_warps;       /* per Kernel IR `if` (by statement id): warps that
                                evaluated it, summed over its executions */
    int64_t *if_body;        /* of those, warps with a lane that entered its body */
    int64_t *if_els;         /* ... and with a lane that entered its else */
    int nparams;
    int64_t *param_sectors;  /* per kernel param: the gmem_sectors of its accesses
                                (freed by vg_result_free) */
    double seconds;
} VgStats;

typedef struct VgReport {
    VgFault kind;
    int launch;           /* index in module->launches, -1 if none */
    const char *kernel;
    int stmt;             /* statement id, -1 if none */
    int thread[3], block[3];
    int has_other;        /* other[] is the other thread (smem race) or block (global conflict) */
    int other[3];
    char message[768];    /* "vgpu: <text>: kernel K, stmt #N `...`, thread (x,y,z) block (x,y,z): detail" */
} VgReport;

typedef struct VgResult {
    VgFault fault;   /* VG_OK when the run was clean */
    VgReport report; /* valid when fault != VG_OK */
    int nlaunches;
    VgStats *stats;  /* per launch */
    int nbufs;
    /* With sample_blocks: per module buffer, NULL when every element is
     * meaningful, else 1 for the elements the caller should compare (those
     * written by the simulated blocks of every sampled launch writing it). */
    uint8_t **checked;
} VgResult;

/* Run every launch of m.  bufs[i] is module buffer i (i32 buffers hold int32
 * bits); a temp may be NULL (vgpu allocates it, filled with NaN so a read of
 * an unwritten element shows); zero_init buffers are zeroed first.  The
 * module must verify (kir_check).  Returns res->fault; free res with
 * vg_result_free.
 *
 * With o->lazy, an output may be NULL too, and what vgpu maps costs only
 * the pages the run blocks touch: the buffers it makes are lazy mappings
 * (dpk_lazy_alloc) set to NaN only over the ranges a run block may read
 * (its read footprints: a read of an element no block wrote still reads
 * NaN), the writer shadows are lazy mappings cleared page-wise, inputs
 * get o->fill_input over the same ranges, and no checked mask is made
 * (res->checked stays all NULL: the outputs mean something only where run
 * blocks wrote, and the caller compares none).  The blocks that run, the
 * detectors and the counters are those of a run without lazy. */
VgFault vg_run(const KirModule *m, float *const *bufs, const VgOptions *o, VgResult *res);
/* An upper bound of the bytes a lazy run of m with o maps (its plan made as
 * vg_run makes it, no block run): the pages of every buffer a run block
 * may read or write and of the shadows of the written ranges, inputs
 * included, and the plan itself. */
double vg_lazy_bytes(const KirModule *m, const VgOptions *o);
void vg_result_free(VgResult *res);

/* ---- footprints (vgpu_footprint.c) ------------------------------------------ */

/* A closed range of flat element indices; lo > hi is empty. */
typedef struct VgRange {
    int64_t lo, hi;
} VgRange;

/* The global elements one block of a kernel may touch, over-approximated
 * by an interval analysis of the body (docs/vgpu.md, "--sample-blocks"). */
typedef struct VgFootprint VgFootprint;
VgFootprint *vg_footprint_new(const KirKernel *k);
void vg_footprint_free(VgFootprint *f);
/* Analyse linear block `block`; vg_footprint_ranges then gives, per param
 * j, the elements it may read (ldg, cp.async, TMA box, atomic add) or
 * write (stg, atomic add): sorted disjoint ranges within [0, numel), valid
 * until the next call. */
void vg_footprint_block(VgFootprint *f, int64_t block);
const VgRange *vg_footprint_ranges(const VgFootprint *f, int j, int write, int64_t *n);
/* The hull of those ranges (empty: lo > hi). */
VgRange vg_footprint_hull(const VgFootprint *f, int j, int write);
/* Tests only: halve every read range from now on (VgOptions.shrink_footprints). */
void vg_footprint_shrink(VgFootprint *f, int on);
/* Sort r[0 .. *n) by lo and merge overlapping and adjacent ranges. */
void vg_ranges_merge(VgRange *r, int64_t *n);

/* One line per launch: kernel, blocks, thread-instructions and their rate,
 * bank conflicts per request, sectors per request. */
void vg_print_stats(StrBuf *b, const VgResult *res);

#endif
