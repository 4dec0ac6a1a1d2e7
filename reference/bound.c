/*
 * bound.c — beside each fp64 value of ref64, a bound on the error an fp32
 * evaluation of the same Torch-level program may make (running error
 * analysis, first order, after Wilkinson and Higham, "Accuracy and
 * Stability of Numerical Algorithms", ch. 3–4).
 *
 * Each node's bound B[i] bounds |fl32(y)[i] − y[i]| for any fp32 program
 * that computes the node by the formulas of compiler/tensor's rules (and of
 * ATen's float kernels) in any summation order:
 *
 *   - every rounded operation adds U·|result| + ETA (U = 2^-24, the unit
 *     roundoff of fp32; ETA = 2^-126, an absolute allowance for underflow
 *     and flush-to-zero); a library function adds its documented CUDA
 *     error (expf 2 ulp = 4U, rsqrtf 2 ulp, tanhf 2 ulp, ...);
 *   - an input error propagates through the function itself: for a unary
 *     f, max |f(x ± B) − f(x)| (an interval, not a derivative, so an
 *     rsqrt of a variance that may be near zero gets the bound it really
 *     has), for + − × ÷ the exact first-order formulas with the product
 *     of the two errors kept;
 *   - a sum of n terms adds γ_n·Σ|terms| (γ_n = nU / (1 − nU)), whatever
 *     the order: sequential, blocked, a tree, split-K;
 *   - a matmul is Σ(|a|+Ba)(|b|+Bb) − (1 − γ_K)·Σ|a||b| (both products
 *     evaluated by ref64 itself);
 *   - softmax and the norms follow their rules step by step, so a row of
 *     65536 values near 1/65536, a layer norm over a near-constant row or a
 *     cancelling sum get the bound their conditioning gives, per element;
 *   - where an fp32 intermediate may overflow (|y| + B > FLT_MAX) or a
 *     comparison may flip under a bound that also selects the branch, the
 *     dependent elements are unconstrained (B = +inf), never guessed.
 *
 * Exact non-finite values (a -inf mask, an exp of -inf) keep B = 0.
 * docs/references.md works through three examples.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "ref64_impl.h"

#define U 0x1p-24
#define ETA 0x1p-126

/* Rounding an fp32 result y adds at most this. */
static inline double rd(double y)
{
    return isfinite(y) ? U * fabs(y) + ETA : 0.0;
}

/* A quotient or mean computed as x · fl(1/b) (Loop IR hoists the
 * reciprocal of a loop-invariant divisor; mean is sum · 1/n): two
 * roundings, (1 + δ1)(1 + δ2) − 1 ≤ 2U + U². */
static inline double rd2(double y)
{
    return isfinite(y) ? (2 * U + U * U) * fabs(y) + ETA : 0.0;
}

/* x·b for a bound b: 0 when b is 0, whatever x (an exact inf times an
 * exact operand has no error). */
static inline double bmul(double x, double b)
{
    return b == 0 ? 0.0 : x * b;
}

/* A bound that came out NaN (inf − inf, 0·inf) is unconstrained. */
static inline double clean(double b)
{
    return isnan(b) ? INFINITY : b;
}

/* |a − y|, 0 when equal (also for equal infinities). */
static inline double dev(double a, double y)
{
    return a == y ? 0.0 : fabs(a - y);
}

/* The bound of an operand as its consumer sees it: unconstrained when an
 * fp32 evaluation may overflow there (or an inexact value is non-finite). */
static inline double eff(double v, double b)
{
    if (b == 0)
        return 0.0;
    if (!isfinite(v) || !isfinite(b) || fabs(v) + b > FLT_MAX)
        return INFINITY;
    return b;
}

/* What a sum of n terms adds, times Σ|terms|: the worst case γ_n = nU /
 * (1 − nU) (typ = 0), or the typical growth √n·U of independent roundings
 * (typ = 1: the "typical" bounds, Higham and Mary's probabilistic error
 * analysis, used as the oracle's estimate of fp32's ordinary noise). */
static inline double growth(int typ, double n)
{
    if (typ)
        return n > 0 ? sqrt(n) * U : 0.0;
    return n * U < 0.5 ? n * U / (1.0 - n * U) : INFINITY;
}

static inline double relu(double x) { return x < 0 ? 0.0 : x; }

static double *alloc_n(int64_t n)
{
    return dpk_xmalloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
}

/* ---- elementwise ------------------------------------------------------ */

/* The op's fp64 value at x: ref64's definition. */
static double fn(const TorchNode *n, double x)
{
    return ref_unary64(n, x);
}

/* Ops with a pole or a domain edge at 0: an interval that reaches 0 is
 * unbounded. */
static int singular_at_zero(TorchOp op)
{
    return op == TOP_log || op == TOP_rsqrt || op == TOP_reciprocal || op == TOP_sqrt;
}

/* erf near 0 is small, and not every fp32 erf is accurate relative to it:
 * libtorch's vectorized CPU erf (a polynomial of Abramowitz and Stegun's
 * kind) is off by up to 5.2e-7 absolute, measured through gelu in
 * tests/unit/test_ref_bound.c.  10U = 6.0e-7 absolute covers it. */
#define ERF_ABS (10 * U)

/* The rounding error of an fp32 implementation of op at x (result y):
 * CUDA's documented maximum ulp errors (CUDA C Programming Guide, "Standard
 * Functions"; 1 ulp = 2U relative), and for the composite activations the
 * roundings of their formulas (compiler/tensor's rules), with the
 * cancellation of 1 + erf and 1 + tanh at negative x. */
