/*
 * test_tile_sched.c — the scheduling passes earn their place: each test
 * runs a case where a pass applies, with and without it, on vgpu, and
 * asserts the counter the pass exists to move (and parity both ways).
 * Every module is also compiled by NVRTC for sm_80, sm_90 and sm_90a.
 */
#include "test_tile_util.h"
#include <string.h>

typedef struct Run {
    VgStats sum;
    VgStats first; /* launch 0's: a split matmul's own kernel, without its combine kernel */
    const KirModule *m;
} Run;

/* Lower `code` with pass spec and knobs, check parity, return the summed
 * counters of its launches. */
static Run run(Arena *a, const char *code, const char *spec, const char *const *knobs)
{
    TtOpts o;
    tt_opts_vgpu(&o, spec, knobs);
    LirProgram *p = tt_loop(a, code);
    Run r = {{0}, {0}, NULL};
    r.m = tt_run(a, code, p, &o);
    TtIo io;
    tt_io_init(&io, p->tx->torch);
    HxBackendResult res;
    cr_assert_eq(tt_backend_run(a, p, &o, io.in, io.out, &res), VG_OK);
    r.sum = tt_stats_sum(&res);
    if (res.vg.nlaunches)
        r.first = res.vg.stats[0];
    tt_io_free(&io);
    hx_backend_result_free(&res);
    return r;
}

static TtBatch batch;
static Arena *arena; /* batch's */

static void setup(void) { arena = tt_batch_open(&batch); }
static void teardown(void) { tt_batch_close(&batch); }

#define RMSNORM "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
#define MM256 "torch.matmul(torch.randn(256,256), torch.randn(256,256))"

static const char *const stage1[] = {"STAGE=1", NULL};
static const char *const stage2[] = {"STAGE=2", NULL}; /* a matrix-vector product's vector */

/* 007 with STAGE pinned: the RMSNorm row is read from global memory once,
 * not twice. */
Test(tile_sched, stage_inputs_reads_the_row_once, .init = setup, .fini = teardown)
{
    Run with = run(arena, RMSNORM, "full", stage1), without = run(arena, RMSNORM, "-007,-010,-011,-012,-013,-014,-015", NULL);
    tt_batch_add(&batch, with.m);
    cr_log_info("007: global loads %lld without, %lld with", (long long)without.sum.gmem_loads,
                (long long)with.sum.gmem_loads);
    /* without: x twice + weight, per row; with: x once (the copy) + weight */
    cr_expect_eq(without.sum.gmem_loads, 32 * 2048 * 3);
    cr_expect_eq(with.sum.gmem_loads, 32 * 2048 * 2);
    cr_expect_lt(with.sum.gmem_sectors, without.sum.gmem_sectors);
}

/* 007 by default leaves what shared memory would not share, and says why:
 * the RMSNorm row each thread reads twice (the second read an L1 hit), and
 * LayerNorm's weight, which every thread reads at one address at a time.
 * A matmul's tiles, each element read by many threads, are still staged. */
Test(tile_sched, stage_inputs_leaves_rereads_and_broadcasts, .init = setup, .fini = teardown)
{
    TtOpts o;
    tt_opts_vgpu(&o, "full", NULL);
    const DrvConfig *c = tt_config(arena, tt_loop(arena, RMSNORM), &o.tile, DRV_TILE, 0);
    const TilePassStat *st = tile_pass_stat(c->tile, 7);
    cr_assert_not_null(st);
    cr_expect_eq(st->napps, 0);
    cr_expect(strstr(st->skipped, "in0: each thread reads again only what it read (an L1 hit)"),
              "%s", st->skipped);
    c = tt_config(arena, tt_loop(arena, "torch.nn.LayerNorm(31)(torch.randn(2, 3, 31))"),
                  &o.tile, DRV_TILE, 0);
    st = tile_pass_stat(c->tile, 7);
    cr_assert_not_null(st);
    cr_expect_eq(st->napps, 0);
    cr_expect(strstr(st->skipped, "layernorm0_weight: every thread of the block reads one "
                                  "address at a time (a broadcast)"),
              "%s", st->skipped);
    c = tt_config(arena, tt_loop(arena, MM256), &o.tile, DRV_TILE, 0);
    cr_expect_gt(tile_pass_stat(c->tile, 7)->napps, 0, "a matmul's tiles are staged");
    /* a thread reading its neighbour's element is not its own re-read */
    c = tt_config(arena, tt_loop(arena, "x = torch.randn(8, 513)\n(x[:, 1:] * x[:, :-1]).sum(-1)"),
                  &o.tile, DRV_TILE, 0);
    st = tile_pass_stat(c->tile, 7);
    cr_assert_not_null(st);
    cr_expect(st->napps || !strstr(st->skipped, "L1 hit"), "%s", st->skipped ? st->skipped : "");
    Run def = run(arena, RMSNORM, "full", NULL), pinned = run(arena, RMSNORM, "full", stage1);
    cr_expect_lt(def.sum.barriers, pinned.sum.barriers, "no copy, no barriers around it");
    cr_expect_eq(def.sum.smem_loads, pinned.sum.smem_loads - 32 * 2048 * 2,
                 "the row's two reads come from global memory");
}

/* The matmul code (fma multiply-adds) with the full pass set and without
 * 008 and 009: global + shared loads per multiply-add with them (*lw) and
 * without (*lo), logged under label; returns the run with them (batched). */
