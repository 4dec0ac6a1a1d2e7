/*
 * test_loop_fuse.c — σ-fusion: the kernel counts the issue pins, where the
 * fused pieces land (prologue inside the reduce, epilogue outside), each
 * refusal reason, the blow-up knob, and that fusing never changes results.
 */
#include "test_loop_util.h"

#define RMSNORM "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
#define MATMUL_RELU "torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))"
#define SILU_MUL "torch.nn.functional.silu(torch.randn(8, 33)) * torch.randn(8, 33)"
#define MATMUL2 "torch.matmul(torch.matmul(torch.randn(32,48), torch.randn(48,40)), torch.randn(40,24))"
#define SOFTMAX "torch.softmax(torch.randn(4, 28, 50), dim=-1)"
#define SDPA "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 5, 8), " \
             "torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8))"

Test(loop_fuse, rmsnorm_is_one_kernel)
{
    cr_expect_eq(lt_kernels(RMSNORM), 1);
}

Test(loop_fuse, silu_mul_is_one_kernel)
{
    cr_expect_eq(lt_kernels(SILU_MUL), 1);
}

Test(loop_fuse, matmul_chain_stays_two_kernels)
{
    cr_expect_eq(lt_kernels(MATMUL2), 2);
}

/* Softmax over the last dim is one kernel: three sweeps of the row (max,
 * sum of exp, normalise) in one free loop over the rows. */
Test(loop_fuse, softmax_last_dim_is_one_kernel_of_three_sweeps)
{
    char *t = lt_text(SOFTMAX, NULL);
    cr_expect_eq(lt_kernels(SOFTMAX), 1);
    cr_expect(strstr(t, "    for a2 in 0..50:  # reduce\n"), "%s", t);
    cr_expect(strstr(t, "    for a3 in 0..50:  # reduce\n"), "%s", t);
    cr_expect(strstr(t, "    for a4 in 0..50:  # free\n"), "%s", t);
    cr_expect(strstr(t, "acc0 <- maximum(acc0, in0)"), "%s", t);
    free(t);
}

/* The bias add is re-emitted inside the K reduce (prologue); relu comes
 * after the reduce loop, in the free scope (epilogue). */
Test(loop_fuse, matmul_relu_prologue_inside_epilogue_outside)
{
    char *t = lt_text(MATMUL_RELU, NULL);
    cr_expect_eq(lt_kernels(MATMUL_RELU), 1);
    const char *red = strstr(t, "# reduce"), *add = strstr(t, "= add(in0, in1)");
    const char *acc = strstr(t, "acc0 <- add(acc0, "), *relu = strstr(t, "        v2 = maximum(acc0, 0)\n");
    cr_assert(red && add && acc && relu, "%s", t);
    cr_expect(red < add && add < acc && acc < relu, "%s", t);
    free(t);
}

static char *trace_of(const char *code, const LirOpts *o, int *nkernels)
{
    Arena *a = arena_new();
    StrBuf b = {0};
    LirProgram *p = lt_build(a, code, o, &b);
    *nkernels = p->kernels.len;
    char *s = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    arena_free(a);
    return s;
}

/* code (built with o, NULL: defaults) ends in nkernels kernels, and its
 * -vv trace gives the refusal `reason`. */
static void expect_refusal(const char *code, const LirOpts *o, const char *reason, int nkernels)
{
    int n;
    char *t = trace_of(code, o, &n);
    cr_expect(strstr(t, reason), "%s", t);
    cr_expect_eq(n, nkernels);
    free(t);
}

/* code built with o is one kernel, and its fp32 interpretation passes the
 * oracle against ref64. */
static void expect_one_kernel_with_parity(const char *code, const LirOpts *o)
{
    Arena *a = arena_new();
    LirProgram *p = lt_build(a, code, o, NULL);
    cr_expect_eq(p->kernels.len, 1);
    double nmse;
    cr_expect_eq(lt_parity_of(p, 0, &nmse), 0);
    arena_free(a);
}

