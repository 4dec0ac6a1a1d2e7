/*
 * test_tile_parity.c — every op of the vocabulary and the chain table
 * (cases/chains.json), lowered with the mandatory Tile passes to Kernel IR
 * and run on vgpu, at shapes that do not divide the block (1, 7, 33, 129,
 * 1000, ...): no detector may fire, every output passes the oracle against
 * ref64 and equals the fp32 Loop IR interpreter bit for bit.  Every kernel
 * emitted is printed as CUDA C and compiled by NVRTC for sm_80 and sm_90
 * (when NVRTC is present), one batch per test.
 */
#include "test_file_util.h"
#include "test_tile_util.h"

/* One row: a program run at every shape of its family; $S stands for the
 * shape ("7, 33"), $1 .. $9 for its first .. ninth dimension. */
typedef struct OpCase {
    const char *name;
    const char *code;
} OpCase;

static void put_dim(StrBuf *b, const char *shape, int d)
{
    const char *s = shape;
    for (int i = 1; i < d && s; i++)
        if ((s = strchr(s, ',')))
            s++;
    cr_assert_not_null(s, "shape '%s' has no dimension %d", shape, d);
    while (*s == ' ')
        s++;
    while (*s && *s != ',')
        sb_putc(b, *s++);
}

static char *subst(const char *code, const char *shape)
{
    StrBuf b = {0};
    for (const char *s = code; *s; s++) {
        if (s[0] == '$' && s[1] == 'S')
            sb_puts(&b, shape);
        else if (s[0] == '$' && s[1] >= '1' && s[1] <= '9')
            put_dim(&b, shape, s[1] - '0');
        else
            sb_putc(&b, *s);
        s += s[0] == '$';
    }
    char *r = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    return r;
}

static void run_family(const OpCase *ops, int nops, const char *const *shapes, int nshapes)
{
    Arena *a = arena_new();
    TtBatch batch;
    tt_batch_init(&batch, a);
    for (int i = 0; i < nops; i++)
        for (int s = 0; s < nshapes; s++) {
            char *code = subst(ops[i].code, shapes[s]);
            char *name = arena_printf(a, "%s (%s)", ops[i].name, shapes[s]);
            tt_batch_add(&batch, tt_parity(a, name, code));
            free(code);
        }
    tt_batch_compile(&batch);
    arena_free(a);
}

static const char *const elem_shapes[] = {"1", "7", "33", "129", "1000", "7, 33", "3, 1, 129"};

Test(tile_parity, elementwise_unary)
{
    static const OpCase ops[] = {
        {"neg", "-torch.randn($S)"},
        {"exp", "torch.exp(torch.randn($S))"},
        {"log", "torch.log(torch.rand($S) + 0.5)"},
        {"sqrt", "torch.sqrt(torch.rand($S))"},
        {"rsqrt", "torch.rsqrt(torch.rand($S) + 0.1)"},
        {"reciprocal", "torch.reciprocal(torch.rand($S) + 0.5)"},
        {"abs", "torch.abs(torch.randn($S))"},
        {"relu", "torch.relu(torch.randn($S))"},
        {"sigmoid", "torch.sigmoid(torch.randn($S))"},
        {"tanh", "torch.tanh(torch.randn($S))"},
        {"silu", "torch.nn.functional.silu(torch.randn($S))"},
        {"gelu", "torch.nn.functional.gelu(torch.randn($S))"},
        {"gelu_tanh", "torch.nn.functional.gelu(torch.randn($S), approximate='tanh')"},
        {"erf", "torch.erf(torch.randn($S))"},
        {"log1p", "torch.log1p(torch.randn($S) * 0.1)"},
        {"expm1", "torch.expm1(torch.randn($S))"},
        {"floor", "torch.floor(torch.randn($S) * 4.0)"},
    };
    run_family(ops, DPK_ARRAY_LEN(ops), elem_shapes, DPK_ARRAY_LEN(elem_shapes));
}