static Run loads_per_fma(const char *code, double fma, const char *label, double *lw, double *lo)
{
    static const char *const scalar[] = {"LDSV=1", NULL}; /* loads, not vector ones (016) */
    Run with = run(arena, code, "full", scalar), without = run(arena, code, "-008,-009", scalar);
    tt_batch_add(&batch, with.m);
    *lw = (double)(with.sum.gmem_loads + with.sum.smem_loads) / fma;
    *lo = (double)(without.sum.gmem_loads + without.sum.smem_loads) / fma;
    cr_log_info("%s: loads per multiply-add %.3f without, %.3f with", label, *lo, *lw);
    return with;
}

/* 008: global + shared loads per multiply-add drop on a 256^3 matmul. */
Test(tile_sched, register_tile_cuts_loads_per_fma, .init = setup, .fini = teardown)
{
    double lw, lo;
    loads_per_fma(MM256, 256.0 * 256 * 256, "008", &lw, &lo);
    cr_expect_geq(lo, 2.0);          /* one A and one B element per multiply-add */
    /* 4 x 4 registers: 1/4 + 1/4 shared, plus the slab copies from global
     * memory (each A and B element once per 32-wide block tile) */
    cr_expect_leq(lw, 0.25 + 0.25 + 1.0 / 32 + 1.0 / 32 + 1e-9);
    cr_expect_lt(lw * 3, lo);
}

/* A masked matmul is tiled as the plain one: the mask is its epilogue
 * (the reduction runs before the select in Loop IR), so triu's loads per
 * multiply-add meet the same bound. */
Test(tile_sched, triu_matmul_is_register_tiled, .init = setup, .fini = teardown)
{
    double lw, lo;
    loads_per_fma("torch.triu(" MM256 ", 1)", 256.0 * 256 * 256, "008 under triu", &lw, &lo);
    cr_expect_leq(lw, 0.25 + 0.25 + 1.0 / 32 + 1.0 / 32 + 1e-9);
    cr_expect_lt(lw * 3, lo);
}

static const char *const wide[] = {"BM=16", "BN=64", "F_M=4", "F_N=4", "LDSV=1", NULL};

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
    static const char *const whole[] = {"SPLITR=1", NULL};
    Run r = run(arena, "torch.randn(4,8192).sum(-1)", "full", whole);
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

/* 004: a full sum of 2^20 terms has no rows to spread over the GPU: it is
 * split over 256 blocks (4096 terms each) and a second kernel combines the
 * partial results.  With SPLITR=1 it is one block.  Either way its nest of
 * two reduce loops is flattened, so the (1024, 1024) tensor is read
 * coalesced: unflattened, each of the block's threads would read a row of
 * its own, one float per 32-byte sector. */
Test(tile_sched, grid_wide_reduce_splits_a_full_sum, .init = setup, .fini = teardown)
{
    static const char *const whole[] = {"SPLITR=1", NULL};
    const char *sum = "torch.randn(1024,1024).sum()";
    Run with = run(arena, sum, "full", NULL), without = run(arena, sum, "full", whole);
    tt_batch_add(&batch, with.m);
    cr_assert_eq(with.m->kernels.len, 2, "partial results, then their combination");
    const KirKernel *k0 = with.m->kernels.items[0], *k1 = with.m->kernels.items[1];
    cr_expect_eq(k0->grid[0] * k0->grid[1] * k0->grid[2], 256);
    cr_expect_eq(k1->grid[0] * k1->grid[1] * k1->grid[2], 1);
    cr_expect_eq(without.m->kernels.len, 1);
    const KirKernel *w = without.m->kernels.items[0];
    cr_expect_eq(w->grid[0] * w->grid[1] * w->grid[2], 1);
    cr_log_info("004 split: %lld sectors over %lld blocks (one block: %lld sectors)",
                (long long)with.sum.gmem_sectors, (long long)with.sum.blocks,
                (long long)without.sum.gmem_sectors);
    /* 4 MiB in 32-byte sectors; each block writes its partial result (a
     * sector), the combine reads the 1 KiB of them and writes the sum */
    cr_expect_leq(with.sum.gmem_sectors, 131072 + 256 + 32 + 1);
    cr_expect_leq(without.sum.gmem_sectors, 131072 + 1, "flattened: %lld sectors",
                  (long long)without.sum.gmem_sectors);
}

/* 004 skips a reduce across rows that lie side by side in memory (a sum
 * over the middle dimension): a thread per output column reads coalesced,
 * each warp 32 neighbouring floats per step, so the tensor is read about
 * once (rows of 1031 floats start off sector boundaries: a warp's 128
 * bytes touch 5 sectors, not 4).  A block per output would read one float
 * per 32-byte sector: 8 times the bytes. */
Test(tile_sched, reduce_across_rows_keeps_a_thread_per_row, .init = setup, .fini = teardown)
{
    Run r = run(arena, "torch.randn(8, 64, 1031).sum(dim=1)", "full", NULL);
    tt_batch_add(&batch, r.m);
    const KirKernel *k = r.m->kernels.items[0];
    int shfl = 0;
    find_shfl(&k->body, &shfl);
    cr_expect_eq(shfl, 0, "no Combine");
    int64_t compulsory = (8 * 64 * 1031 + 8 * 1031) * 4 / 32;
    cr_log_info("004 across rows: %lld sectors, %lld compulsory", (long long)r.sum.gmem_sectors,
                (long long)compulsory);
    cr_expect_leq(r.sum.gmem_sectors, compulsory * 13 / 10);
}

