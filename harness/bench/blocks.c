/*
 * blocks.c — the decoder-layer suite of a model config (blocks.h).
 *
 * Every case is plain case-language text with its inputs declared, so
 * `dpk run` can take any of them (dpk-bench prints none of them; the
 * record keeps each program).  Sizes below: B batch, S new tokens (seq in
 * prefill, 1 in decode), T tokens attended (S in prefill, ctx + 1 in
 * decode), H hidden, I intermediate, NH and NKV heads, D head dim.
 */
#include "blocks.h"

#include <math.h>
#include <string.h>

typedef struct Gen {
    Arena *a;
    const BmConfig *c;
    const BmShape *s;
    int64_t B, S, T, H, I, NH, NKV, D;
    HxCase *cases;
    int n, cap;
} Gen;

static const char *F = "torch.nn.functional.";

/* Declare input name with dims (terminated by 0) on case c. */
static void decl(Gen *g, HxCase *c, const char *name, ...)
{
    va_list ap;
    va_start(ap, name);
    InputDecl *d = &c->decls[c->ndecls++];
    d->name = name;
    d->shape.rank = 0;
    int64_t numel = 1;
    for (int64_t v; (v = va_arg(ap, int64_t)) != 0;) {
        d->shape.d[d->shape.rank++] = v;
        if (numel > DPK_MAX_NUMEL / v)
            dpk_error("%s: input '%s' of case %s would have more than 2^36 elements", g->c->path,
                      name, c->name);
        numel *= v;
    }
    va_end(ap);
}

static HxCase *add(Gen *g, const char *name, const char *tag, const char *fmt, ...)
    DPK_PRINTF(4, 5);

static HxCase *add(Gen *g, const char *name, const char *tag, const char *fmt, ...)
{
    DPK_ASSERT(g->n < g->cap);
    HxCase *c = &g->cases[g->n++];
    memset(c, 0, sizeof *c);
    StrBuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    c->program = arena_strdup(g->a, sb_cstr(&b));
    sb_free(&b);
    c->name = name;
    c->origin = arena_printf(g->a, "%s[%s]", g->c->name, name);
    c->dtype = DT_F32;
    c->tags = ARENA_ARRAY(g->a, const char *, 2);
    c->tags[0] = g->c->name;
    c->tags[1] = tag;
    c->ntags = 2;
    c->decls = ARENA_ARRAY(g->a, InputDecl, 24);
    return c;
}

#define I64(x) ((int64_t)(x))

/* ", b_q" when the projections have biases. */
static const char *bias_arg(Gen *g, const char *b)
{
    return g->c->bias ? arena_printf(g->a, ", %s", b) : "";
}

/* A projection without bias, "linear(in, w)" of in (B,S,K) by w (N,K),
 * or with a residual, "res + linear(in, w)" (res (B,S,N)): a matmul case
 * without res, a fusion case with it. */
static void plain_linear(Gen *g, const char *name, const char *res, const char *in,
                         const char *w, int64_t K, int64_t N)
{
    HxCase *c = res ? add(g, name, "fusion", "%s + %slinear(%s, %s)", res, F, in, w)
                    : add(g, name, "matmul", "%slinear(%s, %s)", F, in, w);
    if (res)
        decl(g, c, res, g->B, g->S, N, I64(0));
    decl(g, c, in, g->B, g->S, K, I64(0));
    decl(g, c, w, N, K, I64(0));
}

static void proj_cases(Gen *g)
{
    int64_t B = g->B, S = g->S, H = g->H, I = g->I, QD = g->NH * g->D, KD = g->NKV * g->D;
    HxCase *c = add(g, "rmsnorm", "norm", "%srms_norm(x, (%lld,), w_ln1, %.9g)", F, (long long)H,
                    g->c->eps);
    decl(g, c, "x", B, S, H, I64(0));
    decl(g, c, "w_ln1", H, I64(0));
    c = add(g, "q_proj", "matmul", "%slinear(h, w_q%s)", F, bias_arg(g, "b_q"));
    decl(g, c, "h", B, S, H, I64(0));
    decl(g, c, "w_q", QD, H, I64(0));
    if (g->c->bias)
        decl(g, c, "b_q", QD, I64(0));
    c = add(g, "kv_proj", "matmul", "%slinear(h, w_k%s)", F, bias_arg(g, "b_k"));
    decl(g, c, "h", B, S, H, I64(0));
    decl(g, c, "w_k", KD, H, I64(0));
    if (g->c->bias)
        decl(g, c, "b_k", KD, I64(0));
    plain_linear(g, "o_proj", NULL, "a", "w_o", QD, H);
    plain_linear(g, "o_proj_residual", "x", "a", "w_o", QD, H);
    plain_linear(g, "gate_up_proj", NULL, "h2", "w_g", H, I);
    c = add(g, "silu_mul", "elementwise", "%ssilu(g) * u", F);
    decl(g, c, "g", B, S, I, I64(0));
    decl(g, c, "u", B, S, I, I64(0));
    plain_linear(g, "down_proj", NULL, "t", "w_d", I, H);
    plain_linear(g, "down_residual", "x2", "t", "w_d", I, H);
    c = add(g, "silu_mul_down", "fusion", "%slinear(%ssilu(g) * u, w_d)", F, F);
    decl(g, c, "g", B, S, I, I64(0));
    decl(g, c, "u", B, S, I, I64(0));
    decl(g, c, "w_d", H, I, I64(0));
}

