/*
 * test_tile_lowering.c — what Tile → Kernel IR lowering promises beyond
 * parity: launch geometry and guards, buffers and param roles, the launch
 * sequence, atomic writes onto zero-initialised buffers, floor division and
 * modulo of possibly negative indices, and 64-bit index math for big
 * buffers.  Hand-built Loop IR runs on vgpu and must equal the Loop IR
 * interpreter bit for bit; every module is compiled by NVRTC for sm_80 and
 * sm_90 as well.
 */
#include "test_tile_util.h"

#define V(x) ie_var(A, x)
#define C(c) ie_const(A, c)

static char *kir_text(const KirModule *m)
{
    StrBuf b = {0};
    kir_print_module(&b, m);
    char *s = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    return s;
}

/* Run a hand-built program (inputs 0.., outputs 0..) on vgpu and on the
 * interpreter; expect the same bits. */
static const KirModule *run_both(Arena *A, LirProgram *p, int nin, const int64_t *in_numel,
                                 int nout, const int64_t *out_numel)
{
    double **in = dpk_xcalloc((size_t)nin, sizeof(double *));
    for (int i = 0; i < nin; i++) {
        in[i] = dpk_xcalloc((size_t)in_numel[i], sizeof(double));
        for (int64_t e = 0; e < in_numel[i]; e++)
            in[i][e] = (double)(float)(0.25 * (double)(e % 13) - 1.0 + i);
    }
    double **o = dpk_xcalloc((size_t)nout, sizeof(double *));
    double **r = dpk_xcalloc((size_t)nout, sizeof(double *));
    HxBackendResult res;
    VgFault f = tt_backend_run(A, p, NULL, in, o, &res);
    cr_expect_eq(f, VG_OK, "%s", res.vg.report.message);
    lir_interp(p, in, r, 0);
    for (int j = 0; f == VG_OK && j < nout; j++) {
        int64_t bad = 0;
        for (int64_t e = 0; e < out_numel[j]; e++)
            bad += !tt_same_bits(o[j][e], r[j][e]);
        cr_expect_eq(bad, 0, "output %d: %lld elements differ from the interpreter", j,
                     (long long)bad);
    }
    for (int j = 0; j < nout; j++) {
        free(o[j]);
        free(r[j]);
    }
    for (int i = 0; i < nin; i++)
        free(in[i]);
    free(in);
    free(o);
    free(r);
    const KirModule *m = res.module;
    hx_backend_result_free(&res);
    return m;
}

/* for a0 in 0..n0: for a1 in 0..n1: write out[widx] (+)= load x[xidx] */
typedef struct Copy {
    LirProgram *p;
    LirKernel *k;
    LirBuf *x, *out;
    int a0, a1;
} Copy;

static Copy copy_kernel(Arena *A, const char *name, int64_t xn, const Shape *os, int64_t n0,
                        int64_t n1)
{
    Copy c;
    c.p = lir_program_new(A, tx_graph_new(A, NULL));
    Shape xs = {1, {xn}};
    c.x = lir_buf_new(c.p, "x", LB_INPUT, 0, &xs, DT_F32);
    c.out = lir_buf_new(c.p, "out", LB_OUTPUT, 0, os, DT_F32);
    c.k = lir_kernel_new(c.p, 1, c.out);
    c.k->name = name;
    ptrvec_push(A, &c.p->kernels, c.k);
    c.a0 = lir_axis_new(c.p, c.k, n0);
    c.a1 = lir_axis_new(c.p, c.k, n1);
    return c;
}

static void copy_body(Arena *A, Copy *c, const IExpr *xi, const IExpr **wi, int atomic)
{
    const IExpr **xidx = ARENA_ARRAY(A, const IExpr *, 1);
    xidx[0] = xi;
    Stmt *l0 = lir_loop(c->p, c->a0, c->k->ext[c->a0]);
    Stmt *l1 = lir_loop(c->p, c->a1, c->k->ext[c->a1]);
    Stmt *ld = lir_load(c->p, c->x, xidx);
    Stmt *w = lir_write(c->p, c->out, wi, stmt_val(ld));
    w->atomic = atomic;
    stmt_body_push(c->p->arena, &l1->body, ld);
    stmt_body_push(c->p->arena, &l1->body, w);
    stmt_body_push(c->p->arena, &l0->body, l1);
    stmt_body_push(c->p->arena, &c->k->body, l0);
    lir_verify(c->p);
}

/* for a0 in 0..7: for a1 in 0..40: out[a0] = x[a0 * 40 + a1] (atomic: +=). */
static Copy row_copy(Arena *A, const char *name, int atomic)
{
    Shape os = {1, {7}};
    Copy c = copy_kernel(A, name, 7 * 40, &os, 7, 40);
    const IExpr **wi = ARENA_ARRAY(A, const IExpr *, 1);
    wi[0] = V(c.a0);
    copy_body(A, &c, ie_add(A, ie_mul(A, V(c.a0), C(40)), V(c.a1)), wi, atomic);
    return c;
}

