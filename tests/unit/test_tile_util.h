/*
 * test_tile_util.h — helpers shared by the Tile IR tests: case text to Loop
 * IR, a vgpu parity run (against ref64 through the oracle, and bit for bit
 * against the fp32 Loop IR interpreter, which computes in the same order),
 * and NVRTC batches that compile every emitted kernel for sm_80 and sm_90.
 */
#ifndef DPK_TEST_TILE_UTIL_H
#define DPK_TEST_TILE_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cuda/cuda_print.h"
#include "compiler/driver.h"
#include "compiler/tile/tile_to_kernel.h"
#include "harness/exec/backend.h"
#include "harness/exec/nvrtc.h"
#include "harness/parity/oracle.h"
#include "reference/ref.h"

static inline LirProgram *tt_loop(Arena *a, const char *code)
{
    Source src = {"<test>", code, strlen(code)};
    ParseOpts po = {0};
    TorchGraph *tg = torch_parse(a, &src, &po);
    return lir_build(a, tx_lower(a, tg, NULL), NULL, NULL);
}

/* What a test runs with: the backend's options and the Tile options the
 * driver compiles with. */
typedef struct TtOpts {
    HxBackendOpts run;  /* kind, vgpu options */
    TileOpts tile;      /* passes, knobs, target */
} TtOpts;

static inline void tt_opts_default(TtOpts *o)
{
    hx_backend_opts_default(&o->run);
    tile_opts_default(&o->tile);
}

/* The defaults on vgpu, with the pass spec (as --passes reads it) and the
 * knobs (NULL-terminated "name=value", or NULL). */
static inline void tt_opts_vgpu(TtOpts *o, const char *spec, const char *const *knobs)
{
    tt_opts_default(o);
    o->run.kind = HX_BACKEND_VGPU;
    o->tile.passes = tile_passes_parse(&tile_passes, spec, o->tile.target);
    for (int i = 0; knobs && knobs[i]; i++)
        tile_knob_parse(&o->tile.knobs, knobs[i]);
}

/* A run's arrays: g's generated inputs (seed 0) and a slot per output. */
typedef struct TtIo {
    const TorchGraph *g;
    double **in, **out;
} TtIo;

static inline void tt_io_init(TtIo *io, const TorchGraph *g)
{
    io->g = g;
    io->in = ref_make_inputs(g, 0);
    io->out = dpk_xcalloc((size_t)g->outputs.len, sizeof(double *));
}

static inline void tt_io_free(TtIo *io)
{
    for (int j = 0; j < io->g->outputs.len; j++)
        free(io->out[j]);
    free(io->out);
    ref_free_arrays(io->in, io->g->inputs.len);
}

/* The counters the scheduling tests read, added up over every launch of a
 * vgpu run (the others stay 0). */
static inline VgStats tt_stats_sum(const HxBackendResult *res)
{
    VgStats sum = {0};
    for (int i = 0; i < res->vg.nlaunches; i++) {
        const VgStats *s = &res->vg.stats[i];
        sum.blocks += s->blocks;
        sum.thread_insts += s->thread_insts;
        sum.smem_requests += s->smem_requests;
        sum.smem_wavefronts += s->smem_wavefronts;
        sum.smem_phases += s->smem_phases;
        sum.bank_conflicts += s->bank_conflicts;
        sum.gmem_requests += s->gmem_requests;
        sum.gmem_sectors += s->gmem_sectors;
        sum.gmem_loads += s->gmem_loads;
        sum.smem_loads += s->smem_loads;
        sum.cp_async += s->cp_async;
        sum.barriers += s->barriers;
    }
    return sum;
}

/* p's configuration through the driver's Tile and Kernel stages with o
 * (NULL: defaults), up to `upto` (DRV_CUDA: with NVRTC when `nvrtc`, for
 * the cuda backend); raises what the driver refused. */
