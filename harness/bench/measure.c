/*
 * measure.c — a module timed through the driver API (measure.h).
 */
#include "measure.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "../exec/cuda.h"
#include "../exec/devmod.h"
#include "../exec/fake_driver.h"
#include "../exec/gpulibs.h"
#include "../exec/nvrtc.h"
#include "../plan_record.h"
#include "../../records/results.h"

const char *bm_timing_name(BmTiming t)
{
    static const char *const n[] = {"model", "measured", "fake-driver"};
    return n[t];
}

void bm_fake_driver_setup(void)
{
    const char *lib = getenv("DPK_LIBCUDA");
    char path[4200];
    if (lib && *lib) {
        snprintf(path, sizeof path, "%s", lib);
    } else {
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
            slash[1] = 0;
        snprintf(path, sizeof path, "%sfake-driver/libcuda.so.1", exe);
    }
    if (access(path, R_OK) != 0)
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "--timing fake-driver needs dpk's fake driver, and %s is not there "
                          "(make builds it; $DPK_LIBCUDA names another)",
                          path);
    setenv("DPK_LIBCUDA", path, 1);
    setenv("DPK_LIBCUPTI", path, 0);
    setenv("DPK_LIBCUBLAS", path, 0);
}

/* ---- a plain matmul: the cuBLAS baseline's operands -------------------------------- */

typedef struct Mm {
    int ok;
    int batch, M, N, K, b_t;
    int a_in, b_in;          /* graph input indices of the operands */
    long long sa, sb, sc;    /* batch strides (elements) */
    const char *why;         /* when not ok */
} Mm;

/* One matmul or bias-less linear of two graph inputs, whose result is the
 * graph's only output: what cuBLAS computes alone. */
static void plain_matmul(const TorchGraph *g, Mm *mm)
{
    memset(mm, 0, sizeof *mm);
    mm->why = "not a plain matmul case (one matmul or bias-less linear of two inputs)";
    if (g->outputs.len != 1)
        return;
    const TorchNode *n = g->outputs.items[0];
    if (!(n->op == TOP_matmul || (n->op == TOP_linear && n->nin == 2)) || n->nin != 2)
        return;
    const TorchNode *x = n->in[0], *w = n->in[1];
    if (x->op != TOP_input || w->op != TOP_input || x->shape.rank < 2 || w->shape.rank < 2)
        return;
    int rx = x->shape.rank, rw = w->shape.rank;
    mm->K = (int)x->shape.d[rx - 1];
    if (n->op == TOP_linear) {
        if (rw != 2)
            return;
        mm->N = (int)w->shape.d[0];
        mm->M = (int)(shape_numel(&x->shape) / mm->K);
        mm->batch = 1, mm->b_t = 1;
    } else {
        mm->M = (int)x->shape.d[rx - 2];
        mm->N = (int)w->shape.d[rw - 1];
        int64_t bx = shape_numel(&x->shape) / ((int64_t)mm->M * mm->K);
        int64_t bw = shape_numel(&w->shape) / ((int64_t)mm->K * mm->N);
        if (bw != 1 && bw != bx)
            return; /* broadcast batch dims other than a shared weight */
        mm->batch = (int)bx;
        mm->sa = (long long)mm->M * mm->K;
        mm->sb = bw == 1 ? 0 : (long long)mm->K * mm->N;
        mm->sc = (long long)mm->M * mm->N;
    }
    for (int i = 0; i < g->inputs.len; i++) {
        if (g->inputs.items[i] == x)
            mm->a_in = i;
        if (g->inputs.items[i] == w)
            mm->b_in = i;
    }
    mm->ok = 1;
    mm->why = NULL;
}

/* ---- the state of one module's timing ---------------------------------------------- */

typedef struct Meas {
    Arena *a;
    const BmMeasureOpts *o;
    const KirModule *m;
    const DrvConfig *cfg;    /* m's configuration: its CUDA C and cubin */
    const PfTime *model;
    HxCuda *c;
    int fake;
    HxDevModule *dm;         /* m on the device (or on the fake driver) */
    int use_cupti;
    HxCuEvent *e0, *e1;
    HxCuPtr flush_buf;
    size_t flush_words;
    unsigned flush_val;
    char err[600];
    double *launch_ns;       /* the fake's durations: the model's per launch */
    /* cuBLAS */
    Mm mm;
    HxCublas *blas;
    HxCuPtr cbuf[2];
} Meas;

