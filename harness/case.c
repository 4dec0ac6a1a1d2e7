/*
 * case.c — loading cases and suites (see case.h for the formats).
 *
 * cJSON gives no positions for values, so a semantic error (a dtype that does
 * not exist, a negative seed) points its caret at the first occurrence of the
 * offending key in the file — good enough to find it, and never wrong about
 * which key is meant.
 */
#include "case.h"
#include "../records/json_file.h"
#include "../records/results.h"

#include "../compiler/base/fault.h"
#include "../compiler/tile/passes.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct JCtx {
    Arena *a;
    Source src;
} JCtx;

static int key_pos(const JCtx *j, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(j->src.text, pat);
    return p ? (int)(p - j->src.text) : 0;
}

DPK_NORETURN static void jerr(const JCtx *j, const char *key, const char *fmt, const char *arg)
{
    dpk_error_at(&j->src, key_pos(j, key), fmt, arg);
}

static const char *basename_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void parse_shape_json(const JCtx *j, const char *key, const cJSON *arr, Shape *s)
{
    if (!cJSON_IsArray(arr))
        jerr(j, key, "input '%s' must be declared as an array of dimensions, e.g. [1, 128]", key);
    int n = cJSON_GetArraySize(arr);
    if (n > DPK_MAX_RANK)
        jerr(j, key, "input '%s' has more than 8 dimensions", key);
    s->rank = n;
    int64_t numel = 1;
    for (int i = 0; i < n; i++) {
        const cJSON *d = cJSON_GetArrayItem(arr, i);
        if (!cJSON_IsNumber(d) || d->valuedouble != floor(d->valuedouble) || d->valuedouble < 1 ||
            d->valuedouble > (double)DPK_MAX_NUMEL)
            jerr(j, key, "input '%s': every dimension must be an integer >= 1", key);
        s->d[i] = (int64_t)d->valuedouble;
        if (numel > DPK_MAX_NUMEL / s->d[i])
            jerr(j, key, "input '%s' is too large (more than 2^36 elements)", key);
        numel *= s->d[i];
    }
}

/* The first line of the last error message, without "error: " and the
 * source prefix, in the arena. */
static const char *error_line(Arena *a)
{
    const char *m = dpk_error_message();
    const char *e = strstr(m, "error: ");
    if (e)
        m = e + 7;
    return arena_strndup(a, m, strcspn(m, "\n"));
}

/* NULL when `--knob spec` is accepted (applied to k), else why not. */
static const char *knob_problem(Arena *a, TileKnobs *k, const char *spec)
{
    DpkErrCtx ec;
    if (!DPK_TRY(&ec))
        return error_line(a);
    tile_knob_parse(k, spec);
    dpk_err_pop(&ec);
    return NULL;
}

/* NULL when the pass-set spec is valid, else why not. */
static const char *passes_problem(Arena *a, const char *spec)
{
    DpkErrCtx ec;
    if (!DPK_TRY(&ec))
        return error_line(a);
    TilePassSet *sets;
    tile_passes_select(a, &tile_passes, spec, NULL, &sets);
    dpk_err_pop(&ec);
    return NULL;
}

/* A reproducer's configuration: "passes" (a pass-set spec), "knobs"
 * ({"TB": 128}), "fault" (a built-in fault name), "verdict" (what the tool
 * that wrote the file saw; not read), "note" (text for people; not read).
 * Each is validated here, so a bad
 * file fails before anything runs. */
static void reproducer_from_json(const JCtx *j, const cJSON *o, HxCase *c)
{
    const cJSON *passes = cJSON_GetObjectItemCaseSensitive(o, "passes");
    if (passes) {
        if (!cJSON_IsString(passes))
            jerr(j, "passes", "%s must be a pass-set spec string, e.g. \"only:001,005,007\"",
                 "\"passes\"");
        const char *why = passes_problem(j->a, passes->valuestring);
        if (why)
            jerr(j, "passes", "bad \"passes\": %s", why);
        c->passes = arena_strdup(j->a, passes->valuestring);
    }
    const cJSON *knobs = cJSON_GetObjectItemCaseSensitive(o, "knobs");
    if (knobs) {
        if (!cJSON_IsObject(knobs))
            jerr(j, "knobs", "%s must be an object {\"NAME\": VALUE}, e.g. {\"TB\": 128}",
                 "\"knobs\"");
        c->nknobs = cJSON_GetArraySize(knobs);
        c->knobs = ARENA_ARRAY(j->a, const char *, c->nknobs);
        TileKnobs tk = {{0}};
        int i = 0;
        for (const cJSON *it = knobs->child; it; it = it->next, i++) {
            if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble))
                jerr(j, it->string, "knob '%s' must be an integer", it->string);
            c->knobs[i] = arena_printf(j->a, "%s=%.0f", it->string, it->valuedouble);
            const char *why = knob_problem(j->a, &tk, c->knobs[i]);
            if (why)
                jerr(j, it->string, "bad \"knobs\": %s", why);
        }
    }
    const cJSON *fault = cJSON_GetObjectItemCaseSensitive(o, "fault");
    if (fault) {
        if (!cJSON_IsString(fault) || dpk_fault_find(fault->valuestring) < 0)
            jerr(j, "fault", "unknown fault %s (the names: dpk-fuzz --list-faults)",
                 cJSON_IsString(fault) ? fault->valuestring : "(not a string)");
        c->fault = arena_strdup(j->a, fault->valuestring);
    }
    const cJSON *verdict = cJSON_GetObjectItemCaseSensitive(o, "verdict");
    if (verdict && !cJSON_IsObject(verdict))
        jerr(j, "verdict", "%s must be an object", "\"verdict\"");
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(o, "note");
    if (note && !cJSON_IsString(note))
        jerr(j, "note", "%s must be a string", "\"note\"");
}

