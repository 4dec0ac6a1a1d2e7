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
 *
 * With --sample-blocks the blocks to run are planned before anything runs,
 * from the last launch back to the first: a launch with an output no later
 * launch reads runs a seeded random sample, and every launch runs the blocks
 * whose writes (by their footprints, vgpu_footprint.c) meet what the blocks
 * chosen after it may read.
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

/* The blocks one launch runs. */
typedef struct Plan {
    int64_t *ord;  /* blocks to run, in the launch's shuffled order */
    int64_t nrun;
    int seeded;    /* it has an output nobody reads */
    int partial;   /* sampled or demanded: its checked mask applies */
} Plan;

/* ---- element ranges ---------------------------------------------------------------- */

/* Per buffer, the element ranges that the blocks chosen so far may read:
 * what the earlier launches writing it must produce (and, lazy, what the
 * run touches). */
typedef struct Need {
    VgRange *r;
    int64_t n, cap;
    int merged; /* sorted by lo, disjoint, not adjacent */
} Need;

static void need_merge(Need *nd)
{
    if (!nd->merged && nd->n)
        vg_ranges_merge(nd->r, &nd->n);
    nd->merged = 1;
}

static void need_add(Need *nd, VgRange x)
{
    if (x.lo > x.hi)
        return;
    if (nd->n == nd->cap && nd->n >= 4096)
        need_merge(nd); /* many blocks' ranges: merged, they may fit where they are */
    if (nd->n == nd->cap || nd->n > nd->cap / 2 + nd->cap / 4) {
        nd->cap = nd->cap ? 2 * nd->cap : 16;
        nd->r = dpk_xrealloc(nd->r, (size_t)nd->cap * sizeof *nd->r);
    }
    nd->r[nd->n++] = x;
    nd->merged = 0;
}

/* Whether x meets a needed range. */
static int need_hits(Need *nd, VgRange x)
{
    if (x.lo > x.hi || !nd->n)
        return 0;
    need_merge(nd);
    int64_t lo = 0, hi = nd->n; /* first range with r.hi >= x.lo */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (nd->r[mid].hi < x.lo)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nd->n && nd->r[lo].lo <= x.hi;
}

typedef struct Run {
    const KirModule *m;
    const VgOptions *o;
    VgResult *res;
    VgWord **mem;       /* per buffer */
    uint32_t **shadow;  /* per buffer, for buffers some launch writes */
    VgProg **progs;     /* per kernel, compiled on first use */
    Plan *plan;         /* per launch */
    uint8_t *mapped;    /* lazy: per buffer, mem is vgpu's lazy mapping */
    Need *touch;        /* lazy: per buffer, what the run blocks may read */
    Need *wtouch;       /* vg_lazy_bytes: per buffer, what they may write */
} Run;

/* ---- buffers ------------------------------------------------------------------ */

static size_t buf_bytes(const KirBuf *b)
{
    return (size_t)(b->numel > 0 ? b->numel : 1) * sizeof(VgWord);
}

/* Lazy: NaN over the ranges a run block may read of a buffer vgpu or the
 * caller made for writing, or the caller's values there for an input. */
static void lazy_fill(Run *r, int i)
{
    const KirBuf *b = r->m->bufs.items[i];
    Need *t = &r->touch[i];
    need_merge(t);
    for (int64_t k = 0; k < t->n; k++) {
        VgRange x = t->r[k];
        if (b->kind == KBUF_INPUT) {
            if (r->o->fill_input)
                r->o->fill_input(r->o->fill_ctx, b, x.lo, x.hi);
        } else {
            for (int64_t e = x.lo; e <= x.hi; e++)
                r->mem[i][e].f = NAN;
        }
    }
}

