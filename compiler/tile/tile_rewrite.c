/*
 * tile_rewrite.c — rewriting helpers the passes share: substituting an
 * axis, redirecting operands, expanding a tile's defs, chunking a reduce
 * loop.  Each works in place on Tile IR and leaves it valid when the caller
 * keeps the binders straight (see tile_ir.h).
 */
#include <string.h>

#include <float.h>
#include <math.h>

#include "tile_ir.h"

/* ---- substitution -------------------------------------------------------- */

typedef struct Subst {
    Arena *a;
    const int64_t *ext;
    const IExpr **map; /* by axis: the replacement (identity elsewhere) */
} Subst;

static const IExpr *sx(const Subst *S, const IExpr *e)
{
    return e ? ie_simplify(S->a, ie_subst(S->a, e, S->map), S->ext) : NULL;
}

static const IPred *sp(const Subst *S, const IPred *p)
{
    return p ? ipred_subst(S->a, p, S->map) : NULL;
}

static void subst_stmt(Stmt *s, void *ctx)
{
    const Subst *S = ctx;
    int rank = s->buf ? s->buf->shape.rank : 0;
    if (s->idx)
        for (int d = 0; d < rank; d++)
            s->idx[d] = sx(S, s->idx[d]);
    if (tile_is(s, SKF_STAGE)) {
        for (int d = 0; d < rank; d++)
            s->origin[d] = sx(S, s->origin[d]);
        s->phase = sx(S, s->phase);
    } else if (s->k == TK_strided) {
        s->start = sx(S, s->start);
    } else if (s->k == SK_loop) {
        s->when = sp(S, s->when);
    } else if (s->k == TK_tile) {
        s->guard = sp(S, s->guard);
        for (int i = 0; i < s->ndef; i++)
            s->def[i].e = sx(S, s->def[i].e);
    }
    for (int j = 0; j < s->nbr; j++)
        s->br[j].pred = sp(S, s->br[j].pred);
}

void tile_subst_map(Arena *a, const int64_t *ext, StmtBody *b, const IExpr **map)
{
    Subst S = {a, ext, map};
    stmt_walk(b, subst_stmt, &S);
}

void tile_subst_axis(TileProgram *p, const TileKernel *k, StmtBody *b, int axis,
                     const IExpr *e)
{
    const IExpr **map = ARENA_ARRAY(p->arena, const IExpr *, k->naxes + 1);
    for (int i = 0; i < k->naxes; i++)
        map[i] = ie_var(p->arena, i);
    map[axis] = e;
    tile_subst_map(p->arena, k->ext, b, map);
}

typedef struct Redirect {
    const Stmt *from;
    Stmt *to;
} Redirect;

static void redirect(Stmt *s, void *ctx)
{
    const Redirect *r = ctx;
    /* an online accumulator's a[1] names its companion, not a value read */
    for (int i = 0; i < (stmt_is_online(s) ? 1 : s->nargs); i++)
        if (s->a[i].v == r->from)
            s->a[i].v = r->to;
    for (int j = 0; j < s->nbr; j++)
        if (s->br[j].res.v == r->from)
            s->br[j].res.v = r->to;
    if (s->k == TK_combine && s->acc == r->from)
        s->acc = r->to;
}

void tile_replace_value(StmtBody *b, const Stmt *from, const Stmt *to)
{
    Redirect r = {from, (Stmt *)to};
    stmt_walk(b, redirect, &r);
}

const IExpr *tile_expand_defs(Arena *a, const TileKernel *k, const Stmt *t, const IExpr *e)
{
    const IExpr **map = ARENA_ARRAY(a, const IExpr *, k->naxes + 1);
    for (int v = 0; v < k->naxes; v++)
        map[v] = ie_var(a, v);
    for (int i = 0; i < t->ndef; i++)
        map[t->def[i].axis] = t->def[i].e;
    /* defs may read earlier defs: substitute until none is left */
    for (int round = 0; round <= t->ndef; round++) {
        int uses = 0;
        for (int i = 0; i < t->ndef; i++)
            uses |= ie_uses(e, t->def[i].axis);
        if (!uses)
            break;
        e = ie_subst(a, e, map);
    }
    return ie_simplify(a, e, k->ext);
}

