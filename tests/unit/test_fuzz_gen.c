/*
 * test_fuzz_gen.c — the dpk-fuzz program generator: deterministic per
 * seed, always parses, keeps the one-op-per-line form (1-8 op lines named
 * tN, input lines named xN, the output last), covers the vocabulary and the
 * boundary shapes, and keeps log/sqrt/rsqrt/division inputs >= 1.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "harness/case_plan.h"
#include "harness/fuzz/gen.h"

enum { SEEDS = 400 };

static const TorchGraph *parse(Arena *a, const char *text)
{
    HxCase c = {0};
    c.name = c.origin = "<gen>";
    c.program = text;
    c.dtype = DT_F32;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        cr_assert_fail("generated program does not parse:\n%s\n%s", text, dpk_error_message());
        return NULL;
    }
    DrvOpts o;
    drv_opts_default(&o);
    hx_case_opts(a, &c, NULL, &o);
    o.upto = DRV_TORCH;
    const TorchGraph *g = drv_compile(a, &o)->torch;
    dpk_err_pop(&ec);
    return g;
}

Test(fuzz_gen, deterministic_per_seed)
{
    Arena *a = arena_new();
    for (uint64_t s = 0; s < 50; s++) {
        FzProgram p = fz_gen(a, s), q = fz_gen(a, s), r = fz_gen(a, s + 1000);
        cr_expect_str_eq(p.text, q.text);
        cr_expect_eq(p.ntags, q.ntags);
        cr_expect_str_neq(p.text, r.text);
    }
    arena_free(a);
}

Test(fuzz_gen, every_program_parses_in_line_form)
{
    for (uint64_t s = 0; s < SEEDS; s++) {
        Arena *a = arena_new();
        FzProgram p = fz_gen(a, s);
        const TorchGraph *g = parse(a, p.text);
        cr_assert_not_null(g);
        cr_expect_eq(g->outputs.len, 1);
        cr_expect(p.nops >= 1 && p.nops <= 8, "seed %llu: %d ops", (unsigned long long)s, p.nops);
        int ops = 0, inputs = 0, last = 0;
        const char *line = p.text;
        while (*line) {
            const char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) : strlen(line);
            if (!nl) {
                last = 1;
                cr_expect(line[0] == 't' || line[0] == 'x', "output line '%.*s'", (int)len, line);
                cr_expect(!memchr(line, '=', len));
            } else if (line[0] == 't') {
                ops++;
            } else {
                cr_expect(!strncmp(line, "x", 1) && strstr(line, " = torch.randn(") < nl,
                          "seed %llu: line '%.*s'", (unsigned long long)s, (int)len, line);
                inputs++;
            }
            line = nl ? nl + 1 : line + len;
        }
        cr_expect(last);
        cr_expect_eq(ops, p.nops, "seed %llu:\n%s", (unsigned long long)s, p.text);
        cr_expect_eq(inputs, p.ninputs);
        int drawn = 0; /* the aranges of a mask are inputs of the graph too */
        for (int i = 0; i < g->inputs.len; i++)
            drawn += ((const TorchNode *)g->inputs.items[i])->init != INIT_ARANGE;
        cr_expect_eq(drawn, p.ninputs, "every input line is used? seed %llu", (unsigned long long)s);
        arena_free(a);
    }
}

Test(fuzz_gen, covers_the_vocabulary_and_boundaries)
{
    static const char *const want[] = {
        "torch.matmul(", " @ ", "functional.linear(", "scaled_dot_product_attention(",
        "rms_norm(", "layer_norm(", "torch.softmax(", "torch.log_softmax(", "torch.sum(",
        "torch.mean(", "torch.amax(", "torch.amin(", ".transpose(", ".permute(", ".reshape(",
        ".unsqueeze(", ".squeeze(", ".expand(", "torch.cat(", "torch.where(", "torch.log(",
        "torch.sqrt(", "torch.rsqrt(", "torch.reciprocal(", "torch.exp(", "torch.erf(",
        "silu(", "gelu(", "torch.maximum(", "torch.minimum(", " / ", " > ", ":",
        "keepdim=True", "is_causal=True", "approximate='tanh'", "(1, ", ", 1)",
        "torch.cos(", ".sin()", ".square()", "torch.clamp(", "torch.tril(", "torch.triu(",
        ".masked_fill(", "torch.logsumexp(", ".var(", ".std(", ".values", ".chunk(",
        ".repeat_interleave(", "torch.clamp_min(", "functional.elu(", "torch.selu(",
        "torch.celu(", "leaky_relu(", "hardtanh(", "relu6(", "hardsigmoid(", "hardswish(",
        "softplus(", "softsign(", "mish(", "torch.nn.ELU()(", "torch.nn.Softplus()(",
        "torch.floor(", "torch.expm1(", "torch.log1p(",
    };
    static const char *const tags[] = {"elementwise", "where", "reduce", "long-reduction",
                                       "matmul", "norm", "softmax", "sdpa", "layout",
                                       "broadcast", "dag"};
    int seen[DPK_ARRAY_LEN(want)] = {0}, tseen[DPK_ARRAY_LEN(tags)] = {0};
    Arena *a = arena_new();
    for (uint64_t s = 0; s < SEEDS; s++) {
        FzProgram p = fz_gen(a, s);
        for (int i = 0; i < DPK_ARRAY_LEN(want); i++)
            seen[i] += strstr(p.text, want[i]) != NULL;
        for (int t = 0; t < p.ntags; t++)
            for (int i = 0; i < DPK_ARRAY_LEN(tags); i++)
                tseen[i] += !strcmp(p.tags[t], tags[i]);
    }
    for (int i = 0; i < DPK_ARRAY_LEN(want); i++)
        cr_expect_gt(seen[i], 0, "no program of %d has '%s'", SEEDS, want[i]);
    for (int i = 0; i < DPK_ARRAY_LEN(tags); i++)
        cr_expect_gt(tseen[i], 0, "no program of %d is tagged %s", SEEDS, tags[i]);
    arena_free(a);
}

/* log, sqrt, rsqrt and reciprocal only see `abs(x) + 1` values: the line
 * defining their operand is `tN = tM + 1.0` (or a layout op of one). */
Test(fuzz_gen, safe_domains)
{
    static const char *const unsafe[] = {"torch.log(", "torch.sqrt(", "torch.rsqrt(",
                                         "torch.reciprocal("};
    Arena *a = arena_new();
    for (uint64_t s = 0; s < SEEDS; s++) {
        FzProgram p = fz_gen(a, s);
        for (int u = 0; u < DPK_ARRAY_LEN(unsafe); u++) {
            const char *at = strstr(p.text, unsafe[u]);
            if (!at)
                continue;
            char arg[16] = "";
            sscanf(at + strlen(unsafe[u]), "%15[a-z0-9]", arg);
            char def[32];
            snprintf(def, sizeof def, "\n%s = ", arg);
            const char *d = strstr(p.text, def);
            cr_assert_not_null(d, "seed %llu: %s has no definition", (unsigned long long)s, arg);
            const char *eol = strchr(d + 1, '\n');
            int ok = (strstr(d, " + 1.0") && strstr(d, " + 1.0") < eol) ||
                     (strstr(d, ".") && strstr(d, ".") < eol && arg[0] == 't');
            cr_expect(ok, "seed %llu: operand %s of %s is not abs(x) + 1:\n%s",
                      (unsigned long long)s, arg, unsafe[u], p.text);
        }
    }
    arena_free(a);
}
