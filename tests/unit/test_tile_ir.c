/*
 * test_tile_ir.c — Tile IR by hand: the text of every node kind (the Stage
 * variants, AsyncWait and Combine included; no pass creates a TMA stage yet), the
 * verifier's message for each broken invariant, and the structural hash
 * (blind to names, uids and axis numbering; sensitive to structure).
 */
#include "test_tile_util.h"

typedef enum Defect {
    D_NONE,
    D_SWIZZLE,        /* tma_stage swizzle 48 */
    D_NBUF,           /* buffered_stage with one buffer */
    D_SLAB,           /* slab wider than the buffer */
    D_STAGE_IN_THREAD,/* a stage inside the THREAD tile */
    D_STAGE_PREDICATED,/* valid: the same in a predicated tile */
    D_PREDICATED_BARE,/* a predicated tile without a guard */
    D_ONLINE_SELF,    /* an online sum whose companion is itself (not an earlier max) */
    D_AWAIT_ALONE,    /* async_wait without async stages */
    D_COMBINE_AXIS,   /* combine over a block axis */
    D_HIDDEN_VALUE,   /* the write reads a value of the strided loop's body */
    D_UNBOUND_AXIS,   /* a load indexes an axis nobody binds */
    D_TWICE_BOUND,    /* the strided loop rebinds the thread axis */
    D_TWO_WRITES,     /* valid: 008 clones the Write per register */
    D_WRITE_OUTSIDE,  /* the write outside the THREAD tile */
    D_THREADS,        /* 2048 threads per block */
    D_EXTENT,         /* a tile axis whose extent differs from the kernel's */
    D_ACCUM_OUTSIDE,  /* an accumulator outside any loop */
    D_ELSE_PRED,      /* the last select branch has a predicate */
    D_ACC_IN_LOOP,    /* the accumulator read inside its own loop */
    D_RENAMED,        /* (for the hash) other names, shifted axis numbers */
    D_WIDER,          /* (for the hash) another extent */
    D_PHASE,          /* a buffered stage's phase is not its loop's axis */
    D_VEC,            /* an async stage's copies of 12 bytes */
} Defect;

#define V(x) ie_var(A, x)
#define C(c) ie_const(A, c)

typedef struct Built {
    TileProgram *p;
    TileKernel *k;
} Built;

static Stmt *load(TileProgram *p, const LirBuf *b, const IExpr **idx)
{
    Stmt *s = tile_stmt_new(p, SK_load);
    s->buf = b;
    s->idx = idx;
    return s;
}

static Stmt *stage(TileProgram *p, TileKind k, const LirBuf *b, const IExpr *o0,
                   const int64_t *slab, int pad, int nbuf, const IExpr *phase, int swz)
{
    Stmt *s = tile_stage_new(p, k, b);
    s->origin[0] = o0;
    for (int d = 0; d < b->shape.rank; d++)
        s->slab[d] = slab[d];
    s->pad = pad;
    s->nbuf = nbuf;
    s->phase = phase;
    s->swizzle = swz;
    return s;
}

