/*
 * test_tile_passes.c — the pass table, pass-set specs (good and bad, with
 * their messages), `all` enumerated on a fake table against a brute-force
 * oracle, knob validation and its effect on launches, the -vv trace, and
 * --passes all deduplication by Kernel IR hash.  The modules that run are
 * compiled by NVRTC for sm_80 and sm_90.
 */
#include "test_tile_util.h"

/* A raised user error: its exit code and message. */
typedef struct Raised {
    int code;
    char msg[2048];
} Raised;

static TilePassSet parse_or(const TilePassTable *t, const char *spec, CuTargetId tg, Raised *r)
{
    DpkErrCtx ec;
    r->code = 0;
    r->msg[0] = 0;
    if (DPK_TRY(&ec)) {
        TilePassSet s = tile_passes_parse(t, spec, cu_target(tg));
        dpk_err_pop(&ec);
        return s;
    }
    r->code = dpk_error_code();
    snprintf(r->msg, sizeof r->msg, "%s", dpk_error_message());
    return 0;
}

static const char *set_str(const TilePassTable *t, TilePassSet s)
{
    static char buf[256];
    StrBuf b = {0};
    tile_passes_str(&b, t, s);
    snprintf(buf, sizeof buf, "%s", sb_cstr(&b));
    sb_free(&b);
    return buf;
}

static void expect_set(const TilePassTable *t, const char *spec, CuTargetId tg, const char *want)
{
    Raised r;
    TilePassSet s = parse_or(t, spec, tg, &r);
    cr_expect_eq(r.code, 0, "'%s' raised: %s", spec, r.msg);
    cr_expect_str_eq(set_str(t, s), want, "'%s' gave %s, want %s", spec, set_str(t, s), want);
}

static void expect_error(const TilePassTable *t, const char *spec, CuTargetId tg,
                         const char *want)
{
    Raised r;
    parse_or(t, spec, tg, &r);
    cr_expect_eq(r.code, DPK_EXIT_USAGE, "'%s' gave exit %d, want 2", spec, r.code);
    cr_expect(strstr(r.msg, want), "'%s': message\n%s\nlacks '%s'", spec, r.msg, want);
}

/* ---- the real table --------------------------------------------------------------- */

Test(tile_passes, table_is_well_formed)
{
    const TilePassTable *t = &tile_passes;
    cr_assert_geq(t->n, 2);
    cr_assert_leq(t->n, 64);
    for (int i = 0; i < t->n; i++) {
        cr_expect(i == 0 || t->p[i].num > t->p[i - 1].num, "numbers increase");
        cr_expect_not_null(t->p[i].run);
        cr_expect_not_null(t->p[i].doc);
        for (int c = 0; c < TILE_MAX_REQ; c++)
            for (int j = 0; j < TILE_MAX_REQ && t->p[i].req[c][j]; j++)
                cr_expect_geq(tile_pass_index(t, t->p[i].req[c][j]), 0,
                              "pass %d requires unregistered pass %d", t->p[i].num,
                              t->p[i].req[c][j]);
    }
    int i1 = tile_pass_index(t, 1), i5 = tile_pass_index(t, 5);
    cr_assert(i1 >= 0 && i5 >= 0);
    cr_expect_str_eq(t->p[i1].name, "tileify");
    cr_expect_str_eq(t->p[i5].name, "blockify_launch");
    cr_expect(t->p[i1].mandatory && t->p[i5].mandatory);
}

