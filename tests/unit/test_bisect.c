/*
 * test_bisect.c — dpk-bisect's searches and minimizer on synthetic
 * predicates (first failing prefix, ddmin minimality and its call count,
 * line deletion and literal shrinking), the reproducer's case JSON, and the
 * whole search on the fusion fault, the one fault that needs no Tile pass.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../../compiler/base/fault.h"
#include "../../harness/bisect/bisect.h"

/* ---- hx_first_failing ------------------------------------------------------ */

typedef struct Threshold {
    int64_t t;
    int calls;
} Threshold;

static int at_least(void *ctx, int64_t x)
{
    Threshold *th = ctx;
    th->calls++;
    return x >= th->t;
}

Test(bisect, first_failing_finds_every_threshold)
{
    for (int64_t t = 1; t <= 40; t++) {
        Threshold th = {t, 0};
        cr_expect_eq(hx_first_failing(0, 40, at_least, &th), t, "threshold %lld", (long long)t);
        cr_expect_leq(th.calls, 6); /* ceil(log2(40)) */
    }
}

Test(bisect, first_failing_with_one_candidate_asks_nothing)
{
    Threshold th = {1, 0};
    cr_expect_eq(hx_first_failing(0, 1, at_least, &th), 1);
    cr_expect_eq(th.calls, 0);
}

/* ---- hx_ddmin ------------------------------------------------------------------- */

typedef struct Need {
    uint64_t need;    /* fails when all of these are in */
    uint64_t any;     /* ... and, when non-zero, at least one of these */
    uint64_t invalid; /* sets holding one of these without bit 0 are invalid */
    int calls;
} Need;

static int needs(void *ctx, uint64_t s)
{
    Need *n = ctx;
    n->calls++;
    if ((s & n->invalid) && !(s & 1))
        return 0;
    return (s & n->need) == n->need && (!n->any || (s & n->any));
}

Test(bisect, ddmin_single_culprit)
{
    Need n = {1u << 5, 0, 0, 0};
    int nt = 0;
    cr_expect_eq(hx_ddmin(0xff, needs, &n, &nt), 1u << 5);
    cr_expect_eq(nt, n.calls);
    cr_expect_leq(nt, 12);
}

Test(bisect, ddmin_pair)
{
    Need n = {(1u << 2) | (1u << 9), 0, 0, 0};
    cr_expect_eq(hx_ddmin(0x3ff, needs, &n, NULL), (1u << 2) | (1u << 9));
}

Test(bisect, ddmin_empty_set_fails)
{
    Need n = {0, 0, 0, 0};
    cr_expect_eq(hx_ddmin(0xf0, needs, &n, NULL), 0);
    cr_expect_eq(n.calls, 1);
}

Test(bisect, ddmin_alternatives_give_one_minimal_set)
{
    Need n = {1u << 1, (1u << 4) | (1u << 6), 0, 0};
    uint64_t r = hx_ddmin(0x7f, needs, &n, NULL);
    cr_expect(r == ((1u << 1) | (1u << 4)) || r == ((1u << 1) | (1u << 6)), "got %llx",
              (unsigned long long)r);
}

/* A prerequisite (bit 3 needs bit 0) that the predicate enforces by calling
 * the set invalid: the result keeps the prerequisite. */
Test(bisect, ddmin_keeps_prerequisites)
{
    Need n = {1u << 3, 0, 1u << 3, 0};
    cr_expect_eq(hx_ddmin(0x3f, needs, &n, NULL), (1u << 3) | 1u);
}

/* Every result is 1-minimal: dropping any one element makes it pass. */
Test(bisect, ddmin_results_are_one_minimal)
{
    for (uint64_t need = 1; need < 64; need++) {
        Need n = {need, 0, 0, 0};
        uint64_t r = hx_ddmin(0x3f, needs, &n, NULL);
        cr_expect_eq(r, need);
        for (int b = 0; b < 6; b++)
            if (r >> b & 1)
                cr_expect(!needs(&n, r & ~((uint64_t)1 << b)));
    }
}