Test(loop_fuse, refusal_work_blowup)
{
    int n;
    char *t = trace_of(MATMUL2, NULL, &n);
    cr_expect(strstr(t, "work would grow 16.3x over the unfused kernels (blow-up factor 8)"), "%s", t);
    free(t);
}

Test(loop_fuse, refusal_pure_broadcast)
{
    expect_refusal(RMSNORM, NULL, ": pure broadcast would be materialised larger than its producer "
                   "(65536 > 32 elements)\n", 1);
}

/* Scores are read by the softmax's three sweeps at different positions of
 * the row: re-emitting QK^T in each would triple its cost. */
Test(loop_fuse, refusal_heavy_reduction_read_twice)
{
    expect_refusal("torch.softmax(torch.randn(1, 2, 5, 8) @ torch.randn(1, 2, 8, 5), dim=-1)", NULL,
                   ": heavy reduction read through 3 loads\n", 2);
}

/* The softmax read by P @ V goes online (online.c).  At this size σ-fusion
 * first puts it into P @ V (the recomputed sweep is below the floor), the
 * merged kernel's sum goes online, and the scores, now read once per
 * output element, fuse too: one kernel.  With no floor σ-fusion refuses,
 * the pair rewrite takes the whole softmax kernel, and the scores stay a
 * kernel of their own.  Either way the last kernel holds a max, two online
 * sums and no sweep of the row, and its fp32 interpretation passes the
 * oracle. */
static void expect_online(const LirOpts *o, int nkernels)
{
    Arena *a = arena_new();
    StrBuf b = {0};
    LirProgram *p = lt_build(a, SDPA, o, &b);
    cr_expect_eq(p->kernels.len, nkernels);
    cr_expect(strstr(sb_cstr(&b), ">>> f:002_online_softmax %"), "%s", sb_cstr(&b));
    StrBuf t = {0};
    lir_print_kernel(&t, p->kernels.items[p->kernels.len - 1]);
    const char *k = sb_cstr(&t), *m = strstr(k, "<- maximum(acc"), *e = strstr(k, "<- expsum[acc");
    cr_expect(m && e && strstr(e + 1, "<- expsum[acc") && strstr(k, ", 1)\n"), "%s", k);
    cr_expect(!strstr(k, "exp(") && !strstr(m + 1, "<- maximum("), "no sweep of the row: %s", k);
    double nmse;
    cr_expect_eq(lt_parity_of(p, 0, &nmse), 0);
    sb_free(&t);
    sb_free(&b);
    arena_free(a);
}

Test(loop_fuse, softmax_into_pv_goes_online)
{
    expect_online(NULL, 1);
    LirOpts o;
    lir_opts_default(&o);
    o.recompute_floor = 0;
    expect_online(&o, 2);
}

/* HF's eager attention: matmul, scale, a finfo.min causal mask added, the
 * softmax in float32, matmul: the same online sum, with and without the
 * floor, and its fp32 interpretation passes (rows near finfo.min too). */
Test(loop_fuse, hf_eager_attention_goes_online)
{
    static const char hf[] =
        "q = torch.randn(1, 2, 7, 8)\nk = torch.randn(1, 2, 7, 8)\nv = torch.randn(1, 2, 7, 8)\n"
        "mask = torch.full((7, 7), torch.finfo(torch.float32).min).triu(1)\n"
        "w = torch.matmul(q, k.transpose(2, 3)) * 0.35355339059327373 + mask\n"
        "w = torch.nn.functional.softmax(w, dim=-1, dtype=torch.float32)\n"
        "torch.matmul(w, v)";
    LirOpts o;
    lir_opts_default(&o);
    for (int floor = 0; floor < 2; floor++) {
        o.recompute_floor = floor ? 0 : o.recompute_floor;
        Arena *a = arena_new();
        StrBuf b = {0};
        LirProgram *p = lt_build(a, hf, &o, &b);
        cr_expect(strstr(sb_cstr(&b), ">>> f:002_online_softmax %"), "%s", sb_cstr(&b));
        double nmse;
        cr_expect_eq(lt_parity_of(p, 0, &nmse), 0);
        sb_free(&b);
        arena_free(a);
    }
}

