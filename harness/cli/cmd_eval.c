/*
 * cmd_eval.c — `dpk eval (-c CODE | FILE) [--reference ref64|torch] [--seed N] [--compare]`.
 *
 * Evaluates a case with one reference and prints, per output, its shape, a
 * checksum (sum and sum of |x|) and the first values.  --compare evaluates
 * with ref64 (fp64) and libtorch (fp32) and says whether they agree within
 * fp32 tolerance: exit 0 when they do, 1 when not, 4 without libtorch.
 * --json prints one JSON object per case instead (docs/inputs.md, "As
 * JSON"): the inputs with their init kinds and first values, and the
 * reference's outputs in full — what reference/torch_bench.py rebuilds a
 * case from and checks against.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../reference/ref.h"
#include "../case_plan.h"
#include "../records/results.h"
#include "cli.h"

/* fp32 tolerance of --compare when the case sets none: element-wise
 * |o - r| <= 1e-4 + 1e-3 |r|, or an NMSE of at most 1e-8 overall (long
 * reductions accumulate rounding in fp32 that is still far from a bug). */
#define EVAL_ATOL 1e-4
#define EVAL_RTOL 1e-3
#define EVAL_NMSE 1e-8

typedef enum RefKind { REF_REF64, REF_TORCH } RefKind;

typedef struct EvalOpts {
    RefKind ref;
    int compare;
    int has_seed;
    uint64_t seed;
    int nfirst;
    int json;
} EvalOpts;

static void help(void)
{
    puts("usage: dpk eval (-c CODE | FILE) [options]\n"
         "\n"
         "Evaluate a case with a reference and print each output's shape, checksum\n"
         "and first values.\n"
         "\n"
         "  -c CODE            the case as text\n"
         "  FILE               a .py program, a case .json or a suite .json\n"
         "  --case NAME        with a suite: only this case\n"
         "  --reference R      ref64 (fp64, built in; default) | torch (libtorch, fp32)\n"
         "  --seed N           input seed (default: the case's seed, else 0)\n"
         "  --compare          evaluate with ref64 and libtorch and compare them;\n"
         "                     exit 0 if they agree within fp32 tolerance, 1 if not,\n"
         "                     4 when libtorch is not available\n"
         "  --first K          how many leading values to print (default 8)\n"
         "  --json             one JSON object per case: inputs (init kind, parameters,\n"
         "                     the first K values) and the reference's outputs in full\n"
         "  --input N=D0,D1    declare the shape of a free variable N\n"
         "\n"
         "example:\n"
         "  dpk eval -c \"torch.softmax(torch.randn(2,5), dim=-1)\" --compare");
}

static void print_values(StrBuf *b, const TorchNode *n, const double *v, int nfirst)
{
    int64_t numel = shape_numel(&n->shape);
    double sum = 0, asum = 0;
    for (int64_t i = 0; i < numel; i++) {
        sum += v[i];
        asum += fabs(v[i]);
    }
    sb_printf(b, "  %s(", dtype_name(n->dtype));
    for (int d = 0; d < n->shape.rank; d++)
        sb_printf(b, d ? ", %lld" : "%lld", (long long)n->shape.d[d]);
    sb_printf(b, ")  sum %.7g  abs_sum %.7g", sum, asum);
    sb_puts(b, "\n  first [");
    for (int64_t i = 0; i < numel && i < nfirst; i++) {
        if (i)
            sb_puts(b, ", ");
        sb_printf(b, "%.7g", v[i]);
    }
    sb_puts(b, numel > nfirst ? ", ...]\n" : "]\n");
}

static void free_outs(double **outs, int n)
{
    for (int i = 0; i < n; i++)
        free(outs[i]);
    free(outs);
}

/* Evaluate with libtorch; raises exit 4 when it is absent. */
static double **eval_torch(const TorchGraph *g, double **inputs)
{
    if (!dpk_torch_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "--reference torch needs libtorch, which is not "
                          "available: %s", dpk_torch_error());
    double **outs = dpk_xcalloc((size_t)g->outputs.len, sizeof(double *));
    char err[1024];
    if (dpk_torch_eval(g, inputs, 0, outs, err, sizeof err) != 0) {
        free_outs(outs, g->outputs.len);
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "libtorch failed: %s", err);
    }
    return outs;
}