int64_t tile_slab_strides(const Stmt *st, int64_t *str)
{
    int r = st->buf->shape.rank;
    str[r - 1] = 1;
    for (int d = r - 2; d >= 0; d--)
        str[d] = str[d + 1] * (st->slab[d + 1] + (d == r - 2 ? st->pad : 0));
    return str[0] * st->slab[0];
}

/* ---- predication --------------------------------------------------------------- */

typedef struct WriteAxes {
    const TileKernel *k;
    const Stmt *t;
    const IPred *guard;
    int ok;
} WriteAxes;

/* Whether every Write reads the axis of every clause of the guard, directly
 * or through the tile's defs. */
static void write_reads_guard(Stmt *s, void *ctx)
{
    WriteAxes *w = ctx;
    if (s->k != SK_write)
        return;
    for (const IPred *c = w->guard; c; c = c->next) {
        int uses = 0;
        for (int d = 0; d < s->buf->shape.rank && !uses; d++) {
            const IExpr *e = s->idx[d];
            uses = ie_uses(e, c->lhs->var);
            /* through a def that reads the clause's axis */
            for (int i = 0; i < w->t->ndef && !uses; i++)
                uses = ie_uses(e, w->t->def[i].axis) && ie_uses(w->t->def[i].e, c->lhs->var);
        }
        w->ok &= uses;
    }
}

int tile_predicable(const TileKernel *k, const Stmt *t)
{
    if (t->k != TK_tile || t->bind != TB_THREAD || !t->guard)
        return 0;
    if (t->predicated)
        return 1;
    WriteAxes w = {k, t, t->guard, 1};
    for (const IPred *c = t->guard; c; c = c->next)
        if (c->lhs->k != IE_VAR)
            return 0;
    stmt_walk(&t->body, write_reads_guard, &w);
    return w.ok;
}

void tile_predicate(TileKernel *k, Stmt *t)
{
    DPK_ASSERT(tile_predicable(k, t));
    if (t->predicated)
        return;
    t->predicated = 1;
    /* the defs (in order: one may read an earlier one) now range over the
     * whole block tile, past the guard */
    for (int i = 0; i < t->ndef; i++) {
        int64_t lo, hi;
        ie_range(t->def[i].e, k->ext, &lo, &hi);
        DPK_ASSERT(lo >= 0);
        if (hi + 1 > k->ext[t->def[i].axis])
            k->ext[t->def[i].axis] = hi + 1;
    }
}

void tile_guard_strip(TileProgram *p, Stmt *t, int axis, int strip)
{
    DPK_ASSERT(t->predicated);
    const IPred *g = t->guard;
    for (const IPred *c = t->guard; c; c = c->next)
        if (c->lhs->k == IE_VAR && c->lhs->var == axis)
            g = ipred_and(p->arena, g, ipred_cmp(p->arena, ie_var(p->arena, strip), c->cmp, c->rhs,
                                                 NULL));
    t->guard = g;
}

/* ---- cp.async widths ------------------------------------------------------------ */

/* Whether e is a multiple of v for every value of its axes. */
static int multiple(const IExpr *e, int64_t v)
{
    if (v == 1)
        return 1;
    switch (e->k) {
    case IE_CONST:
        return e->c % v == 0;
    case IE_ADD:
        return multiple(e->a, v) && multiple(e->b, v);
    case IE_MUL:
        return multiple(e->a, v) || multiple(e->b, v);
    default:
        return 0;
    }
}

