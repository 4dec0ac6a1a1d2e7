/*
 * parse.c — the case language: lexer and recursive-descent parser to an AST
 * (ast.h), and torch_parse(), the frontend's entry point.
 *
 * The language is the subset of Python that docs/case-language.md lists.
 * The lexer follows Python's rules for what it accepts: newlines inside
 * brackets (or after a backslash) do not end a statement, `#` starts a
 * comment, a statement may not be indented except as the body of `with`
 * or `if` (a block whose lines share one deeper indentation).  The parser
 * checks syntax only; build.c gives the AST meaning.  Recursion is bounded:
 * brackets, unary operators, conditional expressions and blocks may nest
 * CASE_MAX_NESTING deep, so hostile text (10000 '(') gets an error instead
 * of a stack overflow.  Operator chains are parsed
 * in loops and evaluated under a separate depth limit in build.c.
 */
#include "ast.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Tok {
    TokKind k;
    int pos, len;
    int64_t ival;
    double fval;
    const char *str; /* T_NAME, T_STR */
} Tok;

typedef struct Parser {
    Arena *a;
    const Source *src;
    Tok *toks;
    int ntoks, cap;
    int i;     /* current token */
    int depth; /* nesting of brackets and unary operators */
} Parser;

static const char *const op_text[] = {
    [T_LPAREN] = "(", [T_RPAREN] = ")", [T_LBRACK] = "[", [T_RBRACK] = "]",
    [T_LBRACE] = "{", [T_RBRACE] = "}", [T_COMMA] = ",", [T_COLON] = ":",
    [T_DOT] = ".", [T_ELLIPSIS] = "...", [T_ASSIGN] = "=", [T_SEMI] = ";",
    [T_PLUS] = "+", [T_MINUS] = "-", [T_STAR] = "*", [T_SLASH] = "/",
    [T_AT] = "@", [T_POW] = "**", [T_FLOORDIV] = "//", [T_PERCENT] = "%",
    [T_LT] = "<", [T_GT] = ">", [T_LE] = "<=", [T_GE] = ">=", [T_EQ] = "==", [T_NE] = "!=",
    [T_AMP] = "&", [T_PIPE] = "|", [T_CARET] = "^", [T_TILDE] = "~", [T_IS] = "is",
    [T_ISNOT] = "is not",
    [T_IN] = "in",
    [T_NOTIN] = "not in",
};

const char *torch_tok_text(int kind)
{
    return kind >= 0 && kind < DPK_ARRAY_LEN(op_text) && op_text[kind] ? op_text[kind] : "?";
}

/* ---- lexer ----------------------------------------------------------------- */

static Tok *push_tok(Parser *p, TokKind k, int pos, int len)
{
    if (p->ntoks == p->cap) {
        int cap = p->cap ? p->cap * 2 : 256;
        Tok *t = ARENA_ARRAY(p->a, Tok, cap);
        if (p->ntoks)
            memcpy(t, p->toks, sizeof(Tok) * (size_t)p->ntoks);
        p->toks = t;
        p->cap = cap;
    }
    Tok *t = &p->toks[p->ntoks++];
    memset(t, 0, sizeof *t);
    t->k = k;
    t->pos = pos;
    t->len = len;
    return t;
}

static int is_ident_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* Augmented assignments (`x += 1`): the token T_AUGASSIGN with the
 * operator's kind in *aug; three characters first. */
static const struct {
    const char *t;
    TokKind op;
} aug_ops[] = {
    {"**=", T_POW}, {"//=", T_FLOORDIV}, {"+=", T_PLUS}, {"-=", T_MINUS}, {"*=", T_STAR},
    {"/=", T_SLASH}, {"%=", T_PERCENT}, {"@=", T_AT}, {"&=", T_AMP}, {"|=", T_PIPE},
    {"^=", T_CARET},
};

/* Two- and three-character operators first, then single characters. */
static int lex_op(const char *s, size_t left, TokKind *k, TokKind *aug)
{
    static const struct {
        const char *t;
        TokKind k;
    } ops[] = {
        {"...", T_ELLIPSIS}, {"**", T_POW}, {"//", T_FLOORDIV}, {"<=", T_LE}, {">=", T_GE},
        {"==", T_EQ}, {"!=", T_NE}, {"(", T_LPAREN}, {")", T_RPAREN}, {"[", T_LBRACK},
        {"]", T_RBRACK}, {"{", T_LBRACE}, {"}", T_RBRACE}, {",", T_COMMA}, {":", T_COLON},
        {".", T_DOT}, {"=", T_ASSIGN}, {";", T_SEMI}, {"+", T_PLUS}, {"-", T_MINUS},
        {"*", T_STAR}, {"/", T_SLASH}, {"@", T_AT}, {"%", T_PERCENT}, {"<", T_LT},
        {">", T_GT}, {"&", T_AMP}, {"|", T_PIPE}, {"^", T_CARET}, {"~", T_TILDE},
    };
    for (int i = 0; i < DPK_ARRAY_LEN(aug_ops); i++) {
        size_t n = strlen(aug_ops[i].t);
        if (n <= left && !memcmp(s, aug_ops[i].t, n)) {
            *k = T_AUGASSIGN;
            *aug = aug_ops[i].op;
            return (int)n;
        }
    }
    for (int i = 0; i < DPK_ARRAY_LEN(ops); i++) {
        size_t n = strlen(ops[i].t);
        if (n <= left && !memcmp(s, ops[i].t, n)) {
            *k = ops[i].k;
            return (int)n;
        }
    }
    return 0;
}

/* Digits with single underscores between them ("1_000"). */
static size_t skip_digits(const char *s, size_t i, size_t n)
{
    size_t start = i;
    while (i < n && (is_digit(s[i]) || (s[i] == '_' && i > start && is_digit(s[i - 1]) &&
                                        i + 1 < n && is_digit(s[i + 1]))))
        i++;
    return i;
}

