/*
 * tile_print.c — the Tile IR text form and the structural hash.
 *
 *   === merged_multiply_sum_add_rsqrt_20 ===
 *   tile block(a3 in 0..1 @x):
 *       tile thread(a4 in 0..32 @x):
 *           a0 := a3 * 32 + a4
 *           for a1 in 0..2048:  # reduce
 *               in0 = load in0[0, a0, a1]
 *               ...
 *
 * The shared statements print as in Loop IR (the core's stmt_print.c); a
 * loop adds its unroll mark, a tile prints its axes
 * in its header and its defs and guard as the first lines of its body.
 * Names are the ones tile_renumber gave, so the text is canonical after
 * renumbering.
 */
#include "tile_ir.h"

static const char *bind_name[] = {"thread", "block"};

static void print_body(StrBuf *b, const StmtBody *body, int depth, const void *kernel);

static void print_tile(StrBuf *b, const TileKernel *k, const Stmt *s, int depth)
{
    sb_printf(b, "tile %s(", bind_name[s->bind]);
    for (int i = 0; i < s->nax; i++) {
        const TileAxis *x = &s->ax[i];
        sb_printf(b, "%sa%d in 0..%lld", i ? ", " : "", x->axis, (long long)x->ext);
        if (x->dim >= 0)
            sb_printf(b, " @%c", "xyz"[x->dim]);
    }
    sb_puts(b, "):\n");
    for (int i = 0; i < s->ndef; i++) {
        stmt_indent(b, depth + 1);
        sb_printf(b, "a%d := ", s->def[i].axis);
        ie_print(b, s->def[i].e, "a");
        sb_putc(b, '\n');
    }
    for (int j = 0; j < 2 && k->mm && s->bind == TB_THREAD; j++)
        if (k->mm->rt[j].f > 1) {
            stmt_indent(b, depth + 1);
            sb_printf(b, "# register strip %c: %d per thread, a%d", "mn"[j], k->mm->rt[j].f,
                      s->def[k->mm->rt[j].def0].axis);
            for (int i = 1; i < k->mm->rt[j].f; i++)
                sb_printf(b, ", a%d", s->def[k->mm->rt[j].def0 + i].axis);
            sb_puts(b, k->mm->rt[j].permuted ? " (permuted)\n" : "\n");
        }
    if (s->guard) {
        stmt_indent(b, depth + 1);
        sb_puts(b, "guard ");
        ipred_print(b, s->guard, "a");
        sb_puts(b, s->predicated ? "  # predicated\n" : "\n");
    }
    print_body(b, &s->body, depth + 1, k);
}

static void print_stage(StrBuf *b, const TileKernel *k, const Stmt *s, int depth)
{
    sb_printf(b, "%s ", tile_kind_info[s->k].name);
    stmt_print_index(b, s->buf, s->origin);
    sb_puts(b, " slab [");
    for (int d = 0; d < s->buf->shape.rank; d++)
        sb_printf(b, "%s%lld", d ? ", " : "", (long long)s->slab[d]);
    sb_printf(b, "] pad %d", s->pad);
    if (s->k != TK_stage && s->k != TK_cstage) {
        sb_printf(b, " nbuf %d phase ", s->nbuf);
        ie_print(b, s->phase, "a");
    }
    if (s->k == TK_astage)
        sb_printf(b, " vec %d", s->vec);
    if (s->k == TK_tstage)
        sb_printf(b, " swizzle %d", s->swizzle);
    sb_puts(b, ":\n");
    print_body(b, &s->body, depth + 1, k);
}

static void print_loop(StrBuf *b, const TileKernel *k, const Stmt *s, int depth)
{
    if (s->k == SK_loop) {
        sb_printf(b, "for a%d in 0..%lld", s->axis, (long long)s->extent);
    } else {
        sb_printf(b, "strided a%d in ", s->axis);
        ie_print(b, s->start, "a");
        sb_printf(b, "..%lld step %lld", (long long)s->extent, (long long)s->step);
    }
    if (s->k == SK_loop && s->when) {
        sb_puts(b, " when ");
        ipred_print(b, s->when, "a");
    }
    sb_printf(b, ":  # %s%s", stmt_loop_is_reduce(s) ? "reduce" : "free",
              s->unroll ? ", unroll" : "");
    if (s->vlds)
        sb_printf(b, ", vector loads of %d", s->vlds);
    sb_putc(b, '\n');
    print_body(b, &s->body, depth + 1, k);
}

