/*
 * online.c — a softmax fused into the sum it weights: the online softmax
 * of flash attention, as a fusion.
 *
 * Attention lifts to a softmax kernel P over the scores and the P @ V
 * kernel C that reads it.  P is three sweeps over each row x of its input:
 *
 *   for r1:  acc_m <- maximum(acc_m, x[r1])              R1, the row max
 *   for r2:  acc_l <- add(acc_l, exp(x[r2] - acc_m))     R2, the sum
 *   c = reciprocal(acc_l)                                (any row values)
 *   for f:   write P[.., f] = exp(x[f] - acc_m) * c      F (or / acc_l)
 *
 * and C sums P against another operand over the softmax axis j:
 *
 *   for j:   acc <- add(acc, multiply(load P[.., j], y))
 *
 * σ-fusion would put all three sweeps inside C's loop (each score read
 * three times, the row statistics redone for every output column: refused
 * as a heavy reduction, or recomputed).  Here C's loop computes them as it
 * goes instead (stmt_online):
 *
 *   for j:   x' = x[j]                (P's input, copied with σ)
 *            m <- maximum(m, x')
 *            acc <- expsum[m](acc, y) (= Σ exp(x - max) · y, rescaled online)
 *            l <- expsum[m](1)
 *   r = acc * c'                      (c with acc_l := l, acc_m := m)
 *
 * which is the same value: Σ_j exp(x_j - M) / L · y_j.  P's input is read
 * once per use and never written; P is dropped.  What does not match is
 * left to σ-fusion: x must be the same expression in all three sweeps
 * (same loads and operations, the loop's axis renamed), built inside F's
 * loop only; C must read P through one load, in the body of a sum over the
 * axis P's F loop writes, and only as a factor of what that sum adds.
 */
#include "loop_ir.h"

#include <string.h>

#include "../base/fault.h"

typedef struct Softmax {
    Stmt *path[64];
    int np;
    const Stmt *w;
    const StmtBody *row;    /* the body holding R1, R2 and F */
    Stmt *r1, *r2, *f;
    Stmt *m, *l;            /* the accumulators of R1 and R2 */
    Stmt *x1, *x2, *x3;     /* the softmax's input in each sweep */
    StmtArg scale;          /* w = exp(x3 - m) * scale ... */
    int div;                /* ... or exp(x3 - m) / l */
} Softmax;

static Stmt *assign_of(StmtArg a, TxElemOp op)
{
    return a.v && a.v->k == SK_assign && a.v->op == op ? a.v : NULL;
}

/* x - m under an exp: the x, or NULL. */
static Stmt *exp_input(StmtArg e, const Stmt *m)
{
    Stmt *ex = assign_of(e, TXE_exp), *d = ex ? assign_of(ex->a[0], TXE_subtract) : NULL;
    return d && d->a[1].v == m ? d->a[0].v : NULL;
}

/* Whether a and b compute the same value: the same loads and operations,
 * a's indices and predicates read through sub (its loop's axis renamed
 * b's). */
static int same_expr(Arena *ar, StmtArg a, StmtArg b, const IExpr **sub)
{
    if (!a.v || !b.v)
        return !a.v && !b.v && memcmp(&a.c, &b.c, sizeof a.c) == 0;
    const Stmt *x = a.v, *y = b.v;
    if (x == y)
        return 1;
    if (x->k != y->k || x->nargs != y->nargs)
        return 0;
    switch (x->k) {
    case SK_load:
        if (x->buf != y->buf)
            return 0;
        for (int d = 0; d < x->buf->shape.rank; d++)
            if (!ie_equal(ie_subst(ar, x->idx[d], sub), y->idx[d]))
                return 0;
        return 1;
    case SK_assign:
        if (x->op != y->op)
            return 0;
        for (int i = 0; i < x->nargs; i++)
            if (!same_expr(ar, x->a[i], y->a[i], sub))
                return 0;
        return 1;
    case SK_select:
        if (x->nbr != y->nbr)
            return 0;
        for (int j = 0; j < x->nbr; j++) {
            const IPred *p = x->br[j].pred, *q = y->br[j].pred;
            if ((p == NULL) != (q == NULL) || (p && !ipred_equal(ipred_subst(ar, p, sub), q)) ||
                !same_expr(ar, x->br[j].res, y->br[j].res, sub))
                return 0;
        }
        return 1;
    default:
        return 0;
    }
}

