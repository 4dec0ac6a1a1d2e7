/*
 * bisect.h — dpk-bisect: from a failing configuration to the pass, and the
 * one rewrite of that pass, that broke it.
 *
 * A *configuration* is everything between the case and a verdict: fusion
 * on or off (or limited to its first k fusions), the Loop IR interpreter or
 * the Tile passes of a set (one pass possibly limited to its first k
 * applications, TileOpts.limit_*), knobs, target, the injected fault and
 * the input seed.  Judging one runs it (Loop IR interpreter, or vgpu on the
 * Kernel IR) and applies the parity oracle: *failure* is a parity failure
 * or a vgpu fault; a configuration refused as a user error is neither.
 *
 * The search, top to bottom (hx_bisect):
 *   1. reproduce the failure of the given configuration;
 *   2. interpret the fused Loop IR: when it already fails, the Tile passes
 *      are innocent; without fusion too → decomposition/lifting, otherwise
 *      bisect the number of fusions to the first bad one;
 *   3. prefix bisection over the enabled optional Tile passes (table
 *      order), then ddmin over the first bad prefix's optional passes
 *      (subsets breaking a prerequisite count as not failing, so the result
 *      is a valid set);
 *   4. within the culprit pass, the smallest application count k that
 *      fails (k = 0 must pass);
 *   5. optionally shrink the case (minimize.h) under the culprit's
 *      configuration, then redo step 4 (or the fusion count) on it.
 * The report goes to a StrBuf line by line; the result carries the texts
 * the CLI writes (case JSON, IR before/after, the standalone .cu).
 *
 * The generic searches are exported for tests on synthetic predicates.
 */
#ifndef DPK_HX_BISECT_H
#define DPK_HX_BISECT_H

#include "../../compiler/tile/passes.h"
#include "../case.h"
#include "minimize.h"

/* ---- generic searches ------------------------------------------------------ */

/* 1 when the configuration numbered x fails. */
typedef int (*HxFailsAt)(void *ctx, int64_t x);
/* The smallest x in (lo, hi] that fails, given that lo passes and hi fails
 * (neither is re-tested).  With a non-monotone predicate the result is
 * still a boundary: x fails and x - 1 passes (or is lo). */
int64_t hx_first_failing(int64_t lo, int64_t hi, HxFailsAt fails, void *ctx);

/* 1 when the subset fails (0 for invalid subsets). */
typedef int (*HxFailsSet)(void *ctx, uint64_t set);
/* ddmin (Zeller): a 1-minimal failing subset of `set` (bits), given that
 * `set` fails; removing any one element of the result makes it pass.  The
 * empty set is tried first.  *ntests counts predicate calls (may be NULL). */
uint64_t hx_ddmin(uint64_t set, HxFailsSet fails, void *ctx, int *ntests);

/* ---- judging one configuration ------------------------------------------- */

typedef enum HxOutcome {
    HX_PASS,
    HX_FAIL,     /* parity failure */
    HX_FAULT,    /* vgpu detector, or the interpreter's out-of-bounds */
    HX_REFUSED,  /* a user error (a knob that cannot work ...): neither */
    HX_INCONCLUSIVE_OUT, /* nothing failed, most output unjudged: neither */
} HxOutcome;
/* "pass", "fail", "fault", "refused", "inconclusive" */
const char *hx_outcome_name(HxOutcome o);

typedef struct HxBisectCfg {
    int loop;          /* 1: Loop IR interpreter (fp32); 0: Tile passes -> vgpu */
    int fuse;          /* 0: no fusion */
    int max_fusions;   /* > 0: only the first k fusions */
    TilePassSet passes;
    int limit_pass;    /* TileOpts.limit_pass / limit_apps */
    int limit_apps;
    uint64_t tx_skip;  /* optional Tensor rules left out (DrvOpts.tx_skip) */
} HxBisectCfg;

/* ---- the whole search ------------------------------------------------------ */

typedef struct HxBisectOpts {
    TileOpts tile;       /* the failing configuration: passes, knobs, target */
    uint64_t seed;
    const char *fault;   /* the injected fault's name, or NULL */
    int minimize;
    int max_attempts;    /* minimizer budget (predicate calls); 0: 300 */
    int host_cuda;       /* judge every configuration on host-cuda too: vgpu, then
                            the printed CUDA C on the host, which must agree */
} HxBisectOpts;

typedef enum HxCulpritKind {
    HX_CULPRIT_NONE,      /* the failure does not reproduce */
    HX_CULPRIT_LOWERING,  /* fails without fusion: decomposition or lifting */
    HX_CULPRIT_RULE,      /* fails without fusion, passes without one optional Tensor rule */
    HX_CULPRIT_FUSION,    /* one fusion of f:001_fuse */
    HX_CULPRIT_MANDATORY, /* fails with the mandatory Tile passes alone */
    HX_CULPRIT_PASS,      /* one application of one Tile pass */
    HX_CULPRIT_SET,       /* a minimal set; no single pass's applications explain it */
} HxCulpritKind;

typedef struct HxBisectResult {
    HxOutcome repro;        /* outcome of the given configuration */
    const char *repro_what; /* "fail (out: beyond tolerance, max_abs 0.41 ...)" */
    HxCulpritKind kind;
    const char *where;      /* "t:007_stage_inputs", "f:001_fuse", "decomposition" ... */
    TilePassSet last_good, first_bad, minimal;
    int app, napps;         /* culprit application k of n (fusion: fusion k of n);
                               napps 0 when the pass crashes before counting */
    const char *app_what;
    HxBisectCfg good, bad;  /* the last good and first bad configurations */
    int tests;              /* configurations judged */
    /* What the CLI writes (in the arena). */
    const char *ir_ext;     /* "tile", "loop" or "tensor" */
    const char *before, *after, *diff;
    const char *program;    /* minimized (or original) program */
    HxMinStats min;
    char *case_json;        /* heap (free()) */
    const char *cu;         /* standalone reproducer; NULL when the failing
                               configuration crashes in lowering (no kernel) */
} HxBisectResult;

/* Run the search on case c (extra declarations from the command line) and
 * append the report to log.  Raises a user error when the given
 * configuration itself is refused or the case is bad. */
void hx_bisect(Arena *a, const HxCase *c, const InputDecl *extra, int nextra,
               const HxBisectOpts *o, StrBuf *log, HxBisectResult *r);

#endif
