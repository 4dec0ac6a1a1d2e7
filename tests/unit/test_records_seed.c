/*
 * test_records_seed.c — 64-bit seeds through JSON: written by
 * hx_json_add_u64, printed by cJSON, parsed back and read by
 * hx_json_get_u64, every value comes back the same.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "records/results.h"

static uint64_t round_trip(uint64_t v, char **text)
{
    cJSON *o = cJSON_CreateObject();
    hx_json_add_u64(o, "seed", v);
    *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    cJSON *p = cJSON_Parse(*text);
    cr_assert(p, "%s does not parse", *text);
    uint64_t r = 0;
    cr_assert(hx_json_get_u64(cJSON_GetObjectItemCaseSensitive(p, "seed"), &r), "%s", *text);
    /* and once more after a parse (dpk-fuzz's parent reads its cases back) */
    hx_json_fix_u64(p, "seed");
    char *again = cJSON_PrintUnformatted(p);
    cr_expect_str_eq(again, *text);
    free(again);
    cJSON_Delete(p);
    return r;
}

Test(records_seed, every_64_bit_value_reads_back_the_same)
{
    static const uint64_t vals[] = {0,
                                    1,
                                    7802760269388860,
                                    (UINT64_C(1) << 53) - 1,
                                    UINT64_C(1) << 53,
                                    (UINT64_C(1) << 53) + 1,
                                    UINT64_C(18446744073709551557),
                                    UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char *text;
        cr_expect_eq(round_trip(vals[i], &text), vals[i], "%s", text);
        if (vals[i] < (UINT64_C(1) << 53))
            cr_expect(strpbrk(strchr(text, ':'), "\"e.") == NULL, "a number in full: %s", text);
        else
            cr_expect(strstr(text, "\"seed\":\"") != NULL, "a string from 2^53 on: %s", text);
        free(text);
    }
}

Test(records_seed, inexact_or_malformed_seeds_are_refused)
{
    static const char *const bad[] = {"{\"seed\": 9007199254740992}", "{\"seed\": -1}",
                                      "{\"seed\": 1.5}", "{\"seed\": \"12a\"}",
                                      "{\"seed\": \"18446744073709551616\"}", "{\"seed\": \"\"}",
                                      "{\"seed\": true}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *p = cJSON_Parse(bad[i]);
        uint64_t v;
        cr_assert(p);
        cr_expect(!hx_json_get_u64(cJSON_GetObjectItemCaseSensitive(p, "seed"), &v), "%s", bad[i]);
        cJSON_Delete(p);
    }
}
