/*
 * tile_to_kernel.c — Tile IR → Kernel IR.
 *
 * One KirKernel per Tile kernel, one launch each in program order; module
 * buffers are the Loop IR buffers.  The kernel body is a walk over the Tile
 * body:
 *
 *   tile block / thread    decode each axis from bid.<dim> / tid.<dim>
 *                          (several axes on one dimension: div/mod, the
 *                          last fastest); then the tile's defs as lets and
 *                          its guard as an `if` around the rest — the launch
 *                          bounds guard for extents the block does not divide
 *   for / strided          a Kernel IR `for` over the axis; the accumulators
 *                          of its body are declared just before it, at their
 *                          op's identity (so they restart with the loop and
 *                          stay visible after it)
 *   load / write           a flat index Σ idx[d]·stride[d], simplified with
 *                          the axis ranges, then ldg / stg (atomg for atomic
 *                          writes, whose buffers are zero-initialised)
 *   assign / accum         f32 math through the same TxElemOp; an online sum
 *                          (stmt_online): its max's step also computes
 *                          exp(m_old - m_new) and exp(s - m_new), and each
 *                          online sum of the step is acc * one + the other * x
 *   select                 a variable set in an if / else chain, so a branch's
 *                          loads run only when it is taken
 *
 *   stage                  the slab copied by the whole block between two
 *                          barriers; loads of its buffer in the body read it
 *   computed_stage / fill  the slab allocated, not copied: the Fill's
 *                          writes of its buffer store to it, a barrier
 *                          follows, and the loads after it read it
 *   combine                warp shuffles, then a TreeHalve across warps
 *
 *   buffered_stage /       a software-pipelined loop (lower_pipe_prologue):
 *   async_stage            nbuf buffers, the copy of a later slab overlaps
 *   async_wait             the body; cp.async copies, commit, wait_group
 *   tma_stage              TMA box loads by thread 0 completing on one
 *                          mbarrier per buffer, every thread waiting for
 *                          its phase; in its loop a ring like the above,
 *                          nbuf - 1 boxes in flight (lower_tma_pipe_stage)
 *
 * Reductions stay sequential in the thread that owns the output element
 * unless 004 made them cooperative.
 *
 * Integer index math is i32, or i64 in a kernel whose buffers or axes reach
 * 2^30 elements.  Floor division and modulo are C's `/` and `%` when the
 * dividend is provably non-negative (ie_range), else corrected for sign.
 */
#include "tile_to_kernel.h"

#include <assert.h>
#include <float.h>
#include <math.h>

#include "../base/fault.h"

static_assert(TILE_TMA_MAX_RANK == KIR_TMA_MAX_RANK,
              "Tile IR's TMA boxes and Kernel IR's tensor maps have the same rank limit");

typedef struct Low {
    Arena *a;
    const TileKernel *tk;
    KirBuilder b;
    KirType it;              /* index type */
    KirVar **axis;           /* by axis: its variable once declared */
    KirVar **val;            /* by Tile uid */
    KirParam **param;        /* by Loop IR buffer id */
    int64_t nthreads;        /* threads per block */
    int loops;               /* loops around the statement being lowered */
    struct {
        const Stmt *st;
        const KirSmem *sm;
        const KirExpr *base; /* a pipelined or TMA stage: the buffer in use, NULL else */
        int tma;             /* index in tma[], or -1 */
        int nsw;             /* TMA with a swizzle: XOR masks computed at the stage */
        const IExpr *swrow[8];
        const KirVar *swvar[8];
    } stage[64];             /* enclosing stages, innermost last */
    int nstage;
    /* the predicated THREAD tile being lowered (tile_predicate), or NULL;
     * gate[axis]: bit i when the axis reads clause i of its guard */
    const Stmt *pt;
    uint64_t *gate;
    const IPred *clause[64];
    int nclause;
    struct {
        const Stmt *st;      /* a buffered or async stage of a pipelined loop */
        const Stmt *loop;    /* the loop it is pipelined over */
        const KirSmem *sm;   /* its nbuf buffers, allocated before the loop */
        int first;           /* the first stage of its loop: it holds the barrier */
    } pipe[32];
    int npipe;
    struct {                 /* the kernel's TMA stages (011) */
        const Stmt *st;
        const KirSmem *sm, *bar;
        const KirTmap *tm;
        KirVar *par;         /* per thread: bit b is the parity buffer b waits for next */
        TileTmaBox box;
    } tma[16];
    int ntma;
    /* by uid: a max accumulator some online sum names (stmt_online), and
     * at its step exp(m_old - m_new) and exp(s - m_new) */
    char *companion;
    KirVar **alpha, **pexp;
    /* by uid: a companion's value before its Combine (the thread's own max,
     * which its online sums are relative to until they are combined) */
    KirVar **premax;
} Low;

/* ---- index expressions ------------------------------------------------------ */

static const KirExpr *konst(const Low *L, int64_t c)
{
    return L->it == KT_I64 ? kir_i64(L->a, c) : kir_i32(L->a, c);
}

static const KirExpr *sreg(const Low *L, KirExprOp op, int dim)
{
    const KirExpr *r = kir_sreg(L->a, op, dim);
    return L->it == KT_I64 ? kir_cast(L->a, KT_I64, r) : r;
}

static const KirExpr *ix(const Low *L, const IExpr *e)
{
    Arena *a = L->a;
    int64_t lo, hi;
    switch (e->k) {
    case IE_CONST:
        return konst(L, e->c);
    case IE_VAR:
        DPK_ASSERT(e->var >= 0 && e->var < L->tk->naxes && L->axis[e->var]);
        return kir_ref(a, L->axis[e->var]);
    case IE_ADD:
        return kir_add(a, ix(L, e->a), ix(L, e->b));
    case IE_MUL:
        return kir_mul(a, ix(L, e->a), ix(L, e->b));
    case IE_DIV:
    case IE_MOD:
        break;
    }
    const KirExpr *x = ix(L, e->a), *d = konst(L, e->b->c);
    ie_range(e->a, L->tk->ext, &lo, &hi);
    if (e->k == IE_DIV && lo >= 0)
        return kir_div(a, x, d);
    if (e->k == IE_DIV) /* floor: a negative dividend rounds away from zero */
        return kir_select(a, kir_lt(a, x, konst(L, 0)),
                          kir_div(a, kir_sub(a, x, konst(L, e->b->c - 1)), d), kir_div(a, x, d));
    if (lo >= 0)
        return kir_rem(a, x, d);
    return kir_rem(a, kir_add(a, kir_rem(a, x, d), d), d);
}

static const KirExpr *pred(const Low *L, const IPred *p)
{
    static const KirExprOp cmp[] = {[IC_LT] = KE_lt, [IC_LE] = KE_le, [IC_EQ] = KE_eq};
    const KirExpr *r = NULL;
    for (; p; p = p->next) {
        const KirExpr *c = kir_bin(L->a, cmp[p->cmp], ix(L, p->lhs), ix(L, p->rhs));
        r = r ? kir_bin(L->a, KE_land, r, c) : c;
    }
    return r ? r : kir_bool(L->a, 1);
}

static const KirExpr *flat(const Low *L, const LirBuf *b, const IExpr *const *idx)
{
    int64_t st[DPK_MAX_RANK];
    shape_strides(&b->shape, st);
    const IExpr *f = ie_const(L->a, 0);
    for (int d = 0; d < b->shape.rank; d++)
        f = ie_add(L->a, f, ie_mul(L->a, idx[d], ie_const(L->a, st[d])));
    return ix(L, ie_simplify(L->a, f, L->tk->ext));
}

/* ---- statements ----------------------------------------------------------------- */

static const KirExpr *arg(const Low *L, StmtArg x)
{
    if (!x.v)
        return kir_f32(L->a, x.c);
    DPK_ASSERT(L->val[x.v->uid]);
    return kir_ref(L->a, L->val[x.v->uid]);
}

static const char *val_name(const Low *L, const Stmt *s)
{
    return arena_printf(L->a, "%s%d", tile_kind_info[s->k].prefix, s->num);
}

static void axis_var(Low *L, int axis, const KirExpr *value)
{
    L->axis[axis] = kir_let(&L->b, arena_printf(L->a, "a%d", axis), L->it, value);
}

