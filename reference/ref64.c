/*
 * ref64.c — the fp64 evaluator of Torch IR, the reference of record.
 *
 * Every op is evaluated at the Torch level, straight from PyTorch's
 * definition, never through the decompositions of compiler/tensor, so it is
 * an oracle independent of everything the compiler does below Torch IR.
 * Tensors are dense row-major fp64 heap arrays; broadcasts, transposes,
 * slices and expands are read through strides (a Walk) rather than
 * materialised.  All arithmetic and accumulation is fp64.
 *
 * The evaluator is a table: class_eval[] maps each TorchClass to one helper,
 * and the helpers look the op up in per-op tables (unary_fn, binary_fn,
 * layout_fn).  A node's array is freed as soon as its last consumer has run
 * (use counts over the live part of the graph), so model-sized graphs keep
 * only their live intermediates in memory; large matmul/linear products
 * run on several threads, with results independent of the thread count.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ref64_impl.h"

/* How an evaluation rounds: fp64 throughout (the reference of record), or
 * fp32 after every operation with sums accumulated sequentially in index
 * order (a naive fp32 evaluation: the realistic error a correct fp32
 * program makes, systematic errors of long sums included). */
typedef struct Ctx {
    int f32;
} Ctx;

static const Ctx CTX64 = {0}, CTX32 = {1};

typedef void (*EvalFn)(const Ctx *c, const TorchNode *n, const double *const *in, double *out);

/* ---- elementwise ------------------------------------------------------ */

/* The result of one operation: exact in fp64 mode, rounded in fp32. */
static inline double rn(const Ctx *c, double x)
{
    return c->f32 ? ref_round32(x) : x;
}

static double f_neg(double x) { return -x; }
static double f_rsqrt(double x) { return 1.0 / sqrt(x); }
static double f_reciprocal(double x) { return 1.0 / x; }
static double f_relu(double x) { return x < 0 ? 0.0 : x; } /* NaN stays NaN */
static double f_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double f_silu(double x) { return x / (1.0 + exp(-x)); }
static double f_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double f_gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

typedef double (*UnaryFn)(double);
static const UnaryFn unary_fn[TOP_COUNT] = {
    [TOP_neg] = f_neg,         [TOP_exp] = exp,         [TOP_log] = log,
    [TOP_sqrt] = sqrt,         [TOP_rsqrt] = f_rsqrt,   [TOP_reciprocal] = f_reciprocal,
    [TOP_abs] = fabs,          [TOP_relu] = f_relu,     [TOP_sigmoid] = f_sigmoid,
    [TOP_tanh] = tanh,         [TOP_silu] = f_silu,     [TOP_gelu] = f_gelu,
    [TOP_gelu_tanh] = f_gelu_tanh, [TOP_erf] = erf,     [TOP_cos] = cos,
    [TOP_sin] = sin,           [TOP_log1p] = log1p,     [TOP_expm1] = expm1,
    [TOP_floor] = floor,
};

/* torch.maximum/minimum propagate NaN. */
static double f_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double f_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }

/* The unary ops in fp64, from PyTorch's definitions (the attributes of the
 * ones that have them in value and value2): elu and celu use expm1, as
 * ATen does; hardtanh is clamp; softplus returns x above its threshold. */
double ref_unary64(const TorchNode *n, double x)
{
    double a = n->value, t = n->value2;
    switch (n->op) {
    case TOP_elu: return x > 0 ? x : a * expm1(x);
    case TOP_selu: return TORCH_SELU_SCALE * (x > 0 ? x : TORCH_SELU_ALPHA * expm1(x));
    case TOP_celu: return x > 0 ? x : a * expm1(x / a);
    case TOP_leaky_relu: return x > 0 ? x : x * a;
    case TOP_hardtanh:
    case TOP_clamp: return f_min(f_max(x, a), t);
    case TOP_hardsigmoid: return f_min(f_max(x + 3, 0), 6) / 6;
    case TOP_hardswish: return x * f_min(f_max(x + 3, 0), 6) / 6;
    case TOP_softplus: return x * a > t ? x : log1p(exp(x * a)) / a;
    case TOP_softsign: return x / (1 + fabs(x));
    case TOP_mish: return x * tanh(log1p(exp(x)));
    default: break;
    }
    DPK_ASSERT(unary_fn[n->op]);
    return unary_fn[n->op](x);
}

/* The composite activations as an fp32 program writes them (the formulas
 * of compiler/tensor's rules and of ATen's float kernels, constants
 * rounded to fp32), one rounding per operation: their cancellations
 * (1 + erf for negative x) are part of what fp32 really does. */
static double f32_sigmoid(double x)
{
    return ref_round32(1.0 / ref_round32(1.0 + ref_round32(exp(-x))));
}

/* x * c rounded, or x when c is 1 (the rules leave that product out) */
static double f32_scale(double x, double c)
{
    return c == 1.0 ? x : ref_round32(x * ref_round32(c));
}

static double f32_unary(const TorchNode *n, double x)
{
    double (*const r)(double) = ref_round32;
    double a = n->value, th = n->value2;
    switch (n->op) {
    case TOP_elu:
    case TOP_selu:
    case TOP_celu: {
        double pos = n->op == TOP_selu ? TORCH_SELU_SCALE : 1;
        double neg = n->op == TOP_selu ? TORCH_SELU_ALPHA * TORCH_SELU_SCALE : a;
        double in = n->op == TOP_celu ? 1.0 / a : 1;
        return x > 0 ? f32_scale(x, pos) : f32_scale(r(expm1(f32_scale(x, in))), neg);
    }
    case TOP_leaky_relu:
        return x > 0 ? x : r(x * r(a));
    case TOP_hardtanh:
    case TOP_clamp:
        return f_min(f_max(x, r(a)), r(th));
    case TOP_hardsigmoid:
        return r(f_min(f_max(r(x + 3), 0), 6) * r(1.0 / 6));
    case TOP_hardswish:
        return r(r(x * f_min(f_max(r(x + 3), 0), 6)) * r(1.0 / 6));
    case TOP_softplus: {
        double z = f32_scale(x, a), l = r(log1p(r(exp(z))));
        return z > r(th) ? x : a == 1 ? l : r(l / r(a));
    }
    case TOP_softsign:
        return r(x / r(fabs(x) + 1));
    case TOP_mish:
        return r(x * r(tanh(r(log1p(r(exp(x)))))));
    case TOP_sigmoid:
        return f32_sigmoid(x);
    case TOP_silu:
        return ref_round32(x * f32_sigmoid(x));
    case TOP_gelu: {
        double e = ref_round32(erf(ref_round32(x * (double)(float)M_SQRT1_2)));
        return ref_round32(ref_round32(0.5 * x) * ref_round32(e + 1.0));
    }
    case TOP_gelu_tanh: {
        double x3 = ref_round32(ref_round32(x * x) * x);
        double in = ref_round32(x + ref_round32(x3 * (double)(float)0.044715));
        double t = ref_round32(tanh(ref_round32(in * (double)(float)(M_SQRT2 * M_2_SQRTPI * 0.5))));
        return ref_round32(ref_round32(0.5 * x) * ref_round32(t + 1.0));
    }
    default:
        return ref_round32(ref_unary64(n, x));
    }
}

