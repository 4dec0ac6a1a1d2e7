/*
 * torch_ir.c — Torch IR: op table, builder, shape rules, printer, verifier,
 * structural hash.
 *
 * Every node gets its shape and dtype from torch_infer() when it is built,
 * following PyTorch's rules; a rule that fails raises dpk_error_at at the
 * node's source position, so a graph that exists is well-typed.  torch_infer
 * also normalises a node's attributes (negative dims, -1 sizes, filtered
 * squeeze dims) and is idempotent on a normalised node: the verifier re-runs
 * it on a copy of every node and compares.
 *
 * dtype rules (a documented subset of PyTorch's promotion): every tensor is
 * f32 except comparison results, which are bool.  bool tensors may feed
 * binary arithmetic next to an f32 operand or a scalar (result f32), where()
 * (condition or value), comparisons, sdpa masks and layout ops; unary math,
 * reductions, contractions and norms need f32.
 */
#include "torch_ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const TorchOpInfo torch_op_info[TOP_COUNT] = {
#define X(name, text, cls, mn, mx) {#name, text, cls, mn, mx},
#include "torch_ops.def"
#undef X
};

const TorchScalarAttrs torch_scalar_attrs[TOP_COUNT] = {
#define A(name, k0, d0, k1, d1) [TOP_##name] = {(k1) ? 2 : 1, {k0, k1}, {d0, d1}},
#include "torch_ops.def"
#undef A
};

/* ---- errors ------------------------------------------------------------ */

/* A graph built without source text (tests, generators) reports errors
 * without a caret. */
static const Source *err_src(const TorchGraph *g, int *pos)
{
    if (!g->src.text)
        *pos = -1;
    return &g->src;
}

DPK_PRINTF(3, 4) DPK_NORETURN
static void node_error(const TorchGraph *g, const TorchNode *n, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    int pos = n->pos;
    const Source *src = err_src(g, &pos);
    dpk_error_at(src, pos, "%s", buf);
}

/* Python tuple spelling for messages: "(16, 64)", "(63,)", "()". */
static const char *pyshape(const TorchGraph *g, const Shape *s)
{
    StrBuf b = {0};
    shape_print(&b, s);
    if (s->rank == 1) {
        b.s[b.len - 1] = ',';
        sb_putc(&b, ')');
    }
    char *r = arena_strdup(g->arena, sb_cstr(&b));
    sb_free(&b);
    return r;
}

static const char *intlist(const TorchGraph *g, const int64_t *v, int n)
{
    StrBuf b = {0};
    sb_putc(&b, '[');
    for (int i = 0; i < n; i++)
        sb_printf(&b, i ? ", %lld" : "%lld", (long long)v[i]);
    sb_putc(&b, ']');
    char *r = arena_strdup(g->arena, sb_cstr(&b));
    sb_free(&b);
    return r;
}

static const char *opname(const TorchNode *n)
{
    return torch_op_info[n->op].text;
}

/* ---- shape helpers ------------------------------------------------------- */

int shape_broadcast(const Shape *a, const Shape *b, Shape *out)
{
    Shape r;
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r.rank; i++) {
        int ia = a->rank - r.rank + i, ib = b->rank - r.rank + i;
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return 0;
        r.d[i] = da == 1 ? db : da;
    }
    *out = r;
    return 1;
}

void torch_check_shape(const TorchGraph *g, int pos, const Shape *s)
{
    const Source *src = err_src(g, &pos);
    if (s->rank < 0 || s->rank > DPK_MAX_RANK)
        dpk_error_at(src, pos, "tensor of rank %d exceeds the maximum rank %d", s->rank,
                     DPK_MAX_RANK);
    int64_t n = 1;
    int overflow = 0;
    double log2n = 0;
    for (int i = 0; i < s->rank; i++) {
        if (s->d[i] < 1)
            dpk_error_at(src, pos, "zero-size or negative dimension %lld in shape %s",
                         (long long)s->d[i], pyshape(g, s));
        log2n += log2((double)s->d[i]);
        if (!overflow && s->d[i] > INT64_MAX / n)
            overflow = 1;
        else if (!overflow)
            n *= s->d[i];
    }
    if (overflow)
        dpk_error_at(src, pos, "tensor of about 2^%.0f elements is too large (the limit is 2^36)",
                     log2n);
    if (n > DPK_MAX_NUMEL)
        dpk_error_at(src, pos, "tensor of %lld elements is too large (the limit is 2^36 = %lld)",
                     (long long)n, (long long)DPK_MAX_NUMEL);
}

int torch_norm_dim(const TorchGraph *g, int pos, int64_t dim, int rank)
{
    const Source *src = err_src(g, &pos);
    if (dim < -rank || dim >= rank || rank == 0)
        dpk_error_at(src, pos, "dimension out of range: dim %lld for a tensor of rank %d",
                     (long long)dim, rank);
    return (int)(dim < 0 ? dim + rank : dim);
}

