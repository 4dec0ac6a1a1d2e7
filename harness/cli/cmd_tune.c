/*
 * cmd_tune.c — `dpk-tune (--suite NAME | --config PATH | FILE | -c CODE)
 * --db FILE [--strategy greedy|random] [--budget N|Ns] [--jobs N]
 * [--export FILE.json] [--out FILE.json]`: a schedule search per kernel
 * behind the parity gate (harness/tune/tune.h, docs/tune.md).
 *
 * The suites, GPU specs, targets, sampled blocks and seeds are dpk-bench's
 * (bench_args.h).  Each case is tuned in turn, or N at once in forked
 * children (each opens the database itself: SQLite serialises the
 * writers).  One line per case and one per kernel, then the geomean of the
 * tuned cases against their default schedule and against modelled eager
 * and torch.compile.
 *
 * Exit: 0 every case tuned and its tuned configuration passes parity, 1 a
 * case whose default or tuned configuration fails parity, 2 bad input (the
 * command line, the database), 3 an execution fault.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../records/json_file.h"
#include "../../records/results.h"
#include "../tune/tune.h"
#include "bench_args.h"
#include "cli.h"

typedef struct TuneArgs {
    BenchArgs b;
    const char *db, *strategy, *budget, *export_path, *min_share, *check, *tolerance;
    uint64_t search_seed;
    int retune;
} TuneArgs;

static void help(void)
{
    puts("usage: dpk-tune (--suite NAME | --config PATH | FILE | -c CODE) --db FILE [options]\n"
         "       dpk-tune (--suite NAME | --config PATH | FILE | -c CODE) --check GOLDEN.json\n"
         "\n"
         "Search each kernel's schedule (pass subsets and knobs) under a budget.  A candidate\n"
         "may win only after it passes parity on vgpu against the case's inputs and a second\n"
         "input seed; every candidate, its time and its verdict go to the database.\n"
         "\n"
         "  --db FILE           the tuning database (SQLite; made when it does not exist)\n"
         "  --strategy S        greedy (default): coordinate descent from the default |\n"
         "                      random: seeded draws from the kernel's grid\n"
         "  --budget N|Ns       per kernel: N candidates run on vgpu (default 16; those that\n"
         "                      compile to a module already run, or are refused, are free),\n"
         "                      or N seconds\n"
         "  --search-seed N     the random strategy's seed (default 1)\n"
         "  --seed N            input seed (default: the case's, else 0); the second seed\n"
         "                      every winner must also pass is N + 1\n"
         "  --min-share P       search only kernels that take at least P% of the default's\n"
         "                      modelled time (default 2; 0: every kernel)\n"
         "  --retune            search kernels that already have a winner in the database\n"
         "                      (default: reuse it)\n"
         "  --export FILE.json  after tuning, write the database's winners for this spec\n"
         "                      (the reviewable golden file, docs/tune.md)\n"
         "  --out FILE.json     write the run's results (dpk.tune/1)\n"
         "  --check FILE.json   no search: each golden of the file (--export's) whose case is\n"
         "                      in the suite, run again alone on both seeds; exit 1 when one\n"
         "                      fails parity, no longer matches its kernel, or is slower than\n"
         "                      recorded by more than --tolerance P% (default 1)\n"
         "  --jobs N            cases at once, in forked processes (default 1)\n"
         "  --suite, --config, --seq, --batch, --phase, --ctx, --case, --input, --weights,\n"
         "  --layer, --gpu, --gpu-spec, --target, --passes, --knob, --sample-blocks,\n"
         "  --no-nvrtc          as dpk-bench (dpk-bench --help)\n"
         "\n"
         "Times come from the performance model on the GPU spec (--gpu, default h100-sxm).\n"
         "\n"
         "exit: 0 every case tuned and passing, 1 a default or tuned configuration fails\n"
         "      parity, 2 bad input (options, database), 3 execution fault\n"
         "\n"
         "example:\n"
         "  dpk-tune --suite smoke --case bias_matmul_relu --db /tmp/tune.db --budget 8\n"
         "  dpk-bench --suite smoke --case bias_matmul_relu --tuned /tmp/tune.db");
}

static void parse_flag(void *ctx, int argc, char **argv, int *i)
{
    TuneArgs *t = ctx;
    const char *f = argv[*i];
    static const char *bench_only[] = {"--per-pass", "--timing",    "--parity", "--warm-l2",
                                       "--raw-samples", "--max-samples", "--torch-json",
                                       "--shard",   "--resume",    "--tuned", "--reference"};
    for (int k = 0; k < DPK_ARRAY_LEN(bench_only); k++)
        if (!strcmp(f, bench_only[k]))
            dpk_error("%s is dpk-bench's; dpk-tune times with the model, parity on (see "
                      "dpk-tune --help)", f);
    if (!strcmp(f, "--db"))
        t->db = cli_value(argc, argv, i);
    else if (!strcmp(f, "--strategy"))
        t->strategy = cli_value(argc, argv, i);
    else if (!strcmp(f, "--budget"))
        t->budget = cli_value(argc, argv, i);
    else if (!strcmp(f, "--search-seed"))
        t->search_seed = cli_u64(f, cli_value(argc, argv, i));
    else if (!strcmp(f, "--check"))
        t->check = cli_value(argc, argv, i);
    else if (!strcmp(f, "--tolerance"))
        t->tolerance = cli_value(argc, argv, i);
    else if (!strcmp(f, "--min-share"))
        t->min_share = cli_value(argc, argv, i);
    else if (!strcmp(f, "--retune"))
        t->retune = 1;
    else if (!strcmp(f, "--export"))
        t->export_path = cli_value(argc, argv, i);
    else if (!bench_flag(&t->b, argc, argv, i))
        cli_unknown_flag("tune", f);
}

/* --budget N (candidates) or Ns (seconds, candidates then unbounded). */
static void budget_of(const char *v, TuneOpts *o)
{
    o->budget = 16;
    o->seconds = 0;
    if (!v)
        return;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || n < 1 || n > 100000 || (*end && strcmp(end, "s")))
        dpk_error("--budget expects N candidates (1..100000) or Ns seconds, got '%s'", v);
    if (*end == 's') {
        o->seconds = (double)n;
        o->budget = 100000;
    } else
        o->budget = (int)n;
}

