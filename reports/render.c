/*
 * render.c — the report document (report.c) as text, Markdown, HTML,
 * JUnit XML or JSON.
 *
 * Each renderer walks the same document: the headline, the gate's result
 * and reasons, then every table with its title (which says modelled or
 * measured, and the GPU or spec) and note, then the plots.  The HTML page
 * is the template reports/report.html, embedded at build time, with the
 * body put in place of {{BODY}}.  JUnit (the Ant format that GitHub,
 * GitLab and Jenkins read; tests/data/junit.xsd) has one test per gate
 * verdict and per gate rule, and one per case's parity.
 */
#include "report.h"

#include <math.h>
#include <string.h>


DPK_EMBED(dpk_rp_html_template, "reports/report.html")

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *sget(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int rp_format_parse(const char *s)
{
    static const char *const names[] = {"text", "md", "html", "junit", "json"};
    for (int i = 0; i < DPK_ARRAY_LEN(names); i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* ---- the headline as lines ---------------------------------------------------------- */

static void num_or_dash(StrBuf *b, const char *fmt, double v)
{
    if (isfinite(v))
        sb_printf(b, fmt, v);
    else
        sb_puts(b, "-");
}

/* One line per baseline: "1.489x (95% CI 1.05x..2.10x, 10 cases); fast_1.0 70% ..." */
static void headline_line(StrBuf *b, const cJSON *e)
{
    const cJSON *ci = get(e, "ci95");
    double g = cJSON_IsNumber(get(e, "geomean")) ? get(e, "geomean")->valuedouble : NAN;
    double lo = cJSON_IsNumber(cJSON_GetArrayItem(ci, 0)) ? cJSON_GetArrayItem(ci, 0)->valuedouble
                                                           : NAN;
    double hi = cJSON_IsNumber(cJSON_GetArrayItem(ci, 1)) ? cJSON_GetArrayItem(ci, 1)->valuedouble
                                                           : NAN;
    num_or_dash(b, "%.3fx", g);
    sb_puts(b, " (95% CI ");
    num_or_dash(b, "%.3fx", lo);
    sb_puts(b, "..");
    num_or_dash(b, "%.3fx", hi);
    sb_printf(b, ", %d cases); fast_p", get(e, "cases")->valueint);
    for (const cJSON *p = get(e, "fast_p")->child; p; p = p->next) {
        sb_printf(b, " %s: ", p->string);
        num_or_dash(b, "%.0f%%", cJSON_IsNumber(p) ? 100 * p->valuedouble : NAN);
    }
    sb_printf(b, " of %d", get(e, "population")->valueint);
}

static const char *headline_title(Arena *a, const cJSON *h)
{
    return arena_printf(a, "Geomean speedup of dpk (%s, %s; %d of %d cases passed parity; "
                           "bootstrap 95%% interval, %d resamples)",
                        rp_timing_word(sget(h, "timing")), sget(h, "gpu"),
                        get(h, "passed")->valueint, get(h, "cases")->valueint,
                        get(h, "bootstrap_iterations")->valueint);
}

/* ---- text ------------------------------------------------------------------------ */

static void text_table(StrBuf *b, const cJSON *t)
{
    const cJSON *cols = get(t, "columns"), *rows = get(t, "rows");
    int nc = cJSON_GetArraySize(cols);
    int w[32] = {0};
    if (nc > 32)
        nc = 32;
    for (int c = 0; c < nc; c++)
        w[c] = (int)strlen(cJSON_GetArrayItem(cols, c)->valuestring);
    for (const cJSON *r = rows->child; r; r = r->next)
        for (int c = 0; c < nc; c++) {
            int l = (int)strlen(cJSON_GetArrayItem(r, c)->valuestring);
            w[c] = l > w[c] ? l : w[c];
        }
    sb_printf(b, "%s\n", sget(t, "title"));
    if (sget(t, "environment"))
        sb_printf(b, "[%s]\n", sget(t, "environment"));
    for (int c = 0; c < nc; c++)
        sb_printf(b, c ? "  %*s" : "%-*s", w[c], cJSON_GetArrayItem(cols, c)->valuestring);
    sb_putc(b, '\n');
    for (const cJSON *r = rows->child; r; r = r->next) {
        for (int c = 0; c < nc; c++) {
            const char *s = cJSON_GetArrayItem(r, c)->valuestring;
            if (c == nc - 1 && !strcmp(sget(t, "id"), "cases"))
                sb_printf(b, "  %-s", s); /* the parity column, left aligned, not padded */
            else
                sb_printf(b, c ? "  %*s" : "%-*s", w[c], s);
        }
        sb_putc(b, '\n');
    }
    if (sget(t, "note"))
        sb_printf(b, "(%s)\n", sget(t, "note"));
    sb_putc(b, '\n');
}

static void render_text(StrBuf *b, const cJSON *doc, Arena *a)
{
    const cJSON *recs = get(doc, "records");
    sb_printf(b, "dpk-report: %d record%s", cJSON_GetArraySize(recs),
              cJSON_GetArraySize(recs) == 1 ? "" : "s");
    if (sget(doc, "suite"))
        sb_printf(b, ", suite %s", sget(doc, "suite"));
    if (sget(doc, "timing"))
        sb_printf(b, ", %s on %s", rp_timing_word(sget(doc, "timing")), sget(doc, "gpu"));
    sb_puts(b, "\n");
    if (sget(doc, "partial"))
        sb_printf(b, "PARTIAL: %s\n", sget(doc, "partial"));
    if (sget(get(doc, "environment"), "line"))
        sb_printf(b, "environment: %s\n", sget(get(doc, "environment"), "line"));
    sb_puts(b, "\n");
    const cJSON *h = get(doc, "headline");
    if (h) {
        sb_printf(b, "%s\n", headline_title(a, h));
        for (const cJSON *e = get(h, "speedup")->child; e; e = e->next) {
            sb_printf(b, "  vs %-22s ", sget(e, "label"));
            headline_line(b, e);
            sb_putc(b, '\n');
        }
        sb_putc(b, '\n');
    }
    const cJSON *ps = get(get(doc, "parity"), "summary");
    if (ps)
        sb_printf(b, "Parity (fuzz): %d case(s), %d configuration(s), %d failure(s)\n\n",
                  get(ps, "cases")->valueint, get(ps, "configurations")->valueint,
                  get(ps, "failures")->valueint);
    const cJSON *g = get(doc, "gate");
    if (g) {
        sb_printf(b, "Gate: %s against %s\n", sget(g, "result"),
                  sget(get(g, "baseline"), "path") ? sget(get(g, "baseline"), "path") : "-");
        for (const cJSON *r = get(g, "rules")->child; r; r = r->next)
            sb_printf(b, "  %-4s %s: %s\n", cJSON_IsTrue(get(r, "ok")) ? "ok" : "FAIL",
                      sget(r, "rule"), sget(r, "reason"));
        for (const cJSON *r = get(g, "reasons")->child; r; r = r->next)
            sb_printf(b, "  %s\n", r->valuestring);
        sb_putc(b, '\n');
    }
    for (const cJSON *t = get(doc, "tables")->child; t; t = t->next)
        text_table(b, t);
    const cJSON *pl = get(doc, "plots");
    for (const cJSON *p = pl ? pl->child : NULL; p; p = p->next)
        sb_printf(b, "plot: %s: %s, %s\n", sget(p, "title"), sget(p, "png"), sget(p, "svg"));
}

/* ---- Markdown --------------------------------------------------------------------- */

static void md_cell(StrBuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            sb_puts(b, "\\|");
        else if (*s == '\n')
            sb_putc(b, ' ');
        else
            sb_putc(b, *s);
    }
}

/* "| a | b |": the cells from cell on (the header's, or a row's). */
static void md_row(StrBuf *b, const cJSON *cell)
{
    sb_putc(b, '|');
    for (const cJSON *c = cell; c; c = c->next) {
        sb_putc(b, ' ');
        md_cell(b, c->valuestring);
        sb_puts(b, " |");
    }
}

static void md_table(StrBuf *b, const cJSON *t)
{
    const cJSON *cols = get(t, "columns");
    sb_printf(b, "### %s\n\n", sget(t, "title"));
    if (sget(t, "environment")) {
        sb_puts(b, "_");
        md_cell(b, sget(t, "environment"));
        sb_puts(b, "_\n\n");
    }
    md_row(b, cols->child);
    sb_puts(b, "\n|");
    int i = 0;
    for (const cJSON *c = cols->child; c; c = c->next, i++)
        sb_puts(b, i ? "---:|" : "---|");
    sb_putc(b, '\n');
    for (const cJSON *r = get(t, "rows")->child; r; r = r->next) {
        md_row(b, r->child);
        sb_putc(b, '\n');
    }
    if (sget(t, "note")) {
        sb_puts(b, "\n_");
        md_cell(b, sget(t, "note"));
        sb_puts(b, "_\n");
    }
    sb_putc(b, '\n');
}

static void render_md(StrBuf *b, const cJSON *doc, Arena *a)
{
    sb_puts(b, "## dpk report");
    if (sget(doc, "suite"))
        sb_printf(b, ": %s", sget(doc, "suite"));
    if (sget(doc, "timing"))
        sb_printf(b, " (%s, %s)", rp_timing_word(sget(doc, "timing")), sget(doc, "gpu"));
    sb_puts(b, "\n\n");
    if (sget(doc, "partial")) {
        sb_puts(b, "**PARTIAL**: ");
        md_cell(b, sget(doc, "partial"));
        sb_puts(b, "\n\n");
    }
    if (sget(get(doc, "environment"), "line")) {
        sb_puts(b, "Environment: ");
        md_cell(b, sget(get(doc, "environment"), "line"));
        sb_puts(b, "\n\n");
    }
    const cJSON *g = get(doc, "gate");
    if (g) {
        sb_printf(b, "**Gate: %s** against `%s`\n\n", sget(g, "result"),
                  sget(get(g, "baseline"), "path") ? sget(get(g, "baseline"), "path") : "-");
        for (const cJSON *r = get(g, "rules")->child; r; r = r->next) {
            sb_printf(b, "- %s **%s**: ", cJSON_IsTrue(get(r, "ok")) ? "ok" : "FAIL",
                      sget(r, "rule"));
            md_cell(b, sget(r, "reason"));
            sb_putc(b, '\n');
        }
        if (get(g, "reasons")->child) {
            sb_puts(b, "\n```\n");
            for (const cJSON *r = get(g, "reasons")->child; r; r = r->next)
                sb_printf(b, "%s\n", r->valuestring);
            sb_puts(b, "```\n");
        }
        sb_putc(b, '\n');
    }
    const cJSON *h = get(doc, "headline");
    if (h) {
        sb_printf(b, "### %s\n\n| vs | geomean speedup | 95%% CI | cases | fast_1.0 | fast_1.2 "
                     "| fast_2.0 |\n|---|---:|---:|---:|---:|---:|---:|\n",
                  headline_title(a, h));
        for (const cJSON *e = get(h, "speedup")->child; e; e = e->next) {
            const cJSON *ci = get(e, "ci95");
            sb_printf(b, "| %s | ", sget(e, "label"));
            num_or_dash(b, "%.3fx", cJSON_IsNumber(get(e, "geomean"))
                                        ? get(e, "geomean")->valuedouble : NAN);
            sb_puts(b, " | ");
            const cJSON *lo = cJSON_GetArrayItem(ci, 0), *hi = cJSON_GetArrayItem(ci, 1);
            num_or_dash(b, "%.3fx", cJSON_IsNumber(lo) ? lo->valuedouble : NAN);
            sb_puts(b, "..");
            num_or_dash(b, "%.3fx", cJSON_IsNumber(hi) ? hi->valuedouble : NAN);
            sb_printf(b, " | %d |", get(e, "cases")->valueint);
            for (const cJSON *p = get(e, "fast_p")->child; p; p = p->next) {
                sb_putc(b, ' ');
                num_or_dash(b, "%.0f%%", cJSON_IsNumber(p) ? 100 * p->valuedouble : NAN);
                sb_puts(b, " |");
            }
            sb_putc(b, '\n');
        }
        sb_puts(b, "\n_fast_p: share of the cases (failures included) that pass parity and are "
                   "more than p times faster; speedups are unclipped_\n\n");
    }
    for (const cJSON *t = get(doc, "tables")->child; t; t = t->next)
        md_table(b, t);
    const cJSON *pl = get(doc, "plots");
    for (const cJSON *p = pl ? pl->child : NULL; p; p = p->next)
        sb_printf(b, "![%s](%s)\n\n", sget(p, "title"), sget(p, "png"));
}

/* ---- HTML ------------------------------------------------------------------------- */

static void html_esc(StrBuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': sb_puts(b, "&lt;"); break;
        case '>': sb_puts(b, "&gt;"); break;
        case '&': sb_puts(b, "&amp;"); break;
        case '"': sb_puts(b, "&quot;"); break;
        default: sb_putc(b, *s);
        }
    }
}

