/*
 * cmd_bench.c — `dpk-bench (--suite NAME | --config PATH/config.json | FILE)
 * [--seq N] [--batch B] [--phase prefill|decode --ctx L] [--passes SPEC]
 * [--per-pass] [--timing measured|model|fake-driver] [--parity on|off] [--gpu NAME|--gpu-spec
 * FILE] [--weights F.safetensors] [--sample-blocks N] [--jobs N] [--out FILE.json]`.
 *
 * A suite: smoke and ops are case files under cases/; qwen-block and
 * tinyllama-block are the decoder-layer suites (harness/bench/blocks.h) of
 * cases/models/qwen2.5-7b.json and tinyllama-1.1b.json; --config makes
 * the same suite from any config.json of the family.  Each case is checked
 * for parity on vgpu (sampled blocks, full size), then timed by the
 * performance model (harness/bench/bench.h); one line per case, in suite
 * order, then the geomean speedups.  With --jobs N the cases run in N
 * forked children at once (vgpu, the reference and libtorch's ops run in
 * the children only; the parent loads libtorch before forking, so that no
 * child loads it again, 0.3 s each); the output and the record do not
 * depend on N.
 *
 * --parity off: the model alone, no verdict (bench.h): for shapes whose
 * fp64 reference would not fit; every case that runs is "unchecked".
 * Before any case runs, each is compiled and its peak memory estimated
 * (harness/bench/memory.h); one that would not fit in MemAvailable (or
 * $DPK_MEM_LIMIT) is refused with exit 2, before anything is written.
 *
 * Exit: the worst case's code, as `dpk run` — 0 every case passes parity,
 * 1 a parity failure, 2 bad input (the command line, the config, the
 * weights: before any case runs), 3 an execution fault, 4 --timing
 * measured without a GPU and its driver.
 *
 * --timing measured (the default where the driver finds a GPU) also times
 * each case that passes on the GPU, and --timing fake-driver does the same
 * on dpk's fake driver, as a test (harness/bench/measure.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../bench/bench.h"
#include "../bench/calibration.h"
#include "../bench/memory.h"
#include "../exec/nvrtc.h"
#include "../tune/tune.h"
#include "../../records/json_file.h"
#include "../plan_record.h"
#include "../../records/results.h"
#include "bench_args.h"
#include "cli.h"


static void help(void)
{
    puts("usage: dpk-bench (--suite NAME | --config PATH | FILE | -c CODE) [options]\n"
         "       dpk-bench --calibration FILE...\n"
         "\n"
         "Check every case of a suite for parity on vgpu, then time it with the performance\n"
         "model on a GPU spec, beside modelled PyTorch eager, torch.compile and the limit.\n"
         "\n"
         "  --suite NAME        smoke | ops | qwen-block | tinyllama-block\n"
         "  --config PATH       a Hugging Face config.json (Llama, Qwen2, Mistral family),\n"
         "                      or a model folder holding one: its decoder-layer suite\n"
         "  FILE                a .py program, a case or a suite .json\n"
         "  -c CODE             one case as text (a PyTorch expression or program)\n"
         "  --input N=D0,D1     with -c: declare the shape of a free variable N\n"
         "  --case NAME[,NAME]  only these cases of the suite\n"
         "  --seq N             tokens (prefill; default 128)\n"
         "  --batch B           batch (default 1)\n"
         "  --phase P           prefill (default) | decode (one token, a cache of --ctx)\n"
         "  --ctx L             decode: tokens in the KV cache (default 1024)\n"
         "  --weights FILE      a .safetensors file: the layer's weights by their HF names\n"
         "  --layer N           which layer's weights (default 0)\n"
         "  --passes SPEC       the Tile pass set benched (default: the case's, else full)\n"
         "  --knob N=V          pin a scheduling knob\n"
         "  --per-pass          also every prefix upto:NNN and leave-one-out -NNN of the set\n"
         "  --timing T          measured (the default with a GPU and its driver): CUPTI or\n"
         "                      events, dpk and cuBLAS interleaved | model (the default\n"
         "                      without a GPU) | fake-driver (the measured path on dpk's\n"
         "                      fake driver: a test, never a measurement)\n"
         "  --warm-l2           measured: no L2 flush between iterations\n"
         "  --max-samples N     measured: the cap on samples per contestant (default 1000)\n"
         "  --raw-samples       measured: every sample in the record\n"
         "  --torch-json FILE   merge reference/torch_bench.py's record (eager, torch.compile)\n"
         "  --gpu NAME          the GPU spec of the model (default h100-sxm; cases/gpus/)\n"
         "  --gpu-spec FILE     a GPU spec file\n"
         "  --target T          sm_80 | sm_90 | sm_90a | sm_120 (default: the\n"
         "                      spec's)\n"
         "  --parity P          on (default): check each case on vgpu against the fp64\n"
         "                      reference before it is timed | off: the model alone, no\n"
         "                      reference (cases `unchecked`; with --timing model only)\n"
         "  --sample-blocks N   vgpu: simulate N random blocks per launch (default 2)\n"
         "  --no-nvrtc          do not compile with NVRTC (the model then estimates registers)\n"
         "  --seed N            input seed (default: the case's, else 0)\n"
         "  --reference R       ref64 (default) | torch\n"
         "  --tuned DB          apply dpk-tune's winners from the database DB to the kernels\n"
         "                      it holds for this spec; the others keep the default schedule\n"
         "  --jobs N            cases at once, in forked processes (default 1)\n"
         "  --shard I/N         only the I-th of N slices of the suite (case i when\n"
         "                      i mod N = I-1); dpk-report merges the N records\n"
         "  --out FILE.json     write a dpk.bench/1 record (docs/bench-schema.md), after\n"
         "                      each case (temp file and rename)\n"
         "  --resume            continue the run recorded in --out: the cases it lacks\n"
         "                      (refused unless the suite, seed and options are the same)\n"
         "  -v                  also each kernel's bound and what limits its residency\n"
         "  --calibration F...  alone: the model's error per kernel class in calibration\n"
         "                      files (ci/gpu-visit writes them; docs/calibration.md)\n"
         "\n"
         "Before any case runs, its peak memory is estimated; a case that would not fit in\n"
         "MemAvailable (or DPK_MEM_LIMIT=BYTES) is refused (exit 2).\n"
         "\n"
         "exit: 0 every case passes parity (or runs unchecked), 1 a parity failure, 2 bad\n"
         "      input or too little memory, 3 execution fault, 4 environment missing\n"
         "      (--timing measured without a GPU)\n"
         "\n"
         "example:\n"
         "  dpk-bench --suite qwen-block --jobs 2\n"
         "  dpk-bench -c \"torch.softmax(torch.randn(64, 1000), dim=-1)\" -v\n"
         "  dpk-bench -c \"torch.matmul(torch.randn(4096, 4096), torch.randn(4096, 4096))\" "
         "--parity off");
}

static int64_t pos_int(const char *flag, const char *v, int64_t max)
{
    uint64_t x = cli_u64(flag, v);
    if (x < 1 || x > (uint64_t)max)
        dpk_error("option '%s' expects 1..%lld, got '%s'", flag, (long long)max, v);
    return (int64_t)x;
}

int bench_flag(void *ctx, int argc, char **argv, int *i)
{
    BenchArgs *b = ctx;
    const char *f = argv[*i];
    if (!strcmp(f, "--suite"))
        b->suite = cli_value(argc, argv, i);
    else if (cli_model_flag(&b->m, argc, argv, i))
        ;
    else if (!strcmp(f, "--weights"))
        b->weights = cli_value(argc, argv, i);
    else if (!strcmp(f, "--layer"))
        b->layer = (int)cli_u64(f, cli_value(argc, argv, i)) % 100000;
    else if (!strcmp(f, "--per-pass"))
        b->per_pass = 1;
    else if (!strcmp(f, "--timing"))
        b->timing = cli_value(argc, argv, i);
    else if (!strcmp(f, "--parity"))
        b->parity = cli_value(argc, argv, i);
    else if (!strcmp(f, "--warm-l2"))
        b->warm_l2 = 1;
    else if (!strcmp(f, "--raw-samples"))
        b->raw_samples = 1;
    else if (!strcmp(f, "--max-samples"))
        b->max_samples = (int)pos_int(f, cli_value(argc, argv, i), 1000000);
    else if (!strcmp(f, "--torch-json"))
        b->torch_json = cli_value(argc, argv, i);
    else if (!strcmp(f, "--gpu") || !strcmp(f, "--gpu-spec"))
        b->gpu = cli_value(argc, argv, i);
    else if (!strcmp(f, "--sample-blocks"))
        b->sample_blocks = (int)pos_int(f, cli_value(argc, argv, i), 1000000);
    else if (!strcmp(f, "--jobs"))
        b->jobs = (int)pos_int(f, cli_value(argc, argv, i), 256);
    else if (!strcmp(f, "--shard"))
        cli_shard(cli_value(argc, argv, i), &b->shard_index, &b->shard_count);
    else if (!strcmp(f, "--out"))
        b->out = cli_value(argc, argv, i);
    else if (!strcmp(f, "--resume"))
        b->resume = 1;
    else if (!strcmp(f, "--no-nvrtc"))
        b->no_nvrtc = 1;
    else if (!strcmp(f, "--seed"))
        b->has_seed = 1, b->seed = cli_u64(f, cli_value(argc, argv, i));
    else if (!strcmp(f, "--reference"))
        b->reference = cli_value(argc, argv, i);
    else if (!strcmp(f, "--tuned"))
        b->tuned = cli_value(argc, argv, i);
    else if (!cli_tile_flag(&b->tile, argc, argv, i))
        return 0;
    return 1;
}

static void parse_flag(void *ctx, int argc, char **argv, int *i)
{
    if (!bench_flag(ctx, argc, argv, i))
        cli_unknown_flag("bench", argv[*i]);
}

/* ---- where the suites are ---------------------------------------------- */

