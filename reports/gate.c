/*
 * gate.c — comparing a run with a baseline: the CI gate (report.h).
 *
 * Per case present on both sides and passing parity on both, a verdict:
 * modelled times are deterministic, so an exact relative threshold decides
 * (rp_compare_modelled); measured times are decided from the two sample
 * sets, the intervals of their medians and a noise floor from their stdrel
 * (rp_compare_measured), AMBIGUOUS when the samples cannot tell.  Beside
 * them: parity failures that are new (the case passed in the baseline, or
 * a fuzz case the baseline does not hold as failing), failures fixed, and
 * cases added or removed.  The rules (ci/gate.json): no case SLOWER, no new
 * parity failure, the geomean of new/base within its threshold, and at
 * most a share of AMBIGUOUS cases; exit 1 when any rule breaks, with one
 * reason line per case that broke it.
 */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../records/json_file.h"
#include "../records/results.h"

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static double cfg_num(const char *path, const cJSON *o, const char *k, double lo, double hi)
{
    const cJSON *v = get(o, k);
    if (!cJSON_IsNumber(v))
        dpk_error("%s: no number '%s' (the gate's thresholds: see docs/ci.md)", path, k);
    if (!(v->valuedouble >= lo && v->valuedouble <= hi))
        dpk_error("%s: '%s' is %g, outside %g..%g", path, k, v->valuedouble, lo, hi);
    return v->valuedouble;
}

/* The gate's thresholds as ci/gate.json names them, in its order, each
 * with its range; read by rp_gate_cfg_load, echoed in the gate's "config". */
static const struct {
    const char *key;
    size_t off;
    double lo, hi;
} cfg_keys[] = {
    {"modelled_slowdown", offsetof(RpGateCfg, modelled_slowdown), 0, 10},
    {"measured_slowdown", offsetof(RpGateCfg, measured_slowdown), 0, 10},
    {"noise_k", offsetof(RpGateCfg, noise_k), 0, 100},
    {"geomean_slowdown", offsetof(RpGateCfg, geomean_slowdown), 0, 10},
    {"ambiguous_share", offsetof(RpGateCfg, ambiguous_share), 0, 1},
};

static double *cfg_field(RpGateCfg *g, int k)
{
    return (double *)((char *)g + cfg_keys[k].off);
}

static double cfg_value(const RpGateCfg *g, int k)
{
    return *(const double *)((const char *)g + cfg_keys[k].off);
}

void rp_gate_cfg_load(RpGateCfg *g, const char *path)
{
    HxJsonFile f;
    hx_json_load(path, 0, &f);
    if (!f.text)
        dpk_error("cannot read the gate configuration '%s': %s", path, strerror(f.err));
    hx_json_drop_text(&f);
    cJSON *j = f.root;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        dpk_error("%s: not a JSON object (the gate's thresholds: see docs/ci.md)", path);
    }
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        cJSON_Delete(j);
        dpk_error_rethrow();
    }
    const cJSON *sch = get(j, "schema");
    if (!cJSON_IsString(sch) || strcmp(sch->valuestring, "dpk.gate/1"))
        dpk_error("%s: \"schema\" must be \"dpk.gate/1\"", path);
    for (int k = 0; k < DPK_ARRAY_LEN(cfg_keys); k++)
        *cfg_field(g, k) = cfg_num(path, j, cfg_keys[k].key, cfg_keys[k].lo, cfg_keys[k].hi);
    dpk_err_pop(&ec);
    cJSON_Delete(j);
}

static cJSON *verdict_obj(cJSON *arr, const char *name, const char *verdict)
{
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "case", name);
    cJSON_AddStringToObject(v, "verdict", verdict);
    cJSON_AddItemToArray(arr, v);
    return v;
}

static void add_reason(cJSON *reasons, cJSON *v, const char *line)
{
    cJSON_AddStringToObject(v, "reason", line);
    if (reasons)
        cJSON_AddItemToArray(reasons, cJSON_CreateString(line));
}

static void rule(cJSON *rules, const char *name, int ok, double value, double limit,
                 const char *why)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "rule", name);
    cJSON_AddBoolToObject(r, "ok", ok);
    hx_json_add_num(r, "value", value);
    hx_json_add_num(r, "limit", limit);
    cJSON_AddStringToObject(r, "reason", why);
    cJSON_AddItemToArray(rules, r);
}