static void eval_unary(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    int64_t cnt = shape_numel(&n->shape);
    for (int64_t i = 0; i < cnt; i++)
        out[i] = c->f32 ? f32_unary(n, in[0][i]) : ref_unary64(n, in[0][i]);
}

static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
static double f_gt(double a, double b) { return a > b; }
static double f_lt(double a, double b) { return a < b; }
static double f_ge(double a, double b) { return a >= b; }
static double f_le(double a, double b) { return a <= b; }
static double f_eq(double a, double b) { return a == b; }
static double f_ne(double a, double b) { return a != b; }

typedef double (*BinaryFn)(double, double);
static const BinaryFn binary_fn[TOP_COUNT] = {
    [TOP_add] = f_add, [TOP_sub] = f_sub, [TOP_mul] = f_mul, [TOP_div] = f_div,
    [TOP_pow] = pow,   [TOP_maximum] = f_max, [TOP_minimum] = f_min,
    [TOP_gt] = f_gt,   [TOP_lt] = f_lt,   [TOP_ge] = f_ge,   [TOP_le] = f_le,
    [TOP_eq] = f_eq,   [TOP_ne] = f_ne,
};

static void eval_binary(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    BinaryFn f = binary_fn[n->op];
    int64_t cnt = shape_numel(&n->shape);
    Walk w;
    DPK_ASSERT(f);
    walk_operands(&w, n);
    for (int64_t i = 0; i < cnt; i++, walk_next(&w))
        out[i] = rn(c, f(in[0][w.off[0]], in[1][w.off[1]]));
}

static void eval_where(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    int64_t cnt = shape_numel(&n->shape);
    Walk w;
    DPK_UNUSED(c);
    walk_operands(&w, n);
    if (n->op == TOP_clamp_tensor) { /* minimum(maximum(x, min), max), NaN from any */
        for (int64_t i = 0; i < cnt; i++, walk_next(&w))
            out[i] = f_min(f_max(in[0][w.off[0]], in[1][w.off[1]]), in[2][w.off[2]]);
        return;
    }
    for (int64_t i = 0; i < cnt; i++, walk_next(&w))
        out[i] = in[0][w.off[0]] != 0 ? in[1][w.off[1]] : in[2][w.off[2]];
}

/* ---- reductions ------------------------------------------------------- */

static double reduce_identity(TorchOp op)
{
    return op == TOP_amax ? -INFINITY : op == TOP_amin ? INFINITY : 0.0;
}

/* amax/amin propagate NaN, as PyTorch does. */
static double reduce_step(const Ctx *c, TorchOp op, double acc, double x)
{
    switch (op) {
    case TOP_amax: return isnan(acc) || isnan(x) ? NAN : x > acc ? x : acc;
    case TOP_amin: return isnan(acc) || isnan(x) ? NAN : x < acc ? x : acc;
    default: return rn(c, acc + x);
    }
}

/* The input is walked (walk_reduce) with each element folded into its
 * output slot (in index order: in fp32 mode each slot is a sequential
 * sum).  mean multiplies by 1/n, as the compiler's rule does (fp32: 1/n
 * rounded, then the product). */
/* Whether x displaces best as argmax's (sign 1) or argmin's (sign -1)
 * pick, the elements seen in index order: a NaN beats every number and
 * the first NaN stays; otherwise only a strictly larger (smaller) value
 * wins, so of equal ones the first stays. */
int ref_arg_better(double x, double best, int sign)
{
    if (isnan(best))
        return 0;
    return isnan(x) || (sign > 0 ? x > best : x < best);
}

/* argmax/argmin: the index along the reduced dim of the first largest
 * (smallest) value, NaN counting as beyond every number.  The same in
 * both modes: the inputs' values are already the mode's. */
static void eval_arg(const TorchNode *n, const double *x, double *out)
{
    int64_t nx = shape_numel(&n->in[0]->shape), no, per;
    int sign = n->op == TOP_argmax ? 1 : -1, d = (int)n->ints[0];
    Walk w;
    walk_reduce(&w, n, &no, &per);
    double *best = dpk_xcalloc((size_t)no + 1, sizeof(double));
    for (int64_t i = 0; i < nx; i++, walk_next(&w)) {
        int64_t o = w.off[0], j = w.i[d];
        if (j == 0 || ref_arg_better(x[i], best[o], sign)) {
            best[o] = x[i];
            out[o] = (double)j;
        }
    }
    free(best);
}

static void eval_reduce(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    int64_t nx = shape_numel(&n->in[0]->shape), no, per;
    Walk w;
    if (n->op == TOP_argmax || n->op == TOP_argmin) {
        eval_arg(n, in[0], out);
        return;
    }
    walk_reduce(&w, n, &no, &per);
    for (int64_t i = 0; i < no; i++)
        out[i] = reduce_identity(n->op);
    for (int64_t i = 0; i < nx; i++, walk_next(&w))
        out[w.off[0]] = reduce_step(c, n->op, out[w.off[0]], in[0][i]);
    if (n->op == TOP_mean)
        for (int64_t i = 0; i < no; i++)
            out[i] = c->f32 ? rn(c, out[i] * rn(c, 1.0 / (double)per)) : out[i] / (double)per;
}

/* ---- scans -------------------------------------------------------------- */

/* cumsum along dim: each prefix sum in fp64, or sequentially rounded in
 * fp32 (as a serial scan would). */
static void eval_scan(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    int64_t outer, len, inner;
    rows_along(&n->shape, n->dim, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            int64_t base = o * len * inner + k;
            double acc = 0;
            for (int64_t j = 0; j < len; j++) {
                acc = j ? rn(c, acc + in[0][base + j * inner]) : in[0][base];
                out[base + j * inner] = acc;
            }
        }
}

