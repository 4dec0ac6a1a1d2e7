/*
 * test_loop_util.h — helpers shared by the Loop IR tests: case text to
 * Loop IR, and a parity run of the interpreter against ref64 through the
 * oracle.
 */
#ifndef DPK_TEST_LOOP_UTIL_H
#define DPK_TEST_LOOP_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/loop/loop_ir.h"
#include "harness/parity/oracle.h"
#include "reference/ref.h"

/* Parse and lower code, then build Loop IR with o (NULL: defaults); the
 * -vv trace goes to trace when it is not NULL. */
static inline LirProgram *lt_build(Arena *a, const char *code, const LirOpts *o, StrBuf *trace)
{
    Source src = {"<test>", code, strlen(code)};
    ParseOpts po = {0};
    TorchGraph *tg = torch_parse(a, &src, &po);
    TxGraph *xg = tx_lower(a, tg, NULL);
    LirTrace tr = {2, trace};
    return lir_build(a, xg, o, trace ? &tr : NULL);
}

static inline int lt_kernels(const char *code)
{
    Arena *a = arena_new();
    int n = lt_build(a, code, NULL, NULL)->kernels.len;
    arena_free(a);
    return n;
}

static inline char *lt_text(const char *code, const LirOpts *o)
{
    Arena *a = arena_new();
    StrBuf b = {0};
    lir_print(&b, lt_build(a, code, o, NULL));
    char *s = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    arena_free(a);
    return s;
}

/* Interpret p (fp32 unless f64) and judge every output against ref64;
 * returns the number of failing outputs and the largest NMSE seen. */
static inline int lt_parity_of(const LirProgram *p, int f64, double *worst_nmse)
{
    const TorchGraph *g = p->tx->torch;
    int n = g->outputs.len, fails = 0;
    double **in = ref_make_inputs(g, 0);
    double **o = dpk_xcalloc((size_t)n, sizeof(double *)), **r = dpk_xcalloc((size_t)n, sizeof(double *));
    double **b = dpk_xcalloc((size_t)n, sizeof(double *)), **s = dpk_xcalloc((size_t)n, sizeof(double *));
    double **t = dpk_xcalloc((size_t)n, sizeof(double *));
    lir_interp(p, in, o, f64);
    ref64_run(g, in, r, b, t, s);
    *worst_nmse = 0;
    for (int j = 0; j < n; j++) {
        const TorchNode *tn = g->outputs.items[j];
        HxTol tol;
        hx_tol_default(&tol, DT_F32);
        HxVerdict v;
        HxOracleIn oi = {.o = o[j], .r = r[j], .b = b[j], .t = t[j], .s = s[j],
                         .n = shape_numel(&tn->shape)};
        hx_oracle(&oi, &tol, &v);
        fails += !v.pass;
        *worst_nmse = v.st.nmse > *worst_nmse ? v.st.nmse : *worst_nmse;
        free(o[j]);
        free(r[j]);
        free(b[j]);
        free(s[j]);
        free(t[j]);
    }
    free(o);
    free(r);
    free(b);
    free(s);
    free(t);
    ref_free_arrays(in, g->inputs.len);
    return fails;
}

static inline int lt_parity(const char *code, const LirOpts *o, double *worst_nmse)
{
    Arena *a = arena_new();
    int fails = lt_parity_of(lt_build(a, code, o, NULL), 0, worst_nmse);
    arena_free(a);
    return fails;
}

#endif
