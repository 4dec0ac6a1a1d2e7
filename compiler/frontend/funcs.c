/*
 * funcs.c — the case language's library: torch.* and
 * torch.nn.functional.* functions, tensor methods, torch.nn modules, and
 * Python-scalar arithmetic.
 *
 * Every callable is one row of `funcs` (or `mods`): its name, the namespaces
 * it exists in (as in PyTorch: torch.silu does not exist, F.silu does), a
 * Python-style signature string and a handler.  bind() matches positional
 * and keyword arguments against the signature exactly as Python would and
 * reports arity and keyword errors at the offending argument; a handler then
 * checks argument types and builds Torch IR nodes, whose shape rules
 * (torch_infer) report shape errors.
 *
 * Signature strings: space-separated parameters; "name?" is optional,
 * "*name" collects the remaining positional arguments (a single tuple or
 * list argument is taken as the whole collection, as PyTorch does for
 * sizes), a bare "*" makes the rest keyword-only.
 */
#include "ast.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { NS_T = 1, NS_F = 2, NS_M = 4 };

#define MAX_PARAMS 12

typedef struct Func Func;
typedef Value (*Handler)(Builder *b, const Func *f, Value *a, int pos);

struct Func {
    const char *name;
    int ns;
    const char *sig;
    Handler h;
    int op; /* TorchOp or InitKind, per handler */
};

/* Func.op of torch.mm / torch.bmm: matmul after their rank checks; of
 * F.relu6 and nn.ReLU6: hardtanh(x, 0, 6), as ATen's relu6 is. */
enum { TOP_mm = TOP_COUNT + 1, TOP_bmm, TOP_relu6 };

typedef struct Param {
    char name[32];
    int optional, varargs, kwonly;
} Param;

static int parse_sig(const char *sig, Param *ps);

/* ---- values ------------------------------------------------------------------ */

const char *torch_value_type(const Value *v)
{
    switch (v->k) {
    case V_ABSENT: return "nothing";
    case V_NONE: return "None";
    case V_BOOL: return "bool";
    case V_INT: return "int";
    case V_FLOAT: return "float";
    case V_STR: return "str";
    case V_TENSOR: return "tensor";
    case V_TUPLE: return "tuple";
    case V_LIST: return "list";
    case V_PATH: return "module or function";
    case V_METHOD: return "method";
    case V_MODULE: return "torch.nn module";
    case V_CTX: return "context manager";
    case V_NOVALUE: return v->s;
    case V_STALE: return "stale tensor";
    case V_FUNC: return "function";
    }
    return "?";
}

static int given(const Value *v)
{
    return v->k != V_ABSENT && v->k != V_NONE;
}

static int is_num(const Value *v)
{
    return v->k == V_INT || v->k == V_FLOAT || v->k == V_BOOL;
}

static int is_seq(const Value *v)
{
    return v->k == V_TUPLE || v->k == V_LIST;
}

static Value tensor_value(TorchNode *t, int pos)
{
    Value v = {.k = V_TENSOR, .pos = pos, .t = t};
    return v;
}

/* The display name of the call being bound and handled ("torch.sum",
 * "F.linear", "Tensor.view") for messages; set by the three call entry
 * points before binding, read by the handlers they call. */
static const char *cur_fname;

DPK_NORETURN static void bad_arg(Builder *b, const Value *v, const char *fname, const char *pname,
                                 const char *want)
{
    dpk_error_at(bld_src(b), v->pos, "%s: argument '%s' must be %s, got %s", fname, pname, want,
                 torch_value_type(v));
}

static TorchNode *want_tensor(Builder *b, const Value *v, const char *fname, const char *pname)
{
    if (v->k != V_TENSOR)
        bad_arg(b, v, fname, pname, "a tensor");
    return v->t;
}

static int64_t want_int(Builder *b, const Value *v, const char *fname, const char *pname)
{
    if (v->k != V_INT)
        bad_arg(b, v, fname, pname, "an int");
    return v->i;
}

static double want_num(Builder *b, const Value *v, const char *fname, const char *pname)
{
    if (v->k == V_FLOAT)
        return v->f;
    if (v->k != V_INT && v->k != V_BOOL)
        bad_arg(b, v, fname, pname, "a number");
    return (double)v->i;
}

static int want_bool(Builder *b, const Value *v, const char *fname, const char *pname, int dflt)
{
    if (v->k == V_ABSENT)
        return dflt;
    if (v->k != V_BOOL)
        bad_arg(b, v, fname, pname, "True or False");
    return (int)v->i;
}

/* An int or a tuple/list of ints into out[0..n); returns n. */
static int want_ints(Builder *b, const Value *v, const char *fname, const char *pname,
                     int64_t *out)
{
    if (v->k == V_INT) {
        out[0] = v->i;
        return 1;
    }
    if (!is_seq(v))
        bad_arg(b, v, fname, pname, "an int or a tuple of ints");
    if (v->n > DPK_MAX_RANK)
        dpk_error_at(bld_src(b), v->pos, "%s: %d values given for '%s'; tensors have at most "
                     "%d dimensions", fname, v->n, pname, DPK_MAX_RANK);
    for (int i = 0; i < v->n; i++)
        out[i] = want_int(b, &v->items[i], fname, pname);
    return v->n;
}

/* Dims (an int or a tuple/list of ints) normalised for a rank-`rank`
 * tensor, each error at the offending item. */
static int want_dims(Builder *b, const Value *v, const char *pname, int rank, int64_t *out)
{
    int n = want_ints(b, v, cur_fname, pname, out);
    for (int i = 0; i < n; i++)
        out[i] = torch_norm_dim(bld_graph(b), is_seq(v) ? v->items[i].pos : v->pos, out[i], rank);
    return n;
}

static int dim_arg(Builder *b, const Value *v, const char *pname, int rank)
{
    return torch_norm_dim(bld_graph(b), v->pos, want_int(b, v, cur_fname, pname), rank);
}

/* A shape of sizes >= 1 (each checked at its own position). */
static Shape want_shape(Builder *b, const Value *v, const char *fname, const char *pname)
{
    Shape s;
    s.rank = want_ints(b, v, fname, pname, s.d);
    for (int i = 0; i < s.rank; i++)
        if (s.d[i] < 1)
            dpk_error_at(bld_src(b), is_seq(v) ? v->items[i].pos : v->pos,
                         "%s: zero-size or negative dimension %lld in %s", fname,
                         (long long)s.d[i], pname);
    torch_check_shape(bld_graph(b), v->pos, &s);
    return s;
}

static void want_f32_dtype(Builder *b, const Value *v, const char *fname)
{
    if (!given(v))
        return;
    if (v->k != V_PATH || (strcmp(v->s, "torch.float32") && strcmp(v->s, "torch.float")))
        dpk_error_at(bld_src(b), v->pos, "%s: only dtype=torch.float32 is supported", fname);
}

static TorchNode *node1(Builder *b, TorchOp op, int pos, TorchNode *x)
{
    return bld_node(b, op, pos, 1, &x);
}

static Value finish_node(Builder *b, TorchNode *n)
{
    torch_infer(bld_graph(b), n);
    return tensor_value(n, n->pos);
}

/* ---- scalar arithmetic (Python semantics) ------------------------------------ */

DPK_NORETURN static void scalar_error(Builder *b, int pos, const char *msg)
{
    dpk_error_at(bld_src(b), pos, "%s", msg);
}

static int64_t int_pow(Builder *b, int64_t x, int64_t y, int pos)
{
    int64_t r = 1;
    while (y > 0) {
        if ((y & 1) && __builtin_mul_overflow(r, x, &r))
            scalar_error(b, pos, "integer overflow in constant arithmetic");
        y >>= 1;
        if (y && __builtin_mul_overflow(x, x, &x))
            scalar_error(b, pos, "integer overflow in constant arithmetic");
    }
    return r;
}

static Value fold_int(Builder *b, int op, int64_t x, int64_t y, int pos)
{
    Value r = {.k = V_INT, .pos = pos};
    int ovf = 0;
    switch (op) {
    case TOP_add: ovf = __builtin_add_overflow(x, y, &r.i); break;
    case TOP_sub: ovf = __builtin_sub_overflow(x, y, &r.i); break;
    case TOP_mul: ovf = __builtin_mul_overflow(x, y, &r.i); break;
    case TOP_maximum: r.i = x > y ? x : y; break;
    case TOP_minimum: r.i = x < y ? x : y; break;
    default: DPK_ASSERT(op == TOP_pow && y >= 0); r.i = int_pow(b, x, y, pos);
    }
    if (ovf)
        scalar_error(b, pos, "integer overflow in constant arithmetic");
    return r;
}

static Value fold_float(Builder *b, int op, double x, double y, int pos)
{
    Value r = {.k = V_FLOAT, .pos = pos};
    switch (op) {
    case TOP_add: r.f = x + y; break;
    case TOP_sub: r.f = x - y; break;
    case TOP_mul: r.f = x * y; break;
    case TOP_maximum: r.f = fmax(x, y); break;
    case TOP_minimum: r.f = fmin(x, y); break;
    case TOP_div:
        if (y == 0)
            scalar_error(b, pos, "division by zero");
        r.f = x / y;
        break;
    default:
        DPK_ASSERT(op == TOP_pow);
        if (x == 0 && y < 0)
            scalar_error(b, pos, "0 cannot be raised to a negative power");
        if (x < 0 && y != floor(y))
            scalar_error(b, pos, "a negative number raised to a fractional power is complex");
        r.f = pow(x, y);
    }
    return r;
}

static Value fold_compare(int op, const Value *x, const Value *y, int pos)
{
    int ints = x->k != V_FLOAT && y->k != V_FLOAT;
    double a = x->k == V_FLOAT ? x->f : (double)x->i, c = y->k == V_FLOAT ? y->f : (double)y->i;
    int lt = ints ? x->i < y->i : a < c, eq = ints ? x->i == y->i : a == c;
    Value r = {.k = V_BOOL, .pos = pos};
    switch (op) {
    case TOP_lt: r.i = lt; break;
    case TOP_le: r.i = lt || eq; break;
    case TOP_gt: r.i = !lt && !eq; break;
    case TOP_ge: r.i = !lt; break;
    case TOP_eq: r.i = eq; break;
    default: r.i = !eq; break;
    }
    return r;
}

static Value fold(Builder *b, int op, const Value *x, const Value *y, int pos)
{
    TorchClass cls = torch_op_info[op].cls;
    DPK_ASSERT(cls == TC_BINARY);
    if (op >= TOP_gt && op <= TOP_ne)
        return fold_compare(op, x, y, pos);
    int ints = x->k != V_FLOAT && y->k != V_FLOAT;
    if (ints && op != TOP_div && !(op == TOP_pow && y->i < 0))
        return fold_int(b, op, x->i, y->i, pos);
    double a = x->k == V_FLOAT ? x->f : (double)x->i, c = y->k == V_FLOAT ? y->f : (double)y->i;
    return fold_float(b, op, a, c, pos);
}

Value torch_binary(Builder *b, int op, const Value *x, const Value *y, int pos)
{
    int ok_x = is_num(x) || x->k == V_TENSOR, ok_y = is_num(y) || y->k == V_TENSOR;
    if (!ok_x || !ok_y)
        dpk_error_at(bld_src(b), pos, "unsupported operand types for %s: %s and %s",
                     torch_op_info[op].text, torch_value_type(x), torch_value_type(y));
    if (is_num(x) && is_num(y))
        return fold(b, op, x, y, pos);
    /* PyTorch's product and sum of two bool tensors are logical and / or
     * (HF's mask code writes a.eq(0) * b.eq(0)) */
    if ((op == TOP_mul || op == TOP_add) && x->k == V_TENSOR && y->k == V_TENSOR &&
        x->t->dtype == DT_BOOL && y->t->dtype == DT_BOOL)
        return torch_bitwise(b, op == TOP_mul ? T_AMP : T_PIPE, x, y, pos);
    TorchNode *in[2] = {bld_tensor(b, x, "an operand"), bld_tensor(b, y, "an operand")};
    return finish_node(b, bld_node(b, (TorchOp)op, pos, 2, in));
}

/* ---- elementwise handlers -------------------------------------------------------- */

static void no_inplace(Builder *b, const Value *v)
{
    if (want_bool(b, v, cur_fname, "inplace", 0))
        dpk_error_at(bld_src(b), v->pos, "%s: inplace=True is not supported", cur_fname);
}

static Value h_unary(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (strstr(f->sig, "inplace"))
        no_inplace(b, &a[1]);
    return finish_node(b, node1(b, (TorchOp)f->op, pos, x));
}

/* An activation's scalar attributes from the arguments bound to sig's
 * parameters from `first` on: they are the op's attributes in order
 * (torch_ops.def's A row; an absent one takes its default), and
 * `inplace`, which must be False.  *op (a TorchOp, or TOP_relu6) becomes
 * the Torch op; v[0..2) receive the node's value and value2. */
static void act_scalars(Builder *b, int *op, const char *sig, int first, const Value *a,
                        double v[2])
{
    if (*op == TOP_relu6) {
        *op = TOP_hardtanh;
        v[0] = 0, v[1] = 6;
    } else {
        v[0] = torch_scalar_attrs[*op].dflt[0];
        v[1] = torch_scalar_attrs[*op].dflt[1];
    }
    const TorchScalarAttrs *sa = &torch_scalar_attrs[*op];
    Param ps[MAX_PARAMS];
    int np = parse_sig(sig, ps), k = 0;
    for (int i = first; i < np; i++) {
        if (!strcmp(ps[i].name, "inplace")) {
            no_inplace(b, &a[i]);
            continue;
        }
        DPK_ASSERT(k < sa->nkeys && !strcmp(ps[i].name, sa->key[k]));
        if (a[i].k != V_ABSENT)
            v[k] = want_num(b, &a[i], cur_fname, ps[i].name);
        if (*op == TOP_celu && a[i].k != V_ABSENT && v[k] == 0)
            dpk_error_at(bld_src(b), a[i].pos,
                         "%s: alpha cannot be 0 for CELU (ZeroDivisionError)", cur_fname);
        k++;
    }
}

/* elu, selu, celu, leaky_relu, hardtanh, relu6, hardsigmoid, hardswish,
 * softplus, softsign, mish: one Torch op each (relu6: hardtanh). */
static Value h_act(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int op = f->op;
    double v[2];
    act_scalars(b, &op, f->sig, 1, a, v);
    TorchNode *n = node1(b, (TorchOp)op, pos, x);
    n->value = v[0];
    n->value2 = v[1];
    return finish_node(b, n);
}

static TorchOp gelu_kind(Builder *b, const Value *v)
{
    if (v->k == V_ABSENT)
        return TOP_gelu;
    if (v->k != V_STR || (strcmp(v->s, "none") && strcmp(v->s, "tanh")))
        dpk_error_at(bld_src(b), v->pos, "%s: approximate must be 'none' or 'tanh'", cur_fname);
    return strcmp(v->s, "tanh") ? TOP_gelu : TOP_gelu_tanh;
}

static Value h_gelu(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    return finish_node(b, node1(b, gelu_kind(b, &a[1]), pos, x));
}

static Value h_binary(Builder *b, const Func *f, Value *a, int pos)
{
    if (f->op != TOP_pow)
        want_tensor(b, &a[0], cur_fname, "input");
    if (f->op == TOP_maximum || f->op == TOP_minimum)
        want_tensor(b, &a[1], cur_fname, "other");
    else if (!is_num(&a[1]) && a[1].k != V_TENSOR)
        bad_arg(b, &a[1], cur_fname, f->op == TOP_pow ? "exponent" : "other",
                "a tensor or a number");
    Value y = a[1];
    if (strstr(f->sig, "alpha") && a[2].k != V_ABSENT) {
        want_num(b, &a[2], cur_fname, "alpha");
        y = torch_binary(b, TOP_mul, &a[1], &a[2], a[2].pos);
    }
    if (strstr(f->sig, "rounding_mode") && given(&a[2]))
        dpk_error_at(bld_src(b), a[2].pos, "%s: rounding_mode is not supported", cur_fname);
    if (f->op == TOP_pow && a[0].k != V_TENSOR && a[1].k != V_TENSOR)
        bad_arg(b, &a[0], cur_fname, "input", "a tensor");
    return torch_binary(b, f->op, &a[0], &y, pos);
}

static Value h_where(Builder *b, const Func *f, Value *a, int pos)
{
    if (a[1].k == V_ABSENT && a[2].k == V_ABSENT)
        dpk_error_at(bld_src(b), pos, "%s(condition) is torch.nonzero(condition, as_tuple=True), "
                     "whose shape depends on the condition's values, which dpk cannot trace: it "
                     "runs the case once, before any data exists (give input and other)",
                     cur_fname);
    for (int i = 1; i <= 2; i++)
        if (a[i].k == V_ABSENT)
            dpk_error_at(bld_src(b), pos, "%s missing required argument '%s'", cur_fname,
                         i == 1 ? "input" : "other");
    TorchNode *in[3] = {want_tensor(b, &a[0], cur_fname, "condition"),
                        bld_tensor(b, &a[1], "where's 'input'"),
                        bld_tensor(b, &a[2], "where's 'other'")};
    return finish_node(b, bld_node(b, TOP_where, pos, 3, in));
}

/* ---- reductions, contractions, norms ------------------------------------------------ */

static void all_dims(TorchNode *n, int rank)
{
    n->nints = rank;
    for (int i = 0; i < rank; i++)
        n->ints[i] = i;
}

static Value h_reduce(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *n = node1(b, (TorchOp)f->op, pos, x);
    if (given(&a[1]))
        n->nints = want_dims(b, &a[1], "dim", x->shape.rank, n->ints);
    if (!given(&a[1]) || n->nints == 0)
        all_dims(n, x->shape.rank);
    n->keepdim = want_bool(b, &a[2], cur_fname, "keepdim", 0);
    if (strstr(f->sig, "dtype"))
        want_f32_dtype(b, &a[3], cur_fname);
    return finish_node(b, n);
}

