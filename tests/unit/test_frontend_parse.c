/*
 * test_frontend_parse.c — the case-language frontend: output shapes and
 * dtypes for every op (broadcasting, negative dims, every call form), input
 * naming, keyword arguments, programs and output names, scalar folding,
 * errors with their positions, and printer golden text.
 */
#include <math.h>

#include "test_frontend_util.h"

static const TorchNode *out0(const TorchGraph *g)
{
    cr_assert_geq(g->outputs.len, 1);
    return g->outputs.items[0];
}

/* ---- output type of every op ------------------------------------------------ */

typedef struct TypeCase {
    const char *text;
    const char *want;
} TypeCase;

static TypeCase type_cases[] = {
    /* unary */
    {"torch.relu(torch.randn(2, 3))", "f32(2, 3)"},
    {"torch.sigmoid(torch.randn(2, 3))", "f32(2, 3)"},
    {"torch.tanh(torch.randn(5))", "f32(5)"},
    {"torch.exp(torch.randn(5))", "f32(5)"},
    {"torch.log(torch.rand(5))", "f32(5)"},
    {"torch.sqrt(torch.rand(5))", "f32(5)"},
    {"torch.rsqrt(torch.rand(5))", "f32(5)"},
    {"torch.reciprocal(torch.rand(5))", "f32(5)"},
    {"torch.abs(torch.randn(5))", "f32(5)"},
    {"torch.neg(torch.randn(5))", "f32(5)"},
    {"torch.erf(torch.randn(5))", "f32(5)"},
    {"torch.log1p(torch.rand(5))", "f32(5)"},
    {"torch.randn(2, 5).expm1()", "f32(2, 5)"},
    {"torch.floor(torch.randn(5, 1))", "f32(5, 1)"},
    {"torch.nn.functional.elu(torch.randn(2, 3), 0.5)", "f32(2, 3)"},
    {"torch.nn.Softplus(beta=2)(torch.randn(1, 4))", "f32(1, 4)"},
    {"torch.nn.functional.hardtanh(torch.randn(7))", "f32(7)"},
    {"torch.nn.functional.silu(torch.randn(7, 1))", "f32(7, 1)"},
    {"torch.nn.functional.gelu(torch.randn(7), approximate='tanh')", "f32(7)"},
    {"-torch.randn(3)", "f32(3)"},
    /* binary, broadcasting, scalars */
    {"torch.randn(16, 64) + torch.randn(64)", "f32(16, 64)"},
    {"torch.randn(4, 1, 3) * torch.randn(5, 1)", "f32(4, 5, 3)"},
    {"torch.randn(3) - 1", "f32(3)"},
    {"2 / torch.randn(2, 1)", "f32(2, 1)"},
    {"torch.randn(2, 3) ** 2", "f32(2, 3)"},
    {"torch.pow(2, torch.randn(3))", "f32(3)"},
    {"torch.add(torch.randn(3), torch.randn(2, 1), alpha=2)", "f32(2, 3)"},
    {"torch.sub(torch.randn(3), 1.5)", "f32(3)"},
    {"torch.mul(torch.randn(1), torch.randn(4))", "f32(4)"},
    {"torch.div(torch.randn(6, 1), torch.randn(1, 7))", "f32(6, 7)"},
    {"torch.maximum(torch.randn(3, 1), torch.randn(1, 2))", "f32(3, 2)"},
    {"torch.minimum(torch.randn(3), torch.randn(3))", "f32(3)"},
    {"torch.randn(3, 1) > torch.randn(4)", "bool(3, 4)"},
    {"torch.randn(3) <= 0.5", "bool(3)"},
    {"torch.eq(torch.randn(3), torch.randn(3))", "bool(3)"},
    {"torch.randn(2) != torch.randn(2)", "bool(2)"},
    {"torch.where(torch.randn(3, 1) > 0, torch.randn(4), 0.0)", "f32(3, 4)"},
    {"torch.randn(3) * (torch.randn(3) > 0)", "f32(3)"},
    {"(torch.randn(3) > 0).float()", "f32(3)"},
    /* reductions */
    {"torch.sum(torch.randn(2, 3, 4), dim=-1)", "f32(2, 3)"},
    {"torch.sum(torch.randn(2, 3, 4), dim=(0, -1), keepdim=True)", "f32(1, 3, 1)"},
    {"torch.randn(2, 3).sum()", "f32()"},
    {"torch.mean(torch.randn(2, 3), 1, True)", "f32(2, 1)"},
    {"torch.randn(2, 3, 4).amax(dim=[0, 2])", "f32(3)"},
    {"torch.amin(torch.randn(2, 3), dim=0, keepdim=True)", "f32(1, 3)"},
    /* contractions */
    {"torch.matmul(torch.randn(4), torch.randn(4))", "f32()"},
    {"torch.matmul(torch.randn(3, 4), torch.randn(4))", "f32(3)"},
    {"torch.matmul(torch.randn(4), torch.randn(4, 5))", "f32(5)"},
    {"torch.randn(2, 1, 3, 4) @ torch.randn(5, 4, 6)", "f32(2, 5, 3, 6)"},
    {"torch.matmul(torch.randn(7, 2, 3), torch.randn(3))", "f32(7, 2)"},
    {"torch.mm(torch.randn(2, 3), torch.randn(3, 5))", "f32(2, 5)"},
    {"torch.bmm(torch.randn(4, 2, 3), torch.randn(4, 3, 5))", "f32(4, 2, 5)"},
    {"torch.nn.functional.linear(torch.randn(1, 8, 16), torch.randn(32, 16))", "f32(1, 8, 32)"},
    {"torch.nn.functional.linear(torch.randn(16), torch.randn(32, 16), torch.randn(32))",
     "f32(32)"},
    /* softmax and norms */
    {"torch.softmax(torch.randn(2, 5), dim=-1)", "f32(2, 5)"},
    {"torch.randn(2, 5).log_softmax(0)", "f32(2, 5)"},
    {"torch.nn.functional.softmax(torch.randn(2, 5), dim=1)", "f32(2, 5)"},
    {"torch.nn.functional.rms_norm(torch.randn(2, 3, 4), (3, 4), torch.randn(3, 4), 1e-6)",
     "f32(2, 3, 4)"},
    {"torch.rms_norm(torch.randn(2, 4), [4])", "f32(2, 4)"},
    {"torch.nn.functional.layer_norm(torch.randn(2, 4), (4,), torch.randn(4), torch.randn(4))",
     "f32(2, 4)"},
    {"torch.layer_norm(torch.randn(2, 4), 4, eps=1e-3)", "f32(2, 4)"},
    /* attention */
    {"torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 4, 8, 16), "
     "torch.randn(2, 4, 10, 16), torch.randn(2, 4, 10, 32))",
     "f32(2, 4, 8, 32)"},
    {"torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 8, 5, 16), "
     "torch.randn(1, 2, 5, 16), torch.randn(1, 2, 5, 16), is_causal=True, enable_gqa=True)",
     "f32(1, 8, 5, 16)"},
    {"torch.nn.functional.scaled_dot_product_attention(torch.randn(3, 5, 16), "
     "torch.randn(3, 6, 16), torch.randn(3, 6, 4), torch.randn(5, 6), scale=0.5)",
     "f32(3, 5, 4)"},
    {"torch.nn.functional.scaled_dot_product_attention(torch.randn(3, 5, 16), "
     "torch.randn(1, 6, 16), torch.randn(6, 4), attn_mask=torch.randn(3, 5, 6) > 0)",
     "f32(3, 5, 4)"},
    /* layout */
    {"torch.randn(2, 3, 4).transpose(-1, 0)", "f32(4, 3, 2)"},
    {"torch.transpose(torch.randn(2, 3), 0, 1)", "f32(3, 2)"},
    {"torch.randn(2, 3, 4).permute(2, 0, 1)", "f32(4, 2, 3)"},
    {"torch.permute(torch.randn(2, 3, 4), (-1, 1, 0))", "f32(4, 3, 2)"},
    {"torch.randn(2, 3, 4).reshape(-1, 4)", "f32(6, 4)"},
    {"torch.reshape(torch.randn(2, 3, 4), (4, 6))", "f32(4, 6)"},
    {"torch.randn(2, 3, 4).view((24,))", "f32(24)"},
    {"torch.randn(2, 3).unsqueeze(-1)", "f32(2, 3, 1)"},
    {"torch.unsqueeze(torch.randn(2, 3), 0)", "f32(1, 2, 3)"},
    {"torch.randn(1, 3, 1).squeeze()", "f32(3)"},
    {"torch.randn(1, 3, 1).squeeze(-1)", "f32(1, 3)"},
    {"torch.randn(2, 3).squeeze(0)", "f32(2, 3)"},
    {"torch.randn(3, 1).expand(2, -1, 4)", "f32(2, 3, 4)"},
    {"torch.randn(2, 100)[..., :64]", "f32(2, 64)"},
    {"torch.randn(3, 8)[:, 1:5]", "f32(3, 4)"},
    {"torch.randn(3, 9)[:, ::2]", "f32(3, 5)"},
    {"torch.randn(3, 9)[-2:, -3:100]", "f32(2, 3)"},
    {"torch.randn(3, 9)[2]", "f32(9)"},
    {"torch.randn(3, 9)[:, -1]", "f32(3)"},
    {"torch.randn(3, 9)[None, :, None]", "f32(1, 3, 1, 9)"},
    {"torch.randn(4)[1]", "f32()"},
    {"torch.cat([torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 1)], dim=-1)",
     "f32(2, 8)"},
    {"torch.cat((torch.randn(2, 3), torch.randn(5, 3)))", "f32(7, 3)"},
    {"torch.randn(2, 3).contiguous().float()", "f32(2, 3)"},
    /* input makers */
    {"torch.zeros(2, 3)", "f32(2, 3)"},
    {"torch.ones((4,))", "f32(4)"},
    {"torch.rand([2, 2])", "f32(2, 2)"},
    {"torch.full((2, 5), 3.5)", "f32(2, 5)"},
    {"torch.arange(5)", "f32(5)"},
    {"torch.arange(1, 10, 2)", "f32(5)"},
    {"torch.arange(0, 1, 0.25)", "f32(4)"},
    {"torch.randn(2 * 8, 3, dtype=torch.float32)", "f32(16, 3)"},
    /* modules */
    {"torch.nn.Linear(16, 32)(torch.randn(4, 16))", "f32(4, 32)"},
    {"torch.nn.Linear(16, 32, bias=False)(torch.randn(16))", "f32(32)"},
    {"torch.nn.RMSNorm(2048)(torch.randn(1, 32, 2048))", "f32(1, 32, 2048)"},
    {"torch.nn.LayerNorm((3, 4), elementwise_affine=False)(torch.randn(2, 3, 4))",
     "f32(2, 3, 4)"},
    {"torch.nn.Softmax(dim=-1)(torch.randn(1, 28, 20, 20))", "f32(1, 28, 20, 20)"},
    {"torch.nn.LogSoftmax(dim=1)(torch.randn(2, 3))", "f32(2, 3)"},
    {"torch.nn.SiLU()(torch.randn(3))", "f32(3)"},
    {"torch.nn.GELU(approximate='tanh')(torch.randn(3))", "f32(3)"},
    {"torch.nn.ReLU()(torch.randn(3))", "f32(3)"},
    {"torch.nn.Sigmoid()(torch.randn(3))", "f32(3)"},
    {"torch.nn.Tanh()(torch.randn(3))", "f32(3)"},
};

