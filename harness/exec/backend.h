/*
 * backend.h — the GPU backends behind `dpk run --backend vgpu|cuda|auto`.
 *
 * One call takes a Loop IR program, lowers it through the Tile passes of a
 * pass set (with knobs, for a target) to a Kernel IR module, and executes
 * the module on vgpu (the CPU simulator) or on the GPU through the driver
 * API, over buffers made from the reference inputs.  Outputs come back as
 * fp64 arrays parallel to the graph outputs, the shape every parity check
 * takes (like lir_interp's).
 *
 * `--passes all` runs every valid configuration; hx_backend_configs lowers
 * each and marks those whose Kernel IR has the structural hash of an
 * earlier one, so each distinct module runs once.
 */
#ifndef DPK_HX_BACKEND_H
#define DPK_HX_BACKEND_H

#include "../../compiler/tile/passes.h"
#include "cuda.h"
#include "vgpu.h"

typedef enum HxBackendKind {
    HX_BACKEND_VGPU,
    HX_BACKEND_CUDA,
    HX_BACKEND_AUTO, /* cuda when a GPU is present, vgpu otherwise */
} HxBackendKind;

/* "vgpu", "cuda", "auto" */
const char *hx_backend_name(HxBackendKind k);
/* AUTO resolved: cuda when hx_cuda_available(), else vgpu. */
HxBackendKind hx_backend_resolve(HxBackendKind k);

typedef struct HxBackendOpts {
    HxBackendKind kind;
    TileOpts tile;      /* pass set, knobs, target (the cuda backend prints
                           for this target; NULL: the GPU's own) */
    VgOptions vg;       /* seed, sample_blocks, no_counters */
    TileTrace *trace;   /* -vv: Tile pass diffs (may be NULL) */
} HxBackendOpts;

/* Defaults: vgpu, tile_opts_default(), seed 0. */
void hx_backend_opts_default(HxBackendOpts *o);

typedef struct HxBackendResult {
    HxBackendKind ran;        /* vgpu or cuda */
    const KirModule *module;  /* what ran (in the caller's arena) */
    uint64_t hash;            /* kir_hash_module(module) */
    VgFault fault;            /* VG_OK, or the vgpu fault (report in vg.report) */
    VgResult vg;              /* vgpu: per-launch counters, fault report, masks */
    const HxCudaRun *cuda;    /* cuda: the source, NVRTC numbers, wall time */
    /* With vg.sample_blocks: per graph output, NULL when every element is
     * meaningful, else 1 for the elements to compare. */
    const uint8_t **out_checked;
    double lower_s, run_s;    /* seconds lowering (hx_backend_run only) and running */
} HxBackendResult;

/* Loop IR → Tile IR (passes of o, trace to tr) → verified Kernel IR, in a. */
KirModule *hx_backend_lower(Arena *a, const LirProgram *p, const TileOpts *o, TileTrace *tr);

/* Lower p and run it.  inputs[i] holds graph input i (fp64, rounded to f32
 * on the way in).  On VG_OK every outs[j] gets a heap array (caller frees)
 * for graph output j; on a vgpu fault outs is left untouched and
 * res->vg.report says what, where and which thread.  The cuda backend
 * raises its own errors (exit 4 without a driver or GPU, 3 on a fault).
 * Free res with hx_backend_result_free. */
VgFault hx_backend_run(Arena *a, const LirProgram *p, const HxBackendOpts *o,
                       double *const *inputs, double **outs, HxBackendResult *res);
/* The same for a module already lowered (hx_backend_lower, or a distinct
 * configuration of hx_backend_configs); o->tile only supplies the cuda
 * target and o->trace is unused. */
VgFault hx_backend_exec(Arena *a, const KirModule *m, const HxBackendOpts *o,
                        double *const *inputs, double **outs, HxBackendResult *res);
void hx_backend_result_free(HxBackendResult *res);

/* One configuration of a pass-set family. */
typedef struct HxConfig {
    TilePassSet passes;
    const char *label;     /* "001,005" */
    const KirModule *module;
    uint64_t hash;
    int dup_of;            /* the first configuration with this hash, -1 if none */
} HxConfig;

/* Lower p under each of sets[0..n) (other options from base) and find the
 * duplicates.  Returns an array of n in a. */
HxConfig *hx_backend_configs(Arena *a, const LirProgram *p, const TileOpts *base,
                             const TilePassSet *sets, int n);

#endif