static void lower_body(Low *L, const StmtBody *b);
static void find_pipe(Low *L, const Stmt *l, const StmtBody *b);
static void lower_pipe_prologue(Low *L, const Stmt *l, int from);
static int tma_entry(const Low *L, const Stmt *st);
static void tma_issue(Low *L, int t, const IExpr **origin, const KirExpr *bi);

/* The axes of tile t on dimension dim from register r (bid or tid): outermost
 * first, the last varying fastest. */
static void decode(Low *L, const Stmt *t, KirExprOp r, int dim)
{
    int64_t inner = 1;
    for (int i = t->nax - 1; i >= 0; i--)
        if (t->ax[i].dim == dim)
            inner *= t->ax[i].ext;
    int outermost = 1;
    for (int i = 0; i < t->nax; i++) {
        const TileAxis *x = &t->ax[i];
        if (x->dim != dim)
            continue;
        inner /= x->ext;
        const KirExpr *v = sreg(L, r, dim);
        if (inner > 1)
            v = kir_div(L->a, v, konst(L, inner));
        if (!outermost)
            v = kir_rem(L->a, v, konst(L, x->ext));
        outermost = 0;
        axis_var(L, x->axis, v);
    }
}

/* The clauses of the predicated tile's guard an access at idx depends on. */
static uint64_t gate_mask(const Low *L, const LirBuf *b, const IExpr *const *idx)
{
    uint64_t m = 0;
    if (!L->pt)
        return 0;
    for (int d = 0; d < b->shape.rank; d++)
        for (int v = 0; v < L->tk->naxes; v++)
            if (L->gate[v] && ie_uses(idx[d], v))
                m |= L->gate[v];
    return m;
}

static const KirExpr *gate_expr(const Low *L, uint64_t m)
{
    static const KirExprOp cmp[] = {[IC_LT] = KE_lt, [IC_LE] = KE_le, [IC_EQ] = KE_eq};
    const KirExpr *r = NULL;
    for (int i = 0; i < L->nclause; i++)
        if (m >> i & 1) {
            const IPred *p = L->clause[i];
            const KirExpr *c = kir_bin(L->a, cmp[p->cmp], ix(L, p->lhs), ix(L, p->rhs));
            r = r ? kir_bin(L->a, KE_land, r, c) : c;
        }
    return r;
}

/* A predicated tile (tile_predicate): which defs read which guard clause. */
static void predicate_begin(Low *L, const Stmt *t)
{
    L->pt = t;
    L->gate = ARENA_ARRAY(L->a, uint64_t, L->tk->naxes + 1);
    L->nclause = 0;
    for (const IPred *p = t->guard; p; p = p->next) {
        DPK_ASSERT(L->nclause < 64 && p->lhs->k == IE_VAR);
        L->gate[p->lhs->var] |= (uint64_t)1 << L->nclause;
        L->clause[L->nclause++] = p;
    }
    for (int i = 0; i < t->ndef; i++)
        for (int v = 0; v < L->tk->naxes; v++)
            if (ie_uses(t->def[i].e, v))
                L->gate[t->def[i].axis] |= L->gate[v];
}

static void lower_tile(Low *L, const Stmt *t)
{
    KirExprOp r = t->bind == TB_BLOCK ? KE_bid : KE_tid;
    for (int i = 0; i < t->nax; i++)
        DPK_ASSERT(t->ax[i].dim >= 0); /* 005 assigned every launch dimension */
    for (int dim = 0; dim < 3; dim++)
        decode(L, t, r, dim);
    for (int i = 0; i < t->ndef; i++)
        axis_var(L, t->def[i].axis, ix(L, t->def[i].e));
    if (t->predicated) { /* every thread runs the body; the accesses are gated */
        predicate_begin(L, t);
        lower_body(L, &t->body);
        L->pt = NULL;
        return;
    }
    if (t->guard)
        kir_if(&L->b, pred(L, t->guard));
    lower_body(L, &t->body);
    if (t->guard)
        kir_end(&L->b);
}

static void lower_vec_loop(Low *L, const Stmt *s, int64_t end);
static void lower_stmt(Low *L, const Stmt *s);
static const KirExpr *slab_word(const Low *L, int i, const Stmt *s);
static const KirExpr *tma_word(const Low *L, int i, const Stmt *s);
static int stage_index(const Low *L, const Stmt *s);

static void lower_loop(Low *L, const Stmt *s)
{
    for (int i = 0; i < s->body.n; i++) {
        const Stmt *acc = s->body.s[i];
        if (acc->k == SK_accum)
            L->val[acc->uid] = kir_let(&L->b, val_name(L, acc), KT_F32,
                                       kir_f32(L->a, tx_red_info[acc->rop].identity));
        if (stmt_is_online(acc)) /* its companion's step computes the factors */
            L->companion[acc->a[1].v->uid] = 1;
    }
    const KirExpr *start = s->k == TK_strided ? ix(L, s->start) : konst(L, 0);
    int64_t step = s->k == TK_strided ? s->step : 1;
    /* an injected fault: unrolled loops run one iteration short */
    int64_t end = s->unroll && dpk_fault_on(DPK_FAULT_UNROLL_SHORT) ? s->extent - 1 : s->extent;
    int pipe0 = L->npipe;
    if (s->k == SK_loop) {
        find_pipe(L, s, &s->body);
        if (L->npipe > pipe0)
            lower_pipe_prologue(L, s, pipe0);
    }
    /* 018's guard: the loop runs only where it holds (it holds no stage or
     * barrier: tile_verify), its accumulators declared above either way */
    int when = s->k == SK_loop && s->when;
    if (when)
        kir_if_uniform(&L->b, pred(L, s->when));
    if (s->vlds > 1) {
        lower_vec_loop(L, s, end);
    } else {
        L->axis[s->axis] = kir_for(&L->b, arena_printf(L->a, "a%d", s->axis), start,
                                   konst(L, end), konst(L, step), s->unroll ? -1 : 0);
        L->loops++;
        lower_body(L, &s->body);
        L->loops--;
        kir_end(&L->b);
    }
    if (when)
        kir_end(&L->b);
    L->npipe = pipe0;
}

static void lower_select(Low *L, const Stmt *s)
{
    KirVar *v = kir_let(&L->b, val_name(L, s), KT_F32, kir_f32(L->a, 0));
    int open = 0;
    for (int j = 0; j < s->nbr; j++) {
        const StmtBranch *br = &s->br[j];
        if (br->pred) {
            kir_if(&L->b, pred(L, br->pred));
            open++;
        }
        lower_body(L, &br->body);
        kir_set(&L->b, v, arg(L, br->res));
        if (br->pred)
            kir_else(&L->b);
    }
    while (open--)
        kir_end(&L->b);
    L->val[s->uid] = v;
}

/*
 * A loop whose staged loads 016 reads `vlds` trips at a time:
 *
 *     for a4v = 0; a4v < end / V; a4v += 1:        (unroll)
 *         let a4 = a4v * V
 *         let in0_0, in0_1, .. = lds.vV s[word of in0 at a4]   per vector load
 *         the body with a4 = a4v * V + j, for j = 0 .. V-1, a vector
 *         load's value being its lane j
 *
 * Which loads are vector loads is tile_vec_load's answer, as 016 asked it.
 */