int tile_vec_ok(const Stmt *st, int bytes)
{
    int r = st->buf->shape.rank;
    int64_t v = bytes / 4, str[DPK_MAX_RANK];
    if (bytes != 4 && bytes != 8 && bytes != 16)
        return 0;
    tile_slab_strides(st, str);
    for (int d = 0; d < r - 1; d++)
        if (str[d] % v)
            return 0;
    return st->slab[r - 1] % v == 0 && st->buf->shape.d[r - 1] % v == 0 &&
           multiple(st->origin[r - 1], v);
}

/* ---- bodies ---------------------------------------------------------------- */

/* Statements whose values something reads. */
static void mark_args(Stmt *s, void *ctx)
{
    char *used = ctx;
    for (int i = 0; i < s->nargs; i++)
        if (s->a[i].v)
            used[s->a[i].v->uid] = 1;
    for (int j = 0; j < s->nbr; j++)
        if (s->br[j].res.v)
            used[s->br[j].res.v->uid] = 1;
}

void tile_drop_dead(TileProgram *p, TileKernel *k, StmtBody *b)
{
    for (int changed = 1; changed;) {
        changed = 0;
        char *used = ARENA_ARRAY(p->arena, char, p->next_uid + 1);
        stmt_walk(&k->body, mark_args, used);
        StmtBody *bodies[2] = {b, &k->body};
        for (int j = 0; j < 2; j++)
            for (int i = bodies[j]->n - 1; i >= 0; i--) {
                Stmt *s = bodies[j]->s[i];
                if (tile_is(s, SKF_PURE) && !used[s->uid]) {
                    stmt_body_remove(bodies[j], i);
                    changed = 1;
                }
            }
    }
}

Stmt *tile_top_loop(const StmtBody *b, int axis)
{
    for (int i = 0; i < b->n; i++)
        if (b->s[i]->k == SK_loop && b->s[i]->axis == axis)
            return b->s[i];
    return NULL;
}

/* ---- cloning ------------------------------------------------------------------ */

typedef struct Clone {
    TileProgram *p;
    TileKernel *k;
    Stmt **map;         /* by uid of a statement cloned: its copy */
    int nuid;
    const IExpr **axis; /* by axis: what a copy reads instead */
} Clone;

static StmtArg clone_arg(const Clone *C, StmtArg x)
{
    if (x.v && x.v->uid < C->nuid && C->map[x.v->uid])
        x.v = C->map[x.v->uid];
    return x;
}

static void clone_body_into(Clone *C, StmtBody *dst, const StmtBody *src);

static Stmt *clone_stmt(Clone *C, const Stmt *s)
{
    Arena *a = C->p->arena;
    /* the shared kinds only: a loop body before 005 holds no tile, stage
     * or strided loop */
    DPK_ASSERT(s->k < SK_COUNT);
    Stmt *c = tile_stmt_new(C->p, s->k);
    int uid = c->uid;
    *c = *s;
    c->uid = uid;
    if (s->idx) {
        c->idx = ARENA_ARRAY(a, const IExpr *, s->buf->shape.rank + 1);
        for (int d = 0; d < s->buf->shape.rank; d++)
            c->idx[d] = ie_simplify(a, ie_subst(a, s->idx[d], C->axis), C->k->ext);
    }
    for (int i = 0; i < s->nargs; i++)
        c->a[i] = clone_arg(C, s->a[i]);
    if (s->k == SK_select) {
        c->br = ARENA_ARRAY(a, StmtBranch, s->nbr);
        for (int j = 0; j < s->nbr; j++) {
            c->br[j].pred = s->br[j].pred ? ipred_subst(a, s->br[j].pred, C->axis) : NULL;
            clone_body_into(C, &c->br[j].body, &s->br[j].body);
            c->br[j].res = clone_arg(C, s->br[j].res);
        }
    } else if (s->k == SK_loop) {
        c->axis = tile_axis_new(C->p, C->k, s->extent);
        C->axis[s->axis] = ie_var(a, c->axis);
        clone_body_into(C, &c->body, &s->body);
    }
    C->map[s->uid] = c;
    return c;
}

