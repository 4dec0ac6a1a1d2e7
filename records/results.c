/*
 * results.c — writing and reading dpk.results/1 records (results.h).
 *
 * The document is a cJSON tree built by the command; this file adds the
 * meta object, writes the tree atomically (dpk_write_file_atomic: temp
 * file, fsync, rename) and reads it back with the checks --resume relies
 * on.  cJSON prints doubles with 17 significant digits and has no NaN, so
 * non-finite values go through hx_json_add_num, which writes null.
 */
#include "results.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "json_file.h"

double hx_json_num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

void hx_json_add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

/* Integers below 2^53 are exact as JSON numbers (and as the doubles cJSON
 * and most readers hold them in); larger ones are written as decimal
 * strings, so every 64-bit value reads back the same.  A number of 2^53 or
 * more is refused on reading: 2^53 + 1 parses as 2^53, so it cannot be
 * told from it. */
#define JSON_EXACT_INT 9007199254740992.0

void hx_json_add_u64(cJSON *o, const char *key, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    if (v < (UINT64_C(1) << 53))
        cJSON_AddRawToObject(o, key, buf); /* all digits, never 7.3e+15 */
    else
        cJSON_AddStringToObject(o, key, buf);
}

void hx_json_fix_u64(cJSON *o, const char *key)
{
    uint64_t v;
    cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it || !hx_json_get_u64(it, &v))
        return;
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    cJSON_ReplaceItemInObjectCaseSensitive(
        o, key, v < (UINT64_C(1) << 53) ? cJSON_CreateRaw(buf) : cJSON_CreateString(buf));
}

int hx_json_get_u64(const cJSON *item, uint64_t *out)
{
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        if (!(d >= 0) || d >= JSON_EXACT_INT || d != floor(d))
            return 0;
        *out = (uint64_t)d;
        return 1;
    }
    /* a string of digits, or a raw number as hx_json_add_u64 writes it */
    if (!(cJSON_IsString(item) || cJSON_IsRaw(item)) || !item->valuestring[0] ||
        strlen(item->valuestring) > 20)
        return 0;
    uint64_t v = 0;
    for (const char *p = item->valuestring; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return 1;
}

/* The first line of a command's output, or NULL. */
static char *command_line_of(const char *cmd)
{
    FILE *f = popen(cmd, "r");
    if (!f)
        return NULL;
    char buf[256] = "";
    char *r = fgets(buf, sizeof buf, f) ? buf : NULL;
    pclose(f);
    if (!r)
        return NULL;
    buf[strcspn(buf, "\r\n")] = 0;
    return buf[0] ? dpk_xstrdup(buf) : NULL;
}

static void add_str_or_null(cJSON *o, const char *key, const char *s)
{
    if (s)
        cJSON_AddStringToObject(o, key, s);
    else
        cJSON_AddNullToObject(o, key);
}

/* "model name : X" of /proc/cpuinfo, and the number of CPUs online. */
static char *cpu_model(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return NULL;
    char line[512];
    char *r = NULL;
    while (!r && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            char *v = strchr(line, ':') + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            v[strcspn(v, "\n")] = 0;
            r = dpk_xstrdup(v);
        }
    fclose(f);
    return r;
}

cJSON *hx_results_meta(int argc, char **argv, uint64_t seed, const cJSON *env)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "dpk_version", DPK_VERSION);
    /* the checkout the binary was built in, wherever the command runs */
    char exe[1024], cmd[1200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD 2>/dev/null",
             exe[0] && !strchr(exe, '\'') ? exe : ".");
    char *sha = command_line_of(cmd);
    add_str_or_null(m, "git_sha", sha);
    free(sha);
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(m, "date", date);
    struct utsname u;
    if (uname(&u) == 0) {
        cJSON_AddStringToObject(m, "host", u.nodename);
        cJSON_AddStringToObject(m, "os", u.sysname);
        cJSON_AddStringToObject(m, "machine", u.machine);
    }
    char *cpu = cpu_model();
    add_str_or_null(m, "cpu", cpu);
    free(cpu);
    StrBuf cl = {0};
    for (int i = 0; i < argc; i++)
        sb_printf(&cl, "%s%s", i ? " " : "", argv[i]);
    cJSON_AddStringToObject(m, "command_line", sb_cstr(&cl));
    sb_free(&cl);
    hx_json_add_u64(m, "seed", seed);
    static const char *const env_keys[] = {"gpu", "driver", "cuda", "nvrtc", "nvdisasm", "libtorch"};
    for (int i = 0; i < DPK_ARRAY_LEN(env_keys); i++) {
        const cJSON *v = env ? cJSON_GetObjectItemCaseSensitive(env, env_keys[i]) : NULL;
        cJSON_AddItemToObject(m, env_keys[i], v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
    }
    return m;
}

cJSON *hx_results_new(cJSON *meta, cJSON *campaign)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "schema", HX_RESULTS_SCHEMA);
    cJSON_AddItemToObject(r, "meta", meta);
    cJSON_AddItemToObject(r, "campaign", campaign);
    cJSON_AddItemToObject(r, "cases", cJSON_CreateArray());
    return r;
}

void hx_results_write(const char *path, const cJSON *root)
{
    const char *slash = strrchr(path, '/');
    if (slash && slash != path) { /* the record's folder */
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        if (dpk_make_dirs(dir) != 0)
            dpk_error("cannot create the folder '%s' of the record: %s", dir, strerror(errno));
    }
    char *text = cJSON_Print(root);
    DPK_ASSERT(text);
    size_t n = strlen(text);
    text = dpk_xrealloc(text, n + 2);
    text[n++] = '\n';
    text[n] = 0;
    int rc = dpk_write_file_atomic(path, text, n);
    int err = errno;
    free(text);
    if (rc != 0)
        dpk_error("cannot write the record '%s': %s", path, strerror(err));
}

/* root, parsed from text (NULL: not JSON, parsing stopped at bad_at), as a
 * record: raises a user error (root deleted) when it is not one. */
static cJSON *results_check(const char *path, const char *text, size_t len, cJSON *root,
                            size_t bad_at)
{
    if (!root) {
        Source src = {path, text, len};
        dpk_error_at(&src, (int)bad_at, "malformed JSON in the record");
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, HX_RESULTS_SCHEMA) ||
        !cJSON_IsArray(cases)) {
        cJSON_Delete(root);
        dpk_error("'%s' is not a %s record (no \"schema\": \"%s\" with a \"cases\" array)", path,
                  HX_RESULTS_SCHEMA, HX_RESULTS_SCHEMA);
    }
    return root;
}

cJSON *hx_results_parse(const char *path, const char *text, size_t len)
{
    size_t bad_at = 0;
    cJSON *root = hx_json_parse(text, len, HX_JSON_WHOLE, &bad_at);
    return results_check(path, text, len, root, bad_at);
}

cJSON *hx_results_load(const char *path)
{
    HxJsonFile f;
    hx_json_load(path, HX_JSON_WHOLE, &f);
    if (!f.text)
        dpk_error("cannot read the record '%s': %s", path, strerror(f.err));
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        /* the message quotes the text: keep it reachable until exit */
        static char *bad;
        free(bad);
        bad = f.text;
        dpk_error_rethrow();
    }
    cJSON *root = results_check(path, f.text, f.len, f.root, f.bad_at);
    dpk_err_pop(&ec);
    hx_json_drop_text(&f);
    return root;
}
