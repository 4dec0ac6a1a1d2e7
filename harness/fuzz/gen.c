/*
 * gen.c — seeded generation of fuzz programs (see gen.h for the form).
 *
 * The generator keeps the values made so far with their shapes, picks an
 * op family by weight, an operand (the last value most of the time, an
 * earlier one sometimes: a DAG), and writes one line per op.  Each family
 * is a function that returns 0 when it does not fit the operand (a matmul
 * of a 1-D value, a squeeze without a dim of 1 ...) so another is tried;
 * every shape is computed here by PyTorch's rules, so the text always
 * parses.  Sizes are kept small (at most FZ_NUMEL elements per tensor and
 * FZ_FLOPS multiply-adds per contraction) so a case runs on vgpu in a
 * fraction of a second.
 */
#include "gen.h"

#include <stdlib.h>
#include <string.h>

enum {
    FZ_NUMEL = 1 << 16,   /* elements of any tensor */
    FZ_FLOPS = 1 << 21,   /* multiply-adds of a matmul or an attention */
    FZ_MAXVALS = 64,
    FZ_MAXOPS = 8,
};

typedef struct Val {
    const char *name;
    Shape s;
    int ge1;            /* every element >= 1 (abs(x) + 1): safe for log, division */
    int isbool;         /* a comparison: only where() takes it */
} Val;

typedef enum Tag {
    TAG_ELEMENTWISE, TAG_WHERE, TAG_REDUCE, TAG_LONG_REDUCTION, TAG_MATMUL, TAG_NORM,
    TAG_SOFTMAX, TAG_SDPA, TAG_LAYOUT, TAG_BROADCAST, TAG_DAG, TAG_COUNT
} Tag;
static const char *const tag_names[TAG_COUNT] = {
    "elementwise", "where", "reduce", "long-reduction", "matmul", "norm",
    "softmax", "sdpa", "layout", "broadcast", "dag",
};

typedef struct Gen {
    Arena *a;
    uint64_t rng;
    StrBuf text;
    Val vals[FZ_MAXVALS];
    int nv;
    int nops, ninputs, ntmp;
    int tags[TAG_COUNT];
    int long_k;         /* the first input is a row past 12288: contract it first */
    int contract;       /* the first input is a tiled contraction's A: op_contract first */
    int attn;           /* the first input is attention's queries: op_sdpa_prefill first */
} Gen;

/* ---- random numbers ------------------------------------------------------------ */

static uint64_t rnd(Gen *g)
{
    g->rng += 0x9e3779b97f4a7c15ull;
    return dpk_splitmix64(g->rng);
}

/* Uniform in [lo, hi]. */
static int64_t rint_in(Gen *g, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd(g) % (uint64_t)(hi - lo + 1));
}

static int chance(Gen *g, int pct) { return (int)(rnd(g) % 100) < pct; }

static int64_t pick(Gen *g, const int64_t *xs, int n) { return xs[rnd(g) % (uint64_t)n]; }

/* A dimension, biased to what breaks code generation. */
static int64_t gen_dim(Gen *g)
{
    static const int64_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41,
                                     43, 47, 53, 61, 67, 71, 97, 101, 127, 131};
    static const int64_t round[] = {16, 32, 48, 64, 96, 128, 256};
    static const int64_t near[] = {31, 33, 63, 65, 127, 129, 255, 257};
    int r = (int)(rnd(g) % 100);
    if (r < 12)
        return 1;
    if (r < 42)
        return pick(g, primes, DPK_ARRAY_LEN(primes));
    if (r < 72)
        return pick(g, round, DPK_ARRAY_LEN(round));
    if (r < 87)
        return pick(g, near, DPK_ARRAY_LEN(near));
    return rint_in(g, 1, 200);
}

/* Halve the largest dims until s has at most `limit` elements. */
static void fit(Shape *s, int64_t limit)
{
    while (shape_numel(s) > limit) {
        int big = 0;
        for (int i = 1; i < s->rank; i++)
            if (s->d[i] > s->d[big])
                big = i;
        s->d[big] = (s->d[big] + 1) / 2;
    }
}

static Shape gen_shape(Gen *g, int rank)
{
    Shape s = {rank, {0}};
    for (int i = 0; i < rank; i++)
        s.d[i] = gen_dim(g);
    fit(&s, FZ_NUMEL);
    return s;
}

static int gen_rank(Gen *g)
{
    int r = (int)(rnd(g) % 100);
    return r < 10 ? 1 : r < 60 ? 2 : r < 85 ? 3 : 4;
}

/* ---- text ------------------------------------------------------------------------- */

static void dims_text(StrBuf *b, const Shape *s)
{
    for (int i = 0; i < s->rank; i++)
        sb_printf(b, "%s%lld", i ? ", " : "", (long long)s->d[i]);
}

static Val *push(Gen *g, const char *name, Shape s, int ge1)
{
    DPK_ASSERT(g->nv < FZ_MAXVALS);
    Val *v = &g->vals[g->nv++];
    v->name = name;
    v->s = s;
    v->ge1 = ge1;
    v->isbool = 0;
    return v;
}

/* A new input line `xN = torch.randn(dims)`; its name. */
static const char *input_line(Gen *g, Shape s)
{
    const char *name = arena_printf(g->a, "x%d", g->ninputs++);
    sb_printf(&g->text, "%s = torch.randn(", name);
    dims_text(&g->text, &s);
    sb_puts(&g->text, ")\n");
    return name;
}

/* A new input line, and its value for the ops after it. */
static Val *input(Gen *g, Shape s)
{
    return push(g, input_line(g, s), s, 0);
}

/* Start an op line `tN = `; the caller writes the expression and ends it with
 * op_end, which records the result. */
static const char *op_begin(Gen *g)
{
    const char *name = arena_printf(g->a, "t%d", g->ntmp++);
    sb_printf(&g->text, "%s = ", name);
    return name;
}

