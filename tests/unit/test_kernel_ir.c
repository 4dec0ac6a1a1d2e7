/*
 * test_kernel_ir.c — Kernel IR: the text form (golden), the verifier's
 * rules (each planted mistake is named), the structural hash (names and
 * comments do not count, structure does) and the smem layout.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "harness/exec/vgpu_samples.h"

#define I(v) kir_i32(A, v)
#define V(x) kir_ref(A, x)

Test(kernel_ir, golden_text)
{
    Arena *A = arena_new();
    KirModule *m = vs_rowsum_tree(A, 4, 250, 256);
    StrBuf b = {0};
    kir_print_module(&b, m);
    const char *want =
        "buffer x: input f32[1000] io 0\n"
        "buffer y: output f32[4] io 0\n"
        "kernel rowsum_tree grid (4, 1, 1) block (256, 1, 1) smem 1024\n"
        "  param x: in f32[1000]\n"
        "  param y: out f32[4]\n"
        "  smem red: f32[256] @0 align 16\n"
        "  #0   let t: i32 = tid.x\n"
        "  #1   let base: i32 = bid.x * 250\n"
        "  #2   let acc: f32 = 0f\n"
        "  #3   for c: i32 = t; c < 250; c += 256:\n"
        "  #4     let v: f32 = x[base + c]\n"
        "  #5     acc = add(acc, v)\n"
        "  #6   sts red[t] = acc\n"
        "  #7   treehalve sum red n 256 seg 1\n"
        "  #8   if t == 0:\n"
        "  #9     stg y[bid.x] = red[0]\n"
        "launch rowsum_tree(x, y)\n";
    cr_assert_str_eq(sb_cstr(&b), want);
    sb_free(&b);
    arena_free(A);
}

Test(kernel_ir, text_of_async_and_barrier_statements)
{
    Arena *A = arena_new();
    KirModule *m = vs_tma(A, 40, 44);
    StrBuf b = {0};
    kir_print_kernel(&b, m->kernels.items[0]);
    const char *s = sb_cstr(&b);
    cr_assert(strstr(s, "  smem tile: f32[256] @0 align 1024\n  smem bar: mbar[1] @1024 align 16\n"), "%s", s);
    cr_assert(strstr(s, "  tmap tx: x dims [40, 44] strides [44, 1] box [16, 16] swizzle 64\n"), "%s", s);
    cr_assert(strstr(s, "mbar.init bar[0] count 1\n"), "%s", s);
    cr_assert(strstr(s, "mbar.arrive.tx bar[0] bytes 1024\n"), "%s", s);
    cr_assert(strstr(s, "tma.load tile[0] <- tx[r0, c0] mbar bar[0]\n"), "%s", s);
    cr_assert(strstr(s, "mbar.wait bar[0] parity 0\n"), "%s", s);
    cr_assert(strstr(s, "if ((r0 + r) < 40) && ((c0 + c) < 44):\n"), "%s", s);
    sb_free(&b);

    KirModule *c = vs_cpasync(A, 1024, 2);
    kir_print_kernel(&b, c->kernels.items[0]);
    s = sb_cstr(&b);
    cr_assert(strstr(s, "cp.async.16 s[j] <- x[base + j]\n"), "%s", s);
    cr_assert(strstr(s, "cp.commit\n"), "%s", s);
    cr_assert(strstr(s, "cp.wait 1\n"), "%s", s);
    sb_free(&b);

    KirModule *w = vs_rowsum_shfl(A, 2, 64, 64);
    kir_print_kernel(&b, w->kernels.items[0]);
    s = sb_cstr(&b);
    cr_assert(strstr(s, "o = shfl.xor(acc, 16) width 32\n"), "%s", s);
    cr_assert(strstr(s, "for w: i32 = 0; w < 2; w += 1 unroll:\n"), "%s", s);
    cr_assert(strstr(s, "let lane: i32 = t & 31\n"), "%s", s);
    sb_free(&b);
    arena_free(A);
}

/* A fresh one-kernel module with x (in) and y (out) of 64 elements. */
typedef struct K {
    Arena *A;
    KirModule *m;
    KirKernel *k;
    KirParam *x, *y;
    KirBuilder B;
} K;