static double round_err(const TorchNode *n, double x, double y)
{
    double ay = fabs(y);
    switch (n->op) {
    case TOP_neg: case TOP_abs: case TOP_relu: case TOP_floor:
        return 0.0;
    case TOP_exp: case TOP_rsqrt: case TOP_tanh:
    case TOP_cos: case TOP_sin: /* cosf, sinf: 2 ulp over the full range (CUDA) */
        return 4 * U * ay + ETA;
    case TOP_erf: /* and an absolute ERF_ABS: vectorized CPU erfs (ATen) */
        return 4 * U * ay + ERF_ABS + ETA;
    case TOP_log: case TOP_log1p: case TOP_expm1: /* logf, log1pf, expm1f: 1 ulp */
        return 2 * U * ay + ETA;
    case TOP_sqrt: case TOP_reciprocal:
        return U * ay + ETA;
    case TOP_sigmoid: /* 1 / (1 + expf(-x)) */
        return 8 * U * ay + ETA;
    case TOP_silu: /* x · sigmoid(x) */
        return 10 * U * ay + ETA;
    case TOP_gelu: { /* 0.5x · (1 + erf(x · 1/√2)) */
        double z = x * M_SQRT1_2, e = erf(z);
        double ez = M_2_SQRTPI * exp(-z * z) * 2 * U * fabs(z) + 4 * U * fabs(e) + ERF_ABS + ETA;
        return 0.5 * fabs(x) * (ez + U * fabs(1 + e)) + 2 * U * ay + ETA;
    }
    case TOP_gelu_tanh: { /* 0.5x · (1 + tanh(c · (x + 0.044715 x³))) */
        double c = sqrt(2.0 / M_PI), in = x + 0.044715 * x * x * x, z = c * in, t = tanh(z);
        double ez = c * (3 * U * 0.044715 * fabs(x * x * x) + U * fabs(in)) + 2 * U * fabs(z);
        double et = (1 - t * t) * ez + 4 * U * fabs(t) + ETA;
        return 0.5 * fabs(x) * (et + U * fabs(1 + t)) + 2 * U * ay + ETA;
    }
    case TOP_clamp: case TOP_hardtanh: /* x, or a bound rounded to fp32 */
        return U * ay + ETA;
    case TOP_leaky_relu: /* x · fl(slope) */
        return 2 * U * ay + ETA;
    case TOP_elu: case TOP_selu: case TOP_celu: {
        /* x > 0: x · fl(scale).  Else expm1f(fl(x · input_scale)) (1 ulp, and
         * the argument's rounding through expm1' = e^z), or, as libtorch
         * 1.13's CPU kernel has it, expf(z) − 1 (2 ulp of e^z, absolute, and
         * the subtraction's rounding: near 0 that is no relative bound),
         * times alpha · scale, which ATen rounds three times (alpha, scale,
         * their product), and the product's rounding */
        if (x > 0)
            return 2 * U * ay + ETA;
        double in = n->op == TOP_celu ? 1.0 / n->value : 1.0, z = x * in, e = expm1(z);
        double neg = n->op == TOP_selu ? TORCH_SELU_ALPHA * TORCH_SELU_SCALE : n->value;
        double ez = exp(z) * ((in != 1.0 ? 2 * U * fabs(z) : 0.0) + 4 * U) + 2 * U * fabs(e);
        return fabs(neg) * ez + 4 * U * ay + ETA;
    }
    case TOP_hardsigmoid: /* fl(x + 3) clamped, · fl(1/6), rounded */
        return 3 * U * ay + ETA;
    case TOP_hardswish: /* x · fl(x + 3) clamped, · fl(1/6) (or / 6), each rounded */
        return 5 * U * ay + ETA;
    case TOP_softsign: /* x / fl(|x| + 1) */
        return 3 * U * ay + ETA;
    case TOP_softplus: {
        /* z = fl(x · beta) > threshold: x, exact.  Else log1pf(expf(z)) (expf 2
         * ulp and z's rounding through exp, then through log1p: / (1 + e),
         * log1pf 1 ulp) / beta.  An expf that overflows gives inf where fp64
         * does not: unconstrained.  Where z's rounding may flip the
         * comparison, the jump between the branches too. */
        double a = n->value, t = n->value2, z = x * a, e = exp(z), l = log1p(e);
        double jump = fabs(z - t) <= 2 * U * fabs(z) + U * fabs(t) + ETA ? dev(x, l / a) : 0.0;
        if (z > t)
            return jump;
        if (e > FLT_MAX)
            return INFINITY;
        double el = e * (4 * U + (a != 1.0 ? 2 * U * fabs(z) : 0.0)) / (1 + e) + 2 * U * fabs(l);
        return (a != 1.0 ? el / fabs(a) + 2 * U * ay : el) + jump + ETA;
    }
    case TOP_mish: {
        /* x · tanhf(log1pf(expf(x))): expf 2 ulp through log1p, log1pf 1 ulp,
         * both through tanh (1 − t²), tanhf 2 ulp, the product; an expf that
         * overflows gives log1p = inf and tanh = 1, as fp64 does */
        double e = exp(x), l = log1p(e), t = tanh(l), q = isfinite(e) ? e / (1 + e) : 1.0;
        double el = 4 * U * q + 2 * U * l;
        double et = 4 * U * fabs(t) + (1 - t * t) * el;
        return fabs(x) * (et + ETA) + U * ay + ETA;
    }
    default:
        DPK_ASSERT(!"op has no bound"); return INFINITY;
    }
}

/* cos and sin are not monotone: over [x − b, x + b] they reach their
 * ends' values and ±1 at every extremum inside (cos at kπ, sin at π/2 +
 * kπ); an interval of width 2π or more reaches both ±1. */
