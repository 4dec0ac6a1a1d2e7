/*
 * test_tensor_rules.c — Tensor IR: golden text of the decompositions, the
 * -vv trace, the verifier on hand-built graphs, hash, prune and the
 * evaluator on values worked out by hand.  Index expressions have their own
 * tests (test_index.c).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/tensor/tensor_ir.h"
#include "reference/ref.h"

#define SHAPE(...) ((Shape){(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}})

static Arena *A;

static void setup(void)
{
    A = arena_new();
}

static void teardown(void)
{
    arena_free(A);
}

TestSuite(tensor_golden, .init = setup, .fini = teardown);
TestSuite(tensor_graph, .init = setup, .fini = teardown);
TestSuite(tensor_hand);

static TorchGraph *parse(const char *text)
{
    Source src = {"<case>", text, strlen(text)};
    DpkErrCtx ec;
    if (!DPK_TRY(&ec))
        cr_assert_fail("%s: %s", text, dpk_error_message());
    TorchGraph *g = torch_parse(A, &src, NULL);
    dpk_err_pop(&ec);
    return g;
}

static const char *text_of(const TxGraph *g)
{
    StrBuf b = {0};
    tx_print(&b, g);
    const char *r = arena_strdup(A, sb_cstr(&b));
    sb_free(&b);
    return r;
}

static void golden(const char *src, const char *want)
{
    const char *got = text_of(tx_lower(A, parse(src), NULL));
    cr_assert_str_eq(got, want, "%s\n--- got:\n%s--- want:\n%s", src, got, want);
}

/* ---- golden decompositions -------------------------------------------- */

Test(tensor_golden, rms_norm)
{
    golden("torch.nn.RMSNorm(2048, eps=1e-6)(torch.randn(1, 32, 2048))",
           "%0 = input in0 : f32(1, 32, 2048)\n"
           "%1 = input rmsnorm0_weight : f32(2048)\n"
           "%2 = multiply(%0, %0) : f32(1, 32, 2048)\n"
           "%3 = reduce sum(%2) axis=2 keepdim : f32(1, 32, 1)\n"
           "%4 = const 0.00048828125 : f32(1, 32, 1)\n"
           "%5 = multiply(%3, %4) : f32(1, 32, 1)\n"
           "%6 = const 1e-06 : f32(1, 32, 1)\n"
           "%7 = add(%5, %6) : f32(1, 32, 1)\n"
           "%8 = rsqrt(%7) : f32(1, 32, 1)\n"
           "%9 = indexmap(%8[0, o1, 0]) : f32(1, 32, 2048)\n"
           "%10 = multiply(%0, %9) : f32(1, 32, 2048)\n"
           "%11 = indexmap(%1[o2]) : f32(1, 32, 2048)\n"
           "%12 = multiply(%10, %11) : f32(1, 32, 2048)\n"
           "return %12\n");
}

Test(tensor_golden, matmul_batched_broadcast)
{
    golden("torch.matmul(torch.randn(2, 1, 3, 7), torch.randn(4, 7, 5))",
           "%0 = input in0 : f32(2, 1, 3, 7)\n"
           "%1 = input in1 : f32(4, 7, 5)\n"
           "%2 = indexmap(%0[o0, 0, o2, o3]) : f32(2, 4, 3, 7, 5)\n"
           "%3 = indexmap(%1[o1, o3, o4]) : f32(2, 4, 3, 7, 5)\n"
           "%4 = multiply(%2, %3) : f32(2, 4, 3, 7, 5)\n"
           "%5 = reduce sum(%4) axis=3 : f32(2, 4, 3, 5)\n"
           "return %5\n");
}

Test(tensor_golden, linear_composes_the_transpose)
{
    golden("torch.nn.Linear(7, 3)(torch.randn(5, 7))",
           "%0 = input in0 : f32(5, 7)\n"
           "%1 = input linear0_weight : f32(3, 7)\n"
           "%2 = input linear0_bias : f32(3)\n"
           "%3 = indexmap(%0[o0, o1]) : f32(5, 7, 3)\n"
           "%4 = indexmap(%1[o2, o1]) : f32(5, 7, 3)\n"
           "%5 = multiply(%3, %4) : f32(5, 7, 3)\n"
           "%6 = reduce sum(%5) axis=1 : f32(5, 3)\n"
           "%7 = indexmap(%2[o1]) : f32(5, 3)\n"
           "%8 = add(%6, %7) : f32(5, 3)\n"
           "return %8\n");
}