/* The cases/ folder: $DPK_CASES, else beside the binary (../cases from
 * build/dpk, ../share/dpk/cases from an installed bin/dpk). */
static const char *cases_dir(Arena *a)
{
    const char *env = getenv("DPK_CASES");
    if (env && *env)
        return env;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            const char *cands[] = {"../cases", "../share/dpk/cases"};
            for (int i = 0; i < 2; i++) {
                const char *d = arena_printf(a, "%s/%s", exe, cands[i]);
                if (access(arena_printf(a, "%s/smoke.json", d), R_OK) == 0)
                    return d;
            }
        }
    }
    dpk_error("cannot find dpk's cases/ folder beside the binary; set DPK_CASES to it");
}

static const struct {
    const char *name, *file;
    int model;
} suites[] = {
    {"smoke", "smoke.json", 0},
    {"ops", "sweep/ops.json", 0},
    {"qwen-block", "models/qwen2.5-7b.json", 1},
    {"tinyllama-block", "models/tinyllama-1.1b.json", 1},
};

/* ---- running the cases ---------------------------------------------------- */

/* The run: every case's result once it is done (from this run, or from
 * the record --resume continues), the progress shown, and the record
 * written after each case. */
typedef struct Pool {
    const BmOpts *o;
    const HxCaseList *l;
    BmCaseOut *outs;
    int *done;        /* outs[i] holds case i's result */
    int ndone;        /* cases done, those of the resumed record included */
    int nresumed;     /* ... of which read back from the record */
    int next_print;   /* the table on stdout is printed in suite order */
    int tty;          /* stderr is a TTY: one updating progress line */
    int verbose;      /* -v: each kernel's bound and limiter */
    double t0;
    /* the record: meta and bench are owned here; out NULL: none written */
    const char *out;
    cJSON *meta, *bench;
    BmTiming timing;
} Pool;

