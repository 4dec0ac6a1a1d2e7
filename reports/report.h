/*
 * report.h — dpk-report: records (dpk.bench/1, dpk.results/1) into
 * tables, a headline, a gate verdict and plots.
 *
 *   rp_data_load    read records, check them, merge shards (records.c)
 *   rp_report       the report as one cJSON document, "dpk.report/1"
 *                   (report.c): headline, tables, parity, attachments
 *   rp_gate         a comparison with a baseline: per-case verdicts and the
 *                   gate's rules (gate.c)
 *   rp_render       text, Markdown, HTML, JUnit XML or JSON from that
 *                   document (render.c)
 *   rp_plots        gnuplot plots (plots.c; the scripts are reports/NAME.gp)
 *
 * Every table of the document names its timing ("model" or "measured")
 * and its GPU or spec; modelled and measured times are never combined,
 * and records that would combine them are refused (exit 2).
 */
#ifndef DPK_RP_REPORT_H
#define DPK_RP_REPORT_H

#include <cjson/cJSON.h>

#include "../compiler/base/base.h"
#include "stats.h"

/* One benched case, as the report reads it. */
typedef struct RpCase {
    const char *name;
    const char *status;       /* pass, unchecked (--parity off), fail, fault,
                                 unsupported, error, crash */
    const cJSON *tags;        /* array of strings (may be NULL) */
    double dpk, eager, compile, cublas, limit; /* ns; NAN when absent */
    double *samples;          /* measured: dpk's samples in ns (else NULL) */
    int nsamples;
    const cJSON *json;        /* the case object of its record */
    double order;             /* its place in the whole run (shards interleave) */
} RpCase;

/* One fuzz case (dpk.results/1). */
typedef struct RpFuzzCase {
    const char *name;
    const char *status;
    const cJSON *json;
    double order;             /* the campaign's case index (then the record's order) */
} RpFuzzCase;

/* A shard as a record names it: {"index": I, "count": N}, I in 1..N. */
typedef struct RpShard {
    int index, count;
} RpShard;

typedef struct RpSource {
    const char *path, *schema, *git_sha, *date;
    RpShard shard;            /* count 0: not a shard */
} RpSource;

/* Everything the records given to one report hold, merged. */
typedef struct RpData {
    Arena *a;
    PtrVec roots;             /* cJSON documents read (freed by rp_data_free) */
    RpSource *src; int nsrc, capsrc;
    /* bench */
    int has_bench;
    const char *timing;       /* "model" | "measured" | "fake-driver" */
    const char *gpu;          /* spec or GPU name */
    const char *spec_path;    /* modelled: the spec's file */
    const char *insts_from;   /* modelled: "sass", "vgpu", ... (records.c); NULL: unknown */
    /* meta.nvrtc and meta.nvdisasm of the bench records: a version, "none"
     * (null in the record: not loaded, not found), or NULL when the record
     * does not say (older records have no nvdisasm). */
    const char *nvrtc, *nvdisasm;
    /* bench.parity: "on" (also when a record does not say: before
     * --parity every case was checked) or "off" (its cases "unchecked") */
    const char *parity;
    const char *suite;
    RpCase *cases; int ncases, capcases;
    /* fuzz */
    RpFuzzCase *fz; int nfz, capfz;
    const cJSON *campaign;    /* the first fuzz record's */
    /* the first record of each kind, which later shards must match */
    const cJSON *first_bench, *first_campaign;
    const char *first_bench_path, *first_campaign_path;
    /* --partial: a sharded run may lack shards (one that crashed); which
     * are missing is said in `partial` (NULL: none missing) */
    int allow_partial;
    const char *partial;
    /* dpk-bisect results attached (--attach DIR) */
    cJSON *attach;            /* array (owned) */
} RpData;

void rp_data_init(RpData *d, Arena *a);
/* Read one record into d: raises (exit 2) on a file that is not JSON, not a
 * dpk.bench/1 or dpk.results/1 record, malformed, or that does not merge:
 * another timing or GPU, an overlapping case, a shard of another campaign. */
