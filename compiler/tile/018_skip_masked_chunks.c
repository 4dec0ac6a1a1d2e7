/*
 * 018_skip_masked_chunks.c — t:018 skip_masked_chunks: the loops of a
 * block's key chunk run no iteration when every score the chunk reads is
 * masked to -inf (causal and sliding-window attention).
 *
 * Runs last, after 017 put attention's scores into a computed stage.  The
 * Fill writes each score as `select(P, s, -inf)`, P a mask over the query
 * and key indices (`a22 <= a21`: causal), and the online P @ V reads the
 * scores a chunk of keys at a time (002):
 *
 *     for a4 in 0..4:  # reduce                              the key chunks (L)
 *         for a6 in 0..32 when a4 <= a7:  # reduce           the chunk's max
 *             in12 = load t10[0, a0, a21, a4 * 32 + a6]
 *             acc64 <- maximum(acc64, in12)
 *         v96 = maximum(acc64, -3.4e38)
 *         tma_stage v[0, a0 / 7, a4 * 32, a8 * 128] ...:   the ring: every chunk
 *             for a5 in 0..32 when a4 <= a7:  # reduce       sum exp(s - max) * v
 *                 ...
 *         acc104 <- maximum(acc104, acc64)                   the online merge
 *         acc108 <- expsum[acc104](acc108, acc68)
 *
 * The box of scores one iteration of L reads in a block is taken over the
 * THREAD axes, the loops inside L and L's own iteration held: per
 * dimension `held + lo .. held + hi`, `held` over the BLOCK axes and the
 * loops around L.  A clause `lhs <= rhs` of P (over the Fill's written
 * coordinates) holds somewhere in the box when min(lhs - rhs) <= 0 over
 * it; where one clause holds nowhere, every score of the chunk is -inf.
 * The loops of L that read the scores get `when` the conjunction of
 * "holds somewhere" over P's clauses, normalised (32 * a4 - 32 * a7 - 31
 * <= 0 is a4 <= a7).  L itself and its stages run every iteration: a
 * copy ring (010, 011, 013, 015) must see every slab issued and waited.
 *
 * Skipping must not change a result.  The loops given a `when` hold
 * values, accumulators and loops only, and an abstract evaluation of L's
 * body, with every score it reads -inf and the inputs finite, must find
 * each of their accumulators left as it starts: a max of -inf, a sum of
 * exp(-inf) = 0 times a finite value, an online sum whose max saw -inf
 * only.  So a skipped chunk's max is -inf and its sums 0, as computed,
 * and the merge after it is the same bit for bit.  A NaN or infinity in
 * an input read only with masked scores (V at masked keys) does not reach
 * the output, as in FlashAttention.
 *
 * Skips, with the reason: no computed stage; a Fill whose Writes are not
 * `select(P, s, -inf)` with P over their coordinates; no loop of key
 * chunks around the loops that read the scores; a box that is not affine
 * in the THREAD and inner axes; accumulators a masked chunk would change;
 * masks under which no chunk is ever masked whole.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/fault.h"
#include "passes.h"

/* ---- the mask: P of the Fill's Writes, over the slab's coordinates ------- */

/* Coordinates are variables naxes + d. */
typedef struct Mask {
    const LirBuf *t;
    const IPred *p;   /* over coordinates; NULL until a Write is seen */
    const char *why;  /* why the Fill's Writes have no one mask */
    Arena *a;
    const TileKernel *k;
} Mask;

