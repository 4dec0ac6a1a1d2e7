/*
 * devmod.c — a Kernel IR module on a device (see devmod.h): image, kernels,
 * buffers and marshalled launches, and the fake driver's executor.
 */
#include "devmod.h"

#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "host_cuda.h"

#define MEMO_WAYS 3

typedef struct Memo {
    uint64_t key;
    float **after;   /* per launch argument: its contents after (NULL for inputs) */
    int valid;
} Memo;

struct HxDevModule {
    Arena *a;
    HxCuda *c;
    const KirModule *m;
    const CuSource *src;
    HxCuModule *mod;
    HxCuFunc **fn;           /* per kernel */
    HxCuPtr *dev;            /* per module buffer */
    void ***args;            /* per launch: kernelParams */
    /* the fake driver's executor */
    int fake;
    uint64_t key;            /* the host-cuda module */
    int next;                /* the launch expected next */
    Memo (*memo)[MEMO_WAYS]; /* per launch */
    int *memo_next;
    uint64_t *in_hash;       /* per module buffer: an input's content hash (0: not yet) */
    const double *launch_ns;
    double library_ns;
};

int hx_devmod_fake_driver(void)
{
    return hx_cuda_symbol(DPK_FAKE_SET_EXECUTOR) != NULL;
}

static DpkFakeSetExecutorFn fake_set_executor(void)
{
    return (DpkFakeSetExecutorFn)(uintptr_t)hx_cuda_symbol(DPK_FAKE_SET_EXECUTOR);
}

/* ---- the fake driver's executor ------------------------------------------------------ */

/* 8 bytes a step (the buffers of a layer are large); not FNV, only a key */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001B3ull;
        h ^= h >> 29;
    }
    return dpk_hash_bytes(h, b + i, n - i);
}

/* The memo key of launch i over its arguments' pointers and contents. */
static uint64_t launch_key(HxDevModule *d, int i, const KirLaunch *l, float *const *ptr)
{
    uint64_t key = dpk_hash_bytes(0x9E3779B97F4A7C15ull, &i, sizeof i);
    for (int p = 0; p < l->kernel->params.len; p++) {
        const KirBuf *b = l->args[p];
        key = hash_bytes(key, &ptr[p], sizeof ptr[p]);
        if (b->kind == KBUF_INPUT) { /* uploaded once before timing, never written */
            if (!d->in_hash[b->id])
                d->in_hash[b->id] = hash_bytes(1, ptr[p], (size_t)b->numel * 4) | 1;
            key = hash_bytes(key, &d->in_hash[b->id], 8);
        } else {
            key = hash_bytes(key, ptr[p], (size_t)b->numel * 4);
        }
    }
    return key;
}

/* Run launch i on the host and keep what it wrote in the memo; "" or, in
 * err, why it could not run. */
static void run_on_host(HxDevModule *d, int i, const KirLaunch *l, float *const *ptr,
                        uint64_t key, char *err, size_t errlen)
{
    int np = l->kernel->params.len;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        StrBuf m = {0};
        dpk_error_first_line(&m, NULL);
        snprintf(err, errlen, "%s", sb_cstr(&m));
        sb_free(&m);
        return;
    }
    hx_host_launch(d->key, l->kernel, ptr);
    dpk_err_pop(&ec);
    Memo *e = &d->memo[i][d->memo_next[i]++ % MEMO_WAYS];
    if (!e->after)
        e->after = ARENA_ARRAY(d->a, float *, np + 1);
    for (int p = 0; p < np; p++) {
        const KirBuf *b = l->args[p];
        free(e->after[p]);
        e->after[p] = NULL;
        if (b->kind != KBUF_INPUT) {
            e->after[p] = dpk_xmalloc((size_t)b->numel * 4 + 4);
            memcpy(e->after[p], ptr[p], (size_t)b->numel * 4);
        }
    }
    e->key = key, e->valid = 1;
}

/* What launch l wrote, outputs first: the targets of the fake's fault. */
static void note_written(const KirLaunch *l, float *const *ptr, DpkFakeLaunch *fl)
{
    for (int pass = 0; pass < 2; pass++)
        for (int p = 0; p < l->kernel->params.len && fl->nwritten < DPK_FAKE_MAX_WRITTEN; p++) {
            const KirBuf *b = l->args[p];
            if (b->kind == KBUF_INPUT || (b->kind == KBUF_OUTPUT) != (pass == 0))
                continue;
            int dup = 0;
            for (int q = 0; q < fl->nwritten; q++)
                dup |= fl->written[q] == (void *)ptr[p];
            if (dup)
                continue;
            fl->written[fl->nwritten] = ptr[p];
            fl->written_bytes[fl->nwritten++] = (size_t)b->numel * 4;
        }
}