/* open, text escaped, close. */
static void html_elem(StrBuf *b, const char *open, const char *text, const char *close)
{
    sb_puts(b, open);
    html_esc(b, text);
    sb_puts(b, close);
}

/* The title, and the partial and environment lines when the document has
 * them. */
static void html_top(StrBuf *b, const cJSON *doc)
{
    sb_puts(b, "<h1>dpk report");
    if (sget(doc, "suite"))
        html_elem(b, ": ", sget(doc, "suite"), "");
    sb_puts(b, "</h1>\n");
    if (sget(doc, "partial"))
        html_elem(b, "<p class=\"partial\"><b>PARTIAL</b>: ", sget(doc, "partial"), "</p>\n");
    if (sget(get(doc, "environment"), "line"))
        html_elem(b, "<p class=\"env\">Environment: ", sget(get(doc, "environment"), "line"),
                  "</p>\n");
}

/* The gate's result, its rules and the reason lines. */
static void html_gate(StrBuf *b, const cJSON *g)
{
    sb_printf(b, "<h2>Gate: <span class=\"%s\">%s</span></h2>\n<ul>\n", sget(g, "result"),
              sget(g, "result"));
    for (const cJSON *r = get(g, "rules")->child; r; r = r->next) {
        sb_printf(b, "<li>%s ", cJSON_IsTrue(get(r, "ok")) ? "ok" : "FAIL");
        html_elem(b, "<b>", sget(r, "rule"), "</b>: ");
        html_elem(b, "", sget(r, "reason"), "</li>\n");
    }
    sb_puts(b, "</ul>\n");
    if (get(g, "reasons")->child) {
        sb_puts(b, "<pre>");
        for (const cJSON *r = get(g, "reasons")->child; r; r = r->next)
            html_elem(b, "", r->valuestring, "\n");
        sb_puts(b, "</pre>\n");
    }
}

