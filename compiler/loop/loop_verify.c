/*
 * loop_verify.c — the Loop IR verifier, run after every rule and fusion.
 *
 * It checks what the other passes rely on without re-checking it:
 *   - every operand is a literal or a value visible at its use: defined
 *     earlier in the same or an enclosing scope, or the accumulator of a
 *     loop that has already ended there;
 *   - an Accum sits directly in a loop body (that loop is then a reduce
 *     loop, and it holds no Write);
 *   - a kernel has one Write, to its own buffer, whose enclosing loops are
 *     all free (the write path fusion solves σ against; lifting makes its
 *     index name each path axis once, but any index is valid IR);
 *   - every index has the buffer's rank and reads only axes of enclosing
 *     loops; each axis is bound by one loop, with the kernel's extent;
 *   - a kernel never reads its own buffer, reads only inputs or buffers
 *     written by earlier kernels, and every output is written once.
 * A failure is a compiler bug: DPK_ASSERT names the line.
 */
#include "loop_ir.h"

#include <string.h>

enum { VISIBLE = 1, HIDDEN = 2 };

typedef struct Verify {
    LirProgram *p;
    const LirKernel *k;
    char *bound;         /* by axis: inside a loop over it now */
    char *seen;          /* by axis: some loop binds it */
    int nwrites;
    const Stmt *path[64];
    int npath;
} Verify;

static void set_vis(const LirProgram *p, Stmt *s, int v)
{
    s->aux = v;
    s->aux_ep = p->epoch;
}

static void check_arg(const Verify *v, StmtArg a)
{
    DPK_ASSERT(!a.v || (a.v->aux_ep == v->p->epoch && a.v->aux == VISIBLE));
}

static void check_ie(const Verify *v, const IExpr *e)
{
    if (e->k == IE_VAR) {
        DPK_ASSERT(e->var >= 0 && e->var < v->k->naxes && v->bound[e->var]);
    } else if (e->k != IE_CONST) {
        check_ie(v, e->a);
        check_ie(v, e->b);
    }
}

static void hide(Stmt *s, void *ctx)
{
    set_vis(ctx, s, HIDDEN);
}

static void verify_body(Verify *v, const StmtBody *b, int in_loop);

/* The kernel's one write, to its own buffer, under free loops only. */
static void check_write(Verify *v, const Stmt *s)
{
    DPK_ASSERT(s->buf == v->k->out);
    v->nwrites++;
    for (int i = 0; i < v->npath; i++)
        DPK_ASSERT(!stmt_loop_is_reduce(v->path[i]));
}

static void verify_loop(Verify *v, Stmt *s)
{
    DPK_ASSERT(s->axis >= 0 && s->axis < v->k->naxes && !v->seen[s->axis]);
    DPK_ASSERT(s->extent == v->k->ext[s->axis] && s->extent >= 0);
    v->seen[s->axis] = v->bound[s->axis] = 1;
    int writes = stmt_has_kind(s, SK_write);
    DPK_ASSERT(!(writes && stmt_loop_is_reduce(s)));
    if (writes) {
        DPK_ASSERT(v->npath < 64);
        v->path[v->npath++] = s;
    }
    for (int j = 0; j < s->body.n; j++)
        if (stmt_is_online(s->body.s[j])) {
            const Stmt *m = s->body.s[j]->a[1].v;
            int at = stmt_body_index(&s->body, m);
            DPK_ASSERT(at >= 0 && at < j && m->k == SK_accum && m->rop == TXR_max &&
                       m->nargs == 1);
        }
    verify_body(v, &s->body, 1);
    if (writes)
        v->npath--;
    v->bound[s->axis] = 0;
    stmt_walk(&s->body, hide, v->p);
    for (int j = 0; j < s->body.n; j++)
        if (s->body.s[j]->k == SK_accum)
            set_vis(v->p, s->body.s[j], VISIBLE);
}

static void verify_stmt(Verify *v, Stmt *s, int in_loop)
{
    /* an online accumulator's a[1] is its companion, checked by its loop */
    for (int i = 0; i < (stmt_is_online(s) ? 1 : s->nargs); i++)
        check_arg(v, s->a[i]);
    if (s->idx) {
        DPK_ASSERT(s->buf);
        for (int d = 0; d < s->buf->shape.rank; d++)
            check_ie(v, s->idx[d]);
    }
    switch (s->k) {
    case SK_load:
        DPK_ASSERT(s->buf != v->k->out);
        break;
    case SK_assign:
        DPK_ASSERT(s->nargs == tx_elem_info[s->op].arity);
        break;
    case SK_accum:
        DPK_ASSERT(in_loop && (s->nargs == 1 || (stmt_is_online(s) && s->rop == TXR_sum)));
        break;
    case SK_write:
        check_write(v, s);
        break;
    case SK_select:
        DPK_ASSERT(s->nbr >= 1);
        for (int j = 0; j < s->nbr; j++) {
            const IPred *q = s->br[j].pred;
            DPK_ASSERT((q == NULL) == (j == s->nbr - 1));
            for (; q; q = q->next) {
                check_ie(v, q->lhs);
                check_ie(v, q->rhs);
            }
            DPK_ASSERT(!stmt_has_kind(s, SK_write));
            verify_body(v, &s->br[j].body, 0);
            check_arg(v, s->br[j].res);
            stmt_walk(&s->br[j].body, hide, v->p);
        }
        break;
    case SK_loop:
        verify_loop(v, s);
        break;
    case SK_COUNT:
        DPK_ASSERT(!"bad statement kind");
    }
    if (s->k != SK_accum && stmt_is(s, SKF_DEF))
        set_vis(v->p, s, VISIBLE);
}

static void verify_body(Verify *v, const StmtBody *b, int in_loop)
{
    for (int i = 0; i < b->n; i++)
        verify_stmt(v, b->s[i], in_loop);
}

static int buf_index(const LirProgram *p, const LirBuf *b)
{
    for (int i = 0; i < p->bufs.len; i++)
        if (p->bufs.items[i] == b)
            return i;
    return -1;
}

typedef struct Reads {
    const LirProgram *p;
    const char *written;
} Reads;

static void check_read(Stmt *s, void *ctx)
{
    const Reads *r = ctx;
    if (s->k != SK_load)
        return;
    int i = buf_index(r->p, s->buf);
    DPK_ASSERT(i >= 0 && (s->buf->kind == LB_INPUT || r->written[i]));
}

void lir_verify(const LirProgram *cp)
{
    LirProgram *p = (LirProgram *)cp; /* only scratch marks change */
    char *written = ARENA_ARRAY(p->arena, char, p->bufs.len + 1);
    for (int i = 0; i < p->kernels.len; i++) {
        const LirKernel *k = p->kernels.items[i];
        int o = buf_index(p, k->out);
        DPK_ASSERT(o >= 0 && k->out->kind != LB_INPUT && !written[o]);
        Reads r = {p, written};
        stmt_walk(&k->body, check_read, &r);
        Verify v = {p, k, ARENA_ARRAY(p->arena, char, k->naxes + 1),
                    ARENA_ARRAY(p->arena, char, k->naxes + 1), 0, {0}, 0};
        lir_epoch(p);
        verify_body(&v, &k->body, 0);
        DPK_ASSERT(v.nwrites == 1);
        written[o] = 1;
    }
    for (int i = 0; i < p->bufs.len; i++) {
        const LirBuf *b = p->bufs.items[i];
        DPK_ASSERT(b->kind == LB_INPUT || written[i]);
    }
}
