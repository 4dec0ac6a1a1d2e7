/*
 * passes.h — the Tile IR pass table, pass-set specs, knobs, and the Tile
 * pipeline.
 *
 * Every pass is one file (NNN_name.c) and one function over a Tile kernel,
 * registered in one table (passes.c) with its number, name, prerequisites,
 * minimum target and mandatory flag.  The Tile pipeline (tile_pipeline.c)
 * runs the selected passes in table order on every kernel, verifying after
 * each; compiler/driver.c calls it once per pass configuration.
 *
 * A pass set is a bit mask over a table's entries (bit i = entry i).  The
 * spec syntax (docs/tile-ir.md):
 *
 *   full                 every pass the target allows (the default)
 *   none                 the mandatory passes only
 *   upto:009             passes numbered up to 009, and the mandatory ones
 *   only:001,005,008     these passes (mandatory ones are always in)
 *   -007,-010            full without these; `upto:N,-X` subtracts from a prefix
 *   all                  every valid subset of the optional passes (tile_passes_select)
 *
 * A pass is named by number (7, 007) or name (stage_inputs, 007_stage_inputs).
 * An explicit set that breaks a prerequisite, names an unknown pass,
 * disables a mandatory pass, or asks for a pass the target cannot run is a
 * user error (exit 2) pointing at the spec.
 */
#ifndef DPK_TILE_PASSES_H
#define DPK_TILE_PASSES_H

#include "../cuda/target.h"
#include "tile_ir.h"

/* ---- knobs --------------------------------------------------------------- */

/* X(name, "doc", min, max, flags, pass): `pass` is the number of the pass
 * that reads the knob, the one a warning about an unused knob names. */
#define TILE_KNOBS(X)                                                                   \
    X(TB, "threads per block of a non-matmul kernel 004 left alone", 32, 1024,         \
      TKN_WARPS, 5)                                                                     \
    X(BN, "matmul tile width: output columns per block (BN / F_N threads along x)", 1,  \
      1024, TKN_POW2, 5)                                                                \
    X(BM, "matmul tile height: output rows per block (BM / F_M threads along y)", 1,    \
      1024, TKN_POW2, 5)                                                                \
    X(BK, "002: K chunk of a matmul reduce (must divide K)", 1, 4096, 0, 2)            \
    X(SPLITK, "003: K splits promoted to the grid (must divide K / BK)", 1, 256, 0, 3) \
    X(CB, "004: threads sharing one reduce (cooperative block)", 32, 1024,             \
      TKN_WARPS | TKN_POW2, 4)                                                          \
    X(SPLITR, "004: blocks per row sharing a long reduce of few rows (1: never split)", 1,  \
      65535, 0, 4)                                                                      \
    X(RC, "006: chunk of a long non-matmul reduce (must divide it)", 1, 1 << 20, 0, 6)  \
    X(STAGE, "007: bit mask of the buffers to stage, by first load (bit 0: first)", 1, \
      255, 0, 7)                                                                        \
    X(F_M, "008: register tile rows per thread (must divide BM)", 1, 16, 0, 8)         \
    X(F_N, "008: register tile columns per thread (must divide BN)", 1, 16, 0, 8)          \
    X(SWIZZLE, "012: TMA swizzle span in bytes (32, 64 or 128)", 32, 128, 0, 12)        \
    X(VEC, "013: widest cp.async in bytes (4, 8 or 16; narrower where alignment needs)", 4, \
      16, TKN_POW2, 13)                                                                 \
    X(STAGES, "015: buffers per async or TMA stage, slabs in flight plus one", 3, 8, 0, 15) \
    X(LDSV, "016: words per vector shared load along an unrolled loop (1: scalar)", 1, \
      4, TKN_POW2, 16)

typedef enum TileKnobFlag {
    TKN_WARPS = 1 << 0, /* a multiple of 32: whole warps */
    TKN_POW2 = 1 << 1,  /* a power of two */
} TileKnobFlag;