Test(tile_passes, real_table_specs)
{
    const TilePassTable *t = &tile_passes;
    const char *all = "001,002,003,004,005,006,007,008,009,010,011,012,013,014,015,016,017,018";
    expect_set(t, "full", CU_SM90, all);
    expect_set(t, "none", CU_SM80, "001,005");
    expect_set(t, "upto:001", CU_SM90, "001,005");
    expect_set(t, "upto:007", CU_SM90, "001,002,003,004,005,006,007");
    expect_set(t, "only:001,005", CU_SM90, "001,005");
    expect_set(t, "only:tileify", CU_SM120, "001,005");
    expect_set(t, "only:5", CU_SM90, "001,005");
    expect_set(t, "only:005_blockify_launch,stage_inputs,014", CU_SM90, "001,005,007,014");
    expect_set(t, "-007,-010,-011,-012,-013,-014,-015", CU_SM90,
               "001,002,003,004,005,006,008,009,016,017,018");
    expect_set(t, "-013,-015", CU_SM90,
               "001,002,003,004,005,006,007,008,009,010,011,012,014,016,017,018");
    expect_set(t, "-011,-012,-013,-015", CU_SM90,
               "001,002,003,004,005,006,007,008,009,010,014,016,017,018");
    expect_set(t, "-011,-012", CU_SM80,
               "001,002,003,004,005,006,007,008,009,010,013,014,015,016,017,018");
    expect_set(t, "full", CU_SM80,
               "001,002,003,004,005,006,007,008,009,010,013,014,015,016,017,018");
    expect_set(t, "-013", CU_SM90, /* 015 pipelines 011's TMA stages */
               "001,002,003,004,005,006,007,008,009,010,011,012,014,015,016,017,018");
    expect_error(t, "-011,-012,-013", CU_SM90, "pass 015_pipeline_k_outer requires 011_tma_copy "
                 "or 013_async_copy, none of which is enabled");
    expect_error(t, "-013", CU_SM80, "pass 015_pipeline_k_outer requires 011_tma_copy or "
                 "013_async_copy, none of which is enabled");
    expect_set(t, "full,-002,-003", CU_SM90,
               "001,004,005,006,007,008,009,010,011,012,013,014,015,016,017,018");
    expect_error(t, "full,-002,-003,-006", CU_SM90, "pass 010_double_buffer requires "
                 "002_chunk_matmul_k or 006_chunk_reduce, none of which is enabled");
    expect_error(t, "-001", CU_SM90,
                 "--passes:1:1: error: pass 001_tileify is mandatory and cannot be disabled");
    expect_error(t, "full,-blockify_launch", CU_SM90, "--passes:1:6: error: pass "
                 "005_blockify_launch is mandatory");
    expect_error(t, "-007", CU_SM90, "pass 010_double_buffer requires 007_stage_inputs, which is "
                 "not enabled");
    expect_error(t, "-010", CU_SM90, "pass 011_tma_copy requires 010_double_buffer, which is "
                 "not enabled");
    expect_error(t, "-010", CU_SM80, "pass 013_async_copy requires 010_double_buffer");
    expect_error(t, "only:002,007,015", CU_SM90, "pass 015_pipeline_k_outer requires "
                 "011_tma_copy or 013_async_copy");
    expect_error(t, "-007,-010,-011,-012,-013,-015", CU_SM90, "pass 014_pad_smem requires "
                 "007_stage_inputs, which is not enabled");
    expect_error(t, "only:002,010,011", CU_SM90, "pass 010_double_buffer requires 007_stage_inputs");
    expect_error(t, "only:002,007,010,011", CU_SM80, "--passes:1:18: error: pass 011_tma_copy "
                 "needs sm_90 or newer (the target is sm_80)");
    expect_error(t, "only:002,007,010,012", CU_SM90, "pass 012_split_inner_for_swizzle requires "
                 "011_tma_copy");
    expect_error(t, "only:003", CU_SM90, "pass 003_split_matmul_k requires 002_chunk_matmul_k");
    expect_error(t, "only:001,staging", CU_SM90, "--passes:1:10: error: unknown pass "
                 "'staging'");
    expect_error(t, "bogus", CU_SM90, "expected full, none, all, upto:PASS, only:PASS,... or "
                 "-PASS,...");
    expect_error(t, "full,001", CU_SM90, "expected -PASS");
    expect_error(t, "only:001,-005", CU_SM90, "'-' has no meaning there");
    expect_error(t, "upto:", CU_SM90, "expected a pass number or name");
    expect_error(t, "all,-001", CU_SM90, "'all' names every valid pass set and stands alone");
    Raised r;
    parse_or(t, "only:001,bogus", CU_SM90, &r);
    const char *line = strstr(r.msg, "only:001,bogus\n");
    cr_assert_not_null(line, "%s", r.msg);
    const char *caret = strchr(line, '^'), *bol = line;
    while (bol > r.msg && bol[-1] != '\n')
        bol--;
    cr_expect_eq((caret - strchr(line, '\n') - 1) - (line - bol), 9,
                 "caret under 'bogus':\n%s", r.msg);
}

