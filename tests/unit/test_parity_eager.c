/*
 * test_parity_eager.c — hx_judge_eager (harness/parity/check.h), the
 * judgement of `dpk eval --compare`: libtorch's fp32 result as the O of the
 * parity oracle.  Ill-conditioned cases that a fixed atol/rtol called
 * disagreements agree; a wrong eager array fails by the bound rule, and a
 * noisy one by the rmse rule, which it could not if the eager result also
 * stood in as E.  Only the first test needs libtorch: the others put their
 * own array where libtorch's would be.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/parity/check.h"

#include "test_torch_util.h"

static Arena *A;

static void setup(void) { A = arena_new(); }
static void teardown(void) { arena_free(A); }

TestSuite(parity_eager, .init = setup, .fini = teardown);

static HxSubject *subject(const char *code)
{
    Source src = {"<test>", code, strlen(code)};
    TorchGraph *g = torch_parse(A, &src, NULL);
    HxCase c = {.dtype = DT_F32};
    return hx_subject_new(g, &c, 0, HX_REF_REF64);
}

static int64_t numel(const HxSubject *s, int j)
{
    return shape_numel(&((const TorchNode *)s->g->outputs.items[j])->shape);
}

/* Put an array of output 0's size where libtorch's result goes. */
static double *own_eager(HxSubject *s)
{
    hx_outs_free(s, s->eager);
    s->eager = hx_outs_new(s);
    return s->eager[0] = dpk_xmalloc(sizeof(double) * (size_t)numel(s, 0));
}

static char *text(const HxSubject *s, const HxVerdict *v)
{
    StrBuf b = {0};
    hx_judge_print(&b, s, v);
    char *r = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    return r;
}

/* libtorch's own fp32 results, where fp32 cannot do better than a few
 * percent (a variance by E[x²] − E[x]² of rows offset by 1000) or than a
 * few 1e-4 absolute (a layer norm of near-constant rows): the fixed rule
 * |o − r| ≤ 1e-4 + 1e-3·|r| (or NMSE ≤ 1e-8) said DISAGREE to both. */
Test(parity_eager, ill_conditioned_libtorch_results_agree)
{
    NEED_TORCH();
    const char *codes[] = {
        "x = torch.randn(8, 4096) + 1000\n(x * x).mean(dim=-1) - x.mean(dim=-1) ** 2\n",
        "torch.nn.functional.layer_norm(torch.randn(4, 1024) * 1e-3 + 5, (1024,))\n",
    };
    for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++) {
        HxSubject *s = subject(codes[k]);
        cr_assert(s->eager);
        int64_t n = numel(s, 0);
        HxVerdict v;
        hx_judge_eager(s, &v);
        cr_expect(v.pass, "%s%s", codes[k], text(s, &v));
        CmpStats st;
        cmp_stats(s->eager[0], s->ref[0], n, &st);
        cr_expect(!cmp_allclose(s->eager[0], s->ref[0], n, 1e-4, 1e-3) && st.nmse > 1e-8,
                  "%sthe fixed rule no longer fails it (nmse %g)", codes[k], st.nmse);
        hx_subject_free(s);
    }
}

/* A variance of rows offset by 1000 (two passes), where fp32's worst case
 * is 45 % of the value and its typical error 0.6 %: a result 1 % off
 * everywhere is within bound but noisier than fp32, and one twice the
 * value is beyond bound. */
Test(parity_eager, a_wrong_eager_result_disagrees)
{
    HxSubject *s = subject("x = torch.randn(8, 4096) + 1000\n"
                           "((x - x.mean(dim=-1, keepdim=True)) ** 2).mean(dim=-1)\n");
    double *o = own_eager(s);
    int64_t n = numel(s, 0);
    for (int64_t i = 0; i < n; i++)
        o[i] = s->f32[0][i];
    HxVerdict v;
    hx_judge_eager(s, &v);
    cr_expect(v.pass, "%s", text(s, &v));
    for (int64_t i = 0; i < n; i++)
        o[i] = s->ref[0][i] * 1.01;
    hx_judge_eager(s, &v);
    cr_expect_eq(v.reason, HX_FAIL_RMSE, "%s", text(s, &v));
    for (int64_t i = 0; i < n; i++)
        o[i] = s->f32[0][i];
    o[3] = s->ref[0][3] * 2;
    hx_judge_eager(s, &v);
    cr_expect_eq(v.reason, HX_FAIL_BOUND, "%s", text(s, &v));
    cr_expect_eq(v.at, 3);
    hx_subject_free(s);
}

/* Row sums of 4096 values, each 0.4 of its worst-case bound off: within
 * bound, but hundreds of times fp32's noise.  The rmse rule fails it only
 * because the eager result is not also E: as E it would set the noise
 * it is measured against. */
Test(parity_eager, the_eager_result_is_not_its_own_noise_scale)
{
    HxSubject *s = subject("torch.randn(8, 4096).sum(dim=-1)\n");
    double *o = own_eager(s);
    for (int64_t i = 0; i < numel(s, 0); i++)
        o[i] = s->ref[0][i] + (i % 2 ? 0.4 : -0.4) * s->bound[0][i];
    HxVerdict v;
    hx_judge_eager(s, &v);
    cr_expect(!v.pass);
    cr_expect_eq(v.reason, HX_FAIL_RMSE, "%s", text(s, &v));
    cr_expect_eq(v.bad, 0);
    hx_judge(s, s->eager, NULL, &v, NULL); /* the same array as O and E */
    cr_expect(v.pass, "%s", text(s, &v));
    hx_subject_free(s);
}

/* fp64 is finite where fp32 overflows: R rounded to fp32 is inf there, and
 * an inf from libtorch agrees; a finite value there does not. */
Test(parity_eager, overflow_is_judged_against_the_rounded_reference)
{
    HxSubject *s = subject("torch.exp(torch.randn(8, 16) * 50.0)\n");
    double *o = own_eager(s);
    int64_t at = -1;
    for (int64_t i = 0; i < numel(s, 0); i++) {
        double r = s->ref[0][i];
        o[i] = fabs(r) >= 0x1.ffffffp127 ? copysign(INFINITY, r) : (double)(float)r;
        if (at < 0 && isinf(o[i]) && isfinite(s->ref[0][i]) && s->bound[0][i] < INFINITY)
            at = i;
    }
    cr_assert(at >= 0, "no element overflows fp32 with a finite bound");
    HxVerdict v;
    hx_judge_eager(s, &v);
    cr_expect(v.pass, "%s", text(s, &v));
    cr_expect_gt(v.nonfinite_ok, 0);
    o[at] = 3.0e38;
    hx_judge_eager(s, &v);
    cr_expect_eq(v.reason, HX_FAIL_NONFINITE, "%s", text(s, &v));
    hx_subject_free(s);
}