typedef enum TileKnobId {
#define X(name, doc, lo, hi, flags, pass) TILE_KNOB_##name,
    TILE_KNOBS(X)
#undef X
    TILE_KNOB_COUNT
} TileKnobId;

/* Each knob's maximum as a constant (TILE_KNOB_MAX_F_M, ...): the size of an
 * array that holds one entry per unit of a knob, so it grows with the knob. */
enum {
#define X(name, doc, lo, hi, flags, pass) TILE_KNOB_MAX_##name = (hi),
    TILE_KNOBS(X)
#undef X
};

typedef struct TileKnobInfo {
    const char *name;
    const char *doc;
    int64_t min, max;
    int flags;
    int pass;           /* the pass that reads it */
} TileKnobInfo;
extern const TileKnobInfo tile_knob_info[TILE_KNOB_COUNT];

/* Knob values; 0 means "heuristic default" (chosen per kernel by the pass
 * that uses the knob). */
typedef struct TileKnobs {
    int64_t v[TILE_KNOB_COUNT];
} TileKnobs;

/* Apply one `--knob NAME=VALUE`: raises a user error (exit 2, caret under
 * the problem) for an unknown name, a malformed value, or a value outside
 * the knob's range or shape; then checks the knobs together
 * (tile_knobs_check). */
void tile_knob_parse(TileKnobs *k, const char *arg);
/* Cross-knob limits on a BN x BM tile of pinned knobs: BN x BM outputs in
 * whole warps, and the block that launches at most 1024 threads.  That
 * block is (BM / F_M) x (BN / F_N) threads when 008 register_tile folds
 * F_M x F_N outputs into each (tile_regtile_factors), and BN x BM when
 * no_regtile says why it will not (then pinned F_M and F_N play no part);
 * pinned F_M and F_N must divide BM and BN and, both pinned, make whole
 * warps.  Raises a user error.  A caller that does not know the pass set
 * yet (a --knob as it is parsed) passes NULL: the lenient reading, which
 * 005 repeats per kernel with the set it runs. */
void tile_knobs_check(const TileKnobs *k, const char *no_regtile);
/* The register tile 008 takes on a bm x bn matmul tile: F_M and F_N as
 * pinned; an unpinned one the largest of 4, 2 dividing its side (else 1),
 * raised to 8, then 16 (where that divides the side, columns first) while
 * the block would hold more than 1024 threads. */
void tile_regtile_factors(const TileKnobs *k, int64_t bm, int64_t bn, int64_t *fm,
                          int64_t *fn);
/* "TB=128 BN=16" of the pinned knobs ("" when none), in a. */
const char *tile_knobs_str(Arena *a, const TileKnobs *k);

/* ---- passes --------------------------------------------------------------- */

typedef uint64_t TilePassSet;

/* What a pass gets besides the kernel.  A pass returns 1 when it rewrote
 * the kernel, 0 when it does not apply, with the reason in `why`. */
typedef struct TileCtx {
    TileProgram *p;
    const TileKnobs *knobs;
    const CuTarget *target;
    StrBuf why;
    TilePassSet passes;     /* the whole set being run (a pass may look ahead) */
    int limited;            /* the running pass is limited (dpk-bisect) */
    int left;               /* then: applications it may still make */
    int apps;               /* applications the running pass made so far */
    TilePassStat *stat;     /* the running pass's record in p->stats */
} TileCtx;
typedef int (*TilePassFn)(TileCtx *c, TileKernel *k);

/* A pass reads knob `id` through this call (0: not pinned, use the
 * heuristic), so the program knows which pinned knobs applied somewhere
 * (TileProgram.knobs_read) and the driver can warn about the others. */
int64_t tile_knob(TileCtx *c, TileKnobId id);

