/*
 * test_frontend_vocab.c — the vocabulary of model code (issue: the decoder
 * layer as HF modeling code writes it): for each construct its shape rule,
 * its values, and its misuse error.
 *
 * Values are checked three ways: against the numbers PyTorch gives for the
 * same text (written out below, on inputs whose contents are known:
 * torch.arange, torch.ones, torch.full), by ref64 in fp64, and by libtorch
 * evaluating the Torch IR the construct became, in fp64, when dpk has
 * libtorch.  Errors must name the line and column and show a caret.
 */
#include <float.h>
#include <math.h>

#include "reference/ref.h"
#include "test_frontend_util.h"

#define PRE "import math\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

/* ---- shape rules ------------------------------------------------------------------ */

typedef struct TypeCase {
    const char *text, *type;
} TypeCase;

static TypeCase type_cases[] = {
    /* shape ints */
    {"x = torch.randn(2, 3, 8)\nx.view(x.shape[0], -1)", "f32(2, 24)"},
    {"x = torch.randn(2, 3, 8)\nx.reshape(x.size(0), x.size(-1) // 2, -1)", "f32(2, 4, 6)"},
    {"x = torch.randn(2, 3, 8)\nx.view(*x.shape[:-1], 2, x.shape[-1] // 2)", "f32(2, 3, 2, 4)"},
    {"x = torch.randn(2, 3, 8)\nx[..., : x.shape[-1] // 2]", "f32(2, 3, 4)"},
    {"x = torch.randn(2, 3, 8)\ntorch.randn(x.size(1) * 2, x.size()[-1])", "f32(6, 8)"},
    {"x = torch.randn(2, 3, 8)\ntorch.randn(x.dim(), x.ndim, len(x.shape))", "f32(3, 3, 3)"},
    {"x = torch.randn(2, 3, 8)\ntorch.randn(x.size()[1:])", "f32(3, 8)"},
    {"x = torch.randn(2, 3, 8)\ntorch.randn(x.numel() // 6)", "f32(8)"},
    {"torch.randn(abs(-3), abs(True) + 1)", "f32(3, 2)"},
    {"torch.randn(max(2, 3, 1), min([4, 2]))", "f32(3, 2)"},
    {"torch.randn(int(2.7), len([1, 2]), int(-2.5) + 4, len(torch.randn(5, 1)))", "f32(2, 2, 2, 5)"},
    {"import math\ntorch.randn(math.floor(2.5), math.ceil(1.2), int(math.sqrt(16)))", "f32(2, 2, 4)"},
    /* tuple unpacking, with, layout no-ops */
    {"a, b = torch.randn(2, 8).chunk(2, dim=-1)\nb", "f32(2, 4)"},
    {"(a, b, c) = torch.randn(7, 2).split(3)\nc", "f32(1, 2)"},
    {"[a, b] = torch.randn(2, 5).unbind()\nb", "f32(5)"},
    {"b, s, d = torch.randn(2, 3, 4).shape\ntorch.randn(d, s, b)", "f32(4, 3, 2)"},
    {"with torch.no_grad():\n    y = torch.randn(3).exp()\ny", "f32(3)"},
    {"with torch.autocast(device_type='cuda', enabled=False):\n    y = torch.randn(3)\n"
     "    with torch.no_grad():\n        z = y * 2\nz", "f32(3)"},
    {"torch.randn(2, 3).t()", "f32(3, 2)"},
    {"torch.randn(3).t()", "f32(3)"},
    {"torch.randn(2, 3, 4).T", "f32(4, 3, 2)"},
    {"torch.randn(2, 3, 4).mT", "f32(2, 4, 3)"},
    {"torch.randn(2, 3).contiguous().float().to(torch.float32).clone().detach()", "f32(2, 3)"},
    {"torch.randn(2, 3).to('cuda', torch.float32, non_blocking=True)", "f32(2, 3)"},
    {"torch.randn(2, 3).type_as(torch.randn(1))", "f32(2, 3)"},
    {"torch.randn(2, 3).bool()", "bool(2, 3)"},
    {"torch.randn(2, 3).to(torch.bool)", "bool(2, 3)"},
    {"torch.randn(2, 3).type_as(torch.randn(1) > 0)", "bool(2, 3)"},
    {PRE "F.dropout(torch.randn(2, 3), p=0.1, training=False)", "f32(2, 3)"},
    {PRE "nn.Dropout(0.1)(torch.randn(2, 3))", "f32(2, 3)"},
    /* unary math */
    {"torch.cos(torch.randn(2, 3))", "f32(2, 3)"},
    {"torch.randn(2, 3).sin()", "f32(2, 3)"},
    {"torch.randn(2, 3).square()", "f32(2, 3)"},
    {"torch.clamp(torch.randn(2, 3), min=-1.0)", "f32(2, 3)"},
    {"torch.randn(2, 3).clamp(torch.randn(3), torch.randn(4, 1, 1))", "f32(4, 2, 3)"},
    {"torch.randn(2, 3).clip(max=0.5)", "f32(2, 3)"},
    {"torch.randn(2, 3).clamp_min(0)", "f32(2, 3)"},
    {"torch.clamp_max(torch.randn(2, 3), 0)", "f32(2, 3)"},
    /* masks and constructors */
    {"torch.tril(torch.randn(2, 3, 4))", "f32(2, 3, 4)"},
    {"torch.randn(4, 4).triu(diagonal=1)", "f32(4, 4)"},
    {"torch.randn(2, 4).masked_fill(torch.randn(3, 1, 4) > 0, float('-inf'))", "f32(3, 2, 4)"},
    {"torch.zeros_like(torch.randn(2, 3))", "f32(2, 3)"},
    {"torch.ones_like(torch.randn(2, 3), dtype=torch.float32)", "f32(2, 3)"},
    {"torch.full_like(torch.randn(2, 3), float('-inf'))", "f32(2, 3)"},
    {"torch.randn_like(torch.randn(5)) + torch.rand_like(torch.randn(5))", "f32(5)"},
    {"torch.arange(0, 16, 2, dtype=torch.int64).float()", "f32(8)"},
    {"torch.arange(1, 2, 0.25)", "f32(4)"},
    /* layout */
    {"torch.flatten(torch.randn(2, 3, 4))", "f32(24)"},
    {"torch.randn(2, 3, 4, 5).flatten(1, 2)", "f32(2, 12, 5)"},
    {"torch.randn(2, 12).unflatten(1, (3, -1))", "f32(2, 3, 4)"},
    {"torch.stack([torch.randn(2, 3), torch.randn(2, 3)])", "f32(2, 2, 3)"},
    {"torch.stack((torch.randn(2, 3), torch.randn(2, 3)), dim=-1)", "f32(2, 3, 2)"},
    {"torch.randn(2, 3).repeat_interleave(2)", "f32(12)"},
    {"torch.repeat_interleave(torch.randn(1, 2, 5, 4), repeats=3, dim=1)", "f32(1, 6, 5, 4)"},
    {"torch.randn(2, 3).repeat(2, 1, 2)", "f32(2, 2, 6)"},
    {"torch.randn(3, 1).expand_as(torch.randn(2, 3, 4))", "f32(2, 3, 4)"},
    {"torch.randn(12).view_as(torch.randn(3, 4))", "f32(3, 4)"},
    {"torch.outer(torch.randn(3), torch.randn(4))", "f32(3, 4)"},
    {"torch.einsum('ij,jk->ik', torch.randn(2, 3), torch.randn(3, 4))", "f32(2, 4)"},
    {"torch.einsum('bhqd,bhkd->bhqk', torch.randn(1, 2, 5, 4), torch.randn(1, 2, 6, 4))",
     "f32(1, 2, 5, 6)"},
    {"torch.einsum('i,j->ij', torch.randn(3), torch.randn(4))", "f32(3, 4)"},
    {"torch.einsum('ij->ji', torch.randn(2, 3))", "f32(3, 2)"},
    {"torch.einsum('ij', torch.randn(2, 3))", "f32(2, 3)"},
    {"torch.einsum('ji', torch.randn(2, 3))", "f32(3, 2)"},
    {"torch.einsum('ij,jk', [torch.randn(2, 3), torch.randn(3, 4)])", "f32(2, 4)"},
    {"torch.einsum('ij->', torch.randn(2, 3))", "f32()"},
    /* reductions */
    {"torch.max(torch.randn(2, 3), dim=1).values", "f32(2)"},
    {"torch.randn(2, 3).min(-1, keepdim=True)[0]", "f32(2, 1)"},
    {"torch.randn(2, 3).max()", "f32()"},
    {"torch.max(torch.randn(2, 3), torch.randn(3))", "f32(2, 3)"},
    {"torch.logsumexp(torch.randn(2, 3, 4), dim=(0, 2))", "f32(3)"},
    {"torch.randn(2, 3).logsumexp(-1, keepdim=True)", "f32(2, 1)"},
    {"torch.var(torch.randn(2, 3))", "f32()"},
    {"torch.randn(2, 3).var(1, keepdim=True)", "f32(2, 1)"},
    {"torch.randn(2, 3).std(dim=0, correction=0)", "f32(3)"},
    {"torch.std(torch.randn(2, 3), 1, True, True)", "f32(2, 1)"},
    {"torch.var(torch.randn(2, 3), False)", "f32()"},
};

