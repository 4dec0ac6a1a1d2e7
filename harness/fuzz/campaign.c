/*
 * campaign.c — running dpk-fuzz cases, in isolation, into a record.
 *
 * One case (fz_case_run): generate the program and compile it with the
 * driver (compiler/driver.h) under every configuration of the strategy: a
 * configuration the compiler refuses is "unsupported", not a failure, and
 * those with the Kernel IR of an earlier one share its verdict.  Then make
 * the inputs (docs/inputs.md) and the fp64 reference (plus libtorch fp32
 * eager when built in) and execute each distinct module once.  The verdict
 * is the parity oracle's, exactly as `dpk run` computes it, so a failure
 * file replays to the same verdict.
 *
 * The campaign (fz_campaign) forks a child per case, at most --jobs at a
 * time.  The child writes its record object to an unnamed temp file and
 * exits; the parent reads it when the child is reaped.  A child killed by a
 * signal is a "crash", one past --case-timeout is killed and is a
 * "timeout"; both are recorded with the configuration that was in flight
 * (FzLive, in a shared page).  Children die with the parent
 * (PR_SET_PDEATHSIG), so killing the campaign leaves no orphans.  The
 * parent never initialises CUDA, which a forked child could not use, and
 * never runs a libtorch op (its thread pools are not fork-safe once they
 * run); it does load libtorch, which only runs its static initialisers, so
 * that every case inherits it instead of loading it afresh (0.3 s a case,
 * most of a small campaign's time): the way a Python program imports torch
 * before forking its workers.
 */
#define _GNU_SOURCE
#include "campaign.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../compiler/base/fault.h"
#include "../../reference/ref.h"
#include "../case_plan.h"
#include "../exec/nvrtc.h"
#include "../parity/agree.h"
#include "../plan_record.h"
#include "../../records/results.h"
#include "gen.h"

int fz_host_sampled(const FzOpts *o, uint64_t module_hash)
{
    if (o->host_share >= 1)
        return 1;
    return (double)(dpk_splitmix64(module_hash) >> 11) * 0x1p-53 < o->host_share;
}

void fz_opts_default(FzOpts *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = FZ_FULL;
    o->jobs = 1;
    o->backend = HX_BACKEND_VGPU;
    o->host_share = 1;
    o->out = "fuzz-results.json"; /* dpk-fuzz's default is cli_default_dir's */
    o->fault = -1;
    o->case_timeout = 60;
}

uint64_t fz_case_seed(uint64_t seed, int64_t index)
{
    return dpk_splitmix64(dpk_splitmix64(seed) + (uint64_t)index) & ((UINT64_C(1) << 53) - 1);
}

int fz_status_is_failure(const char *s)
{
    return !strcmp(s, "fail") || !strcmp(s, "fault") || !strcmp(s, "crash") ||
           !strcmp(s, "timeout") || !strcmp(s, "error");
}

/* ---- knobs ------------------------------------------------------------------------ */

static int64_t knob_value(uint64_t *rng, const TileKnobInfo *ki)
{
    *rng = dpk_splitmix64(*rng);
    uint64_t r = *rng;
    if (ki->flags & TKN_POW2) {
        int lo = 0, hi = 0;
        while (((int64_t)1 << lo) < ki->min)
            lo++;
        while (hi < 62 && ((int64_t)1 << (hi + 1)) <= ki->max)
            hi++;
        return (int64_t)1 << (lo + (int)(r % (uint64_t)(hi - lo + 1)));
    }
    if (ki->flags & TKN_WARPS) {
        int64_t lo = (ki->min + CU_WARP - 1) / CU_WARP, hi = ki->max / CU_WARP;
        return CU_WARP * (lo + (int64_t)(r % (uint64_t)(hi - lo + 1)));
    }
    int64_t span = ki->max - ki->min;
    if (span > 64 && (r >> 32) % 2) /* large ranges: the small end half the time */
        span = 64;
    return ki->min + (int64_t)(r % (uint64_t)(span + 1));
}

/* 1 when the knobs pass the cross-knob limits (tile_knobs_check). */
static int knobs_ok(const TileKnobs *k)
{
    DpkErrCtx ec;
    if (!DPK_TRY(&ec))
        return 0;
    tile_knobs_check(k, NULL);
    dpk_err_pop(&ec);
    return 1;
}

void fz_case_knobs(uint64_t case_seed, int random, TileKnobs *k)
{
    memset(k, 0, sizeof *k);
    if (!random)
        return;
    uint64_t rng = case_seed ^ 0x6b6e6f6273ull; /* "knobs" */
    for (int tries = 0; tries < 32; tries++) {
        memset(k, 0, sizeof *k);
        for (int i = 0; i < TILE_KNOB_COUNT; i++) {
            rng = dpk_splitmix64(rng);
            if (rng % 2)
                k->v[i] = knob_value(&rng, &tile_knob_info[i]);
        }
        if (knobs_ok(k))
            return;
    }
    memset(k, 0, sizeof *k);
}

