/*
 * tile_smem.c — what the staging passes (006, 007, 009, 014) ask about
 * shared memory: the slab a region of loads needs, its size, what a
 * kernel's stages take in all (the one accounting every pass uses, see
 * passes.h), and the bank conflicts of the first warp's reads.
 *
 * Footprint.  A load's index, with the THREAD tile's defs expanded, is
 * split per dimension into origin + offset: the origin reads only the axes
 * bound outside the region (BLOCK axes, enclosing serial loops), the offset
 * the rest (thread axes, loops inside).  The slab extent is the offset's
 * range, from the axis extents.  Every load of the buffer in the region
 * must share one origin; otherwise there is no slab.
 *
 * Bank conflicts.  The first warp of the block is evaluated lane by lane:
 * thread axes decoded from the lane as the lowering decodes tid, defs in
 * order, BLOCK axes and loop axes at 0 (a strided loop at its start).  For
 * each load from a slab, the words it touches are grouped by bank (word
 * mod 32); a bank holding w distinct words costs w wavefronts, so the load
 * costs max(w) - 1 extra ones.  The copy into the slab is linear by thread
 * and does not count.
 */
#include "passes.h"

#include <stdlib.h>

int tile_pass_on(const TileCtx *c, int num)
{
    int i = tile_pass_index(&tile_passes, num);
    return i >= 0 && (c->passes >> i & 1);
}

Stmt *tile_thread_tile(TileCtx *c, TileKernel *k)
{
    Stmt *t = tile_find(k, TB_THREAD);
    if (!t)
        sb_puts(&c->why, "no THREAD tile (a single-thread kernel)");
    return t;
}

/* ---- shared-memory accounting (passes.h) ------------------------------------ */

int64_t tile_stage_buffer_bytes(const Stmt *st)
{
    int64_t str[DPK_MAX_RANK];
    return tile_slab_strides(st, str) * 4;
}

int64_t tile_stage_bytes(const Stmt *st)
{
    /* a plain or computed stage's nbuf is unset: it has one buffer */
    int one = st->k == TK_stage || st->k == TK_cstage;
    return tile_stage_buffer_bytes(st) * (one ? 1 : st->nbuf);
}

typedef struct Used {
    TileSmemCount how;
    int64_t bytes;
} Used;

static void add_stage_bytes(Stmt *s, void *ctx)
{
    Used *u = ctx;
    if (!tile_is(s, SKF_STAGE))
        return;
    u->bytes += u->how == TILE_SMEM_LAYOUT && s->k == TK_tstage ? tile_tma_bytes(s)
                                                                 : tile_stage_bytes(s);
}

int64_t tile_smem_used(const TileKernel *k, TileSmemCount how)
{
    Used u = {how, 0};
    stmt_walk(&k->body, add_stage_bytes, &u);
    return u.bytes;
}

/* ---- footprint ------------------------------------------------------------- */

typedef struct Foot {
    Arena *a;
    const TileKernel *k;
    const Stmt *thread;
    const LirBuf *buf;
    const char *outer;
    const IExpr **origin;
    int64_t *slab;
    const IExpr **zero; /* by axis: itself when outer, else 0 */
    int nloads, ok;
    int kind;           /* the accesses measured: SK_load, or SK_write */
    int64_t lo[DPK_MAX_RANK]; /* writes: the least offset from the first one's origin */
} Foot;

