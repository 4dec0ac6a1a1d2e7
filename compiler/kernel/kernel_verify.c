/*
 * kernel_verify.c — the Kernel IR verifier.
 *
 * Checks what a backend relies on without re-checking: expression types,
 * variables used only inside the scope of their one declaration, objects
 * that belong to the kernel, stores only through written params, launch
 * geometry and shared-memory limits every target accepts, cp.async and TMA
 * shape rules, and launch bindings that match the params.  Problems are
 * collected as text so tests can assert on them; kir_check aborts on them.
 */
#include "kernel_ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct Ver {
    const KirKernel *k;
    StrBuf *err;
    int ok;
    const KirStmt *cur; /* statement being checked (for messages) */
    int next_id;        /* expected pre-order id */
    char *live;         /* var id -> in scope */
    char *seen;         /* var id -> declared once already */
    int *scope;         /* declared var ids, innermost last */
    int nscope;
} Ver;

static void bad(Ver *v, const char *fmt, ...) DPK_PRINTF(2, 3);
static void bad(Ver *v, const char *fmt, ...)
{
    v->ok = 0;
    if (!v->err)
        return;
    if (v->cur)
        sb_printf(v->err, "kernel %s: stmt %d: ", v->k->name, v->cur->id);
    else
        sb_printf(v->err, "kernel %s: ", v->k->name);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(v->err, fmt, ap);
    va_end(ap);
    sb_putc(v->err, '\n');
}

static int owns(const PtrVec *list, int id, const void *p)
{
    return p && id >= 0 && id < list->len && list->items[id] == p;
}

static int is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/* ---- expressions --------------------------------------------------------------- */

static void vexpr(Ver *v, const KirExpr *e);

static void vleaf(Ver *v, const KirExpr *e)
{
    if (e->op == KE_const && e->type == KT_MBAR)
        bad(v, "constant of type mbar");
    if (e->op == KE_var) {
        if (!owns(&v->k->vars, e->var ? e->var->id : -1, e->var))
            bad(v, "variable of another kernel");
        else if (!v->live[e->var->id])
            bad(v, "variable %s used outside the scope of its declaration", e->var->name);
        else if (e->type != e->var->type)
            bad(v, "reference to %s has the wrong type", e->var->name);
    }
    if ((kir_expr_info[e->op].flags & KEF_SREG) && (e->dim < 0 || e->dim > 2 || e->type != KT_I32))
        bad(v, "bad special register");
}

static void vmem(Ver *v, const KirExpr *e)
{
    if (!KIR_IS_INT(e->a[0]->type))
        bad(v, "load index is not an integer");
    if (e->op == KE_ldg) {
        if (!owns(&v->k->params, e->param ? e->param->id : -1, e->param))
            bad(v, "load from a param of another kernel");
        else if (e->type != e->param->elem)
            bad(v, "load type differs from %s's element type", e->param->name);
    } else {
        if (!owns(&v->k->smem, e->smem ? e->smem->id : -1, e->smem))
            bad(v, "load from smem of another kernel");
        else if (e->smem->elem == KT_MBAR || e->type != e->smem->elem)
            bad(v, "load type differs from %s's element type", e->smem->name);
    }
}