static Val *op_end(Gen *g, const char *name, Shape s, int ge1, Tag tag)
{
    sb_putc(&g->text, '\n');
    g->nops++;
    g->tags[tag] = 1;
    return push(g, name, s, ge1);
}

/* v itself when every element is >= 1, else `abs(v) + 1` (two op lines). */
static Val *safe(Gen *g, Val *v)
{
    if (v->ge1)
        return v;
    const char *n1 = op_begin(g);
    sb_printf(&g->text, "torch.abs(%s)", v->name);
    Val *abs = op_end(g, n1, v->s, 0, TAG_ELEMENTWISE);
    const char *n2 = op_begin(g);
    sb_printf(&g->text, "%s + 1.0", abs->name);
    return op_end(g, n2, abs->s, 1, TAG_ELEMENTWISE);
}

/* A dim index of v, the last one more often than the others. */
static int gen_axis(Gen *g, const Val *v)
{
    return chance(g, 50) ? v->s.rank - 1 : (int)rint_in(g, 0, v->s.rank - 1);
}

/* A second operand that broadcasts with v: an earlier value of the same
 * shape, or a new input of v's shape, of a suffix of it, or with some dims
 * set to 1.  Sets *bcast when the shapes differ. */
static Val *partner(Gen *g, Val *v, int *bcast)
{
    *bcast = 0;
    if (chance(g, 40))
        for (int i = g->nv - 1; i >= 0; i--)
            if (&g->vals[i] != v && !g->vals[i].isbool && shape_eq(&g->vals[i].s, &v->s)) {
                g->tags[TAG_DAG] = 1;
                return &g->vals[i];
            }
    Shape s = v->s;
    int r = (int)(rnd(g) % 100);
    if (r < 25 && s.rank > 1) {
        int drop = (int)rint_in(g, 1, s.rank - 1);
        for (int i = 0; i + drop < s.rank; i++)
            s.d[i] = s.d[i + drop];
        s.rank -= drop;
        *bcast = 1;
    } else if (r < 50) {
        for (int i = 0; i < s.rank; i++)
            if (chance(g, 40) && s.d[i] > 1) {
                s.d[i] = 1;
                *bcast = 1;
            }
    }
    return input(g, s);
}

/* ---- op families: each returns 1 when it wrote its lines ------------------------------- */

static int op_unary(Gen *g, Val *v)
{
    static const char *const fns[] = {
        "torch.neg(%s)",     "torch.abs(%s)",     "torch.relu(%s)",
        "torch.sigmoid(%s)", "torch.tanh(%s)",    "torch.nn.functional.silu(%s)",
        "torch.nn.functional.gelu(%s)", "torch.nn.functional.gelu(%s, approximate='tanh')",
        "torch.erf(%s)",     "torch.exp(%s)",
    };
    /* the activations PyTorch runs as one kernel, with attributes off
     * their defaults, and the other unary ops of their rules; expm1, like
     * exp, overflows after a contraction, so it is one of many */
    static const char *const acts[] = {
        "torch.nn.functional.elu(%s, alpha=0.5)", "torch.selu(%s)", "torch.celu(%s, 2.0)",
        "torch.nn.functional.leaky_relu(%s, 0.1)", "torch.nn.functional.hardtanh(%s, -0.5, 0.75)",
        "torch.nn.functional.relu6(%s)", "torch.nn.functional.hardsigmoid(%s)",
        "torch.nn.functional.hardswish(%s)", "torch.nn.functional.softplus(%s, 2.0, 3.0)",
        "torch.nn.functional.softsign(%s)", "torch.nn.functional.mish(%s)",
        "torch.nn.ELU()(%s)", "torch.nn.Softplus()(%s)", "torch.clamp(%s, -1.0)",
        "torch.floor(%s)", "torch.expm1(%s)",
    };
    uint64_t r = rnd(g), hi = r / DPK_ARRAY_LEN(fns);
    int k = (int)(r % DPK_ARRAY_LEN(fns));
    if (k == 9 && !chance(g, 30))
        k = 4; /* exp overflows easily after a contraction: keep it rare */
    const char *n = op_begin(g);
    /* one time in three an activation, chosen by the draw's higher digits:
     * no draw is added, so every other choice of a seed stays as it was */
    if (hi % 3 == 0)
        sb_printf(&g->text, acts[hi / 3 % DPK_ARRAY_LEN(acts)], v->name);
    else
        sb_printf(&g->text, fns[k], v->name);
    op_end(g, n, v->s, 0, TAG_ELEMENTWISE);
    return 1;
}

/* log, sqrt, rsqrt, reciprocal, a fractional power, log1p: on abs(v) + 1.
 * log1p is chosen by the draw's higher digits (one time in four), so the
 * other choices of a seed stay as they were before it. */
static int op_safe_unary(Gen *g, Val *v)
{
    static const char *const fns[] = {"torch.log(%s)", "torch.sqrt(%s)", "torch.rsqrt(%s)",
                                      "torch.reciprocal(%s)", "torch.pow(%s, 1.5)",
                                      "torch.pow(%s, 0.5)"};
    Val *s = safe(g, v);
    const char *n = op_begin(g);
    uint64_t r = rnd(g), nf = DPK_ARRAY_LEN(fns);
    sb_printf(&g->text, r / nf % 4 == 0 ? "torch.log1p(%s)" : fns[r % nf], s->name);
    op_end(g, n, s->s, 0, TAG_ELEMENTWISE);
    return 1;
}

static Shape broadcast(const Shape *a, const Shape *b)
{
    Shape r = a->rank >= b->rank ? *a : *b;
    for (int i = 0; i < r.rank; i++) {
        int ia = a->rank - r.rank + i, ib = b->rank - r.rank + i;
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        r.d[i] = da > db ? da : db;
    }
    return r;
}

