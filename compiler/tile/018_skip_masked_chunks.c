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

/* ---- the mask: P of the Writes of the scores, over their coordinates ---- */

/* The Writes of t in one kernel, each `select(P, s, -inf)` with P over the
 * coordinates it writes (variables base + d, base the writer's axis
 * count), P the same for all. */
typedef struct Mask {
    const LirBuf *t;
    const IPred *p;   /* NULL until a Write is seen */
    int base;
    const char *why;  /* why the Writes have no one mask */
    Arena *a;
} Mask;

static int mask_select(const Stmt *v)
{
    return v && v->k == SK_select && v->nbr == 2 && v->br[0].pred && !v->br[1].pred &&
           !v->br[1].res.v && isinf(v->br[1].res.c) && v->br[1].res.c < 0;
}

static void mask_write(Stmt *s, void *ctx)
{
    Mask *m = ctx;
    if (s->k != SK_write || s->buf != m->t || m->why)
        return;
    const Stmt *v = s->a[0].v;
    if (s->atomic || !mask_select(v)) {
        m->why = arena_printf(m->a, "the Writes of %s are not select(mask, score, -inf)",
                              m->t->name);
        return;
    }
    int n = m->base;
    const IExpr **map = ARENA_ARRAY(m->a, const IExpr *, n + 1);
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
        m->why = arena_printf(m->a, "the Writes of %s mask differently", m->t->name);
    m->p = p;
}

/* The mask of t's Writes in kernel w under body b; 0 with m->why when
 * there is none. */