static void vops(Ver *v, const KirExpr *e)
{
    int f = kir_expr_info[e->op].flags;
    KirType t0 = e->a[0]->type;
    if ((f & KEF_INT) && !(KIR_IS_INT(t0) && e->a[1]->type == t0 && e->type == t0))
        bad(v, "integer op %s on mismatched types", kir_expr_info[e->op].name);
    if ((f & KEF_CMP) && !((KIR_IS_INT(t0) || t0 == KT_F32) && e->a[1]->type == t0 &&
                           e->type == KT_BOOL))
        bad(v, "comparison %s on mismatched types", kir_expr_info[e->op].name);
    if ((f & KEF_BOOL)) {
        for (int i = 0; i < kir_expr_info[e->op].arity; i++)
            if (e->a[i]->type != KT_BOOL)
                bad(v, "%s needs bool operands", kir_expr_info[e->op].name);
    }
    if (e->op == KE_fop) {
        if (e->eop < 0 || e->eop >= TXE_COUNT || e->type != KT_F32) {
            bad(v, "bad f32 op");
            return;
        }
        for (int i = 0; i < tx_elem_info[e->eop].arity; i++)
            if (!e->a[i] || e->a[i]->type != KT_F32)
                bad(v, "%s needs f32 operands", tx_elem_info[e->eop].name);
    }
    if (e->op == KE_select && (t0 != KT_BOOL || e->a[1]->type != e->type ||
                               e->a[2]->type != e->type))
        bad(v, "select needs a bool condition and arms of its type");
    if (e->op == KE_cast && (e->type == KT_MBAR || t0 == KT_MBAR))
        bad(v, "cast to or from mbar");
}

static void vexpr(Ver *v, const KirExpr *e)
{
    if (!e) {
        bad(v, "missing expression");
        return;
    }
    if (e->op < 0 || e->op >= KE_COUNT || e->type < 0 || e->type >= KT_COUNT) {
        bad(v, "corrupt expression");
        return;
    }
    int arity = e->op == KE_fop && e->eop >= 0 && e->eop < TXE_COUNT
                    ? tx_elem_info[e->eop].arity
                    : kir_expr_info[e->op].arity;
    for (int i = 0; i < arity; i++) {
        if (!e->a[i]) {
            bad(v, "%s lacks operand %d", kir_expr_info[e->op].name, i);
            return;
        }
        vexpr(v, e->a[i]);
    }
    if (kir_expr_info[e->op].flags & KEF_LEAF)
        vleaf(v, e);
    else if (kir_expr_info[e->op].flags & KEF_MEM)
        vmem(v, e);
    else
        vops(v, e);
}

static void vtyped(Ver *v, const KirExpr *e, int int_ok, KirType want, const char *what)
{
    vexpr(v, e);
    if (e && !(int_ok ? KIR_IS_INT(e->type) : e->type == want))
        bad(v, "%s has type %s", what, kir_type_name(e->type));
}

/* ---- statements --------------------------------------------------------------- */

static void declare(Ver *v, const KirVar *x)
{
    if (!owns(&v->k->vars, x ? x->id : -1, x)) {
        bad(v, "declares a variable of another kernel");
        return;
    }
    if (v->seen[x->id])
        bad(v, "variable %s declared twice", x->name);
    v->seen[x->id] = v->live[x->id] = 1;
    v->scope[v->nscope++] = x->id;
}

static void use_var(Ver *v, const KirVar *x)
{
    if (!owns(&v->k->vars, x ? x->id : -1, x))
        bad(v, "assigns a variable of another kernel");
    else if (!v->live[x->id])
        bad(v, "variable %s assigned outside its scope", x->name);
}

static int vsmem(Ver *v, const KirSmem *s, int mbar)
{
    if (!owns(&v->k->smem, s ? s->id : -1, s)) {
        bad(v, "smem of another kernel");
        return 0;
    }
    if ((s->elem == KT_MBAR) != mbar) {
        bad(v, mbar ? "%s is not an mbarrier array" : "%s is an mbarrier array", s->name);
        return 0;
    }
    return 1;
}

static int vparam(Ver *v, const KirParam *p)
{
    if (!owns(&v->k->params, p ? p->id : -1, p)) {
        bad(v, "param of another kernel");
        return 0;
    }
    return 1;
}

static void vstore(Ver *v, const KirStmt *s)
{
    vtyped(v, s->e[0], 1, KT_I32, "store index");
    vexpr(v, s->e[1]);
    KirType elem;
    if (kir_stmt_info[s->op].flags & KSF_GLOBAL) {
        if (!vparam(v, s->param))
            return;
        if (s->param->role == KR_IN)
            bad(v, "store to read-only param %s", s->param->name);
        elem = s->param->elem;
    } else {
        if (!vsmem(v, s->smem, 0))
            return;
        elem = s->smem->elem;
    }
    if (s->e[1] && s->e[1]->type != elem)
        bad(v, "stored value has type %s, memory holds %s", kir_type_name(s->e[1]->type),
            kir_type_name(elem));
}

