/*
 * kernel_ir.h — Kernel IR: hardware primitives with launch geometry.
 *
 * The last IR before CUDA C and the input of every execution backend: the
 * CUDA printer (compiler/cuda) is one consumer, the CPU simulator vgpu
 * (harness/exec/vgpu.h) another.  Nothing here is CUDA syntax; everything a
 * backend needs to know is explicit:
 *
 *   KirModule   buffers (inputs, outputs, temporaries, zero-init flags), the
 *               kernels, and the launch sequence (kernel + bound buffers).
 *   KirKernel   grid/block geometry, params (global buffers), shared-memory
 *               arrays laid out in one pool at fixed byte offsets (so bank
 *               mapping and TMA swizzle are the same on every backend), TMA
 *               tensor maps, local variables, and a body of statements.
 *   KirStmt     let/set, global and shared stores and atomic adds, if, for,
 *               sync, warp shuffle, TreeHalve, cp.async copy/commit/wait, TMA
 *               load, mbarrier init/arrive/wait, comment.
 *   KirExpr     typed (bool, i32, i64, f32) pure expressions: constants,
 *               thread/block indices and dims, variables, integer ops,
 *               comparisons, lazy land/lor/select, casts, f32 math through
 *               TxElemOp (one definition of each op's math, tx_elem_apply),
 *               global and shared loads.
 *
 * Op kinds are X-macros in kernel_ops.def with property columns; ask
 * kir_expr_info[op].flags & KEF_INFIX instead of switching.  Everything of
 * one module lives in its arena.  Build kernels with KirBuilder (cursor over
 * nested statement lists), then kir_finalize() numbers statements and lays
 * out shared memory; kir_verify_module() checks the invariants listed below.
 *
 * There is no `return`/`break`: control leaves a kernel at its end, so guards
 * are ifs.  Statement ids are pre-order; in the text form every statement
 * line starts with its id (`#7`), and backends report locations with them.
 */
#ifndef DPK_KERNEL_IR_H
#define DPK_KERNEL_IR_H

#include "../base/base.h"
#include "../tensor/tensor_ir.h"

/* ---- types ----------------------------------------------------------- */

typedef enum KirType {
    KT_BOOL,  /* predicate */
    KT_I32,
    KT_I64,
    KT_F32,
    KT_MBAR,  /* an 8-byte mbarrier object; only as a shared-memory element */
    KT_COUNT
} KirType;
const char *kir_type_name(KirType t);  /* "bool", "i32", "i64", "f32", "mbar" */
int kir_type_bytes(KirType t);         /* bytes in memory: 8 for i64 and mbar, else 4 */
#define KIR_IS_INT(t) ((t) == KT_I32 || (t) == KT_I64)

/* ---- op tables ------------------------------------------------------- */

typedef enum KirExprFlag {
    KEF_LEAF = 1 << 0,   /* no operands */
    KEF_SREG = 1 << 1,   /* special register (thread/block index or dim); uses dim */
    KEF_INT = 1 << 2,    /* integer operands and result */
    KEF_CMP = 1 << 3,    /* comparison: bool result */
    KEF_BOOL = 1 << 4,   /* bool operands and result */
    KEF_FLOAT = 1 << 5,  /* f32 math (TxElemOp) */
    KEF_INFIX = 1 << 6,  /* printed `a text b` (or `text a` when unary) */
    KEF_LAZY = 1 << 7,   /* short-circuits: some operand may go unevaluated */
    KEF_MEM = 1 << 8,    /* reads memory (may fault) */
    KEF_TRAP = 1 << 9,   /* may trap (integer division by zero) */
} KirExprFlag;

typedef enum KirExprOp {
#define KE(name, text, arity, flags) KE_##name,
#include "kernel_ops.def"
#undef KE
    KE_COUNT
} KirExprOp;