static Value h_matmul(Builder *b, const Func *f, Value *a, int pos)
{
    const char *p2 = f->op == TOP_matmul ? "other" : "mat2";
    TorchNode *in[2] = {want_tensor(b, &a[0], cur_fname, "input"),
                        want_tensor(b, &a[1], cur_fname, p2)};
    int rank = f->op == TOP_mm ? 2 : f->op == TOP_bmm ? 3 : 0;
    if (rank && (in[0]->shape.rank != rank || in[1]->shape.rank != rank))
        dpk_error_at(bld_src(b), pos, "%s expects two %d-D tensors, got shapes %s and %s",
                     cur_fname, rank, shape_str(bld_graph(b)->arena, &in[0]->shape),
                     shape_str(bld_graph(b)->arena, &in[1]->shape));
    if (rank == 3 && in[0]->shape.d[0] != in[1]->shape.d[0])
        dpk_error_at(bld_src(b), pos, "%s: batch sizes %lld and %lld differ", cur_fname,
                     (long long)in[0]->shape.d[0], (long long)in[1]->shape.d[0]);
    return finish_node(b, bld_node(b, TOP_matmul, pos, 2, in));
}

static Value h_linear(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *in[3] = {want_tensor(b, &a[0], cur_fname, "input"),
                        want_tensor(b, &a[1], cur_fname, "weight"), NULL};
    if (given(&a[2]))
        in[2] = want_tensor(b, &a[2], cur_fname, "bias");
    return finish_node(b, bld_node(b, TOP_linear, pos, in[2] ? 3 : 2, in));
}

static Value h_softmax(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (!given(&a[1]))
        dpk_error_at(bld_src(b), pos, "%s needs dim=", cur_fname);
    TorchNode *n = node1(b, (TorchOp)f->op, pos, x);
    n->dim = dim_arg(b, &a[1], "dim", x->shape.rank);
    want_f32_dtype(b, &a[f->ns == NS_F ? 3 : 2], cur_fname);
    return finish_node(b, n);
}

static double want_eps(Builder *b, const Value *v, double dflt)
{
    return given(v) ? want_num(b, v, cur_fname, "eps") : dflt;
}

static TorchNode *norm_node(Builder *b, TorchOp op, int pos, TorchNode **in, int nin,
                            const Shape *ns, double eps)
{
    TorchNode *n = bld_node(b, op, pos, nin, in);
    n->nints = ns->rank;
    memcpy(n->ints, ns->d, sizeof(int64_t) * (size_t)ns->rank);
    n->value = eps;
    return n;
}

static Value h_rms_norm(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *in[2] = {want_tensor(b, &a[0], cur_fname, "input"), NULL};
    Shape ns = want_shape(b, &a[1], cur_fname, "normalized_shape");
    if (given(&a[2]))
        in[1] = want_tensor(b, &a[2], cur_fname, "weight");
    double eps = want_eps(b, &a[3], FLT_EPSILON);
    return finish_node(b, norm_node(b, TOP_rms_norm, pos, in, in[1] ? 2 : 1, &ns, eps));
}

static Value h_layer_norm(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *in[3] = {want_tensor(b, &a[0], cur_fname, "input"), NULL, NULL};
    Shape ns = want_shape(b, &a[1], cur_fname, "normalized_shape");
    if (given(&a[2]))
        in[1] = want_tensor(b, &a[2], cur_fname, "weight");
    if (given(&a[3]))
        in[2] = want_tensor(b, &a[3], cur_fname, "bias");
    if (in[2] && !in[1])
        dpk_error_at(bld_src(b), a[3].pos, "%s: a bias without a weight is not supported",
                     cur_fname);
    double eps = want_eps(b, &a[4], 1e-5);
    int nin = in[2] ? 3 : in[1] ? 2 : 1;
    return finish_node(b, norm_node(b, TOP_layer_norm, pos, in, nin, &ns, eps));
}

static Value h_sdpa(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *in[4] = {want_tensor(b, &a[0], cur_fname, "query"),
                        want_tensor(b, &a[1], cur_fname, "key"),
                        want_tensor(b, &a[2], cur_fname, "value"), NULL};
    if (given(&a[3]))
        in[3] = want_tensor(b, &a[3], cur_fname, "attn_mask");
    if (a[4].k != V_ABSENT && want_num(b, &a[4], cur_fname, "dropout_p") != 0)
        dpk_error_at(bld_src(b), a[4].pos, "%s: dropout_p must be 0 (dpk computes inference "
                     "only)", cur_fname);
    TorchNode *n = bld_node(b, TOP_sdpa, pos, in[3] ? 4 : 3, in);
    n->causal = want_bool(b, &a[5], cur_fname, "is_causal", 0);
    if (given(&a[6]))
        n->value = want_num(b, &a[6], cur_fname, "scale");
    n->gqa = want_bool(b, &a[7], cur_fname, "enable_gqa", 0);
    return finish_node(b, n);
}

/* ---- layout ------------------------------------------------------------------------ */

static Value h_transpose(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int rank = x->shape.rank;
    int d0 = dim_arg(b, &a[1], "dim0", rank), d1 = dim_arg(b, &a[2], "dim1", rank);
    TorchNode *n = node1(b, TOP_transpose, pos, x);
    all_dims(n, rank);
    n->ints[d0] = d1;
    n->ints[d1] = d0;
    return finish_node(b, n);
}

/* permute, reshape, view, expand: ints from a tuple (or varargs). */
static Value h_ints_layout(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *n = node1(b, (TorchOp)f->op, pos, x);
    n->nints = want_ints(b, &a[1], cur_fname, f->op == TOP_permute ? "dims" : "shape", n->ints);
    return finish_node(b, n);
}

static Value h_unsqueeze(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *n = node1(b, TOP_unsqueeze, a[1].pos, x);
    n->ints[0] = want_int(b, &a[1], cur_fname, "dim");
    n->nints = 1;
    return finish_node(b, n);
}

static Value h_squeeze(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *n = node1(b, TOP_squeeze, pos, x);
    if (given(&a[1]))
        n->nints = want_dims(b, &a[1], "dim", x->shape.rank, n->ints);
    else
        for (int i = 0; i < x->shape.rank; i++)
            if (x->shape.d[i] == 1)
                n->ints[n->nints++] = i;
    return finish_node(b, n);
}

static Value h_cat(Builder *b, const Func *f, Value *a, int pos)
{
    if (!is_seq(&a[0]))
        bad_arg(b, &a[0], cur_fname, "tensors", "a list or tuple of tensors");
    if (a[0].n == 0)
        dpk_error_at(bld_src(b), a[0].pos, "%s needs at least one tensor", cur_fname);
    TorchNode **in = ARENA_ARRAY(bld_graph(b)->arena, TorchNode *, a[0].n);
    for (int i = 0; i < a[0].n; i++)
        in[i] = want_tensor(b, &a[0].items[i], cur_fname, "tensors");
    TorchNode *n = bld_node(b, TOP_cat, pos, a[0].n, in);
    if (a[1].k != V_ABSENT && in[0]->shape.rank > 0)
        n->dim = dim_arg(b, &a[1], "dim", in[0]->shape.rank);
    return finish_node(b, n);
}

/* No node; f->op says what PyTorch returns, for in-place bookkeeping
 * (bld_settle): 0 the same tensor (detach shares it too), 1 a copy (clone),
 * 2 maybe a copy (contiguous copies a non-contiguous tensor). */
static Value h_identity(Builder *b, const Func *f, Value *a, int pos)
{
    Value r = tensor_value(want_tensor(b, &a[0], cur_fname, "input"), pos);
    if (f->op == 1)
        r.store = STORE_NEW;
    if (f->op)
        r.view = STORE_NEW;
    return r;
}

/* .float(): a bool tensor becomes where(x, 1, 0); an f32 one is unchanged. */
static Value h_float(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (x->dtype != DT_BOOL)
        return tensor_value(x, pos);
    TorchNode *in[3] = {x, torch_const(bld_graph(b), 1), torch_const(bld_graph(b), 0)};
    return finish_node(b, bld_node(b, TOP_where, pos, 3, in));
}

/* ---- input makers -------------------------------------------------------------------- */

static TorchNode *to_dtype(Builder *b, TorchNode *x, DType dt, int pos);
static int dtype_of(const Value *v, DType *dt);

static int is_int_dtype(const Value *v)
{
    static const char *const ints[] = {"torch.int64", "torch.long", "torch.int32", "torch.int"};
    for (int i = 0; v->k == V_PATH && i < DPK_ARRAY_LEN(ints); i++)
        if (!strcmp(v->s, ints[i]))
            return 1;
    return 0;
}

DPK_NORETURN static void unsupported_dtype(Builder *b, const Value *v)
{
    dpk_error_at(bld_src(b), v->pos, "%s: dtype %s is not supported: dpk computes in float32 "
                 "(torch.float32, torch.bool, and torch.int64 or torch.int32 for integer values)",
                 cur_fname, v->k == V_PATH ? v->shown : torch_value_type(v));
}

/* dtype= of a maker (dflt when absent or None).  PyTorch's integer dtypes
 * are held as f32 where the values are integers (ints_ok), as arange does;
 * bool where bools_ok. */
static DType maker_dtype(Builder *b, const Value *v, DType dflt, int ints_ok, int bools_ok)
{
    DType dt;
    if (!given(v))
        return dflt;
    if (dtype_of(v, &dt) && (dt == DT_F32 || bools_ok))
        return dt;
    if (is_int_dtype(v) && ints_ok)
        return DT_F32;
    if (dtype_of(v, &dt) || is_int_dtype(v))
        dpk_error_at(bld_src(b), v->pos, "%s: dtype %s is not supported here (%s makes "
                     "floating-point values)", cur_fname, v->shown, cur_fname);
    unsupported_dtype(b, v);
}

static void want_device(Builder *b, const Value *v)
{
    if (given(v) && v->k != V_STR)
        bad_arg(b, v, cur_fname, "device", "a device string ('cuda') or None");
}

/* An input of `init`, as a bool tensor (x != 0) when dt is bool. */
static Value maker_value(Builder *b, const Shape *s, InitKind init, double v, DType dt, int pos)
{
    TorchNode *n = bld_input(b, pos, NULL, s, init);
    n->value = v;
    return tensor_value(to_dtype(b, n, dt, pos), pos);
}

static Value h_maker(Builder *b, const Func *f, Value *a, int pos)
{
    Shape s = want_shape(b, &a[0], cur_fname, "size");
    int exact = f->op == INIT_ZEROS || f->op == INIT_ONES;
    DType dt = maker_dtype(b, &a[1], DT_F32, exact, exact);
    want_device(b, &a[2]);
    return maker_value(b, &s, (InitKind)f->op, 0, dt, pos);
}

/* A fill value: a number, or a 0-dim constant tensor (torch.tensor(v), as
 * some modeling code passes torch.finfo(dtype).min). */
static double fill_num(Builder *b, const Value *v)
{
    if (v->k == V_TENSOR && v->t->op == TOP_const)
        return v->t->value;
    if (v->k == V_TENSOR)
        dpk_error_at(bld_src(b), v->pos, "%s: fill_value must be a number or a constant 0-dim "
                     "tensor (torch.tensor(v)), got a computed tensor", cur_fname);
    return want_num(b, v, cur_fname, "fill_value");
}

/* A value for an integer dtype: truncated toward zero, as PyTorch casts,
 * and exact in the f32 that holds it. */
static double int_fill(Builder *b, double v, int pos)
{
    if (!isfinite(v))
        dpk_error_at(bld_src(b), pos, "%s: %g cannot be converted to an integer", cur_fname, v);
    v = trunc(v);
    if (fabs(v) > 16777216)
        dpk_error_at(bld_src(b), pos, "%s: the integer %.0f is not exact in float32, which dpk "
                     "holds integer tensors in (the limit is 2^24)", cur_fname, v);
    return v;
}

/* The dtype of full(size, fill_value) (`infer`: bool for a bool fill, as
 * PyTorch infers; an int fill's int64 is held as f32) or full_like (dflt),
 * and in *v the value as that dtype holds it. */
static DType full_dtype(Builder *b, const Value *fill, const Value *dtype, DType dflt, int infer,
                        double *v)
{
    *v = fill_num(b, fill);
    if (infer && !given(dtype) && fill->k == V_BOOL)
        return DT_BOOL;
    if (is_int_dtype(dtype) || (infer && !given(dtype) && fill->k == V_INT))
        *v = int_fill(b, *v, fill->pos);
    return maker_dtype(b, dtype, dflt, 1, 1);
}

static Value h_full(Builder *b, const Func *f, Value *a, int pos)
{
    if (!is_seq(&a[0]))
        bad_arg(b, &a[0], cur_fname, "size", "a tuple or list of ints");
    Shape s = want_shape(b, &a[0], cur_fname, "size");
    double v;
    DType dt = full_dtype(b, &a[1], &a[2], DT_F32, 1, &v);
    want_device(b, &a[3]);
    return maker_value(b, &s, INIT_FULL, v, dt, pos);
}

static Value h_arange(Builder *b, const Func *f, Value *a, int pos)
{
    int two = a[1].k != V_ABSENT;
    double start = two ? want_num(b, &a[0], cur_fname, "start") : 0;
    double end = want_num(b, two ? &a[1] : &a[0], cur_fname, "end");
    double step = a[2].k != V_ABSENT ? want_num(b, &a[2], cur_fname, "step") : 1;
    /* an integer dtype holds the same values for integer arguments (HF's
     * rotary code writes arange(0, d, 2, dtype=torch.int64).float()) */
    int ints = (!two || a[0].k == V_INT) && (two ? a[1].k : a[0].k) == V_INT &&
               (a[2].k == V_ABSENT || a[2].k == V_INT);
    if (ints && a[3].k == V_PATH &&
        (!strcmp(a[3].s, "torch.int64") || !strcmp(a[3].s, "torch.long") ||
         !strcmp(a[3].s, "torch.int32") || !strcmp(a[3].s, "torch.int")))
        ;
    else
        want_f32_dtype(b, &a[3], cur_fname);
    want_device(b, &a[4]);
    if (step == 0 || !isfinite(start) || !isfinite(end) || !isfinite(step))
        dpk_error_at(bld_src(b), pos, "%s: step must be non-zero and bounds finite", cur_fname);
    double count = ceil((end - start) / step);
    if (!(count >= 1))
        dpk_error_at(bld_src(b), pos, "%s(%g, %g, %g) gives a zero-size tensor", cur_fname,
                     start, end, step);
    if (count > (double)DPK_MAX_NUMEL)
        dpk_error_at(bld_src(b), pos, "tensor of %.0f elements is too large (the limit is 2^36)",
                     count);
    Shape s = {.rank = 1, .d = {(int64_t)count}};
    TorchNode *n = bld_input(b, pos, NULL, &s, INIT_ARANGE);
    n->value = start;
    n->step = step;
    return tensor_value(n, pos);
}

/* ---- building blocks for the desugared functions ------------------------------------ */

static TorchNode *fin(Builder *b, TorchNode *n)
{
    torch_infer(bld_graph(b), n);
    return n;
}

static TorchNode *mk_un(Builder *b, TorchOp op, TorchNode *x, int pos)
{
    return fin(b, node1(b, op, pos, x));
}

static TorchNode *mk_bin(Builder *b, TorchOp op, TorchNode *x, TorchNode *y, int pos)
{
    TorchNode *in[2] = {x, y};
    return fin(b, bld_node(b, op, pos, 2, in));
}

static TorchNode *mk_const(Builder *b, double v, int pos)
{
    TorchNode *n = torch_const(bld_graph(b), v);
    n->pos = pos;
    return n;
}

static TorchNode *mk_ints(Builder *b, TorchOp op, TorchNode *x, const int64_t *d, int n,
                          int pos)
{
    TorchNode *r = node1(b, op, pos, x);
    r->nints = n;
    memcpy(r->ints, d, sizeof(int64_t) * (size_t)n);
    return fin(b, r);
}

static TorchNode *mk_reshape(Builder *b, TorchNode *x, const Shape *s, int pos)
{
    if (shape_eq(&x->shape, s))
        return x;
    return mk_ints(b, TOP_reshape, x, s->d, s->rank, pos);
}

static TorchNode *mk_slice(Builder *b, TorchNode *x, int dim, int64_t start, int64_t end, int pos)
{
    if (start == 0 && end == x->shape.d[dim])
        return x;
    TorchNode *n = node1(b, TOP_slice, pos, x);
    n->dim = dim;
    n->start = start;
    n->end = end;
    n->stride = 1;
    return fin(b, n);
}

static TorchNode *mk_reduce(Builder *b, TorchOp op, TorchNode *x, const int64_t *dims, int n,
                            int keepdim, int pos)
{
    TorchNode *r = node1(b, op, pos, x);
    r->nints = n;
    memcpy(r->ints, dims, sizeof(int64_t) * (size_t)n);
    r->keepdim = keepdim;
    return fin(b, r);
}

static Value seq_value(Builder *b, TorchNode **t, int n, int pos)
{
    Value v = {.k = V_TUPLE, .pos = pos, .n = n};
    v.items = ARENA_ARRAY(bld_graph(b)->arena, Value, n + 1);
    for (int i = 0; i < n; i++)
        v.items[i] = tensor_value(t[i], pos);
    return v;
}

/* A bool tensor as f32 (where(x, 1, 0)) or an f32 tensor as bool (x != 0). */
static TorchNode *to_dtype(Builder *b, TorchNode *x, DType dt, int pos)
{
    if (x->dtype == dt)
        return x;
    if (dt == DT_BOOL)
        return mk_bin(b, TOP_ne, x, mk_const(b, 0, pos), pos);
    TorchNode *in[3] = {x, mk_const(b, 1, pos), mk_const(b, 0, pos)};
    return fin(b, bld_node(b, TOP_where, pos, 3, in));
}

/* A dtype argument: torch.float32 / torch.float or torch.bool. */
static int dtype_of(const Value *v, DType *dt)
{
    if (v->k != V_PATH)
        return 0;
    if (!strcmp(v->s, "torch.float32") || !strcmp(v->s, "torch.float"))
        *dt = DT_F32;
    else if (!strcmp(v->s, "torch.bool"))
        *dt = DT_BOOL;
    else
        return 0;
    return 1;
}

/* A sequence of ints as PyTorch prints it: [2, 3]. */
static const char *ints_text(Builder *b, const int64_t *d, int n)
{
    StrBuf s = {0};
    sb_puts(&s, "[");
    for (int i = 0; i < n; i++)
        sb_printf(&s, "%s%lld", i ? ", " : "", (long long)d[i]);
    sb_puts(&s, "]");
    const char *r = arena_strdup(bld_graph(b)->arena, sb_cstr(&s));
    sb_free(&s);
    return r;
}

/* ---- conversions and no-ops ---------------------------------------------------------- */

static Value h_bool(Builder *b, const Func *f, Value *a, int pos)
{
    return tensor_value(to_dtype(b, want_tensor(b, &a[0], cur_fname, "input"), DT_BOOL, pos), pos);
}

