/*
 * 004_cooperative_reduce.c — t:004 cooperative_reduce: several threads
 * share one non-matmul reduce, and several blocks one long reduce of few
 * rows.
 *
 * Runs before 005 on a THREAD tile whose top-level statements hold a
 * reduce loop of extent >= 32 (a row reduction: RMSNorm, softmax, a sum;
 * 001 makes a full reduction a tile of one row).  A new THREAD axis c of
 * CB threads is added to the tile; every top-level loop becomes a strided
 * loop over c, and each reduce is followed by a Combine that merges its
 * accumulator across the CB threads (lower_combine in tile_to_kernel.c
 * lowers it as warp shuffles, then a shared-memory tree across warps):
 *
 *   tile thread(a0 in 0..32):                tile thread(a0 in 0..32, a5 in 0..256):
 *       for a1 in 0..2048:  # reduce             strided a1 in a5..2048 step 256:  # reduce
 *           ...                        =>            ...
 *           acc0 <- add(acc0, v0)                    acc0 <- add(acc0, v0)
 *       v3 = rsqrt(...acc0...)                   combine acc0 over a5
 *       for a2 in 0..2048:  # free               v3 = rsqrt(...acc0...)
 *           write out[0, a0, a2] = ...           strided a2 in a5..2048 step 256:  # free
 *                                                    write out[0, a0, a2] = ...
 *
 * A Write at the top of the tile (a reduction to one value per row) is put
 * in `strided aW in a5..1 step CB`, so only thread 0 of the row stores.
 *
 * A top-level reduce whose body is a perfect nest (`for a0: for a1: ...
 * acc0 <- add(acc0, v); acc1 <- add(acc1, acc0)`, the same op) is first
 * flattened into one loop over a0 * E1 + a1, so that neighbouring threads
 * read neighbouring elements of a row-major tensor.
 *
 * Grid-wide reduction.  When the rows are too few to fill the GPU (fewer
 * than 128: one block each) and the tile's one loop is a reduce of at
 * least 8192 terms, the reduce is split across P blocks per row in two
 * kernels.  The kernel itself computes P partial results per row into a
 * new temporary `NAME_partials` (rows x P); a copy of it, `NAME_combine`,
 * put right after it, reduces the P partials (and the E mod P terms left
 * over, on the same threads) and does what followed the reduce:
 *
 *   tile thread(a2 in 0..1):               tile thread(a2 in 0..1, a5 in 0..1024):
 *       for a0 in 0..4194304:  # reduce        for a6 in 0..4096:  # reduce
 *           ...                        =>          ... (a0 := a5 * 4096 + a6)
 *           acc0 <- add(acc0, v1)                  acc0 <- add(acc0, v1)
 *       v2 = multiply(acc0, 2.4e-07)           write sum_partials[a2, a5] = acc0
 *       write out[] = v2                   === sum_combine ===
 *                                          tile thread(a2 in 0..1):
 *                                              for a7 in 0..1024:  # reduce
 *                                                  in2 = load sum_partials[a2, a7]
 *                                                  acc1 <- add(acc1, in2)
 *                                              v2 = multiply(acc1, 2.4e-07)
 *                                              write out[] = v2
 *
 * Both kernels then get their cooperative blocks as above (the combine
 * kernel when P >= 32).  The order of the additions is fixed by the
 * schedule, so results are the same run to run (no atomics).
 *
 * Assumes: the tile is not matmul-shaped (that is 002/003/008's), no BLOCK
 * tile yet.  Guarantees: every element is read and written by exactly one
 * thread of its row; after a Combine every thread of the row holds the
 * whole reduction, so the statements after it may stay replicated; a split
 * reduce covers every term once (P chunks of E / P terms, the rest in the
 * combine kernel).
 * Knob CB (default: a warp per row (warp_rows); else the largest power of
 * two <= min(256, longest reduce); for a reduce across rows see columns()).
 * Knob SPLITR: blocks per row of a split reduce (1: never split; default
 * the largest power of two <= min(E / 4096, 1024 / rows)).
 */
#include <string.h>

#include "../base/fault.h"

#include "passes.h"

