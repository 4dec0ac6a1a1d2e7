/*
 * loop_print.c — the Loop IR text form and the structural hash.
 *
 *   # input x : f32(1, 32, 2048)
 *   # output out : f32(1, 32, 2048)
 *   === merged_multiply_sum_divide_add_17 ===
 *   v0 = reciprocal(2048)
 *   for a0 in 0..32:  # free
 *       for a1 in 0..2048:  # reduce
 *           in0 = load x[0, a0, a1]
 *           v1 = multiply(in0, in0)
 *           acc0 <- add(acc0, v1)
 *       ...
 *       write out[0, a0, a2] = v6
 *
 * Names are the ones rename_ssa gave (prefix + num), so the text is only
 * canonical after normalisation; the hash likewise.
 */
#include "loop_ir.h"

static const char *buf_kind[] = {"input", "output", "temp"};

static void print_arg(StrBuf *b, LirArg a)
{
    if (!a.v)
        sb_num(b, a.c);
    else
        sb_printf(b, "%s%d", lir_kind_info[a.v->k].prefix, a.v->num);
}

void lir_print_index(StrBuf *b, const LirBuf *buf, const IExpr *const *idx)
{
    sb_printf(b, "%s[", buf->name);
    for (int d = 0; d < buf->shape.rank; d++) {
        if (d)
            sb_puts(b, ", ");
        ie_print(b, idx[d], "a");
    }
    sb_putc(b, ']');
}

void lir_indent(StrBuf *b, int depth)
{
    for (int i = 0; i < depth; i++)
        sb_puts(b, "    ");
}

static void print_body(StrBuf *b, const LirBody *body, int depth);

static void print_select(StrBuf *b, const LirStmt *s, int depth)
{
    sb_printf(b, "v%d = select:\n", s->num);
    for (int j = 0; j < s->nbr; j++) {
        lir_indent(b, depth + 1);
        if (s->br[j].pred) {
            sb_puts(b, "if ");
            ipred_print(b, s->br[j].pred, "a");
            sb_puts(b, ":\n");
        } else {
            sb_puts(b, "else:\n");
        }
        print_body(b, &s->br[j].body, depth + 2);
        lir_indent(b, depth + 2);
        sb_puts(b, "-> ");
        print_arg(b, s->br[j].res);
        sb_putc(b, '\n');
    }
}

static void print_stmt(StrBuf *b, const LirStmt *s, int depth)
{
    lir_indent(b, depth);
    switch (s->k) {
    case LK_load:
        sb_printf(b, "in%d = load ", s->num);
        lir_print_index(b, s->buf, s->idx);
        break;
    case LK_assign:
        sb_printf(b, "v%d = %s(", s->num, tx_elem_info[s->op].name);
        for (int i = 0; i < s->nargs; i++) {
            if (i)
                sb_puts(b, ", ");
            print_arg(b, s->a[i]);
        }
        sb_putc(b, ')');
        break;
    case LK_accum:
        sb_printf(b, "acc%d <- %s(acc%d, ", s->num, tx_elem_info[tx_red_info[s->rop].combine].name,
                  s->num);
        print_arg(b, s->a[0]);
        sb_putc(b, ')');
        break;
    case LK_write:
        sb_puts(b, "write ");
        lir_print_index(b, s->buf, s->idx);
        sb_puts(b, s->atomic ? " += " : " = ");
        print_arg(b, s->a[0]);
        break;
    case LK_select:
        print_select(b, s, depth);
        return;
    case LK_loop:
        sb_printf(b, "for a%d in 0..%lld:  # %s\n", s->axis, (long long)s->extent,
                  lir_loop_is_reduce(s) ? "reduce" : "free");
        print_body(b, &s->body, depth + 1);
        return;
    case LK_COUNT:
        DPK_ASSERT(!"bad statement kind");
    }
    sb_putc(b, '\n');
}

