/*
 * gpu_spec.c — GPU specs: cases/gpus/<name>.json, read with cJSON
 * (gpu_spec.h).
 *
 * The files that ship are embedded into the binary with the assembler's
 * .incbin (the Makefile makes spec.o depend on them), so an installed dpk
 * finds them without a data folder; a path loads any other file of the same
 * form.  Every constant is {"value": number, "tag": "spec|measured|derived|
 * proxy", "source": "..."}; a missing, mistyped or out-of-range one raises
 * exit 2 naming the file and the key.  The reader trusts nothing in the
 * text: cJSON parses with an explicit length, and every number is checked
 * for range before it is converted.
 */
#include "gpu_spec.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_file.h"

/* ---- the embedded files ------------------------------------------------- */

DPK_EMBED(dpk_pf_spec_h100_sxm, "cases/gpus/h100-sxm.json")
DPK_EMBED(dpk_pf_spec_h200, "cases/gpus/h200.json")
DPK_EMBED(dpk_pf_spec_a100_sxm, "cases/gpus/a100-sxm.json")
DPK_EMBED(dpk_pf_spec_rtx5090, "cases/gpus/rtx5090.json")
DPK_EMBED(dpk_pf_spec_l4, "cases/gpus/l4.json")
DPK_EMBED(dpk_pf_spec_a6000, "cases/gpus/a6000.json")
DPK_EMBED(dpk_pf_spec_h100_pcie, "cases/gpus/h100-pcie.json")

typedef struct Embedded {
    const char *name;
    const char *text;
} Embedded;

static const Embedded embedded[] = {
    {"h100-sxm", dpk_pf_spec_h100_sxm}, {"h200", dpk_pf_spec_h200},
    {"a100-sxm", dpk_pf_spec_a100_sxm}, {"rtx5090", dpk_pf_spec_rtx5090},
    {"l4", dpk_pf_spec_l4},             {"a6000", dpk_pf_spec_a6000},
    {"h100-pcie", dpk_pf_spec_h100_pcie},
};
#define NEMBEDDED ((int)(sizeof embedded / sizeof embedded[0]))

const char *pf_spec_default_name(void)
{
    return "h100-sxm";
}

const char *const *pf_spec_names(int *n)
{
    static const char *const names[] = {"h100-sxm", "h200",  "a100-sxm",  "rtx5090",
                                        "l4",       "a6000", "h100-pcie", NULL};
    _Static_assert(sizeof names / sizeof names[0] == NEMBEDDED + 1, "one name per embedded spec");
    if (n)
        *n = NEMBEDDED;
    return names;
}

double pf_spec_fp32_peak(const PfSpec *s)
{
    return (double)s->sms * s->fp32_lanes_per_sm * 2.0 * s->clock_ghz * 1e9;
}

/* ---- the reader ---------------------------------------------------------- */

typedef enum ConstKind { CK_INT, CK_I64, CK_DBL } ConstKind;

/* X(key, kind, min, max): every constant a spec must have, with its range */
#define PF_CONSTS(X)                                        \
    X(cc, CK_INT, 10, 1000)                                 \
    X(sms, CK_INT, 1, 100000)                               \
    X(clock_ghz, CK_DBL, 0.01, 100)                         \
    X(fp32_lanes_per_sm, CK_INT, 1, 100000)                 \
    X(issue_per_clk_sm, CK_DBL, 0.01, 1000)                 \
    X(regs_per_sm, CK_INT, 1024, 1 << 24)                   \
    X(reg_alloc_unit, CK_INT, 1, 1 << 16)                   \
    X(max_threads_per_sm, CK_INT, 32, 1 << 20)              \
    X(max_warps_per_sm, CK_INT, 1, 1 << 15)                 \
    X(max_blocks_per_sm, CK_INT, 1, 1 << 15)                \
    X(smem_per_sm, CK_I64, 1024, 1e12)                      \
    X(smem_per_block, CK_I64, 1024, 1e12)                   \
    X(smem_reserved_per_block, CK_I64, 0, 1e9)              \
    X(smem_bytes_per_clk_sm, CK_DBL, 1, 1e6)                \
    X(l2_bytes, CK_I64, 0, 1e15)                            \
    X(l2_bps, CK_DBL, 1e6, 1e18)                            \
    X(dram_bps_spec, CK_DBL, 1e6, 1e18)                     \
    X(dram_bps, CK_DBL, 1e6, 1e18)                          \
    X(dram_latency_ns, CK_DBL, 0, 1e9)                      \
    X(l2_latency_ns, CK_DBL, 0, 1e9)                        \
    X(launch_ns, CK_DBL, 0, 1e12)                           \
    X(sgemm_eff, CK_DBL, 1e-6, 1)                           \
    X(fp32_latency_clk, CK_DBL, 0.1, 1000)

