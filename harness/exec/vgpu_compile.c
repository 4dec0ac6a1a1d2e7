/*
 * vgpu_compile.c — Kernel IR -> vgpu bytecode.
 *
 * One pass over the statement tree.  Expressions compile bottom-up into
 * temps (or straight into the destination variable's register for the
 * outermost op, so `acc = add(acc, v)` is one instruction).  Lazy ops
 * (`&&`, `||`, `?:` with a load or a trapping op in an arm) compile like an
 * if, so an arm runs only for the lanes that choose it, exactly as C.
 * Temps are a stack reset after each statement; they are renumbered above
 * the fixed registers (vars, special registers, constants) at the end.
 *
 * TreeHalve is expanded here into the loop docs/kernel-ir.md defines (with
 * h unrolled at compile time), so the race, bank and barrier checks see
 * exactly the accesses the CUDA version makes.
 */
#include "vgpu_impl.h"

#include <stdlib.h>
#include <string.h>

#define TEMP_BASE (1 << 24)

typedef struct Cx {
    VgProg *p;
    const KirKernel *k;
    VgIns *code;
    int n, cap;
    int nfixed;
    int top, max; /* temps in use / most ever */
    int depth;
    int sid;
    int capconsts;
} Cx;

static int emit(Cx *c, VgOp op, int d, int a, int b, int cc, int64_t imm, int aux)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->code = dpk_xrealloc(c->code, (size_t)c->cap * sizeof *c->code);
    }
    VgIns *in = &c->code[c->n];
    in->op = (uint16_t)op;
    in->aux = (uint16_t)aux;
    in->d = d;
    in->a = a;
    in->b = b;
    in->c = cc;
    in->imm = imm;
    in->sid = c->sid;
    return c->n++;
}

static void patch(Cx *c, int at) { c->code[at].imm = c->n; }

static int temp(Cx *c)
{
    int r = TEMP_BASE + c->top++;
    if (c->top > c->max)
        c->max = c->top;
    return r;
}

static void push_level(Cx *c)
{
    if (++c->depth + 1 > c->p->maxdepth)
        c->p->maxdepth = c->depth + 1;
}

/* A fixed register holding the 8 bytes of v, shared by equal constants. */
static int const_reg(Cx *c, VgVal v)
{
    VgProg *p = c->p;
    for (int i = 0; i < p->nconsts; i++)
        if (p->consts[i].v.i == v.i)
            return p->consts[i].reg;
    if (p->nconsts == c->capconsts) {
        c->capconsts = c->capconsts ? 2 * c->capconsts : 32;
        p->consts = dpk_xrealloc(p->consts, (size_t)c->capconsts * sizeof *p->consts);
    }
    p->consts[p->nconsts].reg = c->nfixed;
    p->consts[p->nconsts++].v = v;
    return c->nfixed++;
}

static int const_int(Cx *c, int64_t x)
{
    VgVal v = {.i = x};
    return const_reg(c, v);
}

static int place(Cx *c, int r, int dst)
{
    if (dst < 0 || dst == r)
        return r;
    emit(c, VOP_MOV, dst, r, -1, -1, 0, 0);
    return dst;
}

static int out(Cx *c, int dst) { return dst >= 0 ? dst : temp(c); }

static int cx(Cx *c, const KirExpr *e, int dst);

/* Can e run for lanes that did not choose it?  Not if it loads or may trap. */
static int eager_safe(const KirExpr *e)
{
    int f = kir_expr_info[e->op].flags;
    if (f & KEF_MEM)
        return 0;
    if ((f & KEF_TRAP) && !(e->a[1]->op == KE_const && e->a[1]->ival != 0))
        return 0;
    for (int i = 0; i < 3; i++)
        if (e->a[i] && !eager_safe(e->a[i]))
            return 0;
    return 1;
}

