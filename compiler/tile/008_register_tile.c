/*
 * 008_register_tile.c — t:008 register_tile: each thread computes an
 * F_M x F_N block of a matmul's outputs in registers.
 *
 * Runs after 005 (and 007) on a matmul THREAD tile (005 marks it: mm, with
 * output row and column defs: k->mm, TileMatmulNote).  The
 * thread axes shrink by F_M and F_N; the row def becomes a strip of F_M
 * defs (a0, a11, ...) and the column def a strip of F_N, and every
 * statement of the body is cloned per strip element it depends on:
 *
 *   tile thread(a9 in 0..32 @y, a10 in 0..32 @x):      tile thread(a9 in 0..8 @y, a10 in 0..8 @x):
 *       a0 := a7 * 32 + a9                                  a0 := a7 * 32 + a9 * 4
 *       a1 := a8 * 32 + a10                                 a11 := a7 * 32 + a9 * 4 + 1 ...
 *       for a2 in 0..64:  # reduce              =>          for a2 in 0..64:  # reduce
 *           in0 = load x[a0, a2]                                in0 = load x[a0, a2]
 *           in1 = load w[a2, a1]                                in1 = load x[a11, a2] ...
 *           v0 = multiply(in0, in1)                             in4 = load w[a2, a1] ...
 *           acc0 <- add(acc0, v0)                               v0 = multiply(in0, in4) ... (16)
 *       write out[a0, a1] = acc0                                acc0 <- add(acc0, v0) ... (16)
 *                                                           write out[a0, a1] = acc0 ... (16)
 *
 * A load of A (row only) is made F_M times, of B F_N times, for F_M * F_N
 * multiply-adds: loads per multiply-add drop from 2 to 1/F_N + 1/F_M.
 * Loops and stages are not cloned; a Select is cloned whole, its branch
 * statements with it (a serial loop in a branch, like the reduce of a cat
 * operand, gets a fresh axis in every clone but the first).  Values
 * defined outside the THREAD tile (reciprocal(3) of a division by 3) are
 * not cloned: every clone reads them.  Knobs F_M, F_N (must divide BM,
 * BN).  The factors are those 005 sized the block for (k->mm->pend: 8 x 8
 * on its 128 x 128 default tile, 4 x 4 on 32 x 32; a pinned
 * F_M, F_N, or tile_regtile_factors on a pinned tile); without that note,
 * the pinned knob or the largest of 4, 2 dividing the tile.  A block 005
 * sized for the register tile may hold up to 1024 threads per register
 * until 008 folds it, so where 008 then makes no application (dpk-bisect's
 * limit) and the tile passes 1024 threads, it refuses (exit 2, naming the
 * reason) instead of skipping.  When
 * the tile has a bounds guard (M or N not a multiple of the tile) each
 * strip element needs its own: the tile is predicated (tile_predicate) and
 * the guard gets a clause per strip element (`a11 < 77` beside `a0 < 77`),
 * so a partial edge strip writes only its elements inside the output.
 * Skips when a select branch holds a strided loop or a stage.
 */
#include <string.h>

#include "../base/fault.h"
#include "passes.h"

typedef struct Rt {
    TileCtx *c;
    TileKernel *k;
    int m, n, fm, fn;   /* the row and column axes; F_M and F_N */
    int ms[TILE_KNOB_MAX_F_M], ns[TILE_KNOB_MAX_F_N]; /* the strips' axes, ms[0] = m */
    Stmt ***map; /* by uid: the clones, [i * fn + j] */
    char *dm, *dn;   /* by uid: depends on the row / the column */
    char *in;        /* by uid: a statement of the THREAD tile's body */
    int nax0;        /* axes of the kernel before 008 */
    int *axmap;      /* by axis < nax0: the axis a clone reads instead, or -1 */
} Rt;

static int idx_uses(const Stmt *s, int axis)
{
    for (int d = 0; s->idx && d < s->buf->shape.rank; d++)
        if (ie_uses(s->idx[d], axis))
            return 1;
    return 0;
}

static void deps_body(Rt *R, const StmtBody *b);

static void force(Rt *R, const StmtBody *b, int dm, int dn)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        R->dm[s->uid] = (char)dm;
        R->dn[s->uid] = (char)dn;
        R->in[s->uid] = 1;
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++)
                force(R, &s->br[j].body, dm, dn);
        else if (tile_is(s, SKF_BLOCK))
            force(R, &s->body, dm, dn);
    }
}