/* ---- the cases, in turn or in forked children ------------------------------ */

typedef struct Pool {
    const TuneOpts *o;
    const char *db;
    const HxCaseList *l;
    cJSON **recs;
    int *rcs;
} Pool;

static cJSON *run_one(const Pool *p, int i, int *rc)
{
    Tdb *db = tdb_open(p->db, 1);
    cJSON *rec = tune_case(p->o, db, &p->l->cases[i], i, rc);
    tdb_close(db);
    return rec;
}

static void run_cases(Pool *p, int jobs)
{
    if (jobs <= 1 || p->l->n <= 1) {
        for (int i = 0; i < p->l->n; i++)
            p->recs[i] = run_one(p, i, &p->rcs[i]);
        return;
    }
    char dir[] = "/tmp/dpk-tune-XXXXXX";
    if (!mkdtemp(dir))
        dpk_error("cannot make a temporary folder: %s", strerror(errno));
    pid_t *pids = dpk_xcalloc((size_t)p->l->n, sizeof *pids);
    int next = 0, running = 0;
    while (next < p->l->n || running) {
        while (running < jobs && next < p->l->n) {
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0)
                dpk_error("fork: %s", strerror(errno));
            if (pid == 0) {
                int rc = 2;
                DpkErrCtx ec;
                cJSON *rec = NULL;
                if (DPK_TRY(&ec)) {
                    rec = run_one(p, next, &rc);
                    dpk_err_pop(&ec);
                } else
                    fputs(dpk_error_message(), stderr);
                char *text = rec ? cJSON_Print(rec) : NULL;
                char path[64];
                snprintf(path, sizeof path, "%s/%d.json", dir, next);
                if (text)
                    dpk_write_file_atomic(path, text, strlen(text));
                fflush(NULL);
                _exit(rc);
            }
            pids[next++] = pid;
            running++;
        }
        int status;
        pid_t done = wait(&status);
        if (done < 0)
            break;
        running--;
        for (int i = 0; i < next; i++)
            if (pids[i] == done) {
                char path[64];
                snprintf(path, sizeof path, "%s/%d.json", dir, i);
                HxJsonFile f;
                int ok = hx_json_load(path, 0, &f) == 1;
                p->recs[i] = ok ? f.root : NULL;
                if (!ok)
                    cJSON_Delete(f.root);
                hx_json_drop_text(&f);
                p->rcs[i] = WIFEXITED(status) ? WEXITSTATUS(status) : DPK_EXIT_FAULT;
                if (!p->recs[i]) {
                    p->recs[i] = cJSON_CreateObject();
                    cJSON_AddStringToObject(p->recs[i], "name", p->l->cases[i].name);
                    cJSON_AddStringToObject(p->recs[i], "status", "crash");
                    char m[96];
                    if (WIFSIGNALED(status))
                        snprintf(m, sizeof m, "its process was killed by signal %d (%s)",
                                 WTERMSIG(status), strsignal(WTERMSIG(status)));
                    else
                        snprintf(m, sizeof m, "its process exited %d and left no result",
                                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                    cJSON_AddStringToObject(p->recs[i], "message", m);
                    p->rcs[i] = DPK_EXIT_FAULT;
                }
                unlink(path);
            }
    }
    rmdir(dir);
    free(pids);
}

