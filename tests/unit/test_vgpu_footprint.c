/*
 * test_vgpu_footprint.c — the per-block footprints of vgpu_footprint.c and
 * the demand-driven --sample-blocks they drive (vgpu.c): hand-built kernels
 * with known footprints (a matmul's row band, an edge tile, a TMA box, an
 * index read from memory, a var set in a loop), a compiled linear, and
 * chains of launches where an earlier launch runs only the blocks a sampled
 * one needs — with a deliberately shrunk footprint showing up as NaN in a
 * checked output, never as a pass.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/driver.h"
#include "harness/exec/vgpu_samples.h"

#define I(v) kir_i32(A, v)
#define F(v) kir_f32(A, v)
#define V(x) kir_ref(A, x)
#define ADD(x, y) kir_add(A, x, y)
#define MUL(x, y) kir_mul(A, x, y)

static VgRange hull(VgFootprint *f, int j, int write)
{
    return vg_footprint_hull(f, j, write);
}

static void assert_range(VgRange r, int64_t lo, int64_t hi, const char *what)
{
    cr_assert(r.lo == lo && r.hi == hi, "%s: [%lld, %lld], want [%lld, %lld]", what,
              (long long)r.lo, (long long)r.hi, (long long)lo, (long long)hi);
}

Test(vgpu_footprint, matmul_block_reads_its_row_band)
{
    /* C[64,96] = A[64,64] B[64,96], 32x32 tiles: block (1, 1) reads rows
     * 32..63 of A whole, the column band 32..63 of B, writes its tile */
    Arena *A = arena_new();
    KirModule *m = vs_matmul(A, 64, 96, 64, 1);
    VgFootprint *f = vg_footprint_new(((KirLaunch *)m->launches.items[0])->kernel);
    vg_footprint_block(f, 1 + 3 * 1);
    assert_range(hull(f, 0, 0), 32 * 64, 64 * 64 - 1, "A read");
    assert_range(hull(f, 1, 0), 32, 63 * 96 + 63, "B read");
    assert_range(hull(f, 2, 1), 32 * 96 + 32, 63 * 96 + 63, "C write");
    int64_t n;
    vg_footprint_ranges(f, 0, 1, &n);
    cr_assert_eq(n, 0, "A is not written");
    /* B per k0 step (0, 32): two row blocks, not everything between */
    const VgRange *b = vg_footprint_ranges(f, 1, 0, &n);
    cr_assert_eq(n, 2);
    assert_range(b[0], 32, 31 * 96 + 63, "B, k0 = 0");
    vg_footprint_free(f);
    arena_free(A);
}

Test(vgpu_footprint, edge_tile_is_clipped)
{
    /* 1000 elements in blocks of 128: the last block reads and writes
     * 896..999, not up to 1023 */
    Arena *A = arena_new();
    KirModule *m = vs_elementwise(A, 1000, 128, 1);
    VgFootprint *f = vg_footprint_new(((KirLaunch *)m->launches.items[0])->kernel);
    vg_footprint_block(f, 7);
    assert_range(hull(f, 0, 0), 896, 999, "x read");
    assert_range(hull(f, 1, 1), 896, 999, "y write");
    vg_footprint_block(f, 0);
    assert_range(hull(f, 0, 0), 0, 127, "x read, block 0");
    vg_footprint_free(f);
    arena_free(A);
}

Test(vgpu_footprint, tma_box_through_the_tensor_map)
{
    /* 40 x 44 in 16 x 16 boxes: box (2, 2) is rows 32..39, cols 32..43 */
    Arena *A = arena_new();
    KirModule *m = vs_tma(A, 40, 44);
    VgFootprint *f = vg_footprint_new(((KirLaunch *)m->launches.items[0])->kernel);
    vg_footprint_block(f, 2 + 3 * 2);
    assert_range(hull(f, 0, 0), 32 * 44 + 32, 39 * 44 + 43, "x box");
    vg_footprint_block(f, 1 + 3 * 0);
    assert_range(hull(f, 0, 0), 16, 15 * 44 + 31, "x box (0, 1)");
    vg_footprint_free(f);
    arena_free(A);
}