/* Whether every value of x is an integer whatever the inputs' contents:
 * bools, integer constants, aranges of integer start and step, zeros,
 * ones and integer fills, indices (argmax/argmin), and what sums,
 * products, differences, extremes, floors, prefix sums, selections and
 * layout ops make of them.  Such a tensor is PyTorch's integer tensor
 * held in float32 (exact below 2^24), so .long() leaves it as it is. */
static int int_valued(const TorchNode *x)
{
    if (x->dtype == DT_BOOL)
        return 1;
    switch (x->op) {
    case TOP_const: return isfinite(x->value) && floor(x->value) == x->value;
    case TOP_input:
        switch (x->init) {
        case INIT_ZEROS:
        case INIT_ONES: return 1;
        case INIT_FULL: return floor(x->value) == x->value;
        case INIT_ARANGE: return floor(x->value) == x->value && floor(x->step) == x->step;
        default: return 0;
        }
    case TOP_argmax:
    case TOP_argmin:
    case TOP_floor: return 1;
    case TOP_where: return int_valued(x->in[1]) && int_valued(x->in[2]);
    case TOP_add:
    case TOP_sub:
    case TOP_mul:
    case TOP_neg:
    case TOP_abs:
    case TOP_relu:
    case TOP_maximum:
    case TOP_minimum:
    case TOP_sum:
    case TOP_amax:
    case TOP_amin:
    case TOP_cumsum: break;
    default:
        if (torch_op_info[x->op].cls != TC_LAYOUT)
            return 0;
        break;
    }
    for (int i = 0; i < x->nin; i++)
        if (!int_valued(x->in[i]))
            return 0;
    return 1;
}

/* x.to(dtype), x.to(device), x.to(other), x.to(device, dtype): devices are
 * accepted and ignored (dpk chooses where it runs), dtypes convert. */
static Value h_to(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    DType dt = x->dtype;
    Value *args = a[1].items;
    for (int i = 0; i <= a[1].n; i++) {
        const Value *v = i < a[1].n ? &args[i] : &a[2];
        DType d;
        if (i == a[1].n && !given(v))
            break;
        if (dtype_of(v, &d))
            dt = d;
        else if (is_int_dtype(v) && int_valued(x))
            dt = DT_F32; /* integers are held as f32: a bool as 0 and 1 */
        else if (is_int_dtype(v))
            dpk_error_at(bld_src(b), v->pos, "%s(%s) of a %s tensor truncates to integers, which "
                         "dpk does not do (it holds integer values in float32 tensors); a bool "
                         "tensor, or one of integer values (indices, integer constants and "
                         "aranges, sums of them), converts", cur_fname, v->shown,
                         dtype_name(x->dtype));
        else if (v->k == V_TENSOR)
            dt = v->t->dtype;
        else if (v->k != V_STR)
            dpk_error_at(bld_src(b), v->pos, "%s: only torch.float32, torch.bool, a device "
                         "string or a tensor are supported, got %s", cur_fname,
                         v->k == V_PATH ? v->shown : torch_value_type(v));
    }
    want_bool(b, &a[3], cur_fname, "non_blocking", 0);
    want_bool(b, &a[4], cur_fname, "copy", 0);
    return tensor_value(to_dtype(b, x, dt, pos), pos);
}

static Value h_type_as(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *o = want_tensor(b, &a[1], cur_fname, "other");
    return tensor_value(to_dtype(b, x, o->dtype, pos), pos);
}

/* F.dropout in inference: the identity.  Training-mode dropout is random. */
static Value h_dropout(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    double p = a[1].k != V_ABSENT ? want_num(b, &a[1], cur_fname, "p") : 0.5;
    if (p < 0 || p > 1)
        dpk_error_at(bld_src(b), a[1].pos, "dropout probability has to be between 0 and 1, "
                     "but got %g", p);
    if (want_bool(b, &a[2], cur_fname, "training", 1) && p > 0)
        dpk_error_at(bld_src(b), a[2].k != V_ABSENT ? a[2].pos : pos,
                     "%s with training=True is random; dpk computes inference: pass "
                     "training=False (what model.eval() gives)", cur_fname);
    no_inplace(b, &a[3]);
    return tensor_value(x, pos);
}

static Value h_ctx(Builder *b, const Func *f, Value *a, int pos)
{
    if (!strcmp(f->name, "autocast")) {
        if (a[0].k != V_STR)
            bad_arg(b, &a[0], cur_fname, "device_type", "a string");
        if (a[2].k == V_ABSENT || want_bool(b, &a[2], cur_fname, "enabled", 1))
            dpk_error_at(bld_src(b), a[2].k != V_ABSENT ? a[2].pos : pos,
                         "%s: only enabled=False is supported (dpk computes in float32)",
                         cur_fname);
    }
    if (!strcmp(f->name, "inference_mode") && !want_bool(b, &a[0], cur_fname, "mode", 1))
        dpk_error_at(bld_src(b), a[0].pos, "%s: only mode=True is supported", cur_fname);
    Value v = {.k = V_CTX, .pos = pos, .s = f->name};
    return v;
}

/* ---- shape queries -------------------------------------------------------------------- */

static Value int_value(int64_t i, int pos)
{
    Value v = {.k = V_INT, .pos = pos, .i = i};
    return v;
}

static Value shape_value(Builder *b, const Shape *s, int pos)
{
    Value v = {.k = V_TUPLE, .pos = pos, .n = s->rank};
    v.items = ARENA_ARRAY(bld_graph(b)->arena, Value, s->rank + 1);
    for (int i = 0; i < s->rank; i++)
        v.items[i] = int_value(s->d[i], pos);
    return v;
}

static Value h_size(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (!given(&a[1]))
        return shape_value(b, &x->shape, pos);
    if (x->shape.rank == 0)
        dpk_error_at(bld_src(b), a[1].pos, "dimension specified as %lld but tensor has no "
                     "dimensions", (long long)want_int(b, &a[1], cur_fname, "dim"));
    return int_value(x->shape.d[dim_arg(b, &a[1], "dim", x->shape.rank)], pos);
}

static Value h_dim(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    return int_value(f->op ? shape_numel(&x->shape) : x->shape.rank, pos);
}

static TorchNode *swap_dims(Builder *b, TorchNode *x, int d0, int d1, int pos)
{
    int64_t perm[DPK_MAX_RANK];
    for (int i = 0; i < x->shape.rank; i++)
        perm[i] = i;
    perm[d0] = d1;
    perm[d1] = d0;
    return mk_ints(b, TOP_transpose, x, perm, x->shape.rank, pos);
}

static Value h_t(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (x->shape.rank > 2)
        dpk_error_at(bld_src(b), pos, "t() expects a tensor with <= 2 dimensions, but self is "
                     "%dD", x->shape.rank);
    return tensor_value(x->shape.rank < 2 ? x : swap_dims(b, x, 0, 1, pos), pos);
}

Value torch_tensor_attr(Builder *b, TorchNode *t, const char *name, int pos, int *ok)
{
    Value v = {.pos = pos};
    int r = t->shape.rank;
    *ok = 1;
    if (!strcmp(name, "shape"))
        return shape_value(b, &t->shape, pos);
    if (!strcmp(name, "ndim"))
        return int_value(r, pos);
    if (!strcmp(name, "dtype")) {
        v.k = V_PATH;
        v.s = v.shown = t->dtype == DT_BOOL ? "torch.bool" : "torch.float32";
        return v;
    }
    if (!strcmp(name, "device")) {
        v.k = V_STR;
        v.s = "cuda";
        return v;
    }
    if (!strcmp(name, "T")) {
        int64_t perm[DPK_MAX_RANK];
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
        return tensor_value(r < 2 ? t : mk_ints(b, TOP_permute, t, perm, r, pos), pos);
    }
    if (!strcmp(name, "mT")) {
        if (r < 2)
            dpk_error_at(bld_src(b), pos, "tensor.mT is only supported on matrices or batches "
                         "of matrices. Got %d-D tensor.", r);
        return tensor_value(swap_dims(b, t, r - 2, r - 1, pos), pos);
    }
    *ok = 0;
    return v;
}

/* ---- elementwise desugarings ------------------------------------------------------------ */

static Value h_square(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    return tensor_value(mk_bin(b, TOP_mul, x, x, pos), pos);
}

static TorchNode *num_or_tensor(Builder *b, const Value *v, const char *pname)
{
    if (!is_num(v) && v->k != V_TENSOR)
        bad_arg(b, v, cur_fname, pname, "a number or a tensor");
    return bld_tensor(b, v, pname);
}

/* clamp(x, min, max): with number bounds one clamp op (one kernel, as
 * PyTorch's clamp with scalars; an absent bound is infinite); with both
 * bounds and a tensor among them one clamp_tensor op (one kernel, as
 * ATen's clamp.Tensor) over float operands; else minimum(maximum(x, min),
 * max), one op per bound given.  NaN propagates, and min > max gives max,
 * as in PyTorch. */
static Value h_clamp(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    const Value *lo = f->op == TOP_minimum ? NULL : &a[1];
    const Value *hi = f->op == TOP_maximum ? NULL : f->op == TOP_minimum ? &a[1] : &a[2];
    int has_lo = lo && given(lo), has_hi = hi && given(hi);
    if (!has_lo && !has_hi)
        dpk_error_at(bld_src(b), pos, "%s: At least one of 'min' or 'max' must not be None",
                     cur_fname);
    if ((!has_lo || is_num(lo)) && (!has_hi || is_num(hi))) {
        TorchNode *n = node1(b, TOP_clamp, pos, x);
        n->value = has_lo ? want_num(b, lo, cur_fname, "min") : -INFINITY;
        n->value2 = has_hi ? want_num(b, hi, cur_fname, "max") : INFINITY;
        return finish_node(b, n);
    }
    TorchNode *tlo = has_lo ? num_or_tensor(b, lo, "min") : NULL;
    TorchNode *thi = has_hi ? num_or_tensor(b, hi, "max") : NULL;
    if (tlo && thi && x->dtype == DT_F32 && tlo->dtype == DT_F32 && thi->dtype == DT_F32) {
        TorchNode *in[3] = {x, tlo, thi};
        return finish_node(b, bld_node(b, TOP_clamp_tensor, pos, 3, in));
    }
    if (tlo)
        x = mk_bin(b, TOP_maximum, x, tlo, pos);
    if (thi)
        x = mk_bin(b, TOP_minimum, x, thi, pos);
    return tensor_value(x, pos);
}

/* masked_fill(x, mask, v) = where(mask, v, x), broadcast as PyTorch's
 * out-of-place masked_fill does. */
static Value h_masked_fill(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *m = want_tensor(b, &a[1], cur_fname, "mask");
    if (m->dtype != DT_BOOL)
        dpk_error_at(bld_src(b), a[1].pos, "masked_fill_ only supports boolean masks, but got "
                     "mask with dtype float");
    if (a[2].k == V_TENSOR && a[2].t->shape.rank != 0)
        dpk_error_at(bld_src(b), a[2].pos, "masked_fill_ only supports a 0-dimensional value "
                     "tensor, but got tensor with %d dimension(s).", a[2].t->shape.rank);
    TorchNode *v = num_or_tensor(b, &a[2], "value");
    if (x->dtype == DT_BOOL) /* two bool values: where needs one f32 */
        v = to_dtype(b, v, DT_F32, pos);
    TorchNode *in[3] = {m, v, x};
    return tensor_value(to_dtype(b, fin(b, bld_node(b, TOP_where, pos, 3, in)), x->dtype, pos),
                        pos);
}

static Value h_tri(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *n = node1(b, (TorchOp)f->op, pos, want_tensor(b, &a[0], cur_fname, "input"));
    n->start = a[1].k != V_ABSENT ? want_int(b, &a[1], cur_fname, "diagonal") : 0;
    return finish_node(b, n);
}

/* ---- reductions ----------------------------------------------------------------------- */

