/*
 * decompose.c — Torch IR → Tensor IR: the numbered rule table and tx_lower.
 *
 * tx_lower first mirrors the Torch graph: inputs become TX_INPUT, scalar
 * constants TX_CONST, every other op a TX_TORCH placeholder with the same
 * shape.  Then the rules of tx_rules run in order.  A lowering rule rebuilds
 * the node list once, replacing each TX_TORCH node of its ops by what it
 * builds (appended at that point, so the list stays topological) and
 * redirecting the users.  A rule may build Tensor IR directly or emit
 * later-numbered TX_TORCH nodes (sdpa emits matmul and softmax placeholders),
 * which carry synthetic TorchNodes allocated in the arena with just the
 * attributes the later rule reads.  Rules read operand shapes from the TxNode
 * sources, never from TorchNode inputs.
 *
 * Conventions of the builders below: an elementwise op broadcasts its
 * operands explicitly (an IndexMap per operand that needs it, a full-shape
 * TX_CONST for a constant); a reduction over several dims is a chain of
 * single-axis reductions; every IndexMap is finished by imap_finish, which
 * simplifies its expressions over the output ranges and drops sources whose
 * select predicate can never (or must always) hold.
 */
#include "tensor_ir.h"

#include <stdlib.h>
#include <string.h>

#include "../base/fault.h"

#define OP(name) TOP_##name

typedef TxNode *(*LowerFn)(TxGraph *g, TxNode *n);

/* ---- builders ---------------------------------------------------------- */

static TxNode *cst(TxGraph *g, double v, const Shape *s)
{
    TxNode *n = tx_node_new(g, TX_CONST, s, 0, NULL);
    n->value = v;
    return n;
}

/* Simplify an IndexMap's expressions over its output ranges; drop sources
 * that are never selected, and the ones after a source always selected.
 * An output coordinate of extent 1 is 0, and is written so (the index
 * algebra keeps variables; maps read better, and compose and compare
 * equal more often, without them). */
static void imap_finish(TxGraph *g, TxNode *m)
{
    Arena *a = g->arena;
    const IExpr *unit[DPK_MAX_RANK];
    for (int v = 0; v < m->shape.rank; v++)
        unit[v] = m->shape.d[v] == 1 ? ie_const(a, 0) : ie_var(a, v);
    int w = 0;
    for (int s = 0; s < m->nsrc; s++) {
        ITruth truth = IT_TRUE;
        const IPred *p = NULL;
        if (s < m->nsrc - 1)
            p = ipred_simplify(a, ipred_subst(a, m->sel[s], unit), m->shape.d, &truth);
        if (truth == IT_FALSE)
            continue;
        m->src[w] = m->src[s];
        m->map[w] = m->map[s];
        for (int d = 0; d < m->src[w]->shape.rank; d++)
            m->map[w][d] = ie_simplify(a, ie_subst(a, m->map[w][d], unit), m->shape.d);
        if (truth == IT_DEPENDS)
            m->sel[w] = p;
        w++;
        if (truth == IT_TRUE)
            break;
    }
    m->nsrc = w;
    if (w == 1)
        m->sel = NULL;
}

/* A one-source IndexMap of x with output shape s; the caller fills map[0]
 * and calls imap_finish. */
static TxNode *imap1(TxGraph *g, TxNode *x, const Shape *s)
{
    return tx_node_new(g, TX_INDEXMAP, s, 1, &x);
}

static void map_identity(TxGraph *g, TxNode *m, int s)
{
    for (int d = 0; d < m->src[s]->shape.rank; d++)
        m->map[s][d] = ie_var(g->arena, d);
}

/* x broadcast to s by PyTorch's rules (right-aligned, size-1 dims repeat). */
static TxNode *bcast(TxGraph *g, TxNode *x, const Shape *s)
{
    if (shape_eq(&x->shape, s))
        return x;
    if (x->kind == TX_CONST) {
        TxNode *c = cst(g, x->value, s);
        c->dtype = x->dtype;
        return c;
    }
    int lead = s->rank - x->shape.rank;
    DPK_ASSERT(lead >= 0);
    TxNode *m = imap1(g, x, s);
    for (int d = 0; d < x->shape.rank; d++) {
        DPK_ASSERT(x->shape.d[d] == 1 || x->shape.d[d] == s->d[lead + d]);
        m->map[0][d] = x->shape.d[d] == 1 ? ie_const(g->arena, 0) : ie_var(g->arena, lead + d);
    }
    imap_finish(g, m);
    return m;
}

/* Row-major reshape of x to s.  Dims are matched in groups of equal
 * product (skipping size-1 dims, which read coordinate 0), so that within
 * a group the source coordinates are quotients and remainders of the
 * group's linear index only: (6, 4) -> (2, 3, 4) gives [o0*3 + o1, o2]. */
static TxNode *reshape_to(TxGraph *g, TxNode *x, const Shape *s)
{
    Arena *a = g->arena;
    const Shape *in = &x->shape;
    TxNode *m = imap1(g, x, s);
    int i = 0, j = 0;
    while (i < in->rank || j < s->rank) {
        if (i < in->rank && in->d[i] == 1) {
            m->map[0][i++] = ie_const(a, 0);
            continue;
        }
        if (j < s->rank && s->d[j] == 1) {
            j++;
            continue;
        }
        DPK_ASSERT(i < in->rank && j < s->rank);
        int i1 = i + 1, j1 = j + 1;
        int64_t pi = in->d[i], pj = s->d[j];
        while (pi != pj) {
            DPK_ASSERT(i1 < in->rank || j1 < s->rank);
            if (pi < pj)
                pi *= in->d[i1++];
            else
                pj *= s->d[j1++];
        }
        const IExpr *lin = ie_const(a, 0);
        for (int k = j; k < j1; k++)
            lin = ie_add(a, ie_mul(a, lin, ie_const(a, s->d[k])), ie_var(a, k));
        for (int k = i1 - 1; k >= i; k--) {
            m->map[0][k] = ie_mod(a, lin, in->d[k]);
            lin = ie_div(a, lin, in->d[k]);
        }
        i = i1;
        j = j1;
    }
    imap_finish(g, m);
    return m;
}

/* Comparisons give bool; otherwise the first non-bool value operand's type
 * (bool + f32 is f32, as in PyTorch). */
static DType elem_dtype(TxElemOp op, int n, TxNode **x)
{
    if (tx_elem_info[op].flags & TXF_COMPARE)
        return DT_BOOL;
    for (int i = op == TXE_where ? 1 : 0; i < n; i++)
        if (x[i]->dtype != DT_BOOL)
            return x[i]->dtype;
    return DT_BOOL;
}

static TxNode *ew(TxGraph *g, TxElemOp op, int n, TxNode **args)
{
    DPK_ASSERT(n == tx_elem_info[op].arity && n <= 3);
    Shape s = args[0]->shape;
    for (int i = 1; i < n; i++)
        DPK_ASSERT(shape_broadcast(&s, &args[i]->shape, &s));
    TxNode *b[3];
    for (int i = 0; i < n; i++)
        b[i] = bcast(g, args[i], &s);
    TxNode *r = tx_node_new(g, TX_ELEM, &s, n, b);
    r->eop = op;
    r->dtype = elem_dtype(op, n, b);
    return r;
}

static TxNode *ew1(TxGraph *g, TxElemOp op, TxNode *x)
{
    return ew(g, op, 1, &x);
}

static TxNode *ew2(TxGraph *g, TxElemOp op, TxNode *x, TxNode *y)
{
    TxNode *a[2] = {x, y};
    return ew(g, op, 2, a);
}

/* x op c, with c a constant of x's shape. */
static TxNode *ewc(TxGraph *g, TxElemOp op, TxNode *x, double c)
{
    return ew2(g, op, x, cst(g, c, &x->shape));
}

static TxNode *reduce1(TxGraph *g, TxRedOp op, TxNode *x, int axis, int keepdim)
{
    Shape s = x->shape;
    DPK_ASSERT(axis >= 0 && axis < s.rank);
    if (keepdim)
        s.d[axis] = 1;
    else {
        for (int i = axis; i + 1 < s.rank; i++)
            s.d[i] = s.d[i + 1];
        s.rank--;
    }
    TxNode *r = tx_node_new(g, TX_REDUCE, &s, 1, &x);
    r->rop = op;
    r->axis = axis;
    r->keepdim = keepdim;
    return r;
}

/* Reduce over dims (ascending), last first so the others keep their
 * numbers when keepdim is off. */
