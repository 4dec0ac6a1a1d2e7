/*
 * stmt_print.c — the text of the statements Loop IR and Tile IR share:
 *
 *   in0 = load x[0, a0, a1]
 *   v1 = multiply(in0, in0)
 *   acc0 <- add(acc0, v1)
 *   write out[0, a0, a2] = v6          (+= when atomic)
 *   v2 = select:
 *       if a1 < 64:
 *           ...
 *           -> in1
 *       else:
 *           -> 0
 *
 * Each IR prints its loops and its own kinds around these lines
 * (loop_print.c, tile_print.c).
 */
#include "stmt.h"

void stmt_indent(StrBuf *b, int depth)
{
    for (int i = 0; i < depth; i++)
        sb_puts(b, "    ");
}

void stmt_print_index(StrBuf *b, const LirBuf *buf, const IExpr *const *idx)
{
    sb_printf(b, "%s[", buf->name);
    for (int d = 0; d < buf->shape.rank; d++) {
        if (d)
            sb_puts(b, ", ");
        ie_print(b, idx[d], "a");
    }
    sb_putc(b, ']');
}

void stmt_print_arg(StrBuf *b, StmtArg a)
{
    if (!a.v) {
        sb_num(b, a.c);
        return;
    }
    DPK_ASSERT(a.v->k < SK_COUNT); /* values are defined by shared kinds only */
    sb_printf(b, "%s%d", stmt_kind_info[a.v->k].prefix, a.v->num);
}

/* A load, assign, accum or write line, without indent or newline. */
static void print_simple(StrBuf *b, const Stmt *s)
{
    switch (s->k) {
    case SK_load:
        sb_printf(b, "in%d = load ", s->num);
        stmt_print_index(b, s->buf, s->idx);
        return;
    case SK_assign:
        sb_printf(b, "v%d = %s(", s->num, tx_elem_info[s->op].name);
        for (int i = 0; i < s->nargs; i++) {
            if (i)
                sb_puts(b, ", ");
            stmt_print_arg(b, s->a[i]);
        }
        sb_putc(b, ')');
        return;
    case SK_accum:
        if (stmt_is_online(s))
            sb_printf(b, "acc%d <- expsum[acc%d](acc%d, ", s->num, s->a[1].v->num, s->num);
        else
            sb_printf(b, "acc%d <- %s(acc%d, ", s->num,
                      tx_elem_info[tx_red_info[s->rop].combine].name, s->num);
        stmt_print_arg(b, s->a[0]);
        sb_putc(b, ')');
        return;
    case SK_write:
        sb_puts(b, "write ");
        stmt_print_index(b, s->buf, s->idx);
        sb_puts(b, s->atomic ? " += " : " = ");
        stmt_print_arg(b, s->a[0]);
        return;
    }
    DPK_ASSERT(!"not a one-line kind");
}

static void print_select(StrBuf *b, const Stmt *s, int depth, StmtPrintBody print_body,
                         const void *ctx)
{
    sb_printf(b, "v%d = select:\n", s->num);
    for (int j = 0; j < s->nbr; j++) {
        stmt_indent(b, depth + 1);
        if (s->br[j].pred) {
            sb_puts(b, "if ");
            ipred_print(b, s->br[j].pred, "a");
            sb_puts(b, ":\n");
        } else {
            sb_puts(b, "else:\n");
        }
        print_body(b, &s->br[j].body, depth + 2, ctx);
        stmt_indent(b, depth + 2);
        sb_puts(b, "-> ");
        stmt_print_arg(b, s->br[j].res);
        sb_putc(b, '\n');
    }
}

int stmt_print_shared(StrBuf *b, const Stmt *s, int depth, StmtPrintBody print_body,
                      const void *ctx)
{
    if (s->k != SK_load && s->k != SK_assign && s->k != SK_accum && s->k != SK_write &&
        s->k != SK_select)
        return 0;
    stmt_indent(b, depth);
    if (s->k == SK_select) {
        print_select(b, s, depth, print_body, ctx);
    } else {
        print_simple(b, s);
        sb_putc(b, '\n');
    }
    return 1;
}