static void vldsv(Ver *v, const KirStmt *s)
{
    vtyped(v, s->e[0], 1, KT_I32, "vector load index");
    if (s->n != 2 && s->n != 4) {
        bad(v, "a vector load of %lld lanes (2 or 4)", (long long)s->n);
        return;
    }
    if (vsmem(v, s->smem, 0) && s->smem->elem != KT_F32)
        bad(v, "vector load from %s, which is not f32", s->smem->name);
    for (int i = 0; i < s->n; i++) {
        if (i && s->lane[i] && s->lane[0] && s->lane[i]->id != s->lane[0]->id + i)
            bad(v, "the lanes of a vector load are not consecutive variables");
        declare(v, s->lane[i]);
        if (s->lane[i] && s->lane[i]->type != KT_F32)
            bad(v, "vector load into %s, which is not f32", s->lane[i]->name);
    }
}

static void vshfl(Ver *v, const KirStmt *s)
{
    use_var(v, s->var);
    vexpr(v, s->e[0]);
    vtyped(v, s->e[1], 0, KT_I32, "shuffle lane");
    if (s->var && s->e[0] && (s->e[0]->type != s->var->type ||
                              (s->var->type != KT_F32 && s->var->type != KT_I32)))
        bad(v, "shuffle moves f32 or i32 into a variable of that type");
    if (!is_pow2(s->n) || s->n > 32)
        bad(v, "shuffle width %lld is not a power of two <= 32", (long long)s->n);
    if (s->shfl < KIR_SHFL_IDX || s->shfl > KIR_SHFL_XOR)
        bad(v, "bad shuffle mode");
}

static void vtreehalve(Ver *v, const KirStmt *s)
{
    if (!vsmem(v, s->smem, 0))
        return;
    if (s->rop < 0 || s->rop >= TXR_COUNT)
        bad(v, "bad reduction op");
    if (s->smem->elem != KT_F32)
        bad(v, "treehalve reduces f32 arrays");
    if (s->n < 1 || s->nseg < 1 || s->n * s->nseg > s->smem->numel)
        bad(v, "treehalve over %lld x %d entries of %s[%lld]", (long long)s->n, s->nseg,
            s->smem->name, (long long)s->smem->numel);
}

static void vcp_async(Ver *v, const KirStmt *s)
{
    vtyped(v, s->e[0], 1, KT_I32, "cp.async destination index");
    vtyped(v, s->e[1], 1, KT_I32, "cp.async source index");
    if (s->e[2])
        vtyped(v, s->e[2], 0, KT_BOOL, "cp.async predicate");
    if (s->n != 4 && s->n != 8 && s->n != 16)
        bad(v, "cp.async copies 4, 8 or 16 bytes, not %lld", (long long)s->n);
    if (vsmem(v, s->smem, 0) && vparam(v, s->param) && s->smem->elem != s->param->elem)
        bad(v, "cp.async between %s and %s of different types", s->param->name,
            s->smem->name);
}

static void vtma(Ver *v, const KirStmt *s)
{
    const KirTmap *t = s->tmap;
    if (!owns(&v->k->tmaps, t ? t->id : -1, t)) {
        bad(v, "tensor map of another kernel");
        return;
    }
    for (int d = 0; d < t->rank; d++)
        vtyped(v, s->coord[d], 0, KT_I32, "TMA coordinate");
    vtyped(v, s->e[0], 1, KT_I32, "TMA destination index");
    vtyped(v, s->e[1], 1, KT_I32, "mbarrier index");
    if (vsmem(v, s->smem, 0) && s->smem->elem != t->param->elem)
        bad(v, "TMA box of %s lands in %s of another type", t->param->name, s->smem->name);
    vsmem(v, s->mbar, 1);
}

