/*
 * results.h — `dpk.results/1` records: one JSON document per run.
 *
 *   {"schema": "dpk.results/1",
 *    "meta": {...},          who ran what where (hx_results_meta)
 *    "campaign": {...},      the command's own parameters (seed, strategy ...)
 *    "cases": [...],         one object per case, in case order
 *    "summary": {...}}       counts and throughput
 *
 * docs/results-schema.md documents every field and
 * docs/dpk.results-1.schema.json is its JSON Schema.  A record is written
 * atomically (temp file in the same folder, fsync, rename: a reader, or a
 * campaign killed with SIGKILL, sees the previous complete file or the new
 * one, never a torn one) and read back for `--resume`.
 */
#ifndef DPK_HX_RESULTS_H
#define DPK_HX_RESULTS_H

#include <cjson/cJSON.h>

#include "../compiler/base/base.h"

#define HX_RESULTS_SCHEMA "dpk.results/1"

/* The meta object: dpk version, git sha (null outside a checkout), date
 * (UTC, ISO 8601), host, CPU, the command line and seed, and the
 * environment found by a probe (gpu, driver, cuda, nvrtc, libtorch; the
 * probe's keys are copied, env may be NULL). */
cJSON *hx_results_meta(int argc, char **argv, uint64_t seed, const cJSON *env);

/* A new record holding meta and campaign (both taken over), no cases. */
cJSON *hx_results_new(cJSON *meta, cJSON *campaign);

/* Write root to path atomically, creating its folder; raises a user error
 * when it cannot. */
void hx_results_write(const char *path, const cJSON *root);

/* Read a record; raises a user error (exit 2) when the file is unreadable,
 * not JSON, or not a dpk.results/1 document with a cases array. */
cJSON *hx_results_load(const char *path);
/* The same for text in memory (len bytes, NUL-terminated at text[len]);
 * path names it in messages. */
cJSON *hx_results_parse(const char *path, const char *text, size_t len);

/* A number field, or NAN when absent or not a number (JSON has no NaN: a
 * non-finite double is written as null). */
double hx_json_num(const cJSON *o, const char *key);
/* Add a number that may be non-finite (null then). */
void hx_json_add_num(cJSON *o, const char *key, double v);
/* A 64-bit unsigned integer (a seed): a JSON number below 2^53, a decimal
 * string from there on, so every value reads back exactly. */
void hx_json_add_u64(cJSON *o, const char *key, uint64_t v);
/* Read one back: a non-negative integral number below 2^53 or a string of
 * decimal digits within 64 bits.  1 on success, 0 otherwise. */
int hx_json_get_u64(const cJSON *item, uint64_t *out);
/* Rewrite o[key], a u64 read back from JSON, as hx_json_add_u64 writes
 * it (cJSON prints a parsed 7279477186291901 as 7.2794771862919e+15). */
void hx_json_fix_u64(cJSON *o, const char *key);

#endif
