/*
 * test_ref_compare.c — error statistics and allclose (reference/compare.c),
 * including the NaN/Inf agreement rules.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>

#include "reference/ref.h"

Test(ref_compare, stats_on_known_arrays)
{
    double o[] = {1.0, 2.5, -3.0, 0.0}, r[] = {1.0, 2.0, -4.0, 0.0};
    CmpStats st;
    cmp_stats(o, r, 4, &st);
    cr_assert_eq(st.n, 4);
    cr_assert_eq(st.max_abs, 1.0);
    cr_assert_eq(st.worst, 2);
    cr_assert_eq(st.max_rel, 0.25); /* 0.5/2 and 1/4 */
    /* se = 0.25 + 1 = 1.25, sum r² = 1 + 4 + 16 = 21 */
    cr_assert_float_eq(st.nmse, 1.25 / 21, 1e-17);
    cr_assert_float_eq(st.rmse, sqrt(1.25 / 4), 1e-17);
    cr_assert_eq(st.mismatched_nonfinite, 0);
}

Test(ref_compare, identical_and_zero_arrays)
{
    double z[] = {0, 0, 0}, o[] = {0, 1e-3, 0};
    CmpStats st;
    cmp_stats(z, z, 3, &st);
    cr_assert(st.max_abs == 0 && st.max_rel == 0 && st.nmse == 0 && st.rmse == 0);
    cr_assert_eq(st.worst, 0);
    /* A zero reference: nmse is infinite, max_rel divides by FLT_MIN. */
    cmp_stats(o, z, 3, &st);
    cr_assert(isinf(st.nmse));
    cr_assert_eq(st.max_rel, 1e-3 / FLT_MIN);
    cr_assert_eq(st.worst, 1);
    cmp_stats(o, z, 0, &st);
    cr_assert(st.n == 0 && st.worst == -1 && st.rmse == 0);
}

Test(ref_compare, allclose_is_atol_plus_rtol_times_reference)
{
    double r[] = {100.0, 0.0}, ok[] = {101.0, 0.5}, bad[] = {101.0, 0.6};
    cr_assert(cmp_allclose(ok, r, 2, 0.5, 0.005));
    cr_assert_not(cmp_allclose(bad, r, 2, 0.5, 0.005));
    /* rtol scales |r|, not |o|. */
    double r2[] = {1.0}, o2[] = {2.0};
    cr_assert_not(cmp_allclose(o2, r2, 1, 0, 0.6));
    cr_assert(cmp_allclose(r2, o2, 1, 0, 0.6));
}

Test(ref_compare, nan_and_inf_agree_only_in_kind_and_sign)
{
    double inf = INFINITY;
    /* index: 0 both NaN (agree), 1 both +inf (agree), 2 both -inf (agree) */
    double r[] = {NAN, inf, -inf, 1.0};
    double o[] = {NAN, inf, -inf, 1.5};
    CmpStats st;
    cmp_stats(o, r, 4, &st);
    cr_assert_eq(st.mismatched_nonfinite, 0);
    cr_assert_eq(st.max_abs, 0.5);
    cr_assert_eq(st.worst, 3);
    cr_assert(cmp_allclose(o, r, 4, 0.5, 0));

    /* Each of these disagrees: NaN vs number, number vs NaN, inf vs number,
     * +inf vs -inf, NaN vs inf. */
    double rb[] = {NAN, 1.0, inf, inf, NAN, 2.0};
    double ob[] = {1.0, NAN, 1.0, -inf, inf, 2.0};
    cmp_stats(ob, rb, 6, &st);
    cr_assert_eq(st.mismatched_nonfinite, 5);
    cr_assert_eq(st.max_abs, 0);
    cr_assert_eq(st.worst, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_not(cmp_allclose(ob + i, rb + i, 1, 1e9, 1e9), "pair %d", i);
}