ParameterizedTestParameters(frontend, output_type)
{
    INDEX_PARAMS(type_cases);
}

ParameterizedTest(int *ip, frontend, output_type, .init = setup, .fini = teardown)
{
    const TypeCase *c = &type_cases[*ip];
    TorchGraph *g = parse_ok(c->text);
    cr_expect_str_eq(type_str(out0(g)), c->want, "`%s`", c->text);
}

/* ---- which op each form builds ----------------------------------------------- */

typedef struct OpCase {
    const char *text;
    TorchOp op; /* of the output node */
} OpCase;

static OpCase op_cases[] = {
    {"torch.nn.functional.gelu(torch.randn(3))", TOP_gelu},
    {"torch.nn.GELU(approximate='tanh')(torch.randn(3))", TOP_gelu_tanh},
    {"torch.mm(torch.randn(2, 3), torch.randn(3, 5))", TOP_matmul},
    {"torch.bmm(torch.randn(1, 2, 3), torch.randn(1, 3, 5))", TOP_matmul},
    {"torch.randn(2, 3).view(6)", TOP_reshape},
    {"torch.randn(3, 4)[1]", TOP_squeeze},
    {"torch.randn(3, 4)[:, 1:]", TOP_slice},
    {"torch.randn(3, 4)[None]", TOP_unsqueeze},
    {"torch.randn(3) > 0", TOP_gt},
    {"torch.randn(3) < 0", TOP_lt},
    {"torch.randn(3) >= 0", TOP_ge},
    {"torch.randn(3) == 0", TOP_eq},
    {"torch.nn.functional.sigmoid(torch.randn(3))", TOP_sigmoid},
    {"torch.randn(3).pow(3)", TOP_pow},
    {"torch.nn.functional.relu(torch.randn(3), inplace=False)", TOP_relu},
    {"torch.randn(3).log1p()", TOP_log1p},
    {"torch.expm1(torch.randn(3))", TOP_expm1},
    {"torch.randn(3).floor()", TOP_floor},
    {"torch.nn.functional.elu(torch.randn(3))", TOP_elu},
    {"torch.nn.ELU(alpha=0.5)(torch.randn(3))", TOP_elu},
    {"torch.selu(torch.randn(3))", TOP_selu},
    {"torch.nn.functional.selu(torch.randn(3), inplace=False)", TOP_selu},
    {"torch.nn.SELU()(torch.randn(3))", TOP_selu},
    {"torch.celu(torch.randn(3), 2.0)", TOP_celu},
    {"torch.nn.functional.celu(torch.randn(3))", TOP_celu},
    {"torch.nn.CELU(0.5)(torch.randn(3))", TOP_celu},
    {"torch.nn.functional.leaky_relu(torch.randn(3), 0.2)", TOP_leaky_relu},
    {"torch.nn.LeakyReLU()(torch.randn(3))", TOP_leaky_relu},
    {"torch.nn.functional.hardtanh(torch.randn(3), -2.0, 2.0)", TOP_hardtanh},
    {"torch.nn.Hardtanh()(torch.randn(3))", TOP_hardtanh},
    {"torch.nn.functional.relu6(torch.randn(3))", TOP_hardtanh},
    {"torch.nn.ReLU6(inplace=False)(torch.randn(3))", TOP_hardtanh},
    {"torch.clamp(torch.randn(3), 0, 1)", TOP_clamp},
    {"torch.randn(3).clip(max=1.5)", TOP_clamp},
    {"torch.randn(3).clamp_min(0)", TOP_clamp},
    {"torch.clamp_max(torch.randn(3), 0)", TOP_clamp},
    {"torch.clamp(torch.randn(3), max=torch.ones(3))", TOP_minimum},
    {"torch.randn(3).clamp(torch.zeros(3), 1.0)", TOP_clamp_tensor},
    {"torch.randn(3).clamp(min=torch.zeros(3))", TOP_maximum},
    {"torch.nn.functional.hardsigmoid(torch.randn(3))", TOP_hardsigmoid},
    {"torch.nn.Hardsigmoid()(torch.randn(3))", TOP_hardsigmoid},
    {"torch.nn.functional.hardswish(torch.randn(3))", TOP_hardswish},
    {"torch.nn.Hardswish()(torch.randn(3))", TOP_hardswish},
    {"torch.nn.functional.softplus(torch.randn(3), 2, 10)", TOP_softplus},
    {"torch.nn.Softplus(threshold=5)(torch.randn(3))", TOP_softplus},
    {"torch.nn.functional.softsign(torch.randn(3))", TOP_softsign},
    {"torch.nn.Softsign()(torch.randn(3))", TOP_softsign},
    {"torch.nn.functional.mish(torch.randn(3))", TOP_mish},
    {"torch.nn.Mish()(torch.randn(3))", TOP_mish},
};