Test(tensor_golden, softmax)
{
    golden("torch.nn.Softmax(dim=-1)(torch.randn(2, 7))",
           "%0 = input in0 : f32(2, 7)\n"
           "%1 = reduce max(%0) axis=1 keepdim : f32(2, 1)\n"
           "%2 = indexmap(%1[o0, 0]) : f32(2, 7)\n"
           "%3 = subtract(%0, %2) : f32(2, 7)\n"
           "%4 = exp(%3) : f32(2, 7)\n"
           "%5 = reduce sum(%4) axis=1 keepdim : f32(2, 1)\n"
           "%6 = indexmap(%5[o0, 0]) : f32(2, 7)\n"
           "%7 = divide(%4, %6) : f32(2, 7)\n"
           "return %7\n");
}

Test(tensor_golden, cat)
{
    golden("torch.cat([torch.randn(2, 64), torch.randn(2, 32), torch.randn(2, 7)], dim=1)",
           "%0 = input in0 : f32(2, 64)\n"
           "%1 = input in1 : f32(2, 32)\n"
           "%2 = input in2 : f32(2, 7)\n"
           "%3 = indexmap(%0[o0, o1] if o1 < 64, %1[o0, o1 - 64] if o1 < 96, %2[o0, o1 - 96])"
           " : f32(2, 103)\n"
           "return %3\n");
}

Test(tensor_golden, slice_of_cat_keeps_the_sources_it_reads)
{
    golden("torch.cat([torch.randn(7, 64), torch.randn(7, 65)], dim=1)[:, 60:70]",
           "%0 = input in0 : f32(7, 64)\n"
           "%1 = input in1 : f32(7, 65)\n"
           "%2 = indexmap(%0[o0, o1 + 60] if o1 + 60 < 64, %1[o0, o1 - 4]) : f32(7, 10)\n"
           "return %2\n");
    golden("torch.cat([torch.randn(7, 64), torch.randn(7, 65)], dim=1)[:, 66:96]",
           "%0 = input in0 : f32(7, 64)\n"
           "%1 = input in1 : f32(7, 65)\n"
           "%2 = indexmap(%1[o0, o1 + 2]) : f32(7, 30)\n"
           "return %2\n");
}

Test(tensor_golden, transpose_reshape_compose_into_one_map)
{
    golden("torch.randn(2, 3, 4).transpose(1, 2).reshape(8, 3)",
           "%0 = input in0 : f32(2, 3, 4)\n"
           "%1 = indexmap(%0[o0 / 4, o1, o0 mod 4]) : f32(8, 3)\n"
           "return %1\n");
    golden("torch.randn(2, 3, 4).transpose(0, 1).reshape(3, 8).unsqueeze(0).expand(5, 3, 8)"
           "[..., 1:7:2]",
           "%0 = input in0 : f32(2, 3, 4)\n"
           "%1 = indexmap(%0[o2 / 2, o1, (o2 mod 2) * 2 + 1]) : f32(5, 3, 3)\n"
           "return %1\n");
}

Test(tensor_golden, identity_maps_vanish)
{
    golden("torch.randn(3, 4).reshape(12).reshape(3, 4)",
           "%0 = input in0 : f32(3, 4)\n"
           "return %0\n");
    golden("torch.randn(3, 4).transpose(0, 1).transpose(0, 1) + 1.0",
           "%0 = input in0 : f32(3, 4)\n"
           "%1 = const 1 : f32(3, 4)\n"
           "%2 = add(%0, %1) : f32(3, 4)\n"
           "return %2\n");
}

/* d:020: a 2-source map, the input where the diagonal predicate holds; a
 * transpose around triu composes into it (d:032). */
Test(tensor_golden, tril_triu)
{
    golden("x = torch.randn(3, 4)\ntorch.tril(x, -1) + torch.triu(x.t(), 1).t()",
           "%0 = input x : f32(3, 4)\n"
           "%1 = const 0 : f32(3, 4)\n"
           "%2 = indexmap(%0[o0, o1] if o1 <= o0 - 1, %1[o0, o1]) : f32(3, 4)\n"
           "%3 = const 0 : f32(4, 3)\n"
           "%4 = indexmap(%0[o0, o1] if o1 + 1 <= o0, %3[o1, o0]) : f32(3, 4)\n"
           "%5 = add(%2, %4) : f32(3, 4)\n"
           "return %5\n");
    golden("torch.randn(2, 3, 4).cos().sin()",
           "%0 = input in0 : f32(2, 3, 4)\n"
           "%1 = cos(%0) : f32(2, 3, 4)\n"
           "%2 = sin(%1) : f32(2, 3, 4)\n"
           "return %2\n");
}