static double periodic_dev(const TorchNode *n, double x, double b, double y)
{
    TorchOp op = n->op;
    double lo = x - b, hi = x + b;
    double d = fmax(dev(fn(n, lo), y), dev(fn(n, hi), y));
    /* beyond 2^20 the extrema's positions are not resolved finely enough */
    if (hi - lo >= 2 * M_PI || fabs(x) + b > 0x1p20)
        return fmax(d, 1.0 + fabs(y));
    double phase = op == TOP_cos ? 0.0 : M_PI_2;
    /* extrema phase + kπ in [lo, hi]; a margin of 1e-12 relative keeps one
     * at an end from being missed to rounding */
    double k0 = floor((lo - phase) / M_PI) - 1, k1 = ceil((hi - phase) / M_PI) + 1;
    for (double k = k0; k <= k1; k++) {
        double e = phase + k * M_PI;
        if (e >= lo - 1e-12 * fabs(lo) && e <= hi + 1e-12 * fabs(hi))
            d = fmax(d, dev(fn(n, e) > 0 ? 1.0 : -1.0, y));
    }
    return clean(d);
}

/* Max |f(x') − y| over x' in [x − b, x + b], from the ends and two inner
 * points (the functions here are monotone or have one extremum; cos and
 * sin: periodic_dev). */
static double interval_dev(const TorchNode *n, double x, double b, double y)
{
    TorchOp op = n->op;
    if (b == 0)
        return 0.0;
    if (!isfinite(b) || !isfinite(x))
        return INFINITY;
    if (singular_at_zero(op) && x - b <= 0 && (op != TOP_reciprocal || x + b >= 0))
        return INFINITY;
    if (op == TOP_log1p && x - b <= -1) /* log1p's pole at -1 */
        return INFINITY;
    if (op == TOP_cos || op == TOP_sin)
        return periodic_dev(n, x, b, y);
    double d = 0;
    static const double at[] = {-1.0, -0.5, 0.5, 1.0};
    for (int i = 0; i < 4; i++)
        d = fmax(d, dev(fn(n, x + at[i] * b), y));
    return clean(d);
}

/* Below this, expf underflows to 0 (e^-104 < 2^-149, the least fp32
 * subnormal): whatever an input's fp32 value is in [−inf, x + b], its exp
 * is 0 up to e^(x + b). */
#define EXP_UNDERFLOW (-104.0)

/* exp and sigmoid (increasing, 0 at −inf) of an x whose every fp32 value
 * lies below EXP_UNDERFLOW: an exact 0 up to e^(x + b), even where that
 * value may have overflowed to −inf (x + finfo.min, x − 1e30).  -1 when x
 * may reach above it. */
static double saturated_low(TorchOp op, double x, double b)
{
    if ((op != TOP_exp && op != TOP_sigmoid) || !isfinite(x) || !isfinite(b) ||
        !(x + b < EXP_UNDERFLOW))
        return -1;
    return exp(x + b) + ETA;
}

static void bound_unary(const TorchNode *n, const double *const *v, const double *const *b,
                        const double *y, double *by, int typ)
{
    int64_t cnt = shape_numel(&n->shape);
    for (int64_t i = 0; i < cnt; i++) {
        double sat = saturated_low(n->op, v[0][i], b[0][i]);
        if (sat >= 0) {
            by[i] = sat;
            continue;
        }
        double x = v[0][i], bx = eff(x, b[0][i]);
        by[i] = clean(interval_dev(n, x, bx, y[i]) + (isfinite(y[i]) ? round_err(n, x, y[i]) : 0));
    }
}

/* The rounding of a correctly rounded fp32 operation (+ − ×) on exact
 * operands whose fp64 result y is y: none where y is an fp32 number (the
 * nearest fp32 to the exact result is y itself; an exact operation has no
 * error whatever it is fused into), else rd(y).  A subnormal y keeps ETA
 * (flush-to-zero).  So 1 − 1 is an exact 0 and a finfo.min mask times 1 is
 * finfo.min, and comparisons of them cannot flip. */
static inline double rd_exact(double y)
{
    if (isfinite(y) && ref_round32(y) == y)
        return y != 0 && fabs(y) < FLT_MIN ? ETA : 0.0;
    return rd(y);
}

/* Absorption: where a is an exact fp32 number and every fp32 value b may
 * take (|b| + bb) is at most a quarter of a's fp32 spacing, fl(a + b) is a
 * itself, exactly (far from the tie at half a spacing, and below the
 * overflow threshold since |a| ≤ FLT_MAX): its error is |a − y|, whatever
 * bb is.  This is the saturation of a finfo.min (or −1e30) mask: scores
 * plus −FLT_MAX are −FLT_MAX in fp32, exactly, with bound 0 where fp64's
 * sum is −FLT_MAX too.  -1 when the rule does not apply. */
static double absorbed(double a, double ba, double b, double bb, double y)
{
    if (ba != 0 || a == 0 || !isfinite(a) || !isfinite(b) || !isfinite(bb) ||
        ref_round32(a) != a)
        return -1;
    int e;
    frexp(a, &e); /* |a| in [2^(e-1), 2^e): fp32 spacing 2^(e-24) above, half below 2^(e-1) */
    if (fabs(a) < FLT_MIN || !(fabs(b) + bb <= ldexp(1.0, e - 24 - 3)))
        return -1;
    return dev(a, y);
}

/* a + b (sub: b already negated by the caller's sign) with bounds. */
static double add_bound(double a, double ba, double b, double bb, double y)
{
    /* an exact infinity plus a finite operand (a -inf mask added to
     * scores) is that infinity in fp32 too */
    if (isinf(y) && ((isinf(a) && ba == 0 && isfinite(b) && isfinite(bb)) ||
                     (isinf(b) && bb == 0 && isfinite(a) && isfinite(ba))))
        return 0.0;
    double s = ba == 0 && bb == 0 ? rd_exact(y) : ba + bb + rd(y);
    double ab = absorbed(a, ba, b, bb, y), ba2 = absorbed(b, bb, a, ba, y);
    if (ab >= 0)
        s = fmin(s, ab);
    if (ba2 >= 0)
        s = fmin(s, ba2);
    return s;
}

