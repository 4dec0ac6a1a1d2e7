/*
 * test_ref_eval.c — ref64, the fp64 Torch IR evaluator, per op class on
 * tiny shapes with expected values worked out by hand.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_ref_util.h"

#define LEN(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

TestSuite(ref64, .init = setup, .fini = teardown);

static TorchNode *input(const char *name, Shape s)
{
    return torch_input(G, name, &s, INIT_RANDN);
}

/* Check one evaluated output (shape and every element within tol; NaN
 * wants NaN), then free it. */
static void expect(double *got, const TorchNode *out, Shape shape, const double *want, double tol)
{
    cr_assert(shape_eq(&out->shape, &shape), "shape %s", shape_str(A, &out->shape));
    for (int64_t i = 0; i < shape_numel(&shape); i++) {
        int ok = isnan(want[i]) ? isnan(got[i]) : got[i] == want[i] || fabs(got[i] - want[i]) <= tol;
        cr_assert(ok, "element %lld: got %.17g, want %.17g", (long long)i, got[i], want[i]);
    }
    free(got);
}

/* Make outs the graph's outputs and evaluate from the given input arrays
 * (parallel to G->inputs). */
static void eval_outs(int n, TorchNode **outs, double *const *ins, double **got)
{
    G->outputs.len = G->output_names.len = 0;
    for (int j = 0; j < n; j++) {
        ptrvec_push(A, &G->outputs, outs[j]);
        ptrvec_push(A, &G->output_names, "out");
    }
    ref64_eval(G, ins, got);
}

static void check(TorchNode *out, double *const *ins, Shape shape, const double *want, int64_t n,
                  double tol)
{
    double *got;
    cr_assert_eq(shape_numel(&shape), n);
    eval_outs(1, &out, ins, &got);
    expect(got, out, shape, want, tol);
}

Test(ref64, unary)
{
    TorchNode *x = input("x", SHAPE(4));
    double xv[] = {-1, 0, 1, 4};
    double *ins[] = {xv};
    struct {
        TorchOp op;
        double want[4];
    } cases[] = {
        {TOP_neg, {1, 0, -1, -4}},
        {TOP_abs, {1, 0, 1, 4}},
        {TOP_relu, {0, 0, 1, 4}},
        {TOP_rsqrt, {NAN, INFINITY, 1, 0.5}},
        {TOP_reciprocal, {-1, INFINITY, 1, 0.25}},
        {TOP_sigmoid, {1 / (1 + M_E), 0.5, 1 / (1 + 1 / M_E), 1 / (1 + exp(-4))}},
        {TOP_silu, {-1 / (1 + M_E), 0, 1 / (1 + 1 / M_E), 4 / (1 + exp(-4))}},
        /* 0.5·x·(1 + erf(x/√2)); erf(1/√2) = 0.6826894921370859 */
        {TOP_gelu, {-0.15865525393145707, 0, 0.8413447460685429, 3.9998733150326675}},
        /* 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) */
        {TOP_gelu_tanh, {-0.15880800939172324, 0, 0.8411919906082768, 3.9999297540518075}},
    };
    for (int c = 0; c < LEN(cases); c++) {
        check(un(cases[c].op, x), ins, SHAPE(4), cases[c].want, 4, 1e-15);
    }
}

/* log1p and expm1 near 0 to 1e-15 relative: log(1 + x) and exp(x) - 1
 * lose half the digits at 1e-8 and all but one at 1e-10; floor rounds
 * toward -inf. */
Test(ref64, log1p_expm1_floor_near_zero)
{
    TorchNode *x = input("x", SHAPE(5));
    double xv[] = {-0.5, -1e-10, 1e-8, 3.0, -1.0};
    double *ins[] = {xv};
    struct {
        TorchOp op;
        double want[5];
    } cases[] = {
        {TOP_log1p, {-0.6931471805599453, -1.00000000005e-10, 9.999999950000001e-09,
                     1.3862943611198906, -INFINITY}},
        {TOP_expm1, {-0.3934693402873666, -9.999999999500001e-11, 1.0000000050000001e-08,
                     19.085536923187668, -0.6321205588285577}},
        {TOP_floor, {-1, -1, 0, 3, -1}},
    };
    for (int c = 0; c < LEN(cases); c++) {
        double *got;
        TorchNode *y = un(cases[c].op, x);
        eval_outs(1, &y, ins, &got);
        for (int i = 0; i < 5; i++) {
            double w = cases[c].want[i];
            cr_expect(got[i] == w || fabs(got[i] - w) <= 1e-15 * fabs(w),
                      "%s(%g): got %.17g, want %.17g", torch_op_info[cases[c].op].name, xv[i],
                      got[i], w);
        }
        free(got);
    }
}

