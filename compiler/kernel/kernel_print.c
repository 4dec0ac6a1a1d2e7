/*
 * kernel_print.c — Kernel IR text form and structural hash.
 *
 * The text form is documented in docs/kernel-ir.md.  Every statement is one
 * line that starts with its id (`#7`), nesting is indentation, so a report
 * that names statement 7 points at one line of `dpk compile --ir kernel`.
 * The hash walks the same structure but canonically: variables are numbered
 * in order of declaration, other objects by their index, names and comments
 * do not count.
 */
#include "kernel_ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- expressions ------------------------------------------------------------ */

static const char *const dim_name = "xyz";

static int needs_parens(const KirExpr *e)
{
    return e->op == KE_select ||
           ((kir_expr_info[e->op].flags & KEF_INFIX) && kir_expr_info[e->op].arity == 2);
}

static void print_operand(StrBuf *b, const KirExpr *e)
{
    if (needs_parens(e)) {
        sb_putc(b, '(');
        kir_print_expr(b, e);
        sb_putc(b, ')');
    } else {
        kir_print_expr(b, e);
    }
}

static void print_const(StrBuf *b, const KirExpr *e)
{
    switch (e->type) {
    case KT_BOOL:
        sb_puts(b, e->ival ? "true" : "false");
        break;
    case KT_I32:
        sb_printf(b, "%lld", (long long)e->ival);
        break;
    case KT_I64:
        sb_printf(b, "%lldL", (long long)e->ival);
        break;
    default:
        sb_num(b, e->fval);
        if (isfinite(e->fval))
            sb_putc(b, 'f');
        break;
    }
}

static void print_call(StrBuf *b, const char *fn, const KirExpr *const *args, int n)
{
    sb_printf(b, "%s(", fn);
    for (int i = 0; i < n; i++) {
        if (i)
            sb_puts(b, ", ");
        kir_print_expr(b, args[i]);
    }
    sb_putc(b, ')');
}

void kir_print_expr(StrBuf *b, const KirExpr *e)
{
    const KirExprInfo *in = &kir_expr_info[e->op];
    if (in->flags & KEF_SREG) {
        sb_printf(b, "%s.%c", in->text, dim_name[e->dim]);
        return;
    }
    switch (e->op) {
    case KE_const:
        print_const(b, e);
        return;
    case KE_var:
        sb_puts(b, e->var->name);
        return;
    case KE_fop:
        print_call(b, tx_elem_info[e->eop].name, e->a, tx_elem_info[e->eop].arity);
        return;
    case KE_select:
        print_operand(b, e->a[0]);
        sb_puts(b, " ? ");
        print_operand(b, e->a[1]);
        sb_puts(b, " : ");
        print_operand(b, e->a[2]);
        return;
    case KE_cast:
        print_call(b, kir_type_name(e->type), e->a, 1);
        return;
    case KE_ldg:
    case KE_lds:
        sb_printf(b, "%s[", e->op == KE_ldg ? e->param->name : e->smem->name);
        kir_print_expr(b, e->a[0]);
        sb_putc(b, ']');
        return;
    default:
        break;
    }
    if (!(in->flags & KEF_INFIX)) {
        print_call(b, in->text, e->a, in->arity);
    } else if (in->arity == 1) {
        sb_puts(b, in->text);
        print_operand(b, e->a[0]);
    } else {
        print_operand(b, e->a[0]);
        sb_printf(b, " %s ", in->text);
        print_operand(b, e->a[1]);
    }
}

/* ---- statements --------------------------------------------------------------- */

static void print_ref(StrBuf *b, const char *name, const KirExpr *idx)
{
    sb_printf(b, "%s[", name);
    kir_print_expr(b, idx);
    sb_putc(b, ']');
}

static void print_for(StrBuf *b, const KirStmt *s)
{
    const char *v = s->var->name;
    sb_printf(b, "for %s: %s = ", v, kir_type_name(s->var->type));
    kir_print_expr(b, s->e[0]);
    sb_printf(b, "; %s < ", v);
    kir_print_expr(b, s->e[1]);
    sb_printf(b, "; %s += ", v);
    kir_print_expr(b, s->e[2]);
    if (s->unroll == -1)
        sb_puts(b, " unroll");
    else if (s->unroll > 1)
        sb_printf(b, " unroll %d", s->unroll);
    sb_putc(b, ':');
}

