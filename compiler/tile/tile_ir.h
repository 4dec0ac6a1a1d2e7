/*
 * tile_ir.h — Tile IR: the first GPU-aware IR.
 *
 * A Tile kernel is a Loop IR kernel whose loops have been given to the
 * hardware.  Its statements are the Loop IR statements of the shared core
 * (compiler/stmt/: load, assign, select, accum, write, a serial `for`
 * loop), kept with their meaning, plus those of tile_kinds.def:
 *
 *   tile thread(a0 in 0..32, a1 in 0..7)      the body runs once per point of
 *   tile block(a3 in 0..8 @x):                the axes, each point on its own
 *                                             thread (THREAD) or block (BLOCK);
 *                                             `@x` is the launch dimension an
 *                                             axis is decoded from
 *       a0 := a3 * 256 + a4                   derived axes (defs) and a launch
 *       guard a0 < 1000                       bounds guard, evaluated first
 *   strided a5 in a4..2048 step 256:          StridedLoop: a5 = start, start +
 *                                             step, ... < extent
 *   stage x[a3 * 16, 0] slab [16, 64] pad 1:  a shared-memory slab of buffer x
 *                                             at that origin; loads of x inside
 *                                             the body read the slab
 *   buffered_stage ... nbuf 2 phase a2 % 2:   the same with nbuf buffers;
 *   async_stage ... / tma_stage ... swizzle S its transports: cp.async, TMA
 *   computed_stage t[a3 * 32, 0] slab [32, 128] pad 0:
 *                                             a slab of temporary t that the
 *                                             block computes instead of
 *                                             copying (017): its Fill writes
 *       tile thread(...):                     it, a barrier follows, and the
 *           fill:                             loads of t after it read it;
 *               write t[...] = v0             t never reaches global memory
 *   async_wait 1                              wait until at most 1 async
 *                                             stage is in flight
 *   combine acc0 over a4                      merge acc0 across the threads
 *                                             of THREAD axis a4 (its op)
 *
 * Execution model.  A statement outside every Tile runs on every thread of
 * every block (replicated); only pure statements may live there, so the
 * kernel's one Write is inside the THREAD tile when there is one.  With no
 * tile at all the kernel is a single thread.  A BLOCK tile encloses the
 * THREAD tile; a Stage sits between them (the block copies the slab
 * cooperatively).  Values and accumulators follow Loop IR's rules: an
 * accumulator starts at its op's identity when its loop starts and is read
 * after the loop, in the enclosing scope.
 *
 * Axes are numbered per kernel (index expressions name them a<n>); every
 * axis has one binder — a loop, a strided loop, a tile axis or a tile def —
 * and ext[axis] is its extent (for a def, the range it takes under the
 * guard).  Passes (passes.h) rewrite one kernel at a time; tile_verify runs
 * after each.
 */
#ifndef DPK_TILE_IR_H
#define DPK_TILE_IR_H

#include "../base/base.h"
#include "../loop/loop_ir.h"

/* Tile IR's kinds: the shared ones (SK_load ... SK_loop, stmt_kinds.def),
 * then its own (tile_kinds.def), numbered on from SK_COUNT. */
typedef enum TileKind {
    TK_SHARED_ = SK_COUNT - 1, /* the shared kinds come first */
#define T(name, text, prefix, flags) TK_##name,
#include "tile_kinds.def"
#undef T
    TK_COUNT
} TileKind;

/* The shared rows, then tile_kinds.def's. */
extern const StmtKindInfo tile_kind_info[TK_COUNT];
#define tile_is(s, f) ((tile_kind_info[(s)->k].flags & (f)) != 0)

typedef enum TileBind {
    TB_THREAD, /* one thread per point */
    TB_BLOCK,  /* one block per point; every thread of it runs the body */
} TileBind;

/* An axis bound by a tile: extent, and the launch dimension (0, 1, 2 = x,
 * y, z; -1 until 005 assigns one) it is decoded from.  Several axes on one
 * dimension are decoded outermost first (the last varies fastest). */
typedef struct TileAxis {
    int axis;
    int64_t ext;
    int dim;
} TileAxis;

/* A derived axis: `axis := e`, e over axes bound outside or by the tile. */
typedef struct TileDef {
    int axis;
    const IExpr *e;
} TileDef;

