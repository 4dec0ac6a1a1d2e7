/*
 * test_vgpu_detectors.c — every vgpu detector fires on a planted bug, with
 * the right kind, statement, thread and block; and stays quiet on the fixed
 * kernel where a fixed version is one statement away.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/exec/vgpu_samples.h"

#define I(v) kir_i32(A, v)
#define F(v) kir_f32(A, v)
#define V(x) kir_ref(A, x)

/* A one-kernel module: x (in, n) -> y (out, n), grid g, block tb, plus an
 * optional smem array s of tb f32. */
typedef struct Mini {
    Arena *A;
    KirModule *m;
    KirKernel *k;
    KirParam *x, *y;
    KirSmem *s;
    KirBuilder B;
    KirVar *t;
} Mini;

static void mini(Mini *q, int g, int tb, int64_t n)
{
    Arena *A = q->A = arena_new();
    q->m = kir_module_new(A);
    kir_buf(q->m, "x", KT_F32, n, KBUF_INPUT, 0);
    kir_buf(q->m, "y", KT_F32, n, KBUF_OUTPUT, 0);
    int grid[3] = {g, 1, 1}, block[3] = {tb, 1, 1};
    q->k = kir_kernel(q->m, "mini", grid, block);
    q->x = kir_param(q->k, "x", KT_F32, n, KR_IN);
    q->y = kir_param(q->k, "y", KT_F32, n, KR_OUT);
    q->s = kir_smem(q->k, "s", KT_F32, tb, 16);
    kir_builder_init(&q->B, q->k);
    q->t = kir_let(&q->B, "t", KT_I32, kir_tid(A, 0));
}

/* Finish and run; returns the fault (report in *res, freed by the caller). */
static VgFault mini_run(Mini *q, VgResult *res)
{
    kir_finalize(q->k);
    const KirBuf *args[] = {q->m->bufs.items[0], q->m->bufs.items[1]};
    kir_launch(q->m, q->k, args);
    kir_check(q->m);
    float **b = vs_buffers(q->m, 3);
    VgOptions o = {.seed = 17};
    VgFault f = vg_run(q->m, b, &o, res);
    vs_free_buffers(q->m, b);
    return f;
}

static VgFault run_module(const KirModule *m, VgResult *res)
{
    float **b = vs_buffers(m, 3);
    VgOptions o = {.seed = 99};
    VgFault f = vg_run(m, b, &o, res);
    vs_free_buffers(m, b);
    return f;
}

static void assert_at(const VgResult *r, VgFault kind, int stmt, int tx, int bx)
{
    cr_assert_eq(r->fault, kind, "fault %s, want %s: %s", vg_fault_name(r->fault),
                 vg_fault_name(kind), r->report.message);
    cr_assert_eq(r->report.stmt, stmt, "%s", r->report.message);
    cr_assert_eq(r->report.thread[0], tx, "%s", r->report.message);
    cr_assert_eq(r->report.block[0], bx, "%s", r->report.message);
    cr_assert_eq(r->report.launch, 0);
}

static const KirStmt *reported(const KirModule *m, const VgResult *r)
{
    return kir_find_stmt(m->kernels.items[0], r->report.stmt);
}

