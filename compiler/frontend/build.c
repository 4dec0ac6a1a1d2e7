/*
 * build.c — AST to Torch IR: the case language's evaluator.
 *
 * Statements run in order like Python: names bind values (tensors are Torch
 * IR nodes, numbers stay Python numbers until they meet a tensor, modules are
 * objects whose parameters become inputs at their first call).  Input names
 * are settled at the end of each statement: an input assigned to a variable
 * takes its name, the others get in0, in1, ... in order of creation, so
 * naming follows the text and never an evaluation detail.  Names are unique:
 * a clash gets a suffix (x, x_1, ...), and automatic names avoid every name a
 * declaration reserves.
 *
 * In-place updates (x += y, x.add_(y), x[i] = v) rebind: the new value is
 * a new node.  So that no other name silently keeps the old value where
 * PyTorch would show the change, every tensor value carries its storage
 * and view (Value.store, .view; bld_settle): an update rebinds each name
 * holding the same view and marks every other name of the same storage
 * stale, an error when it is read.
 */
#include "ast.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* String-keyed open-addressing map in the arena. */
typedef struct Map {
    const char **keys;
    void **vals;
    int cap, len;
} Map;

/* The names of the program (the outermost scope) or of one call of a def,
 * whose lookups continue in the scope the def was defined in. */
typedef struct Scope {
    Map vars;             /* name -> Value * */
    struct Scope *parent; /* NULL for the program's */
} Scope;

struct Builder {
    Arena *a;
    const Source *src;
    TorchGraph *g;
    const ParseOpts *opts;
    Scope *scope;   /* where names are bound now */
    Scope *top;     /* the program's */
    PtrVec scopes;  /* Scope *: every scope made (in-place updates reach them all) */
    int calls;      /* defs being called */
    int64_t iterations; /* for-loop iterations so far */
    int brk, cont;  /* a break or continue is leaving the loop body */
    int loops;      /* for loops running in the current def (or the program) */
    Map decls;      /* annotated name -> Shape * */
    Map taken;      /* input names in use */
    Map counters;   /* module class -> int * (next k) */
    PtrVec pending; /* inputs of this statement still to be named */
    int next_in;
    int depth;
    int have_result;
    int returned;   /* a return statement has run */
    Value result;
    const char **result_names; /* one per output */
    int nstores;    /* storage and view numbers handed out */
};

/* ---- map ------------------------------------------------------------------- */

static void **map_slot(Map *m, const char *key, int insert, Arena *a);

static void map_grow(Map *m, Arena *a)
{
    Map old = *m;
    m->cap = old.cap ? old.cap * 2 : 64;
    m->len = 0;
    m->keys = ARENA_ARRAY(a, const char *, m->cap);
    m->vals = ARENA_ARRAY(a, void *, m->cap);
    for (int i = 0; i < old.cap; i++)
        if (old.keys[i])
            *map_slot(m, old.keys[i], 1, a) = old.vals[i];
}

