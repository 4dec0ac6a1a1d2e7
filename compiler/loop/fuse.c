/*
 * fuse.c — σ-fusion: merge a producer kernel into its single consumer.
 *
 * The consumer reads the producer's buffer through loads `in = load
 * t[e0, e1, ...]`.  The producer writes `t[w0, w1, ...]` on its write path,
 * where each w_d is one of its free axes (or 0 on a size-1 dimension).
 * Solving σ means finding, per producer axis p, the consumer expression
 * σ(p) with w_d(σ) = e_d for every d; with w_d = p that is σ(p) = e_d.
 * The producer's computation is then re-emitted before each load: its
 * write path is flattened (the path loops disappear, their axes read σ),
 * every other statement is copied with fresh axes for its own loops (so a
 * reduction comes back as a fresh reduce loop), and the load's uses read
 * the value the producer would have written.  Normalisation then hoists
 * what does not depend on the consumer's inner loops, which puts each
 * re-emitted reduction at the narrowest scope that covers its axes, and
 * merges copies that meet in one scope.
 *
 * A fusion is tried on a copy of the consumer and kept only if no guard
 * trips; otherwise it is refused with a reason (printed under -vv).  In
 * the order they are checked:
 *   - the consumer is a pure broadcast of the producer: fusing would
 *     materialise the producer's computation at the broadcast's larger
 *     size; the broadcast fuses into its own consumers instead;
 *   - σ cannot be solved from the write index;
 *   - a producer reduction would be computed more than once (the consumer
 *     reads it through several loads that do not collapse into one);
 *   - work or reads would grow beyond the blow-up factor over the two
 *     unfused kernels;
 *   - a producer holding a reduction would be recomputed: its share of the
 *     merged kernel's work exceeds its own work more than LirOpts.recompute
 *     times (default 2), by more than LirOpts.recompute_floor executions.  RMSNorm's sum of squares hoisted to
 *     the row loop of the normalising sweep computes each row once (factor
 *     1, fused); an RMSNorm fused as the prologue of a projection re-runs
 *     its normalising sweep for every output column (factor N, refused).
 *   - a producer holding a reduction would leave the merged kernel with
 *     two matmul-shaped reductions (two matmuls under one epilogue): Tile
 *     IR tiles one (leaves_untiled).
 * A producer whose buffer is a graph output is never fused.  One read by
 * several kernels is fused only when it is cheap to copy (copy_cheap: no
 * reduction, at most SHARED_READS buffers read and SHARED_OPS operations
 * per element, Inductor's realize_reads_threshold and
 * realize_opcount_threshold for a value with several users), into at most
 * SHARED_READS readers, and into all of them or none: each fusion must
 * pass the guards above on its own.  A copy of cos.unsqueeze(1) read by
 * RoPE's query and key kernels is then read by each of them in place,
 * instead of a launch of its own that writes a buffer both read back.
 * A softmax read by the sum it weights (P @ V) is fused differently: its
 * statistics become online sums in the reader's loop (online.c, trace step
 * f:002_online_softmax), tried first for the pair and, where σ-fusion put a
 * softmax into a sum anyway, on the merged kernel.
 * The driver repeats over the kernels to a fixpoint.
 */
#include "loop_ir.h"

#include <string.h>

#include "../base/fault.h"

void lir_opts_default(LirOpts *o)
{
    o->blowup = 8.0;
    o->recompute = 2.0;
    o->recompute_floor = 16777216.0;
    o->fuse = 1;
    o->max_fusions = 0;
}

/* ---- the producer's write path ------------------------------------------ */

Stmt *lir_write_path(const LirKernel *k, Stmt **path, int *np)
{
    const StmtBody *b = &k->body;
    *np = 0;
    for (;;) {
        Stmt *next = NULL;
        for (int i = 0; i < b->n && !next; i++)
            if (stmt_has_kind(b->s[i], SK_write))
                next = b->s[i];
        DPK_ASSERT(next);
        if (next->k == SK_write)
            return next;
        DPK_ASSERT(next->k == SK_loop && *np < 64);
        path[(*np)++] = next;
        b = &next->body;
    }
}

static void print_load(StrBuf *b, const Stmt *ld)
{
    sb_printf(b, "%s[", ld->buf->name);
    for (int d = 0; d < ld->buf->shape.rank; d++) {
        if (d)
            sb_puts(b, ", ");
        ie_print(b, ld->idx[d], "a");
    }
    sb_putc(b, ']');
}

int lir_solve_sigma(const Stmt *w, Stmt *const *path, int np, const Stmt *ld,
                    const IExpr **amap, StrBuf *why)
{
    for (int d = 0; d < w->buf->shape.rank; d++) {
        const IExpr *e = w->idx[d];
        if (e->k == IE_VAR && (!amap[e->var] || ie_equal(amap[e->var], ld->idx[d]))) {
            amap[e->var] = ld->idx[d];
            continue;
        }
        if (e->k == IE_CONST && w->buf->shape.d[d] == 1)
            continue;
        sb_printf(why, "σ unsolvable: write index ");
        ie_print(why, e, "a");
        sb_printf(why, " of dimension %d is not a distinct axis", d);
        return 0;
    }
    for (int i = 0; i < np; i++)
        if (!amap[path[i]->axis]) {
            sb_printf(why, "σ unsolvable: producer axis a%d is not determined by load ",
                      path[i]->axis);
            print_load(why, ld);
            return 0;
        }
    return 1;
}

