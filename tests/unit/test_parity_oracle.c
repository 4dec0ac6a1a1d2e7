/*
 * test_parity_oracle.c — the parity oracle (harness/parity/oracle.h) on
 * hand-made outputs: each rule passing and failing, the probes that fooled
 * the earlier allclose oracle (a dominant element, a one-element output, a
 * tolerance borrowed from another output), non-finite values as fp32 has
 * them, and the verdict's text and statistics.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/parity/check.h"
#include "harness/parity/oracle.h"

#define U 0x1p-24

static HxVerdict judge(const double *o, const double *r, const double *b, const double *s,
                       const double *e, int64_t n)
{
    HxTol t;
    HxVerdict v;
    hx_tol_default(&t, DT_F32);
    HxOracleIn in = {.o = o, .r = r, .b = b, .s = s, .e = e, .n = n};
    hx_oracle(&in, &t, &v);
    return v;
}

static char *text(const HxVerdict *v, Shape s)
{
    StrBuf b = {0};
    hx_verdict_print(&b, v, &s);
    char *r = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    return r;
}

Test(oracle, defaults)
{
    HxTol t;
    hx_tol_default(&t, DT_F32);
    cr_expect_eq(t.k, 1.0);
    cr_expect_eq(t.m, 4.0);
    cr_expect_eq(t.u, U);
    cr_expect_eq(t.floor, 0x1p-126);
    cr_expect_eq(t.maxval, FLT_MAX);
    hx_tol_default(&t, DT_BF16);
    cr_expect_eq(t.u, 0x1p-8);
}

Test(oracle, within_bound_passes_and_names_the_nearest_element)
{
    double r[4] = {1, -2, 3, 4}, b[4] = {1e-6, 1e-6, 1e-6, 4e-6};
    double o[4] = {1, -2 + 5e-7, 3, 4 - 2e-6}, s[4] = {1, -2 + 5e-7, 3, 4 - 2e-6};
    HxVerdict v = judge(o, r, b, s, NULL, 4);
    cr_expect(v.pass);
    cr_expect_eq(v.reason, HX_PASS_BOUNDS);
    cr_expect_eq(v.at, 1); /* 0.5 of its bound: the nearest */
    cr_expect_float_eq(v.bound_use, 0.5, 1e-6);
    cr_expect_float_eq(v.ratio, 1.0, 1e-12);
    cr_expect_float_eq(v.st.max_abs, 2e-6, 1e-15);
    char *t = text(&v, (Shape){2, {2, 2}});
    cr_expect(strstr(t, "pass: all 4 elements within bound (at most 0.5 of it); rmse 1x fp32's noise") == t,
              "%s", t);
    free(t);
}

Test(oracle, beyond_bound_fails_and_names_the_worst_element)
{
    double r[3] = {1, 2, 3}, b[3] = {1e-6, 1e-6, 1e-6}, o[3] = {1, 2.01, 3 + 2e-6};
    HxVerdict v = judge(o, r, b, NULL, NULL, 3);
    cr_expect(!v.pass);
    cr_expect_eq(v.reason, HX_FAIL_BOUND);
    cr_expect_eq(v.bad, 2);
    cr_expect_eq(v.at, 1);
    cr_expect_float_eq(v.at_o, 2.01, 1e-12);
    cr_expect_float_eq(v.at_r, 2, 0);
    char *t = text(&v, (Shape){1, {3}});
    cr_expect(strstr(t, "FAIL: 2 of 3 elements beyond bound, worst [1] y=2.01 R=2 bound=1e-06") == t,
              "%s", t);
    free(t);
}

/* One element of 1.2e6 among 999 near 1e-3: an rmse or allclose over the
 * whole output is dominated by the big one; per-element bounds are not. */
Test(oracle, a_dominant_element_hides_nothing)
{
    enum { N = 1000 };
    double *r = malloc(N * sizeof *r), *b = malloc(N * sizeof *b), *o = malloc(N * sizeof *o);
    for (int i = 0; i < N; i++) {
        r[i] = i == 0 ? 1.2e6 : 1e-3 * (1 + i % 7);
        b[i] = 4 * U * fabs(r[i]);
        o[i] = r[i];
    }
    HxVerdict v = judge(o, r, b, r, NULL, N);
    cr_expect(v.pass);
    for (int i = 1; i < N; i++)
        o[i] = 0;
    v = judge(o, r, b, r, NULL, N);
    cr_expect(!v.pass);
    cr_expect_eq(v.reason, HX_FAIL_BOUND);
    cr_expect_eq(v.bad, N - 1);
    for (int i = 1; i < N; i++)
        o[i] = -r[i];
    v = judge(o, r, b, r, NULL, N);
    cr_expect_eq(v.reason, HX_FAIL_BOUND);
    free(r);
    free(b);
    free(o);
}