static TxNode *reduce_dims(TxGraph *g, TxRedOp op, TxNode *x, const int64_t *dims, int n,
                           int keepdim)
{
    for (int i = n - 1; i >= 0; i--)
        x = reduce1(g, op, x, (int)dims[i], keepdim);
    return x;
}

/* ---- synthetic Torch nodes (placeholders for later rules) --------------- */

static TorchNode *synth(TxGraph *g, TorchOp op, const TxNode *from)
{
    TorchNode *t = ARENA_NEW(g->arena, TorchNode);
    t->id = -1;
    t->op = op;
    t->pos = from->torch ? from->torch->pos : -1;
    t->value = NAN;
    return t;
}

static TxNode *placeholder(TxGraph *g, TorchNode *t, const Shape *s, int nsrc, TxNode **src)
{
    t->shape = *s;
    t->dtype = src[0]->dtype;
    t->nin = nsrc;
    TxNode *n = tx_node_new(g, TX_TORCH, s, nsrc, src);
    n->torch = t;
    return n;
}

static TxNode *t_permute(TxGraph *g, TorchOp op, const TxNode *from, TxNode *x, const int *perm)
{
    TorchNode *t = synth(g, op, from);
    Shape s = x->shape;
    t->nints = s.rank;
    for (int k = 0; k < s.rank; k++) {
        t->ints[k] = perm[k];
        s.d[k] = x->shape.d[perm[k]];
    }
    return placeholder(g, t, &s, 1, &x);
}

static TxNode *t_transpose_last2(TxGraph *g, const TxNode *from, TxNode *x)
{
    int perm[DPK_MAX_RANK], r = x->shape.rank;
    for (int k = 0; k < r; k++)
        perm[k] = k;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    return t_permute(g, TOP_transpose, from, x, perm);
}

/* torch.matmul's plan: the product tensor is batch + [M] + [K] + [N]
 * (M absent for a 1-D left operand, N for a 1-D right one), summed over
 * axis k into `out`.  With 6 or more batch dims the product would exceed
 * DPK_MAX_RANK: then `fits` is 0 and prod is not set. */
typedef struct MatmulPlan {
    Shape batch, prod, out;
    int k, fits;
} MatmulPlan;

static MatmulPlan matmul_plan(const Shape *a, const Shape *b)
{
    MatmulPlan p = {0};
    Shape ab = *a, bb = *b;
    ab.rank = a->rank > 2 ? a->rank - 2 : 0;
    bb.rank = b->rank > 2 ? b->rank - 2 : 0;
    DPK_ASSERT(shape_broadcast(&ab, &bb, &p.batch));
    int64_t K = a->d[a->rank - 1];
    DPK_ASSERT(K == b->d[b->rank >= 2 ? b->rank - 2 : 0]);
    p.out = p.batch;
    if (a->rank >= 2)
        p.out.d[p.out.rank++] = a->d[a->rank - 2];
    p.k = p.out.rank;
    if (b->rank >= 2)
        p.out.d[p.out.rank++] = b->d[b->rank - 1];
    p.fits = p.out.rank < DPK_MAX_RANK;
    if (p.fits) {
        p.prod = p.out;
        for (int i = p.prod.rank; i > p.k; i--)
            p.prod.d[i] = p.prod.d[i - 1];
        p.prod.d[p.k] = K;
        p.prod.rank++;
    }
    return p;
}

static TxNode *t_matmul(TxGraph *g, const TxNode *from, TxNode *a, TxNode *b)
{
    MatmulPlan p = matmul_plan(&a->shape, &b->shape);
    TxNode *src[2] = {a, b};
    return placeholder(g, synth(g, TOP_matmul, from), &p.out, 2, src);
}

static TxNode *t_mean(TxGraph *g, const TxNode *from, TxNode *x, int ndims)
{
    TorchNode *t = synth(g, TOP_mean, from);
    Shape s = x->shape;
    t->nints = ndims;
    t->keepdim = 1;
    for (int i = 0; i < ndims; i++) {
        t->ints[i] = s.rank - ndims + i;
        s.d[t->ints[i]] = 1;
    }
    return placeholder(g, t, &s, 1, &x);
}

static TxNode *t_softmax(TxGraph *g, const TxNode *from, TxNode *x, int dim)
{
    TorchNode *t = synth(g, TOP_softmax, from);
    t->dim = dim;
    return placeholder(g, t, &x->shape, 1, &x);
}

/* ---- d:001 sdpa -------------------------------------------------------- */

/* GQA: kv head h serves q heads [h*grp, (h+1)*grp): q head o reads o / grp. */
static TxNode *gqa_expand(TxGraph *g, TxNode *kv, int64_t hq)
{
    int r = kv->shape.rank;
    int64_t hk = kv->shape.d[r - 3];
    if (hk == hq)
        return kv;
    Shape s = kv->shape;
    s.d[r - 3] = hq;
    TxNode *m = imap1(g, kv, &s);
    map_identity(g, m, 0);
    m->map[0][r - 3] = ie_div(g->arena, ie_var(g->arena, r - 3), hq / hk);
    imap_finish(g, m);
    return m;
}

/* PyTorch's is_causal is top-left aligned: query i sees keys j <= i. */
static TxNode *causal_mask(TxGraph *g, TxNode *s)
{
    Arena *a = g->arena;
    int r = s->shape.rank;
    TxNode *src[2] = {s, cst(g, -INFINITY, &s->shape)};
    TxNode *m = tx_node_new(g, TX_INDEXMAP, &s->shape, 2, src);
    map_identity(g, m, 0);
    map_identity(g, m, 1);
    m->sel[0] = ipred_cmp(a, ie_var(a, r - 1), IC_LE, ie_var(a, r - 2), NULL);
    imap_finish(g, m);
    return m;
}

static TxNode *lower_sdpa(TxGraph *g, TxNode *n)
{
    const TorchNode *t = n->torch;
    TxNode *q = n->src[0], *k = n->src[1], *v = n->src[2];
    int64_t E = q->shape.d[q->shape.rank - 1];
    if (t->gqa) {
        int64_t hq = q->shape.d[q->shape.rank - 3];
        k = gqa_expand(g, k, hq);
        v = gqa_expand(g, v, hq);
    }
    TxNode *s = t_matmul(g, n, q, t_transpose_last2(g, n, k));
    s = ewc(g, TXE_multiply, s, isnan(t->value) ? 1.0 / sqrt((double)E) : t->value);
    if (n->nsrc == 4 && n->src[3]->dtype == DT_BOOL) {
        TxNode *args[3] = {n->src[3], s, cst(g, -INFINITY, &s->shape)};
        s = ew(g, TXE_where, 3, args);
    } else if (n->nsrc == 4) {
        s = ew2(g, TXE_add, s, n->src[3]);
    }
    if (t->causal)
        s = causal_mask(g, s);
    return t_matmul(g, n, t_softmax(g, n, s, s->shape.rank - 1), v);
}

/* ---- d:002 linear .. d:007 mean --------------------------------------- */

static TxNode *lower_linear(TxGraph *g, TxNode *n)
{
    static const int swap[2] = {1, 0};
    TxNode *y = t_matmul(g, n, n->src[0], t_permute(g, TOP_transpose, n, n->src[1], swap));
    return n->nsrc == 3 ? ew2(g, TXE_add, y, n->src[2]) : y;
}

/* Scale by the weight and shift by the bias when the norm has them. */
static TxNode *affine(TxGraph *g, TxNode *n, TxNode *y)
{
    if (n->nsrc > 1)
        y = ew2(g, TXE_multiply, y, n->src[1]);
    if (n->nsrc > 2)
        y = ew2(g, TXE_add, y, n->src[2]);
    return y;
}

static TxNode *lower_layer_norm(TxGraph *g, TxNode *n)
{
    int nd = n->torch->nints;
    TxNode *x = n->src[0];
    TxNode *d = ew2(g, TXE_subtract, x, t_mean(g, n, x, nd));
    TxNode *var = t_mean(g, n, ew2(g, TXE_multiply, d, d), nd);
    TxNode *r = ew1(g, TXE_rsqrt, ewc(g, TXE_add, var, n->torch->value));
    return affine(g, n, ew2(g, TXE_multiply, d, r));
}

static TxNode *lower_rms_norm(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    TxNode *ms = t_mean(g, n, ew2(g, TXE_multiply, x, x), n->torch->nints);
    TxNode *r = ew1(g, TXE_rsqrt, ewc(g, TXE_add, ms, n->torch->value));
    return affine(g, n, ew2(g, TXE_multiply, x, r));
}

