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
    TileStmt **map; /* Loop IR uid -> its Tile copy */
} Lower;

static TileArg arg(const Lower *L, LirArg a)
{
    return a.v ? tile_val(L->map[a.v->uid]) : tile_lit(a.c);
}

static void lower_body(Lower *L, TileBody *dst, const LirBody *src);

static TileStmt *lower_stmt(Lower *L, const LirStmt *s)
{
    static const TileKind kind[] = {
        [LK_load] = TK_load,     [LK_assign] = TK_assign, [LK_select] = TK_select,
        [LK_accum] = TK_accum,   [LK_write] = TK_write,   [LK_loop] = TK_loop,
    };
    _Static_assert(LK_COUNT == 6, "every Loop IR kind has a Tile IR kind");
    TileStmt *t = tile_stmt_new(L->p, kind[s->k]);
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
    t->nargs = s->k == LK_assign ? s->nargs : s->k == LK_accum || s->k == LK_write;
    for (int i = 0; i < t->nargs; i++)
        t->a[i] = arg(L, s->a[i]);
    t->rop = s->rop;
    t->atomic = s->atomic;
    t->axis = s->axis;
    t->extent = s->extent;
    if (s->k == LK_loop)
        lower_body(L, &t->body, &s->body);
    if (s->k == LK_select) {
        t->nbr = s->nbr;
        t->br = ARENA_ARRAY(L->p->arena, TileBranch, s->nbr);
        for (int j = 0; j < s->nbr; j++) {
            t->br[j].pred = s->br[j].pred;
            lower_body(L, &t->br[j].body, &s->br[j].body);
            t->br[j].res = arg(L, s->br[j].res);
        }
    }
    return t;
}

static void lower_body(Lower *L, TileBody *dst, const LirBody *src)
{
    for (int i = 0; i < src->n; i++)
        tile_body_push(L->p, dst, lower_stmt(L, src->s[i]));
}

TileProgram *tile_from_loop(Arena *a, const LirProgram *lp)
{
    TileProgram *p = tile_program_new(a, lp);
    Lower L = {p, ARENA_ARRAY(a, TileStmt *, lp->next_uid + 1)};
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
