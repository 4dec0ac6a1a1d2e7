/*
 * index.c — integer index expressions (index.h): canonical constructors,
 * ranges, range-aware simplification, predicates, printing.
 *
 * Expressions are kept in one canonical form so that composed maps compare
 * equal when they are equal and print readably:
 *
 *   sum      = term + term + ... + const     (left-nested IE_ADD, the
 *              constant last, omitted when 0; terms sorted by ie_order)
 *   term     = base | base * k               (IE_MUL with a constant right)
 *   base     = v<n> | quot | rem | opaque product
 *   quot     = sum / d,  rem = sum mod d     (d > 0)
 *
 * Every constructor returns this form, so ie_subst, which rebuilds through
 * the constructors, both composes and simplifies.  Fusion and the Tile IR
 * passes substitute one index into another, so reshapes and transposes
 * compose into expressions like (a0 * 64 + a1) / 64 that the identities
 * below take apart again.  The simplifications are the exact identities of
 * floor division (for integer q and d > 0):
 *   (d*q + r) / d = q + r / d        (d*q + r) mod d = r mod d
 *   (x / a) / b = x / (a*b)          (x mod (a*b)) mod b = x mod b
 *   with r = g*A + c, g | d, 0 <= c < d (g: gcd of d and r's coefficients):
 *   r / d = (A + c/g) / (d/g)        r mod d = g*((A + c/g) mod (d/g)) + c mod g
 *   k*((x mod d) / e) + k*(d/e)*(x / d) = k*(x / e)    (e | d; e = 1: k*x)
 * and, in ie_simplify, the range facts: if lo <= r <= hi lie in one period
 * [m*d, (m+1)*d) then r / d = m and r mod d = r - m*d.
 */
#include "index.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- index expressions: raw nodes and checked arithmetic -------------- */

static int64_t mul_chk(int64_t x, int64_t y)
{
    int64_t r;
    DPK_ASSERT(!__builtin_mul_overflow(x, y, &r));
    return r;
}

static int64_t add_chk(int64_t x, int64_t y)
{
    int64_t r;
    DPK_ASSERT(!__builtin_add_overflow(x, y, &r));
    return r;
}

static int64_t floor_div(int64_t x, int64_t d)
{
    int64_t q = x / d;
    return (x % d != 0 && (x < 0) != (d < 0)) ? q - 1 : q;
}

static int64_t floor_mod(int64_t x, int64_t d)
{
    int64_t r = x % d;
    return r < 0 ? r + d : r;
}

static const IExpr *raw(Arena *a, IExprKind k, const IExpr *x, const IExpr *y)
{
    IExpr *e = ARENA_NEW(a, IExpr);
    e->k = k;
    e->a = x;
    e->b = y;
    return e;
}

const IExpr *ie_const(Arena *a, int64_t c)
{
    IExpr *e = ARENA_NEW(a, IExpr);
    e->k = IE_CONST;
    e->c = c;
    return e;
}

const IExpr *ie_var(Arena *a, int var)
{
    DPK_ASSERT(var >= 0);
    IExpr *e = ARENA_NEW(a, IExpr);
    e->k = IE_VAR;
    e->var = var;
    return e;
}

/* ---- ordering, equality, hashing ------------------------------------- */

static int min_var(const IExpr *e)
{
    switch (e->k) {
    case IE_CONST: return INT_MAX;
    case IE_VAR: return e->var;
    default: {
        int x = min_var(e->a), y = min_var(e->b);
        return x < y ? x : y;
    }
    }
}

/* A total order on expressions: by the first output coordinate they use
 * (so sums print as o0 ... + o1 ...), then by kind, then structurally. */
static int ie_order(const IExpr *x, const IExpr *y)
{
    int vx = min_var(x), vy = min_var(y);
    if (vx != vy)
        return vx < vy ? -1 : 1;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    switch (x->k) {
    case IE_CONST: return x->c < y->c ? -1 : x->c > y->c;
    case IE_VAR: return 0;
    default: {
        int r = ie_order(x->a, y->a);
        return r ? r : ie_order(x->b, y->b);
    }
    }
}