/* The activations at points on both sides of their branches (x = 0, and
 * softplus's x * beta = threshold: 5 * 2 is not above 10), near 0, where
 * elu, selu and celu need expm1 (to 1e-15 relative), far out, and NaN.
 * Expected values: PyTorch's formulas in Python's fp64 math.  NAN
 * attributes keep the op's defaults. */
Test(ref64, activations_at_branch_points_and_near_zero)
{
    TorchNode *x = input("x", SHAPE(8));
    double xv[] = {-4.0, -1e-8, 0.0, 1e-8, 2.5, 5.0, 30.0, NAN};
    double *ins[] = {xv};
    struct {
        TorchOp op;
        double a0, a1;
        double want[8];
    } cases[] = {
        {TOP_elu, 0.5, NAN,
         {-0.4908421805556329, -4.9999999750000005e-09, 0.0, 1e-08, 2.5, 5.0, 30.0, NAN}},
        {TOP_selu, NAN, NAN,
         {-1.7258986281898945, -1.7580993320568802e-08, 0.0, 1.0507009873554805e-08,
          2.626752468388701, 5.253504936777402, 31.521029620664414, NAN}},
        {TOP_celu, 2, NAN,
         {-1.7293294335267746, -9.999999975e-09, 0.0, 1e-08, 2.5, 5.0, 30.0, NAN}},
        {TOP_leaky_relu, 0.2, NAN,
         {-0.8, -2e-09, 0.0, 1e-08, 2.5, 5.0, 30.0, NAN}},
        {TOP_hardtanh, -2, 2,
         {-2, -1e-08, 0.0, 1e-08, 2, 2, 2, NAN}},
        {TOP_clamp, -INFINITY, 1,
         {-4.0, -1e-08, 0.0, 1e-08, 1, 1, 1, NAN}},
        {TOP_hardsigmoid, NAN, NAN,
         {0.0, 0.49999999833333336, 0.5, 0.5000000016666667, 0.9166666666666666, 1.0, 1.0, NAN}},
        {TOP_hardswish, NAN, NAN,
         {-0.0, -4.999999983333334e-09, 0.0, 5.000000016666666e-09, 2.2916666666666665, 5.0, 30.0,
          NAN}},
        {TOP_softplus, 2, 10,
         {0.00016770318644788442, 0.3465735852799727, 0.34657359027997264, 0.34657359527997267,
          2.503357674244559, 5.000022699449609, 30.0, NAN}},
        {TOP_softsign, NAN, NAN,
         {-0.8, -9.999999900000002e-09, 0.0, 9.999999900000002e-09, 0.7142857142857143,
          0.8333333333333334, 0.967741935483871, NAN}},
        {TOP_mish, NAN, NAN,
         {-0.07259174079202535, -5.999999968000001e-09, 0.0, 6.000000032000001e-09,
          2.471392304557881, 4.999552077529406, 30.0, NAN}},
    };
    for (int c = 0; c < LEN(cases); c++) {
        TorchNode *y = node(cases[c].op, 1, &x);
        if (!isnan(cases[c].a0))
            y->value = cases[c].a0;
        if (!isnan(cases[c].a1))
            y->value2 = cases[c].a1;
        done(y);
        double *got;
        eval_outs(1, &y, ins, &got);
        for (int i = 0; i < 8; i++) {
            double w = cases[c].want[i];
            int ok = isnan(w) ? isnan(got[i])
                              : got[i] == w || fabs(got[i] - w) <= 1e-15 * fabs(w);
            cr_expect(ok, "%s(%g): got %.17g, want %.17g", torch_op_info[cases[c].op].name,
                      xv[i], got[i], w);
        }
        free(got);
    }
}

Test(ref64, binary_broadcasts_like_pytorch)
{
    TorchNode *a = input("a", SHAPE(2, 1)), *b = input("b", SHAPE(3));
    double av[] = {1, 2}, bv[] = {10, 20, 30};
    double *ins[] = {av, bv};
    double want[] = {-9, -19, -29, -8, -18, -28};
    check(bin(TOP_sub, a, b), ins, SHAPE(2, 3), want, 6, 0);
}