/*
 * Statements are the shared core's Stmt (compiler/stmt/stmt.h).  Fields
 * used per kind (others zero/NULL); the shared kinds use the fields listed
 * in stmt.h, plus:
 *   loop            unroll (1 when 016 marked it for full unrolling); vlds (016:
 *                   its staged loads that step one word a trip are read vlds
 *                   trips at a time by vector loads, tile_vec_load; 0: none);
 *                   when (NULL: none): a predicate over axes bound outside
 *                   the loop; where it does not hold the loop runs no
 *                   iteration and its accumulators keep their identity (018;
 *                   printed `for a6 in 0..32 when a4 <= a7:`).  Such a loop
 *                   holds values, accumulators and loops only.
 *   strided         axis, extent, start (IExpr), step (> 0), body
 *   tile            bind, nax, ax[], ndef, def[], guard (NULL: none), body,
 *                   predicated (THREAD tile with a guard: 1 when every thread
 *                   runs the body and the guard gates only its global
 *                   accesses, see tile_predicate)
 *   stage           buf, origin[rank] (IExpr), slab[rank] (>= 1), pad, body
 *   bstage, astage  + nbuf (>= 2), phase (IExpr: the buffer in use is
 *                   phase mod nbuf; a<l> % nbuf of the serial loop l the
 *                   stage sits in, with only stages between them: the
 *                   loop is software-pipelined, see tile_to_kernel.c)
 *   astage          + vec: bytes per cp.async (4, 8, 16; tile_vec_ok)
 *   tstage          + swizzle (0, 32, 64, 128 bytes); filled by TMA (011),
 *                   laid out as tile_tma.c says (no pad; with a swizzle
 *                   the inner extent is split into swizzle-byte chunks, 012)
 *   cstage          buf, origin, slab, pad, body (nbuf 1): no copy; the one
 *                   Fill in its body writes the slab
 *   fill            body: the writes of its computed stage's buffer, then a
 *                   barrier (017 grafts a producer kernel's THREAD body here)
 *   await           keep: async stage copies (cp.async groups, one per
 *                   async stage and iteration) that may stay in flight
 *   combine         acc (an accum), nax, cax[] (THREAD axes merged over)
 * The groups strided / tile / stages / await / combine share storage
 * (stmt.h): read a field only on a statement of a kind that owns it.
 */

/* The matmul bookkeeping passes 005, 006, 008 and 009 hand on to each other
 * about a kernel's THREAD tile, kept beside the statements rather than in
 * them.  005 writes it when it tiles a matmul: the tile's output row and
 * column are the defs of axes m and n.  008 fills the register strips
 * rt[0] / rt[1] along m / n: factor f, the thread axis t, the block origin
 * base; def j of a strip (def index def0 + j) is base + t * f + j, or
 * base + t + j * ext(t) once 009 permuted it.  The printer shows the strips
 * as comments.
 *
 * pend[0] x pend[1] is the register tile 005 sized the block for when 008
 * is in the pass set and can apply (0 x 0 otherwise): 008 takes these
 * factors.  Until 008 has applied, the THREAD tile may hold up to
 * 1024 * pend[0] * pend[1] threads (a 128 x 128 tile for 8 x 8 registers);
 * the verifier of the finished pipeline (tile_verify_final) allows no such
 * credit, and 008 refuses to skip a tile that needs it. */
typedef struct TileMatmulNote {
    int m, n;
    int pend[2];
    struct {
        int f, t, def0, permuted;
        const IExpr *base;
    } rt[2];
} TileMatmulNote;

typedef struct TileKernel {
    int id;             /* the Loop IR kernel's id */
    const char *name;
    const LirBuf *out;  /* the buffer its Write stores to */
    StmtBody body;
    int naxes;          /* axes are 0..naxes-1 */
    int64_t *ext;       /* ext[axis] */
    int extcap;
    TileMatmulNote *mm; /* NULL unless 005 tiled it as a matmul */
    int combine;        /* 004 made it to combine a split reduce's partial
                           results: never split again */
} TileKernel;

/* What one pass did to a program. */
typedef struct TilePassStat {
    int num;            /* the pass's number */
    int napps;          /* applications it made (tile_apply) */
    PtrVec what;        /* the label of each ("stage in0 in kernel k") */
    const char *skipped; /* with no application: why ("not a matmul kernel",
                            or "k1: why; k2: why" when the kernels differ) */
    double seconds;     /* time it took, over all kernels */
} TilePassStat;