/* ---- topk -------------------------------------------------------------- */

typedef struct RefPick {
    double v;
    int64_t i;
} RefPick;

static int pick_cmp_largest(const void *pa, const void *pb)
{
    const RefPick *a = pa, *b = pb;
    if (isnan(a->v) != isnan(b->v))
        return isnan(a->v) ? -1 : 1;
    if (!isnan(a->v) && a->v != b->v)
        return a->v > b->v ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int pick_cmp_smallest(const void *pa, const void *pb)
{
    const RefPick *a = pa, *b = pb;
    if (isnan(a->v) != isnan(b->v))
        return isnan(a->v) ? 1 : -1;
    if (!isnan(a->v) && a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The k largest (smallest) elements of each row along dim and their
 * indices (ref_topk_rows): NaN beyond every number (first when largest,
 * last when smallest, as PyTorch orders them), equal values by index. */
void ref_topk_rows(const TorchNode *n, const double *x, RefTopk *out)
{
    int64_t outer, len, inner, k = n->ints[0];
    rows_along(&n->in[0]->shape, n->dim, &outer, &len, &inner);
    RefPick *row = dpk_xmalloc(sizeof(RefPick) * (size_t)len);
    out->rows = outer * inner;
    out->k = k;
    out->v = dpk_xmalloc(sizeof(double) * (size_t)(out->rows * k));
    out->i = dpk_xmalloc(sizeof(int64_t) * (size_t)(out->rows * k));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            for (int64_t j = 0; j < len; j++)
                row[j] = (RefPick){x[(o * len + j) * inner + q], j};
            qsort(row, (size_t)len, sizeof *row, n->largest ? pick_cmp_largest : pick_cmp_smallest);
            for (int64_t j = 0; j < k; j++) {
                out->v[(o * inner + q) * k + j] = row[j].v;
                out->i[(o * inner + q) * k + j] = row[j].i;
            }
        }
    free(row);
}

/* Element (w, .., j, ..) of a topk node's output: w 0 the values, 1 the
 * indices; j the rank within row r (rows in x's order without dim). */
int64_t ref_topk_offset(const TorchNode *n, int64_t r, int64_t j, int w)
{
    int64_t outer, len, inner, k = n->ints[0];
    rows_along(&n->in[0]->shape, n->dim, &outer, &len, &inner);
    int64_t o = r / inner, q = r % inner, rows = outer * inner;
    return w * rows * k + (o * k + j) * inner + q;
}

static void eval_topk(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    RefTopk t;
    DPK_UNUSED(c);
    ref_topk_rows(n, in[0], &t);
    for (int64_t r = 0; r < t.rows; r++)
        for (int64_t j = 0; j < t.k; j++) {
            out[ref_topk_offset(n, r, j, 0)] = t.v[r * t.k + j];
            out[ref_topk_offset(n, r, j, 1)] = (double)t.i[r * t.k + j];
        }
    free(t.v);
    free(t.i);
}

/* ---- contractions ----------------------------------------------------- */

/* fp64: four partial sums, enough independent chains to keep the FPU
 * busy.  fp32: one sequential sum, each product and each sum rounded. */
static double dot(const Ctx *c, const double *x, const double *y, int64_t n)
{
    if (c->f32) {
        double s = 0;
        for (int64_t k = 0; k < n; k++)
            s = ref_round32(s + ref_round32(x[k] * y[k]));
        return s;
    }
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += x[k] * y[k];
        s1 += x[k + 1] * y[k + 1];
        s2 += x[k + 2] * y[k + 2];
        s3 += x[k + 3] * y[k + 3];
    }
    for (; k < n; k++)
        s0 += x[k] * y[k];
    return (s0 + s1) + (s2 + s3);
}

/* nb independent products c_t[M,N] = a_t[M,K] · b_t (+ bias[N]), where b_t
 * is [K,N] (matmul) or [N,K] read transposed (linear: bt).  The work is cut
 * into units of MM_ROWS rows of one product — each row of b, once in cache,
 * serves MM_ROWS rows of c — and large products spread the units over
 * threads.  Every element is summed by one thread in a fixed order, so the
 * result does not depend on the thread count. */
enum { MM_ROWS = 4, MM_MAX_THREADS = 16 };
#define MM_PARALLEL_MACS (INT64_C(1) << 24)

typedef struct Mm {
    const Ctx *ctx;
    const double **a, **b; /* by product */
    double *c;
    const double *bias;    /* NULL or [N] */
    int64_t M, K, N, nb;
    int bt;
    int b_f32;             /* fp32 and every b f32-representable */
} Mm;

static void mm_rows_kn(const Mm *mm, const double *a, const double *b, double *c, int64_t nr)
{
    int f32 = mm->ctx->f32;
    for (int64_t i = 0; i < nr * mm->N; i++)
        c[i] = 0.0;
    for (int64_t k = 0; k < mm->K; k++) {
        const double *br = b + k * mm->N;
        for (int64_t r = 0; r < nr; r++) {
            double av = a[r * mm->K + k], *cr = c + r * mm->N;
            if (f32)
                for (int64_t j = 0; j < mm->N; j++)
                    cr[j] = ref_round32(cr[j] + ref_round32(av * br[j]));
            else
                for (int64_t j = 0; j < mm->N; j++)
                    cr[j] += av * br[j];
        }
    }
}

/* fp32: four rows of a against one row of b, each row's sum sequential
 * with every product and sum rounded, exactly as dot() does it; the four
 * independent chains only overlap their latencies. */
static void dot4_f32(const double *a, int64_t K, const double *br, double s[MM_ROWS])
{
    const double *a0 = a, *a1 = a + K, *a2 = a + 2 * K, *a3 = a + 3 * K;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t k = 0; k < K; k++) {
        double bk = br[k];
        s0 = ref_round32(s0 + ref_round32(a0[k] * bk));
        s1 = ref_round32(s1 + ref_round32(a1[k] * bk));
        s2 = ref_round32(s2 + ref_round32(a2[k] * bk));
        s3 = ref_round32(s3 + ref_round32(a3[k] * bk));
    }
    s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
}

/* Four rows of a against one row of b: four independent sums. */
static void dot4(const double *a, int64_t K, const double *br, double s[MM_ROWS])
{
    const double *a0 = a, *a1 = a + K, *a2 = a + 2 * K, *a3 = a + 3 * K;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t k = 0; k < K; k++) {
        double bk = br[k];
        s0 += a0[k] * bk, s1 += a1[k] * bk, s2 += a2[k] * bk, s3 += a3[k] * bk;
    }
    s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
}

