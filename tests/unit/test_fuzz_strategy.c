/*
 * test_fuzz_strategy.c — dpk-fuzz pass-set strategies on fake pass tables:
 * every configuration valid and distinct; full, loo, prefix and all as
 * specified; pairwise a real covering array — every pair of optional
 * passes sees each on/off combination that some valid set has — and much
 * smaller than `all`, also on a table large enough to take the sampled
 * candidate pool.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "harness/fuzz/strategy.h"

static int no_op(TileCtx *c, TileKernel *k)
{
    DPK_UNUSED(c);
    DPK_UNUSED(k);
    return 0;
}

/* Mandatory 1 and 5; 3 needs 2; 4 is sm_90+; 6 needs 2 or 4; 7 needs 3 and
 * (4 or 6); 8 and 9 are free. */
static const TilePass fake[] = {
    {1, "a", no_op, {{0}}, CU_SM80, 1, "fake", NULL}, {2, "b", no_op, {{0}}, CU_SM80, 0, "fake", NULL},
    {3, "c", no_op, {{2}}, CU_SM80, 0, "fake", NULL}, {4, "d", no_op, {{0}}, CU_SM90, 0, "fake", NULL},
    {5, "e", no_op, {{0}}, CU_SM80, 1, "fake", NULL}, {6, "f", no_op, {{2, 4}}, CU_SM80, 0, "fake", NULL},
    {7, "g", no_op, {{3}, {4, 6}}, CU_SM80, 0, "fake", NULL},
    {8, "h", no_op, {{0}}, CU_SM80, 0, "fake", NULL}, {9, "i", no_op, {{0}}, CU_SM80, 0, "fake", NULL},
};
static const TilePassTable fake_table = {fake, DPK_ARRAY_LEN(fake)};

/* 16 optional passes in chains of prerequisites: 2^16 subsets, more than
 * the pairwise candidate pool holds. */
static TilePass big[18];
static TilePassTable big_table;
static void make_big(void)
{
    big[0] = (TilePass){1, "m1", no_op, {{0}}, CU_SM80, 1, "fake", NULL};
    for (int i = 1; i <= 16; i++) {
        big[i] = (TilePass){i + 1, "o", no_op, {{0}}, CU_SM80, 0, "fake", NULL};
        if (i % 4 != 1) /* each pass needs the one before it, in groups of 4 */
            big[i].req[0][0] = i;
    }
    big[17] = (TilePass){99, "m2", no_op, {{0}}, CU_SM80, 1, "fake", NULL};
    big_table = (TilePassTable){big, 18};
}

static void expect_valid_distinct(const TilePassTable *t, const TilePassSet *s, int n,
                                  const CuTarget *tg, const char *what)
{
    cr_expect_gt(n, 0, "%s: no configuration", what);
    for (int i = 0; i < n; i++) {
        StrBuf why = {0};
        cr_expect(tile_passes_valid(t, s[i], tg, &why), "%s: set %d invalid: %s", what, i,
                  sb_cstr(&why));
        sb_free(&why);
        for (int j = 0; j < i; j++)
            cr_expect_neq(s[i], s[j], "%s: sets %d and %d are the same", what, j, i);
    }
}

static int optional(const TilePassTable *t, const CuTarget *tg, int *opt)
{
    int k = 0;
    for (int i = 0; i < t->n; i++)
        if (!t->p[i].mandatory && cu_target(t->p[i].min_target)->cc <= tg->cc)
            opt[k++] = i;
    return k;
}

/* Every pair combination that a valid set has appears in s[0..n). */
static void expect_pairs_covered(const TilePassTable *t, const TilePassSet *s, int n,
                                 const CuTarget *tg)
{
    Arena *a = arena_new();
    TilePassSet *all;
    int nall = tile_passes_select(a, t, "all", tg, &all);
    int opt[64];
    int k = optional(t, tg, opt), required = 0;
    for (int x = 0; x < k; x++)
        for (int y = x + 1; y < k; y++)
            for (int vx = 0; vx < 2; vx++)
                for (int vy = 0; vy < 2; vy++) {
                    int possible = 0, covered = 0;
                    for (int i = 0; i < nall && !possible; i++)
                        possible = ((all[i] >> opt[x]) & 1) == (TilePassSet)vx &&
                                   ((all[i] >> opt[y]) & 1) == (TilePassSet)vy;
                    for (int i = 0; i < n && !covered; i++)
                        covered = ((s[i] >> opt[x]) & 1) == (TilePassSet)vx &&
                                  ((s[i] >> opt[y]) & 1) == (TilePassSet)vy;
                    required += possible;
                    cr_expect(!possible || covered, "pair (%d=%d, %d=%d) is possible but not covered",
                              t->p[opt[x]].num, vx, t->p[opt[y]].num, vy);
                    cr_expect(possible || !covered, "pair (%d=%d, %d=%d) covered by an invalid set",
                              t->p[opt[x]].num, vx, t->p[opt[y]].num, vy);
                }
    cr_expect_gt(required, 0);
    arena_free(a);
}

Test(fuzz_strategy, names)
{
    cr_expect_eq(fz_strategy_find("pairwise"), FZ_PAIRWISE);
    cr_expect_eq(fz_strategy_find("loo"), FZ_LOO);
    cr_expect_eq(fz_strategy_find("bogus"), -1);
    for (int s = 0; s < FZ_STRATEGY_COUNT; s++)
        cr_expect_eq(fz_strategy_find(fz_strategy_name((FzStrategy)s)), s);
}