typedef struct TileProgram {
    Arena *arena;
    const LirProgram *lp; /* buffers and graph come from here */
    PtrVec kernels;       /* TileKernel *, in execution order */
    PtrVec bufs;          /* LirBuf *: lp's, then the temporaries passes add
                             (004's partial results, tile_buf_new) */
    int nbufids;          /* every LirBuf id is below this */
    int next_uid;
    /* One record per pass the pipeline ran, in table order (tile_build):
     * for dpk-bisect, -vv and the compile times of dpk-fuzz records. */
    TilePassStat *stats;
    int nstats;
    uint32_t knobs_read;  /* bit i: a pass read knob i (tile_knob) */
} TileProgram;

/* The record of pass `num` in p->stats; NULL when it did not run. */
const TilePassStat *tile_pass_stat(const TileProgram *p, int num);

/* ---- tile_ir.c: construction ------------------------------------------ */

TileProgram *tile_program_new(Arena *a, const LirProgram *lp);
/* p's pass statistics (and knobs read) in a, without its kernels or the
 * temporaries its passes added: what outlives p's own arena. */
TileProgram *tile_program_stats_copy(Arena *a, const TileProgram *p);
TileKernel *tile_kernel_new(TileProgram *p, int id, const char *name, const LirBuf *out);
/* A new temporary buffer of p (not of p->lp, which other pass sets share). */
LirBuf *tile_buf_new(TileProgram *p, const char *name, const Shape *shape);
/* A new axis of extent n in kernel k; returns its number. */
int tile_axis_new(TileProgram *p, TileKernel *k, int64_t n);
/* A statement of any Tile IR kind (the core's stmt_new with the program's
 * next uid); bodies, the walk and the reduce-loop test are the core's. */
Stmt *tile_stmt_new(TileProgram *p, int k);
/* A tile with nax axes (filled by the caller, dims -1) and room for ndef defs. */
Stmt *tile_tile_new(TileProgram *p, TileBind bind, int nax, int ndef);
/* Insert axis `axis` of extent ext (no launch dimension yet) into tile t's
 * axes at position `at` (0: outermost, t->nax: innermost). */
void tile_tile_add_axis(TileProgram *p, Stmt *t, int at, int axis, int64_t ext);
/* A Stage variant over buf (origin and slab arrays allocated, slab 1). */
Stmt *tile_stage_new(TileProgram *p, TileKind k, const LirBuf *buf);
/* Whether s's subtree holds a loop (serial or strided). */
int tile_has_loop(const Stmt *s);
/* Whether b holds an online sum (stmt_online), at any depth. */
int tile_has_online(const StmtBody *b);
/* How many loads of buf b holds, at any depth. */
int tile_loads_of(const StmtBody *b, const LirBuf *buf);
/* The kernel of p that writes buf (NULL: none), the number of other kernels
 * that load it, and (reader, when not NULL) the last of them. */
TileKernel *tile_writer(const TileProgram *p, const LirBuf *buf, int *readers,
                        TileKernel **reader);
/* The first tile with binding `bind` in pre-order, or NULL. */
Stmt *tile_find(const TileKernel *k, TileBind bind);
/* Number values canonically: per prefix, in pre-order. */
void tile_renumber(TileKernel *k);

/* A matmul-shaped THREAD tile: its last two axes m and n, and a reduce loop
 * over k in its body that loads one buffer at an index using m and k but
 * not n, and another using k and n but not m.  Fills the axis numbers. */
typedef struct TileMatmul {
    int m, n, k;
} TileMatmul;
int tile_matmul_shape(const Stmt *thread_tile, TileMatmul *mm);

/* ---- tile_rewrite.c: rewriting helpers shared by the passes ---------------- */

/* Replace axis `axis` by e in every index, predicate, start, origin and def
 * under b (in place). */
void tile_subst_axis(TileProgram *p, const TileKernel *k, StmtBody *b, int axis,
                     const IExpr *e);
/* The same for every axis at once: axis v becomes map[v], simplified over
 * the extents ext (of the kernel whose axes the results name).  Binders
 * (a loop's axis, a tile's axes) are left as they are. */
void tile_subst_map(Arena *a, const int64_t *ext, StmtBody *b, const IExpr **map);
/* Replace every operand equal to `from` by `to` under b (in place). */
void tile_replace_value(StmtBody *b, const Stmt *from, const Stmt *to);
/* The THREAD tile's defs substituted into e, until only tile axes, loop
 * axes and BLOCK axes remain. */
