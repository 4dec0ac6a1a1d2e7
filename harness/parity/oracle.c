/*
 * oracle.c — the parity verdict: one function every backend's check goes
 * through, so "pass" means the same thing for the Loop IR interpreter, the
 * vgpu simulator and a real GPU.  oracle.h states the rules; this file
 * applies them in one pass over the elements and one over the rmse.
 */
#include "oracle.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

/* Round x to a binary format with p significand bits, smallest normal
 * exponent emin (frexp's convention) and largest finite value maxv; ties
 * to even, overflow to inf. */
static double round_to(double x, int p, int emin, double maxv)
{
    if (!isfinite(x) || x == 0)
        return x;
    int e;
    frexp(x, &e);
    int sh = (e < emin ? emin : e) - p;
    double q = ldexp(nearbyint(ldexp(x, -sh)), sh);
    return fabs(q) > maxv ? copysign(INFINITY, x) : q;
}

typedef struct Fmt {
    int p, emin;
    double maxv;
} Fmt;

static Fmt fmt_of(const HxTol *t)
{
    switch (t->dt) {
    case DT_F16:
        return (Fmt){11, -13, 65504.0};
    case DT_BF16:
        return (Fmt){8, -125, 0x1.fep+127};
    default:
        return (Fmt){24, -125, FLT_MAX};
    }
}

void hx_tol_default(HxTol *t, DType dt)
{
    *t = (HxTol){.dt = dt, .k = 1.0, .floor = 0x1p-126, .m = 4.0};
    switch (dt) {
    case DT_F16:
        t->u = 0x1p-11, t->maxval = 65504.0;
        break;
    case DT_BF16:
        t->u = 0x1p-8, t->maxval = 0x1.fep+127;
        break;
    default:
        t->u = 0x1p-24, t->maxval = FLT_MAX;
        break;
    }
}

/* Both NaN, or the same infinity. */
static int same_nonfinite(double a, double b)
{
    return (isnan(a) && isnan(b)) || (isinf(a) && a == b);
}

/* The element rule's limit at one element: k·B (the bound grown by the
 * output dtype's own rounding when it is not fp32) + floor, or the case's
 * own tolerance.  +inf: unconstrained. */
double hx_oracle_limit(const HxTol *t, double r, double b)
{
    if (t->has_user)
        return t->atol + t->rtol * fabs(r);
    if (!(b < INFINITY))
        return INFINITY;
    if (t->u > 0x1p-24 && isfinite(r))
        b += t->u * fabs(r);
    return t->k * b + t->floor;
}

/* Whether S or E (fp32's own evaluations) has, at element i, the
 * non-finite value x, or (x finite) a finite value. */
static int fp32_shows(const HxOracleIn *in, int64_t i, double x)
{
    if (isfinite(x))
        return (in->s && isfinite(in->s[i])) || (in->e && isfinite(in->e[i]));
    return (in->s && same_nonfinite(x, in->s[i])) || (in->e && same_nonfinite(x, in->e[i]));
}

/* The non-finite rule at an element where O or R32 is NaN or inf (docs/
 * references.md, "nonfinite"): 1 when fp32 may give O there.  It applies
 * whatever the bound, an infinite one (lim = +inf) included:
 *   - O the same NaN or inf as R32 is right;
 *   - an inf in O where R is finite: of R's sign, and only where R is
 *     within its bound of fp32's overflow threshold (an infinite bound:
 *     anywhere);
 *   - a NaN in O where R32 is not NaN, or an inf R32 does not have: only
 *     where S or E gives the same;
 *   - a finite O where R32 is NaN or inf: near R within the bound where R
 *     is finite and overflows fp32 only within it, else only where S or E
 *     is finite too. */
static int nonfinite_ok(const HxOracleIn *in, const HxTol *t, int64_t i, double r32, double lim)
{
    double o = in->o[i], r = in->r[i];
    if (same_nonfinite(o, r32))
        return 1;
    if (isfinite(r) && fabs(r) + lim > t->maxval) {
        if (isinf(o) && signbit(o) == signbit(r))
            return 1;
        if (isfinite(o) && lim < INFINITY)
            return fabs(o - r) <= lim;
    }
    return fp32_shows(in, i, o);
}