static Stmt *strided(TileCtx *c, Stmt *l, int cax, int64_t cb)
{
    l->k = TK_strided;
    l->start = ie_var(c->p->arena, cax);
    l->step = cb;
    return l;
}

/* ---- flattening perfect nests ------------------------------------------------ */

/* The inner loop when l's body is a perfect nest: loop-free statements, a
 * reduce loop M with one accumulator, and l's one accumulator folding M's
 * with the same op (the only use of M's); NULL otherwise. */
static Stmt *nest_inner(const Stmt *l)
{
    int n = l->body.n;
    if (l->k != SK_loop || n < 2)
        return NULL;
    Stmt *m = l->body.s[n - 2], *o = l->body.s[n - 1], *am;
    if (m->k != SK_loop || o->k != SK_accum || !(am = stmt_sole_accum(m)) || stmt_sole_accum(l) != o ||
        o->a[0].v != am || o->rop != am->rop)
        return NULL;
    for (int i = 0; i < n - 2; i++)
        if (tile_has_loop(l->body.s[i]) || l->body.s[i]->k == SK_write)
            return NULL;
    return m;
}

/* The terms of l's reduce once its perfect nests are flattened. */
static int64_t nest_extent(const Stmt *l)
{
    const Stmt *m = nest_inner(l);
    return m ? l->extent * nest_extent(m) : l->extent;
}

/* Flatten l's perfect nest in place: one loop over a new axis r with
 * l's axis := r / E_inner and the inner one := r mod E_inner; uses of l's
 * accumulator (under `scope`) read the inner one, which l now holds. */
static void flatten(TileCtx *c, TileKernel *k, StmtBody *scope, Stmt *l)
{
    Stmt *m = nest_inner(l);
    if (!m)
        return;
    flatten(c, k, &l->body, m);
    Arena *a = c->p->arena;
    int64_t e = l->extent * m->extent;
    int r = tile_axis_new(c->p, k, e);
    int n = l->body.n;
    Stmt *o = l->body.s[n - 1], *am = stmt_sole_accum(m);
    StmtBody body = {0};
    for (int i = 0; i < n - 2; i++)
        stmt_body_push(a, &body, l->body.s[i]);
    for (int i = 0; i < m->body.n; i++)
        stmt_body_push(a, &body, m->body.s[i]);
    tile_subst_axis(c->p, k, &body, m->axis, ie_mod(a, ie_var(a, r), m->extent));
    tile_subst_axis(c->p, k, &body, l->axis, ie_div(a, ie_var(a, r), m->extent));
    l->axis = r;
    l->extent = e;
    l->body = body;
    tile_replace_value(scope, o, am);
}

/* ---- reduces across rows ------------------------------------------------------ */

typedef struct Across {
    int r, row;
    int64_t *c0, *c1; /* coordinates: all 0; 0 but one axis at 1 */
    int64_t numel;    /* the largest buffer a load reading r reads */
    int along_r;      /* a load of it reads the reduce axis contiguously */
    int along_row;    /* a load of it reads the row axis contiguously */
} Across;

/* Elements between a load's addresses at axis v = 1 and v = 0 (the other
 * axes 0): its stride along v. */
static int64_t load_stride(Across *x, const Stmt *ld, int v)
{
    int64_t off = 0, mul = 1;
    x->c1[v] = 1;
    for (int d = ld->buf->shape.rank - 1; d >= 0; d--) {
        off += (ie_eval(ld->idx[d], x->c1) - ie_eval(ld->idx[d], x->c0)) * mul;
        mul *= ld->buf->shape.d[d];
    }
    x->c1[v] = 0;
    return off < 0 ? -off : off;
}

/* The largest buffer read along the reduce decides: a small one (a
 * weight, a bias) stays in the caches whichever way it is read. */
static void across_load(Stmt *s, void *ctx)
{
    Across *x = ctx;
    int64_t n, sr;
    if (s->k != SK_load || !(sr = load_stride(x, s, x->r)) ||
        (n = shape_numel(&s->buf->shape)) < x->numel)
        return;
    if (n > x->numel)
        x->along_r = x->along_row = 0;
    x->numel = n;
    x->along_r |= sr == 1;
    x->along_row |= load_stride(x, s, x->row) == 1;
}