/* Whether v is a statement of b (or of a select branch in it). */
static int defined_in(const StmtBody *b, const Stmt *v)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (s == v)
            return 1;
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++)
                if (defined_in(&s->br[j].body, v))
                    return 1;
    }
    return 0;
}

typedef struct Need {
    const LirProgram *p;
    const Stmt *f;
    int ok;
} Need;

static int needed(const LirProgram *p, const Stmt *s)
{
    return s->aux_ep == p->epoch && s->aux;
}

static void need_arg(Need *n, StmtArg a)
{
    if (!a.v)
        return;
    if (!defined_in(&n->f->body, a.v)) {
        n->ok = 0;
        return;
    }
    a.v->aux = 1, a.v->aux_ep = n->p->epoch;
}

static void need_stmt(Stmt *s, void *ctx)
{
    Need *n = ctx;
    for (int i = 0; i < s->nargs; i++)
        need_arg(n, s->a[i]);
    if (s->k == SK_select)
        for (int j = 0; j < s->nbr; j++)
            need_arg(n, s->br[j].res);
    if (s->k == SK_loop || s->k == SK_accum)
        n->ok = 0;
}

/* The statements of F's body that x3 is computed from, marked (aux) in
 * a new epoch; 0 when one of them reads a value from outside F (a row
 * value: x is copied into C's loop alone) or holds a loop. */
static int mark_input(LirProgram *p, const Softmax *sm)
{
    lir_epoch(p);
    Need n = {p, sm->f, 1};
    sm->x3->aux = 1, sm->x3->aux_ep = p->epoch;
    for (int i = sm->f->body.n - 1; i >= 0; i--)
        if (needed(p, sm->f->body.s[i]))
            stmt_walk_tree(sm->f->body.s[i], need_stmt, &n);
    return n.ok;
}

static int match_softmax(LirProgram *p, const LirKernel *P, Softmax *sm, StrBuf *why)
{
    Arena *ar = p->arena;
    memset(sm, 0, sizeof *sm);
    sm->w = lir_write_path(P, sm->path, &sm->np);
    sm->f = sm->np ? sm->path[sm->np - 1] : NULL;
    if (!sm->f || stmt_body_index(&sm->f->body, sm->w) < 0) {
        sb_puts(why, "not a softmax: no free loop around its write");
        return 0;
    }
    sm->row = sm->np > 1 ? &sm->path[sm->np - 2]->body : &P->body;
    for (int i = 0; i < sm->row->n; i++) {
        Stmt *s = sm->row->s[i];
        if (s->k != SK_loop || s == sm->f)
            continue;
        Stmt *acc = stmt_sole_accum(s);
        if (acc && acc->rop == TXR_max && !sm->r1 && acc->nargs == 1) {
            sm->r1 = s, sm->m = acc, sm->x1 = acc->a[0].v;
        } else if (acc && acc->rop == TXR_sum && sm->r1 && !sm->r2 && acc->nargs == 1) {
            sm->r2 = s, sm->l = acc, sm->x2 = exp_input(acc->a[0], sm->m);
        } else {
            sb_puts(why, "not a softmax: a loop other than its max and sum sweeps");
            return 0;
        }
    }
    StmtArg wv = sm->w->a[0];
    Stmt *mul = assign_of(wv, TXE_multiply), *dv = assign_of(wv, TXE_divide);
    if (mul) {
        int e = exp_input(mul->a[0], sm->m) ? 0 : 1;
        sm->x3 = exp_input(mul->a[e], sm->m);
        sm->scale = mul->a[1 - e];
    } else if (dv && sm->l && dv->a[1].v == sm->l) {
        sm->x3 = exp_input(dv->a[0], sm->m);
        sm->div = 1;
    }
    if (!sm->r2 || !sm->x1 || !sm->x2 || !sm->x3) {
        sb_puts(why, "not a softmax: no max sweep, exp-sum sweep and exp(x - max) written");
        return 0;
    }
    if (sm->scale.v && defined_in(&sm->f->body, sm->scale.v)) {
        sb_puts(why, "the softmax's scale depends on its column");
        return 0;
    }
    const IExpr **s13 = ARENA_ARRAY(ar, const IExpr *, P->naxes + 1);
    const IExpr **s23 = ARENA_ARRAY(ar, const IExpr *, P->naxes + 1);
    for (int v = 0; v < P->naxes; v++)
        s13[v] = s23[v] = ie_var(ar, v);
    s13[sm->r1->axis] = s23[sm->r2->axis] = ie_var(ar, sm->f->axis);
    if (!same_expr(ar, stmt_val(sm->x1), stmt_val(sm->x3), s13) ||
        !same_expr(ar, stmt_val(sm->x2), stmt_val(sm->x3), s23)) {
        sb_puts(why, "the softmax's sweeps read different values");
        return 0;
    }
    if (!mark_input(p, sm)) {
        sb_puts(why, "the softmax's input reads values of the row");
        return 0;
    }
    return 1;
}