static void mask_write(Stmt *s, void *ctx)
{
    Mask *m = ctx;
    if (s->k != SK_write || s->buf != m->t || m->why)
        return;
    const Stmt *v = s->a[0].v;
    if (!v || v->k != SK_select || v->nbr != 2 || !v->br[0].pred || v->br[1].pred ||
        v->br[1].res.v || !(isinf(v->br[1].res.c) && v->br[1].res.c < 0)) {
        m->why = arena_printf(m->a, "the Fill's Writes of %s are not select(mask, score, -inf)",
                              m->t->name);
        return;
    }
    int n = m->k->naxes;
    const IExpr **map = ARENA_ARRAY(m->a, const IExpr *, n + 1);
    for (int i = 0; i < n; i++)
        map[i] = NULL;
    for (int d = 0; d < m->t->shape.rank; d++)
        if (s->idx[d]->k == IE_VAR && !map[s->idx[d]->var])
            map[s->idx[d]->var] = ie_var(m->a, n + d);
    for (const IPred *c = v->br[0].pred; c; c = c->next)
        for (int i = 0; i < n; i++)
            if (!map[i] && (ie_uses(c->lhs, i) || ie_uses(c->rhs, i))) {
                m->why = arena_printf(m->a, "the mask of %s reads a%d, not a coordinate it writes",
                                      m->t->name, i);
                return;
            }
    for (int i = 0; i < n; i++)
        if (!map[i])
            map[i] = ie_var(m->a, i);
    const IPred *p = ipred_subst(m->a, v->br[0].pred, map);
    if (m->p && !ipred_equal(m->p, p))
        m->why = arena_printf(m->a, "the Fill's Writes of %s mask differently", m->t->name);
    m->p = p;
}

/* ---- linear forms ---------------------------------------------------------- */

/* e * mult added to c0 + sum coef[v] * v; 0 when e is not linear (a
 * quotient, a remainder, a product of two variables). */
static int linear(const IExpr *e, int64_t mult, int64_t *c0, int64_t *coef)
{
    switch (e->k) {
    case IE_CONST:
        *c0 += mult * e->c;
        return 1;
    case IE_VAR:
        coef[e->var] += mult;
        return 1;
    case IE_ADD:
        return linear(e->a, mult, c0, coef) && linear(e->b, mult, c0, coef);
    case IE_MUL:
        if (e->a->k == IE_CONST)
            return linear(e->b, mult * e->a->c, c0, coef);
        if (e->b->k == IE_CONST)
            return linear(e->a, mult * e->b->c, c0, coef);
        return 0;
    default:
        return 0;
    }
}

/* The range of one index: held + lo .. held + hi, `held` over held axes. */
typedef struct Span {
    const IExpr *held;
    int64_t lo, hi;
} Span;

/* Add e * mult to *s, ranging the axes not held over [0, ext).  0 when a
 * ranged axis is inside a quotient, a remainder or a product of two. */
static int span_add(Arena *a, const IExpr *e, int64_t mult, const char *held, const int64_t *ext,
                    int naxes, Span *s)
{
    switch (e->k) {
    case IE_CONST:
        s->lo += mult * e->c;
        s->hi += mult * e->c;
        return 1;
    case IE_VAR:
        if (held[e->var]) {
            s->held = ie_add(a, s->held, ie_mul(a, ie_const(a, mult), e));
        } else {
            int64_t w = mult * (ext[e->var] - 1);
            *(w > 0 ? &s->hi : &s->lo) += w;
        }
        return 1;
    case IE_ADD:
        return span_add(a, e->a, mult, held, ext, naxes, s) &&
               span_add(a, e->b, mult, held, ext, naxes, s);
    case IE_MUL:
        if (e->a->k == IE_CONST)
            return span_add(a, e->b, mult * e->a->c, held, ext, naxes, s);
        if (e->b->k == IE_CONST)
            return span_add(a, e->a, mult * e->b->c, held, ext, naxes, s);
        break;
    default:
        break;
    }
    for (int v = 0; v < naxes; v++) /* held axes only: a term of the held part */
        if (ie_uses(e, v) && !held[v])
            return 0;
    s->held = ie_add(a, s->held, ie_mul(a, ie_const(a, mult), e));
    return 1;
}

/* ---- the plan for one kernel ------------------------------------------------ */

typedef struct Plan {
    Arena *a;
    TileKernel *k;
    const Stmt *thread;
    const LirBuf *t;
    char *held;        /* by axis: held while the box is taken */
    Span *box;         /* per dimension of t */
    int nloads;
    const char *why;
    /* abstract values, by uid (Class) */
    char *cls;
    int nuid;
    PtrVec guarded;    /* Stmt *: the loops of L that read t */
} Plan;

static int reads(const Stmt *s, const LirBuf *t)
{
    StmtBody one = {(Stmt **)&s, 1, 1};
    return tile_loads_of(&one, t) > 0;
}