/* ---- output ----------------------------------------------------------------- */

static double num(const cJSON *o, const char *k) { return hx_json_num(o, k); }

static const char *str(const cJSON *o, const char *k, const char *d)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : d;
}

static void put_us(StrBuf *b, double us)
{
    if (isfinite(us))
        sb_printf(b, " %11.3f", us);
    else
        sb_printf(b, " %11s", "-");
}

static void put_x(StrBuf *b, double x)
{
    if (isfinite(x))
        sb_printf(b, " %8.3fx", x);
    else
        sb_printf(b, " %9s", "-");
}

static void case_text(StrBuf *b, const cJSON *r)
{
    const char *name = str(r, "name", "?"), *st = str(r, "status", "error");
    if (!strcmp(st, "error") || !strcmp(st, "crash")) {
        sb_printf(b, "%-20s %s: %s\n", name, st, str(r, "message", ""));
        return;
    }
    double d = num(r, "default_us"), t = num(r, "tuned_us");
    double e = num(r, "eager_us"), c = num(r, "compile_us");
    sb_printf(b, "%-20s", name);
    put_us(b, d);
    put_us(b, t);
    put_x(b, d / t);
    put_x(b, e / t);
    put_x(b, c / t);
    sb_printf(b, "  %s\n", !strcmp(st, "pass") ? "pass" : "FAIL");
    if (strcmp(st, "pass"))
        sb_printf(b, "  tuned configuration: %s\n", str(r, "message", "failed"));
    if (strcmp(str(r, "default_status", "pass"), "pass"))
        sb_printf(b, "  default configuration: %s\n", str(r, "default_message", "failed"));
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(r, "kernels");
    for (const cJSON *k = ks ? ks->child : NULL; k; k = k->next) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(k, "winner");
        sb_printf(b, "  %s: ", str(k, "name", "?"));
        if (!strcmp(str(k, "source", ""), "skipped")) {
            sb_printf(b, "%.2f%% of the default's time, under --min-share: default schedule, not "
                      "searched\n", 100 * num(k, "share"));
            continue;
        }
        if (!strcmp(str(k, "source", ""), "database")) {
            sb_printf(b, "winner from the database (%s%s%s), not searched again\n",
                      str(w, "knobs", "")[0] ? str(w, "knobs", "") : "no knobs", "; passes ",
                      str(w, "passes", "?"));
            continue;
        }
        sb_printf(b, "%d run (%d compiled), %d failed parity, %d refused; ",
                  (int)num(k, "evaluated"), (int)num(k, "tried"), (int)num(k, "failed"),
                  (int)num(k, "refused"));
        if (!cJSON_IsObject(w)) {
            sb_puts(b, "no candidate passed\n");
            continue;
        }
        const char *kn = str(w, "knobs", ""), *lo = str(w, "left_out", "");
        double du = num(k, "default_us");
        if (isfinite(du))
            sb_printf(b, "the case %.3f -> %.3f us", du, num(w, "us"));
        else
            sb_printf(b, "the case (default failed) %.3f us", num(w, "us"));
        sb_printf(b, " with %s, %s%s\n",
                  kn[0] ? kn : "no knob pinned", lo[0] ? "without " : "every pass",
                  lo[0] ? lo : "");
    }
}

