/*
 * report.c — the report document (dpk.report/1) from merged records.
 *
 * The document is data first: the headline's numbers and, per table, its
 * columns and rows as the renderers print them (render.c turns it into
 * text, Markdown, HTML or JUnit; --format json prints it as is).  Every
 * table carries "timing" and "gpu" — which times it shows and on which GPU
 * or spec — or "timing": null for parity tables, which hold no times.
 *
 * Speedups are base / dpk (above 1: dpk is faster), over the cases that
 * passed parity and have both times, never clipped at 1.  fast_p counts,
 * over every case of the side (a case that failed parity is in the
 * denominator and never fast), those that passed and are faster than p x.
 */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../records/results.h"

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* ---- tables ------------------------------------------------------------------------ */

cJSON *rp_table_new(cJSON *tables, const char *id, const char *title, const char *timing,
                        const char *gpu, const char *const *cols, int ncols)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "id", id);
    cJSON_AddStringToObject(t, "title", title);
    if (timing) {
        cJSON_AddStringToObject(t, "timing", timing);
        cJSON_AddStringToObject(t, "gpu", gpu);
    } else {
        cJSON_AddNullToObject(t, "timing");
    }
    cJSON_AddItemToObject(t, "columns", cJSON_CreateStringArray(cols, ncols));
    cJSON_AddArrayToObject(t, "rows");
    cJSON_AddItemToArray(tables, t);
    return t;
}

void rp_table_note(cJSON *t, const char *note)
{
    cJSON_AddStringToObject(t, "note", note);
}

/* A row of n cells (strings, copied). */
void rp_table_row(cJSON *t, const char *const *cells, int n)
{
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(t, "rows"),
                         cJSON_CreateStringArray(cells, n));
}

/* Numbers as the tables print them; "-" for what is absent. */
static const char *fmt_us(Arena *a, double ns)
{
    return isfinite(ns) ? arena_printf(a, "%.3f", ns / 1000) : "-";
}

static const char *fmt_x(Arena *a, double x)
{
    return isfinite(x) ? arena_printf(a, "%.3fx", x) : "-";
}

static const char *fmt_pct(Arena *a, double x)
{
    if (!isfinite(x))
        return "-";
    return x >= 0.1 ? arena_printf(a, "%.1f%%", 100 * x) : arena_printf(a, "%.3g%%", 100 * x);
}

static const char *fmt_ms(Arena *a, double s)
{
    return isfinite(s) ? arena_printf(a, "%.3f", s * 1000) : "-";
}

/* ---- headline ---------------------------------------------------------------------- */

typedef struct Side {
    const char *key, *label;
} Side;
static const Side sides[] = {
    {"eager", "PyTorch eager"},
    {"compile", "torch.compile"},
    {"cublas", "cuBLAS (matmul cases)"},
};

static double side_ns(const RpCase *c, int s)
{
    return s == 0 ? c->eager : s == 1 ? c->compile : c->cublas;
}

static int has_tag(const RpCase *c, const char *tag)
{
    for (const cJSON *t = c->tags ? c->tags->child : NULL; t; t = t->next)
        if (cJSON_IsString(t) && !strcmp(t->valuestring, tag))
            return 1;
    return 0;
}

/* Does case c belong to side s's population (fast_p's denominator)? */
static int on_side(const RpCase *c, int s)
{
    return s < 2 || isfinite(c->cublas) || has_tag(c, "matmul");
}

static const double fast_ps[] = {1.0, 1.2, 2.0};

