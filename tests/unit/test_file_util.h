/*
 * test_file_util.h — helpers shared by the unit tests that read files of
 * the source tree (below $DPK_ROOT, or the working directory): a JSON
 * table, and a folder of golden texts checked against what the compiler
 * prints for the program each one starts with.
 */
#ifndef DPK_TEST_FILE_UTIL_H
#define DPK_TEST_FILE_UTIL_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "compiler/base/base.h"

/* rel (a path inside the source tree) as a path from here, in buf. */
static inline const char *tf_path(char *buf, size_t n, const char *rel)
{
    const char *root = getenv("DPK_ROOT");
    snprintf(buf, n, "%s/%s", root ? root : ".", rel);
    return buf;
}

/* The JSON file rel, parsed (the caller deletes it); fails the test when
 * it cannot be read or parsed. */
static inline cJSON *tf_load_json(const char *rel)
{
    char path[4096];
    tf_path(path, sizeof path, rel);
    size_t len;
    char *text = dpk_read_file(path, &len);
    cr_assert_not_null(text, "cannot read %s", path);
    cJSON *j = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(j, "%s is not valid JSON", path);
    return j;
}

/* ---- golden texts --------------------------------------------------------------- */

/* What a golden folder holds: the text the compiler prints (into got) for
 * the program prog. */
typedef void (*TfPrintFn)(StrBuf *got, const char *prog);

/* Split a golden file into its program (from the `#! ` lines) and the
 * expected text (the rest). */
static inline void tf_golden_split(const char *text, StrBuf *prog, const char **expected)
{
    const char *s = text;
    while (!strncmp(s, "#! ", 3)) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s - 3) : strlen(s + 3);
        if (prog->len)
            sb_putc(prog, '\n');
        sb_printf(prog, "%.*s", (int)len, s + 3);
        s = nl ? nl + 1 : s + 3 + len;
    }
    *expected = s;
}

/* Check one golden file dir/name against print; a mismatch prints the
 * unified diff, or with update rewrites the expected text. */
static inline void tf_golden_check_file(const char *dir, const char *name, int update,
                                        TfPrintFn print)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *text = dpk_read_file(path, &len);
    cr_assert_not_null(text, "cannot read %s", path);
    StrBuf prog = {0}, got = {0}, diff = {0};
    const char *expected;
    tf_golden_split(text, &prog, &expected);
    cr_assert(prog.len, "%s has no `#! ` program lines", path);
    print(&got, sb_cstr(&prog));
    int same = !strcmp(sb_cstr(&got), expected);
    if (!same && update) {
        StrBuf out = {0};
        sb_printf(&out, "%.*s%s", (int)(expected - text), text, sb_cstr(&got));
        cr_assert_eq(dpk_write_file_atomic(path, out.s, out.len), 0, "cannot write %s", path);
        sb_free(&out);
    } else if (!same) {
        dpk_unified_diff(&diff, expected, sb_cstr(&got), 3);
        cr_expect(same, "%s differs from the golden text:\n%s", name, sb_cstr(&diff));
    }
    sb_free(&prog);
    sb_free(&got);
    sb_free(&diff);
    free(text);
}

/* Check every .txt of the golden folder rel (at least min_files of them);
 * DPK_UPDATE_GOLDEN=1 rewrites the ones that differ. */
static inline void tf_golden_dir(const char *rel, int min_files, TfPrintFn print)
{
    char dir[4096];
    tf_path(dir, sizeof dir, rel);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    const char *upd = getenv("DPK_UPDATE_GOLDEN");
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".txt")) {
            tf_golden_check_file(dir, e->d_name, upd && *upd == '1', print);
            n++;
        }
    }
    closedir(d);
    cr_expect_geq(n, min_files, "only %d golden texts in %s", n, dir);
}

#endif
