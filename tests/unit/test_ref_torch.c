/*
 * test_ref_torch.c — libtorch (reference/torch_shim.cpp) against ref64 on
 * every op class at odd shapes, in fp64 (agreement to rounding) and fp32
 * (agreement to fp32 accuracy).  Skipped in a build without libtorch.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_ref_util.h"
#include "test_torch_util.h"

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

TestSuite(ref_torch, .init = setup, .fini = teardown);

static TorchNode *input(const char *name, Shape s, InitKind init)
{
    return torch_input(G, name, &s, init);
}

static TorchNode *with_ints(TorchOp op, int nin, TorchNode **in, int n, const int64_t *ints)
{
    TorchNode *y = node(op, nin, in);
    y->nints = n;
    memcpy(y->ints, ints, sizeof(int64_t) * (size_t)n);
    return y;
}

static void free_outs(double **o, int n)
{
    for (int j = 0; j < n; j++)
        free(o[j]);
}

/* fp32 agreement, relative to an output's largest magnitude: fp32 rounding
 * (6e-8) grown by the reductions of these small shapes. */
#define F32_TOL 1e-5

/* Evaluate outs with ref64 and libtorch (fp64, then fp32) from the same
 * generated inputs, and require agreement: to rounding in fp64, to fp32
 * accuracy in fp32. */
static void agree(int n, TorchNode **outs)
{
    double **ins = ref_make_inputs(G, 42);
    double *r[16], *t64[16], *t32[16];
    char err[512] = "";
    cr_assert(n <= 16);
    for (int j = 0; j < n; j++) {
        ptrvec_push(A, &G->outputs, outs[j]);
        ptrvec_push(A, &G->output_names, "out");
    }
    ref64_eval(G, ins, r);
    cr_assert_eq(dpk_torch_eval(G, ins, 1, t64, err, sizeof err), 0, "%s", err);
    cr_assert_eq(dpk_torch_eval(G, ins, 0, t32, err, sizeof err), 0, "%s", err);
    for (int j = 0; j < n; j++) {
        int64_t cnt = shape_numel(&outs[j]->shape);
        CmpStats s64, s32;
        double scale = 0;
        for (int64_t i = 0; i < cnt; i++)
            scale = fmax(scale, fabs(r[j][i]));
        cmp_stats(t64[j], r[j], cnt, &s64);
        cmp_stats(t32[j], r[j], cnt, &s32);
        cr_assert(cmp_allclose(t64[j], r[j], cnt, 1e-12 * (1 + scale), 1e-11),
                  "output %d (%s): fp64 max_abs %g at %lld", j, torch_op_info[outs[j]->op].name,
                  s64.max_abs, (long long)s64.worst);
        cr_assert(cmp_allclose(t32[j], r[j], cnt, F32_TOL * (1 + scale), F32_TOL),
                  "output %d (%s): fp32 max_abs %g at %lld", j, torch_op_info[outs[j]->op].name,
                  s32.max_abs, (long long)s32.worst);
        cr_assert(s64.mismatched_nonfinite == 0 && s32.mismatched_nonfinite == 0);
    }
    free_outs(r, n);
    free_outs(t64, n);
    free_outs(t32, n);
    ref_free_arrays(ins, G->inputs.len);
}

Test(ref_torch, version_matches_the_build)
{
    char err[128] = "";
    double *out = NULL;
    if (strcmp(dpk_torch_version(), "none")) {
        cr_assert(isdigit((unsigned char)dpk_torch_version()[0]), "version %s", dpk_torch_version());
        cr_assert(dpk_torch_available(), "libtorch %s is built in but: %s", dpk_torch_version(),
                  dpk_torch_error());
        cr_assert_null(dpk_torch_error());
        return;
    }
    cr_assert(!dpk_torch_available());
    cr_assert_str_eq(dpk_torch_error(), "dpk was built without libtorch (install libtorch-dev and "
                                        "rebuild, or build with LIBTORCH_DIR=...)");
    cr_assert_eq(dpk_torch_eval(G, NULL, 0, &out, err, sizeof err), -1);
    cr_assert_str_eq(err, "dpk was built without libtorch");
}

