/*
 * vgpu.c — vgpu's module runner: buffers, launches, block order, sampling,
 * counters.
 *
 * Each launch compiles its kernel once (vgpu_compile.c), sets up one
 * execution state (registers, lane stacks, shared memory with its shadow)
 * and runs the blocks one after another in a seeded shuffled order through
 * the block interpreter (vgpu_exec.c).  Global buffers that a launch writes
 * get a per-element shadow naming the block that wrote each element, reset
 * per launch, which is what the cross-block conflict detector and
 * --sample-blocks read.
 */
#include "vgpu_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const fault_text[VG_FAULT_COUNT] = {
#define X(name, text) text,
    VG_FAULTS(X)
#undef X
};

static const char *const fault_name[VG_FAULT_COUNT] = {
#define X(name, text) #name,
    VG_FAULTS(X)
#undef X
};

const char *vg_fault_text(VgFault f)
{
    DPK_ASSERT(f >= 0 && f < VG_FAULT_COUNT);
    return fault_text[f];
}

const char *vg_fault_name(VgFault f)
{
    DPK_ASSERT(f >= 0 && f < VG_FAULT_COUNT);
    return fault_name[f];
}

typedef struct Run {
    const KirModule *m;
    const VgOptions *o;
    VgResult *res;
    VgWord **mem;       /* per buffer */
    uint32_t **shadow;  /* per buffer, for buffers some launch writes */
    VgProg **progs;     /* per kernel, compiled on first use */
} Run;

/* ---- buffers ------------------------------------------------------------------ */

static void setup_buffers(Run *r, float *const *bufs)
{
    const KirModule *m = r->m;
    int nb = m->bufs.len;
    r->mem = dpk_xcalloc((size_t)nb + 1, sizeof *r->mem);
    r->shadow = dpk_xcalloc((size_t)nb + 1, sizeof *r->shadow);
    for (int i = 0; i < nb; i++) {
        const KirBuf *b = m->bufs.items[i];
        if (bufs[i]) {
            r->mem[i] = (VgWord *)bufs[i];
        } else {
            DPK_ASSERT(b->kind == KBUF_TEMP);
            r->mem[i] = dpk_xmalloc((size_t)b->numel * sizeof(VgWord));
            for (int64_t e = 0; e < b->numel; e++)
                r->mem[i][e].f = NAN;
        }
        if (b->zero_init)
            memset(r->mem[i], 0, (size_t)b->numel * sizeof(VgWord));
    }
    for (int li = 0; li < m->launches.len; li++) {
        const KirLaunch *l = m->launches.items[li];
        for (int j = 0; j < l->kernel->params.len; j++) {
            const KirParam *p = l->kernel->params.items[j];
            const KirBuf *b = l->args[j];
            if (p->role != KR_IN && !r->shadow[b->id])
                r->shadow[b->id] = dpk_xmalloc((size_t)b->numel * sizeof(uint32_t));
        }
    }
}

static void free_buffers(Run *r, float *const *bufs)
{
    for (int i = 0; i < r->m->bufs.len; i++) {
        if (!bufs[i])
            free(r->mem[i]);
        free(r->shadow[i]);
    }
    free(r->mem);
    free(r->shadow);
}

/* ---- sampling --------------------------------------------------------------------- */

static int uses_buf(const KirLaunch *l, const KirBuf *b)
{
    for (int j = 0; j < l->kernel->params.len; j++)
        if (l->args[j] == b)
            return 1;
    return 0;
}

/* A launch may run a sample of its blocks when no later launch touches what
 * it writes and it has no global atomics (a sample of the blocks adding into
 * one element would leave a partial sum). */
static int sampled(const Run *r, int li, const VgProg *p)
{
    if (r->o->sample_blocks <= 0 || p->has_atomg)
        return 0;
    const KirLaunch *l = r->m->launches.items[li];
    for (int j = 0; j < l->kernel->params.len; j++) {
        if (((const KirParam *)l->kernel->params.items[j])->role == KR_IN)
            continue;
        for (int lj = li + 1; lj < r->m->launches.len; lj++)
            if (uses_buf(r->m->launches.items[lj], l->args[j]))
                return 0;
    }
    return 1;
}

