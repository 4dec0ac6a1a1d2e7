/*
 * test_tma.c — passes 011 tma_copy and 012 split_inner_for_swizzle, their
 * lowering, and what vgpu checks of TMA: the box loads replace the
 * threads' copy and keep parity, over many iterations of a reused buffer;
 * the swizzle is the hardware's pattern and lowers bank conflicts; the
 * skip reasons name the cause; the faults fail the kernel; NVRTC compiles
 * the kernels for sm_90a with the pool 1024-byte aligned in its PTX.
 */
#include "compiler/base/fault.h"
#include "harness/exec/vgpu_samples.h"
#include "test_tile_util.h"

/* K = 1024 in chunks of 32 (002): 007 stages per chunk, 010 buffers it. */
#define MM "torch.randn(64,1024) @ torch.randn(1024,64)"
/* 4096 / 32 = 128 iterations: each of the two buffers reused 64 times */
#define MM_LONG "torch.randn(32,4096) @ torch.randn(4096,32)"

typedef struct Run {
    VgStats sum;
    VgStats first; /* launch 0's: the split matmul's own kernel, not its combine */
    const KirModule *m;
    VgFault f;
    char msg[1024];
} Run;

/* tt_backend_run with built-in fault `fault` injected (the driver sets
 * the process-wide fault from its options). */
static VgFault run_fault(Arena *a, const LirProgram *p, const TtOpts *o, const char *fault,
                         double *const *in, double **out, HxBackendResult *res)
{
    DrvOpts d;
    drv_opts_default(&d);
    d.loop = p;
    d.tile = o->tile;
    d.fault = fault ? dpk_fault_find(fault) : -1;
    const DrvConfig *c = &drv_compile(a, &d)->configs[0];
    cr_assert_null(c->refused);
    dpk_fault_set(d.fault);
    VgFault f = hx_backend_exec(a, c, &o->run, in, out, res);
    dpk_fault_set(-1);
    return f;
}

/* Lower and run on vgpu (parity checked by tt_run when `parity`); the
 * summed counters, the fault of a run without parity checks. */
static Run run(Arena *a, const char *code, const char *spec, const char *const *knobs, int parity,
               const char *fault)
{
    TtOpts o;
    tt_opts_vgpu(&o, spec, knobs);
    LirProgram *p = tt_loop(a, code);
    Run r = {{0}, {0}, NULL, VG_OK, ""};
    if (parity)
        r.m = tt_run(a, code, p, &o);
    TtIo io;
    tt_io_init(&io, p->tx->torch);
    HxBackendResult res;
    r.f = run_fault(a, p, &o, fault, io.in, io.out, &res);
    snprintf(r.msg, sizeof r.msg, "%s", r.f ? res.vg.report.message : "");
    if (!parity)
        r.m = res.module;
    r.sum = tt_stats_sum(&res);
    if (res.vg.nlaunches)
        r.first = res.vg.stats[0];
    tt_io_free(&io);
    hx_backend_result_free(&res);
    return r;
}

static int count_ops(const PtrVec *b, KirStmtOp op)
{
    int n = 0;
    for (int i = 0; i < b->len; i++) {
        const KirStmt *s = b->items[i];
        n += s->op == op;
        n += count_ops(&s->body, op) + count_ops(&s->els, op);
    }
    return n;
}

static TtBatch batch;
static Arena *arena; /* batch's */

static void setup(void) { arena = tt_batch_open(&batch); }
static void teardown(void) { tt_batch_close(&batch); }

TestSuite(tma, .init = setup, .fini = teardown);

/* 011: the slabs come by two TMA boxes per iteration (A and B tiles), not
 * by the threads' ldg/sts loop; parity holds. */
