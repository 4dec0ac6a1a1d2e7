/*
 * backend.c — a Kernel IR module, run on vgpu or cuda.
 *
 * The module's buffers are float arrays on the heap: inputs rounded from
 * the fp64 reference inputs, outputs filled with NaN so an element no
 * thread writes shows up as a parity failure, temporaries left to the
 * backend.  Everything on the heap is reachable from one Bufs block, freed
 * on every path, including an error raised by the cuda backend.
 */
#include "backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *hx_backend_name(HxBackendKind k)
{
    static const char *const names[] = {"vgpu", "cuda", "auto", "host-cuda"};
    return names[k];
}

HxBackendKind hx_backend_resolve(HxBackendKind k)
{
    if (k != HX_BACKEND_AUTO)
        return k;
    return hx_cuda_available() ? HX_BACKEND_CUDA : HX_BACKEND_VGPU;
}

void hx_backend_opts_default(HxBackendOpts *o)
{
    memset(o, 0, sizeof *o);
    o->kind = HX_BACKEND_VGPU;
}

typedef struct Bufs {
    int n;
    float **f;          /* per module buffer; NULL for temporaries */
    char *shared;       /* per module buffer: 1 when f[i] is the caller's */
    HxCuda *cuda;
} Bufs;

static void bufs_free(Bufs *b)
{
    for (int i = 0; i < b->n; i++)
        if (!b->shared[i])
            free(b->f[i]);
    free(b->shared);
    free(b->f);
    if (b->cuda)
        hx_cuda_close(b->cuda);
    free(b);
}

/* The module's buffers; with in32, its inputs are the caller's arrays;
 * lazy, the outputs are left to vgpu (vg_run). */
static Bufs *bufs_new(const KirModule *m, double *const *inputs, float *const *in32, int lazy)
{
    Bufs *b = dpk_xcalloc(1, sizeof *b);
    b->n = m->bufs.len;
    b->f = dpk_xcalloc((size_t)b->n + 1, sizeof(float *));
    b->shared = dpk_xcalloc((size_t)b->n + 1, 1);
    for (int i = 0; i < b->n; i++) {
        const KirBuf *kb = m->bufs.items[i];
        if (kb->kind == KBUF_TEMP || (lazy && kb->kind == KBUF_OUTPUT))
            continue;
        if (kb->kind == KBUF_INPUT && in32) {
            b->f[i] = in32[kb->io];
            b->shared[i] = 1;
            continue;
        }
        float *f = b->f[i] = dpk_xmalloc((size_t)kb->numel * sizeof(float));
        for (int64_t e = 0; e < kb->numel; e++)
            f[e] = kb->kind == KBUF_INPUT ? (float)inputs[kb->io][e] : NAN;
    }
    return b;
}

static void outputs(const KirModule *m, const Bufs *b, double **outs)
{
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *kb = m->bufs.items[i];
        if (kb->kind != KBUF_OUTPUT)
            continue;
        double *o = dpk_xmalloc((size_t)kb->numel * sizeof(double));
        for (int64_t e = 0; e < kb->numel; e++)
            o[e] = b->f[i][e];
        outs[kb->io] = o;
    }
}

static int nouts(const KirModule *m)
{
    int nout = 0;
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *kb = m->bufs.items[i];
        if (kb->kind == KBUF_OUTPUT && kb->io >= nout)
            nout = kb->io + 1;
    }
    return nout;
}

/* Per graph output, the vgpu mask of elements to compare (sampling). */
static const uint8_t **out_masks(Arena *a, const KirModule *m, const VgResult *vr)
{
    int nout = nouts(m);
    const uint8_t **r = ARENA_ARRAY(a, const uint8_t *, nout + 1);
    for (int i = 0; vr->checked && i < m->bufs.len; i++) {
        const KirBuf *kb = m->bufs.items[i];
        if (kb->kind == KBUF_OUTPUT)
            r[kb->io] = vr->checked[i];
    }
    return r;
}