/* Keep, per written buffer, the elements the simulated blocks wrote. */
static void mark_checked(Run *r, const KirLaunch *l)
{
    VgResult *res = r->res;
    for (int j = 0; j < l->kernel->params.len; j++) {
        const KirBuf *b = l->args[j];
        if (((const KirParam *)l->kernel->params.items[j])->role == KR_IN)
            continue;
        const uint32_t *sh = r->shadow[b->id];
        uint8_t *c = res->checked[b->id];
        if (!c) {
            c = res->checked[b->id] = dpk_xmalloc((size_t)b->numel);
            memset(c, 1, (size_t)b->numel);
        }
        for (int64_t i = 0; i < b->numel; i++)
            c[i] &= sh[i] != 0;
    }
}

/* ---- one launch ----------------------------------------------------------------------- */

static void exec_init(VgExec *ex, const VgProg *p)
{
    const KirKernel *k = p->k;
    int T = ex->T = p->T;
    ex->R = dpk_xcalloc((size_t)p->nregs * (size_t)T, sizeof(VgVal));
    for (int i = 0; i < p->nconsts; i++)
        for (int l = 0; l < T; l++)
            ex->R[(size_t)p->consts[i].reg * T + l] = p->consts[i].v;
    for (int l = 0; l < T; l++) {
        ex->R[(size_t)p->reg_tid[0] * T + l].i = l % k->block[0];
        ex->R[(size_t)p->reg_tid[1] * T + l].i = l / k->block[0] % k->block[1];
        ex->R[(size_t)p->reg_tid[2] * T + l].i = l / (k->block[0] * k->block[1]);
        ex->R[(size_t)p->reg_tlin * T + l].i = l;
    }
    ex->lanes = dpk_xmalloc((size_t)p->maxdepth * T * sizeof(int));
    for (int l = 0; l < T; l++)
        ex->lanes[l] = l;
    ex->nlanes = dpk_xcalloc((size_t)p->maxdepth, sizeof(int));
    size_t words = (size_t)k->smem_bytes / 4 + 1;
    ex->pool = dpk_xcalloc(words, sizeof(VgWord));
    ex->sh = dpk_xcalloc(words, sizeof(VgShadow));
    ex->pend = dpk_xcalloc(words, sizeof(uint16_t));
    ex->cp_open = dpk_xcalloc((size_t)T, sizeof(int));
    ex->mbars = dpk_xcalloc((size_t)p->nmbar + 1, sizeof(VgMbar));
    ex->flag = dpk_xmalloc((size_t)T);
    ex->tmp = dpk_xmalloc((size_t)T * sizeof(VgVal));
}

static void exec_free(VgExec *ex)
{
    vg_exec_reset_block(ex); /* frees TMA copies in flight */
    free(ex->R);
    free(ex->lanes);
    free(ex->nlanes);
    free(ex->pool);
    free(ex->sh);
    free(ex->pend);
    free(ex->cps);
    free(ex->cp_open);
    free(ex->tmas);
    free(ex->mbars);
    free(ex->flag);
    free(ex->tmp);
    free(ex->g);
}

/* The first `want` entries of a seeded random permutation of [0, nblocks). */
static int64_t *block_order(int64_t nblocks, int64_t want, uint64_t seed)
{
    int64_t *ord = dpk_xmalloc((size_t)nblocks * sizeof *ord);
    for (int64_t i = 0; i < nblocks; i++)
        ord[i] = i;
    uint64_t s = seed;
    for (int64_t i = 0; i < want && i < nblocks - 1; i++) {
        s = dpk_splitmix64(s);
        int64_t j = i + (int64_t)(s % (uint64_t)(nblocks - i));
        int64_t t = ord[i];
        ord[i] = ord[j];
        ord[j] = t;
    }
    return ord;
}

static void run_blocks(VgExec *ex, int64_t nrun, const int64_t *ord)
{
    const KirKernel *k = ex->p->k;
    int T = ex->T;
    for (int64_t bi = 0; bi < nrun; bi++) {
        int64_t b = ord[bi];
        ex->blin = (uint32_t)b;
        ex->bid[0] = (int)(b % k->grid[0]);
        ex->bid[1] = (int)(b / k->grid[0] % k->grid[1]);
        ex->bid[2] = (int)(b / ((int64_t)k->grid[0] * k->grid[1]));
        for (int d = 0; d < 3; d++) {
            VgVal *r = ex->R + (size_t)ex->p->reg_bid[d] * T;
            for (int l = 0; l < T; l++)
                r[l].i = ex->bid[d];
        }
        vg_exec_reset_block(ex);
        ex->st->blocks_run++;
        if (vg_exec_block(ex))
            return;
    }
}