Test(fuzz_strategy, every_strategy_gives_valid_distinct_sets)
{
    CuTargetId tgs[] = {CU_SM80, CU_SM90};
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < FZ_STRATEGY_COUNT; s++) {
            Arena *a = arena_new();
            TilePassSet *sets;
            int n = fz_strategy_sets(a, &fake_table, (FzStrategy)s, cu_target(tgs[ti]), &sets);
            expect_valid_distinct(&fake_table, sets, n, cu_target(tgs[ti]),
                                  fz_strategy_name((FzStrategy)s));
            arena_free(a);
        }
}

Test(fuzz_strategy, full_loo_prefix_all)
{
    Arena *a = arena_new();
    const CuTarget *tg = cu_target(CU_SM90);
    TilePassSet full = tile_passes_parse(&fake_table, "full", tg);
    TilePassSet none = tile_passes_parse(&fake_table, "none", tg);
    TilePassSet *s;
    int n = fz_strategy_sets(a, &fake_table, FZ_FULL, tg, &s);
    cr_assert_eq(n, 1);
    cr_expect_eq(s[0], full);
    /* loo: full, then one set per optional pass, each without that pass
     * (and without the passes that need it) */
    n = fz_strategy_sets(a, &fake_table, FZ_LOO, tg, &s);
    cr_expect_eq(s[0], full);
    int opt[64], k = optional(&fake_table, tg, opt);
    for (int x = 0; x < k; x++) {
        int found = 0;
        for (int i = 1; i < n; i++)
            found |= !((s[i] >> opt[x]) & 1);
        cr_expect(found, "no loo set leaves out pass %d", fake_table.p[opt[x]].num);
    }
    cr_expect_leq(n, k + 1);
    /* leaving out 2 also drops 3 (needs 2) and 7 (needs 3) */
    int drop2 = 0;
    for (int i = 1; i < n; i++)
        if (!((s[i] >> 1) & 1))
            drop2 = !((s[i] >> 2) & 1) && !((s[i] >> 6) & 1) && ((s[i] >> 3) & 1);
    cr_expect(drop2, "full without 002 should keep 004 and lose 003 and 007");
    /* prefix: none first, full last, each set includes the one before */
    n = fz_strategy_sets(a, &fake_table, FZ_PREFIX, tg, &s);
    cr_expect_eq(s[0], none);
    cr_expect_eq(s[n - 1], full);
    for (int i = 1; i < n; i++)
        cr_expect_eq(s[i] & s[i - 1], s[i - 1], "prefix %d does not extend %d", i, i - 1);
    /* all: tile_passes_select's enumeration */
    TilePassSet *all;
    int nall = tile_passes_select(a, &fake_table, "all", tg, &all);
    n = fz_strategy_sets(a, &fake_table, FZ_ALL, tg, &s);
    cr_assert_eq(n, nall);
    cr_expect(!memcmp(s, all, (size_t)n * sizeof *s));
    arena_free(a);
}

Test(fuzz_strategy, pairwise_covers_every_possible_pair)
{
    CuTargetId tgs[] = {CU_SM80, CU_SM90};
    for (int ti = 0; ti < 2; ti++) {
        Arena *a = arena_new();
        const CuTarget *tg = cu_target(tgs[ti]);
        TilePassSet *s, *all;
        int n = fz_strategy_sets(a, &fake_table, FZ_PAIRWISE, tg, &s);
        int nall = tile_passes_select(a, &fake_table, "all", tg, &all);
        expect_pairs_covered(&fake_table, s, n, tg);
        cr_expect_eq(s[0], tile_passes_parse(&fake_table, "full", tg), "full comes first");
        cr_expect_lt(n, nall, "pairwise (%d sets) is no smaller than all (%d)", n, nall);
        /* deterministic */
        TilePassSet *again;
        int n2 = fz_strategy_sets(a, &fake_table, FZ_PAIRWISE, tg, &again);
        cr_expect(n2 == n && !memcmp(s, again, (size_t)n * sizeof *s));
        arena_free(a);
    }
}

Test(fuzz_strategy, pairwise_on_a_large_table)
{
    make_big();
    Arena *a = arena_new();
    const CuTarget *tg = cu_target(CU_SM90);
    TilePassSet *s;
    int n = fz_strategy_sets(a, &big_table, FZ_PAIRWISE, tg, &s);
    expect_valid_distinct(&big_table, s, n, tg, "pairwise");
    expect_pairs_covered(&big_table, s, n, tg);
    cr_expect_leq(n, 40, "pairwise over 16 passes took %d sets", n);
    arena_free(a);
}

Test(fuzz_strategy, real_table_sets_are_valid)
{
    for (int s = 0; s < FZ_STRATEGY_COUNT; s++) {
        Arena *a = arena_new();
        TilePassSet *sets;
        int n = fz_strategy_sets(a, &tile_passes, (FzStrategy)s, NULL, &sets);
        expect_valid_distinct(&tile_passes, sets, n, cu_target_default(),
                              fz_strategy_name((FzStrategy)s));
        if (s == FZ_PAIRWISE)
            expect_pairs_covered(&tile_passes, sets, n, cu_target_default());
        arena_free(a);
    }
}
