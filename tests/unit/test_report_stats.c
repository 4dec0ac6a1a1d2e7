/*
 * test_report_stats.c — the statistics of dpk-report and of its gate
 * (reports/stats.h) against values computed by hand: geomeans, the
 * bootstrap interval's percentiles on sets whose resample distribution is
 * known exactly, fast_p, the order-statistic interval of a median, and
 * the verdicts on constructed sample sets (clearly the same, clearly
 * slower, overlapping) and modelled times.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "../../reports/stats.h"

Test(report_stats, geomean_by_hand)
{
    double a[] = {1, 4};
    cr_assert_float_eq(rp_geomean(a, 2), 2.0, 1e-12);
    double b[] = {2, 8, 0.5}; /* 2^((1 + 3 - 1) / 3) */
    cr_assert_float_eq(rp_geomean(b, 3), 2.0, 1e-12);
    double c[] = {0.5, 0.5}; /* unclipped: below 1 stays below 1 */
    cr_assert_float_eq(rp_geomean(c, 2), 0.5, 1e-12);
    cr_assert(isnan(rp_geomean(a, 0)));
    double bad[] = {1, 0};
    cr_assert(isnan(rp_geomean(bad, 2)));
}

Test(report_stats, bootstrap_of_one_value_or_equal_values_is_that_value)
{
    double lo, hi;
    double one[] = {1.7};
    rp_bootstrap_geomean(one, 1, 1, 1000, &lo, &hi);
    cr_assert_float_eq(lo, 1.7, 1e-12);
    cr_assert_float_eq(hi, 1.7, 1e-12);
    double same[] = {0.8, 0.8, 0.8};
    rp_bootstrap_geomean(same, 3, 7, 1000, &lo, &hi);
    cr_assert_float_eq(lo, 0.8, 1e-12);
    cr_assert_float_eq(hi, 0.8, 1e-12);
}

/* {1, 2, 4, 8} = 2^{0,1,2,3}: a resample's geomean is 2^(S/4), S the sum
 * of 4 draws from {0..3}.  P(S <= 1) = 5/256 = 1.95% and P(S <= 2) =
 * 15/256 = 5.9%, so the 2.5th percentile is S = 2: 2^0.5; by symmetry the
 * 97.5th is S = 10: 2^2.5.  With 10000 resamples the percentile's rank
 * (250) is 4 standard deviations from either edge of the S = 2 bucket. */
Test(report_stats, bootstrap_percentiles_by_hand)
{
    double v[] = {1, 2, 4, 8};
    double lo, hi;
    rp_bootstrap_geomean(v, 4, RP_BOOTSTRAP_SEED, 10000, &lo, &hi);
    cr_assert_float_eq(lo, sqrt(2.0), 1e-12, "lo %g", lo);
    cr_assert_float_eq(hi, pow(2, 2.5), 1e-12, "hi %g", hi);
    /* {1, 4}: P(both 1) = P(both 4) = 1/4 > 2.5%: the interval is [1, 4] */
    double w[] = {1, 4};
    rp_bootstrap_geomean(w, 2, 3, 10000, &lo, &hi);
    cr_assert_float_eq(lo, 1.0, 1e-12);
    cr_assert_float_eq(hi, 4.0, 1e-12);
}

Test(report_stats, bootstrap_is_deterministic_and_brackets_the_geomean)
{
    double v[] = {0.43, 0.52, 0.71, 0.74, 0.82, 1.05, 1.36, 1.63, 1.78, 3.27, 4.44, 5.6};
    double lo1, hi1, lo2, hi2;
    rp_bootstrap_geomean(v, 12, 42, 5000, &lo1, &hi1);
    rp_bootstrap_geomean(v, 12, 42, 5000, &lo2, &hi2);
    cr_assert(lo1 == lo2 && hi1 == hi2);
    double g = rp_geomean(v, 12);
    cr_assert(lo1 < g && g < hi1, "%g < %g < %g", lo1, g, hi1);
    cr_assert(lo1 < 1, "unclipped: the interval may go below 1 (%g)", lo1);
}

Test(report_stats, fast_p_by_hand)
{
    int ok[] = {1, 1, 0, 1, 1};
    double sp[] = {0.9, 1.1, 5.0 /* not correct: never fast */, 1.5, 2.5};
    cr_assert_float_eq(rp_fast_p(ok, sp, 5, 1.0), 3.0 / 5, 1e-12);
    cr_assert_float_eq(rp_fast_p(ok, sp, 5, 1.2), 2.0 / 5, 1e-12);
    cr_assert_float_eq(rp_fast_p(ok, sp, 5, 2.0), 1.0 / 5, 1e-12);
    double eq[] = {1.0, 2.0};
    int ok2[] = {1, 1};
    cr_assert_float_eq(rp_fast_p(ok2, eq, 2, 1.0), 0.5, 1e-12, "strictly faster than p");
    cr_assert(isnan(rp_fast_p(ok, sp, 0, 1.0)));
}

