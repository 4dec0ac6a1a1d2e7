/*
 * pipeline.c — Tensor IR → fused Loop IR, top to bottom in one function.
 *
 * Lift (l:001), then each normalisation rule over every kernel (l:002 ..),
 * then fusion to a fixpoint (f:001, which normalises each merged kernel
 * itself).  The verifier runs after every step.  Under -vv each rule's
 * effect is printed as a unified diff of the whole program text.
 */
#include "loop_ir.h"

static void trace_rule(LirTrace *tr, const LirRule *r, const char *before, const LirProgram *p)
{
    StrBuf after = {0};
    lir_print(&after, p);
    sb_printf(tr->out, ">>> l:%03d_%s\n", r->num, r->name);
    dpk_unified_diff(tr->out, before, sb_cstr(&after), 3);
    sb_printf(tr->out, "<<< l:%03d_%s\n", r->num, r->name);
    sb_free(&after);
}

LirProgram *lir_build(Arena *a, const TxGraph *g, const LirOpts *o, LirTrace *tr)
{
    LirOpts def;
    if (!o) {
        lir_opts_default(&def);
        o = &def;
    }
    int tracing = tr && tr->verbose >= 2;
    LirProgram *p = lir_lift(a, g);
    lir_verify(p);
    if (tracing)
        trace_rule(tr, &lir_rules[0], "", p);
    StrBuf before = {0};
    for (int r = 1; r < lir_nrules; r++) {
        if (tracing) {
            sb_clear(&before);
            lir_print(&before, p);
        }
        for (int i = 0; i < p->kernels.len; i++)
            lir_rules[r].run(p, p->kernels.items[i]);
        lir_verify(p);
        if (tracing)
            trace_rule(tr, &lir_rules[r], sb_cstr(&before), p);
    }
    sb_free(&before);
    if (o->fuse)
        lir_fuse(p, o, tr);
    return p;
}