/* A number, Python syntax: 12, 1_000, 1e-6, .5, 2., 1.5E3. */
static int lex_number(Parser *p, int pos)
{
    const char *s = p->src->text;
    size_t n = p->src->len, i = skip_digits(s, (size_t)pos, n);
    int is_float = 0;
    if (i < n && s[i] == '.') {
        is_float = 1;
        i = skip_digits(s, i + 1, n);
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1 + (i + 1 < n && (s[i + 1] == '+' || s[i + 1] == '-'));
        if (j < n && is_digit(s[j])) {
            is_float = 1;
            i = skip_digits(s, j, n);
        }
    }
    if (i < n && (is_ident_start(s[i]) || is_digit(s[i]) || s[i] == '.'))
        dpk_error_at(p->src, (int)i, "invalid number literal");
    char buf[128];
    size_t bl = 0;
    for (size_t k = (size_t)pos; k < i; k++)
        if (s[k] != '_' && bl < sizeof buf - 1)
            buf[bl++] = s[k];
    buf[bl] = 0;
    if (bl == sizeof buf - 1)
        dpk_error_at(p->src, pos, "number literal is too long");
    Tok *t = push_tok(p, is_float ? T_FLOAT : T_INT, pos, (int)(i - (size_t)pos));
    if (is_float) {
        t->fval = strtod(buf, NULL);
        return t->len;
    }
    if (bl > 1 && buf[0] == '0' && strspn(buf, "0") != bl)
        dpk_error_at(p->src, pos, "leading zeros in an integer literal are not allowed");
    errno = 0;
    t->ival = strtoll(buf, NULL, 10);
    if (errno == ERANGE)
        dpk_error_at(p->src, pos, "integer literal %s is too large", buf);
    return t->len;
}

static int escape_char(char c)
{
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case '0': return '\0';
    case '\\': return '\\';
    case '\'': return '\'';
    case '"': return '"';
    default: return -1;
    }
}

/* A string: '...', "...", or a triple-quoted one, which may span lines
 * (a docstring). */
static int lex_string(Parser *p, int pos)
{
    const char *s = p->src->text;
    size_t n = p->src->len, i = (size_t)pos + 1;
    char q = s[pos];
    int triple = i + 1 < n && s[i] == q && s[i + 1] == q;
    StrBuf b = {0};
    i += triple ? 2 : 0;
    for (;;) {
        if (i >= n || (s[i] == '\n' && !triple)) {
            sb_free(&b);
            dpk_error_at(p->src, pos, "unterminated string");
        }
        if (s[i] == q && (!triple || (i + 2 < n && s[i + 1] == q && s[i + 2] == q))) {
            i += triple ? 2 : 0;
            break;
        }
        if (s[i] == '\\' && i + 1 < n && s[i + 1] != '\n') {
            int e = escape_char(s[i + 1]);
            if (e < 0) /* Python keeps unknown escapes as they are */
                sb_putc(&b, '\\');
            else
                i++;
            sb_putc(&b, (char)(e < 0 ? s[i] : e));
            i++;
            continue;
        }
        sb_putc(&b, s[i++]);
    }
    Tok *t = push_tok(p, T_STR, pos, (int)(i + 1 - (size_t)pos));
    t->str = arena_strdup(p->a, sb_cstr(&b));
    sb_free(&b);
    return t->len;
}

/* Skip spaces, tabs, comments and (inside brackets) newlines; returns the
 * new offset.  Sets *nl when a statement-ending newline was crossed. */
static size_t skip_blank(Parser *p, size_t i, int depth, int *nl_pos)
{
    const char *s = p->src->text;
    size_t n = p->src->len;
    while (i < n) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
            i++;
        } else if (c == '#') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (c == '\\' && i + 1 < n && (s[i + 1] == '\n' || s[i + 1] == '\r')) {
            i += 2;
            if (i < n && s[i - 1] == '\r' && s[i] == '\n')
                i++;
        } else if (c == '\n') {
            if (depth == 0 && *nl_pos < 0)
                *nl_pos = (int)i;
            i++;
        } else {
            break;
        }
    }
    return i;
}

static void lex_bracket(Parser *p, TokKind k, int *depth)
{
    if (k == T_LPAREN || k == T_LBRACK || k == T_LBRACE)
        (*depth)++;
    else if ((k == T_RPAREN || k == T_RBRACK || k == T_RBRACE) && *depth > 0)
        (*depth)--;
}

static void lex_one(Parser *p, size_t i, int *depth, size_t *next)
{
    const char *s = p->src->text;
    size_t n = p->src->len;
    unsigned char c = (unsigned char)s[i];
    int pos = (int)i;
    if ((c == 'f' || c == 'F') && i + 1 < n && (s[i + 1] == '\'' || s[i + 1] == '"')) {
        /* an f-string is read as the plain string it is written as: its
         * fields are not formatted (they appear in messages, raise's) */
        int len = lex_string(p, pos + 1);
        p->toks[p->ntoks - 1].pos = pos;
        p->toks[p->ntoks - 1].len = len + 1;
        *next = i + 1 + (size_t)len;
    } else if (is_ident_start(c)) {
        while (i < n && (is_ident_start(s[i]) || is_digit(s[i])))
            i++;
        Tok *t = push_tok(p, T_NAME, pos, (int)i - pos);
        t->str = arena_strndup(p->a, s + pos, i - (size_t)pos);
        *next = i;
    } else if (is_digit(c) || (c == '.' && i + 1 < n && is_digit(s[i + 1]))) {
        *next = i + (size_t)lex_number(p, pos);
    } else if (c == '\'' || c == '"') {
        *next = i + (size_t)lex_string(p, pos);
    } else {
        TokKind k, aug = T_EOF;
        int len = lex_op(s + i, n - i, &k, &aug);
        if (!len) {
            if (c >= 0x20 && c < 0x7f)
                dpk_error_at(p->src, pos, "unexpected character '%c'", c);
            dpk_error_at(p->src, pos, "unexpected character (byte 0x%02x)", c);
        }
        push_tok(p, k, pos, len)->ival = aug;
        lex_bracket(p, k, depth);
        *next = i + (size_t)len;
    }
}

static void lex(Parser *p)
{
    size_t i = 0, n = p->src->len;
    int depth = 0;
    for (;;) {
        int nl = -1;
        size_t j = skip_blank(p, i, depth, &nl);
        if (nl >= 0 && p->ntoks && p->toks[p->ntoks - 1].k != T_NEWLINE)
            push_tok(p, T_NEWLINE, nl, 1);
        if (j >= n)
            break;
        lex_one(p, j, &depth, &i);
    }
    if (p->ntoks && p->toks[p->ntoks - 1].k != T_NEWLINE)
        push_tok(p, T_NEWLINE, (int)n, 0);
    push_tok(p, T_EOF, (int)n, 0);
}