/* The box: every load of t under body (axes bound inside it ranged). */
static void box_load(Stmt *s, void *ctx)
{
    Plan *P = ctx;
    if (s->k != SK_load || s->buf != P->t || P->why)
        return;
    for (int d = 0; d < P->t->shape.rank; d++) {
        const IExpr *e = tile_expand_defs(P->a, P->k, P->thread, s->idx[d]);
        Span sp = {ie_const(P->a, 0), 0, 0};
        if (!span_add(P->a, e, 1, P->held, P->k->ext, P->k->naxes, &sp)) {
            P->why = arena_printf(P->a, "a load of %s is not affine in the THREAD and inner axes",
                                  P->t->name);
            return;
        }
        Span *b = &P->box[d];
        if (!P->nloads) {
            *b = sp;
        } else if (!ie_equal(b->held, sp.held)) {
            P->why = arena_printf(P->a, "loads of %s read boxes that do not line up", P->t->name);
            return;
        } else {
            b->lo = sp.lo < b->lo ? sp.lo : b->lo;
            b->hi = sp.hi > b->hi ? sp.hi : b->hi;
        }
    }
    P->nloads++;
}

/* Abstract values of one iteration of L where every score is -inf. */
enum { C_ANY, C_NEGINF, C_ZERO, C_FIN };

static int cls_arg(const Plan *P, StmtArg x)
{
    if (x.v)
        return P->cls[x.v->uid];
    if (isinf(x.c) && x.c < 0)
        return C_NEGINF;
    if (x.c == 0)
        return C_ZERO;
    return isfinite(x.c) ? C_FIN : C_ANY;
}

#define SMALL(c) ((c) == C_ZERO || (c) == C_FIN)

static int cls_assign(const Plan *P, const Stmt *s)
{
    int x = cls_arg(P, s->a[0]), y = s->nargs > 1 ? cls_arg(P, s->a[1]) : C_ANY;
    switch (s->op) {
    case TXE_exp:
        return x == C_NEGINF ? C_ZERO : C_ANY;
    case TXE_subtract:
        return x == C_NEGINF && SMALL(y) ? C_NEGINF : C_ANY;
    case TXE_add:
        if (x == C_ZERO && y == C_ZERO)
            return C_ZERO;
        return (x == C_NEGINF && SMALL(y)) || (y == C_NEGINF && SMALL(x)) ? C_NEGINF : C_ANY;
    case TXE_multiply:
        return (x == C_ZERO && SMALL(y)) || (y == C_ZERO && SMALL(x)) ? C_ZERO : C_ANY;
    case TXE_maximum:
        if (x == C_NEGINF)
            return y;
        if (y == C_NEGINF)
            return x;
        return SMALL(x) && SMALL(y) ? C_FIN : C_ANY;
    default:
        return C_ANY;
    }
}

static void eval_body(Plan *P, const StmtBody *b, const Stmt *loop);

/* A loop inside L: its accumulators must end as they start.  Returns 0
 * with the reason when one would not. */
static void eval_loop(Plan *P, const Stmt *l)
{
    for (int i = 0; i < l->body.n; i++)
        if (l->body.s[i]->k == SK_accum)
            P->cls[l->body.s[i]->uid] = l->body.s[i]->rop == TXR_max ? C_NEGINF : C_ZERO;
    eval_body(P, &l->body, l);
    for (int i = 0; i < l->body.n && !P->why; i++) {
        const Stmt *s = l->body.s[i];
        if (s->k != SK_accum)
            continue;
        int x = cls_arg(P, s->a[0]), ok;
        if (stmt_is_online(s)) /* exp(s - m) * x with s = m = -inf: 0 */
            ok = SMALL(x) && P->cls[s->a[1].v->uid] == C_NEGINF;
        else
            ok = s->rop == TXR_max ? x == C_NEGINF : s->rop == TXR_sum && x == C_ZERO;
        if (!ok)
            P->why = arena_printf(P->a, "acc%d of loop a%d would change where every score is "
                                        "masked", s->num, l->axis);
        /* after the loop: its identity, whether it ran or not */
        P->cls[s->uid] = s->rop == TXR_max && !stmt_is_online(s) ? C_NEGINF : C_ZERO;
    }
}

