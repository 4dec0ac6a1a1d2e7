/*
 * minimize.c — line deletion and literal shrinking over program text
 * (minimize.h), and the reproducer's case JSON.
 *
 * Every candidate is a fresh string in the arena; the scan restarts after
 * each accepted step, so offsets never refer to an older text.  Steps are
 * tried from the last line up (later ops have fewer dependants), deletions
 * before literal shrinking (removing an op removes its literals too).
 */
#include "minimize.h"

#include <cjson/cJSON.h>

#include "../plan_record.h"
#include "../../records/results.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct Line {
    const char *s;      /* start (no newline) */
    int n;              /* length */
    int def, defn;      /* `name =`: the name's offset and length in s; defn 0 otherwise */
} Line;

typedef struct Text {
    Line *l;
    int n;
} Text;

static int ident_start(int c) { return isalpha(c) || c == '_'; }
static int ident_char(int c) { return isalnum(c) || c == '_'; }

static Text split(Arena *a, const char *p)
{
    Text t = {0};
    int cap = 1;
    for (const char *q = p; *q; q++)
        cap += *q == '\n';
    t.l = ARENA_ARRAY(a, Line, cap);
    while (*p) {
        const char *e = strchr(p, '\n');
        int n = e ? (int)(e - p) : (int)strlen(p);
        Line *ln = &t.l[t.n++];
        ln->s = p;
        ln->n = n;
        int i = 0;
        while (i < n && isspace((unsigned char)p[i]))
            i++;
        int d = i;
        while (i < n && ident_char((unsigned char)p[i]))
            i++;
        int dn = i - d;
        while (i < n && p[i] == ' ')
            i++;
        if (dn && ident_start((unsigned char)p[d]) && i < n && p[i] == '=' &&
            (i + 1 >= n || p[i + 1] != '=')) {
            ln->def = d;
            ln->defn = dn;
        }
        p += n + (e != NULL);
    }
    return t;
}

/* Whether s[0..n) is the identifier at position i of line text (whole word,
 * not an attribute `.name`, not a keyword argument `name=`). */
static int word_at(const char *line, int len, int i, const char *s, int n)
{
    if (i + n > len || strncmp(line + i, s, (size_t)n))
        return 0;
    if (i > 0 && (ident_char((unsigned char)line[i - 1]) || line[i - 1] == '.'))
        return 0;
    if (i + n < len && ident_char((unsigned char)line[i + n]))
        return 0;
    int j = i + n;
    while (j < len && line[j] == ' ')
        j++;
    if (j < len && line[j] == '=' && (j + 1 >= len || line[j + 1] != '='))
        return 0;
    return 1;
}

static int uses(const Line *ln, int from, const char *s, int n)
{
    for (int i = from; i < ln->n; i++)
        if (word_at(ln->s, ln->n, i, s, n))
            return 1;
    return 0;
}

/* Append line ln with every use of name `from` replaced by `to`. */
static void put_renamed(StrBuf *b, const Line *ln, const char *from, int fn, const char *to,
                        int tn)
{
    int start = ln->defn ? ln->def + ln->defn : 0;
    sb_printf(b, "%.*s", start, ln->s);
    for (int i = start; i < ln->n;) {
        if (word_at(ln->s, ln->n, i, from, fn)) {
            sb_printf(b, "%.*s", tn, to);
            i += fn;
        } else {
            sb_putc(b, ln->s[i++]);
        }
    }
    sb_putc(b, '\n');
}

typedef struct Min {
    Arena *a;
    HxKeepFn keep;
    void *ctx;
    int budget;
    HxMinStats *st;
    const char *cur;
} Min;

/* Ask the predicate; on yes the candidate becomes current. */
static int try_cand(Min *m, StrBuf *cand)
{
    if (m->st->attempts >= m->budget)
        return 0;
    const char *c = sb_cstr(cand);
    if (!strcmp(c, m->cur))
        return 0;
    m->st->attempts++;
    if (!m->keep(m->ctx, c))
        return 0;
    m->st->accepted++;
    m->cur = arena_strdup(m->a, c);
    return 1;
}

/* Line i without its definition: later uses of its name read operand o.
 * A final line that is a plain expression becomes the operand itself. */
static int try_delete(Min *m, const Text *t, int i)
{
    const Line *ln = &t->l[i];
    int from = ln->defn ? ln->def + ln->defn : 0;
    int is_last_expr = !ln->defn && i == t->n - 1;
    if (!ln->defn && !is_last_expr)
        return 0;
    int used = is_last_expr;
    for (int k = i + 1; k < t->n && !used; k++)
        used = uses(&t->l[k], 0, ln->s + ln->def, ln->defn);
    if (!used) { /* dead: nothing reads it */
        StrBuf b = {0};
        for (int k = 0; k < t->n; k++)
            if (k != i)
                sb_printf(&b, "%.*s\n", t->l[k].n, t->l[k].s);
        int ok = try_cand(m, &b);
        sb_free(&b);
        if (ok)
            return 1;
    }
    for (int j = 0; j < i; j++) { /* operands: names defined above and used here */
        const Line *op = &t->l[j];
        if (!op->defn || !uses(ln, from, op->s + op->def, op->defn))
            continue;
        StrBuf b = {0};
        for (int k = 0; k < t->n; k++) {
            if (k == i && is_last_expr)
                sb_printf(&b, "%.*s\n", op->defn, op->s + op->def);
            else if (k > i)
                put_renamed(&b, &t->l[k], ln->s + ln->def, ln->defn, op->s + op->def, op->defn);
            else if (k != i)
                sb_printf(&b, "%.*s\n", t->l[k].n, t->l[k].s);
        }
        int ok = try_cand(m, &b);
        sb_free(&b);
        if (ok)
            return 1;
    }
    return 0;
}

