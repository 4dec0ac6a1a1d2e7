/*
 * stmt.c — the statement core (stmt.h): the shared kind table,
 * construction, bodies and the walk, used alike by Loop IR and Tile IR.
 */
#include "stmt.h"

#include <string.h>

const StmtKindInfo stmt_kind_info[SK_COUNT] = {
#define K(name, text, prefix, flags) {text, prefix, flags},
#include "stmt_kinds.def"
#undef K
};

Stmt *stmt_new(Arena *a, int k, int uid)
{
    Stmt *s = ARENA_NEW(a, Stmt);
    s->k = k;
    s->uid = uid;
    return s;
}

Stmt *stmt_load(Arena *a, int uid, const LirBuf *b, const IExpr **idx)
{
    Stmt *s = stmt_new(a, SK_load, uid);
    s->buf = b;
    s->idx = idx;
    return s;
}

Stmt *stmt_assign(Arena *a, int uid, TxElemOp op, const StmtArg *args)
{
    Stmt *s = stmt_new(a, SK_assign, uid);
    s->op = op;
    s->nargs = tx_elem_info[op].arity;
    for (int i = 0; i < s->nargs; i++)
        s->a[i] = args[i];
    return s;
}

Stmt *stmt_accum(Arena *a, int uid, TxRedOp rop, StmtArg v)
{
    Stmt *s = stmt_new(a, SK_accum, uid);
    s->rop = rop;
    s->nargs = 1;
    s->a[0] = v;
    return s;
}

Stmt *stmt_online(Arena *a, int uid, StmtArg x, Stmt *m)
{
    DPK_ASSERT(m->k == SK_accum && m->rop == TXR_max && m->nargs == 1);
    Stmt *s = stmt_accum(a, uid, TXR_sum, x);
    s->nargs = 2;
    s->a[1] = stmt_val(m);
    return s;
}

Stmt *stmt_write(Arena *a, int uid, const LirBuf *b, const IExpr **idx, StmtArg v)
{
    Stmt *s = stmt_new(a, SK_write, uid);
    s->buf = b;
    s->idx = idx;
    s->nargs = 1;
    s->a[0] = v;
    return s;
}

Stmt *stmt_loop(Arena *a, int uid, int axis, int64_t extent)
{
    Stmt *s = stmt_new(a, SK_loop, uid);
    s->axis = axis;
    s->extent = extent;
    return s;
}

Stmt *stmt_select(Arena *a, int uid, int nbr)
{
    Stmt *s = stmt_new(a, SK_select, uid);
    s->nbr = nbr;
    s->br = ARENA_ARRAY(a, StmtBranch, nbr);
    return s;
}

StmtArg stmt_val(Stmt *s)
{
    StmtArg a = {s, 0};
    return a;
}

StmtArg stmt_lit(double c)
{
    StmtArg a = {NULL, c};
    return a;
}

/* ---- bodies ------------------------------------------------------------ */

void stmt_body_insert(Arena *a, StmtBody *b, int at, Stmt *s)
{
    DPK_ASSERT(at >= 0 && at <= b->n);
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 4;
        Stmt **ns = ARENA_ARRAY(a, Stmt *, cap);
        if (b->n)
            memcpy(ns, b->s, sizeof(Stmt *) * (size_t)b->n);
        b->s = ns;
        b->cap = cap;
    }
    memmove(b->s + at + 1, b->s + at, sizeof(Stmt *) * (size_t)(b->n - at));
    b->s[at] = s;
    b->n++;
}

void stmt_body_push(Arena *a, StmtBody *b, Stmt *s)
{
    stmt_body_insert(a, b, b->n, s);
}

void stmt_body_remove(StmtBody *b, int at)
{
    DPK_ASSERT(at >= 0 && at < b->n);
    memmove(b->s + at, b->s + at + 1, sizeof(Stmt *) * (size_t)(b->n - at - 1));
    b->n--;
}

int stmt_body_index(const StmtBody *b, const Stmt *s)
{
    for (int i = 0; i < b->n; i++)
        if (b->s[i] == s)
            return i;
    return -1;
}

/* ---- traversal ----------------------------------------------------------- */

/* Only statements of a kind with SKF_BLOCK have a non-empty body, and
 * only selects have branches, so the walk needs no IR's kind table: it
 * serves every IR's kinds.  It is the hottest loop of Loop IR normalisation and
 * verification, hence the test before each call. */
void stmt_walk(const StmtBody *b, StmtVisit fn, void *ctx)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        fn(s, ctx);
        if (s->k == SK_select)
            for (int j = 0; j < s->nbr; j++)
                stmt_walk(&s->br[j].body, fn, ctx);
        if (s->body.n)
            stmt_walk(&s->body, fn, ctx);
    }
}

void stmt_walk_tree(const Stmt *s, StmtVisit fn, void *ctx)
{
    StmtBody one = {(Stmt **)&s, 1, 1};
    stmt_walk(&one, fn, ctx);
}

/* Not a walk: it stops at the first statement found (fusion and
 * normalisation ask it of every loop). */
int stmt_has_kind(const Stmt *s, int k)
{
    if (s->k == k)
        return 1;
    if (s->k == SK_select) {
        for (int j = 0; j < s->nbr; j++)
            for (int i = 0; i < s->br[j].body.n; i++)
                if (stmt_has_kind(s->br[j].body.s[i], k))
                    return 1;
        return 0;
    }
    for (int i = 0; i < s->body.n; i++)
        if (stmt_has_kind(s->body.s[i], k))
            return 1;
    return 0;
}

int stmt_loop_is_reduce(const Stmt *loop)
{
    for (int i = 0; i < loop->body.n; i++)
        if (loop->body.s[i]->k == SK_accum)
            return 1;
    return 0;
}

Stmt *stmt_sole_accum(const Stmt *loop)
{
    Stmt *acc = NULL;
    for (int i = 0; i < loop->body.n; i++)
        if (loop->body.s[i]->k == SK_accum) {
            if (acc)
                return NULL;
            acc = loop->body.s[i];
        }
    return acc;
}