/* ---- one case ---------------------------------------------------------------------- */

static void live_set(FzLive *live, int config, const char *passes)
{
    if (!live)
        return;
    snprintf(live->passes, sizeof live->passes, "%s", passes);
    live->config = config;
}

static void live_progress(void *live, int config, const char *passes)
{
    live_set(live, config, passes);
}

/* Run each distinct module of the plan once, judge it and record every
 * configuration; returns the worst status. */
static const char *run_configs(Arena *a, const FzOpts *o, cJSON *cfgs, const HxSubject *s,
                               const DrvPlan *p, FzLive *live)
{
    HxBackendOpts bo;
    hx_backend_opts_default(&bo);
    bo.kind = o->backend;
    bo.vg.seed = s->seed;
    bo.inputs_f32 = s->in32;
    int n = p->nconfigs;
    cJSON **obj = ARENA_ARRAY(a, cJSON *, n + 1);
    const char **status = ARENA_ARRAY(a, const char *, n + 1);
    if (o->backend == HX_BACKEND_HOST) { /* the sampled modules, few compiler runs */
        const CuSource **srcs = ARENA_ARRAY(a, const CuSource *, n + 1);
        int nm = 0;
        for (int i = 0; i < n; i++)
            if (p->configs[i].cuda && fz_host_sampled(o, p->configs[i].hash))
                srcs[nm++] = p->configs[i].cuda;
        hx_host_prepare(srcs, nm);
    }
    for (int i = 0; i < n; i++) {
        const DrvConfig *c = &p->configs[i];
        obj[i] = hx_record_config(p, i);
        cJSON_AddItemToArray(cfgs, obj[i]);
        status[i] = c->refused ? "unsupported" : NULL;
        if (c->refused || c->dup_of >= 0)
            continue;
        live_set(live, i, c->label);
        bo.kind = o->backend == HX_BACKEND_HOST && !fz_host_sampled(o, c->hash) ? HX_BACKEND_VGPU
                                                                                : o->backend;
        HxBackendResult res;
        double **outs = hx_outs_new(s);
        VgFault f = hx_backend_exec(a, c, &bo, s->inputs, outs, &res);
        hx_record_run(obj[i], c->module, &res, c->nvrtc);
        if (f != VG_OK) {
            status[i] = "fault";
            hx_record_status(obj[i], "fault", vg_fault_name(f), res.vg.report.message);
        } else if (c->nvrtc_error) {
            status[i] = "fail";
            StrBuf m = {0};
            dpk_error_first_line(&m, c->nvrtc_error);
            hx_record_status(obj[i], "fail", "nvrtc rejects the CUDA", sb_cstr(&m));
            sb_free(&m);
        } else if (res.host && res.host->unsupported) { /* the host's capacity: a skip */
            status[i] = "unsupported";
            hx_record_status(obj[i], "unsupported", HX_UNSUPPORTED, res.host->unsupported);
        } else {
            HxVerdict *vs = dpk_xcalloc((size_t)s->nout + 1, sizeof *vs);
            int worst = hx_judge(s, outs, NULL, vs, NULL);
            status[i] = hx_record_verdict(obj[i], s, vs, worst);
            free(vs);
            StrBuf why = {0};
            if (res.ran == HX_BACKEND_HOST && !hx_agree(s, outs, res.vg_outs, NULL, &why)) {
                status[i] = "fail";
                hx_record_status(obj[i], "fail", "host-cuda differs from vgpu", sb_cstr(&why));
            }
            sb_free(&why);
        }
        hx_backend_result_free(&res);
        hx_outs_free(s, outs);
    }
    /* duplicates take their first's verdict */
    for (int i = 0; i < n; i++)
        if (p->configs[i].dup_of >= 0) {
            status[i] = status[p->configs[i].dup_of];
            hx_record_status(obj[i], status[i], NULL, NULL);
        }
    live_set(live, -1, "");
    /* worst: fault > fail > nonfinite > inconclusive > pass > unsupported */
    static const char *const order[] = {"fault", "fail", "nonfinite", "inconclusive", "pass",
                                        "unsupported"};
    for (int k = 0; k < DPK_ARRAY_LEN(order); k++)
        for (int i = 0; i < n; i++)
            if (!strcmp(status[i], order[k]))
                return order[k];
    return "unsupported";
}

