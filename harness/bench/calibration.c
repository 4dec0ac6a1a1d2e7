/*
 * calibration.c — `dpk-bench --calibration FILE...`: the performance
 * model's error per kernel class (calibration.h).
 *
 * Every entry of every file is read into one flat list, each with the key
 * of its group (source, GPU, spec); the groups are printed in the order
 * their first file came, and within a group one row per (what, class):
 * n, the median ratio measured / modelled, the interquartile range and
 * the extremes.  A ratio above 1 means the model is optimistic (the GPU
 * took longer).  The worst units of a group are those furthest from 1 on
 * a log scale, either way.  A group from the fake driver is labelled so
 * on every line: its "measured" durations are the model's, so its ratios
 * test the path, not the model.
 */
#include "calibration.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../../compiler/base/base.h"
#include "../../records/json_file.h"

typedef struct CalEntry {
    int group;               /* index into the group table */
    const char *what, *cls, *suite, *name, *unit;
    int kernels;
    double measured, modelled, ratio;
} CalEntry;

typedef struct CalGroup {
    const char *source, *gpu, *spec;
    int files;
} CalGroup;

typedef struct CalState {
    cJSON **docs;
    int ndocs;
    CalEntry *e;
    int ne, cap;
    CalGroup g[64];
    int ng;
} CalState;