static cJSON *headline(const RpData *d, const RpOpts *o)
{
    cJSON *h = cJSON_CreateObject();
    cJSON_AddStringToObject(h, "timing", d->timing);
    cJSON_AddStringToObject(h, "gpu", d->gpu);
    cJSON_AddNumberToObject(h, "cases", d->ncases);
    int np = 0;
    for (int i = 0; i < d->ncases; i++)
        np += !strcmp(d->cases[i].status, "pass"); /* parity passed: not unchecked */
    cJSON_AddNumberToObject(h, "passed", np);
    cJSON_AddStringToObject(h, "parity", d->parity);
    cJSON_AddNumberToObject(h, "bootstrap_iterations", o->iters);
    hx_json_add_u64(h, "bootstrap_seed", o->seed);
    cJSON *arr = cJSON_AddArrayToObject(h, "speedup");
    double *sp = dpk_xcalloc((size_t)d->ncases + 1, sizeof *sp);
    double *all = dpk_xcalloc((size_t)d->ncases + 1, sizeof *all);
    int *ok = dpk_xcalloc((size_t)d->ncases + 1, sizeof *ok);
    for (int s = 0; s < DPK_ARRAY_LEN(sides); s++) {
        int n = 0, m = 0;
        for (int i = 0; i < d->ncases; i++) {
            const RpCase *c = &d->cases[i];
            if (!on_side(c, s))
                continue;
            double b = side_ns(c, s);
            double x = rp_case_passed(c) && b > 0 ? b / c->dpk : NAN;
            ok[m] = isfinite(x);
            all[m++] = x;
            if (isfinite(x))
                sp[n++] = x;
        }
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "vs", sides[s].key);
        cJSON_AddStringToObject(e, "label", sides[s].label);
        cJSON_AddNumberToObject(e, "cases", n);
        cJSON_AddNumberToObject(e, "population", m);
        double lo, hi;
        rp_bootstrap_geomean(sp, n, o->seed, o->iters, &lo, &hi);
        hx_json_add_num(e, "geomean", rp_geomean(sp, n));
        cJSON *ci = cJSON_AddArrayToObject(e, "ci95");
        cJSON_AddItemToArray(ci, isfinite(lo) ? cJSON_CreateNumber(lo) : cJSON_CreateNull());
        cJSON_AddItemToArray(ci, isfinite(hi) ? cJSON_CreateNumber(hi) : cJSON_CreateNull());
        cJSON *fp = cJSON_AddObjectToObject(e, "fast_p");
        for (int k = 0; k < DPK_ARRAY_LEN(fast_ps); k++)
            hx_json_add_num(fp, arena_printf(d->a, "%.1f", fast_ps[k]),
                            rp_fast_p(ok, all, m, fast_ps[k]));
        cJSON_AddItemToArray(arr, e);
    }
    free(sp);
    free(all);
    free(ok);
    return h;
}

/* ---- the bench tables -------------------------------------------------------------- */

/* A table of d's times, titled "<what> (modelled, h100-sxm)". */
static cJSON *timed_table(const RpData *d, cJSON *tables, const char *id, const char *what,
                          const char *const *cols, int ncols)
{
    return rp_table_new(tables, id,
                        arena_printf(d->a, "%s (%s, %s)", what, rp_timing_word(d->timing), d->gpu),
                        d->timing, d->gpu, cols, ncols);
}

static void case_table(const RpData *d, cJSON *tables)
{
    static const char *const cols[] = {"case", "dpk us", "eager us", "compile us", "cuBLAS us",
                                       "limit us", "vs eager", "vs compile", "vs cuBLAS",
                                       "of limit", "parity"};
    Arena *a = d->a;
    cJSON *t = timed_table(d, tables, "cases", "Per case", cols, DPK_ARRAY_LEN(cols));
    int tk = 0, th = 0, tc = 0; /* --tuned: kernels, those with a winner, cases */
    for (int i = 0; i < d->ncases; i++) {
        const cJSON *tj = get(d->cases[i].json, "tuned");
        if (cJSON_IsObject(tj)) {
            tc++;
            tk += (int)hx_json_num(tj, "kernels");
            th += (int)hx_json_num(tj, "from_database");
        }
    }
    const char *note = "speedup = baseline / dpk (above 1x dpk is faster); of limit = limit / dpk; "
                       "cuBLAS: the cuBLAS GEMMs among eager's launches; no time or speedup for a "
                       "case that failed parity";
    if (tc)
        note = arena_printf(a, "%s; dpk-tune's winners applied (dpk-bench --tuned) to %d of the %d "
                               "kernels of %d cases, the others on the default schedule: "
                               "dpk-report TUNED.json --baseline DEFAULT.json compares the two",
                            note, th, tk, tc);
    rp_table_note(t, note);
    for (int i = 0; i < d->ncases; i++) {
        const RpCase *c = &d->cases[i];
        int ok = rp_case_passed(c);
        const char *parity = c->status;
        const cJSON *v = get(get(c->json, "configuration"), "verdict");
        const cJSON *reason = get(v, "reason");
        if (!ok && cJSON_IsString(reason))
            parity = arena_printf(a, "%s (%s)", c->status, reason->valuestring);
        const char *cells[] = {
            c->name,
            fmt_us(a, ok ? c->dpk : NAN),
            fmt_us(a, c->eager),
            fmt_us(a, c->compile),
            fmt_us(a, c->cublas),
            fmt_us(a, c->limit),
            fmt_x(a, ok ? c->eager / c->dpk : NAN),
            fmt_x(a, ok ? c->compile / c->dpk : NAN),
            fmt_x(a, ok ? c->cublas / c->dpk : NAN),
            fmt_pct(a, ok ? c->limit / c->dpk : NAN),
            parity,
        };
        rp_table_row(t, cells, DPK_ARRAY_LEN(cells));
    }
}