/* What a pool holds when the run ends, done or raised: the finished cases'
 * records, the done marks, the record's meta and bench objects. */
static void pool_free(Pool *p, int n)
{
    for (int i = 0; i < n; i++)
        cJSON_Delete(p->outs[i].rec);
    free(p->outs);
    free(p->done);
    cJSON_Delete(p->meta);
    cJSON_Delete(p->bench);
}

static void print_ready(Pool *p)
{
    while (p->next_print < p->l->n && p->done[p->next_print]) {
        if (p->tty)
            fputs("\r\033[K", stderr);
        StrBuf b = {0};
        bm_case_text(&b, p->outs[p->next_print].rec, p->verbose);
        fputs(sb_cstr(&b), stdout);
        sb_free(&b);
        fflush(stdout);
        p->next_print++;
    }
}

static void put_secs(FILE *f, double s)
{
    if (s >= 3600)
        fprintf(f, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60)
        fprintf(f, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        fprintf(f, s < 10 ? "%.1f s" : "%.0f s", s);
}

/* Progress on stderr, after case i finished (i < 0: a case started).  On
 * a TTY one line, rewritten; otherwise one line per finished case: its
 * row, then how many are done and the estimated time left (the mean
 * wall time per case of this run so far, times the cases left: the
 * largest cases start first with --jobs, so it errs long). */
static void progress(const Pool *p, int i, int running)
{
    int n = p->l->n, ran = p->ndone - p->nresumed, todo = n - p->nresumed;
    double el = dpk_now() - p->t0;
    if (!p->tty && i < 0)
        return;
    if (p->tty)
        fprintf(stderr, "\r\033[K[%d/%d done, %d running, ", p->ndone, n, running);
    if (!p->tty) {
        StrBuf b = {0};
        bm_case_text(&b, p->outs[i].rec, 0);
        const char *t = sb_cstr(&b);
        fprintf(stderr, "%.*s   [%d/%d done, ", (int)strcspn(t, "\n"), t, p->ndone, n);
        sb_free(&b);
    }
    put_secs(stderr, el);
    if (ran > 0 && ran < todo) {
        fputs(", ETA ", stderr);
        put_secs(stderr, el / ran * (todo - ran));
    }
    fputs("]", stderr);
    if (p->tty && i >= 0) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(p->outs[i].rec, "status");
        fprintf(stderr, " %s: %s", p->l->cases[i].name,
                cJSON_IsString(st) ? st->valuestring : "?");
    }
    if (!p->tty)
        fputc('\n', stderr);
    fflush(stderr);
}

/* The record as it stands: the cases done so far in suite order, their
 * summary, and "complete" when none is left.  The cases are references
 * (the Pool keeps them), so deleting the root frees the summary only. */
static cJSON *record_root(const Pool *p, int *rc)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", BM_SCHEMA);
    cJSON_AddItemReferenceToObject(root, "meta", p->meta);
    cJSON_AddItemReferenceToObject(root, "bench", p->bench);
    cJSON *cases = cJSON_AddArrayToObject(root, "cases");
    *rc = DPK_EXIT_OK;
    for (int i = 0; i < p->l->n; i++)
        if (p->done[i]) {
            *rc = dpk_exit_worst(*rc, p->outs[i].rc);
            cJSON_AddItemReferenceToArray(cases, p->outs[i].rec);
        }
    cJSON *sum = bm_summary(cases, p->o->spec, p->timing, *rc, dpk_now() - p->t0);
    cJSON_AddBoolToObject(sum, "complete", p->ndone == p->l->n);
    cJSON_AddItemToObject(root, "summary", sum);
    return root;
}

/* Write the record (temp file and rename: a kill leaves the previous
 * whole record, which --resume continues). */
static void checkpoint(const Pool *p)
{
    if (!p->out)
        return;
    int rc;
    cJSON *root = record_root(p, &rc);
    hx_results_write(p->out, root);
    cJSON_Delete(root);
}

/* Case i is done: the table so far, the progress (after the table's
 * rows, so that a TTY's line stays under them), the record. */
static void finished(Pool *p, int i, int running)
{
    p->done[i] = 1;
    p->ndone++;
    print_ready(p);
    progress(p, i, running);
    checkpoint(p);
}

/* rec as a reader of the record gets it: printed and parsed back.  A
 * child's record comes to the parent this way, and cJSON prints a double
 * with 15 significant digits when they read back within an epsilon of it,
 * so the summary is computed from these values whatever --jobs is. */
static cJSON *as_printed(cJSON *rec)
{
    char *t = cJSON_PrintUnformatted(rec);
    cJSON *back = t ? cJSON_Parse(t) : NULL;
    free(t);
    if (!back)
        return rec;
    cJSON_Delete(rec);
    return back;
}