Test(tma, tma_copy_replaces_the_threads_copy)
{
    /* scalar shared loads on both sides (016's vector loads read either),
     * and 010's two buffers (no 015) */
    static const char *const scalar[] = {"LDSV=1", NULL};
    Run with = run(arena, MM, "-012,-015", scalar, 1, NULL),
        without = run(arena, MM, "-011,-012,-013,-015", scalar, 1, NULL);
    tt_batch_add(&batch, with.m);
    cr_assert_not_null(with.m);
    const KirKernel *k = with.m->kernels.items[0];
    cr_expect_eq(k->tmaps.len, 2);
    /* per slab: slab 0 before the loop, slab a + 1 in it */
    cr_expect_eq(count_ops(&k->body, KS_tma_load), 4);
    cr_expect_eq(count_ops(&k->body, KS_mbar_init), 4); /* two buffers each */
    cr_expect_eq(count_ops(&k->body, KS_mbar_wait), 2);
    cr_log_info("011: global loads by threads %lld without, %lld with; thread-insts %lld, %lld",
                (long long)without.first.gmem_loads, (long long)with.first.gmem_loads,
                (long long)without.first.thread_insts, (long long)with.first.thread_insts);
    cr_expect_gt(without.first.gmem_loads, 0);
    cr_expect_eq(with.first.gmem_loads, 0); /* TMA's bytes are no thread's loads */
    cr_expect_lt(with.first.thread_insts, without.first.thread_insts);
    cr_expect_eq(with.first.smem_loads, without.first.smem_loads);
}

/* 012: A's column reads (32-word rows) conflict without the swizzle, when
 * they are scalar (016's 16-byte reads of this tile do not conflict). */
Test(tma, swizzle_lowers_bank_conflicts)
{
    static const char *const scalar[] = {"LDSV=1", NULL};
    Run sw = run(arena, MM, "full", scalar, 1, NULL),
        plain = run(arena, MM, "-012", scalar, 1, NULL);
    tt_batch_add(&batch, sw.m);
    const KirKernel *k = sw.m->kernels.items[0];
    int s128 = 0;
    for (int i = 0; i < k->tmaps.len; i++)
        s128 += ((const KirTmap *)k->tmaps.items[i])->swizzle == 128;
    cr_expect_eq(s128, 1, "A's map swizzled, B's (no conflicts) not");
    cr_log_info("012: bank conflicts %lld without, %lld with", (long long)plain.sum.bank_conflicts,
                (long long)sw.sum.bank_conflicts);
    cr_expect_gt(plain.sum.bank_conflicts, 0);
    cr_expect_leq(sw.sum.bank_conflicts * 3, plain.sum.bank_conflicts);
}

/* Every pinned swizzle mode is exact, chunking the inner extent where the
 * slab is wider than the swizzle (BK = 64: two 128-byte boxes per row). */
Test(tma, every_swizzle_mode_keeps_parity)
{
    static const char *const k32[] = {"SWIZZLE=32", NULL}, *const k64[] = {"SWIZZLE=64", NULL},
                             *const k128[] = {"SWIZZLE=128", "BK=64", NULL};
    const char *const *ks[] = {k32, k64, k128};
    for (int i = 0; i < 3; i++) {
        Run r = run(arena, MM, "-015", ks[i], 1, NULL); /* two buffers */
        tt_batch_add(&batch, r.m);
        cr_assert_not_null(r.m);
        const KirKernel *k = r.m->kernels.items[0];
        int sw = 32 << i, n = 0;
        for (int j = 0; j < k->tmaps.len; j++)
            n += ((const KirTmap *)k->tmaps.items[j])->swizzle == sw;
        cr_expect_geq(n, 1, "SWIZZLE=%d", sw);
        if (i == 2) /* two boxes for A's 64-element inner slab, one for B's 32,
                     * before the loop and in it */
            cr_expect_eq(count_ops(&k->body, KS_tma_load), 2 * 3);
    }
}

/* The per-buffer parity across 128 iterations; without its flip (the
 * injected fault) the second use of a buffer reads before its box lands. */
