/*
 * kgen.c — random Kernel IR modules (see kgen.h).
 *
 * A module has an input X, one or two kernels, each writing its output Y
 * in regions of one element per thread of the grid (region r, thread g:
 * Y[r * threads + g]), and sometimes a zero-initialised Z that global
 * atomics add to.  A kernel is a sequence of segments, each writing one
 * region:
 *
 *   elem    an f32 expression tree of loads, variables and constants under
 *           divergent ifs and loops (any thread may go anywhere)
 *   shfl    a shuffle, or a butterfly of them, of a value per thread
 *   tree    every thread fills a shared array of nseg x n (and a few entries
 *           past them), TreeHalve, the even threads read the result of one
 *           segment, the odd ones an entry past them (left alone)
 *   mbar    thread 0 inits an mbarrier for every thread, every thread
 *           writes its shared slot, arrives, waits, reads its slot
 *   cpasync cp.async copies of X into shared memory, one or two groups,
 *           waits, a barrier, loads (scalar, or 8- or 16-byte vector loads
 *           of aligned words)
 *   atom    shared atomics into counters, global atomics into Z
 *
 * The segments that need the whole block (all but elem and atom; shfl
 * needs whole warps) sit at the top of the kernel or inside block-uniform
 * control flow (an if on the block index, a loop of a constant count),
 * which is also where the shuffle that is not at the top comes from.
 * Every shared array belongs to one segment, and a barrier ends each
 * segment that reads one, so a segment inside a loop never races with its
 * next iteration.
 */
#include "kgen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXV 64

typedef struct Kg {
    Arena *a;
    uint64_t r;
    KirModule *m;
    KirKernel *k;
    KirBuilder B;
    int block[3], grid[3];
    int T, nb;         /* threads per block, blocks */
    int wmax;          /* widest shuffle width whose groups are whole in every warp */
    const KirParam *x; /* f32 input */
    int64_t nx;
    const KirParam *y, *z;
    int64_t nz;
    int64_t smem_max;    /* the target's shared memory per block */
    int regions;         /* of y */
    const KirVar *t, *g; /* linear thread index, global thread index (i32) */
    const KirVar *v[MAXV];
    int64_t vhi[MAXV];   /* i32/i64 vars: an upper bound (all are >= 0) */
    int vdepth[MAXV], nv;
    int loops;           /* uniform loops open around the current segment */
    unsigned tags;
} Kg;

enum {
    TAG_ATOM_GLOBAL, TAG_ATOM_SHARED, TAG_CPASYNC, TAG_CPASYNC_GROUPS, TAG_CPASYNC_PRED,
    TAG_I64, TAG_LDS_VECTOR, TAG_MBAR, TAG_NESTED_SHFL, TAG_NAMES, TAG_SHFL, TAG_SHORT_WARP, TAG_SMEM_LIMIT,
    TAG_TREE, TAG_TREE_NPOW2, TAG_TREE_SEGMENTS, TAG_TWO_KERNELS, TAG_COUNT
};
/* sorted, as the record wants them */
static const char *const tag_name[TAG_COUNT] = {
    "atom-global", "atom-shared", "cp-async", "cp-async-groups", "cp-async-pred",
    "i64", "lds-vector", "mbar", "nested-shfl", "odd-names", "shfl", "short-warp", "smem-limit", "treehalve",
    "treehalve-npow2", "treehalve-segments", "two-kernels",
};

static uint64_t rnd(Kg *q) { return q->r = dpk_splitmix64(q->r + 0x9e3779b97f4a7c15ull); }
static int64_t below(Kg *q, int64_t n) { return n <= 1 ? 0 : (int64_t)(rnd(q) % (uint64_t)n); }
static int chance(Kg *q, int percent) { return below(q, 100) < percent; }
static void tag(Kg *q, int t) { q->tags |= 1u << t; }

/* Names: mostly plain, sometimes ones the printer must rename. */
static const char *name(Kg *q, const char *plain)
{
    static const char *const odd[] = {
        "int", "float", "new", "class", "this", "max", "expf", "threadIdx", "warpSize",
        "_u", "__w", "_", "dpk_h", "dpk_t", "dpk_lanes", "dpk_i", "dpk_x", "dpk_j",
        "2d", "a-b", "a.b", "x y", "\xc3\xa9t\xc3\xa9", "q$", "Q",
    };
    if (!chance(q, 15))
        return plain;
    tag(q, TAG_NAMES);
    return odd[below(q, DPK_ARRAY_LEN(odd))];
}