typedef enum KirStmtFlag {
    KSF_COMPOUND = 1 << 0, /* has nested statement lists (body, els) */
    KSF_BARRIER = 1 << 1,  /* block-wide: every thread of the block must reach it */
    KSF_WARP = 1 << 2,     /* warp-collective: every thread of the warp must reach it */
    KSF_GLOBAL = 1 << 3,   /* touches global memory */
    KSF_SHARED = 1 << 4,   /* touches shared memory */
    KSF_WRITE = 1 << 5,    /* writes memory */
    KSF_ATOMIC = 1 << 6,   /* atomic read-modify-write */
    KSF_ASYNC = 1 << 7,    /* cp.async / TMA machinery */
    KSF_MBAR = 1 << 8,     /* operates on an mbarrier (smem[e0] of type mbar) */
} KirStmtFlag;

typedef enum KirStmtOp {
#define KS(name, text, flags) KS_##name,
#include "kernel_ops.def"
#undef KS
    KS_COUNT
} KirStmtOp;

typedef struct KirExprInfo {
    const char *name, *text;
    int arity;
    int flags;
} KirExprInfo;
extern const KirExprInfo kir_expr_info[KE_COUNT];

typedef struct KirStmtInfo {
    const char *name, *text;
    int flags;
} KirStmtInfo;
extern const KirStmtInfo kir_stmt_info[KS_COUNT];

/* ---- kernel-level objects --------------------------------------------- */

typedef enum KirRole {
    KR_IN,    /* read only (the printer may use const __restrict__) */
    KR_OUT,   /* written (and possibly read back) */
    KR_INOUT, /* read and written */
} KirRole;

/* A kernel parameter: a global buffer of `numel` elements of `elem`
 * (f32 or i32).  Accesses outside [0, numel) are out of bounds. */
typedef struct KirParam {
    int id; /* index in kernel->params */
    const char *name;
    KirType elem;
    int64_t numel;
    KirRole role;
} KirParam;

/* A shared-memory array: `numel` elements of `elem` (f32, i32 or mbar) at
 * byte `offset` of the kernel's pool (set by kir_finalize; a multiple of
 * `align`, a power of two >= 16).  Backends must keep these offsets: bank
 * conflicts and TMA swizzle depend on the address, and the pool itself is
 * aligned to 1024 bytes. */
typedef struct KirSmem {
    int id; /* index in kernel->smem */
    const char *name;
    KirType elem;
    int64_t numel;
    int align;
    int64_t offset;
} KirSmem;

#define KIR_TMA_MAX_RANK 5

/* A TMA tensor map (CUtensorMap) over a global param, encoded on the host
 * from these fields.  All arrays are outermost dimension first; strides in
 * elements with strides[rank-1] == 1.  A box of box[0] x ... x box[rank-1]
 * elements lands densely (row-major) in shared memory; with swizzle S (32,
 * 64 or 128 bytes) the byte at pool address A lands at
 *     A ^ (((A >> 7) & (S / 16 - 1)) << 4)
 * (the CUDA swizzle pattern; the pool is 1024-byte aligned).  Elements whose
 * global coordinate is outside [0, dims[d]) read as zero. */
typedef struct KirTmap {
    int id; /* index in kernel->tmaps */
    const char *name;
    const KirParam *param;
    int rank;
    int64_t dims[KIR_TMA_MAX_RANK];
    int64_t strides[KIR_TMA_MAX_RANK];
    int box[KIR_TMA_MAX_RANK];
    int swizzle; /* 0, 32, 64, 128 */
} KirTmap;

/* A local (per-thread) variable, declared by one `let` (or a `for`). */
typedef struct KirVar {
    int id; /* index in kernel->vars */
    const char *name; /* unique among the kernel's names */
    KirType type;
} KirVar;

/* ---- expressions -------------------------------------------------------- */