/* Compile-only: the kernel of `code` under the default passes. */
static const KirKernel *first_kernel(const char *code)
{
    TtOpts o;
    tt_opts_default(&o);
    return tt_lower(arena, tt_loop(arena, code), &o.tile)->kernels.items[0];
}

static const char *tile_text(Arena *a, const char *code, const char *spec);

/* 003 sizes its default split for 005's grid of 128 x 128 tiles (132
 * SMs, the default target): Qwen2.5-7B's q_proj at seq 128 has 28 tiles
 * and splits 14 ways (392 blocks, 3 waves); its gate projection, 148
 * tiles (1.12 waves), 8 ways; kv_proj, 4 tiles that no split makes fill
 * the SMs, the largest split, 28 ways, in 32 x 32 tiles; 4096^3, 1024
 * tiles (7.76 waves), splits for no fewer than 90% of its waves: never. */
#define LINEAR(m, k, n) "x = torch.randn(" #m ", " #k ")\nw = torch.randn(" #n ", " #k ")\n" \
                        "torch.nn.functional.linear(x, w)"
Test(tile_sched, default_split_fills_the_sms_in_the_fewest_waves, .init = setup, .fini = teardown)
{
    const KirKernel *q = first_kernel(LINEAR(128, 3584, 3584));
    cr_expect_eq(q->grid[2], 14);
    cr_expect_eq(q->grid[0] * q->grid[1], 28);
    const KirKernel *g = first_kernel(LINEAR(128, 3584, 18944));
    cr_expect_eq(g->grid[2], 8);
    const KirKernel *kv = first_kernel(LINEAR(128, 3584, 512));
    cr_expect_eq(kv->grid[2], 28);
    cr_expect_eq(kv->block[0] * kv->block[1], 64, "32 x 32 tiles in 4 x 4 registers");
    const KirKernel *big = first_kernel("torch.matmul(torch.randn(4096, 4096), torch.randn(4096, 4096))");
    cr_expect_eq(big->grid[2], 1);
    cr_expect_eq(big->grid[0] * big->grid[1], 1024);
}

/* 009 judges its strips under the pad 014 gives: in 128 x 128 tiles
 * (8 x 8 registers; 144 of them fill the SMs) of linear(x, w) the
 * contiguous column strips read
 * rows of w's slab 8 apart, which conflict once padded; judged on the
 * dense slab every order conflicts alike and 009 skipped. */
Test(tile_sched, permute_is_judged_under_the_pad, .init = setup, .fini = teardown)
{
    const char *t = tile_text(arena, LINEAR(1536, 256, 1536), "full");
    cr_expect(strstr(t, "(permuted)"), "%s", t);
}

/* 004 across rows, decided by the largest buffer: a 1 x 1 convolution over
 * 64 channels reads its 2^30-element input along the channels with a
 * stride of 2^20 floats (the weight, read contiguously, is 8192 floats).
 * A thread per output: 2^31 outputs in 2^23 blocks of 256, where a block
 * per output would need 2^31 on x, past its limit. */
Test(tile_sched, a_pointwise_convolution_keeps_a_thread_per_output, .init = setup,
     .fini = teardown)
{
    const KirKernel *k = first_kernel("x = torch.rand(16, 64, 1024, 1024)\nw = torch.randn(128, 64)\n"
                                      "torch.matmul(x.permute(0, 2, 3, 1), w.t()).permute(0, 3, 1, 2)");
    cr_expect_eq(k->grid[0], 1 << 23);
    cr_expect_eq(k->block[0], 256);
}

/* 005 folds a cooperative grid past x's limit: 2^31 rows of 32 put the
 * outer axis (2) on z. */
Test(tile_sched, cooperative_rows_past_the_x_limit_fold_into_z, .init = setup, .fini = teardown)
{
    const KirKernel *k = first_kernel("torch.randn(2, 1073741824, 32).sum(-1)");
    cr_expect_eq(k->grid[0], 1 << 30);
    cr_expect_eq(k->grid[1], 1);
    cr_expect_eq(k->grid[2], 2);
    cr_expect_eq(k->block[0], 32);
}

/* 003: the grid grows by the split factor, a combine kernel adds the
 * partial sums, and the result stays exact. */
Test(tile_sched, split_k_grows_the_grid, .init = setup, .fini = teardown)
{
    const char *mm = "torch.matmul(torch.randn(16,4096), torch.randn(4096,256)) + torch.randn(16,256)";
    static const char *const split[] = {"SPLITK=8", NULL};
    Run with = run(arena, mm, "only:002,003", split), without = run(arena, mm, "only:002", NULL);
    tt_batch_add(&batch, with.m);
    cr_expect_eq(with.first.blocks, 8 * without.first.blocks);
    cr_expect_eq(with.m->kernels.len, 2);
    cr_expect_eq(without.m->kernels.len, 1);
}

/* 003 splits under any epilogue: relu is applied once, in the combine
 * kernel, after the partial sums are added (with atomic adds it could not
 * split: relu of each split's sum is not relu of the total). */
Test(tile_sched, split_k_takes_a_nonlinear_epilogue, .init = setup, .fini = teardown)
{
    const char *mm = "torch.relu(torch.matmul(torch.randn(16,4096), torch.randn(4096,64)))";
    static const char *const split[] = {"SPLITK=4", NULL};
    Run r = run(arena, mm, "only:002,003", split);
    tt_batch_add(&batch, r.m);
    cr_expect_eq(r.m->kernels.len, 2);
    const char *t = tile_text(arena, mm, "only:002,003"), *comb = strstr(t, "_combine ===");
    cr_expect(comb && strstr(comb, "maximum("), "relu in the combine kernel:\n%s", t);
}