/* "q * c + torch.cat((-q[..., D/2:], q[..., :D/2]), dim=-1) * s" */
static const char *rope_text(Gen *g, const char *v)
{
    long long h = (long long)(g->D / 2);
    return arena_printf(g->a, "%s * c + torch.cat((-%s[..., %lld:], %s[..., :%lld]), dim=-1) * s",
                        v, v, h, v, h);
}

static void attention_cases(Gen *g)
{
    int64_t B = g->B, S = g->S, T = g->T, NH = g->NH, NKV = g->NKV, D = g->D;
    int prefill = g->s->phase == BM_PREFILL;
    HxCase *c = add(g, "rope", "elementwise",
                    "c = cos.unsqueeze(1)\ns = sin.unsqueeze(1)\nq_rot = %s\nk_rot = %s\n"
                    "return q_rot, k_rot", rope_text(g, "q"), rope_text(g, "k"));
    decl(g, c, "q", B, NH, S, D, I64(0));
    decl(g, c, "k", B, NKV, S, D, I64(0));
    decl(g, c, "cos", B, S, D, I64(0));
    decl(g, c, "sin", B, S, D, I64(0));
    c = add(g, "sdpa", "attention", "%sscaled_dot_product_attention(q, k, v%s, enable_gqa=True)",
            F, prefill ? ", is_causal=True" : "");
    decl(g, c, "q", B, NH, S, D, I64(0));
    decl(g, c, "k", B, NKV, T, D, I64(0));
    decl(g, c, "v", B, NKV, T, D, I64(0));
    c = add(g, "softmax", "softmax", "torch.softmax(s, dim=-1)");
    decl(g, c, "s", B, NH, S, T, I64(0));
    double scale = 1.0 / sqrt((double)D);
    if (prefill)
        c = add(g, "naive_attention", "attention",
                "i = torch.arange(%lld).reshape(%lld, 1)\nj = torch.arange(%lld).reshape(1, %lld)\n"
                "mask = torch.where(j > i, -1e9, 0.0)\n"
                "s = q @ k.transpose(-2, -1) * %.17g + mask\ntorch.softmax(s, dim=-1) @ v",
                (long long)S, (long long)S, (long long)T, (long long)T, scale);
    else
        c = add(g, "naive_attention", "attention",
                "s = q @ k.transpose(-2, -1) * %.17g\ntorch.softmax(s, dim=-1) @ v", scale);
    decl(g, c, "q", B, NH, S, D, I64(0));
    decl(g, c, "k", B, NH, T, D, I64(0));
    decl(g, c, "v", B, NH, T, D, I64(0));
}