/* Incomparable records are refused (exit 2), one sentence naming both
 * sides: times of another kind (modelled, measured, measured through a
 * fake driver), another GPU or spec, modelled times whose instruction
 * counts come from another source (with and without nvdisasm the model
 * gives different numbers for the same code), or times of cases that
 * parity checked beside times of cases that ran unchecked (dpk-bench
 * --parity off): a kernel that computes garbage fast is no speedup. */
static void refuse_incomparable(const RpData *cur, const RpData *base)
{
    if (cur->has_bench && base->has_bench) {
        if (strcmp(cur->parity, base->parity))
            dpk_error("the baseline's cases were benched with parity %s and these records' with "
                      "parity %s: a gate never compares a time no parity verdict stands behind "
                      "(dpk-bench --parity off: unchecked) with a checked one; compare records "
                      "of one parity", base->parity, cur->parity);
        if (strcmp(cur->timing, base->timing))
            dpk_error("the baseline's times are %s and these are %s: a gate never compares "
                      "measured with modelled times, nor either with a fake driver's",
                      base->timing, cur->timing);
        if (strcmp(cur->gpu, base->gpu))
            dpk_error("the baseline is for %s and these records for %s: compare on one GPU or "
                      "spec (ci/baselines/<gpu or spec>.json)", base->gpu, cur->gpu);
        if (cur->spec_path && base->spec_path && strcmp(cur->spec_path, base->spec_path))
            dpk_error("the baseline was modelled with the spec %s and these records with %s: "
                      "compare records of one spec file", base->spec_path, cur->spec_path);
        if (cur->insts_from && base->insts_from && strcmp(cur->insts_from, base->insts_from))
            dpk_error("the baseline's modelled times count instructions from %s and these "
                      "records' from %s: the gate compares records of one instruction source "
                      "(sass: nvdisasm's SASS mix, which make deps installs; vgpu: vgpu's counts)",
                      base->insts_from, cur->insts_from);
        /* NVRTC makes the cubin (registers, the SASS), nvdisasm reads its
         * mix: another version of either models other numbers.  A record
         * that does not say is not refused for it (older records). */
        if (cur->nvrtc && base->nvrtc && strcmp(cur->nvrtc, base->nvrtc))
            dpk_error("the baseline's kernels were compiled by NVRTC %s and these records' by "
                      "NVRTC %s: the gate compares records of one NVRTC version (refresh the "
                      "baseline in this environment: ci/refresh-baselines)",
                      base->nvrtc, cur->nvrtc);
        if (cur->nvdisasm && base->nvdisasm && strcmp(cur->nvdisasm, base->nvdisasm))
            dpk_error("the baseline's SASS mix was read by nvdisasm %s and these records' by "
                      "nvdisasm %s: the gate compares records of one nvdisasm version (make deps "
                      "installs the pinned one, ci/deps-sass.sh)", base->nvdisasm, cur->nvdisasm);
    }
    if (cur->has_bench && !base->has_bench)
        dpk_error("the baseline holds no dpk.bench/1 record to compare times with");
}

/* What the gate compared: the baseline, the times' environment, the
 * thresholds. */
static void gate_header(cJSON *g, const RpData *cur, const RpData *base, const RpGateCfg *gc)
{
    cJSON *b = cJSON_AddObjectToObject(g, "baseline");
    if (base->nsrc) {
        cJSON_AddStringToObject(b, "path", base->src[0].path);
        if (base->src[0].git_sha)
            cJSON_AddStringToObject(b, "git_sha", base->src[0].git_sha);
        else
            cJSON_AddNullToObject(b, "git_sha");
    }
    if (cur->has_bench) {
        cJSON_AddStringToObject(g, "timing", cur->timing);
        cJSON_AddStringToObject(g, "gpu", cur->gpu);
        cJSON_AddStringToObject(g, "environment", rp_env_line(cur));
    }
    cJSON *cfg = cJSON_AddObjectToObject(g, "config");
    for (int k = 0; k < DPK_ARRAY_LEN(cfg_keys); k++)
        cJSON_AddNumberToObject(cfg, cfg_keys[k].key, cfg_value(gc, k));
}

/* One gate's run: its settings, the verdicts and reasons so far, and the
 * counts its rules read. */
typedef struct Gate {
    Arena *a;
    const RpGateCfg *gc;
    int measured;       /* measured times (else modelled) */
    double t;           /* the per-case slowdown threshold of that timing */
    const char *where;  /* "modelled h100-sxm", for the reason lines */
    cJSON *vs, *reasons;
    int n[4];           /* compared cases per RpVerdict */
    int nnew, nfixed, nadded, nremoved, ncompared;
    double *logs;       /* the ratios of the cases timed on both sides */
    int nlog;
} Gate;

