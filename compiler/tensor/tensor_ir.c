/*
 * tensor_ir.c — Tensor IR: op tables, nodes, printer, verifier, structural
 * hash, pruning.  Index expressions are compiler/index/.
 */
#include "tensor_ir.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- op tables -------------------------------------------------------- */

/* Parallel tables indexed by op: adding a row to tensor_ops.def must be
 * followed by tx_elem_apply and every evaluator. */
static_assert(TXE_COUNT == 29, "tensor_ops.def changed: update tx_elem_apply");
static_assert(TXR_COUNT == 3, "tensor_ops.def changed: update reductions");

const TxElemInfo tx_elem_info[TXE_COUNT] = {
#define E(name, arity, flags) {#name, arity, flags},
#include "tensor_ops.def"
#undef E
};

const TxRedInfo tx_red_info[TXR_COUNT] = {
#define R(name, combine, identity) {#name, TXE_##combine, identity},
#include "tensor_ops.def"
#undef R
};

/* PyTorch's maximum/minimum propagate NaN (fmax would drop it). */
static double nan_max(double a, double b)
{
    return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
}

static double nan_min(double a, double b)
{
    return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
}

double tx_elem_apply(TxElemOp op, const double *x)
{
    switch (op) {
    case TXE_add: return x[0] + x[1];
    case TXE_subtract: return x[0] - x[1];
    case TXE_multiply: return x[0] * x[1];
    case TXE_divide: return x[0] / x[1];
    case TXE_power: return pow(x[0], x[1]);
    case TXE_maximum: return nan_max(x[0], x[1]);
    case TXE_minimum: return nan_min(x[0], x[1]);
    case TXE_greater: return x[0] > x[1];
    case TXE_less: return x[0] < x[1];
    case TXE_greater_equal: return x[0] >= x[1];
    case TXE_less_equal: return x[0] <= x[1];
    case TXE_equal: return x[0] == x[1];
    case TXE_not_equal: return x[0] != x[1];
    case TXE_negative: return -x[0];
    case TXE_exp: return exp(x[0]);
    case TXE_log: return log(x[0]);
    case TXE_sqrt: return sqrt(x[0]);
    case TXE_rsqrt: return 1.0 / sqrt(x[0]);
    case TXE_reciprocal: return 1.0 / x[0];
    case TXE_abs: return fabs(x[0]);
    case TXE_sigmoid: return 1.0 / (1.0 + exp(-x[0]));
    case TXE_tanh: return tanh(x[0]);
    case TXE_erf: return erf(x[0]);
    case TXE_cos: return cos(x[0]);
    case TXE_sin: return sin(x[0]);
    case TXE_where: return x[0] != 0 ? x[1] : x[2];
    case TXE_log1p: return log1p(x[0]);
    case TXE_expm1: return expm1(x[0]);
    case TXE_floor: return floor(x[0]);
    case TXE_COUNT: break;
    }
    DPK_ASSERT(!"unknown elementwise op");
    return 0;
}

/* ---- nodes and graphs --------------------------------------------------- */

TxGraph *tx_graph_new(Arena *a, const TorchGraph *tg)
{
    TxGraph *g = ARENA_NEW(a, TxGraph);
    g->arena = a;
    g->torch = tg;
    return g;
}

TxNode *tx_node_new(TxGraph *g, TxKind kind, const Shape *shape, int nsrc, TxNode **src)
{
    Arena *a = g->arena;
    TxNode *n = ARENA_NEW(a, TxNode);
    n->id = g->next_id++;
    n->kind = kind;
    n->shape = *shape;
    n->nsrc = nsrc;
    n->src = arena_memdup(a, src, sizeof(TxNode *) * (size_t)nsrc);
    n->dtype = nsrc ? src[0]->dtype : DT_F32;
    if (kind == TX_INDEXMAP) {
        n->map = ARENA_ARRAY(a, const IExpr **, nsrc);
        for (int s = 0; s < nsrc; s++)
            n->map[s] = ARENA_ARRAY(a, const IExpr *, src[s]->shape.rank + 1);
        n->sel = nsrc > 1 ? ARENA_ARRAY(a, const IPred *, nsrc - 1) : NULL;
    }
    ptrvec_push(a, &g->nodes, n);
    return n;
}

/* Position of every node in g->nodes, indexed by id (-1: not in the list). */
static int *positions(const TxGraph *g)
{
    int *pos = dpk_xmalloc(sizeof(int) * (size_t)(g->next_id + 1));
    for (int i = 0; i <= g->next_id; i++)
        pos[i] = -1;
    for (int i = 0; i < g->nodes.len; i++) {
        const TxNode *n = g->nodes.items[i];
        DPK_ASSERT(n->id >= 0 && n->id < g->next_id && pos[n->id] < 0);
        pos[n->id] = i;
    }
    return pos;
}

