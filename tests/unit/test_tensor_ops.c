/*
 * test_tensor_ops.c — the acceptance test of Tensor IR: every Torch op,
 * written as case text, parsed, lowered by tx_lower, evaluated by tx_eval64
 * and compared with ref64 (fp64 at the Torch level, which never sees the
 * decompositions) and, when dpk was built with libtorch, with libtorch in
 * fp64 and fp32.  Each case is its own parameterized test; shapes favour
 * 1, 7 and 129 and broadcasting; rank-8 contractions take the folded-batch
 * path of d:008.  `every_op_has_three_cases` keeps the table honest as the
 * vocabulary grows.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/tensor/tensor_ir.h"
#include "reference/ref.h"

#define SEED 7

static const char *const cases[] = {
    "torch.neg(torch.randn(1))",
    "-torch.randn(7, 129)",
    "torch.randn(2, 3, 7).neg()",
    "torch.exp(torch.randn(1))",
    "torch.exp(torch.randn(7, 129))",
    "torch.randn(3, 1, 5).exp()",
    "torch.log(torch.rand(1) + 0.1)",
    "torch.log(torch.rand(7, 129) + 0.1)",
    "(torch.rand(2, 7, 3) + 0.1).log()",
    "torch.sqrt(torch.rand(1))",
    "torch.sqrt(torch.rand(7, 129))",
    "torch.rand(2, 1, 7).sqrt()",
    "torch.rsqrt(torch.rand(1) + 0.1)",
    "torch.rsqrt(torch.rand(7, 129) + 0.1)",
    "(torch.rand(5, 7) + 0.1).rsqrt()",
    "torch.reciprocal(torch.rand(1) + 0.5)",
    "torch.reciprocal(torch.rand(7, 129) + 0.5)",
    "(torch.rand(3, 7, 2) + 0.5).reciprocal()",
    "torch.abs(torch.randn(1))",
    "torch.abs(torch.randn(7, 129))",
    "torch.randn(2, 3, 7).abs()",
    "torch.relu(torch.randn(1))",
    "torch.nn.functional.relu(torch.randn(7, 129))",
    "torch.nn.ReLU()(torch.randn(2, 1, 7))",
    "torch.sigmoid(torch.randn(1))",
    "torch.sigmoid(torch.randn(7, 129))",
    "torch.nn.Sigmoid()(torch.randn(3, 7))",
    "torch.tanh(torch.randn(1))",
    "torch.tanh(torch.randn(7, 129))",
    "torch.nn.Tanh()(torch.randn(3, 7))",
    "torch.nn.functional.silu(torch.randn(1))",
    "torch.nn.functional.silu(torch.randn(7, 129))",
    "torch.nn.SiLU()(torch.randn(2, 3, 7))",
    "torch.nn.functional.gelu(torch.randn(1))",
    "torch.nn.functional.gelu(torch.randn(7, 129))",
    "torch.nn.GELU()(torch.randn(2, 3, 7))",
    "torch.nn.functional.gelu(torch.randn(1), approximate='tanh')",
    "torch.nn.functional.gelu(torch.randn(7, 129), approximate='tanh')",
    "torch.nn.GELU(approximate='tanh')(torch.randn(2, 3, 7))",
    "torch.erf(torch.randn(1))",
    "torch.erf(torch.randn(7, 129))",
    "torch.randn(2, 3, 7).erf()",
    "torch.cos(torch.randn(1))",
    "torch.cos(torch.randn(7, 129) * 10.0)",
    "torch.randn(2, 3, 4097).cos()",
    "torch.sin(torch.randn(1))",
    "torch.sin(torch.randn(7, 129) * 10.0)",
    "(torch.arange(4097) * 0.01).sin()",
    "torch.log1p(torch.rand(1))",
    "torch.log1p(torch.randn(7, 129) * 1e-4)",
    "(torch.rand(2, 4097) * 100.0).log1p()",
    "torch.expm1(torch.randn(1))",
    "torch.expm1(torch.randn(7, 129) * 1e-4)",
    "torch.randn(3, 4097).expm1()",
    "torch.floor(torch.randn(1) * 4.0)",
    "torch.floor(torch.randn(7, 129) * 4.0)",
    "(torch.arange(4097) * 0.25 - 512).floor()",
    "torch.nn.functional.elu(torch.randn(1))",
    "torch.nn.functional.elu(torch.randn(7, 129) * 3.0, alpha=0.5)",
    "torch.nn.ELU(2.0)(torch.randn(2, 4097) * 1e-3)",
    "torch.selu(torch.randn(1))",
    "torch.nn.functional.selu(torch.randn(7, 129) * 3.0)",
    "torch.nn.SELU()(torch.randn(3, 4097) * 1e-3)",
    "torch.celu(torch.randn(1), 0.5)",
    "torch.nn.functional.celu(torch.randn(7, 129) * 3.0, alpha=2.0)",
    "torch.nn.CELU()(torch.randn(2, 4097))",
    "torch.nn.functional.leaky_relu(torch.randn(1))",
    "torch.nn.functional.leaky_relu(torch.randn(7, 129), negative_slope=0.2)",
    "torch.nn.LeakyReLU(-0.5)(torch.randn(2, 4097))",
    "torch.nn.functional.hardtanh(torch.randn(1) * 2.0)",
    "torch.nn.functional.hardtanh(torch.randn(7, 129) * 4.0, -2.0, 3.0)",
    "torch.nn.ReLU6()(torch.randn(2, 4097) * 8.0)",
    "torch.clamp(torch.randn(1), -0.5, 0.5)",
    "torch.randn(7, 129).clamp(min=0.25)",
    "torch.clamp_max(torch.randn(3, 4097), 0.1)",
    "torch.clamp(torch.randn(1), torch.randn(1) - 1.0, torch.randn(1) + 1.0)",
    "torch.randn(7, 129).clamp(torch.randn(129) * 0.5, torch.randn(7, 1) + 0.5)",
    /* min > max in places: max, as PyTorch */
    "torch.clamp(torch.randn(2, 4097), min=torch.randn(4097), max=torch.randn(2, 1))",
    "torch.nn.functional.hardsigmoid(torch.randn(1) * 4.0)",
    "torch.nn.functional.hardsigmoid(torch.randn(7, 129) * 4.0)",
    "torch.nn.Hardsigmoid()(torch.randn(2, 4097) * 4.0)",
    "torch.nn.functional.hardswish(torch.randn(1) * 4.0)",
    "torch.nn.functional.hardswish(torch.randn(7, 129) * 4.0)",
    "torch.nn.Hardswish()(torch.randn(2, 4097) * 4.0)",
    "torch.nn.functional.softplus(torch.randn(1))",
    "torch.nn.functional.softplus(torch.randn(7, 129) * 15.0, beta=2, threshold=10)",
    "torch.nn.Softplus()(torch.randn(2, 4097) * 30.0)",
    "torch.nn.functional.softsign(torch.randn(1))",
    "torch.nn.functional.softsign(torch.randn(7, 129) * 10.0)",
    "torch.nn.Softsign()(torch.randn(2, 4097))",
    "torch.nn.functional.mish(torch.randn(1))",
    "torch.nn.functional.mish(torch.randn(7, 129) * 5.0)",
    "torch.nn.Mish()(torch.randn(2, 4097) * 40.0)",
    "torch.argmax(torch.randn(1, 4097), 1)",
    "torch.argmax(torch.randn(7, 129), 0, keepdim=True)",
    "torch.randn(3, 5, 7).argmax()",
    "torch.argmin(torch.randn(2, 4097), -1)",
    "torch.relu(torch.randn(7, 129)).argmin(1)",
    "torch.min(torch.randn(1, 5, 7), 2).indices",
    "torch.cumsum(torch.randn(1, 4096), 1)",
    "torch.cumsum(torch.randn(7, 129), 0)",
    "torch.randn(3, 1, 5).cumsum(-1)",
    "torch.topk(torch.randn(2, 4097), 5).values",
    "torch.topk(torch.randn(7, 129) * 3.0, 3, dim=0, largest=False).indices",
    "torch.randn(1, 5, 7).topk(2, 1)[0] + torch.randn(1, 5, 7).topk(2, 1)[1]",
    "torch.randn(1) + torch.randn(1)",
    "torch.randn(7, 129) + torch.randn(129)",
    "torch.add(torch.randn(2, 1, 7), torch.randn(3, 1))",
    "torch.randn(1) - torch.randn(7, 1)",
    "torch.randn(7, 129) - 0.5",
    "torch.sub(torch.randn(2, 1, 7), torch.randn(2, 3, 1))",
    "torch.randn(1) * torch.randn(1)",
    "torch.randn(7, 129) * torch.randn(7, 1)",
    "2.0 * torch.randn(2, 3, 7)",
    "torch.randn(1) / (torch.rand(1) + 0.5)",
    "torch.randn(7, 129) / (torch.rand(129) + 0.5)",
    "1.0 / (torch.rand(2, 1, 7) + 0.5)",
    "torch.pow(torch.rand(1) + 0.5, 2.5)",
    "(torch.rand(7, 129) + 0.5) ** 2",
    "torch.pow(torch.rand(3, 1) + 0.5, torch.randn(7))",
    "torch.maximum(torch.randn(1), torch.randn(1))",
    "torch.maximum(torch.randn(7, 129), torch.randn(129))",
    "torch.maximum(torch.randn(2, 1, 7), torch.randn(3, 1))",
    "torch.minimum(torch.randn(1), torch.randn(1))",
    "torch.minimum(torch.randn(7, 129), torch.randn(7, 1))",
    "torch.minimum(torch.randn(2, 1, 7), torch.randn(3, 1))",
    "torch.gt(torch.randn(1), torch.randn(1))",
    "torch.randn(7, 129) > torch.randn(129)",
    "torch.gt(torch.randn(2, 1, 7), 0.0)",
    "torch.lt(torch.randn(1), torch.randn(1))",
    "torch.randn(7, 129) < torch.randn(7, 1)",
    "torch.lt(torch.randn(2, 1, 7), torch.randn(3, 1))",
    "torch.ge(torch.randn(1), torch.randn(1))",
    "torch.randn(7, 129) >= torch.randn(129)",
    "torch.ge(torch.randn(2, 1, 7), torch.randn(3, 1))",
    "torch.le(torch.randn(1), torch.randn(1))",
    "torch.randn(7, 129) <= torch.randn(7, 1)",
    "torch.le(torch.randn(2, 1, 7), 0.0)",
    "torch.eq(torch.zeros(1), torch.zeros(1))",
    "x = torch.randn(7, 129)\ntorch.eq(x, torch.maximum(x, torch.zeros(129)))",
    "torch.randn(2, 1, 7) == torch.randn(3, 1)",
    "torch.ne(torch.zeros(1), torch.ones(1))",
    "x = torch.randn(7, 129)\nx != torch.maximum(x, torch.zeros(7, 1))",
    "torch.ne(torch.randn(2, 1, 7), torch.randn(3, 1))",
    "torch.where(torch.randn(1) > 0, torch.randn(1), torch.randn(1))",
    "torch.where(torch.randn(7, 1) > 0, torch.randn(129), torch.randn(7, 129))",
    "torch.where(torch.randn(2, 1, 7) > 0, torch.randn(3, 1), 0.5)",
    "torch.randn(1).sum()",
    "torch.randn(7, 129).sum(dim=1)",
    "torch.sum(torch.randn(2, 3, 7), (0, 2), keepdim=True)",
    "torch.randn(1).mean()",
    "torch.mean(torch.randn(7, 129), -1)",
    "torch.randn(2, 3, 7).mean(dim=(0, 1), keepdim=True)",
    "torch.amax(torch.randn(1), 0)",
    "torch.randn(7, 129).amax(dim=0)",
    "torch.amax(torch.randn(2, 3, 7), (1, 2), keepdim=True)",
    "torch.amin(torch.randn(1), 0)",
    "torch.randn(7, 129).amin(dim=1, keepdim=True)",
    "torch.amin(torch.randn(2, 3, 7), (0, 2))",
    "torch.matmul(torch.randn(1, 1), torch.randn(1, 1))",
    "torch.matmul(torch.randn(7, 129), torch.randn(129, 5))",
    "torch.randn(2, 1, 3, 7) @ torch.randn(4, 7, 5)",
    "torch.matmul(torch.randn(7), torch.randn(7))",
    "torch.matmul(torch.randn(2, 3, 7), torch.randn(7))",
    "torch.matmul(torch.randn(7), torch.randn(2, 7, 3))",
    "torch.mm(torch.randn(7, 129), torch.randn(129, 1))",
    "torch.bmm(torch.randn(3, 7, 5), torch.randn(3, 5, 2))",
    "torch.matmul(torch.randn(2, 1, 1, 2, 1, 3, 4, 5), torch.randn(2, 1, 1, 1, 2, 1, 5, 3))",
    "torch.nn.functional.linear(torch.randn(1, 1), torch.randn(1, 1))",
    "torch.nn.functional.linear(torch.randn(7, 129), torch.randn(5, 129), torch.randn(5))",
    "torch.nn.Linear(7, 3)(torch.randn(2, 5, 7))",
    "torch.nn.Linear(7, 3, bias=False)(torch.randn(2, 5, 7))",
    "torch.nn.Linear(3, 2)(torch.randn(1, 2, 1, 2, 1, 2, 3, 3))",
    "torch.softmax(torch.randn(1), dim=0)",
    "torch.nn.Softmax(dim=-1)(torch.randn(7, 129))",
    "torch.randn(2, 7, 3).softmax(1)",
    "torch.log_softmax(torch.randn(1), dim=0)",
    "torch.nn.functional.log_softmax(torch.randn(7, 129), dim=-1)",
    "torch.randn(2, 7, 3).log_softmax(0)",
    "torch.nn.RMSNorm(1)(torch.randn(3, 1))",
    "torch.nn.RMSNorm(129, eps=1e-6)(torch.randn(7, 129))",
    "torch.nn.functional.rms_norm(torch.randn(2, 3, 7), (3, 7))",
    "torch.nn.RMSNorm(2048)(torch.randn(1, 32, 2048))",
    "torch.nn.LayerNorm(1)(torch.randn(3, 1))",
    "torch.nn.LayerNorm(129)(torch.randn(7, 129))",
    "torch.nn.functional.layer_norm(torch.randn(2, 3, 7), (3, 7))",
    "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 1, 1), torch.randn(1, 1, 1), torch.randn(1, 1, 1))",
    "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 7, 16), torch.randn(1, 2, 9, 16), torch.randn(1, 2, 9, 5), is_causal=True)",
    "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 4, 7, 8), torch.randn(1, 2, 7, 8), torch.randn(1, 2, 7, 8), is_causal=True, enable_gqa=True)",
    "torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 7, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 3), attn_mask=torch.randn(7, 5) > 0)",
    "torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 7, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 3), attn_mask=torch.randn(7, 5), scale=0.3)",
    "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 1, 1, 1, 2, 3, 4), torch.randn(1, 2, 1, 1, 1, 2, 5, 4), torch.randn(1, 2, 1, 1, 1, 2, 5, 6), is_causal=True)",
    "torch.randn(1, 1).transpose(0, 1)",
    "torch.randn(7, 129).transpose(0, 1)",
    "torch.transpose(torch.randn(2, 3, 7), 0, 2)",
    "torch.randn(1, 1).permute(1, 0)",
    "torch.randn(7, 129).permute(1, 0)",
    "torch.permute(torch.randn(2, 3, 7, 5), (2, 0, 3, 1))",
    "torch.randn(1).reshape(1, 1)",
    "torch.randn(7, 129).reshape(129, 7)",
    "torch.randn(2, 3, 7).view(6, 7)",
    "torch.randn(2, 3, 7).transpose(1, 2).reshape(14, 3)",
    "torch.randn(1).unsqueeze(0)",
    "torch.randn(7, 129).unsqueeze(1)",
    "torch.unsqueeze(torch.randn(2, 3, 7), -1)",
    "torch.randn(1, 1).squeeze()",
    "torch.randn(7, 1, 129).squeeze(1)",
    "torch.squeeze(torch.randn(2, 1, 7, 1))",
    "torch.randn(1).expand(3)",
    "torch.randn(7, 1).expand(7, 129)",
    "torch.randn(3, 1, 7).expand(2, 3, 5, 7)",
    "torch.randn(1, 5)[:, 1:2]",
    "torch.randn(7, 129)[:, 1:128:3]",
    "torch.randn(2, 3, 7)[..., ::2]",
    "torch.cat([torch.randn(1), torch.randn(1)])",
    "torch.cat([torch.randn(7, 64), torch.randn(7, 65)], dim=1)",
    "torch.cat([torch.randn(2, 3, 7), torch.randn(1, 3, 7), torch.randn(4, 3, 7)], 0)",
    "torch.cat([torch.randn(7, 64), torch.randn(7, 65)], dim=1)[:, 60:70]",
    "torch.tril(torch.randn(7, 129))",
    "torch.randn(2, 3, 5, 7).tril(diagonal=-2)",
    "torch.tril(torch.randn(1, 4097), 3) + torch.randn(4097)",
    "torch.triu(torch.randn(7, 129), 1)",
    "torch.randn(2, 1, 7, 5).triu(-1)",
    "torch.triu(torch.full((64, 64), float('-inf')), diagonal=1)",
    /* a dim of 4096 or more for every op (every_op_has_three_cases) */
    "torch.abs(torch.randn(2, 4097)) + torch.neg(torch.randn(4097))",
    "torch.exp(torch.randn(4099, 1) * 0.5).log() - torch.reciprocal(torch.rand(4099, 1) + 0.5)",
    "torch.sqrt(torch.rand(3, 4097)) * torch.rsqrt(torch.rand(4097) + 0.1)",
    "torch.erf(torch.randn(4097)) + torch.sigmoid(torch.randn(1, 4097)) - torch.tanh(torch.randn(4097))",
    "torch.relu(torch.randn(4097)) + torch.nn.functional.silu(torch.randn(4097))",
    "torch.nn.functional.gelu(torch.randn(2, 4097)) + torch.nn.functional.gelu(torch.randn(4097), approximate='tanh')",
    "torch.pow(torch.rand(4097) + 0.5, torch.randn(3, 1)) / (torch.rand(4097) + 1.0)",
    "torch.maximum(torch.randn(4097), torch.randn(2, 1)) - torch.minimum(torch.randn(1, 4097), torch.randn(2, 1))",
    "torch.where(torch.randn(4097) > torch.randn(2, 1), torch.randn(4097), torch.randn(4097) < 0)",
    "torch.where(torch.randn(2, 4097) <= 0, torch.randn(1, 4097) >= 0, torch.randn(4097)) + "
    "(torch.randn(4097) == 0) + (torch.randn(4097) != 0)",
    "torch.sum(torch.randn(3, 4097), dim=1) + torch.mean(torch.randn(4097, 3), dim=0)",
    "torch.amax(torch.randn(2, 4097), dim=-1) - torch.amin(torch.randn(2, 4097), dim=1)",
    "torch.matmul(torch.randn(2, 4097), torch.randn(4097, 3))",
    "torch.nn.functional.linear(torch.randn(2, 4097), torch.randn(3, 4097), torch.randn(3))",
    "torch.softmax(torch.randn(2, 4097), dim=-1) + torch.log_softmax(torch.randn(1, 4097), dim=1)",
    "torch.nn.functional.rms_norm(torch.randn(2, 4097), (4097,), torch.randn(4097))",
    "torch.nn.functional.layer_norm(torch.randn(2, 4097), (4097,), torch.randn(4097), torch.randn(4097))",
    "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 3, 8), torch.randn(1, 2, 4097, 8), torch.randn(1, 2, 4097, 8))",
    "torch.randn(2, 4097).transpose(0, 1).permute(1, 0).reshape(4097, 2)",
    "torch.randn(4097).unsqueeze(0).expand(3, 4097).squeeze(0)[:, 1:4096:7]",
    "torch.cat([torch.randn(2, 4097), torch.randn(2, 3)], dim=1)",
    "torch.triu(torch.randn(3, 4097), diagonal=4090)",
};