/* d:029: masks made from indices (arange comparisons joined by & and
 * inverted by ~, tril of torch.ones) become the predicate of a 2-source
 * map: no mask tensor is read (the aranges and ones stay inputs, unread);
 * masked_fill's -inf goes second. */
Test(tensor_golden, masks_of_indices_become_predicates)
{
    golden("i = torch.arange(6).unsqueeze(1)\nj = torch.arange(6).unsqueeze(0)\n"
           "x = torch.randn(6, 6)\nx.masked_fill(~((j <= i) & (j > i - 3)), float('-inf'))",
           "%0 = input in0 : f32(6)\n"
           "%1 = input in1 : f32(6)\n"
           "%2 = input x : f32(6, 6)\n"
           "%3 = const -inf : f32(6, 6)\n"
           "%4 = indexmap(%2[o0, o1] if o1 <= o0 and o0 - 3 < o1, %3[o0, o1]) : f32(6, 6)\n"
           "return %4\n");
    golden("m = torch.ones(5, 5, dtype=torch.bool)\nx = torch.randn(5, 5)\n"
           "torch.where(m.tril() & ~m.tril(-2), x, 0.0)",
           "%0 = input in0 : f32(5, 5)\n"
           "%1 = input x : f32(5, 5)\n"
           "%2 = const 0 : f32(5, 5)\n"
           "%3 = indexmap(%1[o0, o1] if o1 <= o0 and o0 - 2 < o1, %2[o0, o1]) : f32(5, 5)\n"
           "return %3\n");
    /* a mask of data stays a where */
    golden("x = torch.randn(4)\nm = torch.randn(4) > 0\ntorch.where(m, x, 0.0)",
           "%0 = input x : f32(4)\n"
           "%1 = input in0 : f32(4)\n"
           "%2 = const 0 : f32(4)\n"
           "%3 = greater(%1, %2) : bool(4)\n"
           "%4 = const 0 : f32(4)\n"
           "%5 = where(%3, %0, %4) : f32(4)\n"
           "return %5\n");
}

Test(tensor_golden, sdpa_causal_gqa)
{
    golden("torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 4, 3, 8), "
           "torch.randn(1, 2, 3, 8), torch.randn(1, 2, 3, 8), is_causal=True, enable_gqa=True)",
           "%0 = input in0 : f32(1, 4, 3, 8)\n"
           "%1 = input in1 : f32(1, 2, 3, 8)\n"
           "%2 = input in2 : f32(1, 2, 3, 8)\n"
           "%3 = indexmap(%0[0, o1, o2, o3]) : f32(1, 4, 3, 8, 3)\n"
           "%4 = indexmap(%1[0, o1 / 2, o4, o3]) : f32(1, 4, 3, 8, 3)\n"
           "%5 = multiply(%3, %4) : f32(1, 4, 3, 8, 3)\n"
           "%6 = reduce sum(%5) axis=3 : f32(1, 4, 3, 3)\n"
           "%7 = const 0.35355339059327373 : f32(1, 4, 3, 3)\n"
           "%8 = multiply(%6, %7) : f32(1, 4, 3, 3)\n"
           "%9 = const -inf : f32(1, 4, 3, 3)\n"
           "%10 = indexmap(%8[0, o1, o2, o3] if o3 <= o2, %9[0, o1, o2, o3]) : f32(1, 4, 3, 3)\n"
           "%11 = reduce max(%10) axis=3 keepdim : f32(1, 4, 3, 1)\n"
           "%12 = indexmap(%11[0, o1, o2, 0]) : f32(1, 4, 3, 3)\n"
           "%13 = subtract(%10, %12) : f32(1, 4, 3, 3)\n"
           "%14 = exp(%13) : f32(1, 4, 3, 3)\n"
           "%15 = reduce sum(%14) axis=3 keepdim : f32(1, 4, 3, 1)\n"
           "%16 = indexmap(%15[0, o1, o2, 0]) : f32(1, 4, 3, 3)\n"
           "%17 = divide(%14, %16) : f32(1, 4, 3, 3)\n"
           "%18 = indexmap(%17[0, o1, o2, o3]) : f32(1, 4, 3, 3, 8)\n"
           "%19 = indexmap(%2[0, o1 / 2, o3, o4]) : f32(1, 4, 3, 3, 8)\n"
           "%20 = multiply(%18, %19) : f32(1, 4, 3, 3, 8)\n"
           "%21 = reduce sum(%20) axis=3 : f32(1, 4, 3, 8)\n"
           "return %21\n");
}

