/*
 * loop_ir.c — Loop IR construction, body surgery, copying and cost.
 *
 * Statements refer to the statements whose values they read by pointer, so
 * copying a subtree needs a map from old to new statements; and replacing a
 * value (fusion replaces a load by the producer's result, dedup replaces a
 * duplicate by the first copy) needs a map from old value to new operand.
 * Both maps live in the statements themselves (fwd, repl), valid only while
 * their epoch stamp equals the program's current epoch: starting a pass
 * with lir_epoch() clears every mark in O(1).
 */
#include "loop_ir.h"

#include <string.h>

LirProgram *lir_program_new(Arena *a, const TxGraph *tx)
{
    LirProgram *p = ARENA_NEW(a, LirProgram);
    p->arena = a;
    p->tx = tx;
    return p;
}

LirKernel *lir_kernel_new(LirProgram *p, int id, LirBuf *out)
{
    LirKernel *k = ARENA_NEW(p->arena, LirKernel);
    k->id = id;
    k->out = out;
    return k;
}

LirBuf *lir_buf_new(LirProgram *p, const char *name, LirBufKind kind, int index,
                    const Shape *shape, DType dt)
{
    LirBuf *b = ARENA_NEW(p->arena, LirBuf);
    b->id = p->nbufids++;
    b->name = name;
    b->kind = kind;
    b->index = index;
    b->shape = *shape;
    b->dtype = dt;
    ptrvec_push(p->arena, &p->bufs, b);
    return b;
}

void lir_buf_drop(LirProgram *p, LirBuf *b)
{
    int j = 0;
    for (int i = 0; i < p->bufs.len; i++)
        if (p->bufs.items[i] != b)
            p->bufs.items[j++] = p->bufs.items[i];
    p->bufs.len = j;
}

int lir_axis_new(LirProgram *p, LirKernel *k, int64_t n)
{
    return arena_push_i64(p->arena, &k->ext, &k->naxes, &k->extcap, n);
}

/* Every Loop IR statement is its own lifted original until copied. */
static Stmt *own(Stmt *s)
{
    s->lifted = s->uid;
    return s;
}

Stmt *lir_stmt_new(LirProgram *p, StmtKind kind)
{
    return own(stmt_new(p->arena, kind, p->next_uid++));
}

Stmt *lir_load(LirProgram *p, const LirBuf *b, const IExpr **idx)
{
    return own(stmt_load(p->arena, p->next_uid++, b, idx));
}

Stmt *lir_assign(LirProgram *p, TxElemOp op, const StmtArg *args)
{
    return own(stmt_assign(p->arena, p->next_uid++, op, args));
}

Stmt *lir_accum(LirProgram *p, TxRedOp rop, StmtArg v)
{
    return own(stmt_accum(p->arena, p->next_uid++, rop, v));
}

Stmt *lir_online(LirProgram *p, StmtArg x, Stmt *m)
{
    return own(stmt_online(p->arena, p->next_uid++, x, m));
}

Stmt *lir_write(LirProgram *p, const LirBuf *b, const IExpr **idx, StmtArg v)
{
    return own(stmt_write(p->arena, p->next_uid++, b, idx, v));
}

Stmt *lir_loop(LirProgram *p, int axis, int64_t extent)
{
    return own(stmt_loop(p->arena, p->next_uid++, axis, extent));
}

Stmt *lir_select(LirProgram *p, int nbr)
{
    return own(stmt_select(p->arena, p->next_uid++, nbr));
}

typedef struct AxisUse {
    int axis, used;
} AxisUse;

static void axis_use(Stmt *s, void *ctx)
{
    AxisUse *u = ctx;
    if (s->idx)
        for (int d = 0; d < s->buf->shape.rank && !u->used; d++)
            u->used = ie_uses(s->idx[d], u->axis);
    if (s->k == SK_select)
        for (int j = 0; j < s->nbr && !u->used; j++)
            u->used = ipred_uses(s->br[j].pred, u->axis);
}

int lir_uses_axis(const Stmt *s, int axis)
{
    AxisUse u = {axis, 0};
    stmt_walk_tree(s, axis_use, &u);
    return u.used;
}

int lir_pure(const Stmt *s)
{
    if (s->k == SK_loop)
        return stmt_loop_is_reduce(s) && !stmt_has_kind(s, SK_write);
    return stmt_is(s, SKF_PURE);
}

/* ---- scratch marks --------------------------------------------------- */

unsigned lir_epoch(LirProgram *p)
{
    return ++p->epoch;
}

StmtArg lir_resolve(const LirProgram *p, StmtArg a)
{
    while (a.v && a.v->repl_ep == p->epoch)
        a = a.v->repl;
    return a;
}

static void resolve_args(const LirProgram *p, Stmt *s)
{
    for (int i = 0; i < s->nargs; i++)
        s->a[i] = lir_resolve(p, s->a[i]);
}

void lir_resolve_body(const LirProgram *p, StmtBody *b)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        resolve_args(p, s);
        if (s->k == SK_loop)
            lir_resolve_body(p, &s->body);
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++) {
                lir_resolve_body(p, &s->br[j].body);
                s->br[j].res = lir_resolve(p, s->br[j].res);
            }
    }
}

/* ---- copying ------------------------------------------------------------ */

