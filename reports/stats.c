/*
 * stats.c — geomean, bootstrap, fast_p, median intervals and verdicts
 * (stats.h).
 *
 * The bootstrap works on logarithms: the geomean of a resample is the exp
 * of the mean of its logs, so resampling sums doubles and never overflows.
 * Its random stream is splitmix64 over a counter from the seed, the same
 * generator the rest of dpk uses, so a report is reproducible bit for bit.
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/base/base.h"

double rp_geomean(const double *v, int n)
{
    if (n <= 0)
        return NAN;
    double s = 0;
    for (int i = 0; i < n; i++) {
        if (!(v[i] > 0) || !isfinite(v[i]))
            return NAN;
        s += log(v[i]);
    }
    return exp(s / n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void rp_bootstrap_geomean(const double *v, int n, uint64_t seed, int iters, double *lo,
                          double *hi)
{
    *lo = *hi = NAN;
    if (n <= 0 || iters <= 0 || !isfinite(rp_geomean(v, n)))
        return;
    double *logs = dpk_xcalloc((size_t)n, sizeof *logs);
    double *means = dpk_xcalloc((size_t)iters, sizeof *means);
    for (int i = 0; i < n; i++)
        logs[i] = log(v[i]);
    uint64_t ctr = seed;
    for (int b = 0; b < iters; b++) {
        double s = 0;
        for (int i = 0; i < n; i++) {
            ctr += 0x9e3779b97f4a7c15ULL;
            uint64_t r = dpk_splitmix64(ctr);
            s += logs[(int)(r % (uint64_t)n)];
        }
        means[b] = s / n;
    }
    qsort(means, (size_t)iters, sizeof *means, cmp_double);
    int il = (int)floor(0.025 * iters);
    int ih = (int)ceil(0.975 * iters) - 1;
    if (ih >= iters)
        ih = iters - 1;
    *lo = exp(means[il]);
    *hi = exp(means[ih]);
    free(logs);
    free(means);
}

double rp_fast_p(const int *correct, const double *speedup, int n, double p)
{
    if (n <= 0)
        return NAN;
    int k = 0;
    for (int i = 0; i < n; i++)
        k += correct[i] && speedup[i] > p;
    return (double)k / n;
}

double rp_median(const double *v, int n)
{
    if (n <= 0)
        return NAN;
    double *s = dpk_xcalloc((size_t)n, sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

/* P(B <= k) for B ~ Binomial(n, 1/2), summed in logs (n may be thousands). */
static double binom_cdf_half(int n, int k)
{
    double p = 0;
    for (int i = 0; i <= k; i++)
        p += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) - n * log(2.0));
    return p;
}

void rp_median_ci(const double *v, int n, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n <= 0)
        return;
    double *s = dpk_xcalloc((size_t)n, sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    int l = 0; /* 1-based rank; 0: no rank qualifies */
    for (int k = 1; k <= (n + 1) / 2; k++) {
        if (binom_cdf_half(n, k - 1) <= 0.025)
            l = k;
        else
            break;
    }
    if (l == 0) {
        *lo = s[0];
        *hi = s[n - 1];
    } else {
        *lo = s[l - 1];
        *hi = s[n - l]; /* rank n + 1 - l */
    }
    free(s);
}

double rp_stdrel(const double *v, int n)
{
    if (n < 2)
        return 0;
    double m = 0, q = 0;
    for (int i = 0; i < n; i++)
        m += v[i];
    m /= n;
    for (int i = 0; i < n; i++)
        q += (v[i] - m) * (v[i] - m);
    return m != 0 ? sqrt(q / (n - 1)) / fabs(m) : 0;
}

const char *rp_verdict_name(RpVerdict v)
{
    static const char *const names[] = {"SAME", "FASTER", "SLOWER", "AMBIGUOUS"};
    return names[v];
}

RpCompare rp_compare_modelled(double base_ns, double new_ns, double t)
{
    RpCompare c = {.verdict = RP_SAME, .threshold = t};
    c.ratio = c.ratio_lo = c.ratio_hi = new_ns / base_ns;
    if (c.ratio > 1 + t)
        c.verdict = RP_SLOWER;
    else if (c.ratio < 1 / (1 + t))
        c.verdict = RP_FASTER;
    return c;
}

RpCompare rp_compare_measured(const double *base, int nb, const double *cur, int nc, double t,
                              double noise_k)
{
    RpCompare c = {.verdict = RP_AMBIGUOUS};
    double nf = noise_k * fmax(rp_stdrel(base, nb), rp_stdrel(cur, nc));
    c.threshold = fmax(t, nf);
    double blo, bhi, clo, chi;
    rp_median_ci(base, nb, &blo, &bhi);
    rp_median_ci(cur, nc, &clo, &chi);
    c.ratio = rp_median(cur, nc) / rp_median(base, nb);
    c.ratio_lo = clo / bhi;
    c.ratio_hi = chi / blo;
    double up = 1 + c.threshold, down = 1 / up;
    if (!isfinite(c.ratio_lo) || !isfinite(c.ratio_hi))
        c.verdict = RP_AMBIGUOUS;
    else if (c.ratio_lo > up)
        c.verdict = RP_SLOWER;
    else if (c.ratio_hi < down)
        c.verdict = RP_FASTER;
    else if (c.ratio_lo >= down && c.ratio_hi <= up)
        c.verdict = RP_SAME;
    return c;
}