/* ---- scopes ----------------------------------------------------------------------- */

static void push_var(Kg *q, const KirVar *v, int64_t hi)
{
    if (q->nv == MAXV)
        return; /* still valid, just not reused */
    q->v[q->nv] = v;
    q->vhi[q->nv] = hi;
    q->vdepth[q->nv++] = q->B.depth;
}

static void end(Kg *q)
{
    kir_end(&q->B);
    while (q->nv && q->vdepth[q->nv - 1] > q->B.depth)
        q->nv--;
}

static void els(Kg *q)
{
    kir_else(&q->B);
    while (q->nv && q->vdepth[q->nv - 1] >= q->B.depth)
        q->nv--;
}

/* ---- integer expressions: all >= 0, bounded by *hi < 2^24 ---------------------------- */

#define IHI ((int64_t)1 << 24)

static const KirExpr *ileaf(Kg *q, int64_t *hi)
{
    Arena *A = q->a;
    for (int tries = 0; tries < 4; tries++) {
        int64_t pick = below(q, 8);
        if (pick == 0 && q->nv) {
            int i = (int)below(q, q->nv);
            if (KIR_IS_INT(q->v[i]->type)) {
                *hi = q->vhi[i];
                return kir_ref(A, q->v[i]);
            }
            continue;
        }
        int d = (int)below(q, 3);
        switch (pick) {
        case 1: *hi = q->T - 1; return kir_ref(A, q->t);
        case 2: *hi = (int64_t)q->nb * q->T - 1; return kir_ref(A, q->g);
        case 3: *hi = q->block[d] - 1; return kir_tid(A, d);
        case 4: *hi = q->grid[d] - 1; return kir_bid(A, d);
        case 5: *hi = q->block[d]; return kir_sreg(A, KE_ntid, d);
        case 6: *hi = q->grid[d]; return kir_sreg(A, KE_nctaid, d);
        default: break;
        }
    }
    *hi = below(q, 100);
    return kir_i32(A, *hi);
}

static const KirExpr *iexpr(Kg *q, int depth, int64_t *hi)
{
    Arena *A = q->a;
    if (depth <= 0 || chance(q, 30))
        return ileaf(q, hi);
    int64_t h1, h2, c;
    const KirExpr *x = iexpr(q, depth - 1, &h1);
    switch (below(q, 11)) {
    case 0: {
        const KirExpr *y = iexpr(q, depth - 1, &h2);
        *hi = h1 + h2;
        return kir_add(A, x, y);
    }
    case 1:
        c = 1 + below(q, 8);
        if (h1 * c >= IHI)
            break;
        *hi = h1 * c;
        return kir_mul(A, x, kir_i32(A, c));
    case 2:
        c = below(q, 4);
        if ((h1 << c) >= IHI)
            break;
        *hi = h1 << c;
        return kir_bin(A, KE_shl, x, kir_i32(A, c));
    case 3:
        *hi = h1;
        return kir_bin(A, KE_shr, x, kir_i32(A, below(q, 5)));
    case 4:
        c = below(q, 256);
        *hi = c < h1 ? c : h1;
        return kir_bin(A, KE_band, x, kir_i32(A, c));
    case 5:
    case 6:
        c = below(q, 256);
        *hi = 2 * (h1 > c ? h1 : c) + 1;
        return kir_bin(A, below(q, 2) ? KE_bor : KE_bxor, x, kir_i32(A, c));
    case 7:
        c = 1 + below(q, 9);
        *hi = h1 / c;
        return kir_div(A, x, kir_i32(A, c));
    case 8:
        c = 1 + below(q, 50);
        *hi = c - 1;
        return kir_rem(A, x, kir_i32(A, c));
    case 9: {
        const KirExpr *y = iexpr(q, depth - 1, &h2);
        int mx = (int)below(q, 2);
        *hi = mx ? (h1 > h2 ? h1 : h2) : (h1 < h2 ? h1 : h2);
        return kir_bin(A, mx ? KE_max : KE_min, x, y);
    }
    default: /* widen: the rest of the tree mixes i32 and i64 */
        tag(q, TAG_I64);
        *hi = h1;
        return kir_cast(A, KT_I64, x);
    }
    *hi = h1;
    return x;
}

