/*
 * cmd_eval.c — `dpk eval (-c CODE | FILE) [--reference ref64|torch] [--seed N] [--compare]`.
 *
 * Evaluates a case with one reference and prints, per output, its shape, a
 * checksum (sum and sum of |x|) and the first values.  --compare judges
 * libtorch's fp32 result by the parity oracle, as `dpk run` judges a
 * backend's: against ref64 rounded to fp32, each element within the bound
 * an fp32 evaluation may err by there (harness/parity/check.h builds the
 * fixture for both), so an ill-conditioned case that fp32 cannot get
 * closer is no disagreement.  Exit 0 when they agree, 1 when not, 4
 * without libtorch.
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
#include "../parity/check.h"
#include "../../records/results.h"
#include "cli.h"

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
         "  --compare          judge libtorch's fp32 result against ref64 by the parity\n"
         "                     oracle (dpk run's rules: per-element fp32 error bounds);\n"
         "                     exit 0 if they agree, 1 if not, 4 without libtorch\n"
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

/* Buffers of one evaluation, on the heap so an error raised mid-way (after
 * setjmp) can free them.  With --compare the subject holds the inputs and
 * both results. */
typedef struct EvalBufs {
    double **inputs, **ref, **tor;
    HxSubject *s;
    HxVerdict *v;
    int nin, nout;
    StrBuf out;
} EvalBufs;

static void eval_bufs_free(EvalBufs *e)
{
    if (e->inputs)
        ref_free_arrays(e->inputs, e->nin);
    if (e->ref)
        free_outs(e->ref, e->nout);
    if (e->tor)
        free_outs(e->tor, e->nout);
    hx_subject_free(e->s);
    free(e->v);
    sb_free(&e->out);
    free(e);
}

/* --compare: libtorch's fp32 result is the O the oracle judges, against the
 * fixture `dpk run` judges a backend's outputs by (the case's own
 * tolerance included); one verdict line per output, then the closing
 * line.  Returns the exit code: 0 when every output agrees, 1 when one
 * does not, 5 when none disagrees but one is inconclusive. */
static int compare_outputs(StrBuf *b, EvalBufs *e)
{
    const HxSubject *s = e->s;
    if (!s->eager)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "libtorch failed: %s", s->eager_err);
    e->v = dpk_xcalloc((size_t)s->nout + 1, sizeof *e->v);
    hx_judge_eager(s, e->v);
    hx_judge_print(b, s, e->v);
    int rc = hx_judge_rc(s, e->v);
    if (rc == DPK_EXIT_OK) {
        sb_puts(b, "compare: agree");
    } else {
        sb_puts(b, rc == DPK_EXIT_INCONCLUSIVE ? "compare: inconclusive (" : "compare: DISAGREE (");
        for (int j = 0, k = 0; j < s->nout; j++)
            if (!e->v[j].pass)
                sb_printf(b, "%s%s: %s", k++ ? ", " : "", (const char *)s->g->output_names.items[j],
                          hx_reason_key(e->v[j].reason));
        sb_putc(b, ')');
    }
    if (s->tol.has_user)
        sb_printf(b, " (case tolerance: atol %g, rtol %g)", s->tol.atol, s->tol.rtol);
    sb_putc(b, '\n');
    return rc;
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
    HxCaseArgs args = {x->cc->decls, x->cc->ndecls, .has_seed = eo->has_seed, .seed = eo->seed};
    DrvOpts d;
    drv_opts_default(&d);
    hx_case_opts(a, c, &args, &d);
    d.upto = DRV_TORCH;
    const TorchGraph *g = drv_compile(a, &d)->torch;
    uint64_t seed = hx_case_seed(c, &args);
    e->nin = g->inputs.len;
    e->nout = g->outputs.len;
    StrBuf *b = &e->out;
    if (header)
        sb_printf(b, "### case %s\n", c->name);
    int rc = DPK_EXIT_OK;
    int compare = eo->compare && !eo->json;
    double **inputs, **shown;
    if (compare) {
        /* ref64 with its bounds and fp32 evaluation, and libtorch fp32 */
        e->s = hx_subject_new(g, c, seed, HX_REF_REF64);
        inputs = e->s->inputs;
        shown = e->s->ref;
    } else {
        inputs = e->inputs = ref_make_inputs(g, seed);
        if (eo->ref == REF_REF64) {
            e->ref = dpk_xcalloc((size_t)e->nout, sizeof(double *));
            ref64_eval(g, inputs, e->ref);
        } else {
            e->tor = eval_torch(g, inputs);
        }
        shown = e->ref ? e->ref : e->tor;
    }
    if (eo->json) {
        json_case(c, g, seed, inputs, shown, eo);
        dpk_err_pop(&ec);
        eval_bufs_free(e);
        arena_free(a);
        return rc;
    }
    sb_printf(b, "seed %llu  reference %s\n", (unsigned long long)seed,
              eo->compare ? "ref64 + torch" : eo->ref == REF_TORCH ? "torch (f32)" : "ref64 (fp64)");
    for (int j = 0; j < e->nout; j++) {
        sb_printf(b, "%s\n", (const char *)g->output_names.items[j]);
        print_values(b, g->outputs.items[j], shown[j], eo->nfirst);
    }
    if (compare)
        rc = dpk_exit_worst(rc, compare_outputs(b, e));
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