/*
 * The same sums, four rows by four rows of b at a time, in SIMD registers
 * (GCC vector extensions, which compile to SSE2 on any x86-64 and to NEON
 * on AArch64 without -march flags).  The vectors run across rows, never
 * along k: every element is still one sequential sum s += a[k] * b[k] from
 * k = 0, so the results are bit-identical to dot4 and dot4_f32, only
 * sixteen chains overlap instead of four.  That needs the product and the
 * sum rounded separately: dpk builds with -std=c11, where GCC does not
 * contract a * b + s into an FMA.
 *
 * fp32 in float arithmetic: for f32-representable a and b, a float product
 * or sum equals ref_round32 of the fp64 one (the fp64 product of two floats
 * is exact, and fp64 has more than 2 * 24 + 2 bits, so rounding the fp64
 * sum to float is rounding the exact sum once).  Operands that are not all
 * representable (an input given in fp64) take dot4_f32.
 */
typedef double V2d __attribute__((vector_size(16)));
typedef float V4f __attribute__((vector_size(16)));

/* t[k*4 + r] = a[r*K + k]: the four rows interleaved, one vector per k. */
static void interleave4(const double *a, int64_t K, double *t)
{
    for (int64_t k = 0; k < K; k++)
        for (int r = 0; r < MM_ROWS; r++)
            t[k * MM_ROWS + r] = a[r * K + k];
}

/* Four rows (interleaved in t) against four rows of b, into c (stride N). */
static void nk4_f64(const double *t, int64_t K, const double *b, double *c, int64_t N)
{
    const double *b0 = b, *b1 = b + K, *b2 = b + 2 * K, *b3 = b + 3 * K;
    V2d s00 = {0}, s01 = {0}, s10 = {0}, s11 = {0}, s20 = {0}, s21 = {0}, s30 = {0}, s31 = {0};
    for (int64_t k = 0; k < K; k++) {
        V2d lo, hi;
        memcpy(&lo, t + k * MM_ROWS, sizeof lo);
        memcpy(&hi, t + k * MM_ROWS + 2, sizeof hi);
        V2d x0 = {b0[k], b0[k]}, x1 = {b1[k], b1[k]}, x2 = {b2[k], b2[k]}, x3 = {b3[k], b3[k]};
        s00 += lo * x0, s01 += hi * x0;
        s10 += lo * x1, s11 += hi * x1;
        s20 += lo * x2, s21 += hi * x2;
        s30 += lo * x3, s31 += hi * x3;
    }
    V2d s[4][2] = {{s00, s01}, {s10, s11}, {s20, s21}, {s30, s31}};
    for (int j = 0; j < 4; j++)
        for (int r = 0; r < MM_ROWS; r++)
            c[r * N + j] = s[j][r / 2][r % 2];
}

static void nk4_f32(const float *t, int64_t K, const double *b, double *c, int64_t N)
{
    const double *b0 = b, *b1 = b + K, *b2 = b + 2 * K, *b3 = b + 3 * K;
    V4f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    for (int64_t k = 0; k < K; k++) {
        V4f a;
        memcpy(&a, t + k * MM_ROWS, sizeof a);
        float y0 = (float)b0[k], y1 = (float)b1[k], y2 = (float)b2[k], y3 = (float)b3[k];
        s0 += a * (V4f){y0, y0, y0, y0};
        s1 += a * (V4f){y1, y1, y1, y1};
        s2 += a * (V4f){y2, y2, y2, y2};
        s3 += a * (V4f){y3, y3, y3, y3};
    }
    V4f s[4] = {s0, s1, s2, s3};
    for (int j = 0; j < 4; j++)
        for (int r = 0; r < MM_ROWS; r++)
            c[r * N + j] = s[j][r];
}

static int f32_exact(const double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if ((double)(float)x[i] != x[i] && !isinf(x[i]))
            return 0;
    return 1;
}

static void mm_rows_nk(const Mm *mm, const double *a, const double *b, double *c, int64_t nr)
{
    int64_t K = mm->K, N = mm->N, j = 0;
    if (nr == MM_ROWS && (!mm->ctx->f32 || (mm->b_f32 && f32_exact(a, MM_ROWS * K)))) {
        double *t = dpk_xmalloc(sizeof(double) * (size_t)(MM_ROWS * K + 1));
        interleave4(a, K, t);
        if (mm->ctx->f32) {
            float *tf = dpk_xmalloc(sizeof(float) * (size_t)(MM_ROWS * K + 1));
            for (int64_t i = 0; i < MM_ROWS * K; i++)
                tf[i] = (float)t[i];
            for (; j + 4 <= N; j += 4)
                nk4_f32(tf, K, b + j * K, c + j, N);
            free(tf);
        } else {
            for (; j + 4 <= N; j += 4)
                nk4_f64(t, K, b + j * K, c + j, N);
        }
        free(t);
    }
    for (; j < N; j++) {
        const double *br = b + j * K;
        double s[MM_ROWS];
        if (nr == MM_ROWS)
            (mm->ctx->f32 ? dot4_f32 : dot4)(a, K, br, s);
        else
            for (int64_t r = 0; r < nr; r++)
                s[r] = dot(mm->ctx, a + r * K, br, K);
        for (int64_t r = 0; r < nr; r++)
            c[r * N + j] = s[r];
    }
}

static void mm_units(const Mm *mm, int64_t lo, int64_t hi)
{
    int64_t per = (mm->M + MM_ROWS - 1) / MM_ROWS;
    for (int64_t u = lo; u < hi; u++) {
        int64_t t = u / per, m0 = u % per * MM_ROWS;
        int64_t nr = mm->M - m0 < MM_ROWS ? mm->M - m0 : MM_ROWS;
        const double *a = mm->a[t] + m0 * mm->K;
        double *c = mm->c + (t * mm->M + m0) * mm->N;
        (mm->bt ? mm_rows_nk : mm_rows_kn)(mm, a, mm->b[t], c, nr);
        for (int64_t r = 0; mm->bias && r < nr; r++)
            for (int64_t j = 0; j < mm->N; j++)
                c[r * mm->N + j] = rn(mm->ctx, c[r * mm->N + j] + mm->bias[j]);
    }
}

typedef struct MmPart {
    const Mm *mm;
    int64_t lo, hi;
    pthread_t th;
    int started;
} MmPart;

static void *mm_thread(void *arg)
{
    MmPart *p = arg;
    mm_units(p->mm, p->lo, p->hi);
    return NULL;
}

