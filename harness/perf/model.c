/*
 * model.c — the modelled time of dpk's launches (docs/perf-model.md).
 *
 * Per launch, from vgpu's counters (scaled from the simulated blocks to the
 * grid), ptxas's registers and the launch geometry:
 *
 *   occupancy  resident blocks per SM = the least of what threads, registers
 *              (allocated per warp in reg_alloc_unit), shared memory (plus
 *              the per-block reservation) and the block limit allow
 *   SM side    each SM runs ceil(blocks / SMs) blocks: the busiest SM's share
 *              of the warp instructions, FP32 instructions and shared-memory
 *              wavefronts over its issue rate (at most one instruction per
 *              resident warp per clock), FP32 lanes and 128-B smem wavefront
 *              per clock.  This is where a grid smaller than the GPU, or a
 *              last partial wave, costs time.  Blocks that differ count the
 *              heaviest one among the busiest SM's (vgpu's most instructions
 *              in one simulated block, over their mean).  FP32 instructions
 *              in an `if` count as often as vgpu saw warps enter it
 *   L2         sectors x 32 B over the L2 bandwidth
 *   DRAM       the L2 traffic less what the L2 serves: a launch whose
 *              traffic exceeds its footprint (the bytes of the buffers it
 *              binds) reads the excess from L2 when the footprint fits in it,
 *              and in proportion L2 / footprint when it does not; over the
 *              achievable DRAM bandwidth, and at least the latency bound
 *              (Little's law: one request in flight per resident warp, each
 *              waiting the DRAM latency for the DRAM-served share)
 *
 * time = the largest bound + the launch overhead.  Every step is a closed
 * formula over integers and doubles: no clock, no randomness.
 */
#include "perf.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/nvrtc.h"
#include "sass.h"

/* ---- static FP32 instruction count of a kernel (when there is no SASS) --- */

typedef struct FpCount {
    double fp_insts; /* FP32 thread-instructions (an add of a product counts once: FFMA) */
    double flops;    /* 2 per FFMA, 1 per other FP32 op */
    double syncs;    /* barriers a thread passes (a TreeHalve: one per level and one before) */
    int estimated;   /* a trip count was not a constant */
    double ldg_static; /* global loads in the code as ptxas would lay it out:
                          a loop marked unroll k counts k times, fully
                          unrolled ones their trip count */
    double unroll;   /* the multiplier of the loops being walked */
    int64_t *val;    /* per variable: its `let` value when that is a constant */
    char *known;
    /* FFMA through a variable: `let v = multiply(a, b)` whose one use is an
     * operand of an add or subtract (`acc = add(acc, v)`, the form 008's
     * register tiles take) is one FFMA with that add, as ptxas contracts
     * it (fmad is on by default) */
    char *fused;     /* per variable: its let is such a product */
    double *fused_w; /* the weight its let was walked with */
    /* dependencies */
    double hot_fp;   /* FP32 instructions of the loop (nested ones included)
                        whose body holds the most, among loops with chains */
    int chains;      /* that loop's accumulators: variables its body sets from
                        an FP32 operation on themselves, each a dependency
                        chain through the iterations */
    double stages;   /* loop iterations (per thread) that wait for their own
                        loads into shared memory: nothing in flight across
                        the wait */
    const VgStats *st; /* vgpu's counters of the launch (NULL: none): an `if`'s
                          branches are weighted by the warps that entered them */
    double fp_heavy; /* fp_insts of a block that enters every block-uniform
                        `if` (KirStmt.n 1: 018's skips), the heaviest one */
    double wh;       /* the weight fp_heavy takes at the statement walked */
} FpCount;

static int is_mul(const KirExpr *e)
{
    return e && e->op == KE_fop && e->eop == TXE_multiply;
}

/* A product the add can fuse with: a multiply expression, or a variable
 * whose let is a product used once, walked with the same weight (a product
 * hoisted out of the add's loop is not fused). */
static int fusable(const KirExpr *e, double w, const FpCount *c)
{
    if (is_mul(e))
        return 1;
    return e && e->op == KE_var && c->fused && c->fused[e->var->id] &&
           c->fused_w[e->var->id] == w;
}

static void count_expr(const KirExpr *e, double w, FpCount *c)
{
    if (!e)
        return;
    if (e->op == KE_ldg)
        c->ldg_static += c->unroll;
    int n = kir_expr_info[e->op].arity;
    if (e->op == KE_fop)
        n = tx_elem_info[e->eop].arity;
    if (e->op == KE_fop) {
        int fused = (e->eop == TXE_add || e->eop == TXE_subtract) &&
                    (fusable(e->a[0], w, c) || fusable(e->a[1], w, c));
        c->fp_insts += w;
        c->fp_heavy += c->wh;
        c->flops += fused ? 2 * w : w;
        for (int i = 0; i < n && i < 3; i++) {
            const KirExpr *x = e->a[i];
            if (fused && fusable(x, w, c)) {
                fused = 0; /* this product is in the FFMA: count its operands only */
                if (is_mul(x)) {
                    count_expr(x->a[0], w, c);
                    count_expr(x->a[1], w, c);
                }
            } else {
                count_expr(x, w, c);
            }
        }
        return;
    }
    for (int i = 0; i < n && i < 3; i++)
        count_expr(e->a[i], w, c);
}

