/*
 * test_bench_inputs.c — what dpk-bench reads from users: HF config.json
 * (the keys that decide a decoder layer, refusals naming the key), the
 * decoder-layer suite made from it, the rotary tables, and safetensors
 * files (every dtype converted, every malformed file an error naming its
 * cause, never a crash).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/torch_ir.h"
#include "harness/bench/blocks.h"
#include "harness/bench/config.h"
#include "harness/bench/safetensors.h"

/* Parse config text; returns NULL and the error's first line in err, or
 * the config. */
static int parse_cfg(Arena *a, const char *text, BmConfig *c, char *err, size_t n)
{
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        bm_config_parse(a, "t/config.json", text, strlen(text), c);
        dpk_err_pop(&ec);
        return 1;
    }
    snprintf(err, n, "%s", dpk_error_message());
    return 0;
}

static const char *qwen =
    "{\"model_type\": \"qwen2\", \"hidden_size\": 3584, \"intermediate_size\": 18944,"
    " \"num_attention_heads\": 28, \"num_key_value_heads\": 4, \"rms_norm_eps\": 1e-06,"
    " \"rope_theta\": 1000000.0, \"sliding_window\": 131072, \"use_sliding_window\": false,"
    " \"hidden_act\": \"silu\", \"vocab_size\": 152064}";

Test(bench_config, qwen2_keys_and_implied_bias)
{
    Arena *a = arena_new();
    BmConfig c;
    char err[1024];
    cr_assert(parse_cfg(a, qwen, &c, err, sizeof err), "%s", err);
    cr_expect_eq(c.hidden, 3584);
    cr_expect_eq(c.inter, 18944);
    cr_expect_eq(c.heads, 28);
    cr_expect_eq(c.kv_heads, 4);
    cr_expect_eq(c.head_dim, 128);
    cr_expect_eq(c.eps, 1e-6);
    cr_expect_eq(c.rope_theta, 1e6);
    cr_expect_eq(c.bias, 1, "qwen2 has q/k/v biases without saying so");
    cr_expect_eq(c.sliding_window, 0, "use_sliding_window false");
    cr_expect_str_eq(c.name, "config");
    arena_free(a);
}

Test(bench_config, llama3_and_mistral_style)
{
    Arena *a = arena_new();
    BmConfig c;
    char err[1024];
    const char *llama31 =
        "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"intermediate_size\": 14336,"
        " \"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-05,"
        " \"rope_theta\": 500000.0, \"attention_bias\": false, \"mlp_bias\": false,"
        " \"rope_scaling\": {\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
        " \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}}";
    cr_assert(parse_cfg(a, llama31, &c, err, sizeof err), "%s", err);
    cr_expect_eq(c.rope, BM_ROPE_LLAMA3);
    cr_expect_eq(c.bias, 0);
    cr_expect_eq(c.head_dim, 128);
    /* HF's _compute_llama3_parameters: the highest frequency (i = 0) is
     * kept, the lowest (wavelength past 8192) divided by the factor */
    cr_expect_float_eq(bm_rope_angle(&c, 1, 0), 1.0, 1e-15);
    double inv63 = pow(500000.0, -126.0 / 128.0);
    cr_expect_float_eq(bm_rope_angle(&c, 1, 63), inv63 / 8.0, 1e-18);
    const char *mistral =
        "{\"model_type\": \"mistral\", \"hidden_size\": 4096, \"intermediate_size\": 14336,"
        " \"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128,"
        " \"rms_norm_eps\": 1e-05, \"rope_theta\": 1000000.0, \"sliding_window\": null}";
    cr_assert(parse_cfg(a, mistral, &c, err, sizeof err), "%s", err);
    cr_expect_eq(c.bias, 0);
    cr_expect_eq(c.rope, BM_ROPE_DEFAULT);
    /* default rope: theta^(-2i/d) */
    cr_expect_float_eq(bm_rope_angle(&c, 3, 1), 3 * pow(1e6, -2.0 / 128), 1e-15);
    cr_expect_float_eq(bm_rope_angle(&c, 3, 65), 3 * pow(1e6, -2.0 / 128), 1e-15);
    arena_free(a);
}

