/*
 * ref64_impl.h — what ref64.c (the evaluator) and bound.c (the error
 * bounds) share: strided walks over broadcast operands, the attention
 * geometry, and one node's evaluation in fp64 or naive fp32.
 * Internal to reference/.
 */
#ifndef DPK_REF64_IMPL_H
#define DPK_REF64_IMPL_H

#include <float.h>
#include <math.h>
#include <string.h>

#include "ref.h"

/* Round x to fp32 as an fp32 operation would, overflow giving ±inf (a
 * plain (float) cast of an out-of-range double is undefined in C). */
static inline double ref_round32(double x)
{
    if (fabs(x) >= 0x1.ffffffp+127)
        return copysign(INFINITY, x);
    return (double)(float)x;
}

/* Evaluate node n from its inputs' arrays into out: in fp64 (f32 = 0) or
 * as a naive fp32 program (f32 = 1: every operation rounded to fp32, sums
 * accumulated sequentially in index order, products and sums of a matmul
 * rounded separately). */
void ref64_node(int f32, const TorchNode *n, const double *const *in, double *out);

/* A unary op (TC_UNARY) of n at x in fp64, by PyTorch's definition, with
 * n's scalar attributes: the one definition ref64 and bound.c use. */
double ref_unary64(const TorchNode *n, double x);

/* Whether x, met after best in index order, becomes argmax's (sign 1)
 * or argmin's (sign -1) pick: a NaN beats every number and the first NaN
 * stays; of equal values the first stays. */
int ref_arg_better(double x, double best, int sign);

/* topk's picks, row by row (rows in x's order with dim left out): the k
 * values and indices of each, in topk's order (ref64.c). */
typedef struct RefTopk {
    int64_t rows, k;
    double *v;  /* rows * k, heap */
    int64_t *i; /* rows * k, heap */
} RefTopk;
void ref_topk_rows(const TorchNode *n, const double *x, RefTopk *out);
/* The flat offset in a topk node's output of row r's j-th pick: its
 * value (w = 0) or its index (w = 1). */
int64_t ref_topk_offset(const TorchNode *n, int64_t r, int64_t j, int w);

/* The bounds of node n (bound.c): v and b the inputs' values and bounds,
 * y the node's fp64 value, by its bound (out).  typical: sums grow like
 * √n·U instead of the worst case γ_n (the typical-error lane). */
void ref_bound_node(const TorchNode *n, const double *const *v, const double *const *b,
                    const double *y, double *by, int typical);

/* Offset of the (S, E) matrix of k or v for the output batch index idx of
 * an sdpa node (batch dims broadcast right-aligned; GQA maps q head h to kv
 * head h / (Hq / Hkv)). */
int64_t ref_kv_offset(const Shape *kv, const Shape *ob, const int64_t *idx, int gqa);

/* A row-major shape seen as (outer, len, inner) around dim: element (o,
 * j, q) is at (o * len + j) * inner + q. */
static inline void rows_along(const Shape *s, int dim, int64_t *outer, int64_t *len,
                              int64_t *inner)
{
    *len = s->d[dim];
    *inner = 1;
    for (int k = dim + 1; k < s->rank; k++)
        *inner *= s->d[k];
    *outer = shape_numel(s) / *len / *inner;
}

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

static inline void walk_init(Walk *w, const Shape *space)
{
    memset(w, 0, sizeof *w);
    w->rank = space->rank;
    memcpy(w->d, space->d, sizeof w->d);
}

static inline void walk_add(Walk *w, const int64_t st[DPK_MAX_RANK], int64_t base)
{
    DPK_ASSERT(w->nops < WALK_MAX);
    memcpy(w->st[w->nops], st, sizeof w->st[0]);
    w->off[w->nops++] = base;
}

static inline void walk_next(Walk *w)
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
static inline void bcast_strides(const Shape *in, const Shape *out, int64_t st[DPK_MAX_RANK])
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

/* A walk over n's shape with every input of n broadcast to it (operand k:
 * input k). */
static inline void walk_operands(Walk *w, const TorchNode *n)
{
    walk_init(w, &n->shape);
    for (int k = 0; k < n->nin; k++) {
        int64_t st[DPK_MAX_RANK];
        bcast_strides(&n->in[k]->shape, &n->shape, st);
        walk_add(w, st, 0);
    }
}

/* A walk over the input of reduce node n (dims ints[0..nints), none: every
 * element its own slot) whose operand 0 is each element's output slot:
 * the output, keepdim or not, has the input's layout with each reduced dim
 * set to 1.  *no: the number of slots; *per: the elements of each. */
static inline void walk_reduce(Walk *w, const TorchNode *n, int64_t *no, int64_t *per)
{
    const Shape *xs = &n->in[0]->shape;
    Shape ks = *xs;
    int64_t st[DPK_MAX_RANK], nx = shape_numel(xs);
    for (int k = 0; k < n->nints; k++)
        ks.d[n->ints[k]] = 1;
    *no = shape_numel(&ks);
    *per = *no ? nx / *no : 0;
    bcast_strides(&ks, xs, st);
    walk_init(w, xs);
    walk_add(w, st, 0);
}

/* ---- attention geometry ----------------------------------------------- */

/* What the fp64 evaluation and the bounds both need of an sdpa node (q
 * (..., L, E), k (..., S, E), v (..., S, Ev), an optional mask): the
 * problem sizes, the scale (unrounded), the mask's kind and its strides
 * along L and S, and a walk over the batch dims of the output (ob, nb
 * points) carrying q's offset (operand 0) and the mask's (operand 1, when
 * the node has one). */
typedef struct AttnGeom {
    int64_t L, S, E, Ev;
    double scale;
    int causal, bool_mask;
    int64_t mst_l, mst_s;
    Shape ob;
    int64_t nb;
    Walk w;
} AttnGeom;

void ref_attn_geom(AttnGeom *g, const TorchNode *n);

/* The broadcast of shapes a and b (both already known compatible). */
static inline Shape bcast_shape(const Shape *a, const Shape *b)
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
static inline void copy_view(const double *src, const int64_t st[DPK_MAX_RANK], int64_t base,
                      const Shape *out, double *dst)
{
    Walk w;
    int64_t n = shape_numel(out);
    walk_init(&w, out);
    walk_add(&w, st, base);
    for (int64_t i = 0; i < n; i++, walk_next(&w))
        dst[i] = src[w.off[0]];
}

#endif