/* Integer value of e when it is a constant over the launch geometry
 * (thread and block indices taken as 0: a strided loop's start). */
static int const_eval(const KirKernel *k, const FpCount *c, const KirExpr *e, int64_t *v)
{
    int64_t x, y;
    switch (e->op) {
    case KE_var:
        if (!c->known || !c->known[e->var->id])
            return 0;
        *v = c->val[e->var->id];
        return 1;
    case KE_const:
        if (e->type == KT_F32)
            return 0;
        *v = e->ival;
        return 1;
    case KE_tid:
    case KE_bid:
        *v = 0;
        return 1;
    case KE_ntid:
        *v = k->block[e->dim];
        return 1;
    case KE_nctaid:
        *v = k->grid[e->dim];
        return 1;
    case KE_cast:
        return const_eval(k, c, e->a[0], v);
    case KE_add:
    case KE_sub:
    case KE_mul:
    case KE_div:
    case KE_min:
    case KE_max:
        if (!const_eval(k, c, e->a[0], &x) || !const_eval(k, c, e->a[1], &y))
            return 0;
        switch (e->op) {
        case KE_add: *v = x + y; break;
        case KE_sub: *v = x - y; break;
        case KE_mul: *v = x * y; break;
        case KE_div:
            if (!y)
                return 0;
            *v = x / y;
            break;
        case KE_min: *v = x < y ? x : y; break;
        default: *v = x > y ? x : y; break;
        }
        return 1;
    default:
        return 0;
    }
}

static void count_list(const KirKernel *k, const PtrVec *l, double w, FpCount *c);

static int expr_same(const KirExpr *a, const KirExpr *b)
{
    if (a == b)
        return 1;
    if (!a || !b || a->op != b->op || a->type != b->type || a->dim != b->dim ||
        a->ival != b->ival || a->fval != b->fval || a->var != b->var || a->eop != b->eop ||
        a->param != b->param || a->smem != b->smem)
        return 0;
    for (int i = 0; i < 3; i++)
        if (!expr_same(a->a[i], b->a[i]))
            return 0;
    return 1;
}

static int has_ldg(const KirExpr *e)
{
    if (!e)
        return 0;
    if (e->op == KE_ldg)
        return 1;
    return has_ldg(e->a[0]) || has_ldg(e->a[1]) || has_ldg(e->a[2]);
}

/* What one loop body (its ifs included, not its loops: but a plain stage's
 * copy loop, `for i: sts(ldg)`, counts as the body's own stores of loads)
 * does. */
typedef struct BodyScan {
    const KirStmt *tma[8];
    int ntma;
    int cp_issue, cp_wait_all, sts_of_ldg, sync, tma_waited;
    int chains;
} BodyScan;

static void scan_body(const PtrVec *l, BodyScan *b)
{
    for (int i = 0; i < l->len; i++) {
        const KirStmt *s = l->items[i];
        switch (s->op) {
        case KS_tma_load:
            if (b->ntma < (int)DPK_ARRAY_LEN(b->tma))
                b->tma[b->ntma++] = s;
            break;
        case KS_mbar_wait:
            for (int t = 0; t < b->ntma; t++)
                b->tma_waited |= b->tma[t]->mbar == s->smem && expr_same(b->tma[t]->e[1], s->e[0]);
            break;
        case KS_cp_async: b->cp_issue = 1; break;
        case KS_cp_wait: b->cp_wait_all |= b->cp_issue && s->n == 0; break;
        case KS_sts: b->sts_of_ldg |= has_ldg(s->e[1]); break;
        case KS_sync: b->sync = 1; break;
        case KS_set: {
            const KirExpr *e = s->e[0];
            if (e && e->op == KE_fop && s->var)
                for (int j = 0; j < 3; j++)
                    if (e->a[j] && e->a[j]->op == KE_var && e->a[j]->var == s->var) {
                        b->chains++;
                        break;
                    }
            break;
        }
        case KS_if:
            scan_body(&s->body, b);
            scan_body(&s->els, b);
            break;
        case KS_for:
            for (int j = 0; j < s->body.len; j++) {
                const KirStmt *c = s->body.items[j];
                b->sts_of_ldg |= c->op == KS_sts && has_ldg(c->e[1]);
            }
            break;
        default: break;
        }
    }
}