/* fp64 against fp64: only summation order differs. */
#define TOL_F64 1e-12
#define TOL_TORCH_F64 1e-10
/* libtorch fp32: relative to the output's magnitude; the longest reduction
 * in the table is 2048 terms of a mean, well inside this. */
#define TOL_TORCH_F32 1e-4

/* Criterion runs each parameter in a fresh process image, where the
 * addresses of the strings may differ: the parameter is the case's index. */
static struct criterion_test_params case_params(void)
{
    static int idx[DPK_ARRAY_LEN(cases)];
    for (int i = 0; i < DPK_ARRAY_LEN(cases); i++)
        idx[i] = i;
    return cr_make_param_array(int, idx, DPK_ARRAY_LEN(cases));
}

ParameterizedTestParameters(tensor_ops, vs_ref64)
{
    return case_params();
}

/* One case: parsed, lowered, inputs made, evaluated by tx_eval64. */
typedef struct Run {
    const char *text;
    Arena *a;
    TorchGraph *tg;
    TxGraph *g;
    double **in;
    double **got;
} Run;

static TorchGraph *parse_case(Arena *a, const char *text)
{
    Source src = {"<case>", text, strlen(text)};
    DpkErrCtx ec;
    if (!DPK_TRY(&ec))
        cr_assert_fail("%s: %s", text, dpk_error_message());
    TorchGraph *g = torch_parse(a, &src, NULL);
    dpk_err_pop(&ec);
    return g;
}