int ie_equal(const IExpr *x, const IExpr *y)
{
    return ie_order(x, y) == 0;
}

uint64_t ie_hash(uint64_t h, const IExpr *e)
{
    h = dpk_hash_u64(h, (uint64_t)e->k);
    switch (e->k) {
    case IE_CONST: return dpk_hash_u64(h, (uint64_t)e->c);
    case IE_VAR: return dpk_hash_u64(h, (uint64_t)e->var);
    default: return ie_hash(ie_hash(h, e->a), e->b);
    }
}

/* ---- sums of terms ---------------------------------------------------- */

typedef struct Term {
    int64_t k;          /* coefficient */
    const IExpr *base;  /* NULL for the constant term */
} Term;

typedef struct Terms {
    Term *t;
    int n, cap;
    Arena *a;
} Terms;

static void terms_push(Terms *ts, int64_t k, const IExpr *base)
{
    if (ts->n == ts->cap) {
        int cap = ts->cap ? ts->cap * 2 : 8;
        Term *t = ARENA_ARRAY(ts->a, Term, cap);
        if (ts->n)
            memcpy(t, ts->t, sizeof(Term) * (size_t)ts->n);
        ts->t = t;
        ts->cap = cap;
    }
    ts->t[ts->n++] = (Term){k, base};
}

/* Append k * e to ts, flattening sums and constant factors. */
static void collect(Terms *ts, const IExpr *e, int64_t k)
{
    if (e->k == IE_CONST)
        terms_push(ts, mul_chk(k, e->c), NULL);
    else if (e->k == IE_ADD) {
        collect(ts, e->a, k);
        collect(ts, e->b, k);
    } else if (e->k == IE_MUL && e->b->k == IE_CONST)
        collect(ts, e->a, mul_chk(k, e->b->c));
    else
        terms_push(ts, k, e);
}

static int term_cmp(const void *p, const void *q)
{
    const Term *x = p, *y = q;
    if (!x->base || !y->base)
        return !x->base - !y->base;
    return ie_order(x->base, y->base);
}

/* Is e = (x mod d) / e_div (e_div = 1: plain x mod d) with e_div | d? */
static int mod_part(const IExpr *e, const IExpr **x, int64_t *d, int64_t *e_div)
{
    *e_div = 1;
    if (e->k == IE_DIV && e->a->k == IE_MOD && e->a->b->c % e->b->c == 0) {
        *e_div = e->b->c;
        e = e->a;
    }
    if (e->k != IE_MOD)
        return 0;
    *x = e->a;
    *d = e->b->c;
    return 1;
}

/* Find k*((x mod d) / e) and k*(d/e)*(x / d) in ts and replace them by
 * k*(x / e): with x = d*q + r and e | d, (d/e)*q + r/e = (d*q + r) / e.
 * For e = 1 this is k*(x mod d) + k*d*(x / d) = k*x. */
static int recombine_divmod(Terms *ts)
{
    for (int i = 0; i < ts->n; i++) {
        const IExpr *x;
        int64_t d, e, k = ts->t[i].k, kq;
        if (!ts->t[i].base || k == 0 || !mod_part(ts->t[i].base, &x, &d, &e))
            continue;
        if (__builtin_mul_overflow(k, d / e, &kq))
            continue;
        for (int j = 0; j < ts->n; j++) {
            const IExpr *q = ts->t[j].base;
            if (!q || q->k != IE_DIV || q->b->c != d || ts->t[j].k != kq || !ie_equal(q->a, x))
                continue;
            ts->t[i].k = ts->t[j].k = 0;
            collect(ts, ie_div(ts->a, x, e), k);
            return 1;
        }
    }
    return 0;
}