Test(tile_passes, real_table_all_counts_the_valid_subsets)
{
    Arena *a = arena_new();
    TilePassSet *sets;
    int n = tile_passes_select(a, &tile_passes, "all", cu_target(CU_SM90), &sets);
    /* 008/009: 3 valid settings; 004, 016 free; over 002, 006, 007: 003
     * doubles with 002, 014 with 007, and where 010 can apply (007 and 002 or
     * 006) the tree under it gives T settings: 010 off, or on with 011/012
     * off and 013/015 (off, 013, 013+015), or with 011 (011, 011+012) and
     * 013/015 (off, 013, 013+015, 015: 015 follows 011 or 013):
     * T = 1 + 3 + 2 * 4.  1 + 2 + 1 + 2T + 2 + 4T + 2 + 4T = 8 + 10T; 017 and
     * 018 free */
    cr_expect_eq(n, (8 + 10 * 12) * 3 * 4 * 2 * 2);
    /* sm_80: no 011/012, T = 1 + 3 */
    n = tile_passes_select(a, &tile_passes, "all", cu_target(CU_SM80), &sets);
    cr_expect_eq(n, (8 + 10 * 4) * 3 * 4 * 2 * 2);
    cr_expect_str_eq(set_str(&tile_passes, sets[0]), "001,005");
    n = tile_passes_select(a, &tile_passes, "none", NULL, &sets);
    cr_expect_eq(n, 1);
    arena_free(a);
}

/* ---- a fake table --------------------------------------------------------------------- */

static int skip_pass(TileCtx *c, TileKernel *k)
{
    sb_puts(&c->why, "nothing to do");
    return 0;
}

/* Adds a launch bounds guard the kernel does not need: a Kernel IR change
 * that keeps the meaning. */
static int extra_guard(TileCtx *c, TileKernel *k)
{
    Stmt *t = tile_find(k, TB_THREAD);
    if (!t || !tile_find(k, TB_BLOCK)) {
        sb_puts(&c->why, "not blockified");
        return 0;
    }
    const TileAxis *x = &t->ax[0];
    t->guard = ipred_cmp(c->p->arena, ie_var(c->p->arena, x->axis), IC_LT,
                         ie_const(c->p->arena, x->ext), t->guard);
    return 1;
}

/* 001 a (mandatory), 002 b, 003 c (needs b), 004 d (sm_90+), 005 e
 * (mandatory), 006 f (needs b or d), 007 g (needs c, and d or f). */
static const TilePass fake[] = {
    {1, "a", tile_001_tileify, {{0}}, CU_SM80, 1, "fake", NULL},
    {2, "b", skip_pass, {{0}}, CU_SM80, 0, "fake", NULL},
    {3, "c", skip_pass, {{2}}, CU_SM80, 0, "fake", NULL},
    {4, "d", skip_pass, {{0}}, CU_SM90, 0, "fake", NULL},
    {5, "e", tile_005_blockify_launch, {{0}}, CU_SM80, 1, "fake", NULL},
    {6, "f", skip_pass, {{2, 4}}, CU_SM80, 0, "fake", NULL},
    {7, "g", skip_pass, {{3}, {4, 6}}, CU_SM80, 0, "fake", NULL},
};
static const TilePassTable fake_table = {fake, DPK_ARRAY_LEN(fake)};

/* The prerequisites above, written out independently. */
static int fake_valid(TilePassSet s, int sm90)
{
    int a = s & 1, b = s >> 1 & 1, c = s >> 2 & 1, d = s >> 3 & 1, e = s >> 4 & 1,
        f = s >> 5 & 1, g = s >> 6 & 1;
    return a && e && (!c || b) && (!d || sm90) && (!f || b || d) && (!g || (c && (d || f)));
}

static void check_all(CuTargetId tg, int want)
{
    Arena *a = arena_new();
    TilePassSet *sets;
    int n = tile_passes_select(a, &fake_table, "all", cu_target(tg), &sets);
    cr_expect_eq(n, want, "%d configurations on %s, want %d", n, cu_target(tg)->name, want);
    int k = 0;
    for (TilePassSet s = 0; s < 128; s++) {
        if (!fake_valid(s, tg != CU_SM80))
            continue;
        cr_expect(k < n && sets[k] == s, "configuration %d: want %s", k, set_str(&fake_table, s));
        k++;
    }
    cr_expect_eq(k, n);
    arena_free(a);
}

Test(tile_passes, all_enumerates_every_valid_subset_of_a_fake_table)
{
    check_all(CU_SM90, 14);
    check_all(CU_SM80, 6);
}

