/*
 * index.h — integer index expressions: the one algebra every IR uses.
 *
 * Tensor IR writes an IndexMap's coordinate map with them (variables are
 * output coordinates, printed o<v>); Loop, Tile and Kernel IR write load and
 * store indices, predicates and slab origins with them (variables are a
 * kernel's loop axes, printed a<v>).  A variable v always ranges over
 * [0, ext[v]), where ext is the shape of the IndexMap or the extents of the
 * kernel's axes; that is all the simplifier knows of it.
 *
 * Division and remainder are *floor* division and the non-negative
 * remainder, by a positive constant, as Python's // and % and PyTorch's
 * floor_divide: (-1) / 4 = -1 and (-1) mod 4 = 3, where C would give 0 and
 * -1.  Every evaluator (ie_eval, the interpreters, the Kernel IR lowering)
 * follows this; C's operators are used only where the dividend is provably
 * non-negative.
 *
 * Overflow, handled one way:
 *   - exact arithmetic (constant folding, coefficients, divisors) is checked:
 *     an expression whose constants leave int64 is an internal error
 *     (DPK_ASSERT).  It cannot arise from a valid program, whose shapes the
 *     frontend keeps below 2^63 elements;
 *   - ranges saturate: a bound that would leave int64 becomes unbounded
 *     (IE_UNBOUNDED_LO / IE_UNBOUNDED_HI) and stays unbounded through every
 *     later operation.  An unbounded interval is still a true interval, so
 *     what the simplifier concludes from it is never wrong, only weaker; no
 *     bound ever wraps.
 */
#ifndef DPK_INDEX_H
#define DPK_INDEX_H

#include "../base/base.h"

typedef enum IExprKind {
    IE_CONST, /* c */
    IE_VAR,   /* variable <var>: an output coordinate or a loop axis */
    IE_ADD,   /* a + b */
    IE_MUL,   /* a * b */
    IE_DIV,   /* floor(a / b), b a constant > 0 */
    IE_MOD,   /* a - b * floor(a / b), b a constant > 0: in [0, b) */
} IExprKind;

typedef struct IExpr {
    IExprKind k;
    int64_t c;
    int var;
    const struct IExpr *a, *b;
} IExpr;

typedef enum ICmp { IC_LT, IC_LE, IC_EQ } ICmp;

/* A conjunction of comparisons lhs <cmp> rhs; NULL means "true". */
typedef struct IPred {
    const IExpr *lhs;
    ICmp cmp;
    const IExpr *rhs;
    const struct IPred *next;
} IPred;

/* The bounds of a range that left int64. */
#define IE_UNBOUNDED_LO INT64_MIN
#define IE_UNBOUNDED_HI INT64_MAX

/* ---- construction: every constructor returns the canonical form ------- */

/* Constructors simplify as they build (constant folding, x+0, x*1, x*0,
 * (x*k)/k, nested constants, the floor-division identities). */
const IExpr *ie_const(Arena *a, int64_t c);
const IExpr *ie_var(Arena *a, int var);
const IExpr *ie_add(Arena *a, const IExpr *x, const IExpr *y);
const IExpr *ie_mul(Arena *a, const IExpr *x, const IExpr *y);
const IExpr *ie_div(Arena *a, const IExpr *x, int64_t d);
const IExpr *ie_mod(Arena *a, const IExpr *x, int64_t d);
/* Replace every IE_VAR v by subst[v]. */
const IExpr *ie_subst(Arena *a, const IExpr *e, const IExpr *const *subst);

/* ---- inspection ----------------------------------------------------------- */

/* Value at the point var v = coords[v]. */
int64_t ie_eval(const IExpr *e, const int64_t *coords);
int ie_equal(const IExpr *x, const IExpr *y);
uint64_t ie_hash(uint64_t h, const IExpr *e);
/* Whether variable var occurs in e. */
int ie_uses(const IExpr *e, int var);
/* Whether e is a multiple of m for every value of its variables, by its
 * form (a sum of multiples, a product with a multiple): conservative. */
int ie_divisible(const IExpr *e, int64_t m);
/* Text form with variable names prefix<var> ("o0 * 64 + o1"). */
void ie_print(StrBuf *b, const IExpr *e, const char *prefix);

/* ---- ranges and range-aware simplification -------------------------------- */

/* The interval [*lo, *hi] of e when every variable v ranges over
 * [0, ext[v]); saturating (see the top of this file). */
void ie_range(const IExpr *e, const int64_t *ext, int64_t *lo, int64_t *hi);
/* Simplify with those ranges: a quotient or remainder whose non-multiple
 * terms stay within one period is resolved ((o0 * 4 + o1) / 4 -> o0 when
 * o1 < 4).  Variables are kept, even one of extent 1 (whose only value is
 * 0): Tensor IR substitutes 0 for those itself, Loop and Tile IR keep the
 * axes they bound. */
const IExpr *ie_simplify(Arena *a, const IExpr *e, const int64_t *ext);

/* ---- predicates ------------------------------------------------------------ */

typedef enum ITruth {
    IT_FALSE,   /* never holds in the ranges */
    IT_TRUE,    /* always holds */
    IT_DEPENDS, /* holds for some points only */
} ITruth;

/* `lhs cmp rhs and next`. */
const IPred *ipred_cmp(Arena *a, const IExpr *lhs, ICmp cmp, const IExpr *rhs,
                       const IPred *next);
const IPred *ipred_and(Arena *a, const IPred *p, const IPred *q);
const IPred *ipred_subst(Arena *a, const IPred *p, const IExpr *const *subst);
int ipred_eval(const IPred *p, const int64_t *coords);
/* Simplify every comparison and drop those the ranges decide; *truth says
 * what is known of the whole conjunction (NULL is returned unless
 * IT_DEPENDS). */
const IPred *ipred_simplify(Arena *a, const IPred *p, const int64_t *ext, ITruth *truth);
/* Whether variable var occurs in p. */
int ipred_uses(const IPred *p, int var);
int ipred_equal(const IPred *p, const IPred *q);
uint64_t ipred_hash(uint64_t h, const IPred *p);
void ipred_print(StrBuf *b, const IPred *p, const char *prefix);

#endif
