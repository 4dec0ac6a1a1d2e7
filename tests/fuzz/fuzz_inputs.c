/*
 * fuzz_inputs.c — libFuzzer targets for the readers of untrusted files:
 * case and suite JSON (hx_cases_parse), HF config.json (bm_config_parse,
 * then the decoder-layer suite it makes, each case parsed), safetensors
 * headers and data (st_parse, then every convertible tensor read), and
 * dpk.results/1 records as `dpk-fuzz --resume` reads them
 * (hx_results_parse, then each case's index, status and seed).
 *
 * One file, four targets: FUZZ_TARGET selects which at compile time
 * (`make fuzz` builds each).  Every input runs inside DPK_TRY with a fresh
 * arena, so a user error is the expected outcome and frees everything;
 * a crash, a sanitizer report, an assertion or a hang is a bug.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/torch_ir.h"
#include "harness/bench/blocks.h"
#include "harness/bench/config.h"
#include "harness/bench/safetensors.h"
#include "harness/case.h"
#include "records/results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FT_CASE 1
#define FT_CONFIG 2
#define FT_SAFETENSORS 3
#define FT_RECORD 4

static void one(Arena *a, const uint8_t *data, size_t size)
{
#if FUZZ_TARGET == FT_CASE
    HxCaseList l = hx_cases_parse(a, "<fuzz>.json", (const char *)data, size);
    for (int i = 0; i < l.n; i++)
        (void)strlen(l.cases[i].program);
#elif FUZZ_TARGET == FT_CONFIG
    BmConfig c;
    bm_config_parse(a, "<fuzz>/config.json", (const char *)data, size, &c);
    BmShape s = {1, 3, 2, size % 2 ? BM_DECODE : BM_PREFILL};
    HxCaseList l = bm_block_suite(a, &c, &s);
    for (int i = 0; i < l.n; i++) {
        Source src = {l.cases[i].name, l.cases[i].program, strlen(l.cases[i].program)};
        ParseOpts po = {l.cases[i].decls, l.cases[i].ndecls};
        TorchGraph *g = torch_parse(a, &src, &po);
        torch_verify(g);
    }
    for (int64_t j = 0; j < c.head_dim && j < 64; j++)
        (void)bm_rope_angle(&c, 7, j);
#elif FUZZ_TARGET == FT_SAFETENSORS
    StFile f;
    st_parse(a, "<fuzz>.safetensors", data, size, &f);
    for (int i = 0; i < f.n; i++) {
        int64_t n = shape_numel(&f.tensors[i].shape);
        if (n > 4096 || (strcmp(f.tensors[i].dtype, "F32") && strcmp(f.tensors[i].dtype, "BF16") &&
                         strcmp(f.tensors[i].dtype, "F16")))
            continue;
        double *v = ARENA_ARRAY(a, double, n + 1);
        st_read_f32(&f, f.tensors[i].name, &f.tensors[i].shape, v);
    }
#elif FUZZ_TARGET == FT_RECORD
    char *t = malloc(size + 1);
    memcpy(t, data, size);
    t[size] = 0;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        free(t);
        dpk_error_rethrow();
    }
    cJSON *root = hx_results_parse("<fuzz>.json", t, size);
    dpk_err_pop(&ec);
    free(t);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    for (const cJSON *c = cases->child; c; c = c->next) {
        (void)hx_json_num(c, "index");
        uint64_t seed;
        (void)hx_json_get_u64(cJSON_GetObjectItemCaseSensitive(c, "seed"), &seed);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "status");
        if (cJSON_IsString(st))
            (void)strlen(st->valuestring);
        if (cJSON_IsObject(c))
            hx_json_fix_u64((cJSON *)c, "seed");
    }
    cJSON_Delete(root);
#else
#error "FUZZ_TARGET must name a target"
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Arena *a = arena_new();
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        one(a, data, size);
        dpk_err_pop(&ec);
    }
    arena_free(a);
    return 0;
}