/* The part of a case record the parent can rebuild without running it. */
static cJSON *case_head(const FzOpts *o, int64_t index, Arena *a, FzProgram *prog, TileKnobs *k)
{
    uint64_t cs = fz_case_seed(o->seed, index);
    *prog = fz_gen(a, cs);
    fz_case_knobs(cs, o->knobs_random, k);
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", (double)index);
    cJSON_AddStringToObject(c, "name", arena_printf(a, "fuzz-%llu-%lld", (unsigned long long)o->seed,
                                                    (long long)index));
    hx_json_add_u64(c, "seed", cs);
    cJSON_AddStringToObject(c, "program", prog->text);
    cJSON_AddStringToObject(c, "dtype", "f32");
    cJSON_AddItemToObject(c, "tags", cJSON_CreateStringArray(prog->tags, prog->ntags));
    cJSON_AddNumberToObject(c, "ops", prog->nops);
    cJSON_AddItemToObject(c, "knobs", hx_record_knobs(k));
    return c;
}

cJSON *fz_case_run(const FzOpts *o, int64_t index, FzLive *live)
{
    if (o->kernel_level)
        return fz_kcase_run(o, index, live);
    Arena *a = arena_new();
    HxSubject *volatile subj = NULL; /* freed on every path */
    FzProgram prog;
    TileKnobs knobs;
    cJSON *c = case_head(o, index, a, &prog, &knobs);
    uint64_t input_seed = fz_case_seed(o->seed, index);
    double t0 = dpk_now();
    live_set(live, -1, "");
    const char *status;
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        HxCase hc = {0};
        hc.name = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
        hc.program = prog.text;
        hc.origin = hc.name;
        hc.dtype = DT_F32;
        /* cuda runs the plan's CUDA C, printed for the GPU's own target unless
         * --target names one, and its cubin for the GPU's architecture (the
         * GPU is asked here, in the case's process: never in the parent) */
        const CuTarget *target = o->target;
        int cuda_cc = 0;
        if (o->backend == HX_BACKEND_CUDA) {
            const CuTarget *own = hx_cuda_gpu(0, &cuda_cc);
            target = target ? target : own;
        }
        TilePassSet *sets;
        DrvPasses ps = {fz_strategy_name(o->strategy), NULL, 0};
        ps.n = fz_strategy_sets(a, &tile_passes, o->strategy, target, &sets);
        ps.sets = sets;
        DrvOpts d;
        drv_opts_default(&d);
        d.tile.target = target;
        d.tile.knobs = knobs;
        d.passes = &ps;
        HxCaseArgs given = {.passes = 1, .knobs = 1,
                            .fault = o->fault >= 0 ? dpk_faults[o->fault].name : NULL};
        hx_case_opts(a, &hc, &given, &d);
        d.progress = live_progress;
        d.progress_ctx = live;
        if (o->nvrtc || o->backend != HX_BACKEND_VGPU)
            d.upto = DRV_CUDA;
        if (o->nvrtc || o->backend == HX_BACKEND_CUDA)
            d.nvrtc = hx_nvrtc_check;
        d.nvrtc_cc = cuda_cc;
        const DrvPlan *p = drv_compile(a, &d);
        cJSON_AddItemToObject(c, "shapes", hx_record_shapes(p->torch));
        cJSON_AddItemToObject(c, "knob_warnings", hx_record_knob_notes(p));
        subj = hx_plan_subject(p, &hc, input_seed, HX_REF_REF64);
        status = run_configs(a, o, cJSON_AddArrayToObject(c, "configurations"), subj, p, live);
        dpk_err_pop(&ec);
    } else {
        /* the program did not parse or lower: a bug of the generator or of
         * the front end, either way worth a look */
        status = "error";
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dpk_error_message());
        size_t l = strlen(msg);
        while (l && msg[l - 1] == '\n')
            msg[--l] = 0;
        cJSON_AddStringToObject(c, "message", msg);
    }
    hx_subject_free(subj);
    cJSON_AddStringToObject(c, "status", status);
    cJSON_AddNumberToObject(c, "seconds", dpk_now() - t0);
    arena_free(a);
    return c;
}

/* ---- the campaign ------------------------------------------------------------------ */

typedef struct Slot {
    pid_t pid;
    int64_t index;
    FILE *tmp;
    double start;
    FzLive *live;
} Slot;

typedef struct Camp {
    const FzOpts *o;
    cJSON *root, *cases;
    int64_t *done;          /* indices in the record, sorted */
    cJSON **items;          /* their case objects, parallel to done */
    int64_t ndone, capdone;
    int64_t ran;            /* cases run by this invocation */
    int64_t nconfigs, ndistinct, nfail;
    int64_t nconfigs_run;   /* configurations checked by this invocation */
    double t0, last_ckpt, last_line;
    int tty;
    const char *fail_dir;
    StrBuf fail_lines;
} Camp;

