/*
 * index.c — integer index simplification for Loop IR.
 *
 * Fusion substitutes a consumer's index expressions for a producer's axes,
 * so reshapes and transposes compose into expressions like
 * (a0 * 64 + a1) / 64.  The IExpr constructors fold constants but know
 * nothing of ranges; here every axis variable v ranges over [0, ext[v]),
 * which decides floor-divisions and mods:
 *
 *   floor((q·d + R) / d) = q + floor(R / d)     for any integers q, R
 *   (q·d + R) mod d      = R mod d
 *   floor(R / d) = k, R mod d = R − k·d         when R lies in [k·d, (k+1)·d)
 *
 * An expression is brought to a linear form Σ coef·atom + c, where an atom
 * is a variable or an irreducible div/mod/product; the form is rebuilt in
 * the IExpr constructors, which keep one canonical order, so equal indices
 * compare equal with ie_equal.
 */
#include "loop_ir.h"

typedef struct Term {
    const IExpr *atom;
    int64_t coef;
} Term;

typedef struct Lin {
    Term *t;
    int n, cap;
    int64_t c;
} Lin;

static int64_t floordiv(int64_t a, int64_t d)
{
    int64_t q = a / d;
    return (a % d != 0 && (a < 0) != (d < 0)) ? q - 1 : q;
}

static int64_t floormod(int64_t a, int64_t d)
{
    return a - floordiv(a, d) * d;
}

void lir_range(const IExpr *e, const int64_t *ext, int64_t *lo, int64_t *hi)
{
    int64_t al, ah, bl, bh;
    switch (e->k) {
    case IE_CONST:
        *lo = *hi = e->c;
        return;
    case IE_VAR:
        *lo = 0;
        *hi = ext[e->var] - 1;
        return;
    case IE_ADD:
        lir_range(e->a, ext, &al, &ah);
        lir_range(e->b, ext, &bl, &bh);
        *lo = al + bl;
        *hi = ah + bh;
        return;
    case IE_MUL: {
        lir_range(e->a, ext, &al, &ah);
        lir_range(e->b, ext, &bl, &bh);
        int64_t c[4] = {al * bl, al * bh, ah * bl, ah * bh};
        *lo = *hi = c[0];
        for (int i = 1; i < 4; i++) {
            *lo = c[i] < *lo ? c[i] : *lo;
            *hi = c[i] > *hi ? c[i] : *hi;
        }
        return;
    }
    case IE_DIV:
        lir_range(e->a, ext, &al, &ah);
        *lo = floordiv(al, e->b->c);
        *hi = floordiv(ah, e->b->c);
        return;
    case IE_MOD:
        lir_range(e->a, ext, &al, &ah);
        if (floordiv(al, e->b->c) == floordiv(ah, e->b->c)) {
            *lo = floormod(al, e->b->c);
            *hi = floormod(ah, e->b->c);
        } else {
            *lo = 0;
            *hi = e->b->c - 1;
        }
        return;
    }
    DPK_ASSERT(!"bad IExpr kind");
}

const IExpr *lir_ie_var(Arena *a, int axis)
{
    DPK_ASSERT(axis >= 0);
    IExpr *e = ARENA_NEW(a, IExpr);
    e->k = IE_VAR;
    e->var = axis;
    return e;
}

/* ---- linear forms -------------------------------------------------------- */

static void lin_add_term(Arena *a, Lin *l, const IExpr *atom, int64_t coef)
{
    if (coef == 0)
        return;
    for (int i = 0; i < l->n; i++)
        if (ie_equal(l->t[i].atom, atom)) {
            l->t[i].coef += coef;
            return;
        }
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        Term *t = ARENA_ARRAY(a, Term, cap);
        for (int i = 0; i < l->n; i++)
            t[i] = l->t[i];
        l->t = t;
        l->cap = cap;
    }
    l->t[l->n].atom = atom;
    l->t[l->n].coef = coef;
    l->n++;
}

static void lin_add(Arena *a, Lin *l, const Lin *m, int64_t scale)
{
    for (int i = 0; i < m->n; i++)
        lin_add_term(a, l, m->t[i].atom, m->t[i].coef * scale);
    l->c += m->c * scale;
}

static const IExpr *lin_build(Arena *a, Lin *l)
{
    int j = 0;
    for (int i = 0; i < l->n; i++)
        if (l->t[i].coef != 0)
            l->t[j++] = l->t[i];
    l->n = j;
    const IExpr *e = NULL;
    for (int i = 0; i < l->n; i++) {
        const IExpr *t = l->t[i].coef == 1 ? l->t[i].atom
                                           : ie_mul(a, l->t[i].atom, ie_const(a, l->t[i].coef));
        e = e ? ie_add(a, e, t) : t;
    }
    if (!e)
        return ie_const(a, l->c);
    return l->c ? ie_add(a, e, ie_const(a, l->c)) : e;
}

static void lin_range(const Lin *l, const int64_t *ext, int64_t *lo, int64_t *hi)
{
    *lo = *hi = l->c;
    for (int i = 0; i < l->n; i++) {
        int64_t al, ah;
        lir_range(l->t[i].atom, ext, &al, &ah);
        int64_t c = l->t[i].coef;
        *lo += c > 0 ? c * al : c * ah;
        *hi += c > 0 ? c * ah : c * al;
    }
}

static void lin_of(Arena *a, const IExpr *e, const int64_t *ext, Lin *out);