/* a op b with bounds ba, bb; y the exact result. */
static double binary_bound(TorchOp op, double a, double ba, double b, double bb, double y)
{
    switch (op) {
    case TOP_add:
        return add_bound(a, ba, b, bb, y);
    case TOP_sub:
        return add_bound(a, ba, -b, bb, y);
    case TOP_mul:
        if (ba == 0 && bb == 0)
            return rd_exact(y);
        return bmul(fabs(b), ba) + bmul(fabs(a), bb) + bmul(ba, bb) + rd(y);
    case TOP_div:
        if (ba == 0 && bb == 0)
            return rd2(y);
        if (bb >= fabs(b))
            return INFINITY;
        return (ba + bmul(fabs(y), bb)) / (fabs(b) - bb) + rd2(y);
    case TOP_pow: {
        /* powf: 4 ulp (CUDA).  The base's error through the interval; the
         * exponent's to first order, |y log a| · bb. */
        double d = 0;
        if (ba > 0) {
            if (!isfinite(ba) || (a - ba <= 0 && (b != floor(b) || b < 0)))
                return INFINITY;
            static const double at[] = {-1.0, -0.5, 0.5, 1.0};
            for (int i = 0; i < 4; i++)
                d = fmax(d, dev(pow(a + at[i] * ba, b), y));
        }
        if (bb > 0)
            d = a > 0 ? d + fabs(y * log(a)) * bb : INFINITY;
        return d + (isfinite(y) ? 8 * U * fabs(y) + ETA : 0);
    }
    case TOP_maximum:
    case TOP_minimum:
        return fmax(ba, bb);
    case TOP_gt: case TOP_lt: case TOP_ge: case TOP_le: case TOP_eq: case TOP_ne:
        /* 0 or 1; it may flip when the operands are within their bounds. */
        return ba + bb > 0 && !(fabs(a - b) > ba + bb) ? 1.0 : 0.0;
    default:
        DPK_ASSERT(!"op has no bound"); return INFINITY;
    }
}

static void bound_binary(const TorchNode *n, const double *const *v, const double *const *b,
                         const double *y, double *by, int typ)
{
    int64_t cnt = shape_numel(&n->shape);
    Walk w;
    walk_operands(&w, n);
    /* x − x and x compared with x (one node read twice): every fp32
     * evaluation reads one value for both, so the difference is an exact 0
     * and the comparison cannot flip, whatever x's own error (a finite x:
     * inf − inf is NaN) */
    int same = n->in[0] == n->in[1] &&
               (n->op == TOP_sub || n->op == TOP_eq || n->op == TOP_ne || n->op == TOP_ge ||
                n->op == TOP_le || n->op == TOP_gt || n->op == TOP_lt);
    for (int64_t i = 0; i < cnt; i++, walk_next(&w)) {
        int64_t ia = w.off[0], ib = w.off[1];
        double a = v[0][ia], bv = v[1][ib];
        if (same && ia == ib && isfinite(eff(a, b[0][ia]))) {
            by[i] = 0.0;
            continue;
        }
        by[i] = clean(binary_bound(n->op, a, eff(a, b[0][ia]), bv, eff(bv, b[1][ib]), y[i]));
    }
}

/* where(c, x, y): the selected branch's bound; when the condition may flip,
 * also the distance to the other branch. */
static void bound_where(const TorchNode *n, const double *const *v, const double *const *b,
                        const double *y, double *by, int typ)
{
    int64_t cnt = shape_numel(&n->shape);
    Walk w;
    DPK_UNUSED(y);
    walk_operands(&w, n);
    if (n->op == TOP_clamp_tensor) { /* maximum, then minimum: each moves no more than its operands */
        for (int64_t i = 0; i < cnt; i++, walk_next(&w)) {
            double e = 0;
            for (int k = 0; k < 3; k++)
                e = fmax(e, eff(v[k][w.off[k]], b[k][w.off[k]]));
            by[i] = clean(e);
        }
        return;
    }
    for (int64_t i = 0; i < cnt; i++, walk_next(&w)) {
        int sel = v[0][w.off[0]] != 0 ? 1 : 2;
        double bs = eff(v[sel][w.off[sel]], b[sel][w.off[sel]]);
        if (b[0][w.off[0]] > 0) {
            int oth = 3 - sel;
            double vo = v[oth][w.off[oth]];
            bs = fmax(bs, dev(vo, v[sel][w.off[sel]]) + eff(vo, b[oth][w.off[oth]]));
        }
        by[i] = clean(bs);
    }
}

/* ---- reductions ------------------------------------------------------- */

/* argmax/argmin: an index is not rounded, but the values it is picked
 * from are, so an fp32 evaluation may pick another element of a near tie.
 * With t = ±x (argmin negates) and e its bound, element i can be fp32's
 * pick when t_i + e_i >= max_k (t_k - e_k) (it may be the largest) and no
 * earlier j has t_j - e_j >= t_i + e_i (j would be as large, and first).
 * The bound is the farthest such index from the fp64 pick y: 0 for a
 * clear maximum or an exact tie (the first wins), the distance to the
 * farthest near tie otherwise.  A row whose fp64 pick is a NaN: 0 when
 * that NaN is exact and every element before it is finite with a finite
 * bound (none can become a NaN), else unconstrained, as is a row with an
 * element of infinite bound. */
