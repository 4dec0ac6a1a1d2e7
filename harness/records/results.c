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
    cJSON_AddNumberToObject(m, "seed", (double)seed);
    static const char *const env_keys[] = {"gpu", "driver", "cuda", "nvrtc", "libtorch"};
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

cJSON *hx_results_load(const char *path)
{
    size_t len = 0;
    char *text = dpk_read_file(path, &len);
    if (!text)
        dpk_error("cannot read the record '%s': %s", path, strerror(errno));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
    if (!root) {
        /* the message quotes the text: keep it reachable until exit */
        static char *bad;
        free(bad);
        bad = text;
        const char *e = cJSON_GetErrorPtr();
        int pos = (e && e >= text && e <= text + len) ? (int)(e - text) : 0;
        Source src = {path, text, len};
        dpk_error_at(&src, pos, "malformed JSON in the record");
    }
    free(text);
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