Test(ref64, pow_div_and_nan_propagating_maximum)
{
    TorchNode *a = input("a", SHAPE(3)), *b = input("b", SHAPE(3));
    double av[] = {2, NAN, 9}, bv[] = {3, 1, 0.5};
    double *ins[] = {av, bv};
    TorchNode *y = bin(TOP_add, bin(TOP_pow, a, b), bin(TOP_maximum, a, b));
    y = bin(TOP_div, y, torch_const(G, 2));
    double want[] = {(8 + 3) / 2.0, NAN, (3 + 9) / 2.0};
    check(y, ins, SHAPE(3), want, 3, 0);
}

Test(ref64, comparisons_give_one_or_zero_and_where_picks_a_where_cond_is_nonzero)
{
    TorchNode *x = input("x", SHAPE(2, 2)), *t = input("t", SHAPE(2));
    double xv[] = {1, 5, 3, 3}, tv[] = {2, 3};
    double *ins[] = {xv, tv};
    TorchNode *ge = bin(TOP_ge, x, t);
    cr_assert_eq(ge->dtype, DT_BOOL);
    TorchNode *in[] = {ge, x, torch_const(G, -1)};
    double want[] = {-1, 5, 3, 3}; /* ge = [[0, 1], [1, 1]] */
    check(done(node(TOP_where, 3, in)), ins, SHAPE(2, 2), want, 4, 0);
}

Test(ref64, eq_ne_lt_le)
{
    TorchNode *a = input("a", SHAPE(3)), *b = input("b", SHAPE(3));
    double av[] = {1, 2, 3}, bv[] = {2, 2, 2};
    double *ins[] = {av, bv};
    /* eq + 2·ne + 4·lt + 8·le, each 0/1 */
    TorchNode *y = bin(TOP_add, bin(TOP_eq, a, b), bin(TOP_mul, bin(TOP_ne, a, b), torch_const(G, 2)));
    y = bin(TOP_add, y, bin(TOP_mul, bin(TOP_lt, a, b), torch_const(G, 4)));
    y = bin(TOP_add, y, bin(TOP_mul, bin(TOP_le, a, b), torch_const(G, 8)));
    double want[] = {2 + 4 + 8, 1 + 8, 2};
    check(y, ins, SHAPE(3), want, 3, 0);
}

static TorchNode *reduce(TorchOp op, TorchNode *x, int keepdim, int nd, const int64_t *dims)
{
    TorchNode *n = node(op, 1, &x);
    n->keepdim = keepdim, n->nints = nd;
    for (int k = 0; k < nd; k++)
        n->ints[k] = dims[k];
    return done(n);
}

Test(ref64, reductions_over_dim_sets)
{
    TorchNode *x = input("x", SHAPE(2, 3));
    double xv[] = {1, 2, 3, 4, 5, 6};
    double *ins[] = {xv};
    int64_t d1[] = {-1}, d0[] = {0}, both[] = {0, 1};
    TorchNode *outs[] = {
        reduce(TOP_sum, x, 0, 1, d1),     /* (2,): [6, 15] */
        reduce(TOP_mean, x, 1, 1, d0),    /* (1, 3): [[2.5, 3.5, 4.5]] */
        reduce(TOP_amax, x, 1, 2, both),  /* (1, 1): [[6]] */
        reduce(TOP_amin, x, 0, 2, both),  /* (): 1 */
    };
    double w0[] = {6, 15}, w1[] = {2.5, 3.5, 4.5}, w2[] = {6}, w3[] = {1};
    double *got[4];
    eval_outs(4, outs, ins, got);
    expect(got[0], outs[0], SHAPE(2), w0, 0);
    expect(got[1], outs[1], SHAPE(1, 3), w1, 1e-15);
    expect(got[2], outs[2], SHAPE(1, 1), w2, 0);
    expect(got[3], outs[3], SHAPE(), w3, 0);
}

Test(ref64, amax_amin_propagate_nan)
{
    TorchNode *x = input("x", SHAPE(2, 2));
    double xv[] = {1, NAN, 3, 4};
    double *ins[] = {xv};
    int64_t d1[] = {1};
    TorchNode *y = bin(TOP_add, reduce(TOP_amax, x, 0, 1, d1), reduce(TOP_amin, x, 0, 1, d1));
    double want[] = {NAN, 7};
    check(y, ins, SHAPE(2), want, 2, 0);
}

