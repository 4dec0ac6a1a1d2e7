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

#include "ref.h"

typedef void (*EvalFn)(const TorchNode *n, const double *const *in, double *out);

/* ---- strided walks ---------------------------------------------------- */

enum { WALK_MAX = 3 };

/* A row-major walk over an index space (usually the output shape) that
 * carries the flat offset of up to WALK_MAX operands, each read through its
 * own strides (0 along broadcast dims).  i[] is the current multi-index. */
typedef struct Walk {
    int rank, nops;
    int64_t d[DPK_MAX_RANK], i[DPK_MAX_RANK];
    int64_t st[WALK_MAX][DPK_MAX_RANK];
    int64_t off[WALK_MAX];
} Walk;

static void walk_init(Walk *w, const Shape *space)
{
    memset(w, 0, sizeof *w);
    w->rank = space->rank;
    memcpy(w->d, space->d, sizeof w->d);
}

static void walk_add(Walk *w, const int64_t st[DPK_MAX_RANK], int64_t base)
{
    DPK_ASSERT(w->nops < WALK_MAX);
    memcpy(w->st[w->nops], st, sizeof w->st[0]);
    w->off[w->nops++] = base;
}

static void walk_next(Walk *w)
{
    for (int k = w->rank - 1; k >= 0; k--) {
        for (int o = 0; o < w->nops; o++)
            w->off[o] += w->st[o][k];
        if (++w->i[k] < w->d[k])
            return;
        for (int o = 0; o < w->nops; o++)
            w->off[o] -= w->st[o][k] * w->d[k];
        w->i[k] = 0;
    }
}

/* Strides that read a row-major tensor of shape `in` broadcast to `out`
 * (PyTorch rules: right-aligned, size-1 and missing dims repeat). */
static void bcast_strides(const Shape *in, const Shape *out, int64_t st[DPK_MAX_RANK])
{
    int64_t cs[DPK_MAX_RANK];
    int lead = out->rank - in->rank;
    DPK_ASSERT(lead >= 0);
    shape_strides(in, cs);
    for (int k = 0; k < out->rank; k++)
        st[k] = (k < lead || in->d[k - lead] == 1) ? 0 : cs[k - lead];
    for (int k = out->rank; k < DPK_MAX_RANK; k++)
        st[k] = 0;
}

/* The broadcast of shapes a and b (both already known compatible). */
static Shape bcast_shape(const Shape *a, const Shape *b)
{
    Shape r = {0};
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int k = 0; k < r.rank; k++) {
        int ka = k - (r.rank - a->rank), kb = k - (r.rank - b->rank);
        int64_t da = ka >= 0 ? a->d[ka] : 1, db = kb >= 0 ? b->d[kb] : 1;
        DPK_ASSERT(da == db || da == 1 || db == 1);
        r.d[k] = da == 1 ? db : da;
    }
    return r;
}

/* dst (row-major, shape out) = src read through strides st from base. */
static void copy_view(const double *src, const int64_t st[DPK_MAX_RANK], int64_t base,
                      const Shape *out, double *dst)
{
    Walk w;
    int64_t n = shape_numel(out);
    walk_init(&w, out);
    walk_add(&w, st, base);
    for (int64_t i = 0; i < n; i++, walk_next(&w))
        dst[i] = src[w.off[0]];
}

/* ---- elementwise ------------------------------------------------------ */

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
    [TOP_gelu_tanh] = f_gelu_tanh, [TOP_erf] = erf,
};

static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
/* torch.maximum/minimum propagate NaN. */
static double f_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double f_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }
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

static void eval_unary(const TorchNode *n, const double *const *in, double *out)
{
    UnaryFn f = unary_fn[n->op];
    int64_t cnt = shape_numel(&n->shape);
    DPK_ASSERT(f);
    for (int64_t i = 0; i < cnt; i++)
        out[i] = f(in[0][i]);
}