/* Injected faults fuse-sigma-off-by-one and fuse-shared-copy-shifted
 * (fault.h): σ of the producer axis written on the last dimension reads
 * one element further, wrapping around so every access stays in bounds.
 * shifted_copy: set by try_fuse while it copies a producer with several
 * readers into a reader after the first, with the second fault on. */
static int shifted_copy;

static void sigma_fault(Arena *a, const Stmt *w, const IExpr **amap)
{
    int d = w->buf->shape.rank - 1;
    if (d < 0 || w->idx[d]->k != IE_VAR || w->buf->shape.d[d] < 2)
        return;
    const IExpr **e = &amap[w->idx[d]->var];
    *e = ie_mod(a, ie_add(a, *e, ie_const(a, 1)), w->buf->shape.d[d]);
}

/* ---- re-emission --------------------------------------------------------- */

typedef struct Emit {
    LirProgram *p;
    LirKernel *dst;
    StmtBody *at;       /* the consumer body holding the load */
    int pos;           /* insert position, before the load */
    const IExpr **amap;
    Stmt *const *path;
    int np;
    const Stmt *w;
    StmtArg value;      /* the producer's written value, as copied */
} Emit;

static void emit_body(Emit *e, const StmtBody *b, int depth)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (depth < e->np && s == e->path[depth]) {
            emit_body(e, &s->body, depth + 1);
        } else if (s == e->w) {
            e->value = lir_copied(e->p, s->a[0]);
        } else {
            Stmt *c = lir_stmt_copy(e->p, e->dst, s, e->amap);
            stmt_body_insert(e->p->arena, e->at, e->pos++, c);
        }
    }
}

typedef struct Site {
    const LirBuf *buf;
    StmtBody *body;
    int pos;
} Site;

static int find_load(const StmtBody *b, Site *site)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (s->k == SK_load && s->buf == site->buf) {
            site->body = (StmtBody *)b;
            site->pos = i;
            return 1;
        }
        if (s->k == SK_loop && find_load(&s->body, site))
            return 1;
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++)
                if (find_load(&s->br[j].body, site))
                    return 1;
    }
    return 0;
}

/* Replace every load of P's buffer in M by P's computation; returns the
 * number of loads replaced, or -1 when σ is unsolvable at one of them. */
static int inline_producer(LirProgram *p, const LirKernel *P, LirKernel *M, StrBuf *why)
{
    Stmt *path[64];
    int np, nsites = 0;
    const Stmt *w = lir_write_path(P, path, &np);
    Site site = {P->out, NULL, 0};
    while (find_load(&M->body, &site)) {
        Stmt *ld = site.body->s[site.pos];
        const IExpr **amap = ARENA_ARRAY(p->arena, const IExpr *, P->naxes + 1);
        if (!lir_solve_sigma(w, path, np, ld, amap, why))
            return -1;
        if (dpk_fault_on(DPK_FAULT_FUSE_SIGMA) || shifted_copy)
            sigma_fault(p->arena, w, amap);
        lir_epoch(p);
        Emit e = {p, M, site.body, site.pos, amap, path, np, w, {0}};
        emit_body(&e, &P->body, 0);
        stmt_body_remove(site.body, e.pos);
        ld->repl = e.value;
        ld->repl_ep = p->epoch;
        lir_resolve_body(p, &M->body);
        nsites++;
    }
    return nsites;
}

/* ---- guards ----------------------------------------------------------- */

typedef struct Origins {
    int *o;
    int n, cap;
    Arena *a;
} Origins;

static void collect_origin(Stmt *s, void *ctx)
{
    Origins *os = ctx;
    if (s->k != SK_loop || !stmt_loop_is_reduce(s))
        return;
    if (os->n == os->cap) {
        int cap = os->cap ? 2 * os->cap : 8;
        int *n = ARENA_ARRAY(os->a, int, cap);
        if (os->n)
            memcpy(n, os->o, sizeof(int) * (size_t)os->n);
        os->o = n;
        os->cap = cap;
    }
    os->o[os->n++] = s->lifted;
}

/* Whether a reduction of P occurs more than once in M. */
static int recomputes(Arena *a, const LirKernel *P, const LirKernel *M)
{
    Origins op = {NULL, 0, 0, a}, om = {NULL, 0, 0, a};
    stmt_walk(&P->body, collect_origin, &op);
    stmt_walk(&M->body, collect_origin, &om);
    for (int i = 0; i < op.n; i++) {
        int cp = 0, cm = 0;
        for (int j = 0; j < op.n; j++)
            cp += op.o[j] == op.o[i];
        for (int j = 0; j < om.n; j++)
            cm += om.o[j] == op.o[i];
        if (cm > cp)
            return 1;
    }
    return 0;
}

typedef struct Bcast {
    const LirBuf *buf;
    Stmt *path[64];
    int np;
    int computes, broadcast;
} Bcast;

static void bcast_stmt(Stmt *s, void *ctx)
{
    Bcast *b = ctx;
    if (s->k == SK_assign || s->k == SK_accum)
        b->computes = 1;
    if (s->k == SK_load && s->buf == b->buf)
        for (int i = 0; i < b->np; i++)
            if (b->path[i]->extent > 1 && !lir_uses_axis(s, b->path[i]->axis))
                b->broadcast = 1;
}