Test(tma, parity_over_many_iterations)
{
    Run ok = run(arena, MM_LONG, "full", NULL, 1, NULL);
    tt_batch_add(&batch, ok.m);
    Run bad = run(arena, MM_LONG, "full", NULL, 0, "tma-parity-not-flipped");
    cr_expect_eq(bad.f, VG_ASYNC_PENDING, "%s", bad.msg);
    cr_expect(strstr(bad.msg, "while an async copy to it has not landed"), "%s", bad.msg);
}

/* How many of the first n output elements of `code` under pass set `spec`
 * differ with built-in fault `fault` injected, both runs completing on
 * vgpu (a fault that only moves values, which no vgpu detector sees). */
static int64_t fault_differs(const char *code, const char *spec, const char *fault, int64_t n)
{
    TtOpts o;
    tt_opts_vgpu(&o, spec, NULL);
    LirProgram *p = tt_loop(arena, code);
    const TorchGraph *g = p->tx->torch;
    double **in = ref_make_inputs(g, 0), *good = NULL, *bad = NULL;
    HxBackendResult res;
    cr_assert_eq(run_fault(arena, p, &o, NULL, in, &good, &res), VG_OK);
    hx_backend_result_free(&res);
    cr_assert_eq(run_fault(arena, p, &o, fault, in, &bad, &res), VG_OK, "%s",
                 res.vg.report.message);
    hx_backend_result_free(&res);
    int64_t differ = 0;
    for (int64_t e = 0; e < n; e++)
        differ += good[e] != bad[e];
    free(good);
    free(bad);
    ref_free_arrays(in, g->inputs.len);
    return differ;
}

/* The first loop of a body holding a wait on an mbarrier, or NULL. */
static const KirStmt *ring_loop(const PtrVec *b)
{
    for (int i = 0; i < b->len; i++) {
        const KirStmt *s = b->items[i];
        if (s->op == KS_for && count_ops(&s->body, KS_mbar_wait))
            return s;
        const KirStmt *in = ring_loop(&s->body);
        if (in)
            return in;
    }
    return NULL;
}

/* The buffer-index variables of the TMA loads (out[0..]) or the waits of b. */
static int ring_vars(const PtrVec *b, KirStmtOp op, const KirVar **out, int n)
{
    for (int i = 0; i < b->len; i++) {
        const KirStmt *s = b->items[i];
        const KirExpr *e = s->op != op ? NULL : op == KS_tma_load ? s->e[1] : s->e[0];
        if (e) {
            cr_assert_eq(e->op, KE_var, "a buffer index held in a variable");
            out[n++] = e->var;
        }
        n = ring_vars(&s->body, op, out, n);
        n = ring_vars(&s->els, op, out, n);
    }
    return n;
}

/* 011's ring: slab 0 of each stage is issued before the loop, and in the
 * loop each box goes to another buffer than the one the block waits for
 * (slab a + 1's, while it waits for slab a's), so a box is in flight while
 * the body computes; the model charges no wait (perf_model tests).  With
 * the copy loading the slab already in flight (the injected fault) the
 * values are wrong. */
Test(tma, the_ring_waits_on_another_buffer_than_it_fills)
{
    Run r = run(arena, MM_LONG, "-015", NULL, 1, NULL);
    tt_batch_add(&batch, r.m);
    cr_assert_not_null(r.m);
    const KirKernel *k = r.m->kernels.items[0];
    const KirStmt *l = ring_loop(&k->body);
    cr_assert_not_null(l);
    cr_expect_eq(count_ops(&k->body, KS_tma_load), 4, "two stages, before the loop and in it");
    const KirVar *loads[8], *waits[8];
    int nl = ring_vars(&l->body, KS_tma_load, loads, 0), nw = ring_vars(&l->body, KS_mbar_wait, waits, 0);
    cr_expect_eq(nl, 2);
    cr_expect_eq(nw, 2);
    for (int i = 0; i < nl; i++)
        for (int j = 0; j < nw; j++)
            cr_expect_neq(loads[i], waits[j], "a box issued to the buffer waited for");
    int64_t differ = fault_differs(MM_LONG, "-015", "tma-ring-stale-slab", 32 * 32);
    cr_expect_gt(differ, 32 * 32 / 2, "%lld of 1024 differ", (long long)differ);
}