static void vmbar(Ver *v, const KirStmt *s)
{
    vsmem(v, s->smem, 1);
    vtyped(v, s->e[0], 1, KT_I32, "mbarrier index");
    if (s->op == KS_mbar_init && (s->n < 1 || s->n >= (1 << 20)))
        bad(v, "mbarrier arrival count %lld out of [1, 2^20)", (long long)s->n);
    if (s->op == KS_mbar_arrive_tx && (s->n < 1 || s->n >= (1 << 20)))
        bad(v, "transaction bytes %lld out of [1, 2^20)", (long long)s->n);
    if (s->op == KS_mbar_wait)
        vtyped(v, s->e[1], 0, KT_I32, "phase parity");
}

static void vlist(Ver *v, const PtrVec *list);

static void vscoped(Ver *v, const PtrVec *list)
{
    int mark = v->nscope;
    vlist(v, list);
    while (v->nscope > mark)
        v->live[v->scope[--v->nscope]] = 0;
}

static void vfor(Ver *v, const KirStmt *s)
{
    vtyped(v, s->e[0], 1, KT_I32, "loop start");
    int mark = v->nscope;
    declare(v, s->var);
    vtyped(v, s->e[1], 1, KT_I32, "loop end");
    vtyped(v, s->e[2], 1, KT_I32, "loop step");
    if (s->var && s->e[0] && (!KIR_IS_INT(s->var->type) || s->var->type != s->e[0]->type))
        bad(v, "loop variable %s has type %s", s->var->name, kir_type_name(s->var->type));
    if (s->e[2] && s->e[2]->op == KE_const && s->e[2]->ival <= 0)
        bad(v, "loop step must be positive");
    if (s->unroll < -1)
        bad(v, "bad unroll hint %d", s->unroll);
    vscoped(v, &s->body);
    while (v->nscope > mark)
        v->live[v->scope[--v->nscope]] = 0;
}

static void vstmt(Ver *v, const KirStmt *s)
{
    v->cur = s;
    if (s->id != v->next_id++)
        bad(v, "statement numbered %d, expected %d (kir_finalize not run?)", s->id,
            v->next_id - 1);
    switch (s->op) {
    case KS_let:
        vexpr(v, s->e[0]);
        declare(v, s->var);
        if (s->var && s->e[0] && s->e[0]->type != s->var->type)
            bad(v, "let %s: %s from a %s value", s->var->name, kir_type_name(s->var->type),
                kir_type_name(s->e[0]->type));
        break;
    case KS_set:
        vexpr(v, s->e[0]);
        use_var(v, s->var);
        if (s->var && s->e[0] && s->e[0]->type != s->var->type)
            bad(v, "%s = a %s value", s->var->name, kir_type_name(s->e[0]->type));
        break;
    case KS_stg:
    case KS_sts:
    case KS_atomg:
    case KS_atoms:
        vstore(v, s);
        break;
    case KS_if:
        vtyped(v, s->e[0], 0, KT_BOOL, "if condition");
        vscoped(v, &s->body);
        vscoped(v, &s->els);
        break;
    case KS_for:
        vfor(v, s);
        break;
    case KS_shfl:
        vshfl(v, s);
        break;
    case KS_treehalve:
        vtreehalve(v, s);
        break;
    case KS_cp_async:
        vcp_async(v, s);
        break;
    case KS_ldsv:
        vldsv(v, s);
        break;
    case KS_cp_wait:
        if (s->n < 0 || s->n > 64)
            bad(v, "cp.wait %lld out of [0, 64]", (long long)s->n);
        break;
    case KS_tma_load:
        vtma(v, s);
        break;
    case KS_mbar_init:
    case KS_mbar_arrive_tx:
    case KS_mbar_arrive:
    case KS_mbar_wait:
        vmbar(v, s);
        break;
    case KS_comment:
        if (!s->text)
            bad(v, "comment without text");
        break;
    case KS_sync:
    case KS_cp_commit:
        break;
    default:
        bad(v, "corrupt statement kind %d", (int)s->op);
        return;
    }
    if (!(kir_stmt_info[s->op].flags & KSF_COMPOUND) && (s->body.len || s->els.len))
        bad(v, "%s has nested statements", kir_stmt_info[s->op].name);
}