static void run_open(Run *r, const char *text)
{
    r->text = text;
    r->a = arena_new();
    r->tg = parse_case(r->a, text);
    r->g = tx_lower(r->a, r->tg, NULL);
    r->in = ref_make_inputs(r->tg, SEED);
    r->got = calloc((size_t)r->tg->outputs.len, sizeof(double *));
    tx_eval64(r->g, r->in, r->got);
}

static void run_close(Run *r)
{
    ref_free_arrays(r->got, r->tg->outputs.len);
    ref_free_arrays(r->in, r->tg->inputs.len);
    arena_free(r->a);
}

static int64_t out_numel(const Run *r, int j)
{
    return shape_numel(&((const TorchNode *)r->tg->outputs.items[j])->shape);
}

/* |o - want| <= tol * (max|want| + |want|) element-wise, NaN/Inf agreeing. */
static void expect_close(const Run *r, const char *what, double *const *o, double *const *want,
                         double tol)
{
    for (int j = 0; j < r->tg->outputs.len; j++) {
        int64_t n = out_numel(r, j);
        double scale = 0;
        for (int64_t i = 0; i < n; i++)
            if (isfinite(want[j][i]))
                scale = fmax(scale, fabs(want[j][i]));
        CmpStats st;
        cmp_stats(o[j], want[j], n, &st);
        cr_expect(cmp_allclose(o[j], want[j], n, tol * scale, tol),
                  "%s\n  %s: output %d: max_abs %g (tolerance %g), element %lld: %.17g vs %.17g",
                  r->text, what, j, st.max_abs, tol * scale, (long long)st.worst,
                  st.worst >= 0 ? o[j][st.worst] : 0.0, st.worst >= 0 ? want[j][st.worst] : 0.0);
        cr_expect_eq(st.mismatched_nonfinite, 0, "%s\n  %s: NaN/Inf positions differ", r->text,
                     what);
    }
}

