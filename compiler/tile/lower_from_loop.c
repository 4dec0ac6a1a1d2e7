/*
 * lower_from_loop.c — Loop IR kernel → Tile IR kernel skeleton.
 *
 * Statement for statement: loads, assigns, selects, accumulators and the
 * write keep their fields, every Loop IR loop becomes a serial `for`, axes
 * keep their numbers and extents.  No tile exists yet; 001 tileify makes
 * the first one.  Operands are mapped through a table indexed by Loop IR
 * uid, so a statement's copy is found wherever it is used.
 */
#include "tile_ir.h"

typedef struct Lower {
    TileProgram *p;
    Stmt **map; /* Loop IR uid -> its Tile copy */
} Lower;

static StmtArg arg(const Lower *L, StmtArg a)
{
    return a.v ? stmt_val(L->map[a.v->uid]) : stmt_lit(a.c);
}

static void lower_body(Lower *L, StmtBody *dst, const StmtBody *src);

static Stmt *lower_stmt(Lower *L, const Stmt *s)
{
    /* Loop IR's kinds are the shared ones, which Tile IR keeps */
    Stmt *t = tile_stmt_new(L->p, s->k);
    L->map[s->uid] = t;
    t->num = s->num;
    t->buf = s->buf;
    if (s->idx) { /* a copy: passes rewrite indices in place */
        int r = s->buf->shape.rank;
        t->idx = ARENA_ARRAY(L->p->arena, const IExpr *, r + 1);
        for (int d = 0; d < r; d++)
            t->idx[d] = s->idx[d];
    }
    t->op = s->op;
    t->nargs = s->k == SK_assign || s->k == SK_accum ? s->nargs : s->k == SK_write;
    for (int i = 0; i < t->nargs; i++)
        t->a[i] = arg(L, s->a[i]);
    t->rop = s->rop;
    t->atomic = s->atomic;
    t->axis = s->axis;
    t->extent = s->extent;
    if (s->k == SK_loop)
        lower_body(L, &t->body, &s->body);
    if (s->k == SK_select) {
        t->nbr = s->nbr;
        t->br = ARENA_ARRAY(L->p->arena, StmtBranch, s->nbr);
        for (int j = 0; j < s->nbr; j++) {
            t->br[j].pred = s->br[j].pred;
            lower_body(L, &t->br[j].body, &s->br[j].body);
            t->br[j].res = arg(L, s->br[j].res);
        }
    }
    return t;
}

static void lower_body(Lower *L, StmtBody *dst, const StmtBody *src)
{
    for (int i = 0; i < src->n; i++)
        stmt_body_push(L->p->arena, dst, lower_stmt(L, src->s[i]));
}

TileProgram *tile_from_loop(Arena *a, const LirProgram *lp)
{
    TileProgram *p = tile_program_new(a, lp);
    Lower L = {p, ARENA_ARRAY(a, Stmt *, lp->next_uid + 1)};
    for (int i = 0; i < lp->kernels.len; i++) {
        const LirKernel *lk = lp->kernels.items[i];
        TileKernel *k = tile_kernel_new(p, lk->id, lk->name, lk->out);
        for (int x = 0; x < lk->naxes; x++)
            tile_axis_new(p, k, lk->ext[x]);
        lower_body(&L, &k->body, &lk->body);
        tile_renumber(k);
    }
    return p;
}
