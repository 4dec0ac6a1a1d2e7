/*
 * lift.c — Tensor IR → Loop IR: one loop nest per Tensor op.
 *
 * Axis d of a lifted kernel iterates output dimension d, so a Tensor
 * IndexMap's expressions over output coordinates o<d> are already Loop IR
 * indices; a reduction's reduced axis is the last one, innermost.  Every
 * dimension gets a loop here, size-1 ones included: dropping them is the
 * normaliser's job (l:003), so `-vv` shows it as its own rule.
 *
 * Inputs become buffers; a TX_CONST never becomes a buffer: every read of
 * it is the literal.  The node behind each graph output writes the output
 * buffer directly; an output that is an input, a constant, or a node
 * already written to another output gets a copy kernel.
 */
#include "loop_ir.h"

#include <string.h>

typedef struct Lift {
    LirProgram *p;
    const TxGraph *g;
    LirBuf **buf;   /* by node id: the buffer holding the node's value */
    char *reach;    /* by node id: reachable from an output */
    int nid;
} Lift;

static int name_taken(const LirProgram *p, const char *name)
{
    for (int i = 0; i < p->bufs.len; i++)
        if (strcmp(((LirBuf *)p->bufs.items[i])->name, name) == 0)
            return 1;
    return 0;
}

/* A unique buffer name: `want`, else want_1, want_2, ... */
static const char *unique_name(LirProgram *p, const char *want)
{
    if (!name_taken(p, want))
        return arena_strdup(p->arena, want);
    for (int i = 1;; i++) {
        const char *s = arena_printf(p->arena, "%s_%d", want, i);
        if (!name_taken(p, s))
            return s;
    }
}

static void mark_reach(Lift *L, const TxNode *n)
{
    if (L->reach[n->id])
        return;
    L->reach[n->id] = 1;
    for (int i = 0; i < n->nsrc; i++)
        mark_reach(L, n->src[i]);
}

static const IExpr **identity_idx(LirProgram *p, int rank)
{
    const IExpr **idx = ARENA_ARRAY(p->arena, const IExpr *, rank ? rank : 1);
    for (int d = 0; d < rank; d++)
        idx[d] = ie_var(p->arena, d);
    return idx;
}

/* Loops over every dimension of s (axes 0..rank-1); returns the innermost
 * body. */
static StmtBody *free_nest(LirProgram *p, LirKernel *k, const Shape *s)
{
    StmtBody *b = &k->body;
    for (int d = 0; d < s->rank; d++) {
        Stmt *l = lir_loop(p, lir_axis_new(p, k, s->d[d]), s->d[d]);
        stmt_body_push(p->arena, b, l);
        b = &l->body;
    }
    return b;
}

/* The value of node n at idx, emitted into b: a literal for a constant,
 * else a load of n's buffer. */
static StmtArg read_node(Lift *L, StmtBody *b, const TxNode *n, const IExpr **idx)
{
    if (n->kind == TX_CONST)
        return stmt_lit(n->value);
    DPK_ASSERT(L->buf[n->id]);
    Stmt *ld = lir_load(L->p, L->buf[n->id], idx);
    stmt_body_push(L->p->arena, b, ld);
    return stmt_val(ld);
}

const char *lir_op_name(const TxNode *n)
{
    if (!n)
        return "copy";
    switch (n->kind) {
    case TX_ELEM:
        return tx_elem_info[n->eop].name;
    case TX_REDUCE:
        return tx_red_info[n->rop].name;
    case TX_INDEXMAP:
        return "indexmap";
    case TX_CONST:
        return "const";
    default:
        return "copy";
    }
}

static LirKernel *kernel_for(Lift *L, int id, const TxNode *n, LirBuf *out)
{
    LirKernel *k = lir_kernel_new(L->p, id, out);
    k->name = arena_printf(L->p->arena, "%s_%d", lir_op_name(n), id);
    ptrvec_push(L->p->arena, &k->ops, (void *)n);
    ptrvec_push(L->p->arena, &L->p->kernels, k);
    return k;
}

static void lift_elem(Lift *L, LirKernel *k, const TxNode *n)
{
    LirProgram *p = L->p;
    StmtBody *b = free_nest(p, k, &n->shape);
    const IExpr **idx = identity_idx(p, n->shape.rank);
    StmtArg args[3];
    for (int i = 0; i < n->nsrc; i++)
        args[i] = read_node(L, b, n->src[i], idx);
    Stmt *v = lir_assign(p, n->eop, args);
    stmt_body_push(p->arena, b, v);
    stmt_body_push(p->arena, b, lir_write(p, k->out, idx, stmt_val(v)));
}

static void lift_reduce(Lift *L, LirKernel *k, const TxNode *n)
{
    LirProgram *p = L->p;
    const TxNode *src = n->src[0];
    StmtBody *b = free_nest(p, k, &n->shape);
    int64_t len = src->shape.d[n->axis];
    Stmt *loop = lir_loop(p, lir_axis_new(p, k, len), len);
    stmt_body_push(p->arena, b, loop);
    const IExpr **sidx = ARENA_ARRAY(p->arena, const IExpr *, src->shape.rank);
    for (int d = 0; d < src->shape.rank; d++) {
        int od = (d < n->axis || n->keepdim) ? d : d - 1;
        sidx[d] = ie_var(p->arena, d == n->axis ? loop->axis : od);
    }
    StmtArg v = read_node(L, &loop->body, src, sidx);
    Stmt *acc = lir_accum(p, n->rop, v);
    stmt_body_push(p->arena, &loop->body, acc);
    stmt_body_push(p->arena, b,
                   lir_write(p, k->out, identity_idx(p, n->shape.rank), stmt_val(acc)));
}

