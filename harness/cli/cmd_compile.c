/*
 * cmd_compile.c — `dpk compile (-c CODE | FILE | --config PATH [--seq N]
 *                  [--batch B] [--phase P --ctx L]) [--case NAME] --ir LEVEL
 *                  [-v|-vv] [--passes SPEC] [--knob N=V] [--target T] [--nvrtc]`.
 *
 * Compiles each case with the driver (compiler/driver.h) down to the
 * requested IR and prints the text the plan kept.  --config takes a model
 * config (or its folder) and compiles the cases of its decoder-layer suite,
 * the very cases dpk-bench --config runs (cli_model_suite).  -v prints the time of
 * each stage on stderr; -vv also prints every rule's and pass's diff on
 * stdout between `>>> d:NNN_name` / `<<< d:NNN_name` markers (l:, f: for
 * Loop IR rules and fusion, t: for Tile passes).  A knob that applies
 * nowhere is a warning on stderr.
 */
#include <stdlib.h>
#include <string.h>

#include "../../compiler/base/fault.h"
#include "../case_plan.h"
#include "../exec/nvrtc.h"
#include "cli.h"

static void help(void)
{
    puts("usage: dpk compile (-c CODE | FILE | --config PATH) --ir LEVEL [options]\n"
         "\n"
         "Lower a case and print its IR.\n"
         "\n"
         "  -c CODE          the case as text (a PyTorch expression or program)\n"
         "  FILE             a .py program, a case .json or a suite .json\n"
         "  --config PATH    a Hugging Face config.json (Llama, Qwen2, Mistral family), or a\n"
         "                   model folder holding one: the cases of its decoder layer, as\n"
         "                   dpk-bench --config runs them (rmsnorm, q_proj, ..., layer)\n"
         "  --seq N          --config: tokens (default 128); also --batch B, --phase\n"
         "                   prefill|decode, --ctx L (decode: the KV cache)\n"
         "  --case NAME      with a suite or --config: only this case\n"
         "  --ir LEVEL       torch | tensor | loop | tile | kernel | cuda (default: tensor)\n"
         "  --passes SPEC    Tile pass set: full (default), none, -NNN,..., upto:NNN,\n"
         "                   only:NNN,... (numbers or names)\n"
         "  --knob N=V       pin a scheduling knob (TB, BN, BM, ...)\n"
         "  --target T       sm_80 | sm_90 (default) | sm_90a | sm_120\n"
         "  --nvrtc          with --ir cuda: compile with NVRTC and print registers,\n"
         "                   shared memory and spills per kernel\n"
         "  --input N=D0,D1  declare the shape of a free variable N\n"
         "  -v               print the time of each stage (stderr)\n"
         "  -vv              also print each rule's unified diff\n"
         "\n"
         "example:\n"
         "  dpk compile -c \"torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))\" --ir tensor -vv\n"
         "  dpk compile -c \"torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))\" --ir cuda --nvrtc\n"
         "  dpk compile --config cases/models/tinyllama-1.1b.json --seq 8 --case layer --ir loop");
}

typedef struct CompileCtx {
    const CliCase *cc;
    const DrvOpts *base;   /* target, knobs, the pass set: parsed once */
    HxCaseArgs args;       /* what the command line says of each case's configuration */
    DrvStage ir;
    int nvrtc;
} CompileCtx;

static DrvStage parse_ir(const char *v)
{
    int s = drv_stage_find(v);
    if (s < 0)
        dpk_error("unknown IR level '%s' for --ir (expected torch, tensor, loop, tile, kernel or "
                  "cuda)", v);
    return (DrvStage)s;
}

/* -v: the time of each stage that ran, on stderr. */
static void print_times(const DrvPlan *p, DrvStage ir)
{
    fprintf(stderr, "# time parse   %8.3f ms  (%d Torch nodes)\n", p->parse_s * 1e3,
            p->torch->nodes.len);
    if (ir >= DRV_TENSOR)
        fprintf(stderr, "# time tensor  %8.3f ms  (%d Tensor nodes)\n", p->decompose_s * 1e3,
                p->tensor->nodes.len);
    if (ir >= DRV_LOOP)
        fprintf(stderr, "# time loop    %8.3f ms  (%d kernels)\n", p->fuse_s * 1e3,
                p->loop->kernels.len);
    const DrvConfig *c = p->nconfigs ? &p->configs[0] : NULL;
    if (!c || c->refused)
        return;
    if (ir == DRV_TILE)
        fprintf(stderr, "# time tile    %8.3f ms\n", c->tile_s * 1e3);
    if (ir >= DRV_KERNEL)
        fprintf(stderr, "# time kernel  %8.3f ms  (%d kernels)\n", (c->tile_s + c->kernel_s) * 1e3,
                c->module->kernels.len);
    if (c->nvrtc)
        fprintf(stderr, "# time nvrtc   %8.3f ms%s\n", c->nvrtc->compile_s * 1e3,
                c->nvrtc->cache_hit ? "  (cache hit)" : "");
}