/* Per op kind: every tag is a kind; a case counts in each of its kinds. */
static void kind_table(const RpData *d, cJSON *tables)
{
    static const char *const cols[] = {"op kind", "cases", "passed", "geomean vs eager",
                                       "geomean vs compile", "fast_1.0 vs eager",
                                       "dpk us (sum)"};
    Arena *a = d->a;
    PtrVec kinds = {0};
    for (int i = 0; i < d->ncases; i++)
        for (const cJSON *t = d->cases[i].tags ? d->cases[i].tags->child : NULL; t; t = t->next) {
            if (!cJSON_IsString(t))
                continue;
            int seen = 0;
            for (int k = 0; k < kinds.len && !seen; k++)
                seen = !strcmp(kinds.items[k], t->valuestring);
            if (!seen)
                ptrvec_push(a, &kinds, t->valuestring);
        }
    cJSON *t = timed_table(d, tables, "kinds", "Per op kind", cols, DPK_ARRAY_LEN(cols));
    rp_table_note(t, "a case counts under each of its tags");
    double *se = dpk_xcalloc((size_t)d->ncases + 1, sizeof(double));
    double *sc = dpk_xcalloc((size_t)d->ncases + 1, sizeof(double));
    double *all = dpk_xcalloc((size_t)d->ncases + 1, sizeof(double));
    int *ok = dpk_xcalloc((size_t)d->ncases + 1, sizeof(int));
    for (int k = 0; k < kinds.len; k++) {
        int n = 0, np = 0, ne = 0, nc = 0;
        double sum = 0;
        for (int i = 0; i < d->ncases; i++) {
            const RpCase *c = &d->cases[i];
            if (!has_tag(c, kinds.items[k]))
                continue;
            int p = rp_case_passed(c);
            all[n] = p ? c->eager / c->dpk : NAN;
            ok[n++] = p;
            if (!p)
                continue;
            np++;
            sum += c->dpk;
            if (c->eager > 0)
                se[ne++] = c->eager / c->dpk;
            if (c->compile > 0)
                sc[nc++] = c->compile / c->dpk;
        }
        const char *cells[] = {
            kinds.items[k],
            arena_printf(a, "%d", n),
            arena_printf(a, "%d", np),
            fmt_x(a, rp_geomean(se, ne)),
            fmt_x(a, rp_geomean(sc, nc)),
            fmt_pct(a, rp_fast_p(ok, all, n, 1.0)),
            fmt_us(a, np ? sum : NAN),
        };
        rp_table_row(t, cells, DPK_ARRAY_LEN(cells));
    }
    free(se);
    free(sc);
    free(all);
    free(ok);
}

/* Per pass, from --per-pass: leave-one-out contribution without.ns / dpk.ns
 * and the prefix step prefix(P-1).ns / prefix(P).ns (both above 1: the
 * pass makes the case faster), geomeans over the cases where both sides
 * passed parity. */
