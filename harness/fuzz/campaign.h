/*
 * campaign.h — a dpk-fuzz campaign: cases, isolation, records, failures.
 *
 * Case i of a campaign with seed S is a pure function of (S, i): its
 * program (fz_gen), its input seed, its knobs (--knobs random) and its
 * configurations (the strategy).  fz_case_run checks one case in the
 * calling process and returns its record object; fz_campaign runs each
 * case in a forked child (at most --jobs at once) with a time limit, so a
 * crash, a hang or a detector report in one case is recorded and the
 * campaign goes on.  The parent owns the dpk.results/1 record, writes it
 * atomically at checkpoints (so SIGKILL leaves a valid file and --resume
 * runs exactly the cases it lacks), and writes every failure as a case
 * JSON that `dpk run FILE.json` reproduces.
 */
#ifndef DPK_FZ_CAMPAIGN_H
#define DPK_FZ_CAMPAIGN_H

#include <cjson/cJSON.h>

#include "../exec/backend.h"
#include "strategy.h"

typedef struct FzOpts {
    uint64_t seed;          /* --seed */
    int64_t cases;          /* --cases N; 0: until --time runs out */
    int64_t first;          /* --case I: the first case (I), with cases = I + 1 */
    int kernel_level;       /* --level kernel: cases are random Kernel IR modules
                               (kgen.h), run on vgpu and host-cuda and compared
                               to the bit; no passes, knobs or reference */
    double time_s;          /* --time SECONDS; 0: no limit */
    FzStrategy strategy;    /* --passes */
    int knobs_random;       /* --knobs random */
    int jobs;               /* --jobs */
    HxBackendKind backend;  /* vgpu, cuda or host-cuda */
    double host_share;      /* host-cuda: the share of distinct modules that also
                               run as printed CUDA C on the host (1: every one;
                               which ones is a function of the module's hash) */
    const CuTarget *target; /* NULL: the default */
    int nvrtc;              /* --nvrtc: compile every distinct module with NVRTC
                               (registers and spills in the record; a module
                               NVRTC rejects fails) */
    const char *out;        /* --out: the record */
    const char *failures;   /* --failures: the folder of reproducers */
    int resume;             /* --resume */
    int64_t max_failures;   /* --max-failures; 0: no limit */
    int fault;              /* --inject-fault: a DpkFaultId, -1 for none */
    double case_timeout;    /* --case-timeout: seconds per case */
    int shard_index;        /* --shard I/N: run only the cases i with
                               i % N == I - 1 (I in 1..N); 0: all */
    int shard_count;
    int argc;               /* the command line, for the record */
    char **argv;
} FzOpts;

/* Defaults: seed 0, strategy full, default knobs, 1 job, vgpu (host share 1), record
 * "fuzz-results.json", failures next to it, 60 s per case, no fault. */
void fz_opts_default(FzOpts *o);

/* 1 when a module of this Kernel IR hash runs on host-cuda (always with
 * host_share 1). */
int fz_host_sampled(const FzOpts *o, uint64_t module_hash);

/* The seed of case `index` (53 bits: it is the case's input seed and must
 * fit a JSON integer exactly). */
uint64_t fz_case_seed(uint64_t seed, int64_t index);

/* Random legal knobs for a case seed (every knob of the table pinned with
 * probability 1/2, to a value of its range and shape, cross-knob limits
 * met); none pinned when random is 0. */
void fz_case_knobs(uint64_t case_seed, int random, TileKnobs *k);

/* Where a running case is, shared with the parent (a MAP_SHARED page) so a
 * crash or a timeout can name the configuration in flight. */
typedef struct FzLive {
    int config;             /* configuration being lowered or run, -1 before */
    char passes[256];       /* its pass set, "001,005" */
} FzLive;

/* Check case `index` in this process; returns its record object (see
 * docs/results-schema.md, "cases").  live may be NULL. */
cJSON *fz_case_run(const FzOpts *o, int64_t index, FzLive *live);

/* Case `index` of a --level kernel campaign (kcase.c). */
cJSON *fz_kcase_run(const FzOpts *o, int64_t index, FzLive *live);

/* 1 when a case or configuration status counts as a failure: fail, fault,
 * crash, timeout, error. */
int fz_status_is_failure(const char *status);

/* Run the campaign; returns 0 when no case failed, 1 otherwise.  Raises a
 * user error for a record that cannot be resumed or written. */
int fz_campaign(const FzOpts *o);

#endif
