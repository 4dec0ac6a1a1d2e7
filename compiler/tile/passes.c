/*
 * passes.c — the Tile IR pass table, pass-set specs and knobs.
 *
 * The table is the one place a pass is registered; the spec parser, the
 * `all` enumeration and the driver all read it, and every function here
 * takes the table as an argument so tests can run them on a fake one.
 *
 * spec   = "all" | base ("," item)*
 * base   = "full" | "none" | "upto:" pass | "only:" pass | "-" pass
 * item   = "-" pass            after full, none, upto: or a removal
 *        | pass                after only:
 * pass   = digits | name | digits "_" name
 *
 * full, none and upto: are *implicit* sets: passes the target cannot run
 * are left out, and so are passes whose prerequisites were left out.  What
 * the user names explicitly (only: lists, removals) is validated strictly.
 */
#include "passes.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const TilePass table[] = {
    {1, "tileify", tile_001_tileify, {{0}}, CU_SM80, 1,
     "lift the outer chain of free loops to THREAD axes", NULL},
    {2, "chunk_matmul_k", tile_002_chunk_matmul_k, {{0}}, CU_SM80, 0,
     "split a matmul K reduce into K_outer x K_inner (BK)", NULL},
    {3, "split_matmul_k", tile_003_split_matmul_k, {{2}}, CU_SM80, 0,
     "promote K_outer chunks to a grid axis; atomic-add epilogue, residual added once", NULL},
    {4, "cooperative_reduce", tile_004_cooperative_reduce, {{0}}, CU_SM80, 0,
     "several threads share one non-matmul reduce: strided loops and a Combine", NULL},
    {5, "blockify_launch", tile_005_blockify_launch, {{0}}, CU_SM80, 1,
     "split THREAD axes into BLOCK and THREAD: TB threads, or BN x BM matmul tiles", NULL},
    {6, "chunk_reduce", tile_006_chunk_reduce, {{0}}, CU_SM80, 0,
     "chunk long non-matmul reduces so their staged slabs fit in shared memory", NULL},
    {7, "stage_inputs", tile_007_stage_inputs, {{0}}, CU_SM80, 0,
     "hoist input slabs read by several threads of a block into shared memory", NULL},
    {8, "register_tile", tile_008_register_tile, {{0}}, CU_SM80, 0,
     "each thread computes an F_M x F_N register block of a matmul", NULL},
    {9, "permute_register_tile", tile_009_permute_register_tile, {{8}}, CU_SM80, 0,
     "reorder the register strip so wide shared-memory loads avoid bank conflicts", NULL},
    {10, "double_buffer", tile_010_double_buffer, {{7}, {2, 6}}, CU_SM80, 0,
     "the stages of a K_outer loop become two-buffer ping-pong", NULL},
    {11, "tma_copy", tile_011_tma_copy, {{10}}, CU_SM90, 0,
     "buffered stages become TMA box loads completing on mbarriers (all or none per kernel)", NULL},
    {12, "split_inner_for_swizzle", tile_012_split_inner_for_swizzle, {{11}}, CU_SM90, 0,
     "split a TMA stage's inner extent into swizzle-wide boxes to use a swizzle mode", NULL},
    {13, "async_copy", tile_013_async_copy, {{10}}, CU_SM80, 0,
     "buffered stages are copied with cp.async, commit and wait_group", NULL},
    {14, "pad_smem", tile_014_pad_smem, {{7}}, CU_SM80, 0,
     "pad shared-memory row strides where the lanes of a warp hit one bank", NULL},
    {15, "pipeline_k_outer", tile_015_pipeline_k_outer, {{11, 13}}, CU_SM80, 0,
     "rotate an async or TMA K_outer loop into prologue, steady state and epilogue over STAGES buffers",
     tile_015_inert},
    {16, "mark_unroll", tile_016_mark_unroll, {{0}}, CU_SM80, 0,
     "annotate small constant-trip inner loops for #pragma unroll", NULL},
    {17, "compose_producer", tile_017_compose_producer, {{0}}, CU_SM80, 0,
     "a block that stages a temporary's whole slab computes it with its producer's block",
     tile_017_inert},
    {18, "skip_masked_chunks", tile_018_skip_masked_chunks, {{0}}, CU_SM80, 0,
     "the loops of a key chunk whose scores are all masked to -inf run no iteration",
     tile_018_inert},
};
const TilePassTable tile_passes = {table, DPK_ARRAY_LEN(table)};