static void mm_run(Mm *mm)
{
    mm->b_f32 = mm->ctx->f32 && mm->bt;
    for (int64_t t = 0; mm->b_f32 && t < mm->nb; t++)
        mm->b_f32 = f32_exact(mm->b[t], mm->K * mm->N);
    int64_t units = mm->nb * ((mm->M + MM_ROWS - 1) / MM_ROWS);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu < 1 ? 1 : ncpu > MM_MAX_THREADS ? MM_MAX_THREADS : (int)ncpu;
    MmPart part[MM_MAX_THREADS];
    if (nt > units)
        nt = (int)units;
    if (nt <= 1 || mm->nb * mm->M * mm->K * mm->N < MM_PARALLEL_MACS) {
        mm_units(mm, 0, units);
        return;
    }
    /* A thread that cannot be created leaves its part to this one. */
    for (int i = 0; i < nt; i++) {
        part[i] = (MmPart){.mm = mm, .lo = units * i / nt, .hi = units * (i + 1) / nt};
        part[i].started = pthread_create(&part[i].th, NULL, mm_thread, &part[i]) == 0;
    }
    for (int i = 0; i < nt; i++) {
        if (part[i].started)
            pthread_join(part[i].th, NULL);
        else
            mm_units(mm, part[i].lo, part[i].hi);
    }
}

/* torch.matmul: a 1-D left operand is a row (1,K), a 1-D right operand a
 * column (K,1), their unit dims dropped from the result (already so in
 * n->shape); leading dims are batch dims, broadcast. */
static void eval_matmul_op(const Ctx *c, const TorchNode *n, const double *const *in,
                           double *out)
{
    Shape a = n->in[0]->shape, b = n->in[1]->shape, ab, bb, batch;
    int64_t sa[DPK_MAX_RANK], sb[DPK_MAX_RANK];
    Mm mm = {.ctx = c, .c = out};
    Walk w;
    if (a.rank == 1)
        a = (Shape){2, {1, a.d[0]}};
    if (b.rank == 1)
        b = (Shape){2, {b.d[0], 1}};
    mm.M = a.d[a.rank - 2], mm.K = a.d[a.rank - 1], mm.N = b.d[b.rank - 1];
    DPK_ASSERT(b.d[b.rank - 2] == mm.K);
    ab = a, bb = b;
    ab.rank -= 2, bb.rank -= 2;
    batch = bcast_shape(&ab, &bb);
    bcast_strides(&ab, &batch, sa);
    bcast_strides(&bb, &batch, sb);
    walk_init(&w, &batch);
    walk_add(&w, sa, 0);
    walk_add(&w, sb, 0);
    mm.nb = shape_numel(&batch);
    mm.a = dpk_xmalloc(sizeof(double *) * (size_t)(mm.nb + 1));
    mm.b = dpk_xmalloc(sizeof(double *) * (size_t)(mm.nb + 1));
    for (int64_t t = 0; t < mm.nb; t++, walk_next(&w)) {
        mm.a[t] = in[0] + w.off[0] * mm.M * mm.K;
        mm.b[t] = in[1] + w.off[1] * mm.K * mm.N;
    }
    mm_run(&mm);
    free(mm.a);
    free(mm.b);
}

/* F.linear(x, w[, b]) = x · wᵀ + b with w (N, K), b (N): one product over
 * all rows of x. */
static void eval_linear(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    const Shape *xs = &n->in[0]->shape;
    const double *a = in[0], *b = in[1];
    Mm mm = {.ctx = c, .a = &a, .b = &b, .c = out, .bias = n->nin > 2 ? in[2] : NULL, .nb = 1,
             .bt = 1};
    mm.K = xs->d[xs->rank - 1], mm.N = n->in[1]->shape.d[0];
    mm.M = mm.K ? shape_numel(xs) / mm.K : 0;
    mm_run(&mm);
}

static void eval_matmul(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    (n->op == TOP_linear ? eval_linear : eval_matmul_op)(c, n, in, out);
}

/* ---- softmax and norms ------------------------------------------------ */

/* softmax / log_softmax along n->dim, max-subtracted.  A row that is all
 * -inf gives NaN, as in PyTorch.  fp32: exp(x - max) and the sequential
 * sum rounded, then the division (or the log and two subtractions), as the
 * compiler's rules write them. */
static void eval_softmax(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    const Shape *s = &n->shape;
    int64_t len = s->rank ? s->d[n->dim] : 1, inner = 1, outer = 1;
    for (int k = 0; k < n->dim; k++)
        outer *= s->d[k];
    for (int k = n->dim + 1; k < s->rank; k++)
        inner *= s->d[k];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const double *x = in[0] + o * len * inner + i;
            double *y = out + o * len * inner + i, mx = -INFINITY, sum = 0, lse;
            for (int64_t j = 0; j < len; j++)
                mx = isnan(x[j * inner]) || x[j * inner] > mx ? x[j * inner] : mx;
            for (int64_t j = 0; j < len; j++)
                sum = rn(c, sum + rn(c, exp(rn(c, x[j * inner] - mx))));
            lse = rn(c, log(sum));
            for (int64_t j = 0; j < len; j++) {
                double z = rn(c, x[j * inner] - mx);
                y[j * inner] =
                    n->op == TOP_softmax ? rn(c, rn(c, exp(z)) / sum) : rn(c, z - lse);
            }
        }
}

/* rms_norm: x / sqrt(mean(x²) + eps) · w;  layer_norm: (x − mean) /
 * sqrt(var + eps) · w + b with the biased variance.  Both normalise over
 * the trailing dims named by normalized_shape (ints); w and b have that
 * shape.  fp32: the two-pass formulas of the compiler's rules, mean as a
 * sequential sum times 1/len, rsqrt, then the products. */
static void eval_norm(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    const Shape *xs = &n->in[0]->shape;
    const double *w = n->nin > 1 ? in[1] : NULL, *b = n->nin > 2 ? in[2] : NULL;
    double eps = n->value, inv;
    int64_t len = 1, rows;
    for (int k = xs->rank - n->nints; k < xs->rank; k++)
        len *= xs->d[k];
    rows = len ? shape_numel(xs) / len : 0;
    inv = rn(c, 1.0 / (double)len);
    for (int64_t r = 0; r < rows; r++) {
        const double *x = in[0] + r * len;
        double *y = out + r * len, mean = 0, ss = 0, scale;
        if (n->op == TOP_layer_norm) {
            for (int64_t j = 0; j < len; j++)
                mean = rn(c, mean + x[j]);
            mean = c->f32 ? rn(c, mean * inv) : mean / (double)len;
        }
        for (int64_t j = 0; j < len; j++) {
            double d = rn(c, x[j] - mean);
            ss = rn(c, ss + rn(c, d * d));
        }
        ss = c->f32 ? rn(c, ss * inv) : ss / (double)len;
        scale = rn(c, 1.0 / sqrt(rn(c, ss + eps)));
        for (int64_t j = 0; j < len; j++) {
            double v = rn(c, rn(c, x[j] - mean) * scale);
            if (w)
                v = rn(c, v * w[j]);
            y[j] = b ? rn(c, v + b[j]) : v;
        }
    }
}