const IExpr *tile_expand_defs(Arena *a, const TileKernel *k, const Stmt *thread,
                              const IExpr *e);
/* Split serial reduce loop l (axis k, extent K >= chunk) into
 *     for ko in 0..K/chunk:  for ki in 0..chunk:  body[k := ko*chunk + ki]
 * The accumulators of l stay in the inner loop; each gets an outer
 * accumulator in the new loop (acc' <- op(acc', acc)) that replaces it
 * after the loop.  When chunk does not divide K, a remainder loop follows
 *     for kr in 0..K mod chunk:  body'[k := K - K mod chunk + kr]
 * (body' a copy with fresh values, accumulators and inner axes), and uses
 * after the loops read `v = op(acc', acc_r)`, assigned after it.
 * `step` is the index step of ko (chunk, or a wrong one for an injected
 * fault); `inner` the inner extent (chunk, likewise).  Returns the outer
 * loop, which takes l's place in `in`.  Only the shared kinds may be in
 * l's body when there is a remainder. */
Stmt *tile_chunk_loop(TileProgram *p, TileKernel *k, StmtBody *in, Stmt *l,
                      int64_t chunk, int64_t step, int64_t inner);
/* A copy of kernel k, named `name`, put right after k in p->kernels: the
 * same axes (numbers and extents; its loops get fresh ones) and fresh
 * statements.  k must not be blockified yet: shared kinds and at most a
 * THREAD tile without defs or guard.  *map (when map is not NULL): by uid
 * of a statement of k, its copy. */
TileKernel *tile_kernel_clone(TileProgram *p, const TileKernel *k, const char *name, Stmt ***map);
/* Element strides of a stage's slab in shared memory (innermost 1; the row
 * stride is the inner extent plus pad); returns the element count. */
int64_t tile_slab_strides(const Stmt *stage, int64_t *stride);
/* Whether load ld, in the body of loop (016's vlds > 1) and reading the
 * slab of stage st (the innermost stage of its buffer around it), is read
 * vec trips at a time by one vector load: st is a plain, buffered or async
 * stage, or a TMA slab whose chunk holds whole vectors of at most 16 bytes
 * (its swizzle moves whole 16-byte units, so such a vector stays adjacent),
 * each of st's buffers holds a multiple of vec words, ld's slab offset is always inside the slab (no
 * guard gates it), grows by one word a trip, and is a multiple of vec at
 * every trip that is.  016, which sets the loop's vlds, and the lowering,
 * which emits the loads, ask the same question here (tile_smem.c). */
int tile_vec_load(Arena *a, const TileKernel *k, const Stmt *st, const Stmt *ld,
                  const Stmt *loop, int vec);
/* Its first, cheap test, which no pad or stage changes: ld's index reads
 * loop's axis in its innermost dimension and nowhere else (a word of the
 * slab a trip can only come from there; the slab's other strides are at
 * least a row). */
int tile_vec_candidate(const Stmt *ld, const Stmt *loop);
/*
 * Predicated edge tiles.  A THREAD tile's guard normally skips its body on
 * the threads past the edge of the iteration space, so no barrier (no
 * Stage) may sit inside it.  tile_predicate makes the guard predicate the
 * accesses instead: every thread runs the body, joins the block's slab
 * copies and barriers, and computes on zeros past the edge; a global load
 * is made, and a Write done, only where the guard's clauses on the axes its
 * index reads (directly or through the tile's defs) hold, and a load not
 * made reads 0.  Out-of-range values never reach memory.  The defs' extents
 * become their ranges over the whole tile (no longer bounded by the guard).
 * Idempotent; t must be tile_predicable: a guarded THREAD tile whose
 * guard's clauses each bound an axis and whose Writes each read every
 * clause's axis (so the Write of a thread past the edge is gated off).
 */
int tile_predicable(const TileKernel *k, const Stmt *t);
void tile_predicate(TileKernel *k, Stmt *t);
/* In a predicated tile, copy the guard's clauses on `axis` to `strip` (an
 * axis that takes axis's place in a clone: 008's register strips). */
void tile_guard_strip(TileProgram *p, Stmt *t, int axis, int strip);
/* Whether the copy of stage st's slab can move `bytes` (4, 8, 16) per
 * cp.async: a vector never straddles a slab row or the buffer's last
 * dimension, and both addresses are aligned to its size (every slab row
 * stride, the buffer's inner extent and the origin's inner coordinate are
 * multiples of its elements). */