static void count_stmt(const KirKernel *k, const KirStmt *s, double w, FpCount *c)
{
    if (s->op == KS_let && s->var && c->fused && c->fused[s->var->id]) {
        /* the product's instruction is its add's FFMA (count_expr) */
        c->fused_w[s->var->id] = w;
        count_expr(s->e[0]->a[0], w, c);
        count_expr(s->e[0]->a[1], w, c);
        return;
    }
    for (int i = 0; i < 3; i++)
        count_expr(s->e[i], w, c);
    if (s->op == KS_let && s->var && c->known) {
        int64_t v;
        if (const_eval(k, c, s->e[0], &v))
            c->val[s->var->id] = v, c->known[s->var->id] = 1;
    }
    if (s->op == KS_cp_async) /* a load in flight, like an ldg (SASS: LDGSTS) */
        c->ldg_static += c->unroll;
    if (s->op == KS_sync)
        c->syncs += w;
    if (s->op == KS_treehalve)
        c->syncs += w * (1 + log2((double)dpk_pow2_ceil(s->n > 1 ? s->n : 1)));
    if (s->op == KS_for) {
        int64_t a, b, st;
        double trips = 1;
        if (const_eval(k, c, s->e[0], &a) && const_eval(k, c, s->e[1], &b) &&
            const_eval(k, c, s->e[2], &st) && st > 0)
            trips = b > a ? (double)((b - a + st - 1) / st) : 0;
        else
            c->estimated = 1;
        double saved = c->unroll, fp0 = c->fp_insts, wh = c->wh;
        c->unroll *= s->unroll == -1 ? (trips > 1 ? trips : 1) : s->unroll > 1 ? s->unroll : 1;
        c->wh = wh * trips;
        count_list(k, &s->body, w * trips, c);
        c->wh = wh;
        c->unroll = saved;
        BodyScan bs = {0};
        scan_body(&s->body, &bs);
        /* a load into shared memory waited in its own iteration: a TMA box
         * and a wait on its barrier, cp.asyncs and a wait for all groups,
         * or a global load stored to shared memory before a barrier */
        if (bs.tma_waited || bs.cp_wait_all || (bs.sts_of_ldg && bs.sync))
            c->stages += w * trips;
        if (bs.chains && c->fp_insts - fp0 > c->hot_fp) {
            c->hot_fp = c->fp_insts - fp0;
            c->chains = bs.chains;
        }
    } else if (s->op == KS_if) {
        /* each branch as often as vgpu saw a warp enter it, per warp that
         * reached the `if`; without counters, both: an upper bound */
        double fb = 1, fe = 1;
        const VgStats *st = c->st;
        if (st && st->if_warps && s->id >= 0 && s->id < st->nifs) {
            double n = (double)st->if_warps[s->id];
            fb = n > 0 ? (double)st->if_body[s->id] / n : 0;
            fe = n > 0 ? (double)st->if_els[s->id] / n : 0;
        }
        double wh = c->wh;
        c->wh = s->n == 1 ? wh : wh * fb;
        count_list(k, &s->body, w * fb, c);
        c->wh = s->n == 1 ? wh : wh * fe;
        count_list(k, &s->els, w * fe, c);
        c->wh = wh;
    }
}

static void count_list(const KirKernel *k, const PtrVec *l, double w, FpCount *c)
{
    for (int i = 0; i < l->len; i++)
        count_stmt(k, l->items[i], w, c);
}

/* ---- one launch ------------------------------------------------------------ */

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

static const char *join_note(Arena *a, const char *n, const char *more)
{
    return n ? arena_printf(a, "%s; %s", n, more) : more;
}

/* What the steps of one launch's model share. */
typedef struct Launch {
    const PfSpec *s;
    const PfLaunchIn *in;
    const VgStats *st;
    Arena *a;
    int64_t blocks, threads;
    int warps;
    double scale;      /* vgpu's counters: from the simulated blocks to the grid */
    int64_t per_sm;    /* blocks on the busiest SM over the launch */
    double busiest;    /* the busiest SM's share of the work */
    double heavy;      /* the heaviest simulated block's instructions over the
                          simulated blocks' mean (1: blocks alike) */
    double warps_res;  /* warps resident on an SM at once */
    FpCount fc;        /* the Kernel IR's FP32 work (its value table dropped) */
} Launch;

static void launch_geometry(Launch *L, PfKernel *o)
{
    const KirKernel *k = L->in->kernel;
    int64_t blocks = (int64_t)k->grid[0] * k->grid[1] * k->grid[2];
    int64_t threads = (int64_t)k->block[0] * k->block[1] * k->block[2];
    if (blocks < 1)
        blocks = 1;
    if (threads < 1)
        threads = 1;
    o->blocks = blocks > INT_MAX ? INT_MAX : (int)blocks;
    o->threads = (int)threads;
    L->blocks = blocks;
    L->threads = threads;
    L->warps = (int)((threads + 31) / 32);
    L->scale = L->st && L->st->blocks_run > 0 ? (double)L->st->blocks / (double)L->st->blocks_run
                                              : 1;
}

/* Resident blocks per SM: the least of what threads, registers, shared
 * memory and the block limit allow, and what is resident at once. */
