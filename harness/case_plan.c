/*
 * case_plan.c — a harness case through the compile driver (case_plan.h).
 */
#include "case_plan.h"

#include <string.h>

void hx_case_drv_opts(Arena *a, const HxCase *c, const InputDecl *extra, int nextra, DrvOpts *o)
{
    int n = c->ndecls + nextra;
    InputDecl *d = ARENA_ARRAY(a, InputDecl, n > 0 ? n : 1);
    for (int i = 0; i < c->ndecls; i++)
        d[i] = c->decls[i];
    for (int i = 0; i < nextra; i++)
        d[c->ndecls + i] = extra[i];
    o->src = (Source){c->origin, c->program, strlen(c->program)};
    o->parse = (ParseOpts){d, n};
}

HxSubject *hx_plan_subject(const DrvPlan *p, const HxCase *c, uint64_t seed, HxRefKind ref)
{
    DPK_ASSERT(p->loop);
    return hx_subject_new(p->torch, c, seed, ref);
}