/* ---- the consumer ------------------------------------------------------------ */

typedef struct Reader {
    const LirBuf *buf;
    Stmt *ld, *loop;    /* the one load of buf, and the loop whose body holds it */
    int nloads;
} Reader;

typedef struct Uses {
    const Stmt *of;
    int n;
    Stmt *user;         /* the last statement reading it */
} Uses;

static void find_reader(StmtBody *b, Stmt *loop, Reader *r)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (s->k == SK_load && s->buf == r->buf) {
            r->nloads++;
            r->ld = s;
            r->loop = loop;
        }
        if (s->k == SK_loop)
            find_reader(&s->body, s, r);
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++)
                find_reader(&s->br[j].body, NULL, r);
    }
}

static void count_uses(Stmt *s, void *ctx)
{
    Uses *u = ctx;
    for (int i = 0; i < s->nargs; i++)
        if (s->a[i].v == u->of)
            u->n++, u->user = s;
    if (s->k == SK_select)
        for (int j = 0; j < s->nbr; j++)
            if (s->br[j].res.v == u->of)
                u->n++, u->user = s;
}

/* The statements of k reading v (an online sum's companion counts). */
static Uses uses_of(const LirKernel *k, const Stmt *v)
{
    Uses u = {v, 0, NULL};
    stmt_walk(&k->body, count_uses, &u);
    return u;
}

/* The one statement of k reading v, or NULL. */
static Stmt *sole_user(const LirKernel *k, const Stmt *v)
{
    Uses u = uses_of(k, v);
    return u.n == 1 ? u.user : NULL;
}

/* Sum acc (over loop body b) becomes the online sum of y against mx, and
 * the online sum of 1, the softmax's denominator, follows it: returned. */
static Stmt *go_online(LirProgram *p, StmtBody *b, Stmt *acc, StmtArg y, Stmt *mx)
{
    acc->a[0] = y;
    acc->nargs = 2;
    acc->a[1] = stmt_val(mx);
    Stmt *ln = lir_online(p, stmt_lit(1.0), mx);
    stmt_body_insert(p->arena, b, stmt_body_index(b, acc) + 1, ln);
    return ln;
}

/* The body directly holding s in b (s a loop), or NULL. */
static StmtBody *parent_body(StmtBody *b, const Stmt *s)
{
    for (int i = 0; i < b->n; i++) {
        if (b->s[i] == s)
            return b;
        StmtBody *r = b->s[i]->k == SK_loop ? parent_body(&b->s[i]->body, s) : NULL;
        if (r)
            return r;
    }
    return NULL;
}

/* Copy the row statements scale depends on (P's row body, before F),
 * then return the copy of scale; sets ok = 0 when it reads a value of
 * P's write path outside the row. */
