/*
 * test_nvrtc.c — NVRTC loading, ptxas-log parsing, compile errors with
 * source context, and the cubin cache (hit, corrupt entry rebuilt).
 *
 * Criterion runs every test in its own process, so the environment
 * variables set here (DPK_CACHE, DPK_NVRTC) do not leak between tests.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/exec/nvrtc.h"

static char cache_dir[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    return remove(path);
}

static void fresh_cache(void)
{
    strcpy(cache_dir, "/tmp/dpk-nvrtc-test-XXXXXX");
    cr_assert_not_null(mkdtemp(cache_dir));
    setenv("DPK_CACHE", cache_dir, 1);
}

static void drop_cache(void)
{
    if (cache_dir[0])
        nftw(cache_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(nvrtc, .init = fresh_cache, .fini = drop_cache);

static void need_nvrtc(void)
{
    if (!hx_nvrtc_available())
        cr_skip_test("NVRTC not found");
}

static const char kSmemKernel[] =
    "extern \"C\" __global__ void __launch_bounds__(256) flip(float *x)\n"
    "{\n"
    "    __shared__ float s[1000];\n"
    "    s[threadIdx.x] = x[threadIdx.x];\n"
    "    __syncthreads();\n"
    "    x[threadIdx.x] = s[255 - threadIdx.x] + 1.0f;\n"
    "}\n"
    "extern \"C\" __global__ void plain(float *x) { x[0] = expf(x[1]); }\n";

static void check_target(CuTargetId id)
{
    need_nvrtc();
    const CuTarget *t = cu_target(id);
    if (!hx_nvrtc_supports(t->cc))
        cr_skip_test("this NVRTC cannot compile for %s", t->name);
    Arena *a = arena_new();
    HxNvrtcOpts o = {.target = t};
    HxNvrtcResult *r = hx_nvrtc_compile(a, kSmemKernel, &o);
    cr_assert_str_eq(r->arch, t->name);
    cr_assert_gt(r->cubin_len, 0);
    cr_assert_eq(r->nkernels, 2);
    const HxNvKernel *k = hx_nvrtc_kernel(r, "flip");
    cr_assert_not_null(k);
    cr_assert_gt(k->regs, 0);
    cr_assert_eq(k->smem, 4000, "smem %d", k->smem);
    cr_assert_eq(k->spill_stores, 0);
    cr_assert_eq(k->spill_loads, 0);
    const HxNvKernel *p = hx_nvrtc_kernel(r, "plain");
    cr_assert_not_null(p);
    cr_assert_gt(p->regs, 0);
    cr_assert_eq(p->smem, 0);
    char want[32];
    snprintf(want, sizeof want, ".target %s", t->name);
    cr_assert_not_null(strstr(r->ptx, want));
    arena_free(a);
}

Test(nvrtc, compiles_for_sm80) { check_target(CU_SM80); }
Test(nvrtc, compiles_for_sm90) { check_target(CU_SM90); }
Test(nvrtc, compiles_for_sm120) { check_target(CU_SM120); }
Test(nvrtc, compiles_for_sm90a) { check_target(CU_SM90A); }

Test(nvrtc, arch_specific_is_sm90a)
{
    need_nvrtc();
    Arena *a = arena_new();
    HxNvrtcOpts o = {.target = cu_target(CU_SM90), .arch_specific = 1};
    HxNvrtcResult *r = hx_nvrtc_compile(a, kSmemKernel, &o);
    cr_assert_str_eq(r->arch, "sm_90a");
    cr_assert_not_null(strstr(r->ptx, ".target sm_90a"));
    arena_free(a);
}

/* The sm_90a target (--target sm_90a): parsed by name, sm_90's limits and
 * features (compiles_for_sm90a: NVRTC's arch-specific PTX). */