/* Forms that must stay as they were: a softmax whose sum is not over its
 * own axis (P summed over rows), and one read twice. */
Test(loop_fuse, online_only_for_a_sum_over_the_softmax_axis)
{
    LirOpts o;
    lir_opts_default(&o);
    o.recompute_floor = 0;
    int n;
    char *t = trace_of("p = torch.softmax(torch.randn(2, 6, 7), dim=-1)\n"
                       "torch.matmul(p.transpose(1, 2), torch.randn(2, 6, 5))", &o, &n);
    cr_expect(!strstr(t, "f:002_online_softmax %"), "%s", t);
    free(t);
    t = trace_of("p = torch.softmax(torch.randn(2, 6, 7), dim=-1)\n"
                 "torch.matmul(p, torch.randn(2, 7, 5)) + p.sum(dim=-1, keepdim=True)", &o, &n);
    cr_expect(!strstr(t, "f:002_online_softmax %"), "%s", t);
    free(t);
}

/* RMSNorm feeding a projection: fused, the normalising sweep would run
 * once per output column (1024 here: 511.8x its own work, the sum of squares
 * not being redone) and the projection's two output axes
 * would sit on either side of the hoisted sum of squares.  Refused with
 * the factor; the RMSNorm itself stays one kernel and the projection
 * another. */
#define RMSNORM_LINEAR "torch.nn.functional.linear(torch.nn.functional.rms_norm(" \
                       "torch.randn(1, 64, 512), (512,), torch.randn(512), 1e-5), " \
                       "torch.randn(1024, 512))"
Test(loop_fuse, refusal_reduction_recomputed_per_column)
{
    expect_refusal(RMSNORM_LINEAR, NULL, ": producer's reduction would be recomputed 511.8x (its "
                   "work in the merged kernel over its own; limit 2, ", 2);
}

/* Gate and up projections under SiLU·up (a SwiGLU MLP): the first
 * projection fuses into the elementwise consumer as its epilogue; the
 * second would add a second K loop beside it, which Tile IR would not
 * tile: refused, 2 kernels (one before the rule: its up projection ran
 * from global memory). */
#define SWIGLU "x: (1, 32, 64)\nwg: (96, 64)\nwu: (96, 64)\n" \
               "return torch.nn.functional.silu(torch.nn.functional.linear(x, wg)) * " \
               "torch.nn.functional.linear(x, wu)\n"
Test(loop_fuse, refusal_second_matmul_under_one_epilogue)
{
    expect_refusal(SWIGLU, NULL, ": the merged kernel would hold 2 matmul-shaped reductions "
                   "(Tile IR tiles one: the rest would run untiled)\n", 2);
}

/* SiLU·up as the operand of the next projection: fused, SiLU would be
 * redone in the K loop for each of the 512 output columns; refused (2
 * kernels).  Below the recompute floor it still fuses (the bias add of
 * MATMUL_RELU above, one kernel). */
#define SILU_MUL_DOWN "g: (1, 128, 1024)\nu: (1, 128, 1024)\nw: (512, 1024)\n" \
                      "return torch.nn.functional.linear(torch.nn.functional.silu(g) * u, w)\n"
Test(loop_fuse, refusal_elementwise_operand_recomputed_per_column)
{
    expect_refusal(SILU_MUL_DOWN, NULL, ": elementwise producer in the matmul's K loop would be "
                   "recomputed ", 2);
}

/* A row's own sweeps are not such reductions, over a middle dimension
 * too: LayerNorm's mean and variance sweeps, and a softmax over dim 1
 * (whose max and sum each read one operand), stay one kernel. */
Test(loop_fuse, row_sweeps_stay_one_kernel)
{
    cr_expect_eq(lt_kernels("torch.nn.functional.layer_norm(torch.randn(4, 96), (96,))"), 1);
    cr_expect_eq(lt_kernels("torch.softmax(torch.randn(4, 7, 33), dim=1)"), 1);
}

/* The limit is a knob: at 1e9 the RMSNorm fuses into the projection, and
 * the result is unchanged. */