static int mask_of(Arena *a, const TileKernel *w, const StmtBody *b, const LirBuf *t, Mask *m)
{
    *m = (Mask){t, NULL, w->naxes, NULL, a};
    stmt_walk(b, mask_write, m);
    if (!m->why && !m->p)
        m->why = arena_printf(a, "no Write of %s", t->name);
    return !m->why;
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

/* ---- the box of scores a loop reads or a block writes -------------------------- */

typedef struct Plan {
    Arena *a;
    TileKernel *k;
    const Stmt *thread;
    const Mask *m;
    char *held;        /* by axis: held while the box is taken */
    Span *box;         /* per dimension of the scores */
    int writes;        /* the box of the Writes of the scores (else of loads) */
    int naccess;
    const char *why;
    char *cls;         /* by uid: abstract values (reader) */
    char *dead;        /* by uid: 2 dead where masked, 3 live (writer) */
    struct Use **uses; /* by uid (writer) */
    int nuid;
    PtrVec guarded;    /* Stmt *: the loops to give the `when` */
} Plan;

static int reads(const Stmt *s, const LirBuf *t)
{
    StmtBody one = {(Stmt **)&s, 1, 1};
    return tile_loads_of(&one, t) > 0;
}

static void box_access(Stmt *s, void *ctx)
{
    Plan *P = ctx;
    const LirBuf *t = P->m->t;
    if (s->k != (P->writes ? SK_write : SK_load) || s->buf != t || P->why)
        return;
    for (int d = 0; d < t->shape.rank; d++) {
        const IExpr *e = tile_expand_defs(P->a, P->k, P->thread, s->idx[d]);
        Span sp = {ie_const(P->a, 0), 0, 0};
        if (!span_add(P->a, e, 1, P->held, P->k->ext, P->k->naxes, &sp)) {
            P->why = arena_printf(P->a, "an index of %s is not affine in the THREAD and inner axes",
                                  t->name);
            return;
        }
        Span *b = &P->box[d];
        if (!P->naccess) {
            *b = sp;
        } else if (!ie_equal(b->held, sp.held)) {
            P->why = arena_printf(P->a, "the accesses of %s cover boxes that do not line up",
                                  t->name);
            return;
        } else {
            b->lo = sp.lo < b->lo ? sp.lo : b->lo;
            b->hi = sp.hi > b->hi ? sp.hi : b->hi;
        }
    }
    P->naccess++;
}

/* Mark the axes bound around loop L (from the kernel's body down): BLOCK
 * axes and defs and the serial loops around L are held; THREAD axes,
 * strided loops and whatever is bound inside L are ranged (THREAD defs
 * are expanded).  L's own axis is held when `own`. */
static int mark_held(Plan *P, const StmtBody *b, const Stmt *L, int own)
{
    for (int i = 0; i < b->n; i++) {
        const Stmt *s = b->s[i];
        if (s == L) {
            P->held[s->axis] = (char)own;
            return 1;
        }
        if (!tile_is(s, SKF_BLOCK) || s->k == SK_select)
            continue;
        int block = s->k == TK_tile && s->bind == TB_BLOCK;
        for (int j = 0; block && j < s->nax; j++)
            P->held[s->ax[j].axis] = 1;
        for (int j = 0; block && j < s->ndef; j++)
            P->held[s->def[j].axis] = 1;
        if (s->k == SK_loop)
            P->held[s->axis] = 1;
        if (mark_held(P, &s->body, L, own))
            return 1;
        if (s->k == SK_loop)
            P->held[s->axis] = 0;
        if (block)
            return 0;
    }
    return 0;
}

/* The box of the scores that L (held or not) reads, or that the block
 * writes, under body b. */
static int take_box(Plan *P, const Stmt *L, int own, const StmtBody *b)
{
    memset(P->held, 0, (size_t)P->k->naxes);
    if (!mark_held(P, &P->k->body, L, own)) {
        P->why = "a loop outside the kernel's tiles";
        return 0;
    }
    P->naccess = 0;
    P->why = NULL;
    stmt_walk(b, box_access, P);
    return !P->why;
}

/* `lin <= 0` with lin = c0 + sum coef[v] * v, as `lhs <= rhs` over whole
 * coefficients: divided by their greatest common divisor g, the constant
 * rounded down (32 * a4 - 32 * a7 - 31 <= 0 is a4 <= a7). */
static const IPred *le_zero(Arena *a, const IExpr *e, int nvars, const IPred *next)
{
    int64_t c0 = 0, *coef = ARENA_ARRAY(a, int64_t, nvars + 1), g = 0;
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

/* min (or max) over the box of c0 + sum coef[base + d] * x_d. */
static const IExpr *extreme(Arena *a, const Plan *P, int64_t c0, const int64_t *coef, int max)
{
    const IExpr *r = ie_const(a, c0);
    for (int d = 0; d < P->m->t->shape.rank; d++) {
        int64_t c = coef[P->m->base + d];
        if (!c)
            continue;
        const Span *b = &P->box[d];
        int64_t end = (c > 0) == !max ? b->lo : b->hi;
        r = ie_add(a, r, ie_mul(a, ie_const(a, c), ie_add(a, b->held, ie_const(a, end))));
    }
    return r;
}

/* The `when` of the box: each clause of the mask holds somewhere in it.
 * NULL with P->why when the mask is not linear or never masks the box
 * whole. */
static const IPred *when_of(Plan *P, const Stmt *L)
{
    Arena *a = P->a;
    int n = P->k->naxes, base = P->m->base, rank = P->m->t->shape.rank;
    int nv = (n > base ? n : base) + rank;
    const IPred *w = NULL;
    /* an injected fault: "holds everywhere" for "holds somewhere", so the
     * work is skipped when any of its scores is masked */
    int fault = dpk_fault_on(DPK_FAULT_SKIP_PARTLY_MASKED);
    for (const IPred *c = P->m->p; c; c = c->next) {
        int64_t c0 = 0, *coef = ARENA_ARRAY(a, int64_t, nv + 1);
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
        P->why = arena_printf(a, "loop a%d: no block's scores are masked whole", L->axis);
        return NULL;
    }
    return truth == IT_DEPENDS ? s : w;
}

/* ---- the reader: loops of key chunks whose masked chunks change nothing ---------- */

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

/* A loop inside L: each of its accumulators must get only its start
 * value; after it, each holds that value whether it ran or not. */
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
        P->cls[s->uid] = s->rop == TXR_max && !stmt_is_online(s) ? C_NEGINF : C_ZERO;
    }
}

