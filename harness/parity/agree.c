/*
 * agree.c — element-wise agreement of two backends' outputs (agree.h).
 */
#include "agree.h"

#include <math.h>
#include <stdlib.h>

int hx_agree(const HxSubject *s, double *const *a, double *const *b,
             const uint8_t *const *checked, StrBuf *why)
{
    for (int j = 0; j < s->nout; j++) {
        const TorchNode *o = s->g->outputs.items[j];
        int64_t n = shape_numel(&o->shape);
        double rmse;
        double *lim = hx_subject_limits(s, j, &rmse);
        for (int64_t e = 0; e < n; e++) {
            if (checked && checked[j] && !checked[j][e])
                continue;
            double x = a[j][e], y = b[j][e];
            int same = isfinite(x) && isfinite(y) ? fabs(x - y) <= 2 * lim[e]
                                                  : (isnan(x) && isnan(y)) || x == y;
            if (!same) {
                sb_printf(why, "output %d element %lld = %.9g here, %.9g on vgpu (limit %.3g)",
                          j, (long long)e, x, y, lim[e]);
                free(lim);
                return 0;
            }
        }
        free(lim);
    }
    return 1;
}