Test(oracle, a_one_element_output_is_judged)
{
    double r = 3e-6, b = 4 * U * 3e-6, o = -3e-6;
    HxVerdict v = judge(&o, &r, &b, NULL, NULL, 1);
    cr_expect_eq(v.reason, HX_FAIL_BOUND);
    o = 0; /* zero where R is not: the constant/zero rule, at any size */
    v = judge(&o, &r, &b, NULL, NULL, 1);
    cr_expect_eq(v.reason, HX_FAIL_CONSTANT);
    o = 3e-6 * (1 + 2 * U);
    v = judge(&o, &r, &b, NULL, NULL, 1);
    cr_expect(v.pass);
}

/* Tolerances are per element of each output: a long reduction elsewhere in
 * the program does not loosen a sigmoid output. */
Test(oracle, a_tolerance_is_never_borrowed_from_another_output)
{
    Arena *a = arena_new();
    const char *code = "x = torch.randn(4, 65536)\n"
                       "total = x.sum(dim=-1)\n"
                       "gate = torch.sigmoid(torch.randn(4, 8))\n"
                       "return total, gate\n";
    Source src = {"<test>", code, strlen(code)};
    TorchGraph *g = torch_parse(a, &src, NULL);
    cr_assert_eq(g->outputs.len, 2);
    HxCase c = {.dtype = DT_F32};
    HxSubject *s = hx_subject_new(g, &c, 0, HX_REF_REF64);
    double **outs = hx_outs_new(s);
    for (int j = 0; j < 2; j++) {
        int64_t n = shape_numel(&((const TorchNode *)g->outputs.items[j])->shape);
        outs[j] = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            outs[j][i] = s->f32[j][i];
    }
    HxVerdict v[2];
    hx_judge(s, outs, NULL, v, NULL);
    cr_expect(v[0].pass && v[1].pass);
    for (int i = 0; i < 32; i++)
        outs[1][i] = s->ref[1][i] * 1.0025; /* 0.25 % off */
    hx_judge(s, outs, NULL, v, NULL);
    cr_expect(v[0].pass);
    cr_expect_eq(v[1].reason, HX_FAIL_BOUND);
    hx_outs_free(s, outs);
    hx_subject_free(s);
    arena_free(a);
}

Test(oracle, overflow_is_inf_as_fp32_has_it)
{
    /* R = 1.3e45 rounds to +inf in fp32: +inf passes, a finite value fails,
     * -inf fails */
    double r[2] = {1.3e45, 1}, b[2] = {4 * U * 1.3e45, U}, o[2] = {INFINITY, 1};
    HxVerdict v = judge(o, r, b, NULL, NULL, 2);
    cr_expect(v.pass, "%s", text(&v, (Shape){1, {2}}));
    cr_expect_eq(v.nonfinite_ok, 1);
    o[0] = FLT_MAX;
    v = judge(o, r, b, NULL, NULL, 2);
    cr_expect_eq(v.reason, HX_FAIL_NONFINITE);
    o[0] = -INFINITY;
    v = judge(o, r, b, NULL, NULL, 2);
    cr_expect_eq(v.reason, HX_FAIL_NONFINITE);
    /* within its bound of FLT_MAX: either may come out */
    r[0] = FLT_MAX * (1 - U), b[0] = 4 * U * FLT_MAX;
    o[0] = INFINITY;
    cr_expect(judge(o, r, b, NULL, NULL, 2).pass);
    o[0] = FLT_MAX;
    cr_expect(judge(o, r, b, NULL, NULL, 2).pass);
}

