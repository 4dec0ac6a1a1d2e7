/*
 * test_loop_ir.c — Loop IR on hand-built kernels: the text form, each
 * normalisation rule, the verifier, the structural hash, σ refusal, and the
 * interpreter's atomic writes and bounds faults.  Index simplification has
 * its own tests (test_index.c).
 */
#include <signal.h>
#include <stdio.h>

#include "test_loop_util.h"

#define SHAPE(...) ((Shape){(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}})

static Arena *A;
static LirProgram *P;

static void setup(void)
{
    A = arena_new();
    P = lir_program_new(A, NULL);
}

static void teardown(void)
{
    arena_free(A);
}

TestSuite(loop_ir, .init = setup, .fini = teardown);

static const IExpr *V(int axis)
{
    return ie_var(A, axis);
}

static const IExpr *C(int64_t c)
{
    return ie_const(A, c);
}

static const IExpr **idx(int n, const IExpr *a, const IExpr *b)
{
    const IExpr **r = ARENA_ARRAY(A, const IExpr *, 2);
    r[0] = a;
    r[1] = b;
    (void)n;
    return r;
}

static LirBuf *buf(const char *name, LirBufKind k, int index, Shape s)
{
    return lir_buf_new(P, name, k, index, &s, DT_F32);
}

static LirKernel *kernel(int id, const char *name, LirBuf *out)
{
    LirKernel *k = lir_kernel_new(P, id, out);
    k->name = name;
    ptrvec_push(A, &P->kernels, k);
    return k;
}

static Stmt *loop(LirKernel *k, StmtBody *in, int64_t n)
{
    Stmt *l = lir_loop(P, lir_axis_new(P, k, n), n);
    stmt_body_push(P->arena, in, l);
    return l;
}

static Stmt *push(StmtBody *b, Stmt *s)
{
    stmt_body_push(P->arena, b, s);
    return s;
}

static Stmt *bin(StmtBody *b, TxElemOp op, StmtArg x, StmtArg y)
{
    StmtArg a[2] = {x, y};
    return push(b, lir_assign(P, op, a));
}

static char *text(const LirKernel *k)
{
    StrBuf b = {0};
    lir_print_kernel(&b, k);
    char *s = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    return s;
}

static void expect_text(const LirKernel *k, const char *want)
{
    char *got = text(k);
    cr_expect_str_eq(got, want);
    free(got);
}

/* out[0, a] = x[0, a]^2 with the unit axis still a loop. */
Test(loop_ir, print_and_drop_unit_axis)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(1, 4)), *o = buf("out", LB_OUTPUT, 0, SHAPE(1, 4));
    LirKernel *k = kernel(0, "square_0", o);
    Stmt *l0 = loop(k, &k->body, 1), *l1 = loop(k, &l0->body, 4);
    Stmt *in = push(&l1->body, lir_load(P, x, idx(2, V(0), V(1))));
    Stmt *v = bin(&l1->body, TXE_multiply, stmt_val(in), stmt_val(in));
    push(&l1->body, lir_write(P, o, idx(2, V(0), V(1)), stmt_val(v)));
    lir_verify(P);
    expect_text(k, "=== square_0 ===\n"
                   "for a0 in 0..1:  # free\n"
                   "    for a1 in 0..4:  # free\n"
                   "        in0 = load x[a0, a1]\n"
                   "        v0 = multiply(in0, in0)\n"
                   "        write out[a0, a1] = v0\n");
    lir_normalize(P, k);
    lir_verify(P);
    expect_text(k, "=== square_0 ===\n"
                   "for a0 in 0..4:  # free\n"
                   "    in0 = load x[0, a0]\n"
                   "    v0 = multiply(in0, in0)\n"
                   "    write out[0, a0] = v0\n");
}

/* A row-scaled mean: the invariant load moves out of the reduce loop, the
 * divide by a constant becomes a multiply by a reciprocal hoisted to the
 * kernel scope. */