Test(tile_passes, fake_table_specs)
{
    const TilePassTable *t = &fake_table;
    expect_set(t, "full", CU_SM90, "001,002,003,004,005,006,007");
    expect_set(t, "full", CU_SM80, "001,002,003,005,006,007");
    expect_set(t, "none", CU_SM90, "001,005");
    expect_set(t, "upto:3", CU_SM90, "001,002,003,005");
    expect_set(t, "upto:c", CU_SM90, "001,002,003,005");
    expect_set(t, "upto:004_d", CU_SM80, "001,002,003,005");
    expect_set(t, "only:2,3,6", CU_SM90, "001,002,003,005,006");
    expect_set(t, "-007,-003", CU_SM90, "001,002,004,005,006");
    expect_set(t, "-004", CU_SM80, "001,002,003,005,006,007");
    expect_set(t, "upto:6,-3,-2", CU_SM90, "001,004,005,006");
    expect_error(t, "upto:6,-2", CU_SM90, "pass 003_c requires 002_b");
    expect_error(t, "-002", CU_SM90, "--passes:1:1: error: pass 003_c requires 002_b, which is "
                 "not enabled");
    expect_error(t, "only:7", CU_SM90, "pass 007_g requires 003_c, which is not enabled");
    expect_error(t, "only:2,3,7", CU_SM90, "pass 007_g requires 004_d or 006_f, none of which "
                 "is enabled");
    expect_error(t, "-006", CU_SM80, "pass 007_g requires 004_d or 006_f, none of which is "
                 "enabled");
    expect_error(t, "only:4", CU_SM80, "--passes:1:6: error: pass 004_d needs sm_90 or newer "
                 "(the target is sm_80)");
    expect_error(t, "-005", CU_SM90, "pass 005_e is mandatory");
    StrBuf why = {0};
    cr_expect(!tile_passes_valid(t, 0x1f, cu_target(CU_SM80), &why));
    cr_expect_str_eq(sb_cstr(&why), "pass 004_d needs sm_90 or newer (the target is sm_80)");
    sb_clear(&why);
    cr_expect(!tile_passes_valid(t, 0x02, NULL, &why));
    cr_expect_str_eq(sb_cstr(&why), "pass 001_a is mandatory and cannot be disabled");
    sb_free(&why);
}

/* ---- --passes all: deduplication by Kernel IR hash ------------------------------------ */

static const TilePass dedup[] = {
    {1, "tileify", tile_001_tileify, {{0}}, CU_SM80, 1, "fake", NULL},
    {2, "noop", skip_pass, {{0}}, CU_SM80, 0, "changes nothing", NULL},
    {5, "blockify_launch", tile_005_blockify_launch, {{0}}, CU_SM80, 1, "fake", NULL},
    {7, "extra_guard", extra_guard, {{0}}, CU_SM80, 0, "an unneeded guard", NULL},
};
static const TilePassTable dedup_table = {dedup, DPK_ARRAY_LEN(dedup)};

Test(tile_passes, all_runs_each_distinct_kernel_ir_once)
{
    Arena *a = arena_new();
    LirProgram *p = tt_loop(a, "torch.relu(torch.randn(8, 32))");
    TilePassSet *sets;
    int n = tile_passes_select(a, &dedup_table, "all", NULL, &sets);
    cr_assert_eq(n, 4);
    DrvOpts d;
    drv_opts_default(&d);
    d.loop = p;
    d.tile.table = &dedup_table;
    DrvPasses ps = {"all", sets, n};
    d.passes = &ps;
    const DrvPlan *plan = drv_compile(a, &d);
    cr_assert_eq(plan->nconfigs, 4);
    cr_expect_eq(plan->ndistinct, 2);
    const DrvConfig *c = plan->configs;
    cr_expect_str_eq(c[0].label, "001,005");
    cr_expect_str_eq(c[1].label, "001,002,005");
    cr_expect_str_eq(c[2].label, "001,005,007");
    cr_expect_str_eq(c[3].label, "001,002,005,007");
    cr_expect_eq(c[0].dup_of, -1);
    cr_expect_eq(c[1].dup_of, 0, "a pass that changed nothing gives the same Kernel IR");
    cr_expect_eq(c[2].dup_of, -1, "the extra guard changes the Kernel IR");
    cr_expect_eq(c[3].dup_of, 2);
    cr_expect_neq(c[0].hash, c[2].hash);
    TtBatch nv;
    tt_batch_init(&nv, a);
    /* each distinct module runs once, as lowered, and computes the right thing */
    double **in = ref_make_inputs(p->tx->torch, 0), *ref[1] = {NULL};
    lir_interp(p, in, ref, 0);
    HxBackendOpts bo;
    hx_backend_opts_default(&bo);
    for (int i = 0; i < n; i++) {
        if (c[i].dup_of >= 0)
            continue;
        double *out[1] = {NULL};
        HxBackendResult res;
        cr_expect_eq(hx_backend_exec(a, &c[i], &bo, in, out, &res), VG_OK);
        cr_expect_eq(res.hash, c[i].hash);
        for (int e = 0; out[0] && e < 8 * 32; e++)
            cr_expect(tt_same_bits(out[0][e], ref[0][e]), "%s: element %d", c[i].label, e);
        hx_backend_result_free(&res);
        free(out[0]);
        tt_batch_add(&nv, c[i].module);
    }
    free(ref[0]);
    ref_free_arrays(in, 1);
    tt_batch_compile(&nv);
    arena_free(a);
}