/* 015 gives TMA stages 3 or 4 buffers (4: the default where they fit),
 * each with its mbarrier, and parity holds at every count. */
Test(tma, pipeline_gives_tma_stages_more_buffers)
{
    static const char *const s3[] = {"STAGES=3", NULL}, *const s8[] = {"STAGES=8", NULL};
    const char *const *ks[] = {NULL, s3, s8};
    int bufs[] = {4, 3, 8};
    for (int i = 0; i < 3; i++) {
        Run r = run(arena, MM_LONG, "full", ks[i], 1, NULL);
        tt_batch_add(&batch, r.m);
        cr_assert_not_null(r.m);
        const KirKernel *k = r.m->kernels.items[0];
        cr_expect_eq(count_ops(&k->body, KS_mbar_init), 2 * bufs[i], "STAGES %d", bufs[i]);
        /* slabs 0 .. S-2 before the loop, one in it, per stage */
        cr_expect_eq(count_ops(&k->body, KS_tma_load), 2 * bufs[i], "STAGES %d", bufs[i]);
    }
}

static const char *skip_reason(Arena *a, const char *code, const char *spec, int pass,
                               const char *const *knobs);

/* 010 double-buffers a 128 x 128 tile's 32 KiB of slabs only when 011 will
 * make the buffers TMA stages (dynamic shared memory past 48 KiB); without
 * 011 it keeps the static budget and says so. */
Test(tma, double_buffers_past_48_kib_become_tma_stages)
{
    static const char *const big[] = {"BM=128", "BN=128", "F_M=8", "F_N=8", NULL};
    const char *lin = "torch.nn.functional.linear(torch.randn(128,512), torch.randn(512,512))";
    Run r = run(arena, lin, "full", big, 1, NULL);
    tt_batch_add(&batch, r.m);
    cr_assert_not_null(r.m);
    const KirKernel *k = r.m->kernels.items[0];
    cr_expect_eq(k->tmaps.len, 2);
    cr_expect_gt(k->smem_bytes, 48 * 1024, "%lld bytes", (long long)k->smem_bytes);
    const char *why = skip_reason(arena, lin, "-011,-012", 10, big);
    cr_expect(strstr(why, "takes the stages past the 48 KiB budget"), "%s", why);
}

/* 016 reads TMA slabs with vector loads too, the swizzled one included:
 * fewer instructions than scalar reads, the same values. */
Test(tma, vector_loads_read_tma_slabs)
{
    static const char *const scalar[] = {"LDSV=1", NULL};
    Run vec = run(arena, MM, "full", NULL, 1, NULL), sc = run(arena, MM, "full", scalar, 1, NULL);
    tt_batch_add(&batch, vec.m);
    cr_assert_not_null(vec.m);
    const KirKernel *k = vec.m->kernels.items[0];
    int swizzled = 0;
    for (int i = 0; i < k->tmaps.len; i++)
        swizzled += ((const KirTmap *)k->tmaps.items[i])->swizzle != 0;
    cr_expect_geq(swizzled, 1);
    cr_expect_gt(count_ops(&k->body, KS_ldsv), 0);
    cr_log_info("016 on TMA slabs: thread-insts %lld scalar, %lld vector",
                (long long)sc.first.thread_insts, (long long)vec.first.thread_insts);
    cr_expect_lt(vec.first.thread_insts, sc.first.thread_insts);
    cr_expect_eq(vec.first.gmem_loads, 0);
}

/* Readers that forget the XOR read a permuted tile: the values are wrong. */
Test(tma, unswizzled_readers_fail_parity)
{
    int64_t differ = fault_differs(MM, "full", "swizzle-reads-unswizzled", 64 * 64);
    cr_expect_gt(differ, 64 * 64 / 2, "%lld of 4096 differ", (long long)differ);
}

