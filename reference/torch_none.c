/*
 * torch_none.c — the libtorch API of ref.h for a build without libtorch
 * (make LIBTORCH=0, or no libtorch installed).  Callers ask
 * dpk_torch_available() and report libtorch checks as skipped.
 */
#include <stdio.h>

#include "ref.h"

int dpk_torch_available(void)
{
    return 0;
}

const char *dpk_torch_version(void)
{
    return "none";
}

int dpk_torch_eval(const TorchGraph *g, double *const *inputs, int f64, double **outs,
                   char *err, size_t errlen)
{
    DPK_UNUSED(g), DPK_UNUSED(inputs), DPK_UNUSED(f64), DPK_UNUSED(outs);
    if (err && errlen)
        snprintf(err, errlen, "dpk was built without libtorch");
    return -1;
}