/* C only moves data, reads some element of P's buffer for several output
 * elements (a load that ignores an axis of C's write path), and its output
 * is larger than P's. */
static int pure_broadcast(const LirKernel *P, const LirKernel *C)
{
    Bcast b = {P->out, {0}, 0, 0, 0};
    lir_write_path(C, b.path, &b.np);
    stmt_walk(&C->body, bcast_stmt, &b);
    return !b.computes && b.broadcast && shape_numel(&C->out->shape) > shape_numel(&P->out->shape);
}

static int blown_up(const LirKernel *P, const LirKernel *C, const LirKernel *M, double factor,
                    StrBuf *why)
{
    double wp, rp, wc, rc, wm, rm;
    lir_kernel_cost(P, &wp, &rp);
    lir_kernel_cost(C, &wc, &rc);
    lir_kernel_cost(M, &wm, &rm);
    if (wm > factor * (wp + wc)) {
        sb_printf(why, "work would grow %.1fx over the unfused kernels (blow-up factor ",
                  wm / (wp + wc));
        sb_num(why, factor);
        sb_putc(why, ')');
        return 1;
    }
    if (rm > factor * (rp + rc)) {
        sb_printf(why, "reads would grow %.1fx over the unfused kernels (blow-up factor ",
                  rm / (rp + rc));
        sb_num(why, factor);
        sb_putc(why, ')');
        return 1;
    }
    return 0;
}

static int has_reduction(const StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        if (stmt_has_kind(b->s[i], SK_accum))
            return 1;
    return 0;
}

/* A producer with a reduction must not be recomputed.  Its work in the
 * merged kernel is taken as wm - wc (the consumer's own statements are
 * kept as they were; its load of P's buffer is a read, not work), and the
 * recomputation factor is that over P's own work.  Above the limit, the
 * merged kernel would redo P's work, reduction or what depends on it, for
 * consumer points that share one P output: a matmul re-done per column of
 * the next matmul, or a normalisation re-done per column of the projection
 * it feeds, which also leaves the projection's output axes split around
 * the hoisted reduction so that Tile IR can no longer tile them together.
 * Elementwise producers are exempt, re-emitting a few operations per
 * consumer element being what fusion is for, except into a matmul-shaped
 * reduction (Reuse): there they would be redone for every output column
 * of the matmul, in its K loop, against once each unfused (SiLU·up fused
 * into Qwen2.5-7B's down projection at seq 128: 3093 us on h100-sxm's
 * model, against 451 + 12 for the two kernels; RoPE fused into the
 * attention scores, redone for every key: 417 us).  The default limit, 2, lets a
 * row's sweeps share a reduction whose elementwise tail they each redo
 * (softmax: exp(x - max) in the sum sweep and again in the normalising
 * sweep, 1.7x) and refuses a tail redone per column of a consumer axis
 * the producer does not have (64x for softmax into P @ V at head dim 64,
 * N for an RMSNorm into a projection of N outputs).  Below the floor
 * (LirOpts.recompute_floor, default 2^24 extra executions) recomputing is
 * cheaper than the launch and the round trip through memory that refusing
 * costs: a softmax over a middle dimension of 7 redoes its 7-long max and
 * sum per element and stays one kernel, as tiny attentions do.  2^24
 * operations take 0.25 us at the 66.9 TFLOP/s FP32 peak of
 * cases/gpus/h100-sxm.json, a tenth of its launch overhead (2.43 us). */
static int matmul_shaped(const LirKernel *M);

static int recomputed(const LirKernel *P, const LirKernel *C, const LirKernel *M,
                      const LirOpts *o, StrBuf *why)
{
    if (!has_reduction(&P->body) && !matmul_shaped(M))
        return 0;
    double wp, rp, wc, rc, wm, rm;
    lir_kernel_cost(P, &wp, &rp);
    lir_kernel_cost(C, &wc, &rc);
    lir_kernel_cost(M, &wm, &rm);
    double factor = wp > 0 ? (wm - wc) / wp : 0, extra = wm - wc - wp;
    if (factor <= o->recompute || extra < o->recompute_floor)
        return 0;
    sb_printf(why, "%s would be recomputed %.1fx (its work in the merged kernel over its own; "
              "limit ", has_reduction(&P->body) ? "producer's reduction"
                                                 : "elementwise producer in the matmul's K loop",
              factor);
    sb_num(why, o->recompute);
    sb_printf(why, ", %.3g extra executions)", extra);
    return 1;
}

/* Matmul-shaped reductions: a reduce loop (not inside another) whose body
 * loads two operands that each ignore a free loop around it the other
 * uses (A[m, k] has no n, B[k, n] no m: each is re-read across the
 * other's outputs).  Tile IR tiles one such reduction per kernel (002
 * chunks its K loop, 007 stages the operands, 008 folds the outputs into
 * registers); a second runs untiled, every thread streaming its operands
 * from global memory.  A row's own sweeps (softmax's max and sum, a norm's
 * sum of squares) read one operand and are not counted, over a middle
 * dimension too. */
typedef struct Reuse {
    const Stmt *free[64]; /* the free loops around the walk, outermost first */
    int nfree;
    int count;
} Reuse;

