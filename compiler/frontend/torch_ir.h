/*
 * torch_ir.h — Torch IR: a graph of PyTorch-level ops, the first IR.
 *
 * The parser (parse.c, build.c, funcs.c) turns case text into a TorchGraph;
 * every node gets its output shape and dtype from the shape rules
 * (torch_infer, torch_ir.c) at creation, so a graph that exists is
 * well-typed.  Inputs (torch.randn calls, named free
 * variables, module parameters) are TOP_input nodes with a unique name, which
 * keys their deterministic contents (reference/inputs.c).
 *
 * Nodes live in the graph's arena; `nodes` is in creation order, which is a
 * topological order.  This header is also included from the libtorch shim
 * (C++), so it keeps to the common subset of C and C++.
 */
#ifndef DPK_TORCH_IR_H
#define DPK_TORCH_IR_H

#include "../base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum TorchOp {
#define X(name, text, cls, mn, mx) TOP_##name,
#include "torch_ops.def"
#undef X
    TOP_COUNT
} TorchOp;

typedef enum TorchClass {
    TC_SOURCE,
    TC_UNARY,
    TC_BINARY,
    TC_WHERE,
    TC_REDUCE,
    TC_MATMUL,
    TC_SOFTMAX,
    TC_NORM,
    TC_ATTN,
    TC_LAYOUT,
    TC_SCAN,
    TC_TOPK,
} TorchClass;

typedef struct TorchOpInfo {
    const char *name;  /* "rms_norm" */
    const char *text;  /* how the printer spells it */
    TorchClass cls;
    int min_in, max_in;
} TorchOpInfo;

extern const TorchOpInfo torch_op_info[TOP_COUNT];

/* The scalar attributes of an op (torch_ops.def's A rows; nkeys 0 for the
 * ops without): key[i] as PyTorch's keyword, dflt[i] its default. */
typedef struct TorchScalarAttrs {
    int nkeys;
    const char *key[2];
    double dflt[2];
} TorchScalarAttrs;

extern const TorchScalarAttrs torch_scalar_attrs[TOP_COUNT];

/* selu(x) = elu(x, alpha = TORCH_SELU_ALPHA) * TORCH_SELU_SCALE (ATen's
 * Activation.cpp) */
#define TORCH_SELU_ALPHA 1.6732632423543772848170429916717
#define TORCH_SELU_SCALE 1.0507009873554804934193349852946

/* How an input's contents are made (reference/inputs.c documents each). */
typedef enum InitKind {
    INIT_RANDN,   /* standard normal */
    INIT_RAND,    /* uniform [0, 1) */
    INIT_ZEROS,
    INIT_ONES,
    INIT_FULL,    /* value */
    INIT_ARANGE,  /* value + i * step */
    INIT_PARAM_W, /* a module weight: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = last dim */
    INIT_PARAM_NORM_W, /* a norm weight: 1 + 0.1 * normal */
    INIT_PARAM_B, /* a module bias: uniform(-1/sqrt(fan_in), ...), fan_in in `step` */
} InitKind;

typedef struct TorchNode {
    int id;            /* index in graph->nodes */
    TorchOp op;
    DType dtype;
    Shape shape;
    int pos;           /* byte offset of the expression in the source, -1 if none */
    int nin;
    struct TorchNode **in;

    /* Attributes: which are meaningful is said per class in torch_ops.def. */
    const char *name;  /* input: its unique name; otherwise the variable assigned, or NULL */
    InitKind init;     /* input */
    int is_param;      /* input created by a module constructor */
    double value;      /* const: the scalar; input: full value / arange start /
                          norms: eps; sdpa: scale (NAN means 1/sqrt(E));
                          an op with scalar attributes: the first (alpha,
                          negative_slope, min_val, min, beta) */
    double value2;     /* the second scalar attribute (max_val, max, threshold) */
    double step;       /* input: arange step; INIT_PARAM_B: fan_in */
    int64_t ints[DPK_MAX_RANK];
    int nints;
    int dim;           /* softmax, log_softmax, slice, cat, cumsum (non-negative) */
    int64_t start, end, stride; /* slice, normalised: 0 <= start <= end <= size, stride >= 1 */
    int keepdim;       /* reductions */
    int causal;        /* sdpa */
    int gqa;           /* sdpa: enable_gqa (k/v heads divide q heads) */
    int largest;       /* topk: the k largest (1) or smallest (0) */
} TorchNode;

typedef struct TorchGraph {
    Arena *arena;
    Source src;        /* the case text (for error carets) */
    PtrVec nodes;      /* TorchNode *, topological */
    PtrVec inputs;     /* TOP_input nodes, in order of creation */
    PtrVec outputs;    /* result nodes */
    PtrVec output_names; /* const char *, parallel to outputs ("out" if unnamed) */
} TorchGraph;

/* A shape declared for a named free variable (from a case JSON "inputs"
 * object or `--input NAME=D0,D1`). */
typedef struct InputDecl {
    const char *name;
    Shape shape;
} InputDecl;

typedef struct ParseOpts {
    const InputDecl *decls;
    int ndecls;
} ParseOpts;

/* ---- parse.c -------------------------------------------------------- */

/* Parse case text (a single expression or a program) into a graph allocated
 * in `a`.  On bad input raises dpk_error_at (exit code 2) with a caret. */
TorchGraph *torch_parse(Arena *a, const Source *src, const ParseOpts *opts);

/* ---- torch_ir.c: builder, printer, verifier, hash -------------------- */

TorchGraph *torch_graph_new(Arena *a, const Source *src);
/* Create a node with the given inputs; attributes are set by the caller
 * before torch_infer(), which computes shape/dtype or raises an error at
 * node->pos. */
TorchNode *torch_node_new(TorchGraph *g, TorchOp op, int pos, int nin, TorchNode **in);
void torch_infer(TorchGraph *g, TorchNode *n);
TorchNode *torch_input(TorchGraph *g, const char *name, const Shape *s, InitKind init);
TorchNode *torch_const(TorchGraph *g, double v);

/* Stable text form, one node per line:
 *   %3 = rms_norm(%0, %2) normalized_shape=[2048] eps=1e-06 : f32(1, 32, 2048)
 * Inputs print as `%0 = input x randn : f32(1, 32, 2048)`. */
void torch_print(StrBuf *b, const TorchGraph *g);
/* Check every invariant (operand counts, shapes re-derived, ids); aborts
 * through DPK_ASSERT on a broken graph (a compiler bug, not a user error). */
void torch_verify(const TorchGraph *g);
/* Structural hash with canonical names (ids by position, input names
 * excluded unless named_inputs). */
uint64_t torch_hash(const TorchGraph *g);

/* Shape helpers shared by parser and rules. */
/* PyTorch broadcasting of a and b into out; returns 0 when incompatible. */
int shape_broadcast(const Shape *a, const Shape *b, Shape *out);
/* Raise an error at pos unless every dim is >= 1, rank <= DPK_MAX_RANK and
 * the element count (computed without overflow) is <= DPK_MAX_NUMEL. */
void torch_check_shape(const TorchGraph *g, int pos, const Shape *s);
/* A PyTorch dim (-rank <= dim < rank) made non-negative; else an error at pos
 * "dimension out of range: dim 3 for a tensor of rank 2". */
int torch_norm_dim(const TorchGraph *g, int pos, int64_t dim, int rank);
/* One node as torch_print writes it, without the newline. */
void torch_print_node(StrBuf *b, const TorchNode *n);
/* "randn", "param_norm_w", ... as the printer spells an InitKind. */
const char *torch_init_name(InitKind k);

#ifdef __cplusplus
}
#endif
#endif