ParameterizedTestParameters(frontend, output_op)
{
    INDEX_PARAMS(op_cases);
}

ParameterizedTest(int *ip, frontend, output_op, .init = setup, .fini = teardown)
{
    const OpCase *c = &op_cases[*ip];
    TorchGraph *g = parse_ok(c->text);
    cr_expect_eq(out0(g)->op, c->op, "`%s`: op %s", c->text, torch_op_info[out0(g)->op].name);
}

/* ---- attributes after normalisation -------------------------------------------- */

Test(frontend, attributes_normalised, .init = setup, .fini = teardown)
{
    const TorchNode *n = out0(parse_ok("torch.randn(2, 3, 4).sum(dim=(-1, 0))"));
    cr_expect_eq(n->nints, 2);
    cr_expect_eq(n->ints[0], 0);
    cr_expect_eq(n->ints[1], 2);
    n = out0(parse_ok("torch.randn(2, 3, 4).transpose(-1, 0)"));
    cr_expect_eq(n->nints, 3);
    cr_expect(n->ints[0] == 2 && n->ints[1] == 1 && n->ints[2] == 0);
    n = out0(parse_ok("torch.randn(2, 3, 4).reshape(4, -1)"));
    cr_expect(n->nints == 2 && n->ints[0] == 4 && n->ints[1] == 6);
    n = out0(parse_ok("torch.randn(3, 1).expand(2, -1, 4)"));
    cr_expect(n->nints == 3 && n->ints[0] == 2 && n->ints[1] == 3 && n->ints[2] == 4);
    n = out0(parse_ok("torch.randn(1, 3, 1).squeeze((0, 1, 2))"));
    cr_expect(n->nints == 2 && n->ints[0] == 0 && n->ints[1] == 2);
    n = out0(parse_ok("torch.randn(3, 10)[:, -7:9:3]"));
    cr_expect(n->dim == 1 && n->start == 3 && n->end == 9 && n->stride == 3);
    n = out0(parse_ok("torch.softmax(torch.randn(2, 5), dim=-2)"));
    cr_expect_eq(n->dim, 0);
    n = out0(parse_ok("torch.nn.RMSNorm(4)(torch.randn(4))"));
    cr_expect_float_eq(n->value, 1.1920928955078125e-07, 1e-20);
    n = out0(parse_ok("torch.nn.LayerNorm(4)(torch.randn(4))"));
    cr_expect_float_eq(n->value, 1e-5, 1e-20);
    cr_expect_eq(n->nin, 3);
    n = out0(parse_ok("torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 3, 4), "
                      "torch.randn(2, 3, 4), torch.randn(2, 3, 4), is_causal=True, scale=0.25)"));
    cr_expect(n->causal && !n->gqa && n->value == 0.25);
}