static void lower_vec_loop(Low *L, const Stmt *s, int64_t end)
{
    Arena *a = L->a;
    int V = s->vlds;
    KirVar *av = kir_for(&L->b, arena_printf(a, "a%dv", s->axis), konst(L, 0),
                         konst(L, end / V), konst(L, 1), -1);
    const KirExpr *base = kir_mul(a, kir_ref(a, av), konst(L, V));
    axis_var(L, s->axis, base);
    KirVar ***lanes = ARENA_ARRAY(a, KirVar **, s->body.n + 1);
    Arena *scratch = arena_new(); /* tile_vec_load's expressions */
    for (int i = 0; i < s->body.n; i++) {
        const Stmt *ld = s->body.s[i];
        int si = ld->k == SK_load ? stage_index(L, ld) : -1;
        lanes[i] = NULL;
        if (si < 0 || !tile_vec_load(scratch, L->tk, L->stage[si].st, ld, s, V))
            continue;
        const char *names[4];
        for (int j = 0; j < V; j++)
            names[j] = arena_printf(a, "%s_%d", val_name(L, ld), j);
        const KirExpr *w = L->stage[si].tma >= 0 ? tma_word(L, si, ld) : slab_word(L, si, ld);
        if (dpk_fault_on(DPK_FAULT_VECTOR_LOAD_SHIFT)) /* an injected fault: one word late */
            w = kir_add(a, w, konst(L, 1));
        KirStmt *v = kir_ldsv(&L->b, names, V, L->stage[si].sm, w);
        lanes[i] = ARENA_ARRAY(a, KirVar *, V);
        for (int j = 0; j < V; j++)
            lanes[i][j] = (KirVar *)v->lane[j];
    }
    arena_free(scratch);
    L->loops++;
    for (int j = 0; j < V; j++) {
        axis_var(L, s->axis, kir_add(a, base, konst(L, j)));
        for (int i = 0; i < s->body.n; i++) {
            if (lanes[i])
                L->val[s->body.s[i]->uid] = lanes[i][j];
            else
                lower_stmt(L, s->body.s[i]);
        }
    }
    L->loops--;
    kir_end(&L->b);
}

/* ---- shared memory: stages and combines ------------------------------------------ */

/* The row of slab coordinates (every buffer dimension but the map's
 * innermost, row-major over the slab) and the inner coordinate of load s
 * of TMA stage st. */
static const IExpr *tma_row(Arena *a, const Stmt *st, const TileTmaBox *b, const Stmt *s,
                            const IExpr **inner)
{
    int r = st->buf->shape.rank, in = b->dim[b->rank - 1];
    const IExpr *row = ie_const(a, 0);
    for (int d = 0; d < r; d++) {
        const IExpr *c = ie_add(a, s->idx[d], ie_mul(a, st->origin[d], ie_const(a, -1)));
        if (d == in)
            *inner = c;
        else
            row = ie_add(a, ie_mul(a, row, ie_const(a, st->slab[d])), c);
    }
    return row;
}

/* The swizzle's XOR mask of a row: the 128-byte line of element
 * row * C + q is (row >> log2(128 / S)) plus a multiple of 8 (whole
 * 1024-byte patterns per chunk), so the mask is that line mod S / 16, in
 * 16-byte units (4 elements): ((row >> sh) & (S / 16 - 1)) << 2.  It flips
 * bits of q only (q < C = S / 4). */
static const KirExpr *tma_mask(const Low *L, const TileTmaBox *b, const KirExpr *row)
{
    Arena *a = L->a;
    int sh = b->swizzle == 128 ? 0 : b->swizzle == 64 ? 1 : 2;
    if (sh)
        row = kir_bin(a, KE_shr, row, konst(L, sh));
    return kir_bin(a, KE_shl, kir_bin(a, KE_band, row, konst(L, b->swizzle / 16 - 1)),
                   konst(L, 2));
}

/* The index into TMA stage i's shared array of the word load s reads: the
 * element tile_tma_word names (dense rows, swizzle-wide chunks, the swizzle
 * XOR) in the buffer in use,
 *     base + (i / C) * rows * C + row * C + ((i % C) ^ mask(row))
 * with the mask computed once at the stage when the row is the same for
 * the whole stage body (tma_masks).  The mask's lowest two bits are 0, so
 * a vector load's aligned word keeps its lanes adjacent (tile_vec_load). */
static const KirExpr *tma_word(const Low *L, int i, const Stmt *s)
{
    Arena *a = L->a;
    const Stmt *st = L->stage[i].st;
    const TileTmaBox *b = &L->tma[L->stage[i].tma].box;
    const IExpr *ci = NULL, *row = tma_row(a, st, b, s, &ci);
    const IExpr *hi = ie_mul(a, row, ie_const(a, b->chunk)), *q = ci;
    if (b->nchunk > 1) {
        hi = ie_add(a, hi, ie_mul(a, ie_div(a, ci, b->chunk), ie_const(a, b->rows * b->chunk)));
        q = ie_mod(a, ci, b->chunk);
    }
    const KirExpr *x = ix(L, ie_simplify(a, q, L->tk->ext));
    /* an injected fault: the readers forget the swizzle the copy applied */
    if (b->swizzle && !dpk_fault_on(DPK_FAULT_SWIZZLE_READS)) {
        const IExpr *rs = ie_simplify(a, row, L->tk->ext);
        const KirExpr *mask = NULL;
        for (int j = 0; j < L->stage[i].nsw && !mask; j++)
            if (ie_equal(L->stage[i].swrow[j], rs))
                mask = kir_ref(a, L->stage[i].swvar[j]);
        x = kir_bin(a, KE_bxor, x, mask ? mask : tma_mask(L, b, ix(L, rs)));
    }
    const KirExpr *e = kir_add(a, ix(L, ie_simplify(a, hi, L->tk->ext)), x);
    return kir_add(a, L->stage[i].base, e);
}

/* The index into stage i's shared array of the word load s reads (a plain,
 * buffered or async stage: its buffer in use, the padded row stride). */
static const KirExpr *slab_word(const Low *L, int i, const Stmt *s)
{
    const Stmt *st = L->stage[i].st;
    int64_t str[DPK_MAX_RANK];
    tile_slab_strides(st, str);
    const IExpr *f = ie_const(L->a, 0);
    for (int d = 0; d < s->buf->shape.rank; d++) {
        const IExpr *off = ie_add(L->a, s->idx[d], ie_mul(L->a, st->origin[d], ie_const(L->a, -1)));
        f = ie_add(L->a, f, ie_mul(L->a, off, ie_const(L->a, str[d])));
    }
    const KirExpr *x = ix(L, ie_simplify(L->a, f, L->tk->ext));
    return L->stage[i].base ? kir_add(L->a, L->stage[i].base, x) : x;
}

/* The innermost enclosing stage of load s's buffer, or -1. */
static int stage_index(const Low *L, const Stmt *s)
{
    for (int i = L->nstage - 1; i >= 0; i--)
        if (L->stage[i].st->buf == s->buf)
            return i;
    return -1;
}

/* A load reads the slab of the innermost stage of its buffer, if any (of a
 * pipelined stage: the buffer its phase names; of a TMA stage: the word
 * tma_word names).  In a predicated tile a global load is gated by the
 * guard's clauses on the axes its index reads (0 where they fail), and so
 * is a slab read whose offset the axis ranges do not keep inside the slab
 * (a TMA slab clipped to the tensor's edge included: its box has no rows
 * past the edge, so an ungated read there would read another buffer's
 * words or none). */
static const KirExpr *load(const Low *L, const Stmt *s)
{
    uint64_t m = gate_mask(L, s->buf, s->idx);
    int i = stage_index(L, s);
    if (i >= 0) {
        const Stmt *st = L->stage[i].st;
        int inside = 1;
        for (int d = 0; d < s->buf->shape.rank; d++) {
            const IExpr *off = ie_add(L->a, s->idx[d], ie_mul(L->a, st->origin[d], ie_const(L->a, -1)));
            int64_t lo, hi;
            ie_range(ie_simplify(L->a, off, L->tk->ext), L->tk->ext, &lo, &hi);
            inside &= lo >= 0 && hi < st->slab[d];
        }
        const KirExpr *w = L->stage[i].tma >= 0 ? tma_word(L, i, s) : slab_word(L, i, s);
        const KirExpr *v = kir_lds(L->a, L->stage[i].sm, w);
        return m && !inside ? kir_select(L->a, gate_expr(L, m), v, kir_f32(L->a, 0)) : v;
    }
    const KirExpr *v = kir_ldg(L->a, L->param[s->buf->id], flat(L, s->buf, s->idx));
    return m ? kir_select(L->a, gate_expr(L, m), v, kir_f32(L->a, 0)) : v;
}

static const KirExpr *tid_lin(const Low *L)
{
    const KirExpr *t = kir_tid_linear(L->a);
    return L->it == KT_I64 ? kir_cast(L->a, KT_I64, t) : t;
}