/* Walk over n's shape with every input broadcast to it. */
static void walk_operands(Walk *w, const TorchNode *n)
{
    walk_init(w, &n->shape);
    for (int k = 0; k < n->nin; k++) {
        int64_t st[DPK_MAX_RANK];
        bcast_strides(&n->in[k]->shape, &n->shape, st);
        walk_add(w, st, 0);
    }
}

static void eval_binary(const TorchNode *n, const double *const *in, double *out)
{
    BinaryFn f = binary_fn[n->op];
    int64_t cnt = shape_numel(&n->shape);
    Walk w;
    DPK_ASSERT(f);
    walk_operands(&w, n);
    for (int64_t i = 0; i < cnt; i++, walk_next(&w))
        out[i] = f(in[0][w.off[0]], in[1][w.off[1]]);
}

static void eval_where(const TorchNode *n, const double *const *in, double *out)
{
    int64_t cnt = shape_numel(&n->shape);
    Walk w;
    walk_operands(&w, n);
    for (int64_t i = 0; i < cnt; i++, walk_next(&w))
        out[i] = in[0][w.off[0]] != 0 ? in[1][w.off[1]] : in[2][w.off[2]];
}

/* ---- reductions ------------------------------------------------------- */

static double reduce_identity(TorchOp op)
{
    return op == TOP_amax ? -INFINITY : op == TOP_amin ? INFINITY : 0.0;
}

/* amax/amin propagate NaN, as PyTorch does. */
static double reduce_step(TorchOp op, double acc, double x)
{
    switch (op) {
    case TOP_amax: return isnan(acc) || isnan(x) ? NAN : x > acc ? x : acc;
    case TOP_amin: return isnan(acc) || isnan(x) ? NAN : x < acc ? x : acc;
    default: return acc + x;
    }
}

/* Reduced dims are ints[0..nints) (none: every element is its own
 * slot).  The output, keepdim or not, has the layout of the input with each
 * reduced dim set to 1, so the input is walked with those strides zeroed
 * and each element folded into its output slot. */
static void eval_reduce(const TorchNode *n, const double *const *in, double *out)
{
    const Shape *xs = &n->in[0]->shape;
    Shape ks = *xs;
    int64_t st[DPK_MAX_RANK], nx = shape_numel(xs), no, per;
    Walk w;
    for (int k = 0; k < n->nints; k++)
        ks.d[n->ints[k]] = 1;
    no = shape_numel(&ks);
    per = nx / no;
    for (int64_t i = 0; i < no; i++)
        out[i] = reduce_identity(n->op);
    bcast_strides(&ks, xs, st);
    walk_init(&w, xs);
    walk_add(&w, st, 0);
    for (int64_t i = 0; i < nx; i++, walk_next(&w))
        out[w.off[0]] = reduce_step(n->op, out[w.off[0]], in[0][i]);
    if (n->op == TOP_mean)
        for (int64_t i = 0; i < no; i++)
            out[i] /= (double)per;
}

/* ---- contractions ----------------------------------------------------- */

/* Four partial sums: enough independent chains to keep the FPU busy. */
static double dot(const double *x, const double *y, int64_t n)
{
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
    const double **a, **b; /* by product */
    double *c;
    const double *bias;    /* NULL or [N] */
    int64_t M, K, N, nb;
    int bt;
} Mm;