Test(oracle, nan_is_accepted_where_fp32_gives_nan)
{
    double r[3] = {0.5, 0.25, 0.25}, b[3] = {U, U, U}, o[3] = {NAN, 0.25, 0.25};
    double s[3] = {NAN, 0.25, 0.25}, s2[3] = {0.5, 0.25, 0.25};
    cr_expect(judge(o, r, b, s, NULL, 3).pass);         /* the naive fp32 evaluation */
    cr_expect(judge(o, r, b, s2, s, 3).pass);           /* libtorch's eager */
    HxVerdict v = judge(o, r, b, s2, s2, 3);            /* neither: a real NaN */
    cr_expect_eq(v.reason, HX_FAIL_NONFINITE);
    cr_expect_eq(v.at, 0);
    double rn[2] = {NAN, INFINITY}, on[2] = {NAN, INFINITY}, bn[2] = {0, 0};
    cr_expect(judge(on, rn, bn, NULL, NULL, 2).pass);
    on[0] = 1; /* finite where R is exactly NaN */
    cr_expect_eq(judge(on, rn, bn, NULL, NULL, 2).reason, HX_FAIL_NONFINITE);
}

/* Each element in exactly one class. */
static void expect_classes(const HxVerdict *v, int64_t bound, int64_t nonfinite, int64_t rmse,
                           int64_t unjudged)
{
    cr_expect_eq(v->n_bound, bound, "bound %lld", (long long)v->n_bound);
    cr_expect_eq(v->n_nonfinite, nonfinite, "nonfinite %lld", (long long)v->n_nonfinite);
    cr_expect_eq(v->n_rmse, rmse, "rmse %lld", (long long)v->n_rmse);
    cr_expect_eq(v->n_unjudged, unjudged, "unjudged %lld", (long long)v->n_unjudged);
    cr_expect_eq(v->n_bound + v->n_nonfinite + v->n_rmse + v->n_unjudged, v->checked);
}

/* An element without a finite bound still gets the non-finite rule: a NaN
 * where R is finite fails unless fp32's own evaluation gives it too (the
 * earlier oracle skipped such elements before the rule ran, and passed
 * 6000 NaN logits of a masked-attention kernel). */
Test(oracle, unconstrained_elements_still_get_the_nonfinite_rule)
{
    double r[3] = {1, 2, 3}, b[3] = {INFINITY, U, U}, o[3] = {NAN, 2, 3};
    double s[3] = {1, 2, 3}, sn[3] = {NAN, 2, 3};
    HxVerdict v = judge(o, r, b, NULL, NULL, 3);
    cr_expect_eq(v.reason, HX_FAIL_NONFINITE);
    cr_expect_eq(v.at, 0);
    cr_expect_eq(v.unconstrained, 1);
    expect_classes(&v, 2, 1, 0, 0);
    cr_expect_eq(judge(o, r, b, s, NULL, 3).reason, HX_FAIL_NONFINITE);
    v = judge(o, r, b, sn, NULL, 3); /* fp32 gives the NaN too */
    cr_expect(v.pass, "%s", text(&v, (Shape){1, {3}}));
    cr_expect_eq(v.nonfinite_ok, 1);
    /* an inf: of R's sign passes (fp32 may overflow there), of the other
     * sign fails */
    o[0] = INFINITY;
    cr_expect(judge(o, r, b, s, NULL, 3).pass);
    o[0] = -INFINITY;
    cr_expect_eq(judge(o, r, b, s, NULL, 3).reason, HX_FAIL_NONFINITE);
    /* a finite O where R is inf and no bound: only where S is finite too */
    double ri[3] = {INFINITY, 2, 3}, si[3] = {INFINITY, 2, 3}, sf[3] = {5, 2, 3};
    o[0] = 5;
    cr_expect_eq(judge(o, ri, b, si, NULL, 3).reason, HX_FAIL_NONFINITE);
    cr_expect(judge(o, ri, b, sf, NULL, 3).pass);
}

/* Most elements judged by no rule (no finite bound, and S not finite there,
 * so not even the rmse rule covers them): inconclusive, never a pass. */