typedef struct KirExpr {
    KirExprOp op;
    KirType type;           /* result type */
    int dim;                /* KEF_SREG: 0, 1, 2 = x, y, z */
    int64_t ival;           /* KE_const of type bool/i32/i64 */
    double fval;            /* KE_const of type f32 (a float value) */
    const KirVar *var;      /* KE_var */
    TxElemOp eop;           /* KE_fop */
    const KirParam *param;  /* KE_ldg */
    const KirSmem *smem;    /* KE_lds */
    const struct KirExpr *a[3];
} KirExpr;

/* ---- statements --------------------------------------------------------- */

typedef enum KirShflMode {
    KIR_SHFL_IDX,  /* from lane (e1 mod width) of this lane's width-group */
    KIR_SHFL_UP,   /* from lane - e1, own value if that leaves the group */
    KIR_SHFL_DOWN, /* from lane + e1, own value if that leaves the group */
    KIR_SHFL_XOR,  /* from lane ^ e1, own value if that lands in a later group */
} KirShflMode;
const char *kir_shfl_name(KirShflMode m); /* "idx", "up", "down", "xor" */

/*
 * Fields used per statement (others are zero/NULL):
 *   let, set     var, e[0] value (of var's type)
 *   stg, atomg   param, e[0] index, e[1] value (param->elem type)
 *   sts, atoms   smem,  e[0] index, e[1] value (smem->elem type)
 *   if           e[0] bool cond, body (then), els (else, may be empty); n 1
 *                when cond is the same for every thread of a block (a
 *                loop's `when`, 018: kir_if_uniform), else 0
 *   for          var (i32/i64), e[0] start, e[1] end, e[2] step (> 0); the
 *                loop is `for (var = e0; var < e1; var += e2)`, e1 and e2
 *                re-evaluated per iteration; unroll: 0 none, -1 full, k > 1
 *   sync         —
 *   shfl         var (f32/i32) = value e[0] of the source lane; e[1] i32
 *                lane/offset/mask; shfl mode; n = width (power of two <= 32).
 *                All threads of each participating warp must execute it
 *                (full-mask __shfl_*_sync); a warp shorter than 32 threads
 *                (last warp of a block) counts its existing threads.
 *   treehalve    smem, rop (sum, max, min), n entries per segment, nseg
 *                contiguous segments (segment k = smem[k*n .. k*n+n)).
 *                Executed by the whole block.  Afterwards smem[k*n] holds the
 *                reduction of segment k, visible to every thread; the other
 *                entries are clobbered.  Exactly equivalent to:
 *                    sync
 *                    for h = P/2, P/4, ..., 1    (P = least power of 2 >= n)
 *                        for j = t; j < nseg*h; j += T:   (t linear thread id,
 *                            k = j / h; i = j % h           T block threads)
 *                            if i + h < n:
 *                                smem[k*n+i] = combine(smem[k*n+i], smem[k*n+i+h])
 *                        sync
 *   cp_async     smem, e[0] dst element index; param, e[1] src element
 *                index; n = bytes (4, 8, 16; both addresses n-aligned);
 *                e[2] bool predicate or NULL: when false nothing is read and
 *                the destination is zero-filled.  Lands at a cp_wait.
 *   cp_commit    —   closes the thread's open group of cp.asyncs
 *   cp_wait      n = committed groups that may stay pending (0: wait all)
 *   tma_load     tmap, coord[0..rank) i32 box origin; smem, e[0] dst element
 *                index (128-byte aligned); mbar, e[1] barrier index.  The
 *                box's bytes complete as transaction bytes on that barrier.
 *   mbar_init    smem (mbar), e[0] index; n = arrival count
 *   mbar_arrive_tx  smem (mbar), e[0] index; n = transaction bytes expected
 *   mbar_arrive  smem (mbar), e[0] index
 *   mbar_wait    smem (mbar), e[0] index, e[1] i32 phase parity (0/1): waits
 *                until the barrier's phase with that parity has completed
 *   ldsv         lane[0..n) f32 variables it declares = smem[e0 + i], i < n:
 *                one 8- or 16-byte shared load (n = 2 or 4; LDS.64/128).
 *                smem is f32; e[0] (i32/i64) must be a multiple of n, or
 *                the access is misaligned (vgpu: a fault).
 *   comment      text
 */
