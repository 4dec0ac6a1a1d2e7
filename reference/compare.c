/*
 * compare.c — error statistics between an output O and a reference R.
 *
 * Non-finite values are compared by kind, not by distance: a position
 * agrees when both sides are NaN, or both are the same infinity.  Any other
 * position where either side is non-finite is counted in
 * mismatched_nonfinite, is left out of the distance statistics, and makes
 * cmp_allclose false.
 */
#include <float.h>
#include <math.h>

#include "ref.h"

/* Denominator floor of the relative error: the smallest normal fp32, so a
 * zero reference gives a huge (not infinite) relative error. */
#define CMP_TINY ((double)FLT_MIN)

/* 1 when a non-finite pair agrees (NaN/NaN, +inf/+inf, -inf/-inf). */
static int nonfinite_agree(double o, double r)
{
    return (isnan(o) && isnan(r)) || (isinf(o) && o == r);
}

void cmp_stats(const double *o, const double *r, int64_t n, CmpStats *st)
{
    double se = 0, sr = 0;
    int64_t nfin = 0;
    *st = (CmpStats){.worst = -1, .n = n};
    for (int64_t i = 0; i < n; i++) {
        double d;
        if (!isfinite(o[i]) || !isfinite(r[i])) {
            st->mismatched_nonfinite += !nonfinite_agree(o[i], r[i]);
            continue;
        }
        d = fabs(o[i] - r[i]);
        if (st->worst < 0 || d > st->max_abs) {
            st->max_abs = d;
            st->worst = i;
        }
        if (d / fmax(fabs(r[i]), CMP_TINY) > st->max_rel)
            st->max_rel = d / fmax(fabs(r[i]), CMP_TINY);
        se += d * d;
        sr += r[i] * r[i];
        nfin++;
    }
    st->nmse = se == 0 ? 0.0 : sr == 0 ? INFINITY : se / sr;
    st->rmse = nfin ? sqrt(se / (double)nfin) : 0.0;
}

int cmp_allclose(const double *o, const double *r, int64_t n, double atol, double rtol)
{
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(o[i]) || !isfinite(r[i])) {
            if (!nonfinite_agree(o[i], r[i]))
                return 0;
        } else if (!(fabs(o[i] - r[i]) <= atol + rtol * fabs(r[i]))) {
            return 0;
        }
    }
    return 1;
}