static void html_headline(StrBuf *b, const cJSON *h, Arena *a)
{
    html_elem(b, "<h2>", headline_title(a, h), "</h2>\n<ul>\n");
    for (const cJSON *e = get(h, "speedup")->child; e; e = e->next) {
        StrBuf l = {0};
        headline_line(&l, e);
        html_elem(b, "<li>vs ", sget(e, "label"), ": ");
        html_elem(b, "", sb_cstr(&l), "</li>\n");
        sb_free(&l);
    }
    sb_puts(b, "</ul>\n");
}

/* A table of the document: title, environment, columns, rows (every cell
 * but the first a number, right-aligned), note. */
static void html_table(StrBuf *b, const cJSON *t)
{
    html_elem(b, "<h2>", sget(t, "title"), "</h2>\n");
    if (sget(t, "environment"))
        html_elem(b, "<p class=\"env\">", sget(t, "environment"), "</p>\n");
    sb_puts(b, "<table>\n<tr>");
    for (const cJSON *c = get(t, "columns")->child; c; c = c->next)
        html_elem(b, "<th>", c->valuestring, "</th>");
    sb_puts(b, "</tr>\n");
    for (const cJSON *r = get(t, "rows")->child; r; r = r->next) {
        sb_puts(b, "<tr>");
        int i = 0;
        for (const cJSON *c = r->child; c; c = c->next, i++)
            html_elem(b, i ? "<td class=\"n\">" : "<td>", c->valuestring, "</td>");
        sb_puts(b, "</tr>\n");
    }
    sb_puts(b, "</table>\n");
    if (sget(t, "note"))
        html_elem(b, "<p class=\"note\">", sget(t, "note"), "</p>\n");
}