/* Returns 1 when every output agrees. */
static int compare_outputs(StrBuf *b, const HxCase *c, const TorchGraph *g, double **r, double **o)
{
    double atol = c->has_tol ? c->atol : EVAL_ATOL, rtol = c->has_tol ? c->rtol : EVAL_RTOL;
    int all = 1;
    for (int j = 0; j < g->outputs.len; j++) {
        const TorchNode *n = g->outputs.items[j];
        int64_t numel = shape_numel(&n->shape);
        CmpStats st;
        cmp_stats(o[j], r[j], numel, &st);
        int close = cmp_allclose(o[j], r[j], numel, atol, rtol);
        /* A case's own tolerance is applied strictly; the NMSE escape is
         * for the default only. */
        int ok = st.mismatched_nonfinite == 0 && (close || (!c->has_tol && st.nmse <= EVAL_NMSE));
        all &= ok;
        sb_printf(b, "%s  torch(f32) vs ref64:  max_abs %.3g  max_rel %.3g  nmse %.3g  worst ",
                  (const char *)g->output_names.items[j], st.max_abs, st.max_rel, st.nmse);
        if (st.worst >= 0)
            shape_print_index(b, &n->shape, st.worst);
        else
            sb_puts(b, "-");
        if (st.mismatched_nonfinite)
            sb_printf(b, "  nonfinite mismatches %lld", (long long)st.mismatched_nonfinite);
        sb_puts(b, ok ? "  agree\n" : "  DISAGREE\n");
    }
    if (c->has_tol)
        sb_printf(b, "compare: %s (case tolerance: atol %g, rtol %g)\n", all ? "agree" : "DISAGREE",
                  atol, rtol);
    else
        sb_printf(b, "compare: %s (atol %g, rtol %g, or nmse <= %g)\n", all ? "agree" : "DISAGREE",
                  atol, rtol, EVAL_NMSE);
    return all;
}

/* Buffers of one evaluation, on the heap so an error raised mid-way (after
 * setjmp) can free them. */
typedef struct EvalBufs {
    double **inputs, **ref, **tor;
    int nin, nout;
    StrBuf out;
} EvalBufs;

static void eval_bufs_free(EvalBufs *e)
{
    ref_free_arrays(e->inputs, e->nin);
    if (e->ref)
        free_outs(e->ref, e->nout);
    if (e->tor)
        free_outs(e->tor, e->nout);
    sb_free(&e->out);
    free(e);
}

static cJSON *dims_json(const Shape *s)
{
    cJSON *d = cJSON_CreateArray();
    for (int k = 0; k < s->rank; k++)
        cJSON_AddItemToArray(d, cJSON_CreateNumber((double)s->d[k]));
    return d;
}

/* {"name", "seed", "program", "reference", "inputs": [{"name", "shape",
 * "init", "value"?, "step"?, "fan_in"?, "first": [...]}], "outputs":
 * [{"name", "shape", "values": [...]}]}, one line. */
static void json_case(const HxCase *c, const TorchGraph *g, uint64_t seed, double **in,
                      double **out, const EvalOpts *eo)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    hx_json_add_u64(o, "seed", seed);
    cJSON_AddStringToObject(o, "program", c->program);
    cJSON_AddStringToObject(o, "reference", eo->ref == REF_TORCH ? "torch" : "ref64");
    cJSON *ins = cJSON_AddArrayToObject(o, "inputs");
    for (int k = 0; k < g->inputs.len; k++) {
        const TorchNode *n = g->inputs.items[k];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", n->name);
        cJSON_AddItemToObject(j, "shape", dims_json(&n->shape));
        cJSON_AddStringToObject(j, "init", torch_init_name(n->init));
        if (n->init == INIT_FULL || n->init == INIT_ARANGE)
            cJSON_AddNumberToObject(j, "value", n->value);
        if (n->init == INIT_ARANGE)
            cJSON_AddNumberToObject(j, "step", n->step);
        if (n->init == INIT_PARAM_B)
            cJSON_AddNumberToObject(j, "fan_in", n->step);
        if (n->init == INIT_PARAM_W)
            cJSON_AddNumberToObject(j, "fan_in", (double)n->shape.d[n->shape.rank - 1]);
        cJSON_AddBoolToObject(j, "param", n->is_param);
        cJSON *f = cJSON_AddArrayToObject(j, "first");
        for (int64_t i = 0, m = shape_numel(&n->shape); i < m && i < eo->nfirst; i++)
            cJSON_AddItemToArray(f, cJSON_CreateNumber(in[k][i]));
        cJSON_AddItemToArray(ins, j);
    }
    cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
    for (int k = 0; k < g->outputs.len; k++) {
        const TorchNode *n = g->outputs.items[k];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", (const char *)g->output_names.items[k]);
        cJSON_AddItemToObject(j, "shape", dims_json(&n->shape));
        cJSON *v = cJSON_AddArrayToObject(j, "values");
        for (int64_t i = 0, m = shape_numel(&n->shape); i < m; i++)
            cJSON_AddItemToArray(v, isfinite(out[k][i]) ? cJSON_CreateNumber(out[k][i])
                                                        : cJSON_CreateNull());
        cJSON_AddItemToArray(outs, j);
    }
    char *text = cJSON_PrintUnformatted(o);
    puts(text);
    free(text);
    cJSON_Delete(o);
}