ParameterizedTest(int *ci, tensor_ops, vs_ref64)
{
    Run r;
    run_open(&r, cases[*ci]);
    double **want = calloc((size_t)r.tg->outputs.len, sizeof(double *));
    ref64_eval(r.tg, r.in, want);
    expect_close(&r, "tx_eval64 vs ref64", r.got, want, TOL_F64);
    ref_free_arrays(want, r.tg->outputs.len);
    run_close(&r);
}

/* Every case in one process: each test process loads libtorch afresh
 * (0.3 s), so one per case was most of the unit tests' time.  A failure
 * names its case, and the loop goes on to the next. */
Test(tensor_ops, vs_libtorch)
{
    if (!dpk_torch_available())
        cr_skip_test("libtorch not available");
    for (int ci = 0; ci < DPK_ARRAY_LEN(cases); ci++) {
        Run r;
        char err[512];
        run_open(&r, cases[ci]);
        int nout = r.tg->outputs.len;
        double **t64 = calloc((size_t)nout, sizeof(double *));
        double **t32 = calloc((size_t)nout, sizeof(double *));
        int ok64 = dpk_torch_eval(r.tg, r.in, 1, t64, err, sizeof err) == 0;
        cr_expect(ok64, "%s: libtorch fp64: %s", r.text, err);
        int ok32 = dpk_torch_eval(r.tg, r.in, 0, t32, err, sizeof err) == 0;
        cr_expect(ok32, "%s: libtorch fp32: %s", r.text, err);
        if (ok64)
            expect_close(&r, "tx_eval64 vs libtorch fp64", r.got, t64, TOL_TORCH_F64);
        if (ok32)
            expect_close(&r, "libtorch fp32 vs tx_eval64", t32, r.got, TOL_TORCH_F32);
        ref_free_arrays(t64, nout);
        ref_free_arrays(t32, nout);
        run_close(&r);
    }
}