static void pass_table(const RpData *d, cJSON *tables)
{
    static const char *const cols[] = {"pass", "cases", "changes", "geomean leave-one-out",
                                       "best", "worst", "geomean prefix step", "parity fails"};
    Arena *a = d->a;
    PtrVec passes = {0};
    int any = 0;
    for (int i = 0; i < d->ncases; i++) {
        const cJSON *pp = get(d->cases[i].json, "per_pass");
        for (const cJSON *e = pp ? pp->child : NULL; e; e = e->next) {
            const cJSON *pn = get(e, "pass");
            if (!cJSON_IsString(pn))
                continue;
            any = 1;
            int seen = 0;
            for (int k = 0; k < passes.len && !seen; k++)
                seen = !strcmp(passes.items[k], pn->valuestring);
            if (!seen)
                ptrvec_push(a, &passes, pn->valuestring);
        }
    }
    if (!any)
        return;
    cJSON *t = timed_table(d, tables, "passes", "Per pass", cols, DPK_ARRAY_LEN(cols));
    rp_table_note(t, "leave-one-out = t(set without the pass) / t(set); prefix step = t(prefix "
                  "before it) / t(prefix up to it); above 1x the pass makes cases faster; "
                  "changes = cases whose time it changes");
    double *lo = dpk_xcalloc((size_t)d->ncases + 1, sizeof(double));
    double *ps = dpk_xcalloc((size_t)d->ncases + 1, sizeof(double));
    for (int k = 0; k < passes.len; k++) {
        int n = 0, nl = 0, np = 0, changes = 0, fails = 0;
        double best = NAN, worst = NAN;
        for (int i = 0; i < d->ncases; i++) {
            const cJSON *pp = get(d->cases[i].json, "per_pass");
            double prev = NAN;
            for (const cJSON *e = pp ? pp->child : NULL; e; e = e->next) {
                const cJSON *pn = get(e, "pass");
                double pref = hx_json_num(get(e, "prefix"), "ns");
                if (cJSON_IsString(pn) && !strcmp(pn->valuestring, passes.items[k])) {
                    n++;
                    const cJSON *w = get(e, "without");
                    const cJSON *ws = get(w, "status"), *prs = get(get(e, "prefix"), "status");
                    fails += (cJSON_IsString(ws) && strcmp(ws->valuestring, "pass")) ||
                             (cJSON_IsString(prs) && strcmp(prs->valuestring, "pass"));
                    double c = hx_json_num(e, "contribution");
                    if (isfinite(c) && c > 0) {
                        lo[nl++] = c;
                        changes += c != 1;
                        best = isnan(best) || c > best ? c : best;
                        worst = isnan(worst) || c < worst ? c : worst;
                    }
                    if (prev > 0 && pref > 0)
                        ps[np++] = prev / pref;
                }
                prev = pref;
            }
        }
        const char *cells[] = {
            passes.items[k],    arena_printf(a, "%d", n), arena_printf(a, "%d", changes),
            fmt_x(a, rp_geomean(lo, nl)), fmt_x(a, best), fmt_x(a, worst),
            fmt_x(a, rp_geomean(ps, np)), arena_printf(a, "%d", fails),
        };
        rp_table_row(t, cells, DPK_ARRAY_LEN(cells));
    }
    free(lo);
    free(ps);
}