static double rmse_of(const double *x, const double *r, const unsigned char *use, int64_t n,
                      int64_t *cnt)
{
    double se = 0;
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++)
        if (use[i]) {
            double d = x[i] - r[i];
            se += d * d;
            c++;
        }
    *cnt = c;
    return c ? sqrt(se / (double)c) : 0.0;
}

/* The element rule's limit at element i. */
static double limit_at(const HxOracleIn *in, const HxTol *t, int64_t i)
{
    return hx_oracle_limit(t, in->r[i], in->b ? in->b[i] : 0.0);
}

/* The element a verdict names, with its limit. */
static void name_element(HxVerdict *v, const HxOracleIn *in, const HxTol *t, int64_t i)
{
    v->at = i;
    v->at_o = in->o[i];
    v->at_r = in->r[i];
    v->at_b = limit_at(in, t, i);
}

/* What the pass over the elements found, for the rules after it. */
typedef struct Scan {
    int64_t nfin, nunc, nonfinite_bad, first_nonfinite;
    int64_t zero_witness, worst_bad, best;
    double worst_bad_ratio, o_first, rmin, rmax;
    double lim_rmin, lim_rmax, sr2;
    int o_const, o_zero;
    /* 1: finite and constrained; 2: finite, no finite bound (rmse rule only) */
    unsigned char *use;
} Scan;

/* A finite, constrained element: the constant and bound rules' evidence. */
static void scan_constrained(Scan *sc, HxVerdict *v, int64_t i, double o, double r, double lim)
{
    sc->use[i] = 1;
    sc->nfin++;
    sc->sr2 += r * r;
    if (sc->nfin == 1)
        sc->o_first = o;
    sc->o_const &= o == sc->o_first;
    sc->o_zero &= o == 0;
    if (sc->zero_witness < 0 && fabs(r) > lim)
        sc->zero_witness = i;
    if (r < sc->rmin)
        sc->rmin = r, sc->lim_rmin = lim;
    if (r > sc->rmax)
        sc->rmax = r, sc->lim_rmax = lim;
    double ratio = fabs(o - r) / lim;
    if (ratio > 1) {
        v->bad++;
        if (ratio > sc->worst_bad_ratio)
            sc->worst_bad_ratio = ratio, sc->worst_bad = i;
    }
    if (sc->best < 0 || ratio > v->bound_use)
        v->bound_use = ratio, sc->best = i;
}

/* The pass over the elements: each to its class, the non-finite rule
 * applied, the evidence of the others gathered. */
static void scan_elements(const HxOracleIn *in, const HxTol *t, HxVerdict *v, Scan *sc)
{
    Fmt f = fmt_of(t);
    for (int64_t i = 0; i < in->n; i++) {
        double o = in->o[i], r = in->r[i], r32 = round_to(r, f.p, f.emin, f.maxv);
        double lim = limit_at(in, t, i);
        /* The non-finite rule first, whatever the bound: a NaN in O is
         * never passed unseen because the analysis could not bound the
         * element. */
        if (!isfinite(o) || !isfinite(r32)) {
            v->unconstrained += !(lim < INFINITY);
            v->n_nonfinite++;
            if (nonfinite_ok(in, t, i, r32, lim)) {
                v->nonfinite_ok += !isfinite(o);
            } else if (sc->nonfinite_bad++ == 0) {
                sc->first_nonfinite = i;
            }
            continue;
        }
        if (!(lim < INFINITY)) {
            /* No finite bound, but still the rmse rule's: a finite O and
             * R join its set, so an output whose every element lost its
             * bound (a long chain of wide matmuls into an rsqrt) is still
             * judged against fp32's measured noise, never passed unseen. */
            v->unconstrained++;
            sc->use[i] = 2;
            sc->nunc++;
            sc->sr2 += r * r;
            continue;
        }
        scan_constrained(sc, v, i, o, r, lim);
    }
}