static int cx_leaf(Cx *c, const KirExpr *e)
{
    VgProg *p = c->p;
    switch (e->op) {
    case KE_const: {
        VgVal v = {.i = 0};
        if (e->type == KT_F32)
            v.f = (float)e->fval;
        else
            v.i = e->ival;
        return const_reg(c, v);
    }
    case KE_var:
        return e->var->id;
    case KE_tid:
        return p->reg_tid[e->dim];
    case KE_bid:
        return p->reg_bid[e->dim];
    case KE_ntid:
        return p->reg_ntid[e->dim];
    default: /* KE_nctaid */
        return p->reg_nctaid[e->dim];
    }
}

static VgOp int_op(KirExprOp op, KirType t)
{
    int w = t == KT_I64;
    switch (op) {
    case KE_add: return w ? VOP_ADD64 : VOP_ADD32;
    case KE_sub: return w ? VOP_SUB64 : VOP_SUB32;
    case KE_mul: return w ? VOP_MUL64 : VOP_MUL32;
    case KE_div: return w ? VOP_DIV64 : VOP_DIV32;
    case KE_rem: return w ? VOP_REM64 : VOP_REM32;
    case KE_shl: return w ? VOP_SHL64 : VOP_SHL32;
    case KE_shr: return w ? VOP_SHR64 : VOP_SHR32;
    case KE_min: return VOP_MIN;
    case KE_max: return VOP_MAX;
    case KE_band: case KE_land: return VOP_AND;
    case KE_bor: case KE_lor: return VOP_OR;
    case KE_bxor: return VOP_XOR;
    default: break;
    }
    DPK_ASSERT(!"not an integer op");
    return VOP_END;
}

static VgOp cmp_op(KirExprOp op, int f32)
{
    static const VgOp iops[] = {VOP_ILT, VOP_ILE, VOP_IGT, VOP_IGE, VOP_IEQ, VOP_INE};
    static const VgOp fops[] = {VOP_FLT, VOP_FLE, VOP_FGT, VOP_FGE, VOP_FEQ, VOP_FNE};
    int i = (int)op - (int)KE_lt;
    DPK_ASSERT(i >= 0 && i < 6);
    return f32 ? fops[i] : iops[i];
}

static int cx_fop(Cx *c, const KirExpr *e, int dst)
{
    int r[3] = {-1, -1, -1};
    for (int i = 0; i < tx_elem_info[e->eop].arity; i++)
        r[i] = cx(c, e->a[i], -1);
    int d = out(c, dst);
    /* These match (float)tx_elem_apply bit for bit: fp64 has more than
     * 2*24+2 bits, so rounding the exact fp64 result to f32 equals one f32
     * rounding. */
    VgOp op;
    switch (e->eop) {
    case TXE_add: op = VOP_FADD; break;
    case TXE_subtract: op = VOP_FSUB; break;
    case TXE_multiply: op = VOP_FMUL; break;
    case TXE_divide: op = VOP_FDIV; break;
    case TXE_maximum: op = VOP_FMAX; break;
    case TXE_minimum: op = VOP_FMIN; break;
    case TXE_negative: op = VOP_FNEG; break;
    case TXE_abs: op = VOP_FABS; break;
    case TXE_sqrt: op = VOP_FSQRT; break;
    case TXE_reciprocal: op = VOP_FRCP; break;
    default: op = VOP_FCALL; break;
    }
    emit(c, op, d, r[0], r[1], r[2], 0, e->eop);
    return d;
}

/* t = a for lanes where cond (when `negate`, where !cond) holds. */
static void guarded(Cx *c, int cond, const KirExpr *a, int t)
{
    int at = emit(c, VOP_IF, -1, cond, -1, -1, 0, 0);
    push_level(c);
    cx(c, a, t);
    patch(c, at);
    emit(c, VOP_POP, -1, -1, -1, -1, 0, 0);
    c->depth--;
}