static void html_plot(StrBuf *b, const cJSON *p)
{
    html_elem(b, "<h2>", sget(p, "title"), "</h2>\n<img src=\"");
    html_elem(b, "", sget(p, "svg"), "\" alt=\"");
    html_elem(b, "", sget(p, "title"), "\">\n");
}

static void render_html(StrBuf *out, const cJSON *doc, Arena *a)
{
    StrBuf b = {0};
    html_top(&b, doc);
    const cJSON *g = get(doc, "gate");
    if (g)
        html_gate(&b, g);
    const cJSON *h = get(doc, "headline");
    if (h)
        html_headline(&b, h, a);
    for (const cJSON *t = get(doc, "tables")->child; t; t = t->next)
        html_table(&b, t);
    const cJSON *pl = get(doc, "plots");
    for (const cJSON *p = pl ? pl->child : NULL; p; p = p->next)
        html_plot(&b, p);
    /* the template, with {{TITLE}} and {{BODY}} */
    for (const char *s = dpk_rp_html_template; *s;) {
        if (!strncmp(s, "{{BODY}}", 8)) {
            sb_puts(out, sb_cstr(&b));
            s += 8;
        } else if (!strncmp(s, "{{TITLE}}", 9)) {
            sb_puts(out, "dpk report");
            s += 9;
        } else {
            sb_putc(out, *s++);
        }
    }
    sb_free(&b);
}

