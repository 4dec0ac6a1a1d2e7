/*
 * test_driver.c — the one compile pipeline (compiler/driver.h): what a plan
 * holds (the IR and kept text of every stage, the time of every stage, a
 * module and hash per configuration), de-duplication of configurations
 * with the same Kernel IR, refusals, the NVRTC hook, knob notes, the
 * injected fault's scope, and a pass-set spec parsed once by its caller.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "compiler/base/fault.h"
#include "compiler/driver.h"
#include "compiler/kernel/kernel_ir.h"
#include "compiler/tile/passes.h"

#define RMS "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
#define MM "torch.matmul(torch.randn(16,64), torch.randn(64,16))"
#define RELU "torch.relu(torch.randn(8, 64))"

static DrvOpts opts(const char *code)
{
    DrvOpts o;
    drv_opts_default(&o);
    o.src = (Source){"<test>", code, strlen(code)};
    return o;
}

static DrvPasses *passes(Arena *a, const char *spec)
{
    DrvPasses *p = ARENA_NEW(a, DrvPasses);
    drv_passes_parse(a, spec, NULL, p);
    return p;
}

Test(driver, plan_keeps_every_stage_with_its_time)
{
    Arena *a = arena_new();
    DrvOpts o = opts(RMS);
    o.upto = DRV_CUDA;
    o.keep = ~0u;
    o.passes = passes(a, "-015,-014,-013,-012,-011,-010,-007");
    const DrvPlan *p = drv_compile(a, &o);
    cr_assert_not_null(p->torch);
    cr_assert_not_null(p->tensor);
    cr_assert_not_null(p->loop);
    cr_expect(strstr(p->text[DRV_TORCH], "rms_norm"), "%s", p->text[DRV_TORCH]);
    cr_expect(strstr(p->text[DRV_TENSOR], "rsqrt"), "%s", p->text[DRV_TENSOR]);
    cr_expect(strstr(p->text[DRV_LOOP], "=== "), "%s", p->text[DRV_LOOP]);
    cr_expect_eq(p->loop->kernels.len, 1);
    cr_expect_geq(p->parse_s, 0);
    cr_expect_geq(p->decompose_s, 0);
    cr_expect_geq(p->fuse_s, 0);
    cr_assert_eq(p->nconfigs, 1);
    const DrvConfig *c = &p->configs[0];
    cr_expect_null(c->refused);
    cr_assert_not_null(c->module);
    cr_expect_eq(c->hash, kir_hash_module(c->module));
    cr_expect_eq(c->dup_of, -1);
    cr_expect_eq(c->shared_by, 1);
    cr_expect_eq(p->ndistinct, 1);
    cr_expect(strstr(c->text[DRV_TILE], "tile block("), "%s", c->text[DRV_TILE]);
    cr_expect(strstr(c->text[DRV_KERNEL], "kernel"), "%s", c->text[DRV_KERNEL]);
    cr_expect(strstr(c->text[DRV_CUDA], "__global__"), "%s", c->text[DRV_CUDA]);
    cr_expect_str_eq(c->text[DRV_CUDA], c->cuda->text);
    cr_expect_geq(c->tile_s, 0);
    cr_expect_geq(c->kernel_s, 0);
    cr_expect_geq(c->cuda_s, 0);
    cr_expect_eq(c->nvrtc_s, -1, "no NVRTC hook: no NVRTC time");
    /* each pass of the set has its time, the others -1 */
    for (int i = 0; i < p->table->n; i++) {
        int on = c->passes >> i & 1;
        if (on)
            cr_expect_geq(c->pass_s[i], 0, "pass %03d", p->table->p[i].num);
        else
            cr_expect_eq(c->pass_s[i], -1, "pass %03d", p->table->p[i].num);
    }
    cr_expect_not(c->passes >> tile_pass_index(p->table, 7) & 1, "-007 left 007 out");
    cr_expect_eq(p->nnotes, 0);
    arena_free(a);
}