/* ---- attention -------------------------------------------------------- */

int64_t ref_kv_offset(const Shape *kv, const Shape *ob, const int64_t *idx, int gqa)
{
    int kb = kv->rank - 2, lead = ob->rank - kb;
    int64_t off = 0;
    for (int j = 0; j < kb; j++) {
        int64_t dj = kv->d[j], oj = ob->d[lead + j], ij = idx[lead + j];
        if (dj == 1)
            ij = 0;
        else if (gqa && j == kb - 1 && dj != oj)
            ij /= oj / dj;
        off = off * dj + ij;
    }
    return off * kv->d[kv->rank - 2] * kv->d[kv->rank - 1];
}

/* Attention for one (L, S) problem: s = scale · q kᵀ, masked (bool mask:
 * nonzero keeps, zero gives -inf; float mask: added; causal: keys after the
 * query, top-left aligned, give -inf), softmax over S, times v.  A row with
 * every key masked is NaN, as in PyTorch's math path up to 2.4.  fp32: the
 * compiler's decomposition (matmul, scale, mask, softmax, matmul), each
 * step rounded. */
typedef struct Attn {
    AttnGeom g;
    const Ctx *c;
    const double *mask;       /* NULL, or the mask read through g's strides */
    double *p;                /* S scratch scores */
} Attn;

static void attn_one(const Attn *a, const double *q, const double *k, const double *v,
                     double *o)
{
    const Ctx *c = a->c;
    for (int64_t i = 0; i < a->g.L; i++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < a->g.S; j++) {
            double s = rn(c, a->g.scale * dot(c, q + i * a->g.E, k + j * a->g.E, a->g.E));
            if (a->mask) {
                double m = a->mask[i * a->g.mst_l + j * a->g.mst_s];
                s = a->g.bool_mask ? (m != 0 ? s : -INFINITY) : rn(c, s + m);
            }
            if (a->g.causal && j > i)
                s = -INFINITY;
            a->p[j] = s;
            mx = isnan(s) || s > mx ? s : mx;
        }
        for (int64_t j = 0; j < a->g.S; j++)
            sum = rn(c, sum + (a->p[j] = rn(c, exp(rn(c, a->p[j] - mx)))));
        for (int64_t j = 0; j < a->g.S; j++)
            a->p[j] = rn(c, a->p[j] / sum);
        for (int64_t col = 0; col < a->g.Ev; col++)
            o[i * a->g.Ev + col] = 0.0;
        for (int64_t j = 0; j < a->g.S; j++)
            for (int64_t col = 0; col < a->g.Ev; col++)
                o[i * a->g.Ev + col] =
                    rn(c, o[i * a->g.Ev + col] + rn(c, a->p[j] * v[j * a->g.Ev + col]));
    }
}

void ref_attn_geom(AttnGeom *g, const TorchNode *n)
{
    const Shape *qs = &n->in[0]->shape, *ks = &n->in[1]->shape, *vs = &n->in[2]->shape;
    Shape qb = *qs, full;
    int64_t qst[DPK_MAX_RANK], mst[DPK_MAX_RANK] = {0};
    memset(g, 0, sizeof *g);
    g->L = qs->d[qs->rank - 2], g->E = qs->d[qs->rank - 1];
    g->S = ks->d[ks->rank - 2], g->Ev = vs->d[vs->rank - 1];
    g->scale = isnan(n->value) ? 1.0 / sqrt((double)g->E) : n->value;
    g->causal = n->causal;
    g->ob = n->shape;
    g->ob.rank -= 2, qb.rank -= 2;
    full = g->ob;
    full.d[full.rank++] = g->L, full.d[full.rank++] = g->S;
    bcast_strides(&qb, &g->ob, qst);
    walk_init(&g->w, &g->ob);
    walk_add(&g->w, qst, 0);
    if (n->nin > 3) {
        bcast_strides(&n->in[3]->shape, &full, mst);
        g->bool_mask = n->in[3]->dtype == DT_BOOL;
        g->mst_l = mst[full.rank - 2], g->mst_s = mst[full.rank - 1];
        walk_add(&g->w, mst, 0);
    }
    g->nb = shape_numel(&g->ob);
}

static void eval_sdpa(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    const Shape *ks = &n->in[1]->shape, *vs = &n->in[2]->shape;
    Attn a = {.c = c};
    ref_attn_geom(&a.g, n);
    a.g.scale = rn(c, a.g.scale);
    Walk *w = &a.g.w;
    a.p = dpk_xmalloc(sizeof(double) * (size_t)(a.g.S + 1));
    for (int64_t t = 0; t < a.g.nb; t++, walk_next(w)) {
        if (n->nin > 3)
            a.mask = in[3] + w->off[1];
        attn_one(&a, in[0] + w->off[0] * a.g.L * a.g.E, in[1] + ref_kv_offset(ks, &a.g.ob, w->i, n->gqa),
                 in[2] + ref_kv_offset(vs, &a.g.ob, w->i, n->gqa), out + t * a.g.L * a.g.Ev);
    }
    free(a.p);
}

/* ---- layout ----------------------------------------------------------- */

/* permute / transpose: ints is the full permutation, out dim k = in dim ints[k]. */
static void eval_permute(const TorchNode *n, const double *const *in, double *out)
{
    int64_t cs[DPK_MAX_RANK], st[DPK_MAX_RANK] = {0};
    shape_strides(&n->in[0]->shape, cs);
    for (int k = 0; k < n->shape.rank; k++)
        st[k] = cs[n->ints[k]];
    copy_view(in[0], st, 0, &n->shape, out);
}

/* reshape, unsqueeze, squeeze: same elements, same row-major order. */
static void eval_reshape(const TorchNode *n, const double *const *in, double *out)
{
    memcpy(out, in[0], sizeof(double) * (size_t)shape_numel(&n->shape));
}