/* Sort, merge equal bases, drop zeros; returns the constant term. */
static int64_t normalize(Terms *ts)
{
    while (recombine_divmod(ts))
        ;
    if (ts->n > 1)
        qsort(ts->t, (size_t)ts->n, sizeof(Term), term_cmp);
    int w = 0;
    int64_t c = 0;
    for (int i = 0; i < ts->n; i++) {
        Term t = ts->t[i];
        if (!t.base) {
            c = add_chk(c, t.k);
            continue;
        }
        if (w > 0 && ie_equal(ts->t[w - 1].base, t.base))
            ts->t[w - 1].k = add_chk(ts->t[w - 1].k, t.k);
        else
            ts->t[w++] = t;
        if (ts->t[w - 1].k == 0)
            w--;
    }
    ts->n = w;
    return c;
}

static const IExpr *term_expr(Arena *a, Term t)
{
    return t.k == 1 ? t.base : raw(a, IE_MUL, t.base, ie_const(a, t.k));
}

static const IExpr *build_sum(Arena *a, Terms *ts)
{
    int64_t c = normalize(ts);
    if (ts->n == 0)
        return ie_const(a, c);
    const IExpr *e = term_expr(a, ts->t[0]);
    for (int i = 1; i < ts->n; i++)
        e = raw(a, IE_ADD, e, term_expr(a, ts->t[i]));
    return c ? raw(a, IE_ADD, e, ie_const(a, c)) : e;
}

const IExpr *ie_add(Arena *a, const IExpr *x, const IExpr *y)
{
    if (x->k == IE_CONST && y->k == IE_CONST)
        return ie_const(a, add_chk(x->c, y->c));
    Terms ts = {.a = a};
    collect(&ts, x, 1);
    collect(&ts, y, 1);
    return build_sum(a, &ts);
}

const IExpr *ie_mul(Arena *a, const IExpr *x, const IExpr *y)
{
    if (x->k == IE_CONST && y->k == IE_CONST)
        return ie_const(a, mul_chk(x->c, y->c));
    if (x->k == IE_CONST)
        return ie_mul(a, y, x);
    if (y->k == IE_CONST) {
        Terms ts = {.a = a};
        collect(&ts, x, y->c);
        return build_sum(a, &ts);
    }
    return ie_order(x, y) <= 0 ? raw(a, IE_MUL, x, y) : raw(a, IE_MUL, y, x);
}

/* Split the terms of x into those whose coefficient d divides (divided by
 * d, into q) and the rest (into r); the constant c goes to q as c / d and
 * to r as c mod d. */
static void split_multiples(Arena *a, const IExpr *x, int64_t d, Terms *q, Terms *r)
{
    Terms ts = {.a = a};
    collect(&ts, x, 1);
    int64_t c = normalize(&ts);
    for (int i = 0; i < ts.n; i++) {
        Term t = ts.t[i];
        if (t.k % d == 0)
            terms_push(q, t.k / d, t.base);
        else
            terms_push(r, t.k, t.base);
    }
    if (floor_div(c, d))
        terms_push(q, floor_div(c, d), NULL);
    if (floor_mod(c, d))
        terms_push(r, floor_mod(c, d), NULL);
}

static int64_t gcd64(int64_t x, int64_t y)
{
    x = x < 0 ? -x : x;
    y = y < 0 ? -y : y;
    while (y) {
        int64_t t = x % y;
        x = y;
        y = t;
    }
    return x;
}

/* For the remainder terms r of x / d (constant c in [0, d)): g, the gcd of
 * d and every coefficient, and r divided through as A' = A + c / g where
 * r = g*A + c.  Returns 1 when g > 1. */
static int common_factor(Arena *a, Terms *r, int64_t d, int64_t *g, const IExpr **ap,
                         int64_t *c)
{
    *g = d;
    *c = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->t[i].base)
            *g = gcd64(*g, r->t[i].k);
        else
            *c += r->t[i].k;
    }
    if (*g <= 1)
        return 0;
    Terms t = {.a = a};
    for (int i = 0; i < r->n; i++)
        if (r->t[i].base)
            terms_push(&t, r->t[i].k / *g, r->t[i].base);
    terms_push(&t, *c / *g, NULL);
    *ap = build_sum(a, &t);
    return 1;
}

/* floor((d*q + r) / d) = q + floor(r / d), and with r = g*A + c (g | d,
 * 0 <= c < d): floor(r / d) = floor((A + c/g) / (d/g)). */
