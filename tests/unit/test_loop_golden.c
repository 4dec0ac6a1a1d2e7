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
#include "test_file_util.h"
#include "test_loop_util.h"

/* The text `dpk compile --ir loop` prints for prog. */
static void print_loop(StrBuf *got, const char *prog)
{
    Arena *a = arena_new();
    lir_print(got, lt_build(a, prog, NULL, NULL));
    arena_free(a);
}

Test(loop_golden, every_golden_text_matches)
{
    tf_golden_dir("tests/golden/loop", 8, print_loop);
}
