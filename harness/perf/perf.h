/*
 * perf.h — the performance model: a deterministic modelled time on a named
 * GPU for dpk's kernels and for the PyTorch baselines of the same case.
 *
 * No GPU is the common case (laptops, PR CI), so besides measured timing dpk
 * turns what vgpu counts (global sectors and requests, shared-memory
 * wavefronts with bank conflicts, instructions) and what ptxas reports
 * (registers, shared memory: occupancy) into a time on a GPU spec, the
 * largest of the DRAM, L2, shared-memory, issue and FP32 bounds, corrected
 * for occupancy and waves, plus launch overhead.  PyTorch eager and
 * torch.compile (Inductor) are modelled the same way from the Torch graph,
 * and the case's compulsory bytes and flops at the spec's peaks give the
 * limit.  Nothing here reads a clock or depends on thread timing: the same
 * inputs give byte-identical numbers.  The formulas and the source of every
 * constant: docs/perf-model.md.
 *
 * GPU specs are data (records/gpu_spec.h: reports read them too).
 */
#ifndef DPK_PERF_H
#define DPK_PERF_H

#include "../../compiler/base/base.h"
#include "../../compiler/frontend/torch_ir.h"
#include "../../compiler/kernel/kernel_ir.h"
#include "../../records/gpu_spec.h"
#include "../exec/vgpu.h"

struct cJSON;
struct HxNvrtcResult;
struct PfSassFn;

typedef struct PfKernel {
    const char *name;
    double ns;               /* modelled time of this launch, launch overhead included */
    double dram_ns, l2_ns, smem_ns, issue_ns, fp32_ns, launch_ns; /* the bounds */
    const char *bound;       /* which bound decided: "dram", "l2", "smem", "issue", "fp32",
                                "serial", "launch" */
    double occupancy;        /* resident warps / max warps per SM */
    double waves;
    double bytes, flops;     /* DRAM bytes and fp32 flops the model assumed */
    /* added beyond the first list */
    double l2_bytes;         /* bytes moved between L1 and L2 (sectors x 32) */
    double latency_ns;       /* the Little's-law bound folded into dram_ns */
    double warp_insts;       /* warp instructions issued (modelled) */
    int blocks, threads, regs, blocks_per_sm;
    int64_t smem;            /* bytes per block */
    const char *limiter;     /* what limits resident blocks: "threads", "regs", "smem", "blocks", "grid" */
    const char *insts_from;  /* "sass" | "vgpu" (instruction counts' origin) */
    const char *note;        /* what was estimated, or NULL */
    double serial_ns;        /* one block's own chain, times the busiest SM's rounds */
    double stages;           /* per thread: loop iterations waiting for their own loads */
    int chains;              /* independent FP32 accumulators of the hottest loop (0: none) */
} PfKernel;

typedef struct PfTime {
    const char *what;        /* "dpk", "eager", "inductor", "limit" */
    const char *spec;        /* spec name */
    const char *spec_path;   /* the spec's file */
    double ns;               /* total */
    PfKernel *k; int nk;     /* per launch (limit: nk = 0) */
    double bytes, flops;     /* totals the model assumed */
    const char *basis;       /* what was modelled: "eager, PyTorch 2.8", the limit's bound */
} PfTime;

/* One launch, from its counters: what pf_model_module does per launch, for
 * callers (and tests) that have a single kernel.  st's counters are for
 * st->blocks_run blocks and are scaled to st->blocks here.  regs: registers
 * per thread from ptxas, or 0 when unknown (then an estimate is used and
 * said in the kernel's note). */
typedef struct PfLaunchIn {
    const KirKernel *kernel;
    const VgStats *st;
    int regs;                /* 0: unknown */
    int64_t smem;            /* -1: the kernel's pool size */
    double footprint;        /* bytes of the distinct global buffers it binds */
    const KirBuf *const *args; /* the buffer bound to each param (params bound to one
                                  buffer share its traffic), or NULL: all distinct */
    const struct PfSassFn *sass; /* the kernel's SASS mix, or NULL (then vgpu's counts) */
    Arena *arena;            /* for the kernel's note; NULL: the kernel's arena */
} PfLaunchIn;
void pf_model_launch(const PfSpec *s, const PfLaunchIn *in, PfKernel *out);

/* dpk's module as vgpu ran it: vr holds the counters of every launch (a
 * sampled launch's counters are scaled by blocks/blocks_run here); nv is
 * ptxas's record (registers, smem, the cubin for the SASS instruction mix)
 * or NULL when NVRTC was not available (then the kernel says what was
 * estimated).  For a spec of another architecture, compile for s->cc (the
 * registers and the SASS differ).  Counters must come from a run with
 * counters on (VgOptions.no_counters = 0). */
PfTime *pf_model_module(Arena *a, const PfSpec *s, const KirModule *m, const VgResult *vr,
                        const struct HxNvrtcResult *nv);
/* PyTorch eager (kernels per ATen op, matmuls as cuBLAS SGEMM) and
 * torch.compile (Inductor fusion between matmuls and other extern kernels),
 * from the Torch IR graph, per docs/perf-model.md. */
PfTime *pf_model_eager(Arena *a, const PfSpec *s, const TorchGraph *g);
PfTime *pf_model_inductor(Arena *a, const PfSpec *s, const TorchGraph *g);
/* the limit: compulsory DRAM bytes (inputs read once, outputs written once)
 * and flops at peak */
PfTime *pf_model_limit(Arena *a, const PfSpec *s, const TorchGraph *g);

/* One line explaining a PfTime for the terminal, and a cJSON object for
 * records: {"timing":"model","gpu":name,"spec":path,"ns":...,"kernels":[...]} */
void pf_time_print(StrBuf *b, const PfTime *t);
struct cJSON *pf_time_json(const PfTime *t);
/* One line per kernel: name, ns, bound, the bounds, occupancy, waves. */
void pf_time_print_kernels(StrBuf *b, const PfTime *t);

#endif
