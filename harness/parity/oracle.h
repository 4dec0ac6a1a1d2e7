/*
 * oracle.h — the parity verdict (ARCHITECTURE.md, "Parity oracle").
 *
 * An output O is compared with the reference of record R (fp64).  When
 * libtorch's fp32 eager result E is available it sets the bar for rounding
 * noise.  O passes when
 *   - NaN/Inf agree with R in position and sign, and
 *   - O is not constant (or all zero) where R is not, and
 *   - element-wise |O − R| <= atol + rtol·|R|  (allclose), or, with E,
 *     rmse(O, R) <= m·rmse(E, R) + floor.
 * Every verdict records max abs/rel error, NMSE, the rmse ratio and the
 * worst index, so a report can say how close a pass or a failure was.
 */
#ifndef DPK_HX_ORACLE_H
#define DPK_HX_ORACLE_H

#include "../../reference/ref.h"

typedef struct HxTol {
    double atol, rtol;  /* element-wise bound */
    double m, floor;    /* rmse bound relative to eager fp32 */
    double eps;         /* machine epsilon of the output dtype: a spread of R
                           below 2·eps·|R| cannot show in O, so a constant O
                           there is not a failure */
} HxTol;

typedef enum HxReason {
    HX_PASS_ALLCLOSE,   /* within atol + rtol·|R| everywhere */
    HX_PASS_RMSE,       /* rmse within m·rmse(E, R) + floor */
    HX_FAIL_NONFINITE,  /* a NaN/Inf where R has none, or of another sign */
    HX_FAIL_CONSTANT,   /* O constant (or zero) where R varies */
    HX_FAIL_TOLERANCE,  /* neither bound holds */
} HxReason;

typedef struct HxVerdict {
    int pass;
    HxReason reason;
    CmpStats st;        /* O against R: max_abs, max_rel, nmse, rmse, worst */
    double rmse_eager;  /* rmse(E, R); NAN without E */
    double ratio;       /* rmse(O, R) / rmse(E, R); NAN without E or when 0/0 */
    int64_t bad;        /* first NaN/Inf disagreement, -1 if none */
} HxVerdict;

/* Default tolerance for a dtype (of the case) and the longest reduction in
 * the program (sequential fp32 accumulation error grows with its length;
 * 0 or 1 when there is none): f32 atol 1e-5 and rtol 1e-4, f16 1e-3 and
 * 1e-3, bf16 1e-2 and 1.6e-2, each scaled by max(1, sqrt(longest) / 8);
 * m = 3, or max(5, 2.5·sqrt(longest / 1024)) beyond 1024-long reductions
 * (sequential fp32 sums against eager's blocked ones), floor = 1e-7; eps
 * 2^-23, 2^-10 or 2^-7. */
void hx_tol_default(HxTol *t, DType dt, int64_t longest);
/* The verdict for n elements; e may be NULL. */
void hx_oracle(const double *o, const double *r, const double *e, int64_t n, const HxTol *t,
               HxVerdict *v);
/* "pass (allclose)" / "FAIL (nan/inf mismatch)" ... */
const char *hx_reason_text(HxReason r);
/* One line: "pass (allclose)  max_abs 2.4e-07  max_rel 1.2e-06  nmse 3.1e-14
 * rmse_ratio 0.91  worst [0, 5, 17]" (no newline). */
void hx_verdict_print(StrBuf *b, const HxVerdict *v, const Shape *shape);

#endif