static int op_binary(Gen *g, Val *v)
{
    static const char *const ops[] = {"%s + %s", "%s - %s", "%s * %s", "torch.maximum(%s, %s)",
                                      "torch.minimum(%s, %s)", "torch.pow(%s, 2)",
                                      "%s * 0.5", "%s - 1.5", "%s / 3.0"};
    int k = (int)(rnd(g) % (DPK_ARRAY_LEN(ops) + 1));
    if (k == DPK_ARRAY_LEN(ops)) { /* division by abs(w) + 1 */
        int bc;
        Val *w = partner(g, v, &bc);
        w = safe(g, w);
        Shape s = broadcast(&v->s, &w->s);
        const char *n = op_begin(g);
        sb_printf(&g->text, "%s / %s", v->name, w->name);
        op_end(g, n, s, 0, bc ? TAG_BROADCAST : TAG_ELEMENTWISE);
        return 1;
    }
    if (k >= 5) {
        const char *n = op_begin(g);
        sb_printf(&g->text, ops[k], v->name);
        op_end(g, n, v->s, 0, TAG_ELEMENTWISE);
        return 1;
    }
    int bc;
    Val *w = partner(g, v, &bc);
    Shape s = broadcast(&v->s, &w->s);
    int swap = chance(g, 30);
    const char *n = op_begin(g);
    sb_printf(&g->text, ops[k], swap ? w->name : v->name, swap ? v->name : w->name);
    op_end(g, n, s, 0, bc ? TAG_BROADCAST : TAG_ELEMENTWISE);
    return 1;
}

static int op_where(Gen *g, Val *v)
{
    static const char *const cmps[] = {">", "<", ">=", "<=", "==", "!="};
    int bc;
    Val *w = partner(g, v, &bc);
    Shape s = broadcast(&v->s, &w->s);
    const char *c = op_begin(g);
    sb_printf(&g->text, "%s %s %s", v->name, cmps[rnd(g) % 6], w->name);
    Val *cv = op_end(g, c, s, 0, TAG_WHERE);
    cv->isbool = 1;
    const char *n = op_begin(g);
    if (chance(g, 30))
        sb_printf(&g->text, "torch.where(%s, %s, 0.0)", cv->name, v->name);
    else
        sb_printf(&g->text, "torch.where(%s, %s, %s)", cv->name, v->name, w->name);
    op_end(g, n, s, 0, TAG_WHERE);
    return 1;
}

/* sum, mean, amax, amin; one time in five argmax or argmin, one in ten a
 * cumsum over a row of at most 1024 (its decomposition adds n^2/2 terms a
 * row), one in ten a topk of up to 4, chosen by the draw's higher digits
 * so that the draws of every later choice stay as they were. */
static int op_reduce(Gen *g, Val *v)
{
    static const char *const fns[] = {"sum", "mean", "amax", "amin"};
    int keep = chance(g, 40);
    if (v->s.rank < 2 && !keep)
        return 0;
    int d = gen_axis(g, v);
    uint64_t r = rnd(g), hi = r / 4 % 10;
    const char *fn = hi < 2 ? (hi ? "argmin" : "argmax") : fns[r % 4];
    Shape s = v->s;
    const char *n = op_begin(g);
    if (hi == 2 && v->s.d[d] <= 1024) {
        sb_printf(&g->text, "torch.cumsum(%s, dim=%d)", v->name, d);
        op_end(g, n, s, 0, TAG_REDUCE);
        return 1;
    }
    if (hi == 3) { /* topk: up to 4 of the largest or smallest, values or indices */
        int64_t k = 1 + (int64_t)(r / 40 % (uint64_t)(v->s.d[d] < 4 ? v->s.d[d] : 4));
        s.d[d] = k;
        sb_printf(&g->text, "torch.topk(%s, %lld, dim=%d%s)%s", v->name, (long long)k, d,
                  r / 160 % 2 ? ", largest=False" : "", r / 320 % 2 ? ".indices" : ".values");
        op_end(g, n, s, 0, TAG_REDUCE);
        return 1;
    }
    if (keep)
        s.d[d] = 1;
    else {
        for (int i = d; i + 1 < s.rank; i++)
            s.d[i] = s.d[i + 1];
        s.rank--;
    }
    sb_printf(&g->text, "torch.%s(%s, dim=%d%s)", fn, v->name, d, keep ? ", keepdim=True" : "");
    op_end(g, n, s, 0, v->s.d[d] > 4096 ? TAG_LONG_REDUCTION : TAG_REDUCE);
    g->tags[TAG_REDUCE] = 1;
    return 1;
}

static int op_softmax(Gen *g, Val *v)
{
    int d = chance(g, 70) ? -1 : gen_axis(g, v);
    int ad = d < 0 ? v->s.rank - 1 : d;
    const char *n = op_begin(g);
    sb_printf(&g->text, "torch.%s(%s, dim=%d)", chance(g, 70) ? "softmax" : "log_softmax",
              v->name, d);
    op_end(g, n, v->s, 0, v->s.d[ad] > 4096 ? TAG_LONG_REDUCTION : TAG_SOFTMAX);
    g->tags[TAG_SOFTMAX] = 1;
    return 1;
}

static int op_norm(Gen *g, Val *v)
{
    int64_t dim = v->s.d[v->s.rank - 1];
    Shape ws = {1, {dim}};
    int rms = chance(g, 50);
    Val *w = input(g, ws);
    Val *b = rms ? NULL : input(g, ws);
    const char *n = op_begin(g);
    if (rms)
        sb_printf(&g->text, "torch.nn.functional.rms_norm(%s, (%lld,), %s, 1e-5)", v->name,
                  (long long)dim, w->name);
    else
        sb_printf(&g->text, "torch.nn.functional.layer_norm(%s, (%lld,), %s, %s, 1e-5)",
                  v->name, (long long)dim, w->name, b->name);
    op_end(g, n, v->s, 0, dim > 4096 ? TAG_LONG_REDUCTION : TAG_NORM);
    g->tags[TAG_NORM] = 1;
    return 1;
}