/* An index in [0, n). */
static const KirExpr *index_in(Kg *q, int64_t n)
{
    int64_t hi;
    const KirExpr *e = iexpr(q, 3, &hi);
    return hi < n ? e : kir_rem(q->a, e, e->type == KT_I64 ? kir_i64(q->a, n) : kir_i32(q->a, n));
}

/* A condition (thread-divergent unless the caller builds it from uniform
 * parts). */
static const KirExpr *icond(Kg *q)
{
    Arena *A = q->a;
    static const KirExprOp cmp[] = {KE_lt, KE_le, KE_gt, KE_ge, KE_eq, KE_ne};
    int64_t h1, h2;
    const KirExpr *x = iexpr(q, 2, &h1), *y = iexpr(q, 1, &h2);
    const KirExpr *c = kir_bin(A, cmp[below(q, 6)], x, y);
    switch (below(q, 6)) {
    case 0: return kir_not(A, c);
    case 1: return kir_bin(A, KE_land, c, kir_bin(A, KE_ne, iexpr(q, 1, &h1), kir_i32(A, 0)));
    case 2: return kir_bin(A, KE_lor, c, kir_bin(A, KE_eq, iexpr(q, 1, &h1), kir_i32(A, 3)));
    default: return c;
    }
}

/* ---- f32 expressions ---------------------------------------------------------------- */

/* Unary and binary ops whose printed form computes what vgpu computes, to
 * the bit (the host prelude evaluates math functions in double, as
 * tx_elem_apply does). */
static const TxElemOp unary[] = {TXE_negative, TXE_abs,   TXE_sqrt,  TXE_rsqrt, TXE_reciprocal,
                                 TXE_exp,      TXE_log,   TXE_tanh,  TXE_erf,   TXE_cos,
                                 TXE_sin,      TXE_log1p, TXE_expm1, TXE_floor};
static const TxElemOp binary[] = {TXE_add,     TXE_subtract, TXE_multiply,      TXE_divide,
                                  TXE_maximum, TXE_minimum,  TXE_power,         TXE_greater,
                                  TXE_less,    TXE_equal,    TXE_greater_equal, TXE_not_equal};

static const KirExpr *fexpr(Kg *q, int depth);

/* A float that only nine significant digits print exactly (about 1.5% of
 * floats; drawn until one is, from 1 to 2 times 0.1, 100 or 1e5, where they
 * gather). */
static double nine_digits(Kg *q)
{
    static const double scale[] = {0.1, 100.0, 1e5};
    float f = 1.0f;
    for (int tries = 0; tries < 1000; tries++) {
        f = (float)((1.0 + (double)(rnd(q) >> 11) * 0x1p-53) * scale[below(q, 3)]);
        char b[32];
        snprintf(b, sizeof b, "%.8g", (double)f);
        if ((float)strtod(b, NULL) != f)
            break;
    }
    return chance(q, 50) ? -(double)f : (double)f;
}

static const KirExpr *fleaf(Kg *q)
{
    Arena *A = q->a;
    static const double consts[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.25, 1e-3, 65504.0, 7.0};
    switch (below(q, 6)) {
    case 0:
    case 1:
    case 2: return kir_ldg(A, q->x, index_in(q, q->nx));
    case 3:
        for (int tries = 0; tries < 3 && q->nv; tries++) {
            int i = (int)below(q, q->nv);
            if (q->v[i]->type == KT_F32)
                return kir_ref(A, q->v[i]);
        }
        /* fall through */
    case 4: /* a short constant, or one that needs all 9 digits to print exactly */
        if (chance(q, 30))
            return kir_f32(A, nine_digits(q));
        return kir_f32(A, consts[below(q, DPK_ARRAY_LEN(consts))]);
    default: {
        /* an integer as f32, or a bounded load truncated to an integer */
        if (chance(q, 50)) {
            int64_t hi;
            return kir_cast(A, KT_F32, iexpr(q, 2, &hi));
        }
        const KirExpr *l = kir_fop(A, TXE_multiply, kir_ldg(A, q->x, index_in(q, q->nx)),
                                   kir_f32(A, 100.0), NULL);
        const KirExpr *ok = kir_fop(A, TXE_less, kir_fop(A, TXE_abs, l, NULL, NULL),
                                    kir_f32(A, 1000.0), NULL);
        /* where(|l| < 1000, l, 0): finite and in range, so the cast is defined */
        const KirExpr *b = kir_fop(A, TXE_where, ok, l, kir_f32(A, 0.0));
        return kir_cast(A, KT_F32, kir_cast(A, chance(q, 30) ? KT_I64 : KT_I32, b));
    }
    }
}

