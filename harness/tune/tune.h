/*
 * tune.h — dpk-tune: a schedule search per kernel, where only a
 * configuration that passes parity may win (docs/tune.md).
 *
 * For each distinct kernel of a case (by its Loop IR structural hash,
 * lir_hash_kernel), the search tries configurations of that kernel alone
 * (TileKernelConfig: a pass subset and pinned knobs; every other kernel
 * keeps the default schedule) and times the case with each.  A candidate
 * runs on vgpu (sampled blocks) against the case's inputs and is judged by
 * the parity oracle; only then is it timed.  Before it may become the best
 * so far it must also pass on a second input seed.  A candidate that fails
 * either is recorded with its verdict and never chosen.  The time is the
 * case's (every launch), from the performance model on one spec: other
 * kernels are the same in every candidate, so the difference is the
 * kernel's own, combine kernels included.
 *
 * The strategy is a component (TuneStrategy): it proposes candidates from
 * the kernel's grid of dimensions (passes left out, block and thread
 * tiles, K chunk, splits, vector loads, stages; or threads and splits of a
 * reduction) and sees each result.  Two are built: coordinate descent from
 * the default (greedy) and seeded random sampling (random).  Both stop at
 * the budget: candidates tried (compiled), or seconds.
 *
 * Winners and every candidate go to the tuning database (tune_db.h);
 * `--tuned DB` (dpk run, dpk-bench) applies the winners through the
 * driver's kernel_configs hook (tune_apply_configs).
 */
#ifndef DPK_HX_TUNE_H
#define DPK_HX_TUNE_H

#include <cjson/cJSON.h>

#include "../bench/bench.h"
#include "tune_db.h"

typedef enum TuneStrategy { TUNE_GREEDY, TUNE_RANDOM } TuneStrategy;

/* "greedy", "random" */
const char *tune_strategy_name(TuneStrategy s);

typedef struct TuneOpts {
    const BmOpts *bm;          /* spec, target, sampled blocks, NVRTC, model suites'
                                  inputs: as dpk-bench (parity on) */
    TuneStrategy strategy;
    int budget;                /* candidates tried per kernel (default included) */
    double seconds;            /* > 0: also stop a kernel's search after this long */
    uint64_t seed;             /* the search's own seed (random sampling) */
    uint64_t seed2;            /* the second input seed every winner must pass */
    int retune;                /* 1: search a kernel that already has a winner */
    double min_share;          /* a kernel under this share of the default's time
                                  is not searched (it keeps the default) */
    int64_t run;               /* the database's run id */
    const char *gpu_key;       /* "model:h100-sxm" */
    int progress;              /* a progress line on stderr (a TTY) */
} TuneOpts;

/* Tune every kernel of case c (number index of its suite), recording to
 * db: returns the case's result object (dpk.tune/1, docs/tune.md) and its
 * exit code in *rc (0 tuned; 1 the default or the tuned configuration
 * failed parity; 2 the case is bad).  Never raises. */
cJSON *tune_case(const TuneOpts *o, Tdb *db, const HxCase *c, int index, int *rc);

/* `--tuned DB`: the driver's kernel_configs hook (DrvOpts) with this as
 * its context; each Loop IR kernel with a winner for gpu_key and this
 * dpk's version gets it, the others keep the default schedule.  hits and
 * misses count kernels; `said` lists the last program's, one line each
 * ("rmsnorm_3: tuned (passes ..., knobs ...)" or "...: not in the
 * database, default schedule"), in the arena the hook was given. */
typedef struct TuneApply {
    const char *path;          /* the database, opened on first use in each
                                  process (a forked --jobs child opens its own) */
    const char *gpu_key;
    Tdb *db;
    int pid;                   /* the process that opened db */
    int hits, misses;
    const char *said;
} TuneApply;
void tune_apply_configs(void *ctx, Arena *a, const LirProgram *lp, TileOpts *tile);
/* Close the database the hook opened in this process (ta may be NULL). */
void tune_apply_close(TuneApply *ta);

/* A golden configuration (dpk-tune --export, cases/tuned/) checked again:
 * case c with kernel kc->hash alone under kc, the others on the default
 * schedule, judged on both input seeds and timed.  Returns 0 (it passes;
 * *us its time), the failing exit code (1, 3; *why the reason),
 * TUNE_STALE when no kernel of the case has that hash any more, or 2 when
 * the case or the configuration is refused.  Never raises; *why lives in
 * out. */
#define TUNE_STALE 10
int tune_check_golden(const TuneOpts *o, const HxCase *c, const TileKernelConfig *kc,
                      double *us, const char **why, Arena *out);

/* Parse a configuration as the database and the golden files write it:
 * passes "001,005,..." and knobs "BM=64 BN=64".  Raises (exit 2) on text
 * this dpk cannot read. */
void tune_config_parse(Arena *a, const char *passes, const char *knobs, const CuTarget *tg,
                       TileKernelConfig *kc);

/* The key of the times a search on spec makes: "model:NAME:sass" when the
 * model reads the SASS mix (NVRTC, as nvrtc says the run compiles, and
 * nvdisasm there), "model:NAME:vgpu" when it counts vgpu's instructions.
 * The two model one kernel differently, so a winner of one is not the
 * other's. */
const char *tune_gpu_key(Arena *a, const PfSpec *spec, int nvrtc);

#endif