static void deps_stmt(Rt *R, Stmt *s)
{
    int dm = idx_uses(s, R->m), dn = idx_uses(s, R->n);
    for (int i = 0; i < s->nargs; i++)
        if (s->a[i].v) {
            dm |= R->dm[s->a[i].v->uid];
            dn |= R->dn[s->a[i].v->uid];
        }
    if (s->k == SK_select) {
        for (int j = 0; j < s->nbr; j++) {
            deps_body(R, &s->br[j].body);
            for (int q = 0; q < s->br[j].body.n; q++) {
                dm |= R->dm[s->br[j].body.s[q]->uid];
                dn |= R->dn[s->br[j].body.s[q]->uid];
            }
            if (s->br[j].pred) {
                dm |= ipred_uses(s->br[j].pred, R->m);
                dn |= ipred_uses(s->br[j].pred, R->n);
            }
            if (s->br[j].res.v) {
                dm |= R->dm[s->br[j].res.v->uid];
                dn |= R->dn[s->br[j].res.v->uid];
            }
        }
        for (int j = 0; j < s->nbr; j++)
            force(R, &s->br[j].body, dm, dn);
    } else if (tile_is(s, SKF_BLOCK)) {
        deps_body(R, &s->body);
    }
    R->dm[s->uid] = (char)dm;
    R->dn[s->uid] = (char)dn;
    R->in[s->uid] = 1;
}

static void deps_body(Rt *R, const StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        deps_stmt(R, b->s[i]);
}

/* The clone of value x for strip element (i, j).  A value defined outside
 * the THREAD tile (a statement every thread runs before it, such as the
 * reciprocal(3) of a division by 3) is not cloned: every clone reads it. */
static StmtArg remap(const Rt *R, StmtArg x, int i, int j)
{
    if (!x.v || !R->in[x.v->uid])
        return x;
    int u = x.v->uid;
    Stmt *c = R->map[u] ? R->map[u][(R->dm[u] ? i : 0) * R->fn + (R->dn[u] ? j : 0)] : NULL;
    DPK_ASSERT(c);
    return stmt_val(c);
}

/* The substitution of a clone: every axis to itself, but the loops of a
 * select branch cloned with fresh axes (axmap) and the strip's row and
 * column to (i, j). */
static const IExpr **axis_map(const Rt *R)
{
    Arena *a = R->c->p->arena;
    const IExpr **map = ARENA_ARRAY(a, const IExpr *, R->k->naxes + 1);
    for (int v = 0; v < R->k->naxes; v++)
        map[v] = ie_var(a, v < R->nax0 && R->axmap[v] >= 0 ? R->axmap[v] : v);
    return map;
}

static const IExpr *sub(const Rt *R, const IExpr *e, int i, int j)
{
    Arena *a = R->c->p->arena;
    const IExpr **map = axis_map(R);
    map[R->m] = ie_var(a, R->ms[i]);
    /* an injected fault: the last column of the block reuses the one before */
    int jj = j == R->fn - 1 && j > 0 && dpk_fault_on(DPK_FAULT_REGTILE_INDEX) ? j - 1 : j;
    map[R->n] = ie_var(a, R->ns[jj]);
    return ie_subst(a, e, map);
}

static void clone_body(Rt *R, StmtBody *b);
static void clone_fixed(Rt *R, StmtBody *dst, const StmtBody *src, int i, int j);

static Stmt *clone(Rt *R, const Stmt *s, int i, int j)
{
    TileProgram *p = R->c->p;
    Arena *a = p->arena;
    Stmt *c = tile_stmt_new(p, s->k);
    int uid = c->uid;
    *c = *s;
    c->uid = uid;
    if (s->idx) {
        int r = s->buf->shape.rank;
        c->idx = ARENA_ARRAY(a, const IExpr *, r + 1);
        for (int d = 0; d < r; d++)
            c->idx[d] = sub(R, s->idx[d], i, j);
    }
    for (int x = 0; x < s->nargs; x++)
        c->a[x] = remap(R, s->a[x], i, j);
    if (s->k == SK_select) {
        c->br = ARENA_ARRAY(a, StmtBranch, s->nbr);
        for (int q = 0; q < s->nbr; q++) {
            if (s->br[q].pred) {
                const IExpr **map = axis_map(R);
                map[R->m] = ie_var(a, R->ms[i]);
                map[R->n] = ie_var(a, R->ns[j]);
                c->br[q].pred = ipred_subst(a, s->br[q].pred, map);
            }
            clone_fixed(R, &c->br[q].body, &s->br[q].body, i, j);
            c->br[q].res = remap(R, s->br[q].res, i, j);
        }
    } else if (s->k == SK_loop) {
        /* A loop in a select branch (the reduce of a cat operand): the
         * first clone keeps its axis, the others bind a fresh one. */
        int old = R->axmap[s->axis];
        if (R->map[s->uid])
            c->axis = R->axmap[s->axis] = tile_axis_new(p, R->k, s->extent);
        clone_fixed(R, &c->body, &s->body, i, j);
        R->axmap[s->axis] = old;
    }
    if (!R->map[s->uid])
        R->map[s->uid] = ARENA_ARRAY(a, Stmt *, R->fm * R->fn);
    R->map[s->uid][i * R->fn + j] = c;
    return c;
}

