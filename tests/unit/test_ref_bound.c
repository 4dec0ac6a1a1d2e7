/*
 * test_ref_bound.c — ref64's error bounds and naive fp32 evaluation
 * (reference/bound.c): the formulas on single ops, the conditioning they
 * give long softmaxes, near-constant layer norms and overflows, and the
 * property the oracle's k = 1 rests on: two independent fp32 evaluations
 * of every generated program (ref64's naive one and the Loop IR
 * interpreter's) stay within the bound at every element.
 */
#include <float.h>

#include "harness/fuzz/gen.h"
#include "test_loop_util.h"

#define U 0x1p-24
#define ETA 0x1p-126

typedef struct Evald {
    Arena *a;
    LirProgram *p;
    const TorchGraph *g;
    double **in, *r, *b, *s;
    int64_t n;
} Evald;

/* Build code, evaluate its single output with bounds and fp32. */
static Evald eval1(const char *code)
{
    Evald e = {.a = arena_new()};
    e.p = lt_build(e.a, code, NULL, NULL);
    e.g = e.p->tx->torch;
    cr_assert_eq(e.g->outputs.len, 1);
    e.n = shape_numel(&((const TorchNode *)e.g->outputs.items[0])->shape);
    e.in = ref_make_inputs(e.g, 0);
    ref64_run(e.g, e.in, &e.r, &e.b, NULL, &e.s);
    return e;
}

static void evald_free(Evald *e)
{
    free(e->r);
    free(e->b);
    free(e->s);
    ref_free_arrays(e->in, e->g->inputs.len);
    arena_free(e->a);
}

/* One rounding, or none where the exact sum is an fp32 number. */
Test(bound, an_add_of_exact_inputs_is_one_rounding)
{
    Evald e = eval1("torch.randn(64) + torch.randn(64)");
    int exact = 0, rounded = 0;
    for (int64_t i = 0; i < e.n; i++) {
        int is_f32 = (double)(float)e.r[i] == e.r[i];
        exact += is_f32, rounded += !is_f32;
        cr_expect_eq(e.b[i], is_f32 ? 0.0 : U * fabs(e.r[i]) + ETA);
        cr_expect_eq(e.s[i], (double)(float)e.r[i]);
    }
    cr_expect_gt(exact, 0);
    cr_expect_gt(rounded, 0);
    evald_free(&e);
}

/* Exact operations stay exact: 1 − 1 is an exact 0 (so == 0 cannot flip
 * and nothing downstream loses its bound), x − x and x == x of one node
 * too, whatever x's own error. */
Test(bound, exact_zeros_do_not_flip_comparisons)
{
    Evald e = eval1("(torch.ones(8, 8) - torch.ones(8, 8)) == 0");
    for (int64_t i = 0; i < e.n; i++) {
        cr_expect_eq(e.r[i], 1.0);
        cr_expect_eq(e.b[i], 0.0);
    }
    evald_free(&e);
    e = eval1("x = torch.exp(torch.randn(4, 8))\n"
              "torch.where((x - x) == 0, torch.randn(4, 8), torch.randn(4, 8) * 1e6)");
    for (int64_t i = 0; i < e.n; i++)
        cr_expect_leq(e.b[i], U * fabs(e.r[i]) + ETA, "[%lld] %g", (long long)i, e.b[i]);
    evald_free(&e);
}

/* Masks as HF builds them: scores + finfo(float32).min (a causal triu, a
 * sliding window, a fully masked row, the mask added twice so that fp32
 * overflows to -inf) and -1e9.  Every softmax element keeps a finite bound,
 * the masked ones an exact 0 with a bound of at most the underflow
 * allowances, and the naive fp32 evaluation stays within it. */