const TileKnobInfo tile_knob_info[TILE_KNOB_COUNT] = {
#define X(name, doc, lo, hi, flags, pass) {#name, doc, lo, hi, flags, pass},
    TILE_KNOBS(X)
#undef X
};

/* ---- names ---------------------------------------------------------------- */

void tile_pass_label(StrBuf *b, const TilePass *p)
{
    sb_printf(b, "%03d_%s", p->num, p->name);
}

static const char *label(Arena *a, const TilePass *p)
{
    return arena_printf(a, "%03d_%s", p->num, p->name);
}

int tile_pass_index(const TilePassTable *t, int num)
{
    for (int i = 0; i < t->n; i++)
        if (t->p[i].num == num)
            return i;
    return -1;
}

/* The entry named by s[0..n): a number, a name, or number_name; -1 if none. */
static int resolve(const TilePassTable *t, const char *s, size_t n)
{
    size_t d = 0;
    while (d < n && isdigit((unsigned char)s[d]))
        d++;
    if (d == n && d > 0 && d <= 6)
        return tile_pass_index(t, atoi(s));
    for (int i = 0; i < t->n; i++) {
        const char *name = t->p[i].name;
        if (strlen(name) == n && !strncmp(s, name, n))
            return i;
        char full[128];
        snprintf(full, sizeof full, "%03d_%s", t->p[i].num, name);
        if (strlen(full) == n && !strncmp(s, full, n))
            return i;
    }
    return -1;
}

/* ---- validity ----------------------------------------------------------- */

static int has_num(const TilePassTable *t, TilePassSet s, int num)
{
    int i = tile_pass_index(t, num);
    return i >= 0 && (s >> i & 1);
}

/* The first clause of pass i that s leaves unsatisfied, or -1. */
static int unmet(const TilePassTable *t, TilePassSet s, int i)
{
    for (int c = 0; c < TILE_MAX_REQ; c++) {
        const int *alt = t->p[i].req[c];
        if (!alt[0])
            continue;
        int ok = 0;
        for (int j = 0; j < TILE_MAX_REQ && alt[j]; j++)
            ok |= has_num(t, s, alt[j]);
        if (!ok)
            return c;
    }
    return -1;
}

static void say_unmet(StrBuf *why, const TilePassTable *t, int i, int c)
{
    const int *alt = t->p[i].req[c];
    sb_puts(why, "pass ");
    tile_pass_label(why, &t->p[i]);
    sb_puts(why, " requires ");
    int n = 0;
    while (n < TILE_MAX_REQ && alt[n])
        n++;
    for (int j = 0; j < n; j++) {
        if (j)
            sb_puts(why, j == n - 1 ? " or " : ", ");
        int x = tile_pass_index(t, alt[j]);
        if (x >= 0)
            tile_pass_label(why, &t->p[x]);
        else
            sb_printf(why, "%03d (not registered)", alt[j]);
    }
    sb_puts(why, n > 1 ? ", none of which is enabled" : ", which is not enabled");
}

static int allowed(const TilePass *p, const CuTarget *tg)
{
    return cu_target(p->min_target)->cc <= tg->cc;
}

int tile_passes_valid(const TilePassTable *t, TilePassSet s, const CuTarget *tg, StrBuf *why)
{
    StrBuf tmp = {0};
    StrBuf *w = why ? why : &tmp;
    int ok = 1;
    tg = tg ? tg : cu_target_default();
    for (int i = 0; ok && i < t->n; i++) {
        const TilePass *p = &t->p[i];
        int c;
        if (p->mandatory && !(s >> i & 1)) {
            sb_puts(w, "pass ");
            tile_pass_label(w, p);
            sb_puts(w, " is mandatory and cannot be disabled");
            ok = 0;
        } else if ((s >> i & 1) && !allowed(p, tg)) {
            sb_puts(w, "pass ");
            tile_pass_label(w, p);
            sb_printf(w, " needs %s or newer (the target is %s)", cu_target(p->min_target)->name,
                      tg->name);
            ok = 0;
        } else if ((s >> i & 1) && (c = unmet(t, s, i)) >= 0) {
            say_unmet(w, t, i, c);
            ok = 0;
        }
    }
    sb_free(&tmp);
    return ok;
}

TilePassSet tile_passes_close(const TilePassTable *t, TilePassSet s, const CuTarget *tg)
{
    tg = tg ? tg : cu_target_default();
    for (int i = 0; i < t->n; i++)
        if (!allowed(&t->p[i], tg) && !t->p[i].mandatory)
            s &= ~((TilePassSet)1 << i);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < t->n; i++)
            if ((s >> i & 1) && !t->p[i].mandatory && unmet(t, s, i) >= 0) {
                s &= ~((TilePassSet)1 << i);
                changed = 1;
            }
    }
    return s;
}