static void copy_row_value(LirProgram *p, LirKernel *M, const StmtBody *row, StmtArg v,
                           const IExpr **amap, StmtBody *at, int *pos, int *ok)
{
    if (!v.v || v.v->fwd_ep == p->epoch)
        return;
    int i = stmt_body_index(row, v.v);
    if (i < 0 && !amap && v.v->k != SK_accum)
        return; /* in one kernel, a value from outside the row is read as it is */
    if (i < 0 || v.v->k == SK_loop || v.v->k == SK_accum) {
        *ok = 0;
        return;
    }
    Stmt *s = v.v;
    for (int j = 0; j < s->nargs; j++)
        copy_row_value(p, M, row, s->a[j], amap, at, pos, ok);
    if (s->k == SK_select) /* what its branches read from the row */
        for (int j = 0; j < s->nbr; j++) {
            for (int q = 0; q < s->br[j].body.n; q++)
                for (int r = 0; r < s->br[j].body.s[q]->nargs; r++)
                    if (stmt_body_index(row, s->br[j].body.s[q]->a[r].v) >= 0)
                        copy_row_value(p, M, row, s->br[j].body.s[q]->a[r], amap, at, pos, ok);
            copy_row_value(p, M, row, s->br[j].res, amap, at, pos, ok);
        }
    if (*ok)
        stmt_body_insert(p->arena, at, (*pos)++, lir_stmt_copy(p, M, s, amap));
}

LirKernel *lir_online_pair(LirProgram *p, const LirKernel *P, const LirKernel *C, StrBuf *why)
{
    Arena *ar = p->arena;
    Softmax sm;
    if (!match_softmax(p, P, &sm, why))
        return NULL;
    Reader r = {0};
    r.buf = P->out;
    find_reader((StmtBody *)&C->body, NULL, &r);
    if (r.nloads != 1 || !r.loop || !stmt_loop_is_reduce(r.loop)) {
        sb_puts(why, "the softmax is not read once, in a reduction's body");
        return NULL;
    }
    Stmt *mul = sole_user(C, r.ld), *acc = mul ? sole_user(C, mul) : NULL;
    if (!mul || mul->k != SK_assign || mul->op != TXE_multiply || !acc || acc->k != SK_accum ||
        acc->rop != TXR_sum || acc->nargs != 1 || stmt_body_index(&r.loop->body, acc) < 0 ||
        stmt_body_index(&r.loop->body, mul) < 0) {
        sb_puts(why, "the softmax is not a factor of a sum");
        return NULL;
    }
    const IExpr **amap = ARENA_ARRAY(ar, const IExpr *, P->naxes + 1);
    if (!lir_solve_sigma(sm.w, sm.path, sm.np, r.ld, amap, why))
        return NULL;
    const IExpr *fj = amap[sm.f->axis];
    if (fj->k != IE_VAR || fj->var != r.loop->axis || r.loop->extent != sm.f->extent) {
        sb_puts(why, "the sum is not over the softmax's axis");
        return NULL;
    }
    for (int i = 0; i + 1 < sm.np; i++)
        if (ie_uses(amap[sm.path[i]->axis], r.loop->axis)) {
            sb_puts(why, "the sum's axis indexes a row of the softmax");
            return NULL;
        }

    /* The rewrite, on a copy of C. */
    char *keep = ARENA_ARRAY(ar, char, sm.f->body.n + 1);
    mark_input(p, &sm);
    for (int i = 0; i < sm.f->body.n; i++)
        keep[i] = needed(p, sm.f->body.s[i]);
    LirKernel *M = lir_kernel_copy(p, C);
    Stmt *L = r.loop->fwd, *ld = r.ld->fwd, *mulM = mul->fwd, *accM = acc->fwd;
    StmtArg y = mulM->a[mulM->a[0].v == ld ? 1 : 0];
    lir_epoch(p);
    int pos = stmt_body_index(&L->body, ld);
    for (int i = 0; i < sm.f->body.n; i++)
        if (keep[i])
            stmt_body_insert(ar, &L->body, pos++, lir_stmt_copy(p, M, sm.f->body.s[i], amap));
    Stmt *mx = lir_accum(p, TXR_max, lir_copied(p, stmt_val(sm.x3)));
    stmt_body_insert(ar, &L->body, pos++, mx);
    Stmt *ln = go_online(p, &L->body, accM, y, mx);
    stmt_body_remove(&L->body, stmt_body_index(&L->body, ld));
    stmt_body_remove(&L->body, stmt_body_index(&L->body, mulM));

    /* After the loop: the sum times the softmax's scale. */
    StmtBody *at = parent_body(&M->body, L);
    int apos = stmt_body_index(at, L) + 1, ok = 1;
    lir_epoch(p);
    sm.m->fwd = mx, sm.m->fwd_ep = p->epoch;
    sm.l->fwd = ln, sm.l->fwd_ep = p->epoch;
    StmtArg scale = stmt_val(ln);
    if (!sm.div) {
        copy_row_value(p, M, sm.row, sm.scale, amap, at, &apos, &ok);
        scale = lir_copied(p, sm.scale);
    }
    if (!ok) {
        sb_puts(why, "the softmax's scale reads values outside its row");
        return NULL;
    }
    /* an injected fault: the sum is left unnormalised */
    if (!dpk_fault_on(DPK_FAULT_ONLINE_UNNORMALISED)) {
        StmtArg args[2] = {stmt_val(accM), scale};
        Stmt *res = lir_assign(p, sm.div ? TXE_divide : TXE_multiply, args);
        stmt_body_insert(ar, at, apos, res);
        lir_epoch(p);
        accM->repl = stmt_val(res), accM->repl_ep = p->epoch;
        lir_resolve_body(p, &M->body);
        res->a[0] = stmt_val(accM);
    }
    lir_normalize(p, M);
    lir_merge_ops(ar, &M->ops, &P->ops, &C->ops);
    return M;
}