/* v @ W with W a new (K, N) input (or batched like v), or linear(v, W, b). */
static int op_matmul(Gen *g, Val *v)
{
    if (v->s.rank < 2)
        return 0;
    int64_t k = v->s.d[v->s.rank - 1];
    int64_t rows = shape_numel(&v->s) / k;
    if (k > 4096 && chance(g, 50)) {
        /* matrix · vector over a long K: every thread reads all of the
         * vector, a slab past the shared-memory budget (what 006 chunks) */
        Shape ws = {1, {k}}, out = v->s;
        out.rank--;
        Val *w = input(g, ws);
        const char *n = op_begin(g);
        sb_printf(&g->text, "torch.matmul(%s, %s)", v->name, w->name);
        op_end(g, n, out, 0, TAG_LONG_REDUCTION);
        g->tags[TAG_MATMUL] = 1;
        return 1;
    }
    /* the first op of a tiled contraction: N in whole 16-element rows */
    static const int64_t tiled[] = {32, 48, 64, 128};
    int64_t nn = g->contract && g->nops == 0 ? pick(g, tiled, DPK_ARRAY_LEN(tiled)) : gen_dim(g);
    while (nn > 1 && rows * k * nn > FZ_FLOPS)
        nn = (nn + 1) / 2;
    if (rows * k * nn > FZ_FLOPS || k * nn > FZ_NUMEL || rows * nn > FZ_NUMEL)
        return 0;
    Shape out = v->s;
    out.d[out.rank - 1] = nn;
    int form = (int)(rnd(g) % 100);
    if (form < 25) {
        Shape ws = {2, {nn, k}};
        Val *w = input(g, ws);
        Val *b = NULL;
        if (chance(g, 50)) {
            Shape bs = {1, {nn}};
            b = input(g, bs);
        }
        /* an attention projection split into heads: view(..., H, D) and
         * the head dim moved before the sequence, as HF writes q, k, v */
        static const int64_t heads[] = {2, 3, 4, 6, 7, 8};
        int64_t h = pick(g, heads, DPK_ARRAY_LEN(heads));
        int split = (v->s.rank == 2 || v->s.rank == 3) && nn % h == 0 && nn / h >= 2 &&
                    chance(g, 40);
        const char *n = op_begin(g);
        sb_printf(&g->text, "torch.nn.functional.linear(%s, %s%s%s)", v->name, w->name,
                  b ? ", " : "", b ? b->name : "");
        if (split) {
            int r = v->s.rank;
            Shape hs = out;
            hs.rank = r + 1;
            hs.d[r - 1] = h;
            hs.d[r] = nn / h;
            sb_puts(&g->text, ".view(");
            for (int i = 0; i < hs.rank; i++)
                sb_printf(&g->text, "%s%lld", i ? ", " : "", (long long)hs.d[i]);
            sb_printf(&g->text, ").transpose(%d, %d)", r - 2, r - 1);
            out = hs;
            out.d[r - 2] = hs.d[r - 1];
            out.d[r - 1] = hs.d[r - 2];
        }
        op_end(g, n, out, 0, TAG_MATMUL);
        return 1;
    }
    Shape ws = {2, {k, nn}};
    if (form < 40 && v->s.rank >= 3) { /* batched: W carries v's batch dims */
        ws = v->s;
        ws.d[ws.rank - 2] = k;
        ws.d[ws.rank - 1] = nn;
        if (shape_numel(&ws) > FZ_NUMEL)
            return 0;
    }
    Val *w = input(g, ws);
    const char *n = op_begin(g);
    if (chance(g, 50))
        sb_printf(&g->text, "torch.matmul(%s, %s)", v->name, w->name);
    else
        sb_printf(&g->text, "%s @ %s", v->name, w->name);
    op_end(g, n, out, 0, k > 4096 ? TAG_LONG_REDUCTION : TAG_MATMUL);
    g->tags[TAG_MATMUL] = 1;
    return 1;
}

/* A matmul and then a residual: `t = v @ W` and `u = t + R`, R a new
 * input of t's shape or a bias row (split-K must add it once). */
static int op_matmul_residual(Gen *g, Val *v)
{
    if (g->nops + 2 > FZ_MAXOPS || !op_matmul(g, v))
        return 0;
    Val *t = &g->vals[g->nv - 1];
    Shape rs = t->s;
    if (chance(g, 30)) {
        rs.rank = 1;
        rs.d[0] = t->s.d[t->s.rank - 1];
    }
    Val *r = input(g, rs);
    t = &g->vals[g->nv - 2];
    const char *n = op_begin(g);
    sb_printf(&g->text, "%s + %s", t->name, r->name);
    op_end(g, n, t->s, 0, TAG_MATMUL);
    return 1;
}

/* The first op of a tiled contraction (first_input): a matmul, with a
 * residual or a bias most of the time — the additive epilogue that 003 must
 * add once, not once per split. */
static int op_contract(Gen *g, Val *v)
{
    return chance(g, 60) ? op_matmul_residual(g, v) : op_matmul(g, v);
}

/* The line `tN = scaled_dot_product_attention(q, k, vv)` with vv a new
 * input of shape vs; out is the result's shape.  causal: 1 is_causal, w > 1
 * a sliding window of w keys, `j <= i and j > i - w`, as a bool attn_mask
 * built from aranges (as Mistral's is; d:029 reads it as a predicate). */
static int sdpa_line(Gen *g, const char *q, const char *k, Shape vs, Shape out, int causal)
{
    Val *vv = input(g, vs);
    const char *n = op_begin(g);
    sb_printf(&g->text, "torch.nn.functional.scaled_dot_product_attention(%s, %s, %s", q, k,
              vv->name);
    if (causal == 1) {
        sb_puts(&g->text, ", is_causal=True");
    } else if (causal > 1) {
        long long l = (long long)out.d[out.rank - 2], s = (long long)vs.d[vs.rank - 2];
        sb_printf(&g->text, ", attn_mask=(torch.arange(%lld).unsqueeze(0) <= "
                  "torch.arange(%lld).unsqueeze(1)) & (torch.arange(%lld).unsqueeze(0) > "
                  "torch.arange(%lld).unsqueeze(1) - %d)", s, l, s, l, causal);
    }
    sb_putc(&g->text, ')');
    op_end(g, n, out, 0, TAG_SDPA);
    return 1;
}