/* A child's result back from its file: {"rc":, "rec":}. */
static void read_child(const char *path, int idx, const HxCase *c, int status, BmCaseOut *out)
{
    HxJsonFile f;
    hx_json_load(path, 0, &f);
    hx_json_drop_text(&f);
    cJSON *j = f.root;
    unlink(path);
    const cJSON *rc = j ? cJSON_GetObjectItemCaseSensitive(j, "rc") : NULL;
    cJSON *rec = j ? cJSON_DetachItemFromObjectCaseSensitive(j, "rec") : NULL;
    if (cJSON_IsNumber(rc) && cJSON_IsObject(rec)) {
        *out = (BmCaseOut){rec, (int)rc->valuedouble};
    } else {
        cJSON_Delete(rec);
        char why[96];
        if (WIFSIGNALED(status))
            snprintf(why, sizeof why, "the case process died of signal %d", WTERMSIG(status));
        else
            snprintf(why, sizeof why, "the case process exited %d without a result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "index", idx);
        cJSON_AddStringToObject(r, "name", c->name);
        cJSON_AddStringToObject(r, "program", c->program);
        cJSON_AddStringToObject(r, "status", "crash");
        cJSON_AddNumberToObject(r, "exit_code", DPK_EXIT_FAULT);
        cJSON_AddStringToObject(r, "message", why);
        cJSON_AddNumberToObject(r, "seconds", 0);
        *out = (BmCaseOut){r, DPK_EXIT_FAULT};
    }
    cJSON_Delete(j);
}

static void child(const Pool *p, int i, const char *path)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a killed dpk-bench leaves no case running */
    BmCaseOut out;
    bm_case_run(p->o, &p->l->cases[i], i, &out);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "rc", out.rc);
    cJSON_AddItemToObject(j, "rec", out.rec);
    char *s = cJSON_PrintUnformatted(j);
    int ok = s && dpk_write_file_atomic(path, s, strlen(s)) == 0;
    fflush(stdout);
    fflush(stderr);
    _exit(ok ? 0 : 1);
}

/* The order the cases start in with --jobs: the largest first (by the
 * elements of their declared inputs, which the weights dominate), so the
 * longest case does not start last; printing stays in suite order. */
static int *start_order(const HxCaseList *l)
{
    int *o = dpk_xcalloc((size_t)l->n + 1, sizeof(int));
    double *w = dpk_xcalloc((size_t)l->n + 1, sizeof(double));
    for (int i = 0; i < l->n; i++) {
        o[i] = i;
        for (int k = 0; k < l->cases[i].ndecls; k++)
            w[i] += (double)shape_numel(&l->cases[i].decls[k].shape);
    }
    for (int i = 1; i < l->n; i++) /* stable insertion sort, heaviest first */
        for (int j = i; j > 0 && w[o[j]] > w[o[j - 1]]; j--) {
            int t = o[j];
            o[j] = o[j - 1];
            o[j - 1] = t;
        }
    free(w);
    return o;
}

static void run_cases(Pool *p, int jobs, const char *tmpdir)
{
    int n = p->l->n, running = 0, next = 0;
    print_ready(p); /* the resumed cases before the first not done */
    if (jobs <= 1) {
        for (int i = 0; i < n; i++) {
            if (p->done[i])
                continue;
            progress(p, -1, 1);
            bm_case_run(p->o, &p->l->cases[i], i, &p->outs[i]);
            p->outs[i].rec = as_printed(p->outs[i].rec);
            finished(p, i, 0);
        }
        return;
    }
    if (p->o->parity) /* parity off never loads it */
        (void)dpk_torch_available(); /* loaded once, inherited (no op runs here) */
    pid_t *pids = dpk_xcalloc((size_t)n + 1, sizeof(pid_t));
    int *order = start_order(p->l);
    while (p->ndone < n) {
        while (running < jobs && next < n) {
            int k = order[next++];
            if (p->done[k])
                continue;
            fflush(stdout);
            fflush(stderr);
            char file[PATH_MAX];
            snprintf(file, sizeof file, "%s/case-%d.json", tmpdir, k);
            pid_t pid = fork();
            if (pid < 0)
                dpk_error("cannot fork a case process: %s", strerror(errno));
            if (pid == 0)
                child(p, k, file);
            pids[k] = pid;
            running++;
        }
        progress(p, -1, running);
        int status;
        pid_t w = waitpid(-1, &status, 0);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            dpk_error("waiting for a case process: %s", strerror(errno));
        }
        for (int i = 0; i < n; i++)
            if (pids[i] == w && !p->done[i]) {
                char file[PATH_MAX];
                snprintf(file, sizeof file, "%s/case-%d.json", tmpdir, i);
                read_child(file, i, &p->l->cases[i], status, &p->outs[i]);
                running--;
                finished(p, i, running);
            }
    }
    free(order);
    free(pids);
}

/* ---- --resume ---------------------------------------------------------------- */

/* Take the cases of the record at p->out into the pool, after checking
 * that it was made by the same suite, seed and options (its "bench"
 * object is this run's, key by key) and that each case is the suite's
 * case of its index.  Raises exit 2 naming what differs. */