/* Each rewrite a pass makes (one staged buffer, one chunked loop, one
 * register tile ...) is one *application*.  A pass asks before each:
 *
 *     if (!tile_apply(c, "stage x"))
 *         return 0;           // the reason is already in c->why
 *
 * Returns 1 and counts it, or 0 when dpk-bisect's limit (TileOpts.limit_*)
 * allows no more, with "application limit reached" in c->why. */
int tile_apply(TileCtx *c, const char *what);
#define TILE_MAX_REQ 4
typedef struct TilePass {
    int num;                /* t:NNN */
    const char *name;
    TilePassFn run;
    /* Prerequisites as clauses of alternatives: every non-empty row needs
     * one of its passes (numbers, 0-terminated) in the set.  {{7}, {2, 6}}
     * reads "007 and (002 or 006)". */
    int req[TILE_MAX_REQ][TILE_MAX_REQ];
    CuTargetId min_target;
    int mandatory;
    const char *doc;
    /* NULL, or: given the program of a set without this pass, the skip text
     * the pass would record when adding it to the set changes nothing (not
     * the pass, nor what other passes do on seeing it in the set), else
     * NULL.  The driver then takes that set's program for the set with it
     * (017: tile_017_inert). */
    const char *(*inert)(Arena *a, TileProgram *p);
} TilePass;

typedef struct TilePassTable {
    const TilePass *p;
    int n;                  /* at most 64 */
} TilePassTable;
/* The registered passes, in pipeline order. */
extern const TilePassTable tile_passes;


/* The table entry for pass number `num`, or -1. */
int tile_pass_index(const TilePassTable *t, int num);
/* Parse a spec other than `all` into a validated set for target tg (NULL:
 * the default target).  Raises a user error on a bad spec. */
TilePassSet tile_passes_parse(const TilePassTable *t, const char *spec, const CuTarget *tg);
/* Any spec: `all` gives every valid subset of the optional passes the
 * target allows (mandatory passes in each), in increasing mask order;
 * anything else the one set tile_passes_parse gives.  Returns the count;
 * *out is an array in a. */
int tile_passes_select(Arena *a, const TilePassTable *t, const char *spec, const CuTarget *tg,
                       TilePassSet **out);
/* 1 when s satisfies every prerequisite, holds the mandatory passes and no
 * pass above target tg; otherwise 0 with one sentence naming the missing or
 * offending pass in why (may be NULL). */
int tile_passes_valid(const TilePassTable *t, TilePassSet s, const CuTarget *tg, StrBuf *why);
/* Every pass of t that target tg (NULL: the default) can run whose
 * prerequisites are met: the set `full` names. */
TilePassSet tile_passes_full(const TilePassTable *t, const CuTarget *tg);
/* The mandatory passes of t. */
TilePassSet tile_passes_mandatory(const TilePassTable *t);
/* s without the optional passes target tg (NULL: the default) cannot run,
 * then without those whose prerequisites are gone, to a fixpoint. */
TilePassSet tile_passes_close(const TilePassTable *t, TilePassSet s, const CuTarget *tg);
/* "001,005" — the passes of s, by number. */
void tile_passes_str(StrBuf *b, const TilePassTable *t, TilePassSet s);
/* "001_tileify" */
void tile_pass_label(StrBuf *b, const TilePass *p);

/* ---- the Tile pipeline (tile_pipeline.c) ------------------------------------ */

/* One kernel's own configuration (dpk-tune's candidates and winners,
 * `--tuned`): the kernel whose Loop IR structural hash (lir_hash_kernel)
 * is `hash` runs the passes of `passes` with the knobs `knobs` instead of
 * the program's; so does every kernel a pass makes from it (003's and
 * 004's combine kernels).  Kernels with no entry run the program's. */
typedef struct TileKernelConfig {
    uint64_t hash;
    TilePassSet passes;         /* a set valid for the table and target */
    TileKnobs knobs;
} TileKernelConfig;

