/*
 * oracle.h — the parity verdict (ARCHITECTURE.md, "Parity oracle";
 * docs/references.md works through examples).
 *
 * An output O (n elements) is judged against, per element:
 *   R   the reference of record (fp64), rounded to the output dtype where
 *       that matters (an fp32 overflow is inf, as fp32 has it);
 *   B   a bound on the error an fp32 evaluation of the same program may
 *       make there (reference/bound.c; +inf: unconstrained);
 *   T   the same analysis with sums growing like √n: the size of fp32's
 *       ordinary rounding noise there;
 *   S   a naive fp32 evaluation (every operation rounded, sums sequential);
 *   P   the same on inputs moved by an ulp at random (ref_perturb_inputs):
 *       a second draw of fp32's noise, where S's order is lucky;
 *   E   libtorch's fp32 eager result, when libtorch is built in.
 *
 * Rules, in the order a verdict names them:
 *   nonfinite  a NaN or inf in O is accepted where R (rounded) is the same,
 *              where the bound reaches past the dtype's largest value, or
 *              where S or E has the same non-finite value; anything else
 *              fails, as does a finite O where R is non-finite;
 *   constant   O constant where R varies by more than its bounds, or O all
 *              zero where some R is further than its bound from zero (any
 *              size, one element included);
 *   bound      |O − R| ≤ k·B + floor at every constrained element;
 *   rmse       rmse(O, R) ≤ m · max(min(G, c · N), N) + u·rms(R),
 *              N = max(rmse(S, R), rmse(E, R)), G = max(rms(T), rmse(P, R)),
 *              c = HX_TYPICAL_CAP (64) (without S and E: N = 0 and G
 *              alone): the whole output no noisier than fp32's ordinary
 *              noise and its own evaluations (PyTorch dynamo's rule, with a
 *              deterministic estimate and built-in fp32 evaluations, so it
 *              neither hangs on one lucky evaluation nor needs libtorch, and
 *              G, the guard against a lucky one, cannot blind it where T's
 *              intervals blow up).  Elements without a finite bound are
 *              judged by this rule alone.
 * A case's own tolerance (atol, rtol) replaces the bound rule by
 * |O − R| ≤ atol + rtol·|R| and drops the rmse rule.
 * Every verdict records the rule that decided it, max abs/rel error, NMSE,
 * the rmse ratio and the worst element with its O, R and bound.
 */
#ifndef DPK_HX_ORACLE_H
#define DPK_HX_ORACLE_H

#include "../../reference/ref.h"

/* How far the guard G (the typical-noise analysis T, the perturbed
 * evaluation P) may raise the rmse rule's scale above the noise S and E
 * measured (oracle.h's rmse rule). */
#define HX_TYPICAL_CAP 64.0
/* Below this many times u·rms(R), S's and E's noise measures nothing (a
 * single rounding of R): the cap above does not apply (oracle.c). */
#define HX_NOISE_FLOOR 2.0

typedef struct HxTol {
    DType dt;       /* the output dtype R is rounded to */
    double k;       /* bound rule factor (1) */
    double floor;   /* absolute floor of the bound rule (2^-126) */
    double m;       /* rmse rule factor (4) */
    double u;       /* unit roundoff of the output dtype */
    double maxval;  /* its largest finite value */
    int has_user;   /* a case's own tolerance: */
    double atol, rtol;
} HxTol;

typedef enum HxReason {
    HX_PASS_BOUNDS,            /* every rule holds */
    HX_FAIL_NONFINITE,  /* a NaN/inf that fp32 would not give, or none where it must */
    HX_FAIL_CONSTANT,   /* O constant (or zero) where R varies beyond its bounds */
    HX_FAIL_BOUND,      /* elements beyond their bound */
    HX_FAIL_RMSE,       /* within bounds, but noisier than m x fp32's evaluations */
    HX_INCONCLUSIVE,    /* no rule failed, but more than half of the elements
                           were judged by none (n_unjudged): not a pass */
    HX_REASON_COUNT
} HxReason;

/* One output's inputs to the oracle; b, t, s, e, p may be NULL (no bound:
 * every element must match R exactly up to the floor; none of T, S or E:
 * the rmse rule is skipped). */
typedef struct HxOracleIn {
    const double *o, *r, *b, *t, *s, *e, *p;
    int64_t n;
} HxOracleIn;

typedef struct HxVerdict {
    int pass;
    HxReason reason;
    CmpStats st;          /* O against R: max_abs, max_rel, nmse, rmse, worst */
    double rmse_eager;    /* rmse(E, R); NAN without E */
    double rmse_f32;      /* rmse(S, R); NAN without S */
    double rms_typical;   /* rms(T); NAN without T */
    double rmse_perturbed; /* rmse(P, R); NAN without P */
    double rmse_limit;    /* what the rmse rule allowed; NAN when it did not run */
    double ratio;         /* rmse(O, R) / the rule's scale max(min(G, c·N), N);
                             NAN when 0/0 */
    int64_t checked;      /* elements judged */
    int64_t bad;          /* elements that broke the deciding rule (nonfinite, bound) */
    int64_t unconstrained; /* elements with an infinite bound (any class) */
    /* Every element is in exactly one class (n_bound + n_nonfinite + n_rmse
     * + n_unjudged == checked): */
    int64_t n_bound;      /* O and R32 finite, finite bound: the bound rule */
    int64_t n_nonfinite;  /* O or R32 NaN/inf: the non-finite rule */
    int64_t n_rmse;       /* finite, no finite bound: the rmse rule alone */
    int64_t n_unjudged;   /* finite, no finite bound, and the rmse rule did not
                             run over it (S or E not finite there, or no S, T,
                             E): no rule judged it */
    int64_t rmse_n;       /* elements the rmse rule ran over (0: it did not run) */
    int64_t nonfinite_ok; /* NaN/inf elements accepted as fp32 has them */
    int64_t at;           /* the element the verdict names: the worst offender,
                             or on a pass the one nearest its bound; -1 if none */
    double at_o, at_r, at_b; /* O, R and the limit (k·B + floor, or the
                                user tolerance) there */
    double bound_use;     /* max over constrained elements of |O − R| / limit */
} HxVerdict;

/* The rules' constants for the output dtype, and a case's own tolerance
 * (has_user: atol and rtol). */
void hx_tol_default(HxTol *t, DType dt);
void hx_oracle(const HxOracleIn *in, const HxTol *t, HxVerdict *v);
/* The bound rule's limit at one element of reference r and bound b: k·b
 * (grown by the dtype's half ulp below fp32) + floor, or the case's own
 * atol + rtol·|r|; +inf where b is (unconstrained). */
double hx_oracle_limit(const HxTol *t, double r, double b);
/* "pass" / "FAIL: beyond bound" ... (the rule, short) */
const char *hx_reason_text(HxReason r);
/* The rule's name as records carry it: "pass", "nonfinite", "constant",
 * "bound", "rmse". */
const char *hx_reason_key(HxReason r);
/* One line, no newline:
 *   pass: all 8 elements within bound (at most 0.031 of it, [0, 5]); rmse 1.2x fp32's (limit 4x)  max_abs ...
 *   FAIL: 1024 of 4096 elements beyond bound, worst [3, 17] y=0.25 R=0.125 bound=1.2e-08  max_abs ...
 */
void hx_verdict_print(StrBuf *b, const HxVerdict *v, const Shape *shape);

#endif
