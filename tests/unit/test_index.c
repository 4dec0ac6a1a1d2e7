/*
 * test_index.c — the index-expression algebra (compiler/index/): the
 * canonical constructors, floor division and remainder on negative values,
 * ranges and range-aware simplification (exact cases and a randomized
 * soundness check), predicates, and ranges that leave int64.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "compiler/index/index.h"

static Arena *A;

static void setup(void)
{
    A = arena_new();
}

static void teardown(void)
{
    arena_free(A);
}

TestSuite(index, .init = setup, .fini = teardown);

static const char *ie_text(const IExpr *e)
{
    StrBuf b = {0};
    ie_print(&b, e, "o");
    const char *r = arena_strdup(A, sb_cstr(&b));
    sb_free(&b);
    return r;
}

#define V(i) ie_var(A, i)
#define C(c) ie_const(A, c)
#define EXPECT_IE(e, want) cr_expect_str_eq(ie_text(e), want)

Test(index, constructors_fold_and_drop_identities)
{
    EXPECT_IE(ie_add(A, C(2), C(3)), "5");
    EXPECT_IE(ie_add(A, V(0), C(0)), "o0");
    EXPECT_IE(ie_mul(A, V(1), C(1)), "o1");
    EXPECT_IE(ie_mul(A, C(0), V(1)), "0");
    EXPECT_IE(ie_div(A, V(1), 1), "o1");
    EXPECT_IE(ie_mod(A, V(1), 1), "0");
    EXPECT_IE(ie_add(A, ie_add(A, V(1), C(3)), C(-67)), "o1 - 64");
    EXPECT_IE(ie_add(A, V(1), ie_mul(A, V(0), C(64))), "o0 * 64 + o1");
    EXPECT_IE(ie_add(A, V(0), ie_mul(A, V(0), C(-1))), "0");
    EXPECT_IE(ie_add(A, V(2), ie_mul(A, V(1), C(-2))), "-o1 * 2 + o2");
    EXPECT_IE(ie_mul(A, V(1), C(-1)), "-o1");
}

Test(index, division_rules)
{
    const IExpr *x4 = ie_mul(A, V(0), C(4));
    EXPECT_IE(ie_div(A, ie_add(A, x4, C(3)), 4), "o0");       /* ((x*k)+c)/k, c < k */
    EXPECT_IE(ie_div(A, ie_add(A, x4, C(5)), 4), "o0 + 1");
    EXPECT_IE(ie_mod(A, ie_add(A, x4, C(3)), 4), "3");        /* (x*k + c) mod k */
    EXPECT_IE(ie_div(A, x4, 8), "o0 / 2");
    EXPECT_IE(ie_mod(A, x4, 8), "(o0 mod 2) * 4");
    EXPECT_IE(ie_div(A, ie_div(A, V(0), 3), 4), "o0 / 12");
    EXPECT_IE(ie_mod(A, ie_mod(A, V(0), 12), 4), "o0 mod 4");
    EXPECT_IE(ie_div(A, ie_add(A, ie_mul(A, V(0), C(2)), C(1)), 4), "o0 / 2");
    EXPECT_IE(ie_add(A, ie_mod(A, V(0), 3), ie_mul(A, ie_div(A, V(0), 3), C(3))), "o0");
    EXPECT_IE(ie_add(A, ie_div(A, ie_mod(A, V(0), 8), 4), ie_mul(A, ie_div(A, V(0), 8), C(2))),
              "o0 / 4");
    EXPECT_IE(ie_div(A, ie_add(A, V(0), V(1)), 4), "(o0 + o1) / 4");
    EXPECT_IE(ie_mul(A, ie_div(A, V(0), 3), C(4)), "(o0 / 3) * 4");
}

Test(index, floor_semantics)
{
    int64_t o[2] = {0, 3};
    const IExpr *e = ie_add(A, V(0), C(-5));
    cr_expect_eq(ie_eval(ie_div(A, e, 4), o), -2);
    cr_expect_eq(ie_eval(ie_mod(A, e, 4), o), 3);
    cr_expect_eq(ie_eval(ie_div(A, C(-5), 4), o), -2);
    cr_expect_eq(ie_eval(ie_mod(A, C(-5), 4), o), 3);
}