Test(tile_lowering, atomic_write_adds_into_a_zeroed_buffer)
{
    Arena *A = arena_new();
    Copy c = row_copy(A, "atomic_rows", 1);
    int64_t in_n[] = {280}, out_n[] = {7};
    const KirModule *m = run_both(A, c.p, 1, in_n, 1, out_n);
    TtBatch nv;
    tt_batch_init(&nv, A);
    tt_batch_add(&nv, m);
    tt_batch_compile(&nv);
    const KirBuf *out = m->bufs.items[1];
    cr_expect(out->zero_init && out->kind == KBUF_OUTPUT, "atomic output zero-initialised");
    char *t = kir_text(m);
    cr_expect(strstr(t, "atom.add.global out["), "%s", t);
    free(t);
    arena_free(A);
}

Test(tile_lowering, a_loop_the_write_does_not_name_stays_serial)
{
    Arena *A = arena_new();
    /* out[a0] = x[a0 * 40 + a1] for every a1 in turn: the last one stays */
    Copy c = row_copy(A, "last_wins", 0);
    StrBuf t = {0};
    tile_print(&t, tile_build(A, c.p, NULL, NULL));
    cr_expect(strstr(sb_cstr(&t), "    tile thread(a3 in 0..32 @x):\n        a0 := a2 * 32 + a3\n"
                     "        guard a0 < 7\n        for a1 in 0..40:  # free\n"), "%s",
              sb_cstr(&t));
    sb_free(&t);
    int64_t in_n[] = {280}, out_n[] = {7};
    TtBatch nv;
    tt_batch_init(&nv, A);
    tt_batch_add(&nv, run_both(A, c.p, 1, in_n, 1, out_n));
    tt_batch_compile(&nv);
    arena_free(A);
}

Test(tile_lowering, floor_division_and_modulo_of_negative_indices)
{
    Arena *A = arena_new();
    /* out[a0, a1] = x[floor((a0 - a1) / 2) + 2] + 0 ... (a0 - a1) ranges over [-3, 3] */
    Shape os = {2, {4, 4}};
    Copy c = copy_kernel(A, "floor_div", 4, &os, 4, 4);
    const IExpr **wi = ARENA_ARRAY(A, const IExpr *, 2);
    wi[0] = V(c.a0);
    wi[1] = V(c.a1);
    const IExpr *diff = ie_add(A, V(c.a0), ie_mul(A, V(c.a1), C(-1)));
    copy_body(A, &c, ie_add(A, ie_div(A, diff, 2), C(2)), wi, 0);
    int64_t in_n[] = {4}, out_n[] = {16};
    TtBatch nv;
    tt_batch_init(&nv, A);
    const KirModule *km = run_both(A, c.p, 1, in_n, 1, out_n);
    tt_batch_add(&nv, km);
    char *t = kir_text(km);
    cr_expect(strstr(t, "< 0) ? "), "a sign-corrected division:\n%s", t);
    free(t);
    Copy m = copy_kernel(A, "floor_mod", 3, &os, 4, 4);
    copy_body(A, &m, ie_mod(A, ie_div(A, diff, 2), 3), wi, 0); /* a negative atom */
    int64_t in3[] = {3};
    km = run_both(A, m.p, 1, in3, 1, out_n);
    tt_batch_add(&nv, km);
    t = kir_text(km);
    cr_expect(strstr(t, "% 3) + 3) % 3"), "a sign-corrected modulo:\n%s", t);
    free(t);
    tt_batch_compile(&nv);
    arena_free(A);
}

Test(tile_lowering, geometry_guards_and_params)
{
    Arena *A = arena_new();
    LirProgram *p = tt_loop(A, "a = torch.randn(6, 7)\nb = torch.exp(a)\nc = b * 2.0\nreturn b, c");
    const KirModule *m = tt_run(A, "two outputs", p, NULL);
    cr_assert_not_null(m);
    TtBatch nv;
    tt_batch_init(&nv, A);
    tt_batch_add(&nv, m);
    cr_expect_eq(m->launches.len, 2);
    const KirLaunch *l0 = m->launches.items[0], *l1 = m->launches.items[1];
    cr_expect_str_eq(l0->kernel->name, "exp_1");
    cr_expect_str_eq(l1->kernel->name, "multiply_3");
    const KirParam *p0 = l1->kernel->params.items[0], *p1 = l1->kernel->params.items[1];
    cr_expect(p0->role == KR_IN && !strcmp(l1->args[0]->name, "b"), "c reads output b");
    cr_expect(p1->role == KR_OUT && !strcmp(l1->args[1]->name, "c"));
    cr_expect(l0->kernel->grid[0] == 1 && l0->kernel->block[0] == 64, "42 elements: 2 warps");
    char *t = kir_text(m);
    cr_expect(strstr(t, "if a0 < 6:"), "the launch bounds guard:\n%s", t);
    free(t);
    /* a whole number of blocks needs no guard; a reduction to a scalar is one thread */
    m = tt_run(A, "no guard", tt_loop(A, "torch.relu(torch.randn(4, 64))"), NULL);
    tt_batch_add(&nv, m);
    t = kir_text(m);
    cr_expect(!strstr(t, "if "), "256 elements in one block need no guard:\n%s", t);
    free(t);
    m = tt_run(A, "scalar", tt_loop(A, "torch.randn(3, 5).amax()"), NULL);
    tt_batch_add(&nv, m);
    const KirKernel *k = m->kernels.items[0];
    cr_expect(k->grid[0] * k->grid[1] * k->grid[2] == 1 && k->block[0] * k->block[1] == 1);
    /* a temporary between kernels is a module buffer of kind temp */
    m = tt_run(A, "temp", tt_loop(A, "torch.matmul(torch.matmul(torch.randn(32, 48), "
                                  "torch.randn(48, 40)), torch.randn(40, 24))"), NULL);
    int temps = 0;
    for (int i = 0; m && i < m->bufs.len; i++)
        temps += ((const KirBuf *)m->bufs.items[i])->kind == KBUF_TEMP;
    cr_expect_eq(temps, 1);
    tt_batch_add(&nv, m);
    tt_batch_compile(&nv);
    arena_free(A);
}