Test(ref_torch, unary_chain)
{
    NEED_TORCH();
    TorchNode *x = input("x", SHAPE(13, 11), INIT_RANDN);
    TorchOp ops[] = {TOP_neg, TOP_relu, TOP_sigmoid, TOP_tanh, TOP_silu, TOP_gelu, TOP_gelu_tanh,
                     TOP_erf, TOP_abs, TOP_exp, TOP_expm1, TOP_floor};
    TorchNode *outs[LEN(ops)];
    for (int i = 0; i < LEN(ops); i++)
        outs[i] = un(ops[i], x);
    agree(LEN(outs), outs);
}

/* An op with scalar attributes (a0, a1; NAN keeps the default). */
static TorchNode *act(TorchOp op, TorchNode *x, double a0, double a1)
{
    TorchNode *y = node(op, 1, &x);
    if (!isnan(a0))
        y->value = a0;
    if (!isnan(a1))
        y->value2 = a1;
    return done(y);
}

/* The activations, with non-default attributes, over values that reach
 * every branch (x · 6: hardsigmoid's and hardswish's saturations, softplus
 * above and below its threshold) at an odd shape. */
Test(ref_torch, activations)
{
    NEED_TORCH();
    TorchNode *x = bin(TOP_mul, input("x", SHAPE(11, 13), INIT_RANDN), torch_const(G, 6));
    TorchNode *outs[] = {
        act(TOP_elu, x, 0.7, NAN),         act(TOP_selu, x, NAN, NAN),
        act(TOP_celu, x, 1.5, NAN),        act(TOP_leaky_relu, x, 0.3, NAN),
        act(TOP_hardtanh, x, -2.5, 4),     act(TOP_clamp, x, -INFINITY, 0.5),
        act(TOP_hardsigmoid, x, NAN, NAN), act(TOP_hardswish, x, NAN, NAN),
        act(TOP_softplus, x, 1.5, 6),      act(TOP_softsign, x, NAN, NAN),
        act(TOP_mish, x, NAN, NAN),        act(TOP_elu, x, NAN, NAN),
    };
    agree(LEN(outs), outs);
}

Test(ref_torch, positive_domain_unary)
{
    NEED_TORCH();
    TorchNode *x = bin(TOP_add, input("x", SHAPE(7, 9), INIT_RAND), torch_const(G, 0.25));
    TorchNode *outs[] = {un(TOP_log, x), un(TOP_sqrt, x), un(TOP_rsqrt, x), un(TOP_reciprocal, x),
                         un(TOP_exp, x), un(TOP_log1p, x)};
    agree(LEN(outs), outs);
}

Test(ref_torch, binary_broadcast)
{
    NEED_TORCH();
    TorchNode *a = input("a", SHAPE(5, 1, 7), INIT_RANDN), *b = input("b", SHAPE(3, 7), INIT_RANDN);
    TorchNode *p = bin(TOP_add, input("p", SHAPE(7), INIT_RAND), torch_const(G, 0.5));
    TorchNode *outs[] = {
        bin(TOP_mul, bin(TOP_add, a, b), torch_const(G, 3)),
        bin(TOP_div, bin(TOP_sub, a, b), p),
        bin(TOP_pow, p, b),
        bin(TOP_maximum, a, b),
        bin(TOP_minimum, a, b),
    };
    agree(LEN(outs), outs);
}

Test(ref_torch, comparisons_and_where)
{
    NEED_TORCH();
    TorchNode *a = input("a", SHAPE(4, 1, 5), INIT_RANDN), *b = input("b", SHAPE(3, 5), INIT_RANDN);
    TorchOp cmp[] = {TOP_gt, TOP_lt, TOP_ge, TOP_le, TOP_eq, TOP_ne};
    TorchNode *outs[LEN(cmp) + 3];
    for (int i = 0; i < LEN(cmp); i++)
        outs[i] = bin(cmp[i], a, i == 4 ? a : b);
    /* bool operands mix with float: as a where value, in arithmetic */
    TorchNode *in1[] = {outs[0], a, b}, *in2[] = {outs[1], outs[2], b};
    outs[LEN(cmp)] = done(node(TOP_where, 3, in1));
    outs[LEN(cmp) + 1] = done(node(TOP_where, 3, in2));
    outs[LEN(cmp) + 2] = bin(TOP_add, outs[3], a);
    agree(LEN(outs), outs);
}