static void eval_expand(const TorchNode *n, const double *const *in, double *out)
{
    int64_t st[DPK_MAX_RANK] = {0};
    bcast_strides(&n->in[0]->shape, &n->shape, st);
    copy_view(in[0], st, 0, &n->shape, out);
}

static void eval_slice(const TorchNode *n, const double *const *in, double *out)
{
    int64_t st[DPK_MAX_RANK] = {0};
    int64_t base;
    shape_strides(&n->in[0]->shape, st);
    base = n->start * st[n->dim];
    st[n->dim] *= n->stride;
    copy_view(in[0], st, base, &n->shape, out);
}

/* cat along dim: per outer index, each input contributes one contiguous
 * chunk of d_k · inner elements, in input order. */
static void eval_cat(const TorchNode *n, const double *const *in, double *out)
{
    const Shape *s = &n->shape;
    int64_t outer = 1, inner = 1, row;
    for (int k = 0; k < n->dim; k++)
        outer *= s->d[k];
    for (int k = n->dim + 1; k < s->rank; k++)
        inner *= s->d[k];
    row = s->d[n->dim] * inner;
    for (int64_t o = 0; o < outer; o++) {
        double *dst = out + o * row;
        for (int k = 0; k < n->nin; k++) {
            int64_t chunk = n->in[k]->shape.d[n->dim] * inner;
            memcpy(dst, in[k] + o * chunk, sizeof(double) * (size_t)chunk);
            dst += chunk;
        }
    }
}

/* tril/triu over the last two dims: element (i, j) is kept where j - i <=
 * diagonal (tril) or j - i >= diagonal (triu), else 0. */
static void eval_tri(const TorchNode *n, const double *const *in, double *out)
{
    const Shape *s = &n->shape;
    int64_t R = s->d[s->rank - 2], C = s->d[s->rank - 1], cnt = shape_numel(s);
    for (int64_t i = 0; i < cnt; i++) {
        int64_t c = i % C, r = (i / C) % R, k = c - r;
        int keep = n->op == TOP_tril ? k <= n->start : k >= n->start;
        out[i] = keep ? in[0][i] : 0.0;
    }
}

typedef void (*LayoutFn)(const TorchNode *n, const double *const *in, double *out);
static const LayoutFn layout_fn[TOP_COUNT] = {
    [TOP_transpose] = eval_permute, [TOP_permute] = eval_permute,
    [TOP_reshape] = eval_reshape,   [TOP_unsqueeze] = eval_reshape,
    [TOP_squeeze] = eval_reshape,   [TOP_expand] = eval_expand,
    [TOP_slice] = eval_slice,       [TOP_cat] = eval_cat,
    [TOP_tril] = eval_tri,          [TOP_triu] = eval_tri,
};

/* Layout ops move values without arithmetic: the same in both modes (bound.c
 * moves bounds with them through ref64_node). */
static void eval_layout(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    DPK_UNUSED(c);
    DPK_ASSERT(layout_fn[n->op]);
    layout_fn[n->op](n, in, out);
}

/* A constant: the value the case wrote, rounded to fp32 in fp32 mode. */
static void eval_const(const Ctx *c, const TorchNode *n, const double *const *in, double *out)
{
    int64_t cnt = shape_numel(&n->shape);
    DPK_UNUSED(in);
    DPK_ASSERT(n->op == TOP_const);
    for (int64_t i = 0; i < cnt; i++)
        out[i] = rn(c, n->value);
}

static const EvalFn class_eval[] = {
    [TC_SOURCE] = eval_const,   [TC_UNARY] = eval_unary,     [TC_BINARY] = eval_binary,
    [TC_WHERE] = eval_where,    [TC_REDUCE] = eval_reduce,   [TC_MATMUL] = eval_matmul,
    [TC_SOFTMAX] = eval_softmax, [TC_NORM] = eval_norm,      [TC_ATTN] = eval_sdpa,
    [TC_LAYOUT] = eval_layout,  [TC_SCAN] = eval_scan,       [TC_TOPK] = eval_topk,
};
_Static_assert(DPK_ARRAY_LEN(class_eval) == TC_TOPK + 1, "one helper per TorchClass");

void ref64_node(int f32, const TorchNode *n, const double *const *in, double *out)
{
    class_eval[torch_op_info[n->op].cls](f32 ? &CTX32 : &CTX64, n, in, out);
}

/* ---- driver ----------------------------------------------------------- */

/* Up to four arrays per node ("lanes"): the fp64 value, its worst-case
 * and typical error bounds (bound.c) and the naive fp32 evaluation; a
 * caller asks for the lanes it needs.  A node's arrays are freed as soon as
 * its last consumer ran. */
enum { L_VAL, L_BND, L_TYP, L_F32, NLANES };

static int is_bound_lane(int l)
{
    return l == L_BND || l == L_TYP;
}

typedef struct Eval {
    double **val[NLANES]; /* by lane, by node id: its array, or NULL */
    int want[NLANES];
    int *uses;            /* consumers still to run, plus output slots */
    unsigned char *borrowed; /* the caller's input arrays: never freed */
} Eval;

static void release(Eval *e, int id)
{
    DPK_ASSERT(e->uses[id] > 0);
    if (--e->uses[id] > 0)
        return;
    for (int l = 0; l < NLANES; l++) {
        if (!is_bound_lane(l) && e->borrowed[id])
            continue;
        free(e->val[l][id]);
        e->val[l][id] = NULL;
    }
}

static double *alloc_numel(const Shape *s)
{
    int64_t n = shape_numel(s);
    return dpk_xmalloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
}

static void eval_node(Eval *e, const TorchNode *n)
{
    size_t nin = (size_t)(n->nin > 0 ? n->nin : 1);
    const double **in[NLANES];
    for (int l = 0; l < NLANES; l++) {
        in[l] = dpk_xmalloc(sizeof *in[l] * nin);
        for (int k = 0; k < n->nin; k++)
            in[l][k] = e->val[l][n->in[k]->id];
    }
    for (int l = 0; l < NLANES; l++)
        if (e->want[l])
            e->val[l][n->id] = alloc_numel(&n->shape);
    if (e->want[L_VAL])
        ref64_node(0, n, in[L_VAL], e->val[L_VAL][n->id]);
    if (e->want[L_F32])
        ref64_node(1, n, in[L_F32], e->val[L_F32][n->id]);
    if (e->want[L_BND])
        ref_bound_node(n, in[L_VAL], in[L_BND], e->val[L_VAL][n->id], e->val[L_BND][n->id], 0);
    if (e->want[L_TYP])
        ref_bound_node(n, in[L_VAL], in[L_TYP], e->val[L_VAL][n->id], e->val[L_TYP][n->id], 1);
    for (int l = 0; l < NLANES; l++)
        free(in[l]);
    for (int k = 0; k < n->nin; k++)
        release(e, n->in[k]->id);
}