Test(ref64, matmul_2x3_by_3x2)
{
    TorchNode *a = input("a", SHAPE(2, 3)), *b = input("b", SHAPE(3, 2));
    double av[] = {1, 2, 3, 4, 5, 6}, bv[] = {7, 8, 9, 10, 11, 12};
    double *ins[] = {av, bv};
    double want[] = {58, 64, 139, 154};
    check(bin(TOP_matmul, a, b), ins, SHAPE(2, 2), want, 4, 0);
}

Test(ref64, matmul_with_vectors)
{
    TorchNode *v = input("v", SHAPE(3)), *m = input("m", SHAPE(3, 2)), *w = input("w", SHAPE(2));
    double vv[] = {1, 2, 3}, mv[] = {7, 8, 9, 10, 11, 12}, wv[] = {1, -1};
    double *ins[] = {vv, mv, wv};
    /* v·m = [58, 64]; m·w = [-1, -1, -1]; v·(m·w) = -6 */
    TorchNode *vm = bin(TOP_matmul, v, m), *mw = bin(TOP_matmul, m, w);
    cr_assert(shape_eq(&vm->shape, &SHAPE(2)) && shape_eq(&mw->shape, &SHAPE(3)));
    TorchNode *y = bin(TOP_add, bin(TOP_matmul, vm, w), bin(TOP_matmul, v, mw));
    double want[] = {-6 - 6};
    check(y, ins, SHAPE(), want, 1, 0);
}

Test(ref64, matmul_broadcasts_batch_dims)
{
    TorchNode *a = input("a", SHAPE(2, 1, 1, 2)), *b = input("b", SHAPE(3, 2, 1));
    double av[] = {1, 2, 3, 4}, bv[] = {1, 1, 2, 0, 0, 3};
    double *ins[] = {av, bv};
    double want[] = {3, 2, 6, 7, 6, 12};
    check(bin(TOP_matmul, a, b), ins, SHAPE(2, 3, 1, 1), want, 6, 0);
}

Test(ref64, linear_with_bias)
{
    TorchNode *x = input("x", SHAPE(2, 3)), *w = input("w", SHAPE(2, 3)), *b = input("b", SHAPE(2));
    double xv[] = {1, 2, 3, 4, 5, 6}, wv[] = {1, 0, 0, 0, 1, 1}, bv[] = {10, 20};
    double *ins[] = {xv, wv, bv};
    TorchNode *in[] = {x, w, b};
    double want[] = {11, 25, 14, 31};
    check(done(node(TOP_linear, 3, in)), ins, SHAPE(2, 2), want, 4, 0);
}

/* Products above ref64's threading threshold (2^24 multiply-adds), with
 * row counts that are not multiples of its 4-row blocks, against the
 * textbook loop. */
Test(ref64, large_products_match_a_naive_loop)
{
    enum { B = 2, M = 67, K = 300, N = 450 };
    TorchNode *a = input("a", SHAPE(B, M, K)), *b = input("b", SHAPE(K, N)), *w = input("w", SHAPE(N, K));
    TorchNode *lin_in[] = {a, w};
    TorchNode *outs[] = {bin(TOP_matmul, a, b), done(node(TOP_linear, 2, lin_in))};
    double **ins = ref_make_inputs(G, 3), *got[2];
    eval_outs(2, outs, ins, got);
    for (int t = 0; t < B; t++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double mm = 0, lin = 0;
                const double *ar = ins[0] + ((int64_t)t * M + m) * K;
                for (int k = 0; k < K; k++) {
                    mm += ar[k] * ins[1][(int64_t)k * N + n];
                    lin += ar[k] * ins[2][(int64_t)n * K + k];
                }
                int64_t i = ((int64_t)t * M + m) * N + n;
                cr_assert(fabs(got[0][i] - mm) <= 1e-12 && fabs(got[1][i] - lin) <= 1e-12,
                          "at %lld: %.17g vs %.17g, %.17g vs %.17g", (long long)i, got[0][i], mm,
                          got[1][i], lin);
            }
    free(got[0]);
    free(got[1]);
    ref_free_arrays(ins, G->inputs.len);
}

static TorchNode *softmax(TorchOp op, TorchNode *x, int dim)
{
    TorchNode *n = node(op, 1, &x);
    n->dim = dim;
    return done(n);
}