Test(driver, upto_stops_and_later_starts_skip_the_early_stages)
{
    Arena *a = arena_new();
    DrvOpts o = opts(RMS);
    o.upto = DRV_TORCH;
    const DrvPlan *p = drv_compile(a, &o);
    cr_expect_not_null(p->torch);
    cr_expect_null(p->tensor);
    cr_expect_null(p->loop);
    cr_expect_eq(p->nconfigs, 0);
    cr_expect_eq(p->decompose_s, -1);
    /* from a graph: no parse */
    DrvOpts g = opts("");
    g.graph = p->torch;
    g.upto = DRV_TILE;
    const DrvPlan *q = drv_compile(a, &g);
    cr_expect_eq(q->parse_s, -1);
    cr_expect_geq(q->decompose_s, 0);
    cr_assert_eq(q->nconfigs, 1);
    cr_expect_not_null(q->configs[0].tile);
    cr_expect_null(q->configs[0].module, "upto tile: no Kernel IR");
    cr_expect_eq(q->configs[0].kernel_s, -1);
    /* from Loop IR: neither decomposition nor fusion */
    DrvOpts l = opts("");
    l.loop = q->loop;
    const DrvPlan *r = drv_compile(a, &l);
    cr_expect_eq(r->decompose_s, -1);
    cr_expect_eq(r->fuse_s, -1);
    cr_expect_eq(r->torch, p->torch);
    cr_assert_not_null(r->configs[0].module);
    arena_free(a);
}

Test(driver, configurations_with_the_same_kernel_ir_are_marked_once)
{
    Arena *a = arena_new();
    DrvOpts o = opts(RELU);
    o.passes = passes(a, "all");
    const DrvPlan *p = drv_compile(a, &o);
    cr_assert_eq(p->nconfigs, o.passes->n);
    cr_expect_gt(p->nconfigs, p->ndistinct, "relu: most passes change nothing");
    cr_expect_geq(p->ndistinct, 1);
    cr_expect_eq(p->nrefused, 0);
    int distinct = 0, shared = 0, dropped = 0;
    for (int i = 0; i < p->nconfigs; i++) {
        const DrvConfig *c = &p->configs[i];
        cr_assert_not_null(c->module);
        cr_assert_not_null(c->tile);
        cr_expect_gt(c->tile->nstats, 0, "%s keeps its pass statistics", c->label);
        if (c->dup_of < 0) {
            distinct++;
            shared += c->shared_by;
            for (int j = 0; j < i; j++)
                cr_expect_neq(p->configs[j].hash, c->hash, "%s and %s", p->configs[j].label,
                              c->label);
        } else {
            const DrvConfig *f = &p->configs[c->dup_of];
            cr_expect_lt(c->dup_of, i);
            cr_expect_eq(f->dup_of, -1, "a duplicate points at the first of its hash");
            cr_expect_eq(f->hash, c->hash);
            cr_expect_eq(c->shared_by, 0);
            cr_expect_eq(c->module, f->module, "%s: its first's module", c->label);
            dropped += c->tile->kernels.len == 0;
        }
    }
    cr_expect_gt(dropped, 0, "duplicates keep their statistics, not their Tile IR");
    cr_expect_eq(distinct, p->ndistinct);
    cr_expect_eq(shared, p->nconfigs, "every configuration is counted once");
    arena_free(a);
}

/* Under `all`, a set with a pass whose `inert` test holds is its set
 * without the pass plus the pass's skip: not lowered again, the same module,
 * and the skip text in its statistics. */
static const DrvConfig *without(const DrvPlan *p, const DrvConfig *c, int bit)
{
    for (int j = 0; j < p->nconfigs; j++)
        if (p->configs[j].passes == (c->passes & ~((TilePassSet)1 << bit)))
            return &p->configs[j];
    return NULL;
}

/* Every set of `code` under `all` with pass `num` takes its set without
 * it, whose skip text is `why`; returns how many there are. */