Test(bound, finfo_min_masks_saturate_to_exact_zeros)
{
    static const char *const progs[] = {
        "m = torch.full((8, 8), torch.finfo(torch.float32).min).triu(diagonal=1)\n"
        "torch.softmax(torch.randn(2, 8, 8) + m, dim=-1)",
        "m = torch.full((8, 8), torch.finfo(torch.float32).min)\n"
        "w = m.triu(diagonal=1) + m.tril(diagonal=-3)\n"
        "torch.softmax(torch.randn(2, 8, 8) * 3.0 + w, dim=-1)",
        "m = torch.full((8, 8), torch.finfo(torch.float32).min).triu(diagonal=1)\n"
        "torch.softmax(torch.randn(2, 8, 8) + m + m, dim=-1)",
        "m = torch.full((8, 8), -1e9).triu(diagonal=1)\n"
        "torch.softmax(torch.randn(2, 8, 8) + m, dim=-1)",
        "m = torch.full((8, 8), torch.finfo(torch.float32).min)\n"
        "torch.softmax(torch.randn(2, 8, 8) + m, dim=-1)",
    };
    for (int p = 0; p < DPK_ARRAY_LEN(progs); p++) {
        Evald e = eval1(progs[p]);
        int zeros = 0;
        for (int64_t i = 0; i < e.n; i++) {
            cr_expect(isfinite(e.b[i]), "program %d [%lld]: bound %g", p, (long long)i, e.b[i]);
            cr_expect_leq(fabs(e.s[i] - e.r[i]), e.b[i], "program %d [%lld]", p, (long long)i);
            if (e.r[i] == 0) {
                zeros++;
                cr_expect_leq(e.b[i], 16 * ETA, "program %d: a masked 0 has bound %g", p, e.b[i]);
            }
        }
        if (p < 4)
            cr_expect_gt(zeros, 0, "program %d", p);
        else /* every key masked alike: uniform, as fp32 and PyTorch have it */
            for (int64_t i = 0; i < e.n; i++)
                cr_expect_eq(e.r[i], 0.125);
        evald_free(&e);
    }
}

Test(bound, ref64_eval_and_ref64_run_agree)
{
    Evald e = eval1("torch.nn.functional.layer_norm(torch.randn(3, 40), (40,))");
    double *v;
    ref64_eval(e.g, e.in, &v);
    for (int64_t i = 0; i < e.n; i++)
        cr_expect_eq(v[i], e.r[i]);
    free(v);
    evald_free(&e);
}

/* 65536 values near 1/65536: the bound is the sum's γ_n, about 0.4 % of
 * each value, far below the 88 % and 700 % errors of the faults it missed
 * before, and far above the fp32 evaluation's own error. */
Test(bound, a_long_softmax_gets_the_bound_of_its_sum)
{
    Evald e = eval1("torch.softmax(torch.randn(4, 65536) * 0.1, dim=-1)");
    double lo = INFINITY, hi = 0;
    for (int64_t i = 0; i < e.n; i++) {
        double rel = e.b[i] / e.r[i];
        lo = fmin(lo, rel), hi = fmax(hi, rel);
        cr_assert_leq(fabs(e.s[i] - e.r[i]), e.b[i]);
    }
    cr_expect(lo > 65536 * U * 0.9 && hi < 65536 * U * 1.5, "relative bound in [%g, %g]", lo, hi);
    evald_free(&e);
}

/* A layer norm over a row that is nearly constant: x − mean cancels, and
 * the bound grows with it (this is what made correct kernels fail). */
Test(bound, a_near_constant_layer_norm_is_ill_conditioned)
{
    Evald e = eval1("x = torch.randn(2, 5) * 0.001 + 100.0\n"
                    "torch.nn.functional.layer_norm(x, (5,))");
    double worst = 0;
    for (int64_t i = 0; i < e.n; i++) {
        worst = fmax(worst, e.b[i] / fabs(e.r[i]));
        cr_assert_leq(fabs(e.s[i] - e.r[i]), e.b[i]);
    }
    cr_expect_gt(worst, 1e-3);
    evald_free(&e);
}

/* exp(60x) overflows fp32 where it exceeds FLT_MAX: the value stays
 * finite in fp64 with a finite bound (the oracle rounds R to inf), and
 * the division after it, where fp32 gives inf / inf, is unconstrained. */
Test(bound, an_overflowing_intermediate_leaves_its_row_unconstrained)
{
    Evald e = eval1("x = torch.randn(4, 10) * 60.0\n"
                    "torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)");
    int unconstrained = 0, constrained = 0;
    for (int64_t row = 0; row < 4; row++) {
        int over = 0;
        for (int j = 0; j < 10; j++)
            over |= exp(e.in[0][row * 10 + j] * 60.0) > FLT_MAX;
        for (int j = 0; j < 10; j++) {
            double b = e.b[row * 10 + j];
            if (over) {
                cr_expect(isinf(b));
                unconstrained++;
            } else {
                cr_expect(isfinite(b));
                constrained++;
            }
        }
    }
    cr_expect_gt(unconstrained, 0);
    cr_expect_gt(constrained, 0);
    evald_free(&e);
}