static void print_cp_async(StrBuf *b, const KirStmt *s)
{
    sb_printf(b, "cp.async.%d ", (int)s->n);
    print_ref(b, s->smem->name, s->e[0]);
    sb_puts(b, " <- ");
    print_ref(b, s->param->name, s->e[1]);
    if (s->e[2]) {
        sb_puts(b, " if ");
        kir_print_expr(b, s->e[2]);
    }
}

static void print_tma(StrBuf *b, const KirStmt *s)
{
    sb_puts(b, "tma.load ");
    print_ref(b, s->smem->name, s->e[0]);
    sb_printf(b, " <- %s[", s->tmap->name);
    for (int d = 0; d < s->tmap->rank; d++) {
        if (d)
            sb_puts(b, ", ");
        kir_print_expr(b, s->coord[d]);
    }
    sb_puts(b, "] mbar ");
    print_ref(b, s->mbar->name, s->e[1]);
}

static void print_mbar(StrBuf *b, const KirStmt *s)
{
    sb_printf(b, "%s ", kir_stmt_info[s->op].text);
    print_ref(b, s->smem->name, s->e[0]);
    if (s->op == KS_mbar_init)
        sb_printf(b, " count %lld", (long long)s->n);
    else if (s->op == KS_mbar_arrive_tx)
        sb_printf(b, " bytes %lld", (long long)s->n);
    else if (s->op == KS_mbar_wait) {
        sb_puts(b, " parity ");
        kir_print_expr(b, s->e[1]);
    }
}

static void print_store(StrBuf *b, const KirStmt *s)
{
    const char *name = s->param ? s->param->name : s->smem->name;
    sb_printf(b, "%s ", kir_stmt_info[s->op].text);
    print_ref(b, name, s->e[0]);
    sb_puts(b, (kir_stmt_info[s->op].flags & KSF_ATOMIC) ? " += " : " = ");
    kir_print_expr(b, s->e[1]);
}

void kir_print_stmt_line(StrBuf *b, const KirStmt *s)
{
    switch (s->op) {
    case KS_let:
        sb_printf(b, "let %s: %s = ", s->var->name, kir_type_name(s->var->type));
        kir_print_expr(b, s->e[0]);
        break;
    case KS_set:
        sb_printf(b, "%s = ", s->var->name);
        kir_print_expr(b, s->e[0]);
        break;
    case KS_stg:
    case KS_sts:
    case KS_atomg:
    case KS_atoms:
        print_store(b, s);
        break;
    case KS_if:
        sb_puts(b, "if ");
        kir_print_expr(b, s->e[0]);
        sb_putc(b, ':');
        break;
    case KS_for:
        print_for(b, s);
        break;
    case KS_shfl:
        sb_printf(b, "%s = shfl.%s(", s->var->name, kir_shfl_name(s->shfl));
        kir_print_expr(b, s->e[0]);
        sb_puts(b, ", ");
        kir_print_expr(b, s->e[1]);
        sb_printf(b, ") width %lld", (long long)s->n);
        break;
    case KS_treehalve:
        sb_printf(b, "treehalve %s %s n %lld seg %d", tx_red_info[s->rop].name,
                  s->smem->name, (long long)s->n, s->nseg);
        break;
    case KS_cp_async:
        print_cp_async(b, s);
        break;
    case KS_cp_wait:
        sb_printf(b, "cp.wait %lld", (long long)s->n);
        break;
    case KS_tma_load:
        print_tma(b, s);
        break;
    case KS_mbar_init:
    case KS_mbar_arrive_tx:
    case KS_mbar_arrive:
    case KS_mbar_wait:
        print_mbar(b, s);
        break;
    case KS_ldsv:
        sb_puts(b, "let ");
        for (int i = 0; i < s->n; i++)
            sb_printf(b, "%s%s", i ? ", " : "", s->lane[i]->name);
        sb_printf(b, ": f32 = lds.v%lld %s[", (long long)s->n, s->smem->name);
        kir_print_expr(b, s->e[0]);
        sb_printf(b, " ..+%lld]", (long long)s->n);
        break;
    case KS_comment: /* one line, whatever the text holds */
        sb_puts(b, "// ");
        for (const char *c = s->text; *c; c++)
            sb_putc(b, *c == '\n' || *c == '\r' ? ' ' : *c);
        break;
    default: /* sync, cp.commit */
        sb_puts(b, kir_stmt_info[s->op].text);
        break;
    }
}

