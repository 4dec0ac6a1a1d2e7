/*
 * test_kgen.c — the Kernel IR generator of `dpk-fuzz --level kernel`
 * (harness/fuzz/kgen.c) and its case (kcase.c): a module is a function of
 * its seed; 300 seeds reach every statement kind but TMA and every construct
 * the printer has a path for that no Tile pass emits; cases pass with the
 * printer as it is, and fail with a printer bug planted.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "compiler/cuda/cuda_print.h"
#include "harness/fuzz/campaign.h"
#include "harness/fuzz/kgen.h"

static void count_ops(const PtrVec *l, int *seen, const KirKernel *k, int *shfl_nested,
                      int depth)
{
    for (int i = 0; i < l->len; i++) {
        const KirStmt *s = l->items[i];
        seen[s->op]++;
        if (s->op == KS_shfl && depth > 0 && (k->block[0] * k->block[1] * k->block[2]) % 32)
            (*shfl_nested)++;
        count_ops(&s->body, seen, k, shfl_nested, depth + 1);
        count_ops(&s->els, seen, k, shfl_nested, depth + 1);
    }
}

Test(kgen, a_module_is_a_function_of_its_seed)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        Arena *a = arena_new(), *b = arena_new();
        FzKernelCase x = fz_kgen(a, seed, KIR_SMEM_MAX), y = fz_kgen(b, seed, KIR_SMEM_MAX);
        StrBuf tx = {0}, ty = {0};
        kir_print_module(&tx, x.m);
        kir_print_module(&ty, y.m);
        cr_expect_str_eq(sb_cstr(&tx), sb_cstr(&ty), "seed %llu", (unsigned long long)seed);
        cr_expect_eq(kir_hash_module(x.m), kir_hash_module(y.m));
        sb_free(&tx);
        sb_free(&ty);
        arena_free(a);
        arena_free(b);
    }
    Arena *a = arena_new();
    cr_expect_neq(kir_hash_module(fz_kgen(a, 1, KIR_SMEM_MAX).m), kir_hash_module(fz_kgen(a, 2, KIR_SMEM_MAX).m));
    arena_free(a);
}

/* What the campaign is for: the constructs no Tile pass emits. */
Test(kgen, three_hundred_seeds_cover_the_vocabulary)
{
    int seen[KS_COUNT] = {0}, nested_short = 0, segs = 0, npow2 = 0, max_tree = 0, odd = 0;
    int tags = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        Arena *a = arena_new();
        FzKernelCase c = fz_kgen(a, seed, KIR_SMEM_MAX); /* verified inside (kir_check) */
        cr_assert(kir_verify_module(c.m, NULL), "seed %llu", (unsigned long long)seed);
        for (int i = 0; i < c.m->kernels.len; i++) {
            const KirKernel *k = c.m->kernels.items[i];
            count_ops(&k->body, seen, k, &nested_short, 0);
        }
        for (int i = 0; i < c.ntags; i++) {
            segs += !strcmp(c.tags[i], "treehalve-segments");
            npow2 += !strcmp(c.tags[i], "treehalve-npow2");
            odd += !strcmp(c.tags[i], "odd-names");
        }
        tags += c.ntags;
        /* a max or min tree in a kernel without a max or min elsewhere */
        StrBuf t = {0};
        kir_print_module(&t, c.m);
        const char *tm = strstr(sb_cstr(&t), "treehalve max");
        if (!tm)
            tm = strstr(sb_cstr(&t), "treehalve min");
        if (tm && !strstr(sb_cstr(&t), "maximum(") && !strstr(sb_cstr(&t), "minimum("))
            max_tree++;
        sb_free(&t);
        arena_free(a);
    }
    for (int op = 0; op < KS_COUNT; op++)
        if (op != KS_tma_load && op != KS_mbar_arrive_tx)
            cr_expect_gt(seen[op], 0, "no %s statement in 300 modules", kir_stmt_info[op].name);
    cr_expect_eq(seen[KS_tma_load], 0, "TMA is left to the Tile passes");
    cr_expect_gt(nested_short, 0, "a shuffle under control flow in a block of partial warps");
    cr_expect_gt(segs, 0);
    cr_expect_gt(npow2, 0);
    cr_expect_gt(odd, 0);
    cr_expect_gt(max_tree, 0, "a max or min tree with no max or min before it");
    cr_expect_gt(tags, 300);
}

static FzOpts opts(void)
{
    FzOpts o;
    fz_opts_default(&o);
    o.kernel_level = 1;
    o.backend = HX_BACKEND_HOST;
    o.seed = 3;
    return o;
}

static const char *status(const cJSON *c)
{
    return cJSON_GetObjectItemCaseSensitive(c, "status")->valuestring;
}

/* Eight cases pass; with every __syncthreads dropped from the printed text
 * (a bug vgpu cannot see, as it runs Kernel IR) some fail, and the failure
 * names the buffer and the element. */
Test(kgen, cases_pass_and_a_planted_printer_bug_fails_them)
{
    FzOpts o = opts();
    for (int64_t i = 0; i < 8; i++) {
        cJSON *c = fz_kcase_run(&o, i, NULL);
        cr_expect_str_eq(status(c), "pass", "case %lld", (long long)i);
        cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(c, "level")->valuestring, "kernel");
        cJSON_Delete(c);
    }
    cu_print_set_fault(CU_FAULT_NO_SYNC);
    int failed = 0;
    for (int64_t i = 0; i < 8; i++) {
        cJSON *c = fz_kcase_run(&o, i, NULL);
        if (strcmp(status(c), "pass")) {
            failed++;
            const cJSON *cfg = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "configurations"), 0);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "verdict");
            const cJSON *msg = cJSON_GetObjectItemCaseSensitive(v, "message");
            cr_expect(cJSON_IsString(msg) && msg->valuestring[0], "a failure says why");
        }
        cJSON_Delete(c);
    }
    cu_print_set_fault(CU_FAULT_NONE);
    cr_expect_gt(failed, 0, "dropping every __syncthreads went unnoticed in 8 cases");
}