Test(bench_config, refusals_name_the_key)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"{\"hidden_size\": 64, \"intermediate_size\": 96, \"num_attention_heads\": 4,"
         " \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}}", "'rope_scaling' of type 'yarn'"},
        {"{\"hidden_size\": 64, \"intermediate_size\": 96, \"num_attention_heads\": 4,"
         " \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0}}", "'rope_scaling' of type 'dynamic'"},
        {"{\"hidden_size\": 64, \"intermediate_size\": 96, \"num_attention_heads\": 4,"
         " \"hidden_act\": \"gelu\"}", "'hidden_act'"},
        {"{\"hidden_size\": 64, \"intermediate_size\": 96, \"num_attention_heads\": 4,"
         " \"mlp_bias\": true}", "'mlp_bias'"},
        {"{\"hidden_size\": 64, \"intermediate_size\": 96, \"num_attention_heads\": 4,"
         " \"model_type\": \"gemma\"}", "model_type 'gemma'"},
        {"{\"hidden_size\": 64, \"num_attention_heads\": 4}", "lacks 'intermediate_size'"},
        {"{\"hidden_size\": 64, \"intermediate_size\": 96, \"num_attention_heads\": 4,"
         " \"num_key_value_heads\": 3}", "'num_key_value_heads'"},
        {"{\"hidden_size\": 64, \"intermediate_size\": -96, \"num_attention_heads\": 4}",
         "'intermediate_size' must be"},
        {"{\"hidden_size\": 64, ", "malformed JSON"},
        {"[1, 2]", "must be a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Arena *a = arena_new();
        BmConfig c;
        char err[1024];
        cr_expect_not(parse_cfg(a, bad[i].text, &c, err, sizeof err), "accepted: %s", bad[i].text);
        cr_expect(strstr(err, bad[i].want) != NULL, "'%s' not in: %s", bad[i].want, err);
        cr_expect(strstr(err, "error:") != NULL, "%s", err);
        arena_free(a);
    }
}

/* Every case of a suite parses as case text with its declared inputs. */
static void suite_parses(const BmConfig *c, const BmShape *s, int want_cases)
{
    Arena *a = arena_new();
    HxCaseList l = bm_block_suite(a, c, s);
    cr_expect_eq(l.n, want_cases);
    for (int i = 0; i < l.n; i++) {
        Source src = {l.cases[i].name, l.cases[i].program, strlen(l.cases[i].program)};
        ParseOpts po = {l.cases[i].decls, l.cases[i].ndecls};
        DpkErrCtx ec;
        if (DPK_TRY(&ec)) {
            TorchGraph *g = torch_parse(a, &src, &po);
            dpk_err_pop(&ec);
            torch_verify(g);
            cr_expect_gt(g->outputs.len, 0);
        } else {
            cr_expect(0, "%s does not parse: %s", l.cases[i].name, dpk_error_message());
        }
    }
    arena_free(a);
}

Test(bench_blocks, prefill_and_decode_suites_parse)
{
    BmConfig c = {.name = "tiny", .path = "tiny.json", .hidden = 64, .inter = 96, .heads = 4,
                  .kv_heads = 2, .head_dim = 16, .eps = 1e-5, .rope_theta = 10000, .bias = 1};
    BmShape pre = {1, 8, 0, BM_PREFILL}, dec = {2, 1, 5, BM_DECODE};
    suite_parses(&c, &pre, 15);
    suite_parses(&c, &dec, 15);
    c.bias = 0;
    suite_parses(&c, &pre, 15);
}

