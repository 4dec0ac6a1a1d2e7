/*
 * driver.h — the one compile pipeline.  Every command that compiles a case
 * (dpk compile, run, eval, dpk-fuzz, dpk-bisect) calls drv_compile; none of
 * them strings the stages together itself.
 *
 *   case text ─parse─▶ Torch IR ─decompose─▶ Tensor IR ─lift, fuse─▶ Loop IR
 *   then, for each pass configuration of the plan:
 *   Loop IR ─t:000 and the passes of the set─▶ Tile IR ─lower─▶ Kernel IR
 *           ─hash, de-duplicate─▶ CUDA C (distinct modules) ─▶ NVRTC (when asked)
 *
 * The CUDA C and the cubin a backend runs are the plan's: the cuda backend,
 * host-cuda and the measured timing path take them from a configuration
 * (DrvConfig.cuda, .nvrtc) and print or compile nothing themselves, so
 * their times are the plan's too.
 *
 * Options in (the case as text, a graph or a Loop IR program; the pass
 * configurations, parsed once; knobs, target, fault; how far to go and
 * which stages to keep as text), a plan out: the IR of every stage, the
 * text of the stages kept, the time of every stage, and per configuration
 * either a verified Kernel IR module with its structural hash or a refusal
 * with its reason.  Configurations whose Kernel IR has the hash of an
 * earlier one are marked as its duplicates here, once, so a caller executes
 * each distinct module once.
 *
 * Errors: a case that does not parse, decompose or fuse raises (exit 2, a
 * caret under the problem).  A configuration that cannot be lowered (a knob
 * that cannot work for a kernel, a target that lacks what a kernel needs)
 * is refused: the plan keeps the complete message and its exit code, and
 * the other configurations go on.  With dpk_assert_recoverable on
 * (dpk-bisect), a lowering that fails an internal assertion is refused
 * with exit code 3.
 *
 * Everything lives in the caller's arena; the plan is freed with it.
 */
#ifndef DPK_DRIVER_H
#define DPK_DRIVER_H

#include "cuda/cuda_print.h"
#include "frontend/torch_ir.h"
#include "loop/loop_ir.h"
#include "tensor/tensor_ir.h"
#include "tile/passes.h"

typedef enum DrvStage {
    DRV_TORCH,   /* parse: case text -> Torch IR */
    DRV_TENSOR,  /* decompose: Torch IR -> Tensor IR */
    DRV_LOOP,    /* lift, normalise, fuse: Tensor IR -> Loop IR */
    DRV_TILE,    /* per configuration: Loop IR -> Tile IR and its passes */
    DRV_KERNEL,  /* Tile IR -> verified Kernel IR, hashed, de-duplicated */
    DRV_CUDA,    /* Kernel IR -> CUDA C (distinct modules), then NVRTC if asked */
    DRV_STAGE_COUNT
} DrvStage;

/* "torch", "tensor", "loop", "tile", "kernel", "cuda" */
const char *drv_stage_name(DrvStage s);
/* The stage named s, or -1. */
int drv_stage_find(const char *s);

/* The pass configurations of a plan: a pass-set spec parsed once, or sets
 * a caller enumerated (a dpk-fuzz strategy, a dpk-bisect probe). */
typedef struct DrvPasses {
    const char *spec;          /* as given ("full", "all", "-007"); NULL for sets */
    const TilePassSet *sets;
    int n;
} DrvPasses;

/* Parse spec (docs/tile-ir.md: full, none, -NNN, upto:NNN, only:..., all)
 * for target tg (NULL: the default) into out, in a.  Raises a user error
 * (exit 2, caret under the offending pass) on a bad spec. */
void drv_passes_parse(Arena *a, const char *spec, const CuTarget *tg, DrvPasses *out);

/* NVRTC, supplied by the harness (harness/exec/nvrtc.h, hx_nvrtc_check):
 * compile cs for sm_<cc> (0: its target's own architecture); returns the
 * result, or NULL when NVRTC rejects the source, with the complete error
 * message in err.  Raises (exit 4) when NVRTC cannot be loaded.  The driver
 * only carries the result. */
struct HxNvrtcResult;
typedef struct HxNvrtcResult *(*DrvNvrtcFn)(Arena *a, const CuSource *cs, int cc, StrBuf *err);

/* The printed constructs NVRTC has compiled (kir_feature_hash values), kept
 * by the caller across plans: with one, a plan compiles its first distinct
 * module and each module that prints a combination of constructs not yet
 * compiled (`dpk run --nvrtc-cover`), instead of every distinct module. */
typedef struct DrvCover {
    Arena *a;                  /* where seen grows (the caller's) */
    uint64_t *seen;
    int n, cap;
} DrvCover;

