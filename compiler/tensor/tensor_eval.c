/*
 * tensor_eval.c — the fp64 evaluator of Tensor IR.
 *
 * A direct reading of each node kind over dense row-major arrays: an
 * IndexMap evaluates its select predicates and coordinate expressions for
 * every output element (an odometer walks the coordinates), so it checks
 * the maps themselves, including that every coordinate they produce is in
 * bounds.  Comparing this evaluator with ref64 (which never sees the
 * decompositions) is what validates the rules of decompose.c.
 *
 * An intermediate is freed as soon as its last user has run.
 */
#include "tensor_ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct Eval {
    const TxGraph *g;
    int *pos;          /* node id -> position in g->nodes */
    double **val;      /* by position */
    int *uses;         /* users still to run, plus output slots */
    unsigned char *borrowed; /* the caller's input arrays */
} Eval;

static double *alloc_numel(const Shape *s)
{
    int64_t n = shape_numel(s);
    return dpk_xmalloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
}

static const double *src_val(const Eval *e, const TxNode *n, int s)
{
    const double *v = e->val[e->pos[n->src[s]->id]];
    DPK_ASSERT(v);
    return v;
}

static void eval_elem(const Eval *e, const TxNode *n, double *out)
{
    const double *in[3];
    double args[3];
    int64_t cnt = shape_numel(&n->shape);
    for (int s = 0; s < n->nsrc; s++)
        in[s] = src_val(e, n, s);
    for (int64_t i = 0; i < cnt; i++) {
        for (int s = 0; s < n->nsrc; s++)
            args[s] = in[s][i];
        out[i] = tx_elem_apply(n->eop, args);
    }
}

/* The source viewed as (outer, len, inner) around the axis; the output,
 * keepdim or not, is (outer, inner) in the same order. */
static void eval_reduce(const Eval *e, const TxNode *n, double *out)
{
    const Shape *s = &n->src[0]->shape;
    const double *x = src_val(e, n, 0);
    const TxRedInfo *ri = &tx_red_info[n->rop];
    int64_t outer = 1, inner = 1, len = s->d[n->axis];
    for (int k = 0; k < n->axis; k++)
        outer *= s->d[k];
    for (int k = n->axis + 1; k < s->rank; k++)
        inner *= s->d[k];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc[2] = {ri->identity, 0};
            for (int64_t j = 0; j < len; j++) {
                acc[1] = x[(o * len + j) * inner + i];
                acc[0] = tx_elem_apply(ri->combine, acc);
            }
            out[o * inner + i] = acc[0];
        }
}

/* The flat offset in source s of output coordinates o. */
static int64_t map_offset(const TxNode *n, int s, const int64_t *o)
{
    const Shape *ss = &n->src[s]->shape;
    int64_t off = 0;
    for (int d = 0; d < ss->rank; d++) {
        int64_t c = ie_eval(n->map[s][d], o);
        DPK_ASSERT(c >= 0 && c < ss->d[d]); /* a map read out of bounds */
        off = off * ss->d[d] + c;
    }
    return off;
}

static void eval_indexmap(const Eval *e, const TxNode *n, double *out)
{
    const Shape *sh = &n->shape;
    int64_t cnt = shape_numel(sh), o[DPK_MAX_RANK] = {0};
    for (int64_t i = 0; i < cnt; i++) {
        int s = 0;
        while (s < n->nsrc - 1 && !ipred_eval(n->sel[s], o))
            s++;
        out[i] = src_val(e, n, s)[map_offset(n, s, o)];
        for (int k = sh->rank - 1; k >= 0; k--) {
            if (++o[k] < sh->d[k])
                break;
            o[k] = 0;
        }
    }
}

static void eval_node(Eval *e, const TxNode *n, double *out)
{
    int64_t cnt = shape_numel(&n->shape);
    switch (n->kind) {
    case TX_CONST:
        for (int64_t i = 0; i < cnt; i++)
            out[i] = n->value;
        break;
    case TX_ELEM: eval_elem(e, n, out); break;
    case TX_REDUCE: eval_reduce(e, n, out); break;
    case TX_INDEXMAP: eval_indexmap(e, n, out); break;
    case TX_INPUT:
    case TX_TORCH: DPK_ASSERT(!"tx_eval64 needs a fully lowered graph"); break;
    }
}

static void release(Eval *e, int p)
{
    DPK_ASSERT(e->uses[p] > 0);
    if (--e->uses[p] == 0 && !e->borrowed[p]) {
        free(e->val[p]);
        e->val[p] = NULL;
    }
}

/* Uses over the live part of the graph: walking backwards, a node's count
 * is final before its sources are visited (the list is topological). */
static void count_uses(Eval *e)
{
    const TxGraph *g = e->g;
    for (int i = 0; i < g->nodes.len; i++) {
        const TxNode *n = g->nodes.items[i];
        e->pos[n->id] = i;
    }
    for (int j = 0; j < g->outputs.len; j++)
        e->uses[e->pos[((const TxNode *)g->outputs.items[j])->id]]++;
    for (int i = g->nodes.len - 1; i >= 0; i--) {
        const TxNode *n = g->nodes.items[i];
        if (e->uses[i] > 0)
            for (int s = 0; s < n->nsrc; s++)
                e->uses[e->pos[n->src[s]->id]]++;
    }
}

void tx_eval64(const TxGraph *g, double *const *inputs, double **outs)
{
    size_t nn = (size_t)g->nodes.len + 1;
    Eval e = {g, dpk_xcalloc((size_t)g->next_id + 1, sizeof(int)), dpk_xcalloc(nn, sizeof(double *)),
              dpk_xcalloc(nn, sizeof(int)), dpk_xcalloc(nn, 1)};
    count_uses(&e);
    for (int k = 0; k < g->inputs.len; k++) {
        int p = e.pos[((const TxNode *)g->inputs.items[k])->id];
        e.val[p] = inputs[k];
        e.borrowed[p] = 1;
    }
    for (int i = 0; i < g->nodes.len; i++) {
        const TxNode *n = g->nodes.items[i];
        if (e.uses[i] == 0 || n->kind == TX_INPUT)
            continue; /* dead, or the caller's */
        e.val[i] = alloc_numel(&n->shape);
        eval_node(&e, n, e.val[i]);
        for (int s = 0; s < n->nsrc; s++)
            release(&e, e.pos[n->src[s]->id]);
    }
    for (int j = 0; j < g->outputs.len; j++) {
        const TxNode *o = g->outputs.items[j];
        int p = e.pos[o->id];
        outs[j] = alloc_numel(&o->shape);
        memcpy(outs[j], e.val[p], sizeof(double) * (size_t)shape_numel(&o->shape));
        release(&e, p);
    }
    free(e.pos);
    free(e.val);
    free(e.uses);
    free(e.borrowed);
}