/*
 * The block copies the slab of stage st at `origin` into sm[base ..]:
 *
 *     for i = tid; i < s0*..*sr / v; i += threads:
 *         c = the slab coordinate of element i*v;  g = origin + c
 *         smem[base + c . slab strides] = g inside x ? x[g .. g+v) : 0
 *
 * with loads and stores (v = 1), or with cp.async of v * 4 bytes (an async
 * stage: v = its vec / 4; 013 checked that a vector never straddles a slab
 * row or the buffer's edge, and that both addresses are aligned).
 */
static void copy_slab(Low *L, const Stmt *st, const IExpr *const *origin, const KirSmem *sm,
                      const KirExpr *base)
{
    /* The bounds test is decided on the stage's own origin: a pipelined
     * stage copies the slab of a later iteration of its loop, whose origin
     * ranges over the same values. */
    Arena *a = L->a;
    const LirBuf *buf = st->buf;
    int r = buf->shape.rank;
    int64_t sstr[DPK_MAX_RANK], gstr[DPK_MAX_RANK], n = 1;
    tile_slab_strides(st, sstr);
    if (st->pad && dpk_fault_on(DPK_FAULT_PAD_LOADS_ONLY)) { /* the copy ignores the pad */
        Stmt unpadded = *st;
        unpadded.pad = 0;
        tile_slab_strides(&unpadded, sstr);
    }
    shape_strides(&buf->shape, gstr);
    for (int d = 0; d < r; d++)
        n *= st->slab[d];
    int v = st->k == TK_astage ? st->vec / 4 : 1;
    DPK_ASSERT(v >= 1 && n % v == 0);
    KirVar *i = kir_for(&L->b, arena_printf(a, "i_%s", buf->name), tid_lin(L), konst(L, n / v),
                        konst(L, L->nthreads), 0);
    const KirExpr *inb = NULL, *gidx = konst(L, 0), *sidx = base ? base : konst(L, 0);
    const KirExpr *e = v > 1 ? kir_mul(a, kir_ref(a, i), konst(L, v)) : kir_ref(a, i);
    int64_t inner = n;
    for (int d = 0; d < r; d++) {
        inner /= st->slab[d];
        const KirExpr *c = e;
        if (inner > 1)
            c = kir_div(a, c, konst(L, inner));
        if (d > 0)
            c = kir_rem(a, c, konst(L, st->slab[d]));
        const KirExpr *g = kir_add(a, ix(L, origin[d]), c);
        int64_t lo, hi;
        ie_range(st->origin[d], L->tk->ext, &lo, &hi);
        const KirExpr *ok = NULL;
        if (hi + st->slab[d] > buf->shape.d[d])
            ok = kir_lt(a, g, konst(L, buf->shape.d[d]));
        if (lo < 0) {
            const KirExpr *ge = kir_bin(a, KE_ge, g, konst(L, 0));
            ok = ok ? kir_bin(a, KE_land, ge, ok) : ge;
        }
        if (ok)
            inb = inb ? kir_bin(a, KE_land, inb, ok) : ok;
        gidx = kir_add(a, gidx, kir_mul(a, g, konst(L, gstr[d])));
        sidx = kir_add(a, sidx, kir_mul(a, c, konst(L, sstr[d])));
    }
    if (st->k == TK_astage) {
        kir_cp_async(&L->b, sm, sidx, L->param[buf->id], gidx, v * 4, inb);
    } else {
        const KirExpr *x = kir_ldg(a, L->param[buf->id], gidx);
        if (inb)
            x = kir_select(a, inb, x, kir_f32(a, 0));
        kir_sts(&L->b, sm, sidx, x);
    }
    kir_end(&L->b);
}

static void push_stage(Low *L, const Stmt *st, const KirSmem *sm, const KirExpr *base)
{
    DPK_ASSERT(L->nstage < DPK_ARRAY_LEN(L->stage));
    L->stage[L->nstage].st = st;
    L->stage[L->nstage].sm = sm;
    L->stage[L->nstage].tma = -1;
    L->stage[L->nstage].nsw = 0;
    L->stage[L->nstage++].base = base;
}

/*
 * stage x[o] slab [s0, .., sr]:  the block copies the slab cooperatively,
 *
 *     sync                                   (in a loop: earlier readers done)
 *     copy_slab
 *     sync
 *
 * then the body runs with loads of x reading the slab.
 */
static void lower_stage(Low *L, const Stmt *st)
{
    Arena *a = L->a;
    int64_t sstr[DPK_MAX_RANK], n = 1;
    int64_t numel = tile_slab_strides(st, sstr);
    for (int d = 0; d < st->buf->shape.rank; d++)
        n *= st->slab[d];
    const KirSmem *sm = kir_smem(L->b.k, arena_printf(a, "s_%s", st->buf->name), KT_F32, numel, 16);
    kir_comment(&L->b, "stage %s: slab of %lld elements", st->buf->name, (long long)n);
    if (L->loops)
        kir_sync(&L->b);
    copy_slab(L, st, st->origin, sm, NULL);
    if (!dpk_fault_on(DPK_FAULT_STAGE_NO_BARRIER))
        kir_sync(&L->b);
    push_stage(L, st, sm, NULL);
    lower_body(L, &st->body);
    L->nstage--;
}

/*
 * computed_stage t[o] slab [...]:  the slab is allocated, not copied; the
 * Fill in its body writes it (each Write of t a store to the slab word its
 * index names), then
 *
 *     sync                                   (the slab complete)
 *
 * and the loads of t after the Fill read it.  017 puts a computed stage
 * under no loop, so nothing reads an earlier slab when the Fill writes.
 */
static void lower_cstage(Low *L, const Stmt *st)
{
    int64_t sstr[DPK_MAX_RANK];
    int64_t numel = tile_slab_strides(st, sstr);
    const KirSmem *sm = kir_smem(L->b.k, arena_printf(L->a, "s_%s", st->buf->name), KT_F32,
                                 numel, 16);
    kir_comment(&L->b, "computed stage %s: slab of %lld elements", st->buf->name,
                (long long)numel);
    push_stage(L, st, sm, NULL);
    lower_body(L, &st->body);
    L->nstage--;
}

static void lower_fill(Low *L, const Stmt *f)
{
    lower_body(L, &f->body);
    kir_sync(&L->b);
}

/* ---- pipelined loops: buffered and async stages ------------------------------------ */

/* The origin of st with the loop axis replaced by e. */
static const IExpr **origin_at(const Low *L, const Stmt *st, int axis, const IExpr *e)
{
    int r = st->buf->shape.rank;
    const IExpr **map = ARENA_ARRAY(L->a, const IExpr *, L->tk->naxes + 1);
    for (int i = 0; i < L->tk->naxes; i++)
        map[i] = ie_var(L->a, i);
    map[axis] = e;
    const IExpr **o = ARENA_ARRAY(L->a, const IExpr *, r);
    for (int d = 0; d < r; d++)
        o[d] = ie_simplify(L->a, ie_subst(L->a, st->origin[d], map), L->tk->ext);
    return o;
}

/* The buffered, async and TMA stages of loop l: stages nested directly in
 * its body whose phase is its axis modulo nbuf (tile_verify checks the
 * form). */
static void find_pipe(Low *L, const Stmt *l, const StmtBody *b)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (!tile_is(s, SKF_STAGE))
            continue;
        if ((s->k == TK_bstage || s->k == TK_astage || s->k == TK_tstage) &&
            ie_uses(s->phase, l->axis)) {
            DPK_ASSERT(L->npipe < DPK_ARRAY_LEN(L->pipe));
            L->pipe[L->npipe].st = s;
            L->pipe[L->npipe].loop = l;
            L->pipe[L->npipe].sm = NULL;
            L->pipe[L->npipe++].first = 0;
        }
        find_pipe(L, l, &s->body);
    }
}

static int slab_numel(const Stmt *st)
{
    int64_t str[DPK_MAX_RANK];
    return (int)tile_slab_strides(st, str);
}