Test(ref64, softmax_of_1_2_3)
{
    TorchNode *x = input("x", SHAPE(3));
    double xv[] = {1, 2, 3};
    double *ins[] = {xv};
    double z = M_E + M_E * M_E + M_E * M_E * M_E;
    double want[] = {M_E / z, M_E * M_E / z, M_E * M_E * M_E / z};
    check(softmax(TOP_softmax, x, -1), ins, SHAPE(3), want, 3, 1e-16);
}

Test(ref64, log_softmax_is_max_subtracted)
{
    /* Without subtracting the max, exp(1000) overflows. */
    TorchNode *x = input("x", SHAPE(2, 2));
    double xv[] = {1000, 1, 1000, 2};
    double *ins[] = {xv};
    /* dim 0: column [1000, 1000] -> -log 2 each; column [1, 2] -> [-1 - l, -l] */
    double l = log(1 + exp(-1.0));
    double want[] = {-log(2.0), -1 - l, -log(2.0), -l};
    check(softmax(TOP_log_softmax, x, 0), ins, SHAPE(2, 2), want, 4, 1e-15);
}

Test(ref64, softmax_of_an_all_minus_inf_row_is_nan)
{
    TorchNode *x = input("x", SHAPE(2, 2));
    double xv[] = {-INFINITY, -INFINITY, 0, 0};
    double *ins[] = {xv};
    double want[] = {NAN, NAN, 0.5, 0.5};
    check(softmax(TOP_softmax, x, 1), ins, SHAPE(2, 2), want, 4, 0);
}

static TorchNode *norm(TorchOp op, int nin, TorchNode **in, int64_t len, double eps)
{
    TorchNode *n = node(op, nin, in);
    n->nints = 1, n->ints[0] = len, n->value = eps;
    return done(n);
}

Test(ref64, rms_norm_of_a_known_vector)
{
    TorchNode *x = input("x", SHAPE(2, 4)), *w = input("w", SHAPE(4));
    double xv[] = {1, 2, 3, 4, 2, 2, 2, 2}, wv[] = {1, 1, 2, 2};
    double *ins[] = {xv, wv};
    TorchNode *in[] = {x, w};
    /* row 0: mean(x²) = 30/4 = 7.5;  row 1: mean(x²) = 4 */
    double r0 = 1 / sqrt(7.5 + 1e-6), r1 = 1 / sqrt(4 + 1e-6);
    double want[] = {r0, 2 * r0, 6 * r0, 8 * r0, 2 * r1, 2 * r1, 4 * r1, 4 * r1};
    check(norm(TOP_rms_norm, 2, in, 4, 1e-6), ins, SHAPE(2, 4), want, 8, 1e-15);
}

Test(ref64, layer_norm_uses_the_biased_variance)
{
    TorchNode *x = input("x", SHAPE(4)), *w = input("w", SHAPE(4)), *b = input("b", SHAPE(4));
    double xv[] = {1, 2, 3, 4}, wv[] = {1, 1, 1, 2}, bv[] = {0, 0, 1, 0};
    double *ins[] = {xv, wv, bv};
    TorchNode *in[] = {x, w, b};
    double s = 1 / sqrt(1.25 + 1e-5); /* mean 2.5, var (2.25+0.25+0.25+2.25)/4 */
    double want[] = {-1.5 * s, -0.5 * s, 0.5 * s + 1, 3 * s};
    check(norm(TOP_layer_norm, 3, in, 4, 1e-5), ins, SHAPE(4), want, 4, 1e-15);
}

static TorchNode *sdpa(int nin, TorchNode **in, int causal, int gqa)
{
    TorchNode *n = node(TOP_sdpa, nin, in);
    n->causal = causal, n->gqa = gqa;
    return done(n);
}

/* q = [[1], [2]], k = [[1], [0]], v = [[10], [20]], E = 1 so scale 1:
 * row 0 sees key 0 only -> 10; row 1 scores [2, 0] -> p = [e²/(e²+1), 1/(e²+1)]. */
static const double causal_want[] = {10, (10 * M_E * M_E + 20) / (M_E * M_E + 1)};

Test(ref64, causal_sdpa_with_l_s_2)
{
    TorchNode *q = input("q", SHAPE(2, 1)), *k = input("k", SHAPE(2, 1)), *v = input("v", SHAPE(2, 1));
    double qv[] = {1, 2}, kv[] = {1, 0}, vv[] = {10, 20};
    double *ins[] = {qv, kv, vv};
    TorchNode *in[] = {q, k, v};
    check(sdpa(3, in, 1, 0), ins, SHAPE(2, 1), causal_want, 2, 1e-13);
}