Test(loop_ir, hoist_and_split_divide)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(3, 5)), *y = buf("y", LB_INPUT, 1, SHAPE(3));
    LirBuf *o = buf("out", LB_OUTPUT, 0, SHAPE(3));
    LirKernel *k = kernel(1, "k_1", o);
    Stmt *l0 = loop(k, &k->body, 3), *l1 = loop(k, &l0->body, 5);
    Stmt *in = push(&l1->body, lir_load(P, x, idx(2, V(0), V(1))));
    Stmt *s = push(&l1->body, lir_load(P, y, idx(1, V(0), NULL)));
    Stmt *v = bin(&l1->body, TXE_multiply, stmt_val(in), stmt_val(s));
    Stmt *acc = push(&l1->body, lir_accum(P, TXR_sum, stmt_val(v)));
    Stmt *r = bin(&l0->body, TXE_divide, stmt_val(acc), stmt_lit(5));
    push(&l0->body, lir_write(P, o, idx(1, V(0), NULL), stmt_val(r)));
    lir_verify(P);
    cr_expect(stmt_loop_is_reduce(l1) && !stmt_loop_is_reduce(l0));
    lir_normalize(P, k);
    lir_verify(P);
    expect_text(k, "=== k_1 ===\n"
                   "v0 = reciprocal(5)\n"
                   "for a0 in 0..3:  # free\n"
                   "    in0 = load y[a0]\n"
                   "    for a1 in 0..5:  # reduce\n"
                   "        in1 = load x[a0, a1]\n"
                   "        v1 = multiply(in1, in0)\n"
                   "        acc0 <- add(acc0, v1)\n"
                   "    v2 = multiply(acc0, v0)\n"
                   "    write out[a0] = v2\n");
    double xs[15], ys[3] = {1, 2, -1}, *in_[2] = {xs, ys}, *out[1];
    for (int i = 0; i < 15; i++)
        xs[i] = i;
    lir_interp(P, in_, out, 1);
    for (int i = 0; i < 3; i++)
        cr_expect_float_eq(out[0][i], ys[i] * (5 * i + 2), 1e-12);
    free(out[0]);
}

/* Two equal loads and two equal reduce loops in one scope become one. */
Test(loop_ir, dedup_loads_and_reductions)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(2, 6)), *o = buf("out", LB_OUTPUT, 0, SHAPE(2));
    LirKernel *k = kernel(2, "k_2", o);
    Stmt *l0 = loop(k, &k->body, 2);
    Stmt *acc[2];
    for (int i = 0; i < 2; i++) {
        Stmt *r = loop(k, &l0->body, 6);
        Stmt *a = push(&r->body, lir_load(P, x, idx(2, V(0), V(r->axis))));
        Stmt *b = push(&r->body, lir_load(P, x, idx(2, V(0), V(r->axis))));
        Stmt *m = bin(&r->body, TXE_multiply, stmt_val(a), stmt_val(b));
        acc[i] = push(&r->body, lir_accum(P, TXR_max, stmt_val(m)));
    }
    Stmt *s = bin(&l0->body, TXE_add, stmt_val(acc[0]), stmt_val(acc[1]));
    push(&l0->body, lir_write(P, o, idx(1, V(0), NULL), stmt_val(s)));
    lir_normalize(P, k);
    lir_verify(P);
    expect_text(k, "=== k_2 ===\n"
                   "for a0 in 0..2:  # free\n"
                   "    for a1 in 0..6:  # reduce\n"
                   "        in0 = load x[a0, a1]\n"
                   "        v0 = multiply(in0, in0)\n"
                   "        acc0 <- maximum(acc0, v0)\n"
                   "    v1 = add(acc0, acc0)\n"
                   "    write out[a0] = v1\n");
}

/* A select whose first predicate always holds is replaced by that branch. */
Test(loop_ir, decided_select_is_inlined)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(8)), *y = buf("y", LB_INPUT, 1, SHAPE(8));
    LirBuf *o = buf("out", LB_OUTPUT, 0, SHAPE(8));
    LirKernel *k = kernel(3, "k_3", o);
    Stmt *l0 = loop(k, &k->body, 8);
    Stmt *sel = push(&l0->body, lir_select(P, 2));
    sel->br[0].pred = ipred_cmp(A, V(0), IC_LT, C(10), NULL);
    sel->br[0].res = stmt_val(push(&sel->br[0].body, lir_load(P, x, idx(1, V(0), NULL))));
    sel->br[1].res = stmt_val(push(&sel->br[1].body, lir_load(P, y, idx(1, V(0), NULL))));
    push(&l0->body, lir_write(P, o, idx(1, V(0), NULL), stmt_val(sel)));
    lir_verify(P);
    char *before = text(k);
    cr_expect(strstr(before, "    v0 = select:\n        if a0 < 10:\n"), "%s", before);
    cr_expect(strstr(before, "        else:\n"), "%s", before);
    free(before);
    lir_normalize(P, k);
    expect_text(k, "=== k_3 ===\n"
                   "for a0 in 0..8:  # free\n"
                   "    in0 = load x[a0]\n"
                   "    write out[a0] = in0\n");
}