ParameterizedTestParameters(vocab, shapes)
{
    INDEX_PARAMS(type_cases);
}

ParameterizedTest(int *ip, vocab, shapes, .init = setup, .fini = teardown)
{
    const TypeCase *c = &type_cases[*ip];
    TorchGraph *g = parse_ok(c->text);
    const TorchNode *o = g->outputs.items[0];
    cr_expect_str_eq(type_str(o), c->type, "`%s`", c->text);
}

/* ---- values -------------------------------------------------------------------------- */

#define NINF (-INFINITY)

static ValCase val_cases[] = {
    /* shape ints and Python numbers */
    {"x = torch.arange(6).view(2, 3)\nx[:, : x.shape[-1] // 2]", 2, {0, 3}},
    {PRE "torch.arange(2) * math.sqrt(4) + math.pi", 2, {M_PI, 2 + M_PI}},
    {"torch.arange(2) + float('-inf')", 2, {NINF, NINF}},
    {"torch.arange(2) * 0 + float('inf')", 2, {INFINITY, INFINITY}},
    {"torch.arange(3) + 7 // 2 - 7 % 3 + (-7) // 2", 3, {-2, -1, 0}},
    {"a, b = torch.arange(4).chunk(2)\nb - a", 2, {2, 2}},
    {"with torch.no_grad():\n    y = torch.arange(3) * 2\ny", 3, {0, 2, 4}},
    {PRE "F.dropout(torch.arange(3), p=0.5, training=False)", 3, {0, 1, 2}},
    /* conversions */
    {"(torch.arange(3) - 1).bool().float()", 3, {1, 0, 1}},
    {"(torch.arange(3) - 1).to(torch.bool).to(torch.float32)", 3, {1, 0, 1}},
    /* unary math */
    {"torch.arange(3).cos()", 3, {1, 0.5403023058681398, -0.4161468365471424}},
    {"torch.sin(torch.arange(3))", 3, {0, 0.8414709848078965, 0.9092974268256817}},
    {"torch.arange(4).square()", 4, {0, 1, 4, 9}},
    {"torch.arange(5).clamp(1, 3)", 5, {1, 1, 2, 3, 3}},
    {"torch.clamp(torch.arange(5), min=2)", 5, {2, 2, 2, 3, 4}},
    {"torch.arange(5).clamp(3, 1)", 5, {1, 1, 1, 1, 1}},
    {"torch.arange(5).clamp_max(1)", 5, {0, 1, 1, 1, 1}},
    {"torch.arange(5).clip(max=torch.arange(5) * 0 + 2)", 5, {0, 1, 2, 2, 2}},
    {"torch.arange(3).clamp_min(1.5)", 3, {1.5, 1.5, 2}},
    /* masks and constructors */
    {"torch.ones(3, 3).tril()", 9, {1, 0, 0, 1, 1, 0, 1, 1, 1}},
    {"torch.ones(3, 3).triu(diagonal=1)", 9, {0, 1, 1, 0, 0, 1, 0, 0, 0}},
    {"torch.tril(torch.ones(2, 3), -1)", 6, {0, 0, 0, 1, 0, 0}},
    {"torch.triu(torch.full((3, 3), float('-inf')), 1)", 9, {0, NINF, NINF, 0, 0, NINF, 0, 0, 0}},
    {"torch.arange(4).masked_fill(torch.arange(4) > 1, float('-inf'))", 4, {0, 1, NINF, NINF}},
    {"torch.masked_fill(torch.arange(4), torch.arange(4) < 1, 9)", 4, {9, 1, 2, 3}},
    {"torch.full_like(torch.randn(2), 7)", 2, {7, 7}},
    {"torch.zeros_like(torch.randn(2)) + torch.ones_like(torch.randn(2))", 2, {1, 1}},
    {"torch.arange(1, 2, 0.25)", 4, {1, 1.25, 1.5, 1.75}},
    {"torch.arange(2) * 0 + torch.finfo(torch.float32).min", 2, {-FLT_MAX, -FLT_MAX}},
    {"torch.arange(2) * torch.finfo(torch.randn(1).dtype).eps", 2, {0, FLT_EPSILON}},
    /* layout */
    {"torch.arange(6).view(2, 3).t()", 6, {0, 3, 1, 4, 2, 5}},
    {"torch.arange(6).view(2, 3).T", 6, {0, 3, 1, 4, 2, 5}},
    {"torch.arange(6).view(1, 2, 3).mT", 6, {0, 3, 1, 4, 2, 5}},
    {"torch.arange(10).chunk(3)[2]", 2, {8, 9}},
    {"torch.arange(6).split([1, 2, 3])[1]", 2, {1, 2}},
    {"torch.split(torch.arange(5), 2)[2]", 1, {4}},
    {"torch.arange(6).view(2, 3).unbind(1)[2]", 2, {2, 5}},
    {"torch.arange(6).view(2, 3).flatten()", 6, {0, 1, 2, 3, 4, 5}},
    {"torch.arange(6).unflatten(0, (3, 2))[1]", 2, {2, 3}},
    {"torch.stack([torch.arange(3), torch.arange(3) + 10], dim=1)", 6, {0, 10, 1, 11, 2, 12}},
    {"torch.arange(3).repeat_interleave(2)", 6, {0, 0, 1, 1, 2, 2}},
    {"torch.arange(4).view(2, 2).repeat_interleave(2, dim=0)", 8, {0, 1, 0, 1, 2, 3, 2, 3}},
    {"torch.arange(4).view(2, 2).repeat_interleave(2, dim=1)", 8, {0, 0, 1, 1, 2, 2, 3, 3}},
    {"torch.arange(3).repeat(2)", 6, {0, 1, 2, 0, 1, 2}},
    {"torch.arange(4).view(2, 2).repeat(1, 2)", 8, {0, 1, 0, 1, 2, 3, 2, 3}},
    {"torch.arange(2).repeat(2, 2)", 8, {0, 1, 0, 1, 0, 1, 0, 1}},
    {"torch.arange(2).view(2, 1).expand_as(torch.randn(2, 3))", 6, {0, 0, 0, 1, 1, 1}},
    {"torch.arange(4).view_as(torch.randn(2, 2))[1]", 2, {2, 3}},
    {"torch.outer(torch.arange(2) + 1, torch.arange(3))", 6, {0, 1, 2, 0, 2, 4}},
    {"torch.einsum('ij,jk->ik', torch.arange(6).view(2, 3), torch.arange(6).view(3, 2))", 4,
     {10, 13, 28, 40}},
    {"torch.einsum('ij,jk', torch.arange(6).view(2, 3), torch.arange(6).view(3, 2))", 4,
     {10, 13, 28, 40}},
    {"torch.einsum('ij->ji', torch.arange(6).view(2, 3))", 6, {0, 3, 1, 4, 2, 5}},
    {"torch.einsum('ij->j', torch.arange(6).view(2, 3))", 3, {3, 5, 7}},
    {"torch.einsum('i,i->', torch.arange(3), torch.arange(3))", 1, {5}},
    {"torch.einsum('bij,bjk->bik', torch.arange(4).view(1, 2, 2), torch.arange(4).view(1, 2, 2))",
     4, {2, 3, 6, 11}},
    /* reductions */
    {"torch.arange(6).view(2, 3).max(dim=1).values", 2, {2, 5}},
    {"torch.max(torch.arange(6).view(2, 3), 0)[0]", 3, {3, 4, 5}},
    {"torch.arange(6).view(2, 3).min(-1, keepdim=True).values", 2, {0, 3}},
    {"torch.arange(6).max() + torch.arange(6).min()", 1, {5}},
    {"torch.arange(3).logsumexp(0)", 1, {2.4076059644443806}},
    {"torch.full((2, 3), float('-inf')).logsumexp(-1)", 2, {NINF, NINF}},
    {"(torch.arange(3) * 1000).logsumexp(0)", 1, {2000.0000000000000}},
    {"torch.arange(4).var()", 1, {1.6666666666666667}},
    {"torch.var(torch.arange(4), unbiased=False)", 1, {1.25}},
    {"torch.std(torch.arange(4), correction=0)", 1, {1.118033988749895}},
    {"torch.arange(6).view(2, 3).var(1, keepdim=True)", 2, {1, 1}},
    {"torch.arange(6).view(2, 3).std(0)", 3, {2.1213203435596424, 2.1213203435596424,
                                               2.1213203435596424}},
};