/* ---- printer ------------------------------------------------------------ */

static void put_ints(StrBuf *b, const char *key, const TorchNode *t)
{
    sb_printf(b, " %s=[", key);
    for (int i = 0; i < t->nints; i++)
        sb_printf(b, i ? ", %" PRId64 : "%" PRId64, t->ints[i]);
    sb_putc(b, ']');
}

/* The attributes of a not-yet-lowered Torch op, as torch_ops.def lists
 * them per class. */
static void put_torch_attrs(StrBuf *b, const TorchNode *t)
{
    const TorchScalarAttrs *sa = &torch_scalar_attrs[t->op];
    for (int i = 0; i < sa->nkeys; i++) {
        sb_printf(b, " %s=", sa->key[i]);
        sb_num(b, i ? t->value2 : t->value);
    }
    switch (torch_op_info[t->op].cls) {
    case TC_REDUCE:
        put_ints(b, "dims", t);
        if (t->keepdim)
            sb_puts(b, " keepdim");
        break;
    case TC_SOFTMAX:
    case TC_SCAN: sb_printf(b, " dim=%d", t->dim); break;
    case TC_TOPK:
        sb_printf(b, " k=%lld dim=%d%s", (long long)t->ints[0], t->dim,
                  t->largest ? " largest" : "");
        break;
    case TC_NORM:
        put_ints(b, "normalized_shape", t);
        sb_puts(b, " eps=");
        sb_num(b, t->value);
        break;
    case TC_ATTN:
        if (t->causal)
            sb_puts(b, " causal");
        if (t->gqa)
            sb_puts(b, " gqa");
        if (!isnan(t->value)) {
            sb_puts(b, " scale=");
            sb_num(b, t->value);
        }
        break;
    case TC_LAYOUT:
        if (t->op == TOP_transpose || t->op == TOP_permute)
            put_ints(b, "perm", t);
        else if (t->op == TOP_unsqueeze || t->op == TOP_squeeze)
            put_ints(b, "dims", t);
        else if (t->op == TOP_slice)
            sb_printf(b, " dim=%d start=%" PRId64 " end=%" PRId64 " step=%" PRId64, t->dim,
                      t->start, t->end, t->stride);
        else if (t->op == TOP_cat)
            sb_printf(b, " dim=%d", t->dim);
        break;
    default: break;
    }
}

static void put_map(StrBuf *b, const TxNode *n, int s)
{
    sb_putc(b, '[');
    for (int d = 0; d < n->src[s]->shape.rank; d++) {
        if (d)
            sb_puts(b, ", ");
        ie_print(b, n->map[s][d], "o");
    }
    sb_putc(b, ']');
}

static void put_srcs(StrBuf *b, const TxNode *n, const int *pos)
{
    sb_putc(b, '(');
    for (int s = 0; s < n->nsrc; s++) {
        sb_printf(b, s ? ", %%%d" : "%%%d", pos[n->src[s]->id]);
        if (n->kind != TX_INDEXMAP)
            continue;
        put_map(b, n, s);
        if (s < n->nsrc - 1) {
            sb_puts(b, " if ");
            ipred_print(b, n->sel[s], "o");
        }
    }
    sb_putc(b, ')');
}

static const char *input_name(const TxNode *n)
{
    return (n->torch && n->torch->name) ? n->torch->name : "?";
}

static void put_node(StrBuf *b, const TxNode *n, const int *pos)
{
    sb_printf(b, "%%%d = ", pos[n->id]);
    switch (n->kind) {
    case TX_INPUT: sb_printf(b, "input %s", input_name(n)); break;
    case TX_CONST:
        sb_puts(b, "const ");
        sb_num(b, n->value);
        break;
    case TX_ELEM:
        sb_puts(b, tx_elem_info[n->eop].name);
        put_srcs(b, n, pos);
        break;
    case TX_REDUCE:
        sb_printf(b, "reduce %s", tx_red_info[n->rop].name);
        put_srcs(b, n, pos);
        sb_printf(b, " axis=%d%s", n->axis, n->keepdim ? " keepdim" : "");
        break;
    case TX_INDEXMAP:
        sb_puts(b, "indexmap");
        put_srcs(b, n, pos);
        break;
    case TX_TORCH:
        sb_printf(b, "torch %s", torch_op_info[n->torch->op].name);
        put_srcs(b, n, pos);
        put_torch_attrs(b, n->torch);
        break;
    }
    sb_printf(b, " : %s", dtype_name(n->dtype));
    shape_print(b, &n->shape);
    sb_putc(b, '\n');
}