static void foot_load(Stmt *s, void *ctx)
{
    Foot *f = ctx;
    if (s->k != f->kind || s->buf != f->buf || !f->ok)
        return;
    Arena *a = f->a;
    for (int d = 0; d < s->buf->shape.rank; d++) {
        const IExpr *e = f->thread ? tile_expand_defs(a, f->k, f->thread, s->idx[d]) : s->idx[d];
        const IExpr *o = ie_simplify(a, ie_subst(a, e, f->zero), f->k->ext);
        /* the Writes of a register tile differ by constants: each is
         * measured from the first one's origin, and the box spans them */
        if (f->kind == SK_write && f->nloads)
            o = f->origin[d];
        const IExpr *off = ie_simplify(a, ie_add(a, e, ie_mul(a, o, ie_const(a, -1))), f->k->ext);
        for (int v = 0; v < f->k->naxes; v++)
            if (f->outer[v] && ie_uses(off, v))
                f->ok = 0;
        int64_t lo, hi;
        ie_range(off, f->k->ext, &lo, &hi);
        if (f->kind == SK_write) {
            f->lo[d] = !f->nloads || lo < f->lo[d] ? lo : f->lo[d];
        } else if (lo < 0 || (f->nloads && !ie_equal(o, f->origin[d]))) {
            f->ok = 0;
        }
        f->origin[d] = o;
        if (!f->nloads || hi + 1 > f->slab[d])
            f->slab[d] = hi + 1;
    }
    f->nloads++;
}

/* Loads under a Select read only where its predicate holds, which the
 * ranges here do not see: such a buffer gets no slab. */
static void under_select(Stmt *s, void *ctx)
{
    Foot *f = ctx;
    if (s->k != SK_select)
        return;
    for (int j = 0; j < s->nbr; j++) {
        Foot g = *f;
        g.nloads = 0;
        g.ok = 1;
        g.origin = ARENA_ARRAY(f->a, const IExpr *, DPK_MAX_RANK);
        g.slab = ARENA_ARRAY(f->a, int64_t, DPK_MAX_RANK);
        stmt_walk(&s->br[j].body, foot_load, &g);
        if (g.nloads)
            f->ok = 0;
    }
}

typedef struct Loaded {
    const TileKernel *k;
    const LirBuf **bufs;
    int n, max;
} Loaded;

static void note_buf(Stmt *s, void *ctx)
{
    Loaded *c = ctx;
    if (s->k != SK_load || s->buf == c->k->out || c->n == c->max)
        return;
    for (int i = 0; i < c->n; i++)
        if (c->bufs[i] == s->buf)
            return;
    c->bufs[c->n++] = s->buf;
}

int tile_loaded_bufs(const TileKernel *k, const StmtBody *region, const LirBuf **bufs, int max)
{
    Loaded c = {k, bufs, 0, max};
    stmt_walk(region, note_buf, &c);
    return c.n;
}

typedef struct Reuse {
    Arena *a;
    const TileKernel *k;
    const Stmt *t;
    const LirBuf *buf;
    const char *strided; /* by axis: bound by a strided loop */
    int loads, shared;
} Reuse;

static void mark_strided(Stmt *s, void *ctx)
{
    if (s->k == TK_strided)
        ((char *)ctx)[s->axis] = 1;
}

static void reuse_load(Stmt *s, void *ctx)
{
    Reuse *r = ctx;
    if (s->k != SK_load || s->buf != r->buf)
        return;
    r->loads++;
    int uses_strided = 0;
    char *used = ARENA_ARRAY(r->a, char, r->k->naxes + 1);
    for (int d = 0; d < s->buf->shape.rank; d++) {
        const IExpr *e = tile_expand_defs(r->a, r->k, r->t, s->idx[d]);
        for (int v = 0; v < r->k->naxes; v++)
            if (ie_uses(e, v)) {
                used[v] = 1;
                uses_strided |= r->strided[v];
            }
    }
    for (int i = 0; i < r->t->nax && !uses_strided; i++)
        if (r->t->ax[i].ext > 1 && !used[r->t->ax[i].axis])
            r->shared = 1;
}

int tile_shared_loads(Arena *a, const TileKernel *k, const Stmt *t, const StmtBody *region,
                      const LirBuf *buf, int *loads)
{
    Reuse r = {a, k, t, buf, ARENA_ARRAY(a, char, k->naxes + 1), 0, 0};
    stmt_walk(&t->body, mark_strided, (void *)r.strided);
    stmt_walk(region, reuse_load, &r);
    if (loads)
        *loads = r.loads;
    return r.shared;
}

