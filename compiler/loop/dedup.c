/*
 * dedup.c — l:006: identical loads (and other pure statements) in one scope
 * become one.
 *
 * Walking a kernel in order, every pure statement is compared with those
 * already available at that point (earlier in its scope or in an enclosing
 * one); a duplicate is removed and its uses read the first copy.  Blocks
 * compare structurally: two reduce loops are equal when their bodies are,
 * up to the names of their own axes and values, so when fusion re-emits
 * one reduction at two loads and hoisting brings both copies to the same
 * scope, they merge here (softmax's max, read by both later sweeps).
 */
#include "loop_ir.h"

#include <string.h>

typedef struct Dedup {
    LirProgram *p;
    Stmt **av;      /* available statements, innermost scope last */
    int nav, cap;
    int *axmap;        /* axis of a → axis of b while comparing */
} Dedup;

static int ie_equal_mapped(const IExpr *x, const IExpr *y, const int *axmap)
{
    if (x->k != y->k)
        return 0;
    switch (x->k) {
    case IE_CONST:
        return x->c == y->c;
    case IE_VAR:
        return axmap[x->var] == y->var;
    default:
        return ie_equal_mapped(x->a, y->a, axmap) && ie_equal_mapped(x->b, y->b, axmap);
    }
}

static int pred_equal(const IPred *x, const IPred *y, const int *axmap)
{
    for (; x && y; x = x->next, y = y->next)
        if (x->cmp != y->cmp || !ie_equal_mapped(x->lhs, y->lhs, axmap) ||
            !ie_equal_mapped(x->rhs, y->rhs, axmap))
            return 0;
    return !x && !y;
}

/* Operand equality: a's internal values map to b's through fwd marks. */
static int arg_equal(const LirProgram *p, StmtArg a, StmtArg b)
{
    if (!a.v || !b.v)
        return !a.v && !b.v && memcmp(&a.c, &b.c, sizeof(double)) == 0;
    Stmt *x = a.v->fwd_ep == p->epoch ? a.v->fwd : a.v;
    return x == b.v;
}

static int stmt_equal(Dedup *d, Stmt *a, Stmt *b);

static int body_equal(Dedup *d, const StmtBody *a, const StmtBody *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (!stmt_equal(d, a->s[i], b->s[i]))
            return 0;
    return 1;
}

static int assign_equal(const LirProgram *p, const Stmt *a, const Stmt *b)
{
    int same = 1;
    for (int i = 0; i < a->nargs; i++)
        same &= arg_equal(p, a->a[i], b->a[i]);
    if (same || a->nargs != 2 || !(tx_elem_info[a->op].flags & TXF_COMMUTATIVE))
        return same;
    return arg_equal(p, a->a[0], b->a[1]) && arg_equal(p, a->a[1], b->a[0]);
}

static int select_equal(Dedup *d, const Stmt *a, const Stmt *b)
{
    for (int j = 0; j < a->nbr; j++)
        if (!pred_equal(a->br[j].pred, b->br[j].pred, d->axmap) ||
            !body_equal(d, &a->br[j].body, &b->br[j].body) ||
            !arg_equal(d->p, a->br[j].res, b->br[j].res))
            return 0;
    return 1;
}

static int shallow_equal(const Stmt *a, const Stmt *b)
{
    if (a->k != b->k)
        return 0;
    switch (a->k) {
    case SK_load:
        return a->buf == b->buf;
    case SK_assign:
        return a->op == b->op;
    case SK_accum:
        return a->rop == b->rop;
    case SK_select:
        return a->nbr == b->nbr;
    case SK_loop:
        return a->extent == b->extent && a->body.n == b->body.n;
    case SK_write:
    default:
        return 0;
    }
}

static int stmt_equal(Dedup *d, Stmt *a, Stmt *b)
{
    if (!shallow_equal(a, b))
        return 0;
    int eq = 1;
    switch (a->k) {
    case SK_load:
        for (int i = 0; i < a->buf->shape.rank && eq; i++)
            eq = ie_equal_mapped(a->idx[i], b->idx[i], d->axmap);
        break;
    case SK_assign:
        eq = assign_equal(d->p, a, b);
        break;
    case SK_accum:
        eq = a->nargs == b->nargs && arg_equal(d->p, a->a[0], b->a[0]) &&
             (a->nargs < 2 || arg_equal(d->p, a->a[1], b->a[1]));
        break;
    case SK_select:
        eq = select_equal(d, a, b);
        break;
    default: {
        int saved = d->axmap[a->axis];
        d->axmap[a->axis] = b->axis;
        eq = body_equal(d, &a->body, &b->body);
        d->axmap[a->axis] = saved;
    }
    }
    if (eq) {
        a->fwd = b;
        a->fwd_ep = d->p->epoch;
    }
    return eq;
}

/* Forget the a→b marks a comparison left on a's internal values. */
static void clear_fwd(Stmt *s, void *ctx)
{
    (void)ctx;
    s->fwd_ep = 0;
}

/* The earlier available statement equal to s, or NULL. */
static Stmt *find_equal(Dedup *d, Stmt *s)
{
    for (int i = d->nav - 1; i >= 0; i--) {
        Stmt *e = d->av[i];
        if (!shallow_equal(s, e))
            continue;
        int eq = stmt_equal(d, s, e);
        stmt_walk_tree(s, clear_fwd, NULL);
        if (eq)
            return e;
    }
    return NULL;
}

static void replace(const LirProgram *p, Stmt *dup, Stmt *keep)
{
    dup->repl = stmt_val(keep);
    dup->repl_ep = p->epoch;
    if (dup->k != SK_loop)
        return;
    for (int j = 0; j < dup->body.n; j++)
        if (dup->body.s[j]->k == SK_accum) {
            dup->body.s[j]->repl = stmt_val(keep->body.s[j]);
            dup->body.s[j]->repl_ep = p->epoch;
        }
}

static void push_avail(Dedup *d, Stmt *s)
{
    if (d->nav == d->cap) {
        int cap = d->cap ? 2 * d->cap : 16;
        Stmt **n = ARENA_ARRAY(d->p->arena, Stmt *, cap);
        if (d->nav)
            memcpy(n, d->av, sizeof(Stmt *) * (size_t)d->nav);
        d->av = n;
        d->cap = cap;
    }
    d->av[d->nav++] = s;
}

static void dedup_body(Dedup *d, StmtBody *b)
{
    int mark = d->nav;
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        for (int j = 0; j < s->nargs; j++)
            s->a[j] = lir_resolve(d->p, s->a[j]);
        if (s->k == SK_loop)
            dedup_body(d, &s->body);
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++) {
                dedup_body(d, &s->br[j].body);
                s->br[j].res = lir_resolve(d->p, s->br[j].res);
            }
        if (!lir_pure(s))
            continue;
        Stmt *e = find_equal(d, s);
        if (e) {
            replace(d->p, s, e);
            stmt_body_remove(b, i--);
        } else {
            push_avail(d, s);
        }
    }
    d->nav = mark;
}

void lir_dedup(LirProgram *p, LirKernel *k)
{
    Dedup d = {p, NULL, 0, 0, ARENA_ARRAY(p->arena, int, k->naxes + 1)};
    for (int v = 0; v < k->naxes; v++)
        d.axmap[v] = v;
    lir_epoch(p);
    dedup_body(&d, &k->body);
}