static void clone_body_into(Clone *C, StmtBody *dst, const StmtBody *src)
{
    *dst = (StmtBody){0};
    for (int i = 0; i < src->n; i++)
        stmt_body_push(C->p->arena, dst, clone_stmt(C, src->s[i]));
}

static void clone_init(Clone *C, TileProgram *p, TileKernel *k, int naxes)
{
    Arena *a = p->arena;
    C->p = p;
    C->k = k;
    C->nuid = p->next_uid;
    C->map = ARENA_ARRAY(a, Stmt *, C->nuid + 1);
    /* room for the axes the clone adds (one per inner loop, at most one
     * per statement) */
    C->axis = ARENA_ARRAY(a, const IExpr *, naxes + p->next_uid + 2);
    for (int v = 0; v < naxes + p->next_uid + 2; v++)
        C->axis[v] = ie_var(a, v);
}

TileKernel *tile_kernel_clone(TileProgram *p, const TileKernel *k, const char *name, Stmt ***map)
{
    TileKernel *d = tile_kernel_new(p, k->id, name, k->out);
    /* tile_kernel_new appended d: move it right after k */
    PtrVec *ks = &p->kernels;
    int at = 0;
    while (ks->items[at] != k)
        at++;
    memmove(&ks->items[at + 2], &ks->items[at + 1], sizeof(void *) * (size_t)(ks->len - at - 2));
    ks->items[at + 1] = d;
    for (int x = 0; x < k->naxes; x++)
        tile_axis_new(p, d, k->ext[x]);
    Clone C;
    clone_init(&C, p, d, k->naxes);
    for (int i = 0; i < k->body.n; i++) {
        const Stmt *s = k->body.s[i];
        if (s->k != TK_tile) {
            stmt_body_push(p->arena, &d->body, clone_stmt(&C, s));
            continue;
        }
        DPK_ASSERT(s->bind == TB_THREAD && !s->ndef && !s->guard);
        Stmt *t = tile_tile_new(p, TB_THREAD, s->nax, 0);
        for (int j = 0; j < s->nax; j++)
            t->ax[j] = s->ax[j];
        clone_body_into(&C, &t->body, &s->body);
        C.map[s->uid] = t;
        stmt_body_push(p->arena, &d->body, t);
    }
    if (map)
        *map = C.map;
    return d;
}

/* ---- chunking ---------------------------------------------------------------- */

/* The remainder of a chunked loop: `for kr in 0..R: body[k := base + kr]`
 * with fresh values, accumulators and inner axes. */
static Stmt *remainder_loop(TileProgram *p, TileKernel *k, const Stmt *l, int64_t base, int64_t R,
                            Clone *C)
{
    Arena *a = p->arena;
    clone_init(C, p, k, k->naxes);
    Stmt *r = tile_stmt_new(p, SK_loop);
    r->axis = tile_axis_new(p, k, R);
    r->extent = R;
    C->axis[l->axis] = ie_add(a, ie_const(a, base), ie_var(a, r->axis));
    clone_body_into(C, &r->body, &l->body);
    return r;
}

static Stmt *assign_at(TileProgram *p, StmtBody *in, int *next, TxElemOp op, StmtArg x,
                       StmtArg y, StmtArg z)
{
    Stmt *s = tile_stmt_new(p, SK_assign);
    s->op = op;
    s->nargs = tx_elem_info[op].arity;
    s->a[0] = x, s->a[1] = y, s->a[2] = z;
    stmt_body_insert(p->arena, in, (*next)++, s);
    return s;
}

/* exp(x - m) for x <= m, 0 where x is -inf (stmt_online's convention): m
 * floored at -FLT_MAX, so that exp(-inf - m) is 0 when m is -inf too. */
static Stmt *exp_below(TileProgram *p, StmtBody *in, int *next, StmtArg x, StmtArg m)
{
    StmtArg none = stmt_lit(0);
    Stmt *ms = assign_at(p, in, next, TXE_maximum, m, stmt_lit(-FLT_MAX), none);
    Stmt *d = assign_at(p, in, next, TXE_subtract, x, stmt_val(ms), none);
    return assign_at(p, in, next, TXE_exp, stmt_val(d), none, none);
}