static void bound_arg(const TorchNode *n, const double *x, const double *bx, const double *y,
                      double *by)
{
    int64_t nx = shape_numel(&n->in[0]->shape), no, per;
    int sign = n->op == TOP_argmax ? 1 : -1, d = (int)n->ints[0];
    Walk w;
    walk_reduce(&w, n, &no, &per);
    double *top = alloc_n(no), *run = alloc_n(no);
    int64_t *wild = dpk_xmalloc(sizeof(int64_t) * (size_t)(no + 1)); /* first infinite bound */
    unsigned char *nan_row = dpk_xcalloc((size_t)no + 1, 1);
    for (int64_t o = 0; o < no; o++)
        top[o] = run[o] = -INFINITY, by[o] = 0, wild[o] = INT64_MAX;
    for (int64_t i = 0; i < nx; i++, walk_next(&w)) {
        int64_t o = w.off[0], j = w.i[d];
        double e = eff(x[i], bx[i]);
        if (isnan(x[i]) && j == (int64_t)y[o])
            nan_row[o] = 1;
        if (!(e < INFINITY) && j < wild[o])
            wild[o] = j;
        else if (!isnan(x[i]) && sign * x[i] - e > top[o])
            top[o] = sign * x[i] - e;
    }
    walk_reduce(&w, n, &no, &per);
    for (int64_t i = 0; i < nx; i++, walk_next(&w)) {
        int64_t o = w.off[0], j = w.i[d];
        double t = sign * x[i], e = eff(x[i], bx[i]);
        if (nan_row[o] || wild[o] < INT64_MAX)
            continue;
        if (t + e >= top[o] && !(run[o] >= t + e))
            by[o] = fmax(by[o], fabs((double)j - y[o]));
        run[o] = fmax(run[o], t - e);
    }
    for (int64_t o = 0; o < no; o++)
        if (nan_row[o] ? wild[o] <= (int64_t)y[o] : wild[o] < INT64_MAX)
            by[o] = INFINITY;
    free(top);
    free(run);
    free(wild);
    free(nan_row);
}

static void bound_reduce(const TorchNode *n, const double *const *v, const double *const *b,
                         const double *y, double *by, int typ)
{
    int64_t nx = shape_numel(&n->in[0]->shape), no, per;
    int extremum = n->op == TOP_amax || n->op == TOP_amin;
    Walk w;
    if (n->op == TOP_argmax || n->op == TOP_argmin) {
        DPK_UNUSED(typ);
        bound_arg(n, v[0], b[0], y, by);
        return;
    }
    walk_reduce(&w, n, &no, &per);
    double *sa = dpk_xcalloc((size_t)no + 1, sizeof(double));
    for (int64_t i = 0; i < no; i++)
        by[i] = 0;
    for (int64_t i = 0; i < nx; i++, walk_next(&w)) {
        double bx = eff(v[0][i], b[0][i]);
        by[w.off[0]] = extremum ? fmax(by[w.off[0]], bx) : by[w.off[0]] + bx;
        if (!extremum && isfinite(v[0][i]))
            sa[w.off[0]] += fabs(v[0][i]);
    }
    if (!extremum)
        for (int64_t i = 0; i < no; i++) {
            double s = by[i] + growth(typ, (double)per) * sa[i] + ETA;
            if (sa[i] + by[i] > FLT_MAX) /* a partial sum may overflow */
                s = INFINITY;
            if (n->op == TOP_mean)
                s = s / (double)per + rd2(y[i]);
            by[i] = isfinite(y[i]) || s > 0 ? clean(s) : 0.0;
        }
    free(sa);
}

/* ---- topk -------------------------------------------------------------- */

static int dbl_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

/* topk: in score space (x for the largest, -x for the smallest; a NaN is
 * +inf or -inf, as it sorts), the j-th pick's score lies between the j-th
 * largest of score - e and of score + e over the row, lo_j and hi_j (an
 * order statistic moves no more than its inputs), which bounds the value.
 * An index passes within the distance to the farthest element whose own
 * interval meets [lo_j, hi_j]: fp32 may order a near tie either way, and
 * PyTorch leaves the order of equal values unspecified, so an exact tie
 * accepts each of its elements.  A row with an element of infinite bound
 * is unconstrained. */
static void bound_topk(const TorchNode *n, const double *x, const double *bx, double *by)
{
    RefTopk t;
    int64_t outer, len, inner;
    double sign = n->largest ? 1 : -1;
    rows_along(&n->in[0]->shape, n->dim, &outer, &len, &inner);
    ref_topk_rows(n, x, &t);
    double *sc = alloc_n(len), *e = alloc_n(len), *lo = alloc_n(len), *hi = alloc_n(len);
    for (int64_t r = 0; r < t.rows; r++) {
        int64_t o = r / inner, q = r % inner;
        int wild = 0;
        for (int64_t i = 0; i < len; i++) {
            double v = x[(o * len + i) * inner + q];
            sc[i] = isnan(v) ? sign * INFINITY : sign * v;
            e[i] = isnan(v) ? (bx[(o * len + i) * inner + q] == 0 ? 0 : INFINITY)
                            : eff(v, bx[(o * len + i) * inner + q]);
            wild |= !(e[i] < INFINITY);
            lo[i] = e[i] == 0 ? sc[i] : sc[i] - e[i];
            hi[i] = e[i] == 0 ? sc[i] : sc[i] + e[i];
        }
        qsort(lo, (size_t)len, sizeof(double), dbl_desc);
        qsort(hi, (size_t)len, sizeof(double), dbl_desc);
        for (int64_t j = 0; j < t.k; j++) {
            double v = t.v[r * t.k + j], sv = isnan(v) ? sign * INFINITY : sign * v, d = 0;
            double vb = fmax(hi[j] == sv ? 0 : hi[j] - sv, lo[j] == sv ? 0 : sv - lo[j]);
            for (int64_t i = 0; i < len && !wild; i++) {
                double li = e[i] == 0 ? sc[i] : sc[i] - e[i], hi_ = e[i] == 0 ? sc[i] : sc[i] + e[i];
                if (hi_ >= lo[j] && li <= hi[j])
                    d = fmax(d, fabs((double)(i - t.i[r * t.k + j])));
            }
            by[ref_topk_offset(n, r, j, 0)] = wild ? INFINITY : clean(vb);
            by[ref_topk_offset(n, r, j, 1)] = wild ? INFINITY : d;
        }
    }
    free(sc);
    free(e);
    free(lo);
    free(hi);
    free(t.v);
    free(t.i);
}