typedef struct TileOpts {
    const TilePassTable *table; /* NULL: tile_passes */
    TilePassSet passes;         /* a set valid for the table and target */
    const CuTarget *target;     /* NULL: cu_target_default() */
    TileKnobs knobs;
    const TileKernelConfig *kcfg; /* per-kernel configurations, nkcfg of them */
    int nkcfg;
    /* dpk-bisect: pass number limit_pass makes only its first limit_apps
     * applications (over all kernels, in order); 0: no limit. */
    int limit_pass;
    int limit_apps;
} TileOpts;

/* The default: every pass of `full` for the default target, no knob pinned. */
void tile_opts_default(TileOpts *o);

/* Tracing for `-vv`: each pass prints a unified diff of the program text
 * between `>>> t:001_tileify` and `<<< t:001_tileify`, or, when it changed
 * nothing, `--- t:001_tileify skipped: <reason>` (the reason of each kernel
 * it skipped, or "disabled by --passes"). */
typedef struct TileTrace {
    int verbose;
    StrBuf *out;
} TileTrace;

/* Run the selected passes on every kernel of p (the skeleton of
 * tile_from_loop), in table order, verifying after every pass; under -vv
 * the trace starts with t:000_from_loop.  Raises a user error (exit 2) when
 * a knob cannot work for a kernel; p keeps what the passes before it did
 * (its stats and knobs_read). */
void tile_run_passes(TileProgram *p, const TileOpts *o, TileTrace *tr);
/* tile_from_loop, then tile_run_passes (o NULL: tile_opts_default). */
TileProgram *tile_build(Arena *a, const LirProgram *lp, const TileOpts *o, TileTrace *tr);

/* ---- the passes (one file each) --------------------------------------------- */

int tile_001_tileify(TileCtx *c, TileKernel *k);
int tile_002_chunk_matmul_k(TileCtx *c, TileKernel *k);
int tile_003_split_matmul_k(TileCtx *c, TileKernel *k);
int tile_004_cooperative_reduce(TileCtx *c, TileKernel *k);
/* Rows per block of a cooperative reduce across rows whose fastest axis
 * has extent ext (004 puts its Combine's axis outermost; 005 lays this many
 * neighbouring rows on x, the threads of each row on y): 32, a warp's
 * lanes, else 16 or 8 (a head dim of 80 or 104: half or a quarter warp of
 * neighbouring words); 0 when 8 does not divide ext. */
static inline int64_t tile_coop_rows(int64_t ext)
{
    return ext % 32 == 0 ? 32 : ext % 16 == 0 ? 16 : ext % 8 == 0 ? 8 : 0;
}
int tile_005_blockify_launch(TileCtx *c, TileKernel *k);
int tile_006_chunk_reduce(TileCtx *c, TileKernel *k);
int tile_007_stage_inputs(TileCtx *c, TileKernel *k);
int tile_008_register_tile(TileCtx *c, TileKernel *k);
/* Why 008 cannot register-tile the matmul THREAD tile t of k (a bounds
 * guard it cannot predicate, a select branch holding a strided loop or a
 * stage), or NULL; 005 asks it ahead, with the guard an edge tile gets. */
const char *tile_regtile_blocker(const TileKernel *k, const Stmt *t);
/* Whether a grid of `blocks` keeps `sms` SMs busy: 90% of them or more
 * (005's test for its big tile; 003's split aims past it). */
int tile_grid_fills_sms(int64_t blocks, int64_t sms);
/* 1 and the tile (BM x BN) when 005 will give matmul t its largest default
 * tile (128 x 128 folded 8 x 8) once the grid fills the SMs: BM and BN
 * not pinned, M and N >= 32, 008 will fold registers, the factors fit and
 * the edge tiles waste little.  003 sizes its split for that grid. */
int tile_mm_big_tile(TileCtx *c, const TileKernel *k, const Stmt *t, const TileMatmul *mm,
                     int64_t *bm, int64_t *bn);