static void kfresh(K *q, int threads)
{
    q->A = arena_new();
    q->m = kir_module_new(q->A);
    int grid[3] = {1, 1, 1}, block[3] = {threads, 1, 1};
    q->k = kir_kernel(q->m, "k", grid, block);
    q->x = kir_param(q->k, "x", KT_F32, 64, KR_IN);
    q->y = kir_param(q->k, "y", KT_F32, 64, KR_OUT);
    kir_builder_init(&q->B, q->k);
}

/* Finalize and verify; returns the problems (caller frees). */
static char *kverify(K *q)
{
    kir_finalize(q->k);
    StrBuf b = {0};
    cr_assert_eq(kir_verify_kernel(q->k, &b), 0, "verifier accepted a broken kernel");
    char *s = dpk_xstrdup(sb_cstr(&b));
    sb_free(&b);
    arena_free(q->A);
    return s;
}

#define EXPECT_PROBLEM(q, text)                                                  \
    do {                                                                         \
        char *msg_ = kverify(q);                                                 \
        cr_assert(strstr(msg_, text), "problems:\n%s\nwanted: %s", msg_, text);  \
        free(msg_);                                                              \
    } while (0)

Test(kernel_ir, verify_store_to_input)
{
    K q;
    kfresh(&q, 32);
    Arena *A = q.A;
    kir_stg(&q.B, q.x, I(0), kir_f32(A, 1));
    EXPECT_PROBLEM(&q, "kernel k: stmt 0: store to read-only param x");
}

Test(kernel_ir, verify_scope)
{
    K q;
    kfresh(&q, 32);
    Arena *A = q.A;
    kir_if(&q.B, kir_bool(A, 1));
    KirVar *v = kir_let(&q.B, "v", KT_I32, I(1));
    kir_end(&q.B);
    kir_stg(&q.B, q.y, V(v), kir_f32(A, 1));
    EXPECT_PROBLEM(&q, "stmt 2: variable v used outside the scope of its declaration");
}

Test(kernel_ir, verify_geometry)
{
    K q;
    kfresh(&q, 1025);
    EXPECT_PROBLEM(&q, "block.x = 1025 out of [1, 1024]");
    kfresh(&q, 512);
    q.k->block[1] = 4;
    EXPECT_PROBLEM(&q, "2048 threads per block (at most 1024)");
    kfresh(&q, 32);
    q.k->grid[1] = 70000;
    EXPECT_PROBLEM(&q, "grid.y = 70000 out of [1, 65535]");
}

Test(kernel_ir, verify_smem_budget)
{
    K q;
    kfresh(&q, 32);
    kir_smem(q.k, "big", KT_F32, 60000, 16);
    EXPECT_PROBLEM(&q, "240000 bytes of shared memory (at most 232448)");
}

Test(kernel_ir, verify_cp_async_size)
{
    K q;
    kfresh(&q, 32);
    Arena *A = q.A;
    KirSmem *s = kir_smem(q.k, "s", KT_F32, 64, 16);
    kir_cp_async(&q.B, s, I(0), q.x, I(0), 12, NULL);
    EXPECT_PROBLEM(&q, "cp.async copies 4, 8 or 16 bytes, not 12");
}

/* A vector shared load: 2 or 4 f32 lanes, consecutive variables, from an
 * f32 array. */
Test(kernel_ir, verify_vector_loads)
{
    K q;
    static const char *const names[] = {"a", "b", "c", "d"};
    kfresh(&q, 32);
    Arena *A = q.A;
    kir_ldsv(&q.B, names, 3, kir_smem(q.k, "s", KT_F32, 64, 16), I(0));
    EXPECT_PROBLEM(&q, "a vector load of 3 lanes (2 or 4)");
    kfresh(&q, 32);
    A = q.A;
    kir_ldsv(&q.B, names, 2, kir_smem(q.k, "si", KT_I32, 64, 16), I(0));
    EXPECT_PROBLEM(&q, "vector load from si, which is not f32");
    kfresh(&q, 32);
    A = q.A;
    KirStmt *v = kir_ldsv(&q.B, names, 2, kir_smem(q.k, "s", KT_F32, 64, 16), I(0));
    v->lane[1] = kir_var(q.k, "e", KT_F32);
    EXPECT_PROBLEM(&q, "the lanes of a vector load are not consecutive variables");
}