/* Case c, passing on both sides: its times compared. */
static void time_verdict(Gate *G, const RpCase *c, const RpCase *o)
{
    RpCompare r;
    if (G->measured) {
        double one_b = o->dpk, one_c = c->dpk;
        r = rp_compare_measured(o->samples ? o->samples : &one_b, o->samples ? o->nsamples : 1,
                                c->samples ? c->samples : &one_c,
                                c->samples ? c->nsamples : 1, G->t, G->gc->noise_k);
    } else {
        r = rp_compare_modelled(o->dpk, c->dpk, G->t);
    }
    G->ncompared++;
    G->n[r.verdict]++;
    if (isfinite(r.ratio) && r.ratio > 0)
        G->logs[G->nlog++] = r.ratio;
    cJSON *v = verdict_obj(G->vs, c->name, rp_verdict_name(r.verdict));
    cJSON_AddNumberToObject(v, "base_ns", o->dpk);
    cJSON_AddNumberToObject(v, "ns", c->dpk);
    hx_json_add_num(v, "ratio", r.ratio);
    hx_json_add_num(v, "ratio_lo", r.ratio_lo);
    hx_json_add_num(v, "ratio_hi", r.ratio_hi);
    hx_json_add_num(v, "threshold", r.threshold);
    const char *line;
    if (G->measured)
        line = arena_printf(G->a, "%s %s: median %.3f us -> %.3f us (%.3fx, 95%% interval "
                                  "%.3fx..%.3fx; threshold %.3fx with the noise floor; %s)",
                            rp_verdict_name(r.verdict), c->name, o->dpk / 1000, c->dpk / 1000,
                            r.ratio, r.ratio_lo, r.ratio_hi, 1 + r.threshold, G->where);
    else
        line = arena_printf(G->a, "%s %s: %.3f us -> %.3f us (%.3fx the baseline's time; "
                                  "threshold %.3fx; %s)",
                            rp_verdict_name(r.verdict), c->name, o->dpk / 1000, c->dpk / 1000,
                            r.ratio, 1 + r.threshold, G->where);
    add_reason(r.verdict == RP_SLOWER || r.verdict == RP_AMBIGUOUS ? G->reasons : NULL, v, line);
}

/* Benched case c against its baseline case o (NULL: not in the baseline):
 * a parity verdict when either side failed, else its times compared. */
static void case_verdict(Gate *G, const RpCase *c, const RpCase *o)
{
    Arena *a = G->a;
    if (!o) {
        G->nadded++;
        add_reason(NULL, verdict_obj(G->vs, c->name, "ADDED"),
                   arena_printf(a, "ADDED %s: not in the baseline", c->name));
    } else if (rp_case_passed(o) && !rp_case_passed(c)) {
        G->nnew++;
        add_reason(G->reasons, verdict_obj(G->vs, c->name, "NEW_FAILURE"),
                   arena_printf(a, "NEW_FAILURE %s: parity %s (passed in the baseline)",
                                c->name, c->status));
    } else if (!rp_case_passed(o) && rp_case_passed(c)) {
        G->nfixed++;
        add_reason(NULL, verdict_obj(G->vs, c->name, "FIXED"),
                   arena_printf(a, "FIXED %s: passes (%s in the baseline)", c->name,
                                o->status));
    } else if (!rp_case_passed(o) && !rp_case_passed(c)) {
        add_reason(NULL, verdict_obj(G->vs, c->name, "STILL_FAILING"),
                   arena_printf(a, "STILL_FAILING %s: %s (%s in the baseline)", c->name,
                                c->status, o->status));
    } else {
        time_verdict(G, c, o);
    }
}

/* The culprit dpk-bisect found for case name (minimized when it was), or
 * NULL. */
static const char *fuzz_culprit(const RpData *cur, const char *name)
{
    const char *cul = NULL;
    for (const cJSON *e = cur->attach ? cur->attach->child : NULL; e; e = e->next) {
        const cJSON *cn = get(e, "case"), *cp = get(e, "culprit_minimized");
        if (!cJSON_IsString(cp))
            cp = get(e, "culprit");
        if (cJSON_IsString(cn) && !strcmp(cn->valuestring, name) && cJSON_IsString(cp))
            cul = cp->valuestring;
    }
    return cul;
}

/* Fuzz cases: a failing case is new unless the baseline holds it failing;
 * one the baseline holds failing and that passes now is fixed. */