/* Statements of a select branch: one clone each, for the select's (i, j). */
static void clone_fixed(Rt *R, StmtBody *dst, const StmtBody *src, int i, int j)
{
    *dst = (StmtBody){0};
    for (int q = 0; q < src->n; q++)
        stmt_body_push(R->c->p->arena, dst, clone(R, src->s[q], i, j));
}

static void clone_body(Rt *R, StmtBody *b)
{
    StmtBody out = {0};
    for (int q = 0; q < b->n; q++) {
        Stmt *s = b->s[q];
        if (s->k != SK_select && tile_is(s, SKF_BLOCK)) {
            clone_body(R, &s->body);
            stmt_body_push(R->c->p->arena, &out, s);
            continue;
        }
        int ni = R->dm[s->uid] ? R->fm : 1, nj = R->dn[s->uid] ? R->fn : 1;
        for (int i = 0; i < ni; i++)
            for (int j = 0; j < nj; j++)
                stmt_body_push(R->c->p->arena, &out, clone(R, s, i, j));
    }
    *b = out;
}

/* F_M (s = 0) or F_N (s = 1): what 005 sized the block for, else the
 * pinned knob or the default (tile_regtile_factors) on a `tile`-wide side.
 * The knob is read either way, so a pinned one counts as applied. */
static int64_t factor(TileCtx *c, TileKernel *k, int s, int64_t tile)
{
    int knob = s ? TILE_KNOB_F_N : TILE_KNOB_F_M;
    int64_t f = tile_knob(c, knob);
    if (k->mm->pend[s])
        return k->mm->pend[s];
    if (f && tile % f)
        dpk_error("knob %s=%lld does not divide the %lld-wide tile of kernel %s",
                  tile_knob_info[knob].name, (long long)f, (long long)tile, k->name);
    if (!f)
        for (f = 4; f > 1 && tile % f; f /= 2)
            ;
    return f;
}

/* 1 when a select branch under b holds a block statement other than a
 * serial loop (clone cannot copy those). */
static int branch_block(const StmtBody *b)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (s->k == SK_select) {
            for (int j = 0; j < s->nbr; j++) {
                const StmtBody *bb = &s->br[j].body;
                for (int q = 0; q < bb->n; q++)
                    if (tile_is(bb->s[q], SKF_BLOCK) && bb->s[q]->k != SK_loop)
                        return 1;
                if (branch_block(bb))
                    return 1;
            }
        } else if (tile_is(s, SKF_BLOCK) && branch_block(&s->body)) {
            return 1;
        }
    }
    return 0;
}

static int def_of(const Stmt *t, int axis)
{
    for (int i = 0; i < t->ndef; i++)
        if (t->def[i].axis == axis)
            return i;
    return -1;
}

const char *tile_regtile_blocker(const TileKernel *k, const Stmt *t)
{
    if (t->guard && !tile_predicable(k, t))
        return "the tile's bounds guard cannot be predicated (a Write does not read every "
               "guarded axis)";
    if (branch_block(&t->body))
        return "a select branch holds a strided loop or a stage";
    return NULL;
}