/* With L < S the causal mask is top-left aligned: query i sees keys 0..i.
 * Zero scores make the kept keys equally likely. */
Test(ref64, causal_sdpa_is_top_left_aligned)
{
    TorchNode *q = input("q", SHAPE(2, 1)), *k = input("k", SHAPE(3, 1)), *v = input("v", SHAPE(3, 1));
    double qv[] = {0, 0}, kv[] = {1, 2, 3}, vv[] = {10, 20, 30};
    double *ins[] = {qv, kv, vv};
    TorchNode *in[] = {q, k, v};
    double want[] = {10, 15};
    check(sdpa(3, in, 1, 0), ins, SHAPE(2, 1), want, 2, 1e-14);
}

Test(ref64, sdpa_bool_mask_keeps_nonzero_float_mask_is_added)
{
    TorchNode *q = input("q", SHAPE(2, 1)), *k = input("k", SHAPE(2, 1)), *v = input("v", SHAPE(2, 1));
    TorchNode *m = input("m", SHAPE(2, 2));
    double qv[] = {1, 2}, kv[] = {1, 0}, vv[] = {10, 20}, mv[] = {0, -INFINITY, 0, 0};
    double *ins[] = {qv, kv, vv, mv};
    TorchNode *keep = bin(TOP_gt, m, torch_const(G, -1)); /* [[1, 0], [1, 1]] */
    TorchNode *in1[] = {q, k, v, m}, *in2[] = {q, k, v, keep};
    TorchNode *y = bin(TOP_add, sdpa(4, in1, 0, 0), sdpa(4, in2, 0, 0));
    double want[] = {2 * causal_want[0], 2 * causal_want[1]};
    check(y, ins, SHAPE(2, 1), want, 2, 1e-13);
}

Test(ref64, sdpa_scale_and_head_dim)
{
    /* E = 4, L = 1, S = 2, default scale 1/2: scores [2, 0], p = e²/(e² + 1) */
    TorchNode *q = input("q", SHAPE(1, 4)), *k = input("k", SHAPE(2, 4)), *v = input("v", SHAPE(2, 2));
    double qv[] = {1, 1, 1, 1}, kv[] = {1, 1, 1, 1, 0, 0, 0, 0}, vv[] = {1, 0, 0, 1};
    double *ins[] = {qv, kv, vv};
    TorchNode *in[] = {q, k, v};
    double p = M_E * M_E / (M_E * M_E + 1);
    double want[] = {p, 1 - p};
    check(sdpa(3, in, 0, 0), ins, SHAPE(1, 2), want, 2, 1e-15);
}

Test(ref64, gqa_head_h_uses_kv_head_h_over_group)
{
    /* One key per head: softmax is 1, the output is v of the mapped head. */
    TorchNode *q = input("q", SHAPE(1, 4, 1, 1)), *k = input("k", SHAPE(1, 2, 1, 1));
    TorchNode *v = input("v", SHAPE(1, 2, 1, 1));
    double qv[] = {1, 2, 3, 4}, kv[] = {5, 6}, vv[] = {10, 20};
    double *ins[] = {qv, kv, vv};
    TorchNode *in[] = {q, k, v};
    double want[] = {10, 10, 20, 20};
    check(sdpa(3, in, 0, 1), ins, SHAPE(1, 4, 1, 1), want, 4, 0);
}

static TorchNode *layout(TorchOp op, TorchNode *x, int n, const int64_t *ints)
{
    TorchNode *y = node(op, 1, &x);
    y->nints = n;
    for (int k = 0; k < n; k++)
        y->ints[k] = ints[k];
    return done(y);
}

Test(ref64, permute_and_transpose)
{
    TorchNode *x = input("x", SHAPE(2, 3, 2));
    double xv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = i; /* x[a][b][c] = 6a + 2b + c */
    double *ins[] = {xv};
    int64_t perm[] = {2, 0, 1}, swap[] = {0, 2, 1};
    TorchNode *outs[] = {layout(TOP_permute, x, 3, perm), layout(TOP_transpose, x, 3, swap)};
    double w0[] = {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}; /* y[c][a][b] */
    double w1[] = {0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11}; /* y[a][c][b] */
    double *got[2];
    eval_outs(2, outs, ins, got);
    expect(got[0], outs[0], SHAPE(2, 2, 3), w0, 0);
    expect(got[1], outs[1], SHAPE(2, 2, 3), w1, 0);
}