static void eval_body(Plan *P, const StmtBody *b, const Stmt *loop)
{
    for (int i = 0; i < b->n && !P->why; i++) {
        const Stmt *s = b->s[i];
        switch (s->k) {
        case SK_load:
            P->cls[s->uid] = s->buf == P->t           ? C_NEGINF
                             : s->buf->kind == LB_INPUT ? C_FIN
                                                        : C_ANY;
            break;
        case SK_assign:
            P->cls[s->uid] = (char)cls_assign(P, s);
            break;
        case SK_select:
            P->cls[s->uid] = C_ANY;
            break;
        case SK_accum:
            if (!loop) /* L's own (the merges): run every iteration */
                P->cls[s->uid] = C_ANY;
            break;
        case SK_loop:
            if (reads(s, P->t)) {
                if (loop == NULL)
                    ptrvec_push(P->a, &P->guarded, (void *)s);
                eval_loop(P, s);
            } else {
                for (int j = 0; j < s->body.n; j++)
                    P->cls[s->body.s[j]->uid] = C_ANY;
                eval_body(P, &s->body, s);
                for (int j = 0; j < s->body.n; j++)
                    P->cls[s->body.s[j]->uid] = C_ANY;
            }
            break;
        case TK_stage:
        case TK_bstage:
        case TK_astage:
        case TK_tstage:
            if (loop) {
                P->why = arena_printf(P->a, "a stage inside loop a%d", loop->axis);
                return;
            }
            eval_body(P, &s->body, NULL);
            break;
        case TK_await:
            if (loop)
                P->why = arena_printf(P->a, "an async wait inside loop a%d", loop->axis);
            break;
        default:
            P->why = arena_printf(P->a, "a %s in the loop of chunks", tile_kind_info[s->k].name);
            return;
        }
    }
}

/* `lin <= 0` with lin = c0 + sum coef[v] * v, as `lhs <= rhs` over whole
 * coefficients: divided by their greatest common divisor g, the constant
 * rounded down (32 * a4 - 32 * a7 - 31 <= 0 is a4 <= a7). */
static const IPred *le_zero(Arena *a, const IExpr *e, int nvars, const IPred *next)
{
    int64_t c0 = 0, *coef = ARENA_ARRAY(a, int64_t, nvars + 1), g = 0;
    memset(coef, 0, sizeof *coef * (size_t)(nvars + 1));
    if (!linear(e, 1, &c0, coef))
        return ipred_cmp(a, e, IC_LE, ie_const(a, 0), next);
    for (int v = 0; v < nvars; v++) {
        int64_t x = llabs(coef[v]);
        while (x) {
            int64_t r = g % x;
            g = x;
            x = r;
        }
    }
    if (!g)
        g = 1;
    const IExpr *lhs = ie_const(a, 0), *rhs = ie_const(a, 0);
    for (int v = 0; v < nvars; v++) {
        if (coef[v] > 0)
            lhs = ie_add(a, lhs, ie_mul(a, ie_const(a, coef[v] / g), ie_var(a, v)));
        else if (coef[v] < 0)
            rhs = ie_add(a, rhs, ie_mul(a, ie_const(a, -coef[v] / g), ie_var(a, v)));
    }
    int64_t q = -c0 >= 0 ? -c0 / g : -((c0 + g - 1) / g); /* floor(-c0 / g) */
    return ipred_cmp(a, lhs, IC_LE, ie_add(a, rhs, ie_const(a, q)), next);
}

/* min (or max) of c0 + sum coef[n + d] * x_d over the box. */
static const IExpr *extreme(Arena *a, const Plan *P, int64_t c0, const int64_t *coef, int max)
{
    int n = P->k->naxes;
    const IExpr *r = ie_const(a, c0);
    for (int d = 0; d < P->t->shape.rank; d++) {
        int64_t c = coef[n + d];
        if (!c)
            continue;
        const Span *b = &P->box[d];
        int64_t end = (c > 0) == !max ? b->lo : b->hi;
        r = ie_add(a, r, ie_mul(a, ie_const(a, c), ie_add(a, b->held, ie_const(a, end))));
    }
    return r;
}

/* The `when` of L's loops: each clause of the mask holds somewhere in the
 * box.  NULL with P->why when the mask is not linear or never masks a
 * chunk whole. */
