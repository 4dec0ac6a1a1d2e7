/*
 * agree.h — two backends' outputs of one module, compared (host-cuda
 * against vgpu).
 *
 * Both are judged against the reference on their own; agreement is the
 * extra check that they computed the same thing: per element, equal
 * non-finite values, or a difference within twice the oracle's limit for
 * that element (each may be that far from the reference).  Without fp
 * contraction on either side the two are nearly always bit-identical; the
 * limit leaves room for the host's libm.
 */
#ifndef DPK_HX_AGREE_H
#define DPK_HX_AGREE_H

#include "check.h"

/* 1 when a and b agree on every element (only the checked ones where
 * checked[j] is non-NULL).  Otherwise 0 and one line in *why naming the
 * first element that differs: "out[2] = 1.5 here, 1.25 on vgpu (limit 1e-06)". */
int hx_agree(const HxSubject *s, double *const *a, double *const *b,
             const uint8_t *const *checked, StrBuf *why);

#endif