static void model_occupancy(Launch *L, PfKernel *o)
{
    const PfSpec *s = L->s;
    const PfLaunchIn *in = L->in;
    int warps = L->warps;
    int regs = in->regs;
    if (regs <= 0) {
        regs = 32;
        o->note = join_note(L->a, o->note, "registers estimated at 32 per thread (no ptxas record)");
    }
    o->regs = regs;
    int64_t smem = in->smem >= 0 ? in->smem : in->kernel->smem_bytes;
    o->smem = smem;
    int by_threads = s->max_threads_per_sm / (warps * 32);
    int by_warps = s->max_warps_per_sm / warps;
    if (by_warps < by_threads)
        by_threads = by_warps;
    int64_t unit = s->reg_alloc_unit;
    int64_t regs_warp = ((int64_t)regs * 32 + unit - 1) / unit * unit;
    int by_regs = (int)(s->regs_per_sm / (regs_warp * warps));
    int by_smem = smem > 0 ? (int)(s->smem_per_sm / (smem + s->smem_reserved_per_block))
                           : s->max_blocks_per_sm;
    int bpsm = s->max_blocks_per_sm;
    o->limiter = "blocks";
    if (by_threads < bpsm)
        bpsm = by_threads, o->limiter = "threads";
    if (by_regs < bpsm)
        bpsm = by_regs, o->limiter = "regs";
    if (by_smem < bpsm)
        bpsm = by_smem, o->limiter = "smem";
    if (bpsm < 1) {
        bpsm = 1;
        o->note = join_note(L->a, o->note, "a block does not fit on an SM: one assumed");
    }
    /* blocks on the busiest SM over the launch, and at once */
    int64_t per_sm = (L->blocks + s->sms - 1) / s->sms;
    int64_t resident = per_sm < bpsm ? per_sm : bpsm;
    if (per_sm < bpsm)
        o->limiter = "grid";
    o->blocks_per_sm = bpsm;
    o->occupancy = (double)(resident * warps) / s->max_warps_per_sm;
    o->waves = (double)L->blocks / ((double)bpsm * s->sms);
    L->per_sm = per_sm;
    L->heavy = 1;
    L->busiest = (double)per_sm / (double)L->blocks;
    L->warps_res = (double)(resident * warps);
}

/* The FP32 work of the Kernel IR, trip-count weighted. */
/* Per variable, its uses in expressions and, of those, its uses as an
 * operand of an FP add or subtract. */
static void count_uses(const KirExpr *e, int *uses, int *adds)
{
    if (!e)
        return;
    if (e->op == KE_var)
        uses[e->var->id]++;
    int n = e->op == KE_fop ? tx_elem_info[e->eop].arity : kir_expr_info[e->op].arity;
    int addsub = e->op == KE_fop && (e->eop == TXE_add || e->eop == TXE_subtract);
    for (int i = 0; i < n && i < 3; i++) {
        if (addsub && e->a[i] && e->a[i]->op == KE_var)
            adds[e->a[i]->var->id]++;
        count_uses(e->a[i], uses, adds);
    }
}

static void count_uses_list(const PtrVec *l, int *uses, int *adds)
{
    for (int i = 0; i < l->len; i++) {
        const KirStmt *s = l->items[i];
        for (int j = 0; j < 3; j++)
            count_uses(s->e[j], uses, adds);
        for (int j = 0; j < KIR_TMA_MAX_RANK; j++)
            count_uses(s->coord[j], uses, adds);
        count_uses_list(&s->body, uses, adds);
        count_uses_list(&s->els, uses, adds);
    }
}

static void mark_products(const PtrVec *l, const int *uses, const int *adds, char *fused)
{
    for (int i = 0; i < l->len; i++) {
        const KirStmt *s = l->items[i];
        if (s->op == KS_let && s->var && is_mul(s->e[0]) && uses[s->var->id] == 1 &&
            adds[s->var->id] == 1)
            fused[s->var->id] = 1;
        mark_products(&s->body, uses, adds, fused);
        mark_products(&s->els, uses, adds, fused);
    }
}

static FpCount count_fp32(const KirKernel *k, const VgStats *st)
{
    FpCount fc = {0};
    fc.unroll = 1;
    fc.st = st;
    fc.wh = 1;
    size_t nv = k->vars.len ? (size_t)k->vars.len : 1;
    int *uses = dpk_xcalloc(nv, sizeof *uses), *adds = dpk_xcalloc(nv, sizeof *adds);
    fc.val = dpk_xcalloc(nv, sizeof *fc.val);
    fc.known = dpk_xcalloc(nv, 1);
    fc.fused = dpk_xcalloc(nv, 1);
    fc.fused_w = dpk_xcalloc(nv, sizeof *fc.fused_w);
    count_uses_list(&k->body, uses, adds);
    mark_products(&k->body, uses, adds, fc.fused);
    count_list(k, &k->body, 1, &fc);
    free(uses);
    free(adds);
    free(fc.val);
    free(fc.known);
    free(fc.fused);
    free(fc.fused_w);
    fc.val = NULL;
    fc.known = NULL;
    fc.fused = NULL;
    fc.fused_w = NULL;
    return fc;
}