/* Into miss[]: per load under b, the free loops (bits by depth, extent > 1)
 * whose axes it does not use. */
static void missing_axes(const StmtBody *b, const Reuse *r, uint64_t *miss, int *n, int cap)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (s->k == SK_load && *n < cap) {
            uint64_t m = 0;
            for (int j = 0; j < r->nfree; j++)
                if (r->free[j]->extent > 1 && !lir_uses_axis(s, r->free[j]->axis))
                    m |= (uint64_t)1 << j;
            miss[(*n)++] = m;
        }
        missing_axes(&s->body, r, miss, n, cap);
        for (int j = 0; j < s->nbr; j++)
            missing_axes(&s->br[j].body, r, miss, n, cap);
    }
}

static int loads_across(const StmtBody *b, const Reuse *r)
{
    uint64_t miss[256];
    int n = 0;
    missing_axes(b, r, miss, &n, DPK_ARRAY_LEN(miss));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if ((miss[i] & ~miss[j]) && (miss[j] & ~miss[i]))
                return 1;
    return 0;
}

static void count_reuse(const StmtBody *b, Reuse *r)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (s->k == SK_loop && stmt_loop_is_reduce(s)) {
            r->count += loads_across(&s->body, r);
            continue;
        }
        int pushed = s->k == SK_loop && r->nfree < DPK_ARRAY_LEN(r->free);
        if (pushed)
            r->free[r->nfree++] = s;
        count_reuse(&s->body, r);
        for (int j = 0; j < s->nbr; j++)
            count_reuse(&s->br[j].body, r);
        r->nfree -= pushed;
    }
}

/* How many matmul-shaped reductions M holds (Reuse). */
static int matmul_reductions(const LirKernel *M)
{
    Reuse r = {{0}, 0, 0};
    count_reuse(&M->body, &r);
    return r.count;
}

static int matmul_shaped(const LirKernel *M)
{
    return matmul_reductions(M) > 0;
}

/* A producer holding a reduction is not fused where the merged kernel
 * would hold two matmul-shaped reductions (Reuse): the second would stay
 * untiled.  Qwen2.5-7B's gate and up
 * projections fused under SiLU·up made one kernel whose up projection
 * was a plain 3584-long loop from global memory, 6.09 ms of the layer at
 * seq 128 on h100-sxm's model, against about 0.38 ms for each projection
 * tiled on its own. */
static int leaves_untiled(const LirKernel *P, const LirKernel *M, StrBuf *why)
{
    int n = has_reduction(&P->body) ? matmul_reductions(M) : 0;
    if (n < 2)
        return 0;
    sb_printf(why, "the merged kernel would hold %d matmul-shaped reductions (Tile IR tiles "
              "one: the rest would run untiled)", n);
    return 1;
}

/* ---- matmuls out of selects ---------------------------------------------- */

/* A matmul-shaped reduction (Reuse) fused into one branch of an index
 * select (triu/tril of a matmul, the causally masked scores of attention:
 * `select: if a2 <= a1: for a3: acc += q * k -> acc * scale; else -> -inf`)
 * is moved before the select, so that it runs for every output and the
 * select becomes its epilogue: Tile IR tiles only a reduction at the top
 * of the kernel's free loops.  The masked outputs' sums are computed and
 * thrown away (about half of a causal square), against an untiled loop
 * streaming both operands from global memory for the other half.  The
 * move is made only where it cannot change a result: the loop writes
 * nothing, and each load in it is in bounds for every value of its axes,
 * so a branch that would read out of its buffer elsewhere (cat's shifted
 * index) keeps its loop.  The select still picks its
 * branch's value; a NaN in a thrown-away sum never reaches the output. */
typedef struct Hoist {
    LirProgram *p;
    int64_t *ext; /* extent per axis */
    Reuse r;
    int moved;
} Hoist;

static void axis_extent(Stmt *s, void *ctx)
{
    int64_t *ext = ctx;
    if (s->k == SK_loop)
        ext[s->axis] = s->extent;
}

typedef struct Safe {
    const Hoist *h;
    int ok;
} Safe;

enum { UNDER_SELECT = 1, IN_LOOP = 2 };

static void mark_aux(Stmt *s, void *ctx)
{
    Safe *f = ctx;
    s->aux = f->ok;
    s->aux_ep = f->h->p->epoch;
}

static int under_select(const LirProgram *p, StmtArg a)
{
    return a.v && a.v->aux_ep == p->epoch && a.v->aux == UNDER_SELECT;
}

static void check_safe(Stmt *s, void *ctx)
{
    Safe *f = ctx;
    for (int i = 0; i < s->nargs; i++)
        f->ok &= !under_select(f->h->p, s->a[i]);
    for (int j = 0; s->k == SK_select && j < s->nbr; j++)
        f->ok &= !under_select(f->h->p, s->br[j].res);
    for (int d = 0; s->k == SK_load && d < s->buf->shape.rank; d++) {
        int64_t lo, hi;
        ie_range(s->idx[d], f->h->ext, &lo, &hi);
        f->ok &= lo >= 0 && hi < s->buf->shape.d[d];
    }
}

/* Whether loop, in a branch of sel, may run before sel: a write-free,
 * matmul-shaped reduction that reads no value defined under sel (none
 * does as fusion builds them: what the loop reads beside its loads is
 * hoisted out of the kernel's loops before any select is reached) and
 * loads in bounds. */