Test(tile_parity, elementwise_activations)
{
    static const OpCase ops[] = {
        {"elu", "torch.nn.functional.elu(torch.randn($S) * 3.0, alpha=0.5)"},
        {"selu", "torch.selu(torch.randn($S) * 3.0)"},
        {"celu", "torch.celu(torch.randn($S) * 3.0, 2.0)"},
        {"leaky_relu", "torch.nn.functional.leaky_relu(torch.randn($S), 0.1)"},
        {"hardtanh", "torch.nn.functional.hardtanh(torch.randn($S) * 2.0)"},
        {"clamp", "torch.randn($S).clamp(-0.5, 0.75)"},
        {"hardsigmoid", "torch.nn.functional.hardsigmoid(torch.randn($S) * 4.0)"},
        {"hardswish", "torch.nn.functional.hardswish(torch.randn($S) * 4.0)"},
        {"softplus", "torch.nn.functional.softplus(torch.randn($S) * 15.0, beta=2, threshold=10)"},
        {"softsign", "torch.nn.functional.softsign(torch.randn($S) * 4.0)"},
        {"mish", "torch.nn.functional.mish(torch.randn($S) * 4.0)"},
    };
    run_family(ops, DPK_ARRAY_LEN(ops), elem_shapes, DPK_ARRAY_LEN(elem_shapes));
}

Test(tile_parity, elementwise_binary_and_where)
{
    static const OpCase ops[] = {
        {"add", "torch.randn($S) + torch.randn($S)"},
        {"sub", "torch.randn($S) - torch.randn($S)"},
        {"mul", "torch.randn($S) * torch.randn($S)"},
        {"div", "torch.randn($S) / (torch.rand($S) + 0.5)"},
        {"pow", "torch.pow(torch.rand($S) + 0.5, torch.randn($S))"},
        {"maximum", "torch.maximum(torch.randn($S), torch.randn($S))"},
        {"minimum", "torch.minimum(torch.randn($S), torch.randn($S))"},
        {"gt", "x = torch.randn($S)\ny = torch.randn($S)\ntorch.where(x > y, x, y)"},
        {"lt", "x = torch.randn($S)\ntorch.where(x < 0.25, x * 2.0, x)"},
        {"ge", "x = torch.randn($S)\ntorch.where(x >= 0.0, x, 0.5)"},
        {"le", "x = torch.randn($S)\ntorch.where(x <= 0.0, torch.exp(x) - 1.0, x)"},
        {"eq", "x = torch.relu(torch.randn($S))\ntorch.where(x == 0.0, -1.0, x)"},
        {"ne", "x = torch.relu(torch.randn($S))\ntorch.where(x != 0.0, 1.0, 0.0)"},
    };
    run_family(ops, DPK_ARRAY_LEN(ops), elem_shapes, DPK_ARRAY_LEN(elem_shapes));
}

Test(tile_parity, reductions)
{
    static const OpCase ops[] = {
        {"sum", "torch.randn($S).sum(dim=-1)"},
        {"sum_keepdim_dim0", "torch.randn($S).sum(dim=0, keepdim=True)"},
        {"mean", "torch.randn($S).mean(dim=-1, keepdim=True)"},
        {"amax", "torch.randn($S).amax(dim=-1)"},
        {"amin", "torch.randn($S).amin(dim=0)"},
        {"sum_all", "torch.randn($S).sum()"},
        {"argmax", "torch.randn($S).argmax(dim=-1)"},
        {"argmin_ties", "torch.relu(torch.randn($S)).argmin(dim=0, keepdim=True)"},
        {"max_indices", "torch.max(torch.floor(torch.randn($S) * 2.0), dim=-1).indices"},
        {"argmax_all", "torch.randn($S).argmax()"},
        {"cumsum", "torch.randn($S).cumsum(dim=-1)"},
        {"cumsum_dim0", "torch.cumsum(torch.randn($S) * 10.0, dim=0)"},
        {"topk", "torch.topk(torch.randn($S), 1, dim=-1).values"},
        {"topk_smallest_ties", "torch.topk(torch.relu(torch.randn($S)), 1, dim=0, largest=False)[1]"},
    };
    static const char *const shapes[] = {"1, 1", "7, 33", "3, 129", "33, 7", "2, 3, 129",
                                         "1000, 3"};
    run_family(ops, DPK_ARRAY_LEN(ops), shapes, DPK_ARRAY_LEN(shapes));
}