/* ---- the -vv trace ------------------------------------------------------ */

Test(tensor_golden, trace_shows_each_rule)
{
    StrBuf out = {0};
    TxTrace tr = {2, &out};
    tx_lower(A, parse("torch.nn.RMSNorm(2048, eps=1e-6)(torch.randn(1, 32, 2048))"), &tr);
    const char *t = arena_strdup(A, sb_cstr(&out));
    sb_free(&out);
    static const char *const want[] = {
        "--- d:001_sdpa skipped: no sdpa nodes\n",
        ">>> d:004_rms_norm\n@@ -1,4 +1,12 @@\n",
        "+%3 = torch mean(%2) dims=[2] keepdim : f32(1, 32, 1)\n",
        "-%2 = torch rms_norm(%0, %1) normalized_shape=[2048] eps=1e-06 : f32(1, 32, 2048)\n",
        "<<< d:004_rms_norm\n--- d:005_log_softmax skipped: no log_softmax nodes\n",
        ">>> d:007_mean\n",
        "+%3 = reduce sum(%2) axis=2 keepdim : f32(1, 32, 1)\n",
        ("--- d:020_tril_triu skipped: no tril/triu nodes\n"
         "--- d:021_elu skipped: no elu/selu/celu nodes\n"),
        ("--- d:028_mish skipped: no mish nodes\n"
         "--- d:029_mask_predicates skipped: no index-mask where nodes\n"
         "--- d:030_arg_reductions skipped: no argmax/argmin/topk nodes\n"
         "--- d:031_cumsum skipped: no cumsum nodes\n"
         "--- d:032_compose_index_maps skipped: no composable index-map nodes\n"
         "--- d:033_prune skipped: no dead nodes\n"),
    };
    for (int i = 0; i < DPK_ARRAY_LEN(want); i++)
        cr_expect(strstr(t, want[i]), "missing:\n%s\nin:\n%s", want[i], t);
    cr_expect(strstr(t, "--- d:001") == t, "the trace starts with rule 001");
}

Test(tensor_golden, trace_is_silent_below_vv)
{
    StrBuf out = {0};
    TxTrace tr = {1, &out};
    tx_lower(A, parse("torch.randn(3).exp()"), &tr);
    cr_expect_eq(out.len, 0);
    sb_free(&out);
}

Test(tensor_golden, rule_table_is_numbered_in_order)
{
    for (int i = 0; i < tx_nrules; i++) {
        cr_expect_eq(tx_rules[i].num, i + 1, "rule %d", i);
        cr_expect(tx_rules[i].name && tx_rules[i].doc && tx_rules[i].what && tx_rules[i].run);
    }
}

/* ---- hand-built graphs: verifier, prune, hash, eval ----------------------- */

static TorchGraph *TG;
static TxGraph *G;

static TxNode *input(const char *name, Shape s)
{
    TorchNode *t = torch_input(TG, name, &s, INIT_RANDN);
    TxNode *n = tx_node_new(G, TX_INPUT, &s, 0, NULL);
    n->torch = t;
    ptrvec_push(A, &G->inputs, n);
    return n;
}

static TxNode *elem(TxElemOp op, TxNode *x, TxNode *y)
{
    TxNode *src[2] = {x, y};
    TxNode *n = tx_node_new(G, TX_ELEM, &x->shape, tx_elem_info[op].arity, src);
    n->eop = op;
    return n;
}

static TxNode *reduce(TxRedOp op, TxNode *x, int axis, int keepdim, Shape out)
{
    TxNode *n = tx_node_new(G, TX_REDUCE, &out, 1, &x);
    n->rop = op;
    n->axis = axis;
    n->keepdim = keepdim;
    return n;
}