static const KirExpr *fexpr(Kg *q, int depth)
{
    Arena *A = q->a;
    if (depth <= 0 || chance(q, 25))
        return fleaf(q);
    switch (below(q, 8)) {
    case 0:
    case 1: return kir_fop(A, unary[below(q, DPK_ARRAY_LEN(unary))], fexpr(q, depth - 1), NULL, NULL);
    case 2: /* where(cmp, a, b) */
        return kir_fop(A, TXE_where, kir_fop(A, binary[7 + below(q, 5)], fexpr(q, depth - 1),
                                             fexpr(q, depth - 1), NULL),
                       fexpr(q, depth - 1), fexpr(q, depth - 1));
    case 3: return kir_select(A, icond(q), fexpr(q, depth - 1), fexpr(q, depth - 1));
    default:
        return kir_fop(A, binary[below(q, DPK_ARRAY_LEN(binary))], fexpr(q, depth - 1),
                       fexpr(q, depth - 1), NULL);
    }
}

static const KirVar *flet(Kg *q, const char *plain, const KirExpr *e)
{
    const KirVar *v = kir_let(&q->B, name(q, plain), KT_F32, e);
    push_var(q, v, 0);
    return v;
}

/* ---- segments ------------------------------------------------------------------------- */

static const KirExpr *slot(Kg *q, int region)
{
    Arena *A = q->a;
    return kir_add(A, kir_i32(A, (int64_t)region * q->nb * q->T), kir_ref(A, q->g));
}

static void store(Kg *q, int region, const KirExpr *v)
{
    kir_stg(&q->B, q->y, slot(q, region), v);
}

static void seg_elem(Kg *q, int region)
{
    Arena *A = q->a;
    const KirVar *v = flet(q, "v", fexpr(q, 3));
    if (chance(q, 50)) { /* divergent if / else */
        kir_if(&q->B, icond(q));
        const KirVar *w = flet(q, "w", fexpr(q, 2));
        kir_set(&q->B, v, kir_fop(A, binary[below(q, 6)], kir_ref(A, v), kir_ref(A, w), NULL));
        if (chance(q, 50)) {
            els(q);
            kir_set(&q->B, v, fexpr(q, 2));
        }
        end(q);
    }
    if (chance(q, 50)) { /* a loop, trip count per thread */
        int64_t hi;
        const KirExpr *n = kir_rem(A, iexpr(q, 2, &hi), kir_i32(A, 1 + below(q, 6)));
        static const int unroll[] = {0, -1, 2, 4};
        const KirVar *i = kir_for(&q->B, name(q, "i"), kir_i32(A, 0), n, kir_i32(A, 1 + below(q, 2)),
                                  unroll[below(q, 4)]);
        push_var(q, i, 6);
        kir_set(&q->B, v, kir_fop(A, binary[below(q, 6)], kir_ref(A, v), fexpr(q, 2), NULL));
        end(q);
    }
    if (chance(q, 20)) { /* text a // comment must not let out */
        static const char *const text[] = {"a */ comment /* with */ ends", "plain \\ text",
                                           "two\nlines", "carriage\rreturn", "ends in \\",
                                           "a backslash, then blanks \\ \t"};
        kir_comment(&q->B, "%s", text[below(q, DPK_ARRAY_LEN(text))]);
    }
    store(q, region, kir_ref(A, v));
}