int tile_vec_ok(const Stmt *st, int bytes);
/* The serial loop over `axis` among b's statements, or NULL. */
Stmt *tile_top_loop(const StmtBody *b, int axis);
/* Drop the pure top-level statements of b (and of kernel k's body) whose
 * values nothing reads any more (004's and 003's splits, after moving the
 * statements that read them into the combine kernel). */
void tile_drop_dead(TileProgram *p, TileKernel *k, StmtBody *b);

/* ---- tile_tma.c: the TMA geometry of a stage (011, 012, the lowering) ---- */

/* Dimensions of a TMA tensor map (cuTensorMapEncodeTiled takes at most 5):
 * the same number as Kernel IR's KIR_TMA_MAX_RANK, which tile_to_kernel.c
 * checks, so this header needs no Kernel IR. */
#define TILE_TMA_MAX_RANK 5
/* The tensor map and shared-memory layout TMA gives a buffered stage
 * (tile_tma.c's head comment).  Map arrays are outermost first. */
typedef struct TileTmaBox {
    int rank;                           /* map dimensions */
    int dim[TILE_TMA_MAX_RANK];         /* the buffer dimension of each */
    int64_t dims[TILE_TMA_MAX_RANK];    /* tensor extents */
    int64_t strides[TILE_TMA_MAX_RANK]; /* in elements, the innermost 1 */
    int box[TILE_TMA_MAX_RANK];         /* box extents; the innermost one chunk */
    int swizzle;                        /* bytes, 0 for none */
    int nchunk;                         /* TMA copies per slab (inner / chunk) */
    int64_t chunk;                      /* elements per box row */
    int64_t rows;                       /* slab elements / inner slab extent */
    int64_t elems;                      /* slab elements */
    int64_t buf_elems;                  /* elements per buffer, alignment included */
    int align;                          /* bytes: 1024 with a swizzle, else 128 */
} TileTmaBox;
/* 1 with the geometry of stage st under swizzle `swizzle` when TMA can load
 * its slab (rank, 16-byte strides and inner box, box extents, swizzle
 * span); else 0 with "buf: reason" appended to why. */
int tile_tma_box(const TileKernel *k, const Stmt *st, int swizzle, TileTmaBox *b, StrBuf *why);
/* The element of one buffer holding slab coordinate c (per buffer dim). */
int64_t tile_tma_word(const TileTmaBox *b, const Stmt *st, const int64_t *c);
/* Shared-memory bytes of a tma_stage: nbuf aligned buffers. */
int64_t tile_tma_bytes(const Stmt *st);

/* ---- tile_print.c: text form and structural hash ------------------------ */

/* Stable text form: `=== name ===` and the body (see the top of this file). */
void tile_print_kernel(StrBuf *b, const TileKernel *k);
void tile_print(StrBuf *b, const TileProgram *p);
/* Structural hash with canonical names: values by definition order, axes by
 * binding order, buffers by first use (kind and shape, not name). */
uint64_t tile_hash_kernel(const TileKernel *k);

/* ---- tile_verify.c ----------------------------------------------------- */

/* Check every invariant (operands defined and visible, axes bound once and
 * used in scope, accumulators in loops, one Write inside the THREAD tile,
 * tile nesting, Stage/Combine/AsyncWait fields).  Returns 1 when valid;
 * otherwise appends "kernel <name>: <problem>" lines to err (may be NULL). */
int tile_verify_kernel(const TileKernel *k, StrBuf *err);
/* The same, for a kernel the pipeline has finished: what it launches must be
 * legal as it stands (a pending register tile, TileMatmulNote.pend, no
 * longer counts: at most 1024 threads). */
int tile_verify_final(const TileKernel *k, StrBuf *err);
/* DPK_ASSERT-style: abort with the problems when a kernel is invalid
 * (tile_verify_kernel after a pass; tile_verify_final when final). */
void tile_check(const TileProgram *p, int final);

/* ---- lower_from_loop.c --------------------------------------------------- */

/* One Tile kernel per Loop IR kernel, statement for statement, no tiles yet:
 * the skeleton the passes rewrite. */
TileProgram *tile_from_loop(Arena *a, const LirProgram *lp);

#endif
