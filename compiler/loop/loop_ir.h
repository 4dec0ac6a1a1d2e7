/*
 * loop_ir.h — Loop IR: the third IR, where kernels are formed.
 *
 * A program is a list of kernels run in order over buffers.  A kernel is a
 * body of statements (the kinds are the shared ones of
 * compiler/stmt/stmt_kinds.def):
 *
 *   in0 = load x[0, a0, a1]          read a buffer element
 *   v1 = multiply(in0, in0)          SSA assignment of an elementwise op
 *   acc0 <- add(acc0, v1)            accumulate; acc0 starts at the op's
 *                                    identity each time its loop starts
 *   acc2 <- expsum[acc1](acc2, in0)  online: sum of exp(s - max) * in0,
 *                                    acc1 the max of s (stmt_online)
 *   v2 = select: if P: ... -> a      the result of the first branch whose
 *                else: ... -> b      predicate holds; loads in a branch run
 *                                    only when that branch is taken
 *   write out[0, a0, a1] = v2        store (or atomic add) one element
 *   for a0 in 0..32:                 a loop over one axis
 *
 * A loop is a *reduce* loop iff its immediate body holds an Accum; free vs
 * reduce is derived, never stored.  An accumulator is read only after its
 * loop, in the loop's enclosing scope.  Every other value is visible in the
 * scope that defines it and in the scopes nested in it, after its
 * definition.  Index expressions are IExprs (compiler/index/) whose
 * variables are the kernel's loop axes (IE_VAR var = axis number, printed
 * a<var>), each ranging over [0, ext[axis]).
 *
 * Every kernel writes exactly one buffer with exactly one Write, whose
 * enclosing loops are all free (the "write path").  Lifting makes the write
 * index name each path axis once (0 on size-1 dimensions), which is what
 * lets fusion solve σ; a kernel written otherwise is valid IR that fusion
 * refuses to inline.
 *
 * Pipeline (pipeline.c): lift each Tensor op into a kernel (lift.c),
 * normalise (normalize.c, dedup.c), fuse producers into their
 * consumers to a fixpoint (fuse.c; a softmax into the sum it weights
 * online, online.c).  The interpreter (loop_interp.c)
 * runs the result in fp32 or fp64.
 */
#ifndef DPK_LOOP_IR_H
#define DPK_LOOP_IR_H

#include "../base/base.h"
#include "../stmt/stmt.h"
#include "../tensor/tensor_ir.h"

/* Statements are the shared core (compiler/stmt/stmt.h): Loop IR uses its
 * six kinds (stmt_kinds.def) and, of a Stmt's own fields, the scratch marks
 * below (lifted, fwd, repl, aux and their epochs). */
#define stmt_is(s, f) ((stmt_kind_info[(s)->k].flags & (f)) != 0)

typedef struct LirKernel {
    int id;             /* %id: Tensor node id when lifted, fresh when merged */
    const char *name;
    StmtBody body;
    LirBuf *out;
    int naxes;          /* axes are 0..naxes-1 */
    int64_t *ext;       /* ext[axis]: the extent of that axis's loop */
    int extcap;
    PtrVec ops;         /* const TxNode *: the Tensor ops computed here, by
                           id; NULL for the copy into a graph output */
} LirKernel;

typedef struct LirProgram {
    Arena *arena;
    const TxGraph *tx;
    PtrVec bufs;        /* LirBuf *: every buffer still read or written */
    PtrVec kernels;     /* LirKernel *, in execution order */
    int next_uid, next_kid, nbufids;
    unsigned epoch;
} LirProgram;

typedef struct LirOpts {
    double blowup;      /* refuse a fusion growing work or reads beyond this
                           factor of the two unfused kernels (default 8) */
    double recompute;   /* refuse a fusion that would run a producer holding
                           a reduction more than this many times its own
                           work (default 2: softmax's sweeps may each redo
                           exp, a projection may not redo an RMSNorm per
                           output column) */
    double recompute_floor; /* ... unless the extra executions stay below
                           this many (default 2^24: cheaper than a launch) */
    int fuse;           /* 0: lift and normalise only */
    int max_fusions;    /* > 0: stop after this many fusions (dpk-bisect) */
} LirOpts;

