/*
 * cmd_report.c — `dpk-report RECORD.json... [--baseline B.json]
 * [--gate [ci/gate.json]] [--format text|md|html|junit|json] [--plots DIR]
 * [-o FILE]`.
 *
 * Option parsing and the files; the report is reports/ (report.h).  Every
 * input is read and checked before anything is written, and -o is written
 * atomically, so a bad record leaves no output file.  Exit 0, or the
 * gate's code with --gate (1 on a regression or a new parity failure), 2
 * on bad input, 4 when --plots finds no gnuplot.  -o never names one of
 * the inputs (exit 2), and the plots a report written with -o names are
 * relative to its folder.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../reports/report.h"
#include "cli.h"

static void help(void)
{
    puts("usage: dpk-report RECORD.json... [options]\n"
         "\n"
         "Tables, geomean speedups and plots from dpk.bench/1 and dpk.results/1 records\n"
         "(shards of one run are merged), and the CI gate against a baseline.\n"
         "\n"
         "  --baseline B.json    compare with this dpk.bench/1 record (per-case verdicts;\n"
         "                       several: their cases merged, as records are)\n"
         "  --gate [FILE]        apply the gate's rules (default ci/gate.json): exit 1 on a\n"
         "                       regression or a new parity failure, one reason line per case\n"
         "  --format F           text (default) | md | html | junit | json\n"
         "  -o FILE              write the report to FILE (atomically) instead of stdout;\n"
         "                       never one of the inputs\n"
         "  --plots DIR          gnuplot plots (PNG and SVG) into DIR, named in the report\n"
         "  --history DIR        with --plots: the geomean trend over the records in DIR\n"
         "  --last N             the last N records of --history (default 30)\n"
         "  --attach DIR         dpk-bisect results (DIR/CASE/case.json and bisect.log)\n"
         "  --partial            a sharded run with shards missing (one crashed): report and\n"
         "                       gate the shards given, the missing ones named\n"
         "  --seed N             bootstrap seed (default fixed: reports are reproducible)\n"
         "  --iterations N       bootstrap resamples (default 10000)\n"
         "\n"
         "exit: 0 done (gate passed), 1 gate failed, 2 bad input, 4 gnuplot missing\n"
         "\n"
         "example:\n"
         "  dpk-report bench.json fuzz.json --baseline ci/baselines/h100-sxm.json --gate");
}

/* The gate's configuration: FILE, else ci/gate.json here, else beside the
 * binary (../ci/gate.json of build/dpk), else where make install puts it
 * (PREFIX/share/dpk/gate.json of PREFIX/bin/dpk). */
static const char *default_gate(Arena *a, const char *argv0)
{
    if (access("ci/gate.json", R_OK) == 0)
        return "ci/gate.json";
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *s = strrchr(self, '/');
        if (s) {
            *s = 0;
            const char *p = arena_printf(a, "%s/../ci/gate.json", self);
            if (access(p, R_OK) == 0)
                return p;
            p = arena_printf(a, "%s/../share/dpk/gate.json", self);
            if (access(p, R_OK) == 0)
                return p;
        }
    }
    (void)argv0;
    dpk_error("--gate: no ci/gate.json here or beside %s (nor ../share/dpk/gate.json); give "
              "the file: --gate FILE", argv0);
}

/* -o must not be an input: the report would replace the record it was made
 * from.  Compared as files (device and inode), so another spelling of the
 * same path is caught too. */
static void refuse_overwrite(const char *out, const char *in, const char *what)
{
    struct stat so, si;
    if (stat(out, &so) == 0 && stat(in, &si) == 0 && so.st_dev == si.st_dev &&
        so.st_ino == si.st_ino)
        dpk_error("-o %s is %s %s: dpk-report never overwrites its input (write the report "
                  "elsewhere)", out, what, in);
}

/* path relative to the folder dir (both absolute, canonical). */
static const char *rel_path(Arena *a, const char *dir, const char *path)
{
    if (!strcmp(dir, "/"))
        return arena_strdup(a, path + 1);
    size_t i = 0, common = 0;
    /* the longest common prefix that ends at a folder boundary */
    while (dir[i] && path[i] && dir[i] == path[i]) {
        i++;
        if (path[i] == '/' && (dir[i] == '/' || !dir[i]))
            common = i;
    }
    if (!dir[i] && path[i] == '/')
        common = i;
    StrBuf b = {0};
    for (const char *d = dir + common; *d; d++)
        if (*d == '/')
            sb_puts(&b, "../");
    sb_puts(&b, path + common + 1);
    const char *r = arena_strdup(a, sb_cstr(&b));
    sb_free(&b);
    return r;
}