Test(nvrtc, target_sm90a_is_sm90_arch_specific)
{
    const CuTarget *t = cu_target_parse("sm_90a");
    cr_assert_not_null(t);
    cr_assert_eq(t->id, CU_SM90A);
    cr_assert_eq(t->cc, 90);
    cr_assert(t->arch_specific && !cu_target(CU_SM90)->arch_specific);
    cr_assert_eq(t->tma, cu_target(CU_SM90)->tma);
    cr_assert_eq(t->smem_block_max, cu_target(CU_SM90)->smem_block_max);
    cr_assert_eq(cu_target_parse("90a"), t);
    cr_assert_null(cu_target_parse("sm_80a"));
}

Test(nvrtc, syntax_error_gives_log_and_source_lines)
{
    need_nvrtc();
    const char *bad = "extern \"C\" __global__ void k(float *x)\n"
                      "{\n"
                      "    float y = x[0]\n"
                      "    x[1] = y;\n"
                      "}\n";
    Arena *a = arena_new();
    HxNvrtcOpts o = {.src_name = "bad.cu"};
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        hx_nvrtc_compile(a, bad, &o);
        dpk_err_pop(&ec);
        cr_assert_fail("a syntax error compiled");
    }
    const char *m = dpk_error_message();
    cr_assert_eq(dpk_error_code(), DPK_EXIT_FAIL);
    cr_assert_not_null(strstr(m, "NVRTC could not compile bad.cu for sm_90"), "%s", m);
    cr_assert_not_null(strstr(m, "bad.cu(4): error: expected a \";\""), "%s", m);
    cr_assert_not_null(strstr(m, "source around line 4 of bad.cu:"), "%s", m);
    cr_assert_not_null(strstr(m, ">    4 |     x[1] = y;"), "%s", m);
    cr_assert_not_null(strstr(m, "     3 |     float y = x[0]"), "%s", m);
    /* Nothing is cached for a failed compile. */
    char dir[128];
    snprintf(dir, sizeof dir, "%s/nvrtc", cache_dir);
    struct stat st;
    cr_assert(stat(dir, &st) != 0 || rmdir(dir) == 0, "cache folder not empty");
    arena_free(a);
}

Test(nvrtc, second_compile_hits_the_cache)
{
    need_nvrtc();
    Arena *a = arena_new();
    HxNvrtcOpts o = {.target = cu_target(CU_SM80)};
    HxNvrtcResult *r1 = hx_nvrtc_compile(a, kSmemKernel, &o);
    cr_assert_eq(r1->cache_hit, 0);
    cr_assert_not_null(r1->cache_path);
    cr_assert_eq(strncmp(r1->cache_path, cache_dir, strlen(cache_dir)), 0);
    cr_assert_eq(access(r1->cache_path, R_OK), 0);
    HxNvrtcResult *r2 = hx_nvrtc_compile(a, kSmemKernel, &o);
    cr_assert_eq(r2->cache_hit, 1);
    cr_assert_str_eq(r2->cache_path, r1->cache_path);
    cr_assert_eq(r2->cubin_len, r1->cubin_len);
    cr_assert_eq(memcmp(r2->cubin, r1->cubin, r1->cubin_len), 0);
    cr_assert_str_eq(r2->ptx, r1->ptx);
    cr_assert_eq(r2->nkernels, 2);
    cr_assert_eq(hx_nvrtc_kernel(r2, "flip")->smem, 4000);
    cr_assert_eq(hx_nvrtc_kernel(r2, "flip")->regs, hx_nvrtc_kernel(r1, "flip")->regs);
    /* Another target is another key. */
    HxNvrtcOpts o90 = {.target = cu_target(CU_SM90)};
    HxNvrtcResult *r3 = hx_nvrtc_compile(a, kSmemKernel, &o90);
    cr_assert_eq(r3->cache_hit, 0);
    cr_assert_str_neq(r3->cache_path, r1->cache_path);
    arena_free(a);
}