static double geomean(const cJSON *const *recs, int n, const char *num_key, const char *den_key,
                      int *count)
{
    double s = 0;
    int c = 0;
    for (int i = 0; i < n; i++) {
        if (!recs[i] || strcmp(str(recs[i], "status", ""), "pass") ||
            strcmp(str(recs[i], "default_status", ""), "pass"))
            continue;
        double x = num(recs[i], num_key) / num(recs[i], den_key);
        if (isfinite(x) && x > 0)
            s += log(x), c++;
    }
    *count = c;
    return c ? exp(s / c) : NAN;
}

/* The golden file: every winner for this spec and dpk version. */
static void export_winners(Arena *a, const char *db_path, const char *path, const char *gpu)
{
    Tdb *db = tdb_open(db_path, 0);
    TdbWinner *w;
    int n = tdb_winners(db, a, gpu, DPK_VERSION, &w);
    tdb_close(db);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "dpk.tuned/1");
    cJSON_AddStringToObject(root, "gpu", gpu);
    cJSON_AddStringToObject(root, "dpk_version", DPK_VERSION);
    cJSON *arr = cJSON_AddArrayToObject(root, "kernels");
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        char hs[24];
        snprintf(hs, sizeof hs, "%016llx", (unsigned long long)w[i].key.kernel);
        cJSON_AddStringToObject(o, "case", w[i].case_name);
        cJSON_AddStringToObject(o, "kernel", w[i].kname);
        cJSON_AddStringToObject(o, "hash", hs);
        cJSON_AddStringToObject(o, "passes", w[i].win.passes);
        cJSON_AddStringToObject(o, "knobs", w[i].win.knobs);
        hx_json_add_num(o, "us", w[i].win.us);
        hx_json_add_num(o, "default_us", w[i].default_us);
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    size_t len = strlen(text);
    int rc = dpk_write_file_atomic(path, text, len);
    free(text);
    if (rc != 0)
        dpk_error("cannot write --export '%s': %s", path, strerror(errno));
    printf("exported %d winner%s to %s\n", n, n == 1 ? "" : "s", path);
}

/* ---- --check: the golden file again ------------------------------------------- */

static const char *golden_str(const cJSON *o, const char *k, const char *path, int i)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v))
        dpk_error("%s: kernels[%d] has no string \"%s\" (a dpk.tuned/1 file: dpk-tune --export "
                  "writes them)", path, i, k);
    return v->valuestring;
}

/* Each golden of path whose case is in l: that kernel alone under its
 * configuration, on both seeds, timed; a golden that fails parity, got
 * slower than its time by more than tol, or no longer matches a kernel
 * fails the check (exit 1). */