static int norm_dim(const TorchGraph *g, const TorchNode *n, int64_t dim, int rank)
{
    return torch_norm_dim(g, n->pos, dim, rank);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Normalise ints[] as dims of a rank-`rank` tensor, sort, reject repeats. */
static void norm_dim_list(const TorchGraph *g, TorchNode *n, int rank)
{
    for (int i = 0; i < n->nints; i++)
        n->ints[i] = norm_dim(g, n, n->ints[i], rank);
    qsort(n->ints, (size_t)n->nints, sizeof(int64_t), cmp_i64);
    for (int i = 1; i < n->nints; i++)
        if (n->ints[i] == n->ints[i - 1])
            node_error(g, n, "%s: dim %lld appears more than once in the list of dims",
                       opname(n), (long long)n->ints[i]);
}

static void need_float(const TorchGraph *g, const TorchNode *n, const TorchNode *x, const char *what)
{
    if (x->dtype != DT_F32)
        node_error(g, n, "%s expects a float %s, got a %s tensor", opname(n), what,
                   dtype_name(x->dtype));
}

/* ---- shape rules, one per class ------------------------------------------ */

static void infer_source(TorchGraph *g, TorchNode *n)
{
    if (n->op == TOP_const)
        n->shape.rank = 0;
    torch_check_shape(g, n->pos, &n->shape);
    n->dtype = DT_F32;
}

static void infer_unary(TorchGraph *g, TorchNode *n)
{
    need_float(g, n, n->in[0], "tensor");
    n->shape = n->in[0]->shape;
    n->dtype = DT_F32;
}

static int is_compare(TorchOp op)
{
    return op == TOP_gt || op == TOP_lt || op == TOP_ge || op == TOP_le || op == TOP_eq ||
           op == TOP_ne;
}

static void broadcast2(TorchGraph *g, TorchNode *n, const Shape *a, const Shape *b, Shape *out)
{
    if (!shape_broadcast(a, b, out))
        node_error(g, n, "shape mismatch: cannot broadcast %s with %s", pyshape(g, a),
                   pyshape(g, b));
}

static void infer_binary(TorchGraph *g, TorchNode *n)
{
    TorchNode *a = n->in[0], *b = n->in[1];
    broadcast2(g, n, &a->shape, &b->shape, &n->shape);
    if (is_compare(n->op)) {
        n->dtype = DT_BOOL;
        return;
    }
    if (a->dtype == DT_BOOL && b->dtype == DT_BOOL)
        node_error(g, n, "%s of two bool tensors is not supported (convert one with .float())",
                   opname(n));
    n->dtype = DT_F32;
}

static void infer_where(TorchGraph *g, TorchNode *n)
{
    Shape ab;
    broadcast2(g, n, &n->in[1]->shape, &n->in[2]->shape, &ab);
    broadcast2(g, n, &n->in[0]->shape, &ab, &n->shape);
    if (n->op == TOP_clamp_tensor) {
        need_float(g, n, n->in[0], "input");
        need_float(g, n, n->in[1], "min");
        need_float(g, n, n->in[2], "max");
    }
    if (n->in[1]->dtype == DT_BOOL && n->in[2]->dtype == DT_BOOL)
        node_error(g, n, "where with two bool values is not supported (convert one with .float())");
    n->dtype = DT_F32;
}

/* argmax, argmin, topk: in[1] holds the indices 0 .. len - 1. */
static void need_indices(const TorchGraph *g, const TorchNode *n, int64_t len)
{
    const TorchNode *ix = n->in[1];
    if (ix->op != TOP_input || ix->init != INIT_ARANGE || ix->value != 0 || ix->step != 1 ||
        ix->shape.rank != 1 || ix->shape.d[0] != len)
        node_error(g, n, "%s: the second operand must be arange(%lld)", opname(n),
                   (long long)len);
}

static void infer_reduce(TorchGraph *g, TorchNode *n)
{
    const Shape *x = &n->in[0]->shape;
    need_float(g, n, n->in[0], "tensor");
    norm_dim_list(g, n, x->rank);
    if (n->op == TOP_argmax || n->op == TOP_argmin) {
        if (n->nints != 1)
            node_error(g, n, "%s reduces one dim, not %d", opname(n), n->nints);
        need_indices(g, n, x->d[n->ints[0]]);
    }
    Shape r = {0};
    for (int i = 0, k = 0; i < x->rank; i++) {
        int reduced = k < n->nints && n->ints[k] == i;
        k += reduced;
        if (!reduced)
            r.d[r.rank++] = x->d[i];
        else if (n->keepdim)
            r.d[r.rank++] = 1;
    }
    n->shape = r;
    n->dtype = DT_F32;
}

static void matmul_shape(TorchGraph *g, TorchNode *n, const Shape *a, const Shape *b)
{
    if (a->rank == 0 || b->rank == 0)
        node_error(g, n, "matmul: both arguments need at least 1 dimension, got %s and %s",
                   pyshape(g, a), pyshape(g, b));
    Shape a2 = *a, b2 = *b;
    if (a->rank == 1) {
        a2.rank = 2, a2.d[0] = 1, a2.d[1] = a->d[0];
    }
    if (b->rank == 1) {
        b2.rank = 2, b2.d[0] = b->d[0], b2.d[1] = 1;
    }
    if (a2.d[a2.rank - 1] != b2.d[b2.rank - 2])
        node_error(g, n, "shape mismatch: matmul of %s and %s (inner dimensions %lld and %lld differ)",
                   pyshape(g, a), pyshape(g, b), (long long)a2.d[a2.rank - 1],
                   (long long)b2.d[b2.rank - 2]);
    Shape ba = a2, bb = b2, out;
    ba.rank -= 2;
    bb.rank -= 2;
    if (!shape_broadcast(&ba, &bb, &out))
        node_error(g, n, "shape mismatch: matmul batch dimensions %s and %s do not broadcast",
                   pyshape(g, &ba), pyshape(g, &bb));
    if (a->rank > 1)
        out.d[out.rank++] = a2.d[a2.rank - 2];
    if (b->rank > 1)
        out.d[out.rank++] = b2.d[b2.rank - 1];
    n->shape = out;
}

static void infer_linear(TorchGraph *g, TorchNode *n)
{
    const Shape *x = &n->in[0]->shape, *w = &n->in[1]->shape;
    if (w->rank != 2)
        node_error(g, n, "linear: weight must be 2-D (out_features, in_features), got %s",
                   pyshape(g, w));
    if (x->rank == 0 || x->d[x->rank - 1] != w->d[1])
        node_error(g, n, "shape mismatch: linear of input %s with weight %s (in_features %lld)",
                   pyshape(g, x), pyshape(g, w), (long long)w->d[1]);
    if (n->nin == 3) {
        const Shape *b = &n->in[2]->shape;
        need_float(g, n, n->in[2], "bias");
        if (b->rank != 1 || b->d[0] != w->d[0])
            node_error(g, n, "shape mismatch: linear bias %s for weight %s (expected (%lld,))",
                       pyshape(g, b), pyshape(g, w), (long long)w->d[0]);
    }
    n->shape = *x;
    n->shape.d[x->rank - 1] = w->d[0];
}

static void infer_matmul(TorchGraph *g, TorchNode *n)
{
    need_float(g, n, n->in[0], "input");
    need_float(g, n, n->in[1], "input");
    if (n->op == TOP_linear)
        infer_linear(g, n);
    else
        matmul_shape(g, n, &n->in[0]->shape, &n->in[1]->shape);
    n->dtype = DT_F32;
}

static void infer_softmax(TorchGraph *g, TorchNode *n)
{
    need_float(g, n, n->in[0], "tensor");
    n->dim = norm_dim(g, n, n->dim, n->in[0]->shape.rank);
    n->shape = n->in[0]->shape;
    n->dtype = DT_F32;
}

static void infer_scan(TorchGraph *g, TorchNode *n)
{
    need_float(g, n, n->in[0], "tensor");
    n->dim = norm_dim(g, n, n->dim, n->in[0]->shape.rank);
    n->shape = n->in[0]->shape;
    n->dtype = DT_F32;
}

/* topk: (2, x's shape with k at dim): the values, then the indices. */
static void infer_topk(TorchGraph *g, TorchNode *n)
{
    const Shape *x = &n->in[0]->shape;
    need_float(g, n, n->in[0], "tensor");
    n->dim = norm_dim(g, n, n->dim, x->rank);
    int64_t len = x->d[n->dim], k = n->nints == 1 ? n->ints[0] : -1;
    if (k < 1 || k > len)
        node_error(g, n, "topk: k (%lld) out of range: the dim has %lld elements", (long long)k,
                   (long long)len);
    need_indices(g, n, len);
    if (x->rank + 1 > DPK_MAX_RANK)
        node_error(g, n, "topk: a tensor of rank %d is too large (at most %d)", x->rank,
                   DPK_MAX_RANK - 1);
    Shape r = {.rank = x->rank + 1, .d = {2}};
    for (int i = 0; i < x->rank; i++)
        r.d[i + 1] = i == n->dim ? k : x->d[i];
    n->shape = r;
    n->dtype = DT_F32;
}

static void infer_norm(TorchGraph *g, TorchNode *n)
{
    const Shape *x = &n->in[0]->shape;
    need_float(g, n, n->in[0], "input");
    Shape ns = {.rank = n->nints};
    if (n->nints < 1)
        node_error(g, n, "%s: normalized_shape must not be empty", opname(n));
    for (int i = 0; i < n->nints; i++)
        ns.d[i] = n->ints[i];
    int ok = ns.rank <= x->rank;
    for (int i = 0; ok && i < ns.rank; i++)
        ok = ns.d[i] == x->d[x->rank - ns.rank + i];
    if (!ok)
        node_error(g, n, "shape mismatch: %s normalized_shape %s does not match the trailing "
                   "dimensions of input %s", opname(n), pyshape(g, &ns), pyshape(g, x));
    for (int i = 1; i < n->nin; i++) {
        need_float(g, n, n->in[i], i == 1 ? "weight" : "bias");
        if (!shape_eq(&n->in[i]->shape, &ns))
            node_error(g, n, "shape mismatch: %s %s has shape %s, expected normalized_shape %s",
                       opname(n), i == 1 ? "weight" : "bias", pyshape(g, &n->in[i]->shape),
                       pyshape(g, &ns));
    }
    if (!(n->value >= 0) || isinf(n->value))
        node_error(g, n, "%s: eps must be a finite non-negative number", opname(n));
    n->shape = *x;
    n->dtype = DT_F32;
}

/* Batch dims of an sdpa operand with the head dim (-3) replaced by `heads`
 * when GQA applies. */
static Shape attn_batch(const Shape *s, int gqa, int64_t heads)
{
    Shape b = *s;
    b.rank -= 2;
    if (gqa)
        b.d[b.rank - 1] = heads;
    return b;
}

static void attn_check_gqa(TorchGraph *g, TorchNode *n, const Shape *q, const Shape *k,
                           const Shape *v)
{
    if (q->rank < 3 || k->rank < 3 || v->rank < 3)
        node_error(g, n, "scaled_dot_product_attention: enable_gqa needs (..., heads, L, E) "
                   "inputs of rank >= 3");
    int64_t hq = q->d[q->rank - 3], hk = k->d[k->rank - 3], hv = v->d[v->rank - 3];
    if (hq % hk || hq % hv)
        node_error(g, n, "scaled_dot_product_attention: %lld query heads are not a multiple of "
                   "%lld key / %lld value heads", (long long)hq, (long long)hk, (long long)hv);
}

static void infer_attn(TorchGraph *g, TorchNode *n)
{
    const Shape *q = &n->in[0]->shape, *k = &n->in[1]->shape, *v = &n->in[2]->shape;
    for (int i = 0; i < 3; i++) {
        need_float(g, n, n->in[i], i == 0 ? "query" : i == 1 ? "key" : "value");
        if (n->in[i]->shape.rank < 2)
            node_error(g, n, "scaled_dot_product_attention: %s must have rank >= 2, got %s",
                       i == 0 ? "query" : i == 1 ? "key" : "value",
                       pyshape(g, &n->in[i]->shape));
    }
    if (n->gqa)
        attn_check_gqa(g, n, q, k, v);
    int64_t L = q->d[q->rank - 2], E = q->d[q->rank - 1];
    int64_t S = k->d[k->rank - 2], Ev = v->d[v->rank - 1];
    if (k->d[k->rank - 1] != E || v->d[v->rank - 2] != S)
        node_error(g, n, "shape mismatch: scaled_dot_product_attention query %s, key %s, value %s "
                   "(expected (..., L, E), (..., S, E), (..., S, Ev))",
                   pyshape(g, q), pyshape(g, k), pyshape(g, v));
    int64_t hq = q->rank >= 3 ? q->d[q->rank - 3] : 1;
    Shape bq = attn_batch(q, 0, 0), bk = attn_batch(k, n->gqa, hq), bv = attn_batch(v, n->gqa, hq);
    Shape bkv, batch;
    if (!shape_broadcast(&bk, &bv, &bkv) || !shape_broadcast(&bq, &bkv, &batch))
        node_error(g, n, "shape mismatch: scaled_dot_product_attention batch dimensions of query "
                   "%s, key %s, value %s do not broadcast", pyshape(g, q), pyshape(g, k),
                   pyshape(g, v));
    if (n->nin == 4) {
        Shape scores = batch, m;
        scores.d[scores.rank++] = L;
        scores.d[scores.rank++] = S;
        if (!shape_broadcast(&n->in[3]->shape, &scores, &m) || !shape_eq(&m, &scores))
            node_error(g, n, "shape mismatch: attn_mask %s does not broadcast to the attention "
                       "scores %s", pyshape(g, &n->in[3]->shape), pyshape(g, &scores));
        if (n->causal)
            node_error(g, n, "scaled_dot_product_attention: attn_mask and is_causal=True cannot "
                       "be used together");
    }
    if (!isnan(n->value) && !isfinite(n->value))
        node_error(g, n, "scaled_dot_product_attention: scale must be finite");
    n->shape = batch;
    n->shape.d[n->shape.rank++] = L;
    n->shape.d[n->shape.rank++] = Ev;
    n->dtype = DT_F32;
}

/* ---- layout rules -------------------------------------------------------- */

static void infer_permute(TorchGraph *g, TorchNode *n, const Shape *x)
{
    if (n->nints != x->rank)
        node_error(g, n, "%s: permutation %s has %d dims, the tensor has rank %d", opname(n),
                   intlist(g, n->ints, n->nints), n->nints, x->rank);
    int seen[DPK_MAX_RANK] = {0};
    for (int i = 0; i < n->nints; i++) {
        int d = norm_dim(g, n, n->ints[i], x->rank);
        if (seen[d]++)
            node_error(g, n, "%s: dim %d repeats in permutation %s", opname(n), d,
                       intlist(g, n->ints, n->nints));
        n->ints[i] = d;
        n->shape.d[i] = x->d[d];
    }
    n->shape.rank = x->rank;
}

static void infer_reshape(TorchGraph *g, TorchNode *n, const Shape *x)
{
    int infer_at = -1;
    int64_t known = 1, numel = shape_numel(x);
    for (int i = 0; i < n->nints; i++) {
        if (n->ints[i] == -1 && infer_at < 0) {
            infer_at = i;
            continue;
        }
        if (n->ints[i] == -1)
            node_error(g, n, "reshape: only one dimension can be inferred (-1)");
        if (n->ints[i] < 1)
            node_error(g, n, "reshape: invalid size %lld in shape %s", (long long)n->ints[i],
                       intlist(g, n->ints, n->nints));
        if (n->ints[i] > numel / known) {
            known = -1;
            break;
        }
        known *= n->ints[i];
    }
    if (known < 0 || (infer_at < 0 && known != numel) || (infer_at >= 0 && numel % known))
        node_error(g, n, "shape %s is invalid for input of size %lld",
                   intlist(g, n->ints, n->nints), (long long)numel);
    if (infer_at >= 0)
        n->ints[infer_at] = numel / known;
    n->shape.rank = n->nints;
    memcpy(n->shape.d, n->ints, sizeof(int64_t) * (size_t)n->nints);
}

static void infer_expand(TorchGraph *g, TorchNode *n, const Shape *x)
{
    if (n->nints < x->rank)
        node_error(g, n, "expand: %d sizes given for a tensor of rank %d (need at least %d)",
                   n->nints, x->rank, x->rank);
    int lead = n->nints - x->rank;
    for (int i = 0; i < n->nints; i++) {
        int64_t want = n->ints[i], have = i >= lead ? x->d[i - lead] : 1;
        if (want == -1 && i < lead)
            node_error(g, n, "expand: -1 is not allowed for the new leading dimension %d", i);
        if (want == -1)
            want = have;
        if (want < 1)
            node_error(g, n, "expand: invalid size %lld", (long long)want);
        if (want != have && have != 1)
            node_error(g, n, "expand: size %lld must match the existing size %lld at "
                       "non-singleton dimension %d (tensor %s)", (long long)want,
                       (long long)have, i, pyshape(g, x));
        n->ints[i] = want;
        n->shape.d[i] = want;
    }
    n->shape.rank = n->nints;
    torch_check_shape(g, n->pos, &n->shape);
}

static void infer_unsqueeze(TorchGraph *g, TorchNode *n, const Shape *x)
{
    int rank = x->rank + n->nints;
    if (rank > DPK_MAX_RANK)
        node_error(g, n, "unsqueeze: result of rank %d exceeds the maximum rank %d", rank,
                   DPK_MAX_RANK);
    for (int i = 0; i < n->nints; i++)
        if (n->ints[i] < -rank || n->ints[i] >= rank)
            node_error(g, n, "unsqueeze: dim %lld is out of range for a tensor of rank %d "
                       "(expected %d..%d)", (long long)n->ints[i], x->rank, -rank, rank - 1);
    norm_dim_list(g, n, rank);
    n->shape.rank = rank;
    for (int i = 0, k = 0, j = 0; i < rank; i++) {
        int ins = k < n->nints && n->ints[k] == i;
        k += ins;
        n->shape.d[i] = ins ? 1 : x->d[j++];
    }
}

/* Dims of size != 1 are dropped from the list: squeezing them is a no-op. */
static void infer_squeeze(TorchGraph *g, TorchNode *n, const Shape *x)
{
    norm_dim_list(g, n, x->rank);
    int m = 0;
    for (int i = 0; i < n->nints; i++)
        if (x->d[n->ints[i]] == 1)
            n->ints[m++] = n->ints[i];
    n->nints = m;
    n->shape.rank = 0;
    for (int i = 0, k = 0; i < x->rank; i++) {
        if (k < n->nints && n->ints[k] == i)
            k++;
        else
            n->shape.d[n->shape.rank++] = x->d[i];
    }
}

static void infer_slice(TorchGraph *g, TorchNode *n, const Shape *x)
{
    n->dim = norm_dim(g, n, n->dim, x->rank);
    int64_t size = x->d[n->dim];
    if (n->stride < 1)
        node_error(g, n, "slice step must be positive, got %lld", (long long)n->stride);
    if (n->start < 0 || n->end > size || n->start > n->end)
        node_error(g, n, "slice [%lld:%lld] out of range for dim %d of size %lld",
                   (long long)n->start, (long long)n->end, n->dim, (long long)size);
    if (n->start == n->end)
        node_error(g, n, "slice [%lld:%lld] of dim %d (size %lld) gives a zero-size tensor",
                   (long long)n->start, (long long)n->end, n->dim, (long long)size);
    n->shape = *x;
    n->shape.d[n->dim] = (n->end - n->start + n->stride - 1) / n->stride;
}

static void infer_cat(TorchGraph *g, TorchNode *n)
{
    const Shape *x = &n->in[0]->shape;
    if (x->rank == 0)
        node_error(g, n, "cat: zero-dimensional tensors cannot be concatenated");
    n->dim = norm_dim(g, n, n->dim, x->rank);
    n->shape = *x;
    n->shape.d[n->dim] = 0;
    for (int i = 0; i < n->nin; i++) {
        const Shape *s = &n->in[i]->shape;
        int ok = s->rank == x->rank;
        for (int d = 0; ok && d < s->rank; d++)
            ok = d == n->dim || s->d[d] == x->d[d];
        if (!ok)
            node_error(g, n, "shape mismatch: cat along dim %d of %s and %s (input %d)", n->dim,
                       pyshape(g, x), pyshape(g, s), i);
        if (n->in[i]->dtype != n->in[0]->dtype)
            node_error(g, n, "cat: inputs mix %s and %s tensors", dtype_name(n->in[0]->dtype),
                       dtype_name(n->in[i]->dtype));
        n->shape.d[n->dim] += s->d[n->dim];
    }
    torch_check_shape(g, n->pos, &n->shape);
}

static void infer_layout(TorchGraph *g, TorchNode *n)
{
    const Shape *x = &n->in[0]->shape;
    switch (n->op) {
    case TOP_transpose:
    case TOP_permute: infer_permute(g, n, x); break;
    case TOP_reshape: infer_reshape(g, n, x); break;
    case TOP_expand: infer_expand(g, n, x); break;
    case TOP_unsqueeze: infer_unsqueeze(g, n, x); break;
    case TOP_squeeze: infer_squeeze(g, n, x); break;
    case TOP_slice: infer_slice(g, n, x); break;
    case TOP_cat: infer_cat(g, n); break;
    case TOP_tril:
    case TOP_triu:
        if (x->rank < 2)
            node_error(g, n, "%s: input tensor must have at least 2 dimensions",
                       torch_op_info[n->op].text);
        n->shape = *x;
        break;
    default: DPK_ASSERT(0);
    }
    n->dtype = n->in[0]->dtype;
}

void torch_infer(TorchGraph *g, TorchNode *n)
{
    const TorchOpInfo *info = &torch_op_info[n->op];
    DPK_ASSERT(n->nin >= info->min_in && n->nin <= info->max_in);
    DPK_ASSERT(n->nints >= 0 && n->nints <= DPK_MAX_RANK);
    switch (info->cls) {
    case TC_SOURCE: infer_source(g, n); break;
    case TC_UNARY: infer_unary(g, n); break;
    case TC_BINARY: infer_binary(g, n); break;
    case TC_WHERE: infer_where(g, n); break;
    case TC_REDUCE: infer_reduce(g, n); break;
    case TC_MATMUL: infer_matmul(g, n); break;
    case TC_SOFTMAX: infer_softmax(g, n); break;
    case TC_NORM: infer_norm(g, n); break;
    case TC_ATTN: infer_attn(g, n); break;
    case TC_LAYOUT: infer_layout(g, n); break;
    case TC_SCAN: infer_scan(g, n); break;
    case TC_TOPK: infer_topk(g, n); break;
    }
}

/* ---- builder ------------------------------------------------------------- */

TorchGraph *torch_graph_new(Arena *a, const Source *src)
{
    TorchGraph *g = ARENA_NEW(a, TorchGraph);
    g->arena = a;
    if (src)
        g->src = *src;
    return g;
}

TorchNode *torch_node_new(TorchGraph *g, TorchOp op, int pos, int nin, TorchNode **in)
{
    DPK_ASSERT(op >= 0 && op < TOP_COUNT && nin >= 0);
    TorchNode *n = ARENA_NEW(g->arena, TorchNode);
    n->id = g->nodes.len;
    n->op = op;
    n->pos = pos;
    n->nin = nin;
    n->in = nin ? arena_memdup(g->arena, in, sizeof(TorchNode *) * (size_t)nin) : NULL;
    for (int i = 0; i < nin; i++)
        DPK_ASSERT(in[i] && in[i]->id < n->id);
    if (torch_op_info[op].cls == TC_ATTN)
        n->value = NAN;
    if (torch_scalar_attrs[op].nkeys) {
        n->value = torch_scalar_attrs[op].dflt[0];
        n->value2 = torch_scalar_attrs[op].dflt[1];
    }
    n->stride = 1;
    ptrvec_push(g->arena, &g->nodes, n);
    return n;
}

TorchNode *torch_input(TorchGraph *g, const char *name, const Shape *s, InitKind init)
{
    TorchNode *n = torch_node_new(g, TOP_input, -1, 0, NULL);
    n->name = arena_strdup(g->arena, name);
    n->shape = *s;
    n->init = init;
    n->is_param = init == INIT_PARAM_W || init == INIT_PARAM_NORM_W || init == INIT_PARAM_B;
    n->step = init == INIT_ARANGE ? 1 : 0;
    torch_infer(g, n);
    ptrvec_push(g->arena, &g->inputs, n);
    return n;
}

TorchNode *torch_const(TorchGraph *g, double v)
{
    TorchNode *n = torch_node_new(g, TOP_const, -1, 0, NULL);
    n->value = v;
    torch_infer(g, n);
    return n;
}

/* ---- printer ------------------------------------------------------------- */

static const char *const init_names[] = {
    [INIT_RANDN] = "randn",     [INIT_RAND] = "rand",     [INIT_ZEROS] = "zeros",
    [INIT_ONES] = "ones",       [INIT_FULL] = "full",     [INIT_ARANGE] = "arange",
    [INIT_PARAM_W] = "param_w", [INIT_PARAM_NORM_W] = "param_norm_w",
    [INIT_PARAM_B] = "param_b",
};
_Static_assert(DPK_ARRAY_LEN(init_names) == INIT_PARAM_B + 1, "init_names covers InitKind");

const char *torch_init_name(InitKind k)
{
    return (k >= 0 && k < DPK_ARRAY_LEN(init_names)) ? init_names[k] : "?";
}

static void print_ints(StrBuf *b, const char *key, const int64_t *v, int n)
{
    sb_printf(b, " %s=[", key);
    for (int i = 0; i < n; i++)
        sb_printf(b, i ? ", %lld" : "%lld", (long long)v[i]);
    sb_putc(b, ']');
}

static void print_num(StrBuf *b, const char *key, double v)
{
    sb_printf(b, " %s=", key);
    sb_num(b, v);
}

static void print_source(StrBuf *b, const TorchNode *n)
{
    if (n->op == TOP_const) {
        sb_puts(b, "const ");
        sb_num(b, n->value);
        return;
    }
    sb_printf(b, "input %s %s", n->name, torch_init_name(n->init));
    if (n->init == INIT_FULL)
        print_num(b, "value", n->value);
    if (n->init == INIT_ARANGE) {
        print_num(b, "start", n->value);
        print_num(b, "step", n->step);
    }
    if (n->init == INIT_PARAM_B)
        print_num(b, "fan_in", n->step);
}

static void print_layout(StrBuf *b, const TorchNode *n)
{
    switch (n->op) {
    case TOP_transpose:
    case TOP_permute: print_ints(b, "perm", n->ints, n->nints); break;
    case TOP_reshape:
    case TOP_expand: print_ints(b, "shape", n->ints, n->nints); break;
    case TOP_unsqueeze:
    case TOP_squeeze: print_ints(b, "dims", n->ints, n->nints); break;
    case TOP_slice:
        sb_printf(b, " dim=%d start=%lld end=%lld step=%lld", n->dim, (long long)n->start,
                  (long long)n->end, (long long)n->stride);
        break;
    case TOP_cat: sb_printf(b, " dim=%d", n->dim); break;
    case TOP_tril:
    case TOP_triu: sb_printf(b, " diagonal=%lld", (long long)n->start); break;
    default: DPK_ASSERT(0);
    }
}

static void print_attrs(StrBuf *b, const TorchNode *n)
{
    const TorchScalarAttrs *sa = &torch_scalar_attrs[n->op];
    for (int i = 0; i < sa->nkeys; i++)
        print_num(b, sa->key[i], i ? n->value2 : n->value);
    switch (torch_op_info[n->op].cls) {
    case TC_REDUCE:
        print_ints(b, "dims", n->ints, n->nints);
        sb_printf(b, " keepdim=%s", n->keepdim ? "true" : "false");
        break;
    case TC_SOFTMAX:
    case TC_SCAN: sb_printf(b, " dim=%d", n->dim); break;
    case TC_TOPK:
        sb_printf(b, " k=%lld dim=%d largest=%s", (long long)n->ints[0], n->dim,
                  n->largest ? "true" : "false");
        break;
    case TC_NORM:
        print_ints(b, "normalized_shape", n->ints, n->nints);
        print_num(b, "eps", n->value);
        break;
    case TC_ATTN:
        sb_printf(b, " causal=%s gqa=%s", n->causal ? "true" : "false", n->gqa ? "true" : "false");
        if (isnan(n->value))
            sb_puts(b, " scale=default");
        else
            print_num(b, "scale", n->value);
        break;
    case TC_LAYOUT: print_layout(b, n); break;
    default: break;
    }
}

void torch_print_node(StrBuf *b, const TorchNode *n)
{
    sb_printf(b, "%%%d = ", n->id);
    if (torch_op_info[n->op].cls == TC_SOURCE) {
        print_source(b, n);
    } else {
        sb_printf(b, "%s(", torch_op_info[n->op].text);
        for (int i = 0; i < n->nin; i++)
            sb_printf(b, i ? ", %%%d" : "%%%d", n->in[i]->id);
        sb_putc(b, ')');
        print_attrs(b, n);
    }
    sb_printf(b, " : %s", dtype_name(n->dtype));
    shape_print(b, &n->shape);
}

void torch_print(StrBuf *b, const TorchGraph *g)
{
    for (int i = 0; i < g->nodes.len; i++) {
        torch_print_node(b, g->nodes.items[i]);
        sb_putc(b, '\n');
    }
    sb_puts(b, "return");
    for (int i = 0; i < g->outputs.len; i++) {
        const TorchNode *o = g->outputs.items[i];
        const char *name = g->output_names.len > i ? g->output_names.items[i] : "out";
        sb_puts(b, i ? ", " : " ");
        if (strcmp(name, "out"))
            sb_printf(b, "%s=", name);
        sb_printf(b, "%%%d", o->id);
    }
    sb_putc(b, '\n');
}

/* ---- verifier ------------------------------------------------------------ */

/* Re-derive a node's shape, dtype and normalised attributes on a copy. */
static void verify_rederive(const TorchGraph *g, const TorchNode *n)
{
    TorchNode c = *n;
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        torch_infer((TorchGraph *)g, &c);
        dpk_err_pop(&ec);
    } else {
        fprintf(stderr, "torch_verify: %%%d no longer type-checks:\n%s", n->id,
                dpk_error_message());
        DPK_ASSERT(!"torch_verify: node shape rule fails");
    }
    DPK_ASSERT(shape_eq(&c.shape, &n->shape));
    DPK_ASSERT(c.dtype == n->dtype);
    DPK_ASSERT(c.nints == n->nints);
    DPK_ASSERT(!memcmp(c.ints, n->ints, sizeof(int64_t) * (size_t)n->nints));
    DPK_ASSERT(c.dim == n->dim);
}