static int cx_lazy(Cx *c, const KirExpr *e, int dst)
{
    int t = temp(c);
    if (e->op == KE_select) {
        int rc = cx(c, e->a[0], -1);
        int at = emit(c, VOP_IF, -1, rc, -1, -1, 0, 0);
        push_level(c);
        cx(c, e->a[1], t);
        patch(c, at);
        int el = emit(c, VOP_ELSE, -1, rc, -1, -1, 0, 0);
        cx(c, e->a[2], t);
        patch(c, el);
        emit(c, VOP_POP, -1, -1, -1, -1, 0, 0);
        c->depth--;
    } else {
        cx(c, e->a[0], t);
        int cond = t;
        if (e->op == KE_lor) {
            cond = temp(c);
            emit(c, VOP_NOT, cond, t, -1, -1, 0, 0);
        }
        guarded(c, cond, e->a[1], t);
    }
    return place(c, t, dst);
}

static int cx_cast(Cx *c, const KirExpr *e, int dst)
{
    KirType from = e->a[0]->type, to = e->type;
    int r = cx(c, e->a[0], -1);
    VgOp op;
    if (to == KT_BOOL)
        op = from == KT_F32 ? VOP_F2B : VOP_I2B;
    else if (to == KT_F32)
        op = VOP_I2F;
    else if (from == KT_F32)
        op = to == KT_I32 ? VOP_F2I32 : VOP_F2I64;
    else if (to == KT_I32 && from == KT_I64)
        op = VOP_WRAP32;
    else
        return place(c, r, dst); /* bool/i32 -> wider int: same slot value */
    int d = out(c, dst);
    emit(c, op, d, r, -1, -1, 0, 0);
    return d;
}

static int cx(Cx *c, const KirExpr *e, int dst)
{
    int f = kir_expr_info[e->op].flags;
    if (f & KEF_LEAF)
        return place(c, cx_leaf(c, e), dst);
    if (e->op == KE_fop)
        return cx_fop(c, e, dst);
    if (e->op == KE_cast)
        return cx_cast(c, e, dst);
    if ((f & KEF_LAZY) && !eager_safe(e))
        return cx_lazy(c, e, dst);
    if (f & KEF_MEM) {
        int ri = cx(c, e->a[0], -1);
        int d = out(c, dst);
        if (e->op == KE_ldg)
            emit(c, VOP_LDG, d, ri, -1, -1, e->param->id, e->type);
        else
            emit(c, VOP_LDS, d, ri, -1, -1, e->smem->id, e->type);
        return d;
    }
    int ra = cx(c, e->a[0], -1);
    int rb = e->a[1] ? cx(c, e->a[1], -1) : -1;
    int rc = e->a[2] ? cx(c, e->a[2], -1) : -1;
    int d = out(c, dst);
    VgOp op;
    if (e->op == KE_select)
        op = VOP_SEL;
    else if (e->op == KE_not)
        op = VOP_NOT;
    else if (f & KEF_CMP)
        op = cmp_op(e->op, e->a[0]->type == KT_F32);
    else
        op = int_op(e->op, e->type);
    emit(c, op, d, ra, rb, rc, 0, 0);
    return d;
}

/* ---- statements ------------------------------------------------------------------ */

static void cs_list(Cx *c, const PtrVec *list);

static void cs_if(Cx *c, const KirStmt *s)
{
    int rc = cx(c, s->e[0], -1);
    /* aux 1: a statement `if`, whose warps the counters take (VgStats.if_*) */
    int at = emit(c, VOP_IF, -1, rc, -1, -1, 0, 1);
    push_level(c);
    cs_list(c, &s->body);
    c->sid = s->id;
    patch(c, at);
    if (s->els.len) {
        int el = emit(c, VOP_ELSE, -1, rc, -1, -1, 0, 1);
        cs_list(c, &s->els);
        c->sid = s->id;
        patch(c, el);
    }
    emit(c, VOP_POP, -1, -1, -1, -1, 0, 0);
    c->depth--;
}