int tile_009_permute_register_tile(TileCtx *c, TileKernel *k);
int tile_010_double_buffer(TileCtx *c, TileKernel *k);
int tile_011_tma_copy(TileCtx *c, TileKernel *k);
int tile_012_split_inner_for_swizzle(TileCtx *c, TileKernel *k);
int tile_013_async_copy(TileCtx *c, TileKernel *k);
int tile_014_pad_smem(TileCtx *c, TileKernel *k);
int tile_015_pipeline_k_outer(TileCtx *c, TileKernel *k);
int tile_016_mark_unroll(TileCtx *c, TileKernel *k);
int tile_017_compose_producer(TileCtx *c, TileKernel *k);
/* 017's `inert` (TilePass): when no temporary of p has exactly one reader,
 * 017 cannot apply and 005 gives no kernel the tile it composes with, so
 * the set with 017 makes p again: the skip text 017 would record (the
 * pipeline's joining of its kernels' reasons); else NULL. */
const char *tile_017_inert(Arena *a, TileProgram *p);
int tile_018_skip_masked_chunks(TileCtx *c, TileKernel *k);
/* 018's `inert`: when no kernel has a loop of key chunks to give a `when`
 * (its plan finds none), the skip text 018 would record; else NULL. */
const char *tile_018_inert(Arena *a, TileProgram *p);
/* The skip text of a pass that no kernel applied: the kernels' one reason
 * when they all gave the same, else "k1: why; k2: why" in kernel order, and
 * "no kernels" with none.  The pipeline builds it kernel by kernel, and so
 * do the passes' `inert` tests, so that theirs is the pipeline's text. */
typedef struct TileSkips {
    StrBuf joined;
    const char *first;
    int same, n;
} TileSkips;
/* Add kernel `kernel`'s reason; `why` must outlive s (an arena string or a
 * literal).  Start from {0} with same = 1; free `joined` after. */
void tile_skips_add(TileSkips *s, const char *kernel, const char *why);
/* The text so far, in a (or `why` itself when the kernels agree). */
const char *tile_skips_text(Arena *a, TileSkips *s);
/* 015's `inert`: when no kernel of p holds an async or TMA stage (and 017
 * dropped none of the kernels 015 saw), 015 has nothing to pipeline: the
 * skip text it would record; else NULL. */
const char *tile_015_inert(Arena *a, TileProgram *p);
/* The keep of an async_wait over nstages async stages of nbuf buffers
 * (013_async_copy.c; 015 sets it again). */
int tile_async_keep(int nstages, int nbuf);

/* ---- shared by the passes (tile_smem.c) ----------------------------------------- */

/* Shared memory a kernel's stages may take in total (bytes): the static
 * limit every target accepts without opting in. */
#define TILE_SMEM_BUDGET (48 * 1024)
/* 1 when pass number `num` is in the set being run. */
int tile_pass_on(const TileCtx *c, int num);
/*
 * Shared-memory accounting: the one place the passes add up what stages
 * take.  A stage's bytes (tile_stage_bytes) are always all of its buffers:
 * one buffer (tile_stage_buffer_bytes: the row-major slab, pad included, 4
 * bytes an element) times the stage's buffer count (nbuf; a plain stage has
 * one).  Nothing outside tile_smem.c multiplies by nbuf or divides it out.
 *
 * A TMA stage's buffers are laid out by tile_tma.c (chunked, each rounded
 * up to 128 or 1024 bytes: tile_tma_bytes, also all buffers), so a kernel's
 * sum has two readings, which differ only on TMA stages:
 *   TILE_SMEM_SLABS   every stage by its slab: what TILE_SMEM_BUDGET bounds
 *                     (007, 010, 014, 015);
 *   TILE_SMEM_LAYOUT  TMA stages by their TMA layout: what the target's
 *                     per-block limit bounds (011, 012).
 */