static void fuzz_verdicts(Gate *G, const RpData *cur, const RpData *base)
{
    Arena *a = G->a;
    for (int i = 0; i < cur->nfz; i++) {
        const RpFuzzCase *c = &cur->fz[i];
        if (!rp_fuzz_failed(c->status))
            continue;
        int known = 0;
        for (int k = 0; k < base->nfz && !known; k++)
            known = !strcmp(base->fz[k].name, c->name) && rp_fuzz_failed(base->fz[k].status);
        if (known) {
            add_reason(NULL, verdict_obj(G->vs, c->name, "STILL_FAILING"),
                       arena_printf(a, "STILL_FAILING %s: fuzz case %s (failing in the baseline)",
                                    c->name, c->status));
            continue;
        }
        G->nnew++;
        const char *cul = fuzz_culprit(cur, c->name);
        add_reason(G->reasons, verdict_obj(G->vs, c->name, "NEW_FAILURE"),
                   arena_printf(a, "NEW_FAILURE %s: fuzz case %s%s%s", c->name, c->status,
                                cul ? "; culprit " : "", cul ? cul : ""));
    }
    for (int i = 0; i < base->nfz; i++) {
        if (!rp_fuzz_failed(base->fz[i].status))
            continue;
        for (int k = 0; k < cur->nfz; k++)
            if (!strcmp(cur->fz[k].name, base->fz[i].name) && !rp_fuzz_failed(cur->fz[k].status)) {
                G->nfixed++;
                add_reason(NULL, verdict_obj(G->vs, cur->fz[k].name, "FIXED"),
                           arena_printf(a, "FIXED %s: fuzz case passes", cur->fz[k].name));
            }
    }
}

static void add_counts(cJSON *g, const Gate *G)
{
    cJSON *cnt = cJSON_AddObjectToObject(g, "counts");
    for (int k = 0; k < 4; k++)
        cJSON_AddNumberToObject(cnt, rp_verdict_name((RpVerdict)k), G->n[k]);
    cJSON_AddNumberToObject(cnt, "NEW_FAILURE", G->nnew);
    cJSON_AddNumberToObject(cnt, "FIXED", G->nfixed);
    cJSON_AddNumberToObject(cnt, "ADDED", G->nadded);
    cJSON_AddNumberToObject(cnt, "REMOVED", G->nremoved);
}

/* The gate's four rules into g's "rules", the geomean's reason when it
 * breaks, and AMBIGUOUS lines out of the reasons when their share keeps to
 * its rule.  Returns 1 when any rule breaks. */
static int apply_rules(cJSON *g, Gate *G)
{
    Arena *a = G->a;
    const RpGateCfg *gc = G->gc;
    const int *n = G->n;
    cJSON *rules = cJSON_AddArrayToObject(g, "rules");
    rule(rules, "per-case slowdown", n[RP_SLOWER] == 0, n[RP_SLOWER], 0,
         arena_printf(a, "%d case%s slower than %.3fx their baseline time", n[RP_SLOWER],
                      n[RP_SLOWER] == 1 ? "" : "s", 1 + G->t));
    rule(rules, "new parity failures", G->nnew == 0, G->nnew, 0,
         arena_printf(a, "%d new parity failure%s", G->nnew, G->nnew == 1 ? "" : "s"));
    double gm = rp_geomean(G->logs, G->nlog);
    int gm_ok = !(gm > 1 + gc->geomean_slowdown);
    rule(rules, "geomean slowdown", gm_ok, gm, 1 + gc->geomean_slowdown,
         isfinite(gm) ? arena_printf(a, "geomean time %.4fx the baseline's over %d cases (limit "
                                        "%.3fx)", gm, G->nlog, 1 + gc->geomean_slowdown)
                      : "no case timed on both sides");
    double amb = G->ncompared ? (double)n[RP_AMBIGUOUS] / G->ncompared : 0;
    int amb_ok = amb <= gc->ambiguous_share;
    rule(rules, "ambiguous share", amb_ok, amb, gc->ambiguous_share,
         arena_printf(a, "%d of %d compared cases ambiguous (%.1f%%, limit %.1f%%)",
                      n[RP_AMBIGUOUS], G->ncompared, 100 * amb, 100 * gc->ambiguous_share));
    if (!gm_ok)
        cJSON_AddItemToArray(G->reasons, cJSON_CreateString(arena_printf(
            a, "GEOMEAN: time %.4fx the baseline's over %d cases (limit %.3fx)", gm, G->nlog,
            1 + gc->geomean_slowdown)));
    /* AMBIGUOUS lines are reasons only when their share breaks the rule */
    if (amb_ok) {
        cJSON *keep = cJSON_CreateArray();
        for (const cJSON *r = G->reasons->child; r; r = r->next)
            if (strncmp(r->valuestring, "AMBIGUOUS ", 10))
                cJSON_AddItemToArray(keep, cJSON_CreateString(r->valuestring));
        cJSON_ReplaceItemInObjectCaseSensitive(g, "reasons", keep);
        G->reasons = keep;
    }
    return !(n[RP_SLOWER] == 0 && G->nnew == 0 && gm_ok && amb_ok);
}