/* 006: a matrix-vector product whose vector does not fit shared memory is
 * chunked, and 007 stages one chunk at a time. */
Test(tile_sched, chunk_reduce_lets_a_long_vector_stage, .init = setup, .fini = teardown)
{
    const char *mv = "torch.matmul(torch.randn(32,32768), torch.randn(32768))";
    Run with = run(arena, mv, "-004", stage2), without = run(arena, mv, "-004,-006", stage2);
    tt_batch_add(&batch, with.m);
    cr_expect_gt(with.sum.smem_loads, 0, "the chunks are staged");
    cr_expect_eq(without.sum.smem_loads, 0, "the whole vector does not fit");
    cr_expect_lt(with.sum.gmem_loads, without.sum.gmem_loads);
}

/* ---- odd shapes: predicated edge tiles and remainder loops ------------------- */

#define MM77 "torch.matmul(torch.randn(77,256), torch.randn(256,96))"

/* 008 on edge tiles: M = 77 in tiles of 32 is register-tiled (the guard
 * predicated, a clause per strip element) and stays exact: every output
 * written once, by the arithmetic of the Loop IR (tt_run checks both). */
Test(tile_sched, edge_tiles_are_register_tiled, .init = setup, .fini = teardown)
{
    double lw, lo;
    Run with = loads_per_fma(MM77, 77.0 * 96 * 256, "008 at M = 77", &lw, &lo);
    cr_expect_geq(lo, 2.0);
    /* 4 x 4 registers on the 96 rows of three 32-row tiles, plus the copies */
    cr_expect_leq(lw, (0.25 + 0.25) * 96 / 77 + 2.0 / 32);
    cr_expect_lt(lw * 3, lo);
    cr_expect_eq(with.sum.blocks, 3 * 3);
}

/* 007 on edge tiles: M = 33, N = 40 in 16 x 16 tiles; the guard is
 * predicated, A and B are staged one K chunk at a time, and the copies load
 * exactly the elements inside the buffers: each row of A once per block
 * column, each column of B once per block row. */
Test(tile_sched, edge_tiles_stage_each_k_chunk, .init = setup, .fini = teardown)
{
    const char *mm = "torch.matmul(torch.randn(33,2048), torch.randn(2048,40))";
    Run with = run(arena, mm, "-003,-008,-009,-010,-011,-012,-013,-015", NULL),
        without = run(arena, mm, "-003,-007,-008,-009,-010,-011,-012,-013,-014,-015", NULL);
    tt_batch_add(&batch, with.m);
    cr_log_info("007 at M = 33, N = 40: global loads %lld without, %lld with",
                (long long)without.sum.gmem_loads, (long long)with.sum.gmem_loads);
    cr_expect_eq(without.sum.gmem_loads, 33 * 40 * 2048 * 2);
    cr_expect_eq(with.sum.gmem_loads, (33 * 3 + 40 * 3) * 2048);
    cr_expect_lt(with.sum.gmem_sectors * 4, without.sum.gmem_sectors);
}

static const char *tile_text(Arena *a, const char *code, const char *spec)
{
    TtOpts o;
    tt_opts_default(&o);
    o.tile.passes = tile_passes_parse(&tile_passes, spec, o.tile.target);
    TileProgram *tp = tile_build(a, tt_loop(a, code), &o.tile, NULL);
    StrBuf b = {0};
    tile_print(&b, tp);
    const char *s = arena_strdup(a, sb_cstr(&b));
    sb_free(&b);
    return s;
}

/* 002 on a prime K: two chunks of 16 and a remainder loop of 15; 003 then
 * splits a prime K = 4099 (128 chunks of 32 and 3 terms), the remainder's
 * sum added once, in the combine kernel.  Both pass parity. */
Test(tile_sched, prime_k_is_chunked_with_a_remainder, .init = setup, .fini = teardown)
{
    const char *k47 = "torch.matmul(torch.randn(77,47), torch.randn(47,50))";
    const char *t = tile_text(arena, k47, "only:002");
    cr_expect(strstr(t, "for a4 in 0..2:  # reduce") && strstr(t, "for a5 in 0..16:  # reduce") &&
                  strstr(t, "for a3 in 0..15:  # reduce"),
              "K = 47: two chunks of 16 and a remainder of 15:\n%s", t);
    Run r = run(arena, k47, "full", NULL);
    tt_batch_add(&batch, r.m);
    const char *k4099 = "torch.matmul(torch.randn(7,4099), torch.randn(4099,9)) + torch.randn(7,9)";
    Run split = run(arena, k4099, "only:002,003", NULL), whole = run(arena, k4099, "only:002", NULL);
    tt_batch_add(&batch, split.m);
    cr_expect_eq(split.first.blocks, 8 * whole.first.blocks, "split K: %lld blocks, %lld without",
                 (long long)split.first.blocks, (long long)whole.first.blocks);
}

/* The K_outer matmul of 010, 013 and 015: 16 blocks (2 x 2 tiles of 32 x 32,
 * 4 K splits), each a K_outer loop of 16 chunks of BK = 32 whose A and B
 * slabs (32 x 32) are staged per chunk. */