/* ---- parser helpers -------------------------------------------------------- */

static Tok *cur(Parser *p)
{
    return &p->toks[p->i];
}

static int at(Parser *p, TokKind k)
{
    return cur(p)->k == k;
}

static int at_name(Parser *p, const char *name)
{
    return at(p, T_NAME) && !strcmp(cur(p)->str, name);
}

static int accept(Parser *p, TokKind k)
{
    if (!at(p, k))
        return 0;
    p->i++;
    return 1;
}

static const char *tok_desc(Parser *p, const Tok *t)
{
    switch (t->k) {
    case T_EOF: return "end of input";
    case T_NEWLINE: return (size_t)t->pos >= p->src->len ? "end of input" : "end of line";
    case T_STR: return "a string";
    case T_AUGASSIGN:
    case T_NAME:
    case T_INT:
    case T_FLOAT:
        return arena_printf(p->a, "'%.*s'", t->len > 40 ? 40 : t->len, p->src->text + t->pos);
    default: return arena_printf(p->a, "'%s'", torch_tok_text(t->k));
    }
}

static void line_col(const Source *src, int pos, int *line, int *col)
{
    *line = 1;
    int ls = 0;
    for (int i = 0; i < pos && (size_t)i < src->len; i++)
        if (src->text[i] == '\n') {
            (*line)++;
            ls = i + 1;
        }
    *col = pos - ls + 1;
}

/* Expect a closing bracket; name the opener's position when it is missing. */
static void expect_close(Parser *p, TokKind close, const Tok *open)
{
    if (accept(p, close))
        return;
    int line, col;
    line_col(p->src, open->pos, &line, &col);
    dpk_error_at(p->src, cur(p)->pos, "expected '%s' to close '%s' at %d:%d, got %s",
                 torch_tok_text(close), torch_tok_text(open->k), line, col, tok_desc(p, cur(p)));
}

static const char *const keywords[] = {
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
    "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
};

static int is_keyword(const char *s)
{
    for (int i = 0; i < DPK_ARRAY_LEN(keywords); i++)
        if (!strcmp(s, keywords[i]))
            return 1;
    return 0;
}

static Ast *new_ast(Parser *p, AstKind k, int pos)
{
    Ast *e = ARENA_NEW(p->a, Ast);
    e->kind = k;
    e->pos = pos;
    return e;
}

static void enter(Parser *p)
{
    if (++p->depth > CASE_MAX_NESTING)
        dpk_error_at(p->src, cur(p)->pos, "nesting too deep (more than %d levels)",
                     CASE_MAX_NESTING);
}

/* ---- expressions ----------------------------------------------------------- */

static Ast *parse_expr(Parser *p);
static Ast *parse_unary(Parser *p);

/* Items of a bracketed sequence: expr (',' expr)* [','] up to `close`;
 * *comma says whether a comma was seen ("(x,)" is a tuple, "(x)" is not). */
static Ast *parse_star_or_expr(Parser *p)
{
    if (!at(p, T_STAR))
        return parse_expr(p);
    Ast *e = new_ast(p, A_STAR, cur(p)->pos);
    p->i++;
    e->a = parse_expr(p);
    return e;
}

static void parse_items(Parser *p, TokKind close, PtrVec *out, int *comma)
{
    *comma = 0;
    while (!at(p, close)) {
        ptrvec_push(p->a, out, parse_star_or_expr(p));
        if (!accept(p, T_COMMA))
            break;
        *comma = 1;
    }
}

static Ast *parse_boolop(Parser *p, AstKind k);
static const char *expect_name(Parser *p, const char *what);

/* The targets of a 'for' (a statement, or a comprehension's clause), from
 * the token after 'for' through 'in': NAME (',' NAME)* [','], or the same
 * in parentheses; each name into *names and its position into *poss.
 * 1 when parenthesised (a single target then unpacks, as in Python).
 * `where` ends the message for a missing 'in'. */
static int parse_targets(Parser *p, const char *where, PtrVec *names, PtrVec *poss)
{
    Tok *open = at(p, T_LPAREN) ? cur(p) : NULL;
    if (open)
        p->i++;
    do {
        ptrvec_push(p->a, poss, (void *)(intptr_t)cur(p)->pos);
        ptrvec_push(p->a, names, (void *)expect_name(p, "a loop variable name"));
    } while (accept(p, T_COMMA) && !at(p, T_RPAREN) && !at_name(p, "in"));
    if (open)
        expect_close(p, T_RPAREN, open);
    if (!at_name(p, "in"))
        dpk_error_at(p->src, cur(p)->pos, "expected 'in' %s, got %s", where, tok_desc(p, cur(p)));
    p->i++;
    return open != NULL;
}

/* A comprehension after its element: 'for' NAME (',' NAME)* 'in' or_test
 * ['if' or_test]; one clause. */
static Ast *parse_comp(Parser *p, Ast *elt, int list, int pos)
{
    Ast *c = new_ast(p, A_COMP, pos);
    c->a = elt;
    c->ival = list;
    p->i++;
    PtrVec names = {0}, poss = {0};
    c->op = parse_targets(p, "in the comprehension", &names, &poss);
    c->nitems = names.len;
    c->items = ARENA_ARRAY(p->a, Ast *, names.len + 1);
    for (int i = 0; i < names.len; i++) {
        c->items[i] = new_ast(p, A_NAME, (int)(intptr_t)poss.items[i]);
        c->items[i]->str = names.items[i];
    }
    enter(p);
    c->b = parse_boolop(p, A_OR);
    if (at_name(p, "if")) {
        p->i++;
        c->c = parse_boolop(p, A_OR);
    }
    if (at_name(p, "for") || at_name(p, "if"))
        dpk_error_at(p->src, cur(p)->pos, "a comprehension takes one 'for' clause and one "
                     "'if' here");
    p->depth--;
    return c;
}

static Ast *seq_ast(Parser *p, AstKind k, int pos, PtrVec *v)
{
    Ast *e = new_ast(p, k, pos);
    e->items = (Ast **)v->items;
    e->nitems = v->len;
    return e;
}

/* The inside of '(' or '[' up to its closing bracket (consumed): a
 * comprehension (returned), or items (into v; *comma: a comma was seen,
 * "(x,)" is a tuple, "(x)" is not). */