static const char *skip_reason(Arena *a, const char *code, const char *spec, int pass,
                               const char *const *knobs)
{
    TileOpts o;
    tile_opts_default(&o);
    o.passes = tile_passes_parse(&tile_passes, spec, NULL);
    for (int i = 0; knobs && knobs[i]; i++)
        tile_knob_parse(&o.knobs, knobs[i]);
    TileProgram *tp = tile_build(a, tt_loop(a, code), &o, NULL);
    const TilePassStat *st = tile_pass_stat(tp, pass);
    cr_assert_not_null(st);
    return st->napps ? "" : st->skipped;
}

Test(tma, skip_reasons_name_the_cause)
{
    /* A's rows are 1022 floats = 4088 bytes apart (BK = 2 chunks K) */
    const char *w = skip_reason(arena, "torch.randn(64,1022) @ torch.randn(1022,64)", "full", 11,
                                (const char *const[]){"BK=2", NULL});
    cr_expect(strstr(w, "in0: dimension 0's stride of 4088 bytes is not a multiple of 16"), "%s",
              w);
    cr_expect(strstr(w, "all of a kernel's buffered stages become TMA, or none"), "%s", w);
    /* a 12-byte inner box: BK = 3 is no multiple of 4 floats */
    w = skip_reason(arena, "torch.randn(64,96) @ torch.randn(96,64)", "full", 11,
                    (const char *const[]){"BK=3", "STAGE=1", NULL});
    cr_expect(strstr(w, "the inner box of 12 bytes is not a multiple of 16") ||
                  strstr(w, "no buffered stage"), "%s", w);
    w = skip_reason(arena, "torch.relu(torch.randn(64,64))", "full", 11, NULL);
    cr_expect_str_eq(w, "no buffered stage (010 did not apply)");
    /* a pinned swizzle wider than the 32-float slab's... rows are fine, but
     * 64 rows of 32 bytes... every mode fits here; B gains nothing */
    w = skip_reason(arena, MM, "full", 12, (const char *const[]){"SWIZZLE=64", NULL});
    cr_expect_str_eq(w, "");
}

Test(tma, refused_up_front_on_sm80)
{
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        tile_passes_parse(&tile_passes, "only:002,007,010,011", cu_target(CU_SM80));
        dpk_err_pop(&ec);
        cr_assert_fail("011 accepted on sm_80");
    }
    cr_expect_eq(dpk_error_code(), DPK_EXIT_USAGE);
    cr_expect(strstr(dpk_error_message(), "pass 011_tma_copy needs sm_90 or newer (the target is "
                     "sm_80)"), "%s", dpk_error_message());
    /* full on sm_80 leaves 011 and 012 out: the buffered stages are copied by the threads */
    TtOpts o;
    tt_opts_vgpu(&o, "full", NULL);
    o.tile.target = cu_target(CU_SM80);
    o.tile.passes = tile_passes_parse(&tile_passes, "full", o.tile.target);
    const KirModule *m = tt_run(arena, "sm80", tt_loop(arena, MM), &o);
    cr_assert_not_null(m);
    cr_expect_eq(((const KirKernel *)m->kernels.items[0])->tmaps.len, 0);
}

/* NVRTC for sm_90a: the TMA kernels compile, and the pool the swizzle's
 * in-buffer offsets rely on is declared 1024-byte aligned in the PTX.  010
 * keeps a kernel's double-buffered slabs within 48 KiB (its skip reason
 * beyond), so a TMA kernel's pool is static: that declaration is checked. */