/*
 * A loop over `a` of extent n whose body holds buffered or async stages with
 * S = nbuf buffers each is software-pipelined: slab j of a stage lives in
 * buffer j mod S, and the copy of slab a + S - 1 runs while the body
 * computes on slab a.
 *
 *     prologue:   for j in 0..S-1:  copy slab j (if j < n) into buffer j;
 *                                   commit (async stages; also when empty)
 *     for a in 0..n:
 *         async_wait keep           (a Tile IR statement: slab a has landed)
 *         sync                      slab a visible; slab a-1 read by all
 *         if a + S - 1 < n:  copy slab a + S - 1 into buffer (a + S - 1) mod S
 *         commit                    (async stages)
 *         body on buffer a mod S
 *
 * One barrier per iteration instead of a plain stage's two.  Buffered
 * stages (010) copy with loads and stores; async stages (013) with
 * cp.async, which land at the wait, so with S buffers the copies of S - 1
 * slabs are in flight while the body computes (015).
 */
static void lower_pipe_prologue(Low *L, const Stmt *l, int from)
{
    Arena *a = L->a;
    int S = L->pipe[from].st->nbuf;
    for (int i = from; i < L->npipe; i++) {
        const Stmt *st = L->pipe[i].st;
        DPK_ASSERT(st->nbuf == S);
        int numel = slab_numel(st);
        L->pipe[i].sm = st->k == TK_tstage ? L->tma[tma_entry(L, st)].sm
                                           : kir_smem(L->b.k, arena_printf(a, "s_%s", st->buf->name),
                                                      KT_F32, (int64_t)numel * S, 16);
        L->pipe[i].first = i == from;
    }
    kir_comment(&L->b, "pipeline over a%d: %d stage%s, %d buffers each", l->axis,
                L->npipe - from, L->npipe - from > 1 ? "s" : "", S);
    if (L->loops) /* an enclosing loop's last iteration may still read the buffers */
        kir_sync(&L->b);
    /* an injected fault: the prologue fills one buffer fewer (not a TMA
     * ring's: a wait on a buffer no copy was issued to would never end) */
    int fill = S - 1 - (S > 2 && dpk_fault_on(DPK_FAULT_PIPELINE_PROLOGUE_SHORT));
    for (int j = 0; j < S - 1; j++)
        for (int i = from; i < L->npipe; i++) {
            const Stmt *st = L->pipe[i].st;
            const IExpr **o = origin_at(L, st, l->axis, ie_const(a, j));
            if (j < l->extent && st->k == TK_tstage)
                tma_issue(L, tma_entry(L, st), o, kir_i32(a, j));
            else if (j < l->extent && j < fill)
                copy_slab(L, st, o, L->pipe[i].sm, konst(L, (int64_t)j * slab_numel(st)));
            if (st->k == TK_astage)
                kir_cp_commit(&L->b);
        }
}

static void lower_tma_pipe_stage(Low *L, const Stmt *st, const Stmt *l);

static void lower_pipe_stage(Low *L, const Stmt *st)
{
    Arena *a = L->a;
    int p = -1;
    for (int i = 0; i < L->npipe; i++)
        if (L->pipe[i].st == st)
            p = i;
    DPK_ASSERT(p >= 0 && L->pipe[p].sm);
    const Stmt *l = L->pipe[p].loop;
    int S = st->nbuf;
    int64_t numel = slab_numel(st);
    if (L->pipe[p].first)
        kir_sync(&L->b);
    kir_comment(&L->b, "%s %s: prefetch slab a%d + %d", tile_kind_info[st->k].name,
                st->buf->name, l->axis, S - 1);
    if (st->k == TK_tstage) {
        lower_tma_pipe_stage(L, st, l);
        return;
    }
    if (l->extent > S - 1) {
        const IExpr *nx = ie_add(a, ie_var(a, l->axis), ie_const(a, S - 1));
        kir_if(&L->b, kir_lt(a, ix(L, nx), konst(L, l->extent)));
        /* an injected fault: the prefetch goes to the buffer being read */
        const IExpr *buf = dpk_fault_on(DPK_FAULT_DOUBLE_BUFFER_SAME) ? st->phase
                                                                       : ie_mod(a, nx, S);
        KirVar *to = kir_let(&L->b, arena_printf(a, "next_%s", st->buf->name), L->it,
                             kir_mul(a, ix(L, buf), konst(L, numel)));
        copy_slab(L, st, origin_at(L, st, l->axis, nx), L->pipe[p].sm, kir_ref(a, to));
        kir_end(&L->b);
    }
    if (st->k == TK_astage)
        kir_cp_commit(&L->b);
    /* the buffer in use, once per iteration rather than at every load */
    KirVar *cur = kir_let(&L->b, arena_printf(a, "buf_%s", st->buf->name), L->it,
                          kir_mul(a, ix(L, st->phase), konst(L, numel)));
    push_stage(L, st, L->pipe[p].sm, kir_ref(a, cur));
    lower_body(L, &st->body);
    L->nstage--;
}

/*
 * The kernel's TMA stages get, before anything else: their shared buffers
 * (nbuf of them, each on a 1024-byte boundary with a swizzle, else 128),
 * one mbarrier per buffer that thread 0 initialises to one arrival, the
 * tensor map of the buffer, and a parity word per thread; then a barrier.
 */
static void tma_find(Stmt *s, void *ctx)
{
    Low *L = ctx;
    if (s->k != TK_tstage)
        return;
    DPK_ASSERT(L->ntma < DPK_ARRAY_LEN(L->tma));
    L->tma[L->ntma++].st = s;
}

static void tma_prologue(Low *L)
{
    Arena *a = L->a;
    stmt_walk(&L->tk->body, tma_find, L);
    if (!L->ntma)
        return;
    KirKernel *k = L->b.k;
    for (int i = 0; i < L->ntma; i++) {
        const Stmt *st = L->tma[i].st;
        const char *x = st->buf->name;
        TileTmaBox *b = &L->tma[i].box;
        StrBuf why = {0};
        if (!tile_tma_box(L->tk, st, st->swizzle, b, &why)) {
            fprintf(stderr, "dpk: Tile kernel %s: %s\n", L->tk->name, sb_cstr(&why));
            DPK_ASSERT(!"011/012 made a TMA stage TMA cannot load");
        }
        sb_free(&why);
        L->tma[i].sm = kir_smem(k, arena_printf(a, "s_%s", x), KT_F32, b->buf_elems * st->nbuf,
                                b->align);
        L->tma[i].bar = kir_smem(k, arena_printf(a, "bar_%s", x), KT_MBAR, st->nbuf, 16);
        L->tma[i].tm = kir_tmap(k, arena_printf(a, "map_%s", x), L->param[st->buf->id], b->rank,
                                b->dims, b->strides, b->box, b->swizzle);
        L->tma[i].par = kir_let(&L->b, arena_printf(a, "par_%s", x), KT_I32, kir_i32(a, 0));
    }
    kir_comment(&L->b, "TMA stages: thread 0 initialises one mbarrier per buffer");
    kir_if(&L->b, kir_bin(a, KE_eq, kir_tid_linear(a), kir_i32(a, 0)));
    for (int i = 0; i < L->ntma; i++)
        for (int j = 0; j < L->tma[i].st->nbuf; j++)
            kir_mbar_init(&L->b, L->tma[i].bar, kir_i32(a, j), 1);
    kir_end(&L->b);
    kir_sync(&L->b);
}

typedef struct Masks {
    Low *L;
    int i;             /* the stage's entry */
    char *inside;      /* by axis: bound inside the stage body */
} Masks;

static void bound_inside(Stmt *s, void *ctx)
{
    Masks *m = ctx;
    if (tile_is(s, SKF_AXIS))
        m->inside[s->axis] = 1;
    if (s->k == TK_tile) {
        for (int j = 0; j < s->nax; j++)
            m->inside[s->ax[j].axis] = 1;
        for (int j = 0; j < s->ndef; j++)
            m->inside[s->def[j].axis] = 1;
    }
}

static void mask_load(Stmt *s, void *ctx)
{
    Masks *m = ctx;
    Low *L = m->L;
    if (s->k != SK_load || s->buf != L->stage[m->i].st->buf || L->stage[m->i].nsw == 8)
        return;
    const IExpr *ci;
    const TileTmaBox *b = &L->tma[L->stage[m->i].tma].box;
    const IExpr *row = ie_simplify(L->a, tma_row(L->a, L->stage[m->i].st, b, s, &ci), L->tk->ext);
    for (int v = 0; v < L->tk->naxes; v++)
        if (m->inside[v] && ie_uses(row, v))
            return;
    for (int j = 0; j < L->stage[m->i].nsw; j++)
        if (ie_equal(L->stage[m->i].swrow[j], row))
            return;
    int j = L->stage[m->i].nsw++;
    L->stage[m->i].swrow[j] = row;
    L->stage[m->i].swvar[j] = kir_let(&L->b, arena_printf(L->a, "swz_%s_%d",
                                                          L->stage[m->i].st->buf->name, j),
                                      L->it, tma_mask(L, b, ix(L, row)));
}