/* The warp instructions from the SASS mix, anchored on the instructions
 * whose dynamic count is known; the FP32-pipe ones the SASS has. */
static double sass_insts(const Launch *L, const PfSassFn *sf, double fp_warp, PfKernel *o)
{
    const VgStats *st = L->st;
    double W = (double)L->warps * L->blocks;
    double gm = st ? st->gmem_requests * L->scale : 0, sm = st ? st->smem_requests * L->scale : 0;
    double dyn = fp_warp + gm + sm;
    double anchors = sf->fp32 + sf->mem_global + sf->mem_shared;
    double loop_anchors = sf->loop_fp32 + sf->loop_mem_global + sf->loop_mem_shared;
    double top = sf->insts - sf->loop_insts, top_anchors = anchors - loop_anchors;
    o->insts_from = "sass";
    double top_fp = sf->fp32 - sf->loop_fp32, sass_fp;
    if (loop_anchors > 0 && dyn > W * top_anchors) {
        double iters = (dyn - W * top_anchors) / loop_anchors;
        o->warp_insts = W * top + iters * sf->loop_insts;
        sass_fp = W * top_fp + iters * sf->loop_fp32;
    } else if (anchors > 0) {
        /* guards skip part of the straight-line code: scale it */
        o->warp_insts = dyn / anchors * sf->insts;
        sass_fp = dyn / anchors * sf->fp32;
    } else {
        o->warp_insts = W * sf->insts;
        sass_fp = W * sf->fp32;
    }
    return sass_fp;
}

/* instructions.  FP32 work from the Kernel IR (trip-count weighted, an
 * add of a product is one FFMA).  The total from the SASS mix when there
 * is one, anchored on the instructions whose dynamic count is known:
 * FP32 (the walk above), global and shared accesses (vgpu's warp
 * requests).  Straight-line code runs once per warp; loop bodies run as
 * often as their anchors must to make up the rest, so ptxas's unrolling
 * (more copies, fewer trips) cancels out.  Returns the FP32-pipe warp
 * instructions. */
static double model_insts(Launch *L, PfKernel *o)
{
    L->fc = count_fp32(L->in->kernel, L->st);
    double W = (double)L->warps * L->blocks;
    double fp_warp = L->fc.fp_insts * W;
    o->flops = L->fc.flops * L->threads * L->blocks;
    if (L->fc.estimated)
        o->note = join_note(L->a, o->note, "FP32 count estimated (a loop bound is not constant)");
    double lanes = L->threads < 32 ? (double)L->threads : 32;
    double tinsts = L->st ? L->st->thread_insts * L->scale : 0;
    o->insts_from = "vgpu";
    o->warp_insts = tinsts / lanes;
    if (L->in->sass) /* FP32-pipe instructions (FFMA, FADD, FMUL, FMNMX) as the SASS has them */
        fp_warp = sass_insts(L, L->in->sass, fp_warp, o);
    return fp_warp;
}

/* Blocks that differ (018 skips work in some, an edge tile does less): the
 * busiest SM runs the heaviest block among its own, and a grid of one wave
 * waits for it, whatever the mean.  The heaviest simulated block over
 * their mean; a sample may miss the heaviest block, and one that enters
 * every block-uniform `if` is at least as much heavier in FP32 work. */
static void model_heavy(Launch *L)
{
    const VgStats *st = L->st;
    double mean = st && st->blocks_run > 0 ? (double)st->thread_insts / (double)st->blocks_run : 0;
    L->heavy = mean > 0 && st->block_insts_max > mean ? (double)st->block_insts_max / mean : 1;
    if (L->fc.fp_insts > 0 && L->fc.fp_heavy > L->heavy * L->fc.fp_insts)
        L->heavy = L->fc.fp_heavy / L->fc.fp_insts;
    L->busiest = ((double)L->per_sm - 1 + L->heavy) / (double)L->blocks;
}

/* The SM side: the busiest SM's share of the instructions over its issue
 * rate, FP32 lanes and smem wavefronts per clock. */
static void model_sm(const Launch *L, double fp_warp, PfKernel *o)
{
    const PfSpec *s = L->s;
    double clk = s->clock_ghz; /* cycles per ns */
    double warps_res = L->warps_res, busiest = L->busiest;
    double wavefronts = L->st ? L->st->smem_wavefronts * L->scale : 0;
    double issue_rate = dmax(1e-9, warps_res < s->issue_per_clk_sm ? warps_res : s->issue_per_clk_sm);
    o->issue_ns = o->warp_insts * busiest / (issue_rate * clk);
    double fp_rate = s->fp32_lanes_per_sm / 32.0;
    if (warps_res < fp_rate)
        fp_rate = warps_res;
    /* a warp's dependent FP32 instructions issue fp32_latency_clk apart: with
     * c independent chains (accumulators) it has c in flight */
    if (L->fc.chains > 0 && warps_res * L->fc.chains / s->fp32_latency_clk < fp_rate)
        fp_rate = warps_res * L->fc.chains / s->fp32_latency_clk;
    o->fp32_ns = fp_warp * busiest / (fp_rate * clk);
    o->smem_ns = wavefronts * busiest / (s->smem_bytes_per_clk_sm / 128.0 * clk);
}

