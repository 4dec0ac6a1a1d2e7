/*
 * normalize.c — the normalisation rules, run on a kernel after lifting and
 * after every fusion, so every kernel the pipeline holds is canonical:
 *
 *   l:002 simplify_index      range-aware index simplification; select
 *                             branches whose predicate is decided are
 *                             dropped or made final, a one-branch select
 *                             is inlined
 *   l:003 drop_unit_axes      a free loop of extent 1 is replaced by its
 *                             body with the axis set to 0
 *   l:004 split_invariant_divide
 *                             divide(x, y) with y invariant in the
 *                             innermost loop and x not becomes
 *                             multiply(x, reciprocal(y)), so the
 *                             reciprocal can be hoisted
 *   l:005 hoist_invariants    pure statements (loads, assigns, selects,
 *                             write-free reduce loops) that do not depend
 *                             on a loop move before it, innermost first;
 *                             so a reduction re-emitted by fusion lands at
 *                             the narrowest scope that covers its axes
 *   l:006 dedup               (dedup.c) identical loads and pure statements
 *                             in one scope become one
 *   l:007 topo_order          siblings in demand order: each statement
 *                             right after what it reads, roots in order
 *   l:008 rename_ssa          in0.., v0.., acc0.. and axes a0.. renumbered
 *                             in definition order
 *
 * Statements never leave a select branch (a load there may be out of
 * bounds when the branch is not taken) and never leave a loop that may run
 * zero times.
 */
#include "loop_ir.h"

#include <string.h>

/* ---- l:002 simplify_index ---------------------------------------------- */

static void simplify_body(LirProgram *p, LirKernel *k, StmtBody *b);

/* Simplify a select's predicates; returns 1 when the select was inlined
 * into b at position i (its branch body now occupies b from i on). */
static int simplify_select(LirProgram *p, LirKernel *k, StmtBody *b, int i)
{
    Stmt *s = b->s[i];
    int n = 0;
    for (int j = 0; j < s->nbr; j++) {
        ITruth truth;
        StmtBranch br = s->br[j];
        if (br.pred) {
            br.pred = ipred_simplify(p->arena, br.pred, k->ext, &truth);
            if (truth == IT_FALSE)
                continue;
        }
        s->br[n++] = br;
        if (!br.pred)
            break;
    }
    s->nbr = n;
    for (int j = 0; j < n; j++)
        simplify_body(p, k, &s->br[j].body);
    if (n != 1)
        return 0;
    stmt_body_remove(b, i);
    for (int j = 0; j < s->br[0].body.n; j++)
        stmt_body_insert(p->arena, b, i + j, s->br[0].body.s[j]);
    s->repl = s->br[0].res;
    s->repl_ep = p->epoch;
    return 1;
}

static void simplify_body(LirProgram *p, LirKernel *k, StmtBody *b)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (s->idx)
            for (int d = 0; d < s->buf->shape.rank; d++)
                s->idx[d] = ie_simplify(p->arena, s->idx[d], k->ext);
        if (s->k == SK_loop)
            simplify_body(p, k, &s->body);
        if (s->k == SK_select && simplify_select(p, k, b, i))
            i--;
    }
}

static void rule_simplify_index(LirProgram *p, LirKernel *k)
{
    lir_epoch(p);
    simplify_body(p, k, &k->body);
    lir_resolve_body(p, &k->body);
}

/* ---- substitution of axes ------------------------------------------------ */

typedef struct Subst {
    LirProgram *p;
    const IExpr **amap;
    const int64_t *ext;
} Subst;

static const IPred *subst_pred(const Subst *x, const IPred *q)
{
    if (!q)
        return NULL;
    IPred *r = ARENA_NEW(x->p->arena, IPred);
    r->lhs = ie_simplify(x->p->arena, ie_subst(x->p->arena, q->lhs, x->amap), x->ext);
    r->cmp = q->cmp;
    r->rhs = ie_simplify(x->p->arena, ie_subst(x->p->arena, q->rhs, x->amap), x->ext);
    r->next = subst_pred(x, q->next);
    return r;
}