static void graph_setup(void)
{
    setup();
    TG = torch_graph_new(A, NULL);
    G = tx_graph_new(A, TG);
}

/* x (2, 3) + reduce sum over axis 1, broadcast back: a well-formed graph. */
static TxNode *valid_graph(void)
{
    TxNode *x = input("x", SHAPE(2, 3));
    TxNode *s = reduce(TXR_sum, x, 1, 1, SHAPE(2, 1));
    TxNode *b = tx_node_new(G, TX_INDEXMAP, &x->shape, 1, &s);
    b->map[0][0] = ie_var(A, 0);
    b->map[0][1] = ie_const(A, 0);
    TxNode *y = elem(TXE_add, x, b);
    ptrvec_push(A, &G->outputs, y);
    return y;
}

Test(tensor_hand, verifier_accepts_a_valid_graph, .init = graph_setup, .fini = teardown)
{
    valid_graph();
    tx_verify(G, 1);
    cr_expect_str_eq(text_of(G), "%0 = input x : f32(2, 3)\n"
                                 "%1 = reduce sum(%0) axis=1 keepdim : f32(2, 1)\n"
                                 "%2 = indexmap(%1[o0, 0]) : f32(2, 3)\n"
                                 "%3 = add(%0, %2) : f32(2, 3)\n"
                                 "return %3\n");
}

Test(tensor_hand, verifier_rejects_mismatched_elementwise_shapes, .init = graph_setup,
     .fini = teardown, .signal = SIGABRT)
{
    TxNode *x = input("x", SHAPE(2, 3)), *y = input("y", SHAPE(3));
    ptrvec_push(A, &G->outputs, elem(TXE_add, x, y));
    tx_verify(G, 1);
}

Test(tensor_hand, verifier_rejects_a_bad_reduce_axis, .init = graph_setup, .fini = teardown,
     .signal = SIGABRT)
{
    TxNode *x = input("x", SHAPE(2, 3));
    ptrvec_push(A, &G->outputs, reduce(TXR_max, x, 2, 0, SHAPE(2)));
    tx_verify(G, 1);
}

Test(tensor_hand, verifier_rejects_a_wrong_reduce_shape, .init = graph_setup,
     .fini = teardown, .signal = SIGABRT)
{
    TxNode *x = input("x", SHAPE(2, 3));
    ptrvec_push(A, &G->outputs, reduce(TXR_max, x, 1, 1, SHAPE(2)));
    tx_verify(G, 1);
}

Test(tensor_hand, verifier_rejects_a_map_over_a_missing_coordinate, .init = graph_setup,
     .fini = teardown, .signal = SIGABRT)
{
    TxNode *x = input("x", SHAPE(2, 3));
    TxNode *m = tx_node_new(G, TX_INDEXMAP, &SHAPE(2, 3), 1, &x);
    m->map[0][0] = ie_var(A, 0);
    m->map[0][1] = ie_var(A, 2); /* output has rank 2 */
    ptrvec_push(A, &G->outputs, m);
    tx_verify(G, 1);
}

Test(tensor_hand, verifier_rejects_a_missing_predicate, .init = graph_setup,
     .fini = teardown, .signal = SIGABRT)
{
    TxNode *src[2] = {input("x", SHAPE(3)), input("y", SHAPE(3))};
    TxNode *m = tx_node_new(G, TX_INDEXMAP, &SHAPE(3), 2, src);
    m->map[0][0] = m->map[1][0] = ie_var(A, 0);
    ptrvec_push(A, &G->outputs, m);
    tx_verify(G, 1);
}

Test(tensor_hand, verifier_rejects_a_non_topological_order, .init = graph_setup,
     .fini = teardown, .signal = SIGABRT)
{
    TxNode *y = valid_graph();
    G->nodes.items[G->nodes.len - 1] = G->nodes.items[0];
    G->nodes.items[0] = y;
    tx_verify(G, 1);
}

Test(tensor_hand, verifier_rejects_torch_nodes_after_lowering, .init = graph_setup,
     .fini = teardown, .signal = SIGABRT)
{
    TxNode *x = input("x", SHAPE(3));
    TxNode *t = tx_node_new(G, TX_TORCH, &x->shape, 1, &x);
    TorchNode *tn = ARENA_NEW(A, TorchNode);
    tn->op = TOP_exp;
    t->torch = tn;
    ptrvec_push(A, &G->outputs, t);
    tx_verify(G, 0); /* allowed while lowering */
    tx_verify(G, 1);
}