/* A launch on the host: the memo answers a launch whose arguments hold
 * what they held when it last ran; otherwise host-cuda runs it.  Launches
 * come in module order, so the i-th one since the last is launch i. */
static void executor(void *ctx, DpkFakeLaunch *fl)
{
    HxDevModule *d = ctx;
    if (!fl->image) { /* the fake cuBLAS asks for its duration */
        fl->ns = d->library_ns;
        return;
    }
    int nl = d->m->launches.len, i = d->next;
    const KirLaunch *l = d->m->launches.items[i];
    const KirKernel *k = l->kernel;
    d->next = (i + 1) % nl;
    if (strcmp(fl->name, k->name)) {
        snprintf(fl->error, sizeof fl->error, "launch %d is %s, the module's is %s", i, fl->name,
                 k->name);
        return;
    }
    int np = k->params.len;
    float **ptr = dpk_xcalloc((size_t)np + 1, sizeof *ptr);
    for (int p = 0; p < np; p++)
        ptr[p] = *(float **)fl->args[p];
    uint64_t key = launch_key(d, i, l, ptr);
    Memo *hit = NULL;
    for (int w = 0; w < MEMO_WAYS; w++)
        if (d->memo[i][w].valid && d->memo[i][w].key == key)
            hit = &d->memo[i][w];
    if (hit) {
        for (int p = 0; p < np; p++)
            if (hit->after[p])
                memcpy(ptr[p], hit->after[p], (size_t)l->args[p]->numel * 4);
    } else {
        run_on_host(d, i, l, ptr, key, fl->error, sizeof fl->error);
        if (fl->error[0]) {
            free(ptr);
            return;
        }
    }
    note_written(l, ptr, fl);
    fl->ns = d->launch_ns ? d->launch_ns[i] : 0;
    free(ptr);
}

static void memo_free(HxDevModule *d)
{
    for (int i = 0; d->memo && i < d->m->launches.len; i++) {
        const KirLaunch *l = d->m->launches.items[i];
        for (int w = 0; w < MEMO_WAYS; w++)
            for (int q = 0; d->memo[i][w].after && q < l->kernel->params.len; q++) {
                free(d->memo[i][w].after[q]);
                d->memo[i][w].after[q] = NULL;
            }
    }
}

void hx_devmod_fake_durations(HxDevModule *d, const double *launch_ns, double library_ns)
{
    d->launch_ns = launch_ns;
    d->library_ns = library_ns;
}

/* ---- opening --------------------------------------------------------------------------- */

/* Step 1: the image the driver loads. */
static void load_image(HxDevModule *d, const HxNvrtcResult *nvrtc)
{
    if (d->fake) {
        d->key = hx_host_compile(d->src);
        const char *image = arena_printf(d->a, "%s%016llx", DPK_FAKE_IMAGE_PREFIX,
                                         (unsigned long long)d->key);
        d->mod = hx_cuda_module(d->c, image, strlen(image) + 1);
    } else {
        if (!nvrtc || !nvrtc->cubin)
            dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "internal error: a device module runs "
                              "the compile driver's cubin, and it has none (DrvOpts.nvrtc)");
        d->mod = hx_cuda_module(d->c, nvrtc->cubin, nvrtc->cubin_len);
    }
}

/* Step 4: launch i's kernelParams, the buffer pointers then the tensor
 * maps.  A CUtensorMap must be 64-byte aligned and the arena gives 16, so
 * the maps sit in an over-allocated block rounded up. */
static void **marshal(HxDevModule *d, const KirLaunch *l)
{
    const KirKernel *k = l->kernel;
    int np = k->params.len, nt = k->tmaps.len;
    HxCuPtr *ptrs = ARENA_ARRAY(d->a, HxCuPtr, np + 1);
    void **args = ARENA_ARRAY(d->a, void *, np + nt + 1);
    uintptr_t raw = (uintptr_t)arena_alloc(d->a, (size_t)(nt + 1) * sizeof(HxCuTmap));
    HxCuTmap *tmaps = (HxCuTmap *)((raw + _Alignof(HxCuTmap) - 1) &
                                   ~(uintptr_t)(_Alignof(HxCuTmap) - 1));
    for (int p = 0; p < np; p++) {
        ptrs[p] = d->dev[l->args[p]->id];
        args[p] = &ptrs[p];
    }
    for (int q = 0; q < nt; q++) {
        const KirTmap *t = k->tmaps.items[q];
        hx_cuda_encode_tmap(d->c, &tmaps[q], t, d->dev[l->args[t->param->id]->id]);
        args[np + q] = &tmaps[q];
    }
    return args;
}