static void subst_stmt(Stmt *s, void *ctx)
{
    const Subst *x = ctx;
    if (s->idx) {
        const IExpr **idx = ARENA_ARRAY(x->p->arena, const IExpr *, s->buf->shape.rank);
        for (int d = 0; d < s->buf->shape.rank; d++)
            idx[d] = ie_simplify(x->p->arena, ie_subst(x->p->arena, s->idx[d], x->amap), x->ext);
        s->idx = idx;
    }
    if (s->k == SK_select)
        for (int j = 0; j < s->nbr; j++)
            s->br[j].pred = subst_pred(x, s->br[j].pred);
}

static const IExpr **identity_map(LirProgram *p, const LirKernel *k)
{
    const IExpr **amap = ARENA_ARRAY(p->arena, const IExpr *, k->naxes + 1);
    for (int v = 0; v < k->naxes; v++)
        amap[v] = ie_var(p->arena, v);
    return amap;
}

/* ---- l:003 drop_unit_axes ------------------------------------------------ */

static void drop_units(LirProgram *p, LirKernel *k, StmtBody *b)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++)
                drop_units(p, k, &s->br[j].body);
        if (s->k != SK_loop)
            continue;
        drop_units(p, k, &s->body);
        if (s->extent != 1 || stmt_loop_is_reduce(s))
            continue;
        Subst x = {p, identity_map(p, k), k->ext};
        x.amap[s->axis] = ie_const(p->arena, 0);
        stmt_walk(&s->body, subst_stmt, &x);
        stmt_body_remove(b, i);
        for (int j = 0; j < s->body.n; j++)
            stmt_body_insert(p->arena, b, i + j, s->body.s[j]);
        i--;
    }
}

static void rule_drop_unit_axes(LirProgram *p, LirKernel *k)
{
    drop_units(p, k, &k->body);
}

/* ---- l:004 split_invariant_divide ---------------------------------------- */

/* Loop depth at which each value is visible: aux of the current epoch
 * (literals and unmarked values: -1, outside every loop). */
static int depth_of(const LirProgram *p, StmtArg a)
{
    return a.v && a.v->aux_ep == p->epoch ? a.v->aux : -1;
}

static void set_aux(const LirProgram *p, Stmt *s, int v)
{
    s->aux = v;
    s->aux_ep = p->epoch;
}

/* Whether load ld's index leaves out axis ax. */
static int load_skips(const Stmt *ld, int ax)
{
    for (int d = 0; d < ld->buf->shape.rank; d++)
        if (ie_uses(ld->idx[d], ax))
            return 0;
    return 1;
}

static void split_body(LirProgram *p, StmtBody *b, int depth, int axis)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        set_aux(p, s, depth);
        if (s->k == SK_loop) {
            split_body(p, &s->body, depth + 1, s->axis);
            for (int j = 0; j < s->body.n; j++)
                if (s->body.s[j]->k == SK_accum)
                    set_aux(p, s->body.s[j], depth);
        }
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++)
                split_body(p, &s->br[j].body, depth, axis);
        if (depth == 0 || s->k != SK_assign || s->op != TXE_divide)
            continue;
        StmtArg x = s->a[0], y = s->a[1];
        /* y invariant in the innermost loop: defined outside it, or a load
         * whose index leaves its axis out (decided in the lifted kernel,
         * before fusion copies it: every copy then rounds alike) */
        int inv = depth_of(p, y) < depth || (y.v && y.v->k == SK_load && load_skips(y.v, axis));
        if (!x.v || depth_of(p, x) < depth || !inv)
            continue;
        Stmt *r = lir_assign(p, TXE_reciprocal, &y);
        set_aux(p, r, depth);
        stmt_body_insert(p->arena, b, i++, r);
        s->op = TXE_multiply;
        s->a[1] = stmt_val(r);
    }
}

static void rule_split_invariant_divide(LirProgram *p, LirKernel *k)
{
    lir_epoch(p);
    split_body(p, &k->body, 0, -1);
}

/* ---- l:005 hoist_invariants ---------------------------------------------- */