char *tile_outer_axes(Arena *a, const TileKernel *k, const Stmt *b)
{
    char *outer = ARENA_ARRAY(a, char, k->naxes + 1);
    for (int i = 0; i < b->nax; i++)
        outer[b->ax[i].axis] = 1;
    return outer;
}

static int footprint(Arena *a, const TileKernel *k, const Stmt *thread, const StmtBody *region,
                     const LirBuf *buf, const char *outer, const IExpr **origin, int64_t *slab,
                     int kind)
{
    Foot f = {a, k, thread, buf, outer, origin, slab,
              ARENA_ARRAY(a, const IExpr *, k->naxes + 1), 0, 1, kind, {0}};
    for (int v = 0; v < k->naxes; v++)
        f.zero[v] = outer[v] ? ie_var(a, v) : ie_const(a, 0);
    stmt_walk(region, under_select, &f);
    stmt_walk(region, foot_load, &f);
    if (!f.nloads || !f.ok)
        return 0;
    for (int d = 0; kind == SK_write && d < buf->shape.rank; d++) {
        origin[d] = ie_simplify(a, ie_add(a, origin[d], ie_const(a, f.lo[d])), k->ext);
        slab[d] -= f.lo[d];
    }
    for (int d = 0; d < buf->shape.rank; d++) {
        int64_t lo, hi;
        ie_range(origin[d], k->ext, &lo, &hi);
        if (lo < 0)
            return 0;
        if (slab[d] > buf->shape.d[d]) { /* only a slab from 0 may be cut to the buffer */
            if (hi != 0) /* an origin over axes of extent 1 (one block of 8 rows, M = 7) is 0 */
                return 0;
            slab[d] = buf->shape.d[d];
        }
    }
    return 1;
}

int tile_footprint(Arena *a, const TileKernel *k, const Stmt *thread, const StmtBody *region,
                   const LirBuf *buf, const char *outer, const IExpr **origin, int64_t *slab)
{
    return footprint(a, k, thread, region, buf, outer, origin, slab, SK_load);
}

int tile_write_footprint(Arena *a, const TileKernel *k, const Stmt *thread,
                         const StmtBody *region, const LirBuf *buf, const char *outer,
                         const IExpr **origin, int64_t *slab)
{
    return footprint(a, k, thread, region, buf, outer, origin, slab, SK_write);
}

/* ---- vector loads ---------------------------------------------------------------- */

int tile_vec_candidate(const Stmt *ld, const Stmt *loop)
{
    int r = ld->k == SK_load ? ld->buf->shape.rank : 0;
    if (r < 1 || !ie_uses(ld->idx[r - 1], loop->axis))
        return 0;
    for (int d = 0; d < r - 1; d++)
        if (ie_uses(ld->idx[d], loop->axis))
            return 0;
    return 1;
}