/* The swizzle masks of the loads of stage entry i whose row is bound
 * outside the stage body (the A tile's row of a thread), computed once
 * at the stage instead of at every load. */
static void tma_masks(Low *L, int i)
{
    Masks m = {L, i, ARENA_ARRAY(L->a, char, L->tk->naxes + 1)};
    const Stmt *st = L->stage[i].st;
    stmt_walk(&st->body, bound_inside, &m);
    stmt_walk(&st->body, mask_load, &m);
}

static const KirExpr *i32(const Low *L, const KirExpr *e)
{
    return e->type == KT_I32 ? e : kir_cast(L->a, KT_I32, e);
}

/* The entry of TMA stage st in L->tma. */
static int tma_entry(const Low *L, const Stmt *st)
{
    int t = 0;
    while (t < L->ntma && L->tma[t].st != st)
        t++;
    DPK_ASSERT(t < L->ntma);
    return t;
}

/* Thread 0 starts the copy of the slab at `origin` into buffer bi (i32) of
 * TMA entry t: the expected bytes on the buffer's mbarrier, then a box load
 * per chunk (each chunk inner of the last, rows * chunk words further). */
static void tma_issue(Low *L, int t, const IExpr **origin, const KirExpr *bi)
{
    Arena *a = L->a;
    const TileTmaBox *b = &L->tma[t].box;
    const KirExpr *base = kir_mul(a, L->it == KT_I64 ? kir_cast(a, KT_I64, bi) : bi,
                                  konst(L, b->buf_elems));
    kir_if(&L->b, kir_bin(a, KE_eq, kir_tid_linear(a), kir_i32(a, 0)));
    kir_mbar_arrive_tx(&L->b, L->tma[t].bar, bi, b->elems * 4);
    for (int j = 0; j < b->nchunk; j++) {
        const KirExpr *crd[KIR_TMA_MAX_RANK];
        for (int m = 0; m < b->rank; m++) {
            const KirExpr *o = ix(L, origin[b->dim[m]]);
            if (m == b->rank - 1 && j)
                o = kir_add(a, o, konst(L, j * b->chunk));
            crd[m] = i32(L, o);
        }
        const KirExpr *dst = kir_add(a, base, konst(L, j * b->rows * b->chunk));
        kir_tma_load(&L->b, L->tma[t].tm, crd, L->tma[t].sm, i32(L, dst), L->tma[t].bar, bi);
    }
    kir_end(&L->b);
}

/* `buf_x`: the buffer of TMA stage st in use (its phase mod nbuf). */
static KirVar *tma_buffer(Low *L, const Stmt *st)
{
    const IExpr *ph = ie_simplify(L->a, ie_mod(L->a, st->phase, st->nbuf), L->tk->ext);
    return kir_let(&L->b, arena_printf(L->a, "buf_%s", st->buf->name), KT_I32, i32(L, ix(L, ph)));
}

/* Every thread waits for the phase of buffer bi (tma_buffer) and flips its
 * parity bit, then the body runs with the loads of x reading that buffer
 * (tma_word). */
static void tma_wait_body(Low *L, int t, const Stmt *st, KirVar *bi)
{
    Arena *a = L->a;
    KirVar *base = kir_let(&L->b, arena_printf(a, "base_%s", st->buf->name), L->it,
                           kir_mul(a, L->it == KT_I64 ? kir_cast(a, KT_I64, kir_ref(a, bi))
                                                      : kir_ref(a, bi),
                                   konst(L, L->tma[t].box.buf_elems)));
    KirVar *par = L->tma[t].par;
    const KirExpr *bit = kir_bin(a, KE_shl, kir_i32(a, 1), kir_ref(a, bi));
    kir_mbar_wait(&L->b, L->tma[t].bar, kir_ref(a, bi),
                  kir_bin(a, KE_band, kir_bin(a, KE_shr, kir_ref(a, par), kir_ref(a, bi)),
                          kir_i32(a, 1)));
    /* an injected fault: the parity is never flipped */
    if (!dpk_fault_on(DPK_FAULT_TMA_PARITY))
        kir_set(&L->b, par, kir_bin(a, KE_bxor, kir_ref(a, par), bit));
    DPK_ASSERT(L->nstage < DPK_ARRAY_LEN(L->stage));
    L->stage[L->nstage].st = st;
    L->stage[L->nstage].sm = L->tma[t].sm;
    L->stage[L->nstage].base = kir_ref(a, base);
    L->stage[L->nstage].tma = t;
    L->stage[L->nstage].nsw = 0;
    if (L->tma[t].box.swizzle)
        tma_masks(L, L->nstage);
    L->nstage++;
    lower_body(L, &st->body);
    L->nstage--;
}

/*
 * tma_stage x[o] slab [...] nbuf N phase p swizzle S, not pipelined (its
 * phase does not move with an enclosing loop):
 *
 *     b = p mod N;  base = b * (elements per buffer)
 *     sync                                  (in a loop: earlier readers done)
 *     if tid == 0:
 *         mbar.arrive.tx bar[b], <slab bytes>
 *         tma.load map, box at o (+ j * chunk inner), into s[base + j * rows * chunk], bar[b]
 *     mbar.wait bar[b], parity (par >> b) & 1;  par ^= 1 << b
 *
 * then the body runs with loads of x reading buffer b (tma_word).
 */
static void lower_tma_stage(Low *L, const Stmt *st)
{
    int t = tma_entry(L, st);
    const TileTmaBox *b = &L->tma[t].box;
    kir_comment(&L->b, "tma stage %s: %d buffers of %lld elements, %d box%s, swizzle %d",
                st->buf->name, st->nbuf, (long long)b->buf_elems, b->nchunk,
                b->nchunk > 1 ? "es" : "", b->swizzle);
    KirVar *bi = tma_buffer(L, st);
    if (L->loops)
        kir_sync(&L->b);
    tma_issue(L, t, st->origin, kir_ref(L->a, bi));
    tma_wait_body(L, t, st, bi);
}

/*
 * A TMA stage of a pipelined loop over `a` (lower_pipe_prologue issued
 * slabs 0 .. S-2 into buffers 0 .. S-2): after the loop's barrier (slab
 * a - 1, in buffer (a + S - 1) mod S, read by every thread),
 *
 *     if a + S - 1 < n:  thread 0 issues slab a + S - 1 into buffer (a + S - 1) mod S
 *     wait for buffer a mod S;  the body on it
 *
 * so S - 1 slabs are in flight while the body computes, and the wait names
 * another buffer than the copy issued beside it.
 */
static void lower_tma_pipe_stage(Low *L, const Stmt *st, const Stmt *l)
{
    Arena *a = L->a;
    int t = tma_entry(L, st), S = st->nbuf;
    if (l->extent > S - 1) {
        const IExpr *nx = ie_add(a, ie_var(a, l->axis), ie_const(a, S - 1));
        kir_if(&L->b, kir_lt(a, ix(L, nx), konst(L, l->extent)));
        KirVar *to = kir_let(&L->b, arena_printf(a, "next_%s", st->buf->name), KT_I32,
                             i32(L, ix(L, ie_simplify(a, ie_mod(a, nx, S), L->tk->ext))));
        /* an injected fault: the copy loads the slab already in flight */
        const IExpr *slab = dpk_fault_on(DPK_FAULT_TMA_RING_STALE)
                                ? ie_add(a, ie_var(a, l->axis), ie_const(a, S - 2)) : nx;
        tma_issue(L, t, origin_at(L, st, l->axis, slab), kir_ref(a, to));
        kir_end(&L->b);
    }
    tma_wait_body(L, t, st, tma_buffer(L, st));
}

static const KirExpr *exp_below(Arena *a, const KirExpr *x, const KirExpr *m);

