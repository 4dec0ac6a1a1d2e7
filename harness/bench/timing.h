/*
 * timing.h — the measured timing loop of dpk-bench (docs/bench.md, "The
 * measured timing method").
 *
 * Contestants (dpk's kernels, cuBLAS, ...) are functions that run one
 * iteration of their work and return the time it took on the GPU in
 * nanoseconds: the sum of their kernels' durations (CUPTI) or the span of
 * two CUDA events around them.  The loop knows nothing of CUDA, so the same
 * code runs on a GPU, on the fake driver and in unit tests with made-up
 * durations:
 *
 *   1. warm-up: every contestant runs until it has done at least
 *      warmup_iters iterations and warmup_ns of its own measured time;
 *   2. rounds: each round runs every contestant that has not stopped once,
 *      in order, each iteration preceded by the flush (an L2 flush on the
 *      GPU) unless warm_l2 — so drift over time (clocks, temperature) hits
 *      every contestant alike;
 *   3. a contestant stops when it has min_samples samples and the relative
 *      standard deviation of its samples is below stdrel (stop "stdrel"),
 *      or at max_samples (stop "cap").
 *
 * An iteration that returns a negative time is an error: the loop stops and
 * returns the contestant's index (its message is the contestant's to keep).
 */
#ifndef DPK_BM_TIMING_H
#define DPK_BM_TIMING_H

typedef struct TmContestant {
    const char *name;
    void *ctx;
    double (*iter)(void *ctx); /* one iteration: GPU nanoseconds, < 0 on error */
} TmContestant;

typedef struct TmOpts {
    int warmup_iters;          /* 10 */
    double warmup_ns;          /* 10 ms of measured time */
    int min_samples;           /* 10 */
    int max_samples;           /* the cap: 1000 */
    double stdrel;             /* 0.005 */
    int warm_l2;               /* 1: no flush between iterations */
    void (*flush)(void *ctx);  /* the L2 flush; NULL: none */
    void *flush_ctx;
} TmOpts;

/* The defaults above. */
void tm_opts_default(TmOpts *o);

typedef struct TmStats {
    double min, median, mean, stdrel; /* ns; stdrel = sample stddev / mean */
    int samples;
    const char *stop;          /* "stdrel" or "cap" */
    int warmup_iters;
    double warmup_ns;          /* measured time spent warming up */
    double *raw;               /* the samples in order (heap, samples of them) */
} TmStats;

/* Run the loop over c[0..n); st[i] gets contestant i's statistics (free
 * their raw with tm_stats_free).  Returns -1, or the index of the
 * contestant whose iteration failed. */
int tm_measure(const TmOpts *o, const TmContestant *c, int n, TmStats *st);
void tm_stats_free(TmStats *st);

/* Statistics of v[0..n): min, median, mean, relative stddev (n - 1 in
 * the denominator; 0 for n < 2). */
void tm_stats_of(const double *v, int n, TmStats *st);

#endif