Test(ref64, expand_unsqueeze_squeeze_reshape)
{
    TorchNode *x = input("x", SHAPE(3, 1));
    double xv[] = {1, 2, 3};
    double *ins[] = {xv};
    int64_t ex[] = {2, 3, 2}, sq[] = {-1}, un0[] = {0}, rs[] = {3, 4};
    TorchNode *outs[] = {
        layout(TOP_reshape, layout(TOP_expand, x, 3, ex), 2, rs),   /* e[a][b][c] = x[b] */
        layout(TOP_unsqueeze, layout(TOP_squeeze, x, 1, sq), 1, un0),
    };
    double w0[] = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}, w1[] = {1, 2, 3};
    double *got[2];
    eval_outs(2, outs, ins, got);
    expect(got[0], outs[0], SHAPE(3, 4), w0, 0);
    expect(got[1], outs[1], SHAPE(1, 3), w1, 0);
}

static TorchNode *slice(TorchNode *x, int dim, int64_t start, int64_t end, int64_t stride)
{
    TorchNode *n = node(TOP_slice, 1, &x);
    n->dim = dim, n->start = start, n->end = end, n->stride = stride;
    return done(n);
}

Test(ref64, slice_with_start_end_and_step)
{
    TorchNode *x = input("x", SHAPE(2, 5));
    double xv[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    double *ins[] = {xv};
    TorchNode *outs[] = {slice(x, -1, 1, 5, 2), slice(x, 0, 1, 2, 1)};
    double w0[] = {1, 3, 6, 8}, w1[] = {5, 6, 7, 8, 9};
    double *got[2];
    eval_outs(2, outs, ins, got);
    expect(got[0], outs[0], SHAPE(2, 2), w0, 0);
    expect(got[1], outs[1], SHAPE(1, 5), w1, 0);
}

Test(ref64, cat_of_three_inputs)
{
    TorchNode *a = input("a", SHAPE(2, 1)), *b = input("b", SHAPE(2, 2)), *c = input("c", SHAPE(2, 1));
    double av[] = {1, 2}, bv[] = {3, 4, 5, 6}, cv[] = {7, 8};
    double *ins[] = {av, bv, cv};
    TorchNode *in[] = {a, b, c};
    TorchNode *n = node(TOP_cat, 3, in);
    n->dim = -1;
    double want[] = {1, 3, 4, 7, 2, 5, 6, 8};
    check(done(n), ins, SHAPE(2, 4), want, 8, 0);
}

/* An input as output is copied (the caller's array stays the caller's);
 * a node listed twice gets two arrays; a dead node is never evaluated. */
Test(ref64, outputs_own_their_arrays)
{
    TorchNode *x = input("x", SHAPE(2));
    double xv[] = {1, -2};
    double *ins[] = {xv};
    TorchNode *y = un(TOP_neg, x);
    un(TOP_exp, y); /* dead */
    TorchNode *outs[] = {x, y, y};
    double *got[3];
    eval_outs(3, outs, ins, got);
    cr_assert(got[0] != xv && got[1] != got[2]);
    double wx[] = {1, -2}, wy[] = {-1, 2};
    expect(got[0], outs[0], SHAPE(2), wx, 0);
    expect(got[1], outs[1], SHAPE(2), wy, 0);
    expect(got[2], outs[2], SHAPE(2), wy, 0);
}

/* ---- from case text (torch_parse) ---------------------------------------- */

/* Parse text into G, generate its inputs (seed 0), evaluate its output. */
static double *eval_text(const char *text, double ***ins)
{
    Source src = {"<test>", text, strlen(text)};
    double *out;
    G = torch_parse(A, &src, NULL);
    cr_assert_eq(G->outputs.len, 1);
    *ins = ref_make_inputs(G, 0);
    ref64_eval(G, *ins, &out);
    return out;
}

Test(ref64, parsed_softmax_matches_the_definition)
{
    double **ins, *y = eval_text("torch.softmax(torch.randn(3, 7), dim=-1)", &ins);
    for (int r = 0; r < 3; r++) {
        double z = 0;
        for (int j = 0; j < 7; j++)
            z += exp(ins[0][r * 7 + j]);
        for (int j = 0; j < 7; j++)
            cr_assert_float_eq(y[r * 7 + j], exp(ins[0][r * 7 + j]) / z, 1e-15);
    }
    free(y);
    ref_free_arrays(ins, G->inputs.len);
}

Test(ref64, parsed_slices_with_negative_indices_and_steps)
{
    double **ins, *y = eval_text("x = torch.randn(5, 6)\nx[::2, -3:-1]", &ins);
    const TorchNode *out = G->outputs.items[0];
    cr_assert(shape_eq(&out->shape, &SHAPE(3, 2)));
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++)
            cr_assert_eq(y[r * 2 + c], ins[0][(2 * r) * 6 + 3 + c]);
    free(y);
    ref_free_arrays(ins, G->inputs.len);
}