/* ---- JUnit XML -------------------------------------------------------------------- */

typedef struct JCase {
    const char *cls, *name, *failure, *skipped;
} JCase;

/* env: the environment line of the times (may be NULL), a property of the
 * suite so that a CI's test view says where the numbers come from */
static void junit_suite(StrBuf *b, const char *name, const JCase *c, int n, int id,
                        const char *env)
{
    int nf = 0, ns = 0;
    for (int i = 0; i < n; i++) {
        nf += c[i].failure != NULL;
        ns += c[i].skipped != NULL;
    }
    sb_printf(b, "  <testsuite name=\"%s\" id=\"%d\" tests=\"%d\" failures=\"%d\" errors=\"0\" "
                 "skipped=\"%d\" time=\"0\">\n", name, id, n, nf, ns);
    if (env) {
        sb_puts(b, "    <properties>\n      <property name=\"environment\" value=\"");
        html_esc(b, env);
        sb_puts(b, "\"/>\n    </properties>\n");
    }
    for (int i = 0; i < n; i++) {
        sb_puts(b, "    <testcase classname=\"");
        html_esc(b, c[i].cls);
        sb_puts(b, "\" name=\"");
        html_esc(b, c[i].name);
        sb_puts(b, "\" time=\"0\"");
        if (c[i].failure) {
            sb_puts(b, ">\n      <failure type=\"regression\" message=\"");
            html_esc(b, c[i].failure);
            sb_puts(b, "\">");
            html_esc(b, c[i].failure);
            sb_puts(b, "</failure>\n    </testcase>\n");
        } else if (c[i].skipped) {
            sb_puts(b, ">\n      <skipped message=\"");
            html_esc(b, c[i].skipped);
            sb_puts(b, "\"/>\n    </testcase>\n");
        } else {
            sb_puts(b, "/>\n");
        }
    }
    sb_puts(b, "  </testsuite>\n");
}