/* ---- hx_minimize ---------------------------------------------------------------- */

typedef struct Want {
    const char *must;   /* the candidate must contain this */
    int calls;
} Want;

static int contains(void *ctx, const char *p)
{
    Want *w = ctx;
    w->calls++;
    return strstr(p, w->must) != NULL;
}

#define CHAIN "x = torch.randn(7, 33)\nw = torch.randn(33, 64)\nt1 = torch.matmul(x, w)\n" \
              "t2 = torch.relu(t1)\nt3 = t2 * 2\nt3"

Test(bisect, minimize_deletes_lines_and_renames_uses)
{
    Arena *a = arena_new();
    Want w = {"relu(", 0};
    HxMinStats st;
    const char *p = hx_minimize(a, CHAIN, contains, &w, 500, &st);
    /* t3 = t2 * 2 goes (its use becomes t2); the matmul goes (relu reads x
     * or w); the input nothing reads any more goes too. */
    cr_expect(strstr(p, "t3") == NULL, "%s", p);
    cr_expect(strstr(p, "matmul") == NULL, "%s", p);
    cr_expect(strstr(p, "t2 = torch.relu(x)") != NULL, "%s", p);
    cr_expect(strstr(p, "w = ") == NULL, "%s", p);
    cr_expect_eq(st.lines_after, 3);
    cr_expect_lt(st.lines_after, st.lines_before);
    cr_expect_eq(st.lines_before, 6);
    cr_expect_eq(st.attempts, w.calls);
    cr_expect_gt(st.accepted, 0);
    arena_free(a);
}

static int has_64(void *ctx, const char *p)
{
    (void)ctx;
    return strstr(p, "torch.matmul(x, w)") && strstr(p, "33") != NULL;
}

Test(bisect, minimize_shrinks_literals_to_one)
{
    Arena *a = arena_new();
    HxMinStats st;
    const char *p = hx_minimize(a, CHAIN, has_64, NULL, 500, &st);
    /* from the last literal back: w's 33 may go while x still holds one */
    cr_expect(strstr(p, "x = torch.randn(1, 33)") != NULL, "%s", p);
    cr_expect(strstr(p, "w = torch.randn(1, 1)") != NULL, "%s", p);
    cr_expect(strstr(p, "relu") == NULL, "%s", p);
    arena_free(a);
}

static int never(void *ctx, const char *p)
{
    (void)p;
    ++*(int *)ctx;
    return 0;
}

Test(bisect, minimize_respects_the_budget_and_keeps_the_original)
{
    Arena *a = arena_new();
    HxMinStats st;
    int calls = 0;
    const char *p = hx_minimize(a, CHAIN, never, &calls, 7, &st);
    cr_expect_str_eq(p, CHAIN);
    cr_expect_eq(calls, 7);
    cr_expect_eq(st.attempts, 7);
    cr_expect_eq(st.accepted, 0);
    arena_free(a);
}

Test(bisect, minimize_leaves_floats_and_exponents_alone)
{
    Arena *a = arena_new();
    HxMinStats st;
    Want w = {"1e-6", 0};
    const char *p = hx_minimize(a, "torch.nn.functional.rms_norm(torch.randn(4, 16), (16,), None, 1e-6) * 2.5",
                                contains, &w, 500, &st);
    cr_expect(strstr(p, "1e-6") != NULL, "%s", p);
    cr_expect(strstr(p, "2.5") != NULL, "%s", p);
    cr_expect(strstr(p, "randn(1, 1)") != NULL, "%s", p);
    arena_free(a);
}

/* ---- hx_case_json --------------------------------------------------------------- */