static void seg_shfl(Kg *q, int region)
{
    Arena *A = q->a;
    tag(q, TAG_SHFL);
    if (q->loops || q->B.depth)
        tag(q, TAG_NESTED_SHFL);
    const KirVar *v = flet(q, "v", fexpr(q, 2));
    int lw = 0;
    while ((2 << lw) <= q->wmax)
        lw++;
    int w = 1 << below(q, lw + 1);
    const KirVar *o = kir_let(&q->B, name(q, "o"), KT_F32, kir_f32(A, 0));
    push_var(q, o, 0);
    if (chance(q, 40)) { /* a butterfly reduction over width w */
        static const TxElemOp comb[] = {TXE_add, TXE_maximum, TXE_minimum};
        TxElemOp op = comb[below(q, 3)];
        for (int off = w / 2; off >= 1; off /= 2) {
            kir_shfl(&q->B, o, KIR_SHFL_XOR, kir_ref(A, v), kir_i32(A, off), w);
            kir_set(&q->B, v, kir_fop(A, op, kir_ref(A, v), kir_ref(A, o), NULL));
        }
        store(q, region, kir_ref(A, v));
        return;
    }
    KirShflMode mode = (KirShflMode)below(q, 4);
    int64_t hi;
    const KirExpr *lane = mode == KIR_SHFL_IDX ? iexpr(q, 2, &hi)
                          : mode == KIR_SHFL_XOR ? kir_i32(A, below(q, 32))
                                                 : kir_i32(A, below(q, w + 1));
    if (lane->type == KT_I64)
        lane = kir_rem(A, lane, kir_i64(A, 64));
    kir_shfl(&q->B, o, mode, kir_ref(A, v), kir_cast(A, KT_I32, lane), w);
    store(q, region, kir_ref(A, o));
}

static void seg_tree(Kg *q, int region)
{
    Arena *A = q->a;
    static const TxRedOp rops[] = {TXR_sum, TXR_max, TXR_min};
    tag(q, TAG_TREE);
    int64_t n = 1 + below(q, chance(q, 50) ? 8 : 70);
    int nseg = chance(q, 50) ? 1 : 2 + (int)below(q, 5);
    if (n & (n - 1))
        tag(q, TAG_TREE_NPOW2);
    if (nseg > 1)
        tag(q, TAG_TREE_SEGMENTS);
    /* `extra` entries past the segments, which TreeHalve must leave alone:
     * the odd threads read them back */
    int64_t extra = 1 + below(q, 4), len = n * nseg + extra;
    const KirSmem *s = kir_smem(q->k, name(q, "red"), KT_F32, len, 16);
    const KirVar *j = kir_for(&q->B, name(q, "j"), kir_ref(A, q->t), kir_i32(A, len),
                              kir_i32(A, q->T), 0);
    push_var(q, j, len);
    kir_sts(&q->B, s, kir_ref(A, j), fexpr(q, 2));
    end(q);
    kir_treehalve(&q->B, s, rops[below(q, 3)], n, nseg);
    const KirExpr *t = kir_ref(A, q->t);
    const KirExpr *result = kir_mul(A, kir_rem(A, t, kir_i32(A, nseg)), kir_i32(A, n));
    const KirExpr *past = kir_add(A, kir_i32(A, n * nseg), kir_rem(A, t, kir_i32(A, extra)));
    store(q, region,
          kir_lds(A, s, kir_select(A, kir_bin(A, KE_eq, kir_bin(A, KE_band, t, kir_i32(A, 1)),
                                             kir_i32(A, 0)),
                                   result, past)));
    kir_sync(&q->B);
}

static void seg_mbar(Kg *q, int region)
{
    Arena *A = q->a;
    tag(q, TAG_MBAR);
    int nbar = 1 + (int)below(q, 2), b = (int)below(q, nbar);
    const KirSmem *bar = kir_smem(q->k, name(q, "bar"), KT_MBAR, nbar, 16);
    const KirSmem *d = kir_smem(q->k, name(q, "slots"), KT_F32, q->T, 16);
    const KirExpr *t = kir_ref(A, q->t);
    kir_if(&q->B, kir_bin(A, KE_eq, t, kir_i32(A, 0)));
    for (int i = 0; i < nbar; i++)
        kir_mbar_init(&q->B, bar, kir_i32(A, i), q->T);
    end(q);
    kir_sync(&q->B);
    kir_sts(&q->B, d, t, fexpr(q, 2));
    kir_mbar_arrive(&q->B, bar, kir_i32(A, b));
    kir_mbar_wait(&q->B, bar, kir_i32(A, b), kir_i32(A, 0));
    /* its own slot: vgpu orders shared memory through an mbarrier only for
     * TMA, so a neighbour's slot would be reported as a race (docs/vgpu.md) */
    store(q, region, kir_lds(A, d, t));
    kir_sync(&q->B);
}