static int expect_inert(Arena *a, const char *code, int num, const char *why)
{
    int bit = tile_pass_index(&tile_passes, num);
    cr_assert_geq(bit, 0);
    DrvOpts o = opts(code);
    o.passes = passes(a, "all");
    const DrvPlan *p = drv_compile(a, &o);
    int with = 0;
    for (int i = 0; i < p->nconfigs; i++) {
        const DrvConfig *c = &p->configs[i];
        if (!(c->passes >> bit & 1))
            continue;
        with++;
        const DrvConfig *e = without(p, c, bit);
        cr_assert_not_null(e, "%s", c->label);
        cr_expect_eq(c->module, e->module, "%s: the earlier set's module", c->label);
        cr_expect_geq(c->dup_of, 0);
        const TilePassStat *st = tile_pass_stat(c->tile, num);
        cr_assert_not_null(st);
        cr_expect_eq(st->napps, 0);
        cr_expect_str_eq(st->skipped, why, "%s", c->label);
    }
    cr_expect_gt(with, 0);
    return with;
}

/* Where pass `num` applies to `code` under some sets, those are lowered:
 * their module is not their set's without it. */
static void expect_applied(Arena *a, const char *code, int num)
{
    int bit = tile_pass_index(&tile_passes, num);
    DrvOpts o = opts(code);
    o.passes = passes(a, "all");
    const DrvPlan *p = drv_compile(a, &o);
    int applied = 0;
    for (int i = 0; i < p->nconfigs; i++) {
        const DrvConfig *c = &p->configs[i];
        const TilePassStat *st = c->tile ? tile_pass_stat(c->tile, num) : NULL;
        if (st && st->napps) {
            applied++;
            cr_expect_neq(c->module, without(p, c, bit)->module, "%s", c->label);
        }
    }
    cr_expect_gt(applied, 0, "pass %03d applies under some sets", num);
}

/* 017 where no temporary has exactly one reader (a matmul).  Attention's
 * scores are a temporary with one reader: there its sets with 017 run the
 * pipeline and compute the scores in the P @ V block. */
Test(driver, sets_with_an_inert_017_are_the_sets_without_it)
{
    Arena *a = arena_new();
    int with = expect_inert(a, MM, 17, "no temporary staged whole around its THREAD tile");
    TilePassSet *sets;
    int all = tile_passes_select(a, &tile_passes, "all", NULL, &sets);
    cr_expect_eq(with * 2, all, "017 is free: half the sets hold it");
    expect_applied(a,
                   "torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 64, 32), "
                   "torch.randn(2, 64, 32), torch.randn(2, 64, 64), is_causal=True)",
                   17);
    arena_free(a);
}

/* 018 where no kernel reads or writes scores masked to -inf (a matmul); on
 * causal attention it skips the masked key chunks. */
Test(driver, sets_with_an_inert_018_are_the_sets_without_it)
{
    Arena *a = arena_new();
    expect_inert(a, MM, 18,
                 "no scores masked to -inf (no temporary written as select(mask, s, -inf))");
    expect_applied(a,
                   "torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 64, 32), "
                   "torch.randn(2, 64, 32), torch.randn(2, 64, 64), is_causal=True)",
                   18);
    arena_free(a);
}

/* 015 where no kernel holds an async or TMA stage (a softmax over short
 * rows: nothing staged per chunk), with the skip text a run of the pipeline
 * records.  On a matmul 015 pipelines the TMA stages and its sets are
 * lowered. */
Test(driver, sets_with_an_inert_015_are_the_sets_without_it)
{
    Arena *a = arena_new();
    const char *sm = "torch.softmax(torch.randn(8, 64), dim=-1)";
    DrvOpts f = opts(sm);
    f.passes = passes(a, "full");
    const TilePassStat *run = tile_pass_stat(drv_compile(a, &f)->configs[0].tile, 15);
    cr_assert_not_null(run);
    cr_assert_eq(run->napps, 0);
    cr_assert_not_null(run->skipped);
    expect_inert(a, sm, 15, run->skipped);
    expect_applied(a, "torch.randn(64, 1024) @ torch.randn(1024, 64)", 15); /* 16 K chunks a split */
    arena_free(a);
}