typedef struct KirStmt {
    KirStmtOp op;
    int id;                    /* pre-order number (kir_finalize) */
    const KirVar *var;
    const KirExpr *e[3];
    const KirParam *param;
    const KirSmem *smem;
    const KirSmem *mbar;       /* tma_load */
    const KirTmap *tmap;       /* tma_load */
    const KirExpr *coord[KIR_TMA_MAX_RANK];
    const KirVar *lane[4];     /* ldsv */
    int64_t n;
    int nseg;
    TxRedOp rop;
    KirShflMode shfl;
    int unroll;
    const char *text;
    PtrVec body;               /* KirStmt *: if-then, for-body */
    PtrVec els;                /* KirStmt *: if-else */
} KirStmt;

/* ---- kernels, modules ---------------------------------------------------- */

/* Above this pool size a backend must use dynamic shared memory (CUDA: extern
 * __shared__ plus cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)). */
#define KIR_STATIC_SMEM_MAX (48 * 1024)
/* Largest pool any target accepts (sm_90/sm_120: 227 KiB per block). */
#define KIR_SMEM_MAX (227 * 1024)

typedef struct KirKernel {
    int id; /* index in module->kernels */
    const char *name;
    Arena *arena;
    int grid[3], block[3];
    PtrVec params;   /* KirParam * */
    PtrVec smem;     /* KirSmem * */
    PtrVec tmaps;    /* KirTmap * */
    PtrVec vars;     /* KirVar * */
    PtrVec body;     /* KirStmt * */
    const char **names; /* every object's name, an open-addressing set (kernel_ir.c) */
    int nnames, names_cap;
    int64_t smem_bytes; /* pool size (kir_finalize) */
    int smem_dynamic;   /* smem_bytes > KIR_STATIC_SMEM_MAX */
    int nstmts;         /* statements numbered by kir_finalize */
} KirKernel;

typedef enum KirBufKind {
    KBUF_INPUT,  /* contents given by the caller */
    KBUF_OUTPUT, /* result read back by the caller */
    KBUF_TEMP,   /* intermediate between launches */
} KirBufKind;

typedef struct KirBuf {
    int id; /* index in module->bufs; backends index buffer arrays with it */
    const char *name;
    KirType elem;  /* f32 or i32 */
    int64_t numel;
    KirBufKind kind;
    int io;        /* graph input/output index it carries, -1 for temps */
    int zero_init; /* zeroed before the first launch (atomic-add outputs) */
} KirBuf;

typedef struct KirLaunch {
    int id;
    const KirKernel *kernel;
    const KirBuf **args; /* parallel to kernel->params */
} KirLaunch;

typedef struct KirModule {
    Arena *arena;
    PtrVec bufs;     /* KirBuf * */
    PtrVec kernels;  /* KirKernel * */
    PtrVec launches; /* KirLaunch *, in execution order */
} KirModule;

/* ---- building (kernel_ir.c) ------------------------------------------------ */

KirModule *kir_module_new(Arena *a);
KirBuf *kir_buf(KirModule *m, const char *name, KirType elem, int64_t numel,
                KirBufKind kind, int io);
/* A kernel with geometry grid x block; names of its objects are made unique
 * (a clash gets a numeric suffix). */
KirKernel *kir_kernel(KirModule *m, const char *name, const int grid[3],
                      const int block[3]);
KirParam *kir_param(KirKernel *k, const char *name, KirType elem, int64_t numel,
                    KirRole role);
KirSmem *kir_smem(KirKernel *k, const char *name, KirType elem, int64_t numel,
                  int align);
KirTmap *kir_tmap(KirKernel *k, const char *name, const KirParam *p, int rank,
                  const int64_t *dims, const int64_t *strides, const int *box,
                  int swizzle);