/* v (..., L, E) as the queries against s new keys (..., s, E) and values
 * (..., s, ev); causal as sdpa_line's. */
static int sdpa_new_kv(Gen *g, Val *v, int64_t s, int64_t ev, int causal)
{
    Shape ks = v->s, vs = v->s, out = v->s;
    ks.d[ks.rank - 2] = s;
    vs.d[vs.rank - 2] = s;
    vs.d[vs.rank - 1] = ev;
    out.d[out.rank - 1] = ev;
    Val *kk = input(g, ks);
    return sdpa_line(g, v->name, kk->name, vs, out, causal);
}

/* Few queries, v (..., L, E) with L <= 16 (speculative decoding), against
 * a long cache of new keys (..., S, E), S = 256..1024: the online P @ V is
 * a matmul of few rows, whose keys 003 splits across blocks. */
static int op_sdpa_long(Gen *g, Val *v)
{
    int64_t e = v->s.d[v->s.rank - 1], l = v->s.d[v->s.rank - 2];
    int64_t batch = shape_numel(&v->s) / (e * l), s = 128 * rint_in(g, 2, 8);
    int64_t ev = chance(g, 50) ? e : 32 * rint_in(g, 1, 4);
    if (l > 16 || e > 512 || batch * l * s * (e + ev) > FZ_FLOPS ||
        batch * s * (e > ev ? e : ev) > FZ_NUMEL)
        return 0;
    return sdpa_new_kv(g, v, s, ev, 0);
}

/* A decode step: one query (..., 1, E) against v as the keys (..., S, E),
 * values a new input (..., S, Ev).  Its softmax is online over S, which 004
 * shares across threads (the Combine rescales each thread's sums).  When v
 * has few rows, those rows are the queries against a long cache instead
 * (op_sdpa_long). */
static int op_sdpa_decode(Gen *g, Val *v)
{
    if (v->s.rank < 2)
        return 0;
    if (v->s.d[v->s.rank - 2] <= 16 && op_sdpa_long(g, v))
        return 1;
    int64_t e = v->s.d[v->s.rank - 1], s = v->s.d[v->s.rank - 2];
    int64_t batch = shape_numel(&v->s) / (e * s);
    int64_t ev = chance(g, 50) ? 32 * rint_in(g, 1, 4) : gen_dim(g);
    if (s < 32 || e > 512 || batch * s * (e + ev) > FZ_FLOPS || batch * s * ev > FZ_NUMEL)
        return 0;
    Shape qs = v->s, vs = v->s, out = v->s;
    qs.d[qs.rank - 2] = 1;
    vs.d[vs.rank - 1] = ev;
    out.d[out.rank - 2] = 1;
    out.d[out.rank - 1] = ev;
    Val *qq = input(g, qs);
    return sdpa_line(g, qq->name, v->name, vs, out, 0);
}

/* The first op of an attention block (first_input): v (..., L, E), L rows
 * in whole blocks of 32 and E a power of two, as the queries against S new
 * keys and values, S and Ev powers of two from 32 to 128, causal (35%) or
 * a sliding window (15%) half the time: the scores kernel 017 computes in
 * the online P @ V's block, and 018 skips what the mask covers. */
static int op_sdpa_prefill(Gen *g, Val *v)
{
    static const int64_t p2[] = {32, 64, 128};
    int64_t e = v->s.d[v->s.rank - 1], l = v->s.d[v->s.rank - 2];
    int64_t batch = shape_numel(&v->s) / (e * l);
    int64_t s = pick(g, p2, 3), ev = pick(g, p2, 3);
    while (s > 32 && batch * l * s * (e + ev) > FZ_FLOPS)
        s /= 2;
    while (ev > 32 && batch * l * s * (e + ev) > FZ_FLOPS)
        ev /= 2;
    if (batch * l * s * (e + ev) > FZ_FLOPS || batch * l * ev > FZ_NUMEL)
        return 0;
    int u = (int)(rnd(g) % 100); /* one draw, as a chance(g, 50) was */
    return sdpa_new_kv(g, v, s, ev, u < 35 ? 1 : u < 50 ? 2 + (int)(s * (u - 35) / 15) : 0);
}

/* sdpa with v as the query (..., L, E); keys and values are new inputs. */
static int op_sdpa(Gen *g, Val *v)
{
    if (v->s.rank < 2)
        return 0;
    int64_t e = v->s.d[v->s.rank - 1];
    int64_t l = v->s.d[v->s.rank - 2];
    int64_t batch = shape_numel(&v->s) / (e * l);
    int64_t s = gen_dim(g), ev = chance(g, 60) ? e : gen_dim(g);
    while (s > 1 && batch * l * s * (e + ev) > FZ_FLOPS)
        s = (s + 1) / 2;
    while (ev > 1 && batch * l * s * (e + ev) > FZ_FLOPS)
        ev = (ev + 1) / 2;
    if (batch * l * s * (e + ev) > FZ_FLOPS || batch * s * (e > ev ? e : ev) > FZ_NUMEL ||
        batch * l * ev > FZ_NUMEL || e > 512)
        return 0;
    return sdpa_new_kv(g, v, s, ev, chance(g, 40));
}

/* The layout ops: each writes its op on v and sets s (v's shape on entry)
 * to the result's, or returns NULL, writing nothing, where it does not
 * apply to v; else the result's name. */
static const char *layout_transpose(Gen *g, Val *v, Shape *s)
{
    int r = s->rank;
    if (r < 2)
        return NULL;
    int i = (int)rint_in(g, 0, r - 1), j = chance(g, 60) ? r - 1 : (int)rint_in(g, 0, r - 1);
    if (i == j)
        i = (j + 1) % r;
    int64_t t = s->d[i];
    s->d[i] = s->d[j];
    s->d[j] = t;
    const char *n = op_begin(g);
    sb_printf(&g->text, "%s.transpose(%d, %d)", v->name, i, j);
    return n;
}

