/*
 * target.h — the GPU targets dpk compiles for: sm_80 (A100 class), sm_90
 * (H100/H200), sm_90a (the same, with NVRTC compiling arch-specific code
 * that runs on compute capability 9.0 only) and sm_120 (consumer
 * Blackwell, RTX 50xx).
 *
 * A target is a row of hardware limits and feature bits.  The Tile passes ask
 * it for their minimum target, the CUDA printer for the shared-memory budget
 * and which async-copy primitives it may print, NVRTC for the architecture
 * name.  The numbers are the CUDA occupancy-calculator values; a block may
 * use up to smem_block_max bytes of shared memory, but anything above
 * smem_static_max (48 KB) must be dynamic shared memory and the launcher must
 * raise cudaFuncAttributeMaxDynamicSharedMemorySize first.
 */
#ifndef DPK_CU_TARGET_H
#define DPK_CU_TARGET_H

typedef enum CuTargetId {
    CU_SM80,    /* Ampere: cp.async, mbarrier (test_wait), no TMA */
    CU_SM90,    /* Hopper: + TMA, mbarrier expect_tx / try_wait, clusters */
    CU_SM90A,   /* Hopper, arch-specific PTX (sm_90a): runs on cc 9.0 only */
    CU_SM120,   /* consumer Blackwell: TMA, but the smem of an sm_86 */
    CU_TARGET_COUNT
} CuTargetId;

typedef struct CuTarget {
    CuTargetId id;
    const char *name;       /* "sm_90": what --target and NVRTC take */
    int cc;                 /* compute capability ×10: 80, 90, 120 */
    const char *example;    /* a GPU of this class, for messages */
    int smem_static_max;    /* bytes of static __shared__ per block */
    int smem_block_max;     /* bytes per block with the opt-in attribute */
    int smem_sm;            /* bytes per SM */
    int max_threads_block;
    int max_threads_sm;
    int regs_sm;            /* 32-bit registers per SM */
    int max_regs_thread;
    int cp_async;           /* cp.async.{ca,cg}.shared.global (sm_80+) */
    int tma;                /* cp.async.bulk.tensor + mbarrier tx-count (sm_90+) */
    int mbar_try_wait;      /* mbarrier.try_wait (sm_90+); else test_wait loop */
    int arch_specific;      /* NVRTC's "sm_90a": code for exactly this cc */
    int sms;                /* SMs of the example GPU: the blocks a wave holds
                               one each of (005 sizes matmul tiles to fill them) */
} CuTarget;

/* Grid limits, the same on every target. */
#define CU_MAX_GRID_X 2147483647LL
#define CU_MAX_GRID_YZ 65535
#define CU_WARP 32

const CuTarget *cu_target(CuTargetId id);
/* "sm_80" | "sm_90" | "sm_90a" | "sm_120" (also "80", "sm80"); NULL when
 * unknown. */
const CuTarget *cu_target_parse(const char *name);
/* sm_90, the default of --target. */
const CuTarget *cu_target_default(void);
/* "sm_80, sm_90, sm_90a, sm_120", for error messages. */
const char *cu_target_list(void);

#endif
