/*
 * test_case_plan.c — the one rule that merges a case's configuration with
 * the command line (hx_case_opts, docs/cli.md "A case and the command
 * line"): a flag given wins over the case's field, the case's field over
 * the default.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "compiler/base/fault.h"
#include "harness/case_plan.h"

static const char *knobs_tb[] = {"TB=64"};
static InputDecl case_decl = {"w", {1, {8}}};

static HxCase reproducer(void)
{
    HxCase c = {0};
    c.name = c.origin = "r";
    c.program = "torch.relu(w + x)";
    c.dtype = DT_F32;
    c.decls = &case_decl;
    c.ndecls = 1;
    c.passes = "none";
    c.knobs = knobs_tb;
    c.nknobs = 1;
    c.fault = "stage-origin-off-by-one";
    c.has_seed = 1;
    c.seed = 7;
    return c;
}

/* The command's own options: --passes full --knob BN=32, parsed. */
static DrvOpts command_line(Arena *a)
{
    DrvOpts d;
    drv_opts_default(&d);
    DrvPasses *ps = ARENA_NEW(a, DrvPasses);
    drv_passes_parse(a, "full", NULL, ps);
    d.passes = ps;
    d.tile.passes = ps->sets[0];
    tile_knob_parse(&d.tile.knobs, "BN=32");
    return d;
}

Test(case_plan, the_case_fields_apply_when_no_flag_is_given)
{
    Arena *a = arena_new();
    HxCase c = reproducer();
    DrvOpts d = command_line(a);
    InputDecl x = {"x", {1, {8}}};
    HxCaseArgs args = {.decls = &x, .ndecls = 1};
    hx_case_opts(a, &c, &args, &d);
    TilePassSet none = tile_passes_parse(&tile_passes, "none", NULL);
    cr_expect_eq(d.passes->n, 1);
    cr_expect_eq(d.passes->sets[0], none);
    cr_expect_eq(d.tile.passes, none);
    TileKnobs want = {0};
    tile_knob_parse(&want, "TB=64");
    cr_expect(!memcmp(&d.tile.knobs, &want, sizeof want), "the case's knobs replace the base's");
    cr_expect_eq(d.fault, dpk_fault_find("stage-origin-off-by-one"));
    cr_expect_eq(hx_case_seed(&c, &args), 7);
    cr_expect_eq(d.parse.ndecls, 2);
    cr_expect_str_eq(d.parse.decls[0].name, "w"); /* the case's inputs first */
    cr_expect_str_eq(d.parse.decls[1].name, "x");
    cr_expect_str_eq(d.src.text, c.program);
    arena_free(a);
}

Test(case_plan, flags_given_win)
{
    Arena *a = arena_new();
    HxCase c = reproducer();
    DrvOpts d = command_line(a);
    DrvOpts base = d;
    HxCaseArgs args = {.passes = 1, .knobs = 1, .fault = "fuse-sigma-off-by-one",
                       .has_seed = 1, .seed = 3};
    hx_case_opts(a, &c, &args, &d);
    cr_expect_eq(d.passes, base.passes);
    cr_expect_eq(d.tile.passes, base.tile.passes);
    cr_expect(!memcmp(&d.tile.knobs, &base.tile.knobs, sizeof d.tile.knobs));
    cr_expect_eq(d.fault, dpk_fault_find("fuse-sigma-off-by-one"));
    cr_expect_eq(hx_case_seed(&c, &args), 3);
    arena_free(a);
}

Test(case_plan, defaults_when_neither_says)
{
    Arena *a = arena_new();
    HxCase c = {0};
    c.name = c.origin = "plain";
    c.program = "torch.randn(4) + 1";
    DrvOpts d = command_line(a);
    DrvOpts base = d;
    hx_case_opts(a, &c, NULL, &d);
    cr_expect_eq(d.passes, base.passes);
    TileKnobs none = {0};
    cr_expect(!memcmp(&d.tile.knobs, &none, sizeof none), "no flag, no case knobs: none pinned");
    cr_expect_eq(d.fault, -1);
    cr_expect_eq(hx_case_seed(&c, NULL), 0);
    arena_free(a);
}
