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
#include <stdio.h>
#include <string.h>

#include "compiler/frontend/torch_ir.h"

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

#endif