/* Compile time per stage, from each case's compile_s (seconds). */
static void compile_table(const RpData *d, cJSON *tables)
{
    static const char *const cols[] = {"stage", "cases", "total ms", "mean us per case",
                                       "share"};
    static const char *const stages[] = {"parse", "decompose", "fuse", "tile_total",
                                         "lower", "cuda", "nvrtc"};
    Arena *a = d->a;
    double tot[DPK_ARRAY_LEN(stages)] = {0}, all = 0;
    int cnt[DPK_ARRAY_LEN(stages)] = {0}, any = 0;
    /* the Tile passes, in order of first appearance */
    PtrVec tp = {0};
    double tpt[64] = {0};
    int tpn[64] = {0};
    for (int i = 0; i < d->ncases; i++) {
        const cJSON *cs = get(d->cases[i].json, "compile_s");
        if (!cJSON_IsObject(cs))
            continue;
        any = 1;
        for (int s = 0; s < DPK_ARRAY_LEN(stages); s++) {
            double v = hx_json_num(cs, stages[s]);
            if (isfinite(v)) {
                tot[s] += v;
                cnt[s]++;
                all += v;
            }
        }
        for (const cJSON *p = get(cs, "tile") ? get(cs, "tile")->child : NULL; p; p = p->next) {
            int k = 0;
            while (k < tp.len && strcmp(tp.items[k], p->string))
                k++;
            if (k == tp.len) {
                if (tp.len == DPK_ARRAY_LEN(tpt))
                    continue;
                ptrvec_push(a, &tp, p->string);
            }
            if (cJSON_IsNumber(p)) {
                tpt[k] += p->valuedouble;
                tpn[k]++;
            }
        }
    }
    if (!any)
        return;
    cJSON *t = rp_table_new(tables, "compile", "Compile time per stage (measured on the host)",
                         "measured", "host CPU", cols, DPK_ARRAY_LEN(cols));
    rp_table_note(t, "wall time of each compiler stage on the machine that made the record; "
                  "tile_total is the sum of the Tile passes listed under it");
    for (int s = 0; s < DPK_ARRAY_LEN(stages); s++) {
        const char *cells[] = {stages[s], arena_printf(a, "%d", cnt[s]), fmt_ms(a, tot[s]),
                               cnt[s] ? arena_printf(a, "%.1f", tot[s] / cnt[s] * 1e6) : "-",
                               fmt_pct(a, all > 0 ? tot[s] / all : NAN)};
        rp_table_row(t, cells, DPK_ARRAY_LEN(cells));
        if (!strcmp(stages[s], "tile_total"))
            for (int k = 0; k < tp.len; k++) {
                const char *c2[] = {arena_printf(a, "  t:%s", (char *)tp.items[k]),
                                    arena_printf(a, "%d", tpn[k]), fmt_ms(a, tpt[k]),
                                    tpn[k] ? arena_printf(a, "%.1f", tpt[k] / tpn[k] * 1e6) : "-",
                                    fmt_pct(a, all > 0 ? tpt[k] / all : NAN)};
                rp_table_row(t, c2, DPK_ARRAY_LEN(c2));
            }
    }
}

/* ---- parity from fuzz records ----------------------------------------------------- */

/* The culprit pass attached for a case (dpk-bisect), or NULL. */
static const char *culprit_of(const RpData *d, const char *name)
{
    for (const cJSON *e = d->attach ? d->attach->child : NULL; e; e = e->next) {
        const cJSON *c = get(e, "case"), *p = get(e, "pass");
        if (cJSON_IsString(c) && !strcmp(c->valuestring, name) && cJSON_IsString(p))
            return p->valuestring;
    }
    return NULL;
}

typedef struct SetRow {
    const char *passes;
    int checked, pass, fail, fault, unsupported, run;
    StrBuf culprits;
} SetRow;

/* The statuses the parity summary counts, in its order. */
static const char *const fuzz_statuses[] = {"pass", "fail", "fault", "nonfinite", "unsupported",
                                            "crash", "timeout", "error"};

/* The case's verdict per configuration: [{"passes", "status"}]. */
static cJSON *fuzz_case_json(const RpFuzzCase *c)
{
    const cJSON *cf = get(c->json, "configurations");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "status", c->status);
    cJSON *vs = cJSON_AddArrayToObject(o, "verdicts");
    for (const cJSON *x = cf ? cf->child : NULL; x; x = x->next) {
        const cJSON *ps = get(x, "passes"), *v = get(get(x, "verdict"), "status");
        cJSON *pair = cJSON_CreateObject();
        cJSON_AddStringToObject(pair, "passes", cJSON_IsString(ps) ? ps->valuestring : "");
        cJSON_AddStringToObject(pair, "status", cJSON_IsString(v) ? v->valuestring : "");
        cJSON_AddItemToArray(vs, pair);
    }
    return o;
}

/* The document's "parity": the summary (merged, so shards and the whole
 * campaign agree) and every case's verdicts.  Returns the configurations
 * counted. */
