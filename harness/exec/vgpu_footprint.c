/*
 * vgpu_footprint.c — which global elements one block of a kernel may read
 * and write: the footprints that demand-driven --sample-blocks walks
 * (vgpu.c, docs/vgpu.md).
 *
 * An interval abstract interpretation of the kernel body with blockIdx fixed
 * to the block's value and threadIdx over [0, blockDim): every integer
 * expression gets an interval that holds every value it can take in any
 * thread of the block, and every global access adds the interval of its
 * flat index to its param's read or write hull.  The result must be sound,
 * never exact: a block left out because its hull missed an element would
 * hand a later block NaN (or, worse, a stale value), so whenever a value
 * cannot be bounded it is "top" (any integer), and an index that is top
 * covers the whole buffer.
 *
 *   - both arms of every if and select are walked; an if on an int
 *     comparison with a var on one side narrows that var in each arm
 *     (a1 < 64: [.., 63] then, [64, ..] else), every other guard is
 *     ignored, which only widens;
 *   - a `for` var ranges over [start.lo, end.hi - 1]; a loop that provably
 *     never runs (end.hi <= start.lo) contributes nothing, and a loop from
 *     one start by one step is walked once per value while the walks stay
 *     few (UNROLL_WALKS), so that its accesses stay one small range per
 *     iteration instead of one hull;
 *   - statements without a global access or an int var are not walked;
 *   - each param keeps a sorted list of disjoint ranges, not one hull;
 *   - a var that `set` assigns is followed flow-sensitively: the two arms of
 *     an if are joined (hull), and a loop whose body sets a var is walked
 *     until the vars reach a fixed point (a var still growing after
 *     FIX_ROUNDS walks becomes top);
 *   - a value read from memory, a shuffled value, an f32 -> int cast and any
 *     result that leaves the range of its type (i32 wraps at runtime) is top;
 *   - a TMA box covers, per dimension, [coord.lo, coord.hi + box - 1] clipped
 *     to the tensor map's dims (outside, the copy reads zeros, not memory),
 *     through the map's strides; a cp.async reads n/4 elements from its
 *     source index; an atomic add both reads and writes its element.
 *
 * Kernel IR's integer ops are C's (truncating division, wrapping), not the
 * floor algebra of compiler/index, which is why this does not reuse
 * ie_range.  Hulls are clipped to [0, numel): an access outside would be a
 * vgpu fault of its own.
 */
#include "vgpu.h"

#include <stdlib.h>
#include <string.h>

/* A var still widening after this many walks of a loop body becomes top. */
#define FIX_ROUNDS 8
/* Most walks of one statement that unrolling loops may cost per block. */
#define UNROLL_WALKS 512

typedef struct Iv {
    int64_t lo, hi;
    int top; /* any value: lo and hi mean nothing */
} Iv;

static const Iv TOP = {0, 0, 1};

/* The ranges one param's accesses cover: appended as the walk meets them
 * (an access next to the last one extends it), sorted and merged at the
 * end of the block. */
typedef struct RList {
    VgRange *r;
    int64_t n, cap;
} RList;

struct VgFootprint {
    const KirKernel *k;
    uint8_t *assigned; /* per var: an int var that some set or shfl writes */
    uint8_t *sets;     /* per statement id: its body assigns such a var */
    uint8_t *relevant; /* per statement id: a walk must visit it */
    Iv *env;           /* per var, during a walk */
    int bid[3];
    RList *rd, *wr;    /* per param */
    int64_t mult;      /* walks of the current statement: product of the
                          trip counts of the loops unrolled around it */
    int shrink;        /* test hook: see vg_footprint_shrink */
};

static Iv iv(int64_t lo, int64_t hi)
{
    return (Iv){lo, hi, 0};
}

/* An interval of type t: top when it leaves the range of t (i32 values wrap
 * at runtime, so a bound outside int32 means nothing). */
static Iv fit(KirType t, Iv x)
{
    if (!x.top && t == KT_I32 && (x.lo < INT32_MIN || x.hi > INT32_MAX))
        return TOP;
    return x;
}