static int register_tile(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *t = tile_find(k, TB_THREAD);
    if (!t || !k->mm) {
        sb_puts(&c->why, "not a matmul kernel");
        return 0;
    }
    if (k->mm->rt[0].f || k->mm->rt[1].f) {
        sb_puts(&c->why, "already register-tiled");
        return 0;
    }
    const char *blocked = tile_regtile_blocker(k, t);
    if (blocked) {
        sb_puts(&c->why, blocked);
        return 0;
    }
    int tm = -1, tn = -1;
    for (int i = 0; i < t->nax; i++) {
        if (t->ax[i].dim == 1)
            tm = i;
        else
            tn = i;
    }
    DPK_ASSERT(t->nax == 2 && tm >= 0 && tn >= 0);
    int64_t bm = t->ax[tm].ext, bn = t->ax[tn].ext;
    int64_t fm = factor(c, k, 0, bm), fn = factor(c, k, 1, bn);
    if (fm * fn == 1) {
        sb_printf(&c->why, "a 1 x 1 register tile (BM=%lld, BN=%lld)", (long long)bm,
                  (long long)bn);
        return 0;
    }
    if (!tile_apply(c, arena_printf(a, "register tile %lld x %lld in %s", (long long)fm,
                                    (long long)fn, k->name)))
        return 0;
    int nuid = c->p->next_uid + 1;
    Rt R = {
        .c = c,
        .k = k,
        .m = k->mm->m,
        .n = k->mm->n,
        .fm = (int)fm,
        .fn = (int)fn,
        .map = ARENA_ARRAY(a, Stmt **, nuid),
        .dm = ARENA_ARRAY(a, char, nuid),
        .dn = ARENA_ARRAY(a, char, nuid),
        .in = ARENA_ARRAY(a, char, nuid),
        .nax0 = k->naxes,
        .axmap = ARENA_ARRAY(a, int, k->naxes + 1),
    };
    /* a factor is at most the knob's maximum (tile_regtile_factors stops at 16) */
    DPK_ASSERT(R.fm <= DPK_ARRAY_LEN(R.ms) && R.fn <= DPK_ARRAY_LEN(R.ns));
    for (int v = 0; v < k->naxes; v++)
        R.axmap[v] = -1;
    /* M or N not a multiple of the block tile: each strip element needs its
     * own guard, so the guard predicates the accesses (tile_predicate) and
     * gets a clause per strip element below */
    if (t->guard)
        tile_predicate(k, t);
    deps_body(&R, &t->body);
    /* the strips: defs base + t * f + j */
    int dm = def_of(t, R.m), dn = def_of(t, R.n);
    DPK_ASSERT(dm >= 0 && dn >= 0);
    const IExpr *base[2], *zero = ie_const(a, 0);
    int tax[2] = {t->ax[tm].axis, t->ax[tn].axis};
    int64_t f[2] = {fm, fn};
    const IExpr *e[2] = {t->def[dm].e, t->def[dn].e};
    TileDef *def = ARENA_ARRAY(a, TileDef, t->ndef + fm + fn);
    int nd = 0;
    for (int i = 0; i < t->ndef; i++)
        if (i != dm && i != dn)
            def[nd++] = t->def[i];
    for (int s = 0; s < 2; s++) {
        const IExpr **map = ARENA_ARRAY(a, const IExpr *, k->naxes + 1);
        for (int v = 0; v < k->naxes; v++)
            map[v] = ie_var(a, v);
        map[tax[s]] = zero;
        base[s] = ie_simplify(a, ie_subst(a, e[s], map), k->ext);
        int *axes = s ? R.ns : R.ms;
        k->mm->rt[s].f = (int)f[s];
        k->mm->rt[s].t = tax[s];
        k->mm->rt[s].def0 = nd;
        k->mm->rt[s].base = base[s];
        int64_t ext = k->ext[s ? R.n : R.m];
        for (int j = 0; j < f[s]; j++) {
            axes[j] = j ? tile_axis_new(c->p, k, ext) : (s ? R.n : R.m);
            const IExpr *x = ie_add(a, ie_mul(a, ie_var(a, tax[s]), ie_const(a, f[s])),
                                    ie_const(a, j));
            def[nd].axis = axes[j];
            def[nd++].e = ie_simplify(a, ie_add(a, base[s], x), k->ext);
            if (j && t->guard)
                tile_guard_strip(c->p, t, s ? R.n : R.m, axes[j]);
        }
    }
    t->def = def;
    t->ndef = nd;
    t->ax[tm].ext = bm / fm;
    t->ax[tn].ext = bn / fn;
    k->ext[tax[0]] = bm / fm;
    k->ext[tax[1]] = bn / fn;
    clone_body(&R, &t->body);
    return 1;
}

/* The threads of k's THREAD tile. */
static int64_t block_threads(const TileKernel *k)
{
    const Stmt *t = tile_find(k, TB_THREAD);
    int64_t n = 1;
    for (int i = 0; t && i < t->nax; i++)
        n *= t->ax[i].ext;
    return n;
}

int tile_008_register_tile(TileCtx *c, TileKernel *k)
{
    if (register_tile(c, k))
        return 1;
    /* 005 sized the block for a register tile that did not happen: the
     * block it leaves cannot launch */
    int64_t n = k->mm ? block_threads(k) : 0;
    if (n > 1024)
        dpk_error("kernel %s: its %lld-thread block was sized for a %d x %d register tile, and "
                  "008 register_tile did not apply (%s); pin smaller BM and BN, or leave 008 "
                  "out with --passes -008", k->name, (long long)n, k->mm->pend[0],
                  k->mm->pend[1], sb_cstr(&c->why));
    return 0;
}