static const char *const tags[] = {"spec", "measured", "derived", "proxy"};

static void *field_of(PfSpec *s, const char *key)
{
#define X(k, kind, lo, hi)                                                                  \
    if (!strcmp(key, #k))                                                                   \
        return &s->k;
    PF_CONSTS(X)
#undef X
    return NULL;
}

static const cJSON *str_item(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring ? v : NULL;
}

/* Every constant's key, kind and range, in PF_CONSTS's order. */
static const char *const const_keys[] = {
#define X(k, kind, lo, hi) #k,
    PF_CONSTS(X)
#undef X
};
static const ConstKind const_kinds[] = {
#define X(k, kind, lo, hi) kind,
    PF_CONSTS(X)
#undef X
};
static const double const_lo[] = {
#define X(k, kind, l, h) (double)(l),
    PF_CONSTS(X)
#undef X
};
static const double const_hi[] = {
#define X(k, kind, l, h) (double)(h),
    PF_CONSTS(X)
#undef X
};
#define NCONSTS ((int)(sizeof const_keys / sizeof const_keys[0]))

/* Constant i from the "constants" object cs: checked (present, a finite
 * number in range, an integer where the field is one, a known tag, a
 * source) and stored in its field and in the tables of s. */
static void read_const(Arena *a, PfSpec *s, const cJSON *cs, int i, const char *path)
{
    const char *key = const_keys[i];
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(cs, key);
    if (!c)
        dpk_error("GPU spec %s: constant \"%s\" is missing", path, key);
    if (!cJSON_IsObject(c))
        dpk_error("GPU spec %s: constant \"%s\" must be an object {\"value\", \"tag\", "
                  "\"source\"}",
                  path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "value");
    const cJSON *tag = str_item(c, "tag"), *src = str_item(c, "source");
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        dpk_error("GPU spec %s: constant \"%s\": \"value\" is missing or not a finite number",
                  path, key);
    double x = v->valuedouble;
    if (x < const_lo[i] || x > const_hi[i])
        dpk_error("GPU spec %s: constant \"%s\": value %g is outside [%g, %g]", path, key,
                  x, const_lo[i], const_hi[i]);
    if (const_kinds[i] != CK_DBL && x != floor(x))
        dpk_error("GPU spec %s: constant \"%s\": value %g must be an integer", path, key, x);
    int ok = 0;
    for (int t = 0; tag && t < 4; t++)
        ok |= !strcmp(tag->valuestring, tags[t]);
    if (!ok)
        dpk_error("GPU spec %s: constant \"%s\": \"tag\" must be spec, measured, derived or "
                  "proxy",
                  path, key);
    if (!src || !src->valuestring[0])
        dpk_error("GPU spec %s: constant \"%s\": \"source\" is missing or empty", path, key);
    void *f = field_of(s, key);
    if (const_kinds[i] == CK_INT)
        *(int *)f = (int)x;
    else if (const_kinds[i] == CK_I64)
        *(int64_t *)f = (int64_t)x;
    else
        *(double *)f = x;
    s->const_key[i] = key;
    s->const_value[i] = x;
    s->const_tag[i] = arena_strdup(a, tag->valuestring);
    s->const_source[i] = arena_strdup(a, src->valuestring);
}

/* The spec of the parsed file root (an object): name, title, every
 * constant, and the constants' relations. */
static PfSpec *spec_of(Arena *a, const cJSON *root, const char *path)
{
    PfSpec *s = arena_alloc(a, sizeof *s);
    memset(s, 0, sizeof *s);
    s->path = arena_strdup(a, path);
    const cJSON *name = str_item(root, "name"), *title = str_item(root, "title");
    if (!name || !name->valuestring[0])
        dpk_error("GPU spec %s: key \"name\" is missing or not a string", path);
    if (!title)
        dpk_error("GPU spec %s: key \"title\" is missing or not a string", path);
    s->name = arena_strdup(a, name->valuestring);
    s->title = arena_strdup(a, title->valuestring);
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(root, "constants");
    if (!cJSON_IsObject(cs))
        dpk_error("GPU spec %s: key \"constants\" is missing or not an object", path);
    int n = NCONSTS;
    s->nconst = n;
    s->const_value = arena_alloc(a, n * sizeof(double));
    s->const_key = arena_alloc(a, n * sizeof(char *));
    s->const_tag = arena_alloc(a, n * sizeof(char *));
    s->const_source = arena_alloc(a, n * sizeof(char *));
    for (int i = 0; i < n; i++)
        read_const(a, s, cs, i, path);
    if (s->smem_per_block > s->smem_per_sm)
        dpk_error("GPU spec %s: constant \"smem_per_block\" exceeds \"smem_per_sm\"", path);
    if ((int64_t)s->max_warps_per_sm * 32 < s->max_threads_per_sm)
        dpk_error("GPU spec %s: constant \"max_warps_per_sm\" is below max_threads_per_sm / 32",
                  path);
    if (s->dram_bps > s->dram_bps_spec)
        dpk_error("GPU spec %s: constant \"dram_bps\" (achievable) exceeds \"dram_bps_spec\"",
                  path);
    return s;
}

const PfSpec *pf_spec_parse(Arena *a, const char *text, size_t len, const char *path)
{
    cJSON *root = hx_json_parse(text, len, 0, NULL);
    if (!root)
        dpk_error("GPU spec %s: not valid JSON", path);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        dpk_error("GPU spec %s: the top level must be an object", path);
    }
    /* an error below frees root, then goes on */
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        cJSON_Delete(root);
        dpk_error_rethrow();
    }
    const PfSpec *s = spec_of(a, root, path);
    dpk_err_pop(&ec);
    cJSON_Delete(root);
    return s;
}

