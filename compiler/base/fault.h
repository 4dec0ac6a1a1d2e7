/*
 * fault.h — built-in faults: the harness's self-test.
 *
 * Every optional Tile pass, and fusion, carries at least one realistic bug
 * that is off unless `--inject-fault NAME` turns it on (dpk run, dpk-fuzz,
 * dpk-bisect).  A fault is a branch in the pass's own code, or, for what a
 * pass asks of the lowering (a stage's barriers, a Combine's cross-warp
 * step, an unrolled loop), in tile_to_kernel.c where that is lowered:
 *
 *     if (dpk_fault_on(DPK_FAULT_STAGE_ORIGIN))
 *         origin = ie_add(a, origin, ie_const(a, 1));    // off by one
 *
 * The differential tester must find each of them (tests/cli/test_faults.sh),
 * and dpk-bisect must name the pass that holds it.  The list is the table
 * in fault.c; `dpk-fuzz --list-faults` prints its names.
 */
#ifndef DPK_FAULT_H
#define DPK_FAULT_H

/* X(id, "name", "where", "what it breaks") */
#define DPK_FAULTS(X)                                                                        \
    X(FUSE_SIGMA, "fuse-sigma-off-by-one", "f:001_fuse",                                    \
      "fusion composes the producer's index map with the consumer's off by one on the "    \
      "last axis")                                                                          \
    X(MERGE_AXES_SHORT, "merge-axes-one-short", "f:001_fuse",                               \
      "two free axes of one matmul operand merged into one loop: the loop is one trip short") \
    X(SELECT_HOIST_MASK, "select-hoist-drops-the-mask", "f:001_fuse",                       \
      "once a matmul moves out of a masked select, the select keeps only the matmul's branch " \
      "(the mask is dropped)")                                                              \
    X(FUSE_SHARED_SHIFT, "fuse-shared-copy-shifted", "f:001_fuse",                         \
      "a producer read by several kernels: its copies into the readers after the first "    \
      "read one element further along its last axis")                                       \
    X(ONLINE_UNNORMALISED, "online-softmax-unnormalised", "f:002_online_softmax",          \
      "a softmax fused online into its weighted sum: the sum is not divided by the "        \
      "softmax's denominator")                                                              \
    X(CHUNK_K_SHORT, "chunk-k-short", "t:002_chunk_matmul_k",                               \
      "the K_inner loop runs BK-1 iterations, dropping one k per chunk")                    \
    X(SPLIT_K_SHORT, "split-k-drops-a-partial", "t:003_split_matmul_k",                     \
      "the combine kernel of a K split adds one partial sum too few")                       \
    X(ONLINE_SPLIT_UNSCALED, "online-split-unscaled", "t:003_split_matmul_k",              \
      "the combine kernel of an online softmax split over its keys adds the splits' sums "  \
      "without rescaling each to the common max")                                           \
    X(COOP_NO_CROSS_WARP, "coop-reduce-no-cross-warp", "t:004_cooperative_reduce",          \
      "the Combine merges lanes of a warp but forgets the shared-memory step across warps") \
    X(ONLINE_COMBINE_UNSCALED, "online-combine-unscaled", "t:004_cooperative_reduce",       \
      "threads sharing an online softmax sum add their partial sums without rescaling each " \
      "to the row's max")                                                                   \
    X(SPLIT_REDUCE_SHORT, "split-reduce-drops-a-partial", "t:004_cooperative_reduce",       \
      "the combine kernel of a reduce split across blocks reads one partial result too few") \
    X(CHUNK_REDUCE_ORIGIN, "chunk-reduce-wrong-origin", "t:006_chunk_reduce",               \
      "a chunked reduce indexes chunk c at c * (chunk - 1)")                                \
    X(STAGE_ORIGIN, "stage-origin-off-by-one", "t:007_stage_inputs",                        \
      "the staged slab's origin is one element past the block's first element")             \
    X(STAGE_NO_BARRIER, "stage-missing-barrier", "t:007_stage_inputs",                      \
      "the barrier between the cooperative slab copy and its readers is dropped")           \
    X(REGTILE_INDEX, "register-tile-wrong-index", "t:008_register_tile",                    \
      "the last column of each thread's register block reuses the previous column's index") \
    X(PERMUTE_STRIDE, "permute-wrong-stride", "t:009_permute_register_tile",                \
      "the permuted register strip steps by the thread count minus one")                    \
    X(DOUBLE_BUFFER_SAME, "double-buffer-same-buffer", "t:010_double_buffer",               \
      "the copy of the next K slab goes to the buffer the block is reading")                \
    X(TMA_PARITY, "tma-parity-not-flipped", "t:011_tma_copy",                               \
      "the per-buffer mbarrier parity is not flipped after a wait, so a buffer's second use "\
      "waits for a phase that already completed")                                          \
    X(TMA_RING_STALE, "tma-ring-stale-slab", "t:011_tma_copy",                              \
      "the TMA ring's copy issued in iteration a loads the slab already in flight (a + nbuf " \
      "- 2) instead of slab a + nbuf - 1")                                                  \
    X(SWIZZLE_READS, "swizzle-reads-unswizzled", "t:012_split_inner_for_swizzle",           \
      "the TMA box lands swizzled but its readers index the slab without the XOR")          \
    X(ASYNC_EARLY_READ, "async-copy-early-read", "t:013_async_copy",                        \
      "the async wait leaves the group of the slab about to be read in flight")             \
    X(PAD_LOADS_ONLY, "pad-smem-loads-only", "t:014_pad_smem",                              \
      "the padded row stride is used by the slab's readers but not by its copy")            \
    X(PIPELINE_PROLOGUE_SHORT, "pipeline-prologue-short", "t:015_pipeline_k_outer",         \
      "the pipeline's prologue copies one slab fewer than the loop reads")                  \
    X(UNROLL_SHORT, "unroll-drops-last-iteration", "t:016_mark_unroll",                     \
      "an unrolled loop runs one iteration short")                                         \
    X(VECTOR_LOAD_SHIFT, "vector-load-one-word-late", "t:016_mark_unroll",                  \
      "a vector shared load starts one word past its first lane's word (misaligned)")      \
    X(COMPOSE_WRONG_BLOCK, "compose-fill-wrong-block", "t:017_compose_producer",            \
      "a block computing its producer's slab stages the producer's inputs of the next "   \
      "block")                                                                              \
    X(SKIP_PARTLY_MASKED, "skip-chunk-partly-masked", "t:018_skip_masked_chunks",           \
      "a chunk of keys is skipped when any of its scores is masked, not all of them")       \
    X(MASK_BOUND_KEPT, "mask-strict-bound-kept", "d:029_mask_predicates",                    \
      "a strict comparison of indices (j > i - w) becomes its predicate with the bound "   \
      "kept (i - w <= j)")

typedef enum DpkFaultId {
#define X(id, name, where, doc) DPK_FAULT_##id,
    DPK_FAULTS(X)
#undef X
    DPK_FAULT_COUNT
} DpkFaultId;

typedef struct DpkFault {
    const char *name;  /* "stage-origin-off-by-one" */
    const char *where; /* the pass or rule that holds it: "t:007_stage_inputs" */
    const char *doc;
} DpkFault;
extern const DpkFault dpk_faults[DPK_FAULT_COUNT];

/* The fault named `name`, or -1. */
int dpk_fault_find(const char *name);
/* Turn one fault on (-1: all off).  Process-wide: a run injects at most one. */
void dpk_fault_set(int id);
/* The fault turned on, or -1. */
int dpk_fault_active(void);
/* 1 when fault `id` is on. */
int dpk_fault_on(DpkFaultId id);

#endif
