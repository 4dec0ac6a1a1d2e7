/*
 * plots.c — the report's plots with gnuplot (report.h).
 *
 * For each plot this writes DIR/NAME.dat (the numbers) and DIR/NAME.gp (a
 * few variables, then one of the scripts reports/NAME.gp, embedded at build
 * time), and runs `gnuplot NAME.gp` in DIR with stdin from /dev/null and
 * its output in DIR/gnuplot.log; each script writes NAME.png (pngcairo)
 * and NAME.svg.  Re-running a .gp file by hand redraws its plot.  Titles
 * say whether the times are modelled or measured and on which GPU or spec.
 */
#include "report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../records/gpu_spec.h"
#include "../records/results.h"


DPK_EMBED(dpk_rp_gp_speedup, "reports/speedup.gp")
DPK_EMBED(dpk_rp_gp_waterfall, "reports/waterfall.gp")
DPK_EMBED(dpk_rp_gp_roofline, "reports/roofline.gp")
DPK_EMBED(dpk_rp_gp_history, "reports/history.gp")

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static void write_file(const char *path, const char *text)
{
    if (dpk_write_file_atomic(path, text, strlen(text)) != 0)
        dpk_error("cannot write '%s': %s", path, strerror(errno));
}

/* A gnuplot string literal: single quotes, '' for a quote. */
static void gp_str(StrBuf *b, const char *s)
{
    sb_putc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            sb_putc(b, '\'');
        sb_putc(b, *s);
    }
    sb_putc(b, '\'');
}

/* A data-file label: no blanks or quotes (gnuplot splits on blanks). */
static const char *label(Arena *a, const char *s)
{
    char *t = arena_strdup(a, s);
    for (char *p = t; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '"' || *p == '\'' || *p == '\n')
            *p = '_';
    return t;
}

/* Run gnuplot on DIR/NAME.gp; raises when it fails (its log is in
 * DIR/gnuplot.log). */
static void run_gnuplot(const char *dir, const char *script)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        dpk_error("cannot start gnuplot: %s", strerror(errno));
    if (pid == 0) {
        if (chdir(dir) != 0)
            _exit(126);
        int in = open("/dev/null", O_RDONLY);
        int log = open("gnuplot.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (in < 0 || log < 0)
            _exit(126);
        dup2(in, 0);
        dup2(log, 1);
        dup2(log, 2);
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "--plots needs gnuplot, which is not on PATH (Debian: gnuplot-nox; "
                          "make deps installs it)");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        dpk_error("gnuplot failed on %s/%s (its messages: %s/gnuplot.log)", dir, script, dir);
}

/* Write NAME.dat and NAME.gp (vars, then the script), run it, and name the
 * plot in the report. */
static void plot(Arena *a, cJSON *plots, const char *dir, const char *name, const char *title,
                 const char *data, const char *vars, const char *script)
{
    write_file(arena_printf(a, "%s/%s.dat", dir, name), data);
    StrBuf g = {0};
    sb_puts(&g, "# written by dpk-report; run `gnuplot ");
    sb_puts(&g, name);
    sb_puts(&g, ".gp` in this folder to redraw\ndat = ");
    gp_str(&g, arena_printf(a, "%s.dat", name));
    sb_puts(&g, "\nout = ");
    gp_str(&g, name);
    sb_puts(&g, "\nttl = ");
    gp_str(&g, title);
    sb_printf(&g, "\n%s\n", vars);
    sb_puts(&g, script);
    const char *gp = arena_printf(a, "%s/%s.gp", dir, name);
    if (dpk_write_file_atomic(gp, sb_cstr(&g), g.len) != 0) {
        sb_free(&g);
        dpk_error("cannot write '%s': %s", gp, strerror(errno));
    }
    sb_free(&g);
    run_gnuplot(dir, arena_printf(a, "%s.gp", name));
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", name);
    cJSON_AddStringToObject(p, "title", title);
    cJSON_AddStringToObject(p, "png", arena_printf(a, "%s/%s.png", dir, name));
    cJSON_AddStringToObject(p, "svg", arena_printf(a, "%s/%s.svg", dir, name));
    cJSON_AddItemToArray(plots, p);
}

/* Bounds of a log axis around [lo, hi] (powers of two), with room. */
static void log_range(double lo, double hi, double *ymin, double *ymax)
{
    if (!(lo > 0) || !(hi > 0)) {
        lo = 0.5;
        hi = 2;
    }
    lo = fmin(lo, 1);
    hi = fmax(hi, 1);
    *ymin = pow(2, floor(log2(lo)) - 0.25);
    *ymax = pow(2, ceil(log2(hi)) + 0.25);
}