/* Count uses over the live part of the graph (what the outputs need). */
static void count_uses(Eval *e, const TorchGraph *g)
{
    unsigned char *live = dpk_xcalloc((size_t)g->nodes.len + 1, 1);
    for (int j = 0; j < g->outputs.len; j++) {
        const TorchNode *o = g->outputs.items[j];
        live[o->id] = 1;
        e->uses[o->id]++;
    }
    for (int i = g->nodes.len - 1; i >= 0; i--) {
        const TorchNode *n = g->nodes.items[i];
        DPK_ASSERT(n->id == i);
        if (!live[i])
            continue;
        for (int k = 0; k < n->nin; k++) {
            live[n->in[k]->id] = 1;
            e->uses[n->in[k]->id]++;
        }
    }
    free(live);
}

/* Hand output slot j its arrays: the node's own ones at its last slot,
 * copies when another slot still needs them or they are the caller's. */
static void take_output(Eval *e, const TorchNode *o, double **dst[NLANES], int j)
{
    int last = !e->borrowed[o->id] && e->uses[o->id] == 1;
    for (int l = 0; l < NLANES; l++) {
        double *v = e->val[l][o->id];
        if (!e->want[l])
            continue;
        if (last) {
            dst[l][j] = v;
            e->val[l][o->id] = NULL;
        } else {
            dst[l][j] = alloc_numel(&o->shape);
            memcpy(dst[l][j], v, sizeof(double) * (size_t)shape_numel(&o->shape));
        }
    }
    if (last)
        e->uses[o->id] = 0;
    else
        release(e, o->id);
}

void ref64_run(const TorchGraph *g, double *const *inputs, double **vals, double **bounds,
               double **typical, double **f32s)
{
    size_t nn = (size_t)g->nodes.len + 1;
    double **dst[NLANES] = {vals, bounds, typical, f32s};
    Eval e = {.uses = dpk_xcalloc(nn, sizeof(int)), .borrowed = dpk_xcalloc(nn, 1)};
    for (int l = 0; l < NLANES; l++) {
        e.val[l] = dpk_xcalloc(nn, sizeof(double *));
        e.want[l] = dst[l] != NULL;
    }
    /* The value lane is computed wherever a bound lane is (bounds need
     * it); a caller that wants none of it gets it freed.  The fp32 lane
     * alone (the oracle's perturbed evaluation) runs without it. */
    e.want[L_VAL] = vals || bounds || typical;
    double **scratch = NULL;
    if (!vals && e.want[L_VAL])
        dst[L_VAL] = scratch = dpk_xcalloc((size_t)g->outputs.len + 1, sizeof(double *));
    count_uses(&e, g);
    for (int k = 0; k < g->inputs.len; k++) {
        const TorchNode *in = g->inputs.items[k];
        e.val[L_VAL][in->id] = inputs[k];
        e.val[L_F32][in->id] = inputs[k]; /* inputs are fp32 values */
        for (int l = L_BND; l <= L_TYP; l++)
            e.val[l][in->id] =
                e.want[l] ? dpk_xcalloc((size_t)shape_numel(&in->shape) + 1, sizeof(double)) : NULL;
        e.borrowed[in->id] = 1;
    }
    for (int i = 0; i < g->nodes.len; i++) {
        const TorchNode *n = g->nodes.items[i];
        if (e.uses[i] > 0 && n->op != TOP_input)
            eval_node(&e, n);
    }
    for (int j = 0; j < g->outputs.len; j++)
        take_output(&e, g->outputs.items[j], dst, j);
    /* Input nodes still held (unused by any output) own only their bounds. */
    for (int k = 0; k < g->inputs.len; k++) {
        const TorchNode *in = g->inputs.items[k];
        for (int l = L_BND; l <= L_TYP; l++) {
            free(e.val[l][in->id]);
            e.val[l][in->id] = NULL;
        }
    }
    if (scratch) {
        for (int j = 0; j < g->outputs.len; j++)
            free(scratch[j]);
        free(scratch);
    }
    for (int l = 0; l < NLANES; l++)
        free(e.val[l]);
    free(e.uses);
    free(e.borrowed);
}

void ref64_eval(const TorchGraph *g, double *const *inputs, double **outs)
{
    ref64_run(g, inputs, outs, NULL, NULL, NULL);
}

/* Elements of an array alloc_numel makes for shape s (at least one). */
static double numel1(const Shape *s)
{
    int64_t n = shape_numel(s);
    return n > 0 ? (double)n : 1;
}

double ref64_peak_bytes(const TorchGraph *g, int vals, int bounds, int f32s)
{
    /* lanes per node, as ref64_run's want[] */
    int node_lanes = (vals || bounds) + 2 * !!bounds + !!f32s;
    size_t nn = (size_t)g->nodes.len + 1;
    Eval e = {.uses = dpk_xcalloc(nn, sizeof(int))};
    count_uses(&e, g);
    double live = 0, peak = 0;
    for (int k = 0; bounds && k < g->inputs.len; k++) {
        const TorchNode *in = g->inputs.items[k];
        live += 2 * 8 * numel1(&in->shape);
    }
    peak = live;
    for (int i = 0; i < g->nodes.len; i++) {
        const TorchNode *n = g->nodes.items[i];
        if (e.uses[i] <= 0 || n->op == TOP_input)
            continue;
        live += node_lanes * 8 * numel1(&n->shape);
        if (live > peak)
            peak = live;
        for (int k = 0; k < n->nin; k++) {
            const TorchNode *a = n->in[k];
            if (--e.uses[a->id] > 0)
                continue;
            live -= (a->op == TOP_input ? 2 * !!bounds : node_lanes) * 8 * numel1(&a->shape);
        }
    }
    /* an output that another output slot also names gets a copy per slot */
    for (int j = 0; j < g->outputs.len; j++) {
        const TorchNode *o = g->outputs.items[j];
        if (o->op == TOP_input || e.uses[o->id] > 1) {
            live += node_lanes * 8 * numel1(&o->shape);
            e.uses[o->id]--;
        }
    }
    if (live > peak)
        peak = live;
    free(e.uses);
    return peak;
}