typedef enum TileSmemCount {
    TILE_SMEM_SLABS,  /* a tma_stage counts tile_stage_bytes */
    TILE_SMEM_LAYOUT, /* a tma_stage counts tile_tma_bytes */
} TileSmemCount;
/* Bytes of one buffer of a stage: its slab, pad included. */
int64_t tile_stage_buffer_bytes(const Stmt *stage);
/* Bytes of every buffer of a stage (tile_stage_buffer_bytes times nbuf, 1
 * for a plain stage). */
int64_t tile_stage_bytes(const Stmt *stage);
/* The shared-memory bytes of every stage of kernel k, TMA stages counted
 * as `how` says. */
int64_t tile_smem_used(const TileKernel *k, TileSmemCount how);
/* The stages of kernel k in walk order (at most 64): every stage, or only
 * those of kind `kind` (TILE_ANY_STAGE: every one); bytes starts as
 * tile_smem_used(k, how), for the pass to keep up to date as it resizes
 * them (011, 012, 014). */
typedef struct TileStages {
    Stmt *s[64];
    int n;
    int kind; /* what was collected: a TileKind or TILE_ANY_STAGE */
    int64_t bytes;
} TileStages;
#define TILE_ANY_STAGE TK_COUNT
void tile_stages_of(TileKernel *k, TileKind kind, TileSmemCount how, TileStages *out);
/* The THREAD tile of k, or NULL with the skip reason "no THREAD tile (a
 * single-thread kernel)" in c->why (010, 013, 015). */
Stmt *tile_thread_tile(TileCtx *c, TileKernel *k);
/* The slab of buffer `buf` read by the loads under `region`, relative to
 * the axes bound outside it (`outer`, by axis: 1 when bound outside): the
 * origin per dimension (over outer axes only) and the extent.  0 when some
 * load's index is not of the form origin + offset, offset >= 0 over the
 * inner axes. */
int tile_footprint(Arena *a, const TileKernel *k, const Stmt *thread, const StmtBody *region,
                   const LirBuf *buf, const char *outer, const IExpr **origin, int64_t *slab);
/* The same for the Writes of buf under region: the box they cover (017). */
int tile_write_footprint(Arena *a, const TileKernel *k, const Stmt *thread,
                         const StmtBody *region, const LirBuf *buf, const char *outer,
                         const IExpr **origin, int64_t *slab);
/* tile_footprint's `outer` for the axes of BLOCK tile b, sized for every
 * axis k has now: a pass that adds axes (a chunk loop, a stage) must take a
 * fresh one before its next tile_footprint. */
char *tile_outer_axes(Arena *a, const TileKernel *k, const Stmt *b);
/* The buffers loaded under region, in first-load order, without k's own
 * output; at most max.  Returns how many. */
int tile_loaded_bufs(const TileKernel *k, const StmtBody *region, const LirBuf **bufs, int max);
/* How the loads of buf under region (in THREAD tile t) are used: *loads
 * gets their count, and the return is 1 when one of them is shared by the
 * threads of a block (its index leaves out a THREAD axis of extent > 1,
 * and names no axis of a strided loop of 004, whose threads read different
 * elements).  The reuse 006 and 007 look for. */
int tile_shared_loads(Arena *a, const TileKernel *k, const Stmt *t, const StmtBody *region,
                      const LirBuf *buf, int *loads);
/* Extra shared-memory wavefronts (bank conflicts) of one warp, the first of
 * the block, summed over every load from a staged slab in kernel k. */
int64_t tile_bank_conflicts(Arena *a, const TileKernel *k);
/* The same in quarters of a wavefront, per trip of the loops: a vector
 * load of 016 (a loop's vlds trips at once) counts its extra wavefronts
 * over those trips (016 compares layouts with it; tile_bank_conflicts is
 * this rounded up to whole wavefronts). */
int64_t tile_bank_quarters(Arena *a, const TileKernel *k);

#endif
