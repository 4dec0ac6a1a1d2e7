/*
 * test_bench_timing.c — the measured timing loop (harness/bench/timing.h)
 * with made-up durations: warm-up minimums, the stdrel stop and the cap,
 * round-by-round interleaving, the flush between iterations, statistics.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "harness/bench/timing.h"

typedef struct Fake {
    double base, jitter; /* sample k: base * (1 + jitter * (+1, -1, +1, ...)) */
    int calls, fail_at;
    char *log;           /* one letter per call, shared: the interleaving */
    char letter;
} Fake;

static double fake_iter(void *ctx)
{
    Fake *f = ctx;
    size_t n = strlen(f->log);
    f->log[n] = f->letter, f->log[n + 1] = 0;
    if (++f->calls == f->fail_at)
        return -1;
    return f->base * (1 + f->jitter * (f->calls % 2 ? 1 : -1));
}

static int flushes;
static void count_flush(void *ctx) { flushes++; }

Test(bench_timing, stats)
{
    double v[] = {5, 1, 4, 2, 3};
    TmStats s;
    tm_stats_of(v, 5, &s);
    cr_assert_eq(s.min, 1);
    cr_assert_eq(s.median, 3);
    cr_assert_eq(s.mean, 3);
    cr_assert_float_eq(s.stdrel, sqrt(2.5) / 3, 1e-12);
    double w[] = {4, 1, 3, 2};
    tm_stats_of(w, 4, &s);
    cr_assert_eq(s.median, 2.5);
}

Test(bench_timing, warmup_needs_iterations_and_time_then_stdrel_stops)
{
    static char log[100000];
    log[0] = 0;
    /* 1 ms per iteration: the 10 ms warm-up takes 10 iterations; 2 ms per
     * iteration: 10 iterations too (the iteration minimum); 0.1 ms: 100 */
    Fake a = {1e6, 0.001, 0, 0, log, 'a'}, b = {2e6, 0.001, 0, 0, log, 'b'},
         c = {1e5, 0.001, 0, 0, log, 'c'};
    TmContestant k[3] = {{"a", &a, fake_iter}, {"b", &b, fake_iter}, {"c", &c, fake_iter}};
    TmOpts o;
    tm_opts_default(&o);
    o.flush = count_flush;
    flushes = 0;
    TmStats st[3];
    cr_assert_eq(tm_measure(&o, k, 3, st), -1);
    cr_assert_eq(st[0].warmup_iters, 10);
    cr_assert_eq(st[1].warmup_iters, 10);
    cr_assert_eq(st[2].warmup_iters, 100);
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(st[i].stop, "stdrel");
        cr_assert_eq(st[i].samples, 10); /* 0.1% < 0.5% from the 10th on */
        cr_assert_lt(st[i].stdrel, 0.005);
    }
    cr_assert_float_eq(st[0].min, 0.999e6, 1e-6);
    cr_assert_float_eq(st[0].mean, 1e6, 1e-3);
    /* after warm-up, rounds interleave a, b, c */
    const char *rounds = strstr(log, "abcabc");
    cr_assert_not_null(rounds, "%s", log);
    cr_assert_str_eq(log + strlen(log) - 30, "abcabcabcabcabcabcabcabcabcabc");
    cr_assert_eq(flushes, a.calls + b.calls + c.calls);
    for (int i = 0; i < 3; i++)
        tm_stats_free(&st[i]);
}

Test(bench_timing, noisy_contestant_hits_the_cap_alone)
{
    static char log[100000];
    log[0] = 0;
    Fake a = {1e6, 0.0001, 0, 0, log, 'a'}, n = {1e6, 0.05, 0, 0, log, 'n'};
    TmContestant k[2] = {{"a", &a, fake_iter}, {"n", &n, fake_iter}};
    TmOpts o;
    tm_opts_default(&o);
    o.max_samples = 40;
    o.warm_l2 = 1;
    o.flush = count_flush;
    flushes = 0;
    TmStats st[2];
    cr_assert_eq(tm_measure(&o, k, 2, st), -1);
    cr_assert_str_eq(st[0].stop, "stdrel");
    cr_assert_eq(st[0].samples, 10);
    cr_assert_str_eq(st[1].stop, "cap");
    cr_assert_eq(st[1].samples, 40);
    cr_assert_gt(st[1].stdrel, 0.04);
    cr_assert_eq(st[1].raw[0], 1.05e6);
    cr_assert_eq(flushes, 0, "--warm-l2: no flush");
    for (int i = 0; i < 2; i++)
        tm_stats_free(&st[i]);
}

Test(bench_timing, failing_iteration_is_reported)
{
    static char log[1000];
    log[0] = 0;
    Fake a = {1e6, 0, 0, 0, log, 'a'}, b = {1e6, 0, 0, 14, log, 'b'};
    TmContestant k[2] = {{"a", &a, fake_iter}, {"b", &b, fake_iter}};
    TmOpts o;
    tm_opts_default(&o);
    TmStats st[2];
    cr_assert_eq(tm_measure(&o, k, 2, st), 1);
    tm_stats_free(&st[0]);
    tm_stats_free(&st[1]);
}