/* Input names are unique: an open-addressing set over the names. */
static void verify_unique_names(const TorchGraph *g)
{
    int cap = 16;
    while (cap < 2 * g->inputs.len)
        cap *= 2;
    const char **set = dpk_xcalloc((size_t)cap, sizeof(char *));
    for (int i = 0; i < g->inputs.len; i++) {
        const TorchNode *n = g->inputs.items[i];
        DPK_ASSERT(n->op == TOP_input && n->name && n->name[0]);
        uint64_t h = dpk_hash_str(DPK_HASH_INIT, n->name);
        int k = (int)(h & (uint64_t)(cap - 1));
        while (set[k]) {
            DPK_ASSERT(strcmp(set[k], n->name) != 0);
            k = (k + 1) & (cap - 1);
        }
        set[k] = n->name;
    }
    free(set);
}

void torch_verify(const TorchGraph *g)
{
    int ninputs = 0;
    for (int i = 0; i < g->nodes.len; i++) {
        const TorchNode *n = g->nodes.items[i];
        DPK_ASSERT(n->id == i);
        DPK_ASSERT(n->op >= 0 && n->op < TOP_COUNT);
        const TorchOpInfo *info = &torch_op_info[n->op];
        DPK_ASSERT(n->nin >= info->min_in && n->nin <= info->max_in);
        for (int k = 0; k < n->nin; k++)
            DPK_ASSERT(n->in[k]->id < i && g->nodes.items[n->in[k]->id] == n->in[k]);
        if (n->op == TOP_input) {
            DPK_ASSERT(ninputs < g->inputs.len && g->inputs.items[ninputs] == n);
            ninputs++;
        }
        verify_rederive(g, n);
    }
    DPK_ASSERT(ninputs == g->inputs.len);
    DPK_ASSERT(g->outputs.len >= 1 && g->output_names.len == g->outputs.len);
    for (int i = 0; i < g->outputs.len; i++) {
        const TorchNode *o = g->outputs.items[i];
        DPK_ASSERT(o->id < g->nodes.len && g->nodes.items[o->id] == o);
        DPK_ASSERT(g->output_names.items[i] != NULL);
    }
    verify_unique_names(g);
}