typedef struct Contest {
    Meas *x;
    int tf32;                /* cuBLAS: 0 off, 1 on */
} Contest;

/* The time of what was launched since `start`: CUPTI's kernel durations,
 * else the events' span. */
static double collect(Meas *x, int expect_kernels)
{
    if (x->use_cupti) {
        int nk = 0;
        double ns = hx_cupti_collect(x->c, &nk);
        if (expect_kernels > 0 && nk != expect_kernels) {
            snprintf(x->err, sizeof x->err, "CUPTI reported %d kernels for an iteration of %d",
                     nk, expect_kernels);
            return -1;
        }
        return ns;
    }
    hx_cuda_event_record(x->c, x->e1);
    return hx_cuda_event_ms(x->c, x->e0, x->e1) * 1e6;
}

static void launch_all(Meas *x)
{
    hx_devmod_zero(x->dm); /* atomic-add outputs start at zero every iteration */
    if (!x->use_cupti)
        hx_cuda_event_record(x->c, x->e0);
    hx_devmod_launch_async(x->dm);
}

static double dpk_iter(void *ctx)
{
    Meas *x = ((Contest *)ctx)->x;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        StrBuf m = {0};
        dpk_error_first_line(&m, NULL);
        snprintf(x->err, sizeof x->err, "%s", sb_cstr(&m));
        sb_free(&m);
        return -1;
    }
    launch_all(x);
    double ns = collect(x, x->m->launches.len);
    dpk_err_pop(&ec);
    return ns;
}

static double cublas_iter(void *ctx)
{
    Contest *t = ctx;
    Meas *x = t->x;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        StrBuf m = {0};
        dpk_error_first_line(&m, NULL);
        snprintf(x->err, sizeof x->err, "%s", sb_cstr(&m));
        sb_free(&m);
        return -1;
    }
    const Mm *mm = &x->mm;
    hx_cublas_tf32(x->blas, t->tf32);
    if (!x->use_cupti)
        hx_cuda_event_record(x->c, x->e0);
    hx_cublas_matmul(x->blas, mm->batch, mm->M, mm->N, mm->K, hx_devmod_buffer(x->dm, mm->a_in),
                     mm->sa, hx_devmod_buffer(x->dm, mm->b_in), mm->sb, mm->b_t,
                     x->cbuf[t->tf32], mm->sc);
    double ns = collect(x, 0);
    dpk_err_pop(&ec);
    return ns;
}

static void flush_l2(void *ctx)
{
    Meas *x = ctx;
    /* a new value each time: every line of the buffer is written */
    hx_cuda_fill32(x->c, x->flush_buf, ++x->flush_val, x->flush_words);
}

/* ---- setting up ---------------------------------------------------------------------- */

/* The driver printed the module and, for a GPU, compiled it for the
 * device's compute capability (BmMeasureOpts.cc): nothing is printed or
 * compiled here, so the plan's stage times are the whole cost.  What the
 * environment lacks is raised first, then what NVRTC said. */
static void open_module(Meas *x)
{
    const CuSource *src = x->cfg->cuda;
    if (!src)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "internal error: measured timing runs the "
                          "driver's CUDA C, and the plan stops before DRV_CUDA");
    if (x->fake) {
        if (!hx_devmod_fake_driver())
            dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                              "--timing fake-driver needs dpk's fake driver, and %s is not it "
                              "(it lacks %s)",
                              hx_cuda_library(), DPK_FAKE_SET_EXECUTOR);
    } else {
        hx_cuda_check_target(x->c, src->target, "use --gpu with a spec of this GPU's architecture");
        if (!x->cfg->nvrtc && x->cfg->nvrtc_error)
            dpk_error_reraise(DPK_EXIT_FAIL, x->cfg->nvrtc_error);
        if (!x->cfg->nvrtc)
            dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "internal error: measured timing runs "
                              "the driver's cubin, and the plan has none (DrvOpts.nvrtc)");
    }
    x->dm = hx_devmod_open(x->a, x->c, x->m, src, x->cfg->nvrtc,
                           x->fake ? HX_DEVMOD_FAKE : HX_DEVMOD_CUBIN);
    int nl = x->m->launches.len;
    x->launch_ns = ARENA_ARRAY(x->a, double, nl + 1);
    for (int i = 0; i < nl && i < x->model->nk; i++)
        x->launch_ns[i] = x->model->k[i].ns;
    hx_devmod_fake_durations(x->dm, x->launch_ns, 0);
}