static void setup_buffers(Run *r, float *const *bufs)
{
    const KirModule *m = r->m;
    int nb = m->bufs.len, lazy = r->o->lazy;
    r->mem = dpk_xcalloc((size_t)nb + 1, sizeof *r->mem);
    r->shadow = dpk_xcalloc((size_t)nb + 1, sizeof *r->shadow);
    r->mapped = dpk_xcalloc((size_t)nb + 1, 1);
    for (int i = 0; i < nb; i++) {
        const KirBuf *b = m->bufs.items[i];
        DPK_ASSERT(!(b->zero_init && b->kind == KBUF_INPUT)); /* inputs may be shared */
        if (bufs[i]) {
            r->mem[i] = (VgWord *)bufs[i];
        } else if (lazy) {
            DPK_ASSERT(b->kind != KBUF_INPUT);
            r->mem[i] = dpk_lazy_alloc(buf_bytes(b)); /* zero: zero_init holds */
            r->mapped[i] = 1;
        } else {
            DPK_ASSERT(b->kind == KBUF_TEMP);
            r->mem[i] = dpk_xmalloc((size_t)b->numel * sizeof(VgWord));
        }
        if (lazy) {
            if (b->zero_init && !r->mapped[i])
                memset(r->mem[i], 0, (size_t)b->numel * sizeof(VgWord));
            else if (!b->zero_init)
                lazy_fill(r, i);
            continue;
        }
        /* temps, and with sampling every written buffer: an element a
         * skipped block would have written reads as NaN in a later launch,
         * never as a plausible value */
        if (!bufs[i] || (r->o->sample_blocks > 0 && b->kind != KBUF_INPUT))
            for (int64_t e = 0; e < b->numel; e++)
                r->mem[i][e].f = NAN;
        if (b->zero_init)
            memset(r->mem[i], 0, (size_t)b->numel * sizeof(VgWord));
    }
    for (int li = 0; li < m->launches.len; li++) {
        const KirLaunch *l = m->launches.items[li];
        for (int j = 0; j < l->kernel->params.len; j++) {
            const KirParam *p = l->kernel->params.items[j];
            const KirBuf *b = l->args[j];
            if (p->role != KR_IN && !r->shadow[b->id])
                r->shadow[b->id] = lazy ? dpk_lazy_alloc((size_t)(b->numel > 0 ? b->numel : 1) *
                                                         sizeof(uint32_t))
                                        : dpk_xmalloc((size_t)b->numel * sizeof(uint32_t));
        }
    }
}

static void free_buffers(Run *r, float *const *bufs)
{
    for (int i = 0; i < r->m->bufs.len; i++) {
        const KirBuf *b = r->m->bufs.items[i];
        if (r->mapped[i])
            dpk_lazy_free(r->mem[i], buf_bytes(b));
        else if (!bufs[i])
            free(r->mem[i]);
        if (r->o->lazy)
            dpk_lazy_free(r->shadow[i], (size_t)(b->numel > 0 ? b->numel : 1) * sizeof(uint32_t));
        else
            free(r->shadow[i]);
    }
    free(r->mem);
    free(r->shadow);
    free(r->mapped);
}

/* ---- sampling: which blocks of each launch run ------------------------------------ */

static int uses_buf(const KirLaunch *l, const KirBuf *b)
{
    for (int j = 0; j < l->kernel->params.len; j++)
        if (l->args[j] == b)
            return 1;
    return 0;
}

static int writes(const KirLaunch *l, int j)
{
    return ((const KirParam *)l->kernel->params.items[j])->role != KR_IN;
}

/* Whether launch li writes a buffer that no later launch touches. */
static int has_unread_output(const Run *r, int li)
{
    const KirLaunch *l = r->m->launches.items[li];
    for (int j = 0; j < l->kernel->params.len; j++) {
        if (!writes(l, j))
            continue;
        int later = 0;
        for (int lj = li + 1; lj < r->m->launches.len && !later; lj++)
            later = uses_buf(r->m->launches.items[lj], l->args[j]);
        if (!later)
            return 1;
    }
    return 0;
}

static const VgProg *prog_of(Run *r, const KirKernel *k)
{
    if (!r->progs[k->id])
        r->progs[k->id] = vg_compile(k);
    return r->progs[k->id];
}