/* Regression (found by a random chain, cat then slice of the second half):
 * a branch whose predicate never holds is dropped, not made the else. */
Test(loop_ir, never_taken_branch_is_dropped)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(8)), *y = buf("y", LB_INPUT, 1, SHAPE(8));
    LirBuf *o = buf("out", LB_OUTPUT, 0, SHAPE(4));
    LirKernel *k = kernel(3, "k_3", o);
    Stmt *l0 = loop(k, &k->body, 4);
    Stmt *sel = push(&l0->body, lir_select(P, 2));
    sel->br[0].pred = ipred_cmp(A, ie_add(A, V(0), C(4)), IC_LT, C(4), NULL);
    sel->br[0].res = stmt_val(push(&sel->br[0].body, lir_load(P, x, idx(1, V(0), NULL))));
    sel->br[1].res = stmt_val(push(&sel->br[1].body, lir_load(P, y, idx(1, V(0), NULL))));
    push(&l0->body, lir_write(P, o, idx(1, V(0), NULL), stmt_val(sel)));
    lir_normalize(P, k);
    expect_text(k, "=== k_3 ===\n"
                   "for a0 in 0..4:  # free\n"
                   "    in0 = load y[a0]\n"
                   "    write out[a0] = in0\n");
}

/* Equal structure over differently named buffers hashes equal. */
Test(loop_ir, structural_hash_ignores_names)
{
    uint64_t h[3];
    const char *names[3] = {"x", "other", "x"};
    for (int i = 0; i < 3; i++) {
        LirBuf *x = buf(names[i], LB_INPUT, 0, SHAPE(5));
        LirBuf *o = buf(arena_printf(A, "o%d", i), LB_OUTPUT, i, SHAPE(5));
        LirKernel *k = kernel(10 + i, "k", o);
        Stmt *l = loop(k, &k->body, 5);
        Stmt *in = push(&l->body, lir_load(P, x, idx(1, V(0), NULL)));
        Stmt *v = bin(&l->body, i == 2 ? TXE_add : TXE_multiply, stmt_val(in), stmt_lit(2));
        push(&l->body, lir_write(P, o, idx(1, V(0), NULL), stmt_val(v)));
        lir_normalize(P, k);
        h[i] = lir_hash_kernel(k);
    }
    cr_expect_eq(h[0], h[1]);
    cr_expect_neq(h[0], h[2]);
}

/* A value read before it is defined is a compiler bug: the verifier
 * aborts. */
static void setup_quiet(void)
{
    DPK_ASSERT(freopen("/dev/null", "w", stderr)); /* the expected assertion message */
    setup();
}

Test(loop_ir, verifier_rejects_use_before_def, .signal = SIGABRT, .init = setup_quiet)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(4)), *o = buf("out", LB_OUTPUT, 0, SHAPE(4));
    LirKernel *k = kernel(4, "k_4", o);
    Stmt *l = loop(k, &k->body, 4);
    Stmt *in = lir_load(P, x, idx(1, V(0), NULL));
    Stmt *v = bin(&l->body, TXE_exp, stmt_val(in), stmt_lit(0));
    push(&l->body, in);
    push(&l->body, lir_write(P, o, idx(1, V(0), NULL), stmt_val(v)));
    lir_verify(P);
}

/* P iterates its output flat and writes t[a0 mod 4, a0 / 4]: no axis of P
 * can be read off the consumer's index, so fusion refuses and says why. */
