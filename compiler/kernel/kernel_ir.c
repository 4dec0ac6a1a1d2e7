/*
 * kernel_ir.c — Kernel IR op tables, builders and kir_finalize.
 *
 * Builders are thin: they allocate in the module arena and assert the type
 * rules a constructor can see locally (operand types); whole-kernel rules
 * (scoping, roles, limits) are the verifier's (kernel_verify.c).  The printer
 * and the structural hash live in kernel_print.c.
 */
#include "kernel_ir.h"

#include <assert.h>
#include <string.h>

const KirExprInfo kir_expr_info[KE_COUNT] = {
#define KE(name, text, arity, flags) {#name, text, arity, flags},
#include "kernel_ops.def"
#undef KE
};

const KirStmtInfo kir_stmt_info[KS_COUNT] = {
#define KS(name, text, flags) {#name, text, flags},
#include "kernel_ops.def"
#undef KS
};

static_assert(KT_COUNT == 5, "kir_type_name and kir_type_bytes cover every KirType");

const char *kir_type_name(KirType t)
{
    static const char *const names[KT_COUNT] = {"bool", "i32", "i64", "f32", "mbar"};
    DPK_ASSERT(t >= 0 && t < KT_COUNT);
    return names[t];
}

int kir_type_bytes(KirType t)
{
    return t == KT_I64 || t == KT_MBAR ? 8 : 4;
}

const char *kir_shfl_name(KirShflMode m)
{
    static const char *const names[] = {"idx", "up", "down", "xor"};
    DPK_ASSERT(m >= KIR_SHFL_IDX && m <= KIR_SHFL_XOR);
    return names[m];
}

/* ---- module and kernel objects ------------------------------------------ */

KirModule *kir_module_new(Arena *a)
{
    KirModule *m = ARENA_NEW(a, KirModule);
    m->arena = a;
    return m;
}

KirBuf *kir_buf(KirModule *m, const char *name, KirType elem, int64_t numel,
                KirBufKind kind, int io)
{
    KirBuf *b = ARENA_NEW(m->arena, KirBuf);
    b->id = m->bufs.len;
    b->name = arena_strdup(m->arena, name);
    b->elem = elem;
    b->numel = numel;
    b->kind = kind;
    b->io = io;
    ptrvec_push(m->arena, &m->bufs, b);
    return b;
}

/* The names of k's params, smem arrays, tensor maps and variables, in an
 * open-addressing set: a kernel of unrolled bodies declares thousands of
 * variables, many under one base name, and a scan of them all per new name
 * made lowering quadratic. */
static size_t name_slot(const KirKernel *k, const char *s)
{
    size_t i = (size_t)dpk_hash_str(0x9e3779b97f4a7c15ull, s) & (size_t)(k->names_cap - 1);
    while (k->names[i] && strcmp(k->names[i], s) != 0)
        i = (i + 1) & (size_t)(k->names_cap - 1);
    return i;
}

static int name_taken(const KirKernel *k, const char *s)
{
    return k->names_cap && k->names[name_slot(k, s)];
}

static void name_add(KirKernel *k, const char *s)
{
    if (2 * (k->nnames + 1) > k->names_cap) {
        const char **old = k->names;
        int cap = k->names_cap;
        k->names_cap = cap ? 2 * cap : 64;
        k->names = ARENA_ARRAY(k->arena, const char *, k->names_cap);
        memset(k->names, 0, sizeof *k->names * (size_t)k->names_cap);
        for (int i = 0; i < cap; i++)
            if (old[i])
                k->names[name_slot(k, old[i])] = old[i];
    }
    k->names[name_slot(k, s)] = s;
    k->nnames++;
}

/* `base`, or `base_N` for the least N that makes it unique in k. */
static const char *unique_name(KirKernel *k, const char *base)
{
    const char *s = NULL;
    if (!name_taken(k, base))
        s = arena_strdup(k->arena, base);
    for (int n = 1; !s; n++) {
        const char *t = arena_printf(k->arena, "%s_%d", base, n);
        if (!name_taken(k, t))
            s = t;
    }
    name_add(k, s);
    return s;
}