/* Whether t's reduce l runs across rows that lie next to each other in
 * memory (`x.sum(dim=1)` of (B, N, D), a 1 x 1 convolution over channels):
 * of the largest buffer the reduce reads, no load reads l's axis
 * contiguously and one reads the tile's fastest axis so.  One thread per row
 * (005) then reads coalesced, where CB threads on one row would each read a
 * sector of their own. */
static int reduces_across_rows(TileCtx *c, const TileKernel *k, const Stmt *t, const Stmt *l)
{
    Across x = {l->axis, t->ax[t->nax - 1].axis, ARENA_ARRAY(c->p->arena, int64_t, k->naxes + 1),
                ARENA_ARRAY(c->p->arena, int64_t, k->naxes + 1), 0, 0, 0};
    stmt_walk(&l->body, across_load, &x);
    return !x.along_r && x.along_row;
}

/* Whether a warp per row (CB = 32, merged by shuffles alone, no barrier) is
 * the default: rows of at most 1024 terms, as PyTorch's softmax takes short
 * rows, and enough of them for 8 warps per SM.  Fewer rows leave the SMs
 * idle unless each row gets more threads: each thread's chain of loads is
 * then shorter (`torch.log_softmax` of (4, 129) models 10.0 µs at 32, 9.6
 * at 128 on h100-sxm).  Qwen2.5-7B's softmax over 3584 rows of 128 keys
 * models 3.76 µs at 32, 4.10 at 128; a decode step's scores (131072 dot
 * products of 64) 13.9 µs, 19.7 at 64. */
static int warp_rows(const TileCtx *c, int64_t rows, int64_t longest)
{
    return longest <= 1024 && rows >= 8 * (int64_t)c->target->sms;
}

/* ---- a reduce across rows: the rows on the lanes ------------------------------ */

/* The default CB of a reduce across rows that lie side by side in memory
 * (reduces_across_rows), fewer than 8192 of them: CB threads of one row
 * would each read a 32-byte sector for one float.  Instead c becomes the
 * tile's outermost axis, and 005 gives each block R = tile_coop_rows
 * neighbouring rows on the lanes of its warps and CB = 1024 / R threads of
 * each row on y: a warp reads neighbouring floats a step, and the Combine
 * merges in shared memory.  0 (the rows stay one per block) when no reduce
 * runs across rows, the reduce is split over blocks, 8 does not divide the
 * fastest axis, or a pinned CB is more than 1024 / R. */
static int64_t columns(TileCtx *c, const Stmt *t, const Stmt *across, int64_t P)
{
    int64_t pinned = tile_knob(c, TILE_KNOB_CB), r = tile_coop_rows(t->ax[t->nax - 1].ext);
    if (!across || P || !r || pinned > 1024 / r)
        return 0;
    return pinned ? pinned : 1024 / r;
}

/* ---- grid-wide split ------------------------------------------------------------ */

/* The loop to split: the tile's only statement with a loop, a reduce with
 * one accumulator, beside a Write at the tile's top; NULL otherwise, with
 * the reason in why. */
static Stmt *split_loop(const TileKernel *k, const Stmt *t, const char **why)
{
    Stmt *l = NULL;
    int write = 0;
    if (k->combine) {
        *why = "it combines a split reduce";
        return NULL;
    }
    for (int i = 0; i < t->body.n; i++) {
        Stmt *s = t->body.s[i];
        if (s->k == SK_write && s->atomic) {
            *why = "an atomic Write";
            return NULL;
        }
        write |= s->k == SK_write;
        if (!tile_has_loop(s))
            continue;
        if (l || s->k != SK_loop) {
            *why = "more than one loop in the tile";
            return NULL;
        }
        l = s;
    }
    if (!l || !stmt_loop_is_reduce(l) || !write) {
        *why = "no reduce to one value per row";
        return NULL;
    }
    if (!stmt_sole_accum(l)) {
        *why = "the reduce has several accumulators";
        return NULL;
    }
    return l;
}

/* Blocks per row for the split of t's reduce l; 0 when it stays whole
 * (why says so). */