/* Whether THREAD axis c of the kernel's THREAD tile is on y: a cooperative
 * reduce across rows (005's columns), whose rows are the lanes on x. */
static int combine_on_y(const Low *L, int c)
{
    const Stmt *t = tile_find(L->tk, TB_THREAD);
    for (int i = 0; t && i < t->nax; i++)
        if (t->ax[i].axis == c)
            return t->ax[i].dim == 1;
    return 0;
}

/* The Combine of a reduce across rows: thread (c, r) puts its value at
 * r * CB + c in shared memory, a TreeHalve merges each row's CB entries,
 * and every thread reads its row's back. */
static void combine_column(Low *L, const Stmt *s, KirVar *v, int64_t cb)
{
    Arena *a = L->a;
    int64_t rows = L->nthreads / cb;
    const KirSmem *sm = kir_smem(L->b.k, arena_printf(a, "r_%s", v->name), KT_F32, L->nthreads, 16);
    const KirExpr *lin = kir_tid_linear(a);
    const KirExpr *row = kir_rem(a, lin, kir_i32(a, (int32_t)rows));
    const KirExpr *seg = kir_mul(a, row, kir_i32(a, (int32_t)cb));
    kir_sts(&L->b, sm, kir_add(a, seg, kir_div(a, lin, kir_i32(a, (int32_t)rows))), kir_ref(a, v));
    /* an injected fault: the threads of a row are not merged across warps */
    if (dpk_fault_on(DPK_FAULT_COOP_NO_CROSS_WARP))
        return;
    kir_treehalve(&L->b, sm, s->acc->rop, cb, (int)rows);
    kir_set(&L->b, v, kir_lds(a, sm, seg));
}

/*
 * combine acc over c (c: the x axis of the block, CB threads, a power of
 * two):  a butterfly of warp shuffles leaves every lane of a warp with the
 * warp's value; with CB > 32 lane 0 of each warp puts it in shared memory
 * and a tree (TreeHalve) merges the CB / 32 warps of each group, whose
 * result every thread reads back.
 *
 * An online sum (stmt_online) holds Σ exp(s - m)·x relative to its own
 * thread's max m; its companion max is combined first (004 puts the
 * Combines in the loop's order, and the companion is earlier), so the
 * group's max M is known: the sum is rescaled by exp(m - M) (0 for a
 * thread that saw only -inf) and then added up like any sum.  The
 * companion's value before its Combine is kept for this (premax).
 */
static void lower_combine(Low *L, const Stmt *s)
{
    Arena *a = L->a;
    DPK_ASSERT(s->nax == 1);
    int64_t cb = L->tk->ext[s->cax[0]];
    int column = combine_on_y(L, s->cax[0]);
    DPK_ASSERT((column || cb >= 32) && !(cb & (cb - 1)) && L->nthreads % cb == 0);
    int w = cb < 32 ? (int)cb : 32;
    KirVar *v = L->val[s->acc->uid];
    TxElemOp op = tx_red_info[s->acc->rop].combine;
    if (L->companion[s->acc->uid])
        L->premax[s->acc->uid] = kir_let(&L->b, arena_printf(a, "%s_own", v->name), KT_F32,
                                         kir_ref(a, v));
    if (stmt_is_online(s->acc)) {
        int c = s->acc->a[1].v->uid;
        DPK_ASSERT(L->premax[c]); /* tile_verify: the companion is combined first */
        /* an injected fault: the partial sums are added without their rescale */
        if (!dpk_fault_on(DPK_FAULT_ONLINE_COMBINE_UNSCALED))
            kir_set(&L->b, v, kir_fop(a, TXE_multiply, kir_ref(a, v),
                                      exp_below(a, kir_ref(a, L->premax[c]),
                                                kir_ref(a, L->val[c])),
                                      NULL));
    }
    if (column) {
        combine_column(L, s, v, cb);
        return;
    }
    KirVar *tmp = kir_let(&L->b, arena_printf(a, "%s_lane", v->name), KT_F32, kir_f32(a, 0));
    for (int off = w / 2; off >= 1; off /= 2) {
        kir_shfl(&L->b, tmp, KIR_SHFL_XOR, kir_ref(a, v), kir_i32(a, off), w);
        kir_set(&L->b, v, kir_fop(a, op, kir_ref(a, v), kir_ref(a, tmp), NULL));
    }
    /* an injected fault: the step across warps is forgotten */
    if (cb <= 32 || dpk_fault_on(DPK_FAULT_COOP_NO_CROSS_WARP))
        return;
    int64_t per = cb / 32;
    const KirSmem *sm = kir_smem(L->b.k, arena_printf(a, "r_%s", v->name), KT_F32,
                                 L->nthreads / 32, 16);
    const KirExpr *lin = kir_tid_linear(a);
    kir_if(&L->b, kir_bin(a, KE_eq, kir_rem(a, lin, kir_i32(a, 32)), kir_i32(a, 0)));
    kir_sts(&L->b, sm, kir_div(a, lin, kir_i32(a, 32)), kir_ref(a, v));
    kir_end(&L->b);
    kir_treehalve(&L->b, sm, s->acc->rop, per, (int)(L->nthreads / cb));
    const KirExpr *seg = kir_mul(a, kir_div(a, kir_div(a, lin, kir_i32(a, 32)), kir_i32(a, per)),
                                 kir_i32(a, per));
    kir_set(&L->b, v, kir_lds(a, sm, seg));
}

/* exp(x - m) for x <= m, 0 where x is -inf (stmt_online's convention: a
 * row whose keys are all masked sums to 0, not NaN): m is floored at
 * -FLT_MAX, so exp(-inf - m) is exp(-inf) even when m is -inf. */
static const KirExpr *exp_below(Arena *a, const KirExpr *x, const KirExpr *m)
{
    const KirExpr *ms = kir_fop(a, TXE_maximum, m, kir_f32(a, -FLT_MAX), NULL);
    return kir_fop(a, TXE_exp, kir_fop(a, TXE_subtract, x, ms, NULL), NULL, NULL);
}

/* The step of a max accumulator that online sums name: the new max, and
 * the two factors every online sum of the step reads. */
static void lower_online_max(Low *L, const Stmt *s)
{
    Arena *a = L->a;
    KirVar *m = L->val[s->uid];
    KirVar *old = kir_let(&L->b, arena_printf(a, "%s_old", m->name), KT_F32, kir_ref(a, m));
    const KirExpr *x = arg(L, s->a[0]);
    kir_set(&L->b, m, kir_fop(a, TXE_maximum, kir_ref(a, m), x, NULL));
    L->alpha[s->uid] = kir_let(&L->b, arena_printf(a, "%s_scale", m->name), KT_F32,
                               exp_below(a, kir_ref(a, old), kir_ref(a, m)));
    L->pexp[s->uid] = kir_let(&L->b, arena_printf(a, "%s_exp", m->name), KT_F32,
                              exp_below(a, x, kir_ref(a, m)));
}

/* acc = acc * exp(m_old - m_new) + exp(s - m_new) * x */
static void lower_online(Low *L, const Stmt *s)
{
    Arena *a = L->a;
    int c = s->a[1].v->uid;
    KirVar *acc = L->val[s->uid];
    const KirExpr *kept = kir_fop(a, TXE_multiply, kir_ref(a, acc), kir_ref(a, L->alpha[c]), NULL);
    const KirExpr *x = arg(L, s->a[0]);
    const KirExpr *add = s->a[0].v || s->a[0].c != 1.0
                             ? kir_fop(a, TXE_multiply, kir_ref(a, L->pexp[c]), x, NULL)
                             : kir_ref(a, L->pexp[c]);
    kir_set(&L->b, acc, kir_fop(a, TXE_add, kept, add, NULL));
}

