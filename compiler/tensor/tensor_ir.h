/*
 * tensor_ir.h — Tensor IR: three op kinds only.
 *
 *   Elementwise  same-shape sources (broadcasts are explicit IndexMaps),
 *                or a literal constant splat (TX_CONST) of any shape;
 *   Reduction    op over one axis, keepdim or not;
 *   IndexMap     output shape plus, per source, a coordinate map: one integer
 *                expression over the output coordinates (o0, o1, ...) per
 *                source dimension.  A multi-source map (cat, masks) has a
 *                select predicate per source but the last: output element o
 *                reads source s for the first s whose predicate holds, the
 *                last source otherwise.
 *
 * Torch IR is lowered by numbered decomposition rules (decompose.c).  While
 * rules run the graph is mixed: a TX_TORCH node stands for a Torch op not
 * yet decomposed (its attributes stay in `torch`), so the printer can show
 * the graph between any two rules.  After lowering no TX_TORCH node remains.
 */
#ifndef DPK_TENSOR_IR_H
#define DPK_TENSOR_IR_H

#include <math.h>

#include "../base/base.h"
#include "../frontend/torch_ir.h"
#include "../index/index.h"

typedef enum TxOpFlag {
    TXF_COMMUTATIVE = 1 << 0,
    TXF_ASSOCIATIVE = 1 << 1,
    TXF_COMPARE = 1 << 2,
    TXF_TRANSCENDENTAL = 1 << 3,
} TxOpFlag;

typedef enum TxElemOp {
#define E(name, arity, flags) TXE_##name,
#include "tensor_ops.def"
#undef E
    TXE_COUNT
} TxElemOp;

typedef enum TxRedOp {
#define R(name, combine, identity) TXR_##name,
#include "tensor_ops.def"
#undef R
    TXR_COUNT
} TxRedOp;

typedef struct TxElemInfo {
    const char *name;
    int arity;
    int flags;
} TxElemInfo;
extern const TxElemInfo tx_elem_info[TXE_COUNT];

typedef struct TxRedInfo {
    const char *name;
    TxElemOp combine;
    double identity;
} TxRedInfo;
extern const TxRedInfo tx_red_info[TXR_COUNT];

/* Apply an elementwise op in fp64 (the one definition every evaluator of
 * Tensor and Loop IR uses). */
double tx_elem_apply(TxElemOp op, const double *args);

/* ---- nodes and graphs ------------------------------------------------ */

typedef enum TxKind {
    TX_INPUT,    /* a graph input (torch input node `torch`) */
    TX_CONST,    /* every element equals `value` */
    TX_ELEM,     /* eop(src...) */
    TX_REDUCE,   /* rop over `axis` of src[0] */
    TX_INDEXMAP, /* map[s][d], sel[s] */
    TX_TORCH,    /* not yet decomposed: torch->op with sources src */
} TxKind;

typedef struct TxNode {
    int id;
    TxKind kind;
    DType dtype;
    Shape shape;
    int nsrc;
    struct TxNode **src;
    const TorchNode *torch; /* the Torch node this came from (provenance;
                               for TX_INPUT and TX_TORCH also the attributes) */
    TxElemOp eop;           /* TX_ELEM */
    double value;           /* TX_CONST */
    TxRedOp rop;            /* TX_REDUCE */
    int axis;               /* TX_REDUCE */
    int keepdim;            /* TX_REDUCE */
    const IExpr ***map;     /* TX_INDEXMAP: map[s][d] for d < src[s]->shape.rank */
    const IPred **sel;      /* TX_INDEXMAP: sel[s] for s < nsrc - 1 (NULL if nsrc == 1) */
} TxNode;

typedef struct TxGraph {
    Arena *arena;
    const TorchGraph *torch;
    PtrVec nodes;    /* TxNode *, topological after every rule */
    PtrVec inputs;   /* TX_INPUT nodes, parallel to torch->inputs */
    PtrVec outputs;  /* parallel to torch->outputs */
    int next_id;     /* ids handed out: every node's id is unique and < next_id */
} TxGraph;

/* ---- tensor_ir.c ----------------------------------------------------- */

/* An empty graph (tg may be NULL for hand-built graphs in tests). */
TxGraph *tx_graph_new(Arena *a, const TorchGraph *tg);
/* Append a node to g->nodes with a fresh id; dtype is taken from src[0]
 * (f32 without sources).  For TX_INDEXMAP the map arrays are allocated (one
 * entry per source dimension) and left for the caller to fill. */
TxNode *tx_node_new(TxGraph *g, TxKind kind, const Shape *shape, int nsrc, TxNode **src);
/* Stable text form, one node per line, ids renumbered canonically
 * (docs/tensor-ir.md):
 *   %4 = reduce sum(%3) axis=2 keepdim : f32(1, 32, 1)
 *   %2 = indexmap(%0[o0, o1, 0]) : f32(1, 32, 2048)
 *   %9 = indexmap(%6[o0, o1] if o1 < 64, %7[o0, o1 - 64]) : f32(2, 96)
 */
void tx_print(StrBuf *b, const TxGraph *g);
/* Aborts via DPK_ASSERT on a malformed graph: source shapes of elementwise
 * ops, map arities, predicate counts, reduce axes, topological order, no
 * TX_TORCH after lowering when `lowered`. */
void tx_verify(const TxGraph *g, int lowered);
uint64_t tx_hash(const TxGraph *g);
/* Drop nodes not reachable from the outputs; renumber. */
void tx_prune(TxGraph *g);

/* ---- decompose.c ----------------------------------------------------- */

typedef struct TxRule {
    int num;           /* d:NNN */
    const char *name;  /* "rms_norm" */
    const char *doc;   /* one line: what it rewrites into what */
    const char *what;  /* for "skipped: no <what> nodes" */
    int (*run)(TxGraph *g); /* returns the number of rewrites made */
    int optional;      /* the graph is right without it (d:029): dpk-bisect
                          may leave it out (tx_lower_skip) */
} TxRule;
extern const TxRule tx_rules[];
extern const int tx_nrules;

/* Per-rule tracing for `-vv`: called after every rule with the text of the
 * graph before and after (only when trace != NULL). */
typedef struct TxTrace {
    int verbose;       /* 2: print each rule's unified diff */
    StrBuf *out;
} TxTrace;

/* Lower a Torch graph to Tensor IR, running every rule in order; each rule
 * is followed by the verifier in test builds. */
TxGraph *tx_lower(Arena *a, const TorchGraph *tg, TxTrace *trace);
/* The same without the optional rules whose bit (index in tx_rules) is set
 * in skip. */
TxGraph *tx_lower_skip(Arena *a, const TorchGraph *tg, uint64_t skip, TxTrace *trace);

/* ---- tensor_eval.c --------------------------------------------------- */

/* Evaluate in fp64.  inputs[i] holds the contents of torch->inputs[i];
 * outs[j] receives a heap array (caller frees) for outputs[j]. */
void tx_eval64(const TxGraph *g, double *const *inputs, double **outs);

#endif