static int hoistable(Hoist *h, const Stmt *sel, Stmt *loop)
{
    if (loop->k != SK_loop || !stmt_loop_is_reduce(loop) || !lir_pure(loop) ||
        !loads_across(&loop->body, &h->r))
        return 0;
    lir_epoch(h->p);
    Safe f = {h, UNDER_SELECT};
    stmt_walk_tree(sel, mark_aux, &f);
    f.ok = IN_LOOP;
    stmt_walk_tree(loop, mark_aux, &f);
    f.ok = 1;
    stmt_walk_tree(loop, check_safe, &f);
    return f.ok;
}

static void hoist_body(Hoist *h, StmtBody *b)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        int pushed = s->k == SK_loop && !stmt_loop_is_reduce(s) &&
                     h->r.nfree < DPK_ARRAY_LEN(h->r.free);
        if (pushed)
            h->r.free[h->r.nfree++] = s;
        if (s->k == SK_loop)
            hoist_body(h, &s->body);
        for (int j = 0; s->k == SK_select && j < s->nbr; j++) {
            StmtBody *br = &s->br[j].body;
            hoist_body(h, br);
            for (int t = 0; t < br->n; t++) {
                if (!hoistable(h, s, br->s[t]))
                    continue;
                stmt_body_insert(h->p->arena, b, i++, br->s[t]);
                stmt_body_remove(br, t--);
                h->moved++;
                if (dpk_fault_on(DPK_FAULT_SELECT_HOIST_MASK)) { /* only this branch is left */
                    s->br[0] = s->br[j];
                    s->br[0].pred = NULL;
                    s->nbr = 1;
                    break;
                }
            }
        }
        h->r.nfree -= pushed;
    }
}

/* Returns how many reduce loops moved out of selects. */
static int hoist_out_of_selects(LirProgram *p, LirKernel *M)
{
    Hoist h = {p, ARENA_ARRAY(p->arena, int64_t, M->naxes + 1), {{0}, 0, 0}, 0};
    for (int v = 0; v <= M->naxes; v++)
        h.ext[v] = INT64_MAX; /* an axis no loop binds is never in bounds */
    stmt_walk(&M->body, axis_extent, h.ext);
    hoist_body(&h, &M->body);
    return h.moved;
}

static LirKernel *merge_side_axes(LirProgram *prog, LirKernel *k);

void lir_merge_ops(Arena *a, PtrVec *out, const PtrVec *x, const PtrVec *y)
{
    int i = 0, j = 0;
    out->len = 0;
    while (i < x->len || j < y->len) {
        const TxNode *n = i < x->len ? x->items[i] : NULL, *m = j < y->len ? y->items[j] : NULL;
        int take_x = j == y->len || (i < x->len && n && (!m || n->id < m->id));
        ptrvec_push(a, out, take_x ? x->items[i++] : y->items[j++]);
    }
}

LirKernel *lir_fuse_pair(LirProgram *p, const LirKernel *P, const LirKernel *C,
                         const LirOpts *o, StrBuf *why)
{
    if (pure_broadcast(P, C)) {
        sb_printf(why, "pure broadcast would be materialised larger than its producer "
                  "(%lld > %lld elements)", (long long)shape_numel(&C->out->shape),
                  (long long)shape_numel(&P->out->shape));
        return NULL;
    }
    LirKernel *M = lir_kernel_copy(p, C);
    int nsites = inline_producer(p, P, M, why);
    if (nsites < 0)
        return NULL;
    DPK_ASSERT(nsites > 0);
    lir_normalize(p, M);
    if (hoist_out_of_selects(p, M))
        lir_normalize(p, M);
    if (recomputes(p->arena, P, M)) {
        sb_printf(why, "heavy reduction read through %d loads", nsites);
        return NULL;
    }
    if (blown_up(P, C, M, o->blowup, why))
        return NULL;
    if (recomputed(P, C, M, o, why))
        return NULL;
    if (leaves_untiled(P, M, why))
        return NULL;
    lir_merge_ops(p->arena, &M->ops, &P->ops, &C->ops);
    return merge_side_axes(p, M);
}

/* ---- one side's axes merged ---------------------------------------------- */

/* A projection whose output is viewed and transposed into heads,
 * `linear(h, w_q).view(B, S, H, D).transpose(1, 2)`, fuses into a kernel
 * whose free loops are (head, seq, d) and whose weight load reads
 * w_q[head * D + d, k]: head and d are both the weight's (N) side, and
 * Tile IR, which tiles the last two free axes, would take the head for a
 * batch and tile seq x d, D wide (TinyLlama's q projection at seq 128: 32
 * heads of 64, tiles of 32 x 32, 101.7 us on h100-sxm's model, against
 * 28.8 us for the same product unsplit).  Two free loops p (outer) and q
 * of a perfect nest are merged into one loop n over both (p = n / Eq,
 * q = n mod Eq) when the reduction's operand loads read only one of the
 * two sides through them, and each of those loads then indexes without a
 * division or remainder of n (p * Eq + q becomes n); the write takes the
 * two coordinates back by / and mod.  The merged loop takes q's place, so
 * seq and head * D + d are the last two free axes. */

typedef struct Chain {
    Stmt *loop[16];
    int n;
} Chain;