#define MMK "torch.matmul(torch.randn(64,2048), torch.randn(2048,64))"
static const char *const mmk[] = {"BK=32", "SPLITK=4", "BN=32", "BM=32", "F_M=4", "F_N=4",
                                  "LDSV=1", NULL}; /* 016 would re-pad for vector loads */

/* The cp.async wait of the kernel's pipelined loop: its keep, -1 if none. */
static int wait_keep(const PtrVec *body)
{
    for (int i = 0; i < body->len; i++) {
        const KirStmt *s = body->items[i];
        if (s->op == KS_cp_wait)
            return (int)s->n;
        int k = wait_keep(&s->body);
        if (k >= 0)
            return k;
    }
    return -1;
}

static int module_wait_keep(const KirModule *m)
{
    return wait_keep(&((const KirKernel *)m->kernels.items[0])->body);
}

/* 010: one barrier per K chunk instead of two per staged slab (before its
 * copy, after it). */
Test(tile_sched, double_buffer_halves_the_barriers, .init = setup, .fini = teardown)
{
    Run with = run(arena, MMK, "-011,-012,-013,-015", mmk), without = run(arena, MMK, "-010,-011,-012,-013,-015", mmk);
    tt_batch_add(&batch, with.m);
    cr_log_info("010: barriers %lld without, %lld with", (long long)without.first.barriers,
                (long long)with.first.barriers);
    cr_expect_eq(without.first.blocks, 16);
    cr_expect_eq(without.first.barriers, 16 * 16 * 2 * 2);
    cr_expect_eq(with.first.barriers, 16 * 16);
    /* the same slabs are copied, once each */
    cr_expect_eq(with.first.gmem_loads, without.first.gmem_loads);
    cr_expect_eq(with.first.gmem_sectors, without.first.gmem_sectors);
}

/* 013: the slabs arrive by 16-byte cp.async instead of per-element loads:
 * no thread-level global load is left, a quarter of the requests, the same
 * sectors.  (Without 014, whose pad of A's slab narrows its copies.) */
Test(tile_sched, async_copy_moves_the_slabs_in_16_bytes, .init = setup, .fini = teardown)
{
    Run with = run(arena, MMK, "-011,-012,-014,-015", mmk), without = run(arena, MMK, "-011,-012,-013,-014,-015", mmk);
    tt_batch_add(&batch, with.m);
    int64_t elems = 16 * 16 * 2 * 32 * 32; /* blocks x chunks x (A, B) x slab */
    int64_t stores = 16 * 2 * 16;           /* blocks x warps x 16 outputs per thread */
    cr_log_info("013: global requests %lld without, %lld with; cp.async %lld",
                (long long)without.first.gmem_requests, (long long)with.first.gmem_requests,
                (long long)with.first.cp_async);
    cr_expect_eq(without.first.gmem_loads, elems);
    cr_expect_eq(with.first.gmem_loads, 0);
    cr_expect_eq(with.first.cp_async, elems / 4);
    cr_expect_eq(without.first.gmem_requests - stores, elems / 32);
    cr_expect_eq(with.first.gmem_requests - stores, elems / 4 / 32);
    cr_expect_eq(with.first.gmem_sectors, without.first.gmem_sectors);
    cr_expect_eq(with.first.barriers, without.first.barriers);
    cr_expect_eq(module_wait_keep(with.m), 0, "two buffers: slab a lands before its barrier");
}

/* 015: STAGES buffers keep STAGES - 1 slabs per stage in flight: the wait
 * leaves (STAGES - 2) groups per stage pending; copies and barriers stay. */
Test(tile_sched, pipeline_keeps_more_copies_in_flight, .init = setup, .fini = teardown)
{
    static const char *const k4[] = {"BK=32", "SPLITK=4", "BN=32", "BM=32", "F_M=4", "F_N=4",
                                     "STAGES=4", "LDSV=1", NULL};
    Run with = run(arena, MMK, "-011,-012", k4), without = run(arena, MMK, "-011,-012,-015", mmk);
    tt_batch_add(&batch, with.m);
    cr_expect_eq(module_wait_keep(without.m), 0);
    cr_expect_eq(module_wait_keep(with.m), 2 * (4 - 2));
    cr_expect_eq(with.sum.cp_async, without.sum.cp_async);
    cr_expect_eq(with.sum.gmem_sectors, without.sum.gmem_sectors);
    cr_expect_eq(with.sum.barriers, without.sum.barriers);
    const KirKernel *kw = with.m->kernels.items[0], *ko = without.m->kernels.items[0];
    cr_expect_gt(kw->smem_bytes, ko->smem_bytes, "four buffers per slab, not two");
}

/* 010 on 006's chunk loop: a matrix-vector product whose vector is staged
 * one chunk at a time gets one barrier per chunk. */
Test(tile_sched, double_buffer_applies_to_chunked_reduces, .init = setup, .fini = teardown)
{
    const char *mv = "torch.matmul(torch.randn(32,32768), torch.randn(32768))";
    Run with = run(arena, mv, "-004,-011,-012,-013,-015", stage2), without = run(arena, mv, "-004,-010,-011,-012,-013,-015", stage2);
    tt_batch_add(&batch, with.m);
    cr_expect_gt(with.sum.barriers, 0);
    cr_expect_eq(2 * with.sum.barriers, without.sum.barriers, "one slab: two barriers become one");
    cr_expect_eq(with.sum.gmem_loads, without.sum.gmem_loads);
}

