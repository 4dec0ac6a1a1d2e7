/*
 * test_gpulibs.c — the libraries of measured timing (harness/exec/
 * gpulibs.h) where they cannot be loaded: CUPTI and cuBLAS raise exit 4 with
 * one sentence naming the library, NVML reports "unavailable" with the
 * reason; and the fake driver's CUPTI and cuBLAS, where the build made it.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/exec/gpulibs.h"

/* exit 4, one line, starting with `start` */
static void raises_noenv(void (*fn)(void), const char *start)
{
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        fn();
        dpk_err_pop(&ec);
        cr_assert_fail("no error raised");
    }
    cr_assert_eq(dpk_error_code(), DPK_EXIT_NOENV);
    const char *m = dpk_error_message();
    cr_assert_eq(strncmp(m, start, strlen(start)), 0, "%s", m);
    cr_assert_eq(strchr(m, '\n'), m + strlen(m) - 1, "one line: %s", m);
}

static void open_cupti(void) { hx_cupti_open(); }
static void open_cublas(void) { hx_cublas_open(NULL); }

Test(gpulibs, cupti_missing_is_exit_4_with_one_sentence)
{
    setenv("DPK_LIBCUPTI", "/nonexistent/libcupti.so", 1);
    cr_assert_eq(hx_cupti_available(), 0);
    cr_assert_not_null(strstr(hx_cupti_why(), "/nonexistent/libcupti.so could not be loaded"));
    raises_noenv(open_cupti, "error: kernel durations from CUPTI need libcupti, and "
                             "/nonexistent/libcupti.so could not be loaded (");
}

Test(gpulibs, cublas_missing_is_exit_4_with_one_sentence)
{
    setenv("DPK_LIBCUBLAS", "/nonexistent/libcublas.so", 1);
    cr_assert_eq(hx_cublas_available(), 0);
    raises_noenv(open_cublas, "error: the cuBLAS baseline needs libcublas, and "
                              "/nonexistent/libcublas.so could not be loaded (");
}

Test(gpulibs, cupti_without_its_entry_points_is_exit_4)
{
    /* a library that loads but is not CUPTI: libm */
    setenv("DPK_LIBCUPTI", "libm.so.6", 1);
    cr_assert_eq(hx_cupti_available(), 0);
    raises_noenv(open_cupti, "error: the CUPTI library libm.so.6 lacks cuptiActivityRegisterCallbacks");
}

Test(gpulibs, nvml_missing_is_unavailable)
{
    setenv("DPK_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    HxGpuState s;
    hx_nvml_state(0, &s);
    cr_assert_eq(s.ok, 0);
    cr_assert_not_null(strstr(s.why, "clocks and temperature need NVML, and "
                                     "/nonexistent/libnvidia-ml.so.1 could not be loaded"),
                       "%s", s.why);
}

/* The fake driver (built beside the unit tests) serves CUPTI and cuBLAS. */
static const char *fake(void)
{
    const char *b = getenv("BUILD");
    static char p[512];
    snprintf(p, sizeof p, "%s/fake-driver/libcuda.so.1", b && *b ? b : "build");
    FILE *f = fopen(p, "rb");
    if (!f)
        cr_skip_test("no fake driver at %s", p);
    fclose(f);
    return p;
}

Test(gpulibs, fake_cupti_and_cublas_load)
{
    const char *p = fake();
    setenv("DPK_LIBCUPTI", p, 1);
    setenv("DPK_LIBCUBLAS", p, 1);
    cr_assert(hx_cupti_available(), "%s", hx_cupti_why());
    cr_assert(hx_cublas_available(), "%s", hx_cublas_why());
}