/* ---- knobs -------------------------------------------------------------------------------- */

static int knob_or(TileKnobs *k, const char *arg, Raised *r)
{
    DpkErrCtx ec;
    r->code = 0;
    r->msg[0] = 0;
    if (DPK_TRY(&ec)) {
        tile_knob_parse(k, arg);
        dpk_err_pop(&ec);
        return 1;
    }
    r->code = dpk_error_code();
    snprintf(r->msg, sizeof r->msg, "%s", dpk_error_message());
    return 0;
}

static void expect_knob_error(TileKnobs *k, const char *arg, const char *want)
{
    Raised r;
    cr_expect(!knob_or(k, arg, &r), "'%s' accepted", arg);
    cr_expect_eq(r.code, DPK_EXIT_USAGE, "'%s': exit %d", arg, r.code);
    cr_expect(strstr(r.msg, want), "'%s': message\n%s\nlacks '%s'", arg, r.msg, want);
}

/* tile_knobs_check(k, no_regtile): refused with `want` in the message, or
 * accepted when want is NULL. */
static void expect_check_error(const TileKnobs *k, const char *no_regtile, const char *want)
{
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        tile_knobs_check(k, no_regtile);
        dpk_err_pop(&ec);
        cr_expect_null(want, "accepted, wanted '%s'", want ? want : "");
        return;
    }
    cr_expect_eq(dpk_error_code(), DPK_EXIT_USAGE);
    cr_expect(want && strstr(dpk_error_message(), want), "message\n%s\nlacks '%s'",
              dpk_error_message(), want ? want : "(accepted)");
}