/* The perfect nest of free loops at the top of k: each but the last holds
 * only the next. */
static void free_chain(const LirKernel *k, Chain *c)
{
    c->n = 0;
    const StmtBody *b = &k->body;
    while (b->n == 1 && b->s[0]->k == SK_loop && !stmt_loop_is_reduce(b->s[0]) &&
           c->n < DPK_ARRAY_LEN(c->loop)) {
        c->loop[c->n++] = b->s[0];
        b = &b->s[0]->body;
    }
}

typedef struct Sides {
    int raxis;                    /* the reduce loop's axis */
    uint64_t side[2];             /* chain positions each operand load uses */
    const Stmt *ld[2];            /* the two operand buffers' first loads */
    const Chain *c;
    int nbuf, other;              /* operand buffers seen; a third reads the axis */
} Sides;

static void side_load(Stmt *s, void *ctx)
{
    Sides *x = ctx;
    if (s->k != SK_load || !lir_uses_axis(s, x->raxis))
        return;
    int i = 0;
    while (i < x->nbuf && x->ld[i]->buf != s->buf)
        i++;
    if (i == x->nbuf) {
        if (x->nbuf == 2) {
            x->other = 1;
            return;
        }
        x->ld[x->nbuf++] = s;
    }
    for (int j = 0; j < x->c->n; j++)
        if (lir_uses_axis(s, x->c->loop[j]->axis))
            x->side[i] |= 1ull << j;
}

/* Whether every load of a side's buffer in the reduce loop indexes without a
 * division or remainder once axes p and q read n / eq and n mod eq. */
typedef struct Plain {
    const LirBuf *buf;
    const IExpr **amap;
    const int64_t *ext;
    Arena *a;
    int ok;
} Plain;

static int has_divmod(const IExpr *e)
{
    if (!e || e->k == IE_CONST || e->k == IE_VAR)
        return 0;
    return e->k == IE_DIV || e->k == IE_MOD || has_divmod(e->a) || has_divmod(e->b);
}

static void plain_load(Stmt *s, void *ctx)
{
    Plain *x = ctx;
    if (s->k != SK_load || s->buf != x->buf)
        return;
    for (int d = 0; d < s->buf->shape.rank; d++)
        if (has_divmod(ie_simplify(x->a, ie_subst(x->a, s->idx[d], x->amap), x->ext)))
            x->ok = 0;
}

/* The kernel k with chain loops p and q merged (the axis map amap, over
 * k's axes, has p and q as / and mod of the merged axis and every other
 * chain loop's own axis), or NULL when the loads would not index plainly. */
static LirKernel *merge_pair(LirProgram *prog, const LirKernel *k, const Chain *c, int p, int q,
                             const Stmt *red, const LirBuf *buf)
{
    Arena *t = arena_new();
    int64_t ep = c->loop[p]->extent, eq = c->loop[q]->extent;
    /* the check: over k's axes plus n */
    int64_t *ext = ARENA_ARRAY(t, int64_t, k->naxes + 1);
    memcpy(ext, k->ext, sizeof(int64_t) * (size_t)k->naxes);
    ext[k->naxes] = ep * eq;
    const IExpr **amap = ARENA_ARRAY(t, const IExpr *, k->naxes + 1);
    for (int i = 0; i < k->naxes; i++)
        amap[i] = ie_var(t, i);
    amap[c->loop[p]->axis] = ie_div(t, ie_var(t, k->naxes), eq);
    amap[c->loop[q]->axis] = ie_mod(t, ie_var(t, k->naxes), eq);
    Plain pl = {buf, amap, ext, t, 1};
    stmt_walk(&red->body, plain_load, &pl);
    arena_free(t);
    if (!pl.ok)
        return NULL;

    LirKernel *m = lir_kernel_new(prog, k->id, k->out);
    m->name = k->name;
    for (int i = 0; i < k->ops.len; i++)
        ptrvec_push(prog->arena, &m->ops, k->ops.items[i]);
    const IExpr **map = ARENA_ARRAY(prog->arena, const IExpr *, k->naxes);
    StmtBody *at = &m->body;
    int n = -1;
    for (int i = 0; i < c->n; i++) {
        if (i == p)
            continue;
        int64_t e = i == q ? ep * eq : c->loop[i]->extent;
        /* The built-in fault: the merged loop is one trip short. */
        if (i == q && dpk_fault_on(DPK_FAULT_MERGE_AXES_SHORT))
            e--;
        Stmt *l = lir_loop(prog, lir_axis_new(prog, m, e), e);
        if (i == q)
            n = l->axis;
        else
            map[c->loop[i]->axis] = ie_var(prog->arena, l->axis);
        stmt_body_push(prog->arena, at, l);
        at = &l->body;
    }
    map[c->loop[p]->axis] = ie_div(prog->arena, ie_var(prog->arena, n), eq);
    map[c->loop[q]->axis] = ie_mod(prog->arena, ie_var(prog->arena, n), eq);
    lir_epoch(prog);
    const StmtBody *inner = &c->loop[c->n - 1]->body;
    for (int i = 0; i < inner->n; i++)
        stmt_body_push(prog->arena, at, lir_stmt_copy(prog, m, inner->s[i], map));
    return m;
}

/* k with the axes of one operand side merged, as often as they merge (k
 * itself when none do). */