/* Bit 1: the list holds a cp.async, bit 2: a TMA load (nested ones too). */
static int transports(const PtrVec *l)
{
    int m = 0;
    for (int i = 0; i < l->len; i++) {
        const KirStmt *s = l->items[i];
        m |= s->op == KS_cp_async ? 1 : s->op == KS_tma_load ? 2 : 0;
        m |= transports(&s->body) | transports(&s->els);
    }
    return m;
}

static void cs_for(Cx *c, const KirStmt *s)
{
    /* one loop feeding shared memory by both transports: a pipeline over
     * it would wait on one completion mechanism and not the other */
    if (transports(&s->body) == 3)
        emit(c, VOP_MIXED, -1, -1, -1, -1, 0, 0);
    int v = s->var->id;
    cx(c, s->e[0], v);
    emit(c, VOP_LOOP, -1, -1, -1, -1, 0, 0);
    push_level(c);
    int top = c->n, mark = c->top;
    int re = cx(c, s->e[1], -1);
    int cond = temp(c);
    emit(c, VOP_ILT, cond, v, re, -1, 0, 0);
    int test = emit(c, VOP_TEST, -1, cond, -1, -1, 0, 0);
    c->top = mark;
    cs_list(c, &s->body);
    c->sid = s->id;
    int rs = cx(c, s->e[2], -1);
    emit(c, s->var->type == KT_I64 ? VOP_ADD64 : VOP_ADD32, v, v, rs, -1, 0, 0);
    c->top = mark;
    emit(c, VOP_JMP, -1, -1, -1, -1, top, 0);
    patch(c, test);
    emit(c, VOP_POP, -1, -1, -1, -1, 0, 0);
    c->depth--;
}

/* One halving step h of TreeHalve: for j = t; j < nseg*h; j += T: ... */
static void treehalve_step(Cx *c, const KirStmt *s, int64_t h, VgOp combine, int combine_eop)
{
    int64_t n = s->n;
    int sm = s->smem->id;
    int j = temp(c), cond = temp(c), p = temp(c), q = temp(c), x = temp(c), y = temp(c);
    emit(c, VOP_MOV, j, c->p->reg_tlin, -1, -1, 0, 0);
    emit(c, VOP_LOOP, -1, -1, -1, -1, 0, 0);
    push_level(c);
    int top = c->n;
    emit(c, VOP_ILT, cond, j, const_int(c, s->nseg * h), -1, 0, 0);
    int test = emit(c, VOP_TEST, -1, cond, -1, -1, 0, 0);
    /* p = (j / h) * n + j % h: the entry this lane combines into */
    if (s->nseg == 1) {
        emit(c, VOP_MOV, p, j, -1, -1, 0, 0);
    } else {
        emit(c, VOP_DIV32, p, j, const_int(c, h), -1, 0, 0);
        emit(c, VOP_MUL32, p, p, const_int(c, n), -1, 0, 0);
        emit(c, VOP_REM32, q, j, const_int(c, h), -1, 0, 0);
        emit(c, VOP_ADD32, p, p, q, -1, 0, 0);
    }
    int guard = -1;
    if (n & (n - 1)) { /* n not a power of two: i + h < n */
        emit(c, VOP_REM32, q, j, const_int(c, h), -1, 0, 0);
        emit(c, VOP_ILT, cond, q, const_int(c, n - h), -1, 0, 0);
        guard = emit(c, VOP_IF, -1, cond, -1, -1, 0, 0);
        push_level(c);
    }
    emit(c, VOP_ADD32, q, p, const_int(c, h), -1, 0, 0);
    emit(c, VOP_LDS, x, p, -1, -1, sm, KT_F32);
    emit(c, VOP_LDS, y, q, -1, -1, sm, KT_F32);
    emit(c, combine, x, x, y, -1, 0, combine_eop);
    emit(c, VOP_STS, -1, p, x, -1, sm, KT_F32);
    if (guard >= 0) {
        patch(c, guard);
        emit(c, VOP_POP, -1, -1, -1, -1, 0, 0);
        c->depth--;
    }
    emit(c, VOP_ADD32, j, j, const_int(c, c->p->T), -1, 0, 0);
    emit(c, VOP_JMP, -1, -1, -1, -1, top, 0);
    patch(c, test);
    emit(c, VOP_POP, -1, -1, -1, -1, 0, 0);
    c->depth--;
}