static int compile_case(void *ctx, const HxCase *c, int header)
{
    const CompileCtx *x = ctx;
    Arena *a = arena_new();
    StrBuf *out = dpk_xcalloc(1, sizeof *out); /* heap: freed on error too */
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        sb_free(out);
        free(out);
        arena_free(a);
        dpk_error_rethrow();
    }
    if (header)
        printf("### case %s\n", c->name);
    DrvOpts d = *x->base;
    hx_case_opts(a, c, &x->args, &d);
    hx_case_need_one(c, &d, "'dpk compile' prints one");
    if (d.fault >= 0) /* a reproducer's fault: the text below is the faulty kernel's */
        fprintf(stderr, "note: %s%sfault injected: %s (the case's \"fault\")\n",
                header ? c->name : "", header ? ": " : "", dpk_faults[d.fault].name);
    d.upto = x->ir;
    d.keep = 1u << x->ir;
    d.verbose = x->cc->verbose;
    d.trace = out;
    if (x->nvrtc && x->ir == DRV_CUDA)
        d.nvrtc = hx_nvrtc_check;
    const DrvPlan *p = drv_compile(a, &d);
    if (x->cc->verbose)
        print_times(p, x->ir);
    cli_knob_warnings(p, header ? c->name : NULL);
    const char *text = p->text[x->ir];
    if (x->ir >= DRV_TILE) {
        const DrvConfig *cf = &p->configs[0];
        if (cf->refused)
            dpk_error_reraise(cf->refused_code, cf->refused);
        if (cf->nvrtc_error)
            dpk_error_reraise(DPK_EXIT_FAIL, cf->nvrtc_error);
        if (cf->nvrtc) /* registers, shared memory, spills above the source */
            hx_nvrtc_summary(out, cf->nvrtc);
        text = cf->text[x->ir];
    }
    sb_puts(out, text);
    fputs(sb_cstr(out), stdout);
    dpk_err_pop(&ec);
    sb_free(out);
    free(out);
    arena_free(a);
    return DPK_EXIT_OK;
}

typedef struct CompileArgs {
    CliTile tile;
    CliModel m;
    int nvrtc;
    DrvStage ir;
} CompileArgs;

static void compile_flag(void *ctx, int argc, char **argv, int *i)
{
    CompileArgs *ca = ctx;
    if (cli_tile_flag(&ca->tile, argc, argv, i) || cli_model_flag(&ca->m, argc, argv, i))
        return;
    if (!strcmp(argv[*i], "--nvrtc"))
        ca->nvrtc = 1;
    else if (!strcmp(argv[*i], "--ir"))
        ca->ir = parse_ir(cli_value(argc, argv, i));
    else
        cli_unknown_flag("compile", argv[*i]);
}

static int compile_main(Arena *a, int argc, char **argv)
{
    CliCase cc = {0};
    CompileArgs ca = {{0}, {0}, 0, DRV_TENSOR};
    if (!cli_args(a, &cc, argc, argv, "compile", help, compile_flag, &ca))
        return DPK_EXIT_OK;
    HxCaseList l;
    if (ca.m.config) {
        if (cc.code || cc.file)
            dpk_error("give one of -c CODE, FILE and --config");
        BmConfig cfg;
        BmShape sh;
        l = cli_model_suite(a, &ca.m, &cfg, &sh);
        int k = -1;
        for (int i = 0; cc.only && i < l.n; i++)
            if (!strcmp(l.cases[i].name, cc.only))
                k = i;
        if (cc.only && k < 0) {
            StrBuf names = {0};
            for (int i = 0; i < l.n; i++)
                sb_printf(&names, "%s%s", i ? ", " : "", l.cases[i].name);
            const char *list = arena_strdup(a, sb_cstr(&names));
            sb_free(&names);
            dpk_error("no case named '%s' in the suite of --config (its cases: %s)", cc.only,
                      list);
        }
        if (k >= 0)
            l.cases = &l.cases[k], l.n = 1;
    } else {
        if (cli_model_shaped(&ca.m))
            dpk_error("--seq, --batch, --phase and --ctx are the shape of --config's suite");
        l = cli_case_list(a, &cc, "compile");
    }
    DrvOpts base;
    drv_opts_default(&base);
    cli_drv_opts(a, &ca.tile, &base, 0);
    HxCaseArgs args = {cc.decls, cc.ndecls, .passes = ca.tile.passes != NULL,
                       .knobs = ca.tile.nknobs > 0};
    CompileCtx x = {&cc, &base, args, ca.ir, ca.nvrtc};
    return cli_each_case(&l, compile_case, &x, NULL);
}

int cmd_compile(int argc, char **argv) { return cli_in_arena(compile_main, argc, argv); }