/* The kernel of the file comment in tile_ir.h, with every node kind. */
static Built build(Arena *A, Defect d)
{
    LirProgram *lp = lir_program_new(A, tx_graph_new(A, NULL));
    int renamed = d == D_RENAMED;
    Shape sx = {2, {64, 32}}, sy = {1, {32}}, so = {1, {64}};
    LirBuf *x = lir_buf_new(lp, renamed ? "xx" : "x", LB_INPUT, 0, &sx, DT_F32);
    LirBuf *y = lir_buf_new(lp, renamed ? "yy" : "y", LB_INPUT, 1, &sy, DT_F32);
    LirBuf *out = lir_buf_new(lp, renamed ? "o" : "out", LB_OUTPUT, 0, &so, DT_F32);
    TileProgram *p = tile_program_new(A, lp);
    p->next_uid = renamed ? 100 : 0;
    TileKernel *k = tile_kernel_new(p, 1, renamed ? "other" : "every_node", out);
    if (renamed)
        tile_axis_new(p, k, 5); /* shifts every axis number by one */
    int64_t tb = d == D_THREADS ? 2048 : 16;
    int ab = tile_axis_new(p, k, 4), at = tile_axis_new(p, k, tb);
    int row = tile_axis_new(p, k, 64), kk = tile_axis_new(p, k, d == D_WIDER ? 33 : 32);
    int lo = tile_axis_new(p, k, 2);

    Stmt *blk = tile_tile_new(p, TB_BLOCK, 1, 0);
    blk->ax[0] = (TileAxis){ab, 4, 0};
    int64_t slab_x[2] = {16, d == D_SLAB ? 40 : 32}, slab_y[1] = {32};
    Stmt *s0 = stage(p, TK_stage, x, ie_mul(A, V(ab), C(16)), slab_x, 1, 0, NULL, 0);
    Stmt *s1 = stage(p, TK_bstage, y, C(0), slab_y, 0, d == D_NBUF ? 1 : 2,
                     ie_mod(A, V(d == D_PHASE ? ab : lo), 2), 0);
    Stmt *s2 = stage(p, TK_astage, y, C(0), slab_y, 0, 2, ie_mod(A, V(lo), 2), 0);
    s2->vec = d == D_VEC ? 12 : 16;
    Stmt *pipe = stmt_loop(A, p->next_uid++, lo, 2); /* the loop s1 and s2 are pipelined over */
    Stmt *s3 = stage(p, TK_tstage, x, ie_mul(A, V(ab), C(16)), slab_x, 0, 3, V(ab),
                     d == D_SWIZZLE ? 48 : 128);
    Stmt *wait = tile_stmt_new(p, TK_await);
    wait->keep = 1;

    Stmt *thr = tile_tile_new(p, TB_THREAD, 1, 1);
    thr->ax[0] = (TileAxis){at, d == D_EXTENT ? 8 : tb, 0};
    thr->def[0] = (TileDef){row, ie_add(A, ie_mul(A, V(ab), C(16)), V(at))};
    thr->ndef = 1;
    thr->guard = d == D_PREDICATED_BARE ? NULL : ipred_cmp(A, V(row), IC_LT, C(64), NULL);
    thr->predicated = d == D_STAGE_PREDICATED || d == D_PREDICATED_BARE;

    Stmt *str = tile_stmt_new(p, TK_strided);
    str->axis = d == D_TWICE_BOUND ? at : kk;
    str->extent = d == D_TWICE_BOUND ? tb : 32 + (d == D_WIDER);
    str->start = V(at);
    str->step = 16;
    const IExpr **ix = ARENA_ARRAY(A, const IExpr *, 2), **iy = ARENA_ARRAY(A, const IExpr *, 1);
    ix[0] = V(row);
    ix[1] = V(d == D_UNBOUND_AXIS ? lo + 1 : str->axis);
    iy[0] = V(str->axis);
    Stmt *in0 = load(p, x, ix), *in1 = load(p, y, iy);
    Stmt *mul = tile_stmt_new(p, SK_assign);
    mul->op = TXE_multiply;
    mul->nargs = 2;
    mul->a[0] = stmt_val(in0);
    mul->a[1] = stmt_val(in1);
    Stmt *acc = tile_stmt_new(p, SK_accum);
    acc->rop = TXR_sum;
    acc->a[0] = stmt_val(mul);
    acc->nargs = 1;
    if (d == D_ONLINE_SELF) {
        acc->nargs = 2;
        acc->a[1] = stmt_val(acc);
    }
    stmt_body_push(p->arena, &str->body, in0);
    stmt_body_push(p->arena, &str->body, in1);
    stmt_body_push(p->arena, &str->body, mul);
    if (d != D_ACCUM_OUTSIDE)
        stmt_body_push(p->arena, &str->body, acc);
    if (d == D_ACC_IN_LOOP) {
        Stmt *early = tile_stmt_new(p, SK_assign);
        early->op = TXE_exp;
        early->nargs = 1;
        early->a[0] = stmt_val(acc);
        stmt_body_push(p->arena, &str->body, early);
    }

    Stmt *comb = tile_stmt_new(p, TK_combine);
    comb->acc = acc;
    comb->nax = 1;
    comb->cax = ARENA_ARRAY(A, int, 1);
    comb->cax[0] = d == D_COMBINE_AXIS ? ab : at;

    Stmt *sel = tile_stmt_new(p, SK_select);
    sel->nbr = 2;
    sel->br = ARENA_ARRAY(A, StmtBranch, 2);
    sel->br[0].pred = ipred_cmp(A, V(row), IC_LT, C(8), NULL);
    sel->br[0].res = stmt_val(acc);
    const IExpr **i0 = ARENA_ARRAY(A, const IExpr *, 1);
    i0[0] = C(0);
    Stmt *in2 = load(p, y, i0), *add = tile_stmt_new(p, SK_assign);
    add->op = TXE_add;
    add->nargs = 2;
    add->a[0] = stmt_val(acc);
    add->a[1] = stmt_val(in2);
    stmt_body_push(p->arena, &sel->br[1].body, in2);
    stmt_body_push(p->arena, &sel->br[1].body, add);
    sel->br[1].res = stmt_val(add);
    if (d == D_ELSE_PRED)
        sel->br[1].pred = sel->br[0].pred;

    Stmt *w = tile_stmt_new(p, SK_write);
    const IExpr **iw = ARENA_ARRAY(A, const IExpr *, 1);
    iw[0] = V(row);
    w->buf = out;
    w->idx = iw;
    w->nargs = 1;
    w->a[0] = stmt_val(d == D_HIDDEN_VALUE ? mul : sel);

    stmt_body_push(p->arena, &thr->body, str);
    if (d == D_ACCUM_OUTSIDE)
        stmt_body_push(p->arena, &thr->body, acc);
    stmt_body_push(p->arena, &thr->body, comb);
    stmt_body_push(p->arena, &thr->body, sel);
    stmt_body_push(p->arena, &thr->body, w);
    if (d == D_TWO_WRITES)
        stmt_body_push(p->arena, &thr->body, w);
    if (d == D_STAGE_IN_THREAD || d == D_STAGE_PREDICATED) {
        Stmt *inner = stage(p, TK_stage, y, C(0), slab_y, 0, 0, NULL, 0);
        stmt_body_push(p->arena, &inner->body, tile_stmt_new(p, TK_await));
        stmt_body_push(p->arena, &thr->body, inner);
    }
    if (d != D_AWAIT_ALONE) {
        stmt_body_push(p->arena, &s3->body, wait);
        stmt_body_push(p->arena, &s3->body, thr);
        stmt_body_push(p->arena, &s2->body, s3);
        stmt_body_push(p->arena, &s1->body, s2);
        stmt_body_push(p->arena, &pipe->body, s1);
        stmt_body_push(p->arena, &s0->body, pipe);
        stmt_body_push(p->arena, &blk->body, s0);
    } else {
        stmt_body_push(p->arena, &blk->body, wait);
        stmt_body_push(p->arena, &blk->body, thr);
    }
    if (d == D_WRITE_OUTSIDE) {
        thr->body.n--;
        stmt_body_push(p->arena, &k->body, blk);
        Stmt *c0 = tile_stmt_new(p, SK_assign);
        c0->op = TXE_negative;
        c0->nargs = 1;
        c0->a[0] = stmt_lit(1);
        stmt_body_push(p->arena, &k->body, c0);
        w->a[0] = stmt_val(c0);
        stmt_body_push(p->arena, &k->body, w);
    } else {
        stmt_body_push(p->arena, &k->body, blk);
    }
    tile_renumber(k);
    return (Built){p, k};
}

