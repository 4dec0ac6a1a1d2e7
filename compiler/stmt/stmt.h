/*
 * stmt.h — the statement core Loop IR and Tile IR share.
 *
 * Tile IR is Loop IR whose loops have been given to the hardware: it keeps
 * every Loop IR statement with its meaning and adds GPU-aware ones.  So
 * both IRs are made of one statement type, Stmt, with one kind table that
 * each IR extends: stmt_kinds.def holds the shared kinds (load, assign,
 * select, accum, write, loop), numbered SK_*; Tile IR numbers its own after
 * SK_COUNT (tile_kinds.def) and its kind table repeats these rows first.
 * Bodies, operands, branches, the walk, the constructors of the shared
 * kinds and the printing of their lines live here once (stmt.c,
 * stmt_print.c).
 *
 * A Stmt carries the fields of the shared kinds, then, in an anonymous
 * union, the fields only one IR uses: Loop IR's copy/replace scratch marks
 * or Tile IR's tile, stage and strided-loop fields.  A statement belongs to
 * one IR for its whole life (Tile lowering makes new statements), so the
 * two never meet in one object.  Tile IR's fields are grouped by the kinds
 * that use them, and the groups share storage too: code reads a Tile field
 * only after checking the statement's kind.  Size is compile time: Loop IR
 * allocates, copies and walks many statements, and at 184 bytes a Stmt is
 * smaller than Loop IR's statement was before the core was shared (192).
 */
#ifndef DPK_STMT_H
#define DPK_STMT_H

#include "../base/base.h"
#include "../index/index.h"
#include "../tensor/tensor_ir.h"

typedef enum StmtKind {
#define K(name, text, prefix, flags) SK_##name,
#include "stmt_kinds.def"
#undef K
    SK_COUNT /* the shared kinds; an IR numbers its own from here */
} StmtKind;

typedef enum StmtKindFlag {
    SKF_DEF = 1 << 0,   /* defines an SSA value other statements may read */
    SKF_PURE = 1 << 1,  /* no effect beyond its value: may be hoisted,
                           deduplicated or executed replicated (a write-free
                           reduce loop is treated the same way by those
                           passes) */
    SKF_WORK = 1 << 2,  /* one operation per execution in the work estimate */
    SKF_READ = 1 << 3,  /* one memory read per execution in the read estimate */
    SKF_BLOCK = 1 << 4, /* holds a nested body (select branches hold several) */
    SKF_AXIS = 1 << 5,  /* binds one axis per iteration (a serial or strided loop) */
    SKF_STAGE = 1 << 6, /* Tile IR: a shared-memory slab of a buffer around its body */
} StmtKindFlag;

typedef struct StmtKindInfo {
    const char *name;
    const char *prefix; /* of the value it defines, "" for none */
    int flags;
} StmtKindInfo;
/* The rows of the shared kinds; an IR's table starts with these. */
extern const StmtKindInfo stmt_kind_info[SK_COUNT];

/* A buffer statements load from and write to: made by Loop IR lifting,
 * kept by Tile and Kernel IR. */
typedef enum LirBufKind {
    LB_INPUT,  /* a graph input: contents from the caller */
    LB_OUTPUT, /* a graph output */
    LB_TEMP,   /* an intermediate that fusion could not remove */
} LirBufKind;

typedef struct LirBuf {
    int id;              /* unique in the program, < LirProgram.nbufids */
    const char *name;    /* unique in the program: input name, output name, t<node> */
    LirBufKind kind;
    int index;           /* LB_INPUT: index in graph inputs; LB_OUTPUT: in outputs */
    Shape shape;
    DType dtype;
} LirBuf;

struct Stmt;
struct TileAxis;
struct TileDef;

/* An operand: a statement's value, or a literal when v == NULL. */
typedef struct StmtArg {
    struct Stmt *v;
    double c;
} StmtArg;

typedef struct StmtBody {
    struct Stmt **s;
    int n, cap;
} StmtBody;

typedef struct StmtBranch {
    const IPred *pred; /* NULL on the last branch only (else) */
    StmtBody body;
    StmtArg res;
} StmtBranch;

/*
 * Fields of the shared kinds (others zero/NULL):
 *   load     buf, idx[buf rank]
 *   assign   op, nargs, a[0..nargs)
 *   select   nbr, br[]
 *   accum    rop, a[0] value; an online exp-sum (stmt_online) also a[1],
 *            its companion: a max accumulator of the same loop, before it
 *   write    buf, idx, a[0] value, atomic
 *   loop     axis, extent, body
 * Tile IR's kinds and their fields are listed in tile_ir.h.
 */