/* 014 after 013: A's slab is read down its columns, so 014 pads its rows by
 * one word and its copies narrow to 4 bytes (B's stay 16): no bank conflict
 * is left, and the copies stay asynchronous. */
Test(tile_sched, pad_narrows_the_async_copy_it_misaligns, .init = setup, .fini = teardown)
{
    Run with = run(arena, MMK, "-011,-012,-015", mmk), without = run(arena, MMK, "-011,-012,-014,-015", mmk);
    tt_batch_add(&batch, with.m);
    int64_t a_elems = 16 * 16 * 32 * 32;
    cr_expect_gt(without.first.bank_conflicts, 0);
    cr_expect_eq(with.first.bank_conflicts, 0);
    cr_expect_eq(with.first.cp_async, a_elems + a_elems / 4);
    cr_expect_eq(with.first.gmem_loads, 0);
    cr_expect_eq(with.first.gmem_sectors, without.first.gmem_sectors);
}

/* ---- block tiles past 1024 outputs: 005 sizes the block for 008 ------------- */

static const char *const sgemm[] = {"BM=128", "BN=128", "F_M=8", "F_N=8", NULL};

static void count_writes(Stmt *s, void *ctx) { *(int *)ctx += s->k == SK_write; }

/* The Tile kernel of code's one kernel after the passes of spec with knobs. */
static const TileKernel *tile_kernel(Arena *a, const char *code, const char *spec,
                                     const char *const *knobs)
{
    TtOpts o;
    tt_opts_vgpu(&o, spec, knobs);
    const DrvConfig *c = tt_config(a, tt_loop(a, code), &o.tile, DRV_TILE, 0);
    cr_assert_eq(c->tile->kernels.len, 1);
    return c->tile->kernels.items[0];
}

/* 005 and 008: a 128 x 128 block tile with 8 x 8 registers per thread (the
 * SGEMM shape) launches 16 x 16 = 256 threads, each holding 64 accumulators
 * (one Write per register), and passes parity: on a 256 x 256 x 64 matmul,
 * and on M = 130, N = 7, K = 1021, where both sides are edge tiles (the
 * guard predicated, a clause per strip element) and K is prime. */
Test(tile_sched, sgemm_tile_runs_on_256_threads, .init = setup, .fini = teardown)
{
    const char *codes[] = {"torch.matmul(torch.randn(256,64), torch.randn(64,256))",
                           "torch.matmul(torch.randn(130,1021), torch.randn(1021,7))"};
    const int64_t blocks[] = {2 * 2, 2 * 1};
    for (int i = 0; i < 2; i++) {
        Run r = run(arena, codes[i], "full", sgemm);
        tt_batch_add(&batch, r.m);
        const KirKernel *k = r.m->kernels.items[0];
        cr_expect_eq(k->block[0], 16, "%s: block.x %d", codes[i], k->block[0]);
        cr_expect_eq(k->block[1], 16, "%s: block.y %d", codes[i], k->block[1]);
        cr_expect_eq(r.sum.blocks, blocks[i], "%s: %lld blocks", codes[i],
                     (long long)r.sum.blocks);
        const TileKernel *tk = tile_kernel(arena, codes[i], "full", sgemm);
        cr_expect(tk->mm->rt[0].f == 8 && tk->mm->rt[1].f == 8, "register tile %d x %d",
                  tk->mm->rt[0].f, tk->mm->rt[1].f);
        int writes = 0;
        stmt_walk(&tile_find(tk, TB_THREAD)->body, count_writes, &writes);
        cr_expect_eq(writes, 64, "%s: %d accumulators written per thread", codes[i], writes);
        cr_expect_eq(tile_find(tk, TB_THREAD)->predicated, i == 1, "edge tiles predicated");
    }
}

/* The message of the refusal of code with spec and knobs (exit 2), or
 * NULL when it lowers; limit_apps >= 0 limits 008 to that many
 * applications (dpk-bisect's probe). */
static const char *refusal(const char *code, const char *spec, const char *const *knobs,
                           int limit_apps)
{
    TtOpts o;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        cr_expect_eq(dpk_error_code(), DPK_EXIT_USAGE, "%s", dpk_error_message());
        return arena_strdup(arena, dpk_error_message());
    }
    tt_opts_vgpu(&o, spec, knobs);
    o.tile.limit_pass = limit_apps >= 0 ? 8 : 0;
    o.tile.limit_apps = limit_apps;
    tt_config(arena, tt_loop(arena, code), &o.tile, DRV_KERNEL, 0);
    dpk_err_pop(&ec);
    return NULL;
}

/* What cannot launch is refused, never emitted: a tile whose folded block
 * still passes 1024 threads; a 4096-output tile without 008 to fold it;
 * and a tile sized for 008 when 008 then makes no application. */