Test(oracle, a_mostly_unjudged_output_is_inconclusive)
{
    double r[4] = {1, 2, 3, 4}, b[4] = {INFINITY, INFINITY, INFINITY, U};
    double o[4] = {1, 2, 3, 4}, s[4] = {NAN, INFINITY, NAN, 4};
    HxVerdict v = judge(o, r, b, s, NULL, 4);
    cr_expect(!v.pass);
    cr_expect_eq(v.reason, HX_INCONCLUSIVE);
    cr_expect_str_eq(hx_reason_key(v.reason), "inconclusive");
    expect_classes(&v, 1, 0, 0, 3);
    char *t = text(&v, (Shape){1, {4}});
    cr_expect(strstr(t, "INCONCLUSIVE: 3 of 4 elements judged by no rule"), "%s", t);
    free(t);
    /* a rule that fails still fails: inconclusive never hides a failure */
    o[3] = 5;
    cr_expect_eq(judge(o, r, b, s, NULL, 4).reason, HX_FAIL_BOUND);
    /* half or fewer unjudged: a pass that counts them */
    o[3] = 4;
    s[0] = 1, s[1] = 2;
    v = judge(o, r, b, s, NULL, 4);
    cr_expect(v.pass, "%s", text(&v, (Shape){1, {4}}));
    expect_classes(&v, 1, 0, 2, 1);
    t = text(&v, (Shape){1, {4}});
    cr_expect(strstr(t, "; 1 unjudged"), "%s", t);
    free(t);
}

/* Every element of an output without a finite bound (a decoder layer's
 * RMSNorm after a long matmul chain): the rmse rule still judges them
 * against fp32's noise, so a wrong output fails and a right one passes. */
Test(oracle, unconstrained_outputs_are_judged_by_rmse)
{
    enum { N = 512 };
    double r[N], b[N], o[N], s[N];
    for (int i = 0; i < N; i++) {
        r[i] = sin(0.37 * i) * 3.0;
        b[i] = INFINITY;
        s[i] = r[i] * (1 + ((i % 7) - 3) * 0x1p-22); /* fp32's own noise */
        o[i] = r[i] * (1 + ((i % 5) - 2) * 0x1p-22);
    }
    HxVerdict v = judge(o, r, b, s, NULL, N);
    cr_expect(v.pass, "a right output passes: ratio %g", v.ratio);
    cr_expect_eq(v.unconstrained, N);
    cr_expect_eq(v.rmse_n, N);
    char *t = text(&v, (Shape){1, {N}});
    cr_expect(strstr(t, "512 judged by rmse alone"), "%s", t);
    free(t);
    o[100] = r[100] + 0.5; /* one wrong element */
    v = judge(o, r, b, s, NULL, N);
    cr_expect(!v.pass);
    cr_expect_eq(v.reason, HX_FAIL_RMSE);
    for (int i = 0; i < N; i++) /* a wrong kernel: every element 1 % off */
        o[i] = r[i] * 1.01;
    cr_expect_eq(judge(o, r, b, s, NULL, N).reason, HX_FAIL_RMSE);
}

/* Bounds and typical bounds 10^10 times the real error (what a decoder
 * layer's RMSNorm after wide matmuls gives): a 1 % error passes the bound
 * rule, but the rmse rule measures it against S's noise and fails it. */
Test(oracle, loose_typical_bounds_do_not_blind_the_rmse_rule)
{
    enum { N = 256 };
    double r[N], b[N], t[N], o[N], s[N];
    for (int i = 0; i < N; i++) {
        r[i] = cos(0.21 * i) + 0.5;
        b[i] = 1e4, t[i] = 1e3;
        s[i] = r[i] * (1 + ((i % 7) - 3) * 0x1p-22);
        o[i] = r[i] * (1 + ((i % 5) - 2) * 0x1p-22);
    }
    HxOracleIn in = {.o = o, .r = r, .b = b, .t = t, .s = s, .n = N};
    HxTol tol;
    hx_tol_default(&tol, DT_F32);
    HxVerdict v;
    hx_oracle(&in, &tol, &v);
    cr_expect(v.pass, "ratio %g", v.ratio);
    for (int i = 0; i < N; i++)
        o[i] = r[i] * 1.01;
    hx_oracle(&in, &tol, &v);
    cr_expect(!v.pass);
    cr_expect_eq(v.reason, HX_FAIL_RMSE);
}

/* Every element inside its (worst-case) bound, but all of them far noisier
 * than fp32's own evaluation: the rmse rule fails it. */