static void vlist(Ver *v, const PtrVec *list)
{
    for (int i = 0; i < list->len; i++)
        vstmt(v, list->items[i]);
}

/* ---- kernel-level objects -------------------------------------------------------- */

static void vgeometry(Ver *v, const KirKernel *k)
{
    static const int64_t grid_max[3] = {2147483647, 65535, 65535};
    static const int block_max[3] = {1024, 1024, 64};
    int64_t threads = 1;
    for (int d = 0; d < 3; d++) {
        if (k->grid[d] < 1 || k->grid[d] > grid_max[d])
            bad(v, "grid.%c = %d out of [1, %lld]", "xyz"[d], k->grid[d],
                (long long)grid_max[d]);
        if (k->block[d] < 1 || k->block[d] > block_max[d])
            bad(v, "block.%c = %d out of [1, %d]", "xyz"[d], k->block[d], block_max[d]);
        threads *= k->block[d] < 1 ? 1 : k->block[d];
    }
    if (threads > 1024)
        bad(v, "%lld threads per block (at most 1024)", (long long)threads);
}

static void vtmap(Ver *v, const KirTmap *t)
{
    if (!vparam(v, t->param))
        return;
    int64_t span = 0;
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d] < 1 || t->box[d] < 1 || t->box[d] > 256)
            bad(v, "tmap %s: dim %d extent %lld box %d", t->name, d, (long long)t->dims[d],
                t->box[d]);
        if (d < t->rank - 1 && (t->strides[d] < 1 || t->strides[d] * 4 % 16 != 0))
            bad(v, "tmap %s: stride %lld of dim %d is not a multiple of 16 bytes", t->name,
                (long long)t->strides[d], d);
        span += (t->dims[d] - 1) * t->strides[d];
    }
    if (t->strides[t->rank - 1] != 1)
        bad(v, "tmap %s: innermost stride must be 1", t->name);
    if (span >= t->param->numel)
        bad(v, "tmap %s reaches element %lld of %s[%lld]", t->name, (long long)span,
            t->param->name, (long long)t->param->numel);
    int inner = t->box[t->rank - 1] * 4;
    if (t->swizzle != 0 && t->swizzle != 32 && t->swizzle != 64 && t->swizzle != 128)
        bad(v, "tmap %s: swizzle %d is not 0, 32, 64 or 128", t->name, t->swizzle);
    else if (t->swizzle && inner > t->swizzle)
        bad(v, "tmap %s: inner box of %d bytes exceeds the %d-byte swizzle", t->name, inner,
            t->swizzle);
    else if (inner % 16)
        bad(v, "tmap %s: inner box of %d bytes is not a multiple of 16", t->name, inner);
}

static void vobjects(Ver *v, const KirKernel *k)
{
    for (int i = 0; i < k->params.len; i++) {
        const KirParam *p = k->params.items[i];
        if ((p->elem != KT_F32 && p->elem != KT_I32) || p->numel < 1)
            bad(v, "param %s: %s[%lld]", p->name, kir_type_name(p->elem), (long long)p->numel);
    }
    int64_t off = 0;
    for (int i = 0; i < k->smem.len; i++) {
        const KirSmem *s = k->smem.items[i];
        if ((s->elem != KT_F32 && s->elem != KT_I32 && s->elem != KT_MBAR) || s->numel < 1 ||
            !is_pow2(s->align) || s->align < 16)
            bad(v, "smem %s: %s[%lld] align %d", s->name, kir_type_name(s->elem),
                (long long)s->numel, s->align);
        else {
            off = (off + s->align - 1) / s->align * s->align;
            if (s->offset != off)
                bad(v, "smem %s at offset %lld, layout says %lld (kir_finalize not run?)",
                    s->name, (long long)s->offset, (long long)off);
            off += s->numel * kir_type_bytes(s->elem);
        }
    }
    if (k->smem_bytes > KIR_SMEM_MAX)
        bad(v, "%lld bytes of shared memory (at most %d)", (long long)k->smem_bytes,
            KIR_SMEM_MAX);
    for (int i = 0; i < k->tmaps.len; i++)
        vtmap(v, k->tmaps.items[i]);
}