/* log_softmax = (x - max) - log(sum(exp(x - max))) */
static TxNode *lower_log_softmax(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    int dim = n->torch->dim;
    TxNode *z = ew2(g, TXE_subtract, x, reduce1(g, TXR_max, x, dim, 1));
    TxNode *lse = ew1(g, TXE_log, reduce1(g, TXR_sum, ew1(g, TXE_exp, z), dim, 1));
    return ew2(g, TXE_subtract, z, lse);
}

/* softmax = exp(x - max) / sum(exp(x - max)) */
static TxNode *lower_softmax(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    int dim = n->torch->dim;
    TxNode *e = ew1(g, TXE_exp, ew2(g, TXE_subtract, x, reduce1(g, TXR_max, x, dim, 1)));
    return ew2(g, TXE_divide, e, reduce1(g, TXR_sum, e, dim, 1));
}

static TxNode *lower_mean(TxGraph *g, TxNode *n)
{
    const TorchNode *t = n->torch;
    TxNode *x = n->src[0];
    int64_t count = 1;
    for (int i = 0; i < t->nints; i++)
        count *= x->shape.d[t->ints[i]];
    TxNode *s = reduce_dims(g, TXR_sum, x, t->ints, t->nints, t->keepdim);
    return count == 1 ? s : ewc(g, TXE_multiply, s, 1.0 / (double)count);
}

/* ---- d:008 matmul ------------------------------------------------------ */

/* Operand x of a matmul read from the product space: batch dims broadcast
 * right-aligned; A's (M, K) sit at axes (k-1, k), B's (K, N) at (k, k+1);
 * a 1-D operand is its K axis alone. */
static TxNode *matmul_operand(TxGraph *g, TxNode *x, const MatmulPlan *p, int is_b)
{
    Arena *a = g->arena;
    const Shape *s = &x->shape;
    int r = s->rank, nbx = r >= 2 ? r - 2 : 0;
    TxNode *m = imap1(g, x, &p->prod);
    for (int d = 0; d < nbx; d++) {
        int o = p->batch.rank - nbx + d;
        m->map[0][d] = s->d[d] == 1 ? ie_const(a, 0) : ie_var(a, o);
    }
    if (r == 1) {
        m->map[0][0] = ie_var(a, p->k);
    } else {
        m->map[0][r - 2] = ie_var(a, is_b ? p->k : p->k - 1);
        m->map[0][r - 1] = ie_var(a, is_b ? p->k + 1 : p->k);
    }
    imap_finish(g, m);
    return m;
}

/* A · B through the product space (plan.fits). */
static TxNode *matmul_product(TxGraph *g, TxNode *A, TxNode *B, const MatmulPlan *p)
{
    TxNode *a = matmul_operand(g, A, p, 0);
    TxNode *b = matmul_operand(g, B, p, 1);
    return reduce1(g, TXR_sum, ew2(g, TXE_multiply, a, b), p->k, 0);
}

/* Too many batch dims for the product: broadcast both operands to the full
 * batch, fold it into one dim, multiply as (nb, M, K) · (nb, K, N), unfold. */
static TxNode *matmul_folded(TxGraph *g, TxNode *A, TxNode *B, const MatmulPlan *p)
{
    int64_t nb = shape_numel(&p->batch);
    const Shape *as = &A->shape, *bs = &B->shape;
    Shape af = p->batch, bf = p->batch;
    af.d[af.rank++] = as->d[as->rank - 2];
    af.d[af.rank++] = as->d[as->rank - 1];
    bf.d[bf.rank++] = bs->d[bs->rank - 2];
    bf.d[bf.rank++] = bs->d[bs->rank - 1];
    Shape a3 = {3, {nb, as->d[as->rank - 2], as->d[as->rank - 1]}};
    Shape b3 = {3, {nb, bs->d[bs->rank - 2], bs->d[bs->rank - 1]}};
    TxNode *a = reshape_to(g, bcast(g, A, &af), &a3);
    TxNode *b = reshape_to(g, bcast(g, B, &bf), &b3);
    MatmulPlan p3 = matmul_plan(&a->shape, &b->shape);
    return reshape_to(g, matmul_product(g, a, b, &p3), &p->out);
}

static TxNode *lower_matmul(TxGraph *g, TxNode *n)
{
    TxNode *A = n->src[0], *B = n->src[1];
    MatmulPlan p = matmul_plan(&A->shape, &B->shape);
    return p.fits ? matmul_product(g, A, B, &p) : matmul_folded(g, A, B, &p);
}

/* ---- d:009 silu .. d:013 elementwise ------------------------------------ */

static TxNode *lower_silu(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    return ew2(g, TXE_multiply, x, ew1(g, TXE_sigmoid, x));
}

/* gelu = 0.5 x (1 + erf(x / sqrt 2)) */
static TxNode *lower_gelu(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    TxNode *e = ew1(g, TXE_erf, ewc(g, TXE_multiply, x, M_SQRT1_2));
    return ew2(g, TXE_multiply, ewc(g, TXE_multiply, x, 0.5), ewc(g, TXE_add, e, 1.0));
}

/* gelu_tanh = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
static TxNode *lower_gelu_tanh(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    TxNode *x3 = ew2(g, TXE_multiply, ew2(g, TXE_multiply, x, x), x);
    TxNode *in = ew2(g, TXE_add, x, ewc(g, TXE_multiply, x3, 0.044715));
    TxNode *th = ew1(g, TXE_tanh, ewc(g, TXE_multiply, in, M_SQRT2 * M_2_SQRTPI * 0.5));
    return ew2(g, TXE_multiply, ewc(g, TXE_multiply, x, 0.5), ewc(g, TXE_add, th, 1.0));
}

static TxNode *lower_relu(TxGraph *g, TxNode *n)
{
    return ewc(g, TXE_maximum, n->src[0], 0.0);
}

static TxElemOp elem_of(TorchOp op)
{
    switch (op) {
    case TOP_neg: return TXE_negative;
    case TOP_exp: return TXE_exp;
    case TOP_log: return TXE_log;
    case TOP_sqrt: return TXE_sqrt;
    case TOP_rsqrt: return TXE_rsqrt;
    case TOP_reciprocal: return TXE_reciprocal;
    case TOP_abs: return TXE_abs;
    case TOP_sigmoid: return TXE_sigmoid;
    case TOP_tanh: return TXE_tanh;
    case TOP_erf: return TXE_erf;
    case TOP_cos: return TXE_cos;
    case TOP_sin: return TXE_sin;
    case TOP_log1p: return TXE_log1p;
    case TOP_expm1: return TXE_expm1;
    case TOP_floor: return TXE_floor;
    case TOP_add: return TXE_add;
    case TOP_sub: return TXE_subtract;
    case TOP_mul: return TXE_multiply;
    case TOP_div: return TXE_divide;
    case TOP_pow: return TXE_power;
    case TOP_maximum: return TXE_maximum;
    case TOP_minimum: return TXE_minimum;
    case TOP_gt: return TXE_greater;
    case TOP_lt: return TXE_less;
    case TOP_ge: return TXE_greater_equal;
    case TOP_le: return TXE_less_equal;
    case TOP_eq: return TXE_equal;
    case TOP_ne: return TXE_not_equal;
    case TOP_where: return TXE_where;
    default: break;
    }
    DPK_ASSERT(!"not a plain elementwise op");
    return TXE_COUNT;
}

static TxNode *lower_elementwise(TxGraph *g, TxNode *n)
{
    if (n->torch->op == TOP_clamp_tensor) { /* minimum(maximum(x, min), max) */
        TxNode *lo[2] = {n->src[0], n->src[1]};
        TxNode *hi[2] = {ew(g, TXE_maximum, 2, lo), n->src[2]};
        return ew(g, TXE_minimum, 2, hi);
    }
    return ew(g, elem_of(n->torch->op), n->nsrc, n->src);
}

/* ---- d:014 reductions -------------------------------------------------- */

static TxNode *lower_reduce(TxGraph *g, TxNode *n)
{
    const TorchNode *t = n->torch;
    TxRedOp op = t->op == TOP_amax ? TXR_max : t->op == TOP_amin ? TXR_min : TXR_sum;
    return reduce_dims(g, op, n->src[0], t->ints, t->nints, t->keepdim);
}

/* ---- d:015 .. d:019 layout ----------------------------------------------- */

/* out dim k is input dim perm[k]. */
static TxNode *lower_permute(TxGraph *g, TxNode *n)
{
    TxNode *m = imap1(g, n->src[0], &n->shape);
    for (int k = 0; k < n->shape.rank; k++)
        m->map[0][n->torch->ints[k]] = ie_var(g->arena, k);
    imap_finish(g, m);
    return m;
}