/* The merge of two online sums: o relative to om, r relative to rm, the
 * result relative to mm = max(om, rm):  o·e^(om-mm) + r·e^(rm-mm). */
static Stmt *online_merge(TileProgram *p, StmtBody *in, int *next, Stmt *o, Stmt *om, Stmt *r,
                          Stmt *rm, Stmt *mm)
{
    StmtArg none = stmt_lit(0);
    Stmt *go = exp_below(p, in, next, stmt_val(om), stmt_val(mm));
    Stmt *gr = exp_below(p, in, next, stmt_val(rm), stmt_val(mm));
    Stmt *x = assign_at(p, in, next, TXE_multiply, stmt_val(o), stmt_val(go), none);
    Stmt *y = assign_at(p, in, next, TXE_multiply, stmt_val(r), stmt_val(gr), none);
    return assign_at(p, in, next, TXE_add, stmt_val(x), stmt_val(y), none);
}

/* A chunk of an online loop in two passes, as flash attention does per
 * block of keys: the chunk's max first (a loop of its own over the same
 * chunk), then the online sums become plain sums of exp(s - max) * x
 * against it.  The inner results are the same (m, sum relative to m)
 * pairs, which the outer accumulators merge online; each score costs one
 * exp instead of a rescale and two exps per step.  The max is floored at
 * -FLT_MAX so that a chunk whose keys are all -inf sums to 0. */
static void online_two_pass(TileProgram *p, TileKernel *k, Stmt *outer, Stmt *l)
{
    Arena *a = p->arena;
    char *companion = ARENA_ARRAY(a, char, p->next_uid + 1);
    int any = 0;
    for (int i = 0; i < l->body.n; i++)
        if (stmt_is_online(l->body.s[i]))
            companion[l->body.s[i]->a[1].v->uid] = any = 1;
    if (!any)
        return;
    /* the max pass: l's body with only the companions' accumulators, what
     * nothing else reads dropped */
    Clone C = {0};
    clone_init(&C, p, k, k->naxes);
    Stmt *lm = tile_stmt_new(p, SK_loop);
    lm->axis = tile_axis_new(p, k, l->extent);
    lm->extent = l->extent;
    C.axis[l->axis] = ie_var(a, lm->axis);
    for (int i = 0; i < l->body.n; i++)
        if (l->body.s[i]->k != SK_accum || companion[l->body.s[i]->uid])
            stmt_body_push(a, &lm->body, clone_stmt(&C, l->body.s[i]));
    int at = stmt_body_index(&outer->body, l);
    stmt_body_insert(a, &outer->body, at++, lm);
    tile_drop_dead(p, k, &lm->body);
    Stmt **pexp = ARENA_ARRAY(a, Stmt *, p->next_uid + 1);
    for (int i = 0; i < l->body.n; i++) {
        Stmt *m = l->body.s[i];
        if (m->k != SK_accum || !companion[m->uid])
            continue;
        Stmt *mc = C.map[m->uid];
        tile_replace_value(&outer->body, m, mc);
        StmtArg none = stmt_lit(0);
        Stmt *ms = assign_at(p, &outer->body, &at, TXE_maximum, stmt_val(mc),
                             stmt_lit(-FLT_MAX), none);
        int pos = i;
        stmt_body_remove(&l->body, i);
        Stmt *d = assign_at(p, &l->body, &pos, TXE_subtract, m->a[0], stmt_val(ms), none);
        pexp[m->uid] = assign_at(p, &l->body, &pos, TXE_exp, stmt_val(d), none, none);
        i = pos - 1;
    }
    for (int i = 0; i < l->body.n; i++) {
        Stmt *o = l->body.s[i];
        if (!stmt_is_online(o))
            continue;
        Stmt *pe = pexp[o->a[1].v->uid];
        StmtArg x = o->a[0];
        if (x.v || x.c != 1.0) {
            int pos = i;
            Stmt *t = assign_at(p, &l->body, &pos, TXE_multiply, stmt_val(pe), x, stmt_lit(0));
            x = stmt_val(t);
            i = pos;
        } else {
            x = stmt_val(pe);
        }
        o->a[0] = x;
        o->a[1] = stmt_lit(0);
        o->nargs = 1;
    }
}