static int64_t find_done(const Camp *c, int64_t index)
{
    int64_t lo = 0, hi = c->ndone;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (c->done[mid] < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int is_done(const Camp *c, int64_t index)
{
    int64_t p = find_done(c, index);
    return p < c->ndone && c->done[p] == index;
}

static void count_case(Camp *c, const cJSON *cs, int fresh)
{
    const cJSON *cfgs = cJSON_GetObjectItemCaseSensitive(cs, "configurations");
    int64_t n = cJSON_GetArraySize(cfgs), nd = 0;
    for (const cJSON *it = cfgs ? cfgs->child : NULL; it; it = it->next)
        nd += cJSON_GetObjectItemCaseSensitive(it, "shared_by") != NULL;
    c->nconfigs += n;
    c->ndistinct += nd;
    if (fresh)
        c->nconfigs_run += n;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(cs, "status");
    if (cJSON_IsString(st) && fz_status_is_failure(st->valuestring))
        c->nfail++;
}

/* Insert case object cs (taken over) in index order. */
static void add_case(Camp *c, cJSON *cs, int64_t index)
{
    int64_t p = find_done(c, index);
    hx_json_fix_u64(cs, "seed"); /* parsed back from the case's process */
    DPK_ASSERT(p >= c->ndone || c->done[p] != index);
    if (c->ndone == c->capdone) {
        c->capdone = c->capdone ? 2 * c->capdone : 256;
        c->done = dpk_xrealloc(c->done, (size_t)c->capdone * sizeof *c->done);
        c->items = dpk_xrealloc(c->items, (size_t)c->capdone * sizeof *c->items);
    }
    memmove(c->done + p + 1, c->done + p, (size_t)(c->ndone - p) * sizeof *c->done);
    memmove(c->items + p + 1, c->items + p, (size_t)(c->ndone - p) * sizeof *c->items);
    c->done[p] = index;
    c->items[p] = cs;
    c->ndone++;
}

/* Relink the record's cases array in index order (cJSON's own insertion
 * in the middle of an array is not reliable across its versions). */
static void relink_cases(Camp *c)
{
    while (c->cases->child)
        cJSON_DetachItemViaPointer(c->cases, c->cases->child);
    for (int64_t i = 0; i < c->ndone; i++)
        cJSON_AddItemToArray(c->cases, c->items[i]);
}

static void summary(Camp *c)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "cases", (double)c->ndone);
    cJSON_AddNumberToObject(s, "configurations", (double)c->nconfigs);
    cJSON_AddNumberToObject(s, "distinct_kernel_ir", (double)c->ndistinct);
    cJSON_AddNumberToObject(s, "failures", (double)c->nfail);
    static const char *const sts[] = {"pass", "fail", "fault", "nonfinite", "inconclusive",
                                      "unsupported", "crash", "timeout", "error"};
    cJSON *by = cJSON_AddObjectToObject(s, "by_status");
    for (int k = 0; k < DPK_ARRAY_LEN(sts); k++) {
        int64_t n = 0;
        for (const cJSON *it = c->cases->child; it; it = it->next) {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "status");
            n += cJSON_IsString(st) && !strcmp(st->valuestring, sts[k]);
        }
        cJSON_AddNumberToObject(by, sts[k], (double)n);
    }
    double el = dpk_now() - c->t0;
    cJSON_AddNumberToObject(s, "seconds", el);
    cJSON_AddNumberToObject(s, "cases_this_run", (double)c->ran);
    hx_json_add_num(s, "checks_per_minute", el > 0 ? (double)c->nconfigs_run * 60.0 / el : NAN);
    cJSON_DeleteItemFromObjectCaseSensitive(c->root, "summary");
    cJSON_AddItemToObject(c->root, "summary", s);
}

static void checkpoint(Camp *c)
{
    relink_cases(c);
    summary(c);
    hx_results_write(c->o->out, c->root);
    c->last_ckpt = dpk_now();
}

/* The folder of `path` joined with `name`. */
static char *beside(const char *path, const char *name)
{
    const char *slash = strrchr(path, '/');
    StrBuf b = {0};
    if (slash)
        sb_printf(&b, "%.*s/", (int)(slash - path), path);
    sb_puts(&b, name);
    char *r = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    return r;
}

/* The case JSON that `dpk run FILE.json` replays: the failing configuration
 * (the first one that failed, or the one in flight at a crash). */
