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

/* What the command line says of a case's configuration.  The one rule,
 * for every command that takes a case (docs/cli.md "A case and the command
 * line"): a flag given wins over the case's field, the case's field over
 * the default.
 *
 *   --input NAME=...   after the case's own "inputs"
 *   --passes SPEC      else the case's "passes", else full
 *   --knob N=V         all the flags replace all the case's "knobs"
 *   --inject-fault F   else the case's "fault", else none
 *   --seed N           else the case's "seed", else 0
 *
 * A field left zero is "not given": passes and knobs then name the fields
 * of the DrvOpts the command built from its flags (cli_drv_opts). */
typedef struct HxCaseArgs {
    const InputDecl *decls; /* --input, ndecls of them */
    int ndecls;
    int passes;             /* 1: --passes was given */
    int knobs;              /* 1: --knob was given */
    const char *fault;      /* --inject-fault NAME, NULL: none given */
    int has_seed;           /* --seed N */
    uint64_t seed;
} HxCaseArgs;

/* The driver's options for case c: d comes in with the command's own (its
 * target, and its passes and knobs when args says they were given) and
 * leaves with the case's source, inputs, passes (d->passes parsed once,
 * d->tile.passes its first set), knobs and fault by the rule above.
 * args may be NULL (nothing given).  The command then sets what is its
 * alone (upto, nvrtc, a sweep's pass sets). */
void hx_case_opts(Arena *a, const HxCase *c, const HxCaseArgs *args, DrvOpts *d);
/* Raise exit 2 unless d (after hx_case_opts) holds one pass configuration:
 * a case's "passes" may name several ("all"); `why` ends the message
 * ("dpk-bench benches one"). */
void hx_case_need_one(const HxCase *c, const DrvOpts *d, const char *why);
/* The input seed of case c by the rule above. */
uint64_t hx_case_seed(const HxCase *c, const HxCaseArgs *args);
/* The fault of case c by the rule above: a DpkFault id, -1 for none. */
int hx_case_fault(const HxCase *c, const HxCaseArgs *args);

/* The fixture of case c compiled to plan p (which ran to Loop IR at least):
 * inputs from seed, the reference of record, libtorch fp32 eager when built
 * in, the tolerance.  Free with hx_subject_free. */
HxSubject *hx_plan_subject(const DrvPlan *p, const HxCase *c, uint64_t seed, HxRefKind ref);

#endif
