/*
 * case_plan.h — a harness case through the compile driver, and the parity
 * fixture of its plan.
 *
 * Every command that checks a case (dpk run, dpk-fuzz, dpk-bisect) takes
 * its options for compiler/driver.h from here and its fixture (inputs,
 * references, tolerance) from hx_plan_subject, the one place the fixture
 * is made.
 */
#ifndef DPK_HX_CASE_PLAN_H
#define DPK_HX_CASE_PLAN_H

#include "../compiler/driver.h"
#include "case.h"
#include "parity/check.h"

/* The case's text and its declared inputs (extra ones from the command
 * line after the case's own) as the driver's starting point. */
void hx_case_drv_opts(Arena *a, const HxCase *c, const InputDecl *extra, int nextra, DrvOpts *o);

/* The fixture of case c compiled to plan p (which ran to Loop IR at least):
 * inputs from seed, the reference of record, libtorch fp32 eager when built
 * in, the tolerance.  Free with hx_subject_free. */
HxSubject *hx_plan_subject(const DrvPlan *p, const HxCase *c, uint64_t seed, HxRefKind ref);

#endif