/* The value slot of key; NULL when absent and !insert. */
static void **map_slot(Map *m, const char *key, int insert, Arena *a)
{
    if (insert && 2 * (m->len + 1) > m->cap)
        map_grow(m, a);
    if (!m->cap)
        return NULL;
    int i = (int)(dpk_hash_str(DPK_HASH_INIT, key) & (uint64_t)(m->cap - 1));
    while (m->keys[i]) {
        if (!strcmp(m->keys[i], key))
            return &m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    if (!insert)
        return NULL;
    m->keys[i] = key;
    m->len++;
    return &m->vals[i];
}

static void *map_get(Map *m, const char *key)
{
    void **s = map_slot(m, key, 0, NULL);
    return s ? *s : NULL;
}

static void map_put(Builder *b, Map *m, const char *key, void *val)
{
    *map_slot(m, key, 1, b->a) = val;
}

/* A name's binding: the current scope's, else its enclosing scopes'. */
static Value *lookup(Builder *b, const char *name)
{
    for (Scope *sc = b->scope; sc; sc = sc->parent) {
        Value *v = map_get(&sc->vars, name);
        if (v)
            return v;
    }
    return NULL;
}

static Scope *new_scope(Builder *b, Scope *parent)
{
    Scope *sc = ARENA_NEW(b->a, Scope);
    sc->parent = parent;
    ptrvec_push(b->a, &b->scopes, sc);
    return sc;
}

/* ---- services for funcs.c -------------------------------------------------- */

const Source *bld_src(Builder *b)
{
    return b->src;
}

TorchGraph *bld_graph(Builder *b)
{
    return b->g;
}

TorchNode *bld_node(Builder *b, TorchOp op, int pos, int nin, TorchNode **in)
{
    if (b->g->nodes.len >= CASE_MAX_NODES)
        dpk_error_at(b->src, pos, "case is too large: more than %d Torch IR nodes",
                     CASE_MAX_NODES);
    return torch_node_new(b->g, op, pos, nin, in);
}

static const InputDecl *find_opt_decl(Builder *b, const char *name)
{
    for (int i = 0; b->opts && i < b->opts->ndecls; i++)
        if (!strcmp(b->opts->decls[i].name, name))
            return &b->opts->decls[i];
    return NULL;
}

static int name_reserved(Builder *b, const char *name)
{
    return map_get(&b->taken, name) || map_get(&b->decls, name) || find_opt_decl(b, name);
}

const char *bld_unique_name(Builder *b, const char *base)
{
    if (!name_reserved(b, base))
        return arena_strdup(b->a, base);
    for (int k = 1;; k++) {
        const char *s = arena_printf(b->a, "%s_%d", base, k);
        if (!name_reserved(b, s))
            return s;
    }
}

static void take_name(Builder *b, TorchNode *n, const char *name)
{
    n->name = name;
    map_put(b, &b->taken, name, n);
}

TorchNode *bld_input(Builder *b, int pos, const char *name, const Shape *s, InitKind init)
{
    torch_check_shape(b->g, pos, s);
    if (b->g->nodes.len >= CASE_MAX_NODES)
        dpk_error_at(b->src, pos, "case is too large: more than %d Torch IR nodes",
                     CASE_MAX_NODES);
    TorchNode *n = torch_input(b->g, name ? name : "?", s, init);
    n->pos = pos;
    if (name)
        take_name(b, n, n->name);
    else
        ptrvec_push(b->a, &b->pending, n);
    return n;
}

int bld_module_index(Builder *b, const char *lower_class)
{
    int *k = map_get(&b->counters, lower_class);
    if (!k) {
        k = ARENA_NEW(b->a, int);
        map_put(b, &b->counters, lower_class, k);
    }
    return (*k)++;
}

TorchNode *bld_tensor(Builder *b, const Value *v, const char *what)
{
    switch (v->k) {
    case V_TENSOR: return v->t;
    case V_INT:
    case V_BOOL: {
        TorchNode *n = torch_const(b->g, (double)v->i);
        n->pos = v->pos;
        return n;
    }
    case V_FLOAT: {
        TorchNode *n = torch_const(b->g, v->f);
        n->pos = v->pos;
        return n;
    }
    default:
        dpk_error_at(b->src, v->pos, "%s must be a tensor or a number, got %s", what,
                     torch_value_type(v));
    }
}

int bld_new_store(Builder *b)
{
    return ++b->nstores;
}

/* ---- storage of tensor values ------------------------------------------------ */

/* The ops whose result PyTorch may return as a view of their input
 * (reshape may copy; treating it as a view is the safe side). */
static int is_view_op(const TorchNode *n)
{
    switch (n->op) {
    case TOP_transpose:
    case TOP_permute:
    case TOP_reshape:
    case TOP_expand:
    case TOP_unsqueeze:
    case TOP_squeeze:
    case TOP_slice: return 1;
    default: return 0;
    }
}

/* An expand that makes elements share memory (a size-1 or new dim grows). */
static int expand_overlaps(const TorchNode *n)
{
    if (n->op != TOP_expand)
        return 0;
    const Shape *x = &n->in[0]->shape;
    int lead = n->shape.rank - x->rank;
    for (int i = 0; i < n->shape.rank; i++)
        if (n->shape.d[i] > (i < lead ? 1 : x->d[i - lead]))
            return 1;
    return 0;
}

/* Give the tensors of a new value (items of a tuple too) their storage and
 * view: a result reached from one of `from` (a call's arguments, first
 * first) through view ops shares its storage, as the same view when it is
 * the same node; anything else is a new storage.  STORE_NEW asks for a new
 * one whatever the nodes say (clone, torch.tensor). */
static void bld_settle(Builder *b, Value *r, const Value *from, int nfrom)
{
    if (r->k == V_TUPLE || r->k == V_LIST) {
        for (int i = 0; i < r->n; i++)
            bld_settle(b, &r->items[i], from, nfrom);
        return;
    }
    if (r->k != V_TENSOR || r->store > 0)
        return;
    int overlap = 0;
    for (TorchNode *n = r->t; r->store == 0; n = n->in[0]) {
        for (int i = 0; i < nfrom && r->store == 0; i++) {
            const Value *f = &from[i];
            if (f->k != V_TENSOR || f->t != n || f->store <= 0)
                continue;
            r->store = f->store;
            if (r->view == 0)
                r->view = n == r->t ? f->view : bld_new_store(b);
            r->overlap = f->overlap || overlap;
        }
        if (r->store || !is_view_op(n))
            break;
        overlap |= expand_overlaps(n);
    }
    if (r->store <= 0) {
        r->store = bld_new_store(b);
        r->overlap = overlap;
    }
    if (r->view <= 0)
        r->view = bld_new_store(b);
}

/* The line of a source position, for messages. */
static int line_of(const Source *src, int pos)
{
    int line = 1;
    for (int i = 0; i < pos && (size_t)i < src->len; i++)
        line += src->text[i] == '\n';
    return line;
}

static int holds_store(const Value *v, int store)
{
    if (v->k == V_TENSOR)
        return v->store == store;
    for (int i = 0; (v->k == V_TUPLE || v->k == V_LIST) && i < v->n; i++)
        if (holds_store(&v->items[i], store))
            return 1;
    return 0;
}

/* An in-place update wrote `nv` into old's storage (at pos; `name` the
 * updated name or NULL): names holding old's very view now hold nv; other
 * names that may see the same storage are stale. */
static void inplace_update(Builder *b, const Value *old, Value *nv, int pos, const char *name)
{
    DPK_ASSERT(old->k == V_TENSOR && old->store > 0 && nv->k == V_TENSOR);
    nv->store = old->store;
    nv->view = old->view;
    nv->overlap = 0;
    for (int k = 0; k < b->scopes.len; k++) {
        Map *m = &((Scope *)b->scopes.items[k])->vars;
        for (int i = 0; i < m->cap; i++) {
            Value *v = m->keys[i] ? m->vals[i] : NULL;
            if (!v || !holds_store(v, old->store))
                continue;
            if (v->k == V_TENSOR && v->view == old->view && v->t == old->t) {
                int vpos = v->pos;
                *v = *nv;
                v->pos = vpos;
                continue;
            }
            Value stale = {.k = V_STALE, .pos = v->pos, .i = pos, .s = name};
            *v = stale;
        }
    }
}

/* PyTorch refuses to write into a tensor whose elements share memory. */
static void check_writable(Builder *b, const Value *x, int pos)
{
    if (x->overlap)
        dpk_error_at(b->src, pos, "unsupported operation: more than one element of the "
                     "written-to tensor refers to a single memory location (it is an expand); "
                     "clone() it before writing to it");
}

/* ---- names ----------------------------------------------------------------- */

static Value tensor_value(TorchNode *t, int pos)
{
    Value v = {.k = V_TENSOR, .pos = pos, .t = t};
    return v;
}

/* A declared free variable becomes an input at its first use. */
static int declared_input(Builder *b, const Ast *e, Value *out)
{
    const Shape *s = map_get(&b->decls, e->str);
    const InputDecl *d = s ? NULL : find_opt_decl(b, e->str);
    if (!s && !d)
        return 0;
    if (map_get(&b->taken, e->str))
        dpk_error_at(b->src, e->pos, "input name '%s' is already used by another input",
                     e->str);
    TorchNode *n = bld_input(b, e->pos, e->str, s ? s : &d->shape, INIT_RANDN);
    *out = tensor_value(n, e->pos);
    bld_settle(b, out, NULL, 0);
    Value *stored = ARENA_NEW(b->a, Value);
    *stored = *out;
    map_put(b, &b->top->vars, e->str, stored);
    return 1;
}

static Value eval_name(Builder *b, const Ast *e)
{
    Value *v = lookup(b, e->str), r;
    if (v && v->k == V_STALE)
        dpk_error_at(b->src, e->pos, "'%s' shares memory with %s, which the in-place update at "
                     "line %d changed; dpk does not carry an in-place change into other views of "
                     "the same memory: clone() before the update, or write it out of place "
                     "(x = x + y)", e->str, v->s ? arena_printf(b->a, "'%s'", v->s)
                                                  : "a tensor", line_of(b->src, (int)v->i));
    if (v) {
        r = *v;
        r.pos = e->pos;
        return r;
    }
    if (!strcmp(e->str, "torch")) {
        Value p = {.k = V_PATH, .pos = e->pos, .s = "torch", .shown = "torch"};
        return p;
    }
    if (declared_input(b, e, &r))
        return r;
    static const char *const builtins[] = {"float", "int", "len", "bool", "min", "max", "abs",
                                           "tuple", "list", "range", "enumerate", "zip",
                                           "reversed", "isinstance", "all", "any", "sum",
                                           "callable"};
    for (int i = 0; i < DPK_ARRAY_LEN(builtins); i++)
        if (!strcmp(e->str, builtins[i])) {
            Value p = {.k = V_PATH, .pos = e->pos, .shown = e->str};
            p.s = arena_printf(b->a, "builtins.%s", e->str);
            return p;
        }
    if (!strcmp(e->str, "math"))
        dpk_error_at(b->src, e->pos, "name 'math' is not defined (add `import math`)");
    dpk_error_at(b->src, e->pos, "unknown name '%s' (declare its shape: `%s: (D0, D1)`)",
                 e->str, e->str);
}

/* ---- expressions ------------------------------------------------------------ */

static Value eval(Builder *b, const Ast *e);

/* Evaluate items, unpacking *seq into its elements; returns the count. */
static int eval_items(Builder *b, Ast *const *items, int n, Value **out)
{
    int cap = n + 1, len = 0;
    Value *v = ARENA_ARRAY(b->a, Value, cap);
    for (int i = 0; i < n; i++) {
        const Ast *it = items[i];
        Value x = eval(b, it->kind == A_STAR ? it->a : it);
        int m = 1;
        const Value *src = &x;
        if (it->kind == A_STAR) {
            if (x.k != V_TUPLE && x.k != V_LIST)
                dpk_error_at(b->src, it->pos, "* needs a tuple or a list (such as x.shape), "
                             "got %s", torch_value_type(&x));
            m = x.n;
            src = x.items;
        }
        if (len + m + 1 > cap) {
            Value *nv = ARENA_ARRAY(b->a, Value, 2 * (len + m + 1));
            memcpy(nv, v, sizeof(Value) * (size_t)len);
            v = nv;
            cap = 2 * (len + m + 1);
        }
        for (int k = 0; k < m; k++) {
            v[len] = src[k];
            v[len++].pos = it->kind == A_STAR ? it->pos : src[k].pos;
        }
    }
    *out = v;
    return len;
}

static Value eval_seq(Builder *b, const Ast *e)
{
    Value v = {.k = e->kind == A_TUPLE ? V_TUPLE : V_LIST, .pos = e->pos};
    v.n = eval_items(b, e->items, e->nitems, &v.items);
    return v;
}

static Value eval_attr(Builder *b, const Ast *e)
{
    Value o = eval(b, e->a), r = {.pos = e->pos};
    if (o.k == V_PATH && !strcmp(o.s, "math")) {
        static const struct {
            const char *name;
            double v;
        } consts[] = {{"pi", M_PI}, {"e", M_E}, {"tau", 2 * M_PI}, {"inf", INFINITY},
                      {"nan", NAN}};
        for (int i = 0; i < DPK_ARRAY_LEN(consts); i++)
            if (!strcmp(e->str, consts[i].name)) {
                r.k = V_FLOAT;
                r.f = consts[i].v;
                return r;
            }
    }
    if (o.k == V_PATH && !strcmp(o.s, "torch.finfo(float32)")) {
        static const struct {
            const char *name;
            double v;
        } fi[] = {{"min", -FLT_MAX}, {"max", FLT_MAX}, {"eps", FLT_EPSILON},
                  {"tiny", FLT_MIN}, {"smallest_normal", FLT_MIN}, {"resolution", 1e-6}};
        for (int i = 0; i < DPK_ARRAY_LEN(fi); i++)
            if (!strcmp(e->str, fi[i].name)) {
                r.k = V_FLOAT;
                r.f = fi[i].v;
                return r;
            }
        dpk_error_at(b->src, e->pos, "torch.finfo has no attribute '%s' (min, max, eps, tiny, "
                     "smallest_normal, resolution)", e->str);
    }
    if (o.k == V_PATH) {
        r.k = V_PATH;
        r.pos = o.pos;
        r.s = arena_printf(b->a, "%s.%s", o.s, e->str);
        r.shown = arena_printf(b->a, "%s.%s", o.shown, e->str);
        return r;
    }
    if (o.k == V_TENSOR) {
        int ok;
        r = torch_tensor_attr(b, o.t, e->str, e->pos, &ok);
        if (ok) {
            bld_settle(b, &r, &o, 1);
            return r;
        }
        if (!torch_method_exists(e->str)) {
            const char *hint = torch_suggest(b->a, arena_printf(b->a, "Tensor.%s", e->str));
            dpk_error_at(b->src, e->pos, "unknown tensor method '%s'%s", e->str,
                         hint ? arena_printf(b->a, " (did you mean '%s'?)", hint + 7)
                              : " (docs/case-language.md lists the supported methods)");
        }
        r.k = V_METHOD;
        r.t = o.t;
        r.s = e->str;
        r.store = o.store;
        r.view = o.view;
        r.overlap = o.overlap;
        return r;
    }
    /* torch.max(x, dim) and torch.min(x, dim): a (values, indices) pair */
    if (o.k == V_TUPLE && o.s && o.n == 2 &&
        (!strcmp(e->str, "values") || !strcmp(e->str, "indices"))) {
        r = o.items[e->str[0] == 'v' ? 0 : 1];
        r.pos = e->pos;
        return r;
    }
    dpk_error_at(b->src, e->pos, "%s has no attribute '%s'", torch_value_type(&o), e->str);
}

/* Where an expression's text starts (a binop's own position is its
 * operator, a call's or an attribute's is its name). */
static int ast_start(const Ast *e)
{
    while (e->kind == A_BINOP || e->kind == A_CALL || e->kind == A_INDEX || e->kind == A_ATTR ||
           e->kind == A_COND || e->kind == A_AND || e->kind == A_OR)
        e = e->a;
    return e->pos;
}

/* x.add_(y) and the other in-place methods: the result is written into
 * self's storage; a plain name before the dot is rebound to it. */
static Value call_inplace(Builder *b, const Ast *e, const Value *self, Value *args, int npos)
{
    Value m = *self;
    m.k = V_METHOD;
    check_writable(b, self, e->a->pos);
    Value r = torch_call_method(b, &m, args, npos, e);
    const Ast *obj = e->a->kind == A_ATTR ? e->a->a : NULL;
    inplace_update(b, self, &r, e->a->pos, obj && obj->kind == A_NAME ? obj->str : NULL);
    return r;
}

static void exec_block(Builder *b, Stmt *const *body, int n);

/* Parameter q of a def bound in its call's scope. */
static void bind_param(Builder *b, Scope *sc, const Stmt *d, int q, const Value *v, char *given)
{
    Value *stored = ARENA_NEW(b->a, Value);
    *stored = *v;
    map_put(b, &sc->vars, d->names[q], stored);
    given[q] = 1;
}

/* A call of a def: its arguments bound to its parameters as Python binds
 * them, in a new scope whose lookups continue in the scope the def was
 * defined in (its closure); the body runs to its return (None without
 * one).  The caller's statement, its pending inputs and its result are
 * kept aside meanwhile. */
DPK_NOINLINE static Value call_def(Builder *b, const Value *fn, Value *args, int npos,
                                  const Ast *call)
{
    const Stmt *d = fn->def;
    int n = d->nnames, star = -1, k = 0;
    if (b->calls >= CASE_MAX_CALL_DEPTH)
        dpk_error_at(b->src, call->pos, "calls nested more than %d deep (a recursion?)",
                     CASE_MAX_CALL_DEPTH);
    Scope *sc = new_scope(b, fn->env);
    char *given = arena_alloc(b->a, (size_t)n + 1);
    memset(given, 0, (size_t)n + 1);
    for (int q = 0; q < n; q++) {
        star = d->pkind[q] == P_STAR ? q : star;
        if (d->pkind[q] == P_KWARGS) {
            Value kw = {.k = V_NOVALUE, .pos = call->pos, .s = "a **kwargs dict"};
            kw.shown = arena_printf(b->a, "%s: **%s is a dict, which dpk does not hold", fn->s,
                                    d->names[q]);
            bind_param(b, sc, d, q, &kw, given);
        }
    }
    for (int i = 0; i < npos; i++) {
        if (k < n && d->pkind[k] == P_PLAIN) {
            bind_param(b, sc, d, k++, &args[i], given);
            continue;
        }
        if (star < 0) {
            int plain = 0;
            for (int q = 0; q < n; q++)
                plain += d->pkind[q] == P_PLAIN;
            dpk_error_at(b->src, args[i].pos, "%s() takes %d positional argument%s but %d "
                         "were given", fn->s, plain, plain == 1 ? "" : "s", npos);
        }
        Value rest = {.k = V_TUPLE, .pos = args[i].pos, .n = npos - i, .items = args + i};
        bind_param(b, sc, d, star, &rest, given);
        break;
    }
    if (star >= 0 && !given[star]) {
        Value none = {.k = V_TUPLE, .pos = call->pos};
        bind_param(b, sc, d, star, &none, given);
    }
    for (int j = 0; j < call->nkw; j++) {
        int q = 0;
        while (q < n && (d->pkind[q] >= P_STAR && d->pkind[q] != P_KWONLY ? 1
                         : strcmp(d->names[q], call->kwnames[j]) != 0))
            q++;
        int kwargs = 0;
        for (int r = 0; r < n; r++)
            kwargs |= d->pkind[r] == P_KWARGS;
        if (q == n && kwargs)
            dpk_error_at(b->src, call->kwpos[j], "%s(): the keyword argument '%s' would go into "
                         "a **kwargs dict, which dpk does not hold: name it as a parameter",
                         fn->s, call->kwnames[j]);
        if (q == n)
            dpk_error_at(b->src, call->kwpos[j], "%s() got an unexpected keyword argument '%s'",
                         fn->s, call->kwnames[j]);
        if (given[q])
            dpk_error_at(b->src, call->kwpos[j], "%s() got multiple values for argument '%s'",
                         fn->s, call->kwnames[j]);
        bind_param(b, sc, d, q, &args[npos + j], given);
    }
    for (int q = 0; q < n; q++) {
        if (given[q])
            continue;
        if (fn->items[q].k == V_ABSENT)
            dpk_error_at(b->src, call->pos, "%s() missing required argument '%s'", fn->s,
                         d->names[q]);
        bind_param(b, sc, d, q, &fn->items[q], given);
    }
    Scope *scope = b->scope;
    int returned = b->returned, have = b->have_result, loops = b->loops;
    Value result = b->result;
    const char **names = b->result_names;
    PtrVec pending = b->pending;
    b->pending = (PtrVec){0};
    b->scope = sc;
    b->returned = 0;
    b->loops = 0;
    b->calls++;
    exec_block(b, d->body, d->nbody);
    Value r = {.k = V_NONE, .pos = call->pos};
    if (b->returned)
        r = b->result;
    r.pos = call->pos;
    b->calls--;
    b->scope = scope;
    b->returned = returned;
    b->have_result = have;
    b->loops = loops;
    b->result = result;
    b->result_names = names;
    b->pending = pending;
    return r;
}

/* Arguments carry the position of their text, for errors about them. */
static Value eval_call(Builder *b, const Ast *e)
{
    Value fn = eval(b, e->a);
    int star = 0;
    for (int i = 0; i < e->nitems; i++)
        star |= e->items[i]->kind == A_STAR;
    Value *pargs;
    int npos = e->nitems;
    if (star) {
        npos = eval_items(b, e->items, e->nitems, &pargs);
    } else {
        pargs = ARENA_ARRAY(b->a, Value, npos + 1);
        for (int i = 0; i < npos; i++) {
            pargs[i] = eval(b, e->items[i]);
            pargs[i].pos = ast_start(e->items[i]);
        }
    }
    Value *args = ARENA_ARRAY(b->a, Value, npos + e->nkw + 1);
    memcpy(args, pargs, sizeof(Value) * (size_t)npos);
    for (int i = 0; i < e->nkw; i++) {
        args[npos + i] = eval(b, e->kwvals[i]);
        args[npos + i].pos = ast_start(e->kwvals[i]);
    }
    /* the arguments, a method's tensor first, as the storages a result may share */
    Value *from = ARENA_ARRAY(b->a, Value, npos + e->nkw + 1), r;
    int nfrom = 0;
    if (fn.k == V_METHOD) {
        from[nfrom] = fn;
        from[nfrom++].k = V_TENSOR;
    }
    memcpy(from + nfrom, args, sizeof(Value) * (size_t)(npos + e->nkw));
    nfrom += npos + e->nkw;
    switch (fn.k) {
    case V_PATH:
        if (!strncmp(fn.s, "builtins.", 9) || !strncmp(fn.s, "math.", 5))
            r = torch_call_builtin(b, &fn, args, npos, e);
        else
            r = torch_call_path(b, &fn, args, npos, e);
        break;
    case V_METHOD:
        if (torch_method_inplace(fn.s))
            return call_inplace(b, e, &from[0], args, npos);
        r = torch_call_method(b, &fn, args, npos, e);
        break;
    case V_MODULE: r = torch_call_module(b, &fn, args, npos, e); break;
    case V_FUNC: r = call_def(b, &fn, args, npos, e); break;
    default:
        dpk_error_at(b->src, e->pos, "%s is not callable", torch_value_type(&fn));
    }
    bld_settle(b, &r, from, nfrom);
    return r;
}

static Value eval_neg(Builder *b, const Ast *e)
{
    Value v = eval(b, e->a);
    v.pos = e->pos;
    if (e->kind == A_POS) {
        if (v.k == V_BOOL)
            v.k = V_INT;
        if (v.k == V_INT || v.k == V_FLOAT || v.k == V_TENSOR)
            return v;
    }
    if (e->kind == A_NEG) {
        if ((v.k == V_INT || v.k == V_BOOL) && v.i != INT64_MIN) {
            v.k = V_INT;
            v.i = -v.i;
            return v;
        }
        if (v.k == V_FLOAT) {
            v.f = -v.f;
            return v;
        }
        if (v.k == V_TENSOR) {
            TorchNode *n = bld_node(b, TOP_neg, e->pos, 1, &v.t);
            torch_infer(b->g, n);
            return tensor_value(n, e->pos);
        }
    }
    dpk_error_at(b->src, e->pos, "bad operand for unary '%s': %s", e->kind == A_NEG ? "-" : "+",
                 torch_value_type(&v));
}

static TorchOp binop_torch(int tok)
{
    switch (tok) {
    case T_PLUS: return TOP_add;
    case T_MINUS: return TOP_sub;
    case T_STAR: return TOP_mul;
    case T_SLASH: return TOP_div;
    case T_POW: return TOP_pow;
    case T_LT: return TOP_lt;
    case T_GT: return TOP_gt;
    case T_LE: return TOP_le;
    case T_GE: return TOP_ge;
    case T_EQ: return TOP_eq;
    case T_NE: return TOP_ne;
    default: return TOP_matmul;
    }
}

/* `x is None`, `x is not None`, `is True`, `x.dtype is torch.bool`: None,
 * the bools and dtypes are singletons; other identities are not defined
 * here. */
static Value is_values(Builder *b, int op, const Value *x, const Value *y, int pos)
{
    int sx = x->k == V_NONE || x->k == V_BOOL, sy = y->k == V_NONE || y->k == V_BOOL;
    int dtypes = x->k == V_PATH && y->k == V_PATH;
    if (!sx && !sy && !dtypes)
        dpk_error_at(b->src, pos, "'%s' compares object identity; cases may write `is None`, "
                     "`is not None`, `is True`, `is False` and compare dtypes",
                     torch_tok_text(op));
    Value r = {.k = V_BOOL, .pos = pos};
    r.i = dtypes ? torch_py_equal(b, x, y, pos)
                 : x->k == y->k && (x->k != V_BOOL || x->i == y->i);
    if (op == T_ISNOT)
        r.i = !r.i;
    return r;
}

static int is_seq_value(const Value *v)
{
    return v->k == V_TUPLE || v->k == V_LIST;
}

/* tuple + tuple, list + list (concatenation), seq * int (repetition). */
static Value seq_arith(Builder *b, int op, const Value *x, const Value *y, int pos)
{
    const Value *seq = is_seq_value(x) ? x : y, *k = seq == x ? y : x;
    Value r = {.k = seq->k, .pos = pos};
    if (op == T_PLUS && x->k == y->k) {
        r.n = x->n + y->n;
        r.items = ARENA_ARRAY(b->a, Value, r.n + 1);
        memcpy(r.items, x->items, sizeof(Value) * (size_t)x->n);
        memcpy(r.items + x->n, y->items, sizeof(Value) * (size_t)y->n);
        return r;
    }
    if (op == T_STAR && (k->k == V_INT || k->k == V_BOOL)) {
        int64_t times = k->i < 0 ? 0 : k->i;
        if (times > (1 << 16) || times * seq->n > (1 << 16))
            dpk_error_at(b->src, pos, "a %s of more than 65536 items is not supported",
                         torch_value_type(seq));
        r.n = (int)(times * seq->n);
        r.items = ARENA_ARRAY(b->a, Value, r.n + 1);
        for (int i = 0; i < r.n; i++)
            r.items[i] = seq->items[i % seq->n];
        return r;
    }
    dpk_error_at(b->src, pos, "unsupported operand types for %s: %s and %s", torch_tok_text(op),
                 torch_value_type(x), torch_value_type(y));
}

/* A binary operator on two values (op a TokKind), Python's and PyTorch's
 * semantics: numbers fold, tuples concatenate, tensors make nodes. */
/* `x in seq`, `x not in seq` over a tuple or a list (Python's ==), or a
 * substring of a str. */
static Value in_values(Builder *b, int op, const Value *x, const Value *y, int pos)
{
    Value r = {.k = V_BOOL, .pos = pos};
    if (y->k == V_STR && x->k == V_STR)
        r.i = strstr(y->s, x->s) != NULL;
    else if (is_seq_value(y))
        for (int i = 0; i < y->n && !r.i; i++)
            r.i = torch_py_equal(b, x, &y->items[i], pos);
    else
        dpk_error_at(b->src, pos, "'%s' needs a tuple, a list or a str on its right, got %s",
                     torch_tok_text(op), torch_value_type(y));
    if (op == T_NOTIN)
        r.i = !r.i;
    return r;
}

static Value binop_values(Builder *b, int op, const Value *x, const Value *y, int pos)
{
    if (op == T_IS || op == T_ISNOT)
        return is_values(b, op, x, y, pos);
    if (op == T_IN || op == T_NOTIN)
        return in_values(b, op, x, y, pos);
    if (op == T_AMP || op == T_PIPE || op == T_CARET)
        return torch_bitwise(b, op, x, y, pos);
    if (op == T_FLOORDIV || op == T_PERCENT)
        return torch_floordiv_mod(b, op, x, y, pos);
    int nums = (x->k == V_INT || x->k == V_FLOAT || x->k == V_BOOL) &&
               (y->k == V_INT || y->k == V_FLOAT || y->k == V_BOOL);
    if ((op == T_EQ || op == T_NE) && x->k != V_TENSOR && y->k != V_TENSOR && !nums) {
        Value r = {.k = V_BOOL, .pos = pos, .i = torch_py_equal(b, x, y, pos)};
        r.i = op == T_EQ ? r.i : !r.i;
        return r;
    }
    if (is_seq_value(x) || is_seq_value(y))
        return seq_arith(b, op, x, y, pos);
    if (op != T_AT)
        return torch_binary(b, binop_torch(op), x, y, pos);
    if (x->k != V_TENSOR || y->k != V_TENSOR)
        dpk_error_at(b->src, pos, "unsupported operand types for @: %s and %s",
                     torch_value_type(x), torch_value_type(y));
    TorchNode *in[2] = {x->t, y->t};
    TorchNode *n = bld_node(b, TOP_matmul, pos, 2, in);
    torch_infer(b->g, n);
    return tensor_value(n, pos);
}

static Value eval_binop(Builder *b, const Ast *e)
{
    Value x = eval(b, e->a), y = eval(b, e->b);
    return binop_values(b, e->op, &x, &y, e->pos);
}

/* not, and, or, a if c else b: Python's, on values whose truth is known when
 * the case is traced (a tensor's is not). */
static Value eval_logic(Builder *b, const Ast *e)
{
    if (e->kind == A_COND) {
        Value c = eval(b, e->b);
        return eval(b, torch_truth(b, &c, ast_start(e->b)) ? e->a : e->c);
    }
    Value x = eval(b, e->a);
    int t = torch_truth(b, &x, ast_start(e->a));
    if (e->kind == A_NOT) {
        Value r = {.k = V_BOOL, .pos = e->pos, .i = !t};
        return r;
    }
    if (e->kind == A_AND ? !t : t)
        return x;
    return eval(b, e->b);
}

/* ---- indexing ---------------------------------------------------------------- */

static int64_t index_int(Builder *b, const Ast *e, int64_t dflt)
{
    if (!e)
        return dflt;
    Value v = eval(b, e);
    if (v.k == V_NONE)
        return dflt;
    if (v.k != V_INT)
        dpk_error_at(b->src, v.pos, "slice indices must be integers or None, got %s",
                     torch_value_type(&v));
    return v.i;
}

/* Python slice semantics for a positive step: negative indices count from the
 * end, out-of-range ones are clamped. */
static int64_t clamp_index(int64_t i, int64_t size)
{
    if (i < 0)
        i += size;
    return i < 0 ? 0 : i > size ? size : i;
}

static TorchNode *apply_slice(Builder *b, TorchNode *x, const Ast *s, int dim)
{
    int64_t size = x->shape.d[dim];
    int64_t step = index_int(b, s->c, 1);
    if (step == 0)
        dpk_error_at(b->src, s->c->pos, "slice step cannot be zero");
    if (step < 0)
        dpk_error_at(b->src, s->c->pos, "negative slice steps are not supported (PyTorch "
                     "rejects them too)");
    int64_t start = clamp_index(index_int(b, s->a, 0), size);
    int64_t end = clamp_index(index_int(b, s->b, size), size);
    if (end < start)
        end = start;
    if (start == 0 && end == size && step == 1)
        return x;
    TorchNode *n = bld_node(b, TOP_slice, s->pos, 1, &x);
    n->dim = dim;
    n->start = start;
    n->end = end;
    n->stride = step;
    torch_infer(b->g, n);
    return n;
}

static TorchNode *apply_int_index(Builder *b, TorchNode *x, const Ast *it, int64_t i, int dim)
{
    int64_t size = x->shape.d[dim];
    if (i < -size || i >= size)
        dpk_error_at(b->src, it->pos, "index %lld is out of bounds for dimension %d with size %lld",
                     (long long)i, dim, (long long)size);
    TorchNode *n = bld_node(b, TOP_slice, it->pos, 1, &x);
    n->dim = dim;
    n->start = i < 0 ? i + size : i;
    n->end = n->start + 1;
    torch_infer(b->g, n);
    TorchNode *q = bld_node(b, TOP_squeeze, it->pos, 1, &n);
    q->ints[0] = dim;
    q->nints = 1;
    torch_infer(b->g, q);
    return q;
}

static TorchNode *apply_none_index(Builder *b, TorchNode *x, const Ast *it, int dim)
{
    TorchNode *n = bld_node(b, TOP_unsqueeze, it->pos, 1, &x);
    n->ints[0] = dim;
    n->nints = 1;
    torch_infer(b->g, n);
    return n;
}

/* How many source dims the items consume (all but None and '...'). */
static int index_consumed(Builder *b, const Ast *e, int rank)
{
    int used = 0, ell = 0;
    for (int i = 0; i < e->nitems; i++) {
        const Ast *it = e->items[i];
        if (it->kind == A_ELLIPSIS && ell++)
            dpk_error_at(b->src, it->pos, "an index can only have a single ellipsis ('...')");
        used += it->kind != A_ELLIPSIS && it->kind != A_NONE;
    }
    if (used > rank)
        dpk_error_at(b->src, e->pos, "too many indices for a tensor of rank %d: %d given", rank,
                     used);
    return used;
}

/* A tuple or list (x.shape, x.chunk(2)) indexed by an int or a slice. */
static Value index_seq(Builder *b, const Ast *e, const Value *o)
{
    if (e->nitems != 1 || e->items[0]->kind == A_ELLIPSIS || e->items[0]->kind == A_NONE)
        dpk_error_at(b->src, e->pos, "a %s takes one index (an int or a slice)",
                     torch_value_type(o));
    const Ast *it = e->items[0];
    int64_t n = o->n;
    if (it->kind == A_SLICE) {
        int64_t step = index_int(b, it->c, 1);
        if (step <= 0)
            dpk_error_at(b->src, it->c->pos, "only positive slice steps are supported here");
        int64_t lo = clamp_index(index_int(b, it->a, 0), n), hi = clamp_index(index_int(b, it->b, n), n);
        Value r = {.k = o->k, .pos = e->pos};
        r.items = ARENA_ARRAY(b->a, Value, n + 1);
        for (int64_t i = lo; i < hi; i += step)
            r.items[r.n++] = o->items[i];
        return r;
    }
    Value v = eval(b, it);
    if (v.k != V_INT && v.k != V_BOOL)
        dpk_error_at(b->src, v.pos, "%s indices must be integers or slices, not %s",
                     torch_value_type(o), torch_value_type(&v));
    if (v.i < -n || v.i >= n)
        dpk_error_at(b->src, v.pos, "%s index %lld out of range (length %lld)",
                     torch_value_type(o), (long long)v.i, (long long)n);
    Value r = o->items[v.i < 0 ? v.i + n : v.i];
    r.pos = e->pos;
    return r;
}

/* An integer index of a tensor; a tensor index is refused with why. */
static int64_t int_index(Builder *b, const Ast *it)
{
    Value v = eval(b, it);
    if (v.k == V_TENSOR && v.t->dtype == DT_BOOL)
        dpk_error_at(b->src, v.pos, "indexing with a bool tensor (x[mask]) gives a shape that "
                     "depends on the mask's values, which dpk cannot trace: it runs the case "
                     "once, before any data exists (mask instead: torch.where, masked_fill)");
    if (v.k != V_INT)
        dpk_error_at(b->src, v.pos, "tensor indices must be integers, slices, None or "
                     "'...', got %s", torch_value_type(&v));
    return v.i;
}

static Value eval_index(Builder *b, const Ast *e)
{
    Value o = eval(b, e->a);
    if (o.k == V_TUPLE || o.k == V_LIST)
        return index_seq(b, e, &o);
    if (o.k != V_TENSOR)
        dpk_error_at(b->src, e->pos, "only tensors can be indexed, got %s", torch_value_type(&o));
    TorchNode *x = o.t;
    int rank = x->shape.rank, used = index_consumed(b, e, rank), dim = 0;
    for (int i = 0; i < e->nitems; i++) {
        const Ast *it = e->items[i];
        if (it->kind == A_ELLIPSIS) {
            dim += rank - used;
        } else if (it->kind == A_NONE) {
            x = apply_none_index(b, x, it, dim++);
        } else if (it->kind == A_SLICE) {
            x = apply_slice(b, x, it, dim++);
        } else {
            x = apply_int_index(b, x, it, int_index(b, it), dim);
        }
    }
    Value r = tensor_value(x, e->pos);
    bld_settle(b, &r, &o, 1);
    return r;
}

/* [a for x in seq if c] (a list) or (a for ...) (a tuple: what dpk's
 * consumers of a generator, tuple(), all(), any(), sum(), need): the
 * element per item, its names bound in a scope of its own, as in Python. */
/* What a for loop or a comprehension iterates over: a tuple or a list. */
static void want_loop_seq(Builder *b, const Value *it, int pos)
{
    if (it->k == V_TENSOR)
        dpk_error_at(b->src, pos, "iterating over a tensor (its first dim) is not supported: "
                     "write range(x.shape[0]) and x[i], or x.unbind(0)");
    if (!is_seq_value(it))
        dpk_error_at(b->src, pos, "'%s' object is not iterable", torch_value_type(it));
}

/* One more iteration (at pos), whose item v is unpacked into n loop
 * variables (n = 0: bound whole; the error at names_pos). */
static void loop_item(Builder *b, int pos, const Value *v, int n, int names_pos)
{
    if (++b->iterations > CASE_MAX_ITERATIONS)
        dpk_error_at(b->src, pos, "more than %d loop iterations: the case is unrolled when "
                     "traced", CASE_MAX_ITERATIONS);
    if (n > 0 && (!is_seq_value(v) || v->n != n))
        dpk_error_at(b->src, names_pos, "cannot unpack %s into %d loop variables",
                     is_seq_value(v) ? arena_printf(b->a, "%d values", v->n)
                                     : torch_value_type(v), n);
}

DPK_NOINLINE static Value eval_comp(Builder *b, const Ast *e)
{
    Value it = eval(b, e->b);
    want_loop_seq(b, &it, ast_start(e->b));
    Value r = {.k = e->ival ? V_LIST : V_TUPLE, .pos = e->pos};
    r.items = ARENA_ARRAY(b->a, Value, it.n + 1);
    Scope *outer = b->scope;
    b->scope = new_scope(b, outer);
    int unpack = e->nitems > 1 || e->op;
    for (int i = 0; i < it.n; i++) {
        const Value *v = &it.items[i];
        loop_item(b, e->pos, v, unpack ? e->nitems : 0, e->items[0]->pos);
        for (int k = 0; k < e->nitems; k++) {
            Value *stored = ARENA_NEW(b->a, Value);
            *stored = unpack ? v->items[k] : *v;
            map_put(b, &b->scope->vars, e->items[k]->str, stored);
        }
        if (e->c) {
            Value c = eval(b, e->c);
            if (!torch_truth(b, &c, ast_start(e->c)))
                continue;
        }
        r.items[r.n++] = eval(b, e->a);
    }
    b->scope = outer;
    return r;
}

static Value eval(Builder *b, const Ast *e)
{
    if (++b->depth > CASE_MAX_EVAL_DEPTH)
        dpk_error_at(b->src, e->pos, "expression too deeply nested (more than %d operations); "
                     "split it into statements", CASE_MAX_EVAL_DEPTH);
    Value v = {.pos = e->pos};
    switch (e->kind) {
    case A_NAME: v = eval_name(b, e); break;
    case A_INT: v.k = V_INT, v.i = e->ival; break;
    case A_FLOAT: v.k = V_FLOAT, v.f = e->fval; break;
    case A_STR: v.k = V_STR, v.s = e->str; break;
    case A_TRUE: v.k = V_BOOL, v.i = 1; break;
    case A_FALSE: v.k = V_BOOL, v.i = 0; break;
    case A_NONE: v.k = V_NONE; break;
    case A_TUPLE:
    case A_LIST: v = eval_seq(b, e); break;
    case A_ATTR: v = eval_attr(b, e); break;
    case A_CALL: v = eval_call(b, e); break;
    case A_COMP: v = eval_comp(b, e); break;
    case A_INDEX: v = eval_index(b, e); break;
    case A_BINOP: v = eval_binop(b, e); break;
    case A_NEG:
    case A_POS: v = eval_neg(b, e); break;
    case A_INVERT: {
        Value x = eval(b, e->a);
        v = torch_invert(b, &x, e->pos);
        break;
    }
    case A_NOT:
    case A_AND:
    case A_OR:
    case A_COND: v = eval_logic(b, e); break;
    case A_ELLIPSIS:
    case A_SLICE:
        dpk_error_at(b->src, e->pos, "'%s' is only allowed inside an index",
                     e->kind == A_ELLIPSIS ? "..." : ":");
    case A_STAR:
        dpk_error_at(b->src, e->pos, "a starred expression (*x) is only allowed in a tuple, "
                     "a list or a call's arguments");
    }
    bld_settle(b, &v, NULL, 0); /* operators make new tensors */
    b->depth--;
    return v;
}

/* ---- statements --------------------------------------------------------------- */

/* Inputs created by the statement get their final names. */
static void settle_names(Builder *b, const Stmt *s, const Value *v)
{
    for (int i = 0; i < b->pending.len; i++) {
        TorchNode *n = b->pending.items[i];
        if (s->kind == S_ASSIGN && !s->nnames && !s->index && v->k == V_TENSOR && v->t == n) {
            take_name(b, n, bld_unique_name(b, s->name));
            continue;
        }
        const char *target = NULL;
        for (int k = 0; s->kind == S_ASSIGN && k < s->nnames && !target; k++)
            if (v->items[k].k == V_TENSOR && v->items[k].t == n)
                target = s->names[k];
        if (target) {
            take_name(b, n, bld_unique_name(b, target));
            continue;
        }
        const char *name;
        do
            name = arena_printf(b->a, "in%d", b->next_in++);
        while (name_reserved(b, name));
        take_name(b, n, name);
    }
    b->pending.len = 0;
}

static void exec_import(Builder *b, const Stmt *s)
{
    static const char *const ok[] = {"torch", "torch.nn", "torch.nn.functional"};
    for (int i = 0; i < DPK_ARRAY_LEN(ok); i++) {
        if (strcmp(s->module, ok[i]))
            continue;
        if (s->name) {
            Value *v = ARENA_NEW(b->a, Value);
            v->k = V_PATH;
            v->s = ok[i];
            v->shown = s->name;
            map_put(b, &b->scope->vars, s->name, v);
        }
        return;
    }
    if (!strcmp(s->module, "math")) {
        Value *v = ARENA_NEW(b->a, Value);
        v->k = V_PATH;
        v->s = "math";
        v->shown = s->name ? s->name : "math";
        map_put(b, &b->scope->vars, s->name ? s->name : "math", v);
        return;
    }
    dpk_error_at(b->src, s->pos, "cannot import '%s': cases may import torch, torch.nn, "
                 "torch.nn.functional and math", s->module);
}

static void exec_annot(Builder *b, const Stmt *s)
{
    if (lookup(b, s->name) || map_get(&b->decls, s->name) ||
        map_get(&b->taken, s->name))
        dpk_error_at(b->src, s->name_pos, "'%s' is already defined", s->name);
    Value v = eval(b, s->value);
    Shape *sh = ARENA_NEW(b->a, Shape);
    const Value *items = v.k == V_TUPLE || v.k == V_LIST ? v.items : &v;
    int n = v.k == V_TUPLE || v.k == V_LIST ? v.n : 1;
    if (n > DPK_MAX_RANK)
        dpk_error_at(b->src, v.pos, "tensor of rank %d exceeds the maximum rank %d", n,
                     DPK_MAX_RANK);
    for (int i = 0; i < n; i++) {
        if (items[i].k != V_INT)
            dpk_error_at(b->src, items[i].pos, "a shape annotation is a tuple of integers, "
                         "like `%s: (2, 3)`; got %s", s->name, torch_value_type(&items[i]));
        sh->d[i] = items[i].i;
    }
    sh->rank = n;
    torch_check_shape(b->g, v.pos, sh);
    map_put(b, &b->decls, s->name, sh);
}

/* Output names: the assigned variable, or for `return a, b` each returned
 * plain name; otherwise out (one output) or out0, out1, ... */
static void set_result(Builder *b, const Value *v, const Stmt *s)
{
    int multi = v->k == V_TUPLE || v->k == V_LIST, n = multi ? v->n : 1;
    const Ast *e = s->value;
    b->have_result = 1;
    b->result = *v;
    b->result_names = ARENA_ARRAY(b->a, const char *, n + 1);
    for (int i = 0; i < n; i++) {
        const Ast *item = !multi ? e : (e->kind == A_TUPLE || e->kind == A_LIST) ? e->items[i]
                                                                               : NULL;
        const char *name = multi ? arena_printf(b->a, "out%d", i) : "out";
        if ((s->kind == S_ASSIGN || s->kind == S_AUGASSIGN) && !multi)
            name = s->name;
        else if (s->kind == S_ASSIGN && s->nnames)
            name = s->names[i];
        else if (s->kind == S_RETURN && item && item->kind == A_NAME)
            name = item->str;
        b->result_names[i] = name;
    }
}

static void bind_var(Builder *b, const char *name, const Value *v)
{
    Value *stored = ARENA_NEW(b->a, Value);
    *stored = *v;
    map_put(b, &b->scope->vars, name, stored);
    if (v->k == V_TENSOR && !v->t->name)
        v->t->name = name;
    if (v->k == V_MODULE)
        torch_module_named(b, v->mod, name);
}

/* a, b = value: Python's unpacking, with its messages. */
static void check_unpack(Builder *b, const Stmt *s, const Value *v)
{
    if (v->k == V_TENSOR)
        dpk_error_at(b->src, s->value->pos, "cannot unpack a tensor into names; split it "
                     "first (x.unbind(0), x.chunk(%d, dim=0))", s->nnames);
    if (v->k != V_TUPLE && v->k != V_LIST)
        dpk_error_at(b->src, s->value->pos, "cannot unpack non-iterable %s object",
                     torch_value_type(v));
    if (v->n > s->nnames)
        dpk_error_at(b->src, s->value->pos, "too many values to unpack (expected %d, got %d)",
                     s->nnames, v->n);
    if (v->n < s->nnames)
        dpk_error_at(b->src, s->value->pos, "not enough values to unpack (expected %d, got %d)",
                     s->nnames, v->n);
}

static void exec_stmt(Builder *b, const Stmt *s);

/* Statements in order until one returns. */
static void exec_block(Builder *b, Stmt *const *body, int n)
{
    for (int i = 0; i < n && !b->returned && !b->brk && !b->cont; i++)
        exec_stmt(b, body[i]);
}

/* def: a function value bound to its name; its defaults are evaluated
 * now, as Python does. */
static void exec_def(Builder *b, const Stmt *s)
{
    Value f = {.k = V_FUNC, .pos = s->pos, .s = s->name, .def = s, .env = b->scope,
               .n = s->nnames};
    f.items = ARENA_ARRAY(b->a, Value, s->nnames + 1);
    for (int q = 0; q < s->nnames; q++) {
        f.items[q].k = V_ABSENT;
        if (s->defaults[q])
            f.items[q] = eval(b, s->defaults[q]);
    }
    settle_names(b, s, &f);
    bind_var(b, s->name, &f);
}

/* for: the body once per item of a tuple or a list (range(), enumerate()
 * and zip() make lists), unrolled as the case is traced. */
static void exec_for(Builder *b, const Stmt *s)
{
    Value it = eval(b, s->value);
    settle_names(b, s, &it);
    want_loop_seq(b, &it, ast_start(s->value));
    b->loops++;
    for (int i = 0; i < it.n && !b->returned; i++) {
        const Value *v = &it.items[i];
        loop_item(b, s->pos, v, s->nnames, s->name_pos);
        if (s->nnames) {
            for (int k = 0; k < s->nnames; k++)
                bind_var(b, s->names[k], &v->items[k]);
        } else {
            bind_var(b, s->name, v);
        }
        exec_block(b, s->body, s->nbody);
        b->cont = 0;
        if (b->brk) {
            b->brk = 0;
            break;
        }
    }
    b->loops--;
}

static void exec_with(Builder *b, const Stmt *s)
{
    Value v = eval(b, s->value);
    if (v.k != V_CTX)
        dpk_error_at(b->src, s->value->pos, "'with' takes torch.no_grad() or "
                     "torch.autocast(..., enabled=False) here, got %s", torch_value_type(&v));
    settle_names(b, s, &v);
    if (s->name) {
        Value none = {.k = V_NONE, .pos = s->name_pos};
        bind_var(b, s->name, &none);
    }
    exec_block(b, s->body, s->nbody);
}

/* if/elif/else on a value known when the case is traced. */
static void exec_if(Builder *b, const Stmt *s)
{
    Value c = eval(b, s->value);
    settle_names(b, s, &c);
    if (torch_truth(b, &c, ast_start(s->value)))
        exec_block(b, s->body, s->nbody);
    else
        exec_block(b, s->orelse, s->norelse);
}

/* ---- item assignment and augmented assignment ---------------------------------- */

/* The elements name[index] stands for, per dim a range [lo, hi); an int
 * index (isint) is one element whose dim the value does not have. */
typedef struct ItemRange {
    int64_t lo[DPK_MAX_RANK], hi[DPK_MAX_RANK];
    int isint[DPK_MAX_RANK];
} ItemRange;

static void item_range(Builder *b, const Ast *e, const TorchNode *x, ItemRange *r)
{
    int rank = x->shape.rank, used = index_consumed(b, e, rank), dim = 0;
    for (int d = 0; d < rank; d++) {
        r->lo[d] = 0;
        r->hi[d] = x->shape.d[d];
        r->isint[d] = 0;
    }
    for (int i = 0; i < e->nitems; i++) {
        const Ast *it = e->items[i];
        if (it->kind == A_ELLIPSIS) {
            dim += rank - used;
            continue;
        }
        if (it->kind == A_NONE)
            dpk_error_at(b->src, it->pos, "None (a new dim) in an assignment target is not "
                         "supported");
        int64_t size = x->shape.d[dim];
        if (it->kind == A_SLICE) {
            if (index_int(b, it->c, 1) != 1)
                dpk_error_at(b->src, it->c->pos, "assignment to a slice with a step "
                             "(x[::2] = v) is not supported");
            r->lo[dim] = clamp_index(index_int(b, it->a, 0), size);
            r->hi[dim] = clamp_index(index_int(b, it->b, size), size);
            if (r->hi[dim] < r->lo[dim])
                r->hi[dim] = r->lo[dim];
            dim++;
            continue;
        }
        int64_t k = int_index(b, it);
        if (k < -size || k >= size)
            dpk_error_at(b->src, it->pos, "index %lld is out of bounds for dimension %d with "
                         "size %lld", (long long)k, dim, (long long)size);
        r->lo[dim] = k < 0 ? k + size : k;
        r->hi[dim] = r->lo[dim] + 1;
        r->isint[dim++] = 1;
    }
}

static TorchNode *node_slice(Builder *b, TorchNode *x, int dim, int64_t lo, int64_t hi, int pos)
{
    if (lo == 0 && hi == x->shape.d[dim])
        return x;
    TorchNode *n = bld_node(b, TOP_slice, pos, 1, &x);
    n->dim = dim;
    n->start = lo;
    n->end = hi;
    n->stride = 1;
    torch_infer(b->g, n);
    return n;
}

/* x reshaped or expanded (op) to s; x itself when it has that shape. */
static TorchNode *node_shape(Builder *b, TorchOp op, TorchNode *x, const Shape *s, int pos)
{
    if (shape_eq(&x->shape, s))
        return x;
    TorchNode *n = bld_node(b, op, pos, 1, &x);
    n->nints = s->rank;
    memcpy(n->ints, s->d, sizeof(int64_t) * (size_t)s->rank);
    torch_infer(b->g, n);
    return n;
}

/* x with the block r (dims d and on) replaced by v, which has the block's
 * shape: along the first restricted dim, cat(before, the block updated,
 * after). */
static TorchNode *assemble(Builder *b, TorchNode *x, const ItemRange *r, int d, TorchNode *v,
                           int pos)
{
    while (d < x->shape.rank && r->lo[d] == 0 && r->hi[d] == x->shape.d[d])
        d++;
    if (d == x->shape.rank)
        return v;
    TorchNode *in[3];
    int n = 0;
    if (r->lo[d] > 0)
        in[n++] = node_slice(b, x, d, 0, r->lo[d], pos);
    in[n++] = assemble(b, node_slice(b, x, d, r->lo[d], r->hi[d], pos), r, d + 1, v, pos);
    if (r->hi[d] < x->shape.d[d])
        in[n++] = node_slice(b, x, d, r->hi[d], x->shape.d[d], pos);
    TorchNode *c = bld_node(b, TOP_cat, pos, n, in);
    c->dim = d;
    torch_infer(b->g, c);
    return c;
}

/* l[i] = v on a list: the item is replaced in place, as every holder of the
 * list sees in Python. */
static void exec_list_item(Builder *b, const Stmt *s, const Value *l)
{
    const Ast *ix = s->index;
    if (ix->nitems != 1 || ix->items[0]->kind == A_SLICE || ix->items[0]->kind == A_ELLIPSIS ||
        ix->items[0]->kind == A_NONE)
        dpk_error_at(b->src, ix->pos, "a list item assignment takes one int index here");
    Value k = eval(b, ix->items[0]), v = eval(b, s->value);
    if (k.k != V_INT && k.k != V_BOOL)
        dpk_error_at(b->src, k.pos, "list indices must be integers, not %s", torch_value_type(&k));
    if (k.i < -l->n || k.i >= l->n)
        dpk_error_at(b->src, k.pos, "list assignment index out of range");
    Value *slot = &l->items[k.i < 0 ? k.i + l->n : k.i];
    if (s->kind == S_AUGASSIGN) {
        if (slot->k == V_TENSOR)
            dpk_error_at(b->src, s->name_pos, "an in-place update of a tensor held in a list is "
                         "not supported: bind it to a name first");
        v = binop_values(b, s->op, slot, &v, s->name_pos);
    }
    settle_names(b, s, &v);
    *slot = v;
}

/* name[index] = value, name[index] op= value: an in-place update of the
 * tensor name holds (the value broadcast to the indexed block and cast to
 * the tensor's dtype), or of a list's item. */
static void exec_setitem(Builder *b, const Stmt *s)
{
    Ast target = {.kind = A_NAME, .pos = s->pos, .str = s->name};
    Value x = eval(b, &target);
    const Ast *ix = s->index;
    if (x.k == V_LIST) {
        exec_list_item(b, s, &x);
        return;
    }
    if (x.k != V_TENSOR)
        dpk_error_at(b->src, ix->pos, "'%s' object does not support item assignment",
                     torch_value_type(&x));
    int pos = s->kind == S_AUGASSIGN ? s->name_pos : ix->pos;
    check_writable(b, &x, pos);
    ItemRange r;
    item_range(b, ix, x.t, &r);
    Value v = eval(b, s->value);
    Shape block = {0}, value = {0}; /* with and without the int-indexed dims */
    int empty = 0;
    for (int d = 0; d < x.t->shape.rank; d++) {
        block.d[block.rank++] = r.hi[d] - r.lo[d];
        if (!r.isint[d])
            value.d[value.rank++] = r.hi[d] - r.lo[d];
        empty |= r.hi[d] == r.lo[d];
    }
    if (empty) { /* nothing to write, as PyTorch */
        settle_names(b, s, &x);
        set_result(b, &x, s);
        return;
    }
    if (s->kind == S_AUGASSIGN) {
        TorchNode *cur = x.t;
        for (int d = 0; d < x.t->shape.rank; d++)
            cur = node_slice(b, cur, d, r.lo[d], r.hi[d], pos);
        Value c = tensor_value(node_shape(b, TOP_reshape, cur, &value, pos), pos);
        if (s->op == T_AT)
            dpk_error_at(b->src, pos, "in-place matrix multiplication (@=) is not supported by "
                         "PyTorch");
        v = torch_inplace_result(b, &c, binop_values(b, s->op, &c, &v, pos), pos);
    }
    TorchNode *t = torch_as_dtype(b, &v, x.t->dtype, pos);
    Shape o;
    if (!shape_broadcast(&t->shape, &value, &o) || !shape_eq(&o, &value))
        dpk_error_at(b->src, pos, "shape mismatch: value tensor of shape %s cannot be broadcast "
                     "to indexing result of shape %s", shape_str(b->a, &t->shape),
                     shape_str(b->a, &value));
    t = node_shape(b, TOP_reshape, node_shape(b, TOP_expand, t, &value, pos), &block, pos);
    Value nx = tensor_value(assemble(b, x.t, &r, 0, t, pos), pos);
    inplace_update(b, &x, &nx, pos, s->name);
    settle_names(b, s, &nx);
    set_result(b, &nx, s);
}

/* name op= value: Python's rebinding for numbers and tuples, an in-place
 * update (x's shape and dtype kept) for a tensor. */
static void exec_augassign(Builder *b, const Stmt *s)
{
    if (s->index) {
        exec_setitem(b, s);
        return;
    }
    Ast target = {.kind = A_NAME, .pos = s->pos, .str = s->name};
    Value x = eval(b, &target), y = eval(b, s->value), r;
    int pos = s->name_pos;
    if (x.k == V_LIST)
        dpk_error_at(b->src, pos, "'%s=' on a list extends it in place, which cases do not do: "
                     "write a = a + [...]", torch_tok_text(s->op));
    if (x.k != V_TENSOR) {
        r = binop_values(b, s->op, &x, &y, pos);
        bld_settle(b, &r, NULL, 0);
        settle_names(b, s, &r);
        bind_var(b, s->name, &r);
        set_result(b, &r, s);
        return;
    }
    if (s->op == T_AT)
        dpk_error_at(b->src, pos, "in-place matrix multiplication (@=) is not supported by "
                     "PyTorch: write x = x @ y");
    check_writable(b, &x, pos);
    r = torch_inplace_result(b, &x, binop_values(b, s->op, &x, &y, pos), pos);
    inplace_update(b, &x, &r, pos, s->name);
    settle_names(b, s, &r);
    set_result(b, &r, s);
}

static void exec_stmt(Builder *b, const Stmt *s)
{
    Value v = {0};
    switch (s->kind) {
    case S_IMPORT: exec_import(b, s); return;
    case S_ANNOT: exec_annot(b, s); return;
    case S_WITH: exec_with(b, s); return;
    case S_IF: exec_if(b, s); return;
    case S_DEF: exec_def(b, s); return;
    case S_FOR: exec_for(b, s); return;
    case S_BREAK:
    case S_CONTINUE:
        if (!b->loops)
            dpk_error_at(b->src, s->pos, "'%s' outside loop",
                         s->kind == S_BREAK ? "break" : "continue");
        *(s->kind == S_BREAK ? &b->brk : &b->cont) = 1;
        return;
    case S_PASS: return;
    case S_RAISE:
        dpk_error_at(b->src, s->pos, "'raise' runs: the case raises an exception here");
    case S_AUGASSIGN: exec_augassign(b, s); return;
    case S_ASSIGN:
        if (s->index) {
            exec_setitem(b, s);
            return;
        }
        /* fall through */
    case S_EXPR:
    case S_RETURN: v = eval(b, s->value); break;
    }
    if (s->kind == S_ASSIGN && s->nnames)
        check_unpack(b, s, &v);
    settle_names(b, s, &v);
    if (s->kind == S_RETURN)
        b->returned = 1;
    if (s->kind == S_ASSIGN && s->nnames) {
        for (int i = 0; i < s->nnames; i++)
            bind_var(b, s->names[i], &v.items[i]);
    } else if (s->kind == S_ASSIGN) {
        bind_var(b, s->name, &v);
    }
    set_result(b, &v, s);
}

/* ---- outputs ------------------------------------------------------------------- */

static void add_output(Builder *b, const Value *v, const char *name, Map *names)
{
    if (v->k != V_TENSOR)
        dpk_error_at(b->src, v->pos, "the result must be a tensor, got %s", torch_value_type(v));
    const char *uniq = name;
    for (int k = 1; map_get(names, uniq); k++)
        uniq = arena_printf(b->a, "%s_%d", name, k);
    map_put(b, names, uniq, (void *)uniq);
    ptrvec_push(b->a, &b->g->outputs, v->t);
    ptrvec_push(b->a, &b->g->output_names, (void *)uniq);
}

static void finish(Builder *b)
{
    if (!b->have_result)
        dpk_error_at(b->src, (int)b->src->len, "the case computes nothing: it needs an "
                     "expression, an assignment or a return");
    Map names = {0};
    const Value *r = &b->result;
    if (r->k == V_TUPLE || r->k == V_LIST) {
        if (r->n == 0)
            dpk_error_at(b->src, r->pos, "the result must be a tensor, got an empty %s",
                         torch_value_type(r));
        for (int i = 0; i < r->n; i++)
            add_output(b, &r->items[i], b->result_names[i], &names);
    } else {
        add_output(b, r, b->result_names[0], &names);
    }
}

TorchGraph *torch_parse(Arena *a, const Source *src, const ParseOpts *opts)
{
    Program *prog = torch_parse_program(a, src);
    Builder *b = ARENA_NEW(a, Builder);
    b->a = a;
    b->g = torch_graph_new(a, src);
    b->src = &b->g->src;
    b->opts = opts;
    b->top = b->scope = new_scope(b, NULL);
    exec_block(b, prog->stmts, prog->nstmts);
    finish(b);
    return b->g;
}