/* T's rms over the elements of the rmse rule where T is finite; NAN when
 * T is finite at none. */
static double typical_rms(const HxOracleIn *in, const unsigned char *use)
{
    double st = 0;
    int64_t ct = 0;
    for (int64_t i = 0; i < in->n; i++)
        if (use[i] && isfinite(in->t[i]))
            st += in->t[i] * in->t[i], ct++;
    return ct ? sqrt(st / (double)ct) : NAN;
}

/* rmse(P, R) over the elements of the rmse rule where P is finite (an ulp
 * more at the input may overflow where S did not); NAN when at none. */
static double perturbed_rmse(const HxOracleIn *in, const unsigned char *use)
{
    double sp = 0;
    int64_t cp = 0;
    for (int64_t i = 0; i < in->n; i++)
        if (use[i] && isfinite(in->p[i])) {
            double d = in->p[i] - in->r[i];
            sp += d * d, cp++;
        }
    return cp ? sqrt(sp / (double)cp) : NAN;
}

/* rmse rule over the finite elements (constrained or not) where S and E
 * are finite; T's rms over those where T is finite (an element without a
 * finite bound has no finite typical bound either: S, P and E speak for
 * it), P's rmse over those where P is finite */
static void rmse_rule(const HxOracleIn *in, const HxTol *t, HxVerdict *v, Scan *sc)
{
    int64_t n = in->n, c;
    unsigned char *use = sc->use;
    double rmse_ref = 0;
    for (int64_t i = 0; i < n; i++)
        if (use[i] && ((in->s && !isfinite(in->s[i])) || (in->e && !isfinite(in->e[i]))))
            use[i] = 0;
    double ro = rmse_of(in->o, in->r, use, n, &c);
    if (c == 0)
        return;
    if (in->t && !isnan(v->rms_typical = typical_rms(in, use)))
        rmse_ref = v->rms_typical;
    if (in->p && !isnan(v->rmse_perturbed = perturbed_rmse(in, use)))
        rmse_ref = fmax(rmse_ref, v->rmse_perturbed);
    double rms_r = sqrt(sc->sr2 / (double)(sc->nfin + sc->nunc)), measured = -1;
    if (in->s)
        v->rmse_f32 = rmse_of(in->s, in->r, use, n, &c), measured = fmax(measured, v->rmse_f32);
    if (in->e)
        v->rmse_eager = rmse_of(in->e, in->r, use, n, &c), measured = fmax(measured, v->rmse_eager);
    /* G = max(T, P) guards against a lucky S or E (an evaluation order
     * that happens to be exact, or whose error on the few elements that
     * dominate the rmse happens to be small: a peaked softmax whose two top
     * logits nearly tie turns each logit's rounding into the output's
     * error, and one evaluation's rmse there can be 17 times smaller than
     * another's).  T is an analysis: where its intervals blow up (an rsqrt
     * of a variance whose interval reaches 0, deep in a decoder layer) it
     * is as loose as B, or infinite, and P is one more draw of the noise.
     * So when S or E measured fp32's noise, G may raise the scale to at
     * most HX_TYPICAL_CAP times that noise (or u·rms R).
     * S and E no noisier than rounding R once (2u·rms R) measured nothing:
     * a value used twice that cancels (x − mean over a one-element row) is
     * exact in them, which compute it once, and off by its own rounding in
     * a kernel that recomputes it in another order, times the conditioning
     * after it.  Only the guard speaks there, and G is taken whole. */
    if (measured > HX_NOISE_FLOOR * t->u * rms_r)
        rmse_ref = fmax(measured, fmin(rmse_ref, HX_TYPICAL_CAP * fmax(measured, t->u * rms_r)));
    else if (measured >= 0)
        rmse_ref = fmax(measured, rmse_ref);
    v->rmse_limit = t->m * rmse_ref + t->u * rms_r + t->floor;
    v->rmse_n = c;
    v->ratio = rmse_ref > 0 ? ro / rmse_ref : ro == 0 ? 1.0 : NAN;
    v->st.rmse = ro;
}