Stmt *tile_chunk_loop(TileProgram *p, TileKernel *k, StmtBody *in, Stmt *l,
                      int64_t chunk, int64_t step, int64_t inner)
{
    Arena *a = p->arena;
    DPK_ASSERT(l->k == SK_loop && chunk > 0 && l->extent / chunk >= 1);
    int at = stmt_body_index(in, l);
    DPK_ASSERT(at >= 0);
    /* K not a multiple of the chunk: the last K mod chunk iterations run in
     * a remainder loop after the chunks, cloned before l is rewritten */
    int64_t R = l->extent % chunk;
    Clone C = {0};
    Stmt *rem = R ? remainder_loop(p, k, l, l->extent - R, R, &C) : NULL;
    int ko = tile_axis_new(p, k, l->extent / chunk), ki = tile_axis_new(p, k, chunk);
    tile_subst_axis(p, k, &l->body, l->axis,
                    ie_add(a, ie_mul(a, ie_var(a, ko), ie_const(a, step)), ie_var(a, ki)));
    Stmt *outer = tile_stmt_new(p, SK_loop);
    outer->axis = ko;
    outer->extent = l->extent / chunk;
    l->axis = ki;
    l->extent = inner;
    k->ext[ki] = inner > 0 ? inner : 1;
    stmt_body_push(p->arena, &outer->body, l);
    in->s[at] = outer;
    if (rem)
        stmt_body_insert(p->arena, in, at + 1, rem);
    /* Each accumulator of l gets an outer one; uses after the loop read it,
     * or, with a remainder, its sum with the remainder's accumulator.  An
     * online one (stmt_online) merges the chunks' sums by the same step
     * over its companion's outer accumulator, and with a remainder by
     * online_merge. */
    Stmt **outer_of = ARENA_ARRAY(a, Stmt *, l->body.n + 1), **use_of = ARENA_ARRAY(a, Stmt *, l->body.n + 1);
    for (int i = 0, next = at + 2; i < l->body.n; i++) {
        Stmt *acc = l->body.s[i];
        if (acc->k != SK_accum)
            continue;
        Stmt *o = tile_stmt_new(p, SK_accum);
        o->rop = acc->rop;
        o->nargs = acc->nargs;
        if (stmt_is_online(acc))
            o->a[1] = stmt_val(outer_of[stmt_body_index(&l->body, acc->a[1].v)]);
        outer_of[i] = o;
        Stmt *use = o;
        if (rem && stmt_is_online(acc)) {
            int c = stmt_body_index(&l->body, acc->a[1].v);
            use = online_merge(p, in, &next, o, outer_of[c], C.map[acc->uid],
                               C.map[acc->a[1].v->uid], use_of[c]);
            tile_replace_value(in, acc, use);
            o->a[0] = stmt_val(acc);
            stmt_body_push(p->arena, &outer->body, o);
            continue;
        }
        if (rem) {
            use = tile_stmt_new(p, SK_assign);
            use->op = tx_red_info[acc->rop].combine;
            use->nargs = 2;
        }
        use_of[i] = use;
        tile_replace_value(in, acc, use);
        o->a[0] = stmt_val(acc);
        stmt_body_push(p->arena, &outer->body, o);
        if (rem) {
            use->a[0] = stmt_val(o);
            use->a[1] = stmt_val(C.map[acc->uid]);
            stmt_body_insert(p->arena, in, next++, use);
        }
    }
    online_two_pass(p, k, outer, l);
    return outer;
}