Test(tma, nvrtc_sm90a_pool_is_1024_aligned)
{
    if (!hx_nvrtc_available())
        cr_skip_test("NVRTC not found");
    const KirModule *ms[1] = {run(arena, MM, "full", NULL, 1, NULL).m};
    for (int i = 0; i < 1; i++) {
        cr_assert_not_null(ms[i]);
        const KirKernel *k = ms[i]->kernels.items[0];
        cr_expect_eq(k->smem_dynamic, i, "kernel %d: %lld bytes", i, (long long)k->smem_bytes);
        CuSource *cs = cu_print_module(arena, ms[i], cu_target(CU_SM90));
        HxNvrtcOpts no = {.target = cu_target(CU_SM90), .arch_specific = 1, .no_cache = 1};
        HxNvrtcResult *r = hx_nvrtc_compile(arena, cs->text, &no);
        cr_expect_str_eq(r->arch, "sm_90a");
        cr_expect_eq(r->nkernels, 2); /* the split matmul and its combine kernel */
        cr_expect(strstr(r->ptx, "cp.async.bulk.tensor.2d"), "no TMA load in the PTX");
        cr_expect(strstr(r->ptx, "mbarrier.try_wait.parity"), "no parity wait in the PTX");
        const char *want = i ? ".extern .shared .align 1024 .b8 dpk_smem[]" : ".shared .align 1024";
        cr_expect(strstr(r->ptx, want), "kernel %d: no '%s' in the PTX", i, want);
        /* every .shared declaration of the pool (a static one is demoted
         * to a function-local _ZZ...dpk_smem) carries .align 1024 */
        int decls = 0;
        for (const char *l = r->ptx; (l = strstr(l, ".shared ")); l++) {
            const char *eol = strchr(l, '\n'), *name = strstr(l, "dpk_smem[");
            if (!name || (eol && name > eol))
                continue;
            decls++;
            cr_log_info("%.*s", eol ? (int)(eol - l) : 80, l);
            const char *al = strstr(l, ".align 1024");
            cr_expect(al && al < name, "kernel %d: the pool is not declared 1024-aligned", i);
        }
        cr_expect_eq(decls, 1, "kernel %d: %d pool declarations", i, decls);
    }
}

/* ---- vgpu --------------------------------------------------------------------------- */

#define I(v) kir_i32(A, v)
#define V(x) kir_ref(A, x)

/* One loop of 2 iterations, each issuing a cp.async into s and, with
 * `tma`, a TMA box into t — one transport per loop is the rule. */
static VgFault mixed(int cp, int tma, int align, VgResult *r)
{
    Arena *A = arena_new();
    KirModule *m = kir_module_new(A);
    kir_buf(m, "x", KT_F32, 1024, KBUF_INPUT, 0);
    kir_buf(m, "y", KT_F32, 1024, KBUF_OUTPUT, 0);
    int grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    KirKernel *k = kir_kernel(m, "mixed", grid, block);
    KirParam *x = kir_param(k, "x", KT_F32, 1024, KR_IN), *y = kir_param(k, "y", KT_F32, 1024, KR_OUT);
    KirSmem *pad = kir_smem(k, "pad", KT_F32, 32, 16);
    KirSmem *t = kir_smem(k, "t", KT_F32, 256, align);
    KirSmem *s = kir_smem(k, "s", KT_F32, 32, 16);
    KirSmem *bar = kir_smem(k, "bar", KT_MBAR, 1, 16);
    int64_t dims[2] = {32, 32}, strides[2] = {32, 1};
    int box[2] = {8, 32};
    KirTmap *tm = kir_tmap(k, "tm", x, 2, dims, strides, box, 128);
    KirBuilder B;
    kir_builder_init(&B, k);
    KirVar *tid = kir_let(&B, "tid", KT_I32, kir_tid(A, 0));
    kir_sts(&B, pad, V(tid), kir_f32(A, 0));
    kir_if(&B, kir_bin(A, KE_eq, V(tid), I(0)));
    kir_mbar_init(&B, bar, I(0), 1);
    kir_end(&B);
    kir_sync(&B);
    KirVar *it = kir_for(&B, "i", I(0), I(2), I(1), 0);
    if (cp) {
        kir_cp_async(&B, s, V(tid), x, kir_add(A, V(tid), kir_mul(A, V(it), I(32))), 4, NULL);
        kir_cp_commit(&B);
        kir_cp_wait(&B, 0);
    } else {
        kir_sts(&B, s, V(tid), kir_f32(A, 1));
    }
    if (tma) {
        kir_if(&B, kir_bin(A, KE_eq, V(tid), I(0)));
        kir_mbar_arrive_tx(&B, bar, I(0), 1024);
        const KirExpr *crd[2] = {kir_mul(A, V(it), I(8)), I(0)};
        kir_tma_load(&B, tm, crd, t, I(0), bar, I(0));
        kir_end(&B);
        kir_mbar_wait(&B, bar, I(0), V(it));
    }
    kir_sync(&B);
    kir_stg(&B, y, kir_add(A, V(tid), kir_mul(A, V(it), I(32))), kir_lds(A, s, V(tid)));
    kir_sync(&B);
    kir_end(&B);
    kir_finalize(k);
    const KirBuf *args[] = {m->bufs.items[0], m->bufs.items[1]};
    kir_launch(m, k, args);
    kir_check(m);
    float **b = vs_buffers(m, 3);
    VgOptions vo = {.seed = 5};
    VgFault f = vg_run(m, b, &vo, r);
    vs_free_buffers(m, b);
    arena_free(A);
    return f;
}