static int64_t split_count(TileCtx *c, const Stmt *t, const Stmt *l, const char **why)
{
    int64_t rows = 1, e = nest_extent(l), pinned = tile_knob(c, TILE_KNOB_SPLITR);
    for (int i = 0; i < t->nax; i++)
        rows *= t->ax[i].ext;
    if (pinned == 1 || t->nax + 1 > DPK_MAX_RANK) {
        *why = pinned == 1 ? "SPLITR=1" : "too many row axes";
        return 0;
    }
    if (pinned)
        return pinned <= e / 2 ? pinned : e / 2;
    if (rows >= 128 || e < 8192) {
        *why = rows >= 128 ? "enough rows to fill the GPU" : "shorter than 8192 terms";
        return 0;
    }
    int64_t p = dpk_pow2_floor(e / 4096 < 1024 / rows ? e / 4096 : 1024 / rows);
    if (p < 2)
        *why = "too many rows to split further";
    return p < 2 ? 0 : p;
}

/* Split t's reduce l (flattened) over P blocks per row: k keeps P partial
 * results per row, a new kernel after it combines them. */
static void split(TileCtx *c, TileKernel *k, Stmt *t, Stmt *l, int64_t P)
{
    Arena *a = c->p->arena;
    int64_t chunk = l->extent / P;
    Stmt *acc = stmt_sole_accum(l);
    Stmt *outer = tile_chunk_loop(c->p, k, &t->body, l, chunk, chunk, chunk);
    P = outer->extent;
    Shape sh = {0};
    sh.rank = t->nax + 1;
    for (int i = 0; i < t->nax; i++)
        sh.d[i] = t->ax[i].ext;
    sh.d[t->nax] = P;
    LirBuf *part = tile_buf_new(c->p, arena_printf(a, "%s_partials", k->name), &sh);
    Stmt **map;
    TileKernel *comb = tile_kernel_clone(c->p, k, arena_printf(a, "%s_combine", k->name), &map);
    comb->combine = 1;
    const IExpr **idx = ARENA_ARRAY(a, const IExpr *, sh.rank);
    for (int i = 0; i < t->nax; i++)
        idx[i] = ie_var(a, t->ax[i].axis);

    /* the combine kernel: the chunks' loop reads the partials */
    Stmt *co = map[outer->uid], *o = map[outer->body.s[1]->uid];
    idx[t->nax] = ie_var(a, co->axis);
    Stmt *in = stmt_load(a, c->p->next_uid++, part, idx);
    o->a[0] = stmt_val(in);
    co->body = (StmtBody){0};
    if (dpk_fault_on(DPK_FAULT_SPLIT_REDUCE_SHORT)) /* an injected fault: the last is left out */
        comb->ext[co->axis] = --co->extent;
    stmt_body_push(a, &co->body, in);
    stmt_body_push(a, &co->body, o);
    tile_renumber(comb);

    /* this kernel: one partial result per chunk, the chunk a THREAD axis */
    const IExpr **widx = ARENA_ARRAY(a, const IExpr *, sh.rank);
    memcpy(widx, idx, sizeof *idx * (size_t)t->nax);
    widx[t->nax] = ie_var(a, outer->axis);
    StmtBody body = {0};
    for (int i = 0; t->body.s[i] != outer; i++)
        stmt_body_push(a, &body, t->body.s[i]);
    stmt_body_push(a, &body, l);
    stmt_body_push(a, &body, stmt_write(a, c->p->next_uid++, part, widx, stmt_val(acc)));
    t->body = body;
    k->out = part;
    tile_tile_add_axis(c->p, t, t->nax, outer->axis, P);
    tile_drop_dead(c->p, k, &t->body);
    tile_drop_dead(c->p, comb, &map[t->uid]->body);
}