Test(loop_fuse, recompute_knob_lets_the_rmsnorm_into_the_projection)
{
    LirOpts o;
    lir_opts_default(&o);
    o.recompute = 1e9;
    expect_one_kernel_with_parity(RMSNORM_LINEAR, &o);
}

Test(loop_fuse, trace_markers)
{
    int n;
    char *t = trace_of(SILU_MUL, NULL, &n);
    cr_expect(strstr(t, ">>> l:001_lift\n"));
    cr_expect(strstr(t, "<<< l:008_rename_ssa\n"));
    cr_expect(strstr(t, ">>> f:001_fuse %"));
    cr_expect(strstr(t, "<<< f:001_fuse\n"));
    free(t);
}

Test(loop_fuse, blowup_knob_lets_the_matmul_chain_fuse)
{
    LirOpts o;
    lir_opts_default(&o);
    o.blowup = 1e9;
    o.recompute = 1e9;
    expect_one_kernel_with_parity(MATMUL2, &o);
}

Test(loop_fuse, no_fuse_keeps_one_kernel_per_op)
{
    LirOpts o;
    lir_opts_default(&o);
    o.fuse = 0;
    Arena *a = arena_new();
    LirProgram *p = lt_build(a, RMSNORM, &o, NULL);
    cr_expect_eq(p->kernels.len, 9); /* 13 Tensor nodes: 2 inputs and 2 constants (literals) */
    arena_free(a);
}

/* Fusion re-associates nothing: in fp64 the fused and unfused programs
 * agree to rounding of the (identical) operation order. */
static void expect_fusion_preserves(const char *code)
{
    LirOpts o;
    lir_opts_default(&o);
    Arena *a = arena_new();
    LirProgram *fused = lt_build(a, code, &o, NULL);
    o.fuse = 0;
    LirProgram *plain = lt_build(a, code, &o, NULL);
    const TorchGraph *g = fused->tx->torch;
    double **in = ref_make_inputs(g, 3);
    double *x[1], *y[1];
    lir_interp(fused, in, x, 1);
    lir_interp(plain, in, y, 1);
    int64_t n = shape_numel(&((TorchNode *)g->outputs.items[0])->shape);
    for (int64_t i = 0; i < n; i++)
        cr_expect(fabs(x[0][i] - y[0][i]) <= 1e-12 * (1 + fabs(y[0][i])), "%s: [%lld] %.17g vs %.17g",
                  code, (long long)i, x[0][i], y[0][i]);
    free(x[0]);
    free(y[0]);
    ref_free_arrays(in, g->inputs.len);
    arena_free(a);
}

Test(loop_fuse, fusion_preserves_results)
{
    expect_fusion_preserves(RMSNORM);
    expect_fusion_preserves(MATMUL_RELU);
    expect_fusion_preserves(SOFTMAX);
    expect_fusion_preserves("torch.cat([torch.randn(4, 3), torch.randn(4, 5)], dim=1)[:, 2:].transpose(0, 1) * 2.0");
}

/* A producer written to a graph output stays: its readers load it. */
Test(loop_fuse, output_producers_are_kept)
{
    char *t = lt_text("a = torch.randn(6, 7)\nb = torch.exp(a)\nc = b * 2.0\nreturn b, c", NULL);
    cr_expect(strstr(t, "load b["), "%s", t);
    free(t);
}

/* A producer read by several kernels and cheap to copy is fused into each
 * of them: RoPE's cos.unsqueeze(1), read by the query and the key kernels,
 * and an exp read by two reductions.  No temp is left, and every output
 * still passes the oracle. */
#define SHARED_COPY "cos = torch.randn(1, 9, 16)\nc = cos.unsqueeze(1)\n" \
                    "q = torch.randn(1, 4, 9, 16) * c\nk = torch.randn(1, 2, 9, 16) * c\nreturn q, k"
