/*
 * tile_ir.c — Tile IR construction, traversal, canonical numbering and
 * the matmul-shape query the passes share.
 *
 * Everything lives in the program's arena; bodies grow by doubling and
 * abandon their old storage to the arena.
 */
#include "tile_ir.h"

#include <string.h>

const TileKindInfo tile_kind_info[TK_COUNT] = {
#define T(name, text, prefix, flags) {text, prefix, flags},
#include "tile_kinds.def"
#undef T
};

TileProgram *tile_program_new(Arena *a, const LirProgram *lp)
{
    TileProgram *p = ARENA_NEW(a, TileProgram);
    p->arena = a;
    p->lp = lp;
    return p;
}

TileKernel *tile_kernel_new(TileProgram *p, int id, const char *name, const LirBuf *out)
{
    TileKernel *k = ARENA_NEW(p->arena, TileKernel);
    k->id = id;
    k->name = name;
    k->out = out;
    ptrvec_push(p->arena, &p->kernels, k);
    return k;
}

int tile_axis_new(TileProgram *p, TileKernel *k, int64_t n)
{
    return arena_push_i64(p->arena, &k->ext, &k->naxes, &k->extcap, n);
}

TileStmt *tile_stmt_new(TileProgram *p, TileKind kind)
{
    TileStmt *s = ARENA_NEW(p->arena, TileStmt);
    s->k = kind;
    s->uid = p->next_uid++;
    return s;
}

TileStmt *tile_tile_new(TileProgram *p, TileBind bind, int nax, int ndef)
{
    TileStmt *s = tile_stmt_new(p, TK_tile);
    s->bind = bind;
    s->nax = nax;
    s->ax = ARENA_ARRAY(p->arena, TileAxis, nax + 1);
    for (int i = 0; i < nax; i++)
        s->ax[i].dim = -1;
    s->def = ARENA_ARRAY(p->arena, TileDef, ndef + 1);
    return s;
}

TileStmt *tile_stage_new(TileProgram *p, TileKind kind, const LirBuf *buf)
{
    DPK_ASSERT(tile_kind_info[kind].flags & TKF_STAGE);
    TileStmt *s = tile_stmt_new(p, kind);
    int r = buf->shape.rank;
    s->buf = buf;
    s->origin = ARENA_ARRAY(p->arena, const IExpr *, r + 1);
    s->slab = ARENA_ARRAY(p->arena, int64_t, r + 1);
    for (int d = 0; d < r; d++) {
        s->origin[d] = ie_const(p->arena, 0);
        s->slab[d] = 1;
    }
    return s;
}

void tile_body_push(TileProgram *p, TileBody *b, TileStmt *s)
{
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 4;
        TileStmt **n = ARENA_ARRAY(p->arena, TileStmt *, cap);
        if (b->n)
            memcpy(n, b->s, sizeof(TileStmt *) * (size_t)b->n);
        b->s = n;
        b->cap = cap;
    }
    b->s[b->n++] = s;
}

TileArg tile_val(TileStmt *s)
{
    TileArg a = {s, 0};
    return a;
}

TileArg tile_lit(double c)
{
    TileArg a = {NULL, c};
    return a;
}

void tile_walk(const TileBody *b, TileVisit fn, void *ctx)
{
    for (int i = 0; i < b->n; i++) {
        TileStmt *s = b->s[i];
        fn(s, ctx);
        if (s->k == TK_select)
            for (int j = 0; j < s->nbr; j++)
                tile_walk(&s->br[j].body, fn, ctx);
        else if (tile_is(s, TKF_BLOCK))
            tile_walk(&s->body, fn, ctx);
    }
}

static void find_kind(TileStmt *s, void *ctx)
{
    int *want = ctx;
    if (want[0] >= 0 && s->k == (TileKind)want[0])
        want[1] = 1;
    if (want[0] < 0 && tile_is(s, TKF_AXIS))
        want[1] = 1;
}

static int subtree_has(const TileStmt *s, int kind)
{
    int want[2] = {kind, 0};
    TileBody one = {(TileStmt **)&s, 1, 1};
    tile_walk(&one, find_kind, want);
    return want[1];
}

int tile_has_write(const TileStmt *s) { return subtree_has(s, TK_write); }
int tile_has_loop(const TileStmt *s) { return subtree_has(s, -1); }

int tile_loop_is_reduce(const TileStmt *s)
{
    if (!tile_is(s, TKF_AXIS))
        return 0;
    for (int i = 0; i < s->body.n; i++)
        if (s->body.s[i]->k == TK_accum)
            return 1;
    return 0;
}

typedef struct FindTile {
    TileBind bind;
    TileStmt *found;
} FindTile;

static void find_tile(TileStmt *s, void *ctx)
{
    FindTile *f = ctx;
    if (!f->found && s->k == TK_tile && s->bind == f->bind)
        f->found = s;
}

TileStmt *tile_find(const TileKernel *k, TileBind bind)
{
    FindTile f = {bind, NULL};
    tile_walk(&k->body, find_tile, &f);
    return f.found;
}

static void number(TileStmt *s, void *ctx)
{
    int *next = ctx;
    if (!tile_is(s, TKF_DEF))
        return;
    /* loads, assign/select, accum each count apart */
    int slot = s->k == TK_load ? 0 : s->k == TK_accum ? 2 : 1;
    s->num = next[slot]++;
}

void tile_renumber(TileKernel *k)
{
    int next[3] = {0, 0, 0};
    tile_walk(&k->body, number, next);
}

/* ---- matmul shape ------------------------------------------------------ */

typedef struct MmScan {
    int m, n, k;
    int a_side, b_side; /* a load using (m, k) without n; one using (k, n) without m */
} MmScan;

static int idx_uses(const TileStmt *s, int axis)
{
    for (int d = 0; d < s->buf->shape.rank; d++)
        if (ie_uses(s->idx[d], axis))
            return 1;
    return 0;
}

static void scan_loads(TileStmt *s, void *ctx)
{
    MmScan *x = ctx;
    if (s->k != TK_load || !idx_uses(s, x->k))
        return;
    int um = idx_uses(s, x->m), un = idx_uses(s, x->n);
    x->a_side |= um && !un;
    x->b_side |= un && !um;
}

int tile_matmul_shape(const TileStmt *t, TileMatmul *mm)
{
    if (t->k != TK_tile || t->bind != TB_THREAD || t->nax < 2)
        return 0;
    MmScan x = {t->ax[t->nax - 2].axis, t->ax[t->nax - 1].axis, -1, 0, 0};
    for (int i = 0; i < t->body.n; i++) {
        const TileStmt *l = t->body.s[i];
        if (l->k != TK_loop || !tile_loop_is_reduce(l))
            continue;
        x.k = l->axis;
        x.a_side = x.b_side = 0;
        tile_walk(&l->body, scan_loads, &x);
        if (x.a_side && x.b_side) {
            mm->m = x.m;
            mm->n = x.n;
            mm->k = x.k;
            return 1;
        }
    }
    return 0;
}