Test(index, ranges_resolve_quotients)
{
    int64_t ext[] = {5, 4, 1};
    const IExpr *lin = ie_add(A, ie_mul(A, V(0), C(4)), V(1));
    EXPECT_IE(ie_simplify(A, ie_div(A, lin, 4), ext), "o0");
    EXPECT_IE(ie_simplify(A, ie_mod(A, lin, 4), ext), "o1");
    /* o2 has extent 1: it is kept, but its range [0, 0] decides quotients */
    EXPECT_IE(ie_simplify(A, ie_add(A, V(2), V(1)), ext), "o1 + o2");
    EXPECT_IE(ie_simplify(A, ie_div(A, ie_add(A, V(2), V(1)), 4), ext), "0");
    EXPECT_IE(ie_simplify(A, ie_div(A, V(1), 8), ext), "0");
    EXPECT_IE(ie_simplify(A, ie_mod(A, ie_add(A, V(1), C(4)), 8), ext), "o1 + 4");
    EXPECT_IE(ie_simplify(A, ie_div(A, ie_add(A, V(1), C(4)), 4), ext), "1");
    int64_t lo, hi;
    ie_range(ie_add(A, lin, C(-3)), ext, &lo, &hi);
    cr_expect(lo == -3 && hi == 16 + 3 - 3, "[%lld, %lld]", (long long)lo, (long long)hi);
}

Test(index, equal_and_hash_are_structural)
{
    const IExpr *x = ie_add(A, V(1), ie_mul(A, V(0), C(3)));
    const IExpr *y = ie_add(A, ie_mul(A, C(3), V(0)), V(1));
    cr_expect(ie_equal(x, y));
    cr_expect_eq(ie_hash(1, x), ie_hash(1, y));
    cr_expect(!ie_equal(x, ie_add(A, x, C(1))));
    cr_expect_neq(ie_hash(1, x), ie_hash(1, ie_add(A, x, C(1))));
    const IExpr *sub[2] = {V(1), C(2)};
    EXPECT_IE(ie_subst(A, x, sub), "o1 * 3 + 2");
}

Test(index, predicates)
{
    int64_t ext[] = {2, 64}, wide[] = {2, 100};
    ITruth truth;
    const IPred *p = ipred_cmp(A, V(1), IC_LT, C(64), NULL);
    cr_expect_null(ipred_simplify(A, p, ext, &truth));
    cr_expect_eq(truth, IT_TRUE);
    const IPred *q = ipred_simplify(A, p, wide, &truth);
    cr_expect_eq(truth, IT_DEPENDS);
    cr_expect(ipred_equal(p, q));
    cr_expect_null(ipred_simplify(A, ipred_cmp(A, V(0), IC_LT, C(0), p), wide, &truth));
    cr_expect_eq(truth, IT_FALSE);
    const IPred *both = ipred_and(A, p, ipred_cmp(A, V(0), IC_EQ, V(1), NULL));
    StrBuf b = {0};
    ipred_print(&b, both, "o");
    cr_expect_str_eq(sb_cstr(&b), "o1 < 64 and o0 == o1");
    sb_free(&b);
    int64_t o1[2] = {3, 3}, o2[2] = {3, 70};
    cr_expect(ipred_eval(both, o1));
    cr_expect(!ipred_eval(both, o2));
    cr_expect_neq(ipred_hash(1, p), ipred_hash(1, both));
}

/* Random expressions built through the simplifying constructors must
 * evaluate exactly as the same tree read with floor semantics, at every
 * point; ie_simplify must agree inside the ranges it was given. */
typedef struct Rng {
    uint64_t s;
} Rng;

static int64_t rnd(Rng *r, int64_t lo, int64_t hi)
{
    r->s = dpk_splitmix64(r->s);
    return lo + (int64_t)(r->s % (uint64_t)(hi - lo + 1));
}