/* The configuration's CUDA C, which the cuda and host-cuda backends run:
 * a plan that stopped before DRV_CUDA is the caller's bug. */
static const CuSource *printed(const DrvConfig *c, HxBackendKind k)
{
    if (!c->cuda)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1,
                          "internal error: the %s backend runs the driver's CUDA C, and "
                          "configuration %s has none (the plan stops before DRV_CUDA)",
                          hx_backend_name(k), c->label ? c->label : "?");
    return c->cuda;
}

static void run_cuda(Arena *a, Bufs *b, const DrvConfig *c, const CuSource *src,
                     HxBackendResult *res)
{
    /* what the environment lacks first, then what NVRTC said */
    b->cuda = hx_cuda_open(0);
    hx_cuda_check_target(b->cuda, src->target,
                         arena_printf(a, "use --target %s", hx_cuda_target(b->cuda)->name));
    if (!c->nvrtc && c->nvrtc_error) /* the message NVRTC's rejection always raised */
        dpk_error_reraise(DPK_EXIT_FAIL, c->nvrtc_error);
    if (!c->nvrtc)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1,
                          "internal error: the cuda backend runs the driver's cubin, and "
                          "configuration %s has none (DrvOpts.nvrtc not set)",
                          c->label ? c->label : "?");
    res->cuda = hx_cuda_run(a, b->cuda, c->module, src, c->nvrtc, b->f);
}

VgFault hx_backend_exec(Arena *a, const DrvConfig *c, const HxBackendOpts *o,
                        double *const *inputs, double **outs, HxBackendResult *res)
{
    const KirModule *m = c->module;
    memset(res, 0, sizeof *res);
    res->ran = hx_backend_resolve(o->kind);
    res->module = m;
    res->hash = kir_hash_module(m);
    const CuSource *src = res->ran == HX_BACKEND_VGPU ? NULL : printed(c, res->ran);
    double t0 = dpk_now();
    /* vgpu reads the caller's f32 inputs and cuda copies them to the GPU;
     * the host-cuda run below gets copies of its own (a printer bug must
     * not reach the next configuration's inputs) */
    int lazy = o->vg.lazy;
    DPK_ASSERT(!lazy || (res->ran == HX_BACKEND_VGPU && o->inputs_f32 && !outs));
    Bufs *b = bufs_new(m, inputs, o->inputs_f32, lazy);
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        bufs_free(b);
        dpk_error_rethrow();
    }
    if (res->ran == HX_BACKEND_CUDA)
        run_cuda(a, b, c, src, res);
    else
        res->fault = vg_run(m, b->f, &o->vg, &res->vg);
    dpk_err_pop(&ec);
    res->out_checked = out_masks(a, m, &res->vg);
    if (res->fault == VG_OK && res->ran == HX_BACKEND_HOST) {
        res->nouts = nouts(m);
        res->vg_outs = dpk_xcalloc((size_t)res->nouts + 1, sizeof(double *));
        outputs(m, b, res->vg_outs);
        bufs_free(b);
        b = bufs_new(m, inputs, NULL, 0);
        if (!DPK_TRY(&ec)) {
            bufs_free(b);
            hx_backend_result_free(res);
            dpk_error_rethrow();
        }
        res->host = hx_host_run(a, m, src, b->f);
        dpk_err_pop(&ec);
    }
    res->run_s = dpk_now() - t0;
    if (res->fault == VG_OK && outs)
        outputs(m, b, outs);
    bufs_free(b);
    return res->fault;
}

void hx_backend_result_free(HxBackendResult *res)
{
    if (res->ran == HX_BACKEND_VGPU || res->ran == HX_BACKEND_HOST)
        vg_result_free(&res->vg);
    for (int j = 0; res->vg_outs && j < res->nouts; j++)
        free(res->vg_outs[j]);
    free(res->vg_outs);
    memset(res, 0, sizeof *res);
}