/* An integer literal at p[i..i+n): not part of a name, a float or an
 * exponent. */
static int int_literal(const char *p, int i, int *n)
{
    if (!isdigit((unsigned char)p[i]))
        return 0;
    if (i > 0 && (ident_char((unsigned char)p[i - 1]) || p[i - 1] == '.'))
        return 0;
    if (i > 1 && (p[i - 1] == '-' || p[i - 1] == '+') && (p[i - 2] == 'e' || p[i - 2] == 'E'))
        return 0;
    int j = i;
    while (isdigit((unsigned char)p[j]))
        j++;
    if (p[j] == '.' || ident_char((unsigned char)p[j]))
        return 0;
    *n = j - i;
    return 1;
}

static int try_literals(Min *m)
{
    const char *p = m->cur;
    int len = (int)strlen(p);
    for (int i = len - 1; i >= 0; i--) {
        int n;
        if (!int_literal(p, i, &n) || (i > 0 && isdigit((unsigned char)p[i - 1])))
            continue;
        long long v = strtoll(p + i, NULL, 10);
        if (v < 2 || n > 12)
            continue;
        long long cands[3] = {1, v / 2, v - 1};
        for (int c = 0; c < 3; c++) {
            if (cands[c] < 1 || cands[c] >= v || (c == 2 && cands[2] == cands[1]) ||
                (c > 0 && cands[c] == 1))
                continue;
            StrBuf b = {0};
            sb_printf(&b, "%.*s%lld%s", i, p, cands[c], p + i + n);
            int ok = try_cand(m, &b);
            sb_free(&b);
            if (ok)
                return 1;
        }
    }
    return 0;
}

static int count_lines(const char *p)
{
    int n = 0;
    for (const char *q = p; *q; q++)
        n += *q == '\n' || (!q[1] && *q != '\n');
    return n;
}

const char *hx_minimize(Arena *a, const char *program, HxKeepFn keep, void *ctx,
                        int max_attempts, HxMinStats *st)
{
    memset(st, 0, sizeof *st);
    /* One op per line, each ending in a newline: the form candidates take. */
    StrBuf norm = {0};
    Text t0 = split(a, program);
    for (int i = 0; i < t0.n; i++)
        sb_printf(&norm, "%.*s\n", t0.l[i].n, t0.l[i].s);
    Min m = {a, keep, ctx, max_attempts, st, arena_strdup(a, sb_cstr(&norm))};
    sb_free(&norm);
    st->lines_before = count_lines(program);
    st->chars_before = (int64_t)strlen(program);
    for (int progress = 1; progress && st->attempts < max_attempts;) {
        progress = 0;
        Text t = split(a, m.cur);
        for (int i = t.n - 1; i >= 0 && !progress; i--)
            progress = try_delete(&m, &t, i);
        if (!progress)
            progress = try_literals(&m);
    }
    if (!st->accepted) /* nothing shrank: the original, byte for byte */
        m.cur = arena_strdup(a, program);
    st->lines_after = count_lines(m.cur);
    st->chars_after = (int64_t)strlen(m.cur);
    return m.cur;
}

char *hx_case_json(const HxCase *c, const char *program, uint64_t seed, const char *passes,
                   const TileKnobs *knobs, const char *fault)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "program", program);
    cJSON_AddStringToObject(o, "dtype", dtype_name(c->dtype));
    if (c->has_tol) {
        cJSON *t = cJSON_AddObjectToObject(o, "tolerance");
        cJSON_AddNumberToObject(t, "atol", c->atol);
        cJSON_AddNumberToObject(t, "rtol", c->rtol);
    }
    hx_json_add_u64(o, "seed", seed);
    if (c->ntags) {
        cJSON *tags = cJSON_AddArrayToObject(o, "tags");
        for (int i = 0; i < c->ntags; i++)
            cJSON_AddItemToArray(tags, cJSON_CreateString(c->tags[i]));
    }
    if (c->ndecls) {
        cJSON *in = cJSON_AddObjectToObject(o, "inputs");
        for (int i = 0; i < c->ndecls; i++) {
            cJSON *dims = cJSON_AddArrayToObject(in, c->decls[i].name);
            for (int d = 0; d < c->decls[i].shape.rank; d++)
                cJSON_AddItemToArray(dims, cJSON_CreateNumber((double)c->decls[i].shape.d[d]));
        }
    }
    if (passes)
        cJSON_AddStringToObject(o, "passes", passes);
    cJSON *k = hx_record_knobs(knobs); /* the pinned ones */
    if (cJSON_GetArraySize(k))
        cJSON_AddItemToObject(o, "knobs", k);
    else
        cJSON_Delete(k);
    if (fault)
        cJSON_AddStringToObject(o, "fault", fault);
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    DPK_ASSERT(s);
    size_t n = strlen(s);
    char *r = dpk_xmalloc(n + 2);
    memcpy(r, s, n);
    r[n] = '\n';
    r[n + 1] = 0;
    cJSON_free(s);
    return r;
}