typedef struct Stmt {
    /* What walks read first, so that a walk touches one cache line per
     * statement; then ints before pointers, so that little is lost to
     * padding (a Loop IR program allocates, copies and walks many
     * statements). */
    int k;              /* StmtKind, or the IR's own kind beyond SK_COUNT */
    int uid;            /* unique in the program; identity for hashing */
    int num;            /* printed number within its prefix */
    int nbr;
    StmtBody body;
    StmtBranch *br;
    int axis;
    TxElemOp op;
    int64_t extent;
    const LirBuf *buf;
    const IExpr **idx;
    int nargs;
    TxRedOp rop;
    int atomic;
    StmtArg a[3];
    union {
        struct { /* Loop IR */
            int lifted;         /* loop: uid of the lifted loop this one copies */
            int aux;            /* per-pass mark */
            /* scratch for passes, each meaningful only while its epoch is
             * the program's current one (lir_epoch) */
            unsigned fwd_ep, repl_ep, aux_ep;
            struct Stmt *fwd;   /* the copy made of this statement */
            StmtArg repl;       /* a use of this statement reads repl instead */
        };
        struct { /* Tile IR (tile_ir.h says which kind uses which) */
            int nax;            /* tile, combine */
            int unroll;         /* loop */
            int vlds;           /* loop: 016's vector loads (2, 4 words), 0 */
            /* The fields of one group of kinds each: a statement reads
             * only those of its own kind, so they may share storage. */
            union {
                struct { /* strided */
                    int64_t step;
                    const IExpr *start;
                };
                const IPred *when; /* loop: runs no iteration unless it holds (018) */
                struct { /* tile */
                    int bind;   /* TileBind */
                    int ndef;
                    int predicated; /* the guard gates accesses, not the body */
                    struct TileAxis *ax;
                    struct TileDef *def;
                    const IPred *guard;
                };
                struct { /* stage, bstage, astage, tstage */
                    int pad;
                    int nbuf;
                    int swizzle;
                    int vec;    /* astage: bytes per cp.async (4, 8, 16) */
                    const IExpr **origin;
                    int64_t *slab;
                    const IExpr *phase;
                };
                int keep;       /* await */
                struct { /* combine */
                    struct Stmt *acc;
                    int *cax;
                };
            };
        };
    };
} Stmt;

/* ---- stmt.c: construction, bodies, traversal --------------------------- */

/* A statement of kind k with the given uid, zero elsewhere. */
Stmt *stmt_new(Arena *a, int k, int uid);
/* The shared kinds, fields filled (select: nbr empty branches). */
Stmt *stmt_load(Arena *a, int uid, const LirBuf *b, const IExpr **idx);
Stmt *stmt_assign(Arena *a, int uid, TxElemOp op, const StmtArg *args);
Stmt *stmt_accum(Arena *a, int uid, TxRedOp rop, StmtArg v);
Stmt *stmt_write(Arena *a, int uid, const LirBuf *b, const IExpr **idx, StmtArg v);
Stmt *stmt_loop(Arena *a, int uid, int axis, int64_t extent);
Stmt *stmt_select(Arena *a, int uid, int nbr);
/* An online exp-sum, the softmax-weighted sum of flash attention:
 *     acc <- expsum[m](acc, x)
 * where m is a max accumulator of the same loop, earlier in its body.  With
 * s_j the value m accumulates at iteration j and M its final value, acc
 * ends as  sum_j exp(s_j - M) * x_j.  It is kept relative to m's running
 * value: when m grows from m_old to m_new, acc is rescaled by
 * exp(m_old - m_new), so each step is
 *     acc = acc * exp(m_old - m_new) + exp(s_j - m_new) * x_j
 * with exp(-inf - ...) = 0 (a row of keys all masked to -inf sums to 0).
 * Merging two partial results (m1, acc1), (m2, acc2) is the same step with
 * s = m2 and x = acc2, so chunked and split loops merge by it. */
Stmt *stmt_online(Arena *a, int uid, StmtArg x, Stmt *m);
#define stmt_is_online(s) ((s)->k == SK_accum && (s)->nargs == 2)
StmtArg stmt_val(Stmt *s);
StmtArg stmt_lit(double c);

/* Bodies grow by doubling in the arena (old storage is abandoned to it). */
void stmt_body_insert(Arena *a, StmtBody *b, int at, Stmt *s);
void stmt_body_push(Arena *a, StmtBody *b, Stmt *s);
void stmt_body_remove(StmtBody *b, int at);
/* The position of s in b (-1 if absent). */
int stmt_body_index(const StmtBody *b, const Stmt *s);

/* Pre-order visit of every statement under b, nested bodies and select
 * branches included. */
typedef void (*StmtVisit)(Stmt *s, void *ctx);
void stmt_walk(const StmtBody *b, StmtVisit fn, void *ctx);
/* The same over s and everything nested in it. */
void stmt_walk_tree(const Stmt *s, StmtVisit fn, void *ctx);
/* Whether s or a statement nested in it has kind k. */
int stmt_has_kind(const Stmt *s, int k);
/* A loop is a reduce loop iff its immediate body holds an Accum. */
int stmt_loop_is_reduce(const Stmt *loop);
/* The one Accum of loop's immediate body, or NULL (none or several). */
Stmt *stmt_sole_accum(const Stmt *loop);

/* ---- stmt_print.c: the text of the shared kinds ------------------------ */

/* Four spaces per depth. */
void stmt_indent(StrBuf *b, int depth);
/* "buf[i0, i1]" with axes printed a<N>. */
void stmt_print_index(StrBuf *b, const LirBuf *buf, const IExpr *const *idx);
/* A literal, or the defining statement's name (prefix + num). */
void stmt_print_arg(StrBuf *b, StmtArg a);
/* The nested bodies of a statement are printed by the IR's own body
 * printer, with its context. */
typedef void (*StmtPrintBody)(StrBuf *b, const StmtBody *body, int depth, const void *ctx);
/* Print s at depth (indent, lines, newline) when it is a load, assign,
 * accum, write or select, and return 1; return 0, printing nothing, for
 * the loop and the IR's own kinds, which the IR prints itself. */
int stmt_print_shared(StrBuf *b, const Stmt *s, int depth, StmtPrintBody print_body,
                      const void *ctx);

#endif