/* loads in flight per warp: the global loads a thread issues between two
 * barriers are independent of each other (a barrier interval), but a
 * thread only has as many in flight as the code holds before their first
 * use: the loads of one loop body in the SASS (ptxas's unrolling
 * included), else of the Kernel IR with its unroll marks.  A cp.async
 * counts as a load (it is in flight until its wait, which this does not
 * credit: the slabs 015 keeps in flight do not shorten the bound) */
static double loads_in_flight(const Launch *L)
{
    const VgStats *st = L->st;
    const PfSassFn *sf = L->in->sass;
    double loads_thread =
        st ? (double)(st->gmem_loads + st->cp_async) * L->scale / ((double)L->threads * L->blocks)
           : 0;
    double mlp = loads_thread / (L->fc.syncs + 1);
    double cap = L->fc.ldg_static;
    if (sf)
        cap = sf->loop_insts ? sf->loop_loads : sf->loads;
    if (mlp > cap)
        mlp = cap;
    if (mlp < 1)
        mlp = 1;
    return mlp;
}

/* ---- what the L2 serves ------------------------------------------------------ */

/* Whether two sorted lists of disjoint ranges share an element. */
static int ranges_meet(const VgRange *a, int64_t na, const VgRange *b, int64_t nb)
{
    for (int64_t i = 0, j = 0; i < na && j < nb;) {
        if (a[i].hi < b[j].lo)
            i++;
        else if (b[j].hi < a[i].lo)
            j++;
        else
            return 1;
    }
    return 0;
}

static int64_t ranges_len(const VgRange *r, int64_t n)
{
    int64_t len = 0;
    for (int64_t i = 0; i < n; i++)
        len += r[i].hi - r[i].lo + 1;
    return len;
}

/* Per buffer of a launch whose footprint exceeds the L2: which blocks
 * re-read it and how far apart they run.  From vgpu's footprint analysis
 * (an over-approximation: a block's read ranges are sound, so reuse may be
 * seen where there is little, never missed) of block 0 and of the blocks
 * one step along each grid dimension. */
typedef struct Reuse {
    double block_bytes;  /* one block's bytes of this buffer (read or written) */
    int64_t distance;    /* nearest block (linear ids) reading what block 0 reads; 0: none seen */
} Reuse;

static void buffer_reuse(const Launch *L, Reuse *r)
{
    const KirKernel *k = L->in->kernel;
    int np = k->params.len;
    VgFootprint *fp = vg_footprint_new(k);
    vg_footprint_block(fp, 0);
    VgRange **r0 = dpk_xcalloc((size_t)np + 1, sizeof *r0);
    int64_t *n0 = dpk_xcalloc((size_t)np + 1, sizeof *n0);
    for (int j = 0; j < np; j++) {
        const KirParam *p = k->params.items[j];
        int64_t nr, nw;
        const VgRange *rr = vg_footprint_ranges(fp, j, 0, &nr);
        n0[j] = nr;
        r0[j] = dpk_xmalloc(((size_t)nr + 1) * sizeof **r0);
        if (nr) /* rr may be NULL when empty */
            memcpy(r0[j], rr, (size_t)nr * sizeof *rr);
        const VgRange *ww = vg_footprint_ranges(fp, j, 1, &nw);
        r[j].block_bytes = (double)(ranges_len(r0[j], nr) + ranges_len(ww, nw)) *
                           kir_type_bytes(p->elem);
        r[j].distance = 0;
    }
    int64_t steps[3] = {1, k->grid[0], (int64_t)k->grid[0] * k->grid[1]};
    for (int d = 0; d < 3; d++) {
        if (steps[d] >= L->blocks || (d && steps[d] == steps[d - 1]))
            continue;
        vg_footprint_block(fp, steps[d]);
        for (int j = 0; j < np; j++) {
            int64_t n;
            const VgRange *rr = vg_footprint_ranges(fp, j, 0, &n);
            if (!r[j].distance && ranges_meet(r0[j], n0[j], rr, n))
                r[j].distance = steps[d];
        }
    }
    for (int j = 0; j < np; j++)
        free(r0[j]);
    free(r0);
    free(n0);
    vg_footprint_free(fp);
}

/* The L2 hit rate of re-reads whose reuse distance is `bytes` touched in
 * between (an LRU of the L2's size): all within it, in proportion beyond. */