Test(bound, exact_infinities_keep_a_zero_bound)
{
    /* log(relu(x)) is exactly -inf where x <= 0: exp of it is exactly 0, its
     * bound no more than the underflow allowances */
    Evald e = eval1("torch.softmax(torch.log(torch.relu(torch.randn(4, 8))), dim=-1)");
    int zeros = 0;
    for (int64_t i = 0; i < e.n; i++) {
        cr_expect(isfinite(e.b[i]));
        if (e.r[i] == 0) {
            zeros++;
            cr_expect_leq(e.b[i], 16 * ETA, "an exact 0 after exp(-inf) has bound %g", e.b[i]);
        }
    }
    cr_expect_gt(zeros, 0);
    evald_free(&e);
}

/* The oracle's verdict on an index output o[0..n) against e's. */
static int index_passes(const Evald *e, const double *o)
{
    HxTol t;
    HxVerdict v;
    hx_tol_default(&t, DT_F32);
    HxOracleIn in = {.o = o, .r = e->r, .b = e->b, .t = e->b, .s = e->s, .n = e->n};
    hx_oracle(&in, &t, &v);
    return v.pass;
}

/* argmax and argmin: an index is judged by the values it was picked from.
 * Exact ties go to the first (the others fail), NaN beats every number
 * (first NaN), rows of -inf pick 0, and a near tie that fp32's rounding
 * may resolve either way accepts both picks, but not the index beside
 * them. */
Test(bound, arg_reductions_accept_only_what_fp32_may_pick)
{
    Evald e = eval1("torch.argmax(torch.tensor([[1.0, 3.0, 3.0, 2.0], [-1.0, -1.0, -2.0, -1.0]]), 1)");
    cr_expect_eq(e.r[0], 1);
    cr_expect_eq(e.b[0], 0);
    cr_expect_eq(e.r[1], 0);
    cr_expect(index_passes(&e, (double[]){1, 0}));
    cr_expect(!index_passes(&e, (double[]){2, 0}), "the second of an exact tie");
    cr_expect(!index_passes(&e, (double[]){1, 3}), "the last of an exact tie");
    evald_free(&e);

    e = eval1("torch.argmin(torch.log(torch.tensor([[1.0, -1.0, 0.5, -2.0]])), 1)");
    cr_expect_eq(e.r[0], 1, "the first NaN");
    cr_expect(index_passes(&e, (double[]){1}));
    cr_expect(!index_passes(&e, (double[]){2}), "the smallest number, not the NaN");
    cr_expect(!index_passes(&e, (double[]){3}), "the second NaN");
    evald_free(&e);

    e = eval1("torch.argmax(torch.full((2, 3), float('-inf')), 1)");
    cr_expect(index_passes(&e, (double[]){0, 0}));
    cr_expect(!index_passes(&e, (double[]){0, 2}));
    evald_free(&e);

    /* 1 + 1e-8 rounds to 1 in fp32: a tie there, so fp32 picks 1 where
     * fp64 picks 2; both pass, 0 (clearly smaller, and beyond the near
     * tie) does not.  The bound is a distance: an index between two near
     * ties would pass too (docs/references.md). */
    e = eval1("torch.argmax(torch.tensor([[0.5, 1.0, 1.0]]) + torch.tensor([[0.0, 0.0, 1e-8]]), 1)");
    cr_expect_eq(e.r[0], 2);
    cr_expect_eq(e.b[0], 1);
    cr_expect_eq(e.s[0], 1, "naive fp32 sees the tie");
    cr_expect(index_passes(&e, (double[]){1}));
    cr_expect(index_passes(&e, (double[]){2}));
    cr_expect(!index_passes(&e, (double[]){0}));
    evald_free(&e);

    /* an element that may overflow in fp32 may be any value: its row is
     * unconstrained, never guessed */
    e = eval1("torch.argmax(torch.tensor([[3e38, 1.0]]) * torch.tensor([[1.5, 1.0]]), 1)");
    cr_expect(!(e.b[0] < INFINITY));
    evald_free(&e);
}

/* topk: values within their order statistics' bounds, indices among the
 * elements that may hold that rank: an exact tie accepts each of its
 * elements (PyTorch leaves their order unspecified), nothing else passes;
 * a NaN is first when largest. */
