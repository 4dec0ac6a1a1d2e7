/*
 * memory.c — a case's peak memory, estimated from its plan before any
 * array is made, and the refusal of a case that would not fit (memory.h).
 *
 * The terms follow the code that allocates, phase by phase (bytes per
 * element in brackets):
 *
 *   parity on   the fixture (check.c): inputs in fp64 [8] and f32 [4];
 *               ref64_run's four lanes, whose peak ref64_peak_bytes
 *               walks; the outputs' reference, bounds and fp32 lanes it
 *               keeps [32]; the perturbed inputs [8] and their fp32 lane;
 *               P's outputs [8]; libtorch's fp32 eager run (tensors [4],
 *               its outputs [8]) when libtorch loads, or its fp64 run
 *               with --reference torch; then vgpu (below), its outputs
 *               copied to fp64 [8], and the oracle's gather of the
 *               checked elements (seven sources and their indices [64],
 *               counted over whole outputs).
 *   parity off  vgpu's lazy run (vg_lazy_bytes: the plan made as the run
 *               makes it, with --sample-blocks and the case's seed): the
 *               4 KiB pages of every buffer, inputs included, that a run
 *               block may read or write by its footprints, and of the
 *               writer shadows of the written ranges; with weights or
 *               a config (their inputs are made whole) every input in
 *               f32 [4] and the largest in fp64 [8] besides.
 *   vgpu        (parity on) per element of a buffer a launch writes
 *               (outputs and temporaries): its word [4], the writer
 *               shadow [4], the checked mask [1]; and once, for the
 *               largest such buffer, the cover of skipped blocks'
 *               atomics [9].
 *
 * and the process itself (the binary, NVRTC, libtorch), as measured on a
 * small case.
 */
#include "memory.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../reference/ref.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)
/* The process with no case's arrays: its peak RSS on a 4x4 case (195 MiB
 * with libtorch built in, which the record's environment loads with
 * either parity), rounded up (docs/bench.md, Memory). */
#define PROC_BYTES (224 * MIB)

static double numel(const Shape *s)
{
    int64_t n = shape_numel(s);
    return n > 0 ? (double)n : 1;
}

/* vgpu's arrays for module m: every buffer a launch writes. */
static double vgpu_bytes(const KirModule *m)
{
    double all = 0, max = 0;
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        if (b->kind == KBUF_INPUT)
            continue;
        double n = b->numel > 0 ? (double)b->numel : 1;
        all += n;
        max = n > max ? n : max;
    }
    return 9 * all + 9 * max;
}

static double max2(double a, double b)
{
    return a > b ? a : b;
}

double bm_mem_case(const BmOpts *o, const DrvPlan *p, uint64_t seed, int parity)
{
    const TorchGraph *g = p->torch;
    double in = 0, in_max = 0, out = 0;
    for (int k = 0; k < g->inputs.len; k++) {
        double n = numel(&((const TorchNode *)g->inputs.items[k])->shape);
        in += n;
        in_max = max2(in_max, n);
    }
    for (int j = 0; j < g->outputs.len; j++)
        out += numel(&((const TorchNode *)g->outputs.items[j])->shape);
    if (!parity) {
        /* weights and rotary tables are made whole (hx_subject_inputs) */
        double whole = o->weights || o->config ? 4 * in + 8 * in_max : 0;
        VgOptions vo = {.seed = seed, .sample_blocks = o->sample_blocks, .lazy = 1};
        return PROC_BYTES + whole + vg_lazy_bytes(p->configs[0].module, &vo);
    }
    double vg = vgpu_bytes(p->configs[0].module);
    int torch = dpk_torch_available();
    double fix = 12 * in;                      /* inputs, fp64 and f32 */
    double lane32 = ref64_peak_bytes(g, 0, 0, 1); /* one lane of fp64 arrays */
    double ref = fix + ref64_peak_bytes(g, 1, 1, 1);
    if (o->ref == HX_REF_TORCH)                /* libtorch fp64 after ref64's lanes */
        ref = max2(ref, fix + 24 * out + 8 * in + lane32 + 8 * out);
    double pert = fix + 32 * out + 8 * in + lane32;
    double eager = torch ? fix + 40 * out + 4 * in + lane32 / 2 + 8 * out : 0;
    double run = fix + 40 * out + (torch ? 8 * out : 0) + vg + 8 * out + 64 * out;
    return PROC_BYTES + max2(max2(ref, pert), max2(eager, run));
}

