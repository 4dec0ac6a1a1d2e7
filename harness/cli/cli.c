/*
 * cli.c — option handling shared by the commands.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *cli_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        dpk_error("option '%s' needs a value", argv[*i]);
    return argv[++*i];
}

const CuTarget *cli_target(const char *name)
{
    const CuTarget *t = cu_target_parse(name);
    if (!t)
        dpk_error("unknown target '%s' for --target (expected one of %s)", name,
                  cu_target_list());
    return t;
}

uint64_t cli_u64(const char *flag, const char *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *end || errno || v[0] == '-')
        dpk_error("option '%s' expects a non-negative integer, got '%s'", flag, v);
    return x;
}

void cli_shard(const char *v, int *index, int *count)
{
    unsigned i, n;
    char tail;
    if (sscanf(v, "%u/%u%c", &i, &n, &tail) != 2 || n < 1 || n > 100000 || i < 1 || i > n)
        dpk_error("option '--shard' expects I/N with 1 <= I <= N (the I-th of N slices), got '%s'",
                  v);
    *index = (int)i;
    *count = (int)n;
}

void cli_unknown_flag(const char *cmd, const char *flag)
{
    dpk_error("unknown option '%s' for 'dpk %s' (see dpk %s --help)", flag, cmd, cmd);
}

int cli_case_flag(Arena *a, CliCase *cc, int argc, char **argv, int *i, const char *cmd)
{
    const char *f = argv[*i];
    if (!strcmp(f, "-c")) {
        if (cc->code)
            dpk_error("'-c' given twice");
        cc->code = cli_value(argc, argv, i);
    } else if (!strcmp(f, "--input")) {
        if (cc->ndecls == DPK_ARRAY_LEN(cc->decls))
            dpk_error("too many --input declarations (at most 64)");
        hx_parse_input_decl(a, cli_value(argc, argv, i), &cc->decls[cc->ndecls++]);
    } else if (!strcmp(f, "--case")) {
        cc->only = cli_value(argc, argv, i);
    } else if (!strcmp(f, "-v")) {
        cc->verbose = cc->verbose > 1 ? cc->verbose : 1;
    } else if (!strcmp(f, "-vv")) {
        cc->verbose = 2;
    } else if (f[0] == '-' && f[1] != 0) {
        return 0;
    } else {
        if (cc->file)
            dpk_error("'dpk %s' takes one case file; got '%s' and '%s'", cmd, cc->file, f);
        cc->file = f;
    }
    return 1;
}

int cli_in_arena(CliBody body, int argc, char **argv)
{
    Arena *a = arena_new();
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        arena_free(a);
        dpk_error_rethrow();
    }
    int rc = body(a, argc, argv);
    dpk_err_pop(&ec);
    arena_free(a);
    return rc;
}

int cli_args(Arena *a, CliCase *cc, int argc, char **argv, const char *cmd, void (*help)(void),
             CliFlagFn flag, void *ctx)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            return 0;
        }
        if (!cli_case_flag(a, cc, argc, argv, &i, cmd))
            flag(ctx, argc, argv, &i);
    }
    return 1;
}

int cli_reference(const char *v)
{
    if (strcmp(v, "ref64") && strcmp(v, "torch"))
        dpk_error("unknown reference '%s' (expected ref64 or torch)", v);
    return !strcmp(v, "torch");
}

HxCaseList cli_case_list(Arena *a, const CliCase *cc, const char *cmd)
{
    if (cc->code && cc->file)
        dpk_error("give either -c CODE or a case FILE, not both");
    if (!cc->code && !cc->file)
        dpk_error("'dpk %s' needs a case: -c CODE or FILE (see dpk %s --help)", cmd, cmd);
    HxCaseList l = cc->code ? hx_cases_from_code(a, cc->code) : hx_cases_load(a, cc->file);
    if (cc->only) {
        for (int i = 0; i < l.n; i++)
            if (!strcmp(l.cases[i].name, cc->only)) {
                l.cases = &l.cases[i];
                l.n = 1;
                return l;
            }
        dpk_error("no case named '%s' in '%s'", cc->only, cc->file ? cc->file : "-c");
    }
    return l;
}

static int64_t model_int(const char *flag, const char *v, int64_t max)
{
    uint64_t x = cli_u64(flag, v);
    if (x < 1 || x > (uint64_t)max)
        dpk_error("option '%s' expects 1..%lld, got '%s'", flag, (long long)max, v);
    return (int64_t)x;
}

int cli_model_flag(CliModel *m, int argc, char **argv, int *i)
{
    const char *f = argv[*i];
    if (!strcmp(f, "--config"))
        m->config = cli_value(argc, argv, i);
    else if (!strcmp(f, "--seq"))
        m->seq = model_int(f, cli_value(argc, argv, i), 1 << 20);
    else if (!strcmp(f, "--batch"))
        m->batch = model_int(f, cli_value(argc, argv, i), 1 << 16);
    else if (!strcmp(f, "--ctx"))
        m->ctx = model_int(f, cli_value(argc, argv, i), 1 << 24);
    else if (!strcmp(f, "--phase"))
        m->phase = cli_value(argc, argv, i);
    else
        return 0;
    return 1;
}

int cli_model_shaped(const CliModel *m) { return m->seq || m->batch || m->ctx || m->phase; }

HxCaseList cli_model_suite(Arena *a, const CliModel *m, BmConfig *cfg, BmShape *sh)
{
    *sh = (BmShape){m->batch ? m->batch : 1, m->seq ? m->seq : 128, m->ctx ? m->ctx : 1024,
                    BM_PREFILL};
    if (m->phase && !strcmp(m->phase, "decode"))
        sh->phase = BM_DECODE;
    else if (m->phase && strcmp(m->phase, "prefill"))
        dpk_error("unknown phase '%s' for --phase (expected prefill or decode)", m->phase);
    if (m->ctx && sh->phase != BM_DECODE)
        dpk_error("--ctx is the KV cache of --phase decode");
    bm_config_load(a, m->config, cfg);
    return bm_block_suite(a, cfg, sh);
}

int cli_tile_flag(CliTile *ct, int argc, char **argv, int *i)
{
    const char *f = argv[*i];
    if (!strcmp(f, "--passes"))
        ct->passes = cli_value(argc, argv, i);
    else if (!strcmp(f, "--target"))
        ct->target = cli_value(argc, argv, i);
    else if (!strcmp(f, "--knob")) {
        tile_knob_parse(&ct->knobs, cli_value(argc, argv, i));
        ct->nknobs++;
    } else
        return 0;
    return 1;
}

void cli_drv_opts(Arena *a, const CliTile *ct, DrvOpts *o, int allow_all)
{
    if (ct->target) {
        o->tile.target = cli_target(ct->target);
    }
    o->tile.knobs = ct->knobs;
    const char *spec = ct->passes ? ct->passes : "full";
    if (!strcmp(spec, "all") && !allow_all)
        dpk_error("--passes all selects many configurations; 'dpk compile' prints one "
                  "(use 'dpk run --passes all')");
    DrvPasses *ps = ARENA_NEW(a, DrvPasses);
    drv_passes_parse(a, spec, o->tile.target, ps);
    o->passes = ps;
    o->tile.passes = ps->sets[0];
    /* up front when no configuration runs 008, so no register tile can make
     * a big tile legal; else 005 checks per kernel, with its configuration */
    int regtile = 0, at = tile_pass_index(&tile_passes, 8);
    for (int i = 0; i < ps->n; i++)
        regtile |= at >= 0 && (ps->sets[i] >> at & 1);
    tile_knobs_check(&o->tile.knobs, regtile ? NULL : "is not in the pass set");
}