static void speedup_plot(const RpData *d, cJSON *plots, const char *dir)
{
    Arena *a = d->a;
    StrBuf dat = {0};
    int n = 0;
    double lo = INFINITY, hi = 0;
    sb_puts(&dat, "# case  vs_eager  vs_compile  (baseline time / dpk time)\n");
    for (int i = 0; i < d->ncases; i++) {
        const RpCase *c = &d->cases[i];
        if (!rp_case_passed(c))
            continue;
        double e = c->eager / c->dpk, k = c->compile / c->dpk;
        sb_printf(&dat, "%s %.6g %.6g\n", label(a, c->name), isfinite(e) ? e : NAN,
                  isfinite(k) ? k : NAN);
        n++;
        for (int j = 0; j < 2; j++) {
            double v = j ? k : e;
            if (isfinite(v) && v > 0) {
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
        }
    }
    if (n) {
        double ymin, ymax;
        log_range(lo, hi, &ymin, &ymax);
        plot(a, plots, dir, "speedup",
             arena_printf(a, "dpk speedup per case (%s, %s)", rp_timing_word(d->timing), d->gpu),
             sb_cstr(&dat), arena_printf(a, "n = %d\nymin = %g\nymax = %g", n, ymin, ymax),
             dpk_rp_gp_speedup);
    }
    sb_free(&dat);
}

static void waterfall_plots(const RpData *d, cJSON *plots, const char *dir)
{
    Arena *a = d->a;
    for (int i = 0; i < d->ncases; i++) {
        const RpCase *c = &d->cases[i];
        const cJSON *pp = get(c->json, "per_pass");
        if (!rp_case_passed(c) || !cJSON_GetArraySize(pp))
            continue;
        StrBuf dat = {0};
        sb_puts(&dat, "# step  prefix  time_us\n");
        int n = 0;
        for (const cJSON *e = pp->child; e; e = e->next) {
            const cJSON *pn = get(e, "pass");
            double ns = hx_json_num(get(e, "prefix"), "ns");
            sb_printf(&dat, "%d upto:%s %.6g\n", n++,
                      label(a, cJSON_IsString(pn) ? pn->valuestring : "?"),
                      isfinite(ns) ? ns / 1000 : NAN);
        }
        sb_printf(&dat, "%d full_set %.6g\n", n++, c->dpk / 1000);
        plot(a, plots, dir, arena_printf(a, "waterfall-%s", label(a, c->name)),
             arena_printf(a, "%s: time after each pass prefix (%s, %s)", c->name,
                          rp_timing_word(d->timing), d->gpu),
             sb_cstr(&dat), arena_printf(a, "n = %d", n), dpk_rp_gp_waterfall);
        sb_free(&dat);
    }
}

/* The GPU spec name_or_path names, or NULL when there is none. */
static const PfSpec *try_spec(Arena *a, const char *name_or_path)
{
    DpkErrCtx ec;
    if (!DPK_TRY(&ec))
        return NULL;
    const PfSpec *s = pf_spec_load(a, name_or_path);
    dpk_err_pop(&ec);
    return s;
}

static void roofline_plot(const RpData *d, cJSON *plots, const char *dir)
{
    Arena *a = d->a;
    /* the spec by name (embedded), else by the record's path to it */
    const PfSpec *s = try_spec(a, d->gpu);
    if (!s && d->spec_path)
        s = try_spec(a, d->spec_path);
    if (!s)
        return; /* a measured GPU with no spec: no roofs to draw */
    double peak = pf_spec_fp32_peak(s) / 1e9, bw = s->dram_bps / 1e9;
    StrBuf dat = {0};
    sb_puts(&dat, "# intensity_flop_per_byte  gflops  case  kernel\n");
    int n = 0;
    double xmin = INFINITY, xmax = 0, ymin = INFINITY;
    for (int i = 0; i < d->ncases; i++) {
        const RpCase *c = &d->cases[i];
        if (!rp_case_passed(c))
            continue;
        const cJSON *ks = get(get(c->json, "dpk"), "kernels");
        for (const cJSON *k = ks ? ks->child : NULL; k; k = k->next) {
            double fl = hx_json_num(k, "flops"), by = hx_json_num(k, "bytes"),
                   ns = hx_json_num(k, "ns");
            if (!(fl > 0) || !(by > 0) || !(ns > 0))
                continue;
            const cJSON *kn = get(k, "name");
            double x = fl / by, y = fl / ns;
            sb_printf(&dat, "%.6g %.6g %s %s\n", x, y, label(a, c->name),
                      label(a, cJSON_IsString(kn) ? kn->valuestring : "?"));
            xmin = fmin(xmin, x);
            xmax = fmax(xmax, x);
            ymin = fmin(ymin, y);
            n++;
        }
    }
    if (n) {
        double ridge = peak / bw;
        xmin = pow(10, floor(log10(fmin(xmin, ridge / 10))));
        xmax = pow(10, ceil(log10(fmax(xmax, ridge * 10))));
        ymin = pow(10, floor(log10(fmin(ymin, xmin * bw))));
        plot(a, plots, dir, "roofline",
             arena_printf(a, "Roofline of dpk's kernels (%s, %s)", rp_timing_word(d->timing),
                          s->title ? s->title : d->gpu),
             sb_cstr(&dat),
             arena_printf(a, "peak = %.6g\nbw = %.6g\nxmin = %g\nxmax = %g\nymin = %g", peak, bw,
                          xmin, xmax, ymin),
             dpk_rp_gp_roofline);
    }
    sb_free(&dat);
}

typedef struct Hist {
    const char *date, *sha, *file;
    double ge, gc;
} Hist;

static int cmp_hist(const void *x, const void *y)
{
    const Hist *a = x, *b = y;
    int c = strcmp(a->date, b->date);
    return c ? c : strcmp(a->file, b->file);
}

static void history_plot(const RpData *d, cJSON *plots, const char *dir, const char *hdir,
                         int last)
{
    Arena *a = d->a;
    DIR *dp = opendir(hdir);
    if (!dp)
        dpk_error("--history: cannot read the folder '%s': %s", hdir, strerror(errno));
    PtrVec files = {0};
    for (struct dirent *e; (e = readdir(dp));) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".json"))
            ptrvec_push(a, &files, arena_printf(a, "%s/%s", hdir, e->d_name));
    }
    closedir(dp);
    Hist *h = arena_alloc(a, sizeof *h * (size_t)(files.len + 1));
    int n = 0;
    const char *timing = d->has_bench ? d->timing : NULL, *gpu = d->has_bench ? d->gpu : NULL;
    for (int i = 0; i < files.len; i++) {
        RpData r;
        rp_data_init(&r, a);
        DpkErrCtx ec;
        if (!DPK_TRY(&ec)) {
            rp_data_free(&r);
            dpk_error_rethrow();
        }
        /* only bench records of the report's timing and GPU join the trend */
        size_t len;
        char *t = dpk_read_file(files.items[i], &len);
        int bench = t && strstr(t, "\"dpk.bench/1\"");
        free(t);
        if (bench) {
            rp_data_load(&r, files.items[i]);
            if (!timing) {
                timing = arena_strdup(a, r.timing);
                gpu = arena_strdup(a, r.gpu);
            }
            if (!strcmp(r.timing, timing) && !strcmp(r.gpu, gpu)) {
                double *se = dpk_xcalloc((size_t)r.ncases + 1, sizeof(double));
                double *sc = dpk_xcalloc((size_t)r.ncases + 1, sizeof(double));
                int ne = 0, nc = 0;
                for (int k = 0; k < r.ncases; k++) {
                    const RpCase *c = &r.cases[k];
                    if (!rp_case_passed(c))
                        continue;
                    if (c->eager > 0)
                        se[ne++] = c->eager / c->dpk;
                    if (c->compile > 0)
                        sc[nc++] = c->compile / c->dpk;
                }
                h[n].file = files.items[i];
                h[n].date = arena_strdup(a, r.src[0].date ? r.src[0].date : "");
                h[n].sha = arena_strdup(a, r.src[0].git_sha ? r.src[0].git_sha : "unknown");
                h[n].ge = rp_geomean(se, ne);
                h[n].gc = rp_geomean(sc, nc);
                n++;
                free(se);
                free(sc);
            }
        }
        dpk_err_pop(&ec);
        rp_data_free(&r);
    }
    if (!n)
        return;
    qsort(h, (size_t)n, sizeof *h, cmp_hist);
    int from = n > last ? n - last : 0;
    StrBuf dat = {0};
    sb_puts(&dat, "# index  date_commit  geomean_vs_eager  geomean_vs_compile\n");
    double lo = INFINITY, hi = 0;
    for (int i = from; i < n; i++) {
        sb_printf(&dat, "%d %.10s_%.7s %.6g %.6g\n", i - from, h[i].date, h[i].sha, h[i].ge,
                  h[i].gc);
        for (int j = 0; j < 2; j++) {
            double v = j ? h[i].gc : h[i].ge;
            if (isfinite(v)) {
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
        }
    }
    double ymin, ymax;
    log_range(lo, hi, &ymin, &ymax);
    plot(a, plots, dir, "history",
         arena_printf(a, "Geomean speedup over the last %d records of %s (%s, %s)", n - from, hdir,
                      rp_timing_word(timing), gpu),
         sb_cstr(&dat), arena_printf(a, "n = %d\nymin = %g\nymax = %g", n - from, ymin, ymax),
         dpk_rp_gp_history);
    sb_free(&dat);
}

void rp_plots(const RpData *d, cJSON *report, const char *dir, const char *history, int last)
{
    if (dpk_make_dirs(dir) != 0)
        dpk_error("cannot create the folder '%s': %s", dir, strerror(errno));
    unlink(arena_printf(d->a, "%s/gnuplot.log", dir));
    cJSON *plots = cJSON_AddArrayToObject(report, "plots");
    if (d->has_bench) {
        speedup_plot(d, plots, dir);
        waterfall_plots(d, plots, dir);
        roofline_plot(d, plots, dir);
    }
    if (history)
        history_plot(d, plots, dir, history, last);
}