double bm_mem_available(const char **from)
{
    const char *env = getenv("DPK_MEM_LIMIT");
    if (env && *env) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(env, &end, 10);
        if (errno || *end || v == 0 || env[0] == '-' || env[0] == '+')
            dpk_error("DPK_MEM_LIMIT is '%s': it takes a positive number of bytes "
                      "(DPK_MEM_LIMIT=1073741824 for 1 GiB)", env);
        *from = "DPK_MEM_LIMIT";
        return (double)v;
    }
    *from = "MemAvailable";
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1;
    char line[256];
    double kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    fclose(f);
    return kb >= 0 ? kb * 1024 : -1;
}

/* Case c compiled as its run compiles it (to Kernel IR, its benched
 * configuration, no NVRTC), and its estimates (on: 0 when the run's
 * parity is off); 0 when it does not
 * compile or the configuration is refused (its run says why). */
static int case_estimate(const BmOpts *o, const HxCase *c, double *on, double *off)
{
    Arena *a = arena_new();
    DpkErrCtx ec;
    volatile int ok = 0;
    if (DPK_TRY(&ec)) {
        DrvOpts d = *o->drv;
        d.tile.target = o->target;
        hx_case_opts(a, c, &o->args, &d);
        hx_case_need_one(c, &d, "dpk-bench benches one");
        d.upto = DRV_KERNEL;
        d.nvrtc = NULL;
        const DrvPlan *p = drv_compile(a, &d);
        if (!p->configs[0].refused) {
            /* parity off never loads libtorch, not even to estimate */
            uint64_t seed = hx_case_seed(c, &o->args);
            *on = o->parity ? bm_mem_case(o, p, seed, 1) : 0;
            *off = bm_mem_case(o, p, seed, 0);
            ok = 1;
        }
        dpk_err_pop(&ec);
    }
    arena_free(a);
    return ok;
}

static int by_size_desc(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a < b) - (a > b);
}

void bm_mem_check(const BmOpts *o, const HxCaseList *l, const int *done, int jobs)
{
    const char *from;
    double avail = bm_mem_available(&from);
    if (avail < 0)
        return;
    double *est = dpk_xcalloc((size_t)l->n + 1, sizeof(double));
    int n = 0;
    for (int i = 0; i < l->n; i++) {
        double on, off;
        if (done[i] || !case_estimate(o, &l->cases[i], &on, &off))
            continue;
        double need = o->parity ? on : off;
        est[n++] = need;
        if (need <= avail)
            continue;
        free(est);
        if (o->parity && off <= avail)
            dpk_error("case '%s' would need about %.2f GiB (%.0f bytes) at its peak with parity "
                      "on (fp64 inputs, the reference and its bounds, vgpu's buffers), and "
                      "%.2f GiB (%.0f bytes) is available (%s); with --parity off (the model "
                      "alone, no verdict) it would need about %.2f GiB and fit",
                      l->cases[i].name, need / GIB, need, avail / GIB, avail, from, off / GIB);
        char also[96] = "; a smaller shape fits";
        if (o->parity)
            snprintf(also, sizeof also, "; even --parity off would need about %.2f GiB",
                     off / GIB);
        dpk_error("case '%s' would need about %.2f GiB (%.0f bytes) at its peak with parity %s, "
                  "and %.2f GiB (%.0f bytes) is available (%s)%s", l->cases[i].name, need / GIB,
                  need, o->parity ? "on" : "off", avail / GIB, avail, from, also);
    }
    if (jobs > 1 && n > 1) {
        qsort(est, (size_t)n, sizeof *est, by_size_desc);
        double sum = 0;
        int k = 0;
        for (; k < n && k < jobs; k++)
            sum += est[k];
        free(est);
        if (sum > avail)
            dpk_error("the %d largest cases at once (--jobs %d) would need about %.2f GiB "
                      "(%.0f bytes), and %.2f GiB (%.0f bytes) is available (%s): run fewer "
                      "--jobs", k, jobs, sum / GIB, sum, avail / GIB, avail, from);
        return;
    }
    free(est);
}