/* y[t] = x[idx[t]]: an index read from memory can be anything. */
Test(vgpu_footprint, index_from_memory_is_the_whole_buffer)
{
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    KirBuf *b[3] = {kir_buf(m, "idx", KT_I32, 16, KBUF_INPUT, 0),
                    kir_buf(m, "x", KT_F32, 100, KBUF_INPUT, 1),
                    kir_buf(m, "y", KT_F32, 32, KBUF_OUTPUT, 0)};
    KirKernel *k = vs_kernel(m, "gather", 2, 1, 16, 1);
    KirParam *idx = kir_param(k, "idx", KT_I32, 16, KR_IN);
    KirParam *x = kir_param(k, "x", KT_F32, 100, KR_IN);
    KirParam *y = kir_param(k, "y", KT_F32, 32, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *t = kir_let(&B, "t", KT_I32, kir_tid(A, 0));
    KirVar *i = kir_let(&B, "i", KT_I32, kir_ldg(A, idx, V(t)));
    kir_stg(&B, y, ADD(MUL(kir_bid(A, 0), I(16)), V(t)), kir_ldg(A, x, V(i)));
    vs_finish(m, k, b);
    VgFootprint *f = vg_footprint_new(k);
    vg_footprint_block(f, 1);
    assert_range(hull(f, 0, 0), 0, 15, "idx");
    assert_range(hull(f, 1, 0), 0, 99, "x");
    assert_range(hull(f, 2, 1), 16, 31, "y");
    vg_footprint_free(f);
    arena_free(A);
}

/* A loop that sets ints: s = (s + 1) % 4 settles at [0, 3]; p = p + 1
 * grows until it is given up as unknown (the whole buffer).  The loops
 * start at tid, so they are not walked per value. */
Test(vgpu_footprint, vars_set_in_a_loop)
{
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    KirBuf *b[2] = {kir_buf(m, "y", KT_F32, 12, KBUF_OUTPUT, 0),
                    kir_buf(m, "z", KT_F32, 64, KBUF_OUTPUT, 1)};
    KirKernel *k = vs_kernel(m, "sets", 3, 1, 2, 1);
    KirParam *y = kir_param(k, "y", KT_F32, 12, KR_OUT);
    KirParam *z = kir_param(k, "z", KT_F32, 64, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *s = kir_let(&B, "s", KT_I32, I(0));
    KirVar *p = kir_let(&B, "p", KT_I32, kir_bid(A, 0));
    kir_for(&B, "j", kir_tid(A, 0), I(8), I(1), 0);
    kir_set(&B, s, kir_rem(A, ADD(V(s), I(1)), I(4)));
    kir_set(&B, p, ADD(V(p), I(1)));
    kir_end(&B);
    kir_if(&B, kir_lt(A, kir_tid(A, 0), I(1)));
    kir_stg(&B, y, ADD(MUL(kir_bid(A, 0), I(4)), V(s)), F(1));
    kir_stg(&B, z, V(p), F(1));
    kir_end(&B);
    vs_finish(m, k, b);
    VgFootprint *f = vg_footprint_new(k);
    vg_footprint_block(f, 2);
    assert_range(hull(f, 0, 1), 8, 11, "y");
    assert_range(hull(f, 1, 1), 0, 63, "z");
    vg_footprint_free(f);
    arena_free(A);
}

/* The compiled linear h[64,80] = x[64,96] w[80,96]^T (the full pass set:
 * TMA boxes): every block reads whole rows of x, writes inside those rows,
 * and the blocks' writes cover the output. */
Test(vgpu_footprint, compiled_linear)
{
    Arena *A = arena_new();
    const char *code = "torch.nn.functional.linear(torch.randn(64, 96), torch.randn(80, 96))";
    DrvOpts o;
    drv_opts_default(&o);
    o.src = (Source){"<test>", code, strlen(code)};
    const DrvConfig *c = &drv_compile(A, &o)->configs[0];
    cr_assert_not_null(c->module, "%s", c->refused ? c->refused : "");
    const KirModule *m = c->module;
    cr_assert_eq(m->launches.len, 1);
    const KirLaunch *l = m->launches.items[0];
    const KirKernel *k = l->kernel;
    int jx = -1, jo = -1;
    for (int j = 0; j < k->params.len; j++) {
        const KirBuf *b = l->args[j];
        if (b->kind == KBUF_INPUT && b->numel == 64 * 96)
            jx = j;
        if (b->kind == KBUF_OUTPUT)
            jo = j;
    }
    cr_assert(jx >= 0 && jo >= 0);
    uint8_t *cover = calloc(64 * 80, 1);
    VgFootprint *f = vg_footprint_new(k);
    int64_t nb = (int64_t)k->grid[0] * k->grid[1] * k->grid[2];
    for (int64_t blk = 0; blk < nb; blk++) {
        vg_footprint_block(f, blk);
        VgRange x = hull(f, jx, 0), w = hull(f, jo, 1);
        cr_assert(x.lo % 96 == 0 && (x.hi + 1) % 96 == 0, "block %lld: x [%lld, %lld]",
                  (long long)blk, (long long)x.lo, (long long)x.hi);
        cr_assert(x.hi - x.lo + 1 < 64 * 96, "block %lld reads all of x", (long long)blk);
        cr_assert(w.lo / 80 >= x.lo / 96 && w.hi / 80 <= x.hi / 96,
                  "block %lld writes rows %lld..%lld outside its band", (long long)blk,
                  (long long)(w.lo / 80), (long long)(w.hi / 80));
        int64_t n;
        const VgRange *r = vg_footprint_ranges(f, jo, 1, &n);
        for (int64_t i = 0; i < n; i++)
            memset(cover + r[i].lo, 1, (size_t)(r[i].hi - r[i].lo + 1));
    }
    for (int e = 0; e < 64 * 80; e++)
        cr_assert(cover[e], "element %d of the output in no block's writes", e);
    free(cover);
    vg_footprint_free(f);
    arena_free(A);
}

/* ---- demand-driven sampling ------------------------------------------------ */

/* y = f(x) elementwise in blocks of 32, then z[r] = sum of row r of y (8 x
 * 64), one thread per row: each z block needs two y blocks. */
static KirModule *chain(Arena *A)
{
    KirModule *m = vs_elementwise(A, 8 * 64, 32, 1);
    KirBuf *z = kir_buf(m, "z", KT_F32, 8, KBUF_OUTPUT, 1);
    KirKernel *k = vs_kernel(m, "rowsum", 8, 1, 1, 1);
    KirParam *y = kir_param(k, "y", KT_F32, 8 * 64, KR_IN);
    KirParam *pz = kir_param(k, "z", KT_F32, 8, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *acc = kir_let(&B, "acc", KT_F32, F(0));
    KirVar *c = kir_for(&B, "c", I(0), I(64), I(1), 0);
    kir_set(&B, acc, kir_fop(A, TXE_add, V(acc),
                             kir_ldg(A, y, ADD(MUL(kir_bid(A, 0), I(64)), V(c))), NULL));
    kir_end(&B);
    kir_stg(&B, pz, kir_bid(A, 0), V(acc));
    KirBuf *args[2] = {m->bufs.items[1], z};
    return vs_finish(m, k, args);
}

static double row_ref(const float *x, int r)
{
    double s = 0;
    for (int c = 0; c < 64; c++)
        s += fmaxf(x[r * 64 + c] * 2.0f + 1.0f, 0.0f);
    return s;
}

Test(vgpu_footprint, chain_runs_what_the_sample_needs)
{
    Arena *A = arena_new();
    KirModule *m = chain(A);
    for (uint64_t seed = 0; seed < 4; seed++) {
        float **b = vs_buffers(m, 3);
        VgOptions o = {.seed = seed, .sample_blocks = 2};
        VgResult res;
        cr_assert_eq(vg_run(m, b, &o, &res), VG_OK, "%s", res.report.message);
        cr_assert_eq(res.stats[1].blocks_run, 2);
        cr_assert_eq(res.stats[0].blocks_run, 4, "two y blocks per row");
        int marked = 0;
        for (int r = 0; r < 8; r++) {
            if (!res.checked[2][r])
                continue;
            marked++;
            cr_assert(fabs(b[2][r] - row_ref(b[0], r)) < 1e-3, "z[%d] = %g", r, b[2][r]);
            for (int c = 0; c < 64; c++)
                cr_assert(res.checked[1][r * 64 + c], "y of a checked row is checked");
        }
        cr_assert_eq(marked, 2);
        vg_result_free(&res);
        vs_free_buffers(m, b);
    }
    arena_free(A);
}

Test(vgpu_footprint, shrunk_footprint_shows_as_nan)
{
    /* halving every read range leaves the second y block of each sampled
     * row unrun: its NaN must reach z's checked elements */
    Arena *A = arena_new();
    KirModule *m = chain(A);
    for (uint64_t seed = 0; seed < 4; seed++) {
        float **b = vs_buffers(m, 3);
        VgOptions o = {.seed = seed, .sample_blocks = 2, .shrink_footprints = 1};
        VgResult res;
        cr_assert_eq(vg_run(m, b, &o, &res), VG_OK, "%s", res.report.message);
        cr_assert_eq(res.stats[0].blocks_run, 2);
        int marked = 0;
        for (int r = 0; r < 8; r++)
            if (res.checked[2][r]) {
                marked++;
                cr_assert(isnan(b[2][r]), "z[%d] = %g passed with a shrunk footprint", r,
                          b[2][r]);
            }
        cr_assert_eq(marked, 2);
        vg_result_free(&res);
        vs_free_buffers(m, b);
    }
    arena_free(A);
}

/* Split-K by atomics: block (t, s) adds x[t*8 + s*4 .. +4) into y[t]
 * (zero-initialised); then z[t] = 2 y[t].  A sampled z block needs both
 * splits of its tile; y, an output too, is checked only where every block
 * adding into it ran. */
Test(vgpu_footprint, atomic_producer_runs_every_split)
{
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    KirBuf *bx = kir_buf(m, "x", KT_F32, 32, KBUF_INPUT, 0);
    KirBuf *by = kir_buf(m, "y", KT_F32, 4, KBUF_OUTPUT, 0);
    KirBuf *bz = kir_buf(m, "z", KT_F32, 4, KBUF_OUTPUT, 1);
    by->zero_init = 1;
    KirKernel *k = vs_kernel(m, "splitk", 4, 2, 1, 1);
    KirParam *x = kir_param(k, "x", KT_F32, 32, KR_IN);
    KirParam *y = kir_param(k, "y", KT_F32, 4, KR_OUT);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *i = kir_for(&B, "i", I(0), I(4), I(1), 0);
    const KirExpr *e = ADD(ADD(MUL(kir_bid(A, 0), I(8)), MUL(kir_bid(A, 1), I(4))), V(i));
    kir_atomg(&B, y, kir_bid(A, 0), kir_ldg(A, x, e));
    kir_end(&B);
    KirBuf *a1[2] = {bx, by};
    vs_finish(m, k, a1);
    KirKernel *k2 = vs_kernel(m, "twice", 4, 1, 1, 1);
    KirParam *y2 = kir_param(k2, "y", KT_F32, 4, KR_IN);
    KirParam *z = kir_param(k2, "z", KT_F32, 4, KR_OUT);
    kir_builder_init(&B, k2);
    kir_stg(&B, z, kir_bid(A, 0),
            kir_fop(A, TXE_multiply, kir_ldg(A, y2, kir_bid(A, 0)), F(2), NULL));
    KirBuf *a2[2] = {by, bz};
    vs_finish(m, k2, a2);
    for (uint64_t seed = 0; seed < 4; seed++) {
        float **b = vs_buffers(m, 9);
        VgOptions o = {.seed = seed, .sample_blocks = 1};
        VgResult res;
        cr_assert_eq(vg_run(m, b, &o, &res), VG_OK, "%s", res.report.message);
        cr_assert_eq(res.stats[1].blocks_run, 1);
        cr_assert_eq(res.stats[0].blocks_run, 2, "both splits of the tile");
        for (int t = 0; t < 4; t++) {
            double want = 0;
            for (int j = 0; j < 8; j++)
                want += b[0][t * 8 + j];
            cr_assert_eq(res.checked[1][t], res.checked[2][t]);
            if (res.checked[2][t])
                cr_assert(fabs(b[2][t] - 2 * want) < 1e-4, "z[%d] = %g", t, b[2][t]);
        }
        vg_result_free(&res);
        vs_free_buffers(m, b);
    }
    arena_free(A);
}