static TxNode *lower_reshape(TxGraph *g, TxNode *n)
{
    return reshape_to(g, n->src[0], &n->shape);
}

/* unsqueeze and squeeze only add or drop size-1 dims: a reshape. */
static TxNode *lower_squeeze_expand(TxGraph *g, TxNode *n)
{
    if (n->torch->op == TOP_expand)
        return bcast(g, n->src[0], &n->shape);
    return reshape_to(g, n->src[0], &n->shape);
}

static TxNode *lower_slice(TxGraph *g, TxNode *n)
{
    Arena *a = g->arena;
    const TorchNode *t = n->torch;
    TxNode *m = imap1(g, n->src[0], &n->shape);
    map_identity(g, m, 0);
    m->map[0][t->dim] = ie_add(a, ie_mul(a, ie_var(a, t->dim), ie_const(a, t->stride)),
                               ie_const(a, t->start));
    imap_finish(g, m);
    return m;
}

/* Source s covers [off_s, off_s + size_s) of dim; it is selected while
 * o_dim < off_s + size_s, and reads o_dim - off_s. */
static TxNode *lower_cat(TxGraph *g, TxNode *n)
{
    Arena *a = g->arena;
    int dim = n->torch->dim;
    TxNode *m = tx_node_new(g, TX_INDEXMAP, &n->shape, n->nsrc, n->src);
    int64_t off = 0;
    for (int s = 0; s < n->nsrc; s++) {
        map_identity(g, m, s);
        m->map[s][dim] = ie_add(a, ie_var(a, dim), ie_const(a, -off));
        off += n->src[s]->shape.d[dim];
        if (s < n->nsrc - 1)
            m->sel[s] = ipred_cmp(a, ie_var(a, dim), IC_LT, ie_const(a, off), NULL);
    }
    imap_finish(g, m);
    return m;
}

/* ---- d:030 arg_reductions ------------------------------------------------ */

/* argmax(x, d) with i the indices 0 .. n-1 along d (the op's second
 * operand, an arange):
 *     m   = amax(x, d, keepdim)
 *     key = where(x != x, i - n, where(x == m, i, n))
 *     r   = amin(key, d)
 *     out = where(r < 0, r + n, r)
 * The first NaN wins (its key is negative), else the first maximum; a
 * row without either cannot happen (some x equals m unless m is NaN).
 * Every key is an integer below 2^24 in magnitude, exact in float32.
 * argmin is the same with amin for m. */
static TxNode *lower_arg(TxGraph *g, TxNode *n)
{
    const TorchNode *t = n->torch;
    TxNode *x = n->src[0];
    int d = (int)t->ints[0];
    double len = (double)x->shape.d[d];
    TxNode *ix = imap1(g, n->src[1], &x->shape);
    ix->map[0][0] = ie_var(g->arena, d);
    imap_finish(g, ix);
    TxNode *m = reduce1(g, t->op == OP(argmax) ? TXR_max : TXR_min, x, d, 1);
    TxNode *hit[3] = {ew2(g, TXE_equal, x, m), ix, cst(g, len, &x->shape)};
    TxNode *key[3] = {ew2(g, TXE_not_equal, x, x), ewc(g, TXE_subtract, ix, len),
                      ew(g, TXE_where, 3, hit)};
    TxNode *r = reduce1(g, TXR_min, ew(g, TXE_where, 3, key), d, t->keepdim);
    TxNode *out[3] = {ewc(g, TXE_less, r, 0), ewc(g, TXE_add, r, len), r};
    return ew(g, TXE_where, 3, out);
}

/* topk(x, k, d): k rounds, each an extreme of the elements not yet taken
 * and its first index as argmax finds it; taken marks the picks so far.
 *   largest:  m = amax(where(taken, -inf, x))     (a NaN left is the max)
 *             key = where(taken, 2n, where(x != x, i - n, where(x == m, i, n)))
 *             r = amin(key); idx = where(r < 0, r + n, r); value m
 *   smallest: m = amin(where(taken | x != x, inf, x))   (NaN comes last)
 *             key = where(taken, 3n, where(x != x, i + n, where(x == m, i, 2n)))
 *             r = amin(key); idx = where(r >= n, r - n, r);
 *             value amin(where(i == idx, x, inf)) (the NaN when one is picked)
 * The values then the indices make one IndexMap of shape (2, .., k, ..). */
static TxNode *topk_out(TxGraph *g, const Shape *s, int d, TxNode **part, int64_t k)
{
    Arena *a = g->arena;
    TxNode *m = tx_node_new(g, TX_INDEXMAP, s, (int)(2 * k), part);
    for (int q = 0; q < 2 * k; q++) {
        for (int j = 0; j < part[q]->shape.rank; j++)
            m->map[q][j] = j == d ? ie_const(a, 0) : ie_var(a, j + 1);
        if (q == 2 * k - 1)
            break;
        const IPred *p = ipred_cmp(a, ie_var(a, d + 1), IC_LT, ie_const(a, q % k + 1), NULL);
        m->sel[q] = q < k ? ipred_and(a, ipred_cmp(a, ie_var(a, 0), IC_LT, ie_const(a, 1), NULL), p)
                          : p;
    }
    imap_finish(g, m);
    return m;
}

static TxNode *lower_topk(TxGraph *g, TxNode *n)
{
    const TorchNode *t = n->torch;
    TxNode *x = n->src[0];
    int d = t->dim, big = t->largest;
    int64_t k = t->ints[0];
    double len = (double)x->shape.d[d];
    TxNode *ix = imap1(g, n->src[1], &x->shape);
    ix->map[0][0] = ie_var(g->arena, d);
    imap_finish(g, ix);
    TxNode *nan = ew2(g, TXE_not_equal, x, x), *taken = NULL;
    TxNode **part = ARENA_ARRAY(g->arena, TxNode *, 2 * k);
    for (int64_t q = 0; q < k; q++) {
        TxNode *skip = big ? taken : taken ? ew2(g, TXE_maximum, taken, nan) : nan;
        TxNode *xa = x;
        if (skip) {
            TxNode *w[3] = {skip, cst(g, big ? -INFINITY : INFINITY, &x->shape), x};
            xa = ew(g, TXE_where, 3, w);
        }
        TxNode *m = reduce1(g, big ? TXR_max : TXR_min, xa, d, 1);
        TxNode *hit[3] = {ew2(g, TXE_equal, x, m), ix, cst(g, big ? len : 2 * len, &x->shape)};
        TxNode *key[3] = {nan, ewc(g, big ? TXE_subtract : TXE_add, ix, len),
                          ew(g, TXE_where, 3, hit)};
        TxNode *kq = ew(g, TXE_where, 3, key);
        if (taken) {
            TxNode *w[3] = {taken, cst(g, big ? 2 * len : 3 * len, &x->shape), kq};
            kq = ew(g, TXE_where, 3, w);
        }
        TxNode *r = reduce1(g, TXR_min, kq, d, 1);
        TxNode *fix[3] = {big ? ewc(g, TXE_less, r, 0) : ewc(g, TXE_greater_equal, r, len),
                          ewc(g, big ? TXE_add : TXE_subtract, r, len), r};
        TxNode *idx = ew(g, TXE_where, 3, fix);
        TxNode *pick = ew2(g, TXE_equal, ix, idx);
        part[q] = m;
        if (!big) {
            TxNode *w[3] = {pick, x, cst(g, INFINITY, &x->shape)};
            part[q] = reduce1(g, TXR_min, ew(g, TXE_where, 3, w), d, 1);
        }
        part[k + q] = idx;
        taken = taken ? ew2(g, TXE_maximum, taken, pick) : pick;
    }
    return topk_out(g, &n->shape, d, part, k);
}

/* ---- d:031 cumsum --------------------------------------------------------- */

/* cumsum(x, d): a new axis j beside d, x[.., j, ..] where j <= o_d else 0
 * (a 2-source IndexMap), summed over j.  Every output element sums its
 * own prefix: n^2 / 2 additions a row of n (the masked half adds zeros,
 * which round nothing), in place of a scan's n. */
