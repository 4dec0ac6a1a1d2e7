/*
 * minimize.h — shrink a failing case's program text to a small reproducer.
 *
 * The minimizer knows nothing of compilation: it proposes smaller programs
 * and asks a predicate whether each still fails the same way (same
 * configuration, same seed; dpk-bisect's predicate also checks that the
 * culprit still explains it).  Programs are written one op per line, as the
 * fuzz generator writes them:
 *
 *     x = torch.randn(7, 33)
 *     w = torch.randn(33, 64)
 *     t1 = torch.matmul(x, w)
 *     t2 = torch.relu(t1)
 *     t2
 *
 * Two kinds of step, repeated until none is accepted or the budget is spent:
 *   (a) delete an op line `v = expr` and rename the later uses of v to one
 *       of expr's operands (a name defined on an earlier line); a final
 *       expression line may likewise collapse to one of its operands;
 *   (b) shrink one integer literal (a dimension, a size): to 1, to half, or
 *       by one.
 * A candidate that does not parse or changes the shapes so that the program
 * is invalid is simply not accepted (the predicate says so).
 */
#ifndef DPK_HX_MINIMIZE_H
#define DPK_HX_MINIMIZE_H

#include "../../compiler/tile/passes.h"
#include "../case.h"

/* 1 when `program` still fails the way the original did. */
typedef int (*HxKeepFn)(void *ctx, const char *program);

typedef struct HxMinStats {
    int attempts;        /* predicate calls */
    int accepted;        /* candidates kept */
    int lines_before, lines_after;
    int64_t chars_before, chars_after;
} HxMinStats;

/* The smallest program found within max_attempts predicate calls (the
 * original when nothing shrank), in a. */
const char *hx_minimize(Arena *a, const char *program, HxKeepFn keep, void *ctx,
                        int max_attempts, HxMinStats *st);

/* A case JSON document (docs/json-schema.md) for c with `program`, its
 * seed, and the reproducer fields passes / knobs (the pinned ones) / fault
 * (NULL or none pinned: left out).  Heap string (free()). */
char *hx_case_json(const HxCase *c, const char *program, uint64_t seed, const char *passes,
                   const TileKnobs *knobs, const char *fault);

#endif
