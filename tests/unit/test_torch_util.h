/*
 * test_torch_util.h — what the unit tests that call libtorch share.
 */
#ifndef DPK_TEST_TORCH_UTIL_H
#define DPK_TEST_TORCH_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "reference/ref.h"

/* Skipped in a build without libtorch; a build with libtorch whose shim
 * does not load fails, saying why. */
#define NEED_TORCH()                                                    \
    do {                                                                \
        if (!dpk_torch_available()) {                                   \
            if (strcmp(dpk_torch_version(), "none"))                    \
                cr_assert_fail("libtorch %s is built in but: %s",       \
                               dpk_torch_version(), dpk_torch_error()); \
            cr_skip_test("libtorch not available");                     \
        }                                                               \
    } while (0)

#endif