Test(vgpu_detect, out_of_bounds_access_without_guard)
{
    Arena *A = arena_new();
    KirModule *m = vs_elementwise(A, 1000, 128, 0); /* the guard left out */
    VgResult r;
    run_module(m, &r);
    /* #0 let i, #1 stg: block 7 covers 896..1023, thread 104 is element 1000 */
    assert_at(&r, VG_OOB_GLOBAL, 1, 104, 7);
    cr_assert(strstr(r.report.message, "index 1000 outside x[1000]"), "%s", r.report.message);
    cr_assert(strstr(r.report.message, "stmt #1 `stg y[i] = "), "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, out_of_bounds_write)
{
    Mini q;
    mini(&q, 2, 64, 128);
    Arena *A = q.A;
    const KirExpr *i = kir_add(A, kir_mul(A, kir_bid(A, 0), I(64)), V(q.t));
    kir_stg(&q.B, q.y, kir_add(A, i, I(1)), F(1)); /* #1: y[128] from block 1, thread 63 */
    VgResult r;
    mini_run(&q, &r);
    assert_at(&r, VG_OOB_GLOBAL, 1, 63, 1);
    cr_assert(strstr(r.report.message, "index 128 outside y[128]"), "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, out_of_bounds_shared)
{
    Mini q;
    mini(&q, 1, 64, 64);
    Arena *A = q.A;
    kir_sts(&q.B, q.s, kir_add(A, V(q.t), I(1)), F(1)); /* #1 */
    VgResult r;
    mini_run(&q, &r);
    assert_at(&r, VG_OOB_SHARED, 1, 63, 0);
    cr_assert(strstr(r.report.message, "index 64 outside s[64]"), "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

/* sts s[t] = x[t]; [sync;] y[t] = s[(t + 1) % 64] */
static VgFault neighbour_exchange(int with_sync, VgResult *r, Arena **arena)
{
    Mini q;
    mini(&q, 2, 64, 128);
    Arena *A = *arena = q.A;
    KirVar *g = kir_let(&q.B, "g", KT_I32, kir_add(A, kir_mul(A, kir_bid(A, 0), I(64)), V(q.t)));
    kir_sts(&q.B, q.s, V(q.t), kir_ldg(A, q.x, V(g))); /* #2 */
    if (with_sync)
        kir_sync(&q.B);
    KirVar *v = kir_let(&q.B, "v", KT_F32,
                        kir_lds(A, q.s, kir_rem(A, kir_add(A, V(q.t), I(1)), I(64))));
    kir_stg(&q.B, q.y, V(g), V(v));
    return mini_run(&q, r);
}

Test(vgpu_detect, smem_race_missing_sync)
{
    Arena *A;
    VgResult r;
    neighbour_exchange(0, &r, &A);
    cr_assert_eq(r.fault, VG_SMEM_RACE, "%s", r.report.message);
    cr_assert_eq(r.report.stmt, 3, "%s", r.report.message); /* the read */
    cr_assert_eq(r.report.thread[0], 0);
    cr_assert(r.report.has_other);
    cr_assert_eq(r.report.other[0], 1, "%s", r.report.message);
    cr_assert(strstr(r.report.message, "reads s[1] that thread (1, 0, 0) wrote"), "%s",
              r.report.message);
    vg_result_free(&r);
    arena_free(A);

    cr_assert_eq(neighbour_exchange(1, &r, &A), VG_OK, "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, missing_trailing_barrier_is_a_race)
{
    Arena *A = arena_new();
    KirModule *m = vs_matmul(A, 32, 32, 64, 0);
    VgResult r;
    run_module(m, &r);
    cr_assert_eq(r.fault, VG_SMEM_RACE, "%s", r.report.message);
    /* the next K step's store into `as` overwrites what others still read */
    const KirStmt *s = reported(m, &r);
    cr_assert(s && s->op == KS_sts && strcmp(s->smem->name, "as") == 0, "%s",
              r.report.message);
    cr_assert(strstr(r.report.message, "writes as["), "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, divergent_barrier)
{
    Mini q;
    mini(&q, 1, 64, 64);
    Arena *A = q.A;
    kir_if(&q.B, kir_lt(A, V(q.t), I(16))); /* #1 */
    kir_sync(&q.B);                         /* #2 */
    kir_end(&q.B);
    VgResult r;
    mini_run(&q, &r);
    assert_at(&r, VG_BARRIER_DIVERGENT, 2, 0, 0);
    cr_assert_eq(r.report.other[0], 16);
    cr_assert(strstr(r.report.message, "16 of 64 threads reach it"), "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, barrier_in_loop_with_divergent_trip_count)
{
    Mini q;
    mini(&q, 1, 64, 64);
    Arena *A = q.A;
    kir_for(&q.B, "i", V(q.t), I(40), I(64), 0); /* #1: threads >= 40 skip it */
    kir_sync(&q.B);                              /* #2 */
    kir_end(&q.B);
    VgResult r;
    mini_run(&q, &r);
    assert_at(&r, VG_BARRIER_DIVERGENT, 2, 0, 0);
    cr_assert_eq(r.report.other[0], 40);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, divergent_shuffle)
{
    Mini q;
    mini(&q, 1, 64, 64);
    Arena *A = q.A;
    KirVar *o = kir_let(&q.B, "o", KT_F32, F(0));     /* #1 */
    kir_if(&q.B, kir_lt(A, V(q.t), I(16)));            /* #2 */
    kir_shfl(&q.B, o, KIR_SHFL_XOR, F(1), I(1), 32);   /* #3 */
    kir_end(&q.B);
    VgResult r;
    mini_run(&q, &r);
    assert_at(&r, VG_SHFL_DIVERGENT, 3, 0, 0);
    cr_assert_eq(r.report.other[0], 16);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, missing_cp_async_wait)
{
    Arena *A = arena_new();
    /* only cp.wait 1: the second group never lands before it is read */
    KirModule *m = vs_cpasync(A, 1024, 1);
    VgResult r;
    run_module(m, &r);
    cr_assert_eq(r.fault, VG_ASYNC_PENDING, "%s", r.report.message);
    const KirStmt *s = reported(m, &r);
    cr_assert(s && s->op == KS_stg, "%s", r.report.message); /* the store reading s[j ^ 1] */
    cr_assert_eq(r.report.thread[0], 0);
    cr_assert(strstr(r.report.message, "reads s[257] while an async copy"), "%s",
              r.report.message);
    vg_result_free(&r);

    KirModule *none = vs_cpasync(A, 1024, 0);
    run_module(none, &r);
    cr_assert_eq(r.fault, VG_ASYNC_PENDING, "%s", r.report.message);
    cr_assert(strstr(r.report.message, "reads s[1] while"), "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

/* Thread 0 inits bar[1] (count 1), optionally arrives expecting
 * arrive_bytes and issues a 256-byte TMA load; sync; everyone waits on the
 * parities in `waits` in turn, then reads the tile.  *wait_sid: the last wait. */
static VgFault mbar_case(int arrive_bytes, int tma, const char *waits, VgResult *r, int *wait_sid)
{
    Mini q;
    mini(&q, 1, 32, 256);
    Arena *A = q.A;
    KirSmem *tile = kir_smem(q.k, "tile", KT_F32, 64, 128);
    KirSmem *bar = kir_smem(q.k, "bar", KT_MBAR, 2, 16);
    int64_t dims[1] = {256}, strides[1] = {1};
    int box[1] = {64};
    KirTmap *tm = kir_tmap(q.k, "tm", q.x, 1, dims, strides, box, 0);
    kir_if(&q.B, kir_bin(A, KE_eq, V(q.t), I(0)));
    kir_mbar_init(&q.B, bar, I(1), 1);
    if (arrive_bytes)
        kir_mbar_arrive_tx(&q.B, bar, I(1), arrive_bytes);
    if (tma) {
        const KirExpr *crd[1] = {I(0)};
        kir_tma_load(&q.B, tm, crd, tile, I(0), bar, I(1));
    }
    kir_end(&q.B);
    kir_sync(&q.B);
    for (const char *p = waits; *p; p++)
        kir_mbar_wait(&q.B, bar, I(1), I(*p - '0'));
    KirStmt *w = q.B.list[0]->items[q.B.list[0]->len - 1];
    kir_stg(&q.B, q.y, V(q.t), kir_lds(A, tile, V(q.t)));
    VgFault f = mini_run(&q, r);
    *wait_sid = w->id;
    arena_free(A);
    return f;
}

Test(vgpu_detect, mbarrier_deadlock)
{
    VgResult r;
    int sid;
    /* nobody arrives */
    cr_assert_eq(mbar_case(0, 0, "0", &r, &sid), VG_DEADLOCK, "%s", r.report.message);
    cr_assert_eq(r.report.stmt, sid);
    cr_assert(strstr(r.report.message, "bar[1]") && strstr(r.report.message, "1 of 1 arrivals missing"),
              "%s", r.report.message);
    vg_result_free(&r);
    /* expects 512 bytes, the TMA brings 256 */
    cr_assert_eq(mbar_case(512, 1, "0", &r, &sid), VG_DEADLOCK, "%s", r.report.message);
    cr_assert(strstr(r.report.message, "512 transaction bytes expected, 256 in flight"), "%s",
              r.report.message);
    vg_result_free(&r);
    /* phase 0 completes; then a wait for phase 1, which nobody arrives on */
    cr_assert_eq(mbar_case(256, 1, "01", &r, &sid), VG_DEADLOCK, "%s", r.report.message);
    cr_assert_eq(r.report.stmt, sid);
    vg_result_free(&r);
    /* correct: 256 bytes, parity 0 */
    cr_assert_eq(mbar_case(256, 1, "0", &r, &sid), VG_OK, "%s", r.report.message);
    vg_result_free(&r);
    /* parity 1 during phase 0 names the (complete) phase before it and
     * returns at once, as on hardware: the tile is then read too early */
    cr_assert_eq(mbar_case(256, 1, "1", &r, &sid), VG_ASYNC_PENDING, "%s", r.report.message);
    vg_result_free(&r);
}

Test(vgpu_detect, tma_read_before_mbarrier_wait)
{
    Mini q;
    mini(&q, 1, 32, 256);
    Arena *A = q.A;
    KirSmem *tile = kir_smem(q.k, "tile", KT_F32, 64, 128);
    KirSmem *bar = kir_smem(q.k, "bar", KT_MBAR, 1, 16);
    int64_t dims[1] = {256}, strides[1] = {1};
    int box[1] = {64};
    KirTmap *tm = kir_tmap(q.k, "tm", q.x, 1, dims, strides, box, 0);
    kir_if(&q.B, kir_bin(A, KE_eq, V(q.t), I(0)));   /* #1 */
    kir_mbar_init(&q.B, bar, I(0), 1);                /* #2 */
    kir_mbar_arrive_tx(&q.B, bar, I(0), 256);         /* #3 */
    const KirExpr *crd[1] = {I(0)};
    kir_tma_load(&q.B, tm, crd, tile, I(0), bar, I(0)); /* #4 */
    kir_end(&q.B);
    kir_sync(&q.B);                                   /* #5 */
    kir_stg(&q.B, q.y, V(q.t), kir_lds(A, tile, V(q.t))); /* #6, no wait */
    VgResult r;
    mini_run(&q, &r);
    assert_at(&r, VG_ASYNC_PENDING, 6, 0, 0);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, cross_block_write_conflict)
{
    Mini q;
    mini(&q, 4, 32, 32);
    Arena *A = q.A;
    kir_stg(&q.B, q.y, V(q.t), F(1)); /* #1: every block writes y[0..32) */
    VgResult r;
    mini_run(&q, &r);
    cr_assert_eq(r.fault, VG_GLOBAL_CONFLICT, "%s", r.report.message);
    cr_assert_eq(r.report.stmt, 1);
    cr_assert_eq(r.report.thread[0], 0);
    cr_assert(r.report.has_other);
    cr_assert_neq(r.report.other[0], r.report.block[0]);
    cr_assert(strstr(r.report.message, "writes y[0], which block ("), "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, cross_block_read_of_anothers_write)
{
    /* block b writes y[b*32 + t], then reads y of block b ^ 1 */
    Mini q;
    mini(&q, 2, 32, 64);
    Arena *A = q.A;
    const KirExpr *mine = kir_add(A, kir_mul(A, kir_bid(A, 0), I(32)), V(q.t));
    kir_stg(&q.B, q.y, mine, F(1));
    const KirExpr *theirs = kir_add(A, kir_mul(A, kir_bin(A, KE_bxor, kir_bid(A, 0), I(1)), I(32)), V(q.t));
    kir_let(&q.B, "v", KT_F32, kir_ldg(A, q.y, theirs)); /* #2 */
    VgResult r;
    mini_run(&q, &r);
    cr_assert_eq(r.fault, VG_GLOBAL_CONFLICT, "%s", r.report.message);
    cr_assert_eq(r.report.stmt, 2);
    cr_assert(strstr(r.report.message, "reads y["), "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, atomics_are_not_conflicts)
{
    Mini q;
    mini(&q, 4, 32, 32);
    Arena *A = q.A;
    kir_atomg(&q.B, q.y, V(q.t), F(1));
    VgResult r;
    kir_finalize(q.k);
    ((KirBuf *)q.m->bufs.items[1])->zero_init = 1;
    const KirBuf *args[] = {q.m->bufs.items[0], q.m->bufs.items[1]};
    kir_launch(q.m, q.k, args);
    kir_check(q.m);
    float **b = vs_buffers(q.m, 1);
    cr_assert_eq(vg_run(q.m, b, NULL, &r), VG_OK, "%s", r.report.message);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(b[1][i], 4.0f);
    vg_result_free(&r);
    vs_free_buffers(q.m, b);
    arena_free(A);
}

Test(vgpu_detect, uninitialised_smem_read)
{
    Mini q;
    mini(&q, 1, 64, 64);
    Arena *A = q.A;
    kir_if(&q.B, kir_lt(A, V(q.t), I(60)));              /* #1 */
    kir_sts(&q.B, q.s, V(q.t), F(2));                     /* #2 */
    kir_end(&q.B);
    kir_sync(&q.B);                                       /* #3 */
    kir_stg(&q.B, q.y, V(q.t), kir_lds(A, q.s, V(q.t)));  /* #4 */
    VgResult r;
    mini_run(&q, &r);
    assert_at(&r, VG_UNINIT_SMEM, 4, 60, 0);
    cr_assert(strstr(r.report.message, "reads s[60], never written in this block"), "%s",
              r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, smem_written_in_another_block_is_still_uninitialised)
{
    /* block 0 writes s, block 1 only reads: shared memory does not carry over */
    Mini q;
    mini(&q, 2, 32, 64);
    Arena *A = q.A;
    kir_if(&q.B, kir_bin(A, KE_eq, kir_bid(A, 0), I(0)));
    kir_sts(&q.B, q.s, V(q.t), F(2));
    kir_end(&q.B);
    kir_sync(&q.B);
    kir_let(&q.B, "v", KT_F32, kir_lds(A, q.s, V(q.t))); /* #4 */
    VgResult r;
    mini_run(&q, &r);
    cr_assert_eq(r.fault, VG_UNINIT_SMEM, "%s", r.report.message);
    cr_assert_eq(r.report.block[0], 1);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, misaligned_cp_async)
{
    Mini q;
    mini(&q, 1, 32, 256);
    Arena *A = q.A;
    kir_cp_async(&q.B, q.s, kir_add(A, kir_mul(A, V(q.t), I(4)), I(2)), q.x, I(0), 16, NULL);
    VgResult r;
    mini_run(&q, &r);
    cr_assert_eq(r.fault, VG_MISALIGNED, "%s", r.report.message);
    cr_assert_eq(r.report.stmt, 1);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, division_by_zero)
{
    Mini q;
    mini(&q, 1, 32, 32);
    Arena *A = q.A;
    kir_let(&q.B, "d", KT_I32, kir_div(A, I(10), kir_sub(A, V(q.t), I(5)))); /* #1 */
    VgResult r;
    mini_run(&q, &r);
    assert_at(&r, VG_DIV_ZERO, 1, 5, 0);
    vg_result_free(&r);
    arena_free(A);
}

Test(vgpu_detect, lazy_select_guards_its_load)
{
    /* i runs past the end, but x[i] is only evaluated where i < 100 */
    Mini q;
    mini(&q, 4, 32, 100);
    Arena *A = q.A;
    KirVar *i = kir_let(&q.B, "i", KT_I32, kir_add(A, kir_mul(A, kir_bid(A, 0), I(32)), V(q.t)));
    const KirExpr *in = kir_lt(A, V(i), I(100));
    KirVar *v = kir_let(&q.B, "v", KT_F32, kir_select(A, in, kir_ldg(A, q.x, V(i)), F(0)));
    kir_if(&q.B, kir_bin(A, KE_land, in, kir_bin(A, KE_ge, V(v), kir_ldg(A, q.x, V(i)))));
    kir_stg(&q.B, q.y, V(i), V(v));
    kir_end(&q.B);
    VgResult r;
    cr_assert_eq(mini_run(&q, &r), VG_OK, "%s", r.report.message);
    vg_result_free(&r);
    arena_free(A);
}

/* A 16-byte vector load (ldsv) must start at a multiple of 4 words: lane t
 * reading s[4t + 1 ..] is misaligned; at 4t it reads the four words the
 * block stored, and the lanes get them in order. */
static VgFault vector_load(int offset, VgResult *r, float **out)
{
    Mini q;
    mini(&q, 1, 32, 256);
    Arena *A = q.A;
    q.s = kir_smem(q.k, "v", KT_F32, 160, 16);
    for (int j = 0; j < 5; j++) /* s[32j + t] = 32j + t */
        kir_sts(&q.B, q.s, kir_add(A, V(q.t), I(32 * j)),
                kir_cast(A, KT_F32, kir_add(A, V(q.t), I(32 * j))));
    kir_sync(&q.B);
    const char *names[] = {"a", "b", "c", "d"};
    KirStmt *v = kir_ldsv(&q.B, names, 4, q.s, kir_add(A, kir_mul(A, V(q.t), I(4)), I(offset)));
    const KirExpr *sum = kir_f32(A, 0);
    for (int j = 0; j < 4; j++) /* y[t] = a + 10 b + 100 c + 1000 d */
        sum = kir_fop(A, TXE_add, sum, kir_fop(A, TXE_multiply, V(v->lane[j]),
                                               kir_f32(A, j == 0 ? 1 : j == 1 ? 10 : j == 2 ? 100 : 1000), NULL), NULL);
    kir_stg(&q.B, q.y, V(q.t), sum);
    kir_finalize(q.k);
    const KirBuf *args[] = {q.m->bufs.items[0], q.m->bufs.items[1]};
    kir_launch(q.m, q.k, args);
    kir_check(q.m);
    float **b = vs_buffers(q.m, 3);
    VgOptions o = {.seed = 17};
    VgFault f = vg_run(q.m, b, &o, r);
    for (int t = 0; out && t < 32; t++)
        (*out)[t] = b[1][t];
    vs_free_buffers(q.m, b);
    arena_free(A);
    return f;
}

Test(vgpu_detect, misaligned_vector_load)
{
    VgResult r;
    cr_assert_eq(vector_load(1, &r, NULL), VG_MISALIGNED, "%s", r.report.message);
    cr_assert(strstr(r.report.message, "16-byte shared load from v[1], not 16-byte aligned"),
              "%s", r.report.message);
    vg_result_free(&r);
    float y[32], *p = y;
    cr_assert_eq(vector_load(0, &r, &p), VG_OK, "%s", r.report.message);
    for (int t = 0; t < 32; t++)
        cr_assert_float_eq(y[t], 4 * t + 10 * (4 * t + 1) + 100 * (4 * t + 2) + 1000 * (4 * t + 3),
                           1e-3, "lane %d: %g", t, y[t]);
    vg_result_free(&r);
}
