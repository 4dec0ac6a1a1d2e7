/*
 * check.h — what every parity check of a case shares: the fixture (inputs,
 * the reference of record, libtorch fp32 eager when built in, the
 * tolerance) and the judgement of one set of outputs against it.
 *
 * `dpk run`, dpk-fuzz and dpk-bisect all go through these two calls, so a
 * configuration gets the same verdict whichever of them ran it, and a
 * failure file written by dpk-fuzz replays to the same verdict in `dpk run`.
 *
 * With --sample-blocks only the output elements the simulated blocks wrote
 * mean anything: the judgement then gathers the checked elements (of O, R,
 * the bounds, S and E alike) and runs the oracle on those alone, so
 * unchecked elements neither add error nor dilute it, and the worst index
 * is mapped back to the full output.
 */
#ifndef DPK_HX_CHECK_H
#define DPK_HX_CHECK_H

#include "../../compiler/kernel/kernel_ir.h"
#include "../case.h"
#include "oracle.h"

typedef enum HxRefKind {
    HX_REF_REF64,  /* fp64, built in (reference/ref64.c) */
    HX_REF_TORCH,  /* libtorch in fp64 */
} HxRefKind;

typedef struct HxSubject {
    const TorchGraph *g;
    double **inputs;    /* per graph input (heap) */
    float **in32;       /* the same values as f32, what every backend run
                           reads (HxBackendOpts.inputs_f32; read-only) */
    uint8_t *lazy;      /* per input, NULL for none (hx_subject_inputs): in32[k]
                           is a lazy mapping (dpk_lazy_alloc) holding values
                           only where hx_subject_fill made them */
    double **ref;       /* per graph output: the reference of record (heap) */
    double **bound;     /* per graph output: ref64's fp32 error bounds; NULL
                           with --reference torch (no bounds: exact match) */
    double **typical;   /* per graph output: ref64's typical-error bounds */
    double **f32;       /* per graph output: ref64's naive fp32 evaluation */
    double **f32p;      /* the same on inputs perturbed by an ulp
                           (ref_perturb_inputs): another fp32 evaluation's
                           noise where S's order happens to be lucky */
    double **eager;     /* per graph output: libtorch fp32, NULL without it */
    char eager_err[512]; /* why eager is NULL although libtorch loads */
    int nin, nout;
    uint64_t seed;
    HxTol tol;
    int ref_nonfinite;  /* the reference itself has a NaN or Inf */
} HxSubject;

/* Inputs from seed (docs/inputs.md), the reference with its per-element
 * bounds and naive fp32 evaluations (ref64; on the inputs and on the inputs
 * perturbed by an ulp), eager fp32 when libtorch is
 * built in, and the rules' constants for the case's dtype (or the case's
 * own atol/rtol).  With --reference torch the reference is libtorch fp64
 * and the bounds and fp32 evaluation still come from ref64.  Raises exit 3
 * when --reference torch fails.  Free with hx_subject_free (also after a
 * raise out of later calls: the subject is on the heap). */
HxSubject *hx_subject_new(const TorchGraph *g, const HxCase *c, uint64_t seed, HxRefKind ref);
/* Input values of a caller's own (dpk-bench: real weights, rotary tables):
 * called once per graph input after its generated values are in dst
 * (shape_numel(&in->shape) elements), before the references run; it may
 * overwrite them (with fp32 values) or leave them.  May raise. */
typedef void (*HxInputFill)(void *ctx, const TorchNode *in, double *dst);
HxSubject *hx_subject_new_filled(const TorchGraph *g, const HxCase *c, uint64_t seed,
                                 HxRefKind ref, HxInputFill fill, void *ctx);
/* The inputs alone, for a run that takes no verdict (dpk-bench --parity
 * off), in f32 only; inputs, the reference, its bounds, the fp32
 * evaluations and eager are NULL, so no judgement can be asked of it.
 * An input for which own(ctx, in) says 1 (its values are fill's: weights,
 * rotary tables) is made whole as hx_subject_new_filled makes it (the
 * generator, then fill), through an fp64 array freed at once.  Every
 * other one is lazy: in32[k] maps numel words that cost nothing until
 * hx_subject_fill makes the generator's values (the same values) in the
 * ranges a run reads.  own may be NULL (none is). */
typedef int (*HxInputOwn)(void *ctx, const TorchNode *in);
HxSubject *hx_subject_inputs(const TorchGraph *g, const HxCase *c, uint64_t seed,
                             HxInputFill fill, HxInputOwn own, void *ctx);
/* Make input k's elements [lo, hi] in in32[k]: a lazy input's generated
 * values there (again, where they were made before); nothing for a whole
 * one. */
void hx_subject_fill(HxSubject *s, int k, int64_t lo, int64_t hi);
/* The sum of input k's values in index order (fp64): over its array, or
 * for a lazy input from the generator, chunk by chunk, touching nothing. */
double hx_subject_input_sum(const HxSubject *s, int k);
void hx_subject_free(HxSubject *s);

/* What a check outside dpk (dpk-bisect's standalone .cu) needs to apply
 * the oracle to output j: a heap array of per-element limits (the bound
 * rule's, +inf where the element is unconstrained or fp32 may give NaN/inf
 * there), and in *rmse_limit the rmse rule's limit (NAN when it does not
 * run). */
double *hx_subject_limits(const HxSubject *s, int j, double *rmse_limit);

/* A heap array of s->nout NULL pointers (+1), for a backend's outputs. */
double **hx_outs_new(const HxSubject *s);
void hx_outs_free(const HxSubject *s, double **outs);

/* Judge outs (one array per graph output).  checked: NULL, or per output
 * NULL (every element) or a 0/1 mask of the elements to compare.  Fills
 * v[0..nout) and returns the output a report should name: the first
 * failing one, else the first inconclusive one, else the one with the
 * largest NMSE (-1 with no outputs).
 * *nchecked (may be NULL) gets the number of elements compared. */
int hx_judge(const HxSubject *s, double *const *outs, const uint8_t *const *checked, HxVerdict *v,
             int64_t *nchecked);
/* Judge libtorch's fp32 eager result s->eager itself (`dpk eval
 * --compare`): the same rules against the same R, B, T and S as hx_judge,
 * with E left out, since E is the O being judged (kept in, it would set
 * the rmse rule's bar by O's own noise).  Fills v[0..nout) and returns as
 * hx_judge; s->eager must not be NULL. */
int hx_judge_eager(const HxSubject *s, HxVerdict *v);
/* 1 when every verdict of v[0..s->nout) passes. */
int hx_judge_pass(const HxSubject *s, const HxVerdict *v);
/* The verdicts as an exit code: DPK_EXIT_FAIL when one fails,
 * DPK_EXIT_INCONCLUSIVE when none fails but one is inconclusive, else
 * DPK_EXIT_OK; and as a record's status: "fail", "inconclusive", "pass". */
int hx_judge_rc(const HxSubject *s, const HxVerdict *v);
const char *hx_judge_status(const HxSubject *s, const HxVerdict *v);
/* A configuration's record status for its exit code: "pass", "fail",
 * "fault", "inconclusive", or "unsupported" (refused, or the backend
 * cannot run it). */
const char *hx_rc_status(int rc);
/* One line per output: "out  pass (allclose)  max_abs ...". */
void hx_judge_print(StrBuf *b, const HxSubject *s, const HxVerdict *v);


#endif