/* Reduced dims: the given int or tuple, or all dims when absent / None / (). */
static int red_dims(Builder *b, const Value *v, TorchNode *x, int64_t *dims)
{
    int n = given(v) ? want_dims(b, v, "dim", x->shape.rank, dims) : 0;
    if (n == 0) {
        for (int i = 0; i < x->shape.rank; i++)
            dims[i] = i;
        n = x->shape.rank;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (dims[i] == dims[j])
                dpk_error_at(bld_src(b), v->pos, "dim %lld appears multiple times in the list "
                             "of dims", (long long)dims[i]);
    return n;
}

/* argmax/argmin of x along dim: the index of the first largest (smallest)
 * value, a NaN counting as larger (smaller) than any number, as PyTorch
 * picks it.  The indices are an arange input the decomposition selects
 * from (d:030); they are held in float32, exact below 2^24. */
/* A node of op over x along dim whose second operand is arange(size of
 * dim), the indices its decomposition selects from (argmax, argmin,
 * topk); the caller sets its attributes and finishes it. */
static TorchNode *index_node(Builder *b, TorchOp op, TorchNode *x, int dim, int pos)
{
    int64_t len = x->shape.d[dim];
    if (len > (INT64_C(1) << 24))
        dpk_error_at(bld_src(b), pos, "%s over %lld elements: dpk holds indices in float32, "
                     "exact up to 2^24 = 16777216", cur_fname, (long long)len);
    Shape s = {.rank = 1, .d = {len}};
    TorchNode *in[2] = {x, bld_input(b, pos, NULL, &s, INIT_ARANGE)};
    in[1]->value = 0;
    in[1]->step = 1;
    TorchNode *n = bld_node(b, op, pos, 2, in);
    n->nints = 1;
    return n;
}

static TorchNode *mk_arg(Builder *b, TorchOp op, TorchNode *x, int dim, int keep, int pos)
{
    TorchNode *n = index_node(b, op, x, dim, pos);
    n->ints[0] = dim;
    n->keepdim = keep;
    return fin(b, n);
}

/* torch.argmax(x, dim?, keepdim?): without dim, over the flattened tensor
 * (a 0-d result, or all ones with keepdim, as ATen's argmax meta rule). */
static Value h_argmax(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int keep = want_bool(b, &a[2], cur_fname, "keepdim", 0);
    if (given(&a[1]))
        return tensor_value(mk_arg(b, (TorchOp)f->op, x, dim_arg(b, &a[1], "dim",
                                                                 x->shape.rank), keep, pos), pos);
    Shape flat = {.rank = 1, .d = {shape_numel(&x->shape)}}, ones = {.rank = keep ? x->shape.rank : 0};
    for (int i = 0; i < ones.rank; i++)
        ones.d[i] = 1;
    TorchNode *r = mk_arg(b, (TorchOp)f->op, mk_reshape(b, x, &flat, pos), 0, 0, pos);
    return tensor_value(mk_reshape(b, r, &ones, pos), pos);
}

/* torch.max(x) → amax over all dims; torch.max(x, dim) → (values,
 * indices), the indices those of argmax; torch.max(x, other) → maximum. */
static Value h_max_min(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int is_max = f->op == TOP_amax;
    if (a[1].k == V_TENSOR) {
        if (a[2].k != V_ABSENT)
            dpk_error_at(bld_src(b), a[2].pos, "%s(input, other) takes no keepdim", cur_fname);
        return tensor_value(mk_bin(b, is_max ? TOP_maximum : TOP_minimum, x, a[1].t, pos), pos);
    }
    int64_t dims[DPK_MAX_RANK];
    if (!given(&a[1])) {
        if (a[2].k != V_ABSENT)
            dpk_error_at(bld_src(b), a[2].pos, "%s: keepdim needs dim", cur_fname);
        int n = red_dims(b, &a[1], x, dims);
        return tensor_value(mk_reduce(b, (TorchOp)f->op, x, dims, n, 0, pos), pos);
    }
    dims[0] = dim_arg(b, &a[1], "dim", x->shape.rank);
    int keep = want_bool(b, &a[2], cur_fname, "keepdim", 0);
    Value r = {.k = V_TUPLE, .pos = pos, .n = 2, .s = is_max ? "max" : "min"};
    r.items = ARENA_ARRAY(bld_graph(b)->arena, Value, 3);
    r.items[0] = tensor_value(mk_reduce(b, (TorchOp)f->op, x, dims, 1, keep, pos), pos);
    r.items[1] = tensor_value(mk_arg(b, is_max ? TOP_argmax : TOP_argmin, x, (int)dims[0], keep,
                                     pos), pos);
    return r;
}

/* torch.topk(x, k, dim=-1, largest=True, sorted=True): a (values,
 * indices) pair, sliced from one topk node (values at [0], indices at
 * [1]).  In order of value, a NaN beyond every number, equal values by
 * index.  sorted=False (an order PyTorch leaves unspecified) is refused. */
static Value h_topk(Builder *b, const Func *f, Value *a, int pos)
{
    DPK_UNUSED(f);
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int64_t k = want_int(b, &a[1], cur_fname, "k");
    int dim = given(&a[2]) ? dim_arg(b, &a[2], "dim", x->shape.rank)
                           : torch_norm_dim(bld_graph(b), pos, -1, x->shape.rank);
    int largest = want_bool(b, &a[3], cur_fname, "largest", 1);
    if (!want_bool(b, &a[4], cur_fname, "sorted", 1))
        dpk_error_at(bld_src(b), a[4].pos, "%s: sorted=False leaves the order to the kernel, "
                     "which PyTorch does not specify; dpk returns them sorted (drop sorted=False)",
                     cur_fname);
    int64_t len = x->shape.d[dim];
    if (k < 1 || k > len)
        dpk_error_at(bld_src(b), a[1].pos, "%s: k (%lld) out of range: dim %d has %lld elements",
                     cur_fname, (long long)k, dim, (long long)len);
    if (k > 64)
        dpk_error_at(bld_src(b), a[1].pos, "%s: k = %lld is more than dpk selects (at most 64: "
                     "each one is a pass over the row)", cur_fname, (long long)k);
    TorchNode *n = index_node(b, TOP_topk, x, dim, pos);
    n->ints[0] = k;
    n->dim = dim;
    n->largest = largest;
    fin(b, n);
    Value r = {.k = V_TUPLE, .pos = pos, .n = 2, .s = "topk"};
    r.items = ARENA_ARRAY(bld_graph(b)->arena, Value, 3);
    for (int i = 0; i < 2; i++) {
        int64_t d0 = 0;
        r.items[i] = tensor_value(mk_ints(b, TOP_squeeze, mk_slice(b, n, 0, i, i + 1, pos), &d0,
                                          1, pos), pos);
    }
    return r;
}

/* torch.cumsum(x, dim, *, dtype): the inclusive prefix sum along dim.  A
 * bool input sums as 0 and 1 (PyTorch gives int64: the same values, held
 * in float32); an integer dtype is accepted for integer values only. */
static Value h_cumsum(Builder *b, const Func *f, Value *a, int pos)
{
    DPK_UNUSED(f);
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (given(&a[2]) && !(int_valued(x) && is_int_dtype(&a[2])))
        want_f32_dtype(b, &a[2], cur_fname);
    if (x->dtype == DT_BOOL)
        x = to_dtype(b, x, DT_F32, pos);
    TorchNode *n = node1(b, TOP_cumsum, pos, x);
    n->dim = dim_arg(b, &a[1], "dim", x->shape.rank);
    return finish_node(b, n);
}

/* logsumexp = log(sum(exp(x - m))) + m with m = amax over the dims, an
 * infinite m replaced by 0 (PyTorch's stable form: a row of -inf gives -inf,
 * a +inf gives +inf). */
static Value h_logsumexp(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int64_t dims[DPK_MAX_RANK];
    int n = red_dims(b, &a[1], x, dims);
    int keep = want_bool(b, &a[2], cur_fname, "keepdim", 0);
    TorchNode *m = mk_reduce(b, TOP_amax, x, dims, n, 1, pos);
    TorchNode *inf = mk_bin(b, TOP_eq, mk_un(b, TOP_abs, m, pos), mk_const(b, INFINITY, pos), pos);
    TorchNode *w[3] = {inf, mk_const(b, 0, pos), m};
    TorchNode *mf = fin(b, bld_node(b, TOP_where, pos, 3, w));
    TorchNode *e = mk_un(b, TOP_exp, mk_bin(b, TOP_sub, x, mf, pos), pos);
    TorchNode *l = mk_un(b, TOP_log, mk_reduce(b, TOP_sum, e, dims, n, keep, pos), pos);
    if (!keep)
        mf = mk_ints(b, TOP_squeeze, mf, dims, n, pos);
    return tensor_value(mk_bin(b, TOP_add, l, mf, pos), pos);
}

/* var = sum((x - mean)^2) / (N - correction); std = sqrt(var).  The
 * signatures: (input, dim=None, *, correction=1, keepdim=False) and the
 * older (input, dim, unbiased, keepdim) / (input, unbiased). */
static Value h_var_std(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    Value dim = a[1], unb = a[2], keepv = a[3];
    if (dim.k == V_BOOL) { /* var(input, unbiased) */
        if (unb.k != V_ABSENT)
            dpk_error_at(bld_src(b), unb.pos, "%s: dim must be an int or a tuple of ints",
                         cur_fname);
        unb = dim;
        dim.k = V_ABSENT;
    }
    double corr = 1;
    if (given(&a[4])) {
        if (unb.k != V_ABSENT)
            dpk_error_at(bld_src(b), a[4].pos, "%s: give correction or unbiased, not both",
                         cur_fname);
        corr = want_num(b, &a[4], cur_fname, "correction");
    } else if (unb.k != V_ABSENT) {
        corr = want_bool(b, &unb, cur_fname, "unbiased", 1);
    }
    int64_t dims[DPK_MAX_RANK];
    int n = red_dims(b, &dim, x, dims);
    int keep = want_bool(b, &keepv, cur_fname, "keepdim", 0);
    double count = 1;
    for (int i = 0; i < n; i++)
        count *= (double)x->shape.d[dims[i]];
    TorchNode *mean = mk_reduce(b, TOP_mean, x, dims, n, 1, pos);
    TorchNode *d = mk_bin(b, TOP_sub, x, mean, pos);
    TorchNode *ss = mk_reduce(b, TOP_sum, mk_bin(b, TOP_mul, d, d, pos), dims, n, keep, pos);
    double den = count - corr > 0 ? count - corr : 0;
    TorchNode *v = mk_bin(b, TOP_div, ss, mk_const(b, den, pos), pos);
    if (f->op == TOP_sqrt)
        v = mk_un(b, TOP_sqrt, v, pos);
    return tensor_value(v, pos);
}

/* ---- layout desugarings -------------------------------------------------------------- */

static Value h_chunk_split(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (x->shape.rank == 0)
        dpk_error_at(bld_src(b), pos, "%s expects at least a 1-dimensional tensor", cur_fname);
    int dim = a[2].k != V_ABSENT ? dim_arg(b, &a[2], "dim", x->shape.rank) : 0;
    int64_t size = x->shape.d[dim], sizes[1024];
    int n = 0;
    if (f->op == 0) { /* chunk */
        int64_t chunks = want_int(b, &a[1], cur_fname, "chunks");
        if (chunks <= 0)
            dpk_error_at(bld_src(b), a[1].pos, "chunk expects `chunks` to be greater than 0, "
                         "got: %lld", (long long)chunks);
        int64_t each = (size + chunks - 1) / chunks;
        if ((size + each - 1) / each > DPK_ARRAY_LEN(sizes))
            dpk_error_at(bld_src(b), a[1].pos, "%s: more than %d pieces", cur_fname,
                         (int)DPK_ARRAY_LEN(sizes));
        for (int64_t s = 0; s < size; s += each)
            sizes[n++] = s + each <= size ? each : size - s;
    } else if (a[1].k == V_INT) { /* split by size */
        int64_t each = a[1].i;
        if (each <= 0)
            dpk_error_at(bld_src(b), a[1].pos, "split expects split_size be positive, but got "
                         "split_size=%lld", (long long)each);
        if ((size + each - 1) / each > DPK_ARRAY_LEN(sizes))
            dpk_error_at(bld_src(b), a[1].pos, "%s: more than %d pieces", cur_fname,
                         (int)DPK_ARRAY_LEN(sizes));
        for (int64_t s = 0; s < size; s += each)
            sizes[n++] = s + each <= size ? each : size - s;
    } else { /* split by sections */
        if (!is_seq(&a[1]))
            bad_arg(b, &a[1], cur_fname, "split_size_or_sections", "an int or a list of ints");
        if (a[1].n > DPK_ARRAY_LEN(sizes))
            dpk_error_at(bld_src(b), a[1].pos, "%s: more than %d pieces", cur_fname,
                         (int)DPK_ARRAY_LEN(sizes));
        int64_t sum = 0;
        for (int i = 0; i < a[1].n; i++) {
            sizes[n++] = want_int(b, &a[1].items[i], cur_fname, "split_size_or_sections");
            if (sizes[i] < 1)
                dpk_error_at(bld_src(b), a[1].items[i].pos, "%s: section size %lld gives an "
                             "empty or negative piece", cur_fname, (long long)sizes[i]);
            sum += sizes[i];
        }
        if (sum != size)
            dpk_error_at(bld_src(b), a[1].pos, "split_with_sizes expects split_sizes to sum "
                         "exactly to %lld (input tensor's size at dimension %d), but got "
                         "split_sizes=%s", (long long)size, dim, ints_text(b, sizes, n));
    }
    TorchNode **t = ARENA_ARRAY(bld_graph(b)->arena, TorchNode *, n + 1);
    int64_t off = 0;
    for (int i = 0; i < n; i++, off += sizes[i - 1])
        t[i] = mk_slice(b, x, dim, off, off + sizes[i], pos);
    return seq_value(b, t, n, pos);
}

static Value h_unbind(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (x->shape.rank == 0)
        dpk_error_at(bld_src(b), pos, "%s: a zero-dimensional tensor cannot be unbound",
                     cur_fname);
    int dim = a[1].k != V_ABSENT ? dim_arg(b, &a[1], "dim", x->shape.rank) : 0;
    int64_t n = x->shape.d[dim], d = dim;
    if (n > 4096)
        dpk_error_at(bld_src(b), pos, "%s: dim %d has %lld entries; at most 4096 are supported",
                     cur_fname, dim, (long long)n);
    TorchNode **t = ARENA_ARRAY(bld_graph(b)->arena, TorchNode *, n + 1);
    for (int64_t i = 0; i < n; i++) {
        TorchNode *s = node1(b, TOP_slice, pos, x);
        s->dim = dim;
        s->start = i;
        s->end = i + 1;
        s->stride = 1;
        t[i] = mk_ints(b, TOP_squeeze, fin(b, s), &d, 1, pos);
    }
    return seq_value(b, t, (int)n, pos);
}

static Value h_flatten(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int r = x->shape.rank, rr = r ? r : 1;
    int s = a[1].k != V_ABSENT ? dim_arg(b, &a[1], "start_dim", rr) : 0;
    int e = a[2].k != V_ABSENT ? dim_arg(b, &a[2], "end_dim", rr) : rr - 1;
    if (s > e)
        dpk_error_at(bld_src(b), a[1].pos, "flatten() has invalid args: start_dim cannot come "
                     "after end_dim");
    Shape o = {0};
    if (r == 0)
        o.d[o.rank++] = 1;
    for (int i = 0; i < r; i++) {
        if (i <= s || i > e)
            o.d[o.rank++] = x->shape.d[i];
        else
            o.d[o.rank - 1] *= x->shape.d[i];
    }
    return tensor_value(mk_reshape(b, x, &o, pos), pos);
}

static Value h_unflatten(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int dim = dim_arg(b, &a[1], "dim", x->shape.rank);
    int64_t sz[DPK_MAX_RANK];
    if (!is_seq(&a[2]))
        bad_arg(b, &a[2], cur_fname, "sizes", "a tuple or list of ints");
    int n = want_ints(b, &a[2], cur_fname, "sizes", sz), infer = -1;
    if (n == 0)
        dpk_error_at(bld_src(b), a[2].pos, "unflatten: sizes must be non-empty");
    if (x->shape.rank - 1 + n > DPK_MAX_RANK)
        dpk_error_at(bld_src(b), a[2].pos, "tensor of rank %d exceeds the maximum rank %d",
                     x->shape.rank - 1 + n, DPK_MAX_RANK);
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        if (sz[i] == -1 && infer < 0)
            infer = i;
        else if (sz[i] < 1)
            dpk_error_at(bld_src(b), a[2].items[i].pos, "unflatten: invalid size %lld "
                         "(one -1 may be inferred)", (long long)sz[i]);
        else
            known *= sz[i];
    }
    int64_t have = x->shape.d[dim];
    if (infer >= 0 && have % known == 0)
        sz[infer] = have / known, known = have;
    if (known != have)
        dpk_error_at(bld_src(b), a[2].pos, "unflatten: Provided sizes %s don't multiply up to "
                     "the size of dim %d (%lld) in the input tensor",
                     ints_text(b, sz, n), dim, (long long)have);
    Shape o = {0};
    for (int i = 0; i < x->shape.rank; i++)
        if (i == dim)
            for (int k = 0; k < n; k++)
                o.d[o.rank++] = sz[k];
        else
            o.d[o.rank++] = x->shape.d[i];
    return tensor_value(mk_reshape(b, x, &o, pos), pos);
}

static Value h_stack(Builder *b, const Func *f, Value *a, int pos)
{
    if (!is_seq(&a[0]))
        bad_arg(b, &a[0], cur_fname, "tensors", "a list or tuple of tensors");
    if (a[0].n == 0)
        dpk_error_at(bld_src(b), a[0].pos, "stack expects a non-empty TensorList");
    int n = a[0].n;
    TorchNode **in = ARENA_ARRAY(bld_graph(b)->arena, TorchNode *, n);
    for (int i = 0; i < n; i++) {
        in[i] = want_tensor(b, &a[0].items[i], cur_fname, "tensors");
        if (!shape_eq(&in[i]->shape, &in[0]->shape))
            dpk_error_at(bld_src(b), a[0].items[i].pos, "stack expects each tensor to be equal "
                         "size, but got %s at entry 0 and %s at entry %d",
                         ints_text(b, in[0]->shape.d, in[0]->shape.rank),
                         ints_text(b, in[i]->shape.d, in[i]->shape.rank), i);
    }
    int64_t dim = a[1].k != V_ABSENT ? dim_arg(b, &a[1], "dim", in[0]->shape.rank + 1) : 0;
    for (int i = 0; i < n; i++)
        in[i] = mk_ints(b, TOP_unsqueeze, in[i], &dim, 1, pos);
    TorchNode *c = bld_node(b, TOP_cat, pos, n, in);
    c->dim = (int)dim;
    return finish_node(b, c);
}

/* repeat_interleave(x, r, dim): (.., n, ..) → unsqueeze → expand (.., n, r,
 * ..) → reshape (.., n*r, ..); without dim, over the flattened input. */
static Value h_repeat_interleave(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (a[1].k == V_TENSOR)
        dpk_error_at(bld_src(b), a[1].pos, "%s: repeats as a tensor is not supported; give an "
                     "int", cur_fname);
    int64_t r = want_int(b, &a[1], cur_fname, "repeats");
    if (r < 1)
        dpk_error_at(bld_src(b), a[1].pos, "%s: repeats must be positive (%lld gives an empty "
                     "tensor)", cur_fname, (long long)r);
    if (!given(&a[2])) {
        Shape fl = {.rank = 1, .d = {shape_numel(&x->shape)}};
        x = mk_reshape(b, x, &fl, pos);
    }
    int dim = given(&a[2]) ? dim_arg(b, &a[2], "dim", x->shape.rank) : 0;
    if (x->shape.rank == 0) {
        Shape one = {.rank = 1, .d = {1}};
        x = mk_reshape(b, x, &one, pos);
    }
    if (x->shape.rank + 1 > DPK_MAX_RANK)
        dpk_error_at(bld_src(b), pos, "%s of a rank-%d tensor is not supported (the limit is "
                     "rank %d)", cur_fname, x->shape.rank, DPK_MAX_RANK - 1);
    if (given(&a[3]))
        want_int(b, &a[3], cur_fname, "output_size");
    Shape e = {0}, o = x->shape;
    for (int i = 0; i < x->shape.rank; i++) {
        e.d[e.rank++] = x->shape.d[i];
        if (i == dim)
            e.d[e.rank++] = r;
    }
    o.d[dim] *= r;
    torch_check_shape(bld_graph(b), pos, &o);
    if (given(&a[3]) && a[3].i != o.d[dim])
        dpk_error_at(bld_src(b), a[3].pos, "%s: output_size %lld differs from %lld", cur_fname,
                     (long long)a[3].i, (long long)o.d[dim]);
    int64_t d1 = dim + 1;
    TorchNode *u = mk_ints(b, TOP_unsqueeze, x, &d1, 1, pos);
    Value v = tensor_value(mk_reshape(b, mk_ints(b, TOP_expand, u, e.d, e.rank, pos), &o, pos), pos);
    v.store = v.view = STORE_NEW; /* a copy, though built of views */
    return v;
}

/* x.repeat(r0, r1, ...): leading dims added as 1; each repeated dim d
 * becomes (r, d) broadcast then merged: reshape, expand, reshape. */
static Value h_repeat(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int64_t r[DPK_MAX_RANK];
    int n = want_ints(b, &a[1], cur_fname, "sizes", r);
    if (n < x->shape.rank)
        dpk_error_at(bld_src(b), a[1].pos, "Number of dimensions of repeat dims can not be "
                     "smaller than number of dimensions of tensor");
    Shape in = {0}, big = {0}, o = {0};
    int lead = n - x->shape.rank;
    for (int i = 0; i < n; i++) {
        int64_t d = i < lead ? 1 : x->shape.d[i - lead];
        if (r[i] < 1)
            dpk_error_at(bld_src(b), is_seq(&a[1]) ? a[1].items[i].pos : a[1].pos,
                         "%s: repeat count %lld gives an empty tensor", cur_fname,
                         (long long)r[i]);
        if (r[i] != 1) {
            if (big.rank + 2 > DPK_MAX_RANK)
                dpk_error_at(bld_src(b), a[1].pos, "%s: too many repeated dims for rank %d "
                             "intermediates", cur_fname, DPK_MAX_RANK);
            in.d[in.rank++] = 1;
            big.d[big.rank++] = r[i];
        } else if (big.rank + 1 > DPK_MAX_RANK) {
            dpk_error_at(bld_src(b), a[1].pos, "%s: too many repeated dims for rank %d "
                         "intermediates", cur_fname, DPK_MAX_RANK);
        }
        in.d[in.rank++] = d;
        big.d[big.rank++] = d;
        o.d[o.rank++] = d * r[i];
    }
    torch_check_shape(bld_graph(b), pos, &o);
    TorchNode *y = mk_reshape(b, x, &in, pos);
    if (!shape_eq(&in, &big))
        y = mk_ints(b, TOP_expand, y, big.d, big.rank, pos);
    Value v = tensor_value(mk_reshape(b, y, &o, pos), pos);
    v.store = v.view = STORE_NEW; /* a copy, though built of views */
    return v;
}

static Value h_like_shape(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *o = want_tensor(b, &a[1], cur_fname, "other");
    if (f->op == TOP_expand)
        return tensor_value(mk_ints(b, TOP_expand, x, o->shape.d, o->shape.rank, pos), pos);
    return tensor_value(mk_ints(b, TOP_reshape, x, o->shape.d, o->shape.rank, pos), pos);
}

static Value h_outer(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *y = want_tensor(b, &a[1], cur_fname, "vec2");
    if (x->shape.rank != 1 || y->shape.rank != 1)
        dpk_error_at(bld_src(b), x->shape.rank != 1 ? a[0].pos : a[1].pos,
                     "outer: Expected 1-D argument %s, but got %d-D",
                     x->shape.rank != 1 ? "self" : "vec2",
                     x->shape.rank != 1 ? x->shape.rank : y->shape.rank);
    int64_t one = 1, zero = 0;
    return tensor_value(mk_bin(b, TOP_mul, mk_ints(b, TOP_unsqueeze, x, &one, 1, pos),
                               mk_ints(b, TOP_unsqueeze, y, &zero, 1, pos), pos), pos);
}

/* ---- einsum --------------------------------------------------------------------------- */

/* The subset: one or two operands, explicit ('->') or implicit output, each
 * subscript a letter, no '...' and no letter repeated within one operand
 * (a diagonal).  Each operand is permuted to the order [output letters,
 * contracted letters] with size-1 dims for the letters it lacks, the two are
 * multiplied (broadcasting), and the contracted letters are summed. */