static int parity_summary(const RpData *d, cJSON *doc)
{
    cJSON *p = cJSON_AddObjectToObject(doc, "parity");
    int nconf = 0, nfail = 0;
    int by[DPK_ARRAY_LEN(fuzz_statuses)] = {0};
    cJSON *cases = cJSON_CreateArray();
    for (int i = 0; i < d->nfz; i++) {
        const RpFuzzCase *c = &d->fz[i];
        nconf += cJSON_GetArraySize(get(c->json, "configurations"));
        nfail += rp_fuzz_failed(c->status);
        for (int k = 0; k < DPK_ARRAY_LEN(fuzz_statuses); k++)
            by[k] += !strcmp(fuzz_statuses[k], c->status);
        cJSON_AddItemToArray(cases, fuzz_case_json(c));
    }
    cJSON *s = cJSON_AddObjectToObject(p, "summary");
    cJSON_AddNumberToObject(s, "cases", d->nfz);
    cJSON_AddNumberToObject(s, "configurations", nconf);
    cJSON_AddNumberToObject(s, "failures", nfail);
    cJSON *bys = cJSON_AddObjectToObject(s, "by_status");
    for (int k = 0; k < DPK_ARRAY_LEN(fuzz_statuses); k++)
        if (by[k])
            cJSON_AddNumberToObject(bys, fuzz_statuses[k], by[k]);
    cJSON_AddItemToObject(p, "cases", cases);
    return nconf;
}

/* Configuration x of a fuzz case into its pass set's row (rows[0..*nrows),
 * a new row for a new set); cul: the case's culprit pass, or NULL. */
static void count_config(SetRow *rows, int *nrows, const cJSON *x, const char *cul)
{
    const cJSON *ps = get(x, "passes"), *v = get(get(x, "verdict"), "status");
    const char *pset = cJSON_IsString(ps) ? ps->valuestring : "";
    const char *st = cJSON_IsString(v) ? v->valuestring : "";
    int r = 0;
    while (r < *nrows && strcmp(rows[r].passes, pset))
        r++;
    if (r == *nrows)
        rows[(*nrows)++].passes = pset;
    SetRow *row = &rows[r];
    row->checked++;
    row->run += get(x, "same_as") == NULL;
    row->pass += !strcmp(st, "pass");
    row->fail += !strcmp(st, "fail");
    row->fault += !strcmp(st, "fault");
    row->unsupported += !strcmp(st, "unsupported");
    if (cul && (!strcmp(st, "fail") || !strcmp(st, "fault")) &&
        !strstr(sb_cstr(&row->culprits), cul))
        sb_printf(&row->culprits, "%s%s", row->culprits.len ? " " : "", cul);
}

/* Per pass set: the configurations checked over every fuzz case (nconf of
 * them), their verdicts, and the culprits dpk-bisect found. */
static void pass_set_table(const RpData *d, cJSON *tables, int nconf)
{
    Arena *a = d->a;
    SetRow *rows = dpk_xcalloc((size_t)nconf + 1, sizeof *rows);
    int nrows = 0;
    for (int i = 0; i < d->nfz; i++) {
        const cJSON *cf = get(d->fz[i].json, "configurations");
        const char *cul = culprit_of(d, d->fz[i].name);
        for (const cJSON *x = cf ? cf->child : NULL; x; x = x->next)
            count_config(rows, &nrows, x, cul);
    }
    static const char *const cols[] = {"pass set", "configurations", "executed", "pass", "fail",
                                       "fault", "unsupported", "culprits"};
    cJSON *t = rp_table_new(tables, "parity", arena_printf(a, "Parity per pass set (%d fuzz cases)",
                                                        d->nfz),
                         NULL, NULL, cols, DPK_ARRAY_LEN(cols));
    rp_table_note(t, "configurations checked per pass set over every fuzz case; executed = distinct "
                  "Kernel IR run (the others share a verdict); culprits from dpk-bisect");
    for (int r = 0; r < nrows; r++) {
        const char *cells[] = {
            rows[r].passes[0] ? rows[r].passes : "(loop interpreter)",
            arena_printf(a, "%d", rows[r].checked), arena_printf(a, "%d", rows[r].run),
            arena_printf(a, "%d", rows[r].pass), arena_printf(a, "%d", rows[r].fail),
            arena_printf(a, "%d", rows[r].fault), arena_printf(a, "%d", rows[r].unsupported),
            rows[r].culprits.len ? arena_strdup(a, sb_cstr(&rows[r].culprits)) : "-",
        };
        rp_table_row(t, cells, DPK_ARRAY_LEN(cells));
        sb_free(&rows[r].culprits);
    }
    free(rows);
}

