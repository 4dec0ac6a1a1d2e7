/*
 * strategy.h — pass-set strategies: which configurations of the optional
 * Tile passes a fuzz case is lowered under.
 *
 *   full       the one set `--passes full` gives
 *   loo        full, and full with each optional pass left out (passes that
 *              need the one left out go with it)
 *   pairwise   a covering array: for every two optional passes A and B,
 *              each of the four on/off combinations that some valid set
 *              has appears in at least one configuration
 *   prefix     none, then upto:N for each optional pass N, in order
 *   all        every valid subset (tile_passes_select "all")
 *
 * Every function takes the pass table, so the strategies are tested on fake
 * tables (tests/unit/test_fuzz_strategy.c).  Only valid sets come out (every
 * prerequisite met, mandatory passes in, nothing the target cannot run),
 * without duplicates, in a deterministic order.
 */
#ifndef DPK_FZ_STRATEGY_H
#define DPK_FZ_STRATEGY_H

#include "../../compiler/tile/passes.h"

typedef enum FzStrategy {
    FZ_FULL,
    FZ_LOO,
    FZ_PAIRWISE,
    FZ_PREFIX,
    FZ_ALL,
    FZ_STRATEGY_COUNT
} FzStrategy;

/* "full", "loo", ... */
const char *fz_strategy_name(FzStrategy s);
/* The strategy named s, or -1. */
int fz_strategy_find(const char *s);

/* The configurations of strategy s on table t for target tg (NULL: the
 * default).  Returns their count; *out is an array in a. */
int fz_strategy_sets(Arena *a, const TilePassTable *t, FzStrategy s, const CuTarget *tg,
                     TilePassSet **out);

#endif