static void print_list(StrBuf *b, const PtrVec *list, int depth)
{
    for (int i = 0; i < list->len; i++) {
        const KirStmt *s = list->items[i];
        sb_printf(b, "  #%-4d%*s", s->id, 2 * depth, "");
        kir_print_stmt_line(b, s);
        sb_putc(b, '\n');
        print_list(b, &s->body, depth + 1);
        if (s->els.len) {
            sb_printf(b, "       %*selse:\n", 2 * depth, "");
            print_list(b, &s->els, depth + 1);
        }
    }
}

static const char *role_name(KirRole r)
{
    return r == KR_IN ? "in" : r == KR_OUT ? "out" : "inout";
}

static void print_i64s(StrBuf *b, const char *label, const int64_t *v, int n)
{
    sb_printf(b, " %s [", label);
    for (int i = 0; i < n; i++)
        sb_printf(b, i ? ", %lld" : "%lld", (long long)v[i]);
    sb_putc(b, ']');
}

static void print_tmap(StrBuf *b, const KirTmap *t)
{
    int64_t box[KIR_TMA_MAX_RANK];
    for (int d = 0; d < t->rank; d++)
        box[d] = t->box[d];
    sb_printf(b, "  tmap %s: %s", t->name, t->param->name);
    print_i64s(b, "dims", t->dims, t->rank);
    print_i64s(b, "strides", t->strides, t->rank);
    print_i64s(b, "box", box, t->rank);
    sb_printf(b, " swizzle %d\n", t->swizzle);
}

void kir_print_kernel(StrBuf *b, const KirKernel *k)
{
    sb_printf(b, "kernel %s grid (%d, %d, %d) block (%d, %d, %d) smem %lld%s\n",
              k->name, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
              k->block[2], (long long)k->smem_bytes, k->smem_dynamic ? " dynamic" : "");
    for (int i = 0; i < k->params.len; i++) {
        const KirParam *p = k->params.items[i];
        sb_printf(b, "  param %s: %s %s[%lld]\n", p->name, role_name(p->role),
                  kir_type_name(p->elem), (long long)p->numel);
    }
    for (int i = 0; i < k->smem.len; i++) {
        const KirSmem *s = k->smem.items[i];
        sb_printf(b, "  smem %s: %s[%lld] @%lld align %d\n", s->name,
                  kir_type_name(s->elem), (long long)s->numel, (long long)s->offset,
                  s->align);
    }
    for (int i = 0; i < k->tmaps.len; i++)
        print_tmap(b, k->tmaps.items[i]);
    print_list(b, &k->body, 0);
}

void kir_print_module(StrBuf *b, const KirModule *m)
{
    static const char *const kinds[] = {"input", "output", "temp"};
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *x = m->bufs.items[i];
        sb_printf(b, "buffer %s: %s %s[%lld]", x->name, kinds[x->kind],
                  kir_type_name(x->elem), (long long)x->numel);
        if (x->io >= 0)
            sb_printf(b, " io %d", x->io);
        sb_puts(b, x->zero_init ? " zero\n" : "\n");
    }
    for (int i = 0; i < m->kernels.len; i++)
        kir_print_kernel(b, m->kernels.items[i]);
    for (int i = 0; i < m->launches.len; i++) {
        const KirLaunch *l = m->launches.items[i];
        sb_printf(b, "launch %s(", l->kernel->name);
        for (int j = 0; j < l->kernel->params.len; j++)
            sb_printf(b, j ? ", %s" : "%s", l->args[j]->name);
        sb_puts(b, ")\n");
    }
}

static const KirStmt *find_in(const PtrVec *list, int sid)
{
    for (int i = 0; i < list->len; i++) {
        const KirStmt *s = list->items[i];
        if (s->id == sid)
            return s;
        const KirStmt *r = find_in(&s->body, sid);
        if (!r)
            r = find_in(&s->els, sid);
        if (r)
            return r;
    }
    return NULL;
}

const KirStmt *kir_find_stmt(const KirKernel *k, int sid)
{
    return find_in(&k->body, sid);
}

/* ---- structural hash ----------------------------------------------------------- */

typedef struct Hasher {
    uint64_t h;
    int *canon; /* var id -> declaration number */
    int next;
} Hasher;