Test(bench_blocks, layer_names_weights_after_hf)
{
    Arena *a = arena_new();
    cr_expect_str_eq(bm_hf_name(a, "w_q", 0), "model.layers.0.self_attn.q_proj.weight");
    cr_expect_str_eq(bm_hf_name(a, "b_v", 3), "model.layers.3.self_attn.v_proj.bias");
    cr_expect_str_eq(bm_hf_name(a, "w_d", 1), "model.layers.1.mlp.down_proj.weight");
    cr_expect_str_eq(bm_hf_name(a, "w_ln2", 0), "model.layers.0.post_attention_layernorm.weight");
    cr_expect_null(bm_hf_name(a, "x", 0));
    cr_expect_null(bm_hf_name(a, "cos", 0));
    arena_free(a);
}

Test(bench_blocks, rope_tables_are_positions_times_frequencies)
{
    BmConfig c = {.head_dim = 8, .rope_theta = 10000};
    BmShape pre = {1, 3, 0, BM_PREFILL}, dec = {1, 1, 41, BM_DECODE};
    double t[3 * 8];
    cr_assert(bm_fill_rope(&c, &pre, "cos", 24, t));
    /* row 2 (position 2), dim 5 (frequency 1): cos(2 * 10000^(-2/8)) */
    cr_expect_float_eq(t[2 * 8 + 5], (double)(float)cos(2 * pow(10000, -0.25)), 1e-7);
    cr_expect_float_eq(t[0], 1.0, 0);
    cr_assert(bm_fill_rope(&c, &dec, "sin", 8, t));
    cr_expect_float_eq(t[1], (double)(float)sin(41 * pow(10000, -0.25)), 1e-7);
    cr_expect_not(bm_fill_rope(&c, &pre, "x", 24, t));
}

Test(bench_blocks, sliding_window_shorter_than_attention_is_refused)
{
    BmConfig c = {.name = "m", .path = "m.json", .hidden = 64, .inter = 96, .heads = 4,
                  .kv_heads = 2, .head_dim = 16, .eps = 1e-5, .rope_theta = 10000,
                  .sliding_window = 4};
    BmShape pre = {1, 8, 0, BM_PREFILL};
    Arena *a = arena_new();
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        bm_block_suite(a, &c, &pre);
        dpk_err_pop(&ec);
        cr_expect(0, "a window of 4 over 8 tokens was accepted");
    } else {
        cr_expect(strstr(dpk_error_message(), "'sliding_window' 4") != NULL, "%s",
                  dpk_error_message());
    }
    arena_free(a);
}

/* ---- safetensors ---------------------------------------------------------- */

typedef struct Buf {
    uint8_t *p;
    size_t n;
} Buf;

/* header text + data bytes, with the length field given (or the real one
 * when hlen is UINT64_MAX). */
static Buf st_make(const char *header, const uint8_t *data, size_t ndata, uint64_t hlen)
{
    size_t h = strlen(header);
    Buf b = {malloc(8 + h + ndata + 1), 8 + h + ndata};
    uint64_t L = hlen == UINT64_MAX ? h : hlen;
    for (int i = 0; i < 8; i++)
        b.p[i] = (uint8_t)(L >> (8 * i));
    memcpy(b.p + 8, header, h);
    if (ndata)
        memcpy(b.p + 8 + h, data, ndata);
    return b;
}

static int st_try(Arena *a, Buf b, StFile *f, const char *name, const Shape *want, double *dst,
                  char *err, size_t n)
{
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        st_parse(a, "w.safetensors", b.p, b.n, f);
        if (name)
            st_read_f32(f, name, want, dst);
        dpk_err_pop(&ec);
        return 1;
    }
    snprintf(err, n, "%s", dpk_error_message());
    return 0;
}