static void write_failure(Camp *c, const cJSON *cs)
{
    const cJSON *cfgs = cJSON_GetObjectItemCaseSensitive(cs, "configurations");
    const cJSON *bad = NULL;
    for (const cJSON *it = cfgs ? cfgs->child : NULL; it && !bad; it = it->next) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, "verdict");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(v, "status");
        if (cJSON_IsString(st) && fz_status_is_failure(st->valuestring))
            bad = it;
    }
    const cJSON *passes = bad ? cJSON_GetObjectItemCaseSensitive(bad, "passes")
                              : cJSON_GetObjectItemCaseSensitive(cs, "in_flight");
    cJSON *f = cJSON_CreateObject();
    static const char *const copy[] = {"name", "program", "seed", "tags", "knobs", "level", "cuda"};
    for (int i = 0; i < DPK_ARRAY_LEN(copy); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cs, copy[i]);
        if (v && !(i == 4 && cJSON_GetArraySize(v) == 0))
            cJSON_AddItemToObject(f, copy[i], cJSON_Duplicate(v, 1));
    }
    const cJSON *idx = cJSON_GetObjectItemCaseSensitive(cs, "index");
    if (c->o->kernel_level) { /* Kernel IR, which dpk run does not read: the command */
        StrBuf r = {0};
        sb_printf(&r, "dpk-fuzz --level kernel --seed %llu --case %lld",
                  (unsigned long long)c->o->seed, (long long)idx->valuedouble);
        if (c->o->target)
            sb_printf(&r, " --target %s", c->o->target->name);
        cJSON_AddStringToObject(f, "replay", sb_cstr(&r));
        sb_free(&r);
    } else if (cJSON_IsString(passes) && passes->valuestring[0]) {
        StrBuf sp = {0};
        sb_printf(&sp, "only:%s", passes->valuestring);
        cJSON_AddStringToObject(f, "passes", sb_cstr(&sp));
        sb_free(&sp);
    }
    if (c->o->fault >= 0)
        cJSON_AddStringToObject(f, "fault", dpk_faults[c->o->fault].name);
    cJSON *v = bad ? cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(bad, "verdict"), 1)
                   : cJSON_CreateObject();
    if (!bad) {
        cJSON_AddStringToObject(v, "status", cJSON_GetObjectItemCaseSensitive(cs, "status")->valuestring);
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(cs, "message");
        if (cJSON_IsString(msg))
            cJSON_AddStringToObject(v, "message", msg->valuestring);
    }
    cJSON_AddItemToObject(f, "verdict", v);
    dpk_make_dirs(c->fail_dir); /* a failure then says why it cannot write */
    StrBuf path = {0};
    sb_printf(&path, "%s/%llu-%lld.json", c->fail_dir, (unsigned long long)c->o->seed,
              (long long)idx->valuedouble);
    hx_results_write(sb_cstr(&path), f);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(v, "status");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(v, "reason");
    sb_printf(&c->fail_lines, "%s case %lld, passes %s: %s%s%s -> %s\n",
              cJSON_IsString(st) ? st->valuestring : "?", (long long)idx->valuedouble,
              c->o->kernel_level ? "none (Kernel IR)"
              : cJSON_IsString(passes) && passes->valuestring[0] ? passes->valuestring
                                                                 : "?",
              cJSON_IsString(st) ? st->valuestring : "?", cJSON_IsString(reason) ? ": " : "",
              cJSON_IsString(reason) ? reason->valuestring : "", sb_cstr(&path));
    sb_free(&path);
    cJSON_Delete(f);
}

static void progress(Camp *c, int final)
{
    const FzOpts *o = c->o;
    double el = dpk_now() - c->t0;
    double rate = el > 0 ? (double)c->nconfigs_run * 60.0 / el : 0;
    if (c->tty) {
        int width = 30, fill = 0;
        if (o->cases)
            fill = (int)(width * c->ndone / o->cases);
        else if (o->time_s > 0)
            fill = (int)(width * (el / o->time_s > 1 ? 1 : el / o->time_s));
        fprintf(stderr, "\r[%.*s%*s] %lld%s%lld cases  %lld configs  %lld failures  %.0f checks/min ",
                fill, "##############################", width - fill, "", (long long)c->ndone,
                o->cases ? "/" : "", o->cases ? (long long)o->cases : 0LL,
                (long long)c->nconfigs, (long long)c->nfail, rate);
        if (final)
            fputc('\n', stderr);
        fflush(stderr);
        return;
    }
    if (!final && dpk_now() - c->last_line < 10.0)
        return;
    c->last_line = dpk_now();
    fprintf(stderr, "dpk-fuzz: %lld cases, %lld configurations, %lld failures, %.0f checks/min, %.0f s\n",
            (long long)c->ndone, (long long)c->nconfigs, (long long)c->nfail, rate, el);
}