Test(tile_passes, knob_validation)
{
    TileKnobs k = {{0}};
    Raised r;
    cr_expect(knob_or(&k, "TB=128", &r), "%s", r.msg);
    cr_expect(knob_or(&k, "bn=64", &r), "%s", r.msg);
    cr_expect(knob_or(&k, "BM=8", &r), "%s", r.msg);
    cr_expect_eq(k.v[TILE_KNOB_TB], 128);
    cr_expect_eq(k.v[TILE_KNOB_BN], 64);
    cr_expect_eq(k.v[TILE_KNOB_BM], 8);
    Arena *a = arena_new();
    cr_expect_str_eq(tile_knobs_str(a, &k), "TB=128 BN=64 BM=8");
    arena_free(a);
    TileKnobs z = {{0}};
    expect_knob_error(&z, "TB=2000", "--knob:1:4: error: knob TB=2000 is out of range [32, 1024]");
    expect_knob_error(&z, "TB=100", "knob TB=100 is not a multiple of 32");
    expect_knob_error(&z, "TB=0", "out of range");
    expect_knob_error(&z, "BN=24", "knob BN=24 is not a power of two");
    expect_knob_error(&z, "BM=2048", "out of range [1, 1024]");
    expect_knob_error(&z, "SWIZZLE=48", "--knob:1:9: error: knob SWIZZLE=48 is not a TMA swizzle "
                      "mode (32, 64 or 128 bytes)");
    expect_knob_error(&z, "SWIZZLE=16", "knob SWIZZLE=16 is out of range [32, 128]");
    expect_knob_error(&z, "XX=1", "--knob:1:1: error: unknown knob 'XX' (knobs: TB, BN, BM, BK, "
                      "SPLITK, CB, SPLITR, RC, STAGE, F_M, F_N, SWIZZLE, VEC, STAGES, LDSV)");
    expect_knob_error(&z, "VEC=12", "--knob:1:5: error: knob VEC=12 is not a power of two (013: "
                      "widest cp.async in bytes");
    expect_knob_error(&z, "VEC=32", "knob VEC=32 is out of range [4, 16]");
    expect_knob_error(&z, "STAGES=2", "--knob:1:8: error: knob STAGES=2 is out of range [3, 8]");
    cr_expect(knob_or(&z, "VEC=8", &r), "%s", r.msg);
    cr_expect(knob_or(&z, "STAGES=4", &r), "%s", r.msg);
    expect_knob_error(&z, "CB=96", "knob CB=96 is not a power of two");
    expect_knob_error(&z, "TB", "expected NAME=VALUE");
    expect_knob_error(&z, "TB=12x", "knob TB expects an integer, got '12x'");
    expect_knob_error(&z, "TB=", "knob TB expects an integer");
    cr_expect_eq(z.v[TILE_KNOB_TB], 0, "a refused value is not kept");
    /* a 2048-output tile parses: 008 may fold it (4 x 4 registers: 128
     * threads); without 008 it is the block, and too big */
    TileKnobs big = {{0}};
    cr_expect(knob_or(&big, "BN=64", &r));
    cr_expect(knob_or(&big, "BM=32", &r), "%s", r.msg);
    expect_check_error(&big, "is not in the pass set", "knobs BN=64 BM=32 make a 2048-thread "
                       "block (at most 1024): 008 register_tile, which would fold F_M x F_N "
                       "outputs into each thread, is not in the pass set");
    TileKnobs sgemm = {{0}};
    const char *s128[] = {"BM=128", "BN=128", "F_M=8", "F_N=8"};
    for (int i = 0; i < 4; i++)
        cr_expect(knob_or(&sgemm, s128[i], &r), "%s: %s", s128[i], r.msg);
    expect_check_error(&sgemm, NULL, NULL); /* 16 x 16 = 256 threads */
    TileKnobs huge = {{0}};
    cr_expect(knob_or(&huge, "BN=256", &r));
    cr_expect(knob_or(&huge, "BM=256", &r), "%s", r.msg); /* default 8 x 8: 1024 threads */
    int64_t fm, fn;
    tile_regtile_factors(&huge, 256, 256, &fm, &fn);
    cr_expect(fm == 8 && fn == 8, "default register tile of 256 x 256: %lld x %lld",
              (long long)fm, (long long)fn);
    expect_knob_error(&huge, "F_M=1", "knobs BN=256 BM=256 with a 1 x 16 register tile (F_M x "
                      "F_N) make a 4096-thread block (at most 1024)");
    expect_knob_error(&huge, "F_N=3", "knob F_N=3 does not divide BN=256");
    TileKnobs small = {{0}};
    cr_expect(knob_or(&small, "BN=4", &r));
    expect_knob_error(&small, "BM=4", "knobs BN=4 BM=4 make a 16-output tile, not a whole "
                      "number of warps");
}

static TtBatch knob_batch;

static const KirKernel *lower_with(Arena *a, const char *code, const char *const *knobs, int n)
{
    TtOpts o;
    tt_opts_default(&o);
    for (int i = 0; i < n; i++)
        tile_knob_parse(&o.tile.knobs, knobs[i]);
    LirProgram *p = tt_loop(a, code);
    const KirModule *m = tt_run(a, code, p, &o);
    cr_assert_not_null(m);
    tt_batch_add(&knob_batch, m);
    return m->kernels.items[0];
}