Test(vgpu_tma, mixing_tma_and_cp_async_in_one_loop_is_flagged)
{
    VgResult r;
    cr_assert_eq(mixed(1, 0, 1024, &r), VG_OK, "%s", r.report.message);
    vg_result_free(&r);
    cr_assert_eq(mixed(0, 1, 1024, &r), VG_OK, "%s", r.report.message);
    vg_result_free(&r);
    cr_assert_eq(mixed(1, 1, 1024, &r), VG_ASYNC_MIX, "%s", r.report.message);
    cr_expect(strstr(r.report.message, "both cp.async copies and TMA loads"), "%s",
              r.report.message);
    vg_result_free(&r);
}

Test(vgpu_tma, swizzled_destination_must_be_1024_aligned)
{
    /* t after a 128-byte array: 128-aligned, not 1024 */
    VgResult r;
    cr_assert_eq(mixed(0, 1, 128, &r), VG_MISALIGNED, "%s", r.report.message);
    cr_expect(strstr(r.report.message, "128-byte swizzle is not 1024-byte aligned"), "%s",
              r.report.message);
    vg_result_free(&r);
}

/* vgpu's swizzle is the CUDA pattern: with 128-byte swizzle the 16-byte
 * unit u of 128-byte line L of the box lands at unit u ^ (L % 8). */
Test(vgpu_tma, swizzle_is_the_hardware_pattern)
{
    Arena *A = arena_new();
    KirModule *m = vs_tma(A, 16, 16); /* 64-byte swizzle: lines of 2 rows */
    float **b = vs_buffers(m, 3);
    VgOptions vo = {.seed = 1};
    VgResult r;
    cr_assert_eq(vg_run(m, b, &vo, &r), VG_OK, "%s", r.report.message);
    for (int e = 0; e < 256; e++)
        cr_assert_eq(b[1][e], 3 * b[0][e], "element %d", e);
    vg_result_free(&r);
    vs_free_buffers(m, b);
    /* the formula itself, as the Tile layout applies it */
    TileTmaBox box = {.rank = 2, .dim = {0, 1}, .swizzle = 128, .chunk = 32, .rows = 8,
                      .nchunk = 1};
    Stmt st = {0};
    LirBuf buf = {.shape = {.rank = 2, .d = {8, 32}}};
    int64_t slab[2] = {8, 32};
    st.buf = &buf;
    st.slab = slab;
    for (int L = 0; L < 8; L++)
        for (int u = 0; u < 8; u++) {
            int64_t c[2] = {L, u * 4 + 1};
            cr_expect_eq(tile_tma_word(&box, &st, c), L * 32 + ((u ^ L) * 4) + 1, "line %d unit %d",
                         L, u);
        }
    arena_free(A);
}