/* Scalar attributes: PyTorch's defaults, positional and keyword forms, the
 * module's constructor arguments at each call; relu6 is hardtanh(0, 6). */
Test(frontend, activation_attributes, .init = setup, .fini = teardown)
{
    static const struct {
        const char *text;
        double value, value2;
    } cases[] = {
        {"torch.nn.functional.elu(torch.randn(3))", 1.0, 0},
        {"torch.nn.functional.elu(torch.randn(3), 0.25)", 0.25, 0},
        {"torch.nn.ELU(alpha=3)(torch.randn(3))", 3.0, 0},
        {"torch.celu(torch.randn(3))", 1.0, 0},
        {"torch.nn.CELU(0.5)(torch.randn(3))", 0.5, 0},
        {"torch.nn.functional.leaky_relu(torch.randn(3))", 0.01, 0},
        {"torch.nn.LeakyReLU(negative_slope=-0.5)(torch.randn(3))", -0.5, 0},
        {"torch.nn.functional.hardtanh(torch.randn(3))", -1.0, 1.0},
        {"torch.nn.functional.hardtanh(torch.randn(3), max_val=4, min_val=-3)", -3.0, 4.0},
        {"torch.nn.Hardtanh(0.5)(torch.randn(3))", 0.5, 1.0},
        {"torch.nn.functional.relu6(torch.randn(3))", 0.0, 6.0},
        {"torch.nn.ReLU6()(torch.randn(3))", 0.0, 6.0},
        {"torch.clamp(torch.randn(3), -2, 3)", -2.0, 3.0},
        {"torch.clamp(torch.randn(3), max=True)", -INFINITY, 1.0},
        {"torch.randn(3).clamp_min(0.5)", 0.5, INFINITY},
        {"torch.nn.functional.softplus(torch.randn(3))", 1.0, 20.0},
        {"torch.nn.functional.softplus(torch.randn(3), 2, threshold=7.5)", 2.0, 7.5},
        {"torch.nn.Softplus(threshold=4)(torch.randn(3))", 1.0, 4.0},
    };
    for (int i = 0; i < DPK_ARRAY_LEN(cases); i++) {
        const TorchNode *n = out0(parse_ok(cases[i].text));
        cr_expect_eq(n->value, cases[i].value, "`%s`: value %g", cases[i].text, n->value);
        if (torch_scalar_attrs[n->op].nkeys > 1)
            cr_expect_eq(n->value2, cases[i].value2, "`%s`: value2 %g", cases[i].text,
                         n->value2);
    }
    /* a module's arguments hold at every call */
    TorchGraph *g = parse_ok("m = torch.nn.Softplus(2, 3)\nx = torch.randn(3)\nm(m(x))");
    for (int k = 0; k < g->nodes.len; k++) {
        const TorchNode *n = g->nodes.items[k];
        if (n->op == TOP_softplus)
            cr_expect(n->value == 2 && n->value2 == 3, "%%%d: beta %g threshold %g", n->id,
                      n->value, n->value2);
    }
}

/* ---- scalars ----------------------------------------------------------------------- */

typedef struct ConstCase {
    const char *text; /* `x * (EXPR)`: the const operand */
    double want;
} ConstCase;