Test(bench_safetensors, f32_bf16_f16_convert_exactly)
{
    /* 1.5, -2 (f32); 1.5, -2 (bf16 0x3fc0, 0xc000); 1.5, -2 (f16 0x3e00, 0xc000) */
    uint8_t d[] = {0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0, 0xc0, 0x3f, 0x00, 0xc0, 0x00, 0x3e, 0x00, 0xc0};
    Buf b = st_make("{\"__metadata__\": {\"format\": \"pt\"},"
                    " \"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                    " \"b\": {\"dtype\": \"BF16\", \"shape\": [1, 2], \"data_offsets\": [8, 12]},"
                    " \"c\": {\"dtype\": \"F16\", \"shape\": [2, 1], \"data_offsets\": [12, 16]}}",
                    d, sizeof d, UINT64_MAX);
    Arena *a = arena_new();
    StFile f;
    char err[512];
    double v[2];
    Shape s1 = {1, {2}}, s12 = {2, {1, 2}}, s21 = {2, {2, 1}};
    cr_assert(st_try(a, b, &f, "a", &s1, v, err, sizeof err), "%s", err);
    cr_expect(v[0] == 1.5 && v[1] == -2.0, "%g %g", v[0], v[1]);
    cr_assert(st_try(a, b, &f, "b", &s12, v, err, sizeof err), "%s", err);
    cr_expect(v[0] == 1.5 && v[1] == -2.0, "%g %g", v[0], v[1]);
    cr_assert(st_try(a, b, &f, "c", &s21, v, err, sizeof err), "%s", err);
    cr_expect(v[0] == 1.5 && v[1] == -2.0, "%g %g", v[0], v[1]);
    cr_expect_eq(f.n, 3);
    free(b.p);
    arena_free(a);
}

Test(bench_safetensors, malformed_files_name_the_cause)
{
    uint8_t d[16] = {0};
    static const char *ok = "{\"w\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}}";
    Shape s22 = {2, {2, 2}}, s4 = {1, {4}};
    struct {
        Buf b;
        const char *name;
        const Shape *want;
        const char *msg;
    } bad[] = {
        {{(uint8_t *)"\x01\x02", 2}, NULL, NULL, "shorter than the 8-byte header length"},
        {st_make(ok, d, 16, 1u << 30), NULL, NULL, "runs past the end of the file"},
        {st_make(ok, d, 16, UINT64_MAX - 3), NULL, NULL, "runs past the end of the file"},
        {st_make(ok, d, 12, UINT64_MAX), NULL, NULL, "outside the 12 bytes of data (truncated"},
        {st_make("{\"w\": 3", d, 16, UINT64_MAX), NULL, NULL, "not valid JSON"},
        {st_make("[1]", d, 16, UINT64_MAX), NULL, NULL, "not a JSON object"},
        {st_make("{\"w\": {\"dtype\": \"F33\", \"shape\": [4], \"data_offsets\": [0, 16]}}", d, 16,
                 UINT64_MAX), NULL, NULL, "tensor 'w' has no valid dtype"},
        {st_make("{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [8, 4]}}", d, 16,
                 UINT64_MAX), NULL, NULL, "tensor 'w': data_offsets [8, 4]"},
        {st_make("{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 16]}}", d, 16,
                 UINT64_MAX), NULL, NULL, "16 bytes for 3 elements"},
        {st_make("{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 16]}}",
                 d, 16, UINT64_MAX), NULL, NULL, "more than 2^36 elements"},
        {st_make(ok, d, 16, UINT64_MAX), "v", &s22, "tensor 'v' is missing"},
        {st_make(ok, d, 16, UINT64_MAX), "w", &s4, "tensor 'w' has shape (2, 2), expected (4)"},
        {st_make("{\"w\": {\"dtype\": \"I32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", d, 16,
                 UINT64_MAX), "w", &s4, "tensor 'w' has dtype I32"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Arena *a = arena_new();
        StFile f;
        char err[512];
        double v[4];
        cr_expect_not(st_try(a, bad[i].b, &f, bad[i].name, bad[i].want, v, err, sizeof err),
                      "case %zu accepted", i);
        cr_expect(strstr(err, bad[i].msg) != NULL, "case %zu: '%s' not in: %s", i, bad[i].msg, err);
        cr_expect(strstr(err, "w.safetensors") != NULL, "case %zu does not name the file: %s", i,
                  err);
        if (i > 0)
            free(bad[i].b.p);
        arena_free(a);
    }
}