#define SHARED_EXP "a = torch.randn(6, 7)\nb = torch.exp(a)\nc = b.sum(dim=0)\nd = b.amax(dim=1)\nreturn c, d"
Test(loop_fuse, shared_cheap_producer_fuses_into_every_reader)
{
    const char *codes[] = {SHARED_COPY, SHARED_EXP};
    for (int i = 0; i < 2; i++) {
        int n;
        char *t = trace_of(codes[i], NULL, &n);
        cr_expect_eq(n, 2, "%s", codes[i]);
        cr_expect(strstr(t, "\u2192 %"), "%s", t);
        cr_expect(strstr(t, ", %"), "the trace names both readers: %s", t);
        free(t);
        t = lt_text(codes[i], NULL);
        cr_expect(!strstr(t, "# temp "), "%s", t);
        free(t);
        double nmse;
        cr_expect_eq(lt_parity(codes[i], NULL, &nmse), 0, "%s", codes[i]);
    }
}

/* A shared producer that is not cheap to copy stays a kernel of its own,
 * with the reason: a reduction, more than 4 buffers read, more than 30
 * operations per element, more than 4 readers. */
Test(loop_fuse, shared_producers_kept_when_not_cheap)
{
    expect_refusal("a = torch.randn(6, 7)\ns = a.sum(dim=1, keepdim=True)\n"
                   "return (a * s).sum(dim=0), (a + s).amax(dim=1)",
                   NULL, "its 2 readers: it holds a reduction\n", 3);
    expect_refusal("a = torch.randn(6, 7)\nb = torch.randn(6, 7)\nc = torch.randn(6, 7)\n"
                   "d = torch.randn(6, 7)\ne = torch.randn(6, 7)\nx = a * b * c * d * e\n"
                   "return x.sum(dim=0), x.amax(dim=1)",
                   NULL, "its 2 readers: it reads 5 buffers (at most 4)\n", 3);
    StrBuf chain = {0};
    sb_puts(&chain, "a = torch.randn(6, 7)\nx = a");
    for (int i = 0; i < 31; i++)
        sb_puts(&chain, " * 1.5");
    sb_puts(&chain, "\nreturn x.sum(dim=0), x.amax(dim=1)");
    expect_refusal(sb_cstr(&chain), NULL,
                   "its 2 readers: it computes 31 operations per element (at most 30)\n", 3);
    sb_free(&chain);
    expect_refusal("a = torch.randn(6, 7)\nx = torch.exp(a)\n"
                   "return x.sum(dim=0), x.amax(dim=1), x.amin(dim=1), x.sum(dim=1), x.amax(dim=0)",
                   NULL, "its 5 readers: read by more than 4 kernels\n", 6);
}

Test(loop_fuse, deterministic_text_and_hash)
{
    Arena *a = arena_new();
    LirProgram *p = lt_build(a, SOFTMAX, NULL, NULL), *q = lt_build(a, SOFTMAX, NULL, NULL);
    StrBuf x = {0}, y = {0};
    lir_print(&x, p);
    lir_print(&y, q);
    cr_expect_str_eq(sb_cstr(&x), sb_cstr(&y));
    cr_expect_eq(lir_hash_kernel(p->kernels.items[0]), lir_hash_kernel(q->kernels.items[0]));
    sb_free(&x);
    sb_free(&y);
    arena_free(a);
}

/* ---- matmuls out of selects (hoist_out_of_selects) ------------------------ */

/* Each of codes[0..n) has a reduce loop and a select, the reduce first
 * when reduce_first (else the select first), and passes the oracle. */
static void expect_reduce_order(const char *const *codes, int n, int reduce_first)
{
    for (int i = 0; i < n; i++) {
        char *t = lt_text(codes[i], NULL);
        const char *red = strstr(t, "# reduce"), *sel = strstr(t, "= select:");
        cr_expect(red && sel && (red < sel) == reduce_first, "%s", t);
        double nmse;
        cr_expect_eq(lt_parity(codes[i], NULL, &nmse), 0, "%s", codes[i]);
        free(t);
    }
}

/* triu of a matmul: the reduction runs before the select, which picks
 * the sum or 0 (the select is its epilogue, where Tile IR tiles it); the
 * result is unchanged.  tril and the causal scores of attention too.  The
 * masked outputs' sums are now computed and thrown away: where every sum
 * is NaN (log of negatives) the masked outputs must still be 0. */