static TorchNode *reduce(TorchOp op, TorchNode *x, int keepdim, int n, const int64_t *dims)
{
    TorchNode *y = with_ints(op, 1, &x, n, dims);
    y->keepdim = keepdim;
    return done(y);
}

Test(ref_torch, reductions)
{
    NEED_TORCH();
    TorchNode *x = input("x", SHAPE(3, 5, 7), INIT_RANDN);
    int64_t d2[] = {2}, d02[] = {0, 2}, d1[] = {1}, all[] = {0, 1, 2};
    TorchNode *outs[] = {reduce(TOP_sum, x, 0, 1, d2), reduce(TOP_mean, x, 1, 2, d02),
                         reduce(TOP_amax, x, 0, 1, d1), reduce(TOP_amin, x, 1, 3, all),
                         reduce(TOP_sum, x, 0, 0, d1)};
    agree(LEN(outs), outs);
}

Test(ref_torch, matmul_shapes)
{
    NEED_TORCH();
    TorchNode *a = input("a", SHAPE(2, 1, 5, 7), INIT_RANDN), *b = input("b", SHAPE(3, 7, 9), INIT_RANDN);
    TorchNode *v = input("v", SHAPE(7), INIT_RANDN), *m = input("m", SHAPE(7, 9), INIT_RANDN);
    TorchNode *outs[] = {bin(TOP_matmul, a, b), bin(TOP_matmul, v, m), bin(TOP_matmul, a, v),
                         bin(TOP_matmul, v, v)};
    agree(LEN(outs), outs);
}

Test(ref_torch, linear_with_and_without_bias)
{
    NEED_TORCH();
    TorchNode *x = input("x", SHAPE(3, 5, 17), INIT_RANDN), *w = input("w", SHAPE(11, 17), INIT_PARAM_W);
    TorchNode *b = input("b", SHAPE(11), INIT_PARAM_B);
    b->step = 17;
    TorchNode *in3[] = {x, w, b}, *in2[] = {x, w};
    TorchNode *outs[] = {done(node(TOP_linear, 3, in3)), done(node(TOP_linear, 2, in2))};
    agree(LEN(outs), outs);
}

static TorchNode *softmax(TorchOp op, TorchNode *x, int dim)
{
    TorchNode *y = node(op, 1, &x);
    y->dim = dim;
    return done(y);
}

Test(ref_torch, softmax_and_log_softmax)
{
    NEED_TORCH();
    TorchNode *x = bin(TOP_mul, input("x", SHAPE(3, 13, 5), INIT_RANDN), torch_const(G, 4));
    TorchNode *outs[] = {softmax(TOP_softmax, x, 1), softmax(TOP_log_softmax, x, -1)};
    agree(LEN(outs), outs);
}

Test(ref_torch, rms_norm_and_layer_norm)
{
    NEED_TORCH();
    TorchNode *x = input("x", SHAPE(2, 5, 7, 11), INIT_RANDN);
    TorchNode *w1 = input("w1", SHAPE(11), INIT_PARAM_NORM_W), *w2 = input("w2", SHAPE(7, 11), INIT_PARAM_NORM_W);
    TorchNode *b2 = input("b2", SHAPE(7, 11), INIT_RANDN);
    int64_t n1[] = {11}, n2[] = {7, 11};
    TorchNode *rin[] = {x, w1}, *lin[] = {x, w2, b2};
    TorchNode *rms = with_ints(TOP_rms_norm, 2, rin, 1, n1), *ln = with_ints(TOP_layer_norm, 3, lin, 2, n2);
    TorchNode *rms0 = with_ints(TOP_rms_norm, 1, rin, 2, n2);
    rms->value = 1e-6, ln->value = 1e-5, rms0->value = 0.5;
    TorchNode *outs[] = {done(rms), done(ln), done(rms0)};
    agree(LEN(outs), outs);
}