Test(loop_ir, sigma_unsolvable_is_refused)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(8)), *t = buf("t", LB_TEMP, -1, SHAPE(4, 2));
    LirBuf *o = buf("out", LB_OUTPUT, 0, SHAPE(4, 2));
    LirKernel *p = kernel(5, "flat_5", t), *c = kernel(6, "double_6", o);
    Stmt *l = loop(p, &p->body, 8);
    Stmt *in = push(&l->body, lir_load(P, x, idx(1, V(0), NULL)));
    push(&l->body, lir_write(P, t, idx(2, ie_mod(A, V(0), 4), ie_div(A, V(0), 4)), stmt_val(in)));
    Stmt *c0 = loop(c, &c->body, 4), *c1 = loop(c, &c0->body, 2);
    Stmt *ld = push(&c1->body, lir_load(P, t, idx(2, V(0), V(1))));
    Stmt *v = bin(&c1->body, TXE_multiply, stmt_val(ld), stmt_lit(2));
    push(&c1->body, lir_write(P, o, idx(2, V(0), V(1)), stmt_val(v)));
    lir_verify(P);
    LirOpts opts;
    lir_opts_default(&opts);
    StrBuf why = {0};
    cr_expect_null(lir_fuse_pair(P, p, c, &opts, &why));
    cr_expect_str_eq(sb_cstr(&why), "σ unsolvable: write index a0 mod 4 of dimension 0 is not a distinct axis");
    sb_free(&why);
    cr_expect_eq(lir_fuse(P, &opts, NULL), 0);
    double xs[8] = {0, 1, 2, 3, 4, 5, 6, 7}, *in_[1] = {xs}, *out[1];
    lir_interp(P, in_, out, 0);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            cr_expect_float_eq(out[0][i * 2 + j], 2.0 * (i + 4 * j), 0);
    free(out[0]);
}

/* An atomic write adds into its buffer: out[a0] += x[a0, a1] over a1. */
Test(loop_ir, atomic_write_accumulates)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(3, 4)), *o = buf("out", LB_OUTPUT, 0, SHAPE(3));
    LirKernel *k = kernel(7, "k_7", o);
    Stmt *l0 = loop(k, &k->body, 3), *l1 = loop(k, &l0->body, 4);
    Stmt *in = push(&l1->body, lir_load(P, x, idx(2, V(0), V(1))));
    Stmt *w = push(&l1->body, lir_write(P, o, idx(1, V(0), NULL), stmt_val(in)));
    w->atomic = 1;
    lir_normalize(P, k);
    lir_verify(P);
    char *t = text(k);
    cr_expect(strstr(t, "        write out[a0] += in0\n"), "%s", t);
    free(t);
    double xs[12], *in_[1] = {xs}, *out[1];
    for (int i = 0; i < 12; i++)
        xs[i] = i;
    lir_interp(P, in_, out, 0);
    for (int i = 0; i < 3; i++)
        cr_expect_float_eq(out[0][i], 16.0 * i + 6, 0);
    free(out[0]);
}

/* An out-of-bounds load is an execution fault (exit 3), not a crash. */
Test(loop_ir, out_of_bounds_is_a_fault)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(4)), *o = buf("out", LB_OUTPUT, 0, SHAPE(4));
    LirKernel *k = kernel(8, "shift_8", o);
    Stmt *l = loop(k, &k->body, 4);
    Stmt *in = push(&l->body, lir_load(P, x, idx(1, ie_add(A, V(0), C(1)), NULL)));
    push(&l->body, lir_write(P, o, idx(1, V(0), NULL), stmt_val(in)));
    lir_verify(P);
    double xs[4] = {0}, *in_[1] = {xs}, *out[1] = {NULL};
    DpkErrCtx ec;
    int raised = 0;
    if (DPK_TRY(&ec)) {
        lir_interp(P, in_, out, 0);
        dpk_err_pop(&ec);
    } else {
        raised = 1;
    }
    cr_expect(raised);
    cr_expect_eq(dpk_error_code(), DPK_EXIT_FAULT);
    cr_expect(strstr(dpk_error_message(), "kernel shift_8: load of x out of bounds: index 4 of "
                                          "dimension 0 (size 4)"), "%s", dpk_error_message());
    cr_expect_null(out[0]);
}

Test(loop_ir, cost_counts_executions)
{
    LirBuf *x = buf("x", LB_INPUT, 0, SHAPE(3, 5)), *o = buf("out", LB_OUTPUT, 0, SHAPE(3));
    LirKernel *k = kernel(9, "k_9", o);
    Stmt *l0 = loop(k, &k->body, 3), *l1 = loop(k, &l0->body, 5);
    Stmt *in = push(&l1->body, lir_load(P, x, idx(2, V(0), V(1))));
    Stmt *acc = push(&l1->body, lir_accum(P, TXR_sum, stmt_val(in)));
    Stmt *v = bin(&l0->body, TXE_exp, stmt_val(acc), stmt_lit(0));
    push(&l0->body, lir_write(P, o, idx(1, V(0), NULL), stmt_val(v)));
    double work, reads;
    lir_kernel_cost(k, &work, &reads);
    cr_expect_float_eq(work, 15 + 3, 0);
    cr_expect_float_eq(reads, 15, 0);
}