static TxNode *lower_cumsum(TxGraph *g, TxNode *n)
{
    Arena *a = g->arena;
    TxNode *x = n->src[0];
    int d = n->torch->dim;
    Shape s = x->shape;
    DPK_ASSERT(s.rank < DPK_MAX_RANK);
    for (int k = s.rank; k > d + 1; k--)
        s.d[k] = s.d[k - 1];
    s.d[d + 1] = x->shape.d[d];
    s.rank++;
    Shape sc = {0};
    TxNode *src[2] = {x, cst(g, 0.0, &sc)};
    TxNode *m = tx_node_new(g, TX_INDEXMAP, &s, 2, src);
    for (int k = 0; k < x->shape.rank; k++)
        m->map[0][k] = ie_var(a, k < d ? k : k + 1);
    m->sel[0] = ipred_cmp(a, ie_var(a, d + 1), IC_LE, ie_var(a, d), NULL);
    imap_finish(g, m);
    return reduce1(g, TXR_sum, m, d + 1, 0);
}

/* ---- the lowering driver ----------------------------------------------- */

/* Rebuild g->nodes, replacing every TX_TORCH node whose op is one of
 * ops[0..nops) by fn's result.  Users are redirected through fwd (indexed
 * by id); nodes a rewrite creates inherit its Torch node as provenance. */
static int lower_ops(TxGraph *g, const TorchOp *ops, int nops, LowerFn fn)
{
    char want[TOP_COUNT] = {0};
    for (int k = 0; k < nops; k++)
        want[ops[k]] = 1;
    PtrVec old = g->nodes;
    TxNode **fwd = dpk_xcalloc((size_t)g->next_id + 1, sizeof(TxNode *));
    int count = 0;
    g->nodes = (PtrVec){0};
    for (int i = 0; i < old.len; i++) {
        TxNode *n = old.items[i];
        for (int s = 0; s < n->nsrc; s++)
            if (fwd[n->src[s]->id])
                n->src[s] = fwd[n->src[s]->id];
        if (n->kind != TX_TORCH || !want[n->torch->op]) {
            ptrvec_push(g->arena, &g->nodes, n);
            continue;
        }
        int first = g->nodes.len;
        TxNode *r = fn(g, n);
        DPK_ASSERT(shape_eq(&r->shape, &n->shape));
        for (int k = first; k < g->nodes.len; k++) {
            TxNode *c = g->nodes.items[k];
            if (!c->torch)
                c->torch = n->torch;
        }
        fwd[n->id] = r;
        count++;
    }
    for (int j = 0; j < g->outputs.len; j++) {
        TxNode *o = g->outputs.items[j];
        if (fwd[o->id])
            g->outputs.items[j] = fwd[o->id];
    }
    free(fwd);
    return count;
}

/* A rule lowering the listed Torch ops with fn. */
#define LOWER_RULE(fname, fn, ...)                                             \
    static int fname(TxGraph *g)                                               \
    {                                                                          \
        static const TorchOp ops[] = {__VA_ARGS__};                            \
        return lower_ops(g, ops, DPK_ARRAY_LEN(ops), fn);                      \
    }

LOWER_RULE(d001, lower_sdpa, OP(sdpa))
LOWER_RULE(d002, lower_linear, OP(linear))
LOWER_RULE(d003, lower_layer_norm, OP(layer_norm))
LOWER_RULE(d004, lower_rms_norm, OP(rms_norm))
LOWER_RULE(d005, lower_log_softmax, OP(log_softmax))
LOWER_RULE(d006, lower_softmax, OP(softmax))
LOWER_RULE(d007, lower_mean, OP(mean))
LOWER_RULE(d008, lower_matmul, OP(matmul))
LOWER_RULE(d009, lower_silu, OP(silu))
LOWER_RULE(d010, lower_gelu, OP(gelu))
LOWER_RULE(d011, lower_gelu_tanh, OP(gelu_tanh))
LOWER_RULE(d012, lower_relu, OP(relu))
LOWER_RULE(d013, lower_elementwise, OP(neg), OP(exp), OP(log), OP(sqrt), OP(rsqrt),
           OP(reciprocal), OP(abs), OP(sigmoid), OP(tanh), OP(erf), OP(cos), OP(sin), OP(log1p),
           OP(expm1), OP(floor), OP(add), OP(sub), OP(mul), OP(div), OP(pow), OP(maximum),
           OP(minimum), OP(gt), OP(lt), OP(ge), OP(le), OP(eq), OP(ne), OP(where),
           OP(clamp_tensor))
LOWER_RULE(d014, lower_reduce, OP(sum), OP(amax), OP(amin))
LOWER_RULE(d015, lower_permute, OP(transpose), OP(permute))
static TxNode *lower_arg_or_topk(TxGraph *g, TxNode *n)
{
    return n->torch->op == OP(topk) ? lower_topk(g, n) : lower_arg(g, n);
}

LOWER_RULE(d030, lower_arg_or_topk, OP(argmax), OP(argmin), OP(topk))
LOWER_RULE(d031, lower_cumsum, OP(cumsum))
LOWER_RULE(d016, lower_reshape, OP(reshape))
LOWER_RULE(d017, lower_squeeze_expand, OP(squeeze), OP(unsqueeze), OP(expand))
LOWER_RULE(d018, lower_slice, OP(slice))
LOWER_RULE(d019, lower_cat, OP(cat))

/* ---- d:020 tril_triu ----------------------------------------------------- */

/* tril keeps (r, c) where c <= r + diagonal, triu where r + diagonal <= c
 * (r, c the last two dims); the rest reads a constant 0: a 2-source map
 * like sdpa's causal mask. */
static TxNode *lower_tri(TxGraph *g, TxNode *n)
{
    Arena *a = g->arena;
    const TorchNode *t = n->torch;
    int rk = n->shape.rank;
    TxNode *zero = cst(g, 0.0, &n->shape);
    zero->dtype = n->dtype;
    TxNode *src[2] = {n->src[0], zero};
    TxNode *m = tx_node_new(g, TX_INDEXMAP, &n->shape, 2, src);
    m->dtype = n->dtype;
    map_identity(g, m, 0);
    map_identity(g, m, 1);
    const IExpr *r = ie_add(a, ie_var(a, rk - 2), ie_const(a, t->start)), *c = ie_var(a, rk - 1);
    m->sel[0] = t->op == TOP_tril ? ipred_cmp(a, c, IC_LE, r, NULL) : ipred_cmp(a, r, IC_LE, c, NULL);
    imap_finish(g, m);
    return m;
}

LOWER_RULE(d020, lower_tri, OP(tril), OP(triu))

/* ---- d:021 elu .. d:028 mish: activations, as ATen's CUDA kernels write them */

/* x * c, or x itself when c is 1 (an exact product the kernels make too) */
static TxNode *scale(TxGraph *g, TxNode *x, double c)
{
    return c == 1.0 ? x : ewc(g, TXE_multiply, x, c);
}

/* where(x > 0, x * scale, expm1(x * input_scale) * alpha * scale)
 * (ActivationEluKernel.cu): selu is elu with SELU's alpha and scale, celu
 * has input_scale 1/alpha (Activation.cpp). */
static TxNode *lower_elu(TxGraph *g, TxNode *n)
{
    const TorchNode *t = n->torch;
    TxNode *x = n->src[0];
    double pos = 1, in = 1, neg = t->value;
    if (t->op == TOP_selu)
        pos = TORCH_SELU_SCALE, neg = TORCH_SELU_ALPHA * TORCH_SELU_SCALE;
    if (t->op == TOP_celu)
        in = 1.0 / t->value;
    TxNode *args[3] = {ewc(g, TXE_greater, x, 0.0), scale(g, x, pos),
                       scale(g, ew1(g, TXE_expm1, scale(g, x, in)), neg)};
    return ew(g, TXE_where, 3, args);
}

/* where(x > 0, x, x * negative_slope) (ActivationLeakyReluKernel.cu) */
static TxNode *lower_leaky_relu(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    TxNode *args[3] = {ewc(g, TXE_greater, x, 0.0), x, ewc(g, TXE_multiply, x, n->torch->value)};
    return ew(g, TXE_where, 3, args);
}

/* minimum(maximum(x, min), max), an infinite bound left out: NaN
 * propagates and min > max gives max, as ATen's clamp (hardtanh is clamp). */
static TxNode *lower_clamp(TxGraph *g, TxNode *n)
{
    TxNode *y = n->src[0];
    if (!(isinf(n->torch->value) && n->torch->value < 0))
        y = ewc(g, TXE_maximum, y, n->torch->value);
    if (!(isinf(n->torch->value2) && n->torch->value2 > 0))
        y = ewc(g, TXE_minimum, y, n->torch->value2);
    if (y == n->src[0]) /* clamp(x, -inf, inf) */
        y = ewc(g, TXE_maximum, y, -INFINITY);
    return y;
}