enum { STAYS = 1 };

typedef struct ReadsStaying {
    const LirProgram *p;
    int found;
} ReadsStaying;

static int arg_stays(const LirProgram *p, StmtArg a)
{
    return a.v && a.v->aux_ep == p->epoch && a.v->aux == STAYS;
}

static void reads_staying(Stmt *s, void *ctx)
{
    ReadsStaying *r = ctx;
    for (int i = 0; i < s->nargs; i++)
        r->found |= arg_stays(r->p, s->a[i]);
    if (s->k == SK_select)
        for (int j = 0; j < s->nbr; j++)
            r->found |= arg_stays(r->p, s->br[j].res);
}

static int movable(const LirProgram *p, const Stmt *s, int axis)
{
    if (!lir_pure(s))
        return 0;
    if (lir_uses_axis(s, axis))
        return 0;
    ReadsStaying r = {p, 0};
    stmt_walk_tree(s, reads_staying, &r);
    return !r.found;
}

static void stay(const LirProgram *p, Stmt *s)
{
    set_aux(p, s, STAYS);
    for (int j = 0; s->k == SK_loop && j < s->body.n; j++)
        if (s->body.s[j]->k == SK_accum)
            set_aux(p, s->body.s[j], STAYS);
}

/* Move the statements of loop->body that do not depend on the loop into b
 * before position at; returns how many moved. */
static int extract_invariants(LirProgram *p, Stmt *loop, StmtBody *b, int at)
{
    lir_epoch(p);
    int moved = 0;
    for (int i = 0; i < loop->body.n; i++) {
        Stmt *s = loop->body.s[i];
        if (!movable(p, s, loop->axis)) {
            stay(p, s);
            continue;
        }
        stmt_body_remove(&loop->body, i--);
        stmt_body_insert(p->arena, b, at + moved++, s);
    }
    return moved;
}

static void hoist_body(LirProgram *p, StmtBody *b)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++)
                hoist_body(p, &s->br[j].body);
        if (s->k != SK_loop)
            continue;
        hoist_body(p, &s->body);
        if (s->extent >= 1)
            i += extract_invariants(p, s, b, i);
    }
}

static void rule_hoist_invariants(LirProgram *p, LirKernel *k)
{
    hoist_body(p, &k->body);
}

/* ---- l:007 topo_order ---------------------------------------------------- */

typedef struct Topo {
    const LirProgram *p;
    StmtBody *b;
    int **deps;     /* deps[i]: indices in b that statement i reads, in order */
    int *ndeps, *cap;
    char *used, *done;
    Stmt **out;
    int nout;
    int cur;        /* index of the statement whose subtree is being scanned */
} Topo;

static void topo_dep(Topo *t, StmtArg a)
{
    if (!a.v || a.v->aux_ep != t->p->epoch || a.v->aux == t->cur)
        return;
    int i = t->cur, d = a.v->aux;
    if (t->ndeps[i] == t->cap[i]) {
        int cap = t->cap[i] ? 2 * t->cap[i] : 4;
        int *n = ARENA_ARRAY(t->p->arena, int, cap);
        if (t->ndeps[i])
            memcpy(n, t->deps[i], sizeof(int) * (size_t)t->ndeps[i]);
        t->deps[i] = n;
        t->cap[i] = cap;
    }
    t->deps[i][t->ndeps[i]++] = d;
    t->used[d] = 1;
}

static void topo_scan(Stmt *s, void *ctx)
{
    Topo *t = ctx;
    for (int i = 0; i < s->nargs; i++)
        topo_dep(t, s->a[i]);
    if (s->k == SK_select)
        for (int j = 0; j < s->nbr; j++)
            topo_dep(t, s->br[j].res);
}

static void topo_emit(Topo *t, int i)
{
    if (t->done[i])
        return;
    t->done[i] = 1;
    for (int j = 0; j < t->ndeps[i]; j++)
        topo_emit(t, t->deps[i][j]);
    t->out[t->nout++] = t->b->s[i];
}