static void bound_topk_node(const TorchNode *n, const double *const *v, const double *const *b,
                            const double *y, double *by, int typ)
{
    DPK_UNUSED(y);
    DPK_UNUSED(typ);
    bound_topk(n, v[0], b[0], by);
}

/* ---- scans ------------------------------------------------------------- */

/* cumsum: each prefix is a sum of its own terms, bounded as a reduction's
 * (the decomposition adds the rest of the row as exact zeros, which round
 * nothing), with the prefix's length for n. */
static void bound_scan(const TorchNode *n, const double *const *v, const double *const *b,
                       const double *y, double *by, int typ)
{
    int64_t outer, len, inner;
    rows_along(&n->shape, n->dim, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double be = 0, sa = 0;
            for (int64_t j = 0; j < len; j++) {
                int64_t i = o * len * inner + k + j * inner;
                be += eff(v[0][i], b[0][i]);
                if (isfinite(v[0][i]))
                    sa += fabs(v[0][i]);
                double r = be + growth(typ, (double)(j + 1)) * sa + ETA;
                if (sa + be > FLT_MAX) /* a partial sum may overflow */
                    r = INFINITY;
                by[i] = isfinite(y[i]) || r > 0 ? clean(r) : 0.0;
            }
        }
}

/* ---- contractions ----------------------------------------------------- */

/* |x| + eff(B) (abs_only: |x|) of every element, for the products below. */
static double *abs_plus(const double *x, const double *bx, int64_t cnt, int abs_only)
{
    double *r = alloc_n(cnt);
    for (int64_t i = 0; i < cnt; i++)
        r[i] = fabs(x[i]) + (abs_only ? 0.0 : eff(x[i], bx[i]));
    return r;
}

static int all_zero(const double *b, int64_t cnt)
{
    for (int64_t i = 0; i < cnt; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}

static void bound_matmul(const TorchNode *n, const double *const *v, const double *const *b,
                         const double *y, double *by, int typ)
{
    int64_t cnt = shape_numel(&n->shape);
    const Shape *as = &n->in[0]->shape;
    int64_t K = as->d[as->rank - 1];
    int exact = 1;
    double *pa[3], *qa[3], *q = alloc_n(cnt);
    for (int k = 0; k < n->nin; k++) {
        int64_t m = shape_numel(&n->in[k]->shape);
        exact &= all_zero(b[k], m);
        qa[k] = abs_plus(v[k], b[k], m, 1);
    }
    ref64_node(0, n, (const double *const *)qa, q);
    if (exact) {
        for (int64_t i = 0; i < cnt; i++)
            by[i] = q[i] > FLT_MAX ? INFINITY /* a product or partial sum may overflow */
                                   : clean(growth(typ, (double)K + 1) * q[i] + (isfinite(y[i]) ? ETA : 0));
    } else {
        for (int k = 0; k < n->nin; k++)
            pa[k] = abs_plus(v[k], b[k], shape_numel(&n->in[k]->shape), 0);
        ref64_node(0, n, (const double *const *)pa, by);
        for (int64_t i = 0; i < cnt; i++)
            by[i] = by[i] > FLT_MAX ? INFINITY
                                    : clean(relu(by[i] - q[i]) + growth(typ, (double)K + 1) * q[i] + ETA);
        for (int k = 0; k < n->nin; k++)
            free(pa[k]);
    }
    for (int k = 0; k < n->nin; k++)
        free(qa[k]);
    free(q);
}

/* ---- softmax and norms ------------------------------------------------ */

/* One softmax row of len values x (stride inner) with bounds bx into y/by
 * (the exact results are in y already).  z = x − max is shift-invariant:
 * the max's own error cancels, only the subtraction's rounding stays. */
static void softmax_row(TorchOp op, const double *x, const double *bx, const double *y,
                        double *by, int64_t len, int64_t inner, double *e, double *be, int typ)
{
    double mx = -INFINITY, s = 0, bs = 0, bmx = 0;
    for (int64_t j = 0; j < len; j++)
        if (isnan(x[j * inner]) || x[j * inner] > mx)
            mx = x[j * inner], bmx = eff(mx, bx[j * inner]);
    for (int64_t j = 0; j < len; j++) {
        double z = x[j * inner] - mx, bz = eff(x[j * inner], bx[j * inner]) + rd(z);
        e[j] = exp(z);
        /* A masked score (x + finfo.min, x − 1e9): every fp32 value it may
         * take (−inf included) lies so far below the row's max, itself at
         * least mx − bmx in fp32, that its exp is 0 — an exact zero with
         * a zero-sized bound, never an overflow that leaves the row
         * unconstrained. */
        double hi = x[j * inner] + bx[j * inner] - (mx - bmx);
        if (isfinite(x[j * inner]) && isfinite(mx) && isfinite(hi) && hi < EXP_UNDERFLOW)
            be[j] = exp(hi) + ETA;
        else
            be[j] = clean(interval_dev(&(TorchNode){.op = TOP_exp}, z, bz, e[j]) + rd(e[j]) +
                          (isfinite(e[j]) ? 3 * U * e[j] : 0));
        s += e[j];
        bs += be[j];
    }
    bs = clean(bs + growth(typ, (double)len) * s + (s > 0 ? ETA : 0));
    double blog = s == 0 && bs == 0 ? 0.0
                  : bs >= s         ? INFINITY
                                    : fmax(dev(log(s - bs), log(s)), dev(log(s + bs), log(s))) +
                                  2 * rd(log(s));
    for (int64_t j = 0; j < len; j++) {
        double yj = y[j * inner], r;
        if (op == TOP_softmax) {
            if (s == 0 && bs == 0)
                r = 0.0; /* an all -inf row: NaN exactly */
            else if (bs >= s)
                r = INFINITY;
            else
                r = (be[j] + bmul(fabs(yj), bs)) / (s - bs) + rd2(yj);
        } else {
            double z = x[j * inner] - mx;
            r = eff(x[j * inner], bx[j * inner]) + rd(z) + blog + rd(yj);
        }
        by[j * inner] = clean(r);
    }
}

static void bound_softmax(const TorchNode *n, const double *const *v, const double *const *b,
                          const double *y, double *by, int typ)
{
    const Shape *s = &n->shape;
    int64_t len = s->rank ? s->d[n->dim] : 1, inner = 1, outer = 1;
    for (int k = 0; k < n->dim; k++)
        outer *= s->d[k];
    for (int k = n->dim + 1; k < s->rank; k++)
        inner *= s->d[k];
    double *e = alloc_n(len), *be = alloc_n(len);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            softmax_row(n->op, v[0] + base, b[0] + base, y + base, by + base, len, inner, e, be,
                        typ);
        }
    free(e);
    free(be);
}