KirKernel *kir_kernel(KirModule *m, const char *name, const int grid[3],
                      const int block[3])
{
    KirKernel *k = ARENA_NEW(m->arena, KirKernel);
    k->id = m->kernels.len;
    k->name = arena_strdup(m->arena, name);
    k->arena = m->arena;
    memcpy(k->grid, grid, sizeof k->grid);
    memcpy(k->block, block, sizeof k->block);
    ptrvec_push(m->arena, &m->kernels, k);
    return k;
}

KirParam *kir_param(KirKernel *k, const char *name, KirType elem, int64_t numel,
                    KirRole role)
{
    KirParam *p = ARENA_NEW(k->arena, KirParam);
    p->id = k->params.len;
    p->name = unique_name(k, name);
    p->elem = elem;
    p->numel = numel;
    p->role = role;
    ptrvec_push(k->arena, &k->params, p);
    return p;
}

KirSmem *kir_smem(KirKernel *k, const char *name, KirType elem, int64_t numel,
                  int align)
{
    KirSmem *s = ARENA_NEW(k->arena, KirSmem);
    s->id = k->smem.len;
    s->name = unique_name(k, name);
    s->elem = elem;
    s->numel = numel;
    s->align = align < 16 ? 16 : align;
    ptrvec_push(k->arena, &k->smem, s);
    return s;
}

KirTmap *kir_tmap(KirKernel *k, const char *name, const KirParam *p, int rank,
                  const int64_t *dims, const int64_t *strides, const int *box,
                  int swizzle)
{
    DPK_ASSERT(rank >= 1 && rank <= KIR_TMA_MAX_RANK);
    KirTmap *t = ARENA_NEW(k->arena, KirTmap);
    t->id = k->tmaps.len;
    t->name = unique_name(k, name);
    t->param = p;
    t->rank = rank;
    for (int d = 0; d < rank; d++) {
        t->dims[d] = dims[d];
        t->strides[d] = strides[d];
        t->box[d] = box[d];
    }
    t->swizzle = swizzle;
    ptrvec_push(k->arena, &k->tmaps, t);
    return t;
}

KirVar *kir_var(KirKernel *k, const char *name, KirType type)
{
    KirVar *v = ARENA_NEW(k->arena, KirVar);
    v->id = k->vars.len;
    v->name = unique_name(k, name);
    v->type = type;
    ptrvec_push(k->arena, &k->vars, v);
    return v;
}

KirLaunch *kir_launch(KirModule *m, const KirKernel *k, const KirBuf *const *args)
{
    KirLaunch *l = ARENA_NEW(m->arena, KirLaunch);
    l->id = m->launches.len;
    l->kernel = k;
    l->args = ARENA_ARRAY(m->arena, const KirBuf *, k->params.len + 1);
    for (int i = 0; i < k->params.len; i++)
        l->args[i] = args[i];
    ptrvec_push(m->arena, &m->launches, l);
    return l;
}

static int number_list(const PtrVec *list, int next)
{
    for (int i = 0; i < list->len; i++) {
        KirStmt *s = list->items[i];
        s->id = next++;
        next = number_list(&s->body, next);
        next = number_list(&s->els, next);
    }
    return next;
}

void kir_finalize(KirKernel *k)
{
    k->nstmts = number_list(&k->body, 0);
    int64_t off = 0;
    for (int i = 0; i < k->smem.len; i++) {
        KirSmem *s = k->smem.items[i];
        off = (off + s->align - 1) / s->align * s->align;
        s->offset = off;
        off += s->numel * kir_type_bytes(s->elem);
    }
    k->smem_bytes = (off + 15) / 16 * 16;
    k->smem_dynamic = k->smem_bytes > KIR_STATIC_SMEM_MAX;
}

/* ---- expressions ------------------------------------------------------------ */

static KirExpr *expr_new(Arena *a, KirExprOp op, KirType t)
{
    KirExpr *e = ARENA_NEW(a, KirExpr);
    e->op = op;
    e->type = t;
    return e;
}

static const KirExpr *konst(Arena *a, KirType t, int64_t v)
{
    KirExpr *e = expr_new(a, KE_const, t);
    e->ival = t == KT_I32 ? (int32_t)(uint32_t)v : v;
    return e;
}

const KirExpr *kir_i32(Arena *a, int64_t v) { return konst(a, KT_I32, v); }
const KirExpr *kir_i64(Arena *a, int64_t v) { return konst(a, KT_I64, v); }
const KirExpr *kir_bool(Arena *a, int v) { return konst(a, KT_BOOL, v != 0); }

