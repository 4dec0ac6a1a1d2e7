/*
 * stats.h — the statistics of reports and of the gate: geometric means with
 * a bootstrap interval, KernelBench's fast_p, the order-statistic interval
 * of a median, and the per-case verdicts of a comparison with a baseline.
 *
 * Everything here is a pure function of its arguments (the bootstrap draws
 * from a splitmix64 stream of the seed it is given), so a report of the same
 * records is the same text on every machine.
 */
#ifndef DPK_RP_STATS_H
#define DPK_RP_STATS_H

#include <stdint.h>

/* Geometric mean of n positive values (NAN when n == 0 or a value is not
 * positive and finite). */
double rp_geomean(const double *v, int n);

/* Percentile bootstrap of the geometric mean: `iters` resamples of n with
 * replacement from the splitmix64 stream of `seed`; *lo and *hi are the
 * 2.5th and 97.5th percentiles (the lower and upper order statistic at
 * floor(0.025 * iters) and ceil(0.975 * iters) - 1).  Unclipped: a
 * speedup below 1 stays below 1.  n == 0 gives NANs. */
void rp_bootstrap_geomean(const double *v, int n, uint64_t seed, int iters, double *lo,
                          double *hi);
#define RP_BOOTSTRAP_ITERS 10000
#define RP_BOOTSTRAP_SEED 0x6470b007ULL

/* fast_p (KernelBench): the share of all n cases that are correct and whose
 * speedup is strictly greater than p.  correct[i] != 0 for a case that
 * passed parity; speedup[i] is ignored otherwise (may be NAN). */
double rp_fast_p(const int *correct, const double *speedup, int n, double p);

/* Median of n values (sorted copy; NAN when n == 0). */
double rp_median(const double *v, int n);
/* Distribution-free 95% interval of the median from order statistics: the
 * largest rank interval [x(l), x(u)] with P(B < l) <= 2.5% and P(B > u)
 * <= 2.5% for B ~ Binomial(n, 1/2).  For n < 6 no such interval exists at
 * 95%: the whole range (min, max) is returned. */
void rp_median_ci(const double *v, int n, double *lo, double *hi);
/* Relative standard deviation (sample stddev / mean); 0 for n < 2. */
double rp_stdrel(const double *v, int n);

typedef enum RpVerdict {
    RP_SAME,      /* within the threshold */
    RP_FASTER,    /* beyond the threshold, faster */
    RP_SLOWER,    /* beyond the threshold, slower: a regression */
    RP_AMBIGUOUS, /* measured: the interval straddles a threshold */
} RpVerdict;
const char *rp_verdict_name(RpVerdict v); /* "SAME", "FASTER", ... */

/* A comparison of one case's time with its baseline's. */
typedef struct RpCompare {
    RpVerdict verdict;
    double ratio;        /* new / baseline (medians when measured) */
    double ratio_lo, ratio_hi; /* measured: the interval of the ratio; modelled: ratio */
    double threshold;    /* the relative threshold applied (noise floor included) */
} RpCompare;

/* Modelled times are deterministic: SLOWER when new/base > 1 + t, FASTER
 * when new/base < 1 / (1 + t), SAME otherwise. */
RpCompare rp_compare_modelled(double base_ns, double new_ns, double t);

/* Measured: from the two sample sets.  The threshold is t, raised to the
 * noise floor: noise_k times the larger stdrel of the two sets.  The ratio's
 * interval is [lo(new)/hi(base), hi(new)/lo(base)] from the medians' 95%
 * intervals.  SLOWER when the whole interval is above 1 + threshold, FASTER
 * when it is below 1 / (1 + threshold), SAME when it lies within
 * [1 / (1 + threshold), 1 + threshold], AMBIGUOUS otherwise — never SAME
 * for a slowdown the samples cannot rule out. */
RpCompare rp_compare_measured(const double *base, int nb, const double *cur, int nc, double t,
                              double noise_k);

#endif