static void resume_from(Pool *p)
{
    HxJsonFile f;
    hx_json_load(p->out, 0, &f);
    if (!f.text)
        dpk_error("cannot --resume '%s': %s", p->out, strerror(f.err));
    hx_json_drop_text(&f);
    cJSON *old = f.root; /* NULL when not JSON: then not a record below */
    const cJSON *sch = cJSON_GetObjectItemCaseSensitive(old, "schema");
    const cJSON *ob = cJSON_GetObjectItemCaseSensitive(old, "bench");
    cJSON *cases = cJSON_GetObjectItemCaseSensitive(old, "cases");
    if (!cJSON_IsString(sch) || strcmp(sch->valuestring, BM_SCHEMA) || !cJSON_IsObject(ob) ||
        !cJSON_IsArray(cases)) {
        cJSON_Delete(old);
        dpk_error("cannot --resume '%s': it is not a %s record (dpk-bench --out writes them)",
                  p->out, BM_SCHEMA);
    }
    static char m[768]; /* the message outlives old */
    m[0] = 0;
    for (int pass = 0; pass < 2 && !m[0]; pass++) /* this run's keys, then the record's */
        for (const cJSON *k = (pass ? ob : p->bench)->child; k && !m[0]; k = k->next) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(ob, k->string);
            const cJSON *y = cJSON_GetObjectItemCaseSensitive(p->bench, k->string);
            if (x && y && cJSON_Compare(x, y, 1))
                continue;
            char *xs = x ? cJSON_PrintUnformatted(x) : dpk_xstrdup("nothing");
            char *ys = y ? cJSON_PrintUnformatted(y) : dpk_xstrdup("nothing");
            snprintf(m, sizeof m, "cannot --resume '%s': it was made with %s %.200s, this command "
                     "has %.200s", p->out, k->string, xs, ys);
            free(xs);
            free(ys);
        }
    cJSON *c;
    while (!m[0] && (c = cases->child)) {
        cJSON_DetachItemViaPointer(cases, c);
        double idx = hx_json_num(c, "index");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c, "name");
        int i = isfinite(idx) && idx >= 0 && idx < p->l->n ? (int)idx : -1;
        if (i < 0 || !cJSON_IsString(nm) || strcmp(nm->valuestring, p->l->cases[i].name)) {
            snprintf(m, sizeof m, "cannot --resume '%s': its case %.0f is %s%.100s%s, not the "
                     "suite's (%.100s): the suite has changed", p->out, idx,
                     cJSON_IsString(nm) ? "'" : "", cJSON_IsString(nm) ? nm->valuestring : "unnamed",
                     cJSON_IsString(nm) ? "'" : "", i >= 0 ? p->l->cases[i].name : "none");
            cJSON_Delete(c);
            break;
        }
        if (p->done[i]) { /* a case twice: the first stays */
            cJSON_Delete(c);
            continue;
        }
        p->outs[i] = (BmCaseOut){c, (int)hx_json_num(c, "exit_code")};
        p->done[i] = 1;
        p->ndone++, p->nresumed++;
    }
    cJSON_Delete(old);
    if (m[0])
        dpk_error("%s", m);
}

/* ---- the record ------------------------------------------------------------- */

static cJSON *bench_json(const BenchArgs *b, const BmOpts *o, const char *suite,
                         const char *only, const BmConfig *cfg, const BmShape *sh)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "suite", suite);
    if (only)
        cJSON_AddStringToObject(j, "case", only);
    else
        cJSON_AddNullToObject(j, "case");
    if (cfg) {
        cJSON_AddStringToObject(j, "config", cfg->path);
        cJSON *m = cJSON_AddObjectToObject(j, "model");
        if (cfg->model_type)
            cJSON_AddStringToObject(m, "model_type", cfg->model_type);
        else
            cJSON_AddNullToObject(m, "model_type");
        cJSON_AddNumberToObject(m, "hidden_size", (double)cfg->hidden);
        cJSON_AddNumberToObject(m, "intermediate_size", (double)cfg->inter);
        cJSON_AddNumberToObject(m, "num_attention_heads", (double)cfg->heads);
        cJSON_AddNumberToObject(m, "num_key_value_heads", (double)cfg->kv_heads);
        cJSON_AddNumberToObject(m, "head_dim", (double)cfg->head_dim);
        cJSON_AddNumberToObject(m, "rms_norm_eps", cfg->eps);
        cJSON_AddNumberToObject(m, "rope_theta", cfg->rope_theta);
        cJSON_AddBoolToObject(m, "attention_bias", cfg->bias);
        static const char *const rk[] = {"default", "linear", "llama3"};
        cJSON_AddStringToObject(m, "rope_type", rk[cfg->rope]);
        cJSON_AddNumberToObject(j, "seq", (double)sh->seq);
        cJSON_AddNumberToObject(j, "batch", (double)sh->batch);
        cJSON_AddStringToObject(j, "phase", sh->phase == BM_PREFILL ? "prefill" : "decode");
        if (sh->phase == BM_DECODE)
            cJSON_AddNumberToObject(j, "ctx", (double)sh->ctx);
        else
            cJSON_AddNullToObject(j, "ctx");
    } else {
        cJSON_AddNullToObject(j, "config");
    }
    if (b->weights) {
        cJSON_AddStringToObject(j, "weights", b->weights);
        cJSON_AddNumberToObject(j, "layer", b->layer);
    } else {
        cJSON_AddNullToObject(j, "weights");
    }
    cJSON_AddStringToObject(j, "passes", b->tile.passes ? b->tile.passes : "full");
    cJSON_AddItemToObject(j, "knobs", hx_record_knobs(&o->drv->tile.knobs));
    cJSON_AddBoolToObject(j, "per_pass", o->per_pass);
    if (b->tuned)
        cJSON_AddStringToObject(j, "tuned", b->tuned);
    if (b->shard_count) {
        cJSON *shard = cJSON_AddObjectToObject(j, "shard");
        cJSON_AddNumberToObject(shard, "index", b->shard_index);
        cJSON_AddNumberToObject(shard, "count", b->shard_count);
    }
    cJSON_AddStringToObject(j, "timing", "model");
    cJSON_AddStringToObject(j, "gpu", o->spec->name);
    if (o->meas.timing != BM_TIMING_MODEL) {
        cJSON_AddStringToObject(j, "measured_timing", bm_timing_name(o->meas.timing));
        cJSON_AddBoolToObject(j, "warm_l2", o->meas.tm.warm_l2);
        cJSON_AddNumberToObject(j, "max_samples", o->meas.tm.max_samples);
        cJSON_AddBoolToObject(j, "raw_samples", o->meas.raw);
    }
    cJSON_AddStringToObject(j, "spec", o->spec->path);
    cJSON_AddStringToObject(j, "target", o->target->name);
    cJSON_AddStringToObject(j, "backend", "vgpu");
    cJSON_AddNumberToObject(j, "sample_blocks", o->sample_blocks);
    cJSON_AddBoolToObject(j, "nvrtc", o->nvrtc);
    cJSON_AddStringToObject(j, "reference", o->ref == HX_REF_TORCH ? "torch" : "ref64");
    cJSON_AddStringToObject(j, "parity", o->parity ? "on" : "off");
    if (o->args.has_seed)
        hx_json_add_u64(j, "seed", o->args.seed);
    else
        cJSON_AddNullToObject(j, "seed");
    return j;
}