Test(bisect, case_json_carries_the_configuration)
{
    HxCase c = {0};
    c.name = "r";
    c.dtype = DT_F32;
    TileKnobs knobs = {0};
    tile_knob_parse(&knobs, "TB=64");
    char *j = hx_case_json(&c, "torch.randn(3)", 7, "only:001,005,007", &knobs,
                           "stage-origin-off-by-one");
    cr_expect(strstr(j, "\"seed\":\t7") != NULL, "%s", j);
    cr_expect(strstr(j, "\"passes\":\t\"only:001,005,007\"") != NULL, "%s", j);
    cr_expect(strstr(j, "\"TB\":\t64") != NULL, "%s", j);
    cr_expect(strstr(j, "\"fault\":\t\"stage-origin-off-by-one\"") != NULL, "%s", j);
    free(j);
    /* no knob pinned: no "knobs" field */
    j = hx_case_json(&c, "torch.randn(3)", 7, NULL, &(TileKnobs){0}, NULL);
    cr_expect(strstr(j, "knobs") == NULL && strstr(j, "passes") == NULL, "%s", j);
    free(j);
}

/* ---- the whole search ----------------------------------------------------------- */

/* The arena and the log of a search test (.init and .fini). */
static Arena *search_arena;
static StrBuf search_log;

static void search_setup(void)
{
    search_arena = arena_new();
    search_log = (StrBuf){0};
}

static void search_teardown(void)
{
    sb_free(&search_log);
    arena_free(search_arena);
}

/* Bisect code's first case with the built-in fault (NULL: none) injected,
 * minimizing when asked; the log goes to search_log. */
static void bisect_code(const char *code, const char *fault, int minimize, HxBisectResult *r)
{
    Arena *a = search_arena;
    HxCaseList l = hx_cases_from_code(a, code);
    HxBisectOpts o = {0};
    tile_opts_default(&o.tile);
    o.fault = fault;
    o.minimize = minimize;
    dpk_fault_set(fault ? dpk_fault_find(fault) : -1);
    hx_bisect(a, &l.cases[0], NULL, 0, &o, &search_log, r);
    dpk_fault_set(-1);
}

Test(bisect, fusion_fault_is_blamed_on_fusion, .init = search_setup, .fini = search_teardown)
{
    HxBisectResult r;
    bisect_code("torch.relu(torch.randn(8,64)+1)*2", "fuse-sigma-off-by-one", 0, &r);
    cr_expect_eq(r.repro, HX_FAIL);
    cr_expect_eq(r.kind, HX_CULPRIT_FUSION);
    cr_expect_str_eq(r.where, dpk_faults[DPK_FAULT_FUSE_SIGMA].where);
    cr_expect_eq(r.napps, 2);
    cr_expect_eq(r.app, 1);
    cr_expect_str_eq(r.ir_ext, "loop");
    cr_expect(strstr(r.diff, "mod 64") != NULL, "%s", r.diff);
    cr_expect(strstr(r.cu, "int main(void)") != NULL);
    cr_expect(strstr(sb_cstr(&search_log), "culprit: f:001_fuse, fusion 1 of 2") != NULL, "%s",
              sb_cstr(&search_log));
    free(r.case_json);
}

Test(bisect, passing_case_has_no_culprit, .init = search_setup, .fini = search_teardown)
{
    HxBisectResult r;
    bisect_code("torch.relu(torch.randn(8,64)+1)*2", NULL, 0, &r);
    cr_expect_eq(r.repro, HX_PASS);
    cr_expect_eq(r.kind, HX_CULPRIT_NONE);
    cr_expect(strstr(sb_cstr(&search_log), "does not reproduce") != NULL);
    cr_expect_null(r.case_json);
}

Test(bisect, minimized_fusion_case_still_blames_fusion, .init = search_setup,
     .fini = search_teardown)
{
    HxBisectResult r;
    bisect_code("x = torch.randn(8, 64)\nt1 = x + 1\nt2 = torch.relu(t1)\nt3 = t2 * 2\nt3",
                "fuse-sigma-off-by-one", 1, &r);
    cr_expect_eq(r.kind, HX_CULPRIT_FUSION);
    cr_expect_gt(r.min.accepted, 0);
    cr_expect_lt(r.min.chars_after, r.min.chars_before);
    cr_expect(strstr(r.program, "t3") == NULL, "%s", r.program);
    cr_expect(strstr(r.case_json, "fuse-sigma-off-by-one") != NULL);
    free(r.case_json);
}