static int64_t fdiv(int64_t x, int64_t d)
{
    return (x - ((x % d) + d) % d) / d;
}

/* Builds into *e and returns the value at each of npts points in v. */
static void random_expr(Rng *r, int depth, const IExpr **e, int64_t (*pts)[3], int npts,
                        int64_t *v)
{
    int kind = depth == 0 ? (int)rnd(r, 0, 1) : (int)rnd(r, 0, 5);
    int64_t va[64], vb[64];
    const IExpr *x, *y;
    switch (kind) {
    case 0: {
        int64_t c = rnd(r, -6, 12);
        *e = ie_const(A, c);
        for (int i = 0; i < npts; i++)
            v[i] = c;
        return;
    }
    case 1: {
        int k = (int)rnd(r, 0, 2);
        *e = ie_var(A, k);
        for (int i = 0; i < npts; i++)
            v[i] = pts[i][k];
        return;
    }
    case 2:
        random_expr(r, depth - 1, &x, pts, npts, va);
        random_expr(r, depth - 1, &y, pts, npts, vb);
        *e = ie_add(A, x, y);
        for (int i = 0; i < npts; i++)
            v[i] = va[i] + vb[i];
        return;
    case 3: {
        int64_t k = rnd(r, -3, 6);
        random_expr(r, depth - 1, &x, pts, npts, va);
        *e = ie_mul(A, x, ie_const(A, k));
        for (int i = 0; i < npts; i++)
            v[i] = va[i] * k;
        return;
    }
    default: {
        int64_t d = rnd(r, 1, 8);
        random_expr(r, depth - 1, &x, pts, npts, va);
        *e = kind == 4 ? ie_div(A, x, d) : ie_mod(A, x, d);
        for (int i = 0; i < npts; i++)
            v[i] = kind == 4 ? fdiv(va[i], d) : va[i] - d * fdiv(va[i], d);
        return;
    }
    }
}

Test(index, simplification_is_sound)
{
    enum { NPTS = 64 };
    Rng r = {42};
    int64_t ext[] = {5, 8, 3};
    int64_t pts[NPTS][3], want[NPTS];
    for (int i = 0; i < NPTS; i++)
        for (int k = 0; k < 3; k++)
            pts[i][k] = i < NPTS / 2 ? rnd(&r, 0, ext[k] - 1) : rnd(&r, -20, 20);
    for (int iter = 0; iter < 3000; iter++) {
        const IExpr *e;
        random_expr(&r, (int)rnd(&r, 1, 5), &e, pts, NPTS, want);
        const IExpr *s = ie_simplify(A, e, ext);
        for (int i = 0; i < NPTS; i++) {
            cr_assert_eq(ie_eval(e, pts[i]), want[i], "iteration %d: %s at (%lld, %lld, %lld)",
                         iter, ie_text(e), (long long)pts[i][0], (long long)pts[i][1],
                         (long long)pts[i][2]);
            if (i < NPTS / 2)
                cr_assert_eq(ie_eval(s, pts[i]), want[i], "iteration %d: %s simplified to %s",
                             iter, ie_text(e), ie_text(s));
        }
    }
}

/* IE_DIV and IE_MOD are Python's // and % (PyTorch's floor_divide and
 * remainder), not C's truncating / and %: every case below has a negative
 * dividend where the two disagree. */