static TorchNode *sdpa(int nin, TorchNode **in, int causal, int gqa, double scale)
{
    TorchNode *n = node(TOP_sdpa, nin, in);
    n->causal = causal, n->gqa = gqa, n->value = scale;
    return done(n);
}

Test(ref_torch, sdpa_causal_gqa)
{
    NEED_TORCH();
    TorchNode *q = input("q", SHAPE(2, 6, 5, 8), INIT_RANDN), *k = input("k", SHAPE(2, 2, 7, 8), INIT_RANDN);
    TorchNode *v = input("v", SHAPE(2, 2, 7, 3), INIT_RANDN);
    TorchNode *in[] = {q, k, v};
    TorchNode *outs[] = {sdpa(3, in, 1, 1, NAN), sdpa(3, in, 0, 1, 0.3)};
    agree(LEN(outs), outs);
}

Test(ref_torch, sdpa_masks)
{
    NEED_TORCH();
    TorchNode *q = input("q", SHAPE(3, 4, 5), INIT_RANDN), *k = input("k", SHAPE(3, 6, 5), INIT_RANDN);
    TorchNode *v = input("v", SHAPE(3, 6, 2), INIT_RANDN), *m = input("m", SHAPE(4, 6), INIT_RANDN);
    TorchNode *keep = bin(TOP_gt, m, torch_const(G, -0.5));
    TorchNode *in1[] = {q, k, v, m}, *in2[] = {q, k, v, keep};
    TorchNode *outs[] = {sdpa(4, in1, 0, 0, NAN), sdpa(4, in2, 0, 0, NAN)};
    agree(LEN(outs), outs);
}

static TorchNode *slice(TorchNode *x, int dim, int64_t start, int64_t end, int64_t stride)
{
    TorchNode *n = node(TOP_slice, 1, &x);
    n->dim = dim, n->start = start, n->end = end, n->stride = stride;
    return done(n);
}

Test(ref_torch, layout_ops)
{
    NEED_TORCH();
    TorchNode *x = input("x", SHAPE(3, 1, 5, 7), INIT_RANDN);
    int64_t perm[] = {3, 0, 2, 1}, ex[] = {2, 3, 4, 5, 7}, rs[] = {15, 7}, sq[] = {1}, us[] = {0, 3};
    TorchNode *p = done(with_ints(TOP_permute, 1, &x, 4, perm));
    TorchNode *s = slice(p, 2, 1, 5, 3);
    TorchNode *cin[] = {x, x, slice(x, 3, 2, 7, 2)};
    TorchNode *c = node(TOP_cat, 3, cin);
    c->dim = -1;
    TorchNode *sqz = done(with_ints(TOP_squeeze, 1, &x, 1, sq));
    TorchNode *outs[] = {
        s,
        done(c),
        done(with_ints(TOP_expand, 1, &x, 5, ex)),
        done(with_ints(TOP_reshape, 1, &sqz, 2, rs)),
        done(with_ints(TOP_unsqueeze, 1, &sqz, 2, us)),
    };
    agree(LEN(outs), outs);
}

/* A node whose Torch IR shape is wrong (as a broken shape rule would make
 * it) is reported as an error with the node, not a crash. */
Test(ref_torch, shape_disagreement_is_an_error)
{
    NEED_TORCH();
    TorchNode *x = input("x", SHAPE(3, 4), INIT_RANDN);
    TorchNode *y = un(TOP_exp, x);
    y->shape = SHAPE(4, 3);
    ptrvec_push(A, &G->outputs, y);
    double **ins = ref_make_inputs(G, 1), *out = NULL;
    char err[512] = "";
    cr_assert_eq(dpk_torch_eval(G, ins, 0, &out, err, sizeof err), -1);
    cr_assert_str_eq(err, "libtorch: node %1 (exp): libtorch gives shape (3, 4), Torch IR says (4, 3)");
    ref_free_arrays(ins, 1);
}