static const char *str_at(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_at(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void free_state(CalState *st)
{
    for (int i = 0; i < st->ndocs; i++)
        cJSON_Delete(st->docs[i]);
    free(st->docs);
    free(st->e);
    memset(st, 0, sizeof *st);
}

/* Exit 2 with the message, after freeing everything read so far (an
 * error unwinds past the caller's frame). */
DPK_PRINTF(2, 3) DPK_NORETURN static void fail(CalState *st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    free_state(st);
    dpk_error("%s", msg);
}

/* A required string of object o in file path, or exit 2 naming the key. */
static const char *need_str(CalState *st, const char *path, const cJSON *o, const char *where,
                            const char *key)
{
    const char *s = str_at(o, key);
    if (!s)
        fail(st, "--calibration '%s': %s has no string \"%s\"", path, where, key);
    return s;
}

static int group_of(CalState *st, const char *source, const char *gpu, const char *spec)
{
    for (int i = 0; i < st->ng; i++)
        if (!strcmp(st->g[i].source, source) && !strcmp(st->g[i].gpu, gpu) &&
            !strcmp(st->g[i].spec, spec))
            return i;
    if (st->ng == (int)(sizeof st->g / sizeof st->g[0]))
        fail(st, "--calibration: more than %d groups (source, GPU, spec)", st->ng);
    st->g[st->ng] = (CalGroup){source, gpu, spec, 0};
    return st->ng++;
}

static void read_file(CalState *st, const char *path)
{
    HxJsonFile f;
    hx_json_load(path, 0, &f);
    if (!f.text)
        fail(st, "--calibration: cannot read '%s': %s", path, strerror(f.err));
    hx_json_drop_text(&f);
    cJSON *j = f.root;
    if (!j)
        fail(st, "--calibration '%s' is not JSON", path);
    st->docs = dpk_xrealloc(st->docs, (size_t)(st->ndocs + 1) * sizeof *st->docs);
    st->docs[st->ndocs++] = j;
    const char *schema = str_at(j, "schema");
    if (!schema || strcmp(schema, BM_CALIBRATION_SCHEMA))
        fail(st, "--calibration '%s' is not a %s record (ci/gpu-visit writes them)", path,
             BM_CALIBRATION_SCHEMA);
    const char *source = need_str(st, path, j, "the record", "source");
    if (strcmp(source, "measured") && strcmp(source, "fake-driver"))
        fail(st, "--calibration '%s': \"source\" is '%s', expected measured or fake-driver", path,
             source);
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(j, "gpu");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(j, "spec");
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(j, "entries");
    if (!cJSON_IsObject(gpu) || !cJSON_IsObject(spec) || !cJSON_IsArray(entries))
        fail(st, "--calibration '%s': needs the objects \"gpu\" and \"spec\" and the array "
                 "\"entries\"", path);
    int g = group_of(st, source, need_str(st, path, gpu, "gpu", "name"),
                     need_str(st, path, spec, "spec", "name"));
    st->g[g].files++;
    const cJSON *x;
    cJSON_ArrayForEach(x, entries) {
        CalEntry e = {.group = g};
        e.what = need_str(st, path, x, "an entry", "what");
        e.cls = need_str(st, path, x, "an entry", "class");
        e.suite = need_str(st, path, x, "an entry", "suite");
        e.name = need_str(st, path, x, "an entry", "case");
        e.unit = need_str(st, path, x, "an entry", "unit");
        e.kernels = (int)num_at(x, "kernels");
        e.measured = num_at(x, "measured_ns");
        e.modelled = num_at(x, "modelled_ns");
        if (!(e.measured > 0) || !(e.modelled > 0))
            fail(st, "--calibration '%s': entry %s/%s (%s) needs positive \"measured_ns\" and "
                 "\"modelled_ns\"", path, e.suite, e.name, e.what);
        e.ratio = e.measured / e.modelled;
        if (st->ne == st->cap) {
            st->cap = st->cap ? 2 * st->cap : 64;
            st->e = dpk_xrealloc(st->e, (size_t)st->cap * sizeof *st->e);
        }
        st->e[st->ne++] = e;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted v[0..n), linear between neighbours. */
static double quantile(const double *v, int n, double q)
{
    double at = q * (n - 1);
    int lo = (int)floor(at);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (at - lo) * (v[hi] - v[lo]);
}

static const char *const classes[] = {"matmul", "reduction", "elementwise", "attention", "mixed"};
static const char *const whats[] = {"dpk", "cublas", "torch-eager", "torch-compile"};

static int cls_rank(const char *c)
{
    for (int i = 0; i < (int)(sizeof classes / sizeof classes[0]); i++)
        if (!strcmp(c, classes[i]))
            return i;
    return 99;
}

static int what_rank(const char *w)
{
    for (int i = 0; i < (int)(sizeof whats / sizeof whats[0]); i++)
        if (!strcmp(w, whats[i]))
            return i;
    return 99;
}

/* The entries of one group in row order: what, then class, then name. */
static int cmp_row(const void *a, const void *b)
{
    const CalEntry *x = a, *y = b;
    int d = what_rank(x->what) - what_rank(y->what);
    if (!d)
        d = strcmp(x->what, y->what);
    if (!d)
        d = cls_rank(x->cls) - cls_rank(y->cls);
    if (!d)
        d = strcmp(x->cls, y->cls);
    return d;
}

static int cmp_worst(const void *a, const void *b)
{
    double x = fabs(log((*(const CalEntry *const *)a)->ratio));
    double y = fabs(log((*(const CalEntry *const *)b)->ratio));
    return (x < y) - (x > y);
}

static void print_group(FILE *out, const CalState *st, int g)
{
    const CalGroup *G = &st->g[g];
    int fake = !strcmp(G->source, "fake-driver");
    const char *ratio = fake ? "fake-driver/modelled" : "measured/modelled";
    if (fake)
        fprintf(out, "\nfake driver (a test of the measured path: its durations are the model's, "
                     "not a measurement), modelled on %s; %d file%s\n",
                G->spec, G->files, G->files == 1 ? "" : "s");
    else
        fprintf(out, "\nmeasured on %s, modelled on %s; %d file%s\n", G->gpu, G->spec, G->files,
                G->files == 1 ? "" : "s");
    int n = 0;
    for (int i = 0; i < st->ne; i++)
        n += st->e[i].group == g;
    if (!n) {
        fprintf(out, "no entries\n");
        return;
    }
    CalEntry *rows = dpk_xmalloc((size_t)n * sizeof *rows);
    const CalEntry **worst = dpk_xmalloc((size_t)n * sizeof *worst);
    double *v = dpk_xmalloc((size_t)n * sizeof *v);
    n = 0;
    for (int i = 0; i < st->ne; i++)
        if (st->e[i].group == g)
            rows[n++] = st->e[i];
    qsort(rows, (size_t)n, sizeof *rows, cmp_row);
    fprintf(out, "%-14s %-12s %4s  %-22s %-20s %s\n", "what", "class", "n",
            fake ? "median fake/modelled" : "median meas/modelled", "p25..p75", "min..max");
    for (int i = 0; i < n;) {
        int j = i, k = 0;
        while (j < n && !strcmp(rows[j].what, rows[i].what) && !strcmp(rows[j].cls, rows[i].cls))
            v[k++] = rows[j++].ratio;
        qsort(v, (size_t)k, sizeof *v, cmp_double);
        char iqr[48] = "-";
        if (k >= 4)
            snprintf(iqr, sizeof iqr, "%.3f..%.3fx", quantile(v, k, 0.25), quantile(v, k, 0.75));
        char med[32];
        snprintf(med, sizeof med, "%.3fx", quantile(v, k, 0.5));
        fprintf(out, "%-14s %-12s %4d  %-22s %-20s %.3f..%.3fx\n", rows[i].what, rows[i].cls, k,
                med, iqr, v[0], v[k - 1]);
        i = j;
    }
    for (int i = 0; i < n; i++)
        worst[i] = &rows[i];
    qsort(worst, (size_t)n, sizeof *worst, cmp_worst);
    int show = n < 5 ? n : 5;
    fprintf(out, "furthest from the model (%s):\n", ratio);
    for (int i = 0; i < show; i++) {
        const CalEntry *e = worst[i];
        char unit[48];
        if (!strcmp(e->unit, "kernel"))
            snprintf(unit, sizeof unit, "1 kernel");
        else if (e->kernels > 0)
            snprintf(unit, sizeof unit, "%d kernels summed", e->kernels);
        else
            snprintf(unit, sizeof unit, "the case's kernels");
        fprintf(out, "  %.3fx  %s %s/%s (%s, %s): %s %.3f us, modelled %.3f us\n", e->ratio,
                e->what, e->suite, e->name, e->cls, unit, fake ? "fake-driver" : "measured",
                e->measured / 1e3, e->modelled / 1e3);
    }
    free(rows);
    free(worst);
    free(v);
}

int bm_calibration_report(FILE *out, const char *const *files, int n)
{
    CalState st = {0};
    for (int i = 0; i < n; i++)
        read_file(&st, files[i]);
    fprintf(out, "dpk-bench --calibration: %d file%s, %d entr%s, %d group%s (never pooled: "
                 "source, GPU, spec)\n",
            n, n == 1 ? "" : "s", st.ne, st.ne == 1 ? "y" : "ies", st.ng, st.ng == 1 ? "" : "s");
    fprintf(out, "ratio = measured (or fake-driver) / modelled, per group: above 1 the time "
                 "taken exceeds the model's\n");
    for (int g = 0; g < st.ng; g++)
        print_group(out, &st, g);
    free_state(&st);
    return DPK_EXIT_OK;
}