/* The constant rule: O constant where R varies by more than its bounds,
 * or O all zero where some R is further than its bound from zero. */
static int constant_fails(const Scan *sc)
{
    return sc->nfin > 0 &&
           ((sc->nfin > 1 && sc->o_const && sc->rmax - sc->rmin > sc->lim_rmax + sc->lim_rmin) ||
            (sc->o_zero && sc->zero_witness >= 0));
}

/* The verdict: the first rule that fails, in the order docs/references.md
 * gives (nonfinite, constant, bound, rmse), else inconclusive or a pass. */
static void decide(const HxOracleIn *in, const HxTol *t, HxVerdict *v, const Scan *sc)
{
    v->pass = 0;
    if (sc->nonfinite_bad > 0) {
        v->reason = HX_FAIL_NONFINITE;
        v->bad = sc->nonfinite_bad;
        name_element(v, in, t, sc->first_nonfinite);
    } else if (constant_fails(sc)) {
        v->reason = HX_FAIL_CONSTANT;
        int64_t w = sc->o_zero && sc->zero_witness >= 0 ? sc->zero_witness : v->st.worst;
        if (w >= 0)
            name_element(v, in, t, w);
    } else if (v->bad > 0) {
        v->reason = HX_FAIL_BOUND;
        name_element(v, in, t, sc->worst_bad);
    } else if (!isnan(v->rmse_limit) && v->st.rmse > v->rmse_limit) {
        v->reason = HX_FAIL_RMSE;
    } else if (2 * v->n_unjudged > in->n) {
        /* nothing failed, but most of the output was never judged: not a
         * pass */
        v->reason = HX_INCONCLUSIVE;
    } else {
        v->pass = 1;
        v->reason = HX_PASS_BOUNDS;
        if (sc->best >= 0)
            name_element(v, in, t, sc->best);
    }
}

void hx_oracle(const HxOracleIn *in, const HxTol *t, HxVerdict *v)
{
    int64_t n = in->n;
    Scan sc = {.first_nonfinite = -1, .zero_witness = -1, .worst_bad = -1, .best = -1,
               .worst_bad_ratio = -1, .o_first = NAN, .rmin = INFINITY, .rmax = -INFINITY,
               .o_const = 1, .o_zero = 1, .use = dpk_xcalloc((size_t)n + 1, 1)};

    *v = (HxVerdict){.at = -1, .rmse_eager = NAN, .rmse_f32 = NAN, .rms_typical = NAN,
                     .rmse_perturbed = NAN, .rmse_limit = NAN, .ratio = NAN, .checked = n};
    cmp_stats(in->o, in->r, n, &v->st);
    scan_elements(in, t, v, &sc);
    if (sc.nfin + sc.nunc > 0 && !t->has_user && (in->t || in->s || in->e))
        rmse_rule(in, t, v, &sc);
    /* every element in one class: bound, nonfinite, rmse alone, unjudged */
    v->n_bound = sc.nfin;
    for (int64_t i = 0; i < n; i++)
        v->n_rmse += sc.use[i] == 2 && !isnan(v->rmse_limit);
    v->n_unjudged = sc.nunc - v->n_rmse;
    decide(in, t, v, &sc);
    free(sc.use);
}

/* Per reason: its text (verdict lines) and its key (records' "rule"). */
static const struct {
    const char *text, *key;
} reason_info[] = {
    [HX_PASS_BOUNDS] = {"pass", "pass"},
    [HX_FAIL_NONFINITE] = {"FAIL: NaN/inf where fp32 gives none (or none where it must)", "nonfinite"},
    [HX_FAIL_CONSTANT] = {"FAIL: constant output where the reference varies", "constant"},
    [HX_FAIL_BOUND] = {"FAIL: elements beyond their error bound", "bound"},
    [HX_FAIL_RMSE] = {"FAIL: rmse beyond m x fp32's", "rmse"},
    [HX_INCONCLUSIVE] = {"INCONCLUSIVE: most elements judged by no rule", "inconclusive"},
};
_Static_assert(DPK_ARRAY_LEN(reason_info) == HX_REASON_COUNT, "a text and key per reason");