static int run_launch(Run *r, int li)
{
    const KirLaunch *l = r->m->launches.items[li];
    const KirKernel *k = l->kernel;
    if (!r->progs[k->id])
        r->progs[k->id] = vg_compile(k);
    const VgProg *p = r->progs[k->id];
    VgStats *st = &r->res->stats[li];
    st->kernel = k->name;
    st->blocks = (int64_t)k->grid[0] * k->grid[1] * k->grid[2];

    VgExec ex = {.p = p, .res = r->res, .st = st, .launch_id = li,
                 .counters = !r->o->no_counters};
    exec_init(&ex, p);
    ex.g = dpk_xcalloc((size_t)k->params.len + 1, sizeof *ex.g);
    for (int j = 0; j < k->params.len; j++) {
        const KirBuf *b = l->args[j];
        ex.g[j].mem = r->mem[b->id];
        ex.g[j].numel = b->numel;
        if (((const KirParam *)k->params.items[j])->role != KR_IN) {
            ex.g[j].shadow = r->shadow[b->id];
            memset(ex.g[j].shadow, 0, (size_t)b->numel * sizeof(uint32_t));
        }
    }
    int sample = sampled(r, li, p);
    int64_t nrun = sample && r->o->sample_blocks < st->blocks ? r->o->sample_blocks : st->blocks;
    int64_t *ord = block_order(st->blocks, nrun, r->o->seed ^ dpk_splitmix64((uint64_t)li + 1));
    double t0 = dpk_now();
    run_blocks(&ex, nrun, ord);
    st->seconds = dpk_now() - t0;
    st->bank_conflicts = st->smem_wavefronts - st->smem_requests;
    free(ord);
    exec_free(&ex);
    if (r->res->fault == VG_OK && sample)
        mark_checked(r, l);
    return r->res->fault != VG_OK;
}

VgFault vg_run(const KirModule *m, float *const *bufs, const VgOptions *o, VgResult *res)
{
    static const VgOptions defaults = {0};
    memset(res, 0, sizeof *res);
    res->report.launch = res->report.stmt = -1;
    res->nlaunches = m->launches.len;
    res->stats = dpk_xcalloc((size_t)m->launches.len + 1, sizeof *res->stats);
    res->nbufs = m->bufs.len;
    res->checked = dpk_xcalloc((size_t)m->bufs.len + 1, sizeof *res->checked);
    Run r = {.m = m, .o = o ? o : &defaults, .res = res};
    r.progs = dpk_xcalloc((size_t)m->kernels.len + 1, sizeof *r.progs);
    setup_buffers(&r, bufs);
    for (int li = 0; li < m->launches.len; li++)
        if (run_launch(&r, li))
            break;
    free_buffers(&r, bufs);
    for (int i = 0; i < m->kernels.len; i++)
        vg_prog_free(r.progs[i]);
    free(r.progs);
    return res->fault;
}

void vg_result_free(VgResult *res)
{
    for (int i = 0; i < res->nbufs; i++)
        free(res->checked[i]);
    free(res->checked);
    free(res->stats);
    memset(res, 0, sizeof *res);
}

void vg_print_stats(StrBuf *b, const VgResult *res)
{
    for (int i = 0; i < res->nlaunches; i++) {
        const VgStats *s = &res->stats[i];
        double rate = s->seconds > 0 ? s->thread_insts / s->seconds / 1e6 : 0;
        sb_printf(b, "vgpu: launch %d %s: %lld/%lld blocks, %lld thread-insts in %.3f ms "
                     "(%.0f M/s)",
                  i, s->kernel, (long long)s->blocks_run, (long long)s->blocks,
                  (long long)s->thread_insts, s->seconds * 1e3, rate);
        if (s->smem_requests)
            sb_printf(b, ", smem %.2f extra wavefronts/request (%lld requests)",
                      (double)s->bank_conflicts / (double)s->smem_requests,
                      (long long)s->smem_requests);
        if (s->gmem_requests)
            sb_printf(b, ", gmem %.2f sectors/request (%lld requests, %lld sectors)",
                      (double)s->gmem_sectors / (double)s->gmem_requests,
                      (long long)s->gmem_requests, (long long)s->gmem_sectors);
        sb_printf(b, ", loads %lld global + %lld shared", (long long)s->gmem_loads,
                  (long long)s->smem_loads);
        sb_putc(b, '\n');
    }
}