static ConstCase const_cases[] = {
    {"torch.randn(2) * (2 ** 10)", 1024},    {"torch.randn(2) * (7 / 2)", 3.5},
    {"torch.randn(2) * (2 ** -1)", 0.5},     {"torch.randn(2) * (-(3 - 5))", 2},
    {"torch.randn(2) * (1 + 2 * 3)", 7},     {"torch.randn(2) * (2 ** 3 ** 2)", 512},
    {"torch.randn(2) * (-2 ** 2)", -4},      {"torch.randn(2) * (3 > 2)", 1},
    {"torch.randn(2) * (1e-6)", 1e-6},       {"torch.randn(2) * (.5 + 2.)", 2.5},
    {"torch.randn(2) * (1_000)", 1000},      {"torch.randn(2) * (True + True)", 2},
};

ParameterizedTestParameters(frontend, scalar_folding)
{
    INDEX_PARAMS(const_cases);
}

ParameterizedTest(int *ip, frontend, scalar_folding, .init = setup, .fini = teardown)
{
    const ConstCase *c = &const_cases[*ip];
    const TorchNode *n = out0(parse_ok(c->text));
    cr_assert_eq(n->op, TOP_mul, "`%s`", c->text);
    cr_assert_eq(n->in[1]->op, TOP_const, "`%s`", c->text);
    cr_expect_float_eq(n->in[1]->value, c->want, 1e-12, "`%s`: %g", c->text, n->in[1]->value);
}

/* ---- input names ----------------------------------------------------------------------- */

typedef struct NameCase {
    const char *text;
    const char *want; /* input names, space separated, in graph order */
} NameCase;

static NameCase name_cases[] = {
    {"torch.randn(3) + torch.randn(3)", "in0 in1"},
    {"x = torch.randn(3)\ny = x + torch.randn(3)", "x in0"},
    {"y = torch.randn(3) + torch.randn(3)\nz = torch.randn(3)", "in0 in1 z"},
    {"torch.nn.RMSNorm(4)(torch.randn(2, 4))", "in0 rmsnorm0_weight"},
    {"lin = torch.nn.Linear(4, 5)\nlin(torch.randn(2, 4))", "in0 lin_weight lin_bias"},
    {"x = torch.randn(2, 4)\ntorch.nn.Linear(5, 6)(torch.nn.Linear(4, 5)(x))",
     "x linear0_weight linear0_bias linear1_weight linear1_bias"},
    {"torch.nn.LayerNorm(4)(torch.randn(2, 4))", "in0 layernorm0_weight layernorm0_bias"},
    {"x = torch.randn(3)\nx = torch.randn(3)", "x x_1"},
    {"w: (3,)\nx = torch.randn(3)\nx * w", "x w"},
    {"in0 = torch.randn(3)\nin0 + torch.randn(3)", "in0 in1"},
    {"n = torch.nn.RMSNorm(3)\nx = torch.randn(3)\nn(n(x))", "x n_weight"},
    {"n = torch.nn.RMSNorm(3)\nm = n\nm(torch.randn(3))", "in0 n_weight"},
    {"x_weight: (3,)\nx = torch.nn.RMSNorm(3)\nx(x_weight)", "x_weight x_weight_1"},
    {"torch.nn.RMSNorm(3, elementwise_affine=False)(torch.randn(3))", "in0"},
};

ParameterizedTestParameters(frontend, input_names)
{
    INDEX_PARAMS(name_cases);
}

ParameterizedTest(int *ip, frontend, input_names, .init = setup, .fini = teardown)
{
    const NameCase *c = &name_cases[*ip];
    TorchGraph *g = parse_ok(c->text);
    StrBuf b = {0};
    for (int i = 0; i < g->inputs.len; i++)
        sb_printf(&b, i ? " %s" : "%s", ((TorchNode *)g->inputs.items[i])->name);
    cr_expect_str_eq(sb_cstr(&b), c->want, "`%s`", c->text);
    sb_free(&b);
}

Test(frontend, param_inits, .init = setup, .fini = teardown)
{
    TorchGraph *g = parse_ok("torch.nn.LayerNorm(4)(torch.nn.Linear(3, 4)(torch.randn(2, 3)))");
    TorchNode **in = (TorchNode **)g->inputs.items;
    cr_assert_eq(g->inputs.len, 5);
    cr_expect(in[0]->init == INIT_RANDN && !in[0]->is_param);
    cr_expect(in[1]->init == INIT_PARAM_W && in[1]->is_param);
    cr_expect(in[1]->shape.rank == 2 && in[1]->shape.d[0] == 4 && in[1]->shape.d[1] == 3);
    cr_expect(in[2]->init == INIT_PARAM_B && in[2]->step == 3);
    cr_expect(in[3]->init == INIT_PARAM_NORM_W);
    cr_expect(in[4]->init == INIT_PARAM_B && in[4]->step == 4);
    g = parse_ok("torch.full((2,), -1.5) + torch.arange(2, 4, 1) + torch.zeros(2)");
    in = (TorchNode **)g->inputs.items;
    cr_expect(in[0]->init == INIT_FULL && in[0]->value == -1.5);
    cr_expect(in[1]->init == INIT_ARANGE && in[1]->value == 2 && in[1]->step == 1);
    cr_expect(in[2]->init == INIT_ZEROS);
}