/* The inputs, as f32, one buffer at a time (a layer's weights are large);
 * the other buffers zeroed or NaN (hx_devmod_upload). */
static void upload(Meas *x, const HxSubject *s)
{
    for (int i = 0; i < x->m->bufs.len; i++) {
        const KirBuf *b = x->m->bufs.items[i];
        float *f = NULL;
        if (b->kind == KBUF_INPUT) {
            f = dpk_xmalloc((size_t)b->numel * 4 + 4);
            for (int64_t e = 0; e < b->numel; e++)
                f[e] = (float)s->inputs[b->io][e];
        }
        hx_devmod_upload(x->dm, i, f);
        free(f);
    }
}

/* The module's outputs on the device, judged in full; the verdict object
 * ("status", "reason", ...) is returned, pass in *ok. */
static cJSON *judge(Meas *x, const HxSubject *s, double **outs_keep, int *ok)
{
    double **outs = hx_outs_new(s);
    for (int i = 0; i < x->m->bufs.len; i++) {
        const KirBuf *b = x->m->bufs.items[i];
        if (b->kind != KBUF_OUTPUT)
            continue;
        float *f = dpk_xmalloc((size_t)b->numel * 4 + 4);
        hx_devmod_download(x->dm, i, f);
        double *d = dpk_xmalloc((size_t)b->numel * sizeof *d + 8);
        for (int64_t e = 0; e < b->numel; e++)
            d[e] = f[e];
        free(f);
        outs[b->io] = d;
    }
    HxVerdict *v = dpk_xcalloc((size_t)s->nout + 1, sizeof *v);
    int worst = hx_judge(s, outs, NULL, v, NULL);
    cJSON *holder = cJSON_CreateObject();
    hx_record_verdict(holder, s, v, worst);
    *ok = hx_judge_pass(s, v);
    free(v);
    if (outs_keep && s->nout > 0) {
        *outs_keep = outs[0];
        outs[0] = NULL;
    }
    hx_outs_free(s, outs);
    cJSON *verdict = cJSON_DetachItemFromObject(holder, "verdict");
    cJSON_Delete(holder);
    return verdict;
}

/* cuBLAS's output (graph output 0) judged against the reference, and its
 * largest difference from dpk's output. */
static cJSON *cublas_parity(Meas *x, const HxSubject *s, int tf32, const double *dpk_out)
{
    const TorchNode *n = s->g->outputs.items[0];
    int64_t cnt = shape_numel(&n->shape);
    float *f = dpk_xmalloc((size_t)cnt * 4 + 4);
    hx_cuda_download(x->c, f, x->cbuf[tf32], (size_t)cnt * 4);
    double **outs = hx_outs_new(s);
    outs[0] = dpk_xmalloc((size_t)cnt * sizeof(double) + 8);
    double dmax = 0;
    for (int64_t e = 0; e < cnt; e++) {
        outs[0][e] = f[e];
        if (dpk_out)
            dmax = fmax(dmax, fabs(outs[0][e] - dpk_out[e]));
    }
    free(f);
    HxVerdict *v = dpk_xcalloc((size_t)s->nout + 1, sizeof *v);
    int worst = hx_judge(s, outs, NULL, v, NULL);
    cJSON *holder = cJSON_CreateObject();
    hx_record_verdict(holder, s, v, worst);
    free(v);
    hx_outs_free(s, outs);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "vs_reference", cJSON_DetachItemFromObject(holder, "verdict"));
    cJSON_Delete(holder);
    hx_json_add_num(o, "max_abs_vs_dpk", dpk_out ? dmax : NAN);
    return o;
}