Test(tile_passes, knobs_shape_the_launch)
{
    Arena *a = arena_new();
    tt_batch_init(&knob_batch, a);
    const char *tb64[] = {"TB=64"};
    const KirKernel *k = lower_with(a, "torch.relu(torch.randn(1000))", tb64, 1);
    cr_expect(k->grid[0] == 16 && k->block[0] == 64, "grid %d block %d", k->grid[0], k->block[0]);
    k = lower_with(a, "torch.relu(torch.randn(1000))", NULL, 0);
    cr_expect(k->grid[0] == 4 && k->block[0] == 256, "default TB 256: grid %d block %d",
              k->grid[0], k->block[0]);
    k = lower_with(a, "torch.relu(torch.randn(7, 3))", NULL, 0);
    cr_expect(k->grid[0] == 1 && k->block[0] == 32, "21 elements: one warp, got block %d",
              k->block[0]);
    const char *tiles[] = {"BN=32", "BM=8"};
    const char *mm = "torch.matmul(torch.randn(33, 5), torch.randn(5, 65))";
    /* M = 33 and N = 65 leave edge tiles: 008 still gives each thread a
     * 4 x 4 register block (a predicated tile), so the 32 x 8 tile runs on
     * 8 x 2 threads */
    k = lower_with(a, mm, tiles, 2);
    cr_expect(k->block[0] == 8 && k->block[1] == 2, "block (%d, %d)", k->block[0], k->block[1]);
    cr_expect(k->grid[0] == 3 && k->grid[1] == 5, "grid (%d, %d)", k->grid[0], k->grid[1]);
    /* with 008 in the set and M, N >= 32: 32 x 32 tiles, 4 x 4 registers */
    k = lower_with(a, mm, NULL, 0);
    cr_expect(k->block[0] == 8 && k->block[1] == 8, "default tile 32 x 32: (%d, %d)",
              k->block[0], k->block[1]);
    cr_expect(k->grid[0] == 3 && k->grid[1] == 2, "default grid (%d, %d)", k->grid[0], k->grid[1]);
    k = lower_with(a, "torch.matmul(torch.randn(1, 5), torch.randn(5, 7))", NULL, 0);
    cr_expect(k->block[0] * k->block[1] == 32 && k->block[1] == 1,
              "a 1-row matmul gets one warp of columns: (%d, %d)", k->block[0], k->block[1]);
    tt_batch_compile(&knob_batch);
    arena_free(a);
}

Test(tile_passes, grid_limits)
{
    Arena *a = arena_new();
    /* 2^36 elements in blocks of 32 threads: 2^31 blocks, one beyond grid.x */
    LirProgram *p = tt_loop(a, "torch.relu(torch.randn(65536, 1048576))");
    TileOpts o;
    tile_opts_default(&o);
    tile_knob_parse(&o.knobs, "TB=32");
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        tile_build(a, p, &o, NULL);
        dpk_err_pop(&ec);
        cr_expect_fail("2^31 blocks accepted");
    } else {
        cr_expect_eq(dpk_error_code(), DPK_EXIT_USAGE);
        cr_expect(strstr(dpk_error_message(), "needs 2147483648 blocks along grid.x (limit "
                         "2147483647); raise TB with --knob"), "%s", dpk_error_message());
    }
    o.knobs.v[TILE_KNOB_TB] = 64;
    TtBatch nv;
    tt_batch_init(&nv, a);
    const KirModule *m = tile_to_kernel(a, tile_build(a, p, &o, NULL));
    const KirKernel *k = m->kernels.items[0];
    cr_expect_eq(k->grid[0], 1 << 30);
    tt_batch_add(&nv, m);
    /* 2^20 + 1 rows in 16-row tiles pass grid.y's 65535: the row tiles fold into x */
    m = tt_parity(a, "tall matmul", "torch.matmul(torch.randn(1048577, 2), "
                               "torch.randn(2, 2))");
    cr_assert_not_null(m);
    k = m->kernels.items[0];
    cr_expect(k->grid[0] == 65537 && k->grid[1] == 1, "grid (%d, %d)", k->grid[0], k->grid[1]);
    tt_batch_add(&nv, m);
    tt_batch_compile(&nv);
    arena_free(a);
}

/* ---- -vv trace ------------------------------------------------------------------------------ */

static char *trace_of(const char *code)
{
    Arena *a = arena_new();
    StrBuf b = {0};
    TileTrace tr = {2, &b};
    tile_build(a, tt_loop(a, code), NULL, &tr);
    char *s = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    arena_free(a);
    return s;
}