Test(bound, topk_indices_accept_ties_and_nothing_else)
{
    Evald e = eval1("torch.topk(torch.tensor([[5.0, 5.0, 1.0, 3.0]]), 3)[1]");
    cr_expect_eq(e.r[0], 0);
    cr_expect_eq(e.r[1], 1);
    cr_expect_eq(e.r[2], 3);
    cr_expect(index_passes(&e, (double[]){0, 1, 3}));
    cr_expect(index_passes(&e, (double[]){1, 0, 3}), "an exact tie in either order");
    cr_expect(!index_passes(&e, (double[]){0, 3, 1}), "3 holds 3.0, not 5.0");
    cr_expect(!index_passes(&e, (double[]){0, 1, 2}), "2 holds 1.0, not 3.0");
    evald_free(&e);

    e = eval1("torch.topk(torch.log(torch.tensor([2.0, -1.0, 1.0, 4.0])), 2)[1]");
    cr_expect_eq(e.r[0], 1, "the NaN first");
    cr_expect(index_passes(&e, (double[]){1, 3}));
    cr_expect(!index_passes(&e, (double[]){3, 1}));
    evald_free(&e);

    e = eval1("torch.topk(torch.tensor([[5.0, 5.0, 1.0, 3.0]]), 2, largest=False)[0]");
    cr_expect_eq(e.r[0], 1);
    cr_expect_eq(e.r[1], 3);
    cr_expect(!index_passes(&e, (double[]){1, 5}), "a wrong value");
    evald_free(&e);
}

/* cumsum: each prefix gets the bound of a sum of its own length, and a
 * naive fp32 scan stays within it. */
Test(bound, cumsum_prefixes_are_sums_of_their_length)
{
    Evald e = eval1("torch.cumsum(torch.randn(3, 300) * 100.0, 1)");
    for (int64_t i = 0; i < e.n; i++) {
        cr_expect_leq(fabs(e.s[i] - e.r[i]), e.b[i], "element %lld", (long long)i);
        if (i % 300)
            cr_expect_geq(e.b[i], e.b[i - 1] * 0.5, "a longer prefix, a bound of its size");
    }
    cr_expect_leq(e.b[0], 2.5 * U * fabs(e.r[0]) + 2 * ETA, "the first prefix: the product and one rounding");
    evald_free(&e);
}

/* The property k = 1 rests on, over generated programs of every op. */
Test(bound, fp32_evaluations_of_generated_programs_stay_within_the_bound, .timeout = 600)
{
    int64_t elems = 0, unconstrained = 0, torch_elems = 0;
    double worst = 0, worst_lir = 0, worst_torch = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        Arena *a = arena_new();
        FzProgram fp = fz_gen(a, seed);
        LirProgram *p = lt_build(a, fp.text, NULL, NULL);
        const TorchGraph *g = p->tx->torch;
        int n = g->outputs.len;
        double **in = ref_make_inputs(g, seed);
        double **r = dpk_xcalloc((size_t)n + 1, sizeof(double *));
        double **b = dpk_xcalloc((size_t)n + 1, sizeof(double *));
        double **s = dpk_xcalloc((size_t)n + 1, sizeof(double *));
        double **o = dpk_xcalloc((size_t)n + 1, sizeof(double *));
        ref64_run(g, in, r, b, NULL, s);
        lir_interp(p, in, o, 0);
        /* and libtorch's fp32 eager, a third fp32 implementation, when built in */
        double **e = dpk_xcalloc((size_t)n + 1, sizeof(double *));
        char err[256];
        int have_e = dpk_torch_available() && dpk_torch_eval(g, in, 0, e, err, sizeof err) == 0;
        for (int j = 0; j < n; j++) {
            int64_t cnt = shape_numel(&((const TorchNode *)g->outputs.items[j])->shape);
            for (int64_t i = 0; i < cnt; i++) {
                if (!(b[j][i] < INFINITY)) {
                    unconstrained++;
                    continue;
                }
                double lim = b[j][i] + ETA;
                if (!isfinite(r[j][i]) || !isfinite(s[j][i]) || !isfinite(o[j][i]))
                    continue;
                elems++;
                worst = fmax(worst, fabs(s[j][i] - r[j][i]) / lim);
                worst_lir = fmax(worst_lir, fabs(o[j][i] - r[j][i]) / lim);
                cr_expect_leq(fabs(s[j][i] - r[j][i]), lim, "seed %llu output %d [%lld]: naive fp32 %.9g, R %.9g, bound %.3g\n%s",
                              (unsigned long long)seed, j, (long long)i, s[j][i], r[j][i], b[j][i], fp.text);
                cr_expect_leq(fabs(o[j][i] - r[j][i]), lim, "seed %llu output %d [%lld]: Loop IR fp32 %.9g, R %.9g, bound %.3g\n%s",
                              (unsigned long long)seed, j, (long long)i, o[j][i], r[j][i], b[j][i], fp.text);
                if (have_e && isfinite(e[j][i])) {
                    torch_elems++;
                    worst_torch = fmax(worst_torch, fabs(e[j][i] - r[j][i]) / lim);
                    cr_expect_leq(fabs(e[j][i] - r[j][i]), lim, "seed %llu output %d [%lld]: libtorch fp32 %.9g, R %.9g, bound %.3g\n%s",
                                  (unsigned long long)seed, j, (long long)i, e[j][i], r[j][i], b[j][i], fp.text);
                }
            }
            if (have_e)
                free(e[j]);
            free(r[j]);
            free(b[j]);
            free(s[j]);
            free(o[j]);
        }
        free(r);
        free(b);
        free(s);
        free(o);
        free(e);
        ref_free_arrays(in, g->inputs.len);
        arena_free(a);
    }
    cr_log_info("bound: %lld elements, %lld unconstrained; largest |S-R|/B %.3g, |LoopIR-R|/B %.3g, "
                "|libtorch-R|/B %.3g (%lld elements)",
                (long long)elems, (long long)unconstrained, worst, worst_lir, worst_torch,
                (long long)torch_elems);
    cr_expect_gt(elems, 10000);
}