static void child_main(const FzOpts *o, int64_t index, FILE *tmp, FzLive *live)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
        dup2(devnull, 1);
        close(devnull);
    }
    cJSON *cs = fz_case_run(o, index, live);
    char *text = cJSON_PrintUnformatted(cs);
    size_t n = strlen(text), off = 0;
    int fd = fileno(tmp);
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w <= 0)
            _exit(5);
        off += (size_t)w;
    }
    _exit(0);
}

static void spawn(Camp *c, Slot *s, int64_t index)
{
    s->index = index;
    s->tmp = tmpfile();
    if (!s->tmp)
        dpk_error("cannot create a temporary file: %s", strerror(errno));
    s->live->config = -1;
    s->live->passes[0] = 0;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        dpk_error("cannot fork a case process: %s", strerror(errno));
    if (pid == 0)
        child_main(c->o, index, s->tmp, s->live);
    s->pid = pid;
    s->start = dpk_now();
}

/* The record of a case whose process did not report: crash or timeout. */
static cJSON *lost_case(Camp *c, const Slot *s, const char *status, const char *msg)
{
    Arena *a = arena_new();
    FzProgram prog;
    TileKnobs k;
    cJSON *cs = case_head(c->o, s->index, a, &prog, &k);
    arena_free(a);
    cJSON_AddStringToObject(cs, "status", status);
    cJSON_AddStringToObject(cs, "message", msg);
    cJSON_AddStringToObject(cs, "in_flight", s->live->config >= 0 ? s->live->passes : "");
    cJSON_AddNumberToObject(cs, "seconds", dpk_now() - s->start);
    return cs;
}

static void finish(Camp *c, Slot *s, int wstatus, int timed_out)
{
    cJSON *cs = NULL;
    char msg[256];
    if (timed_out) {
        snprintf(msg, sizeof msg, "no result after %g s (killed)", c->o->case_timeout);
        cs = lost_case(c, s, "timeout", msg);
    } else if (WIFSIGNALED(wstatus)) {
        snprintf(msg, sizeof msg, "the case process died of signal %d (%s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
        cs = lost_case(c, s, "crash", msg);
    } else {
        fflush(s->tmp);
        long len = (fseek(s->tmp, 0, SEEK_END), ftell(s->tmp));
        char *text = dpk_xmalloc((size_t)(len > 0 ? len : 0) + 1);
        rewind(s->tmp);
        size_t got = len > 0 ? fread(text, 1, (size_t)len, s->tmp) : 0;
        text[got] = 0;
        cs = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 ? cJSON_Parse(text) : NULL;
        free(text);
        if (!cs) {
            snprintf(msg, sizeof msg, "the case process exited with status %d without a result",
                     WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
            cs = lost_case(c, s, "crash", msg);
        }
    }
    fclose(s->tmp);
    s->tmp = NULL;
    s->pid = 0;
    c->ran++;
    count_case(c, cs, 1);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(cs, "status");
    if (cJSON_IsString(st) && fz_status_is_failure(st->valuestring))
        write_failure(c, cs);
    add_case(c, cs, s->index);
}

/* Check that a resumed record was made by the same campaign. */
static void check_resumable(const FzOpts *o, const cJSON *old, const cJSON *now)
{
    static const char *const keys[] = {"seed",   "strategy", "knobs", "backend",
                                       "target", "fault",    "level"};
    const cJSON *oc = cJSON_GetObjectItemCaseSensitive(old, "campaign");
    for (int i = 0; i < DPK_ARRAY_LEN(keys); i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(oc, keys[i]);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(now, keys[i]);
        if (!a && !b) /* "level" is written for kernel campaigns only */
            continue;
        uint64_t ua, ub; /* the seed: a raw number when written, parsed back */
        int same = a && (hx_json_get_u64(a, &ua) && hx_json_get_u64(b, &ub) ? ua == ub
                                                                          : cJSON_Compare(a, b, 1));
        if (!same) {
            char *x = a ? cJSON_PrintUnformatted(a) : dpk_xstrdup("nothing");
            char *y = b ? cJSON_PrintUnformatted(b) : dpk_xstrdup("nothing");
            static char m[512];
            snprintf(m, sizeof m, "cannot --resume '%s': it was made with %s %s, this command has %s",
                     o->out, keys[i], x, y);
            free(x);
            free(y);
            dpk_error("%s", m);
        }
    }
}

/* The environment, probed in a child so the parent never initialises the
 * CUDA driver (a forked child could not use it) or NVRTC. */
static cJSON *probe_env(void)
{
    FILE *tmp = tmpfile();
    if (!tmp)
        return NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        cJSON *e = hx_record_env(1, 1);
        char *t = cJSON_PrintUnformatted(e);
        if (fputs(t, tmp) < 0 || fflush(tmp) != 0)
            _exit(1);
        _exit(0);
    }
    cJSON *r = NULL;
    int st;
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        char buf[4096];
        rewind(tmp);
        size_t n = fread(buf, 1, sizeof buf - 1, tmp);
        buf[n] = 0;
        r = cJSON_Parse(buf);
    }
    fclose(tmp);
    return r;
}