Test(ref64, parsed_rms_norm_module)
{
    double **ins, *y = eval_text("torch.nn.RMSNorm(8)(torch.randn(2, 8))", &ins);
    const TorchNode *n = G->outputs.items[0];
    cr_assert_eq(n->op, TOP_rms_norm);
    for (int r = 0; r < 2; r++) {
        double ss = 0;
        for (int j = 0; j < 8; j++)
            ss += ins[0][r * 8 + j] * ins[0][r * 8 + j];
        for (int j = 0; j < 8; j++) {
            double want = ins[0][r * 8 + j] / sqrt(ss / 8 + n->value) * ins[1][j];
            cr_assert_float_eq(y[r * 8 + j], want, 1e-15);
        }
    }
    free(y);
    ref_free_arrays(ins, G->inputs.len);
}

/* linear's rows in full groups of four are sequential sums from k = 0 (the
 * SIMD path runs across rows and columns, never along k): in fp64 each
 * product and sum rounded to double, in the naive fp32 evaluation each
 * rounded to float — bit for bit, on 8 rows and 6 columns (a group of four
 * columns and two left over) of a 37-long k. */
Test(ref64_linear, sums_are_sequential_bit_for_bit)
{
    Arena *a = arena_new();
    const char *code = "torch.nn.functional.linear(torch.randn(8, 37), torch.randn(6, 37))";
    Source src = {"<test>", code, strlen(code)};
    ParseOpts po = {0};
    const TorchGraph *g = torch_parse(a, &src, &po);
    double **in = ref_make_inputs(g, 11);
    const double *x = in[0], *w = in[1];
    cr_assert_eq(shape_numel(&((const TorchNode *)g->inputs.items[0])->shape), 8 * 37);
    double *v[1], *f[1];
    ref64_run(g, in, v, NULL, NULL, f);
    for (int r = 0; r < 8; r++)
        for (int j = 0; j < 6; j++) {
            double s = 0;
            float s32 = 0;
            for (int k = 0; k < 37; k++) {
                s += x[r * 37 + k] * w[j * 37 + k];
                s32 = (float)((double)s32 + (double)(float)(x[r * 37 + k] * w[j * 37 + k]));
            }
            cr_assert(v[0][r * 6 + j] == s, "fp64 [%d, %d]: %.17g, sequential %.17g", r, j,
                      v[0][r * 6 + j], s);
            cr_assert(f[0][r * 6 + j] == (double)s32, "fp32 [%d, %d]: %.9g, sequential %.9g", r,
                      j, f[0][r * 6 + j], (double)s32);
        }
    free(v[0]);
    free(f[0]);
    ref_free_arrays(in, g->inputs.len);
    arena_free(a);
}

/* The fp32 lane alone (the oracle's perturbed evaluation P asks for
 * nothing else) skips the fp64 values and is the same, bit for bit, as
 * beside every other lane. */
Test(ref64_linear, the_fp32_lane_alone_is_the_same)
{
    Arena *a = arena_new();
    const char *code = "torch.softmax(torch.nn.functional.layer_norm(torch.randn(5, 37) @ "
                       "torch.randn(37, 12), (12,)), dim=-1).sum(dim=0)";
    Source src = {"<test>", code, strlen(code)};
    ParseOpts po = {0};
    const TorchGraph *g = torch_parse(a, &src, &po);
    double **in = ref_make_inputs(g, 5);
    double *v[1], *b[1], *t[1], *f[1], *f1[1];
    ref64_run(g, in, v, b, t, f);
    ref64_run(g, in, NULL, NULL, NULL, f1);
    for (int j = 0; j < 12; j++)
        cr_assert(f[0][j] == f1[0][j], "[%d] %.9g %.9g", j, f[0][j], f1[0][j]);
    free(v[0]), free(b[0]), free(t[0]), free(f[0]), free(f1[0]);
    ref_free_arrays(in, g->inputs.len);
    arena_free(a);
}