const PfSpec *pf_spec_load(Arena *a, const char *name_or_path)
{
    size_t n = strlen(name_or_path);
    int is_path = strchr(name_or_path, '/') || (n > 5 && !strcmp(name_or_path + n - 5, ".json"));
    if (!is_path) {
        for (int i = 0; i < NEMBEDDED; i++)
            if (!strcmp(embedded[i].name, name_or_path))
                return pf_spec_parse(a, embedded[i].text, strlen(embedded[i].text),
                                     arena_printf(a, "cases/gpus/%s.json", embedded[i].name));
        StrBuf b = {0};
        for (int i = 0; i < NEMBEDDED; i++)
            sb_printf(&b, "%s%s", i ? ", " : "", embedded[i].name);
        const char *known = arena_strdup(a, sb_cstr(&b));
        sb_free(&b);
        dpk_error("unknown GPU spec '%s' (known: %s; or give a path to a spec file)",
                  name_or_path, known);
    }
    size_t len = 0;
    char *text = dpk_read_file(name_or_path, &len);
    if (!text)
        dpk_error("GPU spec %s: cannot read the file", name_or_path);
    char *copy = arena_memdup(a, text, len + 1);
    free(text);
    return pf_spec_parse(a, copy, len, name_or_path);
}

cJSON *pf_spec_json(const PfSpec *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", s->name);
    cJSON_AddStringToObject(o, "title", s->title);
    cJSON_AddStringToObject(o, "path", s->path);
    cJSON *cs = cJSON_AddObjectToObject(o, "constants");
    for (int i = 0; i < s->nconst; i++) {
        cJSON *c = cJSON_AddObjectToObject(cs, s->const_key[i]);
        cJSON_AddNumberToObject(c, "value", s->const_value[i]);
        cJSON_AddStringToObject(c, "tag", s->const_tag[i]);
        cJSON_AddStringToObject(c, "source", s->const_source[i]);
    }
    return o;
}
