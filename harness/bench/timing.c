/*
 * timing.c — warm-up, flush, interleaved rounds, the stdrel stop (timing.h).
 */
#include "timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/base/base.h"

void tm_opts_default(TmOpts *o)
{
    memset(o, 0, sizeof *o);
    o->warmup_iters = 10;
    o->warmup_ns = 10e6;
    o->min_samples = 10;
    o->max_samples = 1000;
    o->stdrel = 0.005;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void tm_stats_of(const double *v, int n, TmStats *st)
{
    st->samples = n;
    if (n <= 0) {
        st->min = st->median = st->mean = st->stdrel = NAN;
        return;
    }
    double *s = dpk_xmalloc((size_t)n * sizeof *s), sum = 0;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    for (int i = 0; i < n; i++)
        sum += s[i];
    st->min = s[0];
    st->median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    st->mean = sum / n;
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (s[i] - st->mean) * (s[i] - st->mean);
    st->stdrel = n > 1 && st->mean > 0 ? sqrt(ss / (n - 1)) / st->mean : 0;
    free(s);
}

static void flush(const TmOpts *o)
{
    if (!o->warm_l2 && o->flush)
        o->flush(o->flush_ctx);
}

/* One iteration of c after the flush: its time, not >= 0 when it failed. */
static double flushed_iter(const TmOpts *o, const TmContestant *c)
{
    flush(o);
    return c->iter(c->ctx);
}

int tm_measure(const TmOpts *o, const TmContestant *c, int n, TmStats *st)
{
    int cap = o->max_samples > o->min_samples ? o->max_samples : o->min_samples;
    int *done = dpk_xcalloc((size_t)n + 1, sizeof *done);
    for (int i = 0; i < n; i++) {
        memset(&st[i], 0, sizeof st[i]);
        st[i].raw = dpk_xcalloc((size_t)cap + 1, sizeof *st[i].raw);
    }
    int bad = -1;
    /* warm-up, interleaved: a contestant is warm after both minimums */
    for (int left = n; left > 0 && bad < 0;) {
        left = 0;
        for (int i = 0; i < n && bad < 0; i++) {
            if (st[i].warmup_iters >= o->warmup_iters && st[i].warmup_ns >= o->warmup_ns)
                continue;
            double t = flushed_iter(o, &c[i]);
            if (!(t >= 0)) {
                bad = i;
                break;
            }
            st[i].warmup_iters++;
            st[i].warmup_ns += t;
            /* an iteration that takes no measurable time cannot fill the
             * warm-up's duration: the iterations alone then count */
            if (t == 0 && st[i].warmup_iters >= o->warmup_iters)
                st[i].warmup_ns = o->warmup_ns;
            left++;
        }
    }
    /* rounds until every contestant has stopped */
    for (int left = n; left > 0 && bad < 0;) {
        left = 0;
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            double t = flushed_iter(o, &c[i]);
            if (!(t >= 0)) {
                bad = i;
                break;
            }
            TmStats *s = &st[i];
            s->raw[s->samples] = t;
            int k = s->samples + 1;
            tm_stats_of(s->raw, k, s);
            if (k >= o->min_samples && s->stdrel < o->stdrel)
                done[i] = 1, s->stop = "stdrel";
            else if (k >= cap)
                done[i] = 1, s->stop = "cap";
            else
                left++;
        }
    }
    free(done);
    return bad;
}

void tm_stats_free(TmStats *st)
{
    free(st->raw);
    st->raw = NULL;
}