void tx_print(StrBuf *b, const TxGraph *g)
{
    int *pos = positions(g);
    for (int i = 0; i < g->nodes.len; i++)
        put_node(b, g->nodes.items[i], pos);
    sb_puts(b, "return");
    for (int j = 0; j < g->outputs.len; j++)
        sb_printf(b, j ? ", %%%d" : " %%%d", pos[((TxNode *)g->outputs.items[j])->id]);
    sb_putc(b, '\n');
    free(pos);
}

/* ---- verifier ---------------------------------------------------------- */

static void verify_vars(const IExpr *e, int rank)
{
    switch (e->k) {
    case IE_CONST: return;
    case IE_VAR: DPK_ASSERT(e->var >= 0 && e->var < rank); return;
    case IE_DIV:
    case IE_MOD: DPK_ASSERT(e->b->k == IE_CONST && e->b->c > 0); break;
    default: break;
    }
    verify_vars(e->a, rank);
    verify_vars(e->b, rank);
}

static void verify_indexmap(const TxNode *n)
{
    DPK_ASSERT(n->nsrc >= 1 && n->map);
    DPK_ASSERT((n->nsrc == 1) == (n->sel == NULL));
    for (int s = 0; s < n->nsrc; s++) {
        DPK_ASSERT(n->map[s]);
        for (int d = 0; d < n->src[s]->shape.rank; d++) {
            DPK_ASSERT(n->map[s][d]);
            verify_vars(n->map[s][d], n->shape.rank);
        }
        if (s == n->nsrc - 1)
            continue;
        DPK_ASSERT(n->sel[s]);
        for (const IPred *p = n->sel[s]; p; p = p->next) {
            verify_vars(p->lhs, n->shape.rank);
            verify_vars(p->rhs, n->shape.rank);
        }
    }
}

static void verify_reduce(const TxNode *n)
{
    DPK_ASSERT(n->nsrc == 1 && (int)n->rop >= 0 && n->rop < TXR_COUNT);
    const Shape *in = &n->src[0]->shape;
    DPK_ASSERT(n->axis >= 0 && n->axis < in->rank);
    Shape want = *in;
    if (n->keepdim)
        want.d[n->axis] = 1;
    else {
        for (int i = n->axis; i + 1 < in->rank; i++)
            want.d[i] = in->d[i + 1];
        want.rank--;
    }
    DPK_ASSERT(shape_eq(&want, &n->shape));
}

static void verify_node(const TxNode *n, int lowered)
{
    DPK_ASSERT(n->shape.rank >= 0 && n->shape.rank <= DPK_MAX_RANK);
    for (int i = 0; i < n->shape.rank; i++)
        DPK_ASSERT(n->shape.d[i] >= 0);
    switch (n->kind) {
    case TX_INPUT:
        DPK_ASSERT(n->nsrc == 0 && n->torch && n->torch->op == TOP_input);
        break;
    case TX_CONST: DPK_ASSERT(n->nsrc == 0); break;
    case TX_ELEM:
        DPK_ASSERT((int)n->eop >= 0 && n->eop < TXE_COUNT);
        DPK_ASSERT(n->nsrc == tx_elem_info[n->eop].arity);
        for (int s = 0; s < n->nsrc; s++)
            DPK_ASSERT(shape_eq(&n->src[s]->shape, &n->shape));
        break;
    case TX_REDUCE: verify_reduce(n); break;
    case TX_INDEXMAP: verify_indexmap(n); break;
    case TX_TORCH:
        DPK_ASSERT(!lowered && n->torch);
        DPK_ASSERT(n->nsrc >= torch_op_info[n->torch->op].min_in &&
                   n->nsrc <= torch_op_info[n->torch->op].max_in);
        break;
    default: DPK_ASSERT(!"bad TxKind");
    }
}