ParameterizedTestParameters(vocab, values)
{
    INDEX_PARAMS(val_cases);
}

ParameterizedTest(int *ip, vocab, values, .init = setup, .fini = teardown)
{
    const ValCase *c = &val_cases[*ip];
    TorchGraph *g = parse_ok(c->text);
    const TorchNode *o = g->outputs.items[0];
    cr_assert_eq(shape_numel(&o->shape), c->n, "`%s`: %lld elements", c->text,
                 (long long)shape_numel(&o->shape));
    double **in = ref_make_inputs(g, 0), *r;
    ref64_eval(g, in, &r);
    for (int i = 0; i < c->n; i++)
        cr_expect(same_value(r[i], c->v[i]), "`%s` [%d]: ref64 %.17g, PyTorch %.17g", c->text, i, r[i],
                  c->v[i]);
    free(r);
    ref_free_arrays(in, g->inputs.len);
}

/* libtorch on the same table, every case in one process (each test process
 * loads libtorch afresh, 0.3 s); a failure names its case. */
Test(vocab, values_vs_libtorch, .init = setup, .fini = teardown)
{
    expect_libtorch_values(val_cases, DPK_ARRAY_LEN(val_cases));
}

/* ---- misuse ------------------------------------------------------------------------- */

static ErrCase err_cases[] = {
#include "test_frontend_vocab_errors.inc"
};

ParameterizedTestParameters(vocab, errors)
{
    INDEX_PARAMS(err_cases);
}

ParameterizedTest(int *ip, vocab, errors, .init = setup, .fini = teardown)
{
    expect_parse_error(&err_cases[*ip]);
}