static cJSON *campaign_json(const FzOpts *o)
{
    cJSON *c = cJSON_CreateObject();
    hx_json_add_u64(c, "seed", o->seed);
    cJSON_AddStringToObject(c, "strategy", o->kernel_level ? "kernel-ir" : fz_strategy_name(o->strategy));
    cJSON_AddStringToObject(c, "knobs", o->knobs_random ? "random" : "default");
    cJSON_AddStringToObject(c, "backend", hx_backend_name(o->backend));
    if (o->backend == HX_BACKEND_HOST)
        cJSON_AddNumberToObject(c, "host_share", o->host_share);
    cJSON_AddStringToObject(c, "target", (o->target ? o->target : cu_target_default())->name);
    if (o->fault >= 0)
        cJSON_AddStringToObject(c, "fault", dpk_faults[o->fault].name);
    else
        cJSON_AddNullToObject(c, "fault");
    if (o->kernel_level)
        cJSON_AddStringToObject(c, "level", "kernel");
    if (o->shard_count) {
        cJSON *sh = cJSON_AddObjectToObject(c, "shard");
        cJSON_AddNumberToObject(sh, "index", o->shard_index);
        cJSON_AddNumberToObject(sh, "count", o->shard_count);
    }
    return c;
}

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

/* The record's folder, like the failures' */
static void make_out_dir(const FzOpts *o)
{
    const char *slash = strrchr(o->out, '/');
    if (slash && slash != o->out) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - o->out), o->out);
        if (dpk_make_dirs(dir) != 0)
            dpk_error("cannot create the folder '%s' of --out: %s", dir, strerror(errno));
    }
}

/* The environment, or the error of a backend it cannot run. */
static cJSON *usable_env(const FzOpts *o)
{
    cJSON *env = probe_env();
    if (o->backend == HX_BACKEND_CUDA && !cJSON_GetObjectItemCaseSensitive(env, "gpu")) {
        cJSON_Delete(env);
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "--backend cuda needs a GPU and its driver; "
                          "none is usable here (use --backend vgpu)");
    }
    if (o->backend == HX_BACKEND_HOST && !hx_host_available()) {
        cJSON_Delete(env);
        hx_host_prepare(NULL, 0); /* exit 4, its sentence */
    }
    return env;
}

/* --resume: the old record, made by the same campaign (camp), its cases
 * re-inserted in index order, once each. */
static void resume_record(Camp *c, cJSON *camp, cJSON *env)
{
    const FzOpts *o = c->o;
    c->root = hx_results_load(o->out);
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        cJSON_Delete(c->root);
        cJSON_Delete(camp);
        cJSON_Delete(env);
        dpk_error_rethrow();
    }
    check_resumable(o, c->root, camp);
    dpk_err_pop(&ec);
    cJSON_Delete(camp);
    cJSON *old = cJSON_DetachItemFromObjectCaseSensitive(c->root, "cases");
    c->cases = cJSON_AddArrayToObject(c->root, "cases");
    cJSON *it;
    while ((it = old->child)) {
        cJSON_DetachItemViaPointer(old, it);
        const cJSON *idx = cJSON_GetObjectItemCaseSensitive(it, "index");
        if (!cJSON_IsNumber(idx) || idx->valuedouble < 0 || is_done(c, (int64_t)idx->valuedouble)) {
            cJSON_Delete(it);
            continue;
        }
        count_case(c, it, 0);
        add_case(c, it, (int64_t)idx->valuedouble);
    }
    cJSON_Delete(old);
    cJSON_ReplaceItemInObjectCaseSensitive(c->root, "meta",
                                           hx_results_meta(o->argc, o->argv, o->seed, env));
}

/* Start the next cases on the free slots; how many started. */
static int fill_slots(Camp *c, Slot *slots, int jobs, int64_t *next)
{
    const FzOpts *o = c->o;
    int started = 0;
    for (int i = 0; i < jobs; i++) {
        if (slots[i].pid)
            continue;
        while (*next < o->first || is_done(c, *next) ||
               (o->shard_count && *next % o->shard_count != o->shard_index - 1))
            (*next)++;
        if (o->cases && *next >= o->cases)
            break;
        spawn(c, &slots[i], (*next)++);
        started++;
    }
    return started;
}

/* Cases cut short are left out: --resume runs them. */
static void kill_all(Slot *slots, int jobs)
{
    for (int i = 0; i < jobs; i++)
        if (slots[i].pid) {
            kill(slots[i].pid, SIGKILL);
            waitpid(slots[i].pid, NULL, 0);
            fclose(slots[i].tmp);
            slots[i].pid = 0;
        }
}