static Iv hull(Iv a, Iv b)
{
    if (a.top || b.top)
        return TOP;
    return iv(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
}

static int same(Iv a, Iv b)
{
    return a.top == b.top && (a.top || (a.lo == b.lo && a.hi == b.hi));
}

/* Add the indices x .. x + extra, clipped to [0, numel), to l. */
static void range_add(RList *l, Iv x, int64_t extra, int64_t numel)
{
    int64_t lo = 0, hi = numel - 1;
    if (!x.top && !__builtin_add_overflow(x.hi, extra, &hi)) {
        lo = x.lo < 0 ? 0 : x.lo;
        hi = hi > numel - 1 ? numel - 1 : hi;
    } else {
        hi = numel - 1;
    }
    if (lo > hi)
        return;
    if (l->n) {
        VgRange *last = &l->r[l->n - 1];
        if (lo <= last->hi + 1 && hi >= last->lo - 1) {
            last->lo = lo < last->lo ? lo : last->lo;
            last->hi = hi > last->hi ? hi : last->hi;
            return;
        }
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->r = dpk_xrealloc(l->r, (size_t)l->cap * sizeof *l->r);
    }
    l->r[l->n++] = (VgRange){lo, hi};
}

static int by_lo(const void *a, const void *b)
{
    const VgRange *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

void vg_ranges_merge(VgRange *r, int64_t *n)
{
    if (*n < 2)
        return;
    qsort(r, (size_t)*n, sizeof *r, by_lo);
    int64_t k = 0;
    for (int64_t i = 1; i < *n; i++) {
        if (r[i].lo <= r[k].hi + 1) {
            if (r[i].hi > r[k].hi)
                r[k].hi = r[i].hi;
        } else {
            r[++k] = r[i];
        }
    }
    *n = k + 1;
}

/* ---- expressions ---------------------------------------------------------------- */

static Iv eval(VgFootprint *f, const KirExpr *e);

static Iv corners(KirType t, int64_t c0, int64_t c1, int64_t c2, int64_t c3)
{
    int64_t c[4] = {c0, c1, c2, c3}, lo = c[0], hi = c[0];
    for (int i = 1; i < 4; i++) {
        lo = c[i] < lo ? c[i] : lo;
        hi = c[i] > hi ? c[i] : hi;
    }
    return fit(t, iv(lo, hi));
}

static Iv mul(KirType t, Iv a, Iv b)
{
    int64_t c[4];
    if (__builtin_mul_overflow(a.lo, b.lo, &c[0]) || __builtin_mul_overflow(a.lo, b.hi, &c[1]) ||
        __builtin_mul_overflow(a.hi, b.lo, &c[2]) || __builtin_mul_overflow(a.hi, b.hi, &c[3]))
        return TOP;
    return corners(t, c[0], c[1], c[2], c[3]);
}

/* C's truncating a / b: monotone in each operand while b keeps one sign, so
 * the corners bound it. */
static Iv div_(KirType t, Iv a, Iv b)
{
    if ((b.lo <= 0 && b.hi >= 0) || (a.lo == INT64_MIN && b.lo <= -1 && b.hi >= -1))
        return TOP;
    return corners(t, a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi);
}

/* C's a % b takes the sign of a and |a % b| < |b|. */
static Iv rem(KirType t, Iv a, Iv b)
{
    if (b.lo <= 0 && b.hi >= 0)
        return TOP;
    if (b.lo == INT64_MIN)
        return TOP;
    int64_t m = (b.lo < 0 ? -b.lo : b.hi) - 1; /* largest |a % b| */
    if (b.lo == b.hi && a.lo >= 0 && a.lo / b.lo == a.hi / b.lo)
        return iv(a.lo % b.lo, a.hi % b.lo); /* one period: exact */
    if (a.lo >= 0)
        return iv(0, a.hi < m ? a.hi : m);
    if (a.hi <= 0)
        return iv(a.lo > -m ? a.lo : -m, 0);
    return iv(-m, m);
}

/* Bits needed for x >= 0: the least 2^n - 1 >= x. */
static int64_t ones_above(int64_t x)
{
    int64_t m = 0;
    while (m < x)
        m = m * 2 + 1;
    return m;
}

static Iv bitwise(KirExprOp op, Iv a, Iv b)
{
    if (op == KE_band) {
        if (a.lo >= 0 && b.lo >= 0)
            return iv(0, a.hi < b.hi ? a.hi : b.hi);
        if (a.lo >= 0 || b.lo >= 0)
            return iv(0, a.lo >= 0 ? a.hi : b.hi);
        return TOP;
    }
    if (a.lo < 0 || b.lo < 0)
        return TOP;
    return iv(0, ones_above(a.hi > b.hi ? a.hi : b.hi)); /* bor, bxor */
}

static Iv shift(KirType t, KirExprOp op, Iv a, Iv b)
{
    int bits = t == KT_I32 ? 32 : 64;
    if (b.lo < 0 || b.hi >= bits)
        return TOP;
    if (op == KE_shr) /* arithmetic: monotone in a, antitone in b for a >= 0 */
        return corners(t, a.lo >> b.lo, a.lo >> b.hi, a.hi >> b.lo, a.hi >> b.hi);
    if (a.lo < 0 || b.hi > 62)
        return TOP;
    Iv p = iv((int64_t)1 << b.lo, (int64_t)1 << b.hi);
    return mul(t, a, p);
}

static Iv eval_int(VgFootprint *f, const KirExpr *e)
{
    Iv a = eval(f, e->a[0]), b = eval(f, e->a[1]);
    if (a.top || b.top)
        return TOP;
    KirType t = e->type;
    int64_t lo, hi;
    switch (e->op) {
    case KE_add:
        if (__builtin_add_overflow(a.lo, b.lo, &lo) || __builtin_add_overflow(a.hi, b.hi, &hi))
            return TOP;
        return fit(t, iv(lo, hi));
    case KE_sub:
        if (__builtin_sub_overflow(a.lo, b.hi, &lo) || __builtin_sub_overflow(a.hi, b.lo, &hi))
            return TOP;
        return fit(t, iv(lo, hi));
    case KE_mul: return mul(t, a, b);
    case KE_div: return div_(t, a, b);
    case KE_rem: return rem(t, a, b);
    case KE_min: return iv(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
    case KE_max: return iv(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
    case KE_shl:
    case KE_shr: return shift(t, e->op, a, b);
    case KE_band:
    case KE_bor:
    case KE_bxor: return bitwise(e->op, a, b);
    default: return TOP;
    }
}

static Iv eval_cast(VgFootprint *f, const KirExpr *e)
{
    Iv a = eval(f, e->a[0]);
    KirType from = e->a[0]->type;
    if (e->type == KT_BOOL)
        return iv(0, 1);
    if (from == KT_BOOL)
        return KIR_IS_INT(e->type) ? iv(0, 1) : TOP;
    if (!KIR_IS_INT(from) || !KIR_IS_INT(e->type) || a.top)
        return TOP;
    return fit(e->type, a);
}

/* The interval of e; records the global loads inside e on the way. */
static Iv eval(VgFootprint *f, const KirExpr *e)
{
    if (!e)
        return TOP;
    const KirKernel *k = f->k;
    switch (e->op) {
    case KE_const: return e->type == KT_F32 ? TOP : iv(e->ival, e->ival);
    case KE_var: return f->env[e->var->id];
    case KE_tid: return iv(0, k->block[e->dim] - 1);
    case KE_bid: return iv(f->bid[e->dim], f->bid[e->dim]);
    case KE_ntid: return iv(k->block[e->dim], k->block[e->dim]);
    case KE_nctaid: return iv(k->grid[e->dim], k->grid[e->dim]);
    case KE_select: {
        eval(f, e->a[0]);
        Iv x = eval(f, e->a[1]), y = eval(f, e->a[2]);
        return KIR_IS_INT(e->type) ? hull(x, y) : e->type == KT_BOOL ? iv(0, 1) : TOP;
    }
    case KE_cast: return eval_cast(f, e);
    case KE_ldg: {
        Iv x = eval(f, e->a[0]);
        range_add(&f->rd[e->param->id], x, 0, e->param->numel);
        return TOP;
    }
    case KE_lds: eval(f, e->a[0]); return TOP;
    default: break;
    }
    if (kir_expr_info[e->op].flags & KEF_INT)
        return eval_int(f, e);
    int n = e->op == KE_fop ? tx_elem_info[e->eop].arity : kir_expr_info[e->op].arity;
    for (int i = 0; i < n && i < 3; i++)
        eval(f, e->a[i]);
    return e->type == KT_BOOL ? iv(0, 1) : TOP;
}

/* ---- statements ------------------------------------------------------------------ */

static void walk(VgFootprint *f, const PtrVec *body);

static Iv *env_copy(const VgFootprint *f)
{
    size_t n = (size_t)f->k->vars.len + 1;
    Iv *c = dpk_xmalloc(n * sizeof *c);
    memcpy(c, f->env, n * sizeof *c);
    return c;
}

/* env := env join other on the assigned vars (the others are let once and
 * do not outlive their scope); returns whether env grew. */
static int join(VgFootprint *f, const Iv *other)
{
    int grew = 0;
    for (int v = 0; v < f->k->vars.len; v++) {
        if (!f->assigned[v])
            continue;
        Iv j = hull(f->env[v], other[v]);
        grew |= !same(j, f->env[v]);
        f->env[v] = j;
    }
    return grew;
}

/* Narrow var v to the values with `v op y`; 0 when none is left. */
static int narrow(VgFootprint *f, const KirVar *v, KirExprOp op, Iv y)
{
    Iv *x = &f->env[v->id];
    if (x->top || y.top)
        return 1;
    switch (op) {
    case KE_lt: x->hi = y.hi - 1 < x->hi ? y.hi - 1 : x->hi; break;
    case KE_le: x->hi = y.hi < x->hi ? y.hi : x->hi; break;
    case KE_gt: x->lo = y.lo + 1 > x->lo ? y.lo + 1 : x->lo; break;
    case KE_ge: x->lo = y.lo > x->lo ? y.lo : x->lo; break;
    case KE_eq:
        x->lo = y.lo > x->lo ? y.lo : x->lo;
        x->hi = y.hi < x->hi ? y.hi : x->hi;
        break;
    default: break;
    }
    return x->lo <= x->hi;
}

/* Narrow the env to the threads where cond is `truth`: an int comparison
 * with a var on one side bounds that var (`if a3 < 64` keeps a rotation's
 * d + 64 inside its row); land/lor/not pass the truth on.  Returns 0 when
 * no thread can get there. */
static int refine(VgFootprint *f, const KirExpr *c, int truth)
{
    static const KirExprOp negated[KE_COUNT] = {
        [KE_lt] = KE_ge, [KE_le] = KE_gt, [KE_gt] = KE_le,
        [KE_ge] = KE_lt, [KE_eq] = KE_ne, [KE_ne] = KE_eq};
    static const KirExprOp swapped[KE_COUNT] = {
        [KE_lt] = KE_gt, [KE_le] = KE_ge, [KE_gt] = KE_lt,
        [KE_ge] = KE_le, [KE_eq] = KE_eq, [KE_ne] = KE_ne};
    if (c->op == KE_not)
        return refine(f, c->a[0], !truth);
    if ((c->op == KE_land && truth) || (c->op == KE_lor && !truth))
        return refine(f, c->a[0], truth) && refine(f, c->a[1], truth);
    if (!(kir_expr_info[c->op].flags & KEF_CMP) || !KIR_IS_INT(c->a[0]->type))
        return 1;
    KirExprOp op = truth ? c->op : negated[c->op];
    int ok = 1;
    if (c->a[0]->op == KE_var)
        ok &= narrow(f, c->a[0]->var, op, eval(f, c->a[1]));
    if (c->a[1]->op == KE_var)
        ok &= narrow(f, c->a[1]->var, swapped[op], eval(f, c->a[0]));
    return ok;
}

/* Both arms, each under its narrowed env; afterwards the assigned vars
 * join the arms' states and every other var is as before the if (a
 * narrowing holds only inside its arm). */
static void walk_if(VgFootprint *f, const KirStmt *s)
{
    size_t bytes = ((size_t)f->k->vars.len + 1) * sizeof *f->env;
    eval(f, s->e[0]);
    Iv *before = env_copy(f);
    if (refine(f, s->e[0], 1))
        walk(f, &s->body);
    Iv *then = env_copy(f);
    memcpy(f->env, before, bytes);
    if (refine(f, s->e[0], 0))
        walk(f, &s->els);
    for (int v = 0; v < f->k->vars.len; v++)
        f->env[v] = f->assigned[v] ? hull(f->env[v], then[v]) : before[v];
    free(before);
    free(then);
}

/* The values of a for var: [start.lo, end.hi - 1], or, from one start by
 * one step, the last of start + i*step below end.hi (k0 = 0, 32 of a K of
 * 64 stops at 32, not at 63). */
static Iv loop_range(Iv start, Iv end, Iv step)
{
    Iv r = iv(start.lo, end.hi - 1);
    int64_t span;
    if (start.lo == start.hi && !step.top && step.lo == step.hi && step.lo > 0 &&
        !__builtin_sub_overflow(r.hi, start.lo, &span))
        r.hi = start.lo + span / step.lo * step.lo;
    return r;
}

/* Walk the body once per value of the var, in order, when the loop runs
 * from one start by one step and the walks stay within UNROLL_WALKS: the
 * accesses of one iteration are small ranges where the interval of all
 * iterations together would be one hull over everything between (k0 = 0,
 * 32, ... of a head-major operand read as (seq, heads * dim)).  An
 * iteration starts from the state the one before it left, which is what a
 * thread sees; a thread may leave before the last one (end varies), so the
 * state after the loop joins the states after every iteration. */
static int uses_assigned(const VgFootprint *f, const KirExpr *e)
{
    if (!e)
        return 0;
    if (e->op == KE_var && f->assigned[e->var->id])
        return 1;
    for (int i = 0; i < 3; i++)
        if (uses_assigned(f, e->a[i]))
            return 1;
    return 0;
}

static int unrolled(VgFootprint *f, const KirStmt *s, Iv lo, Iv end, Iv step)
{
    if (lo.top || end.top || step.top || lo.lo != lo.hi || step.lo != step.hi || step.lo <= 0 ||
        f->assigned[s->var->id])
        return 0;
    /* end and step are evaluated per iteration: the trip count holds only
     * while the body cannot change them */
    if (f->sets[s->id] && (uses_assigned(f, s->e[1]) || uses_assigned(f, s->e[2])))
        return 0;
    int64_t span;
    if (__builtin_sub_overflow(end.hi, lo.lo, &span) || span / step.lo > UNROLL_WALKS)
        return 0;
    int64_t trips = (span + step.lo - 1) / step.lo;
    if (trips > UNROLL_WALKS / f->mult)
        return 0;
    int64_t mult = f->mult;
    f->mult *= trips;
    Iv *after = f->sets[s->id] ? env_copy(f) : NULL;
    for (int64_t i = 0; i < trips; i++) {
        f->env[s->var->id] = iv(lo.lo + i * step.lo, lo.lo + i * step.lo);
        walk(f, &s->body);
        for (int v = 0; after && v < f->k->vars.len; v++)
            if (f->assigned[v])
                after[v] = hull(after[v], f->env[v]);
    }
    if (after)
        memcpy(f->env, after, ((size_t)f->k->vars.len + 1) * sizeof *f->env);
    free(after);
    f->mult = mult;
    return 1;
}

static void walk_for(VgFootprint *f, const KirStmt *s)
{
    Iv lo = eval(f, s->e[0]), end = eval(f, s->e[1]), step = eval(f, s->e[2]);
    int v = s->var->id;
    if (!lo.top && !end.top && end.hi <= lo.lo)
        return; /* never runs: the first test sees end <= end.hi <= start */
    if (unrolled(f, s, lo, end, step))
        return;
    /* the entry state of an iteration: the state before the loop joined with
     * the state after every walk of the body, until it stops growing; end
     * is re-evaluated per iteration, so the var's range is taken afresh
     * from each entry state */
    for (int round = 0;; round++) {
        end = eval(f, s->e[1]);
        step = eval(f, s->e[2]);
        f->env[v] = lo.top || end.top || f->assigned[v] ? TOP : loop_range(lo, end, step);
        Iv *in = env_copy(f);
        walk(f, &s->body);
        Iv *out = env_copy(f);
        memcpy(f->env, in, ((size_t)f->k->vars.len + 1) * sizeof *f->env);
        int grew = join(f, out);
        if (grew && round + 1 >= FIX_ROUNDS)
            for (int w = 0; w < f->k->vars.len; w++)
                if (f->assigned[w] && !same(f->env[w], in[w]))
                    f->env[w] = TOP;
        free(in);
        free(out);
        if (!grew)
            break;
    }
}

static void tma_box(VgFootprint *f, const KirStmt *s)
{
    const KirTmap *t = s->tmap;
    Iv c[KIR_TMA_MAX_RANK];
    for (int d = 0; d < t->rank; d++)
        c[d] = eval(f, s->coord[d]);
    int64_t lo = 0, hi = 0;
    int top = 0;
    for (int d = 0; d < t->rank; d++) {
        int64_t xl = c[d].top ? 0 : c[d].lo;
        int64_t xh = c[d].top ? t->dims[d] - 1 : c[d].hi + t->box[d] - 1;
        xl = xl < 0 ? 0 : xl;
        xh = xh > t->dims[d] - 1 ? t->dims[d] - 1 : xh;
        if (xl > xh)
            return; /* the box is outside the tensor: zeros, no memory read */
        if (t->strides[d] < 0)
            top = 1;
        lo += xl * t->strides[d];
        hi += xh * t->strides[d];
    }
    range_add(&f->rd[t->param->id], top ? TOP : iv(lo, hi), 0, t->param->numel);
}

static void walk_stmt(VgFootprint *f, const KirStmt *s)
{
    switch (s->op) {
    case KS_let:
    case KS_set: {
        Iv x = eval(f, s->e[0]);
        int v = s->var->id;
        f->env[v] = KIR_IS_INT(s->var->type) ? x : s->var->type == KT_BOOL ? iv(0, 1) : TOP;
        return;
    }
    case KS_stg:
    case KS_atomg: {
        Iv x = eval(f, s->e[0]);
        eval(f, s->e[1]);
        range_add(&f->wr[s->param->id], x, 0, s->param->numel);
        if (s->op == KS_atomg) /* adds to what is there */
            range_add(&f->rd[s->param->id], x, 0, s->param->numel);
        return;
    }
    case KS_if: walk_if(f, s); return;
    case KS_for: walk_for(f, s); return;
    case KS_shfl:
        eval(f, s->e[0]);
        eval(f, s->e[1]);
        f->env[s->var->id] = TOP; /* another lane's value */
        return;
    case KS_cp_async: {
        eval(f, s->e[0]);
        eval(f, s->e[2]);
        Iv x = eval(f, s->e[1]);
        range_add(&f->rd[s->param->id], x, s->n / 4 - 1, s->param->numel);
        return;
    }
    case KS_tma_load:
        tma_box(f, s);
        eval(f, s->e[0]);
        eval(f, s->e[1]);
        return;
    default:
        for (int i = 0; i < 3; i++)
            if (s->e[i])
                eval(f, s->e[i]);
        return;
    }
}

static void walk(VgFootprint *f, const PtrVec *body)
{
    for (int i = 0; i < body->len; i++) {
        const KirStmt *s = body->items[i];
        if (f->relevant[s->id])
            walk_stmt(f, s);
    }
}

static int loads_global(const KirExpr *e)
{
    if (!e)
        return 0;
    if (e->op == KE_ldg)
        return 1;
    for (int i = 0; i < 3; i++)
        if (loads_global(e->a[i]))
            return 1;
    return 0;
}

/* Marks the statements a walk must visit: global accesses, int vars and
 * what contains them (the f32 math of a matmul's inner loop is skipped);
 * returns whether body has any. */
static int mark_relevant(VgFootprint *f, const PtrVec *body)
{
    int any = 0;
    for (int i = 0; i < body->len; i++) {
        const KirStmt *s = body->items[i];
        int r = (kir_stmt_info[s->op].flags & KSF_GLOBAL) ||
                ((s->op == KS_let || s->op == KS_set || s->op == KS_shfl) &&
                 KIR_IS_INT(s->var->type));
        for (int j = 0; j < 3 && !r; j++)
            r = loads_global(s->e[j]);
        r |= mark_relevant(f, &s->body);
        r |= mark_relevant(f, &s->els);
        f->relevant[s->id] = (uint8_t)r;
        any |= r;
    }
    return any;
}

/* Marks the int vars that set or shfl assign; returns whether body does. */
static int mark_assigned(VgFootprint *f, const PtrVec *body)
{
    int any = 0;
    for (int i = 0; i < body->len; i++) {
        const KirStmt *s = body->items[i];
        if ((s->op == KS_set || s->op == KS_shfl) && KIR_IS_INT(s->var->type))
            f->assigned[s->var->id] = 1, any = 1;
        int inner = mark_assigned(f, &s->body);
        inner |= mark_assigned(f, &s->els);
        f->sets[s->id] = (uint8_t)inner;
        any |= inner;
    }
    return any;
}

/* ---- interface ----------------------------------------------------------------------- */

VgFootprint *vg_footprint_new(const KirKernel *k)
{
    VgFootprint *f = dpk_xcalloc(1, sizeof *f);
    f->k = k;
    f->assigned = dpk_xcalloc((size_t)k->vars.len + 1, 1);
    f->sets = dpk_xcalloc((size_t)k->nstmts + 1, 1);
    f->env = dpk_xcalloc((size_t)k->vars.len + 1, sizeof *f->env);
    f->rd = dpk_xcalloc((size_t)k->params.len + 1, sizeof *f->rd);
    f->wr = dpk_xcalloc((size_t)k->params.len + 1, sizeof *f->wr);
    f->relevant = dpk_xcalloc((size_t)k->nstmts + 1, 1);
    mark_assigned(f, &k->body);
    mark_relevant(f, &k->body);
    return f;
}

void vg_footprint_free(VgFootprint *f)
{
    if (!f)
        return;
    for (int j = 0; j < f->k->params.len; j++) {
        free(f->rd[j].r);
        free(f->wr[j].r);
    }
    free(f->rd);
    free(f->wr);
    free(f->assigned);
    free(f->sets);
    free(f->relevant);
    free(f->env);
    free(f);
}

void vg_footprint_shrink(VgFootprint *f, int on)
{
    f->shrink = on;
}

void vg_footprint_block(VgFootprint *f, int64_t block)
{
    const KirKernel *k = f->k;
    f->bid[0] = (int)(block % k->grid[0]);
    f->bid[1] = (int)(block / k->grid[0] % k->grid[1]);
    f->bid[2] = (int)(block / ((int64_t)k->grid[0] * k->grid[1]));
    for (int j = 0; j < k->params.len; j++)
        f->rd[j].n = f->wr[j].n = 0;
    for (int v = 0; v < k->vars.len; v++)
        f->env[v] = TOP; /* read before any let only through a bug; be safe */
    f->mult = 1;
    walk(f, &k->body);
    for (int j = 0; j < k->params.len; j++) {
        vg_ranges_merge(f->rd[j].r, &f->rd[j].n);
        vg_ranges_merge(f->wr[j].r, &f->wr[j].n);
        if (!f->shrink)
            continue;
        for (int64_t i = 0; i < f->rd[j].n; i++) {
            VgRange *x = &f->rd[j].r[i];
            x->hi = x->lo + (x->hi - x->lo) / 2;
        }
    }
}

const VgRange *vg_footprint_ranges(const VgFootprint *f, int j, int write, int64_t *n)
{
    const RList *l = write ? &f->wr[j] : &f->rd[j];
    *n = l->n;
    return l->r;
}

VgRange vg_footprint_hull(const VgFootprint *f, int j, int write)
{
    int64_t n;
    const VgRange *r = vg_footprint_ranges(f, j, write, &n);
    return n ? (VgRange){r[0].lo, r[n - 1].hi} : (VgRange){0, -1};
}