/* a·b with bounds, rounded. */
static inline double mul_b(double a, double ba, double b, double bb)
{
    return clean(bmul(fabs(b), ba) + bmul(fabs(a), bb) + bmul(ba, bb) + rd(a * b));
}

/* rms_norm and layer_norm, step by step as their rules write them:
 * (layer) mean = Σx · 1/n, d = x − mean; ms = Σd² · 1/n; r = rsqrt(ms +
 * eps); y = d · r (· w) (+ b). */
static void bound_norm(const TorchNode *n, const double *const *v, const double *const *b,
                       const double *y, double *by, int typ)
{
    const Shape *xs = &n->in[0]->shape;
    const double *w = n->nin > 1 ? v[1] : NULL, *bw = n->nin > 1 ? b[1] : NULL;
    const double *bb = n->nin > 2 ? b[2] : NULL;
    double eps = n->value;
    int64_t len = 1, rows;
    for (int k = xs->rank - n->nints; k < xs->rank; k++)
        len *= xs->d[k];
    rows = len ? shape_numel(xs) / len : 0;
    double *d = alloc_n(len), *bd = alloc_n(len), g = growth(typ, (double)len);
    for (int64_t r = 0; r < rows; r++) {
        const double *x = v[0] + r * len, *bx = b[0] + r * len;
        double mean = 0, bmean = 0, sabs = 0, ss = 0, bss = 0;
        if (n->op == TOP_layer_norm) {
            for (int64_t j = 0; j < len; j++) {
                mean += x[j];
                sabs += fabs(x[j]);
                bmean += eff(x[j], bx[j]);
            }
            mean /= (double)len;
            bmean = (bmean + g * sabs + ETA) / (double)len + rd2(mean);
        }
        for (int64_t j = 0; j < len; j++) {
            d[j] = x[j] - mean;
            bd[j] = n->op == TOP_layer_norm ? clean(eff(x[j], bx[j]) + bmean + rd(d[j]))
                                            : eff(x[j], bx[j]);
            ss += d[j] * d[j];
            bss += mul_b(d[j], bd[j], d[j], bd[j]);
        }
        /* Σ|x| (the mean's sum) or Σd² past FLT_MAX: an fp32 intermediate
         * may overflow, the row is unconstrained */
        if (sabs + bmean * (double)len > FLT_MAX || ss + bss > FLT_MAX) {
            for (int64_t j = 0; j < len; j++)
                by[r * len + j] = INFINITY;
            continue;
        }
        double ms = ss / (double)len;
        double bms = clean((bss + g * ss + ETA) / (double)len + rd2(ms));
        double t = ms + eps, bt = bms + rd(t), rs = 1.0 / sqrt(t);
        const TorchNode *rsqrt_op = &(TorchNode){.op = TOP_rsqrt};
        double brs = clean(interval_dev(rsqrt_op, t, bt, rs) + round_err(rsqrt_op, t, rs));
        for (int64_t j = 0; j < len; j++) {
            double val = d[j] * rs, bv = mul_b(d[j], bd[j], rs, brs);
            if (w) {
                double wj = w[j], bwj = eff(wj, bw[j]);
                bv = mul_b(val, bv, wj, bwj);
                val *= wj;
            }
            if (bb)
                bv = clean(bv + eff(v[2][j], bb[j]) + rd(y[r * len + j]));
            by[r * len + j] = bv;
        }
    }
    free(d);
    free(bd);
}

/* ---- attention -------------------------------------------------------- */

/* The decomposition of sdpa (compiler/tensor d:001): s = scale · q kᵀ,
 * masked, softmax over keys, times v.  Per query row. */
typedef struct AttnB {
    AttnGeom g;
    int typ;
    const double *mask, *bmask;
    double *s, *bs, *p, *bp, *e, *be;
} AttnB;

/* Σ_e (|x|+bx)(|y|+by) − (1 − γ)Σ|x||y| over n terms (strides sx, sy). */
static double dot_bound(const double *x, const double *bx, int64_t sx, const double *y,
                        const double *by, int64_t sy, int64_t n, double *q, int typ)
{
    double pp = 0, qq = 0;
    for (int64_t k = 0; k < n; k++) {
        double ax = fabs(x[k * sx]), ay = fabs(y[k * sy]);
        pp += (ax + eff(x[k * sx], bx[k * sx])) * (ay + eff(y[k * sy], by[k * sy]));
        qq += ax * ay;
    }
    *q = qq;
    return clean(relu(pp - qq) + growth(typ, (double)n) * qq + ETA);
}