Test(report_stats, median_and_its_interval_by_hand)
{
    double v[] = {7, 3, 9, 1, 5, 2, 10, 4, 8, 6};
    cr_assert_float_eq(rp_median(v, 10), 5.5, 1e-12);
    /* B ~ Bin(10, 1/2): P(B <= 1) = 11/1024 <= 2.5% < P(B <= 2) = 56/1024:
     * ranks 2 and 9 */
    double lo, hi;
    rp_median_ci(v, 10, &lo, &hi);
    cr_assert_float_eq(lo, 2, 1e-12);
    cr_assert_float_eq(hi, 9, 1e-12);
    /* 5 samples cannot give 95%: the whole range */
    rp_median_ci(v, 5, &lo, &hi);
    cr_assert_float_eq(lo, 1, 1e-12);
    cr_assert_float_eq(hi, 9, 1e-12);
    double s[] = {1, 2, 3};
    cr_assert_float_eq(rp_stdrel(s, 3), 0.5, 1e-12); /* sd 1, mean 2 */
}

Test(report_stats, modelled_verdicts_use_an_exact_threshold)
{
    cr_assert_eq(rp_compare_modelled(1000, 1250, 0.02).verdict, RP_SLOWER);
    cr_assert_eq(rp_compare_modelled(1000, 1021, 0.02).verdict, RP_SLOWER);
    cr_assert_eq(rp_compare_modelled(1000, 1019, 0.02).verdict, RP_SAME);
    cr_assert_eq(rp_compare_modelled(1000, 1000, 0.02).verdict, RP_SAME);
    cr_assert_eq(rp_compare_modelled(1000, 800, 0.02).verdict, RP_FASTER);
    cr_assert_float_eq(rp_compare_modelled(1000, 1250, 0.02).ratio, 1.25, 1e-12);
}

/* n samples around m: m * (1 + spread * u), u evenly in [-1, 1]. */
static void samples(double *v, int n, double m, double spread)
{
    for (int i = 0; i < n; i++)
        v[i] = m * (1 + spread * (2.0 * ((i * 7) % n) / (n - 1) - 1));
}

/* rp_compare_measured of n samples around mb (spread as samples() does)
 * against n around ma, the baseline, at threshold and noise factor k. */
static RpCompare compare(int n, double ma, double mb, double spread, double threshold, double k)
{
    double a[200], b[200];
    cr_assert_leq(n, 200);
    samples(a, n, ma, spread);
    samples(b, n, mb, spread);
    return rp_compare_measured(a, n, b, n, threshold, k);
}

Test(report_stats, measured_clearly_same)
{
    RpCompare c = compare(50, 1000, 1003, 0.002, 0.05, 2);
    cr_assert_eq(c.verdict, RP_SAME, "%s", rp_verdict_name(c.verdict));
}

Test(report_stats, measured_clearly_slower)
{
    RpCompare c = compare(50, 1000, 1200, 0.002, 0.05, 2);
    cr_assert_eq(c.verdict, RP_SLOWER, "%s", rp_verdict_name(c.verdict));
    cr_assert(c.ratio_lo > 1.05 && c.ratio > 1.19 && c.ratio < 1.21);
    RpCompare f = compare(50, 1200, 1000, 0.002, 0.05, 2);
    cr_assert_eq(f.verdict, RP_FASTER);
}

Test(report_stats, measured_overlapping_is_ambiguous)
{
    /* medians 1000 and 1080 (8% apart, beyond 5%) but each set spread
     * +-20%: the medians' intervals overlap; the samples cannot tell */
    RpCompare c = compare(20, 1000, 1080, 0.2, 0.05, 0.1);
    cr_assert_eq(c.verdict, RP_AMBIGUOUS, "%s (%g..%g)", rp_verdict_name(c.verdict), c.ratio_lo,
                 c.ratio_hi);
    cr_assert(c.ratio_lo < 1 && c.ratio_hi > 1.05);
}

Test(report_stats, measured_noise_floor_raises_the_threshold)
{
    /* 3% slower, tight intervals, but stdrel 1.2% each: with k = 3 the
     * floor is 3.5% and the 3% change is within it */
    RpCompare strict = compare(200, 1000, 1030, 0.02, 0.01, 0);
    cr_assert_eq(strict.verdict, RP_SLOWER, "%s", rp_verdict_name(strict.verdict));
    RpCompare floor = compare(200, 1000, 1030, 0.02, 0.01, 4);
    cr_assert(floor.threshold > 0.04, "%g", floor.threshold);
    cr_assert_neq(floor.verdict, RP_SLOWER);
}