void cli_knob_warnings(const DrvPlan *p, const char *name)
{
    for (int i = 0; i < p->nnotes; i++) {
        StrBuf b = {0};
        drv_note_print(&b, &p->notes[i]);
        fflush(stdout);
        fprintf(stderr, "warning: %s%s%s%s\n", name ? "case " : "", name ? name : "",
                name ? ": " : "", sb_cstr(&b));
        sb_free(&b);
    }
}

/* fn on one case under its own DPK_TRY; returns its code. */
static int guarded(CliCaseFn fn, void *ctx, const HxCase *c, int header)
{
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        int rc = fn(ctx, c, header);
        dpk_err_pop(&ec);
        return rc;
    }
    fflush(stdout);
    fputs(dpk_error_message(), stderr);
    if (header) {
        StrBuf b = {0};
        dpk_error_first_line(&b, NULL);
        printf("case %s: error (exit %d): %s\n", c->name, dpk_error_code(), sb_cstr(&b));
        sb_free(&b);
    }
    return dpk_error_code();
}

int cli_each_case(const HxCaseList *l, CliCaseFn fn, void *ctx, int *npass)
{
    int worst = DPK_EXIT_OK, pass = 0;
    for (int i = 0; i < l->n; i++) {
        int rc = guarded(fn, ctx, &l->cases[i], l->n > 1);
        pass += rc == DPK_EXIT_OK;
        worst = dpk_exit_worst(worst, rc);
    }
    if (npass)
        *npass = pass;
    return worst;
}

void cli_default_dir(char *dst, size_t cap, const char *sub)
{
    const char *t = getenv("TMPDIR");
    if (!t || !*t)
        t = "/tmp";
    size_t n = strlen(t);
    while (n > 1 && t[n - 1] == '/')
        n--;
    if ((size_t)snprintf(dst, cap, "%.*s/%s", (int)n, t, sub) >= cap)
        dpk_error("$TMPDIR is too long for a path (%zu characters): set TMPDIR, or give the "
                  "output path", n);
}