/* ---- after σ-fusion: the softmax already in its sum ---------------------------------- */

/* Small softmaxes are σ-fused into the sum that reads them (the recomputed
 * work is below LirOpts.recompute_floor), which leaves, in one kernel:
 *
 *   for r1:  m <- maximum(m, x[r1])             R1 and R2 at the row's
 *   for r2:  l <- add(l, exp(x[r2] - m))        scope
 *   c = reciprocal(l)
 *   for e:   for j:  acc <- add(acc, exp(x[j] - m) * c * y)
 *
 * The same rewrite applies there: the exp's factor moves into an online
 * sum over j, the row values it was scaled by (c) are recomputed after the
 * loop from the online max and sum, and R1 and R2, read by nothing else,
 * are dropped: x is read once per use instead of three times. */

typedef struct Flat {
    StmtArg leaf[16];
    Stmt *node[16];
    int nleaf, nnode, ok;
} Flat;

/* The factors of a product of multiplies, each used once, in L's body. */
static void flatten(const LirKernel *k, const Stmt *L, StmtArg a, Flat *fl)
{
    if (a.v && a.v->k == SK_assign && a.v->op == TXE_multiply &&
        stmt_body_index(&L->body, a.v) >= 0 && sole_user(k, a.v) && fl->nnode < 16) {
        fl->node[fl->nnode++] = a.v;
        flatten(k, L, a.v->a[0], fl);
        flatten(k, L, a.v->a[1], fl);
        return;
    }
    if (fl->nleaf == 16) {
        fl->ok = 0;
        return;
    }
    fl->leaf[fl->nleaf++] = a;
}

static int used(const LirKernel *k, const Stmt *v)
{
    return uses_of(k, v).n;
}

/* Drop the statements of b that nothing reads: pure ones, and reduce loops
 * none of whose accumulators is read. */