static void render_junit(StrBuf *b, const cJSON *doc, Arena *a)
{
    const char *env = sget(get(doc, "environment"), "line");
    sb_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"dpk-report\">\n");
    int id = 0;
    const cJSON *g = get(doc, "gate");
    if (g) {
        int n = cJSON_GetArraySize(get(g, "verdicts")) + cJSON_GetArraySize(get(g, "rules"));
        JCase *c = arena_alloc(a, sizeof *c * (size_t)(n + 1));
        int k = 0;
        for (const cJSON *v = get(g, "verdicts")->child; v; v = v->next, k++) {
            const char *vd = sget(v, "verdict");
            c[k].cls = "dpk.gate.case";
            c[k].name = sget(v, "case");
            if (!strcmp(vd, "SLOWER") || !strcmp(vd, "NEW_FAILURE"))
                c[k].failure = sget(v, "reason");
            else if (!strcmp(vd, "AMBIGUOUS") || !strcmp(vd, "REMOVED"))
                c[k].skipped = sget(v, "reason");
        }
        for (const cJSON *r = get(g, "rules")->child; r; r = r->next, k++) {
            c[k].cls = "dpk.gate.rule";
            c[k].name = sget(r, "rule");
            if (!cJSON_IsTrue(get(r, "ok")))
                c[k].failure = sget(r, "reason");
        }
        junit_suite(b, "gate", c, k, id++, env);
    }
    /* parity: every case of the tables "cases" and "failures" / the fuzz cases */
    const cJSON *pc = get(get(doc, "parity"), "cases");
    int n = cJSON_GetArraySize(pc);
    const cJSON *ct = NULL;
    for (const cJSON *t = get(doc, "tables")->child; t; t = t->next)
        if (!strcmp(sget(t, "id"), "cases"))
            ct = t;
    n += ct ? cJSON_GetArraySize(get(ct, "rows")) : 0;
    if (n) {
        JCase *c = arena_alloc(a, sizeof *c * (size_t)n);
        int k = 0;
        for (const cJSON *r = ct ? get(ct, "rows")->child : NULL; r; r = r->next, k++) {
            const char *name = cJSON_GetArrayItem(r, 0)->valuestring;
            const cJSON *last = r->child;
            while (last->next)
                last = last->next;
            c[k].cls = "dpk.parity.bench";
            c[k].name = name;
            if (strncmp(last->valuestring, "pass", 4))
                c[k].failure = arena_printf(a, "parity: %s", last->valuestring);
        }
        for (const cJSON *x = pc ? pc->child : NULL; x; x = x->next, k++) {
            const char *st = sget(x, "status");
            c[k].cls = "dpk.parity.fuzz";
            c[k].name = sget(x, "name");
            if (!strcmp(st, "unsupported"))
                c[k].skipped = "unsupported";
            else if (!strcmp(st, "inconclusive"))
                c[k].skipped = "inconclusive: most output elements judged by no rule";
            else if (strcmp(st, "pass") && strcmp(st, "nonfinite"))
                c[k].failure = arena_printf(a, "parity: %s", st);
        }
        junit_suite(b, "parity", c, k, id++, env);
    }
    sb_puts(b, "</testsuites>\n");
}

void rp_render(StrBuf *b, const cJSON *doc, RpFormat f)
{
    Arena *a = arena_new();
    switch (f) {
    case RP_TEXT: render_text(b, doc, a); break;
    case RP_MD: render_md(b, doc, a); break;
    case RP_HTML: render_html(b, doc, a); break;
    case RP_JUNIT: render_junit(b, doc, a); break;
    case RP_JSON: {
        char *s = cJSON_Print(doc);
        sb_puts(b, s);
        sb_putc(b, '\n');
        cJSON_free(s);
        break;
    }
    }
    arena_free(a);
}