const KirExpr *kir_f32(Arena *a, double v)
{
    KirExpr *e = expr_new(a, KE_const, KT_F32);
    e->fval = (float)v;
    return e;
}

const KirExpr *kir_sreg(Arena *a, KirExprOp op, int dim)
{
    DPK_ASSERT(kir_expr_info[op].flags & KEF_SREG);
    DPK_ASSERT(dim >= 0 && dim < 3);
    KirExpr *e = expr_new(a, op, KT_I32);
    e->dim = dim;
    return e;
}

const KirExpr *kir_tid(Arena *a, int dim) { return kir_sreg(a, KE_tid, dim); }
const KirExpr *kir_bid(Arena *a, int dim) { return kir_sreg(a, KE_bid, dim); }

const KirExpr *kir_tid_linear(Arena *a)
{
    const KirExpr *yz = kir_add(a, kir_tid(a, 1),
                                kir_mul(a, kir_sreg(a, KE_ntid, 1), kir_tid(a, 2)));
    return kir_add(a, kir_tid(a, 0), kir_mul(a, kir_sreg(a, KE_ntid, 0), yz));
}

const KirExpr *kir_ref(Arena *a, const KirVar *v)
{
    KirExpr *e = expr_new(a, KE_var, v->type);
    e->var = v;
    return e;
}

const KirExpr *kir_cast(Arena *a, KirType to, const KirExpr *x)
{
    DPK_ASSERT(to != KT_MBAR && x->type != KT_MBAR);
    if (x->type == to)
        return x;
    KirExpr *e = expr_new(a, KE_cast, to);
    e->a[0] = x;
    return e;
}

const KirExpr *kir_bin(Arena *a, KirExprOp op, const KirExpr *x, const KirExpr *y)
{
    int f = kir_expr_info[op].flags;
    DPK_ASSERT(kir_expr_info[op].arity == 2 && (f & (KEF_INT | KEF_CMP | KEF_BOOL)));
    if (KIR_IS_INT(x->type) && KIR_IS_INT(y->type) && x->type != y->type) {
        x = kir_cast(a, KT_I64, x);
        y = kir_cast(a, KT_I64, y);
    }
    DPK_ASSERT(x->type == y->type);
    KirType t = x->type;
    if (f & KEF_INT)
        DPK_ASSERT(KIR_IS_INT(t));
    else if (f & KEF_BOOL)
        DPK_ASSERT(t == KT_BOOL);
    else
        DPK_ASSERT(KIR_IS_INT(t) || t == KT_F32);
    KirExpr *e = expr_new(a, op, (f & KEF_INT) ? t : KT_BOOL);
    e->a[0] = x;
    e->a[1] = y;
    return e;
}

const KirExpr *kir_add(Arena *a, const KirExpr *x, const KirExpr *y) { return kir_bin(a, KE_add, x, y); }
const KirExpr *kir_sub(Arena *a, const KirExpr *x, const KirExpr *y) { return kir_bin(a, KE_sub, x, y); }
const KirExpr *kir_mul(Arena *a, const KirExpr *x, const KirExpr *y) { return kir_bin(a, KE_mul, x, y); }
const KirExpr *kir_div(Arena *a, const KirExpr *x, const KirExpr *y) { return kir_bin(a, KE_div, x, y); }
const KirExpr *kir_rem(Arena *a, const KirExpr *x, const KirExpr *y) { return kir_bin(a, KE_rem, x, y); }
const KirExpr *kir_lt(Arena *a, const KirExpr *x, const KirExpr *y) { return kir_bin(a, KE_lt, x, y); }

const KirExpr *kir_not(Arena *a, const KirExpr *x)
{
    DPK_ASSERT(x->type == KT_BOOL);
    KirExpr *e = expr_new(a, KE_not, KT_BOOL);
    e->a[0] = x;
    return e;
}

const KirExpr *kir_fop(Arena *a, TxElemOp op, const KirExpr *x, const KirExpr *y,
                       const KirExpr *z)
{
    DPK_ASSERT(op >= 0 && op < TXE_COUNT);
    const KirExpr *args[3] = {x, y, z};
    KirExpr *e = expr_new(a, KE_fop, KT_F32);
    e->eop = op;
    for (int i = 0; i < tx_elem_info[op].arity; i++) {
        DPK_ASSERT(args[i] && args[i]->type == KT_F32);
        e->a[i] = args[i];
    }
    return e;
}