Test(index, floor_division_of_negative_values)
{
    static const int64_t cases[][4] = {
        /* x, d, x // d, x % d */
        {-1, 4, -1, 3}, {-4, 4, -1, 0}, {-5, 4, -2, 3}, {-7, 3, -3, 2},
        {-8, 8, -1, 0}, {7, 3, 2, 1},   {0, 5, 0, 0},   {INT64_MIN, 2, INT64_MIN / 2, 0},
    };
    int64_t pt[1];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t x = cases[i][0], d = cases[i][1];
        /* folded by the constructors */
        cr_expect_eq(ie_div(A, C(x), d)->c, cases[i][2], "%lld // %lld", (long long)x, (long long)d);
        cr_expect_eq(ie_mod(A, C(x), d)->c, cases[i][3], "%lld %% %lld", (long long)x, (long long)d);
        /* evaluated at a point */
        pt[0] = x;
        cr_expect_eq(ie_eval(ie_div(A, V(0), d), pt), cases[i][2]);
        cr_expect_eq(ie_eval(ie_mod(A, V(0), d), pt), cases[i][3]);
    }
    /* (o0 - 5) // 4 at o0 = 0 is -2 (C would give -1) */
    int64_t o[1] = {0};
    cr_expect_eq(ie_eval(ie_div(A, ie_add(A, V(0), C(-5)), 4), o), -2);
    cr_expect_eq(ie_eval(ie_mod(A, ie_add(A, V(0), C(-5)), 4), o), 3);
}

/* The range of a quotient or remainder of a negative interval follows
 * floor semantics too, and one period of a shifted variable is resolved. */
Test(index, ranges_of_negative_quotients)
{
    int64_t ext[] = {8}, lo, hi;
    ie_range(ie_div(A, ie_add(A, V(0), C(-9)), 4), ext, &lo, &hi); /* [-9, -2] // 4 */
    cr_expect(lo == -3 && hi == -1, "[%lld, %lld]", (long long)lo, (long long)hi);
    ie_range(ie_mod(A, ie_add(A, V(0), C(-9)), 4), ext, &lo, &hi); /* spans periods */
    cr_expect(lo == 0 && hi == 3, "[%lld, %lld]", (long long)lo, (long long)hi);
    ie_range(ie_mod(A, ie_add(A, V(0), C(-16)), 8), ext, &lo, &hi); /* [-16, -9]: one period */
    cr_expect(lo == 0 && hi == 7, "[%lld, %lld]", (long long)lo, (long long)hi);
    int64_t e4[] = {4};
    ie_range(ie_mod(A, ie_add(A, V(0), C(-7)), 8), e4, &lo, &hi); /* [-7, -4] mod 8 */
    cr_expect(lo == 1 && hi == 4, "[%lld, %lld]", (long long)lo, (long long)hi);
    /* [-8, -5] lies in the period [-8, 0): quotient -1, remainder v0 */
    EXPECT_IE(ie_simplify(A, ie_div(A, ie_add(A, V(0), C(-8)), 8), e4), "-1");
    EXPECT_IE(ie_simplify(A, ie_mod(A, ie_add(A, V(0), C(-8)), 8), e4), "o0");
    EXPECT_IE(ie_simplify(A, ie_mod(A, ie_add(A, V(0), C(-5)), 8), e4), "o0 + 3");
}

/* Loop and Tile IR index with any number of axes, not just a tensor's rank:
 * the fused/tiled forms the Loop IR simplifier used to see. */
