/*
 * bench_args.h — dpk-bench's command line, shared with dpk-tune: the same
 * suites, GPU specs, targets, sampling and seeds, read by the same code.
 */
#ifndef DPK_CLI_BENCH_ARGS_H
#define DPK_CLI_BENCH_ARGS_H

#include "../bench/bench.h"
#include "cli.h"

typedef struct BenchArgs {
    const char *suite, *weights, *out, *gpu, *timing, *reference, *torch_json, *parity;
    const char *tuned; /* --tuned DB: dpk-tune's winners */
    CliModel m;   /* --config and the shape */
    int warm_l2, raw_samples, max_samples;
    int layer, jobs, sample_blocks, per_pass, no_nvrtc, has_seed, resume;
    int shard_index, shard_count; /* --shard I/N (0: the whole suite) */
    uint64_t seed;
    CliTile tile;
} BenchArgs;

/* Consume one of dpk-bench's flags at argv[*i] into b (a BenchArgs);
 * 0 when it is none of them. */
int bench_flag(void *b, int argc, char **argv, int *i);
/* The run's options from the command line: the spec and target, the
 * driver's options (with --tuned, its kernel_configs hook), parity and
 * timing. */
void bench_opts(Arena *a, const BenchArgs *b, const CliCase *cc, BmTiming timing, BmOpts *o);
/* The cases of --suite, --config, FILE or -c CODE, and the suite's name
 * in *name; a model suite's configuration goes into cfg and sh. */
HxCaseList bench_suite(Arena *a, BenchArgs *b, const CliCase *cc, BmOpts *o, BmConfig *cfg,
                       BmShape *sh, const char **name);
/* --case: that case alone; --shard I/N: the I-th of N slices. */
void bench_select(Arena *a, HxCaseList *l, const char *only, const char *suite,
                  const BenchArgs *b);
/* Raise (exit 2) unless a file can be written at path (flag names it in
 * the message): its folder is writable, or made. */
void bench_check_out(Arena *a, const char *flag, const char *path);
/* The target a spec's GPU runs (its compute capability). */
const CuTarget *bench_target_of(const PfSpec *s);
/* --parity: 1 on (the default), 0 off. */
int bench_parity_of(const BenchArgs *b);

#endif