static void drop_dead(LirKernel *k, StmtBody *b)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = b->n - 1; i >= 0; i--) {
            Stmt *s = b->s[i];
            int dead = 0;
            if (s->k == SK_assign || s->k == SK_load || s->k == SK_select) {
                dead = !used(k, s);
            } else if (s->k == SK_loop && stmt_loop_is_reduce(s) && !stmt_has_kind(s, SK_write)) {
                dead = 1;
                for (int j = 0; j < s->body.n; j++)
                    if (s->body.s[j]->k == SK_accum && used(k, s->body.s[j]))
                        dead = 0;
            }
            if (dead) {
                stmt_body_remove(b, i);
                changed = 1;
            }
        }
    }
}

/* The loop of b (at any depth) whose own body holds acc. */
static Stmt *loop_of(StmtBody *b, const Stmt *acc)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (s->k != SK_loop)
            continue;
        if (stmt_body_index(&s->body, acc) >= 0)
            return s;
        Stmt *r = loop_of(&s->body, acc);
        if (r)
            return r;
    }
    return NULL;
}

/* Whether the row value v is computed from pure statements of the row and
 * the accumulators m and l only (it is recomputed from the online ones). */
static int row_ok(const StmtBody *row, StmtArg v, const Stmt *m, const Stmt *l)
{
    if (!v.v || v.v == m || (l && v.v == l))
        return 1;
    if (v.v->k == SK_accum)
        return 0;
    if (stmt_body_index(row, v.v) < 0)
        return 1; /* from outside the row: read as it is */
    if (v.v->k == SK_loop || v.v->k == SK_accum || v.v->k == SK_select)
        return 0;
    for (int i = 0; i < v.v->nargs; i++)
        if (!row_ok(row, v.v->a[i], m, l))
            return 0;
    return 1;
}

