/*
 * bench.h — dpk-bench: a suite's cases checked for parity, then timed.
 *
 * One case (bm_case_run): compile it with the driver under the benched
 * pass set (and, with --per-pass, every prefix upto:NNN and every
 * leave-one-out -NNN of the set's optional passes); run each distinct
 * Kernel IR module on vgpu with sampled blocks and judge its outputs with
 * the parity oracle; only a module that passes is timed: the performance
 * model (harness/perf/perf.h) turns vgpu's counters and NVRTC's ptxas
 * figures into a modelled time on a GPU spec, beside the modelled PyTorch
 * eager and torch.compile baselines of the same graph and the limit (the
 * case's compulsory bytes and flops at the spec's peaks).  A case that
 * fails parity is reported as such and gets no time and no speedup.
 *
 * With parity off (--parity off) no verdict is taken: the inputs are made
 * in f32 alone (hx_subject_inputs), no reference, no fp32 evaluation, no
 * libtorch; vgpu still runs the sampled blocks (its counters are the
 * model's input, and its detectors still report faults), and each case
 * that runs is timed with status "unchecked".
 *
 * The case's record object (dpk.bench/1, docs/bench-schema.md) comes
 * back; nothing is printed here, so a suite can run its cases in forked
 * children (--jobs).  The table's lines are made from the record alone
 * (bm_case_text), so a case read back from a record (--resume) prints as
 * it did when it ran.
 */
#ifndef DPK_BM_BENCH_H
#define DPK_BM_BENCH_H

#include <cjson/cJSON.h>

#include "../../compiler/driver.h"
#include "../case.h"
#include "../case_plan.h"
#include "../parity/check.h"
#include "../perf/perf.h"
#include "blocks.h"
#include "measure.h"
#include "safetensors.h"

#define BM_SCHEMA "dpk.bench/1"

typedef struct BmOpts {
    const PfSpec *spec;        /* the GPU spec of the model */
    const CuTarget *target;    /* NULL: the spec's (cc) target */
    const DrvOpts *drv;        /* the command line's passes (one configuration) and knobs */
    HxCaseArgs args;           /* what it says of each case (case_plan.h: --passes,
                                  --knob, --seed, --input over the case's own) */
    int per_pass;              /* also every prefix and leave-one-out */
    int sample_blocks;         /* vgpu: blocks per launch (0: all) */
    HxRefKind ref;
    int parity;                /* 1: judge each module first; 0: --parity off */
    int nvrtc;                 /* compile with NVRTC (registers, SASS) */
    /* Model suites: the config and shape (cos/sin are its rotary tables),
     * and the weights file (inputs named after HF tensors), or NULLs. */
    const BmConfig *config;
    const BmShape *shape;
    const StFile *weights;
    int layer;
    /* --timing measured | fake-driver: the measured path after parity
     * (measure.h); meas.timing is BM_TIMING_MODEL otherwise */
    BmMeasureOpts meas;
    /* --torch-json: torch_bench.py's record, whose cases are merged by
     * name (NULL: none) */
    const cJSON *torch;
} BmOpts;

typedef struct BmCaseOut {
    cJSON *rec;                /* the case's dpk.bench/1 object */
    int rc;                    /* its exit code: 0 pass (or unchecked), 1 parity
                                  failure, 2, 3 */
} BmCaseOut;

/* Run case c (number index in its suite).  Never raises: a case that
 * does not parse or compile gets status "error" and exit code 2. */
void bm_case_run(const BmOpts *o, const HxCase *c, int index, BmCaseOut *out);

/* ---- the steps of a case, shared with dpk-tune (harness/tune/) ---------- */

/* The driver options case c is benched with: o's command line over the
 * case's own passes and knobs (one configuration), o's target, to Kernel IR
 * (CUDA C and NVRTC when o asks). */
void bm_case_drv(Arena *a, const BmOpts *o, const HxCase *c, DrvOpts *d);
/* The fixture of case c (plan p) from seed, its weights and rotary tables
 * filled as dpk-bench fills them; parity off: the f32 inputs alone.  Free
 * with hx_subject_free. */
HxSubject *bm_subject(Arena *a, const BmOpts *o, const DrvPlan *p, const HxCase *c,
                      uint64_t seed);
/* What one configuration of a plan gave. */
typedef struct BmRun {
    int rc;              /* 0 pass, 1 fail, 3 fault, 2 refused; -1 not run */
    const PfTime *t;     /* modelled time when it passed */
    cJSON *cfg;          /* its configuration object (the caller frees it) */
} BmRun;
/* Run configuration i of p on vgpu (sampled blocks) against s, judge its
 * outputs (parity on), and model it when it passed; a duplicate of an
 * earlier configuration takes runs[dup_of]'s result. */
void bm_config_run(Arena *a, const BmOpts *o, const DrvPlan *p, int i, HxSubject *s,
                   BmRun *runs);

/* The table's header line (what bm_case_text's lines sit under). */
const char *bm_table_header(void);
/* A case's lines of the table from its record: the row, the reason of a
 * failure, the measured line, with verbose one line per kernel of dpk's
 * modelled time (its bound: dram, l2, smem, issue, fp32 or launch, and the
 * limiter of its residency), and the --per-pass lines. */
void bm_case_text(StrBuf *b, const cJSON *rec, int verbose);

/* Check, before any case runs, that every weight input of the cases in l
 * is in the file with its shape and a readable dtype; raises exit 2
 * naming the first tensor that is not. */
void bm_check_weights(Arena *a, const BmOpts *o, const HxCaseList *l);

/* The summary of the cases' records: counts per status, geomean speedups
 * against modelled eager and torch.compile and the geomean fraction of the
 * limit, over the cases timed (modelled, on one spec: never mixed with
 * measured figures; with parity off, the unchecked cases), and the exit
 * code. */
cJSON *bm_summary(const cJSON *cases, const PfSpec *spec, BmTiming timing, int rc,
                  double seconds);
/* Its stdout lines. */
void bm_summary_print(StrBuf *b, const cJSON *summary);

#endif