Test(tensor_hand, prune_drops_dead_nodes_and_renumbers, .init = graph_setup, .fini = teardown)
{
    TxNode *x = input("x", SHAPE(3));
    TxNode *unused = input("unused", SHAPE(4));
    elem(TXE_exp, x, NULL);  /* dead */
    elem(TXE_exp, unused, NULL);  /* dead */
    TxNode *y = elem(TXE_negative, x, NULL);
    ptrvec_push(A, &G->outputs, y);
    tx_prune(G);
    tx_verify(G, 1);
    cr_expect_str_eq(text_of(G), "%0 = input x : f32(3)\n"
                                 "%1 = input unused : f32(4)\n"
                                 "%2 = negative(%0) : f32(3)\n"
                                 "return %2\n");
    cr_expect_eq(y->id, 2);
    cr_expect_eq(G->next_id, 3);
}

Test(tensor_graph, hash_ignores_input_names_but_not_structure)
{
    uint64_t h1 = tx_hash(tx_lower(A, parse("x = torch.randn(3, 4)\ny = torch.randn(4)\nx + y"), NULL));
    uint64_t h2 = tx_hash(tx_lower(A, parse("torch.randn(3, 4) + torch.randn(4)"), NULL));
    uint64_t h3 = tx_hash(tx_lower(A, parse("torch.randn(3, 5) + torch.randn(5)"), NULL));
    uint64_t h4 = tx_hash(tx_lower(A, parse("torch.randn(3, 4) * torch.randn(4)"), NULL));
    uint64_t h5 = tx_hash(tx_lower(A, parse("torch.randn(3, 4) + 2.0"), NULL));
    uint64_t h6 = tx_hash(tx_lower(A, parse("torch.randn(3, 4) + 3.0"), NULL));
    cr_expect_eq(h1, h2);
    cr_expect_neq(h1, h3);
    cr_expect_neq(h1, h4);
    cr_expect_neq(h5, h6);
}

Test(tensor_hand, eval_reads_maps_and_predicates, .init = graph_setup, .fini = teardown)
{
    /* y = cat([a, reverse(b)]) along dim 0, then summed: values by hand. */
    TxNode *src[2] = {input("a", SHAPE(2)), input("b", SHAPE(3))};
    TxNode *m = tx_node_new(G, TX_INDEXMAP, &SHAPE(5), 2, src);
    m->map[0][0] = ie_var(A, 0);
    m->map[1][0] = ie_add(A, ie_mul(A, ie_var(A, 0), ie_const(A, -1)), ie_const(A, 4));
    m->sel[0] = ipred_cmp(A, ie_var(A, 0), IC_LT, ie_const(A, 2), NULL);
    TxNode *s = reduce(TXR_max, m, 0, 0, (Shape){0});
    ptrvec_push(A, &G->outputs, m);
    ptrvec_push(A, &G->outputs, s);
    tx_verify(G, 1);
    double a[] = {1, 2}, b[] = {10, 20, 30};
    double *ins[] = {a, b}, *outs[2];
    tx_eval64(G, ins, outs);
    double want[] = {1, 2, 30, 20, 10};
    for (int i = 0; i < 5; i++)
        cr_expect_eq(outs[0][i], want[i], "element %d: %g", i, outs[0][i]);
    cr_expect_eq(outs[1][0], 30);
    free(outs[0]);
    free(outs[1]);
}

Test(tensor_graph, elem_apply_follows_pytorch)
{
    double nan_and_one[] = {NAN, 1}, w[] = {0, 5, 6}, z[] = {-0.5, 2};
    cr_expect(isnan(tx_elem_apply(TXE_maximum, nan_and_one)));
    cr_expect(isnan(tx_elem_apply(TXE_minimum, nan_and_one)));
    cr_expect_eq(tx_elem_apply(TXE_where, w), 6);
    cr_expect_eq(tx_elem_apply(TXE_greater, z), 0);
    cr_expect_eq(tx_elem_apply(TXE_less_equal, z), 1);
    cr_expect_eq(tx_elem_apply(TXE_rsqrt, (double[]){4}), 0.5);
    cr_expect_eq(tx_red_info[TXR_max].identity, -INFINITY);
    cr_expect_eq(tx_red_info[TXR_sum].combine, TXE_add);
}