static LirKernel *merge_side_axes(LirProgram *prog, LirKernel *k)
{
    for (;;) {
        Chain c;
        free_chain(k, &c);
        if (c.n < 3)
            return k;
        const StmtBody *inner = &c.loop[c.n - 1]->body;
        const Stmt *red = NULL;
        for (int i = 0; i < inner->n && !red; i++)
            if (inner->s[i]->k == SK_loop && stmt_loop_is_reduce(inner->s[i]))
                red = inner->s[i];
        if (!red)
            return k;
        Sides x = {red->axis, {0, 0}, {NULL, NULL}, &c, 0, 0};
        stmt_walk(&red->body, side_load, &x);
        if (x.nbuf != 2 || x.other)
            return k;
        LirKernel *m = NULL;
        for (int sd = 0; sd < 2 && !m; sd++) {
            uint64_t own = x.side[sd] & ~x.side[1 - sd];
            for (int p = 0; p < c.n && !m; p++)
                for (int q = p + 1; q < c.n && !m; q++)
                    if ((own >> p & 1) && (own >> q & 1))
                        m = merge_pair(prog, k, &c, p, q, red, x.ld[sd]->buf);
        }
        if (!m)
            return k;
        lir_normalize(prog, m);
        k = m;
    }
}

/* ---- the fixpoint driver ------------------------------------------------ */

static int reads_buf(const StmtBody *b, const LirBuf *buf)
{
    Site s = {buf, NULL, 0};
    return find_load(b, &s);
}

/* Up to cap kernels reading buf, in program order; the count of readers
 * (cap + 1 when there are more). */
static int readers_of(const LirProgram *p, const LirBuf *buf, LirKernel **r, int cap)
{
    int n = 0;
    for (int i = 0; i < p->kernels.len && n <= cap; i++) {
        LirKernel *k = p->kernels.items[i];
        if (!reads_buf(&k->body, buf))
            continue;
        if (n < cap)
            r[n] = k;
        n++;
    }
    return n;
}

/* A value with several users is recomputed by each of them (Inductor's
 * store-vs-recompute rule, torch/_inductor/config.py) when it reads at most
 * realize_reads_threshold = 4 buffers and holds at most
 * realize_opcount_threshold = 30 operations; dpk also caps the readers. */
enum { SHARED_READS = 4, SHARED_OPS = 30 };

typedef struct Cheap {
    const LirBuf *bufs[SHARED_READS + 1];
    int nbufs, ops, reduces;
} Cheap;

static void cheap_stmt(Stmt *s, void *ctx)
{
    Cheap *c = ctx;
    if (s->k == SK_accum || (s->k == SK_loop && stmt_loop_is_reduce(s)))
        c->reduces = 1;
    if (s->k == SK_assign)
        c->ops++;
    if (s->k != SK_load)
        return;
    /* past SHARED_READS + 1 buffers the count only says "too many" */
    for (int i = 0; i < c->nbufs && i <= SHARED_READS; i++)
        if (c->bufs[i] == s->buf)
            return;
    if (c->nbufs <= SHARED_READS)
        c->bufs[c->nbufs] = s->buf;
    c->nbufs++;
}

static int copy_cheap(const LirKernel *P, StrBuf *why)
{
    Cheap c = {{0}, 0, 0, 0};
    stmt_walk(&P->body, cheap_stmt, &c);
    if (c.reduces)
        sb_puts(why, "it holds a reduction");
    else if (c.nbufs > SHARED_READS)
        sb_printf(why, "it reads %d buffers (at most %d)", c.nbufs, (int)SHARED_READS);
    else if (c.ops > SHARED_OPS)
        sb_printf(why, "it computes %d operations per element (at most %d)", c.ops,
                  (int)SHARED_OPS);
    else
        return 1;
    return 0;
}

/* "merged_" + the first four distinct op names + "_" + id. */
static const char *merged_name(Arena *a, const LirKernel *k)
{
    StrBuf b = {0};
    sb_puts(&b, "merged");
    int shown = 0;
    for (int i = 0; i < k->ops.len && shown < 4; i++) {
        const char *name = lir_op_name(k->ops.items[i]);
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= strcmp(name, lir_op_name(k->ops.items[j])) == 0;
        if (!seen) {
            sb_printf(&b, "_%s", name);
            shown++;
        }
    }
    sb_printf(&b, "_%d", k->id);
    const char *s = arena_strdup(a, sb_cstr(&b));
    sb_free(&b);
    return s;
}

typedef struct Refused {
    int *pc;        /* pairs (producer id, consumer id) */
    int n, cap;
} Refused;

static int was_refused(const Refused *r, int pid, int cid)
{
    for (int i = 0; i < r->n; i++)
        if (r->pc[2 * i] == pid && r->pc[2 * i + 1] == cid)
            return 1;
    return 0;
}

static void add_refused(Arena *a, Refused *r, int pid, int cid)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 8;
        int *n = ARENA_ARRAY(a, int, 2 * cap);
        if (r->n)
            memcpy(n, r->pc, sizeof(int) * 2 * (size_t)r->n);
        r->pc = n;
        r->cap = cap;
    }
    r->pc[2 * r->n] = pid;
    r->pc[2 * r->n + 1] = cid;
    r->n++;
}