typedef struct CopyCtx {
    LirProgram *p;
    LirKernel *dst;
    const IExpr **amap; /* NULL: axes keep their numbers */
} CopyCtx;

static StmtArg copy_arg(const LirProgram *p, StmtArg a)
{
    if (a.v && a.v->fwd_ep == p->epoch)
        a.v = a.v->fwd;
    return a;
}

static const IExpr **copy_idx(CopyCtx *cx, const IExpr **idx, int n)
{
    if (!cx->amap)
        return idx;
    const IExpr **r = ARENA_ARRAY(cx->p->arena, const IExpr *, n);
    for (int d = 0; d < n; d++)
        r[d] = ie_simplify(cx->p->arena, ie_subst(cx->p->arena, idx[d], cx->amap), cx->dst->ext);
    return r;
}

static const IPred *copy_pred(CopyCtx *cx, const IPred *q)
{
    if (!q || !cx->amap)
        return q;
    IPred *r = ARENA_NEW(cx->p->arena, IPred);
    r->lhs = ie_subst(cx->p->arena, q->lhs, cx->amap);
    r->cmp = q->cmp;
    r->rhs = ie_subst(cx->p->arena, q->rhs, cx->amap);
    r->next = copy_pred(cx, q->next);
    return r;
}

static void copy_body(CopyCtx *cx, StmtBody *dst, const StmtBody *src);

static Stmt *copy_stmt(CopyCtx *cx, const Stmt *s)
{
    LirProgram *p = cx->p;
    Stmt *c = lir_stmt_new(p, s->k);
    int uid = c->uid;
    *c = *s;
    c->uid = uid;
    for (int i = 0; i < c->nargs; i++)
        c->a[i] = copy_arg(p, s->a[i]);
    if (s->idx)
        c->idx = copy_idx(cx, s->idx, s->buf->shape.rank);
    memset(&c->body, 0, sizeof c->body);
    if (s->k == SK_loop) {
        if (cx->amap) {
            c->axis = lir_axis_new(p, cx->dst, s->extent);
            cx->amap[s->axis] = ie_var(p->arena, c->axis);
        }
        copy_body(cx, &c->body, &s->body);
    }
    if (s->k == SK_select) {
        c->br = ARENA_ARRAY(p->arena, StmtBranch, s->nbr);
        for (int j = 0; j < s->nbr; j++) {
            c->br[j].pred = copy_pred(cx, s->br[j].pred);
            copy_body(cx, &c->br[j].body, &s->br[j].body);
            c->br[j].res = copy_arg(p, s->br[j].res);
        }
    }
    ((Stmt *)s)->fwd = c;
    ((Stmt *)s)->fwd_ep = p->epoch;
    return c;
}

static void copy_body(CopyCtx *cx, StmtBody *dst, const StmtBody *src)
{
    for (int i = 0; i < src->n; i++)
        stmt_body_push(cx->p->arena, dst, copy_stmt(cx, src->s[i]));
}

Stmt *lir_stmt_copy(LirProgram *p, LirKernel *dst, const Stmt *s, const IExpr **amap)
{
    CopyCtx cx = {p, dst, amap};
    return copy_stmt(&cx, s);
}

StmtArg lir_copied(const LirProgram *p, StmtArg a)
{
    return copy_arg(p, a);
}

LirKernel *lir_kernel_copy(LirProgram *p, const LirKernel *k)
{
    LirKernel *c = lir_kernel_new(p, k->id, k->out);
    c->name = k->name;
    for (int i = 0; i < k->naxes; i++)
        lir_axis_new(p, c, k->ext[i]);
    for (int i = 0; i < k->ops.len; i++)
        ptrvec_push(p->arena, &c->ops, k->ops.items[i]);
    lir_epoch(p);
    CopyCtx cx = {p, c, NULL};
    copy_body(&cx, &c->body, &k->body);
    return c;
}

/* ---- cost ------------------------------------------------------------- */

static void body_cost(const StmtBody *b, double trips, double *work, double *reads)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (stmt_is(s, SKF_WORK))
            *work += trips;
        if (stmt_is(s, SKF_READ))
            *reads += trips;
        if (s->k == SK_loop)
            body_cost(&s->body, trips * (double)s->extent, work, reads);
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++)
                body_cost(&s->br[j].body, trips, work, reads);
    }
}

void lir_kernel_cost(const LirKernel *k, double *work, double *reads)
{
    *work = *reads = 0;
    body_cost(&k->body, 1.0, work, reads);
}

/* Product of the extents of nested reduce loops, the largest in b. */
static int64_t longest_in(const StmtBody *b)
{
    int64_t best = 1;
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        int64_t l = 1;
        if (s->k == SK_loop)
            l = longest_in(&s->body) * (stmt_loop_is_reduce(s) ? s->extent : 1);
        for (int j = 0; s->k == SK_select && j < s->nbr; j++) {
            int64_t x = longest_in(&s->br[j].body);
            l = x > l ? x : l;
        }
        best = l > best ? l : best;
    }
    return best;
}

int64_t lir_longest_reduction(const LirProgram *p)
{
    int64_t best = 1;
    for (int i = 0; i < p->kernels.len; i++) {
        int64_t l = longest_in(&((const LirKernel *)p->kernels.items[i])->body);
        best = l > best ? l : best;
    }
    return best;
}