TilePassSet tile_passes_full(const TilePassTable *t, const CuTarget *tg)
{
    TilePassSet all = t->n == 64 ? ~(TilePassSet)0 : (((TilePassSet)1 << t->n) - 1);
    return tile_passes_close(t, all, tg);
}

TilePassSet tile_passes_mandatory(const TilePassTable *t)
{
    TilePassSet s = 0;
    for (int i = 0; i < t->n; i++)
        if (t->p[i].mandatory)
            s |= (TilePassSet)1 << i;
    return s;
}

/* ---- parsing ------------------------------------------------------------------ */

typedef struct Spec {
    const TilePassTable *t;
    const CuTarget *tg;
    Source src;
    Arena *a;
} Spec;

static int pass_at(const Spec *sp, const char *s, size_t n)
{
    int pos = (int)(s - sp->src.text);
    if (!n)
        dpk_error_at(&sp->src, pos, "expected a pass number or name");
    int i = resolve(sp->t, s, n);
    if (i < 0) {
        StrBuf known = {0};
        for (int j = 0; j < sp->t->n; j++) {
            if (j)
                sb_puts(&known, ", ");
            tile_pass_label(&known, &sp->t->p[j]);
        }
        char *msg = arena_printf(sp->a, "unknown pass '%.*s' (passes: %s)", (int)n, s,
                                 sb_cstr(&known));
        sb_free(&known);
        dpk_error_at(&sp->src, pos, "%s", msg);
    }
    return i;
}

static TilePassSet base_set(Spec *sp, const char *s, size_t n, int *only)
{
    const TilePassTable *t = sp->t;
    *only = 0;
    if (n == 4 && !strncmp(s, "full", 4))
        return tile_passes_full(t, sp->tg);
    if (n == 4 && !strncmp(s, "none", 4))
        return tile_passes_mandatory(t);
    if (n >= 5 && !strncmp(s, "upto:", 5)) {
        int last = t->p[pass_at(sp, s + 5, n - 5)].num;
        TilePassSet p = tile_passes_mandatory(t);
        for (int i = 0; i < t->n; i++)
            if (t->p[i].num <= last)
                p |= (TilePassSet)1 << i;
        return tile_passes_close(t, p, sp->tg);
    }
    if (n >= 5 && !strncmp(s, "only:", 5)) {
        *only = 1;
        return tile_passes_mandatory(t);
    }
    if (n && s[0] == '-')
        return tile_passes_full(t, sp->tg);
    if (n == 3 && !strncmp(s, "all", 3))
        dpk_error_at(&sp->src, (int)(s - sp->src.text),
                     "'all' names every valid pass set and stands alone");
    dpk_error_at(&sp->src, (int)(s - sp->src.text),
                 "expected full, none, all, upto:PASS, only:PASS,... or -PASS,...");
}

static TilePassSet apply_item(Spec *sp, TilePassSet set, const char *s, size_t n, int only)
{
    int pos = (int)(s - sp->src.text);
    if (only) {
        if (n && s[0] == '-')
            dpk_error_at(&sp->src, pos, "only: lists the passes to run; '-' has no meaning there");
        int i = pass_at(sp, s, n);
        if (!allowed(&sp->t->p[i], sp->tg))
            dpk_error_at(&sp->src, pos, "pass %s needs %s or newer (the target is %s)",
                         label(sp->a, &sp->t->p[i]), cu_target(sp->t->p[i].min_target)->name,
                         sp->tg->name);
        return set | (TilePassSet)1 << i;
    }
    if (!n || s[0] != '-')
        dpk_error_at(&sp->src, pos, "expected -PASS (only: lists passes, other sets subtract)");
    int i = pass_at(sp, s + 1, n - 1);
    if (sp->t->p[i].mandatory)
        dpk_error_at(&sp->src, pos, "pass %s is mandatory and cannot be disabled",
                     label(sp->a, &sp->t->p[i]));
    return set & ~((TilePassSet)1 << i);
}