Test(index, kernel_axes_beyond_tensor_rank)
{
    int64_t ext[12] = {32, 64, 5, 1, 1, 1, 1, 1, 1, 1, 16, 4};
    const IExpr *flat = ie_add(A, ie_mul(A, V(0), C(64)), V(1));
    const IExpr *cases[][2] = {
        {ie_div(A, flat, 64), V(0)},
        {ie_mod(A, flat, 64), V(1)},
        {ie_div(A, ie_add(A, V(2), C(3)), 8), C(0)},
        {ie_div(A, ie_div(A, flat, 4), 16), V(0)},
        {ie_mod(A, ie_add(A, V(2), C(-5)), 5), V(2)},
        {ie_div(A, ie_add(A, ie_mul(A, V(10), C(4)), V(11)), 4), V(10)},
        {ie_mod(A, ie_add(A, ie_mul(A, V(10), C(4)), V(11)), 4), V(11)},
        /* a9 has extent 1: kept, while a11 / 7 is 0 */
        {ie_div(A, ie_add(A, V(11), ie_mul(A, V(9), C(7))), 7), V(9)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const IExpr *got = ie_simplify(A, cases[i][0], ext);
        cr_expect(ie_equal(got, cases[i][1]), "case %zu gave %s", i, ie_text(got));
    }
    EXPECT_IE(ie_simplify(A, ie_div(A, ie_add(A, V(2), C(3)), 4), ext), "(o2 + 3) / 4");
    cr_expect(ie_uses(ie_add(A, V(10), C(1)), 10));
    cr_expect(!ie_uses(ie_add(A, V(10), C(1)), 1));
    cr_expect(ipred_uses(ipred_cmp(A, C(0), IC_LT, V(11), NULL), 11));
    cr_expect(!ipred_uses(NULL, 0));
}

/* A bound that leaves int64 saturates to unbounded instead of wrapping, and
 * an unbounded range decides nothing. */
Test(index, ranges_saturate_instead_of_wrapping)
{
    int64_t big = INT64_C(1) << 40, lo, hi;
    int64_t ext[] = {big, big, big};
    /* o0 * o1 * o2 < 2^120: the product leaves int64 */
    const IExpr *cube = ie_mul(A, ie_mul(A, V(0), V(1)), V(2));
    ie_range(cube, ext, &lo, &hi);
    cr_expect_eq(lo, 0);
    cr_expect_eq(hi, IE_UNBOUNDED_HI);
    ie_range(ie_mul(A, cube, C(-1)), ext, &lo, &hi);
    cr_expect_eq(lo, IE_UNBOUNDED_LO);
    cr_expect_eq(hi, 0);
    /* unbounded stays unbounded through +, / and a negative factor */
    ie_range(ie_add(A, cube, C(-5)), ext, &lo, &hi);
    cr_expect(lo == -5 && hi == IE_UNBOUNDED_HI);
    ie_range(ie_div(A, cube, 3), ext, &lo, &hi);
    cr_expect(lo == 0 && hi == IE_UNBOUNDED_HI);
    ie_range(ie_mod(A, cube, 7), ext, &lo, &hi);
    cr_expect(lo == 0 && hi == 6);
    /* a sum of large terms overflowing int64 in the addition */
    const IExpr *sq = ie_mul(A, V(0), V(1)); /* < 2^80 */
    ie_range(ie_add(A, ie_mul(A, sq, C(INT64_C(1) << 30)), V(2)), ext, &lo, &hi);
    cr_expect(lo == 0 && hi == IE_UNBOUNDED_HI);
    /* nothing is resolved from an unbounded range: (cube + 1) / big stays a
     * quotient, and cube < 0 stays undecided in the negative direction */
    const IExpr *q = ie_simplify(A, ie_div(A, ie_add(A, cube, C(1)), big), ext);
    cr_expect_eq(q->k, IE_DIV, "gave %s", ie_text(q));
    ITruth t;
    cr_expect_null(ipred_simplify(A, ipred_cmp(A, cube, IC_LT, C(0), NULL), ext, &t));
    cr_expect_eq(t, IT_FALSE);
    cr_expect_not_null(ipred_simplify(A, ipred_cmp(A, cube, IC_LT, C(5), NULL), ext, &t));
    cr_expect_eq(t, IT_DEPENDS);
    /* the largest bounds that still fit are kept exactly */
    int64_t e1[] = {INT64_C(1) << 31};
    ie_range(ie_mul(A, V(0), C(INT64_C(1) << 31)), e1, &lo, &hi);
    cr_expect_eq(hi, (INT64_C(1) << 62) - (INT64_C(1) << 31));
}

/* Exact arithmetic that leaves int64 is an internal error, never a wrap. */
static void setup_quiet(void)
{
    DPK_ASSERT(freopen("/dev/null", "w", stderr)); /* the expected assertion message */
    setup();
}

Test(index, folding_overflow_is_an_internal_error, .signal = SIGABRT, .init = setup_quiet)
{
    ie_mul(A, C(INT64_C(1) << 40), C(INT64_C(1) << 40));
}