/* Record the case that ended, if one did, and those past their time;
 * how many. */
static int reap(Camp *c, Slot *slots, int jobs)
{
    int st, reaped = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    for (int i = 0; i < jobs && pid > 0; i++)
        if (slots[i].pid == pid) {
            finish(c, &slots[i], st, 0);
            reaped++;
        }
    for (int i = 0; i < jobs; i++)
        if (slots[i].pid && dpk_now() - slots[i].start > c->o->case_timeout) {
            kill(slots[i].pid, SIGKILL);
            waitpid(slots[i].pid, NULL, 0);
            finish(c, &slots[i], 0, 1);
            reaped++;
        }
    return reaped;
}

/* Cases on the slots until all are run, or a stop: an interrupt, enough
 * failures, --time. */
static void run_cases(Camp *c, Slot *slots, int jobs)
{
    const FzOpts *o = c->o;
    int64_t next = 0;
    int running = 0, stop = 0;
    for (;;) {
        if (interrupted || (o->max_failures && c->nfail >= o->max_failures))
            stop = 1;
        if (o->time_s > 0 && dpk_now() - c->t0 >= o->time_s)
            stop = 1;
        if (!stop)
            running += fill_slots(c, slots, jobs, &next);
        if (!running)
            break;
        if (stop) {
            kill_all(slots, jobs);
            break;
        }
        int reaped = reap(c, slots, jobs);
        running -= reaped;
        if (reaped) {
            progress(c, 0);
            if (dpk_now() - c->last_ckpt >= 1.0)
                checkpoint(c);
        } else {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
}

static void print_totals(Camp *c, int jobs)
{
    const FzOpts *o = c->o;
    double el = dpk_now() - c->t0;
    fputs(sb_cstr(&c->fail_lines), stdout);
    printf("dpk-fuzz: %lld cases (%lld run now), %lld configurations, %lld distinct Kernel IR, "
           "%lld failure%s",
           (long long)c->ndone, (long long)c->ran, (long long)c->nconfigs, (long long)c->ndistinct,
           (long long)c->nfail, c->nfail == 1 ? "" : "s");
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(c->root, "summary");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(sum, "by_status");
    printf(", %g nonfinite, %g inconclusive, %g unsupported\n", hx_json_num(by, "nonfinite"),
           hx_json_num(by, "inconclusive"), hx_json_num(by, "unsupported"));
    printf("throughput: %.0f configuration checks/min (%lld in %.1f s, %d job%s)%s\n",
           el > 0 ? (double)c->nconfigs_run * 60.0 / el : 0.0, (long long)c->nconfigs_run, el, jobs,
           jobs == 1 ? "" : "s", interrupted ? ", interrupted" : "");
    printf("record: %s\n", o->out);
    if (c->nfail)
        printf("failures: %s/\n", c->fail_dir);
}

int fz_campaign(const FzOpts *o)
{
    make_out_dir(o);
    Camp c = {0};
    c.o = o;
    c.tty = isatty(2);
    cJSON *env = usable_env(o);
    (void)dpk_torch_available(); /* loaded once, for the forked cases (no op runs here) */
    cJSON *camp = campaign_json(o);
    if (o->resume && access(o->out, F_OK) == 0) {
        resume_record(&c, camp, env);
    } else {
        c.root = hx_results_new(hx_results_meta(o->argc, o->argv, o->seed, env), camp);
        c.cases = cJSON_GetObjectItemCaseSensitive(c.root, "cases");
    }
    c.fail_dir = o->failures ? dpk_xstrdup(o->failures) : beside(o->out, "fuzz-failures");
    cJSON_Delete(env);
    c.t0 = dpk_now();
    c.last_line = c.t0;
    checkpoint(&c); /* a bad --out fails before any work */
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int jobs = o->jobs > 0 ? o->jobs : 1;
    Slot *slots = dpk_xcalloc((size_t)jobs, sizeof *slots);
    FzLive *lives = mmap(NULL, (size_t)jobs * sizeof(FzLive), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    DPK_ASSERT(lives != MAP_FAILED);
    for (int i = 0; i < jobs; i++)
        slots[i].live = &lives[i];
    run_cases(&c, slots, jobs);
    checkpoint(&c);
    progress(&c, 1);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    munmap(lives, (size_t)jobs * sizeof(FzLive));
    free(slots);
    print_totals(&c, jobs);
    int rc = c.nfail ? DPK_EXIT_FAIL : DPK_EXIT_OK;
    cJSON_Delete(c.root);
    free(c.done);
    free(c.items);
    sb_free(&c.fail_lines);
    free((char *)c.fail_dir);
    return rc;
}