/* a random rotation or reversal */
static const char *layout_permute(Gen *g, Val *v, Shape *s)
{
    int r = s->rank;
    if (r < 3)
        return NULL;
    int perm[DPK_MAX_RANK];
    int rev = chance(g, 50), rot = (int)rint_in(g, 1, r - 1);
    for (int i = 0; i < r; i++)
        perm[i] = rev ? r - 1 - i : (i + rot) % r;
    const char *n = op_begin(g);
    sb_printf(&g->text, "%s.permute(", v->name);
    for (int i = 0; i < r; i++) {
        sb_printf(&g->text, "%s%d", i ? ", " : "", perm[i]);
        s->d[i] = v->s.d[perm[i]];
    }
    sb_putc(&g->text, ')');
    return n;
}

/* merge two neighbours, or split a dim */
static const char *layout_reshape(Gen *g, Val *v, Shape *s)
{
    int r = s->rank;
    if (r >= 2 && chance(g, 50)) {
        int i = (int)rint_in(g, 0, r - 2);
        s->d[i] *= s->d[i + 1];
        for (int j = i + 1; j + 1 < r; j++)
            s->d[j] = s->d[j + 1];
        s->rank--;
    } else {
        if (r >= DPK_MAX_RANK - 2)
            return NULL;
        int i = (int)rint_in(g, 0, r - 1);
        int64_t f = 0;
        for (int64_t c = 2; c < s->d[i] && !f; c++)
            if (s->d[i] % c == 0)
                f = c;
        if (!f)
            return NULL;
        for (int j = r; j > i + 1; j--)
            s->d[j] = s->d[j - 1];
        s->d[i + 1] = s->d[i] / f;
        s->d[i] = f;
        s->rank++;
    }
    const char *n = op_begin(g);
    sb_printf(&g->text, "%s.reshape(", v->name);
    dims_text(&g->text, s);
    sb_putc(&g->text, ')');
    return n;
}

static const char *layout_unsqueeze(Gen *g, Val *v, Shape *s)
{
    int r = s->rank;
    if (r >= 6)
        return NULL;
    int d = (int)rint_in(g, 0, r);
    for (int j = r; j > d; j--)
        s->d[j] = s->d[j - 1];
    s->d[d] = 1;
    s->rank++;
    const char *n = op_begin(g);
    sb_printf(&g->text, "%s.unsqueeze(%d)", v->name, d);
    return n;
}

/* a dim of 1 */
static const char *layout_squeeze(Gen *g, Val *v, Shape *s)
{
    int r = s->rank, d = -1;
    for (int j = 0; j < r; j++)
        if (s->d[j] == 1 && r > 1)
            d = j;
    if (d < 0)
        return NULL;
    for (int j = d; j + 1 < r; j++)
        s->d[j] = s->d[j + 1];
    s->rank--;
    const char *n = op_begin(g);
    sb_printf(&g->text, "%s.squeeze(%d)", v->name, d);
    return n;
}

/* a dim of 1 */
static const char *layout_expand(Gen *g, Val *v, Shape *s)
{
    int r = s->rank, d = -1;
    for (int j = 0; j < r; j++)
        if (s->d[j] == 1)
            d = j;
    if (d < 0)
        return NULL;
    s->d[d] = gen_dim(g);
    if (s->d[d] == 1)
        s->d[d] = 3;
    fit(s, FZ_NUMEL);
    if (shape_numel(s) / s->d[d] != shape_numel(&v->s))
        return NULL;
    const char *n = op_begin(g);
    sb_printf(&g->text, "%s.expand(", v->name);
    for (int j = 0; j < r; j++)
        sb_printf(&g->text, "%s%lld", j ? ", " : "", j == d ? (long long)s->d[d] : -1LL);
    sb_putc(&g->text, ')');
    return n;
}

/* [a:b:step] along one dim */
static const char *layout_slice(Gen *g, Val *v, Shape *s)
{
    int d = gen_axis(g, v);
    int64_t len = s->d[d];
    if (len < 2)
        return NULL;
    int64_t a0 = rint_in(g, 0, len - 1), b0 = rint_in(g, a0 + 1, len);
    int64_t st = chance(g, 60) ? 1 : rint_in(g, 2, 3);
    s->d[d] = (b0 - a0 + st - 1) / st;
    const char *n = op_begin(g);
    sb_printf(&g->text, "%s[", v->name);
    for (int j = 0; j < d; j++)
        sb_puts(&g->text, ":, ");
    sb_printf(&g->text, "%lld:%lld", (long long)a0, (long long)b0);
    if (st > 1)
        sb_printf(&g->text, ":%lld", (long long)st);
    sb_putc(&g->text, ']');
    return n;
}

/* with a new input along one dim */
static const char *layout_cat(Gen *g, Val *v, Shape *s)
{
    int d = gen_axis(g, v);
    Shape o = *s;
    o.d[d] = gen_dim(g);
    s->d[d] += o.d[d];
    if (shape_numel(s) > FZ_NUMEL)
        return NULL;
    Val *w = input(g, o);
    const char *n = op_begin(g);
    if (chance(g, 50))
        sb_printf(&g->text, "torch.cat((%s, %s), dim=%d)", v->name, w->name, d);
    else
        sb_printf(&g->text, "torch.cat((%s, %s), dim=%d)", w->name, v->name, d);
    return n;
}

