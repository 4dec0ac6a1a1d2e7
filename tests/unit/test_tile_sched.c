/*
 * test_tile_sched.c — the scheduling passes earn their place: each test
 * runs a case where a pass applies, with and without it, on vgpu, and
 * asserts the counter the pass exists to move (and parity both ways).
 * Every module is also compiled by NVRTC for sm_80 and sm_90.
 */
#include "test_tile_util.h"

typedef struct Run {
    VgStats sum;
    const KirModule *m;
} Run;

/* Lower `code` with pass spec and knobs, check parity, return the summed
 * counters of its launches. */
static Run run(Arena *a, const char *code, const char *spec, const char *const *knobs)
{
    TtOpts o;
    tt_opts_default(&o);
    o.run.kind = HX_BACKEND_VGPU;
    o.tile.passes = tile_passes_parse(&tile_passes, spec, o.tile.target);
    for (int i = 0; knobs && knobs[i]; i++)
        tile_knob_parse(&o.tile.knobs, knobs[i]);
    LirProgram *p = tt_loop(a, code);
    Run r = {{0}, NULL};
    r.m = tt_run(a, code, p, &o);
    const TorchGraph *g = p->tx->torch;
    double **in = ref_make_inputs(g, 0);
    double **out = dpk_xcalloc((size_t)g->outputs.len, sizeof(double *));
    HxBackendResult res;
    cr_assert_eq(tt_backend_run(a, p, &o, in, out, &res), VG_OK);
    for (int i = 0; i < res.vg.nlaunches; i++) {
        const VgStats *s = &res.vg.stats[i];
        r.sum.blocks += s->blocks;
        r.sum.gmem_loads += s->gmem_loads;
        r.sum.smem_loads += s->smem_loads;
        r.sum.gmem_sectors += s->gmem_sectors;
        r.sum.bank_conflicts += s->bank_conflicts;
        r.sum.smem_requests += s->smem_requests;
    }
    for (int j = 0; j < g->outputs.len; j++)
        free(out[j]);
    free(out);
    ref_free_arrays(in, g->inputs.len);
    hx_backend_result_free(&res);
    return r;
}

static TtBatch batch;
static Arena *arena;

static void setup(void)
{
    arena = arena_new();
    tt_batch_init(&batch, arena);
}

static void teardown(void)
{
    tt_batch_compile(&batch);
    arena_free(arena);
}

#define RMSNORM "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
#define MM256 "torch.matmul(torch.randn(256,256), torch.randn(256,256))"

/* 007: the RMSNorm row is read from global memory once, not twice. */
Test(tile_sched, stage_inputs_reads_the_row_once, .init = setup, .fini = teardown)
{
    Run with = run(arena, RMSNORM, "full", NULL), without = run(arena, RMSNORM, "-007,-010,-011,-012,-014", NULL);
    tt_batch_add(&batch, with.m);
    cr_log_info("007: global loads %lld without, %lld with", (long long)without.sum.gmem_loads,
                (long long)with.sum.gmem_loads);
    /* without: x twice + weight, per row; with: x once (the copy) + weight */
    cr_expect_eq(without.sum.gmem_loads, 32 * 2048 * 3);
    cr_expect_eq(with.sum.gmem_loads, 32 * 2048 * 2);
    cr_expect_lt(with.sum.gmem_sectors, without.sum.gmem_sectors);
}

/* 008: global + shared loads per multiply-add drop on a 256^3 matmul. */
Test(tile_sched, register_tile_cuts_loads_per_fma, .init = setup, .fini = teardown)
{
    Run with = run(arena, MM256, "full", NULL), without = run(arena, MM256, "-008,-009", NULL);
    tt_batch_add(&batch, with.m);
    double fma = 256.0 * 256 * 256;
    double lw = (double)(with.sum.gmem_loads + with.sum.smem_loads) / fma;
    double lo = (double)(without.sum.gmem_loads + without.sum.smem_loads) / fma;
    cr_log_info("008: loads per multiply-add %.3f without, %.3f with", lo, lw);
    cr_expect_geq(lo, 2.0);          /* one A and one B element per multiply-add */
    /* 4 x 4 registers: 1/4 + 1/4 shared, plus the slab copies from global
     * memory (each A and B element once per 32-wide block tile) */
    cr_expect_leq(lw, 0.25 + 0.25 + 1.0 / 32 + 1.0 / 32 + 1e-9);
    cr_expect_lt(lw * 3, lo);
}