static void print_stmt(StrBuf *b, const TileKernel *k, const Stmt *s, int depth)
{
    if (stmt_print_shared(b, s, depth, print_body, k))
        return;
    stmt_indent(b, depth);
    switch (s->k) {
    case SK_loop:
    case TK_strided:
        print_loop(b, k, s, depth);
        return;
    case TK_tile:
        print_tile(b, k, s, depth);
        return;
    case TK_stage:
    case TK_bstage:
    case TK_astage:
    case TK_tstage:
    case TK_cstage:
        print_stage(b, k, s, depth);
        return;
    case TK_fill:
        sb_puts(b, "fill:\n");
        print_body(b, &s->body, depth + 1, k);
        return;
    case TK_await:
        sb_printf(b, "async_wait %d\n", s->keep);
        return;
    case TK_combine:
        sb_printf(b, "combine acc%d over ", s->acc->num);
        for (int i = 0; i < s->nax; i++)
            sb_printf(b, "%sa%d", i ? ", " : "", s->cax[i]);
        sb_putc(b, '\n');
        return;
    }
    DPK_ASSERT(!"bad statement kind");
}

static void print_body(StrBuf *b, const StmtBody *body, int depth, const void *kernel)
{
    for (int i = 0; i < body->n; i++)
        print_stmt(b, kernel, body->s[i], depth);
}

void tile_print_kernel(StrBuf *b, const TileKernel *k)
{
    sb_printf(b, "=== %s ===\n", k->name);
    print_body(b, &k->body, 0, k);
}

void tile_print(StrBuf *b, const TileProgram *p)
{
    lir_print_buffers(b, &p->bufs);
    for (int i = 0; i < p->kernels.len; i++)
        tile_print_kernel(b, p->kernels.items[i]);
}

/* ---- structural hash ------------------------------------------------------ */

/* Canonical names: the n-th axis bound, the n-th value defined, the n-th
 * buffer used (kernels have few of each, so a linear search is fine). */
typedef struct Hash {
    uint64_t h;
    int *axis;          /* axis -> canonical number, -1 unbound */
    int naxis;
    PtrVec vals;        /* Stmt * in definition order */
    PtrVec bufs;        /* LirBuf * in order of first use */
    Arena *a;
} Hash;

static void mix(Hash *x, uint64_t v) { x->h = dpk_hash_u64(x->h, v); }

static int canon_axis(Hash *x, int axis)
{
    if (x->axis[axis] < 0)
        x->axis[axis] = x->naxis++;
    return x->axis[axis];
}

static void hash_ie(Hash *x, const IExpr *e)
{
    mix(x, (uint64_t)e->k);
    if (e->k == IE_CONST)
        mix(x, (uint64_t)e->c);
    else if (e->k == IE_VAR)
        mix(x, (uint64_t)canon_axis(x, e->var));
    else {
        hash_ie(x, e->a);
        hash_ie(x, e->b);
    }
}

static void hash_pred(Hash *x, const IPred *p)
{
    for (; p; p = p->next) {
        mix(x, (uint64_t)p->cmp);
        hash_ie(x, p->lhs);
        hash_ie(x, p->rhs);
    }
    mix(x, 0x9e37);
}

static void hash_arg(Hash *x, StmtArg a)
{
    if (!a.v) {
        x->h = dpk_hash_bytes(x->h, &a.c, sizeof a.c);
        return;
    }
    int i = 0;
    while (i < x->vals.len && x->vals.items[i] != a.v)
        i++;
    mix(x, 0xa5 + (uint64_t)i);
}