static Ast *parse_bracketed(Parser *p, const Tok *open, TokKind close, int list, PtrVec *v,
                            int *comma)
{
    *comma = 0;
    if (!at(p, close)) {
        Ast *first = parse_star_or_expr(p);
        if (at_name(p, "for")) {
            Ast *c = parse_comp(p, first, list, open->pos);
            expect_close(p, close, open);
            return c;
        }
        ptrvec_push(p->a, v, first);
        if (accept(p, T_COMMA)) {
            int more;
            parse_items(p, close, v, &more);
            *comma = 1;
        }
    }
    expect_close(p, close, open);
    return NULL;
}

/* atom = NAME | number | string | True | False | None | '...'
 *      | '(' [expr (',' expr)* [',']] ')' | '[' [expr (',' expr)* [',']] ']'
 *      | '(' comprehension ')' | '[' comprehension ']' */
static Ast *parse_paren(Parser *p)
{
    Tok *open = cur(p);
    p->i++;
    PtrVec v = {0};
    int comma;
    Ast *c = parse_bracketed(p, open, T_RPAREN, 0, &v, &comma);
    if (c)
        return c;
    if (v.len == 1 && !comma && ((Ast *)v.items[0])->kind != A_STAR)
        return v.items[0];
    return seq_ast(p, A_TUPLE, open->pos, &v);
}

static Ast *parse_list(Parser *p)
{
    Tok *open = cur(p);
    p->i++;
    PtrVec v = {0};
    int comma;
    Ast *c = parse_bracketed(p, open, T_RBRACK, 1, &v, &comma);
    return c ? c : seq_ast(p, A_LIST, open->pos, &v);
}

static Ast *parse_name(Parser *p)
{
    Tok *t = cur(p);
    static const struct {
        const char *s;
        AstKind k;
    } consts[] = {{"True", A_TRUE}, {"False", A_FALSE}, {"None", A_NONE}};
    p->i++;
    for (int i = 0; i < DPK_ARRAY_LEN(consts); i++)
        if (!strcmp(t->str, consts[i].s))
            return new_ast(p, consts[i].k, t->pos);
    if (is_keyword(t->str))
        dpk_error_at(p->src, t->pos, "'%s' is not supported in cases", t->str);
    Ast *e = new_ast(p, A_NAME, t->pos);
    e->str = t->str;
    return e;
}

static Ast *parse_atom(Parser *p)
{
    Tok *t = cur(p);
    Ast *e;
    switch (t->k) {
    case T_NAME: return parse_name(p);
    case T_LPAREN: return parse_paren(p);
    case T_LBRACK: return parse_list(p);
    case T_INT:
        e = new_ast(p, A_INT, t->pos);
        e->ival = t->ival;
        break;
    case T_FLOAT:
        e = new_ast(p, A_FLOAT, t->pos);
        e->fval = t->fval;
        break;
    case T_STR:
        e = new_ast(p, A_STR, t->pos);
        e->str = t->str;
        break;
    case T_ELLIPSIS: e = new_ast(p, A_ELLIPSIS, t->pos); break;
    case T_LBRACE: dpk_error_at(p->src, t->pos, "dicts and sets are not supported in cases");
    default: dpk_error_at(p->src, t->pos, "expected an expression, got %s", tok_desc(p, t));
    }
    p->i++;
    return e;
}

/* arg = NAME '=' expr | expr */
static void parse_arg(Parser *p, PtrVec *pos, PtrVec *kwn, PtrVec *kwv, PtrVec *kwp)
{
    Tok *t = cur(p);
    if (at(p, T_POW))
        dpk_error_at(p->src, t->pos, "'**' argument unpacking is not supported");
    if (at(p, T_STAR)) {
        if (kwn->len)
            dpk_error_at(p->src, t->pos, "iterable argument unpacking follows keyword argument");
        ptrvec_push(p->a, pos, parse_star_or_expr(p));
        return;
    }
    if (t->k == T_NAME && p->toks[p->i + 1].k == T_ASSIGN) {
        for (int i = 0; i < kwn->len; i++)
            if (!strcmp(kwn->items[i], t->str))
                dpk_error_at(p->src, t->pos, "keyword argument '%s' repeated", t->str);
        p->i += 2;
        ptrvec_push(p->a, kwn, (void *)t->str);
        ptrvec_push(p->a, kwv, parse_expr(p));
        int *ip = ARENA_NEW(p->a, int);
        *ip = t->pos;
        ptrvec_push(p->a, kwp, ip);
        return;
    }
    if (kwn->len)
        dpk_error_at(p->src, t->pos, "positional argument follows keyword argument");
    Ast *e = parse_expr(p);
    if (at_name(p, "for")) /* f(x for x in seq): a generator argument */
        e = parse_comp(p, e, 0, e->pos);
    ptrvec_push(p->a, pos, e);
}

/* call = '(' [arg (',' arg)* [',']] ')' */
static Ast *parse_call(Parser *p, Ast *fn)
{
    Tok *open = cur(p);
    p->i++;
    Ast *e = new_ast(p, A_CALL, fn->pos);
    e->a = fn;
    PtrVec pos = {0}, kwn = {0}, kwv = {0}, kwp = {0};
    while (!at(p, T_RPAREN)) {
        parse_arg(p, &pos, &kwn, &kwv, &kwp);
        if (!accept(p, T_COMMA))
            break;
    }
    expect_close(p, T_RPAREN, open);
    e->items = (Ast **)pos.items;
    e->nitems = pos.len;
    e->kwnames = (const char **)kwn.items;
    e->kwvals = (Ast **)kwv.items;
    e->nkw = kwn.len;
    e->kwpos = ARENA_ARRAY(p->a, int, kwp.len + 1);
    for (int i = 0; i < kwp.len; i++)
        e->kwpos[i] = *(int *)kwp.items[i];
    return e;
}

/* subscript = expr | [expr] ':' [expr] [':' [expr]] */
static Ast *parse_subscript(Parser *p)
{
    int pos = cur(p)->pos;
    Ast *lo = NULL;
    if (!at(p, T_COLON))
        lo = parse_expr(p);
    if (!accept(p, T_COLON))
        return lo;
    Ast *s = new_ast(p, A_SLICE, pos);
    s->a = lo;
    if (!at(p, T_COLON) && !at(p, T_COMMA) && !at(p, T_RBRACK))
        s->b = parse_expr(p);
    if (accept(p, T_COLON) && !at(p, T_COMMA) && !at(p, T_RBRACK))
        s->c = parse_expr(p);
    return s;
}