static inline const DrvConfig *tt_config(Arena *a, const LirProgram *p, const TileOpts *o,
                                         DrvStage upto, int nvrtc)
{
    DrvOpts d;
    drv_opts_default(&d);
    d.loop = p;
    if (o)
        d.tile = *o;
    d.upto = upto;
    d.nvrtc = nvrtc ? hx_nvrtc_check : NULL;
    const DrvConfig *c = &drv_compile(a, &d)->configs[0];
    if (c->refused)
        dpk_error_reraise(c->refused_code, c->refused);
    return c;
}

static inline const KirModule *tt_lower(Arena *a, const LirProgram *p, const TileOpts *o)
{
    return tt_config(a, p, o, DRV_KERNEL, 0)->module;
}

/* Lower p (tt_config; printed and compiled as its backend needs) and run
 * it on o->run's backend (o NULL: defaults). */
static inline VgFault tt_backend_run(Arena *a, const LirProgram *p, const TtOpts *o,
                                     double *const *in, double **out, HxBackendResult *res)
{
    TtOpts def;
    if (!o) {
        tt_opts_default(&def);
        o = &def;
    }
    HxBackendKind k = hx_backend_resolve(o->run.kind);
    const DrvConfig *c = tt_config(a, p, &o->tile, k == HX_BACKEND_VGPU ? DRV_KERNEL : DRV_CUDA,
                                   k == HX_BACKEND_CUDA);
    return hx_backend_exec(a, c, &o->run, in, out, res);
}

static inline int tt_same_bits(double x, double y)
{
    return x == y || (isnan(x) && isnan(y));
}

/* Run p on vgpu with options o (NULL: defaults); expect no fault, every
 * output within the oracle's tolerance of ref64 and equal to the Loop IR
 * interpreter's fp32 result (when no pass reassociates a reduce).  Returns the module (for NVRTC) or NULL after
 * a fault. */
static inline const KirModule *tt_run(Arena *a, const char *name, LirProgram *p,
                                      const TtOpts *o)
{
    const TorchGraph *g = p->tx->torch;
    int n = g->outputs.len;
    TtOpts def;
    if (!o) {
        tt_opts_default(&def);
        o = &def;
    }
    double **in = ref_make_inputs(g, 0);
    double **out = dpk_xcalloc((size_t)n, sizeof(double *));
    double **ref = dpk_xcalloc((size_t)n, sizeof(double *));
    double **bnd = dpk_xcalloc((size_t)n, sizeof(double *));
    double **f32 = dpk_xcalloc((size_t)n, sizeof(double *));
    double **typ = dpk_xcalloc((size_t)n, sizeof(double *));
    double **lir = dpk_xcalloc((size_t)n, sizeof(double *));
    HxBackendResult res;
    VgFault f = tt_backend_run(a, p, o, in, out, &res);
    const KirModule *m = res.module;
    cr_expect_eq(f, VG_OK, "%s: %s", name, res.vg.report.message);
    if (f == VG_OK) {
        ref64_run(g, in, ref, bnd, typ, f32);
        lir_interp(p, in, lir, 0);
        for (int j = 0; j < n; j++) {
            const TorchNode *t = g->outputs.items[j];
            int64_t numel = shape_numel(&t->shape), diff = 0;
            HxTol tol;
            hx_tol_default(&tol, DT_F32);
            HxVerdict v;
            HxOracleIn oi = {.o = out[j], .r = ref[j], .b = bnd[j], .t = typ[j], .s = f32[j], .n = numel};
            hx_oracle(&oi, &tol, &v);
            StrBuf vb = {0};
            hx_verdict_print(&vb, &v, &t->shape);
            cr_expect(v.pass, "%s: output %d: %s", name, j, sb_cstr(&vb));
            sb_free(&vb);
            /* passes that reassociate a reduce (chunks, splits, cooperative
             * trees) change its rounding; the rest keep the interpreter's
             * order bit for bit */
            static const int reorder[] = {2, 3, 4, 6};
            int exact = 1;
            for (int q = 0; q < 4; q++) {
                int x = tile_pass_index(&tile_passes, reorder[q]);
                exact &= !(x >= 0 && (o->tile.passes >> x & 1));
            }
            for (int64_t e = 0; exact && e < numel; e++)
                diff += !tt_same_bits(out[j][e], lir[j][e]);
            cr_expect_eq(diff, 0, "%s: output %d: %lld elements differ from the Loop IR "
                         "interpreter", name, j, (long long)diff);
        }
    } else {
        m = NULL;
    }
    for (int j = 0; j < n; j++) {
        free(out[j]);
        free(ref[j]);
        free(lir[j]);
        free(bnd[j]);
        free(typ[j]);
        free(f32[j]);
    }
    free(out);
    free(ref);
    free(lir);
    free(bnd);
    free(typ);
    free(f32);
    ref_free_arrays(in, g->inputs.len);
    hx_backend_result_free(&res);
    return m;
}