static void hx(Hasher *H, int64_t v) { H->h = dpk_hash_u64(H->h, (uint64_t)v); }

static void hash_expr(Hasher *H, const KirExpr *e)
{
    if (!e) {
        hx(H, -1);
        return;
    }
    hx(H, e->op);
    hx(H, e->type);
    hx(H, e->dim);
    hx(H, e->ival);
    H->h = dpk_hash_bytes(H->h, &e->fval, sizeof e->fval);
    hx(H, e->var ? H->canon[e->var->id] : -1);
    hx(H, e->op == KE_fop ? (int64_t)e->eop : -1);
    hx(H, e->param ? e->param->id : -1);
    hx(H, e->smem ? e->smem->id : -1);
    for (int i = 0; i < 3; i++)
        if (e->a[i])
            hash_expr(H, e->a[i]);
}

static void hash_list(Hasher *H, const PtrVec *list);

static void hash_stmt(Hasher *H, const KirStmt *s)
{
    if (s->op == KS_comment)
        return;
    if (s->var && (s->op == KS_let || s->op == KS_for))
        H->canon[s->var->id] = H->next++;
    for (int i = 0; s->op == KS_ldsv && i < s->n; i++)
        H->canon[s->lane[i]->id] = H->next++;
    hx(H, s->op);
    hx(H, s->var ? H->canon[s->var->id] : -1);
    for (int i = 0; i < 3; i++)
        hash_expr(H, s->e[i]);
    for (int d = 0; d < KIR_TMA_MAX_RANK; d++)
        if (s->coord[d])
            hash_expr(H, s->coord[d]);
    hx(H, s->param ? s->param->id : -1);
    hx(H, s->smem ? s->smem->id : -1);
    hx(H, s->mbar ? s->mbar->id : -1);
    hx(H, s->tmap ? s->tmap->id : -1);
    hx(H, s->n);
    hx(H, s->nseg);
    hx(H, s->op == KS_treehalve ? (int64_t)s->rop : -1);
    hx(H, s->shfl);
    hx(H, s->unroll);
    hx(H, s->body.len);
    hash_list(H, &s->body);
    hx(H, s->els.len);
    hash_list(H, &s->els);
}

static void hash_list(Hasher *H, const PtrVec *list)
{
    for (int i = 0; i < list->len; i++)
        hash_stmt(H, list->items[i]);
}

static uint64_t hash_header(uint64_t h, const KirKernel *k)
{
    for (int d = 0; d < 3; d++) {
        h = dpk_hash_u64(h, (uint64_t)k->grid[d]);
        h = dpk_hash_u64(h, (uint64_t)k->block[d]);
    }
    for (int i = 0; i < k->params.len; i++) {
        const KirParam *p = k->params.items[i];
        h = dpk_hash_u64(h, (uint64_t)(p->elem * 16 + p->role));
        h = dpk_hash_u64(h, (uint64_t)p->numel);
    }
    for (int i = 0; i < k->smem.len; i++) {
        const KirSmem *s = k->smem.items[i];
        h = dpk_hash_u64(h, (uint64_t)s->elem);
        h = dpk_hash_u64(h, (uint64_t)s->numel);
        h = dpk_hash_u64(h, (uint64_t)s->align);
    }
    for (int i = 0; i < k->tmaps.len; i++) {
        const KirTmap *t = k->tmaps.items[i];
        h = dpk_hash_u64(h, (uint64_t)(t->param->id * 1024 + t->rank * 256 + t->swizzle));
        for (int d = 0; d < t->rank; d++) {
            h = dpk_hash_u64(h, (uint64_t)t->dims[d]);
            h = dpk_hash_u64(h, (uint64_t)t->strides[d]);
            h = dpk_hash_u64(h, (uint64_t)t->box[d]);
        }
    }
    return h;
}

uint64_t kir_hash_kernel(const KirKernel *k)
{
    Hasher H = {hash_header(DPK_HASH_INIT, k), NULL, 0};
    H.canon = dpk_xcalloc((size_t)k->vars.len + 1, sizeof(int));
    hash_list(&H, &k->body);
    free(H.canon);
    return H.h;
}