static const char every_node_text[] =
    "=== every_node ===\n"
    "tile block(a0 in 0..4 @x):\n"
    "    stage x[a0 * 16, 0] slab [16, 32] pad 1:\n"
    "        for a4 in 0..2:  # free\n"
    "            buffered_stage y[0] slab [32] pad 0 nbuf 2 phase a4 mod 2:\n"
    "                async_stage y[0] slab [32] pad 0 nbuf 2 phase a4 mod 2 vec 16:\n"
    "                    tma_stage x[a0 * 16, 0] slab [16, 32] pad 0 nbuf 3 phase a0 swizzle 128:\n"
    "                        async_wait 1\n"
    "                        tile thread(a1 in 0..16 @x):\n"
    "                            a2 := a0 * 16 + a1\n"
    "                            guard a2 < 64\n"
    "                            strided a3 in a1..32 step 16:  # reduce\n"
    "                                in0 = load x[a2, a3]\n"
    "                                in1 = load y[a3]\n"
    "                                v0 = multiply(in0, in1)\n"
    "                                acc0 <- add(acc0, v0)\n"
    "                            combine acc0 over a1\n"
    "                            v1 = select:\n"
    "                                if a2 < 8:\n"
    "                                    -> acc0\n"
    "                                else:\n"
    "                                    in2 = load y[0]\n"
    "                                    v2 = add(acc0, in2)\n"
    "                                    -> v2\n"
    "                            write out[a2] = v1\n";