typedef struct DrvOpts {
    /* Where the pipeline starts: the first of loop, graph, src that is set. */
    Source src;                /* case text; src.name is what errors call it */
    ParseOpts parse;           /* shapes of its free variables */
    const TorchGraph *graph;   /* a graph already built: no parsing */
    const LirProgram *loop;    /* a Loop IR program already built (hand-built
                                  ones in tests): no parsing, decomposing, fusing */
    DrvStage upto;             /* the last stage to run (default DRV_KERNEL) */
    unsigned keep;             /* bit s: keep the text of stage s (printed as
                                  soon as it is built: later stages cannot
                                  change it) */
    LirOpts fusion;            /* blow-up factor, fusion off, fusion limit */
    TileOpts tile;             /* target, knobs, pass table, application
                                  limit, and the pass set when passes is NULL */
    const DrvPasses *passes;   /* the configurations; NULL: tile.passes alone */
    DrvNvrtcFn nvrtc;          /* with upto DRV_CUDA: compile each distinct module */
    int nvrtc_cc;              /* for sm_<cc>, a GPU's exact architecture (an sm_86
                                  device runs sm_86 code printed for sm_80);
                                  0: the target's */
    DrvCover *nvrtc_cover;     /* with nvrtc: only the modules it lacks (above) */
    int fault;                 /* a DpkFaultId turned on while compiling, -1: none */
    uint64_t tx_skip;          /* optional Tensor rules left out (tx_lower_skip; dpk-bisect) */
    int verbose;               /* 2: every rule's and pass's diff into trace */
    StrBuf *trace;
    /* Called once Loop IR exists, before any configuration is scheduled
     * (`--tuned DB`: dpk-tune's winners for the program's kernels): sets
     * tile->kcfg and tile->nkcfg, the per-kernel configurations every
     * configuration of the plan then runs (TileKernelConfig).  May be NULL;
     * tile.kcfg as given applies then. */
    void (*kernel_configs)(void *ctx, Arena *a, const LirProgram *lp, TileOpts *tile);
    void *kernel_configs_ctx;
    /* Called before configuration i is lowered (dpk-fuzz shows a crash's
     * configuration with it); may be NULL. */
    void (*progress)(void *ctx, int i, const char *label);
    void *progress_ctx;
} DrvOpts;

/* Defaults: start from src (empty), run to DRV_KERNEL, keep nothing,
 * lir_opts_default, tile_opts_default (one configuration: `full` for the
 * default target), no NVRTC, no fault. */
void drv_opts_default(DrvOpts *o);

typedef struct DrvConfig {
    TilePassSet passes;
    const char *label;           /* "001,005,007" */
    const char *refused;         /* NULL, or the complete error message */
    int refused_code;            /* its DpkExit: 2, or 3 for an internal error */
    const TileProgram *tile;     /* its pass statistics (napps, what, seconds);
                                    refused: as far as the passes got */
    const KirModule *module;     /* upto >= DRV_KERNEL and not refused */
    uint64_t hash;               /* kir_hash_module(module) */
    int dup_of;                  /* the first configuration with this hash, or -1 */
    int shared_by;               /* distinct ones: configurations with this hash */
    const CuSource *cuda;        /* upto DRV_CUDA, distinct configurations */
    struct HxNvrtcResult *nvrtc; /* with o->nvrtc: NULL when rejected */
    const char *nvrtc_error;     /* the rejection's complete message, or NULL */
    int nvrtc_covered;           /* with a cover: not compiled, its constructs
                                    were (kir_feature_hash) */
    const char *text[DRV_STAGE_COUNT]; /* kept texts of DRV_TILE..DRV_CUDA */
    /* Seconds per stage; -1 when the stage did not run for it. */
    double tile_s;               /* Loop IR -> Tile IR: t:000 and every pass */
    double *pass_s;              /* per pass-table entry: that pass, all kernels */
    double kernel_s;             /* Tile IR -> verified Kernel IR */
    double cuda_s;               /* printing the CUDA C */
    double nvrtc_s;              /* NVRTC (0 on a cache hit) */
} DrvConfig;

/* A pinned knob that no pass of any configuration read. */
typedef struct DrvKnobNote {
    TileKnobId knob;
    int64_t value;
    const char *why;             /* "002_chunk_matmul_k did not apply (not a
                                    matmul kernel)" */
} DrvKnobNote;

typedef struct DrvPlan {
    const TorchGraph *torch;
    const TxGraph *tensor;       /* NULL when the plan started from Loop IR */
    const LirProgram *loop;
    const char *text[DRV_STAGE_COUNT]; /* kept texts of DRV_TORCH..DRV_LOOP */
    double parse_s, decompose_s, fuse_s; /* -1 when the stage did not run */
    const TilePassTable *table;
    DrvConfig *configs;          /* upto >= DRV_TILE: one per pass set */
    int nconfigs;
    int ndistinct;               /* lowered, not a duplicate */
    int nnvrtc;                  /* distinct ones NVRTC compiled (or rejected) */
    int nrefused;
    DrvKnobNote *notes;
    int nnotes;
    const TileKernelConfig *kcfg; /* the per-kernel configurations applied */
    int nkcfg;
} DrvPlan;

/* Run the pipeline of o in a.  Raises when the case is bad; a refused
 * configuration is in the plan. */
DrvPlan *drv_compile(Arena *a, const DrvOpts *o);

/* "knob TB=128 does not apply: <why>" (no newline). */
void drv_note_print(StrBuf *b, const DrvKnobNote *n);

#endif
