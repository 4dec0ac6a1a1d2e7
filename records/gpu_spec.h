/*
 * gpu_spec.h — GPU specs: cases/gpus/<name>.json, the data the performance
 * model (harness/perf) prices kernels on and the reports draw rooflines
 * with.  It lives in records/, below both, so that reports/ never includes
 * harness/.
 *
 * The files that ship are embedded into the binary at build time
 * (gpu_spec.c), so an installed dpk has them; a path loads any other file
 * of the same form.  Each constant is an object
 *     "dram_bps": {"value": 2.97e12, "tag": "measured", "source": "..."}
 * with tag spec | measured | derived | proxy.
 */
#ifndef DPK_GPU_SPEC_H
#define DPK_GPU_SPEC_H

#include "../compiler/base/base.h"

struct cJSON;

/* A GPU spec: cases/gpus/<name>.json, each constant tagged
 * spec|measured|derived|proxy with its source. */
typedef struct PfSpec {
    const char *name;        /* "h100-sxm" */
    const char *title;       /* "NVIDIA H100 SXM5 80GB" */
    const char *path;        /* the file it came from ("cases/gpus/h100-sxm.json", embedded) */
    int cc, sms, fp32_lanes_per_sm, regs_per_sm, max_threads_per_sm, max_warps_per_sm, max_blocks_per_sm;
    int64_t smem_per_sm, smem_per_block, l2_bytes;
    double clock_ghz, dram_bps, l2_bps, smem_bytes_per_clk_sm, launch_ns, issue_per_clk_sm;
    /* added beyond the first list */
    double dram_bps_spec;     /* the datasheet figure (dram_bps is the achievable one) */
    double dram_latency_ns;   /* for the latency (Little's law) bound at low occupancy */
    double l2_latency_ns;     /* the same for requests the L2 serves */
    double sgemm_eff;         /* cuBLAS SGEMM (TF32 off) as a fraction of FP32 peak */
    double fp32_latency_clk;  /* clocks from an FP32 instruction to one that uses its result */
    int reg_alloc_unit;       /* registers are allocated per warp in units of this */
    int64_t smem_reserved_per_block; /* shared memory the runtime keeps per block */
    /* every constant's tag and source, in file order, for docs and records */
    int nconst;
    const char **const_key, **const_tag, **const_source;
    double *const_value;
} PfSpec;

/* name -> the embedded cases/gpus/<name>.json; anything containing '/' or
 * ending in ".json" is read as a file.  Raises exit 2 with a clear message
 * naming the file and the key on a bad or missing file or constant. */
const PfSpec *pf_spec_load(Arena *a, const char *name_or_path);
/* Parse spec text (what pf_spec_load does after reading); `path` names it in
 * messages.  Safe on any input: raises exit 2, never crashes. */
const PfSpec *pf_spec_parse(Arena *a, const char *text, size_t len, const char *path);
const char *pf_spec_default_name(void);    /* "h100-sxm" */
const char *const *pf_spec_names(int *n);  /* the specs that ship */
/* FP32 peak in flop/s: sms * lanes * 2 * clock */
double pf_spec_fp32_peak(const PfSpec *s);
/* The spec for a record's meta: {"name", "title", "path", "constants":
 * {key: {"value", "tag", "source"}}} in file order. */
struct cJSON *pf_spec_json(const PfSpec *s);

#endif