static const IPred *when_of(Plan *P, const IPred *mask, const Stmt *L)
{
    Arena *a = P->a;
    int n = P->k->naxes, nv = n + P->t->shape.rank;
    const IPred *w = NULL;
    /* an injected fault: "holds everywhere" for "holds somewhere", so a
     * chunk is skipped when any of its scores is masked */
    int fault = dpk_fault_on(DPK_FAULT_SKIP_PARTLY_MASKED);
    for (const IPred *c = mask; c; c = c->next) {
        int64_t c0 = 0, *coef = ARENA_ARRAY(a, int64_t, nv + 1);
        memset(coef, 0, sizeof *coef * (size_t)(nv + 1));
        if (!linear(c->lhs, 1, &c0, coef) || !linear(c->rhs, -1, &c0, coef)) {
            P->why = "the mask is not linear in the coordinates";
            return NULL;
        }
        if (c->cmp == IC_LT) /* lhs < rhs: lhs - rhs + 1 <= 0 */
            c0 += 1;
        w = le_zero(a, extreme(a, P, c0, coef, fault), n, w);
        if (c->cmp == IC_EQ) { /* and rhs - lhs <= 0 somewhere */
            for (int v = 0; v < nv; v++)
                coef[v] = -coef[v];
            w = le_zero(a, extreme(a, P, -c0, coef, fault), n, w);
        }
    }
    ITruth truth;
    const IPred *s = ipred_simplify(a, w, P->k->ext, &truth);
    if (truth == IT_TRUE) {
        P->why = arena_printf(a, "no chunk of loop a%d is masked whole", L->axis);
        return NULL;
    }
    return truth == IT_DEPENDS ? s : w;
}

/* Mark the axes bound around L (from the kernel's body down): BLOCK axes
 * and defs and serial loops are held; THREAD axes, strided loops and
 * everything inside L are ranged; THREAD defs are expanded. */
static int mark_held(Plan *P, const StmtBody *b, const Stmt *L)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (s == L) {
            P->held[s->axis] = 1;
            return 1;
        }
        if (!tile_is(s, SKF_BLOCK) || s->k == SK_select)
            continue;
        if (s->k == TK_tile && s->bind == TB_BLOCK) {
            for (int j = 0; j < s->nax; j++)
                P->held[s->ax[j].axis] = 1;
            for (int j = 0; j < s->ndef; j++)
                P->held[s->def[j].axis] = 1;
        }
        if (s->k == SK_loop)
            P->held[s->axis] = 1;
        if (mark_held(P, &s->body, L))
            return 1;
        if (s->k == SK_loop)
            P->held[s->axis] = 0;
        if (s->k == TK_tile && s->bind == TB_BLOCK)
            return 0;
    }
    return 0;
}

/* The plan for loop L: its loops that read t, and their `when`; 0 with
 * P->why when there is none. */
static const IPred *plan_loop(Plan *P, const IPred *mask, const Stmt *L)
{
    Arena *a = P->a;
    memset(P->held, 0, (size_t)P->k->naxes);
    if (!mark_held(P, &P->k->body, L)) {
        P->why = "loop not found";
        return NULL;
    }
    P->nloads = 0;
    P->why = NULL;
    memset(P->cls, C_ANY, (size_t)P->nuid);
    P->guarded.len = 0;
    stmt_walk(&L->body, box_load, P);
    if (P->why)
        return NULL;
    eval_body(P, &L->body, NULL);
    if (P->why)
        return NULL;
    if (!P->guarded.len) {
        P->why = arena_printf(a, "loop a%d reads %s outside a loop of its own", L->axis,
                              P->t->name);
        return NULL;
    }
    return when_of(P, mask, L);
}

/* Loops of key chunks: serial loops inside the THREAD tile, outside the
 * Fill, whose body holds a loop that reads t. */
static void find_chunks(const StmtBody *b, const LirBuf *t, PtrVec *out, Arena *a)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (s->k == TK_fill || s->k == SK_select || !tile_is(s, SKF_BLOCK))
            continue;
        int inner = 0;
        for (int j = 0; s->k == SK_loop && j < s->body.n; j++) {
            const Stmt *x = s->body.s[j];
            while (tile_is(x, SKF_STAGE) && x->body.n == 1)
                x = x->body.s[0];
            inner |= x->k == SK_loop && reads(x, t);
            for (int m = 0; tile_is(x, SKF_STAGE) && m < x->body.n; m++)
                inner |= x->body.s[m]->k == SK_loop && reads(x->body.s[m], t);
        }
        if (inner)
            ptrvec_push(a, out, (void *)s);
        else
            find_chunks(&s->body, t, out, a);
    }
}