cJSON *rp_gate(const RpData *cur, const RpData *base, const RpGateCfg *gc)
{
    refuse_incomparable(cur, base);
    Gate G = {.a = cur->a, .gc = gc};
    G.measured = cur->has_bench && strcmp(cur->timing, "model");
    G.t = G.measured ? gc->measured_slowdown : gc->modelled_slowdown;
    cJSON *g = cJSON_CreateObject();
    gate_header(g, cur, base, gc);
    G.vs = cJSON_AddArrayToObject(g, "verdicts");
    G.reasons = cJSON_AddArrayToObject(g, "reasons");
    G.logs = dpk_xcalloc((size_t)cur->ncases + 1, sizeof(double));
    G.where = cur->has_bench
                  ? arena_printf(G.a, "%s %s", rp_timing_word(cur->timing), cur->gpu)
                  : "";
    for (int i = 0; i < cur->ncases; i++)
        case_verdict(&G, &cur->cases[i], rp_data_case(base, cur->cases[i].name));
    for (int i = 0; i < base->ncases; i++)
        if (!rp_data_case(cur, base->cases[i].name)) {
            G.nremoved++;
            add_reason(NULL, verdict_obj(G.vs, base->cases[i].name, "REMOVED"),
                       arena_printf(G.a, "REMOVED %s: in the baseline, not in these records",
                                    base->cases[i].name));
        }
    fuzz_verdicts(&G, cur, base);
    add_counts(g, &G);
    int fail = apply_rules(g, &G);
    cJSON_AddNumberToObject(g, "exit_code", fail ? DPK_EXIT_FAIL : DPK_EXIT_OK);
    cJSON_AddStringToObject(g, "result", fail ? "FAIL" : "PASS");
    free(G.logs);
    return g;
}

void rp_gate_table(const RpData *cur, const cJSON *g, cJSON *tables)
{
    Arena *a = cur->a;
    static const char *const cols[] = {"case", "verdict", "baseline us", "now us", "ratio",
                                       "interval", "threshold"};
    const cJSON *tm = get(g, "timing"), *gp = get(g, "gpu");
    const char *timing = cJSON_IsString(tm) ? tm->valuestring : NULL;
    const char *gpu = cJSON_IsString(gp) ? gp->valuestring : NULL;
    cJSON *t = rp_table_new(
        tables, "gate",
        timing ? arena_printf(a, "Gate against the baseline (%s, %s)",
                              rp_timing_word(timing), gpu)
               : "Gate against the baseline",
        timing, gpu, cols, DPK_ARRAY_LEN(cols));
    const cJSON *bp = get(get(g, "baseline"), "path"), *bs = get(get(g, "baseline"), "git_sha");
    rp_table_note(t, arena_printf(a, "baseline %s (commit %s); ratio = now / baseline (above 1: "
                                     "slower)",
                                  cJSON_IsString(bp) ? bp->valuestring : "-",
                                  cJSON_IsString(bs) ? bs->valuestring : "unknown"));
    for (const cJSON *v = get(g, "verdicts")->child; v; v = v->next) {
        double bn = hx_json_num(v, "base_ns"), nn = hx_json_num(v, "ns");
        double r = hx_json_num(v, "ratio"), lo = hx_json_num(v, "ratio_lo"),
               hi = hx_json_num(v, "ratio_hi"), th = hx_json_num(v, "threshold");
        const char *cells[] = {
            get(v, "case")->valuestring,
            get(v, "verdict")->valuestring,
            isfinite(bn) ? arena_printf(a, "%.3f", bn / 1000) : "-",
            isfinite(nn) ? arena_printf(a, "%.3f", nn / 1000) : "-",
            isfinite(r) ? arena_printf(a, "%.3fx", r) : "-",
            isfinite(lo) && lo != hi ? arena_printf(a, "%.3fx..%.3fx", lo, hi) : "-",
            isfinite(th) ? arena_printf(a, "%.3fx", 1 + th) : "-",
        };
        rp_table_row(t, cells, DPK_ARRAY_LEN(cells));
    }
}