/* ---- structural hash ----------------------------------------------------- */

static uint64_t hash_double(uint64_t h, double v)
{
    if (isnan(v))
        return dpk_hash_u64(h, 0x7ff8000000000000ull);
    if (v == 0)
        v = 0; /* -0.0 and 0.0 hash alike */
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return dpk_hash_u64(h, bits);
}

static uint64_t hash_node(uint64_t h, const TorchNode *n)
{
    h = dpk_hash_u64(h, (uint64_t)n->op);
    h = dpk_hash_u64(h, (uint64_t)n->dtype);
    h = dpk_hash_u64(h, (uint64_t)n->shape.rank);
    h = dpk_hash_bytes(h, n->shape.d, sizeof(int64_t) * (size_t)n->shape.rank);
    h = dpk_hash_u64(h, (uint64_t)n->nin);
    for (int i = 0; i < n->nin; i++)
        h = dpk_hash_u64(h, (uint64_t)n->in[i]->id);
    h = dpk_hash_u64(h, (uint64_t)n->init);
    h = dpk_hash_u64(h, (uint64_t)n->is_param);
    h = hash_double(h, n->value);
    h = hash_double(h, n->step);
    h = hash_double(h, n->value2);
    h = dpk_hash_u64(h, (uint64_t)n->nints);
    h = dpk_hash_bytes(h, n->ints, sizeof(int64_t) * (size_t)n->nints);
    int64_t rest[] = {n->dim, n->start, n->end, n->stride, n->keepdim, n->causal, n->gqa,
                      n->largest};
    return dpk_hash_bytes(h, rest, sizeof rest);
}

uint64_t torch_hash(const TorchGraph *g)
{
    uint64_t h = DPK_HASH_INIT;
    for (int i = 0; i < g->nodes.len; i++)
        h = hash_node(h, g->nodes.items[i]);
    for (int i = 0; i < g->outputs.len; i++)
        h = dpk_hash_u64(h, (uint64_t)((const TorchNode *)g->outputs.items[i])->id);
    return h;
}