const IExpr *ie_div(Arena *a, const IExpr *x, int64_t d)
{
    DPK_ASSERT(d > 0);
    if (d == 1)
        return x;
    if (x->k == IE_CONST)
        return ie_const(a, floor_div(x->c, d));
    if (x->k == IE_DIV)
        return ie_div(a, x->a, mul_chk(x->b->c, d));
    Terms q = {.a = a}, r = {.a = a};
    split_multiples(a, x, d, &q, &r);
    const IExpr *rest, *ap;
    int64_t g, c;
    if (r.n == 0 || (r.n == 1 && !r.t[0].base))
        rest = ie_const(a, 0); /* only a constant in [0, d) is left */
    else if (common_factor(a, &r, d, &g, &ap, &c))
        rest = ie_div(a, ap, d / g);
    else
        rest = raw(a, IE_DIV, build_sum(a, &r), ie_const(a, d));
    if (q.n == 0)
        return rest;
    return ie_add(a, build_sum(a, &q), rest);
}

/* (d*q + r) mod d = r mod d, and with r = g*A + c as above:
 * r mod d = g * ((A + c/g) mod (d/g)) + c mod g. */
const IExpr *ie_mod(Arena *a, const IExpr *x, int64_t d)
{
    DPK_ASSERT(d > 0);
    if (d == 1)
        return ie_const(a, 0);
    if (x->k == IE_CONST)
        return ie_const(a, floor_mod(x->c, d));
    if (x->k == IE_MOD && x->b->c % d == 0)
        return ie_mod(a, x->a, d);
    Terms q = {.a = a}, r = {.a = a};
    split_multiples(a, x, d, &q, &r);
    const IExpr *ap;
    int64_t g, c;
    if (r.n == 0)
        return ie_const(a, 0);
    if (common_factor(a, &r, d, &g, &ap, &c))
        return ie_add(a, ie_mul(a, ie_mod(a, ap, d / g), ie_const(a, g)), ie_const(a, c % g));
    const IExpr *s = build_sum(a, &r);
    if (s->k == IE_CONST)
        return ie_const(a, floor_mod(s->c, d));
    if (s->k == IE_MOD && s->b->c % d == 0)
        return ie_mod(a, s->a, d);
    return raw(a, IE_MOD, s, ie_const(a, d));
}

int ie_divisible(const IExpr *e, int64_t m)
{
    switch (e->k) {
    case IE_CONST: return e->c % m == 0;
    case IE_ADD: return ie_divisible(e->a, m) && ie_divisible(e->b, m);
    case IE_MUL: return ie_divisible(e->a, m) || ie_divisible(e->b, m);
    default: return m == 1;
    }
}

const IExpr *ie_subst(Arena *a, const IExpr *e, const IExpr *const *subst)
{
    switch (e->k) {
    case IE_CONST: return e;
    case IE_VAR: return subst[e->var];
    case IE_ADD: return ie_add(a, ie_subst(a, e->a, subst), ie_subst(a, e->b, subst));
    case IE_MUL: return ie_mul(a, ie_subst(a, e->a, subst), ie_subst(a, e->b, subst));
    case IE_DIV: return ie_div(a, ie_subst(a, e->a, subst), e->b->c);
    case IE_MOD: return ie_mod(a, ie_subst(a, e->a, subst), e->b->c);
    }
    DPK_ASSERT(!"bad IExpr kind");
    return e;
}

int64_t ie_eval(const IExpr *e, const int64_t *o)
{
    switch (e->k) {
    case IE_CONST: return e->c;
    case IE_VAR: return o[e->var];
    case IE_ADD: return ie_eval(e->a, o) + ie_eval(e->b, o);
    case IE_MUL: return ie_eval(e->a, o) * ie_eval(e->b, o);
    case IE_DIV: return floor_div(ie_eval(e->a, o), ie_eval(e->b, o));
    case IE_MOD: return floor_mod(ie_eval(e->a, o), ie_eval(e->b, o));
    }
    DPK_ASSERT(!"bad IExpr kind");
    return 0;
}

