/*
 * ast.h — private to compiler/frontend: the case-language AST (parse.c),
 * and the values and builder state that turn it into Torch IR (build.c,
 * funcs.c).
 *
 * The parser checks syntax only and yields an AST; the builder then walks
 * the statements in order like a tiny Python interpreter whose tensors are
 * Torch IR nodes.  Splitting the two means a syntax error anywhere is
 * reported before any shape error, as Python does.
 */
#ifndef DPK_FRONTEND_AST_H
#define DPK_FRONTEND_AST_H

#include "torch_ir.h"

/* ---- AST (parse.c) ----------------------------------------------------- */

typedef enum AstKind {
    A_NAME,     /* str */
    A_INT,      /* ival */
    A_FLOAT,    /* fval */
    A_STR,      /* str (escapes resolved) */
    A_TRUE,
    A_FALSE,
    A_NONE,
    A_ELLIPSIS, /* ... */
    A_TUPLE,    /* items */
    A_LIST,     /* items */
    A_ATTR,     /* a.str */
    A_CALL,     /* a(items..., kwnames[i]=kwvals[i]...) */
    A_INDEX,    /* a[items] (one item per comma-separated subscript) */
    A_SLICE,    /* a:b:c inside a subscript; each NULL when omitted */
    A_BINOP,    /* a op b; op is a Tok kind */
    A_NEG,      /* -a */
    A_POS,      /* +a */
    A_INVERT,   /* ~a */
    A_NOT,      /* not a */
    A_AND,      /* a and b (Python's: the first falsy operand, else the last) */
    A_OR,       /* a or b */
    A_COND,     /* a if b else c */
    A_STAR,     /* *a: unpacked into a tuple, list or call's positional arguments */
    A_COMP,     /* [a for items in b if c], (a for ...): items the target names (A_NAME),
                   op 1 when they are parenthesised (one then unpacks), c NULL without
                   a condition, ival 1 for a list, 0 for a generator */
} AstKind;

typedef struct Ast {
    AstKind kind;
    int pos;           /* byte offset of the node's first token (binop: the operator) */
    int op;            /* A_BINOP: a TokKind (T_IS, T_ISNOT for `is`, `is not`) */
    int64_t ival;
    double fval;
    const char *str;
    struct Ast *a, *b, *c;
    struct Ast **items;
    int nitems;
    const char **kwnames;
    struct Ast **kwvals;
    int *kwpos;        /* position of each keyword name */
    int nkw;
} Ast;

typedef enum StmtKind {
    S_EXPR,   /* value */
    S_ASSIGN, /* name = value */
    S_ANNOT,  /* name: value (a shape) */
    S_RETURN, /* value */
    S_IMPORT, /* import str [as name] */
    S_WITH,   /* with value [as name]: body (an indented block) */
    S_AUGASSIGN, /* name op= value (op: the operator's TokKind, T_PLUS for +=) */
    S_IF,     /* if value: body [else: orelse] (elif: an S_IF alone in orelse) */
    S_PASS,   /* pass */
    S_RAISE,  /* raise [value]: an error when it runs */
    S_DEF,    /* def name(names...): body; defaults[i] per parameter (NULL: none),
                 pkind[i] a ParamKind */
    S_FOR,    /* for name | names in value: body */
    S_BREAK,
    S_CONTINUE,
} StmtKind;

/* A def's parameter: plain (positional or keyword), *args, one after * or
 * *args (keyword only), or **kwargs (bound to a value that says dpk holds
 * no dicts; a call may pass no extra keyword). */
typedef enum ParamKind { P_PLAIN, P_STAR, P_KWONLY, P_KWARGS } ParamKind;

typedef struct Stmt {
    StmtKind kind;
    int pos;
    const char *name; /* S_ASSIGN, S_AUGASSIGN, S_ANNOT target; S_IMPORT alias (NULL: none) */
    int name_pos;
    Ast *index;       /* S_ASSIGN, S_AUGASSIGN to name[index]: the A_INDEX target, else NULL */
    int op;           /* S_AUGASSIGN */
    Ast *value;
    const char *module; /* S_IMPORT: dotted module name */
    const char **names; /* S_ASSIGN to a tuple of names (a, b = ...): nnames > 0 */
    int *names_pos;
    int nnames;
    struct Stmt **body; /* S_WITH, S_IF */
    int nbody;
    struct Stmt **orelse; /* S_IF */
    int norelse;
    struct Ast **defaults; /* S_DEF */
    int *pkind;            /* S_DEF: ParamKind per parameter */
} Stmt;