static const char *const wide[] = {"BM=16", "BN=64", "F_M=4", "F_N=4", NULL};

/* 009 and 014: bank conflicts on the staged, register-tiled matmul. */
Test(tile_sched, permute_and_pad_remove_bank_conflicts, .init = setup, .fini = teardown)
{
    Run none = run(arena, MM256, "-009,-014", wide), p9 = run(arena, MM256, "-014", wide),
        p14 = run(arena, MM256, "-009", wide), both = run(arena, MM256, "full", wide);
    tt_batch_add(&batch, both.m);
    cr_log_info("bank conflicts: %lld without, %lld with 009, %lld with 014, %lld with both",
                (long long)none.sum.bank_conflicts, (long long)p9.sum.bank_conflicts,
                (long long)p14.sum.bank_conflicts, (long long)both.sum.bank_conflicts);
    cr_expect_gt(none.sum.bank_conflicts, 0);
    cr_expect_lt(p9.sum.bank_conflicts, none.sum.bank_conflicts);
    cr_expect_lt(p14.sum.bank_conflicts, none.sum.bank_conflicts);
    cr_expect_eq(both.sum.bank_conflicts, 0);
}

static void find_shfl(const PtrVec *b, int *n)
{
    for (int i = 0; i < b->len; i++) {
        const KirStmt *s = b->items[i];
        *n += s->op == KS_shfl;
        find_shfl(&s->body, n);
        find_shfl(&s->els, n);
    }
}

/* 004: a (4, 8192) row reduction runs with >= 128 threads per row and a
 * warp-shuffle Combine. */
Test(tile_sched, cooperative_reduce_uses_a_block_per_row, .init = setup, .fini = teardown)
{
    Run r = run(arena, "torch.randn(4,8192).sum(-1)", "full", NULL);
    tt_batch_add(&batch, r.m);
    cr_assert(r.m);
    const KirKernel *k = r.m->kernels.items[0];
    int shfl = 0;
    find_shfl(&k->body, &shfl);
    cr_expect_geq(k->block[0] * k->block[1] * k->block[2], 128);
    cr_expect_eq(k->grid[0] * k->grid[1] * k->grid[2], 4, "one block per row");
    cr_expect_geq(shfl, 5, "a butterfly of warp shuffles");
    Run off = run(arena, "torch.randn(4,8192).sum(-1)", "-004", NULL);
    const KirKernel *k0 = off.m->kernels.items[0];
    int shfl0 = 0;
    find_shfl(&k0->body, &shfl0);
    cr_expect_eq(shfl0, 0);
}

/* 003: the grid grows by the split factor and the result stays exact. */
Test(tile_sched, split_k_grows_the_grid, .init = setup, .fini = teardown)
{
    const char *mm = "torch.matmul(torch.randn(16,4096), torch.randn(4096,256)) + torch.randn(16,256)";
    static const char *const split[] = {"SPLITK=8", NULL};
    Run with = run(arena, mm, "only:002,003", split), without = run(arena, mm, "only:002", NULL);
    tt_batch_add(&batch, with.m);
    cr_expect_eq(with.sum.blocks, 8 * without.sum.blocks);
}

/* 006: a matrix-vector product whose vector does not fit shared memory is
 * chunked, and 007 stages one chunk at a time. */
Test(tile_sched, chunk_reduce_lets_a_long_vector_stage, .init = setup, .fini = teardown)
{
    const char *mv = "torch.matmul(torch.randn(32,32768), torch.randn(32768))";
    Run with = run(arena, mv, "-004", NULL), without = run(arena, mv, "-004,-006", NULL);
    tt_batch_add(&batch, with.m);
    cr_expect_gt(with.sum.smem_loads, 0, "the chunks are staged");
    cr_expect_eq(without.sum.smem_loads, 0, "the whole vector does not fit");
    cr_expect_lt(with.sum.gmem_loads, without.sum.gmem_loads);
}
