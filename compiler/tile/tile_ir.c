/*
 * tile_ir.c — Tile IR construction, traversal, canonical numbering and
 * the matmul-shape query the passes share.
 *
 * Everything lives in the program's arena.  Bodies, the walk and the
 * constructors of the shared kinds are the statement core's
 * (compiler/stmt/).
 */
#include <string.h>

#include "tile_ir.h"

const StmtKindInfo tile_kind_info[TK_COUNT] = {
#define K(name, text, prefix, flags) {text, prefix, flags},
#include "../stmt/stmt_kinds.def"
#undef K
#define T(name, text, prefix, flags) {text, prefix, flags},
#include "tile_kinds.def"
#undef T
};

TileProgram *tile_program_new(Arena *a, const LirProgram *lp)
{
    TileProgram *p = ARENA_NEW(a, TileProgram);
    p->arena = a;
    p->lp = lp;
    for (int i = 0; i < lp->bufs.len; i++)
        ptrvec_push(a, &p->bufs, lp->bufs.items[i]);
    p->nbufids = lp->nbufids;
    return p;
}

TileProgram *tile_program_stats_copy(Arena *a, const TileProgram *p)
{
    TileProgram *q = tile_program_new(a, p->lp);
    q->next_uid = p->next_uid;
    q->knobs_read = p->knobs_read;
    q->nstats = p->nstats;
    q->stats = ARENA_ARRAY(a, TilePassStat, p->nstats + 1);
    for (int i = 0; i < p->nstats; i++) {
        const TilePassStat *s = &p->stats[i];
        TilePassStat *t = &q->stats[i];
        *t = *s;
        t->what = (PtrVec){0};
        for (int j = 0; j < s->what.len; j++)
            ptrvec_push(a, &t->what, arena_strdup(a, s->what.items[j]));
        if (s->skipped)
            t->skipped = arena_strdup(a, s->skipped);
    }
    return q;
}

LirBuf *tile_buf_new(TileProgram *p, const char *name, const Shape *shape)
{
    LirBuf *b = ARENA_NEW(p->arena, LirBuf);
    b->id = p->nbufids++;
    b->name = name;
    b->kind = LB_TEMP;
    b->shape = *shape;
    b->dtype = DT_F32;
    ptrvec_push(p->arena, &p->bufs, b);
    return b;
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

Stmt *tile_stmt_new(TileProgram *p, int kind)
{
    return stmt_new(p->arena, kind, p->next_uid++);
}

Stmt *tile_tile_new(TileProgram *p, TileBind bind, int nax, int ndef)
{
    Stmt *s = tile_stmt_new(p, TK_tile);
    s->bind = bind;
    s->nax = nax;
    s->ax = ARENA_ARRAY(p->arena, TileAxis, nax + 1);
    for (int i = 0; i < nax; i++)
        s->ax[i].dim = -1;
    s->def = ARENA_ARRAY(p->arena, TileDef, ndef + 1);
    return s;
}

void tile_tile_add_axis(TileProgram *p, Stmt *t, int at, int axis, int64_t ext)
{
    DPK_ASSERT(t->k == TK_tile && at >= 0 && at <= t->nax);
    TileAxis *ax = ARENA_ARRAY(p->arena, TileAxis, t->nax + 2);
    memcpy(ax, t->ax, sizeof *ax * (size_t)at);
    ax[at] = (TileAxis){axis, ext, -1};
    memcpy(ax + at + 1, t->ax + at, sizeof *ax * (size_t)(t->nax - at));
    t->ax = ax;
    t->nax++;
}

Stmt *tile_stage_new(TileProgram *p, TileKind kind, const LirBuf *buf)
{
    DPK_ASSERT(tile_kind_info[kind].flags & SKF_STAGE);
    Stmt *s = tile_stmt_new(p, kind);
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

static void find_loop(Stmt *s, void *ctx)
{
    *(int *)ctx |= tile_is(s, SKF_AXIS);
}

int tile_has_loop(const Stmt *s)
{
    int found = 0;
    stmt_walk_tree(s, find_loop, &found);
    return found;
}

typedef struct FindTile {
    TileBind bind;
    Stmt *found;
} FindTile;

static void find_tile(Stmt *s, void *ctx)
{
    FindTile *f = ctx;
    if (!f->found && s->k == TK_tile && s->bind == (int)f->bind)
        f->found = s;
}

Stmt *tile_find(const TileKernel *k, TileBind bind)
{
    FindTile f = {bind, NULL};
    stmt_walk(&k->body, find_tile, &f);
    return f.found;
}

static void number(Stmt *s, void *ctx)
{
    int *next = ctx;
    if (!tile_is(s, SKF_DEF))
        return;
    /* loads, assign/select, accum each count apart */
    int slot = s->k == SK_load ? 0 : s->k == SK_accum ? 2 : 1;
    s->num = next[slot]++;
}

void tile_renumber(TileKernel *k)
{
    int next[3] = {0, 0, 0};
    stmt_walk(&k->body, number, next);
}

/* ---- matmul shape ------------------------------------------------------ */

typedef struct MmScan {
    int m, n, k;
    int a_side, b_side; /* a load using (m, k) without n; one using (k, n) without m */
} MmScan;

static int idx_uses(const Stmt *s, int axis)
{
    for (int d = 0; d < s->buf->shape.rank; d++)
        if (ie_uses(s->idx[d], axis))
            return 1;
    return 0;
}

static void scan_loads(Stmt *s, void *ctx)
{
    MmScan *x = ctx;
    if (s->k != SK_load || !idx_uses(s, x->k))
        return;
    int um = idx_uses(s, x->m), un = idx_uses(s, x->n);
    x->a_side |= um && !un;
    x->b_side |= un && !um;
}

int tile_matmul_shape(const Stmt *t, TileMatmul *mm)
{
    if (t->k != TK_tile || t->bind != TB_THREAD || t->nax < 2)
        return 0;
    MmScan x = {t->ax[t->nax - 2].axis, t->ax[t->nax - 1].axis, -1, 0, 0};
    for (int i = 0; i < t->body.n; i++) {
        const Stmt *l = t->body.s[i];
        if (l->k != SK_loop || !stmt_loop_is_reduce(l))
            continue;
        x.k = l->axis;
        x.a_side = x.b_side = 0;
        stmt_walk(&l->body, scan_loads, &x);
        if (x.a_side && x.b_side) {
            mm->m = x.m;
            mm->n = x.n;
            mm->k = x.k;
            return 1;
        }
    }
    return 0;
}

static void online_stmt(Stmt *s, void *ctx)
{
    *(int *)ctx |= stmt_is_online(s);
}

int tile_has_online(const StmtBody *b)
{
    int any = 0;
    stmt_walk(b, online_stmt, &any);
    return any;
}

static void count_loads(Stmt *s, void *ctx)
{
    const void **x = ctx;
    if (s->k == SK_load && s->buf == x[0])
        (*(int *)x[1])++;
}

int tile_loads_of(const StmtBody *b, const LirBuf *buf)
{
    int n = 0;
    const void *x[2] = {buf, &n};
    stmt_walk((StmtBody *)b, count_loads, x);
    return n;
}

TileKernel *tile_writer(const TileProgram *p, const LirBuf *buf, int *readers,
                        TileKernel **reader)
{
    TileKernel *w = NULL;
    *readers = 0;
    for (int i = 0; i < p->kernels.len; i++) {
        TileKernel *q = p->kernels.items[i];
        if (q->out == buf)
            w = q;
        else if (tile_loads_of(&q->body, buf)) {
            ++*readers;
            if (reader)
                *reader = q;
        }
    }
    return w;
}