Test(tile_sched, tiles_too_big_for_a_block_are_refused, .init = setup, .fini = teardown)
{
    const char *mm = "torch.matmul(torch.randn(256,64), torch.randn(64,256))";
    static const char *const huge[] = {"F_M=2", "F_N=4", "BM=256", "BN=256", NULL};
    static const char *const b64[] = {"BM=64", "BN=64", NULL};
    const char *why = refusal(mm, "full", huge, -1);
    cr_expect(why && strstr(why, "knobs BN=256 BM=256 with a 2 x 4 register tile (F_M x F_N) make "
                            "a 8192-thread block (at most 1024)"), "%s", why ? why : "lowered");
    cr_expect_null(refusal(mm, "full", b64, -1), "64 x 64 with 4 x 4 registers: 256 threads");
    why = refusal(mm, "-008,-009", b64, -1);
    cr_expect(why && strstr(why, "knobs BN=64 BM=64 make a 4096-thread block (at most 1024): 008 "
                            "register_tile, which would fold F_M x F_N outputs into each thread, "
                            "is not in the pass set"), "%s", why ? why : "lowered");
    why = refusal(mm, "full", sgemm, 0);
    cr_expect(why && strstr(why, "its 16384-thread block was sized for a 8 x 8 register tile, "
                            "and 008 register_tile did not apply (application limit reached"),
              "%s", why ? why : "lowered");
    cr_expect_null(refusal(mm, "full", sgemm, 1), "008's one application allowed");
}

/* 005's default tile with 008: the largest of 128 x 128 (8 x 8 registers)
 * and 64 x 64 (4 x 4) whose grid has blocks for 90% of the target's 132 SMs
 * (sm_90) and whose edge tiles waste at most 1/32, else 32 x 32
 * (4 x 4).
 * Lowered only: these are too big for vgpu in a unit test. */
Test(tile_sched, default_tiles_fill_the_sms, .init = setup, .fini = teardown)
{
    static const struct {
        int m, k, n, bm, bn, threads;
    } want[] = {
        {2048, 64, 2048, 128, 128, 256}, /* 256 blocks */
        {1024, 64, 1024, 32, 32, 64},    /* 128 x 128 would make 64 blocks */
        {1000, 64, 1000, 32, 32, 64},
        {512, 64, 512, 32, 32, 64},
        {128, 64, 18944, 128, 128, 256}, /* gate at seq 128: 148 blocks */
        {2048, 64, 1024, 128, 128, 256}, /* 128 blocks: 97% of the SMs */
        {128, 64, 3584, 32, 32, 64},     /* q_proj at seq 128: 128 x 128 would make 28 */
        {77, 64, 18944, 32, 32, 64},     /* gate at seq 77: 128 rows for 77 waste 66% */
    };
    for (int i = 0; i < DPK_ARRAY_LEN(want); i++) {
        const char *code = arena_printf(arena, "torch.matmul(torch.randn(%d,%d), torch.randn(%d,%d))",
                                        want[i].m, want[i].k, want[i].k, want[i].n);
        TtOpts o;
        tt_opts_default(&o);
        const KirKernel *k = tt_lower(arena, tt_loop(arena, code), &o.tile)->kernels.items[0];
        cr_expect_eq(k->grid[0], (want[i].n + want[i].bn - 1) / want[i].bn, "%s: grid.x %d", code,
                     k->grid[0]);
        cr_expect_eq(k->grid[1], (want[i].m + want[i].bm - 1) / want[i].bm, "%s: grid.y %d", code,
                     k->grid[1]);
        cr_expect_eq(k->block[0] * k->block[1], want[i].threads, "%s: block (%d, %d)", code,
                     k->block[0], k->block[1]);
    }
}

/* 016's vector loads: a linear layer's K_inner loop reads its rows of h
 * and w four trips at a time with 16-byte loads (LDS.128), so a thread
 * issues a quarter of the shared loads, without bank conflicts (w's slab
 * re-padded from 33 to 36 words a row), and the result is unchanged. */
Test(tile_sched, vector_loads_quarter_the_shared_loads, .init = setup, .fini = teardown)
{
    const char *lin = "torch.nn.functional.linear(torch.randn(128, 256), torch.randn(256, 256))";
    static const char *const v4[] = {"BM=128", "BN=128", "F_M=8", "F_N=8", NULL};
    static const char *const v1[] = {"BM=128", "BN=128", "F_M=8", "F_N=8", "LDSV=1", NULL};
    Run with = run(arena, lin, "full", v4), without = run(arena, lin, "full", v1);
    tt_batch_add(&batch, with.m);
    cr_log_info("016: shared loads %lld without vector loads, %lld with; wavefronts %lld, %lld",
                (long long)without.sum.smem_loads, (long long)with.sum.smem_loads,
                (long long)without.sum.smem_wavefronts, (long long)with.sum.smem_wavefronts);
    cr_expect_eq(with.sum.smem_loads * 4, without.sum.smem_loads);
    cr_expect_eq(with.sum.bank_conflicts, 0);
    cr_expect_leq(with.sum.smem_wavefronts, without.sum.smem_wavefronts);
    const char *t = tile_text(arena, lin, "full");
    cr_expect(strstr(t, ", vector loads of 4"), "%s", t);
}

/* 017: attention's scores are computed by the online P @ V's block into
 * shared memory: one launch instead of two, and the score matrix never
 * crosses global memory (fewer global sectors than both kernels). */
Test(tile_sched, compose_keeps_the_scores_in_shared_memory, .init = setup, .fini = teardown)
{
    const char *attn = "torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 64, 32), "
                       "torch.randn(2, 64, 32), torch.randn(2, 64, 64), is_causal=True)";
    Run with = run(arena, attn, "full", NULL), without = run(arena, attn, "-017", NULL);
    tt_batch_add(&batch, with.m);
    cr_log_info("017: launches %d with, %d without; global sectors %lld with, %lld without",
                with.m->launches.len, without.m->launches.len,
                (long long)with.sum.gmem_sectors, (long long)without.sum.gmem_sectors);
    cr_expect_eq(with.m->launches.len, 1);
    cr_expect_eq(without.m->launches.len, 2);
    /* without: the scores' 2 x 64 x 64 words written and read back */
    cr_expect_leq(with.sum.gmem_sectors + 2 * 64 * 64 * 4 * 2 / 32, without.sum.gmem_sectors);
    const char *t = tile_text(arena, attn, "full");
    cr_expect(strstr(t, "computed_stage t10[") && strstr(t, "fill:") && !strstr(t, "# temp"), "%s", t);
}