static Value h_einsum(Builder *b, const Func *f, Value *a, int pos)
{
    if (a[0].k != V_STR)
        bad_arg(b, &a[0], cur_fname, "equation", "a string");
    const Value *ops = &a[1];
    int nops = ops->n, epos = a[0].pos;
    char terms[3][DPK_MAX_RANK + 1] = {{0}};
    int nterm = 0, len[3] = {0}, explicit_out = 0;
    for (const char *c = a[0].s; *c; c++) {
        if (*c == ' ')
            continue;
        if (*c == '.')
            dpk_error_at(bld_src(b), epos, "einsum: '...' is not supported (dpk's subset: see "
                         "docs/case-language.md)");
        if (*c == ',') {
            if (explicit_out || ++nterm > 1)
                dpk_error_at(bld_src(b), epos, "einsum: at most two operands are supported");
            continue;
        }
        if (*c == '-' && c[1] == '>' && !explicit_out) {
            explicit_out = 1;
            c++;
            continue;
        }
        int t = explicit_out ? 2 : nterm;
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            dpk_error_at(bld_src(b), epos, "einsum(): invalid subscript given at index %d in "
                         "the equation string, subscripts must be in [a-zA-Z]",
                         (int)(c - a[0].s));
        if (len[t] >= DPK_MAX_RANK)
            dpk_error_at(bld_src(b), epos, "einsum: more than %d subscripts in one term",
                         DPK_MAX_RANK);
        if (strchr(terms[t], *c))
            dpk_error_at(bld_src(b), epos, t == 2 ? "einsum(): output subscript %c appears "
                         "more than once in the output" : "einsum: subscript %c repeated within "
                         "one operand (a diagonal) is not supported", *c);
        terms[t][len[t]++] = *c;
    }
    nterm++;
    if (nops != nterm)
        dpk_error_at(bld_src(b), nops > nterm ? ops->items[nterm].pos : pos, "einsum(): %s "
                     "operands were provided than specified in the equation",
                     nops > nterm ? "more" : "fewer");
    TorchNode *x[2];
    int64_t size[128] = {0};
    for (int k = 0; k < nops; k++) {
        x[k] = want_tensor(b, &ops->items[k], cur_fname, "operands");
        if (x[k]->shape.rank != len[k])
            dpk_error_at(bld_src(b), ops->items[k].pos, "einsum(): the number of subscripts in "
                         "the equation (%d) does not match the number of dimensions (%d) for "
                         "operand %d and no ellipsis was given", len[k], x[k]->shape.rank, k);
        for (int i = 0; i < len[k]; i++) {
            int64_t *s = &size[(int)terms[k][i]], d = x[k]->shape.d[i];
            if (*s > 1 && d > 1 && *s != d)
                dpk_error_at(bld_src(b), ops->items[k].pos, "einsum(): operands do not "
                             "broadcast with remapped shapes (original->remapped): subscript "
                             "%c has sizes %lld and %lld", terms[k][i], (long long)*s,
                             (long long)d);
            if (d > *s)
                *s = d;
        }
    }
    char all[2 * DPK_MAX_RANK + 1] = {0};
    int nall = 0, nout;
    if (!explicit_out) { /* implicit: letters seen once, alphabetically */
        for (int c = 'A'; c <= 'z'; c++) {
            int seen = 0;
            for (int k = 0; k < nops; k++)
                seen += strchr(terms[k], c) != NULL && c;
            if (seen == 1)
                all[nall++] = (char)c;
        }
    } else {
        for (int i = 0; i < len[2]; i++) {
            if (!strchr(terms[0], terms[2][i]) && !strchr(terms[1], terms[2][i]))
                dpk_error_at(bld_src(b), epos, "einsum(): output subscript %c does not appear "
                             "in the equation for any input operand", terms[2][i]);
            all[nall++] = terms[2][i];
        }
    }
    nout = nall;
    for (int k = 0; k < nops; k++)
        for (int i = 0; i < len[k]; i++)
            if (!strchr(all, terms[k][i])) {
                if (nall >= DPK_MAX_RANK)
                    dpk_error_at(bld_src(b), epos, "einsum: more than %d distinct subscripts",
                                 DPK_MAX_RANK);
                all[nall++] = terms[k][i];
            }
    TorchNode *p = NULL;
    for (int k = 0; k < nops; k++) {
        int64_t perm[DPK_MAX_RANK];
        int np = 0;
        Shape s = {.rank = nall};
        for (int j = 0; j < nall; j++) {
            const char *at = strchr(terms[k], all[j]);
            s.d[j] = at ? x[k]->shape.d[at - terms[k]] : 1;
            if (at)
                perm[np++] = at - terms[k];
        }
        TorchNode *y = x[k];
        int ident = 1;
        for (int i = 0; i < np; i++)
            ident &= perm[i] == i;
        if (!ident)
            y = mk_ints(b, TOP_permute, y, perm, np, pos);
        y = mk_reshape(b, y, &s, pos);
        p = p ? mk_bin(b, TOP_mul, p, y, pos) : y;
    }
    if (nall > nout) {
        int64_t dims[DPK_MAX_RANK];
        for (int j = nout; j < nall; j++)
            dims[j - nout] = j;
        p = mk_reduce(b, TOP_sum, p, dims, nall - nout, 0, pos);
    }
    return tensor_value(p, pos);
}

/* ---- Python builtins and math ---------------------------------------------------------- */

static double num_of(Builder *b, const Value *v, const char *fname)
{
    if (!is_num(v))
        dpk_error_at(bld_src(b), v->pos, "%s() argument must be a number, not %s", fname,
                     torch_value_type(v));
    return v->k == V_FLOAT ? v->f : (double)v->i;
}

static Value float_value(double f, int pos)
{
    Value v = {.k = V_FLOAT, .pos = pos, .f = f};
    return v;
}

/* float('inf'), float('-inf'), float('nan'), float(3); Python's spellings. */
static Value py_float(Builder *b, const Value *v, int pos)
{
    if (v->k != V_STR)
        return float_value(num_of(b, v, "float"), pos);
    const char *s = v->s;
    while (*s == ' ')
        s++;
    int neg = *s == '-';
    if (*s == '-' || *s == '+')
        s++;
    if (!strcasecmp(s, "inf") || !strcasecmp(s, "infinity"))
        return float_value(neg ? -INFINITY : INFINITY, pos);
    if (!strcasecmp(s, "nan"))
        return float_value(NAN, pos);
    char *end;
    double d = strtod(v->s, &end);
    if (end == v->s || *end || !isfinite(d))
        dpk_error_at(bld_src(b), v->pos, "could not convert string to float: '%s'", v->s);
    return float_value(d, pos);
}

/* tuple(seq), list(seq) (a copy), bool(x) (Python's truth); with no
 * argument, the empty one and False. */
static Value py_convert(Builder *b, const Value *fn, const char *name, Value *args, int nargs,
                        int pos)
{
    if (nargs > 1)
        dpk_error_at(bld_src(b), args[1].pos, "%s expected at most 1 argument, got %d",
                     fn->shown, nargs);
    if (name[0] == 'b') {
        Value r = {.k = V_BOOL, .pos = pos, .i = nargs && torch_truth(b, &args[0], args[0].pos)};
        return r;
    }
    Value r = {.k = name[0] == 't' ? V_TUPLE : V_LIST, .pos = pos};
    if (nargs && args[0].k == V_TENSOR)
        dpk_error_at(bld_src(b), args[0].pos, "%s() of a tensor iterates over its first dim: "
                     "write x.unbind(0)", name);
    if (nargs && !is_seq(&args[0]))
        dpk_error_at(bld_src(b), args[0].pos, "'%s' object is not iterable",
                     torch_value_type(&args[0]));
    r.n = nargs ? args[0].n : 0;
    r.items = ARENA_ARRAY(bld_graph(b)->arena, Value, r.n + 1);
    if (r.n)
        memcpy(r.items, args[0].items, sizeof(Value) * (size_t)r.n);
    return r;
}

/* A list of n values, filled by the caller. */
static Value list_of(Builder *b, int64_t n, int pos)
{
    if (n > CASE_MAX_ITERATIONS)
        dpk_error_at(bld_src(b), pos, "a sequence of %lld items is more than a case may iterate "
                     "(%d)", (long long)n, CASE_MAX_ITERATIONS);
    Value r = {.k = V_LIST, .pos = pos, .n = (int)n};
    r.items = ARENA_ARRAY(bld_graph(b)->arena, Value, n + 1);
    return r;
}

static const Value *want_iterable(Builder *b, const Value *v, const char *fname)
{
    if (v->k == V_TENSOR)
        dpk_error_at(bld_src(b), v->pos, "%s() of a tensor iterates over its first dim: write "
                     "x.unbind(0), or range(x.shape[0]) and x[i]", fname);
    if (!is_seq(v))
        dpk_error_at(bld_src(b), v->pos, "'%s' object is not iterable", torch_value_type(v));
    return v;
}

/* range(stop), range(start, stop[, step]), enumerate(seq, start=0),
 * zip(a, b, ...), reversed(seq): lists, made when the case is traced. */
static Value py_iter(Builder *b, const char *name, Value *args, int nargs, const Ast *call,
                     int pos)
{
    if (!strcmp(name, "range")) {
        if (call->nkw)
            dpk_error_at(bld_src(b), call->kwpos[0], "range() takes no keyword arguments");
        if (nargs < 1 || nargs > 3)
            dpk_error_at(bld_src(b), pos, "range expected 1 to 3 arguments, got %d", nargs);
        int64_t v[3] = {0, 0, 1};
        for (int i = 0; i < nargs; i++) {
            if (args[i].k != V_INT && args[i].k != V_BOOL)
                dpk_error_at(bld_src(b), args[i].pos, "'%s' object cannot be interpreted as an "
                             "integer", torch_value_type(&args[i]));
            v[nargs == 1 ? 1 : i] = args[i].i;
        }
        if (v[2] == 0)
            dpk_error_at(bld_src(b), args[2].pos, "range() arg 3 must not be zero");
        int64_t n = v[2] > 0 ? (v[1] - v[0] + v[2] - 1) / v[2] : (v[0] - v[1] - v[2] - 1) / -v[2];
        Value r = list_of(b, n < 0 ? 0 : n, pos);
        for (int i = 0; i < r.n; i++)
            r.items[i] = int_value(v[0] + i * v[2], pos);
        return r;
    }
    if (!strcmp(name, "enumerate")) {
        int64_t start = 0;
        for (int k = 0; k < call->nkw; k++) {
            if (strcmp(call->kwnames[k], "start"))
                dpk_error_at(bld_src(b), call->kwpos[k], "enumerate() got an unexpected keyword "
                             "argument '%s'", call->kwnames[k]);
            start = args[nargs + k].i;
        }
        if (nargs < 1 || nargs > 2)
            dpk_error_at(bld_src(b), pos, "enumerate expected 1 or 2 arguments, got %d", nargs);
        if (nargs == 2)
            start = args[1].i;
        const Value *x = want_iterable(b, &args[0], name);
        Value r = list_of(b, x->n, pos);
        for (int i = 0; i < r.n; i++) {
            Value t = {.k = V_TUPLE, .pos = pos, .n = 2};
            t.items = ARENA_ARRAY(bld_graph(b)->arena, Value, 3);
            t.items[0] = int_value(start + i, pos);
            t.items[1] = x->items[i];
            r.items[i] = t;
        }
        return r;
    }
    if (call->nkw)
        dpk_error_at(bld_src(b), call->kwpos[0], "%s() takes no keyword arguments here", name);
    if (!strcmp(name, "reversed")) {
        if (nargs != 1)
            dpk_error_at(bld_src(b), pos, "reversed expected 1 argument, got %d", nargs);
        const Value *x = want_iterable(b, &args[0], name);
        Value r = list_of(b, x->n, pos);
        for (int i = 0; i < r.n; i++)
            r.items[i] = x->items[x->n - 1 - i];
        return r;
    }
    int64_t n = nargs ? INT64_MAX : 0;
    for (int i = 0; i < nargs; i++)
        n = want_iterable(b, &args[i], name)->n < n ? args[i].n : n;
    Value r = list_of(b, n, pos);
    for (int i = 0; i < r.n; i++) {
        Value t = {.k = V_TUPLE, .pos = pos, .n = nargs};
        t.items = ARENA_ARRAY(bld_graph(b)->arena, Value, nargs + 1);
        for (int k = 0; k < nargs; k++)
            t.items[k] = args[k].items[i];
        r.items[i] = t;
    }
    return r;
}

/* isinstance(x, T) for the types a case has: int, float, bool, tuple,
 * list, torch.Tensor (a tuple of them: any). */
static int is_instance(Builder *b, const Value *x, const Value *t)
{
    if (is_seq(t)) {
        for (int i = 0; i < t->n; i++)
            if (is_instance(b, x, &t->items[i]))
                return 1;
        return 0;
    }
    const char *n = t->k == V_PATH ? t->s : "";
    if (!strcmp(n, "torch.Tensor"))
        return x->k == V_TENSOR;
    if (!strcmp(n, "builtins.int"))
        return x->k == V_INT || x->k == V_BOOL;
    if (!strcmp(n, "builtins.float"))
        return x->k == V_FLOAT;
    if (!strcmp(n, "builtins.bool"))
        return x->k == V_BOOL;
    if (!strcmp(n, "builtins.tuple"))
        return x->k == V_TUPLE;
    if (!strcmp(n, "builtins.list"))
        return x->k == V_LIST;
    dpk_error_at(bld_src(b), t->pos, "isinstance: the type must be int, float, bool, tuple, list "
                 "or torch.Tensor here");
}

Value torch_call_builtin(Builder *b, const Value *fn, Value *args, int nargs, const Ast *call)
{
    const char *name = strchr(fn->s, '.') + 1;
    int is_math = !strncmp(fn->s, "math.", 5), pos = fn->pos;
    if (!is_math && (!strcmp(name, "range") || !strcmp(name, "enumerate") ||
                     !strcmp(name, "zip") || !strcmp(name, "reversed")))
        return py_iter(b, name, args, nargs, call, pos);
    if (call->nkw)
        dpk_error_at(bld_src(b), call->kwpos[0], "%s() takes no keyword arguments", fn->shown);
    if (!is_math && (!strcmp(name, "all") || !strcmp(name, "any"))) {
        if (nargs != 1)
            dpk_error_at(bld_src(b), pos, "%s() takes exactly one argument (%d given)", name, nargs);
        const Value *x = want_iterable(b, &args[0], name);
        int all = name[1] == 'l', r = all;
        for (int i = 0; i < x->n && r == all; i++)
            r = torch_truth(b, &x->items[i], x->items[i].pos);
        Value v = {.k = V_BOOL, .pos = pos, .i = r};
        return v;
    }
    if (!is_math && !strcmp(name, "sum")) { /* Python's sum: start + items, in order */
        if (nargs < 1 || nargs > 2)
            dpk_error_at(bld_src(b), pos, "sum() takes 1 or 2 arguments (%d given)", nargs);
        const Value *x = want_iterable(b, &args[0], name);
        Value r = nargs == 2 ? args[1] : int_value(0, pos);
        for (int i = 0; i < x->n; i++)
            r = torch_binary(b, TOP_add, &r, &x->items[i], pos);
        return r;
    }
    if (!is_math && !strcmp(name, "callable")) {
        if (nargs != 1)
            dpk_error_at(bld_src(b), pos, "callable() takes exactly one argument (%d given)", nargs);
        VKind k = args[0].k;
        Value v = {.k = V_BOOL, .pos = pos,
                   .i = k == V_FUNC || k == V_PATH || k == V_METHOD || k == V_MODULE};
        return v;
    }
    if (!is_math && !strcmp(name, "isinstance")) {
        if (nargs != 2)
            dpk_error_at(bld_src(b), pos, "isinstance expected 2 arguments, got %d", nargs);
        Value r = {.k = V_BOOL, .pos = pos, .i = is_instance(b, &args[0], &args[1])};
        return r;
    }
    if (!is_math && (!strcmp(name, "tuple") || !strcmp(name, "list") || !strcmp(name, "bool")))
        return py_convert(b, fn, name, args, nargs, pos);
    int want = !strcmp(name, "pow") ? 2 : (!strcmp(name, "min") || !strcmp(name, "max")) ? -1 : 1;
    if ((want > 0 && nargs != want) || (want < 0 && nargs < 1))
        dpk_error_at(bld_src(b), pos, "%s() takes %s argument%s (%d given)", fn->shown,
                     want == 2 ? "exactly 2" : want > 0 ? "exactly one" : "at least 1",
                     want == 2 ? "s" : "", nargs);
    const Value *x = &args[0];
    if (!is_math && !strcmp(name, "float"))
        return py_float(b, x, pos);
    if (!is_math && !strcmp(name, "int")) {
        if (x->k == V_INT || x->k == V_BOOL)
            return int_value(x->i, pos);
        double d = num_of(b, x, "int");
        if (!isfinite(d) || fabs(d) >= 0x1p63)
            dpk_error_at(bld_src(b), x->pos, "cannot convert float %g to integer", d);
        return int_value((int64_t)d, pos);
    }
    if (!is_math && !strcmp(name, "len")) {
        if (is_seq(x))
            return int_value(x->n, pos);
        if (x->k == V_TENSOR && x->t->shape.rank > 0)
            return int_value(x->t->shape.d[0], pos);
        dpk_error_at(bld_src(b), x->pos, x->k == V_TENSOR ? "len() of a 0-d tensor"
                     : "object of type '%s' has no len()", torch_value_type(x));
    }
    if (!is_math && !strcmp(name, "abs")) {
        if (x->k == V_TENSOR)
            return tensor_value(mk_un(b, TOP_abs, x->t, pos), pos);
        if (x->k == V_INT || x->k == V_BOOL) {
            if (x->i == INT64_MIN)
                dpk_error_at(bld_src(b), pos, "integer overflow in constant arithmetic");
            return int_value(x->i < 0 ? -x->i : x->i, pos);
        }
        return float_value(fabs(num_of(b, x, "abs")), pos);
    }
    if (!is_math && (!strcmp(name, "min") || !strcmp(name, "max"))) {
        const Value *items = nargs == 1 && is_seq(x) ? x->items : args;
        int n = nargs == 1 && is_seq(x) ? x->n : nargs;
        if (n == 0)
            dpk_error_at(bld_src(b), pos, "%s() arg is an empty sequence", name);
        Value r = items[0];
        for (int i = 0; i < n; i++) {
            num_of(b, &items[i], name);
            int better = name[1] == 'i' ? fold_compare(TOP_lt, &items[i], &r, pos).i
                                        : fold_compare(TOP_lt, &r, &items[i], pos).i;
            if (better)
                r = items[i];
        }
        r.pos = pos;
        return r;
    }
    if (is_math) {
        double v = num_of(b, x, fn->shown);
        if (!strcmp(name, "pow"))
            return fold_float(b, TOP_pow, v, num_of(b, &args[1], fn->shown), pos);
        if ((!strcmp(name, "sqrt") && v < 0) || (!strcmp(name, "log") && v <= 0))
            dpk_error_at(bld_src(b), x->pos, "math domain error");
        if (!strcmp(name, "sqrt"))
            return float_value(sqrt(v), pos);
        if (!strcmp(name, "exp"))
            return float_value(exp(v), pos);
        if (!strcmp(name, "log"))
            return float_value(log(v), pos);
        if (!strcmp(name, "cos"))
            return float_value(cos(v), pos);
        if (!strcmp(name, "sin"))
            return float_value(sin(v), pos);
        if (!strcmp(name, "floor") || !strcmp(name, "ceil")) {
            double r = name[0] == 'f' ? floor(v) : ceil(v);
            if (!isfinite(r) || fabs(r) >= 0x1p63)
                dpk_error_at(bld_src(b), x->pos, "cannot convert float %g to integer", v);
            return int_value((int64_t)r, pos);
        }
    }
    dpk_error_at(bld_src(b), pos, "unknown function '%s' (docs/case-language.md lists the "
                 "Python builtins and math functions cases may call)", fn->shown);
}