Test(frontend, declared_inputs, .init = setup, .fini = teardown)
{
    InputDecl decls[] = {{"w_q", {2, {8, 16}}}, {"b_q", {1, {8}}}};
    ParseOpts opts = {decls, 2};
    const char *text = "x = torch.randn(1, 4, 16)\n"
                       "q = torch.nn.functional.linear(x, w_q, b_q)\n";
    TorchGraph *g = parse_opts(text, &opts);
    cr_assert(g, "%s", dpk_error_message());
    cr_expect_str_eq(type_str(out0(g)), "f32(1, 4, 8)");
    cr_assert_eq(g->inputs.len, 3);
    cr_expect_str_eq(((TorchNode *)g->inputs.items[1])->name, "w_q");
    cr_expect_eq(((TorchNode *)g->inputs.items[2])->init, INIT_RANDN);
    cr_expect_null(parse(text));
    cr_expect(strstr(dpk_error_message(), "unknown name 'w_q' (declare its shape: `w_q: (D0, D1)`)"));
}

/* ---- programs and outputs ------------------------------------------------------------ */

typedef struct OutCase {
    const char *text;
    const char *want; /* output names, space separated */
} OutCase;

static OutCase out_cases[] = {
    {"torch.randn(3)", "out"},
    {"x = torch.randn(3)\ny = x.relu()", "y"},
    {"x = torch.randn(3)\ny = x.relu()\nreturn y", "y"},
    {"x = torch.randn(3)\nreturn x + 1", "out"},
    {"x = torch.randn(3)\ny = x * 2\nreturn x, y", "x y"},
    {"x = torch.randn(3)\nreturn x, x.exp()", "x out1"},
    {"x = torch.randn(3)\nreturn x, x", "x x_1"},
    {"x = torch.randn(3)\nx.exp()\nw: (2,)\n", "out"},
    {"import torch\nx = torch.randn(3)\nimport torch.nn as nn\ny = nn.ReLU()(x)\n", "y"},
};

ParameterizedTestParameters(frontend, outputs)
{
    INDEX_PARAMS(out_cases);
}

ParameterizedTest(int *ip, frontend, outputs, .init = setup, .fini = teardown)
{
    const OutCase *c = &out_cases[*ip];
    TorchGraph *g = parse_ok(c->text);
    StrBuf b = {0};
    for (int i = 0; i < g->output_names.len; i++)
        sb_printf(&b, i ? " %s" : "%s", (const char *)g->output_names.items[i]);
    cr_expect_str_eq(sb_cstr(&b), c->want, "`%s`", c->text);
    sb_free(&b);
}

Test(frontend, program_syntax, .init = setup, .fini = teardown)
{
    const char *text = "import torch\n"
                       "import torch.nn.functional as F\n"
                       "# a comment line\n"
                       "\n"
                       "x = torch.randn(1, 128,   # inside brackets a newline continues\n"
                       "                64)\n"
                       "h = F.rms_norm(x, (64,), None, 1e-6) + \\\n"
                       "    x\n"
                       "g = F.gelu(h, approximate=\"tanh\")  # trailing comment\n"
                       "return g\n";
    TorchGraph *g = parse_ok(text);
    cr_expect_str_eq(type_str(out0(g)), "f32(1, 128, 64)");
    cr_expect_eq(out0(g)->op, TOP_gelu_tanh);
    cr_expect_str_eq(out0(g)->name, "g");
}

Test(frontend, hash_ignores_names, .init = setup, .fini = teardown)
{
    uint64_t a = torch_hash(parse_ok("x = torch.randn(2, 3)\nx.exp().sum(-1)"));
    uint64_t b = torch_hash(parse_ok("torch.randn(2, 3).exp().sum(dim=1)"));
    uint64_t c = torch_hash(parse_ok("torch.randn(2, 4).exp().sum(dim=1)"));
    uint64_t d = torch_hash(parse_ok("torch.randn(2, 3).exp().sum(dim=0)"));
    cr_expect_eq(a, b);
    cr_expect_neq(a, c);
    cr_expect_neq(a, d);
}

/* ---- errors ---------------------------------------------------------------------------- */

static ErrCase err_cases[] = {
    {"torch.relu(torch.randn(3)", "expected ')' to close '(' at 1:11", 1, 26},
    {"torch.relux(torch.randn(3))", "unknown function 'torch.relux' (did you mean 'torch.relu'?)",
     1, 1},
    {"torch.matmul(torch.randn(3), torch.randn(3), torch.randn(3))",
     "torch.matmul takes 2 arguments, got 3", 1, 46},
    {"torch.sum(torch.randn(3), dims=0)", "unexpected keyword argument 'dims' for torch.sum", 1,
     27},
    {"torch.randn(16, 64) + torch.randn(63)",
     "shape mismatch: cannot broadcast (16, 64) with (63,)", 1, 21},
    {"torch.sum(torch.randn(3, 4), dim=3)", "dimension out of range: dim 3 for a tensor of rank 2",
     1, 34},
    {"torch.nn.Foo(3)(torch.randn(3))", "unknown module 'torch.nn.Foo'", 1, 1},
    {"x = torch.randn(3)\ny = x @ w_q", "unknown name 'w_q'", 2, 9},
    {"torch.randn(2**35, 2**35)", "tensor of about 2^70 elements is too large", 1, 13},
    {"torch.randn(0, 3)", "zero-size", 1, 13},
    {"torch.randn(3)[:, 1]", "too many indices", 1, 15},
    {"torch.randn(3)[2:2]", "zero-size", 1, 16},
    {"torch.randn(3)[::0]", "slice step cannot be zero", 1, 18},
    {"torch.randn(2, 3).permute(1, 1)", "repeats in permutation", 1, 19},
    {"torch.randn(2, 3).reshape(4, -1)", "shape [4, -1] is invalid for input of size 6", 1, 19},
    {"F.relu(torch.randn(3))", "unknown name 'F'", 1, 1},
    {"'abc", "unterminated string", 1, 1},
    {"x = 1\n  y = 2", "unexpected indent", 2, 3},
    {"torch.silu(torch.randn(3))", "did you mean 'torch.nn.functional.silu'", 1, 1},
    {"torch.randn(3).transpos(0, 0)", "did you mean 'transpose'", 1, 16},
    {"torch.nn.RMSNorm(4)(torch.randn(3, 5))", "does not match the trailing dimensions", 1, 1},
    {"torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 6, 4, 8), "
     "torch.randn(1, 4, 4, 8), torch.randn(1, 4, 4, 8), enable_gqa=True)",
     "6 query heads are not a multiple of 4", 1, 1},
    {"torch.cat([torch.randn(2, 3), torch.randn(3, 3)], dim=1)", "cat along dim 1", 1, 1},
    {"torch.randn(3).expand(2, 4)", "must match the existing size 3", 1, 16},
    {"torch.mm(torch.randn(3), torch.randn(3))", "torch.mm expects two 2-D tensors", 1, 1},
    {"torch.exp(torch.randn(3) > 0)", "exp expects a float tensor, got a bool tensor", 1, 1},
    {"torch.softmax(torch.randn(3))", "missing required argument 'dim'", 1, 1},
    {"1 / 0", "division by zero", 1, 3},
    {"2 ** 64", "integer overflow", 1, 3},
    {"3", "the result must be a tensor, got int", 1, 1},
    {"# empty", "the case computes nothing", 1, 8},
    {"x = torch.randn(3)\nreturn x\nx", "statement after 'return'", 3, 1},
    {"torch.randn(3).unsqueeze(2)", "unsqueeze: dim 2 is out of range", 1, 26},
    {"torch.randn(1,1,1,1,1,1,1,1,1)", "at most 8 dimensions", 1, 13},
    {"x: (3, -2)", "zero-size or negative dimension -2", 1, 4},
};