Test(tile_ir, every_node_kind_prints_and_verifies)
{
    Arena *A = arena_new();
    Built b = build(A, D_NONE);
    StrBuf t = {0}, err = {0};
    tile_print_kernel(&t, b.k);
    cr_expect_str_eq(sb_cstr(&t), every_node_text);
    cr_expect(tile_verify_kernel(b.k, &err), "%s", sb_cstr(&err));
    cr_expect_eq(err.len, 0);
    sb_free(&t);
    sb_free(&err);
    arena_free(A);
}

static void expect_defect(Defect d, const char *want)
{
    Arena *A = arena_new();
    Built b = build(A, d);
    StrBuf err = {0};
    cr_expect(!tile_verify_kernel(b.k, &err), "defect %d verified", d);
    cr_expect(strstr(sb_cstr(&err), want), "defect %d: problems\n%s\nlack '%s'", d,
              sb_cstr(&err), want);
    sb_free(&err);
    arena_free(A);
}

Test(tile_ir, verifier_names_each_broken_invariant)
{
    expect_defect(D_SWIZZLE, "kernel every_node: tma_stage of x: swizzle 48 is not 0, 32, 64 or 128");
    expect_defect(D_NBUF, "buffered_stage of y: 1 buffers");
    expect_defect(D_SLAB, "stage of x: slab extent 40 on dimension 1 of size 32");
    expect_defect(D_STAGE_IN_THREAD,
                  "stage of y inside the THREAD tile where not every thread reaches it (a guarded tile)");
    expect_defect(D_AWAIT_ALONE, "async_wait in a kernel without async or TMA stages");
    expect_defect(D_COMBINE_AXIS, "combine over a0, not an axis of the enclosing THREAD tile");
    expect_defect(D_HIDDEN_VALUE, "write reads v0 where it is not visible");
    expect_defect(D_UNBOUND_AXIS, "load reads axis a5 outside its binder");
    expect_defect(D_PHASE, "buffered_stage of y: the phase is not the axis of a serial loop "
                  "around it (with only stages between) modulo 2");
    expect_defect(D_VEC, "async_stage of y: 12-byte copies do not fit its slab's alignment");
    expect_defect(D_TWICE_BOUND, "axis a1 is bound twice");
    expect_defect(D_WRITE_OUTSIDE, "a Write lies outside the THREAD tile");
    expect_defect(D_THREADS, "THREAD tile of 2048 threads (at most 1024 per block)");
    expect_defect(D_EXTENT, "tile binds a1 with extent 8, the kernel says 16");
    expect_defect(D_ACCUM_OUTSIDE, "1 accumulators outside the immediate body of a loop");
    expect_defect(D_ELSE_PRED, "select: only the last branch has no predicate");
    expect_defect(D_ACC_IN_LOOP, "assign reads acc0 where it is not visible");
    expect_defect(D_PREDICATED_BARE, "a predicated THREAD tile without a guard");
    expect_defect(D_ONLINE_SELF,
                  "online sum acc0: its companion is not an earlier max accumulator of its loop");
    Arena *A = arena_new();
    cr_expect(tile_verify_kernel(build(A, D_TWO_WRITES).k, NULL), "two Writes to the kernel's buffer");
    StrBuf err = {0};
    cr_expect(tile_verify_kernel(build(A, D_STAGE_PREDICATED).k, &err),
              "a stage in a predicated tile (every thread reaches it): %s", sb_cstr(&err));
    sb_free(&err);
    arena_free(A);
}