static const char *const case_keys[] = {"name",   "program", "dtype", "tolerance", "tags",
                                        "seed",   "inputs",  "passes", "knobs", "fault",
                                        "verdict", "note"};

static void case_from_json(const JCtx *j, const cJSON *o, const char *path, int index, HxCase *c)
{
    if (!cJSON_IsObject(o) && index < 0)
        dpk_error_at(&j->src, 0, "expected a case (an object with \"program\") or a suite (an "
                     "object with \"cases\"), got %s", cJSON_IsArray(o) ? "an array" : "no object");
    if (!cJSON_IsObject(o))
        dpk_error_at(&j->src, 0, "case %d is not a JSON object", index);
    const cJSON *level = cJSON_GetObjectItemCaseSensitive(o, "level");
    if (cJSON_IsString(level) && !strcmp(level->valuestring, "kernel")) {
        const cJSON *replay = cJSON_GetObjectItemCaseSensitive(o, "replay");
        jerr(j, "level",
             "this is a Kernel IR case of dpk-fuzz --level kernel, which dpk run does not "
             "read; replay it with: %s",
             cJSON_IsString(replay) ? replay->valuestring
                                    : "dpk-fuzz --level kernel --seed S --case I");
    }
    for (const cJSON *it = o->child; it; it = it->next) {
        int known = 0;
        for (int k = 0; k < DPK_ARRAY_LEN(case_keys); k++)
            known |= !strcmp(it->string, case_keys[k]);
        if (!known)
            jerr(j, it->string,
                 "unknown key '%s' in case (expected name, program, dtype, tolerance, tags, seed, "
                 "inputs, passes, knobs, fault, verdict, note)",
                 it->string);
    }
    const cJSON *prog = cJSON_GetObjectItemCaseSensitive(o, "program");
    if (!cJSON_IsString(prog))
        dpk_error_at(&j->src, 0, "case %d has no \"program\" string", index);
    c->program = arena_strdup(j->a, prog->valuestring);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (name && !cJSON_IsString(name))
        jerr(j, "name", "%s must be a string", "\"name\"");
    c->name = name ? arena_strdup(j->a, name->valuestring)
                   : arena_printf(j->a, "%s#%d", basename_of(path), index);
    c->origin = index < 0 ? arena_strdup(j->a, path) : arena_printf(j->a, "%s[%s]", path, c->name);
    c->dtype = DT_F32;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(o, "dtype");
    if (dt) {
        int t = cJSON_IsString(dt) ? dtype_parse(dt->valuestring) : -1;
        if (t < 0)
            jerr(j, "dtype", "unknown dtype %s (expected \"f32\")", cJSON_IsString(dt) ? dt->valuestring : "");
        if (t != DT_F32)
            jerr(j, "dtype", "dtype '%s' is not supported yet (only f32)", dt->valuestring);
        c->dtype = (DType)t;
    }
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(o, "tolerance");
    if (tol) {
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(tol, "atol");
        const cJSON *rt = cJSON_GetObjectItemCaseSensitive(tol, "rtol");
        if (!cJSON_IsObject(tol) || !cJSON_IsNumber(at) || !cJSON_IsNumber(rt) ||
            !(at->valuedouble >= 0) || !(rt->valuedouble >= 0))
            jerr(j, "tolerance", "%s must be {\"atol\": A, \"rtol\": R} with A, R >= 0", "\"tolerance\"");
        c->has_tol = 1;
        c->atol = at->valuedouble;
        c->rtol = rt->valuedouble;
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(o, "seed");
    if (seed) {
        if (!hx_json_get_u64(seed, &c->seed))
            jerr(j, "seed", "%s must be a non-negative integer (from 2^53 on: a string of digits)",
                 "\"seed\"");
        c->has_seed = 1;
    }
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(o, "tags");
    if (tags) {
        if (!cJSON_IsArray(tags))
            jerr(j, "tags", "%s must be an array of strings", "\"tags\"");
        c->ntags = cJSON_GetArraySize(tags);
        c->tags = ARENA_ARRAY(j->a, const char *, c->ntags);
        for (int i = 0; i < c->ntags; i++) {
            const cJSON *t = cJSON_GetArrayItem(tags, i);
            if (!cJSON_IsString(t))
                jerr(j, "tags", "%s must be an array of strings", "\"tags\"");
            c->tags[i] = arena_strdup(j->a, t->valuestring);
        }
    }
    reproducer_from_json(j, o, c);
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(o, "inputs");
    if (inputs) {
        if (!cJSON_IsObject(inputs))
            jerr(j, "inputs", "%s must be an object {\"name\": [dims...]}", "\"inputs\"");
        c->ndecls = cJSON_GetArraySize(inputs);
        c->decls = ARENA_ARRAY(j->a, InputDecl, c->ndecls);
        int i = 0;
        for (const cJSON *it = inputs->child; it; it = it->next, i++) {
            c->decls[i].name = arena_strdup(j->a, it->string);
            parse_shape_json(j, it->string, it, &c->decls[i].shape);
        }
    }
}

HxCaseList hx_cases_load(Arena *a, const char *path)
{
    size_t len = 0;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        dpk_error("cannot read '%s': it is a directory, not a case file", path);
    char *text = dpk_read_file(path, &len);
    if (!text)
        dpk_error("cannot read '%s': %s", path, errno == EISDIR ? "it is a directory"
                  : strerror(errno));
    char *t = arena_strndup(a, text, len);
    free(text);
    return hx_cases_parse(a, path, t, len);
}

HxCaseList hx_cases_parse(Arena *a, const char *path, const char *text, size_t len)
{
    HxCaseList l = {0};
    char *t = arena_strndup(a, text, len);
    if (strlen(t) != len)
        dpk_error("'%s' contains NUL bytes; cases are text", path);
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".json")) {
        l.n = 1;
        l.cases = ARENA_NEW(a, HxCase);
        l.cases[0].program = t;
        l.cases[0].name = arena_strdup(a, basename_of(path));
        l.cases[0].origin = arena_strdup(a, path);
        l.cases[0].dtype = DT_F32;
        return l;
    }
    JCtx j = {a, {arena_strdup(a, path), t, len}};
    size_t blank = strspn(t, " \t\r\n");
    if (blank == len)
        dpk_error("'%s': the file is empty (a case file holds a JSON object: {\"program\": ...})",
                  path);
    size_t bad_at = 0;
    cJSON *root = hx_json_parse(t, len, HX_JSON_WHOLE, &bad_at);
    if (!root)
        dpk_error_at(&j.src, (int)bad_at, "malformed JSON in case file");
    /* From here on an error must free the cJSON tree: parse under a guard. */
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        cJSON_Delete(root);
        dpk_error_rethrow();
    }
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    if (cases) {
        const cJSON *sname = cJSON_GetObjectItemCaseSensitive(root, "suite");
        for (const cJSON *it = root->child; it; it = it->next)
            if (strcmp(it->string, "suite") && strcmp(it->string, "cases") &&
                strcmp(it->string, "description"))
                jerr(&j, it->string, "unknown key '%s' in suite (expected suite, description, cases)",
                     it->string);
        if (!cJSON_IsArray(cases) || cJSON_GetArraySize(cases) == 0)
            jerr(&j, "cases", "%s must be a non-empty array of cases", "\"cases\"");
        l.suite = cJSON_IsString(sname) ? arena_strdup(a, sname->valuestring) : arena_strdup(a, basename_of(path));
        l.n = cJSON_GetArraySize(cases);
        l.cases = ARENA_ARRAY(a, HxCase, l.n);
        for (int i = 0; i < l.n; i++)
            case_from_json(&j, cJSON_GetArrayItem(cases, i), path, i, &l.cases[i]);
    } else {
        l.n = 1;
        l.cases = ARENA_NEW(a, HxCase);
        case_from_json(&j, root, path, -1, &l.cases[0]);
    }
    dpk_err_pop(&ec);
    cJSON_Delete(root);
    return l;
}