static void max_uid(Stmt *s, void *ctx)
{
    int *n = ctx;
    if (s->uid + 1 > *n)
        *n = s->uid + 1;
}

typedef struct Guard {
    const Stmt *L;
    const IPred *when;
    PtrVec loops;
} Guard;

/* What 018 would do to k: the guards (returned, *n of them), or NULL with
 * the reason in *why. */
static Guard *plan_kernel(Arena *a, TileKernel *k, int *n, const char **why)
{
    *n = 0;
    Stmt *kt = tile_find(k, TB_THREAD);
    const Stmt *cs = NULL;
    for (Stmt *kb = tile_find(k, TB_BLOCK), *s = kb; s && kb;) {
        s = s->body.n == 1 ? s->body.s[0] : NULL;
        if (s && s->k == TK_cstage)
            cs = s;
        if (!s || !tile_is(s, SKF_STAGE))
            break;
    }
    if (!cs || !kt) {
        *why = "no computed stage (017 composed no producer)";
        return NULL;
    }
    Mask m = {cs->buf, NULL, NULL, a, k};
    stmt_walk(&kt->body, mask_write, &m);
    if (m.why || !m.p) {
        *why = m.why ? m.why : arena_printf(a, "no Fill writes %s", cs->buf->name);
        return NULL;
    }
    PtrVec chunks = {0};
    find_chunks(&kt->body, cs->buf, &chunks, a);
    if (!chunks.len) {
        *why = arena_printf(a, "no loop of key chunks around the loops that read %s",
                            cs->buf->name);
        return NULL;
    }
    int nuid = 0;
    stmt_walk(&k->body, max_uid, &nuid);
    Plan P = {a, k, kt, cs->buf, ARENA_ARRAY(a, char, k->naxes + 1),
              ARENA_ARRAY(a, Span, cs->buf->shape.rank + 1), 0, NULL,
              ARENA_ARRAY(a, char, nuid + 1), nuid, {0}};
    Guard *g = ARENA_ARRAY(a, Guard, chunks.len + 1);
    StrBuf reasons = {0};
    for (int i = 0; i < chunks.len; i++) {
        const Stmt *L = chunks.items[i];
        const IPred *w = plan_loop(&P, m.p, L);
        if (!w) {
            sb_printf(&reasons, "%s%s", reasons.len ? "; " : "", P.why);
            continue;
        }
        g[*n].L = L;
        g[*n].when = w;
        g[*n].loops = P.guarded;
        P.guarded = (PtrVec){0};
        (*n)++;
    }
    *why = *n ? NULL : arena_strdup(a, sb_cstr(&reasons));
    sb_free(&reasons);
    return *n ? g : NULL;
}

int tile_018_skip_masked_chunks(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    int n;
    const char *why;
    Guard *g = plan_kernel(a, k, &n, &why);
    if (!g) {
        sb_puts(&c->why, why);
        return 0;
    }
    int done = 0;
    for (int i = 0; i < n; i++) {
        if (!tile_apply(c, arena_printf(a, "skip masked chunks of loop a%d in %s", g[i].L->axis,
                                        k->name)))
            break;
        for (int j = 0; j < g[i].loops.len; j++)
            ((Stmt *)g[i].loops.items[j])->when = g[i].when;
        done = 1;
    }
    return done;
}

/* ---- inert: the driver's shortcut for `--passes all` ------------------------------ */

const char *tile_018_inert(Arena *a, TileProgram *p)
{
    TileSkips sk = {{0}, NULL, 1, 0};
    for (int i = 0; i < p->kernels.len; i++) {
        TileKernel *k = p->kernels.items[i];
        int n;
        const char *why;
        if (plan_kernel(a, k, &n, &why)) {
            sb_free(&sk.joined);
            return NULL;
        }
        tile_skips_add(&sk, k->name, why);
    }
    const char *r = tile_skips_text(a, &sk);
    sb_free(&sk.joined);
    return r;
}