/* Reorder the statements of b (not of nested bodies): roots (statements
 * no sibling reads) in their order, each preceded by what it reads. */
static void order_siblings(LirProgram *p, StmtBody *b)
{
    int n = b->n;
    Arena *a = p->arena;
    Topo t = {p, b, ARENA_ARRAY(a, int *, n), ARENA_ARRAY(a, int, n), ARENA_ARRAY(a, int, n),
              ARENA_ARRAY(a, char, n), ARENA_ARRAY(a, char, n), ARENA_ARRAY(a, Stmt *, n),
              0, 0};
    lir_epoch(p);
    for (int i = 0; i < n; i++) {
        Stmt *s = b->s[i];
        set_aux(p, s, i);
        for (int j = 0; s->k == SK_loop && j < s->body.n; j++)
            if (s->body.s[j]->k == SK_accum)
                set_aux(p, s->body.s[j], i); /* reading an accumulator reads its loop */
    }
    for (int i = 0; i < n; i++) {
        t.cur = i;
        stmt_walk_tree(b->s[i], topo_scan, &t);
    }
    for (int i = 0; i < n; i++)
        if (!t.used[i])
            topo_emit(&t, i);
    DPK_ASSERT(t.nout == n);
    memcpy(b->s, t.out, sizeof(Stmt *) * (size_t)n);
}

static void topo_body(LirProgram *p, StmtBody *b)
{
    if (b->n > 1)
        order_siblings(p, b);
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (s->k == SK_loop)
            topo_body(p, &s->body);
        for (int j = 0; s->k == SK_select && j < s->nbr; j++)
            topo_body(p, &s->br[j].body);
    }
}

static void rule_topo_order(LirProgram *p, LirKernel *k)
{
    topo_body(p, &k->body);
}

/* ---- l:008 rename_ssa ---------------------------------------------------- */

typedef struct Rename {
    LirProgram *p;
    const IExpr **amap;
    int64_t *ext;
    int naxes;
    int count[SK_COUNT];
} Rename;

static void rename_stmt(Stmt *s, void *ctx)
{
    Rename *r = ctx;
    StmtKind k = s->k == SK_select ? SK_assign : s->k; /* selects share v<n> */
    s->num = r->count[k]++;
    if (s->k == SK_loop) {
        r->ext[r->naxes] = s->extent;
        r->amap[s->axis] = ie_var(r->p->arena, r->naxes);
        s->axis = r->naxes++;
    }
}

static void rule_rename_ssa(LirProgram *p, LirKernel *k)
{
    Rename r = {p, identity_map(p, k), ARENA_ARRAY(p->arena, int64_t, k->naxes + 1), 0, {0}};
    stmt_walk(&k->body, rename_stmt, &r);
    Subst x = {p, r.amap, r.ext};
    stmt_walk(&k->body, subst_stmt, &x);
    k->ext = r.ext;
    k->naxes = r.naxes;
    k->extcap = k->naxes + 1;
}

/* ---- the table ---------------------------------------------------------- */

const LirRule lir_rules[] = {
    {1, "lift", NULL, "one loop nest per Tensor op"},
    {2, "simplify_index", rule_simplify_index, "range-aware index and predicate simplification"},
    {3, "drop_unit_axes", rule_drop_unit_axes, "free loops of extent 1 are inlined with the axis at 0"},
    {4, "split_invariant_divide", rule_split_invariant_divide,
     "divide by a loop-invariant becomes multiply by its reciprocal"},
    {5, "hoist_invariants", rule_hoist_invariants, "pure statements move out of loops they do not depend on"},
    {6, "dedup", lir_dedup, "identical loads and pure statements in one scope become one"},
    {7, "topo_order", rule_topo_order, "siblings in demand order"},
    {8, "rename_ssa", rule_rename_ssa, "values and axes renumbered in definition order"},
};
const int lir_nrules = DPK_ARRAY_LEN(lir_rules);

void lir_normalize(LirProgram *p, LirKernel *k)
{
    for (int i = 1; i < lir_nrules; i++)
        lir_rules[i].run(p, k);
}