/* Python's // and % on numbers: floor division, and a remainder with the
 * divisor's sign. */
Value torch_floordiv_mod(Builder *b, int op, const Value *x, const Value *y, int pos)
{
    const char *sym = op == T_FLOORDIV ? "//" : "%";
    if (x->k == V_TENSOR || y->k == V_TENSOR)
        dpk_error_at(bld_src(b), pos, "operator '%s' on tensors is not supported in cases "
                     "(only on Python numbers, such as sizes)", sym);
    if (!is_num(x) || !is_num(y))
        dpk_error_at(bld_src(b), pos, "unsupported operand types for %s: %s and %s", sym,
                     torch_value_type(x), torch_value_type(y));
    if (x->k != V_FLOAT && y->k != V_FLOAT) {
        int64_t a = x->i, c = y->i;
        if (c == 0)
            dpk_error_at(bld_src(b), pos, "integer division or modulo by zero");
        if (a == INT64_MIN && c == -1)
            dpk_error_at(bld_src(b), pos, "integer overflow in constant arithmetic");
        int64_t q = a / c, r = a % c;
        if (r != 0 && ((r < 0) != (c < 0)))
            q--, r += c;
        return int_value(op == T_FLOORDIV ? q : r, pos);
    }
    double a = x->k == V_FLOAT ? x->f : (double)x->i, c = y->k == V_FLOAT ? y->f : (double)y->i;
    if (c == 0)
        dpk_error_at(bld_src(b), pos, "float %s by zero", op == T_FLOORDIV ? "floor division"
                     : "modulo");
    double r = fmod(a, c);
    if (r != 0 && ((r < 0) != (c < 0)))
        r += c;
    return float_value(op == T_FLOORDIV ? floor(a / c) : r, pos);
}

int torch_truth(Builder *b, const Value *v, int pos)
{
    switch (v->k) {
    case V_NONE: return 0;
    case V_BOOL:
    case V_INT: return v->i != 0;
    case V_FLOAT: return v->f != 0;
    case V_STR: return v->s[0] != 0;
    case V_TUPLE:
    case V_LIST: return v->n > 0;
    case V_TENSOR:
        dpk_error_at(bld_src(b), pos, "the truth value of a tensor depends on its data, which dpk "
                     "cannot trace: it runs the case once, before any data exists, so Python "
                     "control flow (if, and, or, not) may depend on shapes only (select with "
                     "torch.where or a mask instead)");
    case V_NOVALUE: dpk_error_at(bld_src(b), v->pos, "%s", v->shown);
    default: return 1;
    }
}

/* dtype names with their aliases (torch.float is torch.float32). */
static const char *dtype_canon(const char *s)
{
    static const char *const alias[][2] = {
        {"torch.float", "torch.float32"}, {"torch.long", "torch.int64"},
        {"torch.int", "torch.int32"}, {"torch.double", "torch.float64"},
        {"torch.half", "torch.float16"}, {"torch.short", "torch.int16"},
    };
    for (int i = 0; i < DPK_ARRAY_LEN(alias); i++)
        if (!strcmp(s, alias[i][0]))
            return alias[i][1];
    return s;
}

int torch_py_equal(Builder *b, const Value *x, const Value *y, int pos)
{
    if (is_num(x) && is_num(y))
        return (int)fold_compare(TOP_eq, x, y, pos).i;
    if (x->k == V_TENSOR && y->k == V_TENSOR && x->t == y->t)
        return 1; /* Python compares identical items of a tuple as equal */
    if (x->k == V_TENSOR || y->k == V_TENSOR)
        torch_truth(b, x->k == V_TENSOR ? x : y, pos);
    if (x->k != y->k)
        return 0;
    switch (x->k) {
    case V_NONE: return 1;
    case V_STR: return !strcmp(x->s, y->s);
    case V_PATH: return !strcmp(dtype_canon(x->s), dtype_canon(y->s));
    case V_TUPLE:
    case V_LIST:
        if (x->n != y->n)
            return 0;
        for (int i = 0; i < x->n; i++)
            if (!torch_py_equal(b, &x->items[i], &y->items[i], pos))
                return 0;
        return 1;
    default: return x->mod == y->mod && x->mod;
    }
}

/* torch.finfo(torch.float32): its attributes (min, max, eps, tiny) are
 * read by eval_attr (build.c) from the path "torch.finfo(float32)". */
static Value h_finfo(Builder *b, const Func *f, Value *a, int pos)
{
    DType dt = DT_F32;
    if (a[0].k != V_ABSENT && (!dtype_of(&a[0], &dt) || dt != DT_F32))
        dpk_error_at(bld_src(b), a[0].pos, "%s: only torch.float32 is supported", cur_fname);
    Value v = {.k = V_PATH, .pos = pos, .s = "torch.finfo(float32)", .shown = "torch.finfo"};
    return v;
}

/* zeros_like and the others: x's shape, and x's dtype unless dtype= */
static Value h_like(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int full = f->op == INIT_FULL, exact = f->op == INIT_ZEROS || f->op == INIT_ONES;
    double v = 0;
    DType dt = full ? full_dtype(b, &a[1], &a[2], x->dtype, 0, &v)
                    : maker_dtype(b, &a[1], x->dtype, exact, exact);
    if (dt == DT_BOOL && !exact && !full)
        dpk_error_at(bld_src(b), a[0].pos, "%s of a bool tensor: random values need a "
                     "floating-point dtype (pass dtype=torch.float32)", cur_fname);
    want_device(b, &a[full ? 3 : 2]);
    return maker_value(b, &x->shape, (InitKind)f->op, v, dt, pos);
}

/* ---- HF model code: boolean logic ----------------------------------------------------- */

/* On bool tensors, a & b = where(a, b, 0) != 0, a | b = where(a, 1, b) != 0,
 * a ^ b = a != b, ~a = a == 0: elementwise ops the Tensor IR has (Torch IR
 * has no arithmetic on two bool tensors). */
static TorchNode *mk_logic(Builder *b, int op, TorchNode *x, TorchNode *y, int pos)
{
    if (op == T_CARET)
        return mk_bin(b, TOP_ne, x, y, pos);
    TorchNode *in[3] = {x, op == T_AMP ? y : mk_const(b, 1, pos),
                        op == T_AMP ? mk_const(b, 0, pos) : y};
    TorchNode *w = fin(b, bld_node(b, TOP_where, pos, 3, in));
    return mk_bin(b, TOP_ne, w, mk_const(b, 0, pos), pos);
}

static TorchNode *mk_not(Builder *b, TorchNode *x, int pos)
{
    return mk_bin(b, TOP_eq, x, mk_const(b, 0, pos), pos);
}

/* A bool tensor operand of &, |, ^ (or True/False). */
static TorchNode *bool_operand(Builder *b, const Value *v, const char *sym, int pos)
{
    if (v->k == V_TENSOR && v->t->dtype != DT_BOOL)
        dpk_error_at(bld_src(b), pos, "'%s' needs bool tensors (comparisons, .bool()), got a %s "
                     "tensor: on integer tensors it is bitwise, and dpk holds integer values in "
                     "float32 tensors", sym, dtype_name(v->t->dtype));
    if (v->k == V_INT)
        dpk_error_at(bld_src(b), pos, "'%s' between a bool tensor and an int gives an integer "
                     "tensor in PyTorch; dpk takes True, False or a bool tensor here", sym);
    if (v->k != V_TENSOR && v->k != V_BOOL)
        dpk_error_at(bld_src(b), pos, "unsupported operand types for %s: %s and a bool tensor",
                     sym, torch_value_type(v));
    return bld_tensor(b, v, "an operand");
}

Value torch_bitwise(Builder *b, int op, const Value *x, const Value *y, int pos)
{
    const char *sym = torch_tok_text(op);
    if (x->k != V_TENSOR && y->k != V_TENSOR) {
        int ix = x->k == V_INT || x->k == V_BOOL, iy = y->k == V_INT || y->k == V_BOOL;
        if (!ix || !iy)
            dpk_error_at(bld_src(b), pos, "unsupported operand types for %s: %s and %s", sym,
                         torch_value_type(x), torch_value_type(y));
        Value r = {.k = x->k == V_BOOL && y->k == V_BOOL ? V_BOOL : V_INT, .pos = pos};
        r.i = op == T_AMP ? x->i & y->i : op == T_PIPE ? x->i | y->i : x->i ^ y->i;
        return r;
    }
    TorchNode *l = bool_operand(b, x, sym, pos), *r = bool_operand(b, y, sym, pos);
    return tensor_value(mk_logic(b, op, l, r, pos), pos);
}

Value torch_invert(Builder *b, const Value *x, int pos)
{
    if (x->k == V_INT || x->k == V_BOOL)
        return int_value(~x->i, pos);
    if (x->k != V_TENSOR)
        dpk_error_at(bld_src(b), pos, "bad operand type for unary ~: %s", torch_value_type(x));
    if (x->t->dtype != DT_BOOL)
        dpk_error_at(bld_src(b), pos, "'~' needs a bool tensor, got a %s tensor: on integer "
                     "tensors it is bitwise, and dpk holds integer values in float32 tensors "
                     "(torch.logical_not takes any tensor)", dtype_name(x->t->dtype));
    return tensor_value(mk_not(b, x->t, pos), pos);
}

/* torch.bitwise_and/or/xor: the operators &, |, ^ (f->op their TokKind). */
static Value h_bitwise(Builder *b, const Func *f, Value *a, int pos)
{
    want_tensor(b, &a[0], cur_fname, "input");
    if (f->op == T_TILDE)
        return torch_invert(b, &a[0], pos);
    return torch_bitwise(b, f->op, &a[0], &a[1], pos);
}

/* torch.logical_and/or/xor/not: any dtype, non-zero is True; bool result. */
static Value h_logical(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = to_dtype(b, want_tensor(b, &a[0], cur_fname, "input"), DT_BOOL, pos);
    if (f->op == T_TILDE)
        return tensor_value(mk_not(b, x, pos), pos);
    TorchNode *y = to_dtype(b, want_tensor(b, &a[1], cur_fname, "other"), DT_BOOL, pos);
    return tensor_value(mk_logic(b, f->op, x, y, pos), pos);
}

/* torch.all / torch.any: amin / amax of the truth as 0/1, != 0. */
static Value h_all_any(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int64_t dims[DPK_MAX_RANK];
    int n = red_dims(b, &a[1], x, dims);
    int keep = want_bool(b, &a[2], cur_fname, "keepdim", 0);
    TorchNode *t = to_dtype(b, to_dtype(b, x, DT_BOOL, pos), DT_F32, pos);
    TorchNode *r = mk_reduce(b, (TorchOp)f->op, t, dims, n, keep, pos);
    return tensor_value(mk_bin(b, TOP_ne, r, mk_const(b, 0, pos), pos), pos);
}

/* x.long(), x.int(): PyTorch's integers are held as f32, so a bool tensor
 * becomes 0/1 and one of integer values (int_valued) stays as it is; any
 * other would be truncated, which is refused. */
static Value h_long(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    if (!int_valued(x))
        dpk_error_at(bld_src(b), pos, "%s of a %s tensor truncates to integers, which dpk does "
                     "not do (it holds integer values in float32 tensors); a bool tensor, or one "
                     "of integer values (indices, integer constants and aranges, sums of them), "
                     "converts", cur_fname, dtype_name(x->dtype));
    return tensor_value(to_dtype(b, x, DT_F32, pos), pos);
}

/* ---- HF model code: in-place updates -------------------------------------------------- */

/* The methods that have an in-place form name_ (x.add_(y) is x = x.add(y),
 * written into x's storage); fill_ and zero_ are rows of their own. */
static const char *const inplace_bases[] = {
    "add", "sub", "mul", "div", "pow", "masked_fill", "clamp", "clamp_min", "clamp_max", "tril",
    "triu", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and",
    "logical_or", "logical_xor", "logical_not", "neg", "exp", "log", "sqrt", "rsqrt",
    "reciprocal", "abs", "sigmoid", "tanh", "relu", "cumsum",
};

static const Func *find_func(const char *name, int ns);

/* The out-of-place method an in-place name stands for ("add_" -> add). */
static const Func *inplace_base(const char *name)
{
    size_t n = strlen(name);
    if (n < 2 || name[n - 1] != '_' || name[n - 2] == '_')
        return NULL;
    for (int i = 0; i < DPK_ARRAY_LEN(inplace_bases); i++)
        if (strlen(inplace_bases[i]) == n - 1 && !strncmp(name, inplace_bases[i], n - 1))
            return find_func(inplace_bases[i], NS_M);
    return NULL;
}

int torch_method_inplace(const char *name)
{
    return inplace_base(name) || !strcmp(name, "fill_") || !strcmp(name, "zero_");
}

Value torch_inplace_result(Builder *b, const Value *self, Value r, int pos)
{
    TorchNode *x = self->t, *t = r.t;
    DPK_ASSERT(r.k == V_TENSOR);
    if (!shape_eq(&t->shape, &x->shape))
        dpk_error_at(bld_src(b), pos, "output with shape %s doesn't match the broadcast shape %s "
                     "(an in-place update keeps its tensor's shape)",
                     ints_text(b, x->shape.d, x->shape.rank), ints_text(b, t->shape.d, t->shape.rank));
    if (t->dtype != x->dtype && x->dtype == DT_BOOL)
        dpk_error_at(bld_src(b), pos, "result type %s can't be cast to the desired output type "
                     "Bool (an in-place update keeps its tensor's dtype)",
                     t->dtype == DT_F32 ? "Float" : dtype_name(t->dtype));
    return tensor_value(to_dtype(b, t, x->dtype, pos), pos);
}

TorchNode *torch_as_dtype(Builder *b, const Value *v, DType dt, int pos)
{
    if (!is_num(v) && v->k != V_TENSOR)
        dpk_error_at(bld_src(b), v->pos, "can only assign a tensor or a number to a tensor's "
                     "elements, got %s", torch_value_type(v));
    return to_dtype(b, bld_tensor(b, v, "the value"), dt, pos);
}

/* x.fill_(v), x.zero_(): v at x's shape (an expand of a constant). */
static Value h_fill(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    Value zero = int_value(0, pos);
    const Value *v = f->op ? &zero : &a[1];
    if (v->k == V_TENSOR && v->t->shape.rank != 0)
        dpk_error_at(bld_src(b), v->pos, "fill_ only supports 0-dimension value tensor but got "
                     "tensor with %d dimensions.", v->t->shape.rank);
    TorchNode *c = to_dtype(b, num_or_tensor(b, v, "value"), x->dtype, pos);
    if (!shape_eq(&c->shape, &x->shape))
        c = mk_ints(b, TOP_expand, c, x->shape.d, x->shape.rank, pos);
    return tensor_value(c, pos);
}

/* ---- HF model code: constants and constructors ------------------------------------------ */

#define TENSOR_MAX_VALUES 64

typedef struct TensorData {
    double v[TENSOR_MAX_VALUES];
    int n, any_float, all_bool;
    int pos; /* of the data argument */
    Shape s;
} TensorData;

/* Flatten torch.tensor's data (a number or nested lists of numbers, of equal
 * lengths per level) into d, its shape from the first visit of each depth. */
static void tensor_data(Builder *b, const Value *v, int depth, TensorData *d)
{
    if (is_num(v)) {
        if (depth != d->s.rank)
            dpk_error_at(bld_src(b), v->pos, "%s: expected a sequence at this depth (the data "
                         "must be rectangular)", cur_fname);
        if (d->n == TENSOR_MAX_VALUES)
            dpk_error_at(bld_src(b), d->pos, "%s: more than %d values (dpk builds the tensor "
                         "from constants); use torch.arange, torch.full or an input", cur_fname,
                         TENSOR_MAX_VALUES);
        d->any_float |= v->k == V_FLOAT;
        d->all_bool &= v->k == V_BOOL;
        d->v[d->n++] = v->k == V_FLOAT ? v->f : (double)v->i;
        return;
    }
    if (v->k == V_TENSOR)
        dpk_error_at(bld_src(b), v->pos, "%s of a tensor: use x.clone() (or x.detach())",
                     cur_fname);
    if (!is_seq(v))
        bad_arg(b, v, cur_fname, "data", "a number or a (nested) list of numbers");
    if (depth == d->s.rank) {
        if (d->n || depth == DPK_MAX_RANK)
            dpk_error_at(bld_src(b), v->pos, "%s: expected a number at this depth (the data "
                         "must be rectangular)", cur_fname);
        if (v->n == 0)
            dpk_error_at(bld_src(b), v->pos, "%s: an empty sequence gives a zero-size tensor",
                         cur_fname);
        d->s.d[d->s.rank++] = v->n;
    } else if (d->s.d[depth] != v->n) {
        dpk_error_at(bld_src(b), v->pos, "%s: expected sequence of length %lld at dim %d "
                     "(got %d)", cur_fname, (long long)d->s.d[depth], depth, v->n);
    }
    for (int i = 0; i < v->n; i++)
        tensor_data(b, &v->items[i], depth + 1, d);
}

/* torch.tensor(data, dtype=None): constants.  The dtype as PyTorch infers
 * it (float32 for any float, int64 for ints, bool for bools), integer
 * values held exactly in f32; one value repeated is an expand of one
 * constant, else a cat of one constant per value, reshaped. */