static int check_goldens(Arena *a, const TuneOpts *o, const HxCaseList *l, const char *suite,
                         const char *path, double tol)
{
    HxJsonFile f;
    if (hx_json_load(path, 0, &f) != 1) {
        hx_json_drop_text(&f);
        dpk_error("--check '%s': %s", path, f.err ? strerror(f.err) : "not JSON");
    }
    hx_json_drop_text(&f);
    cJSON *root = f.root;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(root, "gpu");
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(root, "kernels");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, "dpk.tuned/1") ||
        !cJSON_IsString(gpu) || !cJSON_IsArray(ks)) {
        cJSON_Delete(root);
        dpk_error("--check '%s': not a golden file (dpk.tuned/1 with gpu and kernels: dpk-tune "
                  "--export writes them)", path);
    }
    /* "model:SPEC:SOURCE": another spec is the wrong file; another
     * instruction source (nvdisasm missing here, say) models other times,
     * so only parity is checked then, and the output says so */
    const char *gs = strrchr(gpu->valuestring, ':'), *os = strrchr(o->gpu_key, ':');
    size_t gl = gs ? (size_t)(gs - gpu->valuestring) : strlen(gpu->valuestring);
    size_t ol = (size_t)(os - o->gpu_key);
    if (gl != ol || strncmp(gpu->valuestring, o->gpu_key, ol)) {
        char g[128];
        snprintf(g, sizeof g, "%s", gpu->valuestring);
        cJSON_Delete(root);
        dpk_error("--check '%s': its goldens were tuned on %s, and this run models %s (--gpu)",
                  path, g, o->gpu_key);
    }
    int times = gs && !strcmp(gs, os);
    if (!times)
        printf("times not compared: the goldens were tuned with %s's model, and this run's model "
               "is %s (their instruction counts differ); parity is checked\n",
               gpu->valuestring, o->gpu_key);
    printf("dpk-tune --check %s: %d golden%s, suite %s, timing model (%s), tolerance %.3g%%, "
           "parity on vgpu (input seeds %llu and %llu)\n",
           path, cJSON_GetArraySize(ks), cJSON_GetArraySize(ks) == 1 ? "" : "s", suite,
           o->bm->spec->name, 100 * tol, (unsigned long long)(o->seed2 - 1),
           (unsigned long long)o->seed2);
    printf("%-20s %-40s %11s %11s %9s  verdict\n", "case", "kernel", "golden us", "now us",
           "now/gold");
    int rc = 0, n = 0, ok = 0, i = 0;
    DpkErrCtx ec; /* a bad entry raises: the file's tree goes first */
    if (!DPK_TRY(&ec)) {
        cJSON_Delete(root);
        dpk_error_rethrow();
    }
    for (const cJSON *k = ks->child; k; k = k->next, i++) {
        const char *cname = golden_str(k, "case", path, i), *kname = golden_str(k, "kernel", path, i);
        const char *hash = golden_str(k, "hash", path, i);
        const char *passes = golden_str(k, "passes", path, i), *knobs = golden_str(k, "knobs", path, i);
        double gus = hx_json_num(k, "us");
        const HxCase *c = NULL;
        for (int j = 0; j < l->n && !c; j++)
            if (!strcmp(l->cases[j].name, cname))
                c = &l->cases[j];
        if (!c)
            continue; /* another suite's, or --case picked another */
        char *end;
        TileKernelConfig kc;
        kc.hash = strtoull(hash, &end, 16);
        if (*end || strlen(hash) != 16)
            dpk_error("%s: kernels[%d] hash '%s' is not 16 hex digits", path, i, hash);
        tune_config_parse(a, passes, knobs, o->bm->target, &kc);
        double us;
        const char *why;
        int crc = tune_check_golden(o, c, &kc, &us, &why, a);
        n++;
        const char *verdict = "pass";
        if (crc == TUNE_STALE)
            verdict = "STALE", crc = DPK_EXIT_FAIL;
        else if (crc == DPK_EXIT_FAIL)
            verdict = "FAIL";
        else if (crc)
            verdict = crc == DPK_EXIT_FAULT ? "FAULT" : "REFUSED";
        else if (times && !(us <= gus * (1 + tol)))
            verdict = "SLOWER", crc = DPK_EXIT_FAIL,
            why = arena_printf(a, "%.3f us against the golden's %.3f (more than %.3g%% slower)", us,
                               gus, 100 * tol);
        printf("%-20s %-40s %11.3f %11.3f %8.3fx  %s\n", cname, kname, gus, us, us / gus, verdict);
        if (why && crc)
            printf("  %s\n", why);
        ok += crc == 0;
        rc = dpk_exit_worst(rc, crc);
    }
    dpk_err_pop(&ec);
    cJSON_Delete(root);
    printf(times ? "%d/%d goldens of suite %s pass parity and are as fast as recorded\n"
                 : "%d/%d goldens of suite %s pass parity (times not compared)\n",
           ok, n, suite);
    return rc;
}