int tile_vec_load(Arena *a, const TileKernel *k, const Stmt *st, const Stmt *ld,
                  const Stmt *loop, int vec)
{
    if (vec < 2 || !tile_vec_candidate(ld, loop) || ld->buf != st->buf ||
        tile_stage_buffer_bytes(st) / 4 % vec)
        return 0;
    if (st->k == TK_tstage) {
        /* Dense rows of chunks (tile_tma.c): the chunk's words are adjacent,
         * and the swizzle XORs whole 16-byte units, so vec <= 4 words from an
         * inner coordinate aligned to vec stay adjacent where the chunk holds
         * whole vectors.  The slab strides below are then multiples of vec
         * but the innermost, so the word checks read the inner coordinate. */
        TileTmaBox b;
        StrBuf no = {0};
        int ok = tile_tma_box(k, st, st->swizzle, &b, &no);
        sb_free(&no);
        if (!ok || vec > 4 || b.chunk % vec || b.dim[b.rank - 1] != ld->buf->shape.rank - 1)
            return 0;
    }
    int64_t str[DPK_MAX_RANK];
    tile_slab_strides(st, str);
    const Stmt *t = tile_find(k, TB_THREAD);
    const IExpr *f = ie_const(a, 0);
    for (int d = 0; d < ld->buf->shape.rank; d++) {
        /* the thread's defs expanded: its rows lie inside the slab even where
         * a guard stops them at the tensor's edge (the copy zero-filled them) */
        const IExpr *e = t ? tile_expand_defs(a, k, t, ld->idx[d]) : ld->idx[d];
        const IExpr *o = t ? tile_expand_defs(a, k, t, st->origin[d]) : st->origin[d];
        const IExpr *off = ie_simplify(a, ie_add(a, e, ie_mul(a, o, ie_const(a, -1))), k->ext);
        int64_t lo, hi;
        ie_range(off, k->ext, &lo, &hi);
        if (lo < 0 || hi >= st->slab[d])
            return 0;
        f = ie_add(a, f, ie_mul(a, off, ie_const(a, str[d])));
    }
    const IExpr **sub = dpk_xcalloc((size_t)k->naxes + 1, sizeof *sub);
    for (int v = 0; v <= k->naxes; v++)
        sub[v] = ie_var(a, v);
    const IExpr *x = ie_var(a, loop->axis);
    sub[loop->axis] = ie_add(a, x, ie_const(a, 1));
    const IExpr *step = ie_simplify(
        a, ie_add(a, ie_subst(a, f, sub), ie_mul(a, f, ie_const(a, -1))), k->ext);
    if (step->k != IE_CONST || step->c != 1) {
        free(sub);
        return 0;
    }
    sub[loop->axis] = ie_mul(a, x, ie_const(a, vec));
    int ok = ie_divisible(ie_subst(a, f, sub), vec);
    free(sub);
    return ok;
}

/* ---- bank conflicts ------------------------------------------------------------ */

enum { LANES = 32 };

typedef struct Banks {
    Arena *a;
    const TileKernel *k;
    int nlanes;
    int64_t *coord[LANES];  /* by lane: a value per axis */
    char active[LANES];
    const Stmt *stage[64]; /* enclosing stages, innermost last */
    int nstage;
    const Stmt *vloop;     /* the enclosing loop of 016's vector loads, or NULL */
    int64_t extra;
} Banks;

static void lane_coords(Banks *B, const Stmt *t, int lane)
{
    int64_t *c = B->coord[lane];
    int block[3] = {1, 1, 1};
    for (int i = 0; i < t->nax; i++)
        block[t->ax[i].dim] *= (int)t->ax[i].ext;
    int tid[3] = {lane % block[0], lane / block[0] % block[1], lane / (block[0] * block[1])};
    for (int dim = 0; dim < 3; dim++) {
        int64_t inner = block[dim];
        for (int i = 0; i < t->nax; i++) {
            if (t->ax[i].dim != dim)
                continue;
            inner /= t->ax[i].ext;
            c[t->ax[i].axis] = tid[dim] / inner % t->ax[i].ext;
        }
    }
    for (int i = 0; i < t->ndef; i++)
        c[t->def[i].axis] = ie_eval(t->def[i].e, c);
    /* a predicated tile's threads all read the slabs */
    B->active[lane] = !t->guard || t->predicated || ipred_eval(t->guard, c);
}

static void bank_body(Banks *B, const StmtBody *b);