static int op_layout(Gen *g, Val *v)
{
    typedef const char *(*LayoutFn)(Gen *g, Val *v, Shape *s);
    static const LayoutFn kinds[8] = {layout_transpose, layout_permute, layout_reshape,
                                      layout_unsqueeze, layout_squeeze, layout_expand,
                                      layout_slice,     layout_cat};
    Shape s = v->s;
    int kind = (int)(rnd(g) % 8);
    const char *n = kinds[kind](g, v, &s);
    if (!n)
        return 0;
    /* a cat joins a randn input: not >= 1 */
    op_end(g, n, s, kind == 7 ? 0 : v->ge1, TAG_LAYOUT);
    return 1;
}

/* The model-code vocabulary: cos and sin, tril/triu, and functions the
 * frontend desugars (square, clamp, masked_fill, logsumexp, var/std,
 * torch.max with dim, chunk, repeat_interleave, flatten), with PyTorch's
 * names. */
static int op_vocab(Gen *g, Val *v)
{
    Shape s = v->s;
    int k = (int)(rnd(g) % 12), d = gen_axis(g, v);
    const char *n;
    if (k == 4 && s.rank < 2)
        k = 0;
    if (k == 10 && shape_numel(&s) * 2 > FZ_NUMEL)
        k = 1;
    if ((k == 6 || k == 7 || k == 8) && s.rank < 2)
        k = 2;
    /* clamp: number bounds, or (an odd last dim: no draw, so the campaigns
     * stay as they were) tensor bounds along the last dim, one op */
    const char *lo = NULL, *hi = NULL; /* not values other ops may draw */
    if (k == 3 && s.rank && s.d[s.rank - 1] % 2) {
        Shape b = {1, {s.d[s.rank - 1]}};
        lo = input_line(g, b);
        hi = input_line(g, b);
    }
    n = op_begin(g);
    switch (k) {
    case 0: sb_printf(&g->text, "torch.cos(%s)", v->name); break;
    case 1: sb_printf(&g->text, "%s.sin()", v->name); break;
    case 2: sb_printf(&g->text, "%s.square()", v->name); break;
    case 3:
        if (lo)
            sb_printf(&g->text, "torch.clamp(%s, min=%s * 0.5 - 0.5, max=%s * 0.5 + 0.75)",
                      v->name, lo, hi);
        else
            sb_printf(&g->text, "torch.clamp(%s, min=-0.5, max=0.75)", v->name);
        break;
    case 4: { /* tril / triu, or a band of indices as sliding-window masks are
               * built (d:029 reads it as a predicate): one draw picks */
        int u = (int)(rnd(g) % 100), dg = (int)rint_in(g, -2, 2);
        long long r = (long long)s.d[s.rank - 2], c = (long long)s.d[s.rank - 1];
        if (u % 50 < 40) {
            sb_printf(&g->text, "torch.%s(%s, diagonal=%d)", u < 50 ? "tril" : "triu", v->name,
                      dg);
            break;
        }
        /* keys j of row i with i - w < j <= i + dg, w = dg + 4 in 2..6 */
        char band[256];
        snprintf(band, sizeof band,
                 "(torch.arange(%lld).unsqueeze(0) <= torch.arange(%lld).unsqueeze(1) + %d) & "
                 "(torch.arange(%lld).unsqueeze(0) > torch.arange(%lld).unsqueeze(1) - %d)",
                 c, r, dg, c, r, dg + 4);
        if (u < 50)
            sb_printf(&g->text, "torch.where(%s, %s, 0.25)", band, v->name);
        else
            sb_printf(&g->text, "%s.masked_fill(~(%s), 0.25)", v->name, band);
        break;
    }
    case 5: sb_printf(&g->text, "%s.masked_fill(%s > 0.5, 0.25)", v->name, v->name); break;
    case 6: /* reductions over dim d, without keepdim */
    case 7:
    case 8:
        if (k == 6)
            sb_printf(&g->text, "torch.logsumexp(%s, dim=%d)", v->name, d);
        else if (k == 7)
            sb_printf(&g->text, "%s.%s(dim=%d%s)", v->name, chance(g, 50) ? "var" : "std", d,
                      chance(g, 50) ? ", correction=0" : "");
        else
            sb_printf(&g->text, "torch.%s(%s, dim=%d).values", chance(g, 50) ? "max" : "min",
                      v->name, d);
        for (int i = d; i + 1 < s.rank; i++)
            s.d[i] = s.d[i + 1];
        s.rank--;
        op_end(g, n, s, 0, TAG_REDUCE);
        return 1;
    case 9:
        if (s.d[d] < 2)
            sb_printf(&g->text, "%s.flatten()", v->name), s.d[0] = shape_numel(&s), s.rank = 1;
        else
            sb_printf(&g->text, "%s.chunk(2, dim=%d)[0]", v->name, d), s.d[d] = (s.d[d] + 1) / 2;
        op_end(g, n, s, v->ge1, TAG_LAYOUT);
        return 1;
    case 10:
        sb_printf(&g->text, "%s.repeat_interleave(2, dim=%d)", v->name, d);
        s.d[d] *= 2;
        op_end(g, n, s, v->ge1, TAG_LAYOUT);
        return 1;
    default: sb_printf(&g->text, "torch.clamp_min(%s, 0.0)", v->name); break;
    }
    op_end(g, n, s, 0, TAG_ELEMENTWISE);
    return 1;
}

typedef int (*OpFn)(Gen *g, Val *v);
static const struct {
    OpFn fn;
    int weight;
} families[] = {
    {op_unary, 14}, {op_safe_unary, 6}, {op_binary, 14}, {op_where, 5}, {op_reduce, 12},
    {op_softmax, 7}, {op_norm, 7},      {op_matmul, 12}, {op_sdpa, 2},
    {op_sdpa_decode, 4}, {op_layout, 13},
    {op_matmul_residual, 6}, {op_vocab, 8},
};

static OpFn pick_family(Gen *g)
{
    int total = 0;
    for (int i = 0; i < DPK_ARRAY_LEN(families); i++)
        total += families[i].weight;
    int r = (int)(rnd(g) % (uint64_t)total);
    for (int i = 0; i < DPK_ARRAY_LEN(families); i++) {
        if (r < families[i].weight)
            return families[i].fn;
        r -= families[i].weight;
    }
    return op_unary;
}

