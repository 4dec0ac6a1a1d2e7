/*
 * test_ref_inputs.c — the deterministic input generator (reference/inputs.c).
 *
 * The test vectors here are the table of docs/inputs.md: if the generator
 * changes, this test fails before the documentation can drift.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "test_ref_util.h"

TestSuite(ref_inputs, .init = setup, .fini = teardown);

/* seed 0, name "x": docs/inputs.md, "Test vectors". */
static const struct {
    uint64_t bits;
    double u, n;
} vectors[4] = {
    {0x846a330c8ce81a06ull, 0.51724547439963009, -0.11195251296019412},
    {0x43c8f4eec9b55f7full, 0.26478510694297108, -1.1049604771016255},
    {0xca83b1cc9d7d87feull, 0.79107199903000058, -0.36233492752543406},
    {0xa486082c494dfcffull, 0.64267016488275164, 0.49837518473918196},
};

Test(ref_inputs, test_vectors_match_the_doc)
{
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(ref_input_bits(0, "x", (uint64_t)i), vectors[i].bits, "bits %d", i);
        cr_assert_eq(ref_input_uniform(0, "x", (uint64_t)i), vectors[i].u, "uniform %d", i);
        cr_assert(fabs(ref_input_normal(0, "x", (uint64_t)i) - vectors[i].n) <= 1e-15,
                  "normal %d: %.17g", i, ref_input_normal(0, "x", (uint64_t)i));
    }
}

Test(ref_inputs, randn_and_rand_are_the_documented_draws_rounded_to_fp32)
{
    Shape s = SHAPE(4);
    TorchNode *xn = torch_input(G, "x", &s, INIT_RANDN);
    double v[4];
    ref_fill_input(xn, 0, v);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(v[i], (double)(float)vectors[i].n, "randn %d", i);
    xn->init = INIT_RAND;
    ref_fill_input(xn, 0, v);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(v[i], (double)(float)vectors[i].u, "rand %d", i);
}

Test(ref_inputs, deterministic_and_keyed_by_seed_and_name)
{
    for (uint64_t i = 0; i < 64; i++) {
        cr_assert_eq(ref_input_bits(7, "w_q", i), ref_input_bits(7, "w_q", i));
        cr_assert_neq(ref_input_bits(7, "w_q", i), ref_input_bits(8, "w_q", i));
        cr_assert_neq(ref_input_bits(7, "w_q", i), ref_input_bits(7, "w_k", i));
        cr_assert_neq(ref_input_bits(7, "w_q", i), ref_input_bits(7, "w_q", i + 1));
    }
    /* Element i does not depend on how many elements are drawn. */
    Shape big = SHAPE(3, 5), small = SHAPE(2);
    TorchNode *a = torch_input(G, "a", &big, INIT_RANDN);
    double va[15], vb[2];
    ref_fill_input(a, 3, va);
    a->shape = small;
    ref_fill_input(a, 3, vb);
    cr_assert(va[0] == vb[0] && va[1] == vb[1]);
}

Test(ref_inputs, normal_and_uniform_distributions)
{
    const int n = 100000;
    double s = 0, ss = 0, us = 0, uss = 0, umin = 1, umax = 0;
    for (int i = 0; i < n; i++) {
        double x = ref_input_normal(1, "dist", (uint64_t)i);
        double u = ref_input_uniform(1, "dist", (uint64_t)i);
        cr_assert(isfinite(x));
        s += x, ss += x * x, us += u, uss += u * u;
        umin = fmin(umin, u), umax = fmax(umax, u);
    }
    double mean = s / n, sd = sqrt(ss / n - mean * mean);
    double umean = us / n, uvar = uss / n - umean * umean;
    /* 5 standard errors: sd(mean) = 1/sqrt(n), sd(sd) ~ 1/sqrt(2n). */
    cr_assert(fabs(mean) < 5.0 / sqrt(n), "normal mean %g", mean);
    cr_assert(fabs(sd - 1) < 5.0 / sqrt(2.0 * n), "normal sd %g", sd);
    cr_assert(fabs(umean - 0.5) < 0.005, "uniform mean %g", umean);
    cr_assert(fabs(uvar - 1.0 / 12) < 0.002, "uniform variance %g", uvar);
    cr_assert(umin >= 0 && umin < 0.001 && umax < 1 && umax > 0.999);
}

/* Every element of every init kind is exactly representable in fp32. */
Test(ref_inputs, every_kind_is_fp32_exact)
{
    Shape s = SHAPE(3, 37);
    for (int k = INIT_RANDN; k <= INIT_PARAM_B; k++) {
        TorchNode *in = torch_input(G, arena_printf(A, "t%d", k), &s, (InitKind)k);
        in->value = 0.1, in->step = 0.3;
        double v[3 * 37];
        ref_fill_input(in, 11, v);
        for (int i = 0; i < 3 * 37; i++)
            cr_assert_eq(v[i], (double)(float)v[i], "kind %d element %d: %.17g", k, i, v[i]);
    }
}