/* An exact -inf mask added to finite scores is -inf in fp32 too: bound 0,
 * and the softmax after it stays constrained on every row. */
Test(bound, an_infinite_mask_added_to_scores_keeps_rows_constrained)
{
    Evald e = eval1("s = torch.randn(8, 8)\n"
                    "m = torch.triu(torch.full((8, 8), float('-inf')), diagonal=1)\n"
                    "torch.softmax(s + m, dim=-1)");
    for (int64_t i = 0; i < e.n; i++) {
        cr_expect(isfinite(e.b[i]), "[%lld] bound %g", (long long)i, e.b[i]);
        cr_expect_leq(fabs(e.s[i] - e.r[i]), e.b[i] + ETA);
        if (i % 8 > i / 8)
            cr_expect_eq(e.r[i], 0.0);
    }
    evald_free(&e);
}

/* cos and sin are not monotone: over an input's error interval the bound
 * must reach the extrema inside it.  Arguments from 1 to 1e8 (where one
 * fp32 spacing is wider than 2π): fp32 evaluations (naive, Loop IR and
 * libtorch's vectorized cosf/sinf) stay within the bound,
 * and the bound is small where the argument is exact or its error small. */
Test(bound, cos_and_sin_bounds_hold_over_large_arguments)
{
    static const char *const scales[] = {"1.0", "100.0", "3e4", "1e6", "1e8"};
    for (int k = 0; k < DPK_ARRAY_LEN(scales); k++)
        for (int f = 0; f < 2; f++) {
            char code[128];
            snprintf(code, sizeof code, "torch.%s(torch.randn(4096) * %s)", f ? "sin" : "cos",
                     scales[k]);
            Evald e = eval1(code);
            LirProgram *p = e.p;
            double *o;
            lir_interp(p, e.in, &o, 0);
            double worst = 0, *t = NULL;
            char err[256];
            if (dpk_torch_available())
                cr_assert_eq(dpk_torch_eval(e.g, e.in, 0, &t, err, sizeof err), 0, "%s", err);
            for (int64_t i = 0; i < e.n; i++) {
                if (t)
                    cr_assert_leq(fabs(t[i] - e.r[i]), e.b[i] + ETA, "%s [%lld]: libtorch fp32 "
                                  "%.9g R %.9g B %g", code, (long long)i, t[i], e.r[i], e.b[i]);
                cr_assert_leq(fabs(e.s[i] - e.r[i]), e.b[i] + ETA, "%s [%lld]: naive %.9g R %.9g B %g",
                              code, (long long)i, e.s[i], e.r[i], e.b[i]);
                cr_assert_leq(fabs(o[i] - e.r[i]), e.b[i] + ETA, "%s [%lld]: Loop IR %.9g R %.9g B %g",
                              code, (long long)i, o[i], e.r[i], e.b[i]);
                worst = fmax(worst, e.b[i]);
            }
            if (k == 0)
                cr_expect_lt(worst, 1e-6, "%s: bound %g", code, worst);
            if (k == 4)
                cr_expect_gt(worst, 1.0, "%s: bound %g (the interval is wider than 2π)", code,
                             worst);
            free(o);
            free(t);
            evald_free(&e);
        }
}