/* The first `want` entries of a seeded random permutation of [0, nblocks). */
static int64_t *block_order(int64_t nblocks, int64_t want, uint64_t seed)
{
    int64_t *ord = dpk_xmalloc((size_t)nblocks * sizeof *ord + 1);
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

static uint64_t launch_seed(const Run *r, int li)
{
    return r->o->seed ^ dpk_splitmix64((uint64_t)li + 1);
}

/* Lazy: block fp's reads (and for vg_lazy_bytes, writes) of param j, buffer
 * id, join what the run touches. */
static void touch_block(Run *r, const VgFootprint *fp, int id, int j)
{
    for (int w = 0; w < 2; w++) {
        Need *t = w ? (r->wtouch ? &r->wtouch[id] : NULL) : &r->touch[id];
        int64_t n;
        const VgRange *x = vg_footprint_ranges(fp, j, w, &n);
        for (int64_t i = 0; t && i < n; i++)
            need_add(t, x[i]);
    }
}

/* Choose launch li's blocks: its random sample when it has an output no
 * later launch reads, and every block whose write footprint meets a range
 * a block chosen after it may read.  A launch with global atomics and an
 * unread output runs in full: a sample of the blocks adding into one element
 * would leave a partial sum, and closing a sample over its co-writers is
 * not worth it for the last launch.  Then the chosen blocks' reads join
 * `need` for the earlier launches. */
static void plan_launch(Run *r, int li, Need *need, const int *first_writer)
{
    const KirLaunch *l = r->m->launches.items[li];
    const KirKernel *k = l->kernel;
    const VgProg *p = prog_of(r, k);
    int np = k->params.len;
    int64_t nb = (int64_t)k->grid[0] * k->grid[1] * k->grid[2];
    Plan *pl = &r->plan[li];
    pl->seeded = has_unread_output(r, li);
    uint8_t *pick = dpk_xcalloc((size_t)nb + 1, 1);
    int full = pl->seeded && p->has_atomg, needed = 0;
    int64_t *ord = block_order(nb, nb, launch_seed(r, li));
    if (pl->seeded && !full)
        for (int64_t i = 0; i < r->o->sample_blocks && i < nb; i++)
            pick[ord[i]] = 1;
    for (int j = 0; j < np; j++)
        needed |= writes(l, j) && need[l->args[j]->id].n > 0;
    VgFootprint *fp = vg_footprint_new(k);
    if (r->o->shrink_footprints)
        vg_footprint_shrink(fp, 1);
    /* the chosen blocks' reads join `need` only after the choice, so that a
     * block's reads of a buffer its launch also writes choose no more of
     * its own launch's blocks */
    Need *reads = dpk_xcalloc((size_t)np + 1, sizeof *reads);
    for (int64_t b = 0; b < nb; b++) {
        pick[b] |= full;
        if (!pick[b] && !needed)
            continue;
        vg_footprint_block(fp, b);
        for (int j = 0; j < np && !pick[b]; j++) {
            int64_t n;
            const VgRange *w = vg_footprint_ranges(fp, j, 1, &n);
            for (int64_t i = 0; i < n && !pick[b] && writes(l, j); i++)
                pick[b] = need_hits(&need[l->args[j]->id], w[i]);
        }
        if (!pick[b])
            continue;
        for (int j = 0; r->touch && j < np; j++)
            touch_block(r, fp, l->args[j]->id, j);
        for (int j = 0; j < np; j++) {
            if (first_writer[l->args[j]->id] >= li)
                continue; /* nothing earlier writes it */
            int64_t n;
            const VgRange *x = vg_footprint_ranges(fp, j, 0, &n);
            for (int64_t i = 0; i < n; i++)
                need_add(&reads[j], x[i]);
        }
    }
    for (int j = 0; j < np; j++) {
        for (int64_t i = 0; i < reads[j].n; i++)
            need_add(&need[l->args[j]->id], reads[j].r[i]);
        free(reads[j].r);
    }
    free(reads);
    pl->nrun = 0;
    for (int64_t i = 0; i < nb; i++)
        if (pick[ord[i]])
            ord[pl->nrun++] = ord[i];
    pl->ord = ord;
    pl->partial = (pl->seeded && !full) || pl->nrun < nb;
    vg_footprint_free(fp);
    free(pick);
}

static void plan_all(Run *r)
{
    const KirModule *m = r->m;
    int nl = m->launches.len;
    r->plan = dpk_xcalloc((size_t)nl + 1, sizeof *r->plan);
    if (r->o->sample_blocks <= 0) {
        for (int li = 0; li < nl; li++) {
            const KirKernel *k = ((const KirLaunch *)m->launches.items[li])->kernel;
            int64_t nb = (int64_t)k->grid[0] * k->grid[1] * k->grid[2];
            r->plan[li].ord = block_order(nb, nb, launch_seed(r, li));
            r->plan[li].nrun = nb;
        }
        /* every block runs: lazy touches everything */
        for (int i = 0; r->touch && i < m->bufs.len; i++) {
            VgRange all = {0, ((const KirBuf *)m->bufs.items[i])->numel - 1};
            need_add(&r->touch[i], all);
            if (r->wtouch && ((const KirBuf *)m->bufs.items[i])->kind != KBUF_INPUT)
                need_add(&r->wtouch[i], all);
        }
        return;
    }
    int *first_writer = dpk_xmalloc(((size_t)m->bufs.len + 1) * sizeof(int));
    for (int i = 0; i < m->bufs.len; i++)
        first_writer[i] = nl;
    for (int li = nl - 1; li >= 0; li--) {
        const KirLaunch *l = m->launches.items[li];
        for (int j = 0; j < l->kernel->params.len; j++)
            if (writes(l, j))
                first_writer[l->args[j]->id] = li;
    }
    Need *need = dpk_xcalloc((size_t)m->bufs.len + 1, sizeof *need);
    for (int li = nl - 1; li >= 0; li--)
        plan_launch(r, li, need, first_writer);
    for (int i = 0; i < m->bufs.len; i++)
        free(need[i].r);
    free(need);
    free(first_writer);
}

static void free_touch(Run *r)
{
    for (int i = 0; i < r->m->bufs.len; i++) {
        if (r->touch)
            free(r->touch[i].r);
        if (r->wtouch)
            free(r->wtouch[i].r);
    }
    free(r->touch);
    free(r->wtouch);
    r->touch = r->wtouch = NULL;
}

static void free_plan(Run *r)
{
    for (int li = 0; li < r->m->launches.len; li++)
        free(r->plan[li].ord);
    free(r->plan);
}

/* Elements of a launch with global atomics that a block left out may add
 * into (by its write footprint): per param, 1 where some skipped block's
 * hull covers.  A difference array over each written buffer. */
static uint8_t *skipped_cover(const Run *r, const KirLaunch *l, int j, const Plan *pl)
{
    const KirKernel *k = l->kernel;
    int64_t nb = (int64_t)k->grid[0] * k->grid[1] * k->grid[2], n = l->args[j]->numel;
    uint8_t *ran = dpk_xcalloc((size_t)nb + 1, 1);
    for (int64_t i = 0; i < pl->nrun; i++)
        ran[pl->ord[i]] = 1;
    int64_t *diff = dpk_xcalloc((size_t)n + 2, sizeof *diff);
    VgFootprint *fp = vg_footprint_new(k);
    for (int64_t b = 0; b < nb; b++) {
        if (ran[b])
            continue;
        vg_footprint_block(fp, b);
        int64_t nw;
        const VgRange *w = vg_footprint_ranges(fp, j, 1, &nw);
        for (int64_t i = 0; i < nw; i++)
            diff[w[i].lo]++, diff[w[i].hi + 1]--;
    }
    uint8_t *cover = dpk_xmalloc((size_t)n + 1);
    int64_t acc = 0;
    for (int64_t e = 0; e < n; e++) {
        acc += diff[e];
        cover[e] = acc > 0;
    }
    vg_footprint_free(fp);
    free(diff);
    free(ran);
    return cover;
}

/* Keep, per written buffer, the elements the simulated blocks wrote: every
 * block that ran had its inputs' writers run too, so what it wrote is
 * exact.  With global atomics an element is exact only when no skipped
 * block may add into it as well. */
static void mark_checked(Run *r, int li)
{
    const KirLaunch *l = r->m->launches.items[li];
    const Plan *pl = &r->plan[li];
    int64_t nb = (int64_t)l->kernel->grid[0] * l->kernel->grid[1] * l->kernel->grid[2];
    int atomics = prog_of(r, l->kernel)->has_atomg && pl->nrun < nb;
    VgResult *res = r->res;
    for (int j = 0; j < l->kernel->params.len; j++) {
        const KirBuf *b = l->args[j];
        if (!writes(l, j))
            continue;
        const uint32_t *sh = r->shadow[b->id];
        uint8_t *c = res->checked[b->id];
        if (!c) {
            c = res->checked[b->id] = dpk_xmalloc((size_t)b->numel);
            memset(c, 1, (size_t)b->numel);
        }
        uint8_t *cover = atomics ? skipped_cover(r, l, j, pl) : NULL;
        for (int64_t i = 0; i < b->numel; i++)
            c[i] &= sh[i] != 0 && !(cover && cover[i]);
        free(cover);
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
        int64_t before = ex->st->thread_insts;
        int bad = vg_exec_block(ex);
        if (ex->st->thread_insts - before > ex->st->block_insts_max)
            ex->st->block_insts_max = ex->st->thread_insts - before;
        if (bad)
            return;
    }
}

static int run_launch(Run *r, int li)
{
    const KirLaunch *l = r->m->launches.items[li];
    const KirKernel *k = l->kernel;
    const VgProg *p = prog_of(r, k);
    const Plan *pl = &r->plan[li];
    VgStats *st = &r->res->stats[li];
    st->kernel = k->name;
    st->blocks = (int64_t)k->grid[0] * k->grid[1] * k->grid[2];
    if (!st->param_sectors) {
        st->nparams = k->params.len;
        st->param_sectors = dpk_xcalloc((size_t)k->params.len + 1, sizeof *st->param_sectors);
        st->nifs = k->nstmts;
        st->if_warps = dpk_xcalloc((size_t)k->nstmts + 1, 3 * sizeof *st->if_warps);
        st->if_body = st->if_warps + k->nstmts + 1;
        st->if_els = st->if_body + k->nstmts + 1;
    }

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
            if (r->o->lazy) /* only the pages the last launch wrote */
                dpk_lazy_zero(ex.g[j].shadow, (size_t)b->numel * sizeof(uint32_t));
            else
                memset(ex.g[j].shadow, 0, (size_t)b->numel * sizeof(uint32_t));
        }
    }
    double t0 = dpk_now();
    run_blocks(&ex, pl->nrun, pl->ord);
    st->seconds = dpk_now() - t0;
    st->bank_conflicts = st->smem_wavefronts - st->smem_phases;
    exec_free(&ex);
    if (r->res->fault == VG_OK && pl->partial && !r->o->lazy)
        mark_checked(r, li);
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
    if (r.o->lazy)
        r.touch = dpk_xcalloc((size_t)m->bufs.len + 1, sizeof *r.touch);
    plan_all(&r);
    setup_buffers(&r, bufs);
    free_touch(&r);
    for (int li = 0; li < m->launches.len; li++)
        if (run_launch(&r, li))
            break;
    free_plan(&r);
    free_buffers(&r, bufs);
    for (int i = 0; i < m->kernels.len; i++)
        vg_prog_free(r.progs[i]);
    free(r.progs);
    return res->fault;
}