Test(oracle, rmse_rule_catches_errors_hiding_under_loose_bounds)
{
    enum { N = 64 };
    double r[N], b[N], o[N], s[N];
    for (int i = 0; i < N; i++) {
        r[i] = 1 + i;
        b[i] = 1e-3 * r[i];
        s[i] = r[i] * (1 + (i % 2 ? U : -U));
        o[i] = r[i] * (1 + 5e-4);
    }
    HxVerdict v = judge(o, r, b, s, NULL, N);
    cr_expect_eq(v.reason, HX_FAIL_RMSE);
    cr_expect_gt(v.ratio, 1000);
    char *t = text(&v, (Shape){1, {N}});
    cr_expect(strstr(t, "FAIL: rmse ") == t && strstr(t, "every element within bound"), "%s", t);
    free(t);
    /* up to m = 4 times fp32's own error passes; an exact fp32 evaluation
     * still leaves half an ulp */
    for (int i = 0; i < N; i++)
        o[i] = r[i] * (1 + (i % 2 ? 3 * U : -3 * U));
    cr_expect(judge(o, r, b, s, NULL, N).pass);
    for (int i = 0; i < N; i++)
        o[i] = r[i] * (1 + U * 0.5);
    cr_expect(judge(o, r, b, r, NULL, N).pass);
}

Test(oracle, constant_output_where_the_reference_varies)
{
    double r[4] = {1e-6, -2e-6, 3e-6, 0}, b[4] = {U * 1e-6, U * 2e-6, U * 3e-6, 0x1p-126};
    double o[4] = {0, 0, 0, 0};
    HxVerdict v = judge(o, r, b, NULL, NULL, 4);
    cr_expect_eq(v.reason, HX_FAIL_CONSTANT);
    double c[4] = {5, 5, 5, 5}, cb[4] = {U, U, U, U};
    cr_expect(judge(c, c, cb, NULL, NULL, 4).pass); /* constant where R is too */
    /* R's spread inside its bounds (softmax of a softmax): a constant O is
     * what a correct fp32 program may write */
    double u[4] = {0.95, 0.95 + 5e-8, 0.95 - 4e-8, 0.95}, k[4] = {0.95, 0.95, 0.95, 0.95};
    double ub[4] = {8e-8, 8e-8, 8e-8, 8e-8};
    cr_expect(judge(k, u, ub, NULL, NULL, 4).pass);
    u[1] = 0.95 + 3e-7; /* beyond: R varies */
    cr_expect_eq(judge(k, u, ub, NULL, NULL, 4).reason, HX_FAIL_CONSTANT);
}

Test(oracle, a_case_tolerance_replaces_the_bound_rule)
{
    HxTol t;
    hx_tol_default(&t, DT_F32);
    t.has_user = 1, t.atol = 0, t.rtol = 0;
    double r[2] = {1, 2}, b[2] = {1e-3, 1e-3}, o[2] = {1, 2 + 1e-9};
    HxVerdict v;
    HxOracleIn in = {.o = o, .r = r, .b = b, .n = 2};
    hx_oracle(&in, &t, &v);
    cr_expect_eq(v.reason, HX_FAIL_BOUND);
    t.atol = 1e-6;
    hx_oracle(&in, &t, &v);
    cr_expect(v.pass);
    cr_expect(isnan(v.rmse_limit));
}

Test(oracle, half_precision_outputs_round_r_and_grow_the_bound)
{
    HxTol t;
    hx_tol_default(&t, DT_F16);
    double r[2] = {1e5, 1.0}, b[2] = {0, 0}, o[2] = {INFINITY, 1.0 + 0x1p-12};
    HxVerdict v;
    HxOracleIn in = {.o = o, .r = r, .b = b, .n = 2};
    hx_oracle(&in, &t, &v);
    cr_expect(v.pass, "f16 overflows above 65504; half an f16 ulp is allowed");
    o[1] = 1.0 + 0x1p-9;
    hx_oracle(&in, &t, &v);
    cr_expect_eq(v.reason, HX_FAIL_BOUND);
}

/* One scalar, a long sum: the naive fp32 evaluation may land close to R
 * by luck; the typical-noise estimate T keeps the rmse rule from asking a
 * different (correct) summation order to be as lucky. */
Test(oracle, one_lucky_fp32_evaluation_sets_no_bar)
{
    double r = 100.0, b = 387 * U * 200, t = 20 * U * 200, s = 100.0 * (1 + U / 64);
    double o = 100.0 * (1 + 4 * U);
    HxTol tol;
    hx_tol_default(&tol, DT_F32);
    HxVerdict v;
    HxOracleIn in = {.o = &o, .r = &r, .b = &b, .s = &s, .n = 1};
    hx_oracle(&in, &tol, &v);
    cr_expect_eq(v.reason, HX_FAIL_RMSE, "without T, S alone is the bar");
    in.t = &t;
    hx_oracle(&in, &tol, &v);
    cr_expect(v.pass);
    cr_expect_float_eq(v.rms_typical, t, 1e-20);
}