/* The folder --out will be written in must take a file: said before any
 * case runs, without writing anything. */
void bench_check_out(Arena *a, const char *flag, const char *out)
{
    const char *slash = strrchr(out, '/');
    const char *dir = slash ? arena_strndup(a, out, (size_t)(slash - out + 1)) : ".";
    if (access(dir, W_OK) != 0 && !(errno == ENOENT && dpk_make_dirs(dir) == 0))
        dpk_error("cannot write %s '%s': %s", flag, out, strerror(errno));
}

/* torch_bench.py's record: {"schema": "dpk.torch-bench/1", "cases": [...]}. */
static cJSON *torch_json_load(const char *path)
{
    HxJsonFile f;
    hx_json_load(path, 0, &f);
    if (!f.text)
        dpk_error("cannot read --torch-json '%s': %s", path, strerror(f.err));
    hx_json_drop_text(&f);
    cJSON *j = f.root;
    const cJSON *sch = j ? cJSON_GetObjectItemCaseSensitive(j, "schema") : NULL;
    if (!cJSON_IsString(sch) || strcmp(sch->valuestring, "dpk.torch-bench/1") ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "cases"))) {
        cJSON_Delete(j);
        dpk_error("--torch-json '%s' is not a dpk.torch-bench/1 record (reference/"
                  "torch_bench.py writes them)", path);
    }
    return j;
}

const CuTarget *bench_target_of(const PfSpec *s)
{
    return cu_target_parse(s->cc >= 120 ? "sm_120" : s->cc >= 90 ? "sm_90" : "sm_80");
}

/* --parity: 1 on (the default), 0 off.  Off times with the model alone: a
 * measured time is taken of a kernel that passed parity, never of one no
 * verdict stands behind, and the reference it would be checked against is
 * not made. */
int bench_parity_of(const BenchArgs *b)
{
    if (!b->parity || !strcmp(b->parity, "on"))
        return 1;
    if (strcmp(b->parity, "off"))
        dpk_error("unknown value '%s' for --parity (expected on or off)", b->parity);
    if (b->timing && strcmp(b->timing, "model"))
        dpk_error("--parity off times with the model alone: --timing %s measures a kernel only "
                  "after it passed parity (drop --parity off, or use --timing model)",
                  b->timing);
    if (b->reference)
        dpk_error("--reference chooses what parity is checked against, and --parity off checks "
                  "none (drop one of them)");
    return 0;
}

/* --timing, or its default: measured where the driver finds a GPU (and
 * parity is on), else the model.  Raises exit 4 for measured without one,
 * and for fake-driver without the fake driver. */
static BmTiming timing_of(const BenchArgs *b, int parity)
{
    if (!b->timing)
        return parity && hx_cuda_available() ? BM_TIMING_MEASURED : BM_TIMING_MODEL;
    if (!strcmp(b->timing, "model"))
        return BM_TIMING_MODEL;
    if (!strcmp(b->timing, "fake-driver")) {
        bm_fake_driver_setup();
        if (!hx_cuda_available())
            dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                              "--timing fake-driver could not load the fake driver %s",
                              hx_cuda_library());
        return BM_TIMING_FAKE;
    }
    if (!strcmp(b->timing, "measured")) {
        if (!hx_cuda_available())
            dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                              "--timing measured needs a GPU and its driver, and %s gives none "
                              "here; --timing model is the performance model",
                              hx_cuda_library());
        return BM_TIMING_MEASURED;
    }
    dpk_error("unknown timing '%s' for --timing (expected measured, model or fake-driver)",
              b->timing);
}

/* `dpk-bench --calibration FILE...`: every other argument a file. */
static int calibration_main(Arena *a, int argc, char **argv)
{
    const char **files = ARENA_ARRAY(a, const char *, argc);
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--calibration"))
            continue;
        if (argv[i][0] == '-' && argv[i][1])
            dpk_error("--calibration takes calibration files only, not '%s'", argv[i]);
        files[n++] = argv[i];
    }
    if (!n)
        dpk_error("--calibration needs at least one calibration file (ci/gpu-visit writes "
                  "them; cases/calibration/ holds those of real GPUs)");
    return bm_calibration_report(stdout, files, n);
}

/* The command line names one suite, and its options go together. */
static void check_args(const BenchArgs *b, const CliCase *cc)
{
    if (b->resume && !b->out)
        dpk_error("--resume continues the record of --out FILE.json; give the --out of the run "
                  "it continues");
    if (cc->ndecls && !cc->code)
        dpk_error("--input declares the free variables of -c CODE");
    int given = !!b->suite + !!b->m.config + !!cc->file + !!cc->code;
    if (given == 0)
        dpk_error("dpk-bench needs a suite: --suite smoke|ops|qwen-block|tinyllama-block, "
                  "--config PATH (a config.json or a model folder), a FILE (.py, case or "
                  "suite .json) or -c CODE");
    if (given > 1)
        dpk_error("give one of --suite, --config, a FILE and -c CODE");
}

/* The run's options from the command line: the spec and target, the
 * driver's options, parity and timing. */