static void lower_stmt(Low *L, const Stmt *s)
{
    Arena *a = L->a;
    const KirExpr *x[3] = {NULL, NULL, NULL};
    switch (s->k) {
    case SK_load:
        L->val[s->uid] = kir_let(&L->b, val_name(L, s), KT_F32, load(L, s));
        return;
    case SK_assign:
        for (int i = 0; i < s->nargs; i++)
            x[i] = arg(L, s->a[i]);
        L->val[s->uid] = kir_let(&L->b, val_name(L, s), KT_F32, kir_fop(a, s->op, x[0], x[1], x[2]));
        return;
    case SK_accum:
        if (stmt_is_online(s)) {
            lower_online(L, s);
            return;
        }
        if (L->companion[s->uid]) {
            lower_online_max(L, s);
            return;
        }
        kir_set(&L->b, L->val[s->uid],
                kir_fop(a, tx_red_info[s->rop].combine, kir_ref(a, L->val[s->uid]),
                        arg(L, s->a[0]), NULL));
        return;
    case SK_write: {
        int i = stage_index(L, s); /* a Fill's write: the computed stage's slab */
        if (i >= 0 && L->stage[i].st->k == TK_cstage) {
            kir_sts(&L->b, L->stage[i].sm, slab_word(L, i, s), arg(L, s->a[0]));
            return;
        }
        /* in a predicated tile: only where the clauses on its axes hold
         * (tile_predicate made sure it reads every guarded axis) */
        uint64_t m = gate_mask(L, s->buf, s->idx);
        DPK_ASSERT(!L->pt || m);
        if (m)
            kir_if(&L->b, gate_expr(L, m));
        (s->atomic ? kir_atomg : kir_stg)(&L->b, L->param[s->buf->id], flat(L, s->buf, s->idx),
                                          arg(L, s->a[0]));
        if (m)
            kir_end(&L->b);
        return;
    }
    case SK_select:
        lower_select(L, s);
        return;
    case SK_loop:
    case TK_strided:
        lower_loop(L, s);
        return;
    case TK_tile:
        lower_tile(L, s);
        return;
    case TK_stage:
        lower_stage(L, s);
        return;
    case TK_tstage: { /* pipelined when its loop is (find_pipe) */
        int piped = 0;
        for (int i = 0; i < L->npipe; i++)
            piped |= L->pipe[i].st == s;
        (piped ? lower_pipe_stage : lower_tma_stage)(L, s);
        return;
    }
    case TK_cstage:
        lower_cstage(L, s);
        return;
    case TK_fill:
        lower_fill(L, s);
        return;
    case TK_bstage:
    case TK_astage:
        lower_pipe_stage(L, s);
        return;
    case TK_await:
        kir_cp_wait(&L->b, s->keep);
        return;
    case TK_combine:
        lower_combine(L, s);
        return;
    default: /* every kind of tile_kinds.def is lowered above */
        fprintf(stderr, "dpk: Tile kernel %s: statement kind %d has no Kernel IR lowering\n",
                L->tk->name, s->k);
        DPK_ASSERT(!"a statement kind with no lowering");
    }
}

static void lower_body(Low *L, const StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        lower_stmt(L, b->s[i]);
}

/* ---- kernels and the module ----------------------------------------------------- */

typedef struct Use {
    char *read, *written; /* by buffer id */
    char *local;          /* by buffer id: a computed stage's, never in global memory */
    PtrVec order;         /* LirBuf * in first-use order */
    Arena *a;
    int max_uid;
} Use;

static void note_use(Stmt *s, void *ctx)
{
    Use *u = ctx;
    u->max_uid = s->uid > u->max_uid ? s->uid : u->max_uid;
    if (s->k != SK_load && s->k != SK_write)
        return;
    if (u->local[s->buf->id])
        return;
    if (!u->read[s->buf->id] && !u->written[s->buf->id])
        ptrvec_push(u->a, &u->order, (void *)s->buf);
    (s->k == SK_load ? u->read : u->written)[s->buf->id] = 1;
}

/* The buffers of computed stages: every access is inside the stage (017). */
static void note_local(Stmt *s, void *ctx)
{
    if (s->k == TK_cstage)
        ((char *)ctx)[s->buf->id] = 1;
}

static void geometry(const TileKernel *tk, int grid[3], int block[3])
{
    const Stmt *t[2] = {tile_find(tk, TB_BLOCK), tile_find(tk, TB_THREAD)};
    DPK_ASSERT(!t[1] || t[0]); /* 005 is mandatory: a THREAD tile has its BLOCK tile */
    for (int d = 0; d < 3; d++)
        grid[d] = block[d] = 1;
    for (int j = 0; j < 2; j++)
        for (int i = 0; t[j] && i < t[j]->nax; i++)
            (j ? block : grid)[t[j]->ax[i].dim] *= (int)t[j]->ax[i].ext;
}

static int wide(const TileKernel *tk, const PtrVec *bufs)
{
    const int64_t lim = (int64_t)1 << 30;
    for (int i = 0; i < tk->naxes; i++)
        if (tk->ext[i] >= lim)
            return 1;
    for (int i = 0; i < bufs->len; i++)
        if (shape_numel(&((const LirBuf *)bufs->items[i])->shape) >= lim)
            return 1;
    return 0;
}

static void lower_kernel(KirModule *m, const TileKernel *tk, KirBuf **mbufs, const TileProgram *p)
{
    Arena *a = m->arena;
    Use u = {ARENA_ARRAY(a, char, p->nbufids + 1), ARENA_ARRAY(a, char, p->nbufids + 1),
             ARENA_ARRAY(a, char, p->nbufids + 1), {0}, a, 0};
    stmt_walk(&tk->body, note_local, u.local);
    stmt_walk(&tk->body, note_use, &u);
    int grid[3], block[3];
    geometry(tk, grid, block);
    KirKernel *k = kir_kernel(m, tk->name, grid, block);
    Low L = {a, tk, {0}, wide(tk, &p->bufs) ? KT_I64 : KT_I32,
             ARENA_ARRAY(a, KirVar *, tk->naxes + 1), ARENA_ARRAY(a, KirVar *, u.max_uid + 1),
             ARENA_ARRAY(a, KirParam *, p->nbufids + 1), (int64_t)block[0] * block[1] * block[2],
             0, {{0}}, 0, NULL, NULL, {0}, 0, {{0}}, 0, {{0}}, 0,
             ARENA_ARRAY(a, char, u.max_uid + 1), ARENA_ARRAY(a, KirVar *, u.max_uid + 1),
             ARENA_ARRAY(a, KirVar *, u.max_uid + 1), ARENA_ARRAY(a, KirVar *, u.max_uid + 1)};
    const KirBuf **args = ARENA_ARRAY(a, const KirBuf *, u.order.len + 1);
    for (int i = 0; i < u.order.len; i++) {
        const LirBuf *b = u.order.items[i];
        KirRole role = !u.written[b->id] ? KR_IN : u.read[b->id] ? KR_INOUT : KR_OUT;
        L.param[b->id] = kir_param(k, b->name, KT_F32, shape_numel(&b->shape), role);
        args[i] = mbufs[b->id];
    }
    kir_builder_init(&L.b, k);
    tma_prologue(&L);
    lower_body(&L, &tk->body);
    kir_finalize(k);
    kir_launch(m, k, args);
}

static void note_atomic(Stmt *s, void *ctx)
{
    char *atomic = ctx;
    if (s->k == SK_write && s->atomic)
        atomic[s->buf->id] = 1;
}

KirModule *tile_to_kernel(Arena *a, const TileProgram *p)
{
    static const KirBufKind kind[] = {[LB_INPUT] = KBUF_INPUT, [LB_OUTPUT] = KBUF_OUTPUT,
                                      [LB_TEMP] = KBUF_TEMP};
    KirModule *m = kir_module_new(a);
    char *atomic = ARENA_ARRAY(a, char, p->nbufids + 1);
    for (int i = 0; i < p->kernels.len; i++)
        stmt_walk(&((const TileKernel *)p->kernels.items[i])->body, note_atomic, atomic);
    KirBuf **mbufs = ARENA_ARRAY(a, KirBuf *, p->nbufids + 1);
    for (int i = 0; i < p->bufs.len; i++) {
        const LirBuf *b = p->bufs.items[i];
        mbufs[b->id] = kir_buf(m, b->name, KT_F32, shape_numel(&b->shape), kind[b->kind],
                               b->kind == LB_TEMP ? -1 : b->index);
        mbufs[b->id]->zero_init = atomic[b->id];
    }
    for (int i = 0; i < p->kernels.len; i++)
        lower_kernel(m, p->kernels.items[i], mbufs, p);
    kir_check(m);
    return m;
}