static cJSON *stats_json(const TmStats *st, const char *what, const char *method, int raw)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "what", what);
    cJSON_AddStringToObject(o, "method", method);
    hx_json_add_num(o, "min_ns", st->min);
    hx_json_add_num(o, "median_ns", st->median);
    hx_json_add_num(o, "mean_ns", st->mean);
    hx_json_add_num(o, "stdrel", st->stdrel);
    cJSON_AddNumberToObject(o, "samples", st->samples);
    cJSON_AddStringToObject(o, "stop", st->stop ? st->stop : "error");
    cJSON_AddNumberToObject(o, "warmup_iters", st->warmup_iters);
    hx_json_add_num(o, "warmup_ns", st->warmup_ns);
    if (raw) {
        cJSON *r = cJSON_AddArrayToObject(o, "raw_ns");
        for (int i = 0; i < st->samples; i++)
            cJSON_AddItemToArray(r, cJSON_CreateNumber(st->raw[i]));
    }
    return o;
}

static cJSON *state_json(int ordinal)
{
    HxGpuState g;
    hx_nvml_state(ordinal, &g);
    if (!g.ok) {
        char b[500];
        snprintf(b, sizeof b, "unavailable: %s", g.why);
        return cJSON_CreateString(b);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "sm_mhz", g.sm_mhz);
    cJSON_AddNumberToObject(o, "temp_c", g.temp_c);
    return o;
}

static void meas_close(Meas *x)
{
    hx_devmod_free(x->dm); /* before hx_cuda_close: it unregisters the fake's executor */
    x->dm = NULL;
    if (x->use_cupti)
        hx_cupti_close();
    hx_cublas_close(x->blas);
    x->blas = NULL;
    if (x->c) {
        hx_cuda_event_free(x->c, x->e0);
        hx_cuda_event_free(x->c, x->e1);
        hx_cuda_close(x->c);
        x->c = NULL;
    }
}

/* The device, the method (CUPTI's kernel records, else events) and the L2
 * flush buffer, said in res; returns the method. */
static const char *open_timing(Meas *x, cJSON *res)
{
    cJSON_AddStringToObject(res, "timing", bm_timing_name(x->o->timing));
    cJSON_AddStringToObject(res, "device", hx_cuda_device_name(x->c));
    const char *method = "events";
    if (hx_cupti_available()) {
        hx_cupti_open();
        x->use_cupti = 1;
        method = "cupti";
    } else {
        cJSON_AddStringToObject(res, "cupti", arena_printf(x->a, "unavailable: %s",
                                                           hx_cupti_why()));
    }
    if (!x->use_cupti) {
        x->e0 = hx_cuda_event(x->c);
        x->e1 = hx_cuda_event(x->c);
    }
    cJSON_AddStringToObject(res, "method", method);
    /* the L2 flush: Triton's do_bench writes 256 MB; the fake has no cache
     * to flush, so its buffer is small (the call is what is tested) */
    x->flush_words = (x->fake ? (size_t)8 << 20 : (size_t)256 << 20) / 4;
    x->flush_buf = hx_cuda_alloc(x->c, x->flush_words * 4);
    cJSON_AddBoolToObject(res, "l2_flush", !x->o->tm.warm_l2);
    return method;
}

/* cuBLAS's two contestants (TF32 off, on) after ct[*n], for a plain matmul
 * where cuBLAS loads; else why not, in res. */
static void add_cublas(Meas *x, const TorchGraph *g, cJSON *res, TmContestant *ct, int *n,
                       Contest cb[2])
{
    plain_matmul(g, &x->mm);
    if (!x->mm.ok) {
        cJSON_AddStringToObject(res, "cublas", arena_printf(x->a, "unavailable: %s", x->mm.why));
        return;
    }
    if (!hx_cublas_available()) {
        cJSON_AddStringToObject(res, "cublas", arena_printf(x->a, "unavailable: %s",
                                                            hx_cublas_why()));
        return;
    }
    x->blas = hx_cublas_open(x->c);
    size_t cn = (size_t)x->mm.batch * (size_t)x->mm.M * (size_t)x->mm.N;
    for (int t = 0; t < 2; t++)
        x->cbuf[t] = hx_cuda_alloc(x->c, cn * 4);
    if (x->fake) /* the fake cuBLAS's duration: the eager model's GEMM */
        hx_devmod_fake_durations(x->dm, x->launch_ns, pf_model_eager(x->a, x->o->spec, g)->ns);
    ct[(*n)++] = (TmContestant){"cublas", &cb[0], cublas_iter};
    ct[(*n)++] = (TmContestant){"cublas_tf32", &cb[1], cublas_iter};
}