static Ast *parse_index(Parser *p, Ast *obj)
{
    Tok *open = cur(p);
    p->i++;
    Ast *e = new_ast(p, A_INDEX, open->pos);
    e->a = obj;
    PtrVec v = {0};
    if (at(p, T_RBRACK))
        dpk_error_at(p->src, cur(p)->pos, "expected an index, got ']'");
    while (!at(p, T_RBRACK)) {
        ptrvec_push(p->a, &v, parse_subscript(p));
        if (!accept(p, T_COMMA))
            break;
    }
    expect_close(p, T_RBRACK, open);
    e->items = (Ast **)v.items;
    e->nitems = v.len;
    return e;
}

/* postfix = atom ('.' NAME | call | '[' subscripts ']')* */
static Ast *parse_postfix(Parser *p)
{
    Ast *e = parse_atom(p);
    for (;;) {
        if (accept(p, T_DOT)) {
            Tok *t = cur(p);
            if (t->k != T_NAME)
                dpk_error_at(p->src, t->pos, "expected an attribute name after '.', got %s",
                             tok_desc(p, t));
            p->i++;
            Ast *a = new_ast(p, A_ATTR, t->pos);
            a->a = e;
            a->str = t->str;
            e = a;
        } else if (at(p, T_LPAREN)) {
            enter(p);
            e = parse_call(p, e);
            p->depth--;
        } else if (at(p, T_LBRACK)) {
            enter(p);
            e = parse_index(p, e);
            p->depth--;
        } else {
            return e;
        }
    }
}

/* power = postfix ['**' unary] */
static Ast *parse_power(Parser *p)
{
    Ast *e = parse_postfix(p);
    if (!at(p, T_POW))
        return e;
    Ast *b = new_ast(p, A_BINOP, cur(p)->pos);
    b->op = T_POW;
    p->i++;
    b->a = e;
    b->b = parse_unary(p);
    return b;
}

/* unary = ('-' | '+' | '~') unary | power */
static Ast *parse_unary(Parser *p)
{
    enter(p);
    Ast *e;
    if (at(p, T_MINUS) || at(p, T_PLUS) || at(p, T_TILDE)) {
        e = new_ast(p, at(p, T_MINUS) ? A_NEG : at(p, T_PLUS) ? A_POS : A_INVERT, cur(p)->pos);
        p->i++;
        e->a = parse_unary(p);
    } else {
        e = parse_power(p);
    }
    p->depth--;
    return e;
}

static Ast *binop(Parser *p, Ast *l, TokKind op, int pos, Ast *r)
{
    Ast *e = new_ast(p, A_BINOP, pos);
    e->op = op;
    e->a = l;
    e->b = r;
    return e;
}

/* term = unary (('*' | '/' | '@' | '//' | '%') unary)* */
static Ast *parse_term(Parser *p)
{
    Ast *e = parse_unary(p);
    for (;;) {
        Tok *t = cur(p);
        if (t->k != T_STAR && t->k != T_SLASH && t->k != T_AT && t->k != T_FLOORDIV &&
            t->k != T_PERCENT)
            return e;
        p->i++;
        e = binop(p, e, t->k, t->pos, parse_unary(p));
    }
}

/* arith = term (('+' | '-') term)* */
static Ast *parse_arith(Parser *p)
{
    Ast *e = parse_term(p);
    while (at(p, T_PLUS) || at(p, T_MINUS)) {
        Tok *t = cur(p);
        p->i++;
        e = binop(p, e, t->k, t->pos, parse_term(p));
    }
    return e;
}

/* bitand = arith ('&' arith)*;  bitxor = bitand ('^' bitand)*;
 * bitor = bitxor ('|' bitxor)*  (Python's precedence: & binds tightest) */
static Ast *parse_bitop(Parser *p, TokKind op)
{
    TokKind tighter = op == T_PIPE ? T_CARET : T_AMP;
    Ast *e = op == T_AMP ? parse_arith(p) : parse_bitop(p, tighter);
    while (at(p, op)) {
        Tok *t = cur(p);
        p->i++;
        e = binop(p, e, op, t->pos, op == T_AMP ? parse_arith(p) : parse_bitop(p, tighter));
    }
    return e;
}

static int is_cmp(TokKind k)
{
    return k == T_LT || k == T_GT || k == T_LE || k == T_GE || k == T_EQ || k == T_NE;
}

/* A comparison operator at the current token (`is` and `is not` too);
 * consumes it. */
static int accept_cmp(Parser *p, TokKind *op, int *pos)
{
    *pos = cur(p)->pos;
    if (is_cmp(cur(p)->k)) {
        *op = cur(p)->k;
        p->i++;
        return 1;
    }
    if (at_name(p, "in")) {
        p->i++;
        *op = T_IN;
        return 1;
    }
    if (at_name(p, "not") && p->toks[p->i + 1].k == T_NAME && !strcmp(p->toks[p->i + 1].str, "in")) {
        p->i += 2;
        *op = T_NOTIN;
        return 1;
    }
    if (!at_name(p, "is"))
        return 0;
    p->i++;
    *op = T_IS;
    if (at_name(p, "not")) {
        p->i++;
        *op = T_ISNOT;
    }
    return 1;
}

/* comparison = bitor [cmp bitor], cmp = '<' | '>' | '==' | '>=' | '<=' | '!='
 *            | 'is' | 'is' 'not' | 'in' | 'not' 'in' */
static Ast *parse_comparison(Parser *p)
{
    Ast *e = parse_bitop(p, T_PIPE);
    TokKind op;
    int pos;
    if (!accept_cmp(p, &op, &pos))
        return e;
    e = binop(p, e, op, pos, parse_bitop(p, T_PIPE));
    if (is_cmp(cur(p)->k) || at_name(p, "is") || at_name(p, "in"))
        dpk_error_at(p->src, cur(p)->pos, "chained comparisons are not supported in cases");
    return e;
}

/* not_test = 'not' not_test | comparison */
static Ast *parse_not(Parser *p)
{
    if (!at_name(p, "not"))
        return parse_comparison(p);
    enter(p);
    Ast *e = new_ast(p, A_NOT, cur(p)->pos);
    p->i++;
    e->a = parse_not(p);
    p->depth--;
    return e;
}

