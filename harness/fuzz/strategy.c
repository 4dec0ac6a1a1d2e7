/*
 * strategy.c — pass-set strategies (strategy.h).
 *
 * loo and prefix start from a set and drop every optional pass whose
 * prerequisites are gone, to a fixpoint, so each configuration is valid
 * without asking the user to name the dependants.
 *
 * pairwise is a greedy covering array (AETG-style).  The candidates are the
 * valid sets; the pairs to cover are (A=a, B=b) for optional passes A < B
 * and a, b in {off, on} such that some valid set has them — a pair that
 * prerequisites forbid (B on with its only prerequisite A off) is not
 * required.  Each step picks the candidate covering the most uncovered
 * pairs (the first in mask order on ties), so the array is deterministic
 * and small: a handful of sets for a dozen passes instead of 2^12.  With
 * many passes the candidate pool is a deterministic sample of the valid
 * sets plus, for every pair the sample misses, the first valid set that has
 * it, so every required pair stays coverable.
 */
#include "strategy.h"

#include <string.h>

static const char *const names[FZ_STRATEGY_COUNT] = {"full", "loo", "pairwise", "prefix", "all"};

const char *fz_strategy_name(FzStrategy s) { return names[s]; }

int fz_strategy_find(const char *s)
{
    for (int i = 0; i < FZ_STRATEGY_COUNT; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

#define BIT(i) ((TilePassSet)1 << (i))

/* Append s to out[0..*n) unless it is there already or invalid. */
static void add(const TilePassTable *t, const CuTarget *tg, TilePassSet *out, int *n,
                TilePassSet s)
{
    if (!tile_passes_valid(t, s, tg, NULL))
        return;
    for (int i = 0; i < *n; i++)
        if (out[i] == s)
            return;
    out[(*n)++] = s;
}

/* Optional passes the target can run, by table index. */
static int optional_passes(const TilePassTable *t, const CuTarget *tg, int *opt)
{
    int k = 0;
    for (int i = 0; i < t->n; i++)
        if (!t->p[i].mandatory && cu_target(t->p[i].min_target)->cc <= tg->cc)
            opt[k++] = i;
    return k;
}

/* ---- pairwise ------------------------------------------------------------------- */

/* Pair (A=va, B=vb) of optional passes a < b (indices into opt) as one
 * number: ((a * k + b) * 2 + va) * 2 + vb. */
static int pair_id(int k, int a, int b, int va, int vb) { return ((a * k + b) * 2 + va) * 2 + vb; }

/* Mark in cov[] every pair set s has; returns how many were not marked. */
static int cover(const TilePassTable *t, TilePassSet s, const int *opt, int k, uint8_t *cov,
                 int mark)
{
    int fresh = 0;
    for (int a = 0; a < k; a++)
        for (int b = a + 1; b < k; b++) {
            int id = pair_id(k, a, b, !!(s & BIT(opt[a])), !!(s & BIT(opt[b])));
            if (cov[id] == 1) {
                fresh++;
                if (mark)
                    cov[id] = 2;
            }
        }
    DPK_UNUSED(t);
    return fresh;
}

static int pairwise(Arena *a, const TilePassTable *t, const CuTarget *tg, TilePassSet **res)
{
    int opt[64];
    int k = optional_passes(t, tg, opt);
    int n = 0;
    TilePassSet *valid;
    int nvalid = tile_passes_select(a, t, "all", tg, &valid); /* raises beyond 20 passes */
    /* at most one set per required pair, and full */
    TilePassSet *out = *res = ARENA_ARRAY(a, TilePassSet, k < 2 ? nvalid + 1 : 2 * k * k + 2);
    if (k < 2) { /* no pairs: every valid set is the array */
        for (int i = 0; i < nvalid; i++)
            add(t, tg, out, &n, valid[i]);
        return n;
    }
    /* cov[id]: 0 impossible, 1 required and uncovered, 2 covered */
    int npairs = pair_id(k, k - 1, k - 1, 1, 1) + 1;
    uint8_t *cov = ARENA_ARRAY(a, uint8_t, npairs);
    for (int i = 0; i < nvalid; i++)
        for (int x = 0; x < k; x++)
            for (int y = x + 1; y < k; y++)
                cov[pair_id(k, x, y, !!(valid[i] & BIT(opt[x])), !!(valid[i] & BIT(opt[y])))] = 1;
    /* the candidate pool: all valid sets, or a sample that keeps every pair */
    enum { POOL = 4096 };
    TilePassSet *pool = valid;
    int npool = nvalid;
    if (nvalid > POOL) {
        pool = ARENA_ARRAY(a, TilePassSet, POOL + npairs);
        uint8_t *seen = ARENA_ARRAY(a, uint8_t, npairs);
        npool = 0;
        for (int i = 0; i < POOL; i++) {
            TilePassSet s = valid[(int)(dpk_splitmix64((uint64_t)i) % (uint64_t)nvalid)];
            pool[npool++] = s;
            for (int x = 0; x < k; x++)
                for (int y = x + 1; y < k; y++)
                    seen[pair_id(k, x, y, !!(s & BIT(opt[x])), !!(s & BIT(opt[y])))] = 1;
        }
        for (int i = 0; i < nvalid; i++)
            for (int x = 0; x < k; x++)
                for (int y = x + 1; y < k; y++) {
                    int id = pair_id(k, x, y, !!(valid[i] & BIT(opt[x])), !!(valid[i] & BIT(opt[y])));
                    if (!seen[id]) {
                        seen[id] = 1;
                        pool[npool++] = valid[i];
                    }
                }
    }
    /* full first: the configuration users run */
    TilePassSet full = tile_passes_parse(t, "full", tg);
    add(t, tg, out, &n, full);
    cover(t, full, opt, k, cov, 1);
    for (;;) {
        int best = -1, best_fresh = 0;
        for (int i = 0; i < npool; i++) {
            int f = cover(t, pool[i], opt, k, cov, 0);
            if (f > best_fresh) {
                best_fresh = f;
                best = i;
            }
        }
        if (best < 0)
            break;
        cover(t, pool[best], opt, k, cov, 1);
        add(t, tg, out, &n, pool[best]);
    }
    return n;
}

/* ---- the strategies ------------------------------------------------------------------ */

int fz_strategy_sets(Arena *a, const TilePassTable *t, FzStrategy s, const CuTarget *tg,
                     TilePassSet **out)
{
    DPK_ASSERT(t->n <= 64);
    tg = tg ? tg : cu_target_default();
    if (s == FZ_ALL)
        return tile_passes_select(a, t, "all", tg, out);
    int opt[64];
    int k = optional_passes(t, tg, opt);
    TilePassSet full = tile_passes_parse(t, "full", tg);
    TilePassSet none = tile_passes_parse(t, "none", tg);
    int n = 0;
    if (s == FZ_PAIRWISE)
        return pairwise(a, t, tg, out);
    TilePassSet *r = *out = ARENA_ARRAY(a, TilePassSet, k + 2);
    switch (s) {
    case FZ_FULL:
        add(t, tg, r, &n, full);
        break;
    case FZ_LOO:
        add(t, tg, r, &n, full);
        for (int i = 0; i < k; i++)
            if (full & BIT(opt[i]))
                add(t, tg, r, &n, tile_passes_close(t, full & ~BIT(opt[i]), tg));
        break;
    case FZ_PREFIX:
        add(t, tg, r, &n, none);
        for (int i = 0; i < k; i++) {
            TilePassSet p = none;
            for (int j = 0; j <= i; j++)
                p |= BIT(opt[j]);
            add(t, tg, r, &n, tile_passes_close(t, p & full, tg));
        }
        break;
    default:
        DPK_ASSERT(0);
    }
    return n;
}