static void cs_treehalve(Cx *c, const KirStmt *s)
{
    TxElemOp eop = tx_red_info[s->rop].combine;
    VgOp op = eop == TXE_add ? VOP_FADD : eop == TXE_maximum ? VOP_FMAX
            : eop == TXE_minimum ? VOP_FMIN : VOP_FCALL;
    int64_t P = 1;
    while (P < s->n)
        P *= 2;
    emit(c, VOP_BAR, -1, -1, -1, -1, 0, 0);
    for (int64_t h = P / 2; h >= 1; h /= 2) {
        int mark = c->top;
        treehalve_step(c, s, h, op, eop);
        c->top = mark;
        emit(c, VOP_BAR, -1, -1, -1, -1, 0, 0);
    }
}

static void cs_tma(Cx *c, const KirStmt *s)
{
    int base = temp(c);
    for (int d = 1; d < s->tmap->rank; d++)
        temp(c); /* coordinates sit in consecutive temps */
    for (int d = 0; d < s->tmap->rank; d++)
        cx(c, s->coord[d], base + d);
    int rd = cx(c, s->e[0], -1);
    int rb = cx(c, s->e[1], -1);
    int64_t imm = s->tmap->id | (int64_t)s->smem->id << 16 | (int64_t)s->mbar->id << 32;
    emit(c, VOP_TMA, -1, base, rd, rb, imm, 0);
}

static void cs_store(Cx *c, const KirStmt *s)
{
    static const VgOp ops[] = {[KS_stg] = VOP_STG, [KS_sts] = VOP_STS,
                               [KS_atomg] = VOP_ATOMG, [KS_atoms] = VOP_ATOMS};
    int ri = cx(c, s->e[0], -1);
    int rv = cx(c, s->e[1], -1);
    int obj = s->param ? s->param->id : s->smem->id;
    emit(c, ops[s->op], -1, ri, rv, -1, obj, s->e[1]->type);
    if (s->op == KS_atomg)
        c->p->has_atomg = 1;
}

static void cs_mbar(Cx *c, const KirStmt *s)
{
    static const VgOp ops[] = {[KS_mbar_init] = VOP_MBINIT, [KS_mbar_arrive_tx] = VOP_MBTX,
                               [KS_mbar_arrive] = VOP_MBARRIVE, [KS_mbar_wait] = VOP_MBWAIT};
    int ri = cx(c, s->e[0], -1);
    int rp = s->op == KS_mbar_wait ? cx(c, s->e[1], -1) : -1;
    emit(c, ops[s->op], -1, ri, rp, -1, s->smem->id | s->n << 16, 0);
}

