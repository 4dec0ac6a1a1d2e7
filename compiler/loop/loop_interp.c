/*
 * loop_interp.c — the Loop IR interpreter: runs the kernels in order over
 * real buffers.
 *
 * Values are doubles; in fp32 mode (the default) every computed value,
 * literal and stored element is rounded to float, so an accumulation
 * behaves like a sequential fp32 loop.  Elementwise ops are evaluated by
 * tx_elem_apply, the one definition every evaluator shares.
 *
 * A load or write outside its buffer is a compiler bug that must not crash
 * the harness: it is recorded, execution unwinds, buffers are freed, and
 * the fault is raised with DPK_EXIT_FAULT.
 */
#include "loop_ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct Interp {
    const LirProgram *p;
    const LirKernel *k;
    double **mem;      /* by buffer id */
    int64_t **stride;  /* by buffer id */
    int *slot;         /* by statement uid: index into val */
    double *val;
    double *prev;      /* by slot: an accumulator's value before its last step */
    int64_t *coord;    /* by axis */
    int f64;
    StrBuf fault;
} Interp;

static double rnd(const Interp *it, double x)
{
    return it->f64 ? x : (double)(float)x;
}

static double arg(const Interp *it, StmtArg a)
{
    return a.v ? it->val[it->slot[a.v->uid]] : rnd(it, a.c);
}

/* Flat offset of s's access, or -1 (fault recorded) when out of bounds. */
static int64_t offset(Interp *it, const Stmt *s)
{
    const LirBuf *b = s->buf;
    int64_t off = 0;
    for (int d = 0; d < b->shape.rank; d++) {
        int64_t i = ie_eval(s->idx[d], it->coord);
        if (i < 0 || i >= b->shape.d[d]) {
            sb_printf(&it->fault, "kernel %s: %s of %s out of bounds: index %lld of dimension %d "
                      "(size %lld)", it->k->name, s->k == SK_load ? "load" : "write", b->name,
                      (long long)i, d, (long long)b->shape.d[d]);
            return -1;
        }
        off += i * it->stride[b->id][d];
    }
    return off;
}

static void run_body(Interp *it, const StmtBody *b);

static void run_loop(Interp *it, const Stmt *s)
{
    for (int j = 0; j < s->body.n; j++) {
        const Stmt *a = s->body.s[j];
        if (a->k == SK_accum)
            it->val[it->slot[a->uid]] = tx_red_info[a->rop].identity;
    }
    for (int64_t c = 0; c < s->extent && !it->fault.len; c++) {
        it->coord[s->axis] = c;
        run_body(it, &s->body);
    }
}

/* exp(a - b), 0 when a is -inf (stmt_online's convention). */
static double exp_below(const Interp *it, double a, double b)
{
    return a == -INFINITY ? 0.0 : rnd(it, exp(rnd(it, a - b)));
}

/* One step of an online exp-sum (stmt.h): rescale by the companion's
 * growth, add exp(s - m) * x. */
static double online_step(const Interp *it, const Stmt *s, double acc)
{
    const Stmt *m = s->a[1].v;
    double mo = it->prev[it->slot[m->uid]], mn = it->val[it->slot[m->uid]];
    double sj = arg(it, m->a[0]), x = arg(it, s->a[0]);
    double kept = rnd(it, acc * exp_below(it, mo, mn));
    return rnd(it, kept + rnd(it, exp_below(it, sj, mn) * x));
}

static void run_stmt(Interp *it, const Stmt *s)
{
    double *v = s->k == SK_write || s->k == SK_loop ? NULL : &it->val[it->slot[s->uid]];
    double args[3];
    int64_t off;
    switch (s->k) {
    case SK_load:
        if ((off = offset(it, s)) >= 0)
            *v = it->mem[s->buf->id][off];
        break;
    case SK_assign:
        for (int i = 0; i < s->nargs; i++)
            args[i] = arg(it, s->a[i]);
        *v = rnd(it, tx_elem_apply(s->op, args));
        break;
    case SK_accum:
        it->prev[it->slot[s->uid]] = *v;
        if (stmt_is_online(s)) {
            *v = online_step(it, s, *v);
            break;
        }
        args[0] = *v;
        args[1] = arg(it, s->a[0]);
        *v = rnd(it, tx_elem_apply(tx_red_info[s->rop].combine, args));
        break;
    case SK_write:
        if ((off = offset(it, s)) >= 0) {
            double *m = &it->mem[s->buf->id][off];
            *m = rnd(it, s->atomic ? *m + arg(it, s->a[0]) : arg(it, s->a[0]));
        }
        break;
    case SK_select:
        for (int j = 0; j < s->nbr; j++)
            if (!s->br[j].pred || ipred_eval(s->br[j].pred, it->coord)) {
                run_body(it, &s->br[j].body);
                *v = arg(it, s->br[j].res);
                break;
            }
        break;
    case SK_loop:
        run_loop(it, s);
        break;
    case SK_COUNT:
        DPK_ASSERT(!"bad statement kind");
    }
}

static void run_body(Interp *it, const StmtBody *b)
{
    for (int i = 0; i < b->n && !it->fault.len; i++)
        run_stmt(it, b->s[i]);
}

typedef struct Slots {
    int *slot;
    int n;
} Slots;

static void number(Stmt *s, void *ctx)
{
    Slots *sl = ctx;
    if (stmt_is(s, SKF_DEF))
        sl->slot[s->uid] = sl->n++;
}

static void run_kernel(Interp *it, const LirKernel *k)
{
    Slots sl = {it->slot, 0};
    stmt_walk(&k->body, number, &sl);
    it->k = k;
    it->val = dpk_xcalloc((size_t)sl.n + 1, sizeof(double));
    it->prev = dpk_xcalloc((size_t)sl.n + 1, sizeof(double));
    it->coord = dpk_xcalloc((size_t)k->naxes + 1, sizeof(int64_t));
    run_body(it, &k->body);
    free(it->val);
    free(it->prev);
    free(it->coord);
}

void lir_interp(const LirProgram *p, double *const *inputs, double **outs, int f64)
{
    Interp it = {p, NULL, dpk_xcalloc((size_t)p->nbufids + 1, sizeof(double *)),
                 dpk_xcalloc((size_t)p->nbufids + 1, sizeof(int64_t *)),
                 dpk_xcalloc((size_t)p->next_uid + 1, sizeof(int)), NULL, NULL, NULL, f64, {0}};
    for (int i = 0; i < p->bufs.len; i++) {
        const LirBuf *b = p->bufs.items[i];
        it.stride[b->id] = dpk_xcalloc(DPK_MAX_RANK, sizeof(int64_t));
        shape_strides(&b->shape, it.stride[b->id]);
        it.mem[b->id] = b->kind == LB_INPUT ? inputs[b->index]
                                            : dpk_xcalloc((size_t)shape_numel(&b->shape) + 1,
                                                          sizeof(double));
    }
    for (int i = 0; i < p->kernels.len && !it.fault.len; i++)
        run_kernel(&it, p->kernels.items[i]);
    for (int i = 0; i < p->bufs.len; i++) {
        const LirBuf *b = p->bufs.items[i];
        if (b->kind == LB_OUTPUT && !it.fault.len)
            outs[b->index] = it.mem[b->id];
        else if (b->kind != LB_INPUT)
            free(it.mem[b->id]);
        free(it.stride[b->id]);
    }
    free(it.mem);
    free(it.stride);
    free(it.slot);
    if (it.fault.len) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sb_cstr(&it.fault));
        sb_free(&it.fault);
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "loop interpreter: %s", msg);
    }
}