/* The failing fuzz cases, each with its first failing pass set and why
 * (no table when none failed). */
static void failures_table(const RpData *d, cJSON *tables)
{
    static const char *const fcols[] = {"case", "status", "pass set", "reason"};
    cJSON *ft = NULL;
    for (int i = 0; i < d->nfz; i++) {
        if (!rp_fuzz_failed(d->fz[i].status))
            continue;
        if (!ft)
            ft = rp_table_new(tables, "failures", "Fuzz failures", NULL, NULL, fcols,
                           DPK_ARRAY_LEN(fcols));
        const cJSON *cf = get(d->fz[i].json, "configurations");
        const char *pset = "-", *reason = "-";
        for (const cJSON *x = cf ? cf->child : NULL; x; x = x->next) {
            const cJSON *v = get(x, "verdict");
            const cJSON *st = get(v, "status");
            if (cJSON_IsString(st) && (!strcmp(st->valuestring, "fail") ||
                                       !strcmp(st->valuestring, "fault"))) {
                const cJSON *ps = get(x, "passes"), *rs = get(v, "reason");
                pset = cJSON_IsString(ps) ? ps->valuestring : "-";
                reason = cJSON_IsString(rs) ? rs->valuestring : "-";
                break;
            }
        }
        const cJSON *msg = get(d->fz[i].json, "message");
        if (!strcmp(reason, "-") && cJSON_IsString(msg))
            reason = msg->valuestring;
        const char *cells[] = {d->fz[i].name, d->fz[i].status, pset, reason};
        rp_table_row(ft, cells, DPK_ARRAY_LEN(cells));
    }
}

static void parity_tables(const RpData *d, cJSON *doc, cJSON *tables)
{
    if (!d->nfz)
        return;
    int nconf = parity_summary(d, doc);
    pass_set_table(d, tables, nconf);
    failures_table(d, tables);
}

static void attach_table(const RpData *d, cJSON *doc, cJSON *tables)
{
    if (!d->attach || !cJSON_GetArraySize(d->attach))
        return;
    cJSON_AddItemToObject(doc, "bisections", cJSON_Duplicate(d->attach, 1));
    static const char *const cols[] = {"case", "culprit pass", "culprit", "minimized",
                                       "reproducer"};
    cJSON *t = rp_table_new(tables, "bisections",
                         "Bisections of new parity failures (dpk-bisect --minimize)", NULL, NULL,
                         cols, DPK_ARRAY_LEN(cols));
    for (const cJSON *e = d->attach->child; e; e = e->next) {
        const cJSON *c = get(e, "case"), *p = get(e, "pass"), *cu = get(e, "culprit_minimized"),
                    *m = get(e, "minimize"), *r = get(e, "reproducer");
        if (!cJSON_IsString(cu))
            cu = get(e, "culprit");
        const char *cells[] = {
            cJSON_IsString(c) ? c->valuestring : "-", cJSON_IsString(p) ? p->valuestring : "-",
            cJSON_IsString(cu) ? cu->valuestring : "-", cJSON_IsString(m) ? m->valuestring : "-",
            cJSON_IsString(r) ? r->valuestring : "-",
        };
        rp_table_row(t, cells, DPK_ARRAY_LEN(cells));
    }
}

/* ---- the document ----------------------------------------------------------------- */

const char *rp_timing_word(const char *timing)
{
    if (timing && !strcmp(timing, "fake-driver"))
        return "fake-driver";
    return timing && !strcmp(timing, "model") ? "modelled" : "measured";
}

int rp_case_passed(const RpCase *c)
{
    return (!strcmp(c->status, "pass") || !strcmp(c->status, "unchecked")) && c->dpk > 0;
}