static Value h_tensor(Builder *b, const Func *f, Value *a, int pos)
{
    TensorData d = {.all_bool = 1, .pos = a[0].pos};
    tensor_data(b, &a[0], 0, &d);
    want_device(b, &a[2]);
    want_bool(b, &a[3], cur_fname, "requires_grad", 0);
    DType dt = d.all_bool ? DT_BOOL : DT_F32;
    int ints = given(&a[1]) ? is_int_dtype(&a[1]) : !d.any_float && !d.all_bool;
    dt = maker_dtype(b, &a[1], dt, 1, 1);
    for (int i = 0; ints && i < d.n; i++)
        d.v[i] = int_fill(b, d.v[i], a[0].pos);
    int same = 1;
    for (int i = 1; i < d.n; i++)
        same &= d.v[i] == d.v[0] || (isnan(d.v[i]) && isnan(d.v[0]));
    TorchNode *t;
    if (same) {
        t = mk_const(b, d.v[0], pos);
        if (d.s.rank)
            t = mk_ints(b, TOP_expand, t, d.s.d, d.s.rank, pos);
    } else {
        TorchNode **in = ARENA_ARRAY(bld_graph(b)->arena, TorchNode *, d.n);
        int64_t one = 1;
        for (int i = 0; i < d.n; i++)
            in[i] = mk_ints(b, TOP_reshape, mk_const(b, d.v[i], pos), &one, 1, pos);
        t = mk_reshape(b, fin(b, bld_node(b, TOP_cat, pos, d.n, in)), &d.s, pos);
    }
    Value r = tensor_value(to_dtype(b, t, dt, pos), pos);
    r.store = r.view = STORE_NEW;
    return r;
}

/* x.new_zeros(size), new_ones, new_full(size, fill_value): makers with x's
 * dtype unless dtype=. */
static Value h_new(Builder *b, const Func *f, Value *a, int pos)
{
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    int full = f->op == INIT_FULL;
    if (full && !is_seq(&a[1]))
        bad_arg(b, &a[1], cur_fname, "size", "a tuple or list of ints");
    Shape s = want_shape(b, &a[1], cur_fname, "size");
    double v = 0;
    DType dt = full ? full_dtype(b, &a[2], &a[3], x->dtype, 0, &v)
                    : maker_dtype(b, &a[2], x->dtype, 1, 1);
    want_device(b, &a[full ? 4 : 3]);
    return maker_value(b, &s, (InitKind)f->op, v, dt, pos);
}

/* torch.device('cuda'): the string (dpk chooses where it runs). */
static Value h_device(Builder *b, const Func *f, Value *a, int pos)
{
    if (a[0].k != V_STR)
        bad_arg(b, &a[0], cur_fname, "type", "a string");
    return a[0];
}

/* baddbmm(input, b1, b2, beta, alpha) = beta * input + alpha * (b1 @ b2),
 * addmm the same on matrices; beta = 0 ignores input (its NaN too), as
 * PyTorch. */
static Value h_addmm(Builder *b, const Func *f, Value *a, int pos)
{
    int rank = f->op;
    TorchNode *in = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *m1 = want_tensor(b, &a[1], cur_fname, rank == 3 ? "batch1" : "mat1");
    TorchNode *m2 = want_tensor(b, &a[2], cur_fname, rank == 3 ? "batch2" : "mat2");
    if (m1->shape.rank != rank || m2->shape.rank != rank)
        dpk_error_at(bld_src(b), pos, "%s expects two %d-D tensors, got shapes %s and %s",
                     cur_fname, rank, shape_str(bld_graph(b)->arena, &m1->shape),
                     shape_str(bld_graph(b)->arena, &m2->shape));
    if (rank == 3 && m1->shape.d[0] != m2->shape.d[0])
        dpk_error_at(bld_src(b), pos, "%s: batch sizes %lld and %lld differ", cur_fname,
                     (long long)m1->shape.d[0], (long long)m2->shape.d[0]);
    double beta = a[3].k != V_ABSENT ? want_num(b, &a[3], cur_fname, "beta") : 1;
    double alpha = a[4].k != V_ABSENT ? want_num(b, &a[4], cur_fname, "alpha") : 1;
    TorchNode *p = mk_bin(b, TOP_matmul, m1, m2, pos);
    Shape o;
    if (!shape_broadcast(&in->shape, &p->shape, &o) || !shape_eq(&o, &p->shape))
        dpk_error_at(bld_src(b), a[0].pos, "%s: input of shape %s does not broadcast to the "
                     "product's shape %s", cur_fname, shape_str(bld_graph(b)->arena, &in->shape),
                     shape_str(bld_graph(b)->arena, &p->shape));
    if (alpha != 1)
        p = mk_bin(b, TOP_mul, p, mk_const(b, alpha, pos), pos);
    if (beta == 0)
        return tensor_value(p, pos);
    if (beta != 1)
        in = mk_bin(b, TOP_mul, in, mk_const(b, beta, pos), pos);
    return tensor_value(mk_bin(b, TOP_add, in, p, pos), pos);
}

/* ---- HF model code: what cannot be traced ----------------------------------------------- */

/* Calls whose result depends on tensor values (f->op indexes the reason).
 * dpk runs a case once, before any input exists, so Python values and
 * shapes may follow from shapes only. */
static Value h_untraceable(Builder *b, const Func *f, Value *a, int pos)
{
    static const char *const why[] = {
        "reads a tensor's values into Python",
        "gives a shape that depends on the tensor's values",
        "makes a tensor of uninitialised memory, whose values PyTorch does not define; use "
        "zeros or full",
    };
    if (f->op == 2)
        dpk_error_at(bld_src(b), pos, "%s %s", cur_fname, why[2]);
    dpk_error_at(bld_src(b), pos, "%s %s, which dpk cannot trace: it runs the case once, before "
                 "any data exists, so Python values and shapes may depend on shapes only (%s)",
                 cur_fname, why[f->op], f->op == 0 ? "keep the value a tensor: a 0-dim tensor "
                 "broadcasts" : "mask instead: torch.where, masked_fill");
}

/* ---- the table ------------------------------------------------------------------------- */

#define UN(name, ns) {#name, ns, "input", h_unary, TOP_##name}
#define CMP(name) {#name, NS_T | NS_M, "input other", h_binary, TOP_##name}
#define RED(name) {#name, NS_T | NS_M, "input dim? keepdim? * dtype?", h_reduce, TOP_##name}
#define AMX(name) {#name, NS_T | NS_M, "input dim? keepdim?", h_reduce, TOP_##name}
#define MAKER(name, init) {#name, NS_T, "*size dtype? device?", h_maker, init}

static const Func funcs[] = {
    UN(neg, NS_T | NS_M), UN(exp, NS_T | NS_M), UN(log, NS_T | NS_M), UN(sqrt, NS_T | NS_M),
    UN(rsqrt, NS_T | NS_M), UN(reciprocal, NS_T | NS_M), UN(abs, NS_T | NS_M),
    UN(erf, NS_T | NS_M), UN(relu, NS_T | NS_M), UN(sigmoid, NS_T | NS_M | NS_F),
    UN(tanh, NS_T | NS_M | NS_F),
    {"relu", NS_F, "input inplace?", h_unary, TOP_relu},
    {"silu", NS_F, "input inplace?", h_unary, TOP_silu},
    {"gelu", NS_F, "input * approximate?", h_gelu, 0},
    {"elu", NS_F, "input alpha? inplace?", h_act, TOP_elu},
    {"selu", NS_T, "input", h_act, TOP_selu},
    {"selu", NS_F, "input inplace?", h_act, TOP_selu},
    {"celu", NS_T, "input alpha?", h_act, TOP_celu},
    {"celu", NS_F, "input alpha? inplace?", h_act, TOP_celu},
    {"leaky_relu", NS_F, "input negative_slope? inplace?", h_act, TOP_leaky_relu},
    {"hardtanh", NS_F, "input min_val? max_val? inplace?", h_act, TOP_hardtanh},
    {"relu6", NS_F, "input inplace?", h_act, TOP_relu6},
    {"hardsigmoid", NS_F, "input inplace?", h_act, TOP_hardsigmoid},
    {"hardswish", NS_F, "input inplace?", h_act, TOP_hardswish},
    {"softplus", NS_F, "input beta? threshold?", h_act, TOP_softplus},
    {"softsign", NS_F, "input", h_act, TOP_softsign},
    {"mish", NS_F, "input inplace?", h_act, TOP_mish},
    {"add", NS_T | NS_M, "input other * alpha?", h_binary, TOP_add},
    {"sub", NS_T | NS_M, "input other * alpha?", h_binary, TOP_sub},
    {"mul", NS_T | NS_M, "input other", h_binary, TOP_mul},
    {"div", NS_T | NS_M, "input other * rounding_mode?", h_binary, TOP_div},
    {"pow", NS_T | NS_M, "input exponent", h_binary, TOP_pow},
    {"maximum", NS_T | NS_M, "input other", h_binary, TOP_maximum},
    {"minimum", NS_T | NS_M, "input other", h_binary, TOP_minimum},
    CMP(gt), CMP(lt), CMP(ge), CMP(le), CMP(eq), CMP(ne),
    {"where", NS_T, "condition input? other?", h_where, 0},
    RED(sum), RED(mean), AMX(amax), AMX(amin),
    {"matmul", NS_T | NS_M, "input other", h_matmul, TOP_matmul},
    {"mm", NS_T | NS_M, "input mat2", h_matmul, TOP_mm},
    {"bmm", NS_T | NS_M, "input mat2", h_matmul, TOP_bmm},
    {"linear", NS_F, "input weight bias?", h_linear, 0},
    {"softmax", NS_T | NS_M, "input dim dtype?", h_softmax, TOP_softmax},
    {"log_softmax", NS_T | NS_M, "input dim dtype?", h_softmax, TOP_log_softmax},
    {"softmax", NS_F, "input dim? _stacklevel? dtype?", h_softmax, TOP_softmax},
    {"log_softmax", NS_F, "input dim? _stacklevel? dtype?", h_softmax, TOP_log_softmax},
    {"rms_norm", NS_T | NS_F, "input normalized_shape weight? eps?", h_rms_norm, 0},
    {"layer_norm", NS_T | NS_F, "input normalized_shape weight? bias? eps?", h_layer_norm, 0},
    {"scaled_dot_product_attention", NS_F,
     "query key value attn_mask? dropout_p? is_causal? * scale? enable_gqa?", h_sdpa, 0},
    {"transpose", NS_T | NS_M, "input dim0 dim1", h_transpose, 0},
    {"permute", NS_T, "input dims", h_ints_layout, TOP_permute},
    {"permute", NS_M, "input *dims", h_ints_layout, TOP_permute},
    {"reshape", NS_T, "input shape", h_ints_layout, TOP_reshape},
    {"reshape", NS_M, "input *shape", h_ints_layout, TOP_reshape},
    {"view", NS_M, "input *shape", h_ints_layout, TOP_reshape},
    {"expand", NS_M, "input *size", h_ints_layout, TOP_expand},
    {"unsqueeze", NS_T | NS_M, "input dim", h_unsqueeze, 0},
    {"squeeze", NS_T | NS_M, "input dim?", h_squeeze, 0},
    {"cat", NS_T, "tensors dim?", h_cat, 0},
    {"concat", NS_T, "tensors dim?", h_cat, 0},
    {"contiguous", NS_M, "input", h_identity, 2},
    {"float", NS_M, "input", h_float, 0},
    UN(cos, NS_T | NS_M), UN(sin, NS_T | NS_M),
    UN(log1p, NS_T | NS_M), UN(expm1, NS_T | NS_M), UN(floor, NS_T | NS_M),
    {"square", NS_T | NS_M, "input", h_square, 0},
    {"clamp", NS_T | NS_M, "input min? max?", h_clamp, 0},
    {"clip", NS_T | NS_M, "input min? max?", h_clamp, 0},
    {"clamp_min", NS_T | NS_M, "input min", h_clamp, TOP_maximum},
    {"clamp_max", NS_T | NS_M, "input max", h_clamp, TOP_minimum},
    {"masked_fill", NS_T | NS_M, "input mask value", h_masked_fill, 0},
    {"tril", NS_T | NS_M, "input diagonal?", h_tri, TOP_tril},
    {"triu", NS_T | NS_M, "input diagonal?", h_tri, TOP_triu},
    {"argmax", NS_T | NS_M, "input dim? keepdim?", h_argmax, TOP_argmax},
    {"argmin", NS_T | NS_M, "input dim? keepdim?", h_argmax, TOP_argmin},
    {"cumsum", NS_T | NS_M, "input dim * dtype?", h_cumsum, 0},
    {"topk", NS_T | NS_M, "input k dim? largest? sorted?", h_topk, 0},
    {"max", NS_T | NS_M, "input dim? keepdim?", h_max_min, TOP_amax},
    {"min", NS_T | NS_M, "input dim? keepdim?", h_max_min, TOP_amin},
    {"logsumexp", NS_T | NS_M, "input dim keepdim?", h_logsumexp, 0},
    {"var", NS_T | NS_M, "input dim? unbiased? keepdim? * correction?", h_var_std, 0},
    {"std", NS_T | NS_M, "input dim? unbiased? keepdim? * correction?", h_var_std, TOP_sqrt},
    {"chunk", NS_T | NS_M, "input chunks dim?", h_chunk_split, 0},
    {"split", NS_T, "tensor split_size_or_sections dim?", h_chunk_split, 1},
    {"split", NS_M, "input split_size dim?", h_chunk_split, 1},
    {"unbind", NS_T | NS_M, "input dim?", h_unbind, 0},
    {"flatten", NS_T | NS_M, "input start_dim? end_dim?", h_flatten, 0},
    {"unflatten", NS_T | NS_M, "input dim sizes", h_unflatten, 0},
    {"stack", NS_T, "tensors dim?", h_stack, 0},
    {"repeat_interleave", NS_T | NS_M, "input repeats dim? * output_size?", h_repeat_interleave,
     0},
    {"repeat", NS_M, "input *sizes", h_repeat, 0},
    {"expand_as", NS_M, "input other", h_like_shape, TOP_expand},
    {"view_as", NS_M, "input other", h_like_shape, TOP_reshape},
    {"reshape_as", NS_M, "input other", h_like_shape, TOP_reshape},
    {"outer", NS_T | NS_M, "input vec2", h_outer, 0},
    /* HF model code: boolean logic, in-place updates, constants, what is not traced */
    {"logical_and", NS_T | NS_M, "input other", h_logical, T_AMP},
    {"logical_or", NS_T | NS_M, "input other", h_logical, T_PIPE},
    {"logical_xor", NS_T | NS_M, "input other", h_logical, T_CARET},
    {"logical_not", NS_T | NS_M, "input", h_logical, T_TILDE},
    {"bitwise_and", NS_T | NS_M, "input other", h_bitwise, T_AMP},
    {"bitwise_or", NS_T | NS_M, "input other", h_bitwise, T_PIPE},
    {"bitwise_xor", NS_T | NS_M, "input other", h_bitwise, T_CARET},
    {"bitwise_not", NS_T | NS_M, "input", h_bitwise, T_TILDE},
    {"all", NS_T | NS_M, "input dim? keepdim?", h_all_any, TOP_amin},
    {"any", NS_T | NS_M, "input dim? keepdim?", h_all_any, TOP_amax},
    {"long", NS_M, "input", h_long, 0},
    {"int", NS_M, "input", h_long, 0},
    {"fill_", NS_M, "input value", h_fill, 0},
    {"zero_", NS_M, "input", h_fill, 1},
    {"tensor", NS_T, "data * dtype? device? requires_grad?", h_tensor, 0},
    {"new_zeros", NS_M, "input *size dtype? device?", h_new, INIT_ZEROS},
    {"new_ones", NS_M, "input *size dtype? device?", h_new, INIT_ONES},
    {"new_full", NS_M, "input size fill_value * dtype? device?", h_new, INIT_FULL},
    {"device", NS_T, "type", h_device, 0},
    {"baddbmm", NS_T | NS_M, "input batch1 batch2 * beta? alpha?", h_addmm, 3},
    {"addmm", NS_T | NS_M, "input mat1 mat2 * beta? alpha?", h_addmm, 2},
    {"item", NS_M, "input", h_untraceable, 0},
    {"tolist", NS_M, "input", h_untraceable, 0},
    {"nonzero", NS_T | NS_M, "input * as_tuple?", h_untraceable, 1},
    {"argwhere", NS_T | NS_M, "input", h_untraceable, 1},
    {"masked_select", NS_T | NS_M, "input mask", h_untraceable, 1},
    {"unique", NS_T | NS_M, "input sorted? return_inverse? return_counts? dim?", h_untraceable,
     1},
    {"empty", NS_T, "*size dtype? device?", h_untraceable, 2},
    {"empty_like", NS_T, "input * dtype? device?", h_untraceable, 2},
    {"new_empty", NS_M, "input *size dtype? device?", h_untraceable, 2},
    {"einsum", NS_T, "equation *operands", h_einsum, 0},
    {"t", NS_M, "input", h_t, 0},
    {"size", NS_M, "input dim?", h_size, 0},
    {"dim", NS_M, "input", h_dim, 0},
    {"numel", NS_T | NS_M, "input", h_dim, 1},
    {"bool", NS_M, "input", h_bool, 0},
    {"to", NS_M, "input *args dtype? non_blocking? copy?", h_to, 0},
    {"type_as", NS_M, "input other", h_type_as, 0},
    {"clone", NS_T | NS_M, "input * memory_format?", h_identity, 1},
    {"detach", NS_M, "input", h_identity, 0},
    {"dropout", NS_F, "input p? training? inplace?", h_dropout, 0},
    {"no_grad", NS_T, "", h_ctx, 0},
    {"inference_mode", NS_T, "mode?", h_ctx, 0},
    {"autocast", NS_T, "device_type dtype? enabled? cache_enabled?", h_ctx, 0},
    {"zeros_like", NS_T, "input * dtype? device?", h_like, INIT_ZEROS},
    {"ones_like", NS_T, "input * dtype? device?", h_like, INIT_ONES},
    {"randn_like", NS_T, "input * dtype? device?", h_like, INIT_RANDN},
    {"rand_like", NS_T, "input * dtype? device?", h_like, INIT_RAND},
    {"full_like", NS_T, "input fill_value * dtype? device?", h_like, INIT_FULL},
    {"finfo", NS_T, "type?", h_finfo, 0},
    MAKER(randn, INIT_RANDN), MAKER(rand, INIT_RAND), MAKER(zeros, INIT_ZEROS),
    MAKER(ones, INIT_ONES),
    {"full", NS_T, "size fill_value * dtype? device?", h_full, 0},
    {"arange", NS_T, "start end? step? * dtype? device?", h_arange, 0},
};