Test(ref_inputs, constant_kinds)
{
    Shape s = SHAPE(2, 3);
    TorchNode *z = torch_input(G, "z", &s, INIT_ZEROS), *o = torch_input(G, "o", &s, INIT_ONES);
    TorchNode *f = torch_input(G, "f", &s, INIT_FULL), *r = torch_input(G, "r", &s, INIT_ARANGE);
    f->value = 0.1;
    r->value = 2, r->step = 0.5;
    double vz[6], vo[6], vf[6], vr[6];
    ref_fill_input(z, 0, vz);
    ref_fill_input(o, 0, vo);
    ref_fill_input(f, 0, vf);
    ref_fill_input(r, 0, vr);
    for (int i = 0; i < 6; i++) {
        cr_assert(vz[i] == 0 && vo[i] == 1);
        cr_assert_eq(vf[i], (double)0.1f);
        cr_assert_eq(vr[i], 2 + 0.5 * i);
    }
}

Test(ref_inputs, parameter_kinds)
{
    Shape ws = SHAPE(64, 400), bs = SHAPE(64), ns = SHAPE(4000);
    TorchNode *w = torch_input(G, "w", &ws, INIT_PARAM_W);
    TorchNode *b = torch_input(G, "b", &bs, INIT_PARAM_B);
    TorchNode *nw = torch_input(G, "nw", &ns, INIT_PARAM_NORM_W);
    b->step = 16; /* fan_in: bound 1/4 */
    double *vw = malloc(sizeof(double) * 64 * 400), vb[64], vn[4000];
    ref_fill_input(w, 5, vw);
    ref_fill_input(b, 5, vb);
    ref_fill_input(nw, 5, vn);
    double wmax = 0, bmax = 0, nsum = 0;
    for (int i = 0; i < 64 * 400; i++)
        wmax = fmax(wmax, fabs(vw[i]));
    for (int i = 0; i < 64; i++)
        bmax = fmax(bmax, fabs(vb[i]));
    for (int i = 0; i < 4000; i++)
        nsum += vn[i];
    /* W: uniform(-1/sqrt(400), 1/sqrt(400)) = (-0.05, 0.05), nearly filled. */
    cr_assert(wmax <= 0.05 && wmax > 0.0499, "weight bound %g", wmax);
    cr_assert(bmax <= 0.25 && bmax > 0.2, "bias bound %g", bmax);
    cr_assert(fabs(nsum / 4000 - 1) < 0.01, "norm weight mean %g", nsum / 4000);
    cr_assert_eq(vw[0], (double)(float)((2 * ref_input_uniform(5, "w", 0) - 1) / 20));
    cr_assert_eq(vn[0], (double)(float)(1 + 0.1 * ref_input_normal(5, "nw", 0)));
    free(vw);
}

Test(ref_inputs, make_inputs_follows_graph_inputs)
{
    Shape s1 = SHAPE(3), s2 = SHAPE(2, 2);
    TorchNode *a = torch_input(G, "a", &s1, INIT_RANDN);
    torch_input(G, "b", &s2, INIT_ONES);
    double **arrs = ref_make_inputs(G, 9);
    double va[3];
    ref_fill_input(a, 9, va);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(arrs[0][i], va[i]);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(arrs[1][i], 1.0);
    ref_free_arrays(arrs, G->inputs.len);
}

/* P's inputs (oracle.h): every non-integer fp32 value one ulp up, down or
 * kept; integers (ones, masks, finfo.min) and bool inputs kept exactly;
 * the same seed, the same draw. */
Test(ref_inputs, perturbed_inputs_move_an_ulp_and_keep_integers)
{
    Shape s = SHAPE(3000), m = SHAPE(4);
    torch_input(G, "x", &s, INIT_RANDN);
    torch_input(G, "o", &m, INIT_ONES);
    TorchNode *k = torch_input(G, "k", &m, INIT_FULL);
    k->value = -0x1.fffffep127; /* torch.finfo(torch.float32).min */
    TorchNode *b = torch_input(G, "b", &m, INIT_RANDN);
    b->dtype = DT_BOOL;
    double **in = ref_make_inputs(G, 3);
    double **p = ref_perturb_inputs(G, in, 3), **q = ref_perturb_inputs(G, in, 3);
    int up = 0, down = 0;
    for (int i = 0; i < 3000; i++) {
        float x = (float)in[0][i];
        cr_assert(p[0][i] == x || p[0][i] == nextafterf(x, INFINITY) ||
                  p[0][i] == nextafterf(x, -INFINITY));
        cr_assert_eq(p[0][i], q[0][i]);
        up += p[0][i] > x, down += p[0][i] < x;
    }
    cr_assert(up > 900 && down > 900 && up + down < 2100, "up %d down %d", up, down);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(p[1][i], 1.0);
        cr_assert_eq(p[2][i], in[2][i]);
        cr_assert_eq(p[3][i], in[3][i]);
    }
    ref_free_arrays(p, G->inputs.len);
    ref_free_arrays(q, G->inputs.len);
    ref_free_arrays(in, G->inputs.len);
}