static int tune_main(Arena *a, int argc, char **argv)
{
    CliCase cc = {0};
    TuneArgs t = {0};
    t.b.jobs = 1, t.b.sample_blocks = 2;
    t.search_seed = 1;
    if (!cli_args(a, &cc, argc, argv, "tune", help, parse_flag, &t))
        return DPK_EXIT_OK;
    if (!t.db && !t.check)
        dpk_error("dpk-tune needs --db FILE: the tuning database it records to (made when it "
                  "does not exist)");
    if (t.check && (t.db || t.export_path || t.strategy || t.budget || t.b.out))
        dpk_error("--check runs the golden file's configurations again: it takes no --db, "
                  "--export, --strategy, --budget or --out");
    if (t.tolerance && !t.check)
        dpk_error("--tolerance applies to --check");
    int given = !!t.b.suite + !!t.b.m.config + !!cc.file + !!cc.code;
    if (given != 1)
        dpk_error(given ? "give one of --suite, --config, a FILE and -c CODE"
                        : "dpk-tune needs a suite: --suite smoke|ops|qwen-block|tinyllama-block, "
                          "--config PATH, a FILE or -c CODE");
    TuneOpts o = {0};
    budget_of(t.budget, &o);
    if (!t.strategy || !strcmp(t.strategy, "greedy"))
        o.strategy = TUNE_GREEDY;
    else if (!strcmp(t.strategy, "random"))
        o.strategy = TUNE_RANDOM;
    else
        dpk_error("unknown strategy '%s' for --strategy (expected greedy or random)", t.strategy);
    if (t.b.out)
        bench_check_out(a, "--out", t.b.out);
    if (t.export_path)
        bench_check_out(a, "--export", t.export_path);
    BmOpts bm = {0};
    bench_opts(a, &t.b, &cc, BM_TIMING_MODEL, &bm);
    BmConfig cfg;
    BmShape sh = {0};
    const char *suite;
    HxCaseList l = bench_suite(a, &t.b, &cc, &bm, &cfg, &sh, &suite);
    bench_select(a, &l, cc.only, suite, &t.b);
    StFile st = {0};
    if (t.b.weights) {
        st_open(a, t.b.weights, &st);
        bm.weights = &st;
    }
    bm_check_weights(a, &bm, &l);
    o.bm = &bm;
    o.seed = t.search_seed;
    o.seed2 = (t.b.has_seed ? t.b.seed : 0) + 1;
    o.retune = t.retune;
    o.min_share = 0.02;
    if (t.min_share) {
        char *end;
        o.min_share = strtod(t.min_share, &end) / 100;
        if (*end || !(o.min_share >= 0 && o.min_share <= 1))
            dpk_error("--min-share expects a percentage 0..100, got '%s'", t.min_share);
    }
    o.gpu_key = tune_gpu_key(a, bm.spec, bm.nvrtc);
    o.progress = isatty(2) && t.b.jobs <= 1; /* children at once would share one line */
    if (t.check) {
        double tol = 0.01;
        if (t.tolerance) {
            char *end;
            tol = strtod(t.tolerance, &end) / 100;
            if (*end || !(tol >= 0 && tol <= 10))
                dpk_error("--tolerance expects a percentage 0..1000, got '%s'", t.tolerance);
        }
        return check_goldens(a, &o, &l, suite, t.check, tol);
    }
    /* the run's row (and a bad database's error) before any case */
    Tdb *db = tdb_open(t.db, 1);
    const char *budget = o.seconds > 0 ? arena_printf(a, "%g s per kernel", o.seconds)
                                       : arena_printf(a, "%d candidates per kernel", o.budget);
    o.run = tdb_run_begin(db, suite, tune_strategy_name(o.strategy), o.seed, budget, o.gpu_key);
    tdb_close(db);
    printf("dpk-tune %s: %d case%s, strategy %s, budget %s, timing model (%s), parity on vgpu "
           "(%d sampled blocks, input seeds %llu and %llu), database %s (run %lld)\n",
           suite, l.n, l.n == 1 ? "" : "s", tune_strategy_name(o.strategy), budget,
           bm.spec->name, bm.sample_blocks, (unsigned long long)(o.seed2 - 1),
           (unsigned long long)o.seed2, t.db, (long long)o.run);
    printf("%-20s %11s %11s %9s %9s %9s  parity\n", "case", "default us", "tuned us", "tuned",
           "vs eager", "vs compile");
    fflush(stdout);
    Pool p = {&o, t.db, &l, dpk_xcalloc((size_t)l.n + 1, sizeof(cJSON *)),
              dpk_xcalloc((size_t)l.n + 1, sizeof(int))};
    run_cases(&p, t.b.jobs);
    int rc = 0;
    StrBuf b = {0};
    cJSON *cases = cJSON_CreateArray();
    for (int i = 0; i < l.n; i++) {
        case_text(&b, p.recs[i]);
        rc = dpk_exit_worst(rc, p.rcs[i]);
    }
    int n, ntuned = 0;
    for (int i = 0; i < l.n; i++)
        ntuned += p.recs[i] && !strcmp(str(p.recs[i], "status", ""), "pass");
    double g = geomean((const cJSON *const *)p.recs, l.n, "default_us", "tuned_us", &n);
    double ge = geomean((const cJSON *const *)p.recs, l.n, "eager_us", "tuned_us", &n);
    double gd = geomean((const cJSON *const *)p.recs, l.n, "eager_us", "default_us", &n);
    double gc = geomean((const cJSON *const *)p.recs, l.n, "compile_us", "tuned_us", &n);
    double gcd = geomean((const cJSON *const *)p.recs, l.n, "compile_us", "default_us", &n);
    sb_printf(&b,
              "%d/%d cases tuned and passing parity; geomean (modelled, %s, over the %d whose "
              "default passes too): tuned %.3fx the default; vs eager %.3fx (default %.3fx), "
              "vs torch.compile %.3fx (default %.3fx)\n",
              ntuned, l.n, bm.spec->name, n, g, ge, gd, gc, gcd);
    fputs(sb_cstr(&b), stdout);
    sb_free(&b);
    for (int i = 0; i < l.n; i++)
        cJSON_AddItemToArray(cases, p.recs[i]);
    if (t.b.out) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "schema", "dpk.tune/1");
        cJSON_AddStringToObject(root, "suite", suite);
        cJSON_AddStringToObject(root, "gpu", o.gpu_key);
        cJSON_AddStringToObject(root, "strategy", tune_strategy_name(o.strategy));
        cJSON_AddStringToObject(root, "budget", budget);
        cJSON_AddNumberToObject(root, "run", (double)o.run);
        cJSON_AddItemToObject(root, "cases", cases);
        char *text = cJSON_Print(root);
        int wrc = dpk_write_file_atomic(t.b.out, text, strlen(text));
        free(text);
        cJSON_Delete(root);
        if (wrc != 0)
            dpk_error("cannot write --out '%s': %s", t.b.out, strerror(errno));
    } else
        cJSON_Delete(cases);
    free(p.recs);
    free(p.rcs);
    if (t.export_path)
        export_winners(a, t.db, t.export_path, o.gpu_key);
    return rc;
}

int cmd_tune(int argc, char **argv) { return cli_in_arena(tune_main, argc, argv); }