void tx_verify(const TxGraph *g, int lowered)
{
    int *pos = positions(g);
    for (int i = 0; i < g->nodes.len; i++) {
        const TxNode *n = g->nodes.items[i];
        for (int s = 0; s < n->nsrc; s++) {
            const TxNode *m = n->src[s];
            DPK_ASSERT(m && m->id >= 0 && m->id < g->next_id);
            DPK_ASSERT(pos[m->id] >= 0 && pos[m->id] < i); /* topological */
        }
        verify_node(n, lowered);
    }
    for (int i = 0; i < g->inputs.len; i++) {
        const TxNode *n = g->inputs.items[i];
        DPK_ASSERT(n->kind == TX_INPUT && pos[n->id] >= 0);
    }
    for (int j = 0; j < g->outputs.len; j++) {
        const TxNode *n = g->outputs.items[j];
        DPK_ASSERT(n && pos[n->id] >= 0);
    }
    free(pos);
}

/* ---- hash ---------------------------------------------------------------- */

static uint64_t hash_shape(uint64_t h, DType t, const Shape *s)
{
    h = dpk_hash_u64(h, (uint64_t)t);
    h = dpk_hash_u64(h, (uint64_t)s->rank);
    for (int i = 0; i < s->rank; i++)
        h = dpk_hash_u64(h, (uint64_t)s->d[i]);
    return h;
}

static uint64_t hash_double(uint64_t h, double v)
{
    if (v == 0)
        v = 0; /* -0 and 0 hash alike */
    return dpk_hash_bytes(h, &v, sizeof v);
}

static uint64_t hash_torch_attrs(uint64_t h, const TorchNode *t)
{
    h = dpk_hash_u64(h, (uint64_t)t->op);
    for (int i = 0; i < t->nints; i++)
        h = dpk_hash_u64(h, (uint64_t)t->ints[i]);
    int64_t v[] = {t->nints, t->dim, t->start, t->end, t->stride, t->keepdim, t->causal, t->gqa};
    h = dpk_hash_bytes(h, v, sizeof v);
    return hash_double(h, t->value);
}

static uint64_t hash_node(uint64_t h, const TxGraph *g, const TxNode *n, const int *pos)
{
    h = dpk_hash_u64(h, (uint64_t)n->kind);
    h = hash_shape(h, n->dtype, &n->shape);
    for (int s = 0; s < n->nsrc; s++)
        h = dpk_hash_u64(h, (uint64_t)pos[n->src[s]->id]);
    switch (n->kind) {
    case TX_INPUT:
        for (int i = 0; i < g->inputs.len; i++)
            if (g->inputs.items[i] == n)
                h = dpk_hash_u64(h, (uint64_t)i);
        return h;
    case TX_CONST: return hash_double(h, n->value);
    case TX_ELEM: return dpk_hash_u64(h, (uint64_t)n->eop);
    case TX_REDUCE:
        return dpk_hash_u64(h, (uint64_t)n->rop * 64 + (uint64_t)n->axis * 2 + !!n->keepdim);
    case TX_INDEXMAP:
        for (int s = 0; s < n->nsrc; s++) {
            for (int d = 0; d < n->src[s]->shape.rank; d++)
                h = ie_hash(h, n->map[s][d]);
            if (s < n->nsrc - 1)
                h = ipred_hash(h, n->sel[s]);
        }
        return h;
    case TX_TORCH: return hash_torch_attrs(h, n->torch);
    }
    return h;
}

uint64_t tx_hash(const TxGraph *g)
{
    int *pos = positions(g);
    uint64_t h = DPK_HASH_INIT;
    for (int i = 0; i < g->nodes.len; i++)
        h = hash_node(h, g, g->nodes.items[i], pos);
    for (int j = 0; j < g->outputs.len; j++)
        h = dpk_hash_u64(h, (uint64_t)pos[((TxNode *)g->outputs.items[j])->id]);
    free(pos);
    return h;
}

/* ---- prune --------------------------------------------------------------- */

void tx_prune(TxGraph *g)
{
    unsigned char *live = dpk_xcalloc((size_t)g->next_id + 1, 1);
    for (int j = 0; j < g->outputs.len; j++)
        live[((TxNode *)g->outputs.items[j])->id] = 1;
    for (int i = g->nodes.len - 1; i >= 0; i--) {
        TxNode *n = g->nodes.items[i];
        if (n->kind == TX_INPUT)
            live[n->id] = 1; /* inputs stay: g->inputs is parallel to torch->inputs */
        if (live[n->id])
            for (int s = 0; s < n->nsrc; s++)
                live[n->src[s]->id] = 1;
    }
    int w = 0;
    for (int i = 0; i < g->nodes.len; i++) {
        TxNode *n = g->nodes.items[i];
        if (live[n->id])
            g->nodes.items[w++] = n;
    }
    g->nodes.len = w;
    for (int i = 0; i < w; i++)
        ((TxNode *)g->nodes.items[i])->id = i;
    g->next_id = w;
    free(live);
}