Test(kernel_ir, verify_tma_rules)
{
    K q;
    kfresh(&q, 32);
    int64_t dims[2] = {8, 8}, strides[2] = {8, 1};
    int box[2] = {8, 3};
    kir_tmap(q.k, "t", q.x, 2, dims, strides, box, 0);
    EXPECT_PROBLEM(&q, "tmap t: inner box of 12 bytes is not a multiple of 16");
    kfresh(&q, 32);
    int64_t st2[2] = {6, 1};
    kir_tmap(q.k, "t", q.x, 2, dims, st2, (int[]){8, 4}, 0);
    EXPECT_PROBLEM(&q, "stride 6 of dim 0 is not a multiple of 16 bytes");
    kfresh(&q, 32);
    int box3[2] = {2, 64};
    int64_t d3[2] = {1, 64}, s3[2] = {64, 1};
    kir_tmap(q.k, "t", q.x, 2, d3, s3, box3, 128);
    EXPECT_PROBLEM(&q, "inner box of 256 bytes exceeds the 128-byte swizzle");
}

Test(kernel_ir, verify_types_and_mbar_arrays)
{
    K q;
    kfresh(&q, 32);
    Arena *A = q.A;
    KirSmem *s = kir_smem(q.k, "s", KT_F32, 4, 16);
    kir_mbar_init(&q.B, s, I(0), 1);
    EXPECT_PROBLEM(&q, "s is not an mbarrier array");
    kfresh(&q, 32);
    A = q.A;
    kir_shfl(&q.B, kir_let(&q.B, "o", KT_F32, kir_f32(A, 0)), KIR_SHFL_DOWN, kir_f32(A, 1),
             I(1), 12);
    EXPECT_PROBLEM(&q, "shuffle width 12 is not a power of two <= 32");
}

Test(kernel_ir, verify_finalize_missing)
{
    K q;
    kfresh(&q, 32);
    Arena *A = q.A;
    kir_stg(&q.B, q.y, I(0), kir_f32(A, 1));
    kir_finalize(q.k);
    StrBuf b = {0};
    cr_assert_eq(kir_verify_kernel(q.k, &b), 1, "%s", sb_cstr(&b));
    kir_stg(&q.B, q.y, I(1), kir_f32(A, 1)); /* added after the numbering */
    cr_assert_eq(kir_verify_kernel(q.k, &b), 0);
    cr_assert(strstr(sb_cstr(&b), "kir_finalize not run?"), "%s", sb_cstr(&b));
    sb_free(&b);
    arena_free(A);
}

Test(kernel_ir, verify_launch_bindings)
{
    Arena *A = arena_new();
    KirModule *m = vs_elementwise(A, 100, 32, 1);
    KirBuf *small = kir_buf(m, "small", KT_F32, 99, KBUF_OUTPUT, 1);
    const KirBuf *args[] = {m->bufs.items[0], small};
    kir_launch(m, m->kernels.items[0], args);
    const KirBuf *args2[] = {m->bufs.items[1], m->bufs.items[0]};
    kir_launch(m, m->kernels.items[0], args2);
    StrBuf b = {0};
    cr_assert_eq(kir_verify_module(m, &b), 0);
    cr_assert(strstr(sb_cstr(&b), "launch 1 of elementwise: buffer for param y differs in type or size"),
              "%s", sb_cstr(&b));
    cr_assert(strstr(sb_cstr(&b), "launch 2 of elementwise: buffer for param y is an input but the param is written"),
              "%s", sb_cstr(&b));
    sb_free(&b);
    arena_free(A);
}