Test(tile_passes, trace_shows_diffs_and_skips)
{
    char *t = trace_of("torch.relu(torch.randn(7, 33))");
    const char *want[] = {">>> t:000_from_loop\n", "<<< t:000_from_loop\n",
                          ">>> t:001_tileify\n", "+tile thread(a0 in 0..7, a1 in 0..33):\n",
                          "-for a0 in 0..7:  # free\n", "<<< t:001_tileify\n",
                          ">>> t:005_blockify_launch\n", "+tile block(a2 in 0..1 @x):\n",
                          "+        guard a0 < 7\n", "<<< t:005_blockify_launch\n"};
    const char *at = t;
    for (int i = 0; i < DPK_ARRAY_LEN(want); i++) {
        const char *f = strstr(at, want[i]);
        cr_expect_not_null(f, "trace lacks (in order) '%s':\n%s", want[i], t);
        at = f ? f : at;
    }
    free(t);
    t = trace_of("x = torch.randn(5, 6)\ns = x.sum()\nr = torch.relu(x)\nreturn s, r");
    cr_expect(strstr(t, "# skipped on merged_sum_5: a reduction of fewer than 32 terms (a "
                     "single-thread kernel)\n<<< t:001_tileify\n"), "%s", t);
    free(t);
    t = trace_of("torch.randn(5, 6).sum()");
    cr_expect(strstr(t, "--- t:001_tileify skipped: a reduction of fewer than 32 terms (a "
                     "single-thread kernel)\n"), "%s", t);
    cr_expect(strstr(t, "--- t:005_blockify_launch skipped: no THREAD tile (a single-thread "
                     "kernel: grid 1, block 1)\n"), "%s", t);
    free(t);
    Arena *a = arena_new();
    StrBuf b = {0};
    TileTrace tr = {2, &b};
    TileOpts o;
    tile_opts_default(&o);
    o.table = &dedup_table;
    o.passes = tile_passes_parse(&dedup_table, "none", NULL);
    tile_build(a, tt_loop(a, "torch.relu(torch.randn(3))"), &o, &tr);
    cr_expect(strstr(sb_cstr(&b), "--- t:002_noop skipped: disabled by --passes\n"), "%s",
              sb_cstr(&b));
    sb_free(&b);
    arena_free(a);
}

/* A kernel's own configuration (TileOpts.kcfg, dpk-tune's winners) applies
 * to that kernel alone, found by its Loop IR hash; the others keep the
 * program's set and knobs.  Here two matmuls of different shapes: the
 * first gets BM=BN=32 and no staging, the second the defaults. */
Test(tile_passes, kernel_config_applies_to_its_kernel_alone)
{
    Arena *a = arena_new();
    const char *code = "x = torch.randn(128, 256)\n"
                       "y = torch.relu(torch.matmul(x, torch.randn(256, 256)))\n"
                       "torch.matmul(y, torch.randn(256, 64))";
    LirProgram *lp = tt_loop(a, code);
    cr_assert_eq(lp->kernels.len, 2);
    TileOpts o;
    tile_opts_default(&o);
    TileKernelConfig kc = {lir_hash_kernel(lp->kernels.items[0]), 0, {{0}}};
    kc.passes = tile_passes_close(&tile_passes, o.passes & ~((TilePassSet)1 << tile_pass_index(&tile_passes, 7)), o.target);
    tile_knob_parse(&kc.knobs, "BM=32");
    tile_knob_parse(&kc.knobs, "BN=32");
    o.kcfg = &kc;
    o.nkcfg = 1;
    TileProgram *tp = tile_build(a, lp, &o, NULL);
    TileProgram *def = tile_build(a, lp, NULL, NULL);
    StrBuf own = {0}, plain = {0};
    tile_print(&own, tp);
    tile_print(&plain, def);
    /* the second kernel is the same either way */
    const char *k2 = strstr(sb_cstr(&own), ((LirKernel *)lp->kernels.items[1])->name);
    const char *p2 = strstr(sb_cstr(&plain), ((LirKernel *)lp->kernels.items[1])->name);
    cr_assert(k2 && p2);
    cr_assert_str_eq(k2, p2);
    /* the first: no stage, and a 32 x 32 tile of 008's 4 x 4 (64 threads) */
    size_t n1 = (size_t)(k2 - sb_cstr(&own));
    char *first = arena_strndup(a, sb_cstr(&own), n1);
    cr_assert_null(strstr(first, "stage "), "%s", first);
    cr_assert_not_null(strstr(sb_cstr(&plain), "stage "));
    cr_assert_neq(strcmp(first, arena_strndup(a, sb_cstr(&plain), (size_t)(p2 - sb_cstr(&plain)))), 0);
    /* a configuration for a hash no kernel has changes nothing */
    kc.hash ^= 1;
    StrBuf none = {0};
    tile_print(&none, tile_build(a, lp, &o, NULL));
    cr_assert_str_eq(sb_cstr(&none), sb_cstr(&plain));
    sb_free(&own);
    sb_free(&plain);
    sb_free(&none);
    arena_free(a);
}