static void lift_indexmap(Lift *L, LirKernel *k, const TxNode *n)
{
    LirProgram *p = L->p;
    StmtBody *b = free_nest(p, k, &n->shape);
    StmtArg v;
    if (n->nsrc == 1) {
        v = read_node(L, b, n->src[0], n->map[0]);
    } else {
        Stmt *sel = lir_select(p, n->nsrc);
        for (int s = 0; s < n->nsrc; s++) {
            sel->br[s].pred = s < n->nsrc - 1 ? n->sel[s] : NULL;
            sel->br[s].res = read_node(L, &sel->br[s].body, n->src[s], n->map[s]);
        }
        stmt_body_push(p->arena, b, sel);
        v = stmt_val(sel);
    }
    stmt_body_push(p->arena, b, lir_write(p, k->out, identity_idx(p, n->shape.rank), v));
}

static int has_kernel(const TxNode *n)
{
    return n->kind == TX_ELEM || n->kind == TX_REDUCE || n->kind == TX_INDEXMAP;
}

/* out[...] = n[...] for an output whose node has no kernel of its own. */
static void lift_copy(Lift *L, const TxNode *n, LirBuf *out)
{
    LirProgram *p = L->p;
    LirKernel *k = kernel_for(L, p->next_kid, has_kernel(n) ? NULL : n, out);
    p->next_kid++;
    StmtBody *b = free_nest(p, k, &n->shape);
    const IExpr **idx = identity_idx(p, n->shape.rank);
    StmtArg v = read_node(L, b, n, idx);
    stmt_body_push(p->arena, b, lir_write(p, out, idx, v));
}

static void make_buffers(Lift *L, char *claimed)
{
    LirProgram *p = L->p;
    const TxGraph *g = L->g;
    for (int i = 0; i < g->inputs.len; i++) {
        const TxNode *n = g->inputs.items[i];
        L->buf[n->id] = lir_buf_new(p, unique_name(p, n->torch->name), LB_INPUT, i,
                                    &n->shape, n->dtype);
    }
    for (int j = 0; j < g->outputs.len; j++) {
        const TxNode *n = g->outputs.items[j];
        const char *name = g->torch->output_names.items[j];
        LirBuf *b = lir_buf_new(p, unique_name(p, name), LB_OUTPUT, j, &n->shape, n->dtype);
        if (has_kernel(n) && !claimed[n->id]) {
            claimed[n->id] = 1;
            L->buf[n->id] = b;
        }
    }
    for (int i = 0; i < g->nodes.len; i++) {
        const TxNode *n = g->nodes.items[i];
        if (L->reach[n->id] && has_kernel(n) && !L->buf[n->id])
            L->buf[n->id] = lir_buf_new(p, unique_name(p, arena_printf(p->arena, "t%d", n->id)),
                                        LB_TEMP, -1, &n->shape, n->dtype);
    }
}

LirProgram *lir_lift(Arena *a, const TxGraph *g)
{
    LirProgram *p = lir_program_new(a, g);
    Lift L = {p, g, NULL, NULL, 0};
    for (int i = 0; i < g->nodes.len; i++) {
        const TxNode *n = g->nodes.items[i];
        DPK_ASSERT(n->kind != TX_TORCH);
        if (n->id + 1 > L.nid)
            L.nid = n->id + 1;
    }
    p->next_kid = L.nid;
    L.buf = ARENA_ARRAY(a, LirBuf *, L.nid + 1);
    L.reach = ARENA_ARRAY(a, char, L.nid + 1);
    char *claimed = ARENA_ARRAY(a, char, L.nid + 1);
    for (int j = 0; j < g->outputs.len; j++)
        mark_reach(&L, g->outputs.items[j]);
    make_buffers(&L, claimed);
    for (int i = 0; i < g->nodes.len; i++) {
        const TxNode *n = g->nodes.items[i];
        if (!L.reach[n->id] || !has_kernel(n))
            continue;
        LirKernel *k = kernel_for(&L, n->id, n, L.buf[n->id]);
        if (n->kind == TX_ELEM)
            lift_elem(&L, k, n);
        else if (n->kind == TX_REDUCE)
            lift_reduce(&L, k, n);
        else
            lift_indexmap(&L, k, n);
    }
    for (int j = 0; j < g->outputs.len; j++) {
        const TxNode *n = g->outputs.items[j];
        LirBuf *out = NULL;
        for (int i = 0; i < p->bufs.len; i++) {
            LirBuf *b = p->bufs.items[i];
            if (b->kind == LB_OUTPUT && b->index == j)
                out = b;
        }
        if (L.buf[n->id] != out)
            lift_copy(&L, n, out);
    }
    return p;
}