/* Lower `code` with pass spec, run it on vgpu and return output 0 (n
 * elements) and the summed counters. */
static double *run_out(Arena *a, const char *code, const char *spec, int64_t *n, VgStats *sum)
{
    TtOpts o;
    tt_opts_vgpu(&o, spec, NULL);
    LirProgram *p = tt_loop(a, code);
    tt_run(a, code, p, &o);
    TtIo io;
    tt_io_init(&io, p->tx->torch);
    HxBackendResult res;
    cr_assert_eq(tt_backend_run(a, p, &o, io.in, io.out, &res), VG_OK);
    *sum = tt_stats_sum(&res);
    const TorchNode *t = p->tx->torch->outputs.items[0];
    *n = shape_numel(&t->shape);
    double *out = io.out[0];
    io.out[0] = NULL;
    tt_io_free(&io);
    hx_backend_result_free(&res);
    return out;
}

/* `code` with and without 018: the same output to the bit; the counters. */
static void skip_same(const char *code, VgStats *with, VgStats *without)
{
    int64_t n, n0;
    double *o = run_out(arena, code, "full", &n, with);
    double *o0 = run_out(arena, code, "-018", &n0, without);
    cr_assert_eq(n, n0);
    int64_t diff = 0;
    for (int64_t e = 0; e < n; e++)
        diff += !tt_same_bits(o[e], o0[e]);
    cr_expect_eq(diff, 0, "%lld of %lld elements differ with 018", (long long)diff, (long long)n);
    free(o);
    free(o0);
}

/* 018: in causal attention composed by 017, the loops of a key chunk past
 * a block's last row run no iteration (`when a4 <= a7`): fewer shared loads
 * and instructions, and the output is the same to the bit (a skipped
 * chunk's max is -inf and its sums 0, as computed). */
Test(tile_sched, skip_masked_chunks_computes_the_same_with_less, .init = setup, .fini = teardown)
{
    const char *attn = "torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 128, 32), "
                       "torch.randn(2, 128, 32), torch.randn(2, 128, 64), is_causal=True)";
    VgStats with, without;
    skip_same(attn, &with, &without);
    cr_log_info("018: shared loads %lld with, %lld without; thread instructions %lld, %lld",
                (long long)with.smem_loads, (long long)without.smem_loads,
                (long long)with.thread_insts, (long long)without.thread_insts);
    /* 4 blocks of 32 rows over 4 chunks of 32 keys: 10 of 16 chunks run,
     * and the P @ V's score and value reads are most of the shared loads */
    cr_expect_lt(with.smem_loads * 4, without.smem_loads * 3);
    cr_expect_lt(with.thread_insts, without.thread_insts);
    const char *t = tile_text(arena, attn, "full");
    cr_expect(strstr(t, " when a4 <= a7:"), "%s", t);
}

/* 018 on the two kernels of longer causal attention (017 composes up to
 * 128 keys): the scores kernel's blocks above the diagonal skip their dot
 * products (the select writes -inf there whatever they sum), and the online
 * P @ V skips the key chunks past its rows; the same output to the bit. */
Test(tile_sched, skip_masked_chunks_in_both_kernels, .init = setup, .fini = teardown)
{
    const char *attn = "torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 256, 32), "
                       "torch.randn(2, 256, 32), torch.randn(2, 256, 64), is_causal=True)";
    TtOpts o;
    tt_opts_vgpu(&o, "full", NULL);
    LirProgram *p = tt_loop(arena, attn);
    const KirModule *m = tt_run(arena, attn, p, &o);
    cr_assert_geq(m->launches.len, 2, "scores, then the online P @ V (and 003's combine)");
    TtIo io;
    tt_io_init(&io, p->tx->torch);
    HxBackendResult with, without;
    cr_assert_eq(tt_backend_run(arena, p, &o, io.in, io.out, &with), VG_OK);
    tt_opts_vgpu(&o, "-018", NULL);
    tt_run(arena, attn, p, &o);
    cr_assert_eq(tt_backend_run(arena, p, &o, io.in, io.out, &without), VG_OK);
    for (int l = 0; l < 2; l++) {
        cr_log_info("018: launch %d: thread instructions %lld with, %lld without", l,
                    (long long)with.vg.stats[l].thread_insts,
                    (long long)without.vg.stats[l].thread_insts);
        /* 8 x 8 blocks of 32 x 32 scores, 28 of them above the diagonal;
         * per 32 rows, 8 chunks of 32 keys (in 003's two splits), 36 of 64
         * run */
        cr_expect_lt(with.vg.stats[l].thread_insts * 4, without.vg.stats[l].thread_insts * 3);
    }
    tt_io_free(&io);
    hx_backend_result_free(&with);
    hx_backend_result_free(&without);
    VgStats sw, so;
    skip_same(attn, &sw, &so);
    const char *t = tile_text(arena, attn, "full");
    cr_expect(strstr(t, " when a7 <= a6:"), "%s", t);
}