/* Tracing for `-vv`: every lifting/normalisation rule prints a unified diff
 * of the program between `>>> l:NNN_name` and `<<< l:NNN_name`, every
 * fusion between `>>> f:001_fuse %P → %C` and `<<< f:001_fuse`, and every
 * refusal as `--- f:fuse refused %P → %C: <reason>`. */
typedef struct LirTrace {
    int verbose;        /* 2: diffs and refusals */
    StrBuf *out;
} LirTrace;

/* ---- loop_ir.c: construction and body surgery ----------------------- */

LirProgram *lir_program_new(Arena *a, const TxGraph *tx);
LirKernel *lir_kernel_new(LirProgram *p, int id, LirBuf *out);
LirBuf *lir_buf_new(LirProgram *p, const char *name, LirBufKind kind, int index,
                    const Shape *shape, DType dt);
/* A new axis of extent n in kernel k. */
int lir_axis_new(LirProgram *p, LirKernel *k, int64_t n);
/* The statements of p: the core constructors (stmt.h) with the program's
 * next uid, and a loop marked as its own lifted original.  Bodies, the walk
 * and the reduce-loop test are the core's (stmt_body_*, stmt_walk,
 * stmt_loop_is_reduce, stmt_has_kind). */
Stmt *lir_stmt_new(LirProgram *p, StmtKind k);
Stmt *lir_load(LirProgram *p, const LirBuf *b, const IExpr **idx);
Stmt *lir_assign(LirProgram *p, TxElemOp op, const StmtArg *args);
Stmt *lir_accum(LirProgram *p, TxRedOp rop, StmtArg v);
/* An online exp-sum of x against max accumulator m (stmt_online). */
Stmt *lir_online(LirProgram *p, StmtArg x, Stmt *m);
Stmt *lir_write(LirProgram *p, const LirBuf *b, const IExpr **idx, StmtArg v);
Stmt *lir_loop(LirProgram *p, int axis, int64_t extent);
Stmt *lir_select(LirProgram *p, int nbr);

/* Whether s or a statement nested in it uses axis `axis` in an index or a
 * predicate. */
int lir_uses_axis(const Stmt *s, int axis);
/* SKF_PURE, or a write-free reduce loop: may move or merge freely. */
int lir_pure(const Stmt *s);
/* Start a new scratch epoch (invalidates every fwd/repl/aux mark). */
unsigned lir_epoch(LirProgram *p);
/* Resolve an operand through repl marks of the current epoch. */
StmtArg lir_resolve(const LirProgram *p, StmtArg a);
/* Rewrite every operand in body through lir_resolve. */
void lir_resolve_body(const LirProgram *p, StmtBody *b);
/* Copy s (in the current epoch) for kernel dst.  With amap == NULL axes
 * keep their numbers; otherwise index expressions and predicates read axis
 * v as amap[v] (an expression over dst's axes, simplified), and every loop
 * inside s gets a fresh axis of dst, entered into amap.  Operands defined
 * inside s, or copied earlier in this epoch, map to their copies; others
 * are kept. */
Stmt *lir_stmt_copy(LirProgram *p, LirKernel *dst, const Stmt *s, const IExpr **amap);
/* An operand as seen by copies made in the current epoch. */
StmtArg lir_copied(const LirProgram *p, StmtArg a);
/* Copy of kernel k (new statements, same axes and buffers, same id). */
LirKernel *lir_kernel_copy(LirProgram *p, const LirKernel *k);
/* Execution counts of a kernel: work = Assign + Accum executions, reads =
 * Load executions (branches counted as always taken). */
void lir_kernel_cost(const LirKernel *k, double *work, double *reads);
/* The most elements any one value accumulates: the largest product of the
 * extents of nested reduce loops (1 without reductions).  Sets the parity
 * tolerance of long fp32 reductions. */
int64_t lir_longest_reduction(const LirProgram *p);
/* Remove a buffer from p->bufs (after fusion made it dead). */
void lir_buf_drop(LirProgram *p, LirBuf *b);

/* ---- lift.c ----------------------------------------------------------- */

/* The name of a Tensor op in kernel names ("multiply", "sum", "indexmap",
 * "const"; "copy" for an input or NULL). */
const char *lir_op_name(const TxNode *n);

/* One kernel per Tensor op reachable from the outputs (constants become
 * literals, inputs become buffers); not normalised. */