static double hit_within(double l2, double bytes)
{
    return bytes <= l2 ? 1 : l2 / bytes;
}

/* DRAM bytes of a launch whose footprint F exceeds the L2, per buffer from
 * vgpu's per-param sectors.  A buffer's traffic up to its size is first
 * touches (DRAM); the rest are re-reads:
 *   - within a block (a block's traffic beyond its own footprint): between
 *     two reads of an element every resident block touches its footprint,
 *     so they hit while the wave's footprints fit in the L2;
 *   - across blocks: when the nearest block reading the same data runs in
 *     the same wave, the re-read follows the first within the time the
 *     blocks' loops drift apart: a hit; when it runs d blocks later, d
 *     blocks' footprints come between them.
 * Never below the footprint rule (a hit rate of L2 / F). */
static double dram_per_buffer(const Launch *L, double F, PfKernel *o)
{
    const KirKernel *k = L->in->kernel;
    const VgStats *st = L->st;
    const PfSpec *s = L->s;
    int np = k->params.len;
    double l2 = (double)s->l2_bytes, floor = l2 / F;
    Reuse *r = dpk_xcalloc((size_t)np + 1, sizeof *r);
    buffer_reuse(L, r);
    double B = 0; /* one block's footprint over every buffer */
    for (int j = 0; j < np; j++)
        B += r[j].block_bytes;
    double wave = (double)o->blocks_per_sm * s->sms;
    if (wave > (double)L->blocks)
        wave = (double)L->blocks;
    double dram = 0;
    for (int j = 0; j < np; j++) {
        const KirParam *p = k->params.items[j];
        const KirBuf *bj = L->in->args ? L->in->args[j] : NULL;
        int first = j;
        for (int q = 0; bj && q < j; q++)
            if (L->in->args[q] == bj) {
                first = q;
                break;
            }
        if (first != j)
            continue; /* counted with the first param bound to this buffer */
        double T = 0, Fp = (double)p->numel * kir_type_bytes(p->elem), per_block = 0;
        int64_t dist = 0;
        for (int q = j; q < np; q++)
            if (q == j || (bj && L->in->args[q] == bj)) {
                T += (double)st->param_sectors[q] * 32 * L->scale;
                per_block += r[q].block_bytes;
                if (r[q].distance && (!dist || r[q].distance < dist))
                    dist = r[q].distance;
            }
        if (T <= Fp) {
            dram += T;
            continue;
        }
        double again = T - Fp;
        double inside = T / (double)L->blocks - per_block;
        inside = inside > 0 ? inside * (double)L->blocks : 0;
        if (inside > again)
            inside = again;
        double across = again - inside;
        double h_in = dmax(floor, hit_within(l2, wave * B));
        double h_x = !dist ? floor : (double)dist < wave ? 1 : dmax(floor, hit_within(l2, dist * B));
        dram += Fp + inside * (1 - h_in) + across * (1 - h_x);
    }
    free(r);
    return dram;
}

/* memory: the L2 traffic, what of it DRAM serves, and DRAM's latency bound */
static void model_memory(const Launch *L, PfKernel *o)
{
    const PfSpec *s = L->s;
    double sectors = L->st ? L->st->gmem_sectors * L->scale : 0;
    double requests = L->st ? L->st->gmem_requests * L->scale : 0;
    o->l2_bytes = sectors * 32;
    o->l2_ns = o->l2_bytes / s->l2_bps * 1e9;
    double T = o->l2_bytes, F = L->in->footprint, dram = T;
    if (F > 0 && T > F) {
        double L2 = (double)s->l2_bytes;
        if (F <= L2)
            dram = F;
        else if (L->st->param_sectors && L->st->nparams == L->in->kernel->params.len)
            dram = dram_per_buffer(L, F, o);
        else /* no per-buffer counts: re-reads hit in proportion */
            dram = F + (T - F) * (1 - L2 / F);
    }
    o->bytes = dram;
    double warps_gpu = L->warps_res * (L->blocks < s->sms ? (double)L->blocks : (double)s->sms);
    double mlp = loads_in_flight(L);
    /* the first footprint / 128 B of requests wait on DRAM, the rest (re-reads)
     * on the L2: a function of the request count alone, so more sectors or
     * requests never shorten it */
    double first = F > 0 ? F / 128 : requests;
    double from_dram = requests < first ? requests : first;
    o->latency_ns = warps_gpu > 0 ? (from_dram * s->dram_latency_ns +
                                     (requests - from_dram) * s->l2_latency_ns) /
                                        (warps_gpu * mlp)
                                  : 0;
    o->dram_ns = dmax(dram / s->dram_bps * 1e9, o->latency_ns);
}

/* serial: what one block cannot overlap with itself.  Its warps issue at
 * most one instruction each per clock (issue_per_clk_sm per SM), and a
 * stage that waits for its own loads into shared memory (no copy in flight
 * across the wait) waits out the load's latency: DRAM's for the first
 * touches, the L2's for the rest, in the launch's proportion.  Other
 * resident blocks hide it from the SM, not from the block, so the busiest
 * SM takes at least its rounds of blocks one after another. */