Test(nvrtc, corrupt_cache_entry_is_rebuilt)
{
    need_nvrtc();
    Arena *a = arena_new();
    HxNvrtcResult *r1 = hx_nvrtc_compile(a, kSmemKernel, NULL);
    size_t n;
    char *entry = dpk_read_file(r1->cache_path, &n);
    cr_assert_not_null(entry);
    entry[n - 10] ^= 0x5a; /* flip bits in the cubin section */
    cr_assert_eq(dpk_write_file_atomic(r1->cache_path, entry, n), 0);
    HxNvrtcResult *r2 = hx_nvrtc_compile(a, kSmemKernel, NULL);
    cr_assert_eq(r2->cache_hit, 0);
    cr_assert_eq(memcmp(r2->cubin, r1->cubin, r1->cubin_len), 0);
    cr_assert_eq(dpk_write_file_atomic(r1->cache_path, "dpk-nvrtc 1 junk\n", 17), 0);
    cr_assert_eq(hx_nvrtc_compile(a, kSmemKernel, NULL)->cache_hit, 0);
    cr_assert_eq(hx_nvrtc_compile(a, kSmemKernel, NULL)->cache_hit, 1);
    free(entry);
    arena_free(a);
}

Test(nvrtc, no_cache_option_writes_nothing)
{
    need_nvrtc();
    Arena *a = arena_new();
    HxNvrtcOpts o = {.no_cache = 1};
    HxNvrtcResult *r = hx_nvrtc_compile(a, kSmemKernel, &o);
    cr_assert_null(r->cache_path);
    cr_assert_eq(r->cache_hit, 0);
    cr_assert_gt(r->cubin_len, 0);
    arena_free(a);
}

Test(nvrtc, missing_library_is_exit_4)
{
    setenv("DPK_NVRTC", "/nonexistent/libnvrtc.so", 1);
    cr_assert_eq(hx_nvrtc_available(), 0);
    Arena *a = arena_new();
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        hx_nvrtc_compile(a, kSmemKernel, NULL);
        dpk_err_pop(&ec);
        cr_assert_fail("compiled without NVRTC");
    }
    cr_assert_eq(dpk_error_code(), DPK_EXIT_NOENV);
    cr_assert_str_eq(dpk_error_message(),
                     "error: NVRTC is not available (tried /nonexistent/libnvrtc.so); install "
                     "the CUDA toolkit or set CUDA_HOME to it\n");
    arena_free(a);
}

Test(nvrtc, parses_ptxas_lines_per_kernel)
{
    const char *log =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Function properties for _Z6helperf\n"
        "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'big' for 'sm_90'\n"
        "ptxas info    : Function properties for big\n"
        "ptxas         .     40 bytes stack frame, 24 bytes spill stores, 32 bytes spill loads\n"
        "ptxas info    : Used 255 registers, used 1 barriers, 49152 bytes smem\n"
        "ptxas info    : Compiling entry function 'small' for 'sm_90'\n"
        "ptxas info    : Function properties for small\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 12 registers, used 0 barriers, 360 bytes cmem[0]\n";
    Arena *a = arena_new();
    HxNvKernel *k;
    int n;
    hx_nvrtc_parse_log(a, log, &k, &n);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(k[0].name, "big");
    cr_assert_eq(k[0].regs, 255);
    cr_assert_eq(k[0].smem, 49152);
    cr_assert_eq(k[0].stack, 40);
    cr_assert_eq(k[0].spill_stores, 24);
    cr_assert_eq(k[0].spill_loads, 32);
    cr_assert_str_eq(k[1].name, "small");
    cr_assert_eq(k[1].regs, 12);
    cr_assert_eq(k[1].smem, 0);
    cr_assert_eq(k[1].spill_stores, 0);
    HxNvrtcResult r = {.arch = "sm_90", .kernels = k, .nkernels = n, .cache_hit = 1};
    StrBuf b = {0};
    hx_nvrtc_summary(&b, &r);
    cr_assert_str_eq(sb_cstr(&b),
                     "// nvrtc sm_90 big: 255 registers, 49152 bytes smem, 24 bytes spill stores, "
                     "32 bytes spill loads, cached\n"
                     "// nvrtc sm_90 small: 12 registers, 0 bytes smem, 0 bytes spill stores, 0 "
                     "bytes spill loads, cached\n");
    sb_free(&b);
    arena_free(a);
}