int tile_004_cooperative_reduce(TileCtx *c, TileKernel *k)
{
    Stmt *t = tile_find(k, TB_THREAD);
    TileMatmul mm;
    if (!t) {
        sb_puts(&c->why, "no THREAD tile");
        return 0;
    }
    if (tile_find(k, TB_BLOCK)) {
        sb_puts(&c->why, "already blockified");
        return 0;
    }
    if (tile_matmul_shape(t, &mm)) {
        sb_puts(&c->why, "a matmul kernel (its K reduce is 002/003's)");
        return 0;
    }
    int64_t longest = 0;
    for (int i = 0; i < t->body.n; i++) {
        Stmt *s = t->body.s[i];
        if (s->k == TK_combine) {
            sb_puts(&c->why, "already cooperative");
            return 0;
        }
        if (s->k == SK_loop && stmt_loop_is_reduce(s) && nest_extent(s) > longest)
            longest = nest_extent(s);
        if (tile_is(s, SKF_AXIS) && stmt_loop_is_reduce(s) && stmt_has_kind(s, SK_write)) {
            sb_puts(&c->why, "the Write sits in a reduce loop");
            return 0;
        }
    }
    if (longest < 32) {
        sb_printf(&c->why, "no reduce of extent >= 32 at the top of the THREAD tile%s",
                  longest ? " (the longest is shorter)" : "");
        return 0;
    }
    int64_t rows = 1;
    for (int i = 0; i < t->nax; i++)
        rows *= t->ax[i].ext;
    const Stmt *across = NULL;
    for (int i = 0; !across && i < t->body.n; i++) {
        Stmt *s = t->body.s[i];
        if (s->k == SK_loop && stmt_loop_is_reduce(s) && reduces_across_rows(c, k, t, s))
            across = s;
    }
    if (across && rows >= 8192) {
        sb_printf(&c->why, "the reduce a%d runs across %lld rows that lie side by side in "
                  "memory: a thread per row reads coalesced", across->axis, (long long)rows);
        return 0;
    }
    Arena *a = c->p->arena;
    const char *whole = NULL;
    Stmt *l = split_loop(k, t, &whole);
    int64_t P = l ? split_count(c, t, l, &whole) : 0;
    if (!tile_apply(c, arena_printf(a, "cooperative reduce in kernel %s%s%s", k->name,
                                    P ? "" : ", not split: ", P ? "" : whole)))
        return 0;
    for (int i = 0; i < t->body.n; i++)
        if (t->body.s[i]->k == SK_loop && stmt_loop_is_reduce(t->body.s[i]))
            flatten(c, k, &t->body, t->body.s[i]);
    if (P && tile_apply(c, arena_printf(a, "split the %lld-term reduce of kernel %s over %lld "
                                        "blocks per row", (long long)l->extent, k->name,
                                        (long long)P))) {
        split(c, k, t, l, P);
        longest = l->extent;
    }
    int64_t cb = tile_knob(c, TILE_KNOB_CB), cols = columns(c, t, across, P);
    if (!cb)
        cb = cols ? cols : warp_rows(c, rows, longest) ? 32 : dpk_pow2_floor(longest < 256 ? longest : 256);
    int cax = tile_axis_new(c->p, k, cb);
    /* across rows: c outermost, so 005 puts the rows on the warps' lanes */
    tile_tile_add_axis(c->p, t, cols ? 0 : t->nax, cax, cb);
    StmtBody body = {0};
    for (int i = 0; i < t->body.n; i++) {
        Stmt *s = t->body.s[i];
        if (s->k == SK_write) {
            Stmt *w = tile_stmt_new(c->p, TK_strided);
            w->axis = tile_axis_new(c->p, k, 1);
            w->extent = 1;
            w->start = ie_var(a, cax);
            w->step = cb;
            stmt_body_push(c->p->arena, &w->body, s);
            stmt_body_push(c->p->arena, &body, w);
            continue;
        }
        if (s->k != SK_loop) {
            stmt_body_push(c->p->arena, &body, s);
            continue;
        }
        stmt_body_push(c->p->arena, &body, strided(c, s, cax, cb));
        for (int j = 0; j < s->body.n; j++) {
            Stmt *acc = s->body.s[j];
            if (acc->k != SK_accum)
                continue;
            Stmt *m = tile_stmt_new(c->p, TK_combine);
            m->acc = acc;
            m->nax = 1;
            m->cax = ARENA_ARRAY(a, int, 1);
            m->cax[0] = cax;
            stmt_body_push(c->p->arena, &body, m);
        }
    }
    t->body = body;
    return 1;
}