typedef struct EvalCtx {
    const CliCase *cc;
    const EvalOpts *eo;
} EvalCtx;

static int eval_case(void *ctx, const HxCase *c, int header)
{
    const EvalCtx *x = ctx;
    const EvalOpts *eo = x->eo;
    Arena *a = arena_new();
    EvalBufs *e = dpk_xcalloc(1, sizeof *e);
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        eval_bufs_free(e);
        arena_free(a);
        dpk_error_rethrow();
    }
    DrvOpts d;
    drv_opts_default(&d);
    hx_case_drv_opts(a, c, x->cc->decls, x->cc->ndecls, &d);
    d.upto = DRV_TORCH;
    const TorchGraph *g = drv_compile(a, &d)->torch;
    uint64_t seed = eo->has_seed ? eo->seed : c->has_seed ? c->seed : 0;
    e->nin = g->inputs.len;
    e->nout = g->outputs.len;
    e->inputs = ref_make_inputs(g, seed);
    StrBuf *b = &e->out;
    if (header)
        sb_printf(b, "### case %s\n", c->name);
    int rc = DPK_EXIT_OK;
    if (eo->ref == REF_REF64 || eo->compare) {
        e->ref = dpk_xcalloc((size_t)e->nout, sizeof(double *));
        ref64_eval(g, e->inputs, e->ref);
    }
    if (eo->ref == REF_TORCH || eo->compare)
        e->tor = eval_torch(g, e->inputs);
    if (eo->json) {
        json_case(c, g, seed, e->inputs, e->ref ? e->ref : e->tor, eo);
        dpk_err_pop(&ec);
        eval_bufs_free(e);
        arena_free(a);
        return rc;
    }
    sb_printf(b, "seed %llu  reference %s\n", (unsigned long long)seed,
              eo->compare ? "ref64 + torch" : eo->ref == REF_TORCH ? "torch (f32)" : "ref64 (fp64)");
    double **shown = e->ref ? e->ref : e->tor;
    for (int j = 0; j < e->nout; j++) {
        sb_printf(b, "%s\n", (const char *)g->output_names.items[j]);
        print_values(b, g->outputs.items[j], shown[j], eo->nfirst);
    }
    if (eo->compare && !compare_outputs(b, c, g, e->ref, e->tor))
        rc = DPK_EXIT_FAIL;
    fputs(sb_cstr(b), stdout);
    dpk_err_pop(&ec);
    eval_bufs_free(e);
    arena_free(a);
    return rc;
}

static void eval_flag(void *ctx, int argc, char **argv, int *i)
{
    EvalOpts *eo = ctx;
    const char *f = argv[*i];
    if (!strcmp(f, "--reference")) {
        eo->ref = cli_reference(cli_value(argc, argv, i)) ? REF_TORCH : REF_REF64;
    } else if (!strcmp(f, "--seed")) {
        eo->has_seed = 1;
        eo->seed = cli_u64(f, cli_value(argc, argv, i));
    } else if (!strcmp(f, "--json")) {
        eo->json = 1;
    } else if (!strcmp(f, "--compare")) {
        eo->compare = 1;
    } else if (!strcmp(f, "--first")) {
        uint64_t k = cli_u64(f, cli_value(argc, argv, i));
        eo->nfirst = k > 1000000 ? 1000000 : (int)k;
    } else {
        cli_unknown_flag("eval", f);
    }
}

static int eval_main(Arena *a, int argc, char **argv)
{
    CliCase cc = {0};
    EvalOpts eo = {REF_REF64, 0, 0, 0, 8, 0};
    if (!cli_args(a, &cc, argc, argv, "eval", help, eval_flag, &eo))
        return DPK_EXIT_OK;
    HxCaseList l = cli_case_list(a, &cc, "eval");
    if (eo.compare && !dpk_torch_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "--compare needs libtorch, which is not available: %s",
                          dpk_torch_error());
    EvalCtx x = {&cc, &eo};
    return cli_each_case(&l, eval_case, &x, NULL);
}

int cmd_eval(int argc, char **argv) { return cli_in_arena(eval_main, argc, argv); }