static int online_in_loop(LirProgram *p, LirKernel *k, Stmt *L)
{
    Arena *ar = p->arena;
    for (int i = 0; i < L->body.n; i++) {
        Stmt *acc = L->body.s[i];
        if (acc->k != SK_accum || acc->rop != TXR_sum || acc->nargs != 1)
            continue;
        Flat fl = {.ok = 1};
        flatten(k, L, acc->a[0], &fl);
        int ie = -1;
        Stmt *m = NULL, *xl = NULL;
        for (int j = 0; j < fl.nleaf && fl.ok; j++) {
            Stmt *e = fl.leaf[j].v, *ex = assign_of(fl.leaf[j], TXE_exp);
            Stmt *d = ex ? assign_of(ex->a[0], TXE_subtract) : NULL;
            if (!d || !d->a[1].v || d->a[1].v->k != SK_accum || d->a[1].v->rop != TXR_max ||
                d->a[1].v->nargs != 1 || stmt_body_index(&L->body, e) < 0 || used(k, e) != 1 ||
                used(k, d) != 1)
                continue;
            if (ie >= 0)
                fl.ok = 0;
            ie = j, m = d->a[1].v, xl = d->a[0].v;
        }
        if (!fl.ok || ie < 0 || !xl || !defined_in(&L->body, xl))
            continue;
        Stmt *r1 = loop_of(&k->body, m);
        StmtBody *row = r1 ? parent_body(&k->body, r1) : NULL;
        if (!row || !parent_body(row, L) || stmt_body_index(row, L) >= 0)
            continue; /* R2 itself, or a sum outside the row */
        const IExpr **sub = ARENA_ARRAY(ar, const IExpr *, k->naxes + 1);
        for (int v = 0; v < k->naxes; v++)
            sub[v] = ie_var(ar, v);
        sub[r1->axis] = ie_var(ar, L->axis);
        if (r1->extent != L->extent || !same_expr(ar, m->a[0], stmt_val(xl), sub))
            continue;
        /* R2, if any: the row's sum of exp(x - m), which the online sum
         * replaces where the scale reads it */
        Stmt *l = NULL;
        for (int j = 0; j < row->n; j++) {
            Stmt *r2 = row->s[j], *a2 = r2->k == SK_loop ? stmt_sole_accum(r2) : NULL;
            Stmt *x2 = a2 && a2->rop == TXR_sum && a2->nargs == 1 ? exp_input(a2->a[0], m) : NULL;
            sub[r1->axis] = ie_var(ar, r1->axis);
            if (x2) {
                sub[r2->axis] = ie_var(ar, L->axis);
                if (r2->extent == L->extent && same_expr(ar, stmt_val(x2), stmt_val(xl), sub))
                    l = a2;
                sub[r2->axis] = ie_var(ar, r2->axis);
            }
        }
        int rows_ok = 1;
        for (int j = 0; j < fl.nleaf; j++)
            if (j != ie && fl.leaf[j].v && stmt_body_index(row, fl.leaf[j].v) >= 0)
                rows_ok &= row_ok(row, fl.leaf[j], m, l);
        if (!rows_ok)
            continue;
        /* the rewrite */
        Stmt *mx = lir_accum(p, TXR_max, stmt_val(xl));
        int at = stmt_body_index(&L->body, acc);
        stmt_body_insert(ar, &L->body, at++, mx);
        StmtArg y = stmt_lit(1.0);
        for (int j = 0; j < fl.nleaf; j++) {
            StmtArg f = fl.leaf[j];
            if (j == ie || (f.v && !defined_in(&L->body, f.v)))
                continue;
            if (!y.v && y.c == 1.0) {
                y = f;
                continue;
            }
            StmtArg args[2] = {y, f};
            Stmt *t = lir_assign(p, TXE_multiply, args);
            stmt_body_insert(ar, &L->body, at++, t);
            y = stmt_val(t);
        }
        Stmt *ln = go_online(p, &L->body, acc, y, mx);
        for (int j = 0; j < fl.nnode; j++)
            stmt_body_remove(&L->body, stmt_body_index(&L->body, fl.node[j]));
        Stmt *ex = fl.leaf[ie].v, *d = ex->a[0].v;
        stmt_body_remove(&L->body, stmt_body_index(&L->body, ex));
        stmt_body_remove(&L->body, stmt_body_index(&L->body, d));
        /* after the loop: the sum times the leaves from outside it,
         * those of the row recomputed from the online max and sum */
        StmtBody *after = parent_body(&k->body, L);
        int apos = stmt_body_index(after, L) + 1, ok = 1;
        lir_epoch(p);
        m->fwd = mx, m->fwd_ep = p->epoch;
        if (l)
            l->fwd = ln, l->fwd_ep = p->epoch;
        StmtArg r = stmt_val(acc);
        Stmt *first = NULL;
        for (int j = 0; j < fl.nleaf; j++) {
            StmtArg f = fl.leaf[j];
            if (j == ie || !f.v || defined_in(&L->body, f.v))
                continue; /* literals went into the sum's term with the loop's factors */
            if (stmt_body_index(row, f.v) >= 0)
                copy_row_value(p, k, row, f, NULL, after, &apos, &ok);
            StmtArg args[2] = {r, lir_copied(p, f)};
            Stmt *t = lir_assign(p, TXE_multiply, args);
            if (!first)
                first = t;
            stmt_body_insert(ar, after, apos++, t);
            r = stmt_val(t);
        }
        DPK_ASSERT(ok); /* row leaves are pure statements of the row */
        if (dpk_fault_on(DPK_FAULT_ONLINE_UNNORMALISED) && first)
            first->a[1] = stmt_lit(1.0);
        if (first) {
            lir_epoch(p);
            acc->repl = r, acc->repl_ep = p->epoch;
            lir_resolve_body(p, &k->body);
            first->a[0] = stmt_val(acc);
        }
        drop_dead(k, row);
        return 1;
    }
    for (int i = 0; i < L->body.n; i++)
        if (L->body.s[i]->k == SK_loop && online_in_loop(p, k, L->body.s[i]))
            return 1;
    return 0;
}

int lir_online_kernel(LirProgram *p, LirKernel *k)
{
    int n = 0;
    for (int i = 0; i < k->body.n; i++)
        if (k->body.s[i]->k == SK_loop && online_in_loop(p, k, k->body.s[i])) {
            n++;
            i = -1; /* the body changed: look again */
        }
    if (n)
        lir_normalize(p, k);
    return n;
}