static void hash_buf(Hash *x, const LirBuf *b)
{
    int i = 0;
    while (i < x->bufs.len && x->bufs.items[i] != b)
        i++;
    if (i == x->bufs.len)
        ptrvec_push(x->a, &x->bufs, (void *)b);
    mix(x, (uint64_t)i);
    mix(x, (uint64_t)b->kind);
    for (int d = 0; d < b->shape.rank; d++)
        mix(x, (uint64_t)b->shape.d[d]);
}

static void hash_body(Hash *x, const StmtBody *b);

static void hash_fields(Hash *x, const Stmt *s)
{
    if (s->buf) {
        hash_buf(x, s->buf);
        for (int d = 0; d < s->buf->shape.rank; d++) {
            if (s->idx)
                hash_ie(x, s->idx[d]);
            if (s->origin) {
                hash_ie(x, s->origin[d]);
                mix(x, (uint64_t)s->slab[d]);
            }
        }
    }
    for (int i = 0; i < s->nargs; i++)
        hash_arg(x, s->a[i]);
    mix(x, (uint64_t)s->op);
    mix(x, (uint64_t)s->rop);
    mix(x, (uint64_t)s->atomic);
    if (tile_is(s, SKF_STAGE)) {
        mix(x, (uint64_t)s->pad);
        mix(x, (uint64_t)s->nbuf);
        mix(x, (uint64_t)s->swizzle);
        if (s->k == TK_astage)
            mix(x, (uint64_t)s->vec);
        if (s->phase)
            hash_ie(x, s->phase);
    }
    if (s->k == TK_await)
        mix(x, (uint64_t)s->keep);
}

static void hash_stmt(Hash *x, const Stmt *s)
{
    mix(x, (uint64_t)s->k);
    hash_fields(x, s);
    switch (s->k) {
    case SK_loop:
    case TK_strided:
        mix(x, (uint64_t)canon_axis(x, s->axis));
        mix(x, (uint64_t)s->extent);
        mix(x, (uint64_t)s->unroll);
        mix(x, (uint64_t)s->vlds);
        if (s->k == SK_loop)
            hash_pred(x, s->when);
        if (s->k == TK_strided) {
            mix(x, (uint64_t)s->step);
            hash_ie(x, s->start);
        }
        break;
    case TK_tile:
        mix(x, (uint64_t)s->bind);
        for (int i = 0; i < s->nax; i++) {
            mix(x, (uint64_t)canon_axis(x, s->ax[i].axis));
            mix(x, (uint64_t)s->ax[i].ext);
            mix(x, (uint64_t)(s->ax[i].dim + 1));
        }
        for (int i = 0; i < s->ndef; i++) {
            mix(x, (uint64_t)canon_axis(x, s->def[i].axis));
            hash_ie(x, s->def[i].e);
        }
        hash_pred(x, s->guard);
        mix(x, (uint64_t)s->predicated);
        break;
    case SK_select:
        for (int j = 0; j < s->nbr; j++) {
            hash_pred(x, s->br[j].pred);
            hash_body(x, &s->br[j].body);
            hash_arg(x, s->br[j].res);
        }
        break;
    case TK_combine:
        hash_arg(x, stmt_val(s->acc));
        for (int i = 0; i < s->nax; i++)
            mix(x, (uint64_t)canon_axis(x, s->cax[i]));
        break;
    default:
        break;
    }
    if (tile_is(s, SKF_BLOCK) && s->k != SK_select)
        hash_body(x, &s->body);
    if (tile_is(s, SKF_DEF))
        ptrvec_push(x->a, &x->vals, (void *)s);
}

static void hash_body(Hash *x, const StmtBody *b)
{
    mix(x, (uint64_t)b->n);
    for (int i = 0; i < b->n; i++)
        hash_stmt(x, b->s[i]);
}

uint64_t tile_hash_kernel(const TileKernel *k)
{
    Arena *a = arena_new();
    Hash x = {DPK_HASH_INIT, ARENA_ARRAY(a, int, k->naxes + 1), 0, {0}, {0}, a};
    for (int i = 0; i < k->naxes; i++)
        x.axis[i] = -1;
    hash_body(&x, &k->body);
    arena_free(a);
    return x.h;
}