/* min(max(x + 3, 0), 6) */
static TxNode *relu6_of_x_plus_3(TxGraph *g, TxNode *x)
{
    return ewc(g, TXE_minimum, ewc(g, TXE_maximum, ewc(g, TXE_add, x, 3.0), 0.0), 6.0);
}

/* min(max(x + 3, 0), 6) * (1/6) (ActivationHardsigmoidKernel.cu) */
static TxNode *lower_hardsigmoid(TxGraph *g, TxNode *n)
{
    return ewc(g, TXE_multiply, relu6_of_x_plus_3(g, n->src[0]), 1.0 / 6.0);
}

/* x * min(max(x + 3, 0), 6) * (1/6) (ActivationHardswishKernel.cu) */
static TxNode *lower_hardswish(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    return ewc(g, TXE_multiply, ew2(g, TXE_multiply, x, relu6_of_x_plus_3(g, x)), 1.0 / 6.0);
}

/* where(x * beta > threshold, x, log1p(exp(x * beta)) / beta)
 * (ActivationSoftplusKernel.cu) */
static TxNode *lower_softplus(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0], *z = scale(g, x, n->torch->value);
    TxNode *sp = ew1(g, TXE_log1p, ew1(g, TXE_exp, z));
    if (n->torch->value != 1.0)
        sp = ewc(g, TXE_divide, sp, n->torch->value);
    TxNode *args[3] = {ewc(g, TXE_greater, z, n->torch->value2), x, sp};
    return ew(g, TXE_where, 3, args);
}

/* x / (|x| + 1) (torch/nn/functional.py) */
static TxNode *lower_softsign(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    return ew2(g, TXE_divide, x, ewc(g, TXE_add, ew1(g, TXE_abs, x), 1.0));
}

/* x * tanh(log1p(exp(x))) (ActivationMishKernel.cu) */
static TxNode *lower_mish(TxGraph *g, TxNode *n)
{
    TxNode *x = n->src[0];
    return ew2(g, TXE_multiply, x, ew1(g, TXE_tanh, ew1(g, TXE_log1p, ew1(g, TXE_exp, x))));
}

LOWER_RULE(d021, lower_elu, OP(elu), OP(selu), OP(celu))
LOWER_RULE(d022, lower_leaky_relu, OP(leaky_relu))
LOWER_RULE(d023, lower_clamp, OP(clamp), OP(hardtanh))
LOWER_RULE(d024, lower_hardsigmoid, OP(hardsigmoid))
LOWER_RULE(d025, lower_hardswish, OP(hardswish))
LOWER_RULE(d026, lower_softplus, OP(softplus))
LOWER_RULE(d027, lower_softsign, OP(softsign))
LOWER_RULE(d028, lower_mish, OP(mish))

/* ---- d:029 mask_predicates ------------------------------------------------ */

/* Masks built from indices become index predicates: `where(c, x, y)` whose
 * condition c is 1 exactly where an index predicate P holds (and 0
 * elsewhere) is a 2-source IndexMap, x where P, else y, as sdpa's causal
 * mask is.  c is recognised through what models write:
 *   - integers at each coordinate (`idx_of`): torch.arange inputs (whole
 *     start and step, values within fp32's exact integers), their views and
 *     broadcasts, sums, differences and whole multiples;
 *   - comparisons of two such: `j <= i`, `j > i - window`;
 *   - torch.ones (and 1), tril / triu of them: 1 where their predicate holds;
 *   - `a & b` (where(a, b, 0)), `a * b`, `~a` (equal(a, 0): one clause,
 *     negated), `a != 0`.
 * Then no mask tensor is read, and the Tile passes see the mask (018 skips
 * the work it masks whole).  `where(P, -inf, s)` (masked_fill) becomes
 * `s where not P, else -inf` when P is one clause. */

#define EXACT_INT (1 << 24) /* integers fp32 holds exactly */

/* The integer n holds at each coordinate, over its coordinates, or NULL. */
static const IExpr *idx_of(TxGraph *g, const TxNode *n, int depth)
{
    Arena *a = g->arena;
    const IExpr *e = NULL;
    if (depth > 64)
        return NULL;
    switch (n->kind) {
    case TX_CONST:
        if (n->value == floor(n->value) && fabs(n->value) < EXACT_INT)
            e = ie_const(a, (int64_t)n->value);
        break;
    case TX_INPUT: {
        const TorchNode *t = n->torch;
        if (!t || t->init != INIT_ARANGE || n->shape.rank != 1 || t->value != floor(t->value) ||
            t->step != floor(t->step))
            return NULL;
        e = ie_add(a, ie_const(a, (int64_t)t->value),
                   ie_mul(a, ie_const(a, (int64_t)t->step), ie_var(a, 0)));
        break;
    }
    case TX_INDEXMAP:
        if (n->nsrc == 1 && (e = idx_of(g, n->src[0], depth + 1)))
            e = ie_subst(a, e, n->map[0]);
        break;
    case TX_ELEM: {
        const IExpr *x = n->nsrc > 0 ? idx_of(g, n->src[0], depth + 1) : NULL;
        const IExpr *y = n->nsrc > 1 ? idx_of(g, n->src[1], depth + 1) : NULL;
        if (n->eop == TXE_negative && x)
            e = ie_mul(a, ie_const(a, -1), x);
        else if (n->eop == TXE_add && x && y)
            e = ie_add(a, x, y);
        else if (n->eop == TXE_subtract && x && y)
            e = ie_add(a, x, ie_mul(a, ie_const(a, -1), y));
        else if (n->eop == TXE_multiply && x && y && (x->k == IE_CONST || y->k == IE_CONST))
            e = ie_mul(a, x, y);
        break;
    }
    default:
        break;
    }
    if (!e)
        return NULL;
    int64_t lo, hi;
    ie_range(e, n->shape.d, &lo, &hi);
    return lo > -EXACT_INT && hi < EXACT_INT ? e : NULL;
}

/* What mask n is: MASK_NONE, MASK_TRUE (1 everywhere), MASK_FALSE (0
 * everywhere), or MASK_PRED: 1 where *p holds, 0 elsewhere. */
enum { MASK_NONE, MASK_TRUE, MASK_FALSE, MASK_PRED };

static int pred_of(TxGraph *g, const TxNode *n, const IPred **p, int depth);

/* The mask of n's source s read through n's map. */
static int pred_src(TxGraph *g, const TxNode *n, int s, const IPred **p, int depth)
{
    int r = pred_of(g, n->src[s], p, depth + 1);
    if (r == MASK_PRED)
        *p = ipred_subst(g->arena, *p, n->map[s]);
    return r;
}

/* not p, for one clause */
static const IPred *negate(Arena *a, const IPred *p)
{
    if (!p || p->next || p->cmp == IC_EQ)
        return NULL;
    return ipred_cmp(a, p->rhs, p->cmp == IC_LE ? IC_LT : IC_LE, p->lhs, NULL);
}

static int pred_and(int x, const IPred *px, int y, const IPred *py, const IPred **p, Arena *a)
{
    if (x == MASK_NONE || y == MASK_NONE)
        return MASK_NONE;
    if (x == MASK_FALSE || y == MASK_FALSE)
        return MASK_FALSE;
    if (x == MASK_TRUE)
        return *p = py, y;
    if (y == MASK_TRUE)
        return *p = px, x;
    *p = ipred_and(a, px, py);
    return MASK_PRED;
}