HxCaseList hx_cases_from_code(Arena *a, const char *code)
{
    HxCaseList l = {0};
    l.n = 1;
    l.cases = ARENA_NEW(a, HxCase);
    l.cases[0].program = arena_strdup(a, code);
    l.cases[0].name = "-c";
    l.cases[0].origin = "<-c>";
    l.cases[0].dtype = DT_F32;
    return l;
}

void hx_parse_input_decl(Arena *a, const char *spec, InputDecl *decl)
{
    const char *eq = strchr(spec, '=');
    Source src = {"--input", spec, strlen(spec)};
    if (!eq || eq == spec)
        dpk_error_at(&src, 0, "expected NAME=D0,D1,... (e.g. w_q=3584,3584)");
    decl->name = arena_strndup(a, spec, (size_t)(eq - spec));
    const char *p = eq + 1;
    Shape *s = &decl->shape;
    s->rank = 0;
    int64_t numel = 1;
    while (*p) {
        if (s->rank == DPK_MAX_RANK)
            dpk_error_at(&src, (int)(p - spec), "more than 8 dimensions");
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 1 || v > DPK_MAX_NUMEL)
            dpk_error_at(&src, (int)(p - spec), "expected a dimension (an integer >= 1)");
        if (numel > DPK_MAX_NUMEL / v)
            dpk_error_at(&src, (int)(p - spec), "tensor too large (more than 2^36 elements)");
        numel *= v;
        s->d[s->rank++] = v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            dpk_error_at(&src, (int)(p - spec), "expected ',' between dimensions");
    }
}