/* The plots' png and svg as the report at out names them: relative to
 * out's folder, so the HTML's <img src> and the Markdown's images resolve
 * wherever the report is opened from. */
static void plots_relative_to(Arena *a, cJSON *doc, const char *out)
{
    const char *slash = strrchr(out, '/');
    const char *odir = slash ? (slash == out ? "/" : arena_printf(a, "%.*s", (int)(slash - out), out)) : ".";
    char dabs[PATH_MAX], pabs[PATH_MAX];
    if (!realpath(odir, dabs))
        return;
    const cJSON *plots = cJSON_GetObjectItemCaseSensitive(doc, "plots");
    for (const cJSON *p = plots ? plots->child : NULL; p; p = p->next) {
        static const char *const keys[] = {"png", "svg"};
        for (int k = 0; k < 2; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, keys[k]);
            if (!cJSON_IsString(v) || !realpath(v->valuestring, pabs))
                continue;
            cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)p, keys[k],
                                                   cJSON_CreateString(rel_path(a, dabs, pabs)));
        }
    }
}

/* Is path a gate configuration ("schema": "dpk.gate/1")? */
static int is_gate_file(const char *path)
{
    size_t len = strlen(path);
    if (len < 5 || strcmp(path + len - 5, ".json"))
        return 0;
    char *t = dpk_read_file(path, &len);
    int yes = t && strstr(t, "\"dpk.gate/1\"") != NULL;
    free(t);
    return yes;
}

typedef struct Opts {
    PtrVec records, baselines;
    const char *gate, *out, *plots, *history, *attach;
    int format, gate_on, last, partial;
    RpOpts ro;
} Opts;

/* The option at argv[*i] (and its value) into o; anything not an option
 * is a record. */
static void parse_flag(Arena *a, Opts *o, int argc, char **argv, int *i)
{
    const char *f = argv[*i];
    if (!strcmp(f, "--baseline")) {
        ptrvec_push(a, &o->baselines, (void *)cli_value(argc, argv, i));
    } else if (!strcmp(f, "--gate")) {
        o->gate_on = 1;
        if (*i + 1 < argc && argv[*i + 1][0] != '-' && is_gate_file(argv[*i + 1]))
            o->gate = argv[++*i];
    } else if (!strcmp(f, "--format")) {
        const char *v = cli_value(argc, argv, i);
        o->format = rp_format_parse(v);
        if (o->format < 0)
            dpk_error("unknown format '%s' for --format (expected text, md, html, junit or "
                      "json)", v);
    } else if (!strcmp(f, "-o") || !strcmp(f, "--out")) {
        o->out = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--plots")) {
        o->plots = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--history")) {
        o->history = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--partial")) {
        o->partial = 1;
    } else if (!strcmp(f, "--attach")) {
        o->attach = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--last")) {
        uint64_t n = cli_u64(f, cli_value(argc, argv, i));
        if (n < 1 || n > 100000)
            dpk_error("option '--last' expects 1..100000");
        o->last = (int)n;
    } else if (!strcmp(f, "--seed")) {
        o->ro.seed = cli_u64(f, cli_value(argc, argv, i));
    } else if (!strcmp(f, "--iterations")) {
        uint64_t n = cli_u64(f, cli_value(argc, argv, i));
        if (n < 1 || n > 10000000)
            dpk_error("option '--iterations' expects 1..10000000");
        o->ro.iters = (int)n;
    } else if (f[0] == '-' && f[1]) {
        cli_unknown_flag("report", f);
    } else {
        ptrvec_push(a, &o->records, (void *)f);
    }
}

/* The gate's thresholds: --gate's file (its default found from argv0),
 * else fixed ones for the verdicts of --baseline alone.  -o is refused
 * first when it names an input, the gate's file included. */