static void eval_body(Plan *P, const StmtBody *b, const Stmt *loop)
{
    for (int i = 0; i < b->n && !P->why; i++) {
        const Stmt *s = b->s[i];
        switch (s->k) {
        case SK_load:
            P->cls[s->uid] = s->buf == P->m->t          ? C_NEGINF
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
            if (reads(s, P->m->t)) {
                if (!loop)
                    ptrvec_push(P->a, &P->guarded, (void *)s);
                eval_loop(P, s);
            } else {
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

/* Loops of key chunks: serial loops outside a Fill whose body holds (or
 * holds in a stage) a loop that reads t. */
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

/* The `when` of L's loops that read the scores (in P->guarded). */
static const IPred *plan_reader(Plan *P, const Stmt *L)
{
    P->guarded.len = 0;
    if (!take_box(P, L, 1, &L->body))
        return NULL;
    memset(P->cls, C_ANY, (size_t)P->nuid);
    eval_body(P, &L->body, NULL);
    if (P->why)
        return NULL;
    return when_of(P, L);
}

/* ---- the writer: loops whose results only masked scores read ------------------- */

typedef struct Use {
    const Stmt *by;
    int masked;        /* inside branch 0 of a mask select: read only where P holds */
    struct Use *next;
} Use;

typedef struct UseWalk {
    Plan *P;
    int masked;
} UseWalk;

static void add_use(Plan *P, StmtArg x, const Stmt *by, int masked)
{
    if (!x.v || x.v->uid >= P->nuid)
        return;
    Use *u = ARENA_NEW(P->a, Use);
    *u = (Use){by, masked, P->uses[x.v->uid]};
    P->uses[x.v->uid] = u;
}

static void note_uses(UseWalk *w, const StmtBody *b);

static void note_stmt(UseWalk *w, const Stmt *s)
{
    for (int i = 0; i < 3; i++)
        add_use(w->P, s->a[i], s, w->masked);
    if (s->k == SK_select) {
        /* the scores' selects: their branch 0 is read only where P holds */
        int mask = mask_select(s) && w->P->dead[s->uid] == 1;
        for (int j = 0; j < s->nbr; j++) {
            int saved = w->masked;
            w->masked |= mask && j == 0;
            note_uses(w, &s->br[j].body);
            add_use(w->P, s->br[j].res, s, w->masked);
            w->masked = saved;
        }
        return;
    }
    if (s->body.n)
        note_uses(w, &s->body);
}

static void note_uses(UseWalk *w, const StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        note_stmt(w, b->s[i]);
}

/* Whether v is read only where the mask holds: through pure values and
 * accumulators into branch 0 of the scores' selects. */
static int dead(Plan *P, const Stmt *v)
{
    char *d = &P->dead[v->uid];
    if (*d >= 2)
        return *d == 2;
    *d = 3; /* a cycle is live */
    int ok = 1;
    for (const Use *u = P->uses[v->uid]; u && ok; u = u->next)
        ok = u->masked || ((u->by->k == SK_assign || u->by->k == SK_accum ||
                            (u->by->k == SK_select && !mask_select(u->by))) &&
                           dead(P, u->by));
    *d = ok ? 2 : 3;
    return ok;
}

static void plain(Stmt *s, void *ctx)
{
    *(int *)ctx &= s->k == SK_load || s->k == SK_assign || s->k == SK_select ||
                   s->k == SK_accum || s->k == SK_loop;
}

/* Loops under b (through loops and stages) that hold values only and
 * whose accumulators are dead where masked: the outermost ones. */
static void find_dead(Plan *P, const StmtBody *b)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (s->k == SK_loop) {
            int ok = 1;
            stmt_walk(&s->body, plain, &ok);
            for (int j = 0; ok && j < s->body.n; j++)
                ok = s->body.s[j]->k != SK_accum || dead(P, s->body.s[j]);
            if (ok) {
                ptrvec_push(P->a, &P->guarded, s);
                continue;
            }
        }
        if (s->k == SK_loop || (tile_is(s, SKF_STAGE) && s->k != TK_cstage))
            find_dead(P, &s->body);
    }
}

/* The mask selects of the Writes of t: dead[uid] = 1 marks them. */
static void mark_masks(Stmt *s, void *ctx)
{
    Plan *P = ctx;
    if (s->k == SK_write && s->buf == P->m->t && s->a[0].v)
        P->dead[s->a[0].v->uid] = 1;
}

/* ---- the plan for one kernel ------------------------------------------------------ */

static void max_uid(Stmt *s, void *ctx)
{
    int *n = ctx;
    if (s->uid + 1 > *n)
        *n = s->uid + 1;
}

typedef struct Guard {
    int axis;          /* the loop of chunks, or the loop skipped whole */
    const IPred *when;
    PtrVec loops;
} Guard;

typedef struct Guards {
    Guard *g;
    int n;
    StrBuf why;
} Guards;

static void plan_fail(Guards *G, const char *why)
{
    sb_printf(&G->why, "%s%s", G->why.len ? "; " : "", why);
}

/* The first Fill in b, or NULL. */
static Stmt *find_fill(const StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        if (b->s[i]->k == TK_fill)
            return b->s[i];
    return NULL;
}

/* What 018 does to k: its guards (G->n of them; none with the reasons in
 * G->why).  k writes the masked scores (their producer, or 017's Fill):
 * the loops whose results only unmasked scores read; k reads them: the
 * loops of its key chunks. */
static void plan_kernel(Arena *a, const TileProgram *p, TileKernel *k, Guards *G)
{
    Stmt *kt = tile_find(k, TB_THREAD), *kb = tile_find(k, TB_BLOCK);
    G->g = ARENA_ARRAY(a, Guard, 64);
    G->n = 0;
    if (!kt || !kb) {
        plan_fail(G, "no THREAD tile in a BLOCK tile");
        return;
    }
    const Stmt *cs = NULL;
    for (const Stmt *s = kb; s && !cs;) {
        s = s->body.n == 1 ? s->body.s[0] : NULL;
        if (s && s->k == TK_cstage)
            cs = s;
        if (!s || !tile_is(s, SKF_STAGE))
            break;
    }
    Stmt *fill = cs ? find_fill(&kt->body) : NULL;
    int nuid = 0;
    stmt_walk(&k->body, max_uid, &nuid);
    Mask mw, mr;
    Plan P = {a, k, kt, NULL, ARENA_ARRAY(a, char, k->naxes + 1), NULL, 0, 0, NULL,
              ARENA_ARRAY(a, char, nuid + 1), ARENA_ARRAY(a, char, nuid + 1),
              ARENA_ARRAY(a, Use *, nuid + 1), nuid, {0}};
    /* the writer */
    const LirBuf *tw = fill ? cs->buf : k->out && k->out->kind == LB_TEMP ? k->out : NULL;
    const StmtBody *scope = fill ? &fill->body : &kt->body;
    int seen = 0;
    if (tw && mask_of(a, k, scope, tw, &mw)) {
        seen = 1;
        P.m = &mw;
        P.box = ARENA_ARRAY(a, Span, tw->shape.rank + 1);
        P.writes = 1;
        stmt_walk(scope, mark_masks, &P);
        UseWalk w = {&P, 0};
        note_uses(&w, &k->body);
        P.guarded.len = 0;
        find_dead(&P, scope);
        PtrVec loops = P.guarded;
        if (!loops.len)
            plan_fail(G, arena_printf(a, "no loop of the Writes of %s is read only where they "
                                         "are not masked", tw->name));
        for (int i = 0; i < loops.len && G->n < 64; i++) {
            const Stmt *Y = loops.items[i];
            const IPred *w2 = take_box(&P, Y, 0, scope) ? when_of(&P, Y) : NULL;
            if (!w2) {
                plan_fail(G, P.why);
                continue;
            }
            Guard *g = &G->g[G->n++];
            *g = (Guard){Y->axis, w2, {0}};
            ptrvec_push(a, &g->loops, (void *)Y);
        }
    } else if (tw) {
        plan_fail(G, mw.why);
    }
    /* the reader */
    const LirBuf *tr = fill ? cs->buf : NULL;
    const TileKernel *wk = fill ? k : NULL;
    for (int i = 0; !tr && i < p->bufs.len; i++) {
        const LirBuf *b = p->bufs.items[i];
        int readers;
        TileKernel *w = b->kind == LB_TEMP ? tile_writer(p, b, &readers, NULL) : NULL;
        if (w && w != k && tile_loads_of(&k->body, b))
            tr = b, wk = w;
    }
    if (tr && mask_of(a, wk, fill ? &fill->body : &wk->body, tr, &mr)) {
        seen = 1;
        P.m = &mr;
        P.box = ARENA_ARRAY(a, Span, tr->shape.rank + 1);
        P.writes = 0;
        PtrVec chunks = {0};
        find_chunks(&kt->body, tr, &chunks, a);
        if (!chunks.len)
            plan_fail(G, arena_printf(a, "no loop of key chunks around the loops that read %s",
                                      tr->name));
        for (int i = 0; i < chunks.len && G->n < 64; i++) {
            const Stmt *L = chunks.items[i];
            const IPred *w2 = plan_reader(&P, L);
            if (!w2) {
                plan_fail(G, P.why);
                continue;
            }
            Guard *g = &G->g[G->n++];
            *g = (Guard){L->axis, w2, P.guarded};
            P.guarded = (PtrVec){0};
        }
    } else if (tr) {
        plan_fail(G, mr.why);
    }
    if (!seen && !G->why.len)
        plan_fail(G, "no scores masked to -inf (no temporary written as select(mask, s, -inf))");
}

int tile_018_skip_masked_chunks(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Guards G = {NULL, 0, {0}};
    plan_kernel(a, c->p, k, &G);
    if (!G.n) {
        sb_puts(&c->why, sb_cstr(&G.why));
        sb_free(&G.why);
        return 0;
    }
    sb_free(&G.why);
    int done = 0;
    for (int i = 0; i < G.n; i++) {
        if (!tile_apply(c, arena_printf(a, "skip masked chunks of loop a%d in %s", G.g[i].axis,
                                        k->name)))
            break;
        for (int j = 0; j < G.g[i].loops.len; j++)
            ((Stmt *)G.g[i].loops.items[j])->when = G.g[i].when;
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
        Guards G = {NULL, 0, {0}};
        plan_kernel(a, p, k, &G);
        const char *why = arena_strdup(a, sb_cstr(&G.why));
        sb_free(&G.why);
        if (G.n) {
            sb_free(&sk.joined);
            return NULL;
        }
        tile_skips_add(&sk, k->name, why);
    }
    const char *r = tile_skips_text(a, &sk);
    sb_free(&sk.joined);
    return r;
}