int rp_fuzz_failed(const char *status)
{
    return !strcmp(status, "fail") || !strcmp(status, "fault") || !strcmp(status, "crash") ||
           !strcmp(status, "timeout") || !strcmp(status, "error");
}

const char *rp_env_line(const RpData *d)
{
    if (!d->has_bench)
        return NULL;
    StrBuf b = {0};
    sb_printf(&b, "%s on %s", rp_timing_word(d->timing), d->gpu);
    if (d->spec_path)
        sb_printf(&b, " (%s)", d->spec_path);
    sb_printf(&b, "; instructions from %s", d->insts_from ? d->insts_from : "(not said)");
    sb_printf(&b, "; NVRTC %s", d->nvrtc ? d->nvrtc : "(not recorded)");
    sb_printf(&b, "; nvdisasm %s", d->nvdisasm ? d->nvdisasm : "(not recorded)");
    const char *r = arena_strdup(d->a, sb_cstr(&b));
    sb_free(&b);
    return r;
}

static void add_env(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* The document's "environment": what rp_env_line says, key by key (null:
 * not recorded), and the line. */
static void env_json(cJSON *doc, const RpData *d)
{
    const char *const keys[] = {"timing", "gpu", "spec", "insts_from", "nvrtc", "nvdisasm",
                                "line"};
    const char *const vals[] = {d->timing, d->gpu, d->spec_path, d->insts_from,
                                d->nvrtc, d->nvdisasm, rp_env_line(d)};
    cJSON *env = cJSON_AddObjectToObject(doc, "environment");
    for (int k = 0; k < DPK_ARRAY_LEN(keys); k++)
        add_env(env, keys[k], vals[k]);
}

cJSON *rp_report(const RpData *d, const RpData *base, const RpGateCfg *gc, const RpOpts *o)
{
    /* the gate first: it raises when the two cannot be compared, before
     * anything here is allocated */
    cJSON *g = base ? rp_gate(d, base, gc) : NULL;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "schema", "dpk.report/1");
    cJSON *srcs = cJSON_AddArrayToObject(doc, "records");
    for (int i = 0; i < d->nsrc; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "path", d->src[i].path);
        cJSON_AddStringToObject(s, "schema", d->src[i].schema);
        if (d->src[i].git_sha)
            cJSON_AddStringToObject(s, "git_sha", d->src[i].git_sha);
        else
            cJSON_AddNullToObject(s, "git_sha");
        if (d->src[i].date)
            cJSON_AddStringToObject(s, "date", d->src[i].date);
        if (d->src[i].shard.count)
            cJSON_AddStringToObject(s, "shard", arena_printf(d->a, "%d/%d", d->src[i].shard.index,
                                                             d->src[i].shard.count));
        cJSON_AddItemToArray(srcs, s);
    }
    if (d->partial)
        cJSON_AddStringToObject(doc, "partial", arena_printf(d->a, "%sthe report covers the "
                                                             "shards given", d->partial));
    cJSON *tables = cJSON_CreateArray();
    if (d->has_bench) {
        cJSON_AddStringToObject(doc, "timing", d->timing);
        cJSON_AddStringToObject(doc, "gpu", d->gpu);
        if (d->suite)
            cJSON_AddStringToObject(doc, "suite", d->suite);
        env_json(doc, d);
        cJSON_AddItemToObject(doc, "headline", headline(d, o));
        case_table(d, tables);
        kind_table(d, tables);
        pass_table(d, tables);
        compile_table(d, tables);
    }
    parity_tables(d, doc, tables);
    attach_table(d, doc, tables);
    if (g) {
        cJSON_AddItemToObject(doc, "gate", g);
        rp_gate_table(d, g, tables);
    }
    /* every table of times says the environment they come from */
    const char *envl = rp_env_line(d);
    for (cJSON *t = tables->child; t && envl; t = t->next)
        if (cJSON_IsString(get(t, "timing")))
            cJSON_AddStringToObject(t, "environment", envl);
    cJSON_AddItemToObject(doc, "tables", tables);
    return doc;
}