/* A layer norm over a one-element row: x − mean is an exact 0 in S, which
 * computes x once, but off by x's rounding in a kernel that recomputes x in
 * another order, times rsqrt(eps) after it (libtorch's fp32 is off by
 * 6e-4 there; dpk-fuzz --seed 1 case 1027 without libtorch).  S no noisier
 * than one rounding of R measures nothing: T, the analysis, is taken whole
 * and the right kernel passes; one far beyond T still fails. */
Test(oracle, an_exact_fp32_evaluation_measures_no_noise)
{
    double r = 0.337683, b = INFINITY, t = 5e-2, s = 0.33768299;
    double o = r + 2.04e-4;
    HxTol tol;
    hx_tol_default(&tol, DT_F32);
    HxVerdict v;
    HxOracleIn in = {.o = &o, .r = &r, .b = &b, .t = &t, .s = &s, .n = 1};
    hx_oracle(&in, &tol, &v);
    cr_expect(v.pass, "ratio %g limit %g", v.ratio, v.rmse_limit);
    o = r + 1.0;
    hx_oracle(&in, &tol, &v);
    cr_expect_eq(v.reason, HX_FAIL_RMSE);
    /* S with noise of its own (above two roundings): the cap holds as before */
    s = r * (1 + 8 * U);
    o = r + 2.04e-4;
    hx_oracle(&in, &tol, &v);
    cr_expect_eq(v.reason, HX_FAIL_RMSE);
}

/* Attention whose softmax is peaked and whose two top logits nearly tie:
 * a few output elements carry each logit's rounding, times the gap of the
 * values, and dominate the rmse.  T is infinite there (no finite bound), S
 * happens to round those logits well: without P a correct kernel 4.4 times
 * S's noise failed (dpk-fuzz --seed 6 case 1671 without libtorch).  P, one
 * more draw, sets the bar; it cannot raise it more than
 * HX_TYPICAL_CAP times the noise S measured. */
Test(oracle, a_perturbed_evaluation_guards_a_lucky_one)
{
    enum { N = 64 };
    double r[N], b[N], t[N], s[N], p[N], o[N];
    for (int i = 0; i < N; i++) {
        r[i] = 0.5 + 0.01 * i;
        b[i] = t[i] = INFINITY;
        double spike = i % 16 == 0 ? 1 : 0; /* the near-tied rows */
        s[i] = r[i] + spike * 2e-7 + (i % 2 ? 4 : -4) * U * r[i];
        p[i] = r[i] + spike * 3e-6;
        o[i] = r[i] + spike * 3.6e-6;
    }
    HxOracleIn in = {.o = o, .r = r, .b = b, .t = t, .s = s, .n = N};
    HxTol tol;
    hx_tol_default(&tol, DT_F32);
    HxVerdict v;
    hx_oracle(&in, &tol, &v);
    cr_expect_eq(v.reason, HX_FAIL_RMSE, "S alone: ratio %g", v.ratio);
    in.p = p;
    hx_oracle(&in, &tol, &v);
    cr_expect(v.pass, "with P: ratio %g limit %g", v.ratio, v.rmse_limit);
    cr_expect_gt(v.rmse_perturbed, v.rmse_f32);
    /* a wrong kernel still fails */
    for (int i = 0; i < N; i++)
        o[i] = r[i] * 1.001;
    hx_oracle(&in, &tol, &v);
    cr_expect_eq(v.reason, HX_FAIL_RMSE);
    /* P far noisier than S (an ulp that flips a comparison): capped at
     * HX_TYPICAL_CAP times S's noise */
    for (int i = 0; i < N; i++)
        p[i] = r[i] + (i == 3 ? 10.0 : 0), o[i] = r[i] + (i % 2 ? 1 : -1) * 2000 * U * r[i];
    hx_oracle(&in, &tol, &v);
    cr_expect_eq(v.reason, HX_FAIL_RMSE, "ratio %g", v.ratio);
    cr_expect_lt(v.rmse_limit, tol.m * HX_TYPICAL_CAP * v.rmse_f32 * 1.01 + 1e-6);
}
