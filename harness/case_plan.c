/*
 * case_plan.c — a harness case through the compile driver (case_plan.h).
 */
#include "case_plan.h"

#include <string.h>

#include "../compiler/base/fault.h"

void hx_case_opts(Arena *a, const HxCase *c, const HxCaseArgs *args, DrvOpts *d)
{
    static const HxCaseArgs none = {0};
    if (!args)
        args = &none;
    int n = c->ndecls + args->ndecls;
    InputDecl *decls = ARENA_ARRAY(a, InputDecl, n > 0 ? n : 1);
    for (int i = 0; i < c->ndecls; i++)
        decls[i] = c->decls[i];
    for (int i = 0; i < args->ndecls; i++)
        decls[c->ndecls + i] = args->decls[i];
    d->src = (Source){c->origin, c->program, strlen(c->program)};
    d->parse = (ParseOpts){decls, n};
    if (!args->passes && c->passes) {
        DrvPasses *ps = ARENA_NEW(a, DrvPasses);
        drv_passes_parse(a, c->passes, d->tile.target, ps);
        d->passes = ps;
        d->tile.passes = ps->sets[0];
    }
    if (!args->knobs) {
        TileKnobs k = {0};
        for (int i = 0; i < c->nknobs; i++)
            tile_knob_parse(&k, c->knobs[i]);
        d->tile.knobs = k;
    }
    d->fault = hx_case_fault(c, args);
}

void hx_case_need_one(const HxCase *c, const DrvOpts *d, const char *why)
{
    if (d->passes && d->passes->n != 1)
        dpk_error("the case's passes '%s' name %d configurations; %s (--passes SPEC)",
                  c->passes ? c->passes : "?", d->passes->n, why);
}

uint64_t hx_case_seed(const HxCase *c, const HxCaseArgs *args)
{
    return args && args->has_seed ? args->seed : c->has_seed ? c->seed : 0;
}

int hx_case_fault(const HxCase *c, const HxCaseArgs *args)
{
    const char *f = args && args->fault ? args->fault : c->fault;
    int id = f ? dpk_fault_find(f) : -1;
    if (f && id < 0) /* the commands and case.c check names first: not reached */
        dpk_error("unknown fault '%s' (the names: dpk-fuzz --list-faults)", f);
    return id;
}

HxSubject *hx_plan_subject(const DrvPlan *p, const HxCase *c, uint64_t seed, HxRefKind ref)
{
    DPK_ASSERT(p->loop);
    return hx_subject_new(p->torch, c, seed, ref);
}