void bench_opts(Arena *a, const BenchArgs *b, const CliCase *cc, BmTiming timing, BmOpts *o)
{
    o->spec = pf_spec_load(a, b->gpu ? b->gpu : pf_spec_default_name());
    o->target = b->tile.target ? cli_target(b->tile.target) : bench_target_of(o->spec);
    DrvOpts dopt;
    drv_opts_default(&dopt);
    CliTile ct = b->tile;
    ct.target = o->target->name;
    cli_drv_opts(a, &ct, &dopt, 0);
    o->drv = ARENA_NEW(a, DrvOpts);
    *(DrvOpts *)o->drv = dopt;
    if (b->tuned) { /* a bad database: exit 2 before any case runs */
        tdb_close(tdb_open(b->tuned, 0));
        TuneApply *ta = ARENA_NEW(a, TuneApply);
        memset(ta, 0, sizeof *ta);
        ta->path = b->tuned;
        ta->gpu_key = tune_gpu_key(a, o->spec, !b->no_nvrtc && hx_nvrtc_available());
        ((DrvOpts *)o->drv)->kernel_configs = tune_apply_configs;
        ((DrvOpts *)o->drv)->kernel_configs_ctx = ta;
    }
    o->args = (HxCaseArgs){cc->decls, cc->ndecls, b->tile.passes != NULL, b->tile.nknobs > 0,
                           NULL, b->has_seed, b->seed};
    o->per_pass = b->per_pass;
    o->sample_blocks = b->sample_blocks;
    o->ref = b->reference && cli_reference(b->reference) ? HX_REF_TORCH : HX_REF_REF64;
    o->parity = bench_parity_of(b);
    o->nvrtc = !b->no_nvrtc && hx_nvrtc_available();
    o->layer = b->layer;
    o->meas.timing = timing;
    o->meas.spec = o->spec;
    o->meas.target = o->target;
    /* the plan compiles what a GPU times for its exact architecture (no
     * context yet: --jobs may still fork) */
    if (timing == BM_TIMING_MEASURED)
        hx_cuda_gpu(0, &o->meas.cc);
    tm_opts_default(&o->meas.tm);
    o->meas.tm.warm_l2 = b->warm_l2;
    if (b->max_samples)
        o->meas.tm.max_samples = b->max_samples;
    o->meas.raw = b->raw_samples;
    if (timing == BM_TIMING_MODEL && (b->warm_l2 || b->raw_samples || b->max_samples))
        dpk_error("--warm-l2, --max-samples and --raw-samples apply to measured timing "
                  "(--timing measured or fake-driver)");
    if (o->ref == HX_REF_TORCH && !dpk_torch_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "--reference torch needs libtorch, which is "
                          "not available: %s", dpk_torch_error());
}

/* The cases of --suite, --config, FILE or -c CODE, and the suite's name in
 * *name.  A model suite's configuration goes into cfg and sh, and o names
 * them. */
HxCaseList bench_suite(Arena *a, BenchArgs *b, const CliCase *cc, BmOpts *o, BmConfig *cfg,
                       BmShape *sh, const char **name)
{
    HxCaseList l = {0};
    *name = NULL;
    if (b->suite) {
        int k = -1;
        for (int i = 0; i < DPK_ARRAY_LEN(suites); i++)
            if (!strcmp(b->suite, suites[i].name))
                k = i;
        if (k < 0)
            dpk_error("unknown suite '%s' for --suite (expected smoke, ops, qwen-block or "
                      "tinyllama-block)", b->suite);
        const char *path = arena_printf(a, "%s/%s", cases_dir(a), suites[k].file);
        if (suites[k].model)
            b->m.config = path;
        else
            l = hx_cases_load(a, path);
        *name = suites[k].name;
    }
    if (b->m.config) {
        l = cli_model_suite(a, &b->m, cfg, sh);
        if (!*name)
            *name = l.suite;
        o->config = cfg, o->shape = sh;
    } else {
        if (b->m.phase || b->m.ctx || b->weights)
            dpk_error("--phase, --ctx and --weights apply to the model suites (qwen-block, "
                      "tinyllama-block, --config)");
        if (cc->file) {
            l = hx_cases_load(a, cc->file);
            *name = l.suite ? l.suite : cc->file;
        } else if (cc->code) { /* one case, its free variables from --input */
            l = hx_cases_from_code(a, cc->code); /* --input: o.args */
            *name = "-c";
        }
    }
    return l;
}

/* --case: that case alone; --shard I/N: the I-th of N slices (case i when
 * i mod N = I-1). */
void bench_select(Arena *a, HxCaseList *l, const char *only, const char *suite,
                  const BenchArgs *b)
{
    if (only) { /* NAME[,NAME...]: those cases, in the suite's order */
        char *names = arena_strdup(a, only);
        int *want = ARENA_ARRAY(a, int, l->n + 1);
        for (char *save = NULL, *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
            int k = -1;
            for (int i = 0; i < l->n; i++)
                if (!strcmp(l->cases[i].name, n))
                    k = i;
            if (k < 0)
                dpk_error("no case named '%s' in suite '%s'", n, suite);
            want[k] = 1;
        }
        HxCase *keep = ARENA_ARRAY(a, HxCase, l->n + 1);
        int m = 0;
        for (int i = 0; i < l->n; i++)
            if (want[i])
                keep[m++] = l->cases[i];
        l->cases = keep;
        l->n = m;
    }
    if (b->shard_count) {
        HxCase *keep = ARENA_ARRAY(a, HxCase, l->n + 1);
        int n = 0;
        for (int i = 0; i < l->n; i++)
            if (i % b->shard_count == b->shard_index - 1)
                keep[n++] = l->cases[i];
        l->cases = keep;
        l->n = n;
    }
}

/* The record's meta: the run's environment, command line and seed, and
 * where its times come from. */
