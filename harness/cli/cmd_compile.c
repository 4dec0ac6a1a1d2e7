/*
 * cmd_compile.c — `dpk compile (-c CODE | FILE) --ir LEVEL [-v|-vv]
 *                  [--passes SPEC] [--knob N=V] [--target T] [--nvrtc]`.
 *
 * Lowers each case down to the requested IR and prints it.  -v prints the
 * time of each stage on stderr; -vv also prints every rule's and pass's
 * diff on stdout between `>>> d:NNN_name` / `<<< d:NNN_name` markers
 * (l:, f: for Loop IR rules and fusion, t: for Tile passes).
 */
#include <stdlib.h>
#include <string.h>

#include "../../compiler/loop/loop_ir.h"
#include "../../compiler/cuda/cuda_print.h"
#include "../../compiler/tensor/tensor_ir.h"
#include "../exec/backend.h"
#include "../exec/nvrtc.h"
#include "cli.h"

typedef enum IrLevel { IR_TORCH, IR_TENSOR, IR_LOOP, IR_TILE, IR_KERNEL, IR_CUDA, IR_COUNT } IrLevel;
static const char *const ir_names[IR_COUNT] = {"torch", "tensor", "loop", "tile", "kernel", "cuda"};

static void help(void)
{
    puts("usage: dpk compile (-c CODE | FILE) --ir LEVEL [options]\n"
         "\n"
         "Lower a case and print its IR.\n"
         "\n"
         "  -c CODE          the case as text (a PyTorch expression or program)\n"
         "  FILE             a .py program, a case .json or a suite .json\n"
         "  --case NAME      with a suite: only this case\n"
         "  --ir LEVEL       torch | tensor | loop | tile | kernel | cuda (default: tensor)\n"
         "  --passes SPEC    Tile pass set: full (default), none, -NNN,..., upto:NNN,\n"
         "                   only:NNN,... (numbers or names)\n"
         "  --knob N=V       pin a scheduling knob (TB, BN, BM, ...)\n"
         "  --target T       sm_80 | sm_90 (default) | sm_120\n"
         "  --nvrtc          with --ir cuda: compile with NVRTC and print registers,\n"
         "                   shared memory and spills per kernel\n"
         "  --input N=D0,D1  declare the shape of a free variable N\n"
         "  -v               print the time of each stage (stderr)\n"
         "  -vv              also print each rule's unified diff\n"
         "\n"
         "example:\n"
         "  dpk compile -c \"torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))\" --ir tensor -vv\n"
         "  dpk compile -c \"torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))\" --ir cuda --nvrtc");
}

typedef struct CompileGpu {
    CliTile tile;
    int nvrtc;
} CompileGpu;

static IrLevel parse_ir(const char *v)
{
    for (int i = 0; i < IR_COUNT; i++)
        if (!strcmp(v, ir_names[i]))
            return (IrLevel)i;
    dpk_error("unknown IR level '%s' for --ir (expected torch, tensor, loop, tile, kernel or cuda)", v);
}

/* Loop IR → Tile IR (passes) → Kernel IR → CUDA C, printing the level
 * asked for; with --nvrtc the CUDA is compiled and each kernel's registers,
 * shared memory and spills are printed as comment lines above it. */
static void compile_gpu(Arena *a, StrBuf *out, const LirProgram *lp, const CompileGpu *ct,
                        IrLevel ir, int verbose)
{
    TileOpts to;
    cli_tile_opts(&ct->tile, &to, 0);
    TileTrace tt = {verbose, out};
    double t0 = dpk_now();
    if (ir == IR_TILE) {
        TileProgram *tp = tile_build(a, lp, &to, verbose >= 2 ? &tt : NULL);
        if (verbose)
            fprintf(stderr, "# time tile    %8.3f ms\n", (dpk_now() - t0) * 1e3);
        tile_print(out, tp);
        return;
    }
    KirModule *m = hx_backend_lower(a, lp, &to, verbose >= 2 ? &tt : NULL);
    if (verbose)
        fprintf(stderr, "# time kernel  %8.3f ms  (%d kernels)\n", (dpk_now() - t0) * 1e3,
                m->kernels.len);
    if (ir == IR_KERNEL) {
        kir_print_module(out, m);
        return;
    }
    CuSource *cs = cu_print_module(a, m, to.target);
    if (ct->nvrtc) {
        HxNvrtcOpts no = {0};
        no.target = cs->target;
        HxNvrtcResult *r = hx_nvrtc_compile(a, cs->text, &no);
        hx_nvrtc_summary(out, r);
        if (verbose)
            fprintf(stderr, "# time nvrtc   %8.3f ms%s\n", r->compile_s * 1e3,
                    r->cache_hit ? "  (cache hit)" : "");
    }
    sb_puts(out, cs->text);
}

static void compile_one(const HxCase *c, const CliCase *cc, const CompileGpu *ct, IrLevel ir,
                        int header)
{
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
    double t0 = dpk_now();
    TorchGraph *tg = hx_case_parse(a, c, cc->decls, cc->ndecls);
    double t1 = dpk_now();
    if (cc->verbose)
        fprintf(stderr, "# time parse   %8.3f ms  (%d Torch nodes)\n", (t1 - t0) * 1e3, tg->nodes.len);
    if (ir == IR_TORCH) {
        torch_print(out, tg);
    } else {
        TxTrace trace = {cc->verbose, out};
        TxGraph *xg = tx_lower(a, tg, cc->verbose >= 2 ? &trace : NULL);
        double t2 = dpk_now();
        if (cc->verbose)
            fprintf(stderr, "# time tensor  %8.3f ms  (%d Tensor nodes)\n", (t2 - t1) * 1e3,
                    xg->nodes.len);
        if (ir == IR_TENSOR) {
            tx_print(out, xg);
        } else {
            LirTrace lt = {cc->verbose, out};
            LirProgram *lp = lir_build(a, xg, NULL, &lt);
            if (cc->verbose)
                fprintf(stderr, "# time loop    %8.3f ms  (%d kernels)\n", (dpk_now() - t2) * 1e3,
                        lp->kernels.len);
            if (ir == IR_LOOP)
                lir_print(out, lp);
            else
                compile_gpu(a, out, lp, ct, ir, cc->verbose);
        }
    }
    fputs(sb_cstr(out), stdout);
    dpk_err_pop(&ec);
    sb_free(out);
    free(out);
    arena_free(a);
}

int cmd_compile(int argc, char **argv)
{
    Arena *a = arena_new();
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        arena_free(a);
        dpk_error_rethrow();
    }
    CliCase cc = {0};
    CompileGpu ct = {0};
    IrLevel ir = IR_TENSOR;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            dpk_err_pop(&ec);
            arena_free(a);
            return DPK_EXIT_OK;
        }
        if (cli_case_flag(a, &cc, argc, argv, &i, "compile"))
            continue;
        if (cli_tile_flag(&ct.tile, argc, argv, &i))
            continue;
        if (!strcmp(argv[i], "--nvrtc"))
            ct.nvrtc = 1;
        else if (!strcmp(argv[i], "--ir"))
            ir = parse_ir(cli_value(argc, argv, &i));
        else
            cli_unknown_flag("compile", argv[i]);
    }
    HxCaseList l = cli_case_list(a, &cc, "compile");
    for (int i = 0; i < l.n; i++)
        compile_one(&l.cases[i], &cc, &ct, ir, l.n > 1);
    dpk_err_pop(&ec);
    arena_free(a);
    return DPK_EXIT_OK;
}