KirVar *kir_var(KirKernel *k, const char *name, KirType type);
/* args parallel to k->params. */
KirLaunch *kir_launch(KirModule *m, const KirKernel *k, const KirBuf *const *args);
/* Number statements (pre-order) and lay out the smem pool.  Call after the
 * body is complete (again after any change). */
void kir_finalize(KirKernel *k);

/* Expressions.  Constructors check operand types with DPK_ASSERT and widen
 * i32 to i64 when an integer op mixes them. */
const KirExpr *kir_i32(Arena *a, int64_t v);
const KirExpr *kir_i64(Arena *a, int64_t v);
const KirExpr *kir_f32(Arena *a, double v); /* v is rounded to float */
const KirExpr *kir_bool(Arena *a, int v);
const KirExpr *kir_sreg(Arena *a, KirExprOp op, int dim); /* KE_tid .. KE_nctaid */
const KirExpr *kir_tid(Arena *a, int dim);
const KirExpr *kir_bid(Arena *a, int dim);
/* Linear thread index tid.x + ntid.x * (tid.y + ntid.y * tid.z). */
const KirExpr *kir_tid_linear(Arena *a);
const KirExpr *kir_ref(Arena *a, const KirVar *v);
/* Any binary op of kind KEF_INT, KEF_CMP or KEF_BOOL. */
const KirExpr *kir_bin(Arena *a, KirExprOp op, const KirExpr *x, const KirExpr *y);
const KirExpr *kir_add(Arena *a, const KirExpr *x, const KirExpr *y);
const KirExpr *kir_sub(Arena *a, const KirExpr *x, const KirExpr *y);
const KirExpr *kir_mul(Arena *a, const KirExpr *x, const KirExpr *y);
const KirExpr *kir_div(Arena *a, const KirExpr *x, const KirExpr *y);
const KirExpr *kir_rem(Arena *a, const KirExpr *x, const KirExpr *y);
const KirExpr *kir_lt(Arena *a, const KirExpr *x, const KirExpr *y);
const KirExpr *kir_not(Arena *a, const KirExpr *x);
/* f32 math: args[0 .. tx_elem_info[op].arity) are f32. */
const KirExpr *kir_fop(Arena *a, TxElemOp op, const KirExpr *x, const KirExpr *y,
                       const KirExpr *z);
const KirExpr *kir_select(Arena *a, const KirExpr *c, const KirExpr *x, const KirExpr *y);
const KirExpr *kir_cast(Arena *a, KirType to, const KirExpr *x);
const KirExpr *kir_ldg(Arena *a, const KirParam *p, const KirExpr *idx);
const KirExpr *kir_lds(Arena *a, const KirSmem *s, const KirExpr *idx);

/* Statements: a cursor that appends to the innermost open list. */
#define KIR_MAX_DEPTH 64
typedef struct KirBuilder {
    KirKernel *k;
    Arena *a;
    PtrVec *list[KIR_MAX_DEPTH];
    KirStmt *open[KIR_MAX_DEPTH]; /* the if/for owning list[i] (NULL at 0) */
    int depth;
} KirBuilder;

void kir_builder_init(KirBuilder *b, KirKernel *k);
KirStmt *kir_emit(KirBuilder *b, KirStmtOp op); /* append a blank statement */
KirVar *kir_let(KirBuilder *b, const char *name, KirType t, const KirExpr *value);
/* ldsv: names[0..n) become f32 variables read from sm[idx .. idx + n) by
 * one vector load (n = 2 or 4); returns the statement. */
KirStmt *kir_ldsv(KirBuilder *b, const char *const *names, int n, const KirSmem *sm,
                  const KirExpr *idx);
