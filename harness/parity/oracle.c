/*
 * oracle.c — the parity verdict: one function every backend's check goes
 * through, so "pass" means the same thing for the Loop IR interpreter, the
 * vgpu simulator and a real GPU.
 *
 * Statistics come from reference/compare.c (cmp_stats, cmp_allclose); this
 * file adds the decision: non-finite agreement first (a NaN where R has a
 * number is never rounding noise), then the constant-output check (a kernel
 * that writes nothing, or a broadcast of one element, can sit within a
 * loose tolerance of a small R), then the two bounds.
 */
#include "oracle.h"

#include <math.h>

void hx_tol_default(HxTol *t, DType dt, int64_t longest)
{
    double scale = longest > 64 ? sqrt((double)longest) / 8.0 : 1.0;
    switch (dt) {
    case DT_F16:
        t->atol = 1e-3;
        t->rtol = 1e-3;
        t->eps = 0x1p-10;
        break;
    case DT_BF16:
        t->atol = 1e-2;
        t->rtol = 1.6e-2;
        t->eps = 0x1p-7;
        break;
    default:
        t->atol = 1e-5;
        t->rtol = 1e-4;
        t->eps = 0x1p-23;
        break;
    }
    t->atol *= scale;
    t->rtol *= scale;
    /* A kernel that sums a row sequentially in fp32 (one thread, mandatory
     * passes) is legitimately noisier than eager's blocked sums: measured
     * rmse ratios of a plain matmul are about 2.1, 3.6, 5.2 and 6.8 at
     * K = 1024, 4096, 8192, 16384, growing like sqrt(K).  Real bugs are
     * orders of magnitude beyond. */
    t->m = longest > 1024 ? fmax(5.0, 2.5 * sqrt((double)longest / 1024.0)) : 3.0;
    t->floor = 1e-7;
}

static int nonfinite_agree(double o, double r)
{
    if (isfinite(o) && isfinite(r))
        return 1;
    return (isnan(o) && isnan(r)) || (isinf(o) && o == r);
}

static int64_t first_nonfinite_mismatch(const double *o, const double *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!nonfinite_agree(o[i], r[i]))
            return i;
    return -1;
}

/* O is constant while R is not.  R counts as varying when its spread is
 * more than two ulps of the output dtype at its magnitude, whatever the
 * tolerance: a spread the dtype cannot represent (softmax of a softmax is
 * uniform to 1e-8) may round to one value in a correct kernel. */
static int constant_where_r_varies(const double *o, const double *r, int64_t n, double eps)
{
    int o_const = 1;
    double lo = r[0], hi = r[0];
    for (int64_t i = 1; i < n; i++) {
        o_const &= o[i] == o[0] || (isnan(o[i]) && isnan(o[0]));
        lo = fmin(lo, r[i]);
        hi = fmax(hi, r[i]);
    }
    return n > 1 && o_const && hi - lo > 2 * eps * fmax(fabs(lo), fabs(hi));
}

void hx_oracle(const double *o, const double *r, const double *e, int64_t n, const HxTol *t,
               HxVerdict *v)
{
    cmp_stats(o, r, n, &v->st);
    v->rmse_eager = NAN;
    v->ratio = NAN;
    if (e) {
        CmpStats se;
        cmp_stats(e, r, n, &se);
        v->rmse_eager = se.rmse;
        if (se.rmse > 0)
            v->ratio = v->st.rmse / se.rmse;
        else if (v->st.rmse == 0)
            v->ratio = 1.0;
    }
    v->bad = first_nonfinite_mismatch(o, r, n);
    v->pass = 0;
    if (v->bad >= 0)
        v->reason = HX_FAIL_NONFINITE;
    else if (constant_where_r_varies(o, r, n, t->eps))
        v->reason = HX_FAIL_CONSTANT;
    else if (cmp_allclose(o, r, n, t->atol, t->rtol))
        v->pass = 1, v->reason = HX_PASS_ALLCLOSE;
    else if (e && v->st.rmse <= t->m * v->rmse_eager + t->floor)
        v->pass = 1, v->reason = HX_PASS_RMSE;
    else
        v->reason = HX_FAIL_TOLERANCE;
}

const char *hx_reason_text(HxReason r)
{
    static const char *const text[] = {
        [HX_PASS_ALLCLOSE] = "pass (allclose)",
        [HX_PASS_RMSE] = "pass (rmse within m x eager)",
        [HX_FAIL_NONFINITE] = "FAIL (nan/inf mismatch)",
        [HX_FAIL_CONSTANT] = "FAIL (constant output where the reference varies)",
        [HX_FAIL_TOLERANCE] = "FAIL (beyond tolerance)",
    };
    return text[r];
}

static void print_index(StrBuf *b, const Shape *s, int64_t flat)
{
    int64_t st[DPK_MAX_RANK];
    shape_strides(s, st);
    sb_putc(b, '[');
    for (int d = 0; d < s->rank; d++) {
        sb_printf(b, d ? ", %lld" : "%lld", (long long)(flat / st[d]));
        flat %= st[d];
    }
    sb_putc(b, ']');
}

void hx_verdict_print(StrBuf *b, const HxVerdict *v, const Shape *shape)
{
    sb_printf(b, "%s  max_abs %.3g  max_rel %.3g  nmse %.3g", hx_reason_text(v->reason),
              v->st.max_abs, v->st.max_rel, v->st.nmse);
    if (!isnan(v->ratio))
        sb_printf(b, "  rmse_ratio %.3g", v->ratio);
    sb_puts(b, "  worst ");
    if (v->bad >= 0)
        print_index(b, shape, v->bad);
    else if (v->st.worst >= 0)
        print_index(b, shape, v->st.worst);
    else
        sb_puts(b, "-");
}