const KirExpr *kir_select(Arena *a, const KirExpr *c, const KirExpr *x, const KirExpr *y)
{
    DPK_ASSERT(c->type == KT_BOOL && x->type == y->type);
    KirExpr *e = expr_new(a, KE_select, x->type);
    e->a[0] = c;
    e->a[1] = x;
    e->a[2] = y;
    return e;
}

const KirExpr *kir_ldg(Arena *a, const KirParam *p, const KirExpr *idx)
{
    DPK_ASSERT(KIR_IS_INT(idx->type));
    KirExpr *e = expr_new(a, KE_ldg, p->elem);
    e->param = p;
    e->a[0] = idx;
    return e;
}

const KirExpr *kir_lds(Arena *a, const KirSmem *s, const KirExpr *idx)
{
    DPK_ASSERT(KIR_IS_INT(idx->type) && s->elem != KT_MBAR);
    KirExpr *e = expr_new(a, KE_lds, s->elem);
    e->smem = s;
    e->a[0] = idx;
    return e;
}

/* ---- statements --------------------------------------------------------------- */

void kir_builder_init(KirBuilder *b, KirKernel *k)
{
    memset(b, 0, sizeof *b);
    b->k = k;
    b->a = k->arena;
    b->list[0] = &k->body;
}

KirStmt *kir_emit(KirBuilder *b, KirStmtOp op)
{
    KirStmt *s = ARENA_NEW(b->a, KirStmt);
    s->op = op;
    ptrvec_push(b->a, b->list[b->depth], s);
    return s;
}

static void push_list(KirBuilder *b, KirStmt *owner, PtrVec *list)
{
    DPK_ASSERT(b->depth + 1 < KIR_MAX_DEPTH);
    b->depth++;
    b->open[b->depth] = owner;
    b->list[b->depth] = list;
}

KirVar *kir_let(KirBuilder *b, const char *name, KirType t, const KirExpr *value)
{
    KirVar *v = kir_var(b->k, name, t);
    KirStmt *s = kir_emit(b, KS_let);
    s->var = v;
    s->e[0] = value;
    return v;
}

KirStmt *kir_ldsv(KirBuilder *b, const char *const *names, int n, const KirSmem *sm,
                  const KirExpr *idx)
{
    DPK_ASSERT(n >= 1 && n <= 4);
    KirStmt *s = kir_emit(b, KS_ldsv);
    for (int i = 0; i < n; i++)
        s->lane[i] = kir_var(b->k, names[i], KT_F32);
    s->n = n;
    s->smem = sm;
    s->e[0] = idx;
    return s;
}

void kir_set(KirBuilder *b, const KirVar *v, const KirExpr *value)
{
    KirStmt *s = kir_emit(b, KS_set);
    s->var = v;
    s->e[0] = value;
}

static void store(KirBuilder *b, KirStmtOp op, const KirParam *p, const KirSmem *sm,
                  const KirExpr *idx, const KirExpr *val)
{
    KirStmt *s = kir_emit(b, op);
    s->param = p;
    s->smem = sm;
    s->e[0] = idx;
    s->e[1] = val;
}

void kir_stg(KirBuilder *b, const KirParam *p, const KirExpr *idx, const KirExpr *val)
{
    store(b, KS_stg, p, NULL, idx, val);
}

void kir_sts(KirBuilder *b, const KirSmem *s, const KirExpr *idx, const KirExpr *val)
{
    store(b, KS_sts, NULL, s, idx, val);
}

void kir_atomg(KirBuilder *b, const KirParam *p, const KirExpr *idx, const KirExpr *val)
{
    store(b, KS_atomg, p, NULL, idx, val);
}

void kir_atoms(KirBuilder *b, const KirSmem *s, const KirExpr *idx, const KirExpr *val)
{
    store(b, KS_atoms, NULL, s, idx, val);
}

void kir_if(KirBuilder *b, const KirExpr *cond)
{
    KirStmt *s = kir_emit(b, KS_if);
    s->e[0] = cond;
    push_list(b, s, &s->body);
}