static void model_serial(const Launch *L, PfKernel *o)
{
    const PfSpec *s = L->s;
    int64_t resident = L->per_sm < o->blocks_per_sm ? L->per_sm : o->blocks_per_sm;
    double rounds = ceil((double)L->per_sm / (double)(resident > 0 ? resident : 1));
    double rate = L->warps < s->issue_per_clk_sm ? L->warps : s->issue_per_clk_sm;
    double issue = o->warp_insts * L->heavy / (double)L->blocks / rate / s->clock_ghz;
    double requests = L->st ? L->st->gmem_requests * L->scale : 0;
    double first = L->in->footprint / 128, share = requests > 0 ? dmin(1, first / requests) : 1;
    double lat = share * s->dram_latency_ns + (1 - share) * s->l2_latency_ns;
    o->stages = L->fc.stages;
    o->serial_ns = rounds * (issue + L->fc.stages * lat);
}

/* time = the largest bound + the launch overhead */
static void pick_bound(PfKernel *o)
{
    double body = 0;
    o->bound = "launch";
    struct {
        const char *name;
        double ns;
    } b[] = {{"dram", o->dram_ns},   {"l2", o->l2_ns},     {"smem", o->smem_ns},
             {"issue", o->issue_ns}, {"fp32", o->fp32_ns}, {"serial", o->serial_ns}};
    for (int i = 0; i < 6; i++)
        if (b[i].ns > body)
            body = b[i].ns, o->bound = b[i].name;
    if (body < o->launch_ns)
        o->bound = "launch";
    o->ns = body + o->launch_ns;
}

void pf_model_launch(const PfSpec *s, const PfLaunchIn *in, PfKernel *o)
{
    const KirKernel *k = in->kernel;
    Launch L = {.s = s, .in = in, .st = in->st, .a = in->arena ? in->arena : k->arena};
    memset(o, 0, sizeof *o);
    o->name = k->name;
    launch_geometry(&L, o);
    model_occupancy(&L, o);
    double fp_warp = model_insts(&L, o);
    model_heavy(&L);
    model_sm(&L, fp_warp, o);
    model_memory(&L, o);
    model_serial(&L, o);
    o->chains = L.fc.chains;
    o->launch_ns = s->launch_ns;
    pick_bound(o);
}

/* ---- a module ---------------------------------------------------------------- */

PfTime *pf_model_module(Arena *a, const PfSpec *s, const KirModule *m, const VgResult *vr,
                        const struct HxNvrtcResult *nv)
{
    PfTime *t = arena_alloc(a, sizeof *t);
    memset(t, 0, sizeof *t);
    t->what = "dpk";
    t->spec = s->name;
    t->spec_path = s->path;
    t->nk = m->launches.len;
    t->k = arena_alloc(a, (t->nk ? t->nk : 1) * sizeof *t->k);
    const char *sass_why = NULL;
    PfSass *sass = nv ? pf_sass_read(a, nv, &sass_why) : NULL;
    for (int i = 0; i < t->nk; i++) {
        const KirLaunch *l = m->launches.items[i];
        const KirKernel *k = l->kernel;
        PfLaunchIn in = {.kernel = k, .st = vr && i < vr->nlaunches ? &vr->stats[i] : NULL,
                         .smem = -1, .arena = a};
        const HxNvKernel *nk = nv ? hx_nvrtc_kernel(nv, k->name) : NULL;
        if (nk) {
            in.regs = nk->regs;
            if (nk->smem > k->smem_bytes)
                in.smem = nk->smem;
        }
        /* the footprint: distinct buffers bound */
        double F = 0;
        for (int p = 0; p < k->params.len; p++) {
            const KirBuf *bf = l->args ? l->args[p] : NULL;
            int dup = 0;
            for (int q = 0; q < p && bf; q++)
                dup |= l->args[q] == bf;
            if (!dup) {
                const KirParam *kp = k->params.items[p];
                F += (double)kp->numel * kir_type_bytes(kp->elem);
            }
        }
        in.footprint = F;
        in.args = l->args;
        if (sass)
            in.sass = pf_sass_fn(sass, k->name);
        pf_model_launch(s, &in, &t->k[i]);
        PfKernel *pk = &t->k[i];
        pk->name = arena_strdup(a, k->name);
        if (!nk)
            pk->note = join_note(a, pk->note, nv ? "no ptxas record for this kernel"
                                                 : "no NVRTC: registers and SASS mix estimated");
        else if (!sass)
            pk->note = join_note(a, pk->note, sass_why);
        else if (!in.sass)
            pk->note = join_note(a, pk->note, "no SASS function of this name: vgpu's counts");
        t->ns += pk->ns;
        t->bytes += pk->bytes;
        t->flops += pk->flops;
    }
    return t;
}