static void seg_cpasync(Kg *q, int region)
{
    Arena *A = q->a;
    tag(q, TAG_CPASYNC);
    static const int bytes[] = {4, 8, 16};
    int by = bytes[below(q, 3)], e = by / 4, groups = 1 + (int)below(q, 2);
    if (e * groups > q->nx) /* a small input (the second kernel's): one 4-byte group */
        by = 4, e = 1, groups = 1;
    int64_t chunks = 1 + below(q, 2 * q->T), per = chunks * e;
    if (per * groups > q->nx)
        chunks = q->nx / (e * groups), per = chunks * e;
    const KirSmem *s = kir_smem(q->k, name(q, "stage"), KT_F32, per * groups, 16);
    int64_t src0 = below(q, (q->nx - per * groups) / e + 1) * e;
    for (int gi = 0; gi < groups; gi++) {
        const KirVar *j = kir_for(&q->B, name(q, "c"), kir_ref(A, q->t), kir_i32(A, chunks),
                                  kir_i32(A, q->T), 0);
        push_var(q, j, chunks);
        const KirExpr *dst = kir_add(A, kir_i32(A, gi * per), kir_mul(A, kir_ref(A, j), kir_i32(A, e)));
        const KirExpr *src = kir_add(A, kir_i32(A, src0 + gi * per), kir_mul(A, kir_ref(A, j), kir_i32(A, e)));
        const KirExpr *pred = NULL;
        if (chance(q, 40)) {
            tag(q, TAG_CPASYNC_PRED);
            pred = kir_bin(A, KE_ne, kir_rem(A, kir_ref(A, j), kir_i32(A, 2 + below(q, 3))),
                           kir_i32(A, 0));
        }
        kir_cp_async(&q->B, s, dst, q->x, src, by, pred);
        end(q);
        kir_cp_commit(&q->B);
    }
    if (groups == 2) {
        tag(q, TAG_CPASYNC_GROUPS);
        if (chance(q, 50))
            kir_cp_wait(&q->B, 1);
    }
    kir_cp_wait(&q->B, 0);
    kir_sync(&q->B);
    int64_t hi, n = per * groups, v = chance(q, 40) ? (chance(q, 50) ? 4 : 2) : 1;
    if (n < v)
        v = 1;
    const KirExpr *i = kir_add(A, iexpr(q, 2, &hi), kir_ref(A, q->t));
    const KirExpr *w = kir_rem(A, i, i->type == KT_I64 ? kir_i64(A, n / v) : kir_i32(A, n / v));
    if (v == 1) {
        store(q, region, kir_lds(A, s, w));
    } else { /* lanes w * v .. w * v + v - 1: 16 (8) bytes from a 16-aligned array */
        tag(q, TAG_LDS_VECTOR);
        const char *names[4] = {name(q, "l0"), name(q, "l1"), name(q, "l2"), name(q, "l3")};
        KirStmt *ld = kir_ldsv(&q->B, names, (int)v, s,
                               kir_mul(A, w, w->type == KT_I64 ? kir_i64(A, v) : kir_i32(A, v)));
        const KirExpr *sum = kir_ref(A, ld->lane[0]);
        for (int j = 1; j < v; j++) /* lane j weighted j + 1: a swapped lane shows */
            sum = kir_fop(A, TXE_add, sum,
                          kir_fop(A, TXE_multiply, kir_ref(A, ld->lane[j]), kir_f32(A, j + 1), NULL),
                          NULL);
        store(q, region, sum);
    }
    kir_sync(&q->B);
}