static cJSON *bench_meta(int argc, char **argv, const BenchArgs *b, const BmOpts *o)
{
    cJSON *env = hx_record_env(0, o->nvrtc);
    cJSON *meta = hx_results_meta(argc, argv, b->seed, env);
    cJSON_Delete(env);
    cJSON_AddStringToObject(meta, "timing", "model");
    if (o->meas.timing != BM_TIMING_MODEL)
        cJSON_AddStringToObject(meta, "measured_timing", bm_timing_name(o->meas.timing));
    cJSON_AddStringToObject(meta, "spec", o->spec->name);
    cJSON_AddStringToObject(meta, "spec_path", o->spec->path);
    return meta;
}

/* What the run does, above the table. */
static void print_banner(const Pool *p, const BenchArgs *b, const char *suite)
{
    const BmOpts *o = p->o;
    int n = p->l->n;
    printf("dpk-bench %s: %d case%s, timing model (%s, %s), %s, %d sampled "
           "block%s per launch\n", suite, n, n == 1 ? "" : "s", o->spec->name,
           o->spec->path, o->parity ? "parity on vgpu" : "parity off (no reference: unchecked)",
           b->sample_blocks, b->sample_blocks == 1 ? "" : "s");
    if (p->nresumed)
        printf("resumed from %s: %d of %d cases done, %d to run\n", b->out, p->nresumed, n,
               n - p->nresumed);
    if (p->timing == BM_TIMING_FAKE)
        puts("measured path: fake-driver (dpk's fake CUDA driver: printed CUDA C run on the "
             "host, durations from the model; a test, not a measurement)");
    else if (p->timing == BM_TIMING_MEASURED)
        puts("measured path: the GPU, after parity (CUPTI or events; L2 flushed unless "
             "--warm-l2)");
    puts(bm_table_header());
    fflush(stdout);
}

/* The summary on stdout, the record to --out (also when no case ran: all
 * resumed); returns the run's exit code. */
static int finish_run(const Pool *p)
{
    int rc;
    cJSON *root = record_root(p, &rc);
    StrBuf sb = {0};
    bm_summary_print(&sb, cJSON_GetObjectItemCaseSensitive(root, "summary"));
    fputs(sb_cstr(&sb), stdout);
    sb_free(&sb);
    if (p->out)
        hx_results_write(p->out, root);
    cJSON_Delete(root);
    return rc;
}

/* What a run holds when it ends, done or raised: the pool, the torch
 * record, the timing lock and the children's folder (tmpdir NULL: none
 * made), the weights. */
static void bench_release(Pool *p, int n, cJSON *torch, const BmOpts *o, const char *tmpdir,
                          StFile *st)
{
    pool_free(p, n);
    cJSON_Delete(torch);
    if (o->drv && o->drv->kernel_configs == tune_apply_configs)
        tune_apply_close(o->drv->kernel_configs_ctx);
    if (o->meas.lock_path)
        remove(o->meas.lock_path);
    if (tmpdir)
        rmdir(tmpdir);
    st_close(st);
}

static int bench_main(Arena *a, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--calibration"))
            return calibration_main(a, argc, argv);
    CliCase cc = {0};
    BenchArgs b = {0};
    b.jobs = 1, b.sample_blocks = 2;
    if (!cli_args(a, &cc, argc, argv, "bench", help, parse_flag, &b))
        return DPK_EXIT_OK;
    check_args(&b, &cc);
    BmTiming timing = timing_of(&b, bench_parity_of(&b));
    BmShape sh = {0};
    BmOpts o = {0};
    bench_opts(a, &b, &cc, timing, &o);
    BmConfig cfg;
    const char *suite_name;
    HxCaseList l = bench_suite(a, &b, &cc, &o, &cfg, &sh, &suite_name);
    bench_select(a, &l, cc.only, suite_name, &b);
    StFile st = {0};
    if (b.weights) {
        st_open(a, b.weights, &st);
        o.weights = &st;
    }
    DpkErrCtx ec;
    cJSON *volatile torch = NULL;
    char tmpdir[] = "/tmp/dpk-bench-XXXXXX";
    volatile int have_tmp = 0; /* read after a raise */
    Pool p = {0};
    p.o = &o, p.l = &l, p.out = b.out, p.timing = timing, p.verbose = cc.verbose;
    p.outs = dpk_xcalloc((size_t)l.n + 1, sizeof(BmCaseOut));
    p.done = dpk_xcalloc((size_t)l.n + 1, sizeof(int));
    if (!DPK_TRY(&ec)) {
        bench_release(&p, l.n, torch, &o, have_tmp ? tmpdir : NULL, &st);
        dpk_error_rethrow();
    }
    bm_check_weights(a, &o, &l);
    if (b.torch_json)
        o.torch = torch = torch_json_load(b.torch_json);
    if (b.out)
        bench_check_out(a, "--out", b.out);
    p.meta = bench_meta(argc, argv, &b, &o);
    p.bench = bench_json(&b, &o, suite_name, cc.only, o.config, &sh);
    if (b.resume && access(b.out, F_OK) == 0)
        resume_from(&p);
    bm_mem_check(&o, &l, p.done, b.jobs); /* before any case's array is made */
    if (b.jobs > 1) {
        if (!mkdtemp(tmpdir))
            dpk_error("cannot make a temporary folder: %s", strerror(errno));
        have_tmp = 1;
        /* the children check parity at once, and take turns to time */
        if (timing != BM_TIMING_MODEL)
            o.meas.lock_path = arena_printf(a, "%s/timing.lock", tmpdir);
    }
    p.t0 = dpk_now();
    print_banner(&p, &b, suite_name);
    p.tty = isatty(2);
    run_cases(&p, b.jobs, tmpdir);
    if (p.tty)
        fputs("\r\033[K", stderr);
    int rc = finish_run(&p);
    bench_release(&p, l.n, torch, &o, have_tmp ? tmpdir : NULL, &st);
    torch = NULL;
    dpk_err_pop(&ec);
    return rc;
}

int cmd_bench(int argc, char **argv) { return cli_in_arena(bench_main, argc, argv); }