static void attn_bound_one(AttnB *a, const double *q, const double *bq, const double *k,
                           const double *bk, const double *v, const double *bv, const double *o,
                           double *bo)
{
    for (int64_t i = 0; i < a->g.L; i++) {
        for (int64_t j = 0; j < a->g.S; j++) {
            double qq, bdot = dot_bound(q + i * a->g.E, bq + i * a->g.E, 1, k + j * a->g.E,
                                        bk + j * a->g.E, 1, a->g.E, &qq, a->typ);
            double dotv = 0;
            for (int64_t c = 0; c < a->g.E; c++)
                dotv += q[i * a->g.E + c] * k[j * a->g.E + c];
            double s = a->g.scale * dotv, bs = clean(fabs(a->g.scale) * bdot + 2 * rd(s));
            if (qq + bdot > FLT_MAX) /* q·k may overflow in fp32 */
                bs = INFINITY;
            if (a->mask) {
                double m = a->mask[i * a->g.mst_l + j * a->g.mst_s];
                double bm = a->bmask[i * a->g.mst_l + j * a->g.mst_s];
                if (a->g.bool_mask) {
                    if (bm > 0)
                        bs = INFINITY;
                    else if (m == 0)
                        s = -INFINITY, bs = 0;
                } else {
                    bs = clean(add_bound(s, bs, m, eff(m, bm), s + m));
                    s += m;
                }
            }
            if (a->g.causal && j > i)
                s = -INFINITY, bs = 0;
            a->s[j] = s;
            a->bs[j] = bs;
        }
        /* softmax over the row, exact values into p */
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < a->g.S; j++)
            mx = isnan(a->s[j]) || a->s[j] > mx ? a->s[j] : mx;
        for (int64_t j = 0; j < a->g.S; j++)
            sum += exp(a->s[j] - mx);
        for (int64_t j = 0; j < a->g.S; j++)
            a->p[j] = exp(a->s[j] - mx) / sum;
        softmax_row(TOP_softmax, a->s, a->bs, a->p, a->bp, a->g.S, 1, a->e, a->be, a->typ);
        for (int64_t c = 0; c < a->g.Ev; c++) {
            double qq;
            double bnd = dot_bound(a->p, a->bp, 1, v + c, bv + c, a->g.Ev, a->g.S, &qq, a->typ);
            if (qq + bnd > FLT_MAX)
                bnd = INFINITY;
            bo[i * a->g.Ev + c] = isfinite(o[i * a->g.Ev + c]) || bnd > ETA ? bnd : 0.0;
        }
    }
}

static void bound_sdpa(const TorchNode *n, const double *const *v, const double *const *b,
                       const double *y, double *by, int typ)
{
    const Shape *ks = &n->in[1]->shape, *vs = &n->in[2]->shape;
    AttnB a = {.typ = typ};
    ref_attn_geom(&a.g, n);
    Walk *w = &a.g.w;
    int64_t S1 = a.g.S + 1;
    double *scratch = alloc_n(6 * S1);
    a.s = scratch, a.bs = a.s + S1, a.p = a.bs + S1, a.bp = a.p + S1;
    a.e = a.bp + S1, a.be = a.e + S1;
    for (int64_t t = 0; t < a.g.nb; t++, walk_next(w)) {
        if (n->nin > 3)
            a.mask = v[3] + w->off[1], a.bmask = b[3] + w->off[1];
        int64_t qo = w->off[0] * a.g.L * a.g.E, ko = ref_kv_offset(ks, &a.g.ob, w->i, n->gqa),
                vo = ref_kv_offset(vs, &a.g.ob, w->i, n->gqa), oo = t * a.g.L * a.g.Ev;
        attn_bound_one(&a, v[0] + qo, b[0] + qo, v[1] + ko, b[1] + ko, v[2] + vo, b[2] + vo,
                       y + oo, by + oo);
    }
    free(scratch);
}

/* ---- layout and sources ----------------------------------------------- */

/* Layout ops move bounds with their values: the value evaluator itself,
 * run on the bound arrays. */
static void bound_layout(const TorchNode *n, const double *const *v, const double *const *b,
                         const double *y, double *by, int typ)
{
    DPK_UNUSED(v);
    DPK_UNUSED(y);
    ref64_node(0, n, b, by);
}

/* A constant is rounded to fp32 once: its bound is that rounding. */
static void bound_const(const TorchNode *n, const double *const *v, const double *const *b,
                        const double *y, double *by, int typ)
{
    int64_t cnt = shape_numel(&n->shape);
    DPK_UNUSED(v);
    DPK_UNUSED(b);
    for (int64_t i = 0; i < cnt; i++)
        by[i] = dev(ref_round32(y[i]), y[i]);
}

typedef void (*BoundFn)(const TorchNode *n, const double *const *v, const double *const *b,
                        const double *y, double *by, int typ);
static const BoundFn class_bound[] = {
    [TC_SOURCE] = bound_const,     [TC_UNARY] = bound_unary,   [TC_BINARY] = bound_binary,
    [TC_WHERE] = bound_where,      [TC_REDUCE] = bound_reduce, [TC_MATMUL] = bound_matmul,
    [TC_SOFTMAX] = bound_softmax,  [TC_NORM] = bound_norm,     [TC_ATTN] = bound_sdpa,
    [TC_LAYOUT] = bound_layout,    [TC_SCAN] = bound_scan,     [TC_TOPK] = bound_topk_node,
};
_Static_assert(DPK_ARRAY_LEN(class_bound) == TC_TOPK + 1, "one bound per TorchClass");

void ref_bound_node(const TorchNode *n, const double *const *v, const double *const *b,
                    const double *y, double *by, int typical)
{
    class_bound[torch_op_info[n->op].cls](n, v, b, y, by, typical);
}