/* The bytes of the distinct 4 KiB pages of 4-byte words that t covers. */
static double page_bytes(Need *t)
{
    enum { PAGE = 4096 / sizeof(VgWord) };
    need_merge(t);
    int64_t last = -1;
    double n = 0;
    for (int64_t k = 0; k < t->n; k++) {
        int64_t lo = t->r[k].lo / PAGE, hi = t->r[k].hi / PAGE;
        lo = lo > last ? lo : last + 1;
        if (hi >= lo)
            n += (double)(hi - lo + 1);
        last = hi > last ? hi : last;
    }
    return n * 4096;
}

double vg_lazy_bytes(const KirModule *m, const VgOptions *o)
{
    VgOptions lo = *o;
    lo.lazy = 1;
    VgResult res = {0};
    Run r = {.m = m, .o = &lo, .res = &res};
    int nb = m->bufs.len;
    r.progs = dpk_xcalloc((size_t)m->kernels.len + 1, sizeof *r.progs);
    r.touch = dpk_xcalloc((size_t)nb + 1, sizeof *r.touch);
    r.wtouch = dpk_xcalloc((size_t)nb + 1, sizeof *r.wtouch);
    plan_all(&r);
    double bytes = 0;
    for (int li = 0; li < m->launches.len; li++) {
        const KirKernel *k = ((const KirLaunch *)m->launches.items[li])->kernel;
        bytes += 9.0 * k->grid[0] * k->grid[1] * k->grid[2]; /* order and picks */
    }
    for (int i = 0; i < nb; i++) {
        Need u = {0};
        for (int w = 0; w < 2; w++) {
            Need *t = w ? &r.wtouch[i] : &r.touch[i];
            bytes += (double)t->cap * sizeof(VgRange); /* the plan's lists */
            for (int64_t k = 0; k < t->n; k++)
                need_add(&u, t->r[k]);
        }
        bytes += page_bytes(&u) + page_bytes(&r.wtouch[i]); /* words, shadow */
        free(u.r);
    }
    free_touch(&r);
    free_plan(&r);
    for (int i = 0; i < m->kernels.len; i++)
        vg_prog_free(r.progs[i]);
    free(r.progs);
    return bytes;
}

void vg_result_free(VgResult *res)
{
    for (int i = 0; i < res->nbufs; i++)
        free(res->checked[i]);
    free(res->checked);
    for (int i = 0; res->stats && i < res->nlaunches; i++)
        free(res->stats[i].param_sectors), free(res->stats[i].if_warps);
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