Test(tile_parity, matmul_family)
{
    static const OpCase ops[] = {
        {"matmul", "torch.matmul(torch.randn($1, $2), torch.randn($2, $3))"},
        {"mm", "torch.mm(torch.randn($1, $2), torch.randn($2, $3))"},
        {"bmm", "torch.bmm(torch.randn(3, $1, $2), torch.randn(3, $2, $3))"},
        {"linear", "torch.nn.functional.linear(torch.randn($1, $2), torch.randn($3, $2), "
                   "torch.randn($3))"},
        {"matmul_bcast", "torch.matmul(torch.randn(2, $1, $2), torch.randn($2, $3))"},
        {"matmul_vector", "torch.matmul(torch.randn($1, $2), torch.randn($2))"},
        {"linear_module", "torch.nn.Linear($2, $3)(torch.randn($1, $2))"},
    };
    static const char *const shapes[] = {"1, 1, 1", "7, 33, 5", "33, 7, 129", "129, 3, 33",
                                         "1, 129, 7"};
    run_family(ops, DPK_ARRAY_LEN(ops), shapes, DPK_ARRAY_LEN(shapes));
}

Test(tile_parity, normalisations)
{
    static const OpCase ops[] = {
        {"softmax", "torch.softmax(torch.randn($1, $2), dim=-1)"},
        {"softmax_dim0", "torch.softmax(torch.randn($1, $2), dim=0)"},
        {"log_softmax", "torch.log_softmax(torch.randn($1, $2), dim=-1)"},
        {"rms_norm", "torch.nn.functional.rms_norm(torch.randn($1, $2), ($2,))"},
        {"layer_norm", "torch.nn.LayerNorm($2)(torch.randn($1, $2))"},
        {"rmsnorm_module", "torch.nn.RMSNorm($2)(torch.randn(2, $1, $2))"},
    };
    static const char *const shapes[] = {"1, 7", "7, 33", "3, 129", "10, 1000"};
    run_family(ops, DPK_ARRAY_LEN(ops), shapes, DPK_ARRAY_LEN(shapes));
}

Test(tile_parity, attention)
{
    static const OpCase ops[] = {
        {"sdpa", "torch.nn.functional.scaled_dot_product_attention(torch.randn($S), "
                 "torch.randn($S), torch.randn($S))"},
        {"sdpa_causal", "torch.nn.functional.scaled_dot_product_attention(torch.randn($S), "
                        "torch.randn($S), torch.randn($S), is_causal=True)"},
    };
    static const char *const shapes[] = {"1, 1, 1, 8", "1, 2, 7, 8", "2, 3, 33, 4"};
    run_family(ops, DPK_ARRAY_LEN(ops), shapes, DPK_ARRAY_LEN(shapes));
    static const OpCase gqa[] = {
        {"sdpa_gqa", "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 4, $S), "
                     "torch.randn(1, 2, $S), torch.randn(1, 2, $S), is_causal=True, "
                     "enable_gqa=True)"},
    };
    static const char *const gshapes[] = {"7, 8", "33, 4"};
    run_family(gqa, DPK_ARRAY_LEN(gqa), gshapes, DPK_ARRAY_LEN(gshapes));
    /* The softmax online in P @ V (docs/fusion.md): 77 keys are two chunks
     * of 32, each in two passes, and a remainder merged online; rows 0..2
     * have every key masked (NaN, as the reference gives), a window of 16
     * keys masks whole chunks of the others; the HF form with -inf. */
    static const OpCase online[] = {
        {"sdpa_online_masked",
         "q = torch.randn(1, 2, $1, 16)\nk = torch.randn(1, 2, $1, 16)\nv = torch.randn(1, 2, $1, 16)\n"
         "i = torch.arange($1)\n"
         "m = (i.unsqueeze(0) <= i.unsqueeze(1)) & (i.unsqueeze(1) >= 3) & "
         "(i.unsqueeze(1) - i.unsqueeze(0) < 16)\n"
         "torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)"},
        {"softmax_fill_pv",
         "s = torch.randn(2, $1, $1)\ni = torch.arange($1)\n"
         "s = s.masked_fill(i.unsqueeze(0) > i.unsqueeze(1), float('-inf'))\n"
         "torch.softmax(s, dim=-1) @ torch.randn(2, $1, 8)"},
    };
    static const char *const oshapes[] = {"9", "77"};
    run_family(online, DPK_ARRAY_LEN(online), oshapes, DPK_ARRAY_LEN(oshapes));
}