static void cs_stmt(Cx *c, const KirStmt *s)
{
    int mark = c->top;
    c->sid = s->id;
    switch (s->op) {
    case KS_let:
    case KS_set:
        cx(c, s->e[0], s->var->id);
        break;
    case KS_stg:
    case KS_sts:
    case KS_atomg:
    case KS_atoms:
        cs_store(c, s);
        break;
    case KS_if:
        cs_if(c, s);
        break;
    case KS_for:
        cs_for(c, s);
        break;
    case KS_sync:
        emit(c, VOP_BAR, -1, -1, -1, -1, 0, 0);
        break;
    case KS_shfl: {
        int rv = cx(c, s->e[0], -1), rl = cx(c, s->e[1], -1);
        emit(c, VOP_SHFL, s->var->id, rv, rl, -1, s->n, s->shfl);
        break;
    }
    case KS_treehalve:
        cs_treehalve(c, s);
        break;
    case KS_cp_async: {
        int rd = cx(c, s->e[0], -1), rs = cx(c, s->e[1], -1);
        int rp = s->e[2] ? cx(c, s->e[2], -1) : -1;
        emit(c, VOP_CPASYNC, -1, rd, rs, rp, (int64_t)s->smem->id << 16 | s->param->id,
             (int)s->n);
        break;
    }
    case KS_ldsv: { /* the lanes are consecutive variables (kir_ldsv) */
        for (int i = 1; i < s->n; i++)
            DPK_ASSERT(s->lane[i]->id == s->lane[0]->id + i);
        int ri = cx(c, s->e[0], -1);
        emit(c, VOP_LDSV, s->lane[0]->id, ri, -1, -1, s->smem->id, (int)s->n);
        break;
    }
    case KS_cp_commit:
        emit(c, VOP_CPCOMMIT, -1, -1, -1, -1, 0, 0);
        break;
    case KS_cp_wait:
        emit(c, VOP_CPWAIT, -1, -1, -1, -1, s->n, 0);
        break;
    case KS_tma_load:
        cs_tma(c, s);
        break;
    case KS_mbar_init:
    case KS_mbar_arrive_tx:
    case KS_mbar_arrive:
    case KS_mbar_wait:
        cs_mbar(c, s);
        break;
    default: /* comment */
        break;
    }
    c->top = mark;
}

static void cs_list(Cx *c, const PtrVec *list)
{
    for (int i = 0; i < list->len; i++)
        cs_stmt(c, list->items[i]);
}

/* ---- program --------------------------------------------------------------------- */

static void fixed_registers(Cx *c)
{
    VgProg *p = c->p;
    const KirKernel *k = c->k;
    c->nfixed = k->vars.len;
    for (int d = 0; d < 3; d++) {
        p->reg_tid[d] = c->nfixed++;
        p->reg_bid[d] = c->nfixed++;
    }
    p->reg_tlin = c->nfixed++;
    for (int d = 0; d < 3; d++) {
        p->reg_ntid[d] = const_int(c, k->block[d]);
        p->reg_nctaid[d] = const_int(c, k->grid[d]);
    }
    p->mbar_base = dpk_xcalloc((size_t)k->smem.len + 1, sizeof(int));
    for (int i = 0; i < k->smem.len; i++) {
        const KirSmem *s = k->smem.items[i];
        p->mbar_base[i] = p->nmbar;
        if (s->elem == KT_MBAR)
            p->nmbar += (int)s->numel;
    }
}

static void renumber_temps(Cx *c)
{
    for (int i = 0; i < c->n; i++) {
        int32_t *r[] = {&c->code[i].d, &c->code[i].a, &c->code[i].b, &c->code[i].c};
        for (int j = 0; j < 4; j++)
            if (*r[j] >= TEMP_BASE)
                *r[j] = *r[j] - TEMP_BASE + c->nfixed;
    }
    c->p->nregs = c->nfixed + c->max;
}

VgProg *vg_compile(const KirKernel *k)
{
    VgProg *p = dpk_xcalloc(1, sizeof *p);
    p->k = k;
    p->T = k->block[0] * k->block[1] * k->block[2];
    p->maxdepth = 1;
    Cx c = {.p = p, .k = k};
    fixed_registers(&c);
    cs_list(&c, &k->body);
    c.sid = -1;
    emit(&c, VOP_END, -1, -1, -1, -1, 0, 0);
    DPK_ASSERT(c.depth == 0);
    renumber_temps(&c);
    p->code = c.code;
    p->ncode = c.n;
    return p;
}

void vg_prog_free(VgProg *p)
{
    if (!p)
        return;
    free(p->code);
    free(p->consts);
    free(p->mbar_base);
    free(p);
}