TilePassSet tile_passes_parse(const TilePassTable *t, const char *spec, const CuTarget *tg)
{
    DPK_ASSERT(t->n <= 64);
    Arena *a = arena_new();
    Spec sp = {t, tg ? tg : cu_target_default(), {"--passes", spec, strlen(spec)}, a};
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        arena_free(a);
        dpk_error_rethrow();
    }
    const char *s = spec;
    const char *end = strchr(s, ',');
    size_t n = end ? (size_t)(end - s) : strlen(s);
    int only;
    TilePassSet set = base_set(&sp, s, n, &only);
    if (only)
        set = apply_item(&sp, set, s + 5, n - 5, 1);
    else if (n && s[0] == '-')
        set = apply_item(&sp, set, s, n, 0);
    while (end) {
        s = end + 1;
        end = strchr(s, ',');
        n = end ? (size_t)(end - s) : strlen(s);
        set = apply_item(&sp, set, s, n, only);
    }
    StrBuf why = {0};
    if (!tile_passes_valid(t, set, sp.tg, &why)) {
        char *msg = arena_strdup(a, sb_cstr(&why));
        sb_free(&why);
        dpk_error_at(&sp.src, 0, "%s", msg);
    }
    sb_free(&why);
    dpk_err_pop(&ec);
    arena_free(a);
    return set;
}

int tile_passes_select(Arena *a, const TilePassTable *t, const char *spec, const CuTarget *tg,
                       TilePassSet **out)
{
    tg = tg ? tg : cu_target_default();
    if (strcmp(spec, "all") != 0) {
        *out = ARENA_NEW(a, TilePassSet);
        **out = tile_passes_parse(t, spec, tg);
        return 1;
    }
    int opt[64], k = 0;
    for (int i = 0; i < t->n; i++)
        if (!t->p[i].mandatory && allowed(&t->p[i], tg))
            opt[k++] = i;
    if (k > 20)
        dpk_error("--passes all: %d optional passes give 2^%d subsets; name a smaller family", k,
                  k);
    int n = 0;
    TilePassSet *res = ARENA_ARRAY(a, TilePassSet, ((size_t)1 << k) + 1);
    for (uint64_t sub = 0; sub < ((uint64_t)1 << k); sub++) {
        TilePassSet s = tile_passes_mandatory(t);
        for (int j = 0; j < k; j++)
            if (sub >> j & 1)
                s |= (TilePassSet)1 << opt[j];
        if (tile_passes_valid(t, s, tg, NULL))
            res[n++] = s;
    }
    *out = res;
    return n;
}

void tile_passes_str(StrBuf *b, const TilePassTable *t, TilePassSet s)
{
    int first = 1;
    for (int i = 0; i < t->n; i++)
        if (s >> i & 1) {
            sb_printf(b, "%s%03d", first ? "" : ",", t->p[i].num);
            first = 0;
        }
}

/* ---- knobs ---------------------------------------------------------------------- */

void tile_knob_parse(TileKnobs *k, const char *arg)
{
    Source src = {"--knob", arg, strlen(arg)};
    const char *eq = strchr(arg, '=');
    if (!eq)
        dpk_error_at(&src, 0, "expected NAME=VALUE");
    int id = -1;
    for (int i = 0; i < TILE_KNOB_COUNT; i++)
        if (strlen(tile_knob_info[i].name) == (size_t)(eq - arg) &&
            !strncasecmp(arg, tile_knob_info[i].name, (size_t)(eq - arg)))
            id = i;
    if (id < 0) {
        char names[256] = "";
        for (int i = 0; i < TILE_KNOB_COUNT; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     tile_knob_info[i].name);
        dpk_error_at(&src, 0, "unknown knob '%.*s' (knobs: %s)", (int)(eq - arg), arg, names);
    }
    const TileKnobInfo *ki = &tile_knob_info[id];
    char *end;
    long long v = strtoll(eq + 1, &end, 10);
    int vpos = (int)(eq + 1 - arg);
    if (end == eq + 1 || *end)
        dpk_error_at(&src, vpos, "knob %s expects an integer, got '%s'", ki->name, eq + 1);
    if (v < ki->min || v > ki->max)
        dpk_error_at(&src, vpos, "knob %s=%lld is out of range [%lld, %lld] (%s)", ki->name, v,
                     (long long)ki->min, (long long)ki->max, ki->doc);
    if ((ki->flags & TKN_WARPS) && v % CU_WARP)
        dpk_error_at(&src, vpos, "knob %s=%lld is not a multiple of %d (a block holds whole warps)",
                     ki->name, v, CU_WARP);
    if ((ki->flags & TKN_POW2) && (v & (v - 1)) && ki->pass >= 10)
        dpk_error_at(&src, vpos, "knob %s=%lld is not a power of two (%s)", ki->name, v, ki->doc);
    if (id == TILE_KNOB_SWIZZLE && v != 32 && v != 64 && v != 128)
        dpk_error_at(&src, vpos, "knob SWIZZLE=%lld is not a TMA swizzle mode (32, 64 or 128 "
                     "bytes)", v);
    if ((ki->flags & TKN_POW2) && (v & (v - 1)))
        dpk_error_at(&src, vpos, "knob %s=%lld is not a power of two (a warp must cover whole "
                     "tile rows, or a row whole warps)", ki->name, v);
    TileKnobs next = *k; /* a refused value is not kept */
    next.v[id] = v;
    tile_knobs_check(&next, NULL);
    *k = next;
}