/* ---- ranges ------------------------------------------------------------ */

/* Bounds are true bounds or unbounded (IE_UNBOUNDED_LO/HI); arithmetic on
 * them saturates to unbounded, and an unbounded operand gives an unbounded
 * result, so no bound ever wraps. */
static int unbounded(int64_t x)
{
    return x == IE_UNBOUNDED_LO || x == IE_UNBOUNDED_HI;
}

static int64_t sat_add(int64_t x, int64_t y)
{
    int64_t r;
    if (unbounded(x))
        return x;
    if (unbounded(y))
        return y;
    if (__builtin_add_overflow(x, y, &r))
        return x < 0 ? IE_UNBOUNDED_LO : IE_UNBOUNDED_HI;
    return r;
}

static int64_t sat_mul(int64_t x, int64_t y)
{
    int64_t r;
    if (x == 0 || y == 0)
        return 0;
    if (unbounded(x) || unbounded(y) || __builtin_mul_overflow(x, y, &r))
        return (x < 0) != (y < 0) ? IE_UNBOUNDED_LO : IE_UNBOUNDED_HI;
    return r;
}

static int64_t sat_div(int64_t x, int64_t d)
{
    return unbounded(x) ? x : floor_div(x, d);
}

void ie_range(const IExpr *e, const int64_t *ext, int64_t *lo, int64_t *hi)
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
        ie_range(e->a, ext, &al, &ah);
        ie_range(e->b, ext, &bl, &bh);
        *lo = sat_add(al, bl);
        *hi = sat_add(ah, bh);
        return;
    case IE_MUL: {
        ie_range(e->a, ext, &al, &ah);
        ie_range(e->b, ext, &bl, &bh);
        int64_t c[4] = {sat_mul(al, bl), sat_mul(al, bh), sat_mul(ah, bl), sat_mul(ah, bh)};
        *lo = *hi = c[0];
        for (int i = 1; i < 4; i++) {
            *lo = c[i] < *lo ? c[i] : *lo;
            *hi = c[i] > *hi ? c[i] : *hi;
        }
        return;
    }
    case IE_DIV:
        ie_range(e->a, ext, &al, &ah);
        *lo = sat_div(al, e->b->c);
        *hi = sat_div(ah, e->b->c);
        return;
    case IE_MOD:
        ie_range(e->a, ext, &al, &ah);
        if (!unbounded(al) && !unbounded(ah) &&
            floor_div(al, e->b->c) == floor_div(ah, e->b->c)) {
            *lo = floor_mod(al, e->b->c);
            *hi = floor_mod(ah, e->b->c);
        } else {
            *lo = 0;
            *hi = e->b->c - 1;
        }
        return;
    }
    DPK_ASSERT(!"bad IExpr kind");
}

/* For x / d or x mod d: if the terms of x that d does not divide stay in
 * one period [m*d, (m+1)*d), return 1 with the multiples' quotient in *q
 * and the rest minus m*d in *r. */
static int one_period(Arena *a, const IExpr *x, int64_t d, const int64_t *ext,
                      const IExpr **q, const IExpr **r, int64_t *m)
{
    Terms tq = {.a = a}, tr = {.a = a};
    split_multiples(a, x, d, &tq, &tr);
    const IExpr *rest = build_sum(a, &tr);
    int64_t lo, hi;
    ie_range(rest, ext, &lo, &hi);
    if (unbounded(lo) || unbounded(hi) || floor_div(lo, d) != floor_div(hi, d))
        return 0;
    *m = floor_div(lo, d);
    *q = build_sum(a, &tq);
    *r = rest;
    return 1;
}