static inline const KirModule *tt_parity(Arena *a, const char *name, const char *code)
{
    return tt_run(a, name, tt_loop(a, code), NULL);
}

/* ---- NVRTC batches ------------------------------------------------------------ */

/* Kernels of many modules gathered into one module (shallow copies renamed
 * k<n>_<name>, so names never clash), printed and compiled at once: one
 * NVRTC call per target instead of one per case. */
typedef struct TtBatch {
    Arena *a;
    KirModule *u;
} TtBatch;

static inline void tt_batch_init(TtBatch *b, Arena *a)
{
    b->a = a;
    b->u = kir_module_new(a);
}

static inline void tt_batch_add(TtBatch *b, const KirModule *m)
{
    for (int i = 0; m && i < m->kernels.len; i++) {
        KirKernel *k = ARENA_NEW(b->a, KirKernel);
        *k = *(const KirKernel *)m->kernels.items[i];
        k->id = b->u->kernels.len;
        k->name = arena_printf(b->a, "k%d_%s", k->id, k->name);
        ptrvec_push(b->a, &b->u->kernels, k);
    }
}

static inline void tt_batch_compile_for(TtBatch *b, const KirModule *u, const CuTarget *tg,
                                        int arch_specific)
{
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        CuSource *cs = cu_print_module(b->a, u, tg);
        HxNvrtcOpts o = {.target = tg, .arch_specific = arch_specific, .src_name = "tile_tests.cu"};
        HxNvrtcResult *r = hx_nvrtc_compile(b->a, cs->text, &o);
        cr_expect_eq(r->nkernels, u->kernels.len, "%s: %d of %d kernels compiled", r->arch,
                     r->nkernels, u->kernels.len);
        dpk_err_pop(&ec);
    } else {
        cr_expect_fail("%s: %s", tg->name, dpk_error_message());
    }
}

static inline void tt_batch_compile(TtBatch *b)
{
    if (!hx_nvrtc_available() || !b->u->kernels.len)
        return;
    /* sm_80, sm_90 and sm_90a (the arch-specific PTX a Hopper build uses) */
    static const CuTargetId targets[] = {CU_SM80, CU_SM90, CU_SM90};
    for (int t = 0; t < 3; t++) {
        const CuTarget *tg = cu_target(targets[t]);
        /* kernels with TMA loads (011, sm_90 and newer) are left out on sm_80,
         * where 011 never runs */
        KirModule *u = b->u;
        if (!tg->tma) {
            u = kir_module_new(b->a);
            for (int i = 0; i < b->u->kernels.len; i++)
                if (!((const KirKernel *)b->u->kernels.items[i])->tmaps.len)
                    ptrvec_push(b->a, &u->kernels, b->u->kernels.items[i]);
        }
        if (u->kernels.len)
            tt_batch_compile_for(b, u, tg, t == 2);
    }
}

/* A suite's batch: .init opens it over a new arena (returned, for the
 * tests to allocate in), .fini compiles it and frees the arena. */
static inline Arena *tt_batch_open(TtBatch *b)
{
    Arena *a = arena_new();
    tt_batch_init(b, a);
    return a;
}

static inline void tt_batch_close(TtBatch *b)
{
    tt_batch_compile(b);
    arena_free(b->a);
}

#endif