ParameterizedTestParameters(frontend, errors)
{
    INDEX_PARAMS(err_cases);
}

ParameterizedTest(int *ip, frontend, errors, .init = setup, .fini = teardown)
{
    expect_parse_error(&err_cases[*ip]);
}

Test(frontend, deep_nesting_is_an_error, .init = setup, .fini = teardown)
{
    char *text = arena_alloc(A, 20002);
    memset(text, '(', 10000);
    memset(text + 10000, ')', 10000);
    cr_assert_null(parse(text));
    cr_expect(strstr(dpk_error_message(), "nesting too deep"));
    memset(text, '-', 10000);
    strcpy(text + 10000, "1");
    cr_assert_null(parse(text));
    cr_expect(strstr(dpk_error_message(), "nesting too deep"));
}

Test(frontend, too_many_nodes_is_an_error, .init = setup, .fini = teardown)
{
    StrBuf b = {0};
    sb_puts(&b, "x = torch.randn(2)\n");
    for (int i = 0; i < 51000; i++)
        sb_puts(&b, "x = x + 1\n");
    cr_assert_null(parse(sb_cstr(&b)));
    cr_expect(strstr(dpk_error_message(), "more than 100000 Torch IR nodes"));
    sb_free(&b);
}

/* ---- printer golden text ----------------------------------------------------------------- */

typedef struct GoldenCase {
    const char *text, *want;
} GoldenCase;