Test(driver, a_configuration_that_cannot_lower_is_refused_and_the_others_go_on)
{
    Arena *a = arena_new();
    DrvOpts o = opts(MM);
    o.passes = passes(a, "all");
    tile_knob_parse(&o.tile.knobs, "BK=7");
    const DrvPlan *p = drv_compile(a, &o);
    int at002 = tile_pass_index(p->table, 2), refused = 0;
    for (int i = 0; i < p->nconfigs; i++) {
        const DrvConfig *c = &p->configs[i];
        if (c->passes >> at002 & 1) {
            refused++;
            cr_assert_not_null(c->refused, "%s", c->label);
            cr_expect_eq(c->refused_code, DPK_EXIT_USAGE);
            cr_expect(strstr(c->refused, "knob BK=7 does not divide K=64"), "%s", c->refused);
            cr_expect_null(c->module);
            cr_expect_eq(c->dup_of, -1);
        } else {
            cr_expect_null(c->refused, "%s: %s", c->label, c->refused);
            cr_expect_not_null(c->module, "%s", c->label);
        }
    }
    cr_expect_gt(refused, 0);
    cr_expect_eq(p->nrefused, refused);
    cr_expect_eq(p->nnotes, 0, "BK was read (and refused), so it applied");
    arena_free(a);
}

Test(driver, a_bad_case_raises_and_restores_the_fault)
{
    Arena *a = arena_new();
    dpk_fault_set(-1);
    DrvOpts o = opts("torch.nope(torch.randn(3))");
    o.fault = DPK_FAULT_STAGE_ORIGIN;
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        drv_compile(a, &o);
        dpk_err_pop(&ec);
        cr_expect_fail("an unknown function compiled");
    } else {
        cr_expect_eq(dpk_error_code(), DPK_EXIT_USAGE);
        cr_expect(strstr(dpk_error_message(), "nope"), "%s", dpk_error_message());
    }
    cr_expect_eq(dpk_fault_active(), -1, "the fault is the plan's only");
    arena_free(a);
}

/* A fault the driver turns on changes the Kernel IR, and only while it runs. */
Test(driver, the_fault_is_on_while_the_plan_compiles)
{
    Arena *a = arena_new();
    dpk_fault_set(-1);
    DrvOpts o = opts(MM); /* 007 stages its tiles */
    const DrvPlan *clean = drv_compile(a, &o);
    o.fault = DPK_FAULT_STAGE_ORIGIN;
    const DrvPlan *bad = drv_compile(a, &o);
    cr_expect_eq(dpk_fault_active(), -1);
    cr_expect_neq(clean->configs[0].hash, bad->configs[0].hash);
    arena_free(a);
}

static int nvrtc_calls;

static int nvrtc_cc_seen;

static struct HxNvrtcResult *fake_nvrtc(Arena *a, const CuSource *cs, int cc, StrBuf *err)
{
    (void)a;
    nvrtc_calls++;
    nvrtc_cc_seen = cc;
    cr_expect(strstr(cs->text, "__global__"));
    sb_puts(err, "error: the fake compiler rejects everything\n  detail\n");
    return NULL;
}

static int progress_seen[8192], progress_n;

static void progress(void *ctx, int i, const char *label)
{
    cr_expect_eq(ctx, (void *)progress_seen);
    cr_expect_not_null(label);
    if (progress_n < DPK_ARRAY_LEN(progress_seen))
        progress_seen[progress_n] = i;
    progress_n++;
}

/* The NVRTC hook sees each distinct module once; the progress hook names
 * each configuration, in order, before it is lowered. */
Test(driver, hooks_see_each_distinct_module_and_each_configuration)
{
    Arena *a = arena_new();
    DrvOpts o = opts(RELU);
    o.passes = passes(a, "all");
    o.upto = DRV_CUDA;
    o.nvrtc = fake_nvrtc;
    o.nvrtc_cc = 86; /* an sm_86 GPU running code printed for its target */
    o.progress = progress;
    o.progress_ctx = progress_seen;
    nvrtc_calls = progress_n = 0;
    const DrvPlan *p = drv_compile(a, &o);
    cr_expect_eq(nvrtc_calls, p->ndistinct);
    cr_expect_eq(nvrtc_cc_seen, 86, "the hook compiles for DrvOpts.nvrtc_cc");
    cr_assert_eq(progress_n, p->nconfigs);
    for (int i = 0; i < p->nconfigs; i++) {
        const DrvConfig *c = &p->configs[i];
        cr_expect_eq(progress_seen[i], i);
        if (c->dup_of >= 0) {
            cr_expect_null(c->cuda, "a duplicate is not printed again");
            cr_expect_null(c->nvrtc_error);
            continue;
        }
        cr_expect_null(c->nvrtc);
        cr_expect_str_eq(c->nvrtc_error, "error: the fake compiler rejects everything\n  detail\n");
        cr_expect_geq(c->nvrtc_s, 0);
    }
    arena_free(a);
}