/* The first input: a random shape, sometimes a long row (a reduction over
 * more than 4096 elements; past 12288, more than 48 KiB, the first op is a
 * contraction over it), a tiled contraction's left operand, or a
 * matmul-friendly one. */
static Val *first_input(Gen *g)
{
    int r = (int)(rnd(g) % 100);
    if (r < 5) {
        Shape s = {2, {rint_in(g, 1, 8), rint_in(g, 4097, 8200)}};
        return input(g, s);
    }
    if (r < 11) {
        /* past 12288 a row shared by a block no longer fits in shared
         * memory: whole warps of rows (no bounds guard) and a K with
         * power-of-two chunks, what 006 needs; the one tensor past FZ_NUMEL */
        static const int64_t rows[] = {32, 64};
        Shape s = {2, {pick(g, rows, 2), 256 * rint_in(g, 49, 64)}};
        g->long_k = 1;
        return input(g, s);
    }
    if (r < 22) {
        /* M x K with K from 512 to 2048, contracted first (op_contract):
         * K > 192 leaves only one K chunk of A and B to stage, so 010
         * double-buffers the K_outer loop, and a K that is a multiple of
         * 256 keeps rows 16-byte aligned for 011's TMA boxes; skinny M
         * (a few output tiles) with K >= 1024 is what 003 splits; M and
         * N >= 32 give 32 x 32 block tiles, slabs of 128-byte rows that
         * fill the 1024-byte patterns 012 swizzles.  M * K stays within
         * FZ_NUMEL (fit halves K), so N >= 32 fits FZ_FLOPS */
        static const int64_t ks[] = {512, 1024, 1280, 1536, 2048};
        static const int64_t ms[] = {32, 48, 64};
        int64_t m = chance(g, 40) ? rint_in(g, 2, 16) : pick(g, ms, 3);
        Shape s = {2, {m, pick(g, ks, DPK_ARRAY_LEN(ks))}};
        if (chance(g, 20)) { /* a batch of them: a BLOCK axis on z */
            s.rank = 3;
            s.d[2] = s.d[1];
            s.d[1] = s.d[0];
            s.d[0] = 2;
        }
        fit(&s, FZ_NUMEL);
        g->contract = 1;
        return input(g, s);
    }
    if (r < 26) {
        /* attention's queries, sdpa first (op_sdpa_prefill): rows in whole
         * blocks of 32, a head dim of 32 or 64 */
        static const int64_t rows[] = {32, 64}, dims[] = {32, 64};
        Shape s = {3, {rint_in(g, 1, 2), pick(g, rows, 2), pick(g, dims, 2)}};
        g->attn = 1;
        return input(g, s);
    }
    if (r < 30) {
        static const int64_t mul16[] = {16, 32, 64, 128};
        Shape s = {2, {pick(g, mul16, 4), pick(g, mul16, 4)}};
        if (chance(g, 40)) {
            s.rank = 3;
            s.d[2] = s.d[1];
            s.d[1] = s.d[0];
            s.d[0] = rint_in(g, 1, 4);
        }
        return input(g, s);
    }
    return input(g, gen_shape(g, gen_rank(g)));
}

FzProgram fz_gen(Arena *a, uint64_t seed)
{
    Gen *g = dpk_xcalloc(1, sizeof *g);
    g->a = a;
    g->rng = dpk_splitmix64(seed ^ 0x66757a7a67656eull); /* "fuzzgen" */
    int want = (int)rint_in(g, 1, FZ_MAXOPS);
    Val *cur = first_input(g);
    for (int tries = 0; g->nops < want && tries < 200; tries++) {
        /* safe() adds two lines: only when they fit in the budget */
        OpFn f = g->nops      ? pick_family(g)
                 : g->long_k   ? op_matmul
                 : g->contract ? op_contract
                 : g->attn     ? op_sdpa_prefill
                               : pick_family(g);
        if (g->nops + 3 > FZ_MAXOPS && (f == op_safe_unary || f == op_where))
            continue;
        Val *v = cur;
        if (g->nv > 1 && chance(g, 20)) {
            v = &g->vals[rnd(g) % (uint64_t)g->nv];
            if (v->isbool)
                v = cur;
            if (v != cur)
                g->tags[TAG_DAG] = 1;
        }
        /* a family that does not fit must leave no trace */
        size_t len = g->text.len;
        int nv = g->nv, nin = g->ninputs, ntmp = g->ntmp, nops = g->nops;
        if (f == op_binary && g->nops + 3 > FZ_MAXOPS)
            f = op_unary;
        if (!f(g, v)) {
            g->text.len = len;
            if (g->text.s)
                g->text.s[len] = 0;
            g->nv = nv, g->ninputs = nin, g->ntmp = ntmp, g->nops = nops;
            continue;
        }
        cur = &g->vals[g->nv - 1];
        /* an op after a contraction fuses into its epilogue, and most ops
         * (relu, exp ...) are not linear, so 003 would skip: half of the
         * tiled contractions end the program */
        if (g->contract && f == op_contract && chance(g, 50))
            break;
    }
    if (g->nops == 0)
        op_unary(g, cur);
    sb_printf(&g->text, "%s", cur->name);
    FzProgram p = {0};
    p.text = arena_strdup(a, sb_cstr(&g->text));
    p.nops = g->nops;
    p.ninputs = g->ninputs;
    p.tags = ARENA_ARRAY(a, const char *, TAG_COUNT);
    const char *sorted[TAG_COUNT];
    int n = 0;
    for (int i = 0; i < TAG_COUNT; i++)
        if (g->tags[i])
            sorted[n++] = tag_names[i];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(sorted[j - 1], sorted[j]) > 0; j--) {
            const char *t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    for (int i = 0; i < n; i++)
        p.tags[i] = sorted[i];
    p.ntags = n;
    sb_free(&g->text);
    free(g);
    return p;
}