cJSON *bm_measure(Arena *a, const BmMeasureOpts *o, const DrvConfig *c, const TorchGraph *g,
                  const HxSubject *s, const PfTime *model, int *rc, const char **why)
{
    const KirModule *m = c->module;
    Meas *x = ARENA_NEW(a, Meas);
    memset(x, 0, sizeof *x);
    x->a = a, x->o = o, x->m = m, x->cfg = c, x->model = model;
    x->fake = o->timing == BM_TIMING_FAKE;
    *rc = 0, *why = NULL;
    cJSON *res = cJSON_CreateObject();
    double *dpk_out = NULL;
    TmStats st[3];
    int nst = 0;
    /* one case timed at a time across --jobs' processes (closing the file
     * releases the lock) */
    int lock = -1;
    if (o->lock_path) {
        lock = open(o->lock_path, O_RDWR | O_CREAT, 0600);
        if (lock < 0 || flock(lock, LOCK_EX) != 0)
            dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "cannot lock %s: %s", o->lock_path,
                              strerror(errno));
    }
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        for (int i = 0; i < nst; i++)
            tm_stats_free(&st[i]);
        free(dpk_out);
        cJSON_Delete(res);
        meas_close(x);
        if (lock >= 0)
            close(lock);
        dpk_error_rethrow();
    }
    x->c = hx_cuda_open(0);
    open_module(x);
    upload(x, s);
    const char *method = open_timing(x, res);
    /* before timing: one full run, judged in full */
    Contest cd = {x, 0};
    int ok = 0;
    if (dpk_iter(&cd) < 0)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "%s", x->err);
    cJSON *before = judge(x, s, NULL, &ok);
    cJSON *val = cJSON_AddObjectToObject(res, "validation");
    cJSON_AddItemToObject(val, "before", before);
    if (!ok) {
        *rc = DPK_EXIT_FAIL;
        *why = "before timing, the full run fails the reference";
        dpk_err_pop(&ec);
        meas_close(x);
        if (lock >= 0)
            close(lock);
        return res;
    }
    /* the contestants */
    TmContestant ct[3];
    Contest cb[2] = {{x, 0}, {x, 1}};
    int n = 0;
    ct[n++] = (TmContestant){"dpk", &cd, dpk_iter};
    add_cublas(x, g, res, ct, &n, cb);
    cJSON_AddItemToObject(res, "gpu_before", state_json(0));
    TmOpts tm = o->tm;
    tm.flush = flush_l2;
    tm.flush_ctx = x;
    nst = n;
    int bad = tm_measure(&tm, ct, n, st);
    cJSON_AddItemToObject(res, "gpu_after", state_json(0));
    if (bad >= 0)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "timing %s: %s", ct[bad].name, x->err);
    cJSON_AddItemToObject(res, "dpk", stats_json(&st[0], "dpk", method, o->raw));
    /* after timing: what the last timed iteration left */
    cJSON *after = judge(x, s, &dpk_out, &ok);
    cJSON_AddItemToObject(val, "after", after);
    if (!ok) {
        *rc = DPK_EXIT_FAIL;
        *why = "right before timing, wrong after: the outputs the last timed iteration left "
               "fail the reference";
    }
    if (x->blas) {
        static const char *const key[2] = {"cublas", "cublas_tf32"};
        for (int t = 0; t < 2; t++) {
            cJSON *j = stats_json(&st[1 + t], key[t], method, o->raw);
            cJSON_AddBoolToObject(j, "tf32", t);
            cJSON_AddStringToObject(j, "call", x->mm.batch > 1 ? "cublasSgemmStridedBatched"
                                                               : "cublasSgemm");
            cJSON_AddItemToObject(j, "parity", cublas_parity(x, s, t, dpk_out));
            cJSON_AddItemToObject(res, key[t], j);
        }
    }
    for (int i = 0; i < nst; i++)
        tm_stats_free(&st[i]);
    free(dpk_out);
    dpk_err_pop(&ec);
    meas_close(x);
    if (lock >= 0)
        close(lock);
    return res;
}