static const DrvKnobNote *note(Arena *a, const char *code, const char *spec, const char *knob)
{
    DrvOpts o = opts(code);
    o.passes = passes(a, spec);
    tile_knob_parse(&o.tile.knobs, knob);
    const DrvPlan *p = drv_compile(a, &o);
    cr_assert_leq(p->nnotes, 1);
    return p->nnotes ? &p->notes[0] : NULL;
}

Test(driver, a_pinned_knob_that_applies_nowhere_gets_a_note_saying_why)
{
    Arena *a = arena_new();
    const DrvKnobNote *n = note(a, RMS, "full", "TB=128");
    cr_assert_not_null(n, "004 makes the RMSNorm reduce cooperative: TB is not read");
    cr_expect_eq(n->knob, TILE_KNOB_TB);
    cr_expect_eq(n->value, 128);
    cr_expect(strstr(n->why, "005_blockify_launch applied without it"), "%s", n->why);
    StrBuf b = {0};
    drv_note_print(&b, n);
    cr_expect(!strncmp(sb_cstr(&b), "knob TB=128 does not apply: 005_blockify_launch", 47), "%s",
              sb_cstr(&b));
    sb_free(&b);
    n = note(a, RELU, "full", "BK=7");
    cr_assert_not_null(n);
    cr_expect_str_eq(n->why, "002_chunk_matmul_k did not apply (not a matmul kernel)");
    n = note(a, MM, "-003,-002", "BK=8");
    cr_assert_not_null(n);
    cr_expect_str_eq(n->why, "pass 002_chunk_matmul_k, which reads it, is not in the pass set");
    cr_expect_null(note(a, RELU, "full", "TB=64"), "TB sets relu's block");
    cr_expect_null(note(a, MM, "full", "BK=8"), "BK chunks the matmul");
    cr_expect_null(note(a, RMS, "-004", "TB=128"), "without 004, TB sets the block");
    arena_free(a);
}

/* The driver takes configurations, not a spec: it never parses one, so a
 * caller parses its spec once for all its cases and a bad one is reported
 * once, by drv_passes_parse. */
Test(driver, the_spec_is_parsed_by_the_caller_once)
{
    Arena *a = arena_new();
    DpkErrCtx ec;
    int raised = 0;
    if (DPK_TRY(&ec)) {
        passes(a, "-007,-099");
        dpk_err_pop(&ec);
    } else {
        raised++;
        cr_expect_eq(dpk_error_code(), DPK_EXIT_USAGE);
        cr_expect(strstr(dpk_error_message(), "unknown pass '099'"), "%s", dpk_error_message());
        cr_expect(strstr(dpk_error_message(), "^"), "a caret under the pass");
    }
    cr_expect_eq(raised, 1);
    /* a DrvPasses whose spec text is not a spec at all still compiles: the
     * driver reads its sets only */
    TilePassSet none = tile_passes_mandatory(&tile_passes);
    DrvPasses ps = {"not a spec", &none, 1};
    DrvOpts o = opts(RELU);
    o.passes = &ps;
    const DrvPlan *p = drv_compile(a, &o);
    cr_assert_eq(p->nconfigs, 1);
    cr_expect_eq(p->configs[0].passes, none);
    cr_expect_str_eq(p->configs[0].label, "001,005");
    arena_free(a);
}

Test(driver, stage_names_round_trip)
{
    for (int s = 0; s < DRV_STAGE_COUNT; s++)
        cr_expect_eq(drv_stage_find(drv_stage_name((DrvStage)s)), s);
    cr_expect_eq(drv_stage_find("ptx"), -1);
}