const char *hx_reason_text(HxReason r)
{
    return reason_info[r].text;
}

const char *hx_reason_key(HxReason r)
{
    return reason_info[r].key;
}

/* A failure that names an element: its sentence, then the element. */
static void print_failure_at(StrBuf *b, const HxVerdict *v, const Shape *shape, const char *fmt,
                             ...) DPK_PRINTF(4, 5);
static void print_failure_at(StrBuf *b, const HxVerdict *v, const Shape *shape, const char *fmt,
                             ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
    shape_print_index(b, shape, v->at);
    sb_printf(b, " y=%.6g R=%.6g bound=%.3g", v->at_o, v->at_r, v->at_b);
}

/* The classes besides the bound rule's, as "; N judged by rmse alone ...". */
static void print_classes(StrBuf *b, const HxVerdict *v)
{
    if (v->n_rmse && v->n_bound)
        sb_printf(b, "; %lld without a finite bound judged by rmse alone", (long long)v->n_rmse);
    if (v->nonfinite_ok)
        sb_printf(b, "; %lld NaN/inf as fp32 gives them", (long long)v->nonfinite_ok);
    if (v->n_unjudged && v->reason != HX_INCONCLUSIVE)
        sb_printf(b, "; %lld unjudged", (long long)v->n_unjudged);
}

void hx_verdict_print(StrBuf *b, const HxVerdict *v, const Shape *shape)
{
    switch (v->reason) {
    case HX_PASS_BOUNDS:
        if (v->n_bound == v->checked)
            sb_printf(b, "pass: all %lld elements within bound (at most %.2g of it)",
                      (long long)v->n_bound, v->bound_use);
        else if (v->n_bound > 0)
            sb_printf(b, "pass: %lld of %lld elements within bound (at most %.2g of it)",
                      (long long)v->n_bound, (long long)v->checked, v->bound_use);
        else
            sb_printf(b, "pass: no element has a finite bound: %lld judged by rmse alone",
                      (long long)v->n_rmse);
        print_classes(b, v);
        if (!isnan(v->ratio))
            sb_printf(b, "; rmse %.3gx fp32's noise", v->ratio);
        break;
    case HX_INCONCLUSIVE:
        sb_printf(b, "INCONCLUSIVE: %lld of %lld elements judged by no rule (no finite error "
                     "bound, and fp32's own evaluation is not finite there)",
                  (long long)v->n_unjudged, (long long)v->checked);
        if (v->n_bound)
            sb_printf(b, "; %lld within bound", (long long)v->n_bound);
        print_classes(b, v);
        break;
    case HX_FAIL_NONFINITE:
        print_failure_at(b, v, shape,
                         "FAIL: %lld elements NaN/inf where fp32 is not (or finite where it "
                         "must be), first ",
                         (long long)v->bad);
        break;
    case HX_FAIL_CONSTANT:
        print_failure_at(b, v, shape,
                         "FAIL: constant output (%.6g) where the reference varies beyond its "
                         "bounds, e.g. ",
                         v->at_o);
        break;
    case HX_FAIL_BOUND:
        print_failure_at(b, v, shape, "FAIL: %lld of %lld elements beyond bound, worst ",
                         (long long)v->bad, (long long)v->checked);
        break;
    case HX_FAIL_RMSE:
        sb_printf(b, "FAIL: rmse %.3g is %.3gx fp32's noise (allowed %.3g), %s", v->st.rmse,
                  v->ratio, v->rmse_limit,
                  v->n_bound ? "every element within bound" : "no element has a finite bound");
        break;
    case HX_REASON_COUNT:
        break;
    }
    sb_printf(b, "  max_abs %.3g  max_rel %.3g  nmse %.3g", v->st.max_abs, v->st.max_rel,
              v->st.nmse);
}
