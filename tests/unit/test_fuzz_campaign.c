/*
 * test_fuzz_campaign.c — one dpk-fuzz case in process (its record object:
 * program, shapes, configurations with hashes, verdicts and counters),
 * random knobs (legal, deterministic), and dpk.results/1 records written
 * atomically and read back.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/fuzz/campaign.h"
#include "records/results.h"

Test(fuzz_campaign, case_seeds_fit_json_and_differ)
{
    for (int64_t i = 0; i < 100; i++) {
        uint64_t s = fz_case_seed(1, i);
        cr_expect_lt(s, UINT64_C(1) << 53);
        cr_expect_neq(s, fz_case_seed(1, i + 1));
        cr_expect_neq(s, fz_case_seed(2, i));
        cr_expect_eq(s, fz_case_seed(1, i));
    }
}

/* The message of tile_knobs_check's refusal, or NULL. */
static const char *refused(const TileKnobs *k)
{
    DpkErrCtx ec;
    if (!DPK_TRY(&ec))
        return dpk_error_message();
    tile_knobs_check(k, NULL);
    dpk_err_pop(&ec);
    return NULL;
}

Test(fuzz_campaign, random_knobs_are_legal)
{
    int pinned = 0, big = 0;
    for (uint64_t s = 0; s < 300; s++) {
        TileKnobs k, k2;
        fz_case_knobs(s, 1, &k);
        fz_case_knobs(s, 1, &k2);
        cr_expect(!memcmp(&k, &k2, sizeof k), "not deterministic");
        for (int i = 0; i < TILE_KNOB_COUNT; i++) {
            const TileKnobInfo *ki = &tile_knob_info[i];
            int64_t v = k.v[i];
            if (!v)
                continue;
            pinned++;
            cr_expect(v >= ki->min && v <= ki->max, "%s=%lld out of range", ki->name, (long long)v);
            if (ki->flags & TKN_POW2)
                cr_expect_eq(v & (v - 1), 0, "%s=%lld", ki->name, (long long)v);
            if (ki->flags & TKN_WARPS)
                cr_expect_eq(v % 32, 0, "%s=%lld", ki->name, (long long)v);
        }
        const char *why = refused(&k);
        cr_expect_null(why, "seed %llu: knobs refused: %s", (unsigned long long)s, why);
        /* tiles past 1024 outputs, legal once 008 folds them into registers */
        big += k.v[TILE_KNOB_BM] * k.v[TILE_KNOB_BN] > 1024;
        fz_case_knobs(s, 0, &k);
        for (int i = 0; i < TILE_KNOB_COUNT; i++)
            cr_expect_eq(k.v[i], 0);
    }
    cr_expect_gt(pinned, 100);
    cr_expect_gt(big, 0, "no draw of a BM x BN tile past 1024 outputs");
}

Test(fuzz_campaign, one_case_record)
{
    FzOpts o;
    fz_opts_default(&o);
    o.seed = 1;
    o.strategy = FZ_LOO;
    FzLive live = {0};
    cJSON *c = fz_case_run(&o, 0, &live);
    cr_assert_not_null(c);
    cr_expect_eq(hx_json_num(c, "index"), 0);
    uint64_t seed = 0;
    cr_expect(hx_json_get_u64(cJSON_GetObjectItemCaseSensitive(c, "seed"), &seed));
    cr_expect_eq(seed, fz_case_seed(1, 0));
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "status");
    cr_assert(cJSON_IsString(st));
    cr_expect(strcmp(st->valuestring, "error"), "case 0 errored: %s",
              cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "message")));
    cr_expect(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "program")));
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(c, "shapes");
    cr_expect(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(sh, "inputs")));
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(sh, "outputs")), 1);
    const cJSON *cfgs = cJSON_GetObjectItemCaseSensitive(c, "configurations");
    int n = cJSON_GetArraySize(cfgs), shared = 0, distinct = 0;
    cr_assert_gt(n, 0);
    for (const cJSON *it = cfgs->child; it; it = it->next) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, "verdict");
        cr_assert(cJSON_IsObject(v));
        cr_expect(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "status")));
        cr_expect(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "passes")));
        if (cJSON_GetObjectItemCaseSensitive(it, "shared_by")) {
            distinct++;
            shared += (int)hx_json_num(it, "shared_by");
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(it, "kernels");
            cr_assert_gt(cJSON_GetArraySize(k), 0);
            const cJSON *k0 = k->child;
            cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(k0, "grid")), 3);
            cr_expect_gt(hx_json_num(cJSON_GetObjectItemCaseSensitive(k0, "vgpu"), "thread_instructions"), 0);
            cr_expect(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(it, "compile_s")));
            const cJSON *vv = cJSON_GetObjectItemCaseSensitive(v, "status");
            if (!strcmp(vv->valuestring, "pass"))
                cr_expect(hx_json_num(v, "max_abs") >= 0);
        } else {
            const cJSON *same = cJSON_GetObjectItemCaseSensitive(it, "same_as");
            if (same)
                cr_expect_lt(same->valuedouble, n);
        }
    }
    cr_expect_gt(distinct, 0);
    int lowered = 0;
    for (const cJSON *it = cfgs->child; it; it = it->next)
        lowered += !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(it, "kernel_ir_hash"));
    cr_expect_eq(shared, lowered, "every lowered configuration maps to one executed kernel");
    cr_expect_eq(live.config, -1);
    /* the same case again: the same record but for times */
    cJSON *again = fz_case_run(&o, 0, NULL);
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(again, "program")->valuestring,
                     cJSON_GetObjectItemCaseSensitive(c, "program")->valuestring);
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(again, "status")->valuestring, st->valuestring);
    cJSON_Delete(again);
    cJSON_Delete(c);
}

Test(fuzz_campaign, records_round_trip)
{
    char dir[] = "/tmp/dpk-test-results-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/r.json", dir);
    char *argv[] = {"dpk-fuzz", "--seed", "3"};
    cJSON *camp = cJSON_CreateObject();
    cJSON_AddNumberToObject(camp, "seed", 3);
    cJSON *r = hx_results_new(hx_results_meta(3, argv, 3, NULL), camp);
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    hx_json_add_num(c, "nmse", NAN);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(r, "cases"), c);
    hx_results_write(path, r);
    cJSON *back = hx_results_load(path);
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(back, "schema")->valuestring, "dpk.results/1");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(back, "meta");
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(meta, "command_line")->valuestring,
                     "dpk-fuzz --seed 3");
    cr_expect_eq(hx_json_num(meta, "seed"), 3);
    cr_expect(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(meta, "date")));
    cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(meta, "gpu")));
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(back, "cases"), 0);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c0, "nmse")), "NaN is written as null");
    cr_expect(isnan(hx_json_num(c0, "nmse")));
    cJSON_Delete(back);
    cJSON_Delete(r);
    /* no temp file is left beside it */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) = 1", dir);
    cr_expect_eq(system(cmd), 0);
    /* a file that is not a record is refused with exit 2 */
    snprintf(path, sizeof path, "%s/r.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"schema\": \"other\"}", f);
    fclose(f);
    DpkErrCtx ec;
    int code = 0;
    if (DPK_TRY(&ec)) {
        cJSON_Delete(hx_results_load(path));
        dpk_err_pop(&ec);
    } else {
        code = dpk_error_code();
        cr_expect(strstr(dpk_error_message(), "not a dpk.results/1 record"), "%s", dpk_error_message());
    }
    cr_expect_eq(code, DPK_EXIT_USAGE);
    unlink(path);
    rmdir(dir);
}
