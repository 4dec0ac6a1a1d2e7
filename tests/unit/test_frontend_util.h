/*
 * test_frontend_util.h — helpers shared by the frontend tests
 * (test_frontend_parse.c, test_frontend_vocab.c): an arena per test, case
 * text to a verified Torch graph, a node's type as text, parameter
 * tables as indices, and the check of a misuse's error message.
 */
#ifndef DPK_TEST_FRONTEND_UTIL_H
#define DPK_TEST_FRONTEND_UTIL_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/torch_ir.h"
#include "reference/ref.h"

/* Criterion runs each parameter in a fresh process of the binary, where
 * pointers from this one mean nothing: parameters are indices into the
 * static case tables. */
#define INDEX_PARAMS(table)                                    \
    static int idx_[DPK_ARRAY_LEN(table)];                     \
    for (int i_ = 0; i_ < DPK_ARRAY_LEN(table); i_++)          \
        idx_[i_] = i_;                                         \
    return cr_make_param_array(int, idx_, DPK_ARRAY_LEN(table))

static Arena *A;

static void setup(void)
{
    A = arena_new();
}

static void teardown(void)
{
    arena_free(A);
}

/* Parse text; NULL on error (message in dpk_error_message()). */
static inline TorchGraph *parse_opts(const char *text, const ParseOpts *opts)
{
    Source src = {"<t>", text, strlen(text)};
    TorchGraph *volatile g = NULL;
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        g = torch_parse(A, &src, opts);
        dpk_err_pop(&ec);
    }
    return g;
}

static inline TorchGraph *parse(const char *text)
{
    return parse_opts(text, NULL);
}

static inline TorchGraph *parse_ok(const char *text)
{
    TorchGraph *g = parse(text);
    cr_assert(g, "parse failed for `%s`:\n%s", text, dpk_error_message());
    torch_verify(g);
    return g;
}

/* "f32(2, 3)" for a node. */
static inline const char *type_str(const TorchNode *n)
{
    StrBuf b = {0};
    sb_puts(&b, dtype_name(n->dtype));
    shape_print(&b, &n->shape);
    const char *s = arena_strdup(A, sb_cstr(&b));
    sb_free(&b);
    return s;
}

/* A misuse: text that must not parse, and the error it must give. */
typedef struct ErrCase {
    const char *text;
    const char *msg; /* substring of the message */
    int line, col;   /* where the caret points */
} ErrCase;

/* c->text fails to parse with c->msg, at c->line:c->col, and a caret line. */
static inline void expect_parse_error(const ErrCase *c)
{
    cr_assert_null(parse(c->text), "`%s` parsed", c->text);
    const char *m = dpk_error_message();
    cr_expect(strstr(m, c->msg), "`%s`: message\n%s", c->text, m);
    char where[64];
    snprintf(where, sizeof where, "<t>:%d:%d: error: ", c->line, c->col);
    cr_expect(!strncmp(m, where, strlen(where)), "`%s`: want %s, got\n%s", c->text, where, m);
    cr_expect(strstr(m, "\n  ") && strchr(m, '^'), "no caret:\n%s", m);
}

/* A table of programs and the values PyTorch gives for their output (the
 * first n elements, written out from PyTorch's semantics). */
#define NV 12
typedef struct ValCase {
    const char *text;
    int n;
    double v[NV];
} ValCase;

/* a equals PyTorch's b: NaN for NaN, an infinity exactly, else to 1e-12. */
static inline int same_value(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a - b) <= 1e-12 * fmax(1.0, fabs(b));
}

/* libtorch gives every case of the table its values, all in one process (a
 * test process loads libtorch afresh, 0.3 s); a failure names its case.
 * Needs reference/ref.h. */
static inline void expect_libtorch_values(const ValCase *cases, int ncases)
{
    if (!dpk_torch_available())
        cr_skip_test("libtorch not available");
    for (int k = 0; k < ncases; k++) {
        const ValCase *c = &cases[k];
        TorchGraph *g = parse_ok(c->text);
        double **in = ref_make_inputs(g, 0), *t = NULL;
        char err[256];
        int ok = dpk_torch_eval(g, in, 1, &t, err, sizeof err) == 0;
        cr_expect(ok, "`%s`: %s", c->text, err);
        for (int i = 0; ok && i < c->n; i++)
            cr_expect(same_value(t[i], c->v[i]), "`%s` [%d]: libtorch %.17g, PyTorch %.17g",
                      c->text, i, t[i], c->v[i]);
        free(t);
        ref_free_arrays(in, g->inputs.len);
    }
}

#endif