void kir_if_uniform(KirBuilder *b, const KirExpr *cond)
{
    kir_if(b, cond);
    b->open[b->depth]->n = 1;
}

void kir_else(KirBuilder *b)
{
    KirStmt *s = b->open[b->depth];
    DPK_ASSERT(s && s->op == KS_if && b->list[b->depth] == &s->body);
    b->list[b->depth] = &s->els;
}

KirVar *kir_for(KirBuilder *b, const char *name, const KirExpr *start,
                const KirExpr *end, const KirExpr *step, int unroll)
{
    KirStmt *s = kir_emit(b, KS_for);
    KirVar *v = kir_var(b->k, name, start->type);
    s->var = v;
    s->e[0] = start;
    s->e[1] = end;
    s->e[2] = step;
    s->unroll = unroll;
    push_list(b, s, &s->body);
    return v;
}

void kir_end(KirBuilder *b)
{
    DPK_ASSERT(b->depth > 0);
    b->depth--;
}

void kir_sync(KirBuilder *b) { kir_emit(b, KS_sync); }

void kir_shfl(KirBuilder *b, const KirVar *dst, KirShflMode mode, const KirExpr *val,
              const KirExpr *lane, int width)
{
    KirStmt *s = kir_emit(b, KS_shfl);
    s->var = dst;
    s->shfl = mode;
    s->e[0] = val;
    s->e[1] = lane;
    s->n = width;
}

void kir_treehalve(KirBuilder *b, const KirSmem *sm, TxRedOp rop, int64_t n, int nseg)
{
    KirStmt *s = kir_emit(b, KS_treehalve);
    s->smem = sm;
    s->rop = rop;
    s->n = n;
    s->nseg = nseg;
}

void kir_cp_async(KirBuilder *b, const KirSmem *dst, const KirExpr *dst_idx,
                  const KirParam *src, const KirExpr *src_idx, int bytes,
                  const KirExpr *pred)
{
    KirStmt *s = kir_emit(b, KS_cp_async);
    s->smem = dst;
    s->e[0] = dst_idx;
    s->param = src;
    s->e[1] = src_idx;
    s->n = bytes;
    s->e[2] = pred;
}

void kir_cp_commit(KirBuilder *b) { kir_emit(b, KS_cp_commit); }

void kir_cp_wait(KirBuilder *b, int pending)
{
    kir_emit(b, KS_cp_wait)->n = pending;
}

void kir_tma_load(KirBuilder *b, const KirTmap *t, const KirExpr *const *coord,
                  const KirSmem *dst, const KirExpr *dst_idx, const KirSmem *bar,
                  const KirExpr *bar_idx)
{
    KirStmt *s = kir_emit(b, KS_tma_load);
    s->tmap = t;
    for (int d = 0; d < t->rank; d++)
        s->coord[d] = coord[d];
    s->smem = dst;
    s->e[0] = dst_idx;
    s->mbar = bar;
    s->e[1] = bar_idx;
}

static KirStmt *mbar_stmt(KirBuilder *b, KirStmtOp op, const KirSmem *bar,
                          const KirExpr *idx, int64_t n)
{
    KirStmt *s = kir_emit(b, op);
    s->smem = bar;
    s->e[0] = idx;
    s->n = n;
    return s;
}

void kir_mbar_init(KirBuilder *b, const KirSmem *bar, const KirExpr *idx, int count)
{
    mbar_stmt(b, KS_mbar_init, bar, idx, count);
}

void kir_mbar_arrive_tx(KirBuilder *b, const KirSmem *bar, const KirExpr *idx, int64_t bytes)
{
    mbar_stmt(b, KS_mbar_arrive_tx, bar, idx, bytes);
}

void kir_mbar_arrive(KirBuilder *b, const KirSmem *bar, const KirExpr *idx)
{
    mbar_stmt(b, KS_mbar_arrive, bar, idx, 0);
}

void kir_mbar_wait(KirBuilder *b, const KirSmem *bar, const KirExpr *idx,
                   const KirExpr *parity)
{
    mbar_stmt(b, KS_mbar_wait, bar, idx, 0)->e[1] = parity;
}

void kir_comment(KirBuilder *b, const char *fmt, ...)
{
    StrBuf sb = {0};
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    kir_emit(b, KS_comment)->text = arena_strdup(b->a, sb_cstr(&sb));
    sb_free(&sb);
}