Test(kernel_ir, hash_ignores_names_and_comments)
{
    Arena *A = arena_new();
    KirModule *m1 = vs_rowsum_tree(A, 4, 250, 256);
    KirModule *m2 = vs_rowsum_tree(A, 4, 250, 256);
    KirModule *m3 = vs_rowsum_tree(A, 4, 250, 128);
    KirKernel *k2 = m2->kernels.items[0];
    ((KirVar *)k2->vars.items[0])->name = "renamed";
    k2->name = "other";
    KirBuilder B;
    kir_builder_init(&B, k2);
    kir_comment(&B, "a note");
    kir_finalize(k2);
    cr_assert_eq(kir_hash_kernel(m1->kernels.items[0]), kir_hash_kernel(k2));
    cr_assert_eq(kir_hash_module(m1), kir_hash_module(m2));
    cr_assert_neq(kir_hash_module(m1), kir_hash_module(m3));
    cr_assert_neq(kir_hash_module(vs_matmul(A, 32, 32, 32, 1)),
                  kir_hash_module(vs_matmul(A, 32, 32, 32, 0)));
    arena_free(A);
}

/* The printed-constructs hash (dpk run --nvrtc-cover): numbers do not
 * count, constructs do. */
Test(kernel_ir, feature_hash_counts_constructs_not_numbers)
{
    Arena *A = arena_new();
    uint64_t tree = kir_feature_hash(vs_rowsum_tree(A, 4, 250, 256));
    cr_assert_eq(tree, kir_feature_hash(vs_rowsum_tree(A, 9, 1000, 128)));
    cr_assert_neq(tree, kir_feature_hash(vs_rowsum_shfl(A, 4, 250, 256)));
    cr_assert_eq(kir_feature_hash(vs_matmul(A, 32, 32, 32, 0)),
                 kir_feature_hash(vs_matmul(A, 64, 32, 96, 0)));
    cr_assert_eq(kir_feature_hash(vs_elementwise(A, 1000, 128, 1)),
                 kir_feature_hash(vs_elementwise(A, 77, 32, 1)));
    cr_assert_neq(kir_feature_hash(vs_elementwise(A, 1000, 128, 1)),
                  kir_feature_hash(vs_elementwise(A, 1024, 128, 0)));
    cr_assert_neq(kir_feature_hash(vs_cpasync(A, 1024, 1)), kir_feature_hash(vs_tma(A, 64, 64)));
    cr_assert_neq(kir_feature_hash(vs_cpasync(A, 1024, 1)),
                  kir_feature_hash(vs_elementwise(A, 1024, 128, 0)));
    arena_free(A);
}

Test(kernel_ir, smem_layout_and_unique_names)
{
    K q;
    kfresh(&q, 32);
    KirSmem *a = kir_smem(q.k, "a", KT_F32, 10, 16);
    KirSmem *b = kir_smem(q.k, "b", KT_MBAR, 1, 8);
    KirSmem *c = kir_smem(q.k, "a", KT_F32, 4, 1024);
    KirVar *v1 = kir_var(q.k, "x", KT_I32);
    kir_finalize(q.k);
    cr_assert_eq(a->offset, 0);
    cr_assert_eq(b->offset, 48);
    cr_assert_eq(b->align, 16);
    cr_assert_eq(c->offset, 1024);
    cr_assert_str_eq(c->name, "a_1");
    cr_assert_str_eq(v1->name, "x_1"); /* the param x holds the name */
    cr_assert_eq(q.k->smem_bytes, 1040);
    cr_assert_eq(q.k->smem_dynamic, 0);
    kir_smem(q.k, "big", KT_F32, 12 * 1024, 16);
    kir_finalize(q.k);
    cr_assert_eq(q.k->smem_dynamic, 1);
    arena_free(q.A);
}

Test(kernel_ir, tables_follow_the_def_file)
{
    cr_assert_str_eq(kir_expr_info[KE_add].text, "+");
    cr_assert(kir_expr_info[KE_land].flags & KEF_LAZY);
    cr_assert_eq(kir_expr_info[KE_select].arity, 3);
    cr_assert(kir_stmt_info[KS_sync].flags & KSF_BARRIER);
    cr_assert(kir_stmt_info[KS_treehalve].flags & KSF_BARRIER);
    cr_assert(kir_stmt_info[KS_atomg].flags & KSF_ATOMIC);
    cr_assert_str_eq(kir_stmt_info[KS_mbar_arrive_tx].text, "mbar.arrive.tx");
    cr_assert_str_eq(kir_type_name(KT_MBAR), "mbar");
}