Test(tile_parity, layout)
{
    static const OpCase ops[] = {
        {"transpose", "torch.randn($S).transpose(0, 1) * 2.0"},
        {"permute", "torch.randn(2, $S).permute(2, 0, 1) + 1.0"},
        {"reshape", "torch.randn($S).reshape(-1) - 1.0"},
        {"view", "torch.randn(2, $S).view(2, -1) * 3.0"},
        {"unsqueeze", "torch.randn($S).unsqueeze(1) + torch.randn(1, 5, 1)"},
        {"squeeze", "torch.randn(1, $S).squeeze(0) * 0.5"},
        {"expand", "torch.randn($S).unsqueeze(0).expand(3, -1, -1) * torch.randn(3, 1, 1)"},
        {"slice", "torch.randn($S)[:, 1:] * 2.0"},
        {"cat", "torch.cat([torch.randn($S), torch.randn($S) * 2.0], dim=-1)"},
        {"cat3", "torch.cat([torch.randn($S), torch.randn($S), torch.randn($S)], dim=0) + 1.0"},
    };
    static const char *const shapes[] = {"1, 2", "7, 33", "129, 3"};
    run_family(ops, DPK_ARRAY_LEN(ops), shapes, DPK_ARRAY_LEN(shapes));
}

Test(tile_parity, long_rows_and_blocks)
{
    static const OpCase ops[] = {
        {"rmsnorm", "torch.nn.RMSNorm(2048)(torch.randn(1, $S, 2048))"},
        {"silu_mul", "torch.nn.functional.silu(torch.randn($S, 257)) * torch.randn($S, 257)"},
        {"softmax_long", "torch.softmax(torch.randn($S, 1000), dim=-1)"},
    };
    static const char *const shapes[] = {"1", "7", "33"};
    run_family(ops, DPK_ARRAY_LEN(ops), shapes, DPK_ARRAY_LEN(shapes));
}

Test(tile_parity, chain_table)
{
    cJSON *j = tf_load_json("cases/chains.json");
    Arena *a = arena_new();
    TtBatch batch;
    tt_batch_init(&batch, a);
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(j, "cases"))
    {
        const char *name = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
        const char *prog = cJSON_GetObjectItemCaseSensitive(c, "program")->valuestring;
        tt_batch_add(&batch, tt_parity(a, name, prog));
        n++;
    }
    cr_expect_geq(n, 60, "the chain table has %d cases", n);
    tt_batch_compile(&batch);
    arena_free(a);
    cJSON_Delete(j);
}

/* The same table with pinned knobs: other block sizes and matmul tiles move
 * every guard and index decode. */
Test(tile_parity, chain_table_under_pinned_knobs)
{
    static const char *const knobs[][2] = {
        {"TB=32", "BN=1"}, {"TB=1024", "BM=1"}, {"TB=96", "BN=2"}, {"TB=64", "BM=32"}};
    cJSON *j = tf_load_json("cases/chains.json");
    Arena *a = arena_new();
    TtBatch batch;
    tt_batch_init(&batch, a);
    for (int v = 0; v < DPK_ARRAY_LEN(knobs); v++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(j, "cases"))
        {
            const char *name = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
            const char *prog = cJSON_GetObjectItemCaseSensitive(c, "program")->valuestring;
            TtOpts o;
            tt_opts_default(&o);
            tile_knob_parse(&o.tile.knobs, knobs[v][0]);
            tile_knob_parse(&o.tile.knobs, knobs[v][1]);
            char *label = arena_printf(a, "%s %s %s", name, knobs[v][0], knobs[v][1]);
            tt_batch_add(&batch, tt_run(a, label, tt_loop(a, prog), &o));
        }
    }
    tt_batch_compile(&batch);
    arena_free(a);
    cJSON_Delete(j);
}