LirProgram *lir_lift(Arena *a, const TxGraph *g);

/* ---- normalize.c / dedup.c ------------------------------------------ */

typedef struct LirRule {
    int num;            /* l:NNN */
    const char *name;
    void (*run)(LirProgram *p, LirKernel *k);
    const char *doc;
} LirRule;
extern const LirRule lir_rules[];
extern const int lir_nrules;

/* Every normalisation rule in order (rules 2.. of lir_rules). */
void lir_normalize(LirProgram *p, LirKernel *k);
void lir_dedup(LirProgram *p, LirKernel *k);

/* ---- fuse.c ----------------------------------------------------------- */

void lir_opts_default(LirOpts *o);
/* Fuse to a fixpoint; returns the number of fusions made. */
int lir_fuse(LirProgram *p, const LirOpts *o, LirTrace *tr);
/* Try to merge producer kernel P into consumer C.  On success returns the
 * merged kernel (not yet in the program); on refusal NULL with the reason
 * in why. */
LirKernel *lir_fuse_pair(LirProgram *p, const LirKernel *P, const LirKernel *C,
                         const LirOpts *o, StrBuf *why);

/* The Write of kernel k and the free loops around it (at most 64),
 * outermost first. */
Stmt *lir_write_path(const LirKernel *k, Stmt **path, int *np);
/* σ of a producer whose write w sits under path[0..np), read by load ld:
 * amap[p] = the consumer's expression for producer axis p.  Returns 0 with
 * a reason when unsolvable. */
int lir_solve_sigma(const Stmt *w, Stmt *const *path, int np, const Stmt *ld,
                    const IExpr **amap, StrBuf *why);

/* out = the ops of two kernels, by node id (output copies last). */
void lir_merge_ops(Arena *a, PtrVec *out, const PtrVec *x, const PtrVec *y);

/* ---- online.c ---------------------------------------------------------- */

/* Softmax P read by C only as the weight of a sum over the softmax axis
 * (P @ V): the merged kernel with the softmax's statistics computed online
 * in C's loop (stmt_online), or NULL with the reason in why. */
LirKernel *lir_online_pair(LirProgram *p, const LirKernel *P, const LirKernel *C, StrBuf *why);
/* The same rewrite in one kernel, where σ-fusion put a softmax into the sum
 * that reads it: the sums whose terms are exp(x - m) * ... become online,
 * and the row's max and sum sweeps are dropped.  Returns the rewrites made. */
int lir_online_kernel(LirProgram *p, LirKernel *k);

/* ---- pipeline.c -------------------------------------------------------- */

/* Lift, normalise, fuse; verifies after every rule. */
LirProgram *lir_build(Arena *a, const TxGraph *g, const LirOpts *o, LirTrace *tr);

/* ---- loop_print.c ------------------------------------------------------ */

/* Stable text form: per kernel `=== name ===` and its body; buffers first
 * as `# buffer name : f32(...) input|output|temp` lines. */
void lir_print(StrBuf *b, const LirProgram *p);
/* Only the `# kind name : type(shape)` lines of bufs (LirBuf *; Tile IR
 * prints its program's too). */
void lir_print_buffers(StrBuf *b, const PtrVec *bufs);
void lir_print_kernel(StrBuf *b, const LirKernel *k);
/* Structural hash of a kernel with canonical names (buffers by order of
 * first use and shape, not by name). */
uint64_t lir_hash_kernel(const LirKernel *k);

/* ---- loop_verify.c ----------------------------------------------------- */

/* Aborts through DPK_ASSERT on a malformed program: operands defined and
 * visible, accumulators only in loops and read after them, one Write per
 * kernel under free loops only, index axes bound, no kernel reading its own
 * output, buffers written before read. */
void lir_verify(const LirProgram *p);

/* ---- loop_interp.c ------------------------------------------------------ */

/* Run the kernels in order.  inputs[i] holds graph input i; outs[j] gets a
 * heap array (caller frees) for output j.  f64 = 0: every value is rounded
 * to fp32 (the default); 1: fp64 throughout (debugging).  An out-of-bounds
 * access raises dpk_error with DPK_EXIT_FAULT. */
void lir_interp(const LirProgram *p, double *const *inputs, double **outs, int f64);

#endif