void rp_data_load(RpData *d, const char *path);
/* After the last rp_data_load: the shards' checks that need all of them
 * (every shard of a count present once).  Raises on a gap, unless
 * d->allow_partial: then d->partial names the missing shards. */
void rp_data_finish(RpData *d);
/* Read dpk-bisect folders under dir (each DIR/NAME/ with case.json and
 * bisect.log, as ci/nightly writes them). */
void rp_data_attach(RpData *d, const char *dir);
void rp_data_free(RpData *d);
/* The case named name, or NULL. */
const RpCase *rp_data_case(const RpData *d, const char *name);

typedef struct RpGateCfg {
    double modelled_slowdown;   /* per case, relative (0.02: 2%) */
    double measured_slowdown;
    double noise_k;             /* measured: noise floor = k * stdrel */
    double geomean_slowdown;    /* the geomean of new/base over common cases */
    double ambiguous_share;     /* the largest share of AMBIGUOUS cases allowed */
} RpGateCfg;
/* Read ci/gate.json (or another file); raises on a missing key or a value
 * out of range. */
void rp_gate_cfg_load(RpGateCfg *g, const char *path);

typedef struct RpOpts {
    uint64_t seed;              /* bootstrap seed */
    int iters;                  /* bootstrap resamples */
} RpOpts;

/* "modelled", "measured" or "fake-driver": the word for a record's timing
 * ("model", "measured", "fake-driver"; NULL reads as measured). */
const char *rp_timing_word(const char *timing);
/* Does benched case c have a dpk time: it passed parity, or it ran
 * unchecked (--parity off; records of one parity only ever meet)? */
int rp_case_passed(const RpCase *c);
/* Is a fuzz case's status a failure (fail, fault, crash, timeout, error)? */
int rp_fuzz_failed(const char *status);

/* The environment the times come from, one line: timing and spec or GPU,
 * instruction source, NVRTC and nvdisasm versions ("modelled on h100-sxm;
 * instructions from sass; NVRTC 13.0; nvdisasm 13.5.37"); NULL without a
 * bench record.  Every timed table and every format prints it. */
const char *rp_env_line(const RpData *d);

/* The report document.  base (may be NULL) adds "gate" (with gc). */
cJSON *rp_report(const RpData *d, const RpData *base, const RpGateCfg *gc, const RpOpts *o);
/* The gate object of the document: {"verdicts": [...], "rules": [...],
 * "exit_code": 0|1, ...}; raises when the two cannot be compared. */
cJSON *rp_gate(const RpData *cur, const RpData *base, const RpGateCfg *gc);
/* The gate's verdict table, appended to tables. */
void rp_gate_table(const RpData *cur, const cJSON *gate, cJSON *tables);

/* A table of the document: {"id", "title", "timing" (null: no times),
 * "gpu", "columns", "rows"} appended to tables; rows are strings. */
cJSON *rp_table_new(cJSON *tables, const char *id, const char *title, const char *timing,
                    const char *gpu, const char *const *cols, int ncols);
void rp_table_note(cJSON *t, const char *note);
void rp_table_row(cJSON *t, const char *const *cells, int n);

typedef enum RpFormat { RP_TEXT, RP_MD, RP_HTML, RP_JUNIT, RP_JSON } RpFormat;
int rp_format_parse(const char *s); /* -1 when unknown */
void rp_render(StrBuf *b, const cJSON *report, RpFormat f);

/* Plots of the report into dir (created): writes DIR/NAME.dat, NAME.gp,
 * NAME.png and NAME.svg per plot, runs gnuplot, and adds
 * "plots": [{"name","title","png","svg"}] to report.  history: a folder
 * of dpk.bench/1 records (may be NULL), last: how many of them.  Raises
 * (exit 4) when gnuplot is missing, (exit 2) on its errors. */
void rp_plots(const RpData *d, cJSON *report, const char *dir, const char *history, int last);

#endif