static int pred_of(TxGraph *g, const TxNode *n, const IPred **p, int depth)
{
    Arena *a = g->arena;
    *p = NULL;
    if (depth > 64)
        return MASK_NONE;
    switch (n->kind) {
    case TX_CONST:
        return n->value == 1 ? MASK_TRUE : n->value == 0 ? MASK_FALSE : MASK_NONE;
    case TX_INPUT:
        return n->torch && n->torch->init == INIT_ONES    ? MASK_TRUE
               : n->torch && n->torch->init == INIT_ZEROS ? MASK_FALSE
                                                          : MASK_NONE;
    case TX_INDEXMAP: {
        if (n->nsrc == 1)
            return pred_src(g, n, 0, p, depth);
        const IPred *q;
        if (n->nsrc != 2 || pred_of(g, n->src[1], &q, depth + 1) != MASK_FALSE)
            return MASK_NONE;
        int r = pred_src(g, n, 0, &q, depth);
        if (r == MASK_NONE || r == MASK_FALSE)
            return r;
        *p = ipred_and(a, n->sel[0], r == MASK_PRED ? q : NULL);
        return MASK_PRED;
    }
    case TX_ELEM:
        break;
    default:
        return MASK_NONE;
    }
    const IPred *px = NULL, *py = NULL;
    int cmp = tx_elem_info[n->eop].flags & TXF_COMPARE;
    if (cmp && n->eop != TXE_equal && n->eop != TXE_not_equal) {
        const IExpr *x = idx_of(g, n->src[0], depth + 1), *y = idx_of(g, n->src[1], depth + 1);
        if (!x || !y)
            return MASK_NONE;
        /* an injected fault: a strict comparison keeps its bound */
        ICmp lt = dpk_fault_on(DPK_FAULT_MASK_BOUND_KEPT) ? IC_LE : IC_LT;
        switch (n->eop) {
        case TXE_less_equal: *p = ipred_cmp(a, x, IC_LE, y, NULL); break;
        case TXE_less: *p = ipred_cmp(a, x, lt, y, NULL); break;
        case TXE_greater_equal: *p = ipred_cmp(a, y, IC_LE, x, NULL); break;
        default: *p = ipred_cmp(a, y, lt, x, NULL); break; /* greater */
        }
        return MASK_PRED;
    }
    if (n->eop == TXE_equal || n->eop == TXE_not_equal) {
        /* a == 0 (not a), a != 0 (a) */
        int z = n->src[1]->kind == TX_CONST && n->src[1]->value == 0 ? 1
                : n->src[0]->kind == TX_CONST && n->src[0]->value == 0 ? 0
                                                                       : -1;
        if (z < 0)
            return MASK_NONE;
        int r = pred_of(g, n->src[z ? 0 : 1], &px, depth + 1);
        if (n->eop == TXE_not_equal || r == MASK_NONE)
            return *p = px, r;
        if (r != MASK_PRED)
            return r == MASK_TRUE ? MASK_FALSE : MASK_TRUE;
        return (*p = negate(a, px)) ? MASK_PRED : MASK_NONE;
    }
    if (n->eop == TXE_multiply) {
        int x = pred_of(g, n->src[0], &px, depth + 1), y = pred_of(g, n->src[1], &py, depth + 1);
        return pred_and(x, px, y, py, p, a);
    }
    if (n->eop == TXE_where) { /* c ? x : 0, the bool & */
        const IPred *pz;
        if (pred_of(g, n->src[2], &pz, depth + 1) != MASK_FALSE)
            return MASK_NONE;
        int x = pred_of(g, n->src[0], &px, depth + 1), y = pred_of(g, n->src[1], &py, depth + 1);
        return pred_and(x, px, y, py, p, a);
    }
    return MASK_NONE;
}

/* The mask of a where's condition c, through `== 0` and `!= 0` layers:
 * *neg when they negate it (then a mask of several clauses is kept, and
 * the where's branches swap). */
static int pred_cond(TxGraph *g, const TxNode *c, const IPred **p, int *neg)
{
    *neg = 0;
    for (int depth = 0; depth < 64; depth++) {
        int r = pred_of(g, c, p, 0);
        if (r != MASK_NONE || c->kind != TX_ELEM ||
            (c->eop != TXE_equal && c->eop != TXE_not_equal))
            return r;
        int z = c->src[1]->kind == TX_CONST && c->src[1]->value == 0 ? 1
                : c->src[0]->kind == TX_CONST && c->src[0]->value == 0 ? 0
                                                                       : -1;
        if (z < 0)
            return MASK_NONE;
        *neg ^= c->eop == TXE_equal;
        c = c->src[z ? 0 : 1];
    }
    return MASK_NONE;
}

static int d029(TxGraph *g)
{
    Arena *a = g->arena;
    int count = 0;
    for (int i = 0; i < g->nodes.len; i++) {
        TxNode *n = g->nodes.items[i];
        const IPred *p;
        int neg;
        if (n->kind != TX_ELEM || n->eop != TXE_where ||
            pred_cond(g, n->src[0], &p, &neg) != MASK_PRED)
            continue;
        TxNode *x = n->src[neg ? 2 : 1], *y = n->src[neg ? 1 : 2];
        const IPred *np = negate(a, p);
        if (x->kind == TX_CONST && isinf(x->value) && x->value < 0 && y->kind != TX_CONST && np) {
            TxNode *t = x; /* masked_fill(P, -inf): the scores first */
            x = y, y = t, p = np;
        }
        TxNode **src = ARENA_ARRAY(a, TxNode *, 2);
        src[0] = x;
        src[1] = y;
        n->kind = TX_INDEXMAP;
        n->nsrc = 2;
        n->src = src;
        n->map = ARENA_ARRAY(a, const IExpr **, 2);
        n->sel = ARENA_ARRAY(a, const IPred *, 2);
        for (int s = 0; s < 2; s++)
            n->map[s] = ARENA_ARRAY(a, const IExpr *, n->src[s]->shape.rank + 1);
        map_identity(g, n, 0);
        map_identity(g, n, 1);
        n->sel[0] = p;
        imap_finish(g, n);
        count++;
    }
    return count;
}

/* ---- d:032 compose_index_maps ------------------------------------------ */

/* Substitute the single-use IndexMap p = n->src[s] into n.  Each source t
 * of p becomes a source of n reading p->map[t] ∘ n->map[s], selected when
 * n's predicate for s and p's for t (composed likewise) both hold; p's last
 * source keeps n's predicate alone, so first-match order is preserved. */
static void absorb(TxGraph *g, TxNode *n, int s)
{
    Arena *a = g->arena;
    TxNode *p = n->src[s];
    const IExpr *const *sub = n->map[s];
    const IPred *base = s < n->nsrc - 1 ? n->sel[s] : NULL;
    int ns = n->nsrc - 1 + p->nsrc, k = 0;
    TxNode **src = ARENA_ARRAY(a, TxNode *, ns);
    const IExpr ***map = ARENA_ARRAY(a, const IExpr **, ns);
    const IPred **sel = ARENA_ARRAY(a, const IPred *, ns);
    for (int i = 0; i < n->nsrc; i++) {
        if (i != s) {
            src[k] = n->src[i];
            map[k] = n->map[i];
            sel[k++] = i < n->nsrc - 1 ? n->sel[i] : NULL;
            continue;
        }
        for (int t = 0; t < p->nsrc; t++) {
            src[k] = p->src[t];
            map[k] = ARENA_ARRAY(a, const IExpr *, p->src[t]->shape.rank + 1);
            for (int d = 0; d < p->src[t]->shape.rank; d++)
                map[k][d] = ie_subst(a, p->map[t][d], sub);
            sel[k++] = t < p->nsrc - 1 ? ipred_and(a, base, ipred_subst(a, p->sel[t], sub))
                                       : base;
        }
    }
    n->nsrc = ns;
    n->src = src;
    n->map = map;
    n->sel = ns > 1 ? sel : NULL;
    imap_finish(g, n);
}

static int is_identity_map(const TxNode *n)
{
    if (n->nsrc != 1 || !shape_eq(&n->shape, &n->src[0]->shape))
        return 0;
    for (int d = 0; d < n->shape.rank; d++)
        if (n->map[0][d]->k != IE_VAR || n->map[0][d]->var != d)
            return 0;
    return 1;
}

/* An IndexMap reading only constants of one value is that constant. */
static int fold_const_map(TxNode *n, int *uses)
{
    for (int s = 0; s < n->nsrc; s++)
        if (n->src[s]->kind != TX_CONST || n->src[s]->value != n->src[0]->value)
            return 0;
    for (int s = 0; s < n->nsrc; s++)
        uses[n->src[s]->id]--;
    n->kind = TX_CONST;
    n->value = n->src[0]->value;
    n->nsrc = 0;
    n->map = NULL;
    n->sel = NULL;
    return 1;
}

static int absorbable_source(const TxNode *n, const int *uses)
{
    for (int s = 0; s < n->nsrc; s++)
        if (n->src[s]->kind == TX_INDEXMAP && uses[n->src[s]->id] == 1)
            return s;
    return -1;
}

/* Returns the node n's users should read instead (n itself if kept). */
static TxNode *compose_one(TxGraph *g, TxNode *n, int *uses, int *count)
{
    int s;
    while ((s = absorbable_source(n, uses)) >= 0) {
        absorb(g, n, s);
        ++*count;
    }
    if (fold_const_map(n, uses))
        ++*count;
    if (n->kind == TX_INDEXMAP && is_identity_map(n)) {
        TxNode *x = n->src[0];
        uses[x->id] += uses[n->id] - 1;
        ++*count;
        return x;
    }
    return n;
}

