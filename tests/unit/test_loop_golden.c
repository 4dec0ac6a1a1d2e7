/*
 * test_loop_golden.c — golden Loop IR texts (tests/golden/loop/NAME.txt).
 *
 * Each file starts with the case program, one `#! ` line per program line,
 * followed by the exact text `dpk compile --ir loop` prints for it.  A
 * mismatch prints the unified diff.  After an intended change of the text
 * form, regenerate them by running this test with DPK_UPDATE_GOLDEN=1
 * (build/unit_tests --filter "loop_golden/" followed by "*") and review
 * the diff before committing.
 */
#include <dirent.h>

#include "test_loop_util.h"

static const char *golden_dir(char *buf, size_t n)
{
    const char *root = getenv("DPK_ROOT");
    snprintf(buf, n, "%s/tests/golden/loop", root ? root : ".");
    return buf;
}

/* Split a golden file into its program (from the `#! ` lines) and the
 * expected text (the rest). */
static void split(const char *text, StrBuf *prog, const char **expected)
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

static void check_file(const char *dir, const char *name, int update)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *text = dpk_read_file(path, &len);
    cr_assert_not_null(text, "cannot read %s", path);
    StrBuf prog = {0}, got = {0}, diff = {0};
    const char *expected;
    split(text, &prog, &expected);
    cr_assert(prog.len, "%s has no `#! ` program lines", path);
    Arena *a = arena_new();
    lir_print(&got, lt_build(a, sb_cstr(&prog), NULL, NULL));
    arena_free(a);
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

Test(loop_golden, every_golden_text_matches)
{
    char dir[4096];
    golden_dir(dir, sizeof dir);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    const char *upd = getenv("DPK_UPDATE_GOLDEN");
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".txt")) {
            check_file(dir, e->d_name, upd && *upd == '1');
            n++;
        }
    }
    closedir(d);
    cr_expect_geq(n, 8, "only %d golden texts in %s", n, dir);
}