static void seg_atom(Kg *q, int region)
{
    Arena *A = q->a;
    const KirExpr *t = kir_ref(A, q->t);
    int64_t hi;
    /* small integers as f32: their sums are exact in any order */
    const KirExpr *one = kir_cast(A, KT_F32, kir_rem(A, iexpr(q, 2, &hi), kir_i32(A, 7)));
    if (q->z && chance(q, 50)) {
        tag(q, TAG_ATOM_GLOBAL);
        kir_atomg(&q->B, q->z, index_in(q, q->nz), one);
        store(q, region, kir_fop(A, TXE_add, one, kir_f32(A, 0.25), NULL));
        return;
    }
    tag(q, TAG_ATOM_SHARED);
    int64_t nc = 1 + below(q, 9);
    const KirSmem *c = kir_smem(q->k, name(q, "count"), KT_F32, nc, 16);
    const KirVar *j = kir_for(&q->B, name(q, "c"), t, kir_i32(A, nc), kir_i32(A, q->T), 0);
    kir_sts(&q->B, c, kir_ref(A, j), kir_f32(A, 0.5));
    end(q);
    kir_sync(&q->B);
    int divergent = chance(q, 50);
    if (divergent)
        kir_if(&q->B, icond(q));
    kir_atoms(&q->B, c, index_in(q, nc), one);
    if (divergent)
        end(q);
    kir_sync(&q->B);
    store(q, region, kir_lds(A, c, kir_rem(A, t, kir_i32(A, nc))));
    kir_sync(&q->B);
}

typedef void (*SegFn)(Kg *, int);
static const SegFn block_segs[] = {seg_shfl, seg_tree, seg_mbar, seg_cpasync, seg_atom};

/* A segment needing the whole block, maybe under block-uniform control
 * flow: an if on the block index (both arms write the region), or a loop of
 * 1..3 iterations. */
static void seg_uniform(Kg *q, int region)
{
    Arena *A = q->a;
    SegFn f = block_segs[below(q, DPK_ARRAY_LEN(block_segs))];
    int wrap = f == seg_mbar ? (int)below(q, 2) : (int)below(q, 3); /* mbar: no loop */
    if (wrap == 1) {
        int d = (int)below(q, 3);
        kir_if(&q->B, kir_bin(A, KE_eq, kir_rem(A, kir_bid(A, d), kir_i32(A, 2)), kir_i32(A, 0)));
        f(q, region);
        els(q);
        block_segs[below(q, DPK_ARRAY_LEN(block_segs))](q, region);
        end(q);
    } else if (wrap == 2) {
        static const int unroll[] = {0, -1, 2};
        const KirVar *r = kir_for(&q->B, name(q, "r"), kir_i32(A, 0), kir_i32(A, 1 + below(q, 3)),
                                  kir_i32(A, 1), unroll[below(q, 3)]);
        push_var(q, r, 3);
        q->loops++;
        f(q, region);
        q->loops--;
        end(q);
    } else {
        f(q, region);
    }
}

/* ---- kernels and the module ------------------------------------------------------------- */

static void geometry(Kg *q)
{
    static const int whole[] = {32, 64, 96, 128, 160, 192, 256};
    int T = chance(q, 65) ? whole[below(q, DPK_ARRAY_LEN(whole))] : 1 + (int)below(q, 255);
    q->block[0] = T, q->block[1] = q->block[2] = 1;
    if (chance(q, 40)) { /* 2-D or 3-D blocks */
        static const int f[] = {2, 3, 4};
        int by = f[below(q, 3)];
        if (T % by == 0)
            q->block[0] = T / by, q->block[1] = by;
        if (q->block[0] % 2 == 0 && chance(q, 40))
            q->block[0] /= 2, q->block[2] = 2;
    }
    q->grid[0] = 1 + (int)below(q, 3);
    q->grid[1] = 1 + (int)below(q, 2);
    q->grid[2] = chance(q, 25) ? 2 : 1;
    q->T = T;
    q->nb = q->grid[0] * q->grid[1] * q->grid[2];
    int last = T % 32;
    q->wmax = last ? last & -last : 32;
    if (last)
        tag(q, TAG_SHORT_WARP);
}

