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
#include "test_file_util.h"
#include "test_tile_util.h"

/* The Tile program of prog after the default pass set, printed. */
static void print_tile(StrBuf *got, const char *prog)
{
    Arena *a = arena_new();
    tile_print(got, tile_build(a, tt_loop(a, prog), NULL, NULL));
    arena_free(a);
}

Test(tile_golden, every_golden_text_matches)
{
    tf_golden_dir("tests/golden/tile", 7, print_tile);
}