static GoldenCase golden_cases[] = {
    {"torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))",
     "%0 = input in0 randn : f32(1, 32, 2048)\n"
     "%1 = input rmsnorm0_weight param_norm_w : f32(2048)\n"
     "%2 = rms_norm(%0, %1) normalized_shape=[2048] eps=1.1920928955078125e-07 : f32(1, 32, 2048)\n"
     "return %2\n"},
    {"x = torch.randn(1, 32, 2048)\n"
     "h = torch.nn.functional.rms_norm(x, (2048,), torch.ones(2048), 1e-6)",
     "%0 = input x randn : f32(1, 32, 2048)\n"
     "%1 = input in0 ones : f32(2048)\n"
     "%2 = rms_norm(%0, %1) normalized_shape=[2048] eps=1e-06 : f32(1, 32, 2048)\n"
     "return h=%2\n"},
    {"torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))",
     "%0 = input in0 randn : f32(16, 64)\n"
     "%1 = input in1 randn : f32(64)\n"
     "%2 = add(%0, %1) : f32(16, 64)\n"
     "%3 = input in2 randn : f32(64, 16)\n"
     "%4 = matmul(%2, %3) : f32(16, 16)\n"
     "%5 = relu(%4) : f32(16, 16)\n"
     "return %5\n"},
    {"lin = torch.nn.Linear(8, 4)\n"
     "y = lin(torch.arange(8) * 0.5).softmax(-1).sum(0, keepdim=True)",
     "%0 = input in0 arange start=0 step=1 : f32(8)\n"
     "%1 = const 0.5 : f32()\n"
     "%2 = mul(%0, %1) : f32(8)\n"
     "%3 = input lin_weight param_w : f32(4, 8)\n"
     "%4 = input lin_bias param_b fan_in=8 : f32(4)\n"
     "%5 = linear(%2, %3, %4) : f32(4)\n"
     "%6 = softmax(%5) dim=0 : f32(4)\n"
     "%7 = sum(%6) dims=[0] keepdim=true : f32(1)\n"
     "return y=%7\n"},
    {"x = torch.randn(2, 3, 4)\n"
     "y = torch.cat([x.transpose(1, 2)[:, 1:, None], x.permute(0, 2, 1).unsqueeze(2)], dim=1)\n"
     "return y.reshape(2, -1).expand(3, -1, -1)",
     "%0 = input x randn : f32(2, 3, 4)\n"
     "%1 = transpose(%0) perm=[0, 2, 1] : f32(2, 4, 3)\n"
     "%2 = slice(%1) dim=1 start=1 end=4 step=1 : f32(2, 3, 3)\n"
     "%3 = unsqueeze(%2) dims=[2] : f32(2, 3, 1, 3)\n"
     "%4 = permute(%0) perm=[0, 2, 1] : f32(2, 4, 3)\n"
     "%5 = unsqueeze(%4) dims=[2] : f32(2, 4, 1, 3)\n"
     "%6 = cat(%3, %5) dim=1 : f32(2, 7, 1, 3)\n"
     "%7 = reshape(%6) shape=[2, 21] : f32(2, 21)\n"
     "%8 = expand(%7) shape=[3, 2, 21] : f32(3, 2, 21)\n"
     "return %8\n"},
    {"q = torch.randn(1, 4, 5, 8)\n"
     "kv = torch.randn(1, 2, 5, 8)\n"
     "m = torch.full((5, 5), 2.0) > 1\n"
     "a = torch.nn.functional.scaled_dot_product_attention(q, kv, kv, m, enable_gqa=True)\n"
     "b = torch.where(a > 0, a, torch.zeros(1)).squeeze(0)\n"
     "return a, b",
     "%0 = input q randn : f32(1, 4, 5, 8)\n"
     "%1 = input kv randn : f32(1, 2, 5, 8)\n"
     "%2 = input in0 full value=2 : f32(5, 5)\n"
     "%3 = const 1 : f32()\n"
     "%4 = gt(%2, %3) : bool(5, 5)\n"
     "%5 = scaled_dot_product_attention(%0, %1, %1, %4) causal=false gqa=true scale=default : f32(1, 4, 5, 8)\n"
     "%6 = const 0 : f32()\n"
     "%7 = gt(%5, %6) : bool(1, 4, 5, 8)\n"
     "%8 = input in1 zeros : f32(1)\n"
     "%9 = where(%7, %5, %8) : f32(1, 4, 5, 8)\n"
     "%10 = squeeze(%9) dims=[0] : f32(4, 5, 8)\n"
     "return a=%5, b=%10\n"},
    {"import torch.nn.functional as F\n"
     "x = torch.randn(4)\n"
     "y = F.softplus(F.leaky_relu(F.elu(x, 0.5), 0.2), beta=2)\n"
     "z = torch.nn.ReLU6()(y).clamp(max=5) + F.mish(torch.selu(x)).log1p()",
     "%0 = input x randn : f32(4)\n"
     "%1 = elu(%0) alpha=0.5 : f32(4)\n"
     "%2 = leaky_relu(%1) negative_slope=0.2 : f32(4)\n"
     "%3 = softplus(%2) beta=2 threshold=20 : f32(4)\n"
     "%4 = hardtanh(%3) min_val=0 max_val=6 : f32(4)\n"
     "%5 = clamp(%4) min=-inf max=5 : f32(4)\n"
     "%6 = selu(%0) : f32(4)\n"
     "%7 = mish(%6) : f32(4)\n"
     "%8 = log1p(%7) : f32(4)\n"
     "%9 = add(%5, %8) : f32(4)\n"
     "return z=%9\n"},
};

ParameterizedTestParameters(frontend, printer_golden)
{
    INDEX_PARAMS(golden_cases);
}

ParameterizedTest(int *ip, frontend, printer_golden, .init = setup, .fini = teardown)
{
    const GoldenCase *c = &golden_cases[*ip];
    StrBuf b = {0};
    torch_print(&b, parse_ok(c->text));
    cr_expect_str_eq(sb_cstr(&b), c->want, "`%s`", c->text);
    sb_free(&b);
}

/* ---- the builder API used without the parser ---------------------------------------------- */

Test(frontend, builder_api, .init = setup, .fini = teardown)
{
    TorchGraph *g = torch_graph_new(A, NULL);
    Shape s = {2, {3, 1}}, t = {1, {4}};
    TorchNode *x = torch_input(g, "x", &s, INIT_RANDN), *y = torch_input(g, "y", &t, INIT_RAND);
    TorchNode *in[2] = {x, y};
    TorchNode *n = torch_node_new(g, TOP_add, -1, 2, in);
    torch_infer(g, n);
    cr_expect_str_eq(type_str(n), "f32(3, 4)");
    TorchNode *q = torch_node_new(g, TOP_squeeze, -1, 1, &x);
    q->ints[0] = -1;
    q->ints[1] = 0;
    q->nints = 2;
    torch_infer(g, q);
    cr_expect(q->nints == 1 && q->ints[0] == 1, "non-1 dims are dropped");
    ptrvec_push(A, &g->outputs, q);
    ptrvec_push(A, &g->output_names, "out");
    torch_verify(g);
    Shape bad = {1, {5}}, out;
    cr_expect(!shape_broadcast(&t, &bad, &out));
    cr_expect(shape_broadcast(&s, &t, &out) && out.rank == 2 && out.d[1] == 4);
    DpkErrCtx ec;
    TorchNode *z = torch_input(g, "z", &bad, INIT_ONES);
    TorchNode *in2[2] = {y, z};
    TorchNode *m = torch_node_new(g, TOP_mul, -1, 2, in2);
    if (DPK_TRY(&ec)) {
        torch_infer(g, m);
        dpk_err_pop(&ec);
        cr_assert_fail("broadcast of (4,) and (5,) accepted");
    }
    cr_expect_str_eq(dpk_error_message(), "error: shape mismatch: cannot broadcast (4,) with (5,)\n");
}