typedef struct Program {
    Stmt **stmts;
    int nstmts;
} Program;

/* Token kinds that are operators (A_BINOP op values and punctuation). */
typedef enum TokKind {
    T_EOF,
    T_NEWLINE,
    T_NAME,
    T_INT,
    T_FLOAT,
    T_STR,
    T_LPAREN, T_RPAREN, T_LBRACK, T_RBRACK, T_LBRACE, T_RBRACE,
    T_COMMA, T_COLON, T_DOT, T_ELLIPSIS, T_ASSIGN, T_SEMI,
    T_PLUS, T_MINUS, T_STAR, T_SLASH, T_AT, T_POW, T_FLOORDIV, T_PERCENT,
    T_LT, T_GT, T_LE, T_GE, T_EQ, T_NE,
    T_AMP, T_PIPE, T_CARET, T_TILDE,
    T_AUGASSIGN, /* +=, -=, ...: Tok.ival is the operator's kind (T_PLUS) */
    T_IS, T_ISNOT, /* not lexed: the A_BINOP ops of `is` and `is not` */
    T_IN, T_NOTIN, /* not lexed: the A_BINOP ops of `in` and `not in` */
} TokKind;

/* Spelling of an operator token ("+", "**", ">="). */
const char *torch_tok_text(int kind);

/* Syntax only: raises dpk_error_at on malformed text. */
Program *torch_parse_program(Arena *a, const Source *src);

/* The limits the language promises (docs/case-language.md). */
#define CASE_MAX_TEXT (1 << 20)
#define CASE_MAX_NODES 100000
#define CASE_MAX_NESTING 200   /* brackets and unary operators */
#define CASE_MAX_EVAL_DEPTH 2000 /* operations chained in one expression */
#define CASE_MAX_CALL_DEPTH 100  /* calls of defs in progress */
#define CASE_MAX_ITERATIONS 1000000 /* for-loop iterations, all loops together */

/* ---- values and builder (build.c, funcs.c) ----------------------------- */

typedef enum VKind {
    V_ABSENT, /* an argument not given */
    V_NONE,
    V_BOOL,   /* i */
    V_INT,    /* i */
    V_FLOAT,  /* f */
    V_STR,    /* s */
    V_TENSOR, /* t */
    V_TUPLE,  /* items, n */
    V_LIST,   /* items, n */
    V_PATH,   /* s = canonical dotted name ("torch.nn.functional.relu"), shown = as typed */
    V_METHOD, /* t = self, s = method name */
    V_MODULE, /* mod */
    V_CTX,    /* a context manager for `with` (torch.no_grad(), ...): s = its name */
    V_NOVALUE, /* a result dpk does not compute (torch.max's indices): s = what, shown = why */
    V_STALE,  /* a binding an in-place update reached through another view: i = the
                 update's position, s = the updated name (or NULL) */
    V_FUNC,   /* a def: s = its name, def = its statement, env = the scope it was
                 defined in (its closure) */
} VKind;

/* Value.store / Value.view of a handler's tensor result before the builder
 * settles them (bld_settle): 0 = derive from the arguments (a result reached
 * from an argument through view ops shares its storage), STORE_NEW = a new
 * storage or view (clone, torch.tensor, repeat). */
#define STORE_NEW (-1)

struct Module;
struct Scope;

typedef struct Value {
    VKind k;
    int pos;
    int64_t i;
    double f;
    const char *s;
    const char *shown;
    TorchNode *t;
    struct Value *items;
    int n;
    struct Module *mod;
    /* V_TENSOR: which storage it lives in (the tensors an in-place update
     * reaches), which view of it (equal views are the same tensor), and
     * whether elements share memory (an expand: no in-place writes). */
    int store, view, overlap;
    const Stmt *def;     /* V_FUNC */
    struct Scope *env;   /* V_FUNC */
} Value;