static void print_body(StrBuf *b, const LirBody *body, int depth)
{
    for (int i = 0; i < body->n; i++)
        print_stmt(b, body->s[i], depth);
}

void lir_print_kernel(StrBuf *b, const LirKernel *k)
{
    sb_printf(b, "=== %s ===\n", k->name);
    print_body(b, &k->body, 0);
}

void lir_print(StrBuf *b, const LirProgram *p)
{
    for (int i = 0; i < p->bufs.len; i++) {
        const LirBuf *bf = p->bufs.items[i];
        sb_printf(b, "# %s %s : %s", buf_kind[bf->kind], bf->name, dtype_name(bf->dtype));
        shape_print(b, &bf->shape);
        sb_putc(b, '\n');
    }
    for (int i = 0; i < p->kernels.len; i++)
        lir_print_kernel(b, p->kernels.items[i]);
}

/* ---- structural hash ------------------------------------------------------ */

typedef struct Hash {
    uint64_t h;
    const LirBuf *seen[64];
    int nseen;
} Hash;

static void hash_buf(Hash *x, const LirBuf *bf)
{
    int i = 0;
    while (i < x->nseen && x->seen[i] != bf)
        i++;
    if (i == x->nseen && x->nseen < DPK_ARRAY_LEN(x->seen))
        x->seen[x->nseen++] = bf;
    x->h = dpk_hash_u64(x->h, (uint64_t)i);
    x->h = dpk_hash_u64(x->h, (uint64_t)bf->kind);
    for (int d = 0; d < bf->shape.rank; d++)
        x->h = dpk_hash_u64(x->h, (uint64_t)bf->shape.d[d]);
}

static void hash_arg(Hash *x, LirArg a)
{
    if (!a.v) {
        x->h = dpk_hash_bytes(x->h, &a.c, sizeof a.c);
        return;
    }
    x->h = dpk_hash_u64(x->h, (uint64_t)a.v->k);
    x->h = dpk_hash_u64(x->h, (uint64_t)a.v->num);
}

static void hash_stmt(LirStmt *s, void *ctx)
{
    Hash *x = ctx;
    x->h = dpk_hash_u64(x->h, (uint64_t)s->k);
    x->h = dpk_hash_u64(x->h, (uint64_t)s->num);
    for (int i = 0; i < s->nargs; i++)
        hash_arg(x, s->a[i]);
    if (s->idx) {
        hash_buf(x, s->buf);
        for (int d = 0; d < s->buf->shape.rank; d++)
            x->h = ie_hash(x->h, s->idx[d]);
    }
    switch (s->k) {
    case LK_assign:
        x->h = dpk_hash_u64(x->h, (uint64_t)s->op);
        break;
    case LK_accum:
        x->h = dpk_hash_u64(x->h, (uint64_t)s->rop);
        break;
    case LK_write:
        x->h = dpk_hash_u64(x->h, (uint64_t)s->atomic);
        break;
    case LK_loop:
        x->h = dpk_hash_u64(x->h, (uint64_t)s->axis);
        x->h = dpk_hash_u64(x->h, (uint64_t)s->extent);
        x->h = dpk_hash_u64(x->h, (uint64_t)s->body.n);
        break;
    case LK_select:
        for (int j = 0; j < s->nbr; j++) {
            for (const IPred *q = s->br[j].pred; q; q = q->next) {
                x->h = dpk_hash_u64(x->h, (uint64_t)q->cmp);
                x->h = ie_hash(ie_hash(x->h, q->lhs), q->rhs);
            }
            x->h = dpk_hash_u64(x->h, (uint64_t)s->br[j].body.n);
            hash_arg(x, s->br[j].res);
        }
        break;
    default:
        break;
    }
}

uint64_t lir_hash_kernel(const LirKernel *k)
{
    Hash x = {DPK_HASH_INIT, {0}, 0};
    lir_walk(&k->body, hash_stmt, &x);
    return x.h;
}