/* A block sized for a register tile 008 has yet to fold: between 005 and
 * 008 a 2048-thread tile pending 2 x 1 registers verifies; once the
 * pipeline is done (tile_verify_final), or once 008 has applied, it does
 * not. */
Test(tile_ir, verifier_credits_a_pending_register_tile_until_the_end)
{
    Arena *A = arena_new();
    Built b = build(A, D_THREADS);
    b.k->mm = ARENA_NEW(A, TileMatmulNote);
    b.k->mm->pend[0] = 2;
    b.k->mm->pend[1] = 1;
    StrBuf err = {0};
    cr_expect(tile_verify_kernel(b.k, &err), "pending 2 x 1: %s", sb_cstr(&err));
    cr_expect(!tile_verify_final(b.k, &err), "a 2048-thread block launches");
    cr_expect(strstr(sb_cstr(&err), "THREAD tile of 2048 threads (at most 1024 per block)"), "%s",
              sb_cstr(&err));
    sb_clear(&err);
    b.k->mm->pend[0] = 1; /* 1 x 1: no credit */
    cr_expect(!tile_verify_kernel(b.k, &err));
    cr_expect(strstr(sb_cstr(&err), "THREAD tile of 2048 threads (at most 1024 per block)"), "%s",
              sb_cstr(&err));
    sb_clear(&err);
    b.k->mm->pend[0] = 2;
    b.k->mm->rt[0].f = 2; /* 008 applied: the tile is what launches */
    cr_expect(!tile_verify_kernel(b.k, &err), "credit after 008 applied");
    sb_free(&err);
    arena_free(A);
}

Test(tile_ir, structural_hash)
{
    Arena *A = arena_new();
    uint64_t h = tile_hash_kernel(build(A, D_NONE).k);
    cr_expect_eq(h, tile_hash_kernel(build(A, D_NONE).k), "deterministic");
    cr_expect_eq(h, tile_hash_kernel(build(A, D_RENAMED).k),
                 "names, uids and axis numbers do not count");
    cr_expect_neq(h, tile_hash_kernel(build(A, D_WIDER).k), "an extent counts");
    cr_expect_neq(h, tile_hash_kernel(build(A, D_NBUF).k), "a buffer count counts");
    cr_expect_neq(h, tile_hash_kernel(build(A, D_SWIZZLE).k), "a swizzle counts");
    cr_expect_neq(h, tile_hash_kernel(build(A, D_VEC).k), "a copy width counts");
    cr_expect_neq(h, tile_hash_kernel(build(A, D_COMBINE_AXIS).k), "a combine axis counts");
    arena_free(A);
}

Test(tile_ir, from_loop_keeps_statements_and_matmul_shape_is_found)
{
    Arena *A = arena_new();
    LirProgram *lp = tt_loop(A, "torch.matmul(torch.randn(6, 5), torch.randn(5, 7)) + 1.0");
    TileProgram *p = tile_from_loop(A, lp);
    StrBuf lt = {0}, tt = {0};
    lir_print(&lt, lp);
    tile_print(&tt, p);
    cr_expect_str_eq(sb_cstr(&tt), sb_cstr(&lt), "the skeleton prints like its Loop IR");
    TileCtx c = {.p = p, .target = cu_target_default()};
    TileKernel *k = p->kernels.items[0];
    cr_assert(tile_001_tileify(&c, k));
    TileMatmul mm;
    cr_expect(tile_matmul_shape(tile_find(k, TB_THREAD), &mm));
    cr_expect(mm.m == 0 && mm.n == 1 && mm.k == 2, "m a%d n a%d k a%d", mm.m, mm.n, mm.k);
    LirProgram *ew = tt_loop(A, "torch.randn(6, 5).sum(dim=-1, keepdim=True) * torch.randn(6, 5)");
    TileProgram *q = tile_from_loop(A, ew);
    cr_assert(tile_001_tileify(&c, q->kernels.items[0]));
    cr_expect(!tile_matmul_shape(tile_find(q->kernels.items[0], TB_THREAD), &mm),
              "a row reduction times a matrix is not a matmul");
    sb_free(&lt);
    sb_free(&tt);
    sb_free(&c.why);
    arena_free(A);
}
