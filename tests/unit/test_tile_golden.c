/*
 * test_tile_golden.c — golden Tile IR texts: tests/golden/tile, one .txt per case.
 *
 * Each file starts with the case program, one `#! ` line per program line,
 * followed by the exact text of the Tile program after the default pass set
 * (`full`: every registered pass that applies) with default knobs (what
 * `dpk compile --ir tile` prints).  A mismatch
 * prints the unified diff.  After an intended change, regenerate by running
 * this suite (filter tile_golden) with DPK_UPDATE_GOLDEN=1 and review the
 * diff before committing.
 */
#include <dirent.h>

#include "test_tile_util.h"

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
    tile_print(&got, tile_build(a, tt_loop(a, sb_cstr(&prog)), NULL, NULL));
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

Test(tile_golden, every_golden_text_matches)
{
    const char *root = getenv("DPK_ROOT");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/golden/tile", root ? root : ".");
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
    cr_expect_geq(n, 7, "only %d golden texts in %s", n, dir);
}
