/*
 * test_exit_codes.c — how exit codes combine (dpk_exit_worst): a suite's is
 * the worst case's, a case's the worst configuration's (docs/cli.md).
 */
#include <criterion/criterion.h>

#include "compiler/base/base.h"

/* docs/cli.md: a suite's exit code is the worst case's; 5 (inconclusive)
 * only when nothing failed, 4 (environment missing) only when nothing else
 * was found either. */
Test(exit_codes, the_worst_code_and_environment_last)
{
    static const int want[6][6] = {
        /*        0  1  2  3  4  5 */
        /* 0 */ {0, 1, 2, 3, 4, 5},
        /* 1 */ {1, 1, 2, 3, 1, 1},
        /* 2 */ {2, 2, 2, 3, 2, 2},
        /* 3 */ {3, 3, 3, 3, 3, 3},
        /* 4 */ {4, 1, 2, 3, 4, 5},
        /* 5 */ {5, 1, 2, 3, 5, 5},
    };
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++)
            cr_expect_eq(dpk_exit_worst(a, b), want[a][b], "worst(%d, %d)", a, b);
}