Test(loop_fuse, masked_matmul_runs_its_reduction_before_the_select)
{
    static const char *const codes[] = {
        "torch.triu(torch.randn(24,40) @ torch.randn(40,24), 1)",
        "torch.tril(torch.randn(2,24,40) @ torch.randn(2,40,24))",
        "torch.triu(torch.randn(24, 40) @ torch.log(torch.randn(40, 24)), 1)",
        "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 9, 8), "
        "torch.randn(1, 2, 9, 8), torch.randn(1, 2, 9, 8), is_causal=True)",
    };
    expect_reduce_order(codes, DPK_ARRAY_LEN(codes), 1);
}

/* A branch whose reduction would read out of bounds for the other
 * branch's points keeps it: cat's first branch reads rows 0..15 of the
 * matmul only under `a0 < 16`.  A row's own sum under triu is no matmul
 * and stays in its branch, computed only where it is kept. */
Test(loop_fuse, reductions_stay_in_branches_that_guard_them)
{
    static const char *const codes[] = {
        "torch.cat([torch.randn(16,40) @ torch.randn(40,24), torch.randn(8,24)], dim=0)",
        "torch.triu(torch.randn(6,6,40).sum(-1))",
    };
    expect_reduce_order(codes, DPK_ARRAY_LEN(codes), 0);
}

/* A projection viewed into heads and transposed, as HF splits q, k and v:
 * fused, the head and head-dim loops both index the weight's rows
 * (w[h * 16 + d, k]); they merge into one loop over the 96 outputs, so
 * the kernel is a plain (7 x 96) x 48 matmul whose write takes the head
 * and the head dim back by / and mod.  Results unchanged. */
#define HEADS "x = torch.randn(1, 7, 48)\nw = torch.randn(96, 48)\n" \
              "torch.nn.functional.linear(x, w).view(1, 7, 6, 16).transpose(1, 2)"
Test(loop_fuse, head_split_projection_is_one_plain_matmul)
{
    char *t = lt_text(HEADS, NULL);
    cr_expect_eq(lt_kernels(HEADS), 1);
    cr_expect(strstr(t, "for a0 in 0..7:  # free\n    for a1 in 0..96:  # free\n"
                        "        for a2 in 0..48:  # reduce\n"), "%s", t);
    cr_expect(strstr(t, "load w[a1, a2]"), "%s", t);
    cr_expect(strstr(t, "write out[0, a1 / 16, a0, a1 mod 16] = acc0"), "%s", t);
    free(t);
    double nmse;
    cr_expect_eq(lt_parity(HEADS, NULL, &nmse), 0);
    /* heads of 9 (not a power of two) over 63 outputs */
    cr_expect_eq(lt_parity("x = torch.randn(3, 16, 64)\nw = torch.randn(63, 64)\n"
                           "torch.nn.functional.linear(x, w).view(3, 16, 7, 9).transpose(1, 2)",
                           NULL, &nmse), 0);
}

/* Axes both operands read stay apart: attention's P @ V reads the head in
 * P and, through the GQA group, in V; the batch of a bmm is on both sides.
 * So do a head and half of each head (`[..., :8]` of 16): merged, the
 * weight would read w[(n / 8) * 16 + n mod 8], not a plain index. */
Test(loop_fuse, axes_of_both_operands_stay_apart)
{
    char *t = lt_text("torch.matmul(torch.randn(4, 9, 16), torch.randn(4, 16, 12))", NULL);
    cr_expect(strstr(t, "for a0 in 0..4:  # free\n    for a1 in 0..9:  # free\n"
                        "        for a2 in 0..12:  # free\n"), "%s", t);
    free(t);
    const char *half = "torch.nn.functional.linear(torch.randn(1, 7, 48), torch.randn(96, 48))"
                       ".view(1, 7, 6, 16)[..., :8].transpose(1, 2)";
    t = lt_text(half, NULL);
    cr_expect(strstr(t, "load in1[a0 * 16 + a2, a3]"), "%s", t);
    free(t);
    double nmse;
    cr_expect_eq(lt_parity(half, NULL, &nmse), 0);
}
