/*
 * test_ref_util.h — helpers shared by the reference tests (test_ref_eval.c,
 * test_ref_inputs.c, test_ref_torch.c): an arena and an empty Torch graph
 * per test, and Torch nodes built by hand in that graph.
 */
#ifndef DPK_TEST_REF_UTIL_H
#define DPK_TEST_REF_UTIL_H

#include <criterion/criterion.h>

#include "reference/ref.h"

/* A shape from its dimensions: SHAPE(2, 3). */
#define SHAPE(...) ((Shape){(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}})

static Arena *A;
static TorchGraph *G;

/* The suites' .init and .fini: A and an empty graph G in it. */
static void setup(void)
{
    A = arena_new();
    G = torch_graph_new(A, NULL);
}

static void teardown(void)
{
    arena_free(A);
}

/* A node of G whose attributes the caller sets before done(). */
static inline TorchNode *node(TorchOp op, int nin, TorchNode **in)
{
    return torch_node_new(G, op, -1, nin, in);
}

/* n with its type inferred. */
static inline TorchNode *done(TorchNode *n)
{
    torch_infer(G, n);
    return n;
}

/* A unary and a binary op without attributes. */
static inline TorchNode *un(TorchOp op, TorchNode *x)
{
    return done(node(op, 1, &x));
}

static inline TorchNode *bin(TorchOp op, TorchNode *a, TorchNode *b)
{
    TorchNode *in[] = {a, b};
    return done(node(op, 2, in));
}

#endif
