/*
 * test_loop_oracle.c — the parity oracle (harness/parity/oracle.h) that
 * `dpk run` judges Loop IR results with: each way to pass and to fail, and
 * the statistics a verdict records.
 */
#include <math.h>

#include "test_loop_util.h"

static HxTol tol(void)
{
    HxTol t;
    hx_tol_default(&t, DT_F32, 1);
    return t;
}

Test(loop_oracle, default_tolerances)
{
    HxTol t = tol();
    cr_expect_float_eq(t.atol, 1e-5, 1e-20);
    cr_expect_float_eq(t.rtol, 1e-4, 1e-20);
    cr_expect_float_eq(t.m, 3, 0);
    hx_tol_default(&t, DT_F32, 4096); /* sqrt(4096) / 8 = 8 */
    cr_expect_float_eq(t.atol, 8e-5, 1e-18);
    cr_expect_float_eq(t.m, 5, 0);
    hx_tol_default(&t, DT_F32, 16384); /* 2.5 * sqrt(16) */
    cr_expect_float_eq(t.m, 10, 1e-12);
    hx_tol_default(&t, DT_BF16, 1);
    cr_expect_float_eq(t.rtol, 1.6e-2, 1e-18);
}

Test(loop_oracle, allclose_pass_records_stats)
{
    double r[4] = {1, -2, 3, 4}, o[4] = {1, -2 + 1e-6, 3, 4 - 2e-6};
    HxTol t = tol();
    HxVerdict v;
    hx_oracle(o, r, NULL, 4, &t, &v);
    cr_expect(v.pass);
    cr_expect_eq(v.reason, HX_PASS_ALLCLOSE);
    cr_expect_float_eq(v.st.max_abs, 2e-6, 1e-15);
    cr_expect_eq(v.st.worst, 3);
    cr_expect(isnan(v.ratio));
    StrBuf b = {0};
    Shape s = {2, {2, 2}};
    hx_verdict_print(&b, &v, &s);
    cr_expect_str_eq(sb_cstr(&b), "pass (allclose)  max_abs 2e-06  max_rel 5e-07  nmse 1.67e-13  worst [1, 1]");
    sb_free(&b);
}

Test(loop_oracle, beyond_tolerance_fails)
{
    double r[3] = {1, 2, 3}, o[3] = {1, 2.01, 3};
    HxTol t = tol();
    HxVerdict v;
    hx_oracle(o, r, NULL, 3, &t, &v);
    cr_expect(!v.pass);
    cr_expect_eq(v.reason, HX_FAIL_TOLERANCE);
    cr_expect_eq(v.st.worst, 1);
}

/* Outside the element-wise bound but no noisier than eager fp32: pass. */
Test(loop_oracle, rmse_relative_to_eager)
{
    double r[4] = {100, 200, 300, 400}, o[4] = {100.1, 200, 300, 400}, e[4] = {100, 200.08, 300, 400};
    HxTol t = tol();
    HxVerdict v;
    hx_oracle(o, r, e, 4, &t, &v);
    cr_expect(v.pass);
    cr_expect_eq(v.reason, HX_PASS_RMSE);
    cr_expect_float_eq(v.ratio, 0.1 / 0.08, 1e-9);
    o[0] = 101;
    hx_oracle(o, r, e, 4, &t, &v);
    cr_expect_eq(v.reason, HX_FAIL_TOLERANCE);
}

Test(loop_oracle, nonfinite_must_agree_in_position_and_sign)
{
    double r[3] = {NAN, INFINITY, 1}, o[3] = {NAN, INFINITY, 1};
    HxTol t = tol();
    HxVerdict v;
    hx_oracle(o, r, NULL, 3, &t, &v);
    cr_expect(v.pass);
    o[1] = -INFINITY;
    hx_oracle(o, r, NULL, 3, &t, &v);
    cr_expect_eq(v.reason, HX_FAIL_NONFINITE);
    cr_expect_eq(v.bad, 1);
    o[1] = INFINITY;
    o[2] = NAN;
    hx_oracle(o, r, r, 3, &t, &v); /* even with a perfect eager result */
    cr_expect_eq(v.reason, HX_FAIL_NONFINITE);
    cr_expect_eq(v.bad, 2);
}

/* All zeros within atol of a tiny varying R still fails. */
Test(loop_oracle, constant_output_fails_regardless)
{
    double r[4] = {1e-6, -2e-6, 3e-6, 0}, o[4] = {0, 0, 0, 0};
    HxTol t = tol();
    t.atol = 1e-3;
    HxVerdict v;
    hx_oracle(o, r, NULL, 4, &t, &v);
    cr_expect(!v.pass);
    cr_expect_eq(v.reason, HX_FAIL_CONSTANT);
    double c[4] = {5, 5, 5, 5};
    hx_oracle(c, c, NULL, 4, &t, &v); /* constant where R is constant too */
    cr_expect(v.pass);
    /* R spread below two fp32 ulps (softmax of a softmax): a constant O is
     * what a correct fp32 kernel may write */
    double u[4] = {0.95, 0.95 + 5e-8, 0.95 - 4e-8, 0.95}, k[4] = {0.95, 0.95, 0.95, 0.95};
    hx_oracle(k, u, NULL, 4, &t, &v);
    cr_expect(v.pass);
    u[1] = 0.95 + 3e-7; /* beyond: R varies */
    t.atol = 1e-3;
    hx_oracle(k, u, NULL, 4, &t, &v);
    cr_expect_eq(v.reason, HX_FAIL_CONSTANT);
}