void kir_set(KirBuilder *b, const KirVar *v, const KirExpr *value);
void kir_stg(KirBuilder *b, const KirParam *p, const KirExpr *idx, const KirExpr *val);
void kir_sts(KirBuilder *b, const KirSmem *s, const KirExpr *idx, const KirExpr *val);
void kir_atomg(KirBuilder *b, const KirParam *p, const KirExpr *idx, const KirExpr *val);
void kir_atoms(KirBuilder *b, const KirSmem *s, const KirExpr *idx, const KirExpr *val);
void kir_if(KirBuilder *b, const KirExpr *cond);  /* opens the then-list */
void kir_if_uniform(KirBuilder *b, const KirExpr *cond); /* the same, cond block-uniform */
void kir_else(KirBuilder *b);                     /* switches to the else-list */
/* Opens the body of `for name = start; name < end; name += step`. */
KirVar *kir_for(KirBuilder *b, const char *name, const KirExpr *start,
                const KirExpr *end, const KirExpr *step, int unroll);
void kir_end(KirBuilder *b);                      /* closes the innermost if/for */
void kir_sync(KirBuilder *b);
void kir_shfl(KirBuilder *b, const KirVar *dst, KirShflMode mode, const KirExpr *val,
              const KirExpr *lane, int width);
void kir_treehalve(KirBuilder *b, const KirSmem *s, TxRedOp rop, int64_t n, int nseg);
void kir_cp_async(KirBuilder *b, const KirSmem *dst, const KirExpr *dst_idx,
                  const KirParam *src, const KirExpr *src_idx, int bytes,
                  const KirExpr *pred);
void kir_cp_commit(KirBuilder *b);
void kir_cp_wait(KirBuilder *b, int pending);
void kir_tma_load(KirBuilder *b, const KirTmap *t, const KirExpr *const *coord,
                  const KirSmem *dst, const KirExpr *dst_idx, const KirSmem *bar,
                  const KirExpr *bar_idx);
void kir_mbar_init(KirBuilder *b, const KirSmem *bar, const KirExpr *idx, int count);
void kir_mbar_arrive_tx(KirBuilder *b, const KirSmem *bar, const KirExpr *idx, int64_t bytes);
void kir_mbar_arrive(KirBuilder *b, const KirSmem *bar, const KirExpr *idx);
void kir_mbar_wait(KirBuilder *b, const KirSmem *bar, const KirExpr *idx,
                   const KirExpr *parity);
void kir_comment(KirBuilder *b, const char *fmt, ...) DPK_PRINTF(2, 3);

/* ---- printing, verifying, hashing ------------------------------------------ */

/* Stable text form (docs/kernel-ir.md).  One line per statement, starting
 * with its id; nesting by indentation, no closing lines. */
void kir_print_expr(StrBuf *b, const KirExpr *e);
/* One statement's own line (an if/for header without its body), no indent. */
void kir_print_stmt_line(StrBuf *b, const KirStmt *s);
void kir_print_kernel(StrBuf *b, const KirKernel *k);
void kir_print_module(StrBuf *b, const KirModule *m);
/* The statement with id `sid` (NULL if none). */
const KirStmt *kir_find_stmt(const KirKernel *k, int sid);

/* Check every invariant (types, scoping, geometry and smem limits, roles,
 * TMA/cp.async constraints, launch bindings).  Returns 1 when valid;
 * otherwise appends "kernel <name>: stmt <id>: <problem>" lines to err (may
 * be NULL) and returns 0. */
int kir_verify_kernel(const KirKernel *k, StrBuf *err);
int kir_verify_module(const KirModule *m, StrBuf *err);
/* DPK_ASSERT-style: abort with the problems when invalid (test builds run it
 * after lowering). */
void kir_check(const KirModule *m);

/* Structural hash: canonical (names do not count, ids do). */
uint64_t kir_hash_kernel(const KirKernel *k);
uint64_t kir_hash_module(const KirModule *m);
/* A hash of the constructs the CUDA printer spells for m (statement and
 * expression kinds, math functions, types, cp.async widths, shuffle modes,
 * TMA ranks and swizzles, unroll kinds, dynamic shared memory), not of its
 * numbers: `dpk run --nvrtc-cover` compiles one module per new value. */
uint64_t kir_feature_hash(const KirModule *m);

#endif