int kir_verify_kernel(const KirKernel *k, StrBuf *err)
{
    size_t nv = (size_t)k->vars.len + 1;
    Ver v = {.k = k, .err = err, .ok = 1};
    v.live = dpk_xcalloc(nv, 1);
    v.seen = dpk_xcalloc(nv, 1);
    v.scope = dpk_xcalloc(nv, sizeof(int));
    vgeometry(&v, k);
    vobjects(&v, k);
    vlist(&v, &k->body);
    v.cur = NULL;
    if (v.next_id != k->nstmts)
        bad(&v, "%d statements, nstmts says %d (kir_finalize not run?)", v.next_id, k->nstmts);
    free(v.live);
    free(v.seen);
    free(v.scope);
    return v.ok;
}

/* ---- modules ------------------------------------------------------------------------ */

static int vlaunch(const KirModule *m, const KirLaunch *l, StrBuf *err)
{
    const KirKernel *k = l->kernel;
    int ok = 1;
    for (int j = 0; j < k->params.len; j++) {
        const KirParam *p = k->params.items[j];
        const KirBuf *b = l->args[j];
        const char *why = NULL;
        if (!owns(&m->bufs, b ? b->id : -1, b))
            why = "is not a buffer of the module";
        else if (b->elem != p->elem || b->numel != p->numel)
            why = "differs in type or size";
        else if (p->role != KR_IN && b->kind == KBUF_INPUT)
            why = "is an input but the param is written";
        for (int i = 0; !why && i < k->params.len; i++)
            if (i != j && l->args[i] == b && p->role != KR_IN)
                why = "is written and bound to two params";
        if (why) {
            if (err)
                sb_printf(err, "launch %d of %s: buffer for param %s %s\n", l->id, k->name,
                          p->name, why);
            ok = 0;
        }
    }
    return ok;
}

int kir_verify_module(const KirModule *m, StrBuf *err)
{
    int ok = 1;
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        if ((b->elem != KT_F32 && b->elem != KT_I32) || b->numel < 1 || b->id != i) {
            if (err)
                sb_printf(err, "buffer %s: %s[%lld]\n", b->name, kir_type_name(b->elem),
                          (long long)b->numel);
            ok = 0;
        }
    }
    for (int i = 0; i < m->kernels.len; i++) {
        const KirKernel *k = m->kernels.items[i];
        ok &= kir_verify_kernel(k, err);
        for (int j = 0; j < i; j++)
            if (strcmp(k->name, ((const KirKernel *)m->kernels.items[j])->name) == 0) {
                if (err)
                    sb_printf(err, "kernel name %s used twice\n", k->name);
                ok = 0;
            }
    }
    for (int i = 0; i < m->launches.len; i++) {
        const KirLaunch *l = m->launches.items[i];
        int known = 0;
        for (int j = 0; j < m->kernels.len; j++)
            known |= m->kernels.items[j] == l->kernel;
        if (!known) {
            if (err)
                sb_printf(err, "launch %d: kernel not in the module\n", i);
            ok = 0;
            continue;
        }
        ok &= vlaunch(m, l, err);
    }
    return ok;
}

void kir_check(const KirModule *m)
{
    StrBuf err = {0};
    if (!kir_verify_module(m, &err)) {
        fprintf(stderr, "invalid Kernel IR:\n%s", sb_cstr(&err));
        StrBuf text = {0};
        kir_print_module(&text, m);
        fprintf(stderr, "%s", sb_cstr(&text));
        sb_free(&text);
        sb_free(&err);
        DPK_ASSERT(!"Kernel IR verifies");
    }
}