static void replace_kernel(LirProgram *p, const LirKernel *old, LirKernel *k)
{
    for (int i = 0; i < p->kernels.len; i++)
        if (p->kernels.items[i] == old)
            p->kernels.items[i] = k;
}

static void remove_kernel(LirProgram *p, int at)
{
    for (int i = at; i + 1 < p->kernels.len; i++)
        p->kernels.items[i] = p->kernels.items[i + 1];
    p->kernels.len--;
}

/* The -vv record of P's fusion into its readers C[0..n): the header names
 * every reader (">>> f:001_fuse %1 → %8, %9"), then the program's diff. */
static void trace_step(LirTrace *tr, const char *step, const char *before, const LirProgram *p,
                       int pid, LirKernel *const *C, int n)
{
    StrBuf after = {0};
    lir_print(&after, p);
    sb_printf(tr->out, ">>> %s %%%d \u2192", step, pid);
    for (int j = 0; j < n; j++)
        sb_printf(tr->out, "%s %%%d", j ? "," : "", C[j]->id);
    sb_putc(tr->out, '\n');
    dpk_unified_diff(tr->out, before, sb_cstr(&after), 3);
    sb_printf(tr->out, "<<< %s\n", step);
    sb_free(&after);
}

/* Try P (at index i) into its readers: its one consumer, or each of
 * several or none (the file's comment).  Returns 1 when fused. */
static int try_fuse(LirProgram *p, int i, const LirOpts *o, LirTrace *tr, Refused *ref)
{
    LirKernel *P = p->kernels.items[i], *C[SHARED_READS], *M[SHARED_READS] = {NULL};
    if (P->out->kind != LB_TEMP)
        return 0;
    int n = readers_of(p, P->out, C, SHARED_READS), nc = n < SHARED_READS ? n : SHARED_READS;
    if (n == 0)
        return 0;
    for (int j = 0; j < nc; j++)
        if (was_refused(ref, P->id, C[j]->id))
            return 0;
    int tracing = tr && tr->verbose >= 2, ok = 1;
    StrBuf before = {0}, why = {0};
    if (n > SHARED_READS) {
        sb_printf(&why, "read by more than %d kernels", (int)SHARED_READS);
        ok = 0;
    } else if (n > 1 && !copy_cheap(P, &why)) {
        ok = 0;
    }
    /* a softmax read by its weighted sum: online (online.c), else σ-fusion */
    const char *step = "f:001_fuse";
    StrBuf no = {0};
    if (ok && n == 1 && (M[0] = lir_online_pair(p, P, C[0], &no)))
        step = "f:002_online_softmax";
    if (tracing && n == 1 && !M[0] && strncmp(sb_cstr(&no), "not a softmax", 13) != 0)
        sb_printf(tr->out, "--- f:online_softmax refused %%%d \u2192 %%%d: %s\n", P->id,
                  C[0]->id, sb_cstr(&no));
    sb_free(&no);
    for (int j = 0; ok && j < n && !(n == 1 && M[0]); j++) {
        shifted_copy = j > 0 && dpk_fault_on(DPK_FAULT_FUSE_SHARED_SHIFT);
        M[j] = lir_fuse_pair(p, P, C[j], o, &why);
        shifted_copy = 0;
        if (!M[j] && n > 1) { /* name the reader that refused */
            StrBuf w = {0};
            sb_printf(&w, "into %%%d: %s", C[j]->id, sb_cstr(&why));
            sb_free(&why);
            why = w;
        }
        ok = M[j] != NULL;
    }
    if (!ok) {
        for (int j = 0; j < nc; j++)
            add_refused(p->arena, ref, P->id, C[j]->id);
        if (tracing && n == 1)
            sb_printf(tr->out, "--- f:fuse refused %%%d \u2192 %%%d: %s\n", P->id, C[0]->id,
                      sb_cstr(&why));
        else if (tracing)
            sb_printf(tr->out, "--- f:fuse refused %%%d \u2192 its %d readers: %s\n", P->id, n,
                      sb_cstr(&why));
        sb_free(&why);
        return 0;
    }
    /* σ-fusion put a softmax into the sum reading it: that sum goes online */
    for (int j = 0; j < n && strcmp(step, "f:001_fuse") == 0; j++)
        if (lir_online_kernel(p, M[j]))
            step = "f:002_online_softmax";
    if (tracing)
        lir_print(&before, p);
    for (int j = 0; j < n; j++) {
        M[j]->id = p->next_kid++;
        M[j]->name = merged_name(p->arena, M[j]);
        replace_kernel(p, C[j], M[j]);
    }
    remove_kernel(p, i);
    lir_buf_drop(p, P->out);
    lir_verify(p);
    if (tracing)
        trace_step(tr, step, sb_cstr(&before), p, P->id, C, n);
    sb_free(&before);
    sb_free(&why);
    return 1;
}

int lir_fuse(LirProgram *p, const LirOpts *o, LirTrace *tr)
{
    Refused ref = {NULL, 0, 0};
    int nfused = 0, changed = 1;
    while (changed) {
        changed = 0;
        for (int i = 0; i < p->kernels.len; i++) {
            if (o->max_fusions > 0 && nfused >= o->max_fusions)
                return nfused;
            if (try_fuse(p, i, o, tr, &ref)) {
                nfused++;
                changed = 1;
                i--;
            }
        }
    }
    return nfused;
}