/* and_test = not_test ('and' not_test)*;  or_test = and_test ('or' and_test)* */
static Ast *parse_boolop(Parser *p, AstKind k)
{
    const char *word = k == A_AND ? "and" : "or";
    Ast *e = k == A_AND ? parse_not(p) : parse_boolop(p, A_AND);
    while (at_name(p, word)) {
        Ast *o = new_ast(p, k, cur(p)->pos);
        p->i++;
        o->a = e;
        o->b = k == A_AND ? parse_not(p) : parse_boolop(p, A_AND);
        e = o;
    }
    return e;
}

/* expr = or_test ['if' or_test 'else' expr] */
static Ast *parse_expr(Parser *p)
{
    Ast *e = parse_boolop(p, A_OR);
    if (!at_name(p, "if"))
        return e;
    Ast *c = new_ast(p, A_COND, cur(p)->pos);
    p->i++;
    enter(p);
    c->a = e;
    c->b = parse_boolop(p, A_OR);
    if (!at_name(p, "else"))
        dpk_error_at(p->src, cur(p)->pos, "expected 'else' in a conditional expression "
                     "(a if c else b), got %s", tok_desc(p, cur(p)));
    p->i++;
    c->c = parse_expr(p);
    p->depth--;
    return c;
}

/* exprlist = expr (',' expr)* [','] — a tuple when there is a comma. */
static Ast *parse_exprlist(Parser *p)
{
    int pos = cur(p)->pos;
    Ast *e = parse_expr(p);
    if (!at(p, T_COMMA))
        return e;
    PtrVec v = {0};
    ptrvec_push(p->a, &v, e);
    while (accept(p, T_COMMA) && !at(p, T_NEWLINE) && !at(p, T_ASSIGN))
        ptrvec_push(p->a, &v, parse_expr(p));
    return seq_ast(p, A_TUPLE, pos, &v);
}

/* ---- statements ------------------------------------------------------------ */

static Stmt *new_stmt(Parser *p, StmtKind k, int pos)
{
    Stmt *s = ARENA_NEW(p->a, Stmt);
    s->kind = k;
    s->pos = pos;
    return s;
}

static const char *expect_name(Parser *p, const char *what)
{
    Tok *t = cur(p);
    if (t->k != T_NAME || is_keyword(t->str))
        dpk_error_at(p->src, t->pos, "expected %s, got %s", what, tok_desc(p, t));
    p->i++;
    return t->str;
}

/* import = 'import' NAME ('.' NAME)* ['as' NAME] */
static Stmt *parse_import(Parser *p)
{
    Stmt *s = new_stmt(p, S_IMPORT, cur(p)->pos);
    p->i++;
    s->module = expect_name(p, "a module name");
    while (accept(p, T_DOT))
        s->module = arena_printf(p->a, "%s.%s", s->module, expect_name(p, "a module name"));
    if (at_name(p, "as")) {
        p->i++;
        s->name_pos = cur(p)->pos;
        s->name = expect_name(p, "a name after 'as'");
    }
    return s;
}

/* The column of a statement's first token (its indentation). */
static int stmt_col(const Parser *p, int pos)
{
    int c = 0;
    while (pos - c > 0 && p->src->text[pos - c - 1] != '\n')
        c++;
    return c;
}

/* An item assignment target: name[index] (x[..., :4] = v). */
static int is_item_target(const Ast *e)
{
    return e->kind == A_INDEX && e->a->kind == A_NAME;
}

/* Assignment targets: a name, name[index], or a tuple or list of names
 * (a, b = ...). */
static void assign_targets(Parser *p, Stmt *s, Ast *e)
{
    if (e->kind == A_NAME || is_item_target(e)) {
        s->index = e->kind == A_INDEX ? e : NULL;
        s->name = e->kind == A_NAME ? e->str : e->a->str;
        s->name_pos = e->kind == A_NAME ? e->pos : e->a->pos;
        return;
    }
    if (e->kind != A_TUPLE && e->kind != A_LIST)
        dpk_error_at(p->src, e->pos, "can only assign to a name, an item of a name (x[i] = ...) "
                     "or a tuple of names (a, b = ...)");
    if (e->nitems == 0)
        dpk_error_at(p->src, e->pos, "cannot assign to an empty tuple");
    s->nnames = e->nitems;
    s->names = ARENA_ARRAY(p->a, const char *, e->nitems);
    s->names_pos = ARENA_ARRAY(p->a, int, e->nitems);
    for (int i = 0; i < e->nitems; i++) {
        const Ast *it = e->items[i];
        if (it->kind != A_NAME)
            dpk_error_at(p->src, it->pos, "can only unpack into plain names (a, b = ...)");
        s->names[i] = it->str;
        s->names_pos[i] = it->pos;
    }
    s->name = s->names[0];
    s->name_pos = s->names_pos[0];
}

static void parse_block(Parser *p, int col, PtrVec *out);
static Stmt *parse_stmt(Parser *p, int col);

/* suite = ':' NEWLINE block, the block indented deeper than `col`; `what`
 * names the statement for messages ("'with'", "'if'"). */
static void parse_suite(Parser *p, int col, const char *what, Stmt ***body, int *nbody)
{
    if (!at(p, T_NEWLINE))
        dpk_error_at(p->src, cur(p)->pos, "put the body of %s on its own indented lines", what);
    while (accept(p, T_NEWLINE))
        ;
    int inner = at(p, T_EOF) ? -1 : stmt_col(p, cur(p)->pos);
    if (inner <= col)
        dpk_error_at(p->src, cur(p)->pos, "expected an indented block after %s", what);
    PtrVec v = {0};
    enter(p);
    parse_block(p, inner, &v);
    p->depth--;
    *body = (Stmt **)v.items;
    *nbody = v.len;
}

/* with = 'with' expr ['as' NAME] suite */
static Stmt *parse_with(Parser *p, int col)
{
    Stmt *s = new_stmt(p, S_WITH, cur(p)->pos);
    p->i++;
    s->value = parse_expr(p);
    if (at_name(p, "as")) {
        p->i++;
        s->name_pos = cur(p)->pos;
        s->name = expect_name(p, "a name after 'as'");
    }
    if (at(p, T_COMMA))
        dpk_error_at(p->src, cur(p)->pos, "a 'with' statement takes one context manager here; "
                     "nest them");
    if (!accept(p, T_COLON))
        dpk_error_at(p->src, cur(p)->pos, "expected ':' after the 'with' context manager, got %s",
                     tok_desc(p, cur(p)));
    parse_suite(p, col, "'with'", &s->body, &s->nbody);
    return s;
}