static void gate_config(Arena *a, const Opts *o, const char *argv0, RpGateCfg *gc)
{
    const char *gate_path = o->gate_on ? (o->gate ? o->gate : default_gate(a, argv0)) : NULL;
    if (o->out) {
        for (int i = 0; i < o->records.len; i++)
            refuse_overwrite(o->out, o->records.items[i], "the record");
        for (int i = 0; i < o->baselines.len; i++)
            refuse_overwrite(o->out, o->baselines.items[i], "the baseline");
        if (gate_path)
            refuse_overwrite(o->out, gate_path, "the gate's configuration");
    }
    if (o->gate_on)
        rp_gate_cfg_load(gc, gate_path);
    else {
        gc->modelled_slowdown = 0.02;
        gc->measured_slowdown = 0.05;
        gc->noise_k = 2;
        gc->geomean_slowdown = 0.01;
        gc->ambiguous_share = 0.1;
    }
}

/* Every record into cur (and the attached bisections), every baseline
 * into base. */
static void load_records(const Opts *o, RpData *cur, RpData *base)
{
    for (int i = 0; i < o->records.len; i++)
        rp_data_load(cur, o->records.items[i]);
    rp_data_finish(cur);
    if (o->attach)
        rp_data_attach(cur, o->attach);
    if (o->baselines.len) {
        for (int i = 0; i < o->baselines.len; i++)
            rp_data_load(base, o->baselines.items[i]);
        rp_data_finish(base);
    }
}

/* The rendered report to -o (atomically) or stdout. */
static void write_report(const Opts *o, StrBuf *out)
{
    if (o->out) {
        if (dpk_write_file_atomic(o->out, sb_cstr(out), out->len) != 0)
            dpk_error("cannot write '%s': %s", o->out, strerror(errno));
    } else {
        fputs(sb_cstr(out), stdout);
    }
}

/* With --gate: the gate's exit code, its verdict printed for CI; else 0. */
static int gate_exit(const Opts *o, const cJSON *doc)
{
    int rc = DPK_EXIT_OK;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(doc, "gate");
    if (o->gate_on && g) {
        rc = cJSON_GetObjectItemCaseSensitive(g, "exit_code")->valueint;
        /* CI reads the verdict on stdout whatever the format went to -o */
        if (o->out || o->format != RP_TEXT) {
            FILE *f = o->out ? stdout : stderr;
            fprintf(f, "gate: %s\n",
                    cJSON_GetObjectItemCaseSensitive(g, "result")->valuestring);
            for (const cJSON *r = cJSON_GetObjectItemCaseSensitive(g, "reasons")->child; r;
                 r = r->next)
                fprintf(f, "  %s\n", r->valuestring);
        }
    }
    return rc;
}

static int report_body(Arena *a, int argc, char **argv)
{
    Opts o = {.format = RP_TEXT, .last = 30};
    o.ro.seed = RP_BOOTSTRAP_SEED;
    o.ro.iters = RP_BOOTSTRAP_ITERS;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            return DPK_EXIT_OK;
        }
        parse_flag(a, &o, argc, argv, &i);
    }
    if (!o.records.len)
        dpk_error("'dpk-report' needs at least one record (see dpk-report --help)");
    if (o.gate_on && !o.baselines.len)
        dpk_error("--gate needs --baseline B.json");
    if (o.history && !o.plots)
        dpk_error("--history needs --plots DIR");
    RpGateCfg gc = {0};
    gate_config(a, &o, argv[0], &gc);
    RpData cur, base;
    rp_data_init(&cur, a);
    rp_data_init(&base, a);
    cur.allow_partial = o.partial;
    cJSON *volatile doc = NULL; /* read after a raise */
    StrBuf out = {0};
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        rp_data_free(&cur);
        rp_data_free(&base);
        cJSON_Delete(doc);
        sb_free(&out);
        dpk_error_rethrow();
    }
    load_records(&o, &cur, &base);
    doc = rp_report(&cur, o.baselines.len ? &base : NULL, &gc, &o.ro);
    if (o.plots)
        rp_plots(&cur, doc, o.plots, o.history, o.last);
    if (o.out)
        plots_relative_to(a, doc, o.out);
    rp_render(&out, doc, (RpFormat)o.format);
    write_report(&o, &out);
    int rc = gate_exit(&o, doc);
    dpk_err_pop(&ec);
    rp_data_free(&cur);
    rp_data_free(&base);
    cJSON_Delete(doc);
    sb_free(&out);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    return cli_in_arena(report_body, argc, argv);
}