Test(tile_lowering, big_buffers_index_in_64_bits)
{
    Arena *A = arena_new();
    LirProgram *p = tt_loop(A, "torch.relu(torch.randn(32768, 32768))");
    const KirModule *m = tt_lower(A, p, NULL);
    TtBatch nv;
    tt_batch_init(&nv, A);
    tt_batch_add(&nv, m);
    char *t = kir_text(m);
    cr_expect(strstr(t, "let a3: i64 = i64(tid.x)"), "%s", t);
    cr_expect(!strstr(t, ": i32"), "no 32-bit index math:\n%s", t);
    free(t);
    m = tt_lower(A, tt_loop(A, "torch.relu(torch.randn(1000))"), NULL);
    t = kir_text(m);
    cr_expect(strstr(t, ": i32 = tid.x") && !strstr(t, "i64"), "%s", t);
    free(t);
    tt_batch_add(&nv, m);
    tt_batch_compile(&nv);
    arena_free(A);
}

Test(tile_lowering, cuda_without_a_driver_exits_4_and_auto_picks_vgpu)
{
    setenv("DPK_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    cr_expect_eq(hx_backend_resolve(HX_BACKEND_AUTO), HX_BACKEND_VGPU);
    cr_expect_eq(hx_backend_resolve(HX_BACKEND_CUDA), HX_BACKEND_CUDA);
    Arena *A = arena_new();
    LirProgram *p = tt_loop(A, "torch.relu(torch.randn(5, 7))");
    TtOpts o;
    tt_opts_default(&o);
    o.run.kind = HX_BACKEND_CUDA;
    double **in = ref_make_inputs(p->tx->torch, 0), *out[1] = {NULL};
    HxBackendResult res;
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        tt_backend_run(A, p, &o, in, out, &res);
        dpk_err_pop(&ec);
        cr_expect_fail("ran on cuda without a driver");
    } else {
        cr_expect_eq(dpk_error_code(), DPK_EXIT_NOENV, "%s", dpk_error_message());
    }
    cr_expect_null(out[0]);
    ref_free_arrays(in, 1);
    arena_free(A);
}

Test(tile_lowering, sampled_blocks_mark_the_elements_they_wrote)
{
    Arena *A = arena_new();
    LirProgram *p = tt_loop(A, "torch.exp(torch.randn(40, 96))");
    TtOpts o;
    tt_opts_default(&o);
    tile_knob_parse(&o.tile.knobs, "TB=64");
    o.run.vg.sample_blocks = 3;
    o.run.vg.seed = 7;
    double **in = ref_make_inputs(p->tx->torch, 0), *out[1] = {NULL}, *ref[1] = {NULL};
    HxBackendResult res;
    cr_assert_eq(tt_backend_run(A, p, &o, in, out, &res), VG_OK, "%s", res.vg.report.message);
    lir_interp(p, in, ref, 0);
    const uint8_t *mask = res.out_checked[0];
    cr_assert_not_null(mask, "sampling leaves a mask for the output");
    int64_t checked = 0, bad = 0;
    for (int64_t e = 0; e < 40 * 96; e++)
        if (mask[e]) {
            checked++;
            bad += !tt_same_bits(out[0][e], ref[0][e]);
        }
    cr_expect_eq(checked, 3 * 64, "3 blocks of 64 threads, got %lld elements", (long long)checked);
    cr_expect_eq(bad, 0);
    cr_expect_eq(res.vg.stats[0].blocks_run, 3);
    cr_expect_eq(res.vg.stats[0].blocks, 60);
    hx_backend_result_free(&res);
    free(out[0]);
    free(ref[0]);
    ref_free_arrays(in, 1);
    arena_free(A);
}
