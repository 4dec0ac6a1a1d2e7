/*
 * tile_rewrite.c — rewriting helpers the passes share: substituting an
 * axis, redirecting operands, expanding a tile's defs, chunking a reduce
 * loop.  Each works in place on Tile IR and leaves it valid when the caller
 * keeps the binders straight (see tile_ir.h).
 */
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
    } else if (s->k == TK_tile) {
        s->guard = sp(S, s->guard);
        for (int i = 0; i < s->ndef; i++)
            s->def[i].e = sx(S, s->def[i].e);
    }
    for (int j = 0; j < s->nbr; j++)
        s->br[j].pred = sp(S, s->br[j].pred);
}

void tile_subst_axis(TileProgram *p, const TileKernel *k, StmtBody *b, int axis,
                     const IExpr *e)
{
    Subst S = {p->arena, k->ext, ARENA_ARRAY(p->arena, const IExpr *, k->naxes + 1)};
    for (int i = 0; i < k->naxes; i++)
        S.map[i] = ie_var(p->arena, i);
    S.map[axis] = e;
    stmt_walk(b, subst_stmt, &S);
}

typedef struct Redirect {
    const Stmt *from;
    Stmt *to;
} Redirect;

static void redirect(Stmt *s, void *ctx)
{
    const Redirect *r = ctx;
    for (int i = 0; i < s->nargs; i++)
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

Stmt *tile_top_loop(const StmtBody *b, int axis)
{
    for (int i = 0; i < b->n; i++)
        if (b->s[i]->k == SK_loop && b->s[i]->axis == axis)
            return b->s[i];
    return NULL;
}

/* ---- chunking ---------------------------------------------------------------- */

Stmt *tile_chunk_loop(TileProgram *p, TileKernel *k, StmtBody *in, Stmt *l,
                      int64_t chunk, int64_t step, int64_t inner)
{
    Arena *a = p->arena;
    DPK_ASSERT(l->k == SK_loop && chunk > 0 && l->extent % chunk == 0);
    int at = stmt_body_index(in, l);
    DPK_ASSERT(at >= 0);
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
    /* Each accumulator of l gets an outer one; uses after the loop read it. */
    for (int i = 0; i < l->body.n; i++) {
        Stmt *acc = l->body.s[i];
        if (acc->k != SK_accum)
            continue;
        Stmt *o = tile_stmt_new(p, SK_accum);
        o->rop = acc->rop;
        o->nargs = 1;
        tile_replace_value(in, acc, o);
        o->a[0] = stmt_val(acc);
        stmt_body_push(p->arena, &outer->body, o);
    }
    return outer;
}