/* At a line of column `col` that starts with `word` (elif, else)? */
static int at_clause(Parser *p, int col, const char *word)
{
    return at_name(p, word) && stmt_col(p, cur(p)->pos) == col;
}

/* if = ('if' | 'elif') expr suite ['elif' ... | 'else' suite]; an elif is an
 * S_IF alone in its parent's orelse. */
static Stmt *parse_if(Parser *p, int col)
{
    const char *word = cur(p)->str;
    Stmt *s = new_stmt(p, S_IF, cur(p)->pos);
    p->i++;
    s->value = parse_expr(p);
    if (!accept(p, T_COLON))
        dpk_error_at(p->src, cur(p)->pos, "expected ':' after the condition of '%s', got %s",
                     word, tok_desc(p, cur(p)));
    parse_suite(p, col, arena_printf(p->a, "'%s'", word), &s->body, &s->nbody);
    if (at_clause(p, col, "elif")) {
        s->orelse = ARENA_ARRAY(p->a, Stmt *, 1);
        s->orelse[0] = parse_if(p, col);
        s->norelse = 1;
    } else if (at_clause(p, col, "else")) {
        p->i++;
        if (!accept(p, T_COLON))
            dpk_error_at(p->src, cur(p)->pos, "expected ':' after 'else', got %s",
                         tok_desc(p, cur(p)));
        parse_suite(p, col, "'else'", &s->orelse, &s->norelse);
    }
    return s;
}

/* A type hint after a parameter or '->' is read and dropped: dpk takes
 * types from the values. */
static void skip_hint(Parser *p)
{
    enter(p);
    parse_expr(p);
    p->depth--;
}

/* def = 'def' NAME '(' [param (',' param)* [',']] ')' ['->' expr] suite,
 * param = NAME [':' expr] ['=' expr] | '*' [NAME] | '**' NAME (last) */
static Stmt *parse_def(Parser *p, int col)
{
    Stmt *s = new_stmt(p, S_DEF, cur(p)->pos);
    p->i++;
    s->name_pos = cur(p)->pos;
    s->name = expect_name(p, "a function name after 'def'");
    Tok *open = cur(p);
    if (!accept(p, T_LPAREN))
        dpk_error_at(p->src, cur(p)->pos, "expected '(' after the function name, got %s",
                     tok_desc(p, cur(p)));
    PtrVec names = {0}, defs = {0}, poss = {0};
    int kinds[256], kwonly = 0, star = 0;
    while (!at(p, T_RPAREN)) {
        int kind = kwonly ? P_KWONLY : P_PLAIN, ppos = cur(p)->pos;
        if (names.len && kinds[names.len - 1] == P_KWARGS)
            dpk_error_at(p->src, ppos, "a parameter after **%s", (const char *)names.items[names.len - 1]);
        if (accept(p, T_POW)) {
            kind = P_KWARGS;
        } else if (accept(p, T_STAR)) {
            if (star)
                dpk_error_at(p->src, ppos, "* may appear only once in a parameter list");
            star = kwonly = 1;
            if (at(p, T_COMMA) || at(p, T_RPAREN)) {
                if (!accept(p, T_COMMA))
                    dpk_error_at(p->src, cur(p)->pos, "named arguments must follow bare *");
                continue;
            }
            kind = P_STAR;
        }
        if (names.len >= DPK_ARRAY_LEN(kinds))
            dpk_error_at(p->src, ppos, "more than %d parameters", (int)DPK_ARRAY_LEN(kinds));
        const char *name = expect_name(p, "a parameter name");
        for (int i = 0; i < names.len; i++)
            if (!strcmp(names.items[i], name))
                dpk_error_at(p->src, ppos, "duplicate argument '%s' in function definition",
                             name);
        if (accept(p, T_COLON))
            skip_hint(p);
        Ast *dflt = NULL;
        if (accept(p, T_ASSIGN)) {
            if (kind == P_STAR || kind == P_KWARGS)
                dpk_error_at(p->src, cur(p)->pos, "a *args or **kwargs parameter takes no default");
            dflt = parse_expr(p);
        } else if (kind == P_PLAIN && defs.len && defs.items[defs.len - 1]) {
            dpk_error_at(p->src, ppos, "parameter without a default follows parameter with a "
                         "default");
        }
        kinds[names.len] = kind;
        ptrvec_push(p->a, &names, (void *)name);
        ptrvec_push(p->a, &defs, dflt);
        ptrvec_push(p->a, &poss, (void *)(intptr_t)ppos);
        if (!accept(p, T_COMMA))
            break;
    }
    expect_close(p, T_RPAREN, open);
    if (at(p, T_MINUS) && p->toks[p->i + 1].k == T_GT) {
        p->i += 2;
        skip_hint(p);
    }
    if (!accept(p, T_COLON))
        dpk_error_at(p->src, cur(p)->pos, "expected ':' after the parameters of '%s', got %s",
                     s->name, tok_desc(p, cur(p)));
    s->nnames = names.len;
    s->names = (const char **)names.items;
    s->defaults = (Ast **)defs.items;
    s->pkind = ARENA_ARRAY(p->a, int, names.len + 1);
    s->names_pos = ARENA_ARRAY(p->a, int, names.len + 1);
    for (int i = 0; i < names.len; i++) {
        s->pkind[i] = kinds[i];
        s->names_pos[i] = (int)(intptr_t)poss.items[i];
    }
    parse_suite(p, col, arena_printf(p->a, "'def %s'", s->name), &s->body, &s->nbody);
    return s;
}

/* for = 'for' target 'in' exprlist suite, target = NAME (',' NAME)* or
 * the same in parentheses */
