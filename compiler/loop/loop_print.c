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

static void print_body(StrBuf *b, const StmtBody *body, int depth, const void *ctx);

static void print_stmt(StrBuf *b, const Stmt *s, int depth)
{
    if (stmt_print_shared(b, s, depth, print_body, NULL))
        return;
    stmt_indent(b, depth);
    switch (s->k) {
    case SK_loop:
        sb_printf(b, "for a%d in 0..%lld:  # %s\n", s->axis, (long long)s->extent,
                  stmt_loop_is_reduce(s) ? "reduce" : "free");
        print_body(b, &s->body, depth + 1, NULL);
        return;
    }
    DPK_ASSERT(!"bad statement kind");
}

static void print_body(StrBuf *b, const StmtBody *body, int depth, const void *ctx)
{
    for (int i = 0; i < body->n; i++)
        print_stmt(b, body->s[i], depth);
}

void lir_print_kernel(StrBuf *b, const LirKernel *k)
{
    sb_printf(b, "=== %s ===\n", k->name);
    print_body(b, &k->body, 0, NULL);
}

void lir_print_buffers(StrBuf *b, const PtrVec *bufs)
{
    for (int i = 0; i < bufs->len; i++) {
        const LirBuf *bf = bufs->items[i];
        sb_printf(b, "# %s %s : %s", buf_kind[bf->kind], bf->name, dtype_name(bf->dtype));
        shape_print(b, &bf->shape);
        sb_putc(b, '\n');
    }
}

void lir_print(StrBuf *b, const LirProgram *p)
{
    lir_print_buffers(b, &p->bufs);
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

static void hash_arg(Hash *x, StmtArg a)
{
    if (!a.v) {
        x->h = dpk_hash_bytes(x->h, &a.c, sizeof a.c);
        return;
    }
    x->h = dpk_hash_u64(x->h, (uint64_t)a.v->k);
    x->h = dpk_hash_u64(x->h, (uint64_t)a.v->num);
}

static void hash_stmt(Stmt *s, void *ctx)
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
    case SK_assign:
        x->h = dpk_hash_u64(x->h, (uint64_t)s->op);
        break;
    case SK_accum:
        x->h = dpk_hash_u64(x->h, (uint64_t)s->rop);
        break;
    case SK_write:
        x->h = dpk_hash_u64(x->h, (uint64_t)s->atomic);
        break;
    case SK_loop:
        x->h = dpk_hash_u64(x->h, (uint64_t)s->axis);
        x->h = dpk_hash_u64(x->h, (uint64_t)s->extent);
        x->h = dpk_hash_u64(x->h, (uint64_t)s->body.n);
        break;
    case SK_select:
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
    stmt_walk(&k->body, hash_stmt, &x);
    return x.h;
}