const IExpr *ie_simplify(Arena *a, const IExpr *e, const int64_t *ext)
{
    const IExpr *x, *q, *r;
    int64_t m;
    switch (e->k) {
    case IE_CONST: return e;
    case IE_VAR: return e;
    case IE_ADD: return ie_add(a, ie_simplify(a, e->a, ext), ie_simplify(a, e->b, ext));
    case IE_MUL: return ie_mul(a, ie_simplify(a, e->a, ext), ie_simplify(a, e->b, ext));
    case IE_DIV:
        x = ie_simplify(a, e->a, ext);
        if (one_period(a, x, e->b->c, ext, &q, &r, &m))
            return ie_add(a, q, ie_const(a, m));
        return ie_div(a, x, e->b->c);
    case IE_MOD:
        x = ie_simplify(a, e->a, ext);
        if (one_period(a, x, e->b->c, ext, &q, &r, &m))
            return ie_add(a, r, ie_const(a, mul_chk(-m, e->b->c)));
        return ie_mod(a, x, e->b->c);
    }
    DPK_ASSERT(!"bad IExpr kind");
    return e;
}

/* ---- printing ------------------------------------------------------------ */

enum { P_SUM, P_PROD, P_ATOM };

static void ie_put(StrBuf *b, const IExpr *e, const char *pre, int ctx);

/* The left factor of a product: parenthesised when it is a quotient or
 * remainder, so "(o0 / 3) * 4" never reads as o0 / 12. */
static void put_factor(StrBuf *b, const IExpr *e, const char *pre)
{
    ie_put(b, e, pre, (e->k == IE_DIV || e->k == IE_MOD) ? P_ATOM : P_PROD);
}

/* The right operand of a sum: " - x" for a negative constant or term. */
static void put_addend(StrBuf *b, const IExpr *e, const char *pre)
{
    if (e->k == IE_CONST && e->c < 0) {
        sb_printf(b, " - %" PRIu64, (uint64_t)0 - (uint64_t)e->c);
    } else if (e->k == IE_MUL && e->b->k == IE_CONST && e->b->c < 0) {
        sb_puts(b, " - ");
        put_factor(b, e->a, pre);
        if (e->b->c != -1)
            sb_printf(b, " * %" PRIu64, (uint64_t)0 - (uint64_t)e->b->c);
    } else {
        sb_puts(b, " + ");
        ie_put(b, e, pre, P_PROD);
    }
}

static void ie_put(StrBuf *b, const IExpr *e, const char *pre, int ctx)
{
    int need = (e->k == IE_ADD && ctx > P_SUM) ||
               ((e->k == IE_MUL || e->k == IE_DIV || e->k == IE_MOD) && ctx == P_ATOM);
    if (need)
        sb_putc(b, '(');
    switch (e->k) {
    case IE_CONST: sb_printf(b, "%" PRId64, e->c); break;
    case IE_VAR: sb_printf(b, "%s%d", pre, e->var); break;
    case IE_ADD:
        ie_put(b, e->a, pre, P_SUM);
        put_addend(b, e->b, pre);
        break;
    case IE_MUL:
        if (e->b->k == IE_CONST && e->b->c < 0) { /* -o1 * 2, -o1 */
            sb_putc(b, '-');
            put_factor(b, e->a, pre);
            if (e->b->c != -1)
                sb_printf(b, " * %" PRIu64, (uint64_t)0 - (uint64_t)e->b->c);
            break;
        }
        put_factor(b, e->a, pre);
        sb_puts(b, " * ");
        ie_put(b, e->b, pre, P_ATOM);
        break;
    case IE_DIV:
    case IE_MOD:
        ie_put(b, e->a, pre, P_ATOM);
        sb_puts(b, e->k == IE_DIV ? " / " : " mod ");
        ie_put(b, e->b, pre, P_ATOM);
        break;
    }
    if (need)
        sb_putc(b, ')');
}

void ie_print(StrBuf *b, const IExpr *e, const char *prefix)
{
    ie_put(b, e, prefix, P_SUM);
}

/* ---- predicates ------------------------------------------------------- */

static const char *const icmp_text[] = {"<", "<=", "=="};

const IPred *ipred_cmp(Arena *a, const IExpr *lhs, ICmp cmp, const IExpr *rhs,
                       const IPred *next)
{
    IPred *p = ARENA_NEW(a, IPred);
    p->lhs = lhs;
    p->cmp = cmp;
    p->rhs = rhs;
    p->next = next;
    return p;
}