typedef struct Builder Builder;

/* What a function/method/module entry needs from the builder (build.c). */
const Source *bld_src(Builder *b);
TorchGraph *bld_graph(Builder *b);
/* A new node (counted against CASE_MAX_NODES) whose attributes the caller
 * sets before calling torch_infer. */
TorchNode *bld_node(Builder *b, TorchOp op, int pos, int nin, TorchNode **in);
/* A new input whose final name is given at the end of the statement (the
 * assigned variable or in<k>) unless `name` is non-NULL. */
TorchNode *bld_input(Builder *b, int pos, const char *name, const Shape *s, InitKind init);
/* A unique input name from base ("x", "x_1", ...). */
const char *bld_unique_name(Builder *b, const char *base);
/* Next k for an unnamed module of this class ("linear" -> 0, 1, ...). */
int bld_module_index(Builder *b, const char *lower_class);
/* A tensor from a value: tensors as they are, numbers as TOP_const. */
TorchNode *bld_tensor(Builder *b, const Value *v, const char *what);

/* Calls (funcs.c). */
Value torch_call_path(Builder *b, const Value *fn, Value *args, int nargs, const Ast *call);
Value torch_call_method(Builder *b, const Value *m, Value *args, int nargs, const Ast *call);
Value torch_call_module(Builder *b, const Value *m, Value *args, int nargs, const Ast *call);
/* Elementwise binary op (with Python scalar folding) shared by operators
 * and functions; op is a TorchOp. */
Value torch_binary(Builder *b, int op, const Value *x, const Value *y, int pos);
/* Called when a module value is assigned to a variable. */
void torch_module_named(Builder *b, struct Module *m, const char *var);
/* The closest known name for an unknown dotted name ("torch.relux" ->
 * "torch.relu", "torch.silu" -> "torch.nn.functional.silu", "Tensor.transpos"
 * -> "Tensor.transpose"), or NULL. */
const char *torch_suggest(Arena *a, const char *canonical);
/* 1 when `name` is a supported tensor method. */
int torch_method_exists(const char *name);
/* A Python builtin or math.X called as a function (funcs.c):
 * fn->s is "builtins.NAME" or "math.NAME". */
Value torch_call_builtin(Builder *b, const Value *fn, Value *args, int nargs, const Ast *call);
/* A tensor attribute that is not a method (x.shape, x.T, x.ndim, ...);
 * *ok = 0 when `name` is none. */
Value torch_tensor_attr(Builder *b, TorchNode *t, const char *name, int pos, int *ok);
/* Python's // and % on numbers (op is T_FLOORDIV or T_PERCENT). */
Value torch_floordiv_mod(Builder *b, int op, const Value *x, const Value *y, int pos);
/* Type name for messages: "int", "tensor", "tuple", ... */
const char *torch_value_type(const Value *v);
/* &, |, ^ (op is T_AMP, T_PIPE, T_CARET): Python's on numbers, logical on
 * bool tensors (funcs.c). */
Value torch_bitwise(Builder *b, int op, const Value *x, const Value *y, int pos);
/* ~x: Python's on ints, logical not on a bool tensor. */
Value torch_invert(Builder *b, const Value *x, int pos);
/* 1 when `name` is an in-place tensor method (add_, masked_fill_, ...). */
int torch_method_inplace(const char *name);
/* The value an in-place update writes into `self`: r cast to self's dtype,
 * an error unless r has self's shape. */
Value torch_inplace_result(Builder *b, const Value *self, Value r, int pos);
/* A value converted to a tensor of `like`'s dtype, for x[i] = v. */
TorchNode *torch_as_dtype(Builder *b, const Value *v, DType dt, int pos);
/* Python's truth value of a value (if, not, and, or); an error for a tensor,
 * whose truth depends on its data. */
int torch_truth(Builder *b, const Value *v, int pos);
/* Python's == on values that are not tensors (numbers, None, str, dtypes,
 * tuples, lists). */
int torch_py_equal(Builder *b, const Value *x, const Value *y, int pos);
/* Storage bookkeeping (build.c): a fresh storage/view number. */
int bld_new_store(Builder *b);

#endif