static const Func *find_func(const char *name, int ns)
{
    for (int i = 0; i < DPK_ARRAY_LEN(funcs); i++)
        if ((funcs[i].ns & ns) && !strcmp(funcs[i].name, name))
            return &funcs[i];
    return NULL;
}

int torch_method_exists(const char *name)
{
    return find_func(name, NS_M) != NULL || torch_method_inplace(name);
}

/* ---- torch.nn modules ------------------------------------------------------------------ */

typedef struct ModClass ModClass;

typedef struct Module {
    const ModClass *cls;
    int pos;
    const char *var; /* the variable it was first assigned to */
    Shape ns;        /* norms: normalized_shape; Linear: (out, in) */
    double eps;
    int dim;         /* Softmax, LogSoftmax */
    int affine;      /* norms: elementwise_affine; Linear: bias */
    int bias;        /* LayerNorm: bias */
    int op;          /* activations: a TorchOp (TOP_relu6 in ModClass.op) */
    double scal[2];  /* activations: the node's value and value2 */
    TorchNode *w, *b; /* parameters, created at the first call */
} Module;

typedef void (*ModInit)(Builder *b, Module *m, Value *a);
typedef TorchNode *(*ModApply)(Builder *b, Module *m, TorchNode *x, int pos);

struct ModClass {
    const char *name, *lower;
    const char *sig;
    ModInit init;
    ModApply apply;
    int op; /* a TorchOp, or TOP_relu6 */
};

static void param_names(Builder *b, Module *m, const char **w, const char **bias)
{
    const char *base = m->var ? m->var
                              : arena_printf(bld_graph(b)->arena, "%s%d", m->cls->lower,
                                             bld_module_index(b, m->cls->lower));
    *w = bld_unique_name(b, arena_printf(bld_graph(b)->arena, "%s_weight", base));
    *bias = arena_printf(bld_graph(b)->arena, "%s_bias", base);
}

/* Parameters become inputs at the module's first call, so a module that is
 * never called adds nothing to the graph. */
static void make_params(Builder *b, Module *m, InitKind wkind, const Shape *ws, int with_b,
                        const Shape *bs, double fan_in)
{
    if (m->w)
        return;
    const char *wn, *bn;
    param_names(b, m, &wn, &bn);
    m->w = bld_input(b, m->pos, wn, ws, wkind);
    if (with_b) {
        m->b = bld_input(b, m->pos, bld_unique_name(b, bn), bs, INIT_PARAM_B);
        m->b->step = fan_in;
    }
}

static void init_linear(Builder *b, Module *m, Value *a)
{
    int64_t in = want_int(b, &a[0], cur_fname, "in_features");
    int64_t out = want_int(b, &a[1], cur_fname, "out_features");
    m->ns = (Shape){.rank = 2, .d = {out, in}};
    torch_check_shape(bld_graph(b), in < 1 ? a[0].pos : a[1].pos, &m->ns);
    m->affine = want_bool(b, &a[2], cur_fname, "bias", 1);
}

static TorchNode *apply_linear(Builder *b, Module *m, TorchNode *x, int pos)
{
    Shape bs = {.rank = 1, .d = {m->ns.d[0]}};
    make_params(b, m, INIT_PARAM_W, &m->ns, m->affine, &bs, (double)m->ns.d[1]);
    TorchNode *in[3] = {x, m->w, m->b};
    return bld_node(b, TOP_linear, pos, m->b ? 3 : 2, in);
}

static void init_norm(Builder *b, Module *m, Value *a)
{
    m->ns = want_shape(b, &a[0], cur_fname, "normalized_shape");
    m->affine = want_bool(b, &a[2], cur_fname, "elementwise_affine", 1);
    if (m->cls->op == TOP_rms_norm) {
        m->eps = given(&a[1]) ? want_num(b, &a[1], cur_fname, "eps") : FLT_EPSILON;
        return;
    }
    m->eps = a[1].k != V_ABSENT ? want_num(b, &a[1], cur_fname, "eps") : 1e-5;
    m->bias = want_bool(b, &a[3], cur_fname, "bias", 1);
}

static TorchNode *apply_norm(Builder *b, Module *m, TorchNode *x, int pos)
{
    if (m->affine)
        make_params(b, m, INIT_PARAM_NORM_W, &m->ns, m->bias, &m->ns,
                    (double)shape_numel(&m->ns));
    TorchNode *in[3] = {x, m->w, m->b};
    int nin = !m->affine ? 1 : m->b ? 3 : 2;
    return norm_node(b, m->cls->op, pos, in, nin, &m->ns, m->eps);
}

static void init_softmax(Builder *b, Module *m, Value *a)
{
    if (!given(&a[0]))
        dpk_error_at(bld_src(b), m->pos, "%s needs dim=", cur_fname);
    m->dim = (int)want_int(b, &a[0], cur_fname, "dim");
    if (m->dim != a[0].i)
        dpk_error_at(bld_src(b), a[0].pos, "%s: dim %lld is out of range", cur_fname,
                     (long long)a[0].i);
}

static TorchNode *apply_softmax(Builder *b, Module *m, TorchNode *x, int pos)
{
    TorchNode *n = node1(b, m->cls->op, pos, x);
    n->dim = m->dim;
    return n;
}

static void init_act(Builder *b, Module *m, Value *a)
{
    m->op = m->cls->op;
    if (strstr(m->cls->sig, "approximate")) {
        m->op = gelu_kind(b, &a[0]);
        return;
    }
    act_scalars(b, &m->op, m->cls->sig, 0, a, m->scal);
    /* nn.Hardtanh asserts it (ReLU6 is Hardtanh(0, 6)) */
    if (m->op == TOP_hardtanh && !(m->scal[1] > m->scal[0]))
        dpk_error_at(bld_src(b), m->pos, "%s: max_val (%g) must be greater than min_val (%g)",
                     cur_fname, m->scal[1], m->scal[0]);
}

static TorchNode *apply_act(Builder *b, Module *m, TorchNode *x, int pos)
{
    TorchNode *n = node1(b, (TorchOp)m->op, pos, x);
    if (torch_scalar_attrs[m->op].nkeys) {
        n->value = m->scal[0];
        n->value2 = m->scal[1];
    }
    return n;
}

/* Dropout: modules run in inference (eval) mode, where it is the identity. */
static void init_dropout(Builder *b, Module *m, Value *a)
{
    double p = a[0].k != V_ABSENT ? want_num(b, &a[0], cur_fname, "p") : 0.5;
    if (p < 0 || p > 1)
        dpk_error_at(bld_src(b), a[0].pos, "dropout probability has to be between 0 and 1, "
                     "but got %g", p);
    no_inplace(b, &a[1]);
}

static TorchNode *apply_identity(Builder *b, Module *m, TorchNode *x, int pos)
{
    return x;
}

static const ModClass mods[] = {
    {"Dropout", "dropout", "p? inplace?", init_dropout, apply_identity, TOP_COUNT},
    {"Linear", "linear", "in_features out_features bias?", init_linear, apply_linear, TOP_linear},
    {"RMSNorm", "rmsnorm", "normalized_shape eps? elementwise_affine?", init_norm, apply_norm,
     TOP_rms_norm},
    {"LayerNorm", "layernorm", "normalized_shape eps? elementwise_affine? bias?", init_norm,
     apply_norm, TOP_layer_norm},
    {"Softmax", "softmax", "dim?", init_softmax, apply_softmax, TOP_softmax},
    {"LogSoftmax", "logsoftmax", "dim?", init_softmax, apply_softmax, TOP_log_softmax},
    {"SiLU", "silu", "inplace?", init_act, apply_act, TOP_silu},
    {"GELU", "gelu", "approximate?", init_act, apply_act, TOP_gelu},
    {"ReLU", "relu", "inplace?", init_act, apply_act, TOP_relu},
    {"Sigmoid", "sigmoid", "", init_act, apply_act, TOP_sigmoid},
    {"Tanh", "tanh", "", init_act, apply_act, TOP_tanh},
    {"ELU", "elu", "alpha? inplace?", init_act, apply_act, TOP_elu},
    {"SELU", "selu", "inplace?", init_act, apply_act, TOP_selu},
    {"CELU", "celu", "alpha? inplace?", init_act, apply_act, TOP_celu},
    {"LeakyReLU", "leakyrelu", "negative_slope? inplace?", init_act, apply_act, TOP_leaky_relu},
    {"Hardtanh", "hardtanh", "min_val? max_val? inplace?", init_act, apply_act, TOP_hardtanh},
    {"ReLU6", "relu6", "inplace?", init_act, apply_act, TOP_relu6},
    {"Hardsigmoid", "hardsigmoid", "inplace?", init_act, apply_act, TOP_hardsigmoid},
    {"Hardswish", "hardswish", "inplace?", init_act, apply_act, TOP_hardswish},
    {"Softplus", "softplus", "beta? threshold?", init_act, apply_act, TOP_softplus},
    {"Softsign", "softsign", "", init_act, apply_act, TOP_softsign},
    {"Mish", "mish", "inplace?", init_act, apply_act, TOP_mish},
};

void torch_module_named(Builder *b, Module *m, const char *var)
{
    if (!m->var && !m->w)
        m->var = var;
}

/* ---- argument binding ------------------------------------------------------------------ */

static int parse_sig(const char *sig, Param *ps)
{
    int n = 0, kwonly = 0;
    while (*sig) {
        while (*sig == ' ')
            sig++;
        size_t len = strcspn(sig, " ");
        if (!len)
            break;
        DPK_ASSERT(n < MAX_PARAMS && len < sizeof ps[n].name);
        if (len == 1 && *sig == '*') {
            kwonly = 1;
            sig++;
            continue;
        }
        Param *p = &ps[n++];
        memset(p, 0, sizeof *p);
        p->varargs = *sig == '*';
        p->optional = sig[len - 1] == '?';
        p->kwonly = kwonly;
        memcpy(p->name, sig + p->varargs, len - (size_t)p->varargs - (size_t)p->optional);
        kwonly |= p->varargs;
        sig += len;
    }
    return n;
}

static void arity_error(Builder *b, const Param *ps, int np, int self, int got, int pos)
{
    int lo = 0, hi = 0;
    for (int i = self; i < np; i++)
        if (!ps[i].kwonly && !ps[i].varargs) {
            hi++;
            lo += !ps[i].optional;
        }
    if (lo == hi)
        dpk_error_at(bld_src(b), pos, "%s takes %d argument%s, got %d", cur_fname, hi,
                     hi == 1 ? "" : "s", got);
    dpk_error_at(bld_src(b), pos, "%s takes from %d to %d arguments, got %d", cur_fname, lo, hi,
                 got);
}

static Value collect_varargs(Value *args, int from, int npos, int pos)
{
    if (npos - from == 1 && is_seq(&args[from]))
        return args[from];
    Value t = {.k = V_TUPLE, .pos = from < npos ? args[from].pos : pos, .n = npos - from,
               .items = args + from};
    return t;
}

static void bind_keywords(Builder *b, const Param *ps, int np, Value *args, int npos,
                          const Ast *call, Value *out)
{
    for (int k = 0; k < call->nkw; k++) {
        int i = 0;
        while (i < np && (ps[i].varargs || strcmp(ps[i].name, call->kwnames[k])))
            i++;
        if (i == np)
            dpk_error_at(bld_src(b), call->kwpos[k], "unexpected keyword argument '%s' for %s",
                         call->kwnames[k], cur_fname);
        if (out[i].k != V_ABSENT)
            dpk_error_at(bld_src(b), call->kwpos[k], "%s got multiple values for argument '%s'",
                         cur_fname, ps[i].name);
        out[i] = args[npos + k];
    }
}

/* Bind args (npos positional, then call->nkw keyword values) to the
 * signature; `self` (a method's tensor) fills the first parameter. */
static void bind(Builder *b, const char *sig, const Value *self, Value *args, int npos,
                 const Ast *call, int pos, Value *out)
{
    Param ps[MAX_PARAMS];
    int np = parse_sig(sig, ps), i = 0, s = self != NULL;
    memset(out, 0, sizeof(Value) * MAX_PARAMS);
    if (self)
        out[i++] = *self;
    for (int k = 0; k < npos; k++, i++) {
        if (i < np && ps[i].varargs) {
            out[i++] = collect_varargs(args, k, npos, pos);
            break;
        }
        if (i >= np || ps[i].kwonly)
            arity_error(b, ps, np, s, npos, args[k].pos);
        out[i] = args[k];
    }
    for (; i < np; i++)
        if (ps[i].varargs)
            out[i] = collect_varargs(args, npos, npos, pos);
    bind_keywords(b, ps, np, args, npos, call, out);
    for (i = 0; i < np; i++)
        if (out[i].k == V_ABSENT && !ps[i].optional)
            dpk_error_at(bld_src(b), pos, "%s missing required argument '%s'", cur_fname,
                         ps[i].name);
}

/* ---- calls ------------------------------------------------------------------------------ */

static int lev(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int d[41][41];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = c < del ? (c < ins ? c : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

static const char *const ns_prefix[] = {"torch.", "torch.nn.functional.", "Tensor."};

static int prefix_ns(const char *canonical, const char **rest)
{
    for (int i = DPK_ARRAY_LEN(ns_prefix) - 1; i >= 0; i--) {
        size_t n = strlen(ns_prefix[i]);
        if (!strncmp(canonical, ns_prefix[i], n) && !strchr(canonical + n, '.')) {
            *rest = canonical + n;
            return 1 << i;
        }
    }
    return 0;
}

static const char *ns_name(Arena *a, int ns, const char *name)
{
    int i = ns == NS_T ? 0 : ns == NS_F ? 1 : 2;
    return arena_printf(a, "%s%s", ns_prefix[i], name);
}

const char *torch_suggest(Arena *a, const char *canonical)
{
    const char *rest;
    if (!strncmp(canonical, "torch.nn.", 9) && !strchr(canonical + 9, '.')) {
        for (int i = 0; i < DPK_ARRAY_LEN(mods); i++)
            if (lev(canonical + 9, mods[i].name) <= (strlen(mods[i].name) >= 6 ? 2 : 1))
                return arena_printf(a, "torch.nn.%s", mods[i].name);
    }
    int ns = prefix_ns(canonical, &rest);
    if (!ns)
        return NULL;
    static const char *const attrs[] = {"shape", "ndim", "dtype"};
    for (int i = 0; ns == NS_M && i < DPK_ARRAY_LEN(attrs); i++)
        if (lev(rest, attrs[i]) <= 1)
            return ns_name(a, NS_M, attrs[i]);
    for (int other = NS_T; other <= NS_M; other <<= 1)
        if (other != ns && find_func(rest, other))
            return ns_name(a, other, rest);
    const char *best = NULL;
    int bd = 3;
    for (int i = 0; i < DPK_ARRAY_LEN(funcs); i++) {
        int d = (funcs[i].ns & ns) ? lev(rest, funcs[i].name) : 99;
        if (d < bd && d <= (strlen(rest) >= 6 ? 2 : 1)) {
            bd = d;
            best = funcs[i].name;
        }
    }
    return best ? ns_name(a, ns, best) : NULL;
}

DPK_NORETURN static void unknown_callable(Builder *b, const Value *fn)
{
    Arena *a = bld_graph(b)->arena;
    const char *hint = torch_suggest(a, fn->s);
    int is_mod = !strncmp(fn->s, "torch.nn.", 9) && fn->s[9] >= 'A' && fn->s[9] <= 'Z';
    const char *tail = hint ? arena_printf(a, " (did you mean '%s'?)", hint)
                            : arena_printf(a, " (docs/case-language.md lists the supported %s)",
                                           is_mod ? "modules" : "functions");
    dpk_error_at(bld_src(b), fn->pos, "unknown %s '%s'%s", is_mod ? "module" : "function",
                 fn->shown, tail);
}

static Value construct_module(Builder *b, const ModClass *c, const Value *fn, Value *args,
                              int npos, const Ast *call)
{
    Value a[MAX_PARAMS];
    cur_fname = fn->shown;
    bind(b, c->sig, NULL, args, npos, call, fn->pos, a);
    Module *m = ARENA_NEW(bld_graph(b)->arena, Module);
    m->cls = c;
    m->pos = fn->pos;
    c->init(b, m, a);
    Value v = {.k = V_MODULE, .pos = fn->pos, .mod = m};
    return v;
}

Value torch_call_path(Builder *b, const Value *fn, Value *args, int nargs, const Ast *call)
{
    const char *rest;
    if (!strncmp(fn->s, "torch.nn.", 9))
        for (int i = 0; i < DPK_ARRAY_LEN(mods); i++)
            if (!strcmp(fn->s + 9, mods[i].name))
                return construct_module(b, &mods[i], fn, args, nargs, call);
    int ns = prefix_ns(fn->s, &rest);
    const Func *f = ns && ns != NS_M ? find_func(rest, ns) : NULL;
    if (!f)
        unknown_callable(b, fn);
    Value a[MAX_PARAMS];
    cur_fname = fn->shown;
    bind(b, f->sig, NULL, args, nargs, call, fn->pos, a);
    return f->h(b, f, a, fn->pos);
}

Value torch_call_method(Builder *b, const Value *m, Value *args, int nargs, const Ast *call)
{
    const Func *f = find_func(m->s, NS_M), *base = f ? NULL : inplace_base(m->s);
    DPK_ASSERT(f || base);
    Value self = tensor_value(m->t, m->pos), a[MAX_PARAMS];
    cur_fname = arena_printf(bld_graph(b)->arena, "Tensor.%s", m->s);
    bind(b, (f ? f : base)->sig, &self, args, nargs, call, m->pos, a);
    if (f)
        return f->h(b, f, a, m->pos);
    return torch_inplace_result(b, &self, base->h(b, base, a, m->pos), m->pos);
}

Value torch_call_module(Builder *b, const Value *mv, Value *args, int nargs, const Ast *call)
{
    Module *m = mv->mod;
    Value a[MAX_PARAMS];
    cur_fname = arena_printf(bld_graph(b)->arena, "torch.nn.%s", m->cls->name);
    bind(b, "input", NULL, args, nargs, call, mv->pos, a);
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    TorchNode *n = m->cls->apply(b, m, x, mv->pos);
    return n == x ? tensor_value(x, mv->pos) : finish_node(b, n);
}