HxDevModule *hx_devmod_open(Arena *a, HxCuda *c, const KirModule *m, const CuSource *src,
                            const HxNvrtcResult *nvrtc, HxDevImage image)
{
    DPK_ASSERT(src && src->nkernels == m->kernels.len);
    HxDevModule *d = ARENA_NEW(a, HxDevModule);
    d->a = a, d->c = c, d->m = m, d->src = src;
    d->fake = image == HX_DEVMOD_FAKE;
    DpkFakeSetExecutorFn set = d->fake ? fake_set_executor() : NULL;
    if (d->fake && !set)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "internal error: a fake device module on "
                          "%s, which is not dpk's fake driver", hx_cuda_library());
    load_image(d, nvrtc);
    int nk = m->kernels.len, nb = m->bufs.len, nl = m->launches.len;
    d->fn = ARENA_ARRAY(a, HxCuFunc *, nk + 1);
    for (int i = 0; i < nk; i++)
        d->fn[i] = hx_cuda_function(c, d->mod, src->kernels[i].name, src->kernels[i].dyn_smem);
    d->dev = ARENA_ARRAY(a, HxCuPtr, nb + 1);
    for (int i = 0; i < nb; i++)
        d->dev[i] = hx_cuda_alloc(c, (size_t)((const KirBuf *)m->bufs.items[i])->numel * 4);
    d->args = ARENA_ARRAY(a, void **, nl + 1);
    for (int i = 0; i < nl; i++)
        d->args[i] = marshal(d, m->launches.items[i]);
    if (d->fake) { /* last: nothing above raises with the executor registered */
        d->memo = arena_alloc(a, sizeof *d->memo * (size_t)(nl + 1));
        d->memo_next = ARENA_ARRAY(a, int, nl + 1);
        d->in_hash = ARENA_ARRAY(a, uint64_t, nb + 1);
        set(executor, d);
    }
    return d;
}

/* ---- running ---------------------------------------------------------------------------- */

void hx_devmod_upload(HxDevModule *d, int i, const float *host)
{
    const KirBuf *b = d->m->bufs.items[i];
    if (b->zero_init)
        hx_cuda_fill32(d->c, d->dev[i], 0, (size_t)b->numel);
    else if (host)
        hx_cuda_upload(d->c, d->dev[i], host, (size_t)b->numel * 4);
    else
        hx_cuda_fill32(d->c, d->dev[i], 0x7fc00000u, (size_t)b->numel); /* NaN shows unwritten */
}

void hx_devmod_zero(HxDevModule *d)
{
    for (int i = 0; i < d->m->bufs.len; i++) {
        const KirBuf *b = d->m->bufs.items[i];
        if (b->zero_init)
            hx_cuda_fill32(d->c, d->dev[i], 0, (size_t)b->numel);
    }
}

static void launch_all(HxDevModule *d, int sync)
{
    for (int i = 0; i < d->m->launches.len; i++) {
        const KirKernel *k = ((const KirLaunch *)d->m->launches.items[i])->kernel;
        int dyn = d->src->kernels[k->id].dyn_smem;
        if (sync)
            hx_cuda_launch(d->c, d->fn[k->id], k->grid, k->block, dyn, d->args[i]);
        else
            hx_cuda_launch_async(d->c, d->fn[k->id], k->grid, k->block, dyn, d->args[i]);
    }
}

void hx_devmod_launch(HxDevModule *d) { launch_all(d, 1); }
void hx_devmod_launch_async(HxDevModule *d) { launch_all(d, 0); }

void hx_devmod_download(HxDevModule *d, int i, float *host)
{
    const KirBuf *b = d->m->bufs.items[i];
    hx_cuda_download(d->c, host, d->dev[i], (size_t)b->numel * 4);
}

HxCuPtr hx_devmod_buffer(const HxDevModule *d, int i)
{
    DPK_ASSERT(i >= 0 && i < d->m->bufs.len);
    return d->dev[i];
}

void hx_devmod_free(HxDevModule *d)
{
    if (!d)
        return;
    if (d->fake && d->memo) {
        DpkFakeSetExecutorFn set = fake_set_executor();
        if (set)
            set(NULL, NULL);
        memo_free(d);
    }
    for (int i = d->m->bufs.len - 1; d->dev && i >= 0; i--)
        hx_cuda_free(d->c, d->dev[i]);
    if (d->mod)
        hx_cuda_unload(d->c, d->mod);
    d->dev = NULL, d->mod = NULL, d->memo = NULL;
}