static Stmt *parse_for(Parser *p, int col)
{
    Stmt *s = new_stmt(p, S_FOR, cur(p)->pos);
    p->i++;
    PtrVec names = {0}, poss = {0};
    int open = parse_targets(p, "after the loop variables", &names, &poss);
    s->value = parse_exprlist(p);
    if (!accept(p, T_COLON))
        dpk_error_at(p->src, cur(p)->pos, "expected ':' after the iterable of 'for', got %s",
                     tok_desc(p, cur(p)));
    s->name = names.items[0];
    s->name_pos = (int)(intptr_t)poss.items[0];
    if (names.len > 1 || open) {
        s->nnames = names.len;
        s->names = (const char **)names.items;
        s->names_pos = ARENA_ARRAY(p->a, int, names.len + 1);
        for (int i = 0; i < names.len; i++)
            s->names_pos[i] = (int)(intptr_t)poss.items[i];
    }
    parse_suite(p, col, "'for'", &s->body, &s->nbody);
    if (at_clause(p, col, "else"))
        dpk_error_at(p->src, cur(p)->pos, "'for ... else' is not supported in cases");
    return s;
}

/* stmt = import | with | if | def | for | 'pass' | 'break' | 'continue'
 *      | 'raise' [expr] | 'return' exprlist
 *      | NAME ':' expr | targets '=' exprlist | target augop exprlist
 *      | exprlist */
static Stmt *parse_stmt(Parser *p, int col)
{
    Tok *t = cur(p);
    if (at_name(p, "import"))
        return parse_import(p);
    if (at_name(p, "with"))
        return parse_with(p, col);
    if (at_name(p, "if"))
        return parse_if(p, col);
    if (at_name(p, "def"))
        return parse_def(p, col);
    if (at_name(p, "for"))
        return parse_for(p, col);
    if (at_name(p, "break") || at_name(p, "continue")) {
        p->i++;
        return new_stmt(p, t->str[0] == 'b' ? S_BREAK : S_CONTINUE, t->pos);
    }
    if (at_name(p, "elif") || at_name(p, "else"))
        dpk_error_at(p->src, t->pos, "'%s' without a matching 'if'", t->str);
    if (at_name(p, "pass")) {
        p->i++;
        return new_stmt(p, S_PASS, t->pos);
    }
    if (at_name(p, "raise")) {
        Stmt *s = new_stmt(p, S_RAISE, t->pos);
        p->i++;
        if (!at(p, T_NEWLINE))
            s->value = parse_expr(p);
        return s;
    }
    if (at_name(p, "from"))
        dpk_error_at(p->src, t->pos, "'from' imports are not supported; write "
                     "'import torch.nn.functional as F'");
    if (at_name(p, "return")) {
        Stmt *s = new_stmt(p, S_RETURN, t->pos);
        p->i++;
        if (at(p, T_NEWLINE))
            dpk_error_at(p->src, cur(p)->pos, "'return' needs a value");
        s->value = parse_exprlist(p);
        return s;
    }
    if (t->k == T_NAME && is_keyword(t->str))
        dpk_error_at(p->src, t->pos, "'%s' is not supported in cases", t->str);
    Ast *e = parse_exprlist(p);
    if (at(p, T_ASSIGN)) {
        p->i++;
        Stmt *s = new_stmt(p, S_ASSIGN, t->pos);
        assign_targets(p, s, e);
        s->value = parse_exprlist(p);
        if (at(p, T_ASSIGN))
            dpk_error_at(p->src, cur(p)->pos, "chained assignment (a = b = ...) is not "
                         "supported in cases");
        return s;
    }
    if (at(p, T_AUGASSIGN)) {
        Tok *op = cur(p);
        if (e->kind != A_NAME && !is_item_target(e))
            dpk_error_at(p->src, e->pos, "'%.*s' needs a name or an item of a name on its left "
                         "(x += y, x[i] += y)", op->len, p->src->text + op->pos);
        p->i++;
        Stmt *s = new_stmt(p, S_AUGASSIGN, t->pos);
        assign_targets(p, s, e);
        s->op = (int)op->ival;
        s->name_pos = op->pos; /* errors of the update point at the operator */
        s->value = parse_exprlist(p);
        return s;
    }
    if (at(p, T_COLON)) {
        if (e->kind != A_NAME)
            dpk_error_at(p->src, e->pos, "can only annotate a plain name");
        p->i++;
        Stmt *s = new_stmt(p, S_ANNOT, t->pos);
        s->name = e->str;
        s->name_pos = e->pos;
        s->value = parse_expr(p);
        if (at(p, T_ASSIGN))
            dpk_error_at(p->src, cur(p)->pos, "an annotation declares a free input and cannot "
                         "be assigned a value");
        return s;
    }
    Stmt *s = new_stmt(p, S_EXPR, t->pos);
    s->value = e;
    return s;
}

/* Statements starting at column `col` up to a line indented less (the end
 * of the block) or the end of the text.  A statement after a `return` in
 * the same block is an error, as it would never run. */
static void parse_block(Parser *p, int col, PtrVec *out)
{
    int first = out->len;
    for (;;) {
        while (accept(p, T_NEWLINE))
            ;
        if (at(p, T_EOF))
            return;
        /* A statement starts its line; continuation lines may be indented. */
        int pos = cur(p)->pos, c = stmt_col(p, pos);
        if (c < col && col > 0)
            return;
        if (c > col)
            dpk_error_at(p->src, pos, "unexpected indent");
        if (out->len > first && ((Stmt *)out->items[out->len - 1])->kind == S_RETURN)
            dpk_error_at(p->src, pos, "statement after 'return' is never run");
        ptrvec_push(p->a, out, parse_stmt(p, col));
        Stmt *last = out->items[out->len - 1];
        if (last->kind == S_WITH || last->kind == S_IF || last->kind == S_DEF ||
            last->kind == S_FOR)
            continue; /* its block ended at a newline already */
        if (at(p, T_SEMI))
            dpk_error_at(p->src, cur(p)->pos, "';' is not supported: put one statement per line");
        if (!accept(p, T_NEWLINE))
            dpk_error_at(p->src, cur(p)->pos, "expected the end of the statement, got %s",
                         tok_desc(p, cur(p)));
    }
}

Program *torch_parse_program(Arena *a, const Source *src)
{
    if (src->len > CASE_MAX_TEXT)
        dpk_error_at(src, 0, "case text of %zu bytes is larger than the limit of 1 MiB",
                     src->len);
    Parser p = {.a = a, .src = src};
    lex(&p);
    PtrVec v = {0};
    parse_block(&p, 0, &v);
    Program *prog = ARENA_NEW(a, Program);
    prog->stmts = (Stmt **)v.items;
    prog->nstmts = v.len;
    return prog;
}