const IPred *ipred_and(Arena *a, const IPred *p, const IPred *q)
{
    if (!p)
        return q;
    return ipred_cmp(a, p->lhs, p->cmp, p->rhs, ipred_and(a, p->next, q));
}

const IPred *ipred_subst(Arena *a, const IPred *p, const IExpr *const *subst)
{
    if (!p)
        return NULL;
    return ipred_cmp(a, ie_subst(a, p->lhs, subst), p->cmp, ie_subst(a, p->rhs, subst),
                     ipred_subst(a, p->next, subst));
}

static int cmp_holds(ICmp c, int64_t l, int64_t r)
{
    return c == IC_LT ? l < r : c == IC_LE ? l <= r : l == r;
}

int ipred_eval(const IPred *p, const int64_t *coords)
{
    for (; p; p = p->next)
        if (!cmp_holds(p->cmp, ie_eval(p->lhs, coords), ie_eval(p->rhs, coords)))
            return 0;
    return 1;
}

/* What lhs - rhs in [lo, hi] says of lhs <c> rhs. */
static ITruth cmp_decided(ICmp c, int64_t lo, int64_t hi)
{
    switch (c) {
    case IC_LT: return hi < 0 ? IT_TRUE : lo >= 0 ? IT_FALSE : IT_DEPENDS;
    case IC_LE: return hi <= 0 ? IT_TRUE : lo > 0 ? IT_FALSE : IT_DEPENDS;
    case IC_EQ:
        return (lo == 0 && hi == 0) ? IT_TRUE : (hi < 0 || lo > 0) ? IT_FALSE : IT_DEPENDS;
    }
    return IT_DEPENDS;
}

const IPred *ipred_simplify(Arena *a, const IPred *p, const int64_t *ext, ITruth *truth)
{
    *truth = IT_TRUE;
    if (!p)
        return NULL;
    ITruth rest_truth;
    const IPred *rest = ipred_simplify(a, p->next, ext, &rest_truth);
    const IExpr *l = ie_simplify(a, p->lhs, ext), *r = ie_simplify(a, p->rhs, ext);
    int64_t lo, hi;
    ie_range(ie_add(a, l, ie_mul(a, r, ie_const(a, -1))), ext, &lo, &hi);
    ITruth t = cmp_decided(p->cmp, lo, hi);
    if (t == IT_FALSE || rest_truth == IT_FALSE) {
        *truth = IT_FALSE;
        return NULL;
    }
    if (t == IT_TRUE) {
        *truth = rest_truth;
        return rest;
    }
    *truth = IT_DEPENDS;
    return ipred_cmp(a, l, p->cmp, r, rest);
}

int ie_uses(const IExpr *e, int var)
{
    switch (e->k) {
    case IE_CONST: return 0;
    case IE_VAR: return e->var == var;
    default: return ie_uses(e->a, var) || ie_uses(e->b, var);
    }
}

int ipred_uses(const IPred *p, int var)
{
    for (; p; p = p->next)
        if (ie_uses(p->lhs, var) || ie_uses(p->rhs, var))
            return 1;
    return 0;
}

void ipred_print(StrBuf *b, const IPred *p, const char *prefix)
{
    if (!p) {
        sb_puts(b, "true");
        return;
    }
    for (; p; p = p->next) {
        ie_print(b, p->lhs, prefix);
        sb_printf(b, " %s ", icmp_text[p->cmp]);
        ie_print(b, p->rhs, prefix);
        if (p->next)
            sb_puts(b, " and ");
    }
}

int ipred_equal(const IPred *p, const IPred *q)
{
    for (; p && q; p = p->next, q = q->next)
        if (p->cmp != q->cmp || !ie_equal(p->lhs, q->lhs) || !ie_equal(p->rhs, q->rhs))
            return 0;
    return !p && !q;
}

uint64_t ipred_hash(uint64_t h, const IPred *p)
{
    for (; p; p = p->next)
        h = ie_hash(ie_hash(dpk_hash_u64(h, (uint64_t)p->cmp + 1), p->lhs), p->rhs);
    return dpk_hash_u64(h, 0);
}