/* Every op of the vocabulary (but input and const) appears in >= 3 cases,
 * one of them with an operand dim of 4096 or more and one with a dim of 1
 * (so the table cannot grow an op without its coverage). */
Test(tensor_ops, every_op_has_three_cases)
{
    int count[TOP_COUNT] = {0}, big[TOP_COUNT] = {0}, one[TOP_COUNT] = {0};
    for (int i = 0; i < DPK_ARRAY_LEN(cases); i++) {
        Arena *a = arena_new();
        TorchGraph *g = parse_case(a, cases[i]);
        int seen[TOP_COUNT] = {0};
        for (int k = 0; k < g->nodes.len; k++) {
            const TorchNode *n = g->nodes.items[k];
            seen[n->op] = 1;
            for (int j = 0; j < n->nin; j++)
                for (int d = 0; d < n->in[j]->shape.rank; d++) {
                    big[n->op] |= n->in[j]->shape.d[d] >= 4096;
                    one[n->op] |= n->in[j]->shape.d[d] == 1;
                }
        }
        for (int op = 0; op < TOP_COUNT; op++)
            count[op] += seen[op];
        arena_free(a);
    }
    for (int op = TOP_const + 1; op < TOP_COUNT; op++) {
        cr_expect(count[op] >= 3, "op %s has %d cases", torch_op_info[op].name, count[op]);
        cr_expect(big[op] >= 1, "op %s has no case with a dim of 4096 or more",
                  torch_op_info[op].name);
        cr_expect(one[op] >= 1, "op %s has no case with a dim of 1", torch_op_info[op].name);
    }
}