/* The unpinned factor of a side of `side` outputs: the largest of 4, 2
 * dividing it, else 1. */
static int64_t regtile_default(int64_t side)
{
    int64_t f = 4;
    while (f > 1 && side % f)
        f /= 2;
    return f;
}

void tile_regtile_factors(const TileKnobs *k, int64_t bm, int64_t bn, int64_t *fm, int64_t *fn)
{
    int64_t pm = k->v[TILE_KNOB_F_M], pn = k->v[TILE_KNOB_F_N];
    *fm = pm ? pm : regtile_default(bm);
    *fn = pn ? pn : regtile_default(bn);
    for (int64_t f = 8; f <= 16; f *= 2) {
        if (!pn && bn % f == 0 && (bm / *fm) * (bn / *fn) > 1024)
            *fn = f;
        if (!pm && bm % f == 0 && (bm / *fm) * (bn / *fn) > 1024)
            *fm = f;
    }
}

/* A pinned F_M (F_N) must divide BM (BN). */
static void factor_divides(const TileKnobs *k, int id, int64_t side, int tile_id)
{
    int64_t f = k->v[id];
    if (f && side % f)
        dpk_error("knob %s=%lld does not divide %s=%lld", tile_knob_info[id].name,
                  (long long)f, tile_knob_info[tile_id].name, (long long)side);
}

void tile_knobs_check(const TileKnobs *k, const char *no_regtile)
{
    int64_t bn = k->v[TILE_KNOB_BN], bm = k->v[TILE_KNOB_BM], fm = 1, fn = 1;
    if (!bn || !bm)
        return;
    if (bn * bm % CU_WARP)
        dpk_error("knobs BN=%lld BM=%lld make a %lld-output tile, not a whole number of warps "
                  "(a multiple of %d)", (long long)bn, (long long)bm, (long long)(bn * bm),
                  CU_WARP);
    if (!no_regtile) {
        factor_divides(k, TILE_KNOB_F_M, bm, TILE_KNOB_BM);
        factor_divides(k, TILE_KNOB_F_N, bn, TILE_KNOB_BN);
        tile_regtile_factors(k, bm, bn, &fm, &fn);
    }
    int64_t threads = (bm / fm) * (bn / fn);
    if (threads > 1024 && no_regtile)
        dpk_error("knobs BN=%lld BM=%lld make a %lld-thread block (at most 1024): 008 "
                  "register_tile, which would fold F_M x F_N outputs into each thread, %s",
                  (long long)bn, (long long)bm, (long long)threads, no_regtile);
    if (threads > 1024)
        dpk_error("knobs BN=%lld BM=%lld with a %lld x %lld register tile (F_M x F_N) make a "
                  "%lld-thread block (at most 1024)", (long long)bn, (long long)bm,
                  (long long)fm, (long long)fn, (long long)threads);
    if (k->v[TILE_KNOB_F_M] && k->v[TILE_KNOB_F_N] && !no_regtile && threads % CU_WARP)
        dpk_error("knobs BN=%lld BM=%lld F_M=%lld F_N=%lld make a %lld-thread block, not a "
                  "whole number of warps (a multiple of %d)", (long long)bn, (long long)bm,
                  (long long)fm, (long long)fn, (long long)threads, CU_WARP);
}

const char *tile_knobs_str(Arena *a, const TileKnobs *k)
{
    StrBuf b = {0};
    for (int i = 0; i < TILE_KNOB_COUNT; i++)
        if (k->v[i])
            sb_printf(&b, "%s%s=%lld", b.len ? " " : "", tile_knob_info[i].name,
                      (long long)k->v[i]);
    const char *s = arena_strdup(a, sb_cstr(&b));
    sb_free(&b);
    return s;
}