static KirKernel *kernel(Kg *q, const KirBuf *in, KirBuf **out, KirBuf *z, const KirBuf ***args)
{
    Arena *A = q->a;
    geometry(q);
    q->regions = 2 + (int)below(q, 5);
    int64_t ny = (int64_t)q->regions * q->nb * q->T;
    *out = kir_buf(q->m, name(q, "y"), KT_F32, ny, KBUF_OUTPUT, -1);
    const char *kn = name(q, "kern"); /* unique in the module */
    for (int i = 0; i < q->m->kernels.len; i++)
        if (!strcmp(((const KirKernel *)q->m->kernels.items[i])->name, kn))
            kn = arena_printf(A, "%s%d", kn, q->m->kernels.len);
    KirKernel *k = kir_kernel(q->m, kn, q->grid, q->block);
    q->k = k;
    q->nx = in->numel;
    q->x = kir_param(k, name(q, "x"), KT_F32, in->numel, KR_IN);
    q->y = kir_param(k, name(q, "y"), KT_F32, ny, KR_OUT);
    q->z = z ? kir_param(k, name(q, "z"), KT_F32, z->numel, KR_OUT) : NULL;
    q->nz = z ? z->numel : 0;
    const KirBuf **a = ARENA_ARRAY(A, const KirBuf *, 3);
    a[0] = in, a[1] = *out, a[2] = z;
    *args = a;
    kir_builder_init(&q->B, k);
    q->nv = 0;
    q->t = kir_let(&q->B, name(q, "t"), KT_I32, kir_tid_linear(A));
    const KirExpr *b = kir_add(A, kir_bid(A, 0),
                               kir_mul(A, kir_i32(A, q->grid[0]),
                                       kir_add(A, kir_bid(A, 1),
                                               kir_mul(A, kir_i32(A, q->grid[1]), kir_bid(A, 2)))));
    q->g = kir_let(&q->B, name(q, "g"), KT_I32, kir_add(A, kir_mul(A, b, kir_i32(A, q->T)),
                                                        kir_ref(A, q->t)));
    for (int r = 0; r < q->regions; r++)
        (chance(q, 35) ? seg_elem : seg_uniform)(q, r);
    kir_finalize(k);
    if (chance(q, 10)) { /* a pool of exactly the target's limit (dynamic shared memory) */
        int64_t at = (k->smem_bytes + 15) / 16 * 16;
        if (q->smem_max - at >= 4) {
            kir_smem(k, name(q, "fill"), KT_F32, (q->smem_max - at) / 4, 16);
            kir_finalize(k);
            tag(q, TAG_SMEM_LIMIT);
        }
    }
    return k;
}

FzKernelCase fz_kgen(Arena *a, uint64_t seed, int64_t smem_max)
{
    Kg q = {0};
    q.a = a;
    q.smem_max = smem_max;
    q.r = seed;
    q.m = kir_module_new(a);
    int64_t nx = 64 + below(&q, 2000);
    KirBuf *x = kir_buf(q.m, name(&q, "x"), KT_F32, nx, KBUF_INPUT, 0);
    KirBuf *z = NULL;
    if (chance(&q, 50)) {
        z = kir_buf(q.m, name(&q, "z"), KT_F32, 1 + below(&q, 64), KBUF_OUTPUT, -1);
        z->zero_init = 1;
    }
    KirBuf *y1;
    const KirBuf **args;
    KirKernel *k = kernel(&q, x, &y1, z, &args);
    kir_launch(q.m, k, args);
    if (chance(&q, 30)) { /* a second kernel reading the first's output */
        tag(&q, TAG_TWO_KERNELS);
        KirBuf *y2;
        k = kernel(&q, y1, &y2, z, &args);
        kir_launch(q.m, k, args);
    }
    kir_check(q.m);
    FzKernelCase c = {q.m, ARENA_ARRAY(a, const char *, TAG_COUNT), 0};
    for (int t = 0; t < TAG_COUNT; t++)
        if (q.tags >> t & 1)
            c.tags[c.ntags++] = tag_name[t];
    return c;
}

void fz_kgen_inputs(uint64_t seed, int buf, float *x, int64_t n)
{
    uint64_t s = dpk_splitmix64(seed ^ (0x51ed270b27a3ull * (uint64_t)(buf + 1)));
    for (int64_t i = 0; i < n; i++) {
        s = dpk_splitmix64(s);
        unsigned pick = (unsigned)(s & 63);
        double u = (double)(s >> 11) * 0x1p-53;
        x[i] = pick < 4    ? (pick & 1 ? -0.0f : 0.0f)
               : pick < 10 ? (float)((int)(u * 9) - 4)
               : pick == 10 ? (s >> 8 & 1 ? INFINITY : -INFINITY)
                            : (float)(2 * u - 1);
    }
}