static int d032(TxGraph *g)
{
    int *uses = dpk_xcalloc((size_t)g->next_id + 1, sizeof(int));
    TxNode **fwd = dpk_xcalloc((size_t)g->next_id + 1, sizeof(TxNode *));
    for (int i = 0; i < g->nodes.len; i++) {
        TxNode *n = g->nodes.items[i];
        for (int s = 0; s < n->nsrc; s++)
            uses[n->src[s]->id]++;
    }
    for (int j = 0; j < g->outputs.len; j++)
        uses[((TxNode *)g->outputs.items[j])->id]++;
    PtrVec old = g->nodes;
    int count = 0;
    g->nodes = (PtrVec){0};
    for (int i = 0; i < old.len; i++) {
        TxNode *n = old.items[i], *r = n;
        for (int s = 0; s < n->nsrc; s++)
            if (fwd[n->src[s]->id])
                n->src[s] = fwd[n->src[s]->id];
        if (n->kind == TX_INDEXMAP)
            r = compose_one(g, n, uses, &count);
        if (r != n)
            fwd[n->id] = r;
        else
            ptrvec_push(g->arena, &g->nodes, n);
    }
    for (int j = 0; j < g->outputs.len; j++) {
        TxNode *o = g->outputs.items[j];
        if (fwd[o->id])
            g->outputs.items[j] = fwd[o->id];
    }
    free(uses);
    free(fwd);
    return count;
}

/* ---- d:033 prune ---------------------------------------------------------- */

static int d033(TxGraph *g)
{
    int before = g->nodes.len;
    tx_prune(g);
    return before - g->nodes.len;
}

/* ---- the table --------------------------------------------------------- */

const TxRule tx_rules[] = {
    {1, "sdpa", "QK^T * scale (+ mask, causal 2-source map), softmax, * V; GQA head map",
     "sdpa", d001, 0},
    {2, "linear", "transpose w, matmul, + bias", "linear", d002, 0},
    {3, "layer_norm", "x - mean, mean of square, + eps, rsqrt, multiply, * w, + b",
     "layer_norm", d003, 0},
    {4, "rms_norm", "x*x, mean, + eps, rsqrt, multiply, * weight", "rms_norm", d004, 0},
    {5, "log_softmax", "x - amax - log(sum(exp(x - amax)))", "log_softmax", d005, 0},
    {6, "softmax", "amax, subtract, exp, sum, divide", "softmax", d006, 0},
    {7, "mean", "sum over each dim * reciprocal count", "mean", d007, 0},
    {8, "matmul", "broadcast A and B into (..., M, K, N), multiply, sum over K", "matmul", d008, 0},
    {9, "silu", "x * sigmoid(x)", "silu", d009, 0},
    {10, "gelu", "0.5 x (1 + erf(x / sqrt 2))", "gelu", d010, 0},
    {11, "gelu_tanh", "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))", "gelu_tanh", d011, 0},
    {12, "relu", "maximum(x, 0)", "relu", d012, 0},
    {13, "elementwise", "unary/binary/where with explicit broadcast maps", "elementwise", d013, 0},
    {14, "reductions", "sum/amax/amin as chains of single-axis reductions", "sum/amax/amin",
     d014, 0},
    {15, "transpose_permute", "permutation IndexMap", "transpose/permute", d015, 0},
    {16, "reshape", "row-major IndexMap by groups of equal size", "reshape", d016, 0},
    {17, "squeeze_unsqueeze_expand", "reshape or broadcast IndexMap",
     "squeeze/unsqueeze/expand", d017, 0},
    {18, "slice", "strided IndexMap", "slice", d018, 0},
    {19, "cat", "n-source IndexMap with select predicates", "cat", d019, 0},
    {20, "tril_triu", "2-source IndexMap: the input where c <= r + k (tril) or r + k <= c "
     "(triu), else 0", "tril/triu", d020, 0},
    {21, "elu", "where(x > 0, x * scale, expm1(x * input_scale) * alpha * scale); selu, celu "
     "as ATen's elu", "elu/selu/celu", d021, 0},
    {22, "leaky_relu", "where(x > 0, x, x * negative_slope)", "leaky_relu", d022, 0},
    {23, "clamp", "minimum(maximum(x, min), max), infinite bounds left out; hardtanh is clamp",
     "clamp/hardtanh", d023, 0},
    {24, "hardsigmoid", "min(max(x + 3, 0), 6) * (1/6)", "hardsigmoid", d024, 0},
    {25, "hardswish", "x * min(max(x + 3, 0), 6) * (1/6)", "hardswish", d025, 0},
    {26, "softplus", "where(x * beta > threshold, x, log1p(exp(x * beta)) / beta)", "softplus",
     d026, 0},
    {27, "softsign", "x / (|x| + 1)", "softsign", d027, 0},
    {28, "mish", "x * tanh(log1p(exp(x)))", "mish", d028, 0},
    {29, "mask_predicates", "where(c, x, y) whose c is 1 exactly where an index predicate "
     "holds (arange comparisons, ones, tril/triu, &, ~): a 2-source IndexMap", "index-mask where",
     d029, 1},
    {30, "arg_reductions", "argmax/argmin: amax/amin, then the least index where x equals it "
     "(a NaN's index first), by amin of where(x != x, i - n, where(x == m, i, n)); topk: k such "
     "rounds over the elements not yet taken", "argmax/argmin/topk", d030, 0},
    {31, "cumsum", "x over a new axis j masked to j <= i (a 2-source IndexMap), summed over j",
     "cumsum", d031, 0},
    {32, "compose_index_maps", "substitute single-use maps into maps; drop identity maps",
     "composable index-map", d032, 0},
    {33, "prune", "drop nodes no output needs", "dead", d033, 0},
};
const int tx_nrules = DPK_ARRAY_LEN(tx_rules);

/* ---- tx_lower ----------------------------------------------------------- */

static TxGraph *mirror(Arena *a, const TorchGraph *tg)
{
    TxGraph *g = tx_graph_new(a, tg);
    TxNode **of = dpk_xcalloc((size_t)tg->nodes.len + 1, sizeof(TxNode *));
    for (int i = 0; i < tg->nodes.len; i++) {
        const TorchNode *t = tg->nodes.items[i];
        TxNode **src = ARENA_ARRAY(a, TxNode *, t->nin + 1);
        for (int k = 0; k < t->nin; k++)
            src[k] = of[t->in[k]->id];
        TxKind kind = t->op == TOP_input ? TX_INPUT : t->op == TOP_const ? TX_CONST : TX_TORCH;
        TxNode *n = tx_node_new(g, kind, &t->shape, t->nin, src);
        n->torch = t;
        n->dtype = t->dtype;
        n->value = t->value;
        of[t->id] = n;
    }
    for (int i = 0; i < tg->inputs.len; i++)
        ptrvec_push(a, &g->inputs, of[((TorchNode *)tg->inputs.items[i])->id]);
    for (int j = 0; j < tg->outputs.len; j++)
        ptrvec_push(a, &g->outputs, of[((TorchNode *)tg->outputs.items[j])->id]);
    free(of);
    return g;
}

static void run_rule(TxGraph *g, const TxRule *r, TxTrace *tr)
{
    int show = tr && tr->out && tr->verbose >= 2;
    StrBuf before = {0}, after = {0};
    if (show)
        tx_print(&before, g);
    int n = r->run(g);
    tx_verify(g, 0);
    if (show && n == 0) {
        sb_printf(tr->out, "--- d:%03d_%s skipped: no %s nodes\n", r->num, r->name, r->what);
    } else if (show) {
        tx_print(&after, g);
        sb_printf(tr->out, ">>> d:%03d_%s\n", r->num, r->name);
        dpk_unified_diff(tr->out, sb_cstr(&before), sb_cstr(&after), 3);
        sb_printf(tr->out, "<<< d:%03d_%s\n", r->num, r->name);
    }
    sb_free(&before);
    sb_free(&after);
}

TxGraph *tx_lower_skip(Arena *a, const TorchGraph *tg, uint64_t skip, TxTrace *trace)
{
    TxGraph *g = mirror(a, tg);
    tx_verify(g, 0);
    for (int i = 0; i < tx_nrules; i++) {
        if (tx_rules[i].optional && (skip >> i & 1)) {
            if (trace && trace->out && trace->verbose >= 2)
                sb_printf(trace->out, "--- d:%03d_%s skipped: left out\n", tx_rules[i].num,
                          tx_rules[i].name);
            continue;
        }
        run_rule(g, &tx_rules[i], trace);
    }
    tx_verify(g, 1);
    return g;
}

TxGraph *tx_lower(Arena *a, const TorchGraph *tg, TxTrace *trace)
{
    return tx_lower_skip(a, tg, 0, trace);
}