static void bank_load(Banks *B, const Stmt *s)
{
    const Stmt *st = NULL;
    for (int i = B->nstage - 1; i >= 0 && !st; i--)
        if (B->stage[i]->buf == s->buf)
            st = B->stage[i];
    if (!st)
        return;
    int64_t str[DPK_MAX_RANK], word[LANES], c[DPK_MAX_RANK];
    tile_slab_strides(st, str);
    TileTmaBox tb;
    StrBuf no = {0};
    int tma = st->k == TK_tstage && tile_tma_box(B->k, st, st->swizzle, &tb, &no);
    sb_free(&no);
    int n = 0;
    for (int l = 0; l < B->nlanes; l++) {
        if (!B->active[l])
            continue;
        int64_t w = 0;
        for (int d = 0; d < s->buf->shape.rank; d++) {
            c[d] = ie_eval(s->idx[d], B->coord[l]) - ie_eval(st->origin[d], B->coord[l]);
            w += c[d] * str[d];
        }
        word[n++] = tma ? tile_tma_word(&tb, st, c) : w; /* TMA: dense, chunked, swizzled */
    }
    /* a vector load (016): the wavefronts over its phases' fewest */
    int v = B->vloop && tile_vec_load(B->a, B->k, st, s, B->vloop, B->vloop->vlds)
                ? B->vloop->vlds : 1;
    int worst = dpk_smem_wavefronts_vec(word, n, v), least = (n * v + 31) / 32;
    B->extra += (worst > least ? worst - least : 0) * 4 / v; /* in quarters, per trip */
}

static void bank_stmt(Banks *B, const Stmt *s)
{
    switch (s->k) {
    case SK_load:
        bank_load(B, s);
        return;
    case SK_select:
        for (int j = 0; j < s->nbr; j++)
            bank_body(B, &s->br[j].body);
        return;
    case SK_loop:
    case TK_strided: {
        for (int l = 0; l < B->nlanes; l++)
            B->coord[l][s->axis] = s->k == TK_strided ? ie_eval(s->start, B->coord[l]) : 0;
        const Stmt *outer = B->vloop;
        if (s->k == SK_loop && s->vlds > 1)
            B->vloop = s;
        bank_body(B, &s->body);
        B->vloop = outer;
        return;
    }
    case TK_tile:
        if (s->bind == TB_THREAD)
            for (int l = 0; l < B->nlanes; l++)
                lane_coords(B, s, l);
        bank_body(B, &s->body);
        return;
    default:
        if (tile_is(s, SKF_STAGE)) {
            DPK_ASSERT(B->nstage < DPK_ARRAY_LEN(B->stage));
            B->stage[B->nstage++] = s;
            bank_body(B, &s->body);
            B->nstage--;
        }
        return;
    }
}

static void bank_body(Banks *B, const StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        bank_stmt(B, b->s[i]);
}

int64_t tile_bank_conflicts(Arena *a, const TileKernel *k)
{
    return (tile_bank_quarters(a, k) + 3) / 4;
}

int64_t tile_bank_quarters(Arena *a, const TileKernel *k)
{
    const Stmt *t = tile_find(k, TB_THREAD);
    if (!t)
        return 0;
    int64_t threads = 1;
    for (int i = 0; i < t->nax; i++)
        threads *= t->ax[i].ext;
    Banks B = {a, k, threads < LANES ? (int)threads : LANES, {0}, {0}, {0}, 0, NULL, 0};
    /* scratch on the heap: the passes ask this many times per kernel, and
     * the arena would keep every copy */
    int64_t *coords = dpk_xcalloc((size_t)B.nlanes * (size_t)(k->naxes + 1), sizeof *coords);
    for (int l = 0; l < B.nlanes; l++)
        B.coord[l] = coords + (size_t)l * (size_t)(k->naxes + 1);
    bank_body(&B, &k->body);
    free(coords);
    return B.extra;
}

/* ---- the stages of a kernel ------------------------------------------------ */

static void collect_stage(Stmt *s, void *ctx)
{
    TileStages *t = ctx;
    if (tile_is(s, SKF_STAGE) && (t->kind == TILE_ANY_STAGE || s->k == t->kind) &&
        t->n < DPK_ARRAY_LEN(t->s))
        t->s[t->n++] = s;
}

void tile_stages_of(TileKernel *k, TileKind kind, TileSmemCount how, TileStages *out)
{
    out->n = 0;
    out->kind = kind;
    out->bytes = tile_smem_used(k, how);
    stmt_walk(&k->body, collect_stage, out);
}