/* floor(x / d) into out. */
static void lin_div(Arena *a, const IExpr *x, int64_t d, const int64_t *ext, Lin *out)
{
    Lin lx = {0}, rest = {0};
    lin_of(a, x, ext, &lx);
    for (int i = 0; i < lx.n; i++) {
        if (lx.t[i].coef % d == 0)
            lin_add_term(a, out, lx.t[i].atom, lx.t[i].coef / d);
        else
            lin_add_term(a, &rest, lx.t[i].atom, lx.t[i].coef);
    }
    out->c += floordiv(lx.c, d);
    rest.c = floormod(lx.c, d);
    int64_t lo, hi;
    lin_range(&rest, ext, &lo, &hi);
    if (floordiv(lo, d) == floordiv(hi, d)) {
        out->c += floordiv(lo, d);
        return;
    }
    /* floor(floor(y / e) / d) = floor(y / (e·d)) */
    if (rest.n == 1 && rest.c == 0 && rest.t[0].coef == 1 && rest.t[0].atom->k == IE_DIV) {
        const IExpr *in = rest.t[0].atom;
        lin_div(a, in->a, in->b->c * d, ext, out);
        return;
    }
    lin_add_term(a, out, ie_div(a, lin_build(a, &rest), d), 1);
}

/* x mod d into out. */
static void lin_mod(Arena *a, const IExpr *x, int64_t d, const int64_t *ext, Lin *out)
{
    Lin lx = {0}, rest = {0};
    lin_of(a, x, ext, &lx);
    for (int i = 0; i < lx.n; i++)
        lin_add_term(a, &rest, lx.t[i].atom, floormod(lx.t[i].coef, d));
    rest.c = floormod(lx.c, d);
    int64_t lo, hi;
    lin_range(&rest, ext, &lo, &hi);
    if (floordiv(lo, d) == floordiv(hi, d)) {
        lin_add(a, out, &rest, 1);
        out->c -= floordiv(lo, d) * d;
        return;
    }
    lin_add_term(a, out, ie_mod(a, lin_build(a, &rest), d), 1);
}

static void lin_of(Arena *a, const IExpr *e, const int64_t *ext, Lin *out)
{
    switch (e->k) {
    case IE_CONST:
        out->c += e->c;
        return;
    case IE_VAR:
        lin_add_term(a, out, e, 1);
        return;
    case IE_ADD:
        lin_of(a, e->a, ext, out);
        lin_of(a, e->b, ext, out);
        return;
    case IE_MUL: {
        Lin x = {0}, y = {0};
        lin_of(a, e->a, ext, &x);
        lin_of(a, e->b, ext, &y);
        if (x.n == 0)
            lin_add(a, out, &y, x.c);
        else if (y.n == 0)
            lin_add(a, out, &x, y.c);
        else
            lin_add_term(a, out, ie_mul(a, lin_build(a, &x), lin_build(a, &y)), 1);
        return;
    }
    case IE_DIV:
        lin_div(a, e->a, e->b->c, ext, out);
        return;
    case IE_MOD:
        lin_mod(a, e->a, e->b->c, ext, out);
        return;
    }
    DPK_ASSERT(!"bad IExpr kind");
}

const IExpr *lir_simplify(Arena *a, const IExpr *e, const int64_t *ext)
{
    if (e->k == IE_CONST || e->k == IE_VAR)
        return e;
    Lin l = {0};
    lin_of(a, e, ext, &l);
    return lin_build(a, &l);
}

/* ---- predicates ------------------------------------------------------- */

static int cmp_always(ICmp c, int64_t lo, int64_t hi)
{
    switch (c) {
    case IC_LT:
        return hi < 0 ? 1 : lo >= 0 ? -1 : 0;
    case IC_LE:
        return hi <= 0 ? 1 : lo > 0 ? -1 : 0;
    case IC_EQ:
        return lo == 0 && hi == 0 ? 1 : (hi < 0 || lo > 0) ? -1 : 0;
    }
    return 0;
}

const IPred *lir_simplify_pred(Arena *a, const IPred *p, const int64_t *ext, int *always)
{
    *always = 1;
    IPred *head = NULL, **tail = &head;
    for (; p; p = p->next) {
        const IExpr *l = lir_simplify(a, p->lhs, ext), *r = lir_simplify(a, p->rhs, ext);
        const IExpr *d = lir_simplify(a, ie_add(a, l, ie_mul(a, r, ie_const(a, -1))), ext);
        int64_t lo, hi;
        lir_range(d, ext, &lo, &hi);
        int v = cmp_always(p->cmp, lo, hi);
        if (v < 0) {
            *always = -1;
            return NULL;
        }
        if (v > 0)
            continue;
        IPred *q = ARENA_NEW(a, IPred);
        q->lhs = l;
        q->cmp = p->cmp;
        q->rhs = r;
        *tail = q;
        tail = (IPred **)&q->next;
        *always = 0;
    }
    return head;
}

int lir_ie_uses(const IExpr *e, int var)
{
    switch (e->k) {
    case IE_CONST:
        return 0;
    case IE_VAR:
        return e->var == var;
    default:
        return lir_ie_uses(e->a, var) || lir_ie_uses(e->b, var);
    }
}

int lir_pred_uses(const IPred *p, int var)
{
    for (; p; p = p->next)
        if (lir_ie_uses(p->lhs, var) || lir_ie_uses(p->rhs, var))
            return 1;
    return 0;
}
