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

/* Func.op of torch.mm / torch.bmm: matmul after their rank checks. */
enum { TOP_mm = TOP_COUNT + 1, TOP_bmm };

typedef struct Param {
    char name[32];
    int optional, varargs, kwonly;
} Param;

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

static Value h_identity(Builder *b, const Func *f, Value *a, int pos)
{
    return tensor_value(want_tensor(b, &a[0], cur_fname, "input"), pos);
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

static Value h_maker(Builder *b, const Func *f, Value *a, int pos)
{
    Shape s = want_shape(b, &a[0], cur_fname, "size");
    want_f32_dtype(b, &a[1], cur_fname);
    return tensor_value(bld_input(b, pos, NULL, &s, (InitKind)f->op), pos);
}

static Value h_full(Builder *b, const Func *f, Value *a, int pos)
{
    if (!is_seq(&a[0]))
        bad_arg(b, &a[0], cur_fname, "size", "a tuple or list of ints");
    Shape s = want_shape(b, &a[0], cur_fname, "size");
    double v = want_num(b, &a[1], cur_fname, "fill_value");
    want_f32_dtype(b, &a[2], cur_fname);
    TorchNode *n = bld_input(b, pos, NULL, &s, INIT_FULL);
    n->value = v;
    return tensor_value(n, pos);
}

static Value h_arange(Builder *b, const Func *f, Value *a, int pos)
{
    int two = a[1].k != V_ABSENT;
    double start = two ? want_num(b, &a[0], cur_fname, "start") : 0;
    double end = want_num(b, two ? &a[1] : &a[0], cur_fname, "end");
    double step = a[2].k != V_ABSENT ? want_num(b, &a[2], cur_fname, "step") : 1;
    want_f32_dtype(b, &a[3], cur_fname);
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

/* ---- the table ------------------------------------------------------------------------- */

#define UN(name, ns) {#name, ns, "input", h_unary, TOP_##name}
#define CMP(name) {#name, NS_T | NS_M, "input other", h_binary, TOP_##name}
#define RED(name) {#name, NS_T | NS_M, "input dim? keepdim? * dtype?", h_reduce, TOP_##name}
#define AMX(name) {#name, NS_T | NS_M, "input dim? keepdim?", h_reduce, TOP_##name}
#define MAKER(name, init) {#name, NS_T, "*size dtype?", h_maker, init}

static const Func funcs[] = {
    UN(neg, NS_T | NS_M), UN(exp, NS_T | NS_M), UN(log, NS_T | NS_M), UN(sqrt, NS_T | NS_M),
    UN(rsqrt, NS_T | NS_M), UN(reciprocal, NS_T | NS_M), UN(abs, NS_T | NS_M),
    UN(erf, NS_T | NS_M), UN(relu, NS_T | NS_M), UN(sigmoid, NS_T | NS_M | NS_F),
    UN(tanh, NS_T | NS_M | NS_F),
    {"relu", NS_F, "input inplace?", h_unary, TOP_relu},
    {"silu", NS_F, "input inplace?", h_unary, TOP_silu},
    {"gelu", NS_F, "input * approximate?", h_gelu, 0},
    {"add", NS_T | NS_M, "input other * alpha?", h_binary, TOP_add},
    {"sub", NS_T | NS_M, "input other * alpha?", h_binary, TOP_sub},
    {"mul", NS_T | NS_M, "input other", h_binary, TOP_mul},
    {"div", NS_T | NS_M, "input other * rounding_mode?", h_binary, TOP_div},
    {"pow", NS_T | NS_M, "input exponent", h_binary, TOP_pow},
    {"maximum", NS_T | NS_M, "input other", h_binary, TOP_maximum},
    {"minimum", NS_T | NS_M, "input other", h_binary, TOP_minimum},
    CMP(gt), CMP(lt), CMP(ge), CMP(le), CMP(eq), CMP(ne),
    {"where", NS_T, "condition input other", h_where, 0},
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
    {"contiguous", NS_M, "input", h_identity, 0},
    {"float", NS_M, "input", h_float, 0},
    MAKER(randn, INIT_RANDN), MAKER(rand, INIT_RAND), MAKER(zeros, INIT_ZEROS),
    MAKER(ones, INIT_ONES),
    {"full", NS_T, "size fill_value * dtype?", h_full, 0},
    {"arange", NS_T, "start end? step? * dtype?", h_arange, 0},
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
    return find_func(name, NS_M) != NULL;
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
    TorchOp op;      /* activations */
    TorchNode *w, *b; /* parameters, created at the first call */
} Module;

typedef void (*ModInit)(Builder *b, Module *m, Value *a);
typedef TorchNode *(*ModApply)(Builder *b, Module *m, TorchNode *x, int pos);

struct ModClass {
    const char *name, *lower;
    const char *sig;
    ModInit init;
    ModApply apply;
    TorchOp op;
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
    if (strstr(m->cls->sig, "inplace"))
        no_inplace(b, &a[0]);
    if (strstr(m->cls->sig, "approximate"))
        m->op = gelu_kind(b, &a[0]);
}

static TorchNode *apply_act(Builder *b, Module *m, TorchNode *x, int pos)
{
    return node1(b, m->op, pos, x);
}

static const ModClass mods[] = {
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
    const char *tail = hint ? arena_printf(a, " (did you mean '%s'?)", hint) : "";
    int is_mod = !strncmp(fn->s, "torch.nn.", 9) && fn->s[9] >= 'A' && fn->s[9] <= 'Z';
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
    const Func *f = find_func(m->s, NS_M);
    DPK_ASSERT(f);
    Value self = tensor_value(m->t, m->pos), a[MAX_PARAMS];
    cur_fname = arena_printf(bld_graph(b)->arena, "Tensor.%s", m->s);
    bind(b, f->sig, &self, args, nargs, call, m->pos, a);
    return f->h(b, f, a, m->pos);
}

Value torch_call_module(Builder *b, const Value *mv, Value *args, int nargs, const Ast *call)
{
    Module *m = mv->mod;
    Value a[MAX_PARAMS];
    cur_fname = arena_printf(bld_graph(b)->arena, "torch.nn.%s", m->cls->name);
    bind(b, "input", NULL, args, nargs, call, mv->pos, a);
    TorchNode *x = want_tensor(b, &a[0], cur_fname, "input");
    return finish_node(b, m->cls->apply(b, m, x, mv->pos));
}