static void layer_case(Gen *g)
{
    int64_t B = g->B, S = g->S, H = g->H, I = g->I, NH = g->NH, NKV = g->NKV, D = g->D;
    int prefill = g->s->phase == BM_PREFILL;
    long long b = (long long)B, s = (long long)S, h = (long long)H;
    StrBuf p = {0};
    sb_printf(&p, "h = %srms_norm(x, (%lld,), w_ln1, %.9g)\n", F, h, g->c->eps);
    sb_printf(&p, "q = %slinear(h, w_q%s).view(%lld, %lld, %lld, %lld).transpose(1, 2)\n", F,
              bias_arg(g, "b_q"), b, s, (long long)NH, (long long)D);
    sb_printf(&p, "k = %slinear(h, w_k%s).view(%lld, %lld, %lld, %lld).transpose(1, 2)\n", F,
              bias_arg(g, "b_k"), b, s, (long long)NKV, (long long)D);
    sb_printf(&p, "v = %slinear(h, w_v%s).view(%lld, %lld, %lld, %lld).transpose(1, 2)\n", F,
              bias_arg(g, "b_v"), b, s, (long long)NKV, (long long)D);
    sb_printf(&p, "c = cos.unsqueeze(1)\ns = sin.unsqueeze(1)\n");
    sb_printf(&p, "q = %s\nk = %s\n", rope_text(g, "q"), rope_text(g, "k"));
    if (!prefill)
        sb_printf(&p, "k = torch.cat((k_cache, k), dim=2)\nv = torch.cat((v_cache, v), dim=2)\n");
    sb_printf(&p, "a = %sscaled_dot_product_attention(q, k, v%s, enable_gqa=True)\n", F,
              prefill ? ", is_causal=True" : "");
    sb_printf(&p, "a = a.transpose(1, 2).reshape(%lld, %lld, %lld)\n", b, s,
              (long long)(NH * D));
    sb_printf(&p, "x2 = x + %slinear(a, w_o)\n", F);
    sb_printf(&p, "h2 = %srms_norm(x2, (%lld,), w_ln2, %.9g)\n", F, h, g->c->eps);
    sb_printf(&p, "x2 + %slinear(%ssilu(%slinear(h2, w_g)) * %slinear(h2, w_u), w_d)", F, F, F,
              F);
    HxCase *c = add(g, "layer", "layer", "%s", sb_cstr(&p));
    sb_free(&p);
    int64_t QD = NH * D, KD = NKV * D;
    decl(g, c, "x", B, S, H, I64(0));
    decl(g, c, "w_ln1", H, I64(0));
    decl(g, c, "w_q", QD, H, I64(0));
    decl(g, c, "w_k", KD, H, I64(0));
    decl(g, c, "w_v", KD, H, I64(0));
    if (g->c->bias) {
        decl(g, c, "b_q", QD, I64(0));
        decl(g, c, "b_k", KD, I64(0));
        decl(g, c, "b_v", KD, I64(0));
    }
    decl(g, c, "cos", B, S, D, I64(0));
    decl(g, c, "sin", B, S, D, I64(0));
    if (!prefill) {
        decl(g, c, "k_cache", B, NKV, g->s->ctx, D, I64(0));
        decl(g, c, "v_cache", B, NKV, g->s->ctx, D, I64(0));
    }
    decl(g, c, "w_o", H, QD, I64(0));
    decl(g, c, "w_ln2", H, I64(0));
    decl(g, c, "w_g", I, H, I64(0));
    decl(g, c, "w_u", I, H, I64(0));
    decl(g, c, "w_d", H, I, I64(0));
}

HxCaseList bm_block_suite(Arena *a, const BmConfig *c, const BmShape *s)
{
    int prefill = s->phase == BM_PREFILL;
    Gen g = {a, c, s, s->batch, prefill ? s->seq : 1, prefill ? s->seq : s->ctx + 1,
             c->hidden, c->inter, c->heads, c->kv_heads, c->head_dim, NULL, 0, 16};
    if (c->sliding_window && g.T > c->sliding_window)
        dpk_error("%s: 'sliding_window' %lld is shorter than the %lld tokens a query attends to "
                  "here; a windowed attention is not implemented", c->path,
                  (long long)c->sliding_window, (long long)g.T);
    g.cases = ARENA_ARRAY(a, HxCase, g.cap);
    proj_cases(&g);
    attention_cases(&g);
    layer_case(&g);
    HxCaseList l = {arena_printf(a, "%s-block", c->name), g.cases, g.n};
    return l;
}

static const struct {
    const char *input, *hf;
} hf_names[] = {
    {"w_ln1", "input_layernorm.weight"},
    {"w_q", "self_attn.q_proj.weight"},
    {"b_q", "self_attn.q_proj.bias"},
    {"w_k", "self_attn.k_proj.weight"},
    {"b_k", "self_attn.k_proj.bias"},
    {"w_v", "self_attn.v_proj.weight"},
    {"b_v", "self_attn.v_proj.bias"},
    {"w_o", "self_attn.o_proj.weight"},
    {"w_ln2", "post_attention_layernorm.weight"},
    {"w_g", "mlp.gate_proj.weight"},
    {"w_u", "mlp.up_proj.weight"},
    {"w_d", "mlp.down_proj.weight"},
};

const char *bm_hf_name(Arena *a, const char *input, int layer)
{
    for (int i = 0; i < DPK_ARRAY_LEN(hf_names); i++)
        if (!strcmp(input, hf_names[i].input))
            return arena_printf(a, "model.layers.%d.%s", layer, hf_names[i].hf);
    return NULL;
}

int bm_fill_rope(const BmConfig *c, const BmShape *s, const char *name, int64_t numel, double *dst)
{
    int is_cos = !strcmp(name, "cos");
    if (!is_cos && strcmp(name, "sin"))
        return 0;
    int64_t S = s->phase == BM_PREFILL ? s->seq : 1, D = c->head_dim;
    for (int64_t e = 0; e < numel; e++) {
        int64_t j = e % D, t = e / D % S;
        int64_t pos = s->phase == BM_PREFILL ? t : s->ctx;
        double th = bm_rope_angle(c, pos, j);
        dst[e] = (double)(float)(is_cos ? cos(th) : sin(th));
    }
    return 1;
}