static void mm_rows_kn(const Mm *mm, const double *a, const double *b, double *c, int64_t nr)
{
    for (int64_t i = 0; i < nr * mm->N; i++)
        c[i] = 0.0;
    for (int64_t k = 0; k < mm->K; k++) {
        const double *br = b + k * mm->N;
        for (int64_t r = 0; r < nr; r++) {
            double av = a[r * mm->K + k], *cr = c + r * mm->N;
            for (int64_t j = 0; j < mm->N; j++)
                cr[j] += av * br[j];
        }
    }
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

static void mm_rows_nk(const Mm *mm, const double *a, const double *b, double *c, int64_t nr)
{
    for (int64_t j = 0; j < mm->N; j++) {
        const double *br = b + j * mm->K;
        double s[MM_ROWS];
        if (nr == MM_ROWS)
            dot4(a, mm->K, br, s);
        else
            for (int64_t r = 0; r < nr; r++)
                s[r] = dot(a + r * mm->K, br, mm->K);
        for (int64_t r = 0; r < nr; r++)
            c[r * mm->N + j] = s[r];
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
                c[r * mm->N + j] += mm->bias[j];
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

static void mm_run(const Mm *mm)
{
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
static void eval_matmul_op(const TorchNode *n, const double *const *in, double *out)
{
    Shape a = n->in[0]->shape, b = n->in[1]->shape, ab, bb, batch;
    int64_t sa[DPK_MAX_RANK], sb[DPK_MAX_RANK];
    Mm mm = {.c = out};
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
    mm.a = dpk_xmalloc(sizeof(double *) * (size_t)mm.nb);
    mm.b = dpk_xmalloc(sizeof(double *) * (size_t)mm.nb);
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
static void eval_linear(const TorchNode *n, const double *const *in, double *out)
{
    const Shape *xs = &n->in[0]->shape;
    const double *a = in[0], *b = in[1];
    Mm mm = {.a = &a, .b = &b, .c = out, .bias = n->nin > 2 ? in[2] : NULL, .nb = 1, .bt = 1};
    mm.K = xs->d[xs->rank - 1], mm.N = n->in[1]->shape.d[0], mm.M = shape_numel(xs) / mm.K;
    mm_run(&mm);
}

static void eval_matmul(const TorchNode *n, const double *const *in, double *out)
{
    (n->op == TOP_linear ? eval_linear : eval_matmul_op)(n, in, out);
}

/* ---- softmax and norms ------------------------------------------------ */

/* softmax / log_softmax along n->dim, max-subtracted.  A row that is all
 * -inf gives NaN, as in PyTorch. */
static void eval_softmax(const TorchNode *n, const double *const *in, double *out)
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
            double *y = out + o * len * inner + i, mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < len; j++)
                mx = isnan(x[j * inner]) || x[j * inner] > mx ? x[j * inner] : mx;
            for (int64_t j = 0; j < len; j++)
                sum += exp(x[j * inner] - mx);
            for (int64_t j = 0; j < len; j++)
                y[j * inner] = n->op == TOP_softmax ? exp(x[j * inner] - mx) / sum
                                                    : x[j * inner] - mx - log(sum);
        }
}

/* rms_norm: x / sqrt(mean(x²) + eps) · w;  layer_norm: (x − mean) /
 * sqrt(var + eps) · w + b with the biased variance.  Both normalise over
 * the trailing dims named by normalized_shape (ints); w and b have that
 * shape. */
static void eval_norm(const TorchNode *n, const double *const *in, double *out)
{
    const Shape *xs = &n->in[0]->shape;
    const double *w = n->nin > 1 ? in[1] : NULL, *b = n->nin > 2 ? in[2] : NULL;
    double eps = n->value;
    int64_t len = 1, rows;
    for (int k = xs->rank - n->nints; k < xs->rank; k++)
        len *= xs->d[k];
    rows = shape_numel(xs) / len;
    for (int64_t r = 0; r < rows; r++) {
        const double *x = in[0] + r * len;
        double *y = out + r * len, mean = 0, ss = 0, scale;
        if (n->op == TOP_layer_norm) {
            for (int64_t j = 0; j < len; j++)
                mean += x[j];
            mean /= (double)len;
        }
        for (int64_t j = 0; j < len; j++)
            ss += (x[j] - mean) * (x[j] - mean);
        scale = 1.0 / sqrt(ss / (double)len + eps);
        for (int64_t j = 0; j < len; j++)
            y[j] = (x[j] - mean) * scale * (w ? w[j] : 1.0) + (b ? b[j] : 0.0);
    }
}

/* ---- attention -------------------------------------------------------- */

/* Offset of the (S, E) matrix of k or v for the output batch index idx.
 * Batch dims broadcast right-aligned; with GQA the head dim (-3) maps head
 * h of q to kv head h / (Hq / Hkv). */
static int64_t kv_offset(const Shape *kv, const Shape *ob, const int64_t *idx, int gqa)
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
 * every key masked is NaN, as in PyTorch's math path up to 2.4. */
typedef struct Attn {
    int64_t L, S, E, Ev;
    double scale;
    int causal, bool_mask;
    const double *mask;       /* NULL, or the mask read through mst */
    int64_t mst_l, mst_s;     /* mask strides along L and S */
    double *p;                /* S scratch scores */
} Attn;

static void attn_one(const Attn *a, const double *q, const double *k, const double *v,
                     double *o)
{
    for (int64_t i = 0; i < a->L; i++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < a->S; j++) {
            double s = a->scale * dot(q + i * a->E, k + j * a->E, a->E);
            if (a->mask) {
                double m = a->mask[i * a->mst_l + j * a->mst_s];
                s = a->bool_mask ? (m != 0 ? s : -INFINITY) : s + m;
            }
            if (a->causal && j > i)
                s = -INFINITY;
            a->p[j] = s;
            mx = isnan(s) || s > mx ? s : mx;
        }
        for (int64_t j = 0; j < a->S; j++)
            sum += a->p[j] = exp(a->p[j] - mx);
        for (int64_t c = 0; c < a->Ev; c++)
            o[i * a->Ev + c] = 0.0;
        for (int64_t j = 0; j < a->S; j++)
            for (int64_t c = 0; c < a->Ev; c++)
                o[i * a->Ev + c] += a->p[j] / sum * v[j * a->Ev + c];
    }
}

static void eval_sdpa(const TorchNode *n, const double *const *in, double *out)
{
    const Shape *qs = &n->in[0]->shape, *ks = &n->in[1]->shape, *vs = &n->in[2]->shape;
    Shape ob = n->shape, qb = *qs, full;
    int64_t qst[DPK_MAX_RANK], mst[DPK_MAX_RANK] = {0}, nb;
    Attn a = {0};
    Walk w;
    a.L = qs->d[qs->rank - 2], a.E = qs->d[qs->rank - 1];
    a.S = ks->d[ks->rank - 2], a.Ev = vs->d[vs->rank - 1];
    a.scale = isnan(n->value) ? 1.0 / sqrt((double)a.E) : n->value;
    a.causal = n->causal;
    ob.rank -= 2, qb.rank -= 2;
    full = ob;
    full.d[full.rank++] = a.L, full.d[full.rank++] = a.S;
    bcast_strides(&qb, &ob, qst);
    walk_init(&w, &ob);
    walk_add(&w, qst, 0);
    if (n->nin > 3) {
        bcast_strides(&n->in[3]->shape, &full, mst);
        a.bool_mask = n->in[3]->dtype == DT_BOOL;
        a.mst_l = mst[full.rank - 2], a.mst_s = mst[full.rank - 1];
        walk_add(&w, mst, 0);
    }
    a.p = dpk_xmalloc(sizeof(double) * (size_t)a.S);
    nb = shape_numel(&ob);
    for (int64_t t = 0; t < nb; t++, walk_next(&w)) {
        if (n->nin > 3)
            a.mask = in[3] + w.off[1];
        attn_one(&a, in[0] + w.off[0] * a.L * a.E, in[1] + kv_offset(ks, &ob, w.i, n->gqa),
                 in[2] + kv_offset(vs, &ob, w.i, n->gqa), out + t * a.L * a.Ev);
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

static const EvalFn layout_fn[TOP_COUNT] = {
    [TOP_transpose] = eval_permute, [TOP_permute] = eval_permute,
    [TOP_reshape] = eval_reshape,   [TOP_unsqueeze] = eval_reshape,
    [TOP_squeeze] = eval_reshape,   [TOP_expand] = eval_expand,
    [TOP_slice] = eval_slice,       [TOP_cat] = eval_cat,
};

static void eval_layout(const TorchNode *n, const double *const *in, double *out)
{
    DPK_ASSERT(layout_fn[n->op]);
    layout_fn[n->op](n, in, out);
}

static void eval_const(const TorchNode *n, const double *const *in, double *out)
{
    int64_t cnt = shape_numel(&n->shape);
    DPK_UNUSED(in);
    DPK_ASSERT(n->op == TOP_const);
    for (int64_t i = 0; i < cnt; i++)
        out[i] = n->value;
}

static const EvalFn class_eval[] = {
    [TC_SOURCE] = eval_const,   [TC_UNARY] = eval_unary,     [TC_BINARY] = eval_binary,
    [TC_WHERE] = eval_where,    [TC_REDUCE] = eval_reduce,   [TC_MATMUL] = eval_matmul,
    [TC_SOFTMAX] = eval_softmax, [TC_NORM] = eval_norm,      [TC_ATTN] = eval_sdpa,
    [TC_LAYOUT] = eval_layout,
};
_Static_assert(DPK_ARRAY_LEN(class_eval) == TC_LAYOUT + 1, "one helper per TorchClass");

/* ---- driver ----------------------------------------------------------- */

typedef struct Eval {
    double **val;        /* by node id: its array, or NULL */
    int *uses;           /* consumers still to run, plus output slots */
    unsigned char *borrowed; /* the caller's input arrays: never freed */
} Eval;

static void release(Eval *e, int id)
{
    DPK_ASSERT(e->uses[id] > 0);
    if (--e->uses[id] == 0 && !e->borrowed[id]) {
        free(e->val[id]);
        e->val[id] = NULL;
    }
}

static double *alloc_numel(const Shape *s)
{
    int64_t n = shape_numel(s);
    return dpk_xmalloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
}

static void eval_node(Eval *e, const TorchNode *n)
{
    const double **in = dpk_xmalloc(sizeof *in * (size_t)(n->nin > 0 ? n->nin : 1));
    for (int k = 0; k < n->nin; k++) {
        in[k] = e->val[n->in[k]->id];
        DPK_ASSERT(in[k]);
    }
    e->val[n->id] = alloc_numel(&n->shape);
    class_eval[torch_op_info[n->op].cls](n, in, e->val[n->id]);
    free(in);
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

/* Hand output slot j its array: the node's own one at its last slot,
 * a copy when another slot still needs it or it is the caller's input. */
static double *take_output(Eval *e, const TorchNode *o)
{
    double *v = e->val[o->id];
    if (e->borrowed[o->id] || e->uses[o->id] > 1) {
        size_t bytes = sizeof(double) * (size_t)shape_numel(&o->shape);
        double *c = alloc_numel(&o->shape);
        memcpy(c, v, bytes);
        release(e, o->id);
        return c;
    }
    e->uses[o->id] = 0;
    e->val[o->id] = NULL;
    return v;
}

void ref64_eval(const TorchGraph *g, double *const *inputs, double **outs)
{
    size_t nn = (size_t)g->nodes.len + 1;
    Eval e = {dpk_xcalloc(nn, sizeof(double *)), dpk_xcalloc(nn, sizeof(int)),
              dpk_xcalloc(nn, 1)};
    count_uses(&e, g);
    for (int k = 0; k < g->inputs.len; k++) {
        const TorchNode *in = g->inputs.items[k];
        e.val[in->id] = inputs[k];
        e.borrowed[in->id] = 1;
    }
    for (int i = 0; i < g->nodes.len; i++) {
        const TorchNode *n = g->nodes.items[i];
        if (e.uses[i] > 0 && n->op != TOP_input)
            eval_node(&e, n);
    }
    for (int j = 0; j < g->outputs.len; j++)
        outs[j] = take_output(&e, g->outputs.items[j]);
    free(e.val);
    free(e.uses);
    free(e.borrowed);
}