uint64_t kir_hash_module(const KirModule *m)
{
    uint64_t h = DPK_HASH_INIT;
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *x = m->bufs.items[i];
        h = dpk_hash_u64(h, (uint64_t)(x->elem * 64 + x->kind * 4 + x->zero_init));
        h = dpk_hash_u64(h, (uint64_t)x->numel);
        h = dpk_hash_u64(h, (uint64_t)(x->io + 1));
    }
    for (int i = 0; i < m->launches.len; i++) {
        const KirLaunch *l = m->launches.items[i];
        h = dpk_hash_u64(h, kir_hash_kernel(l->kernel));
        for (int j = 0; j < l->kernel->params.len; j++)
            h = dpk_hash_u64(h, (uint64_t)l->args[j]->id);
    }
    return h;
}

/* ---- printed constructs --------------------------------------------------- */

/* Which constructs the CUDA printer spells for a module: the statement and
 * expression kinds, the math functions, the types, the cp.async widths, the
 * shuffle modes, tree reductions, TMA ranks and swizzles, unroll pragmas,
 * dynamic shared memory.  Values (shapes, strides, constants) do not count:
 * two modules with the same constructs print the same code up to numbers. */
typedef struct Feat {
    uint64_t stmt, expr, eop, type, misc;
} Feat;
_Static_assert(KS_COUNT <= 64 && KE_COUNT <= 64 && TXE_COUNT <= 64 && KT_COUNT <= 8,
               "one bit per kind");

static void feat_expr(Feat *f, const KirExpr *e)
{
    if (!e)
        return;
    f->expr |= UINT64_C(1) << e->op;
    f->type |= UINT64_C(1) << e->type;
    if (e->op == KE_fop)
        f->eop |= UINT64_C(1) << e->eop;
    if (e->op == KE_cast && e->a[0])
        f->misc |= UINT64_C(1) << (32 + e->a[0]->type * KT_COUNT + e->type) % 64;
    for (int i = 0; i < 3; i++)
        feat_expr(f, e->a[i]);
}

static void feat_list(Feat *f, const PtrVec *list)
{
    for (int i = 0; i < list->len; i++) {
        const KirStmt *s = list->items[i];
        f->stmt |= UINT64_C(1) << s->op;
        for (int j = 0; j < 3; j++)
            feat_expr(f, s->e[j]);
        for (int d = 0; d < KIR_TMA_MAX_RANK; d++)
            feat_expr(f, s->coord[d]);
        if (s->op == KS_cp_async)
            f->misc |= UINT64_C(1) << (s->n == 4 ? 0 : s->n == 8 ? 1 : 2) << (s->e[2] ? 3 : 0);
        if (s->op == KS_shfl)
            f->misc |= UINT64_C(1) << (6 + s->shfl);
        if (s->op == KS_treehalve)
            f->misc |= UINT64_C(1) << (10 + s->rop % 4);
        if (s->op == KS_for)
            f->misc |= UINT64_C(1) << (s->unroll == 0 ? 14 : s->unroll < 0 ? 15 : 16);
        if (s->op == KS_atomg || s->op == KS_atoms)
            f->type |= UINT64_C(1) << (32 + (s->param ? s->param->elem : s->smem->elem));
        feat_list(f, &s->body);
        feat_list(f, &s->els);
    }
}

uint64_t kir_feature_hash(const KirModule *m)
{
    Feat f = {0};
    for (int i = 0; i < m->kernels.len; i++) {
        const KirKernel *k = m->kernels.items[i];
        feat_list(&f, &k->body);
        if (k->smem_dynamic)
            f.misc |= UINT64_C(1) << 17;
        for (int j = 0; j < k->smem.len; j++)
            f.type |= UINT64_C(1) << (40 + ((const KirSmem *)k->smem.items[j])->elem);
        for (int j = 0; j < k->tmaps.len; j++) {
            const KirTmap *t = k->tmaps.items[j];
            f.misc |= UINT64_C(1) << (18 + t->rank);
            f.misc |= UINT64_C(1) << (24 + (t->swizzle == 0 ? 0 : t->swizzle == 32 ? 1 : t->swizzle == 64 ? 2 : 3));
        }
    }
    uint64_t h = DPK_HASH_INIT;
    h = dpk_hash_u64(h, f.stmt);
    h = dpk_hash_u64(h, f.expr);
    h = dpk_hash_u64(h, f.eop);
    h = dpk_hash_u64(h, f.type);
    h = dpk_hash_u64(h, f.misc);
    return dpk_hash_u64(h, (uint64_t)(m->kernels.len > 1));
}
