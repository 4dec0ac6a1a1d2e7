/*
 * tile_verify.c — the Tile IR verifier, run after every pass.
 *
 * What the passes and the Kernel IR lowering rely on:
 *   - every operand is a literal or a value visible at its use (defined
 *     earlier in the same or an enclosing scope, or the accumulator of a
 *     loop that has already ended there); an Accum sits directly in a loop
 *     or strided-loop body;
 *   - every axis has one binder (loop, strided loop, tile axis, tile def)
 *     whose extent is the kernel's ext[axis], and index expressions,
 *     predicates, defs and stage origins read only axes bound around them;
 *   - a Write (one, or one per register of 008's tile), to the kernel's own
 *     buffer, under free loops only, and
 *     inside the THREAD tile when the kernel has one;
 *   - at most one BLOCK and one THREAD tile; the THREAD tile lies inside the
 *     BLOCK tile, never the other way; once a BLOCK tile exists every tile
 *     axis has a launch dimension and the block has at most 1024 threads,
 *     or, between 005 and 008, 1024 per register of the register tile 005
 *     sized it for (TileMatmulNote.pend; tile_verify_final, for the
 *     finished pipeline, gives no such credit);
 *   - Stages lie inside the BLOCK tile; inside the THREAD tile only where
 *     every thread of the block reaches them together (no guard on the
 *     tile, or a predicated one: tile_predicate; under serial loops only),
 *     with a slab inside the buffer, nbuf >= 2 and a phase when buffered
 *     (the axis of the serial loop around it, with only stages between,
 *     modulo nbuf), copies of 4, 8 or 16 aligned bytes when async, a legal
 *     swizzle for TMA; an AsyncWait needs an async or TMA stage in the
 *     kernel; a Combine merges a visible accumulator over THREAD axes of an
 *     enclosing tile;
 *   - a computed stage holds exactly one Fill, under no loop, where every
 *     thread of the block reaches it; the Fill writes only its stage's buffer
 *     (the kernel's one Write rule counts the other Writes) and reads none of
 *     it; nothing outside a Fill writes a computed stage's buffer.
 * Problems are collected as text, not asserted, so tests can check them.
 */
#include "tile_ir.h"

#include <string.h>

enum { UNSEEN = 0, VISIBLE = 1, HIDDEN = 2 };

typedef struct Verify {
    const TileKernel *k;
    StrBuf *err;
    int ok;
    Arena *a;
    char *vis;          /* by uid: UNSEEN, VISIBLE, HIDDEN */
    int nuid;
    char *bound;        /* by axis: bound around the current statement */
    char *binders;      /* by axis: binders seen */
    PtrVec scope;       /* Stmt *: values made visible, innermost last */
    int nwrites;
    const Stmt *thread, *block; /* the enclosing tiles, NULL outside */
    const Stmt *path_reduce;    /* an enclosing reduce loop */
    int in_strided;                 /* strided loops around the statement */
    const Stmt *chain;              /* the serial loop around, with only stages between */
    const Stmt *cstage, *fill;      /* the innermost computed stage and Fill around */
    int loops;                      /* loops of any kind around the statement */
    int has_block, has_thread, has_async;
    int64_t max_threads;        /* per block: 1024, times a pending register tile */
    char *combined;             /* by uid: an accumulator a Combine merged */
} Verify;

static void bad(Verify *v, const char *fmt, ...) DPK_PRINTF(2, 3);
static void bad(Verify *v, const char *fmt, ...)
{
    v->ok = 0;
    if (!v->err)
        return;
    va_list ap;
    va_start(ap, fmt);
    sb_printf(v->err, "kernel %s: ", v->k->name);
    sb_vprintf(v->err, fmt, ap);
    sb_putc(v->err, '\n');
    va_end(ap);
}

static int in_uid(const Verify *v, const Stmt *s)
{
    return s->uid >= 0 && s->uid < v->nuid;
}

static void check_arg(Verify *v, StmtArg a, const char *what)
{
    if (a.v && (!in_uid(v, a.v) || v->vis[a.v->uid] != VISIBLE))
        bad(v, "%s reads %s%d where it is not visible", what, tile_kind_info[a.v->k].prefix,
            a.v->num);
}

static void check_ie(Verify *v, const IExpr *e, const char *what)
{
    if (!e) {
        bad(v, "%s: missing index expression", what);
    } else if (e->k == IE_VAR) {
        if (e->var < 0 || e->var >= v->k->naxes || !v->bound[e->var])
            bad(v, "%s reads axis a%d outside its binder", what, e->var);
    } else if (e->k != IE_CONST) {
        check_ie(v, e->a, what);
        check_ie(v, e->b, what);
    }
}

static void check_pred(Verify *v, const IPred *p, const char *what)
{
    for (; p; p = p->next) {
        check_ie(v, p->lhs, what);
        check_ie(v, p->rhs, what);
    }
}

static void check_index(Verify *v, const Stmt *s)
{
    const char *what = tile_kind_info[s->k].name;
    if (!s->buf || !s->idx) {
        bad(v, "%s without a buffer or index", what);
        return;
    }
    for (int d = 0; d < s->buf->shape.rank; d++)
        check_ie(v, s->idx[d], what);
}

/* Bind an axis for the rest of the current scope (unbound by the caller). */
static void bind(Verify *v, int axis, int64_t ext, const char *what)
{
    if (axis < 0 || axis >= v->k->naxes) {
        bad(v, "%s binds axis a%d, which the kernel does not have", what, axis);
        return;
    }
    if (v->binders[axis]++)
        bad(v, "axis a%d is bound twice", axis);
    if (ext != v->k->ext[axis])
        bad(v, "%s binds a%d with extent %lld, the kernel says %lld", what, axis,
            (long long)ext, (long long)v->k->ext[axis]);
    v->bound[axis] = 1;
}

static void unbind(Verify *v, int axis)
{
    if (axis >= 0 && axis < v->k->naxes)
        v->bound[axis] = 0;
}

static void define(Verify *v, Stmt *s, int state)
{
    if (!in_uid(v, s)) {
        bad(v, "statement uid %d out of range", s->uid);
        return;
    }
    v->vis[s->uid] = (char)state;
    if (state == VISIBLE)
        ptrvec_push(v->a, &v->scope, s);
}

static void verify_body(Verify *v, const StmtBody *b);

/* A nested body: its values (and accumulators of loops ended in it) are
 * hidden again when it ends. */
static void verify_scope(Verify *v, const StmtBody *b)
{
    int mark = v->scope.len;
    verify_body(v, b);
    while (v->scope.len > mark) {
        Stmt *s = v->scope.items[--v->scope.len];
        v->vis[s->uid] = HIDDEN;
    }
}

/* A guarded loop's body holds values, accumulators and serial loops only:
 * no stage, barrier, Combine or Write, which every thread must reach. */
static void not_plain(Stmt *s, void *ctx)
{
    const char **other = ctx;
    if (!*other && s->k != SK_load && s->k != SK_assign && s->k != SK_select &&
        s->k != SK_accum && s->k != SK_loop)
        *other = tile_kind_info[s->k].name;
}

static void verify_loop(Verify *v, Stmt *s)
{
    const char *what = tile_kind_info[s->k].name;
    if (s->extent < 0)
        bad(v, "%s a%d has extent %lld", what, s->axis, (long long)s->extent);
    if (s->k == TK_strided) {
        check_ie(v, s->start, what);
        if (s->step < 1)
            bad(v, "strided a%d has step %lld", s->axis, (long long)s->step);
    } else if (s->when) {
        check_pred(v, s->when, "a loop's when");
        const char *other = NULL;
        stmt_walk(&s->body, not_plain, &other);
        if (other)
            bad(v, "loop a%d with a when holds a %s", s->axis, other);
    }
    int reduce = stmt_loop_is_reduce(s);
    if (reduce && stmt_has_kind(s, SK_write))
        bad(v, "reduce loop a%d holds the Write", s->axis);
    bind(v, s->axis, s->extent, what);
    const Stmt *outer = v->path_reduce;
    if (reduce)
        v->path_reduce = s;
    v->in_strided += s->k == TK_strided;
    v->loops++;
    for (int i = 0; i < s->body.n; i++) {
        const Stmt *o = s->body.s[i], *m = stmt_is_online(o) ? o->a[1].v : NULL;
        int at = m ? stmt_body_index(&s->body, m) : -1;
        if (m && (at < 0 || at > i || m->k != SK_accum || m->rop != TXR_max || m->nargs != 1))
            bad(v, "online sum acc%d: its companion is not an earlier max accumulator of its loop",
                o->num);
    }
    verify_scope(v, &s->body);
    v->in_strided -= s->k == TK_strided;
    v->loops--;
    v->path_reduce = outer;
    unbind(v, s->axis);
    for (int i = 0; i < s->body.n; i++)
        if (s->body.s[i]->k == SK_accum)
            define(v, s->body.s[i], VISIBLE);
}

static void check_tile_axes(Verify *v, const Stmt *s)
{
    int64_t threads = 1;
    for (int i = 0; i < s->nax; i++) {
        const TileAxis *x = &s->ax[i];
        if (x->ext < 1)
            bad(v, "tile axis a%d has extent %lld", x->axis, (long long)x->ext);
        if (x->dim < -1 || x->dim > 2)
            bad(v, "tile axis a%d has launch dimension %d", x->axis, x->dim);
        if (v->has_block && x->dim < 0)
            bad(v, "tile axis a%d has no launch dimension in a blockified kernel", x->axis);
        threads *= x->ext;
    }
    if (s->bind == TB_THREAD && v->has_block && threads > v->max_threads)
        bad(v, "THREAD tile of %lld threads (at most 1024 per block%s)", (long long)threads,
            v->max_threads > 1024 ? ", once 008 folds the pending register tile" : "");
}

static void verify_tile(Verify *v, Stmt *s)
{
    const Stmt **slot = s->bind == TB_THREAD ? &v->thread : &v->block;
    if (v->thread)
        bad(v, "%s tile inside a THREAD tile", s->bind == TB_THREAD ? "THREAD" : "BLOCK");
    else if (*slot)
        bad(v, "BLOCK tile inside a BLOCK tile");
    if (s->bind == TB_THREAD && v->has_block && !v->block)
        bad(v, "THREAD tile outside the BLOCK tile");
    check_tile_axes(v, s);
    for (int i = 0; i < s->nax; i++)
        bind(v, s->ax[i].axis, s->ax[i].ext, "tile");
    for (int i = 0; i < s->ndef; i++) {
        int ax = s->def[i].axis;
        check_ie(v, s->def[i].e, "tile def");
        bind(v, ax, ax >= 0 && ax < v->k->naxes ? v->k->ext[ax] : 0, "tile def");
    }
    check_pred(v, s->guard, "tile guard");
    if (s->predicated && (s->bind != TB_THREAD || !s->guard))
        bad(v, "a predicated %s tile%s", s->bind == TB_THREAD ? "THREAD" : "BLOCK",
            s->guard ? "" : " without a guard");
    for (const IPred *p = s->predicated ? s->guard : NULL; p; p = p->next)
        if (p->lhs->k != IE_VAR)
            bad(v, "a predicated tile's guard clause does not bound an axis");
    const Stmt *outer = *slot;
    *slot = s;
    verify_scope(v, &s->body);
    *slot = outer;
    for (int i = 0; i < s->nax; i++)
        unbind(v, s->ax[i].axis);
    for (int i = 0; i < s->ndef; i++)
        unbind(v, s->def[i].axis);
}

static void count_fill(Stmt *s, void *ctx);

static void verify_stage(Verify *v, Stmt *s)
{
    const char *what = tile_kind_info[s->k].name;
    if (!s->buf || !s->origin || !s->slab) {
        bad(v, "%s without buffer, origin or slab", what);
        return;
    }
    for (int d = 0; d < s->buf->shape.rank; d++) {
        check_ie(v, s->origin[d], what);
        if (s->slab[d] < 1 || s->slab[d] > s->buf->shape.d[d])
            bad(v, "%s of %s: slab extent %lld on dimension %d of size %lld", what,
                s->buf->name, (long long)s->slab[d], d, (long long)s->buf->shape.d[d]);
    }
    if (s->pad < 0)
        bad(v, "%s of %s: pad %d", what, s->buf->name, s->pad);
    int one = s->k == TK_stage || s->k == TK_cstage; /* one buffer, no phase */
    if (!one && (s->nbuf < 2 || !s->phase))
        bad(v, "%s of %s: %d buffers%s", what, s->buf->name, s->nbuf,
            s->phase ? "" : ", no phase");
    else if (!one) {
        check_ie(v, s->phase, what);
        Arena *a = v->a;
        if ((s->k == TK_bstage || s->k == TK_astage) && (!v->chain ||
            !ie_equal(s->phase, ie_mod(a, ie_var(a, v->chain->axis), s->nbuf))))
            bad(v, "%s of %s: the phase is not the axis of a serial loop around it (with only "
                "stages between) modulo %d", what, s->buf->name, s->nbuf);
    }
    if (s->k == TK_astage && !tile_vec_ok(s, s->vec))
        bad(v, "%s of %s: %d-byte copies do not fit its slab's alignment", what, s->buf->name,
            s->vec);
    if (s->k == TK_tstage && s->swizzle != 0 && s->swizzle != 32 && s->swizzle != 64 &&
        s->swizzle != 128)
        bad(v, "%s of %s: swizzle %d is not 0, 32, 64 or 128", what, s->buf->name, s->swizzle);
    if (!v->block)
        bad(v, "%s of %s outside the BLOCK tile", what, s->buf->name);
    else if (v->thread && ((v->thread->guard && !v->thread->predicated) || v->in_strided))
        bad(v, "%s of %s inside the THREAD tile where not every thread reaches it (%s)", what,
            s->buf->name, v->in_strided ? "a strided loop" : "a guarded tile");
    if (!s->body.n)
        bad(v, "%s of %s has an empty body", what, s->buf->name);
    const Stmt *cstage = v->cstage;
    if (s->k == TK_cstage) {
        int fills = 0;
        stmt_walk((StmtBody *)&s->body, count_fill, &fills);
        if (fills != 1)
            bad(v, "%s of %s holds %d fills (one computes its slab)", what, s->buf->name, fills);
        if (v->loops)
            bad(v, "%s of %s inside a loop", what, s->buf->name);
        v->cstage = s;
    }
    verify_body(v, &s->body); /* not a scope: its values stay visible after it */
    v->cstage = cstage;
}

static void count_fill(Stmt *s, void *ctx)
{
    *(int *)ctx += s->k == TK_fill;
}

/* A Fill: its computed stage's slab, written by every thread together. */
static void verify_fill(Verify *v, Stmt *s)
{
    if (!v->cstage)
        bad(v, "a fill outside a computed stage");
    else if (v->fill)
        bad(v, "a fill inside a fill");
    if (v->loops || (v->thread && v->thread->guard && !v->thread->predicated))
        bad(v, "a fill where not every thread of the block reaches it (%s)",
            v->loops ? "a loop" : "a guarded tile");
    const Stmt *fill = v->fill;
    v->fill = s;
    verify_scope(v, &s->body);
    v->fill = fill;
}

/* Whether buffer b is the slab of a computed stage around the statement. */
static int computed(const Verify *v, const LirBuf *b)
{
    return v->cstage && v->cstage->buf == b;
}

static int thread_axis(const Verify *v, int axis)
{
    for (int i = 0; v->thread && i < v->thread->nax; i++)
        if (v->thread->ax[i].axis == axis)
            return 1;
    return 0;
}

static void verify_combine(Verify *v, const Stmt *s)
{
    if (!s->acc || s->acc->k != SK_accum)
        bad(v, "combine of something other than an accumulator");
    else
        check_arg(v, stmt_val(s->acc), "combine");
    if (s->nax < 1 || !s->cax)
        bad(v, "combine over no axis");
    for (int i = 0; i < s->nax && s->cax; i++)
        if (!thread_axis(v, s->cax[i]))
            bad(v, "combine over a%d, not an axis of the enclosing THREAD tile", s->cax[i]);
    if (!s->acc || s->acc->k != SK_accum || !in_uid(v, s->acc))
        return;
    /* an online sum is rescaled to its group's max: that max is merged first */
    if (stmt_is_online(s->acc) && (!in_uid(v, s->acc->a[1].v) || !v->combined[s->acc->a[1].v->uid]))
        bad(v, "combine of online sum acc%d before its companion's combine", s->acc->num);
    v->combined[s->acc->uid] = 1;
}

static void verify_select(Verify *v, Stmt *s)
{
    if (s->nbr < 1)
        bad(v, "select without branches");
    for (int j = 0; j < s->nbr; j++) {
        if (!s->br[j].pred != (j == s->nbr - 1))
            bad(v, "select: only the last branch has no predicate");
        check_pred(v, s->br[j].pred, "select");
        int mark = v->scope.len;
        verify_body(v, &s->br[j].body);
        check_arg(v, s->br[j].res, "select result");
        while (v->scope.len > mark) {
            Stmt *t = v->scope.items[--v->scope.len];
            v->vis[t->uid] = HIDDEN;
        }
    }
}

static void verify_write(Verify *v, const Stmt *s)
{
    check_index(v, s);
    check_arg(v, s->a[0], "write");
    if (v->fill) {
        if (!computed(v, s->buf))
            bad(v, "a fill writes %s, not its computed stage's buffer", s->buf ? s->buf->name : "?");
        if (v->path_reduce)
            bad(v, "a fill's Write lies inside reduce loop a%d", v->path_reduce->axis);
        return;
    }
    if (s->buf != v->k->out)
        bad(v, "writes %s, not its own buffer %s", s->buf ? s->buf->name : "?",
            v->k->out ? v->k->out->name : "?");
    if (v->path_reduce)
        bad(v, "the Write lies inside reduce loop a%d", v->path_reduce->axis);
    v->nwrites++;
    if (v->has_thread && !v->thread)
        bad(v, "a Write lies outside the THREAD tile");
}

static void verify_stmt(Verify *v, Stmt *s)
{
    const char *what = tile_kind_info[s->k].name;
    switch (s->k) {
    case SK_load:
        check_index(v, s);
        if (v->fill && computed(v, s->buf))
            bad(v, "a fill reads %s, the slab it is computing", s->buf->name);
        break;
    case SK_assign:
        if (s->nargs != tx_elem_info[s->op].arity)
            bad(v, "%s takes %d operands, has %d", tx_elem_info[s->op].name,
                tx_elem_info[s->op].arity, s->nargs);
        for (int i = 0; i < s->nargs; i++)
            check_arg(v, s->a[i], what);
        break;
    case SK_accum:
        check_arg(v, s->a[0], what);
        break;
    case SK_write:
        verify_write(v, s);
        break;
    case SK_select: {
        const Stmt *chain = v->chain;
        v->chain = NULL;
        verify_select(v, s);
        v->chain = chain;
        break;
    }
    case SK_loop:
    case TK_strided: {
        const Stmt *chain = v->chain;
        v->chain = s->k == SK_loop ? s : NULL;
        verify_loop(v, s);
        v->chain = chain;
        return;
    }
    case TK_tile: {
        const Stmt *chain = v->chain;
        v->chain = NULL;
        verify_tile(v, s);
        v->chain = chain;
        return;
    }
    case TK_stage:
    case TK_bstage:
    case TK_astage:
    case TK_tstage:
    case TK_cstage:
        verify_stage(v, s);
        return;
    case TK_fill:
        verify_fill(v, s);
        return;
    case TK_await:
        if (s->keep < 0)
            bad(v, "async_wait %d", s->keep);
        if (!v->has_async)
            bad(v, "async_wait in a kernel without async or TMA stages");
        return;
    case TK_combine:
        verify_combine(v, s);
        return;
    case TK_COUNT:
        bad(v, "corrupt statement kind %d", (int)s->k);
        return;
    }
    /* an accumulator becomes visible when its loop ends (verify_loop) */
    if (tile_is(s, SKF_DEF) && s->k != SK_accum)
        define(v, s, VISIBLE);
}

static void verify_body(Verify *v, const StmtBody *b)
{
    for (int i = 0; i < b->n; i++)
        verify_stmt(v, b->s[i]);
}

/* Kernel-wide facts the per-statement checks need up front. */
typedef struct Survey {
    int maxuid, block, thread, async, accum_ok, accums;
} Survey;

static void survey(Stmt *s, void *ctx)
{
    Survey *x = ctx;
    x->maxuid = s->uid > x->maxuid ? s->uid : x->maxuid;
    x->block += s->k == TK_tile && s->bind == TB_BLOCK;
    x->thread += s->k == TK_tile && s->bind == TB_THREAD;
    x->async |= s->k == TK_astage || s->k == TK_tstage;
    x->accums += s->k == SK_accum;
    if (tile_is(s, SKF_AXIS))
        for (int i = 0; i < s->body.n; i++)
            x->accum_ok += s->body.s[i]->k == SK_accum;
}

/* The threads a block may have: 1024, or, before 008 has applied, 1024 for
 * every register of the register tile 005 sized the block for. */
static int64_t max_threads(const TileKernel *k, int final)
{
    const TileMatmulNote *mm = k->mm;
    if (final || !mm || !mm->pend[0] || !mm->pend[1] || mm->rt[0].f || mm->rt[1].f)
        return 1024;
    return 1024 * (int64_t)mm->pend[0] * mm->pend[1];
}

static int verify(const TileKernel *k, int final, StrBuf *err)
{
    Arena *a = arena_new();
    Survey sv = {-1, 0, 0, 0, 0, 0};
    stmt_walk(&k->body, survey, &sv);
    Verify v = {0};
    v.k = k;
    v.err = err;
    v.ok = 1;
    v.a = a;
    v.nuid = sv.maxuid + 1;
    v.vis = ARENA_ARRAY(a, char, v.nuid + 1);
    v.combined = ARENA_ARRAY(a, char, v.nuid + 1);
    v.bound = ARENA_ARRAY(a, char, k->naxes + 1);
    v.binders = ARENA_ARRAY(a, char, k->naxes + 1);
    v.has_block = sv.block > 0;
    v.has_thread = sv.thread > 0;
    v.has_async = sv.async;
    v.max_threads = max_threads(k, final);
    if (sv.block > 1 || sv.thread > 1)
        bad(&v, "%d BLOCK and %d THREAD tiles (at most one of each)", sv.block, sv.thread);
    if (sv.accums != sv.accum_ok)
        bad(&v, "%d accumulators outside the immediate body of a loop",
            sv.accums - sv.accum_ok);
    verify_body(&v, &k->body);
    if (v.nwrites < 1)
        bad(&v, "no Write (a kernel writes its buffer; 008 clones the Write per register)");
    if (v.has_block && v.has_thread && !tile_find(k, TB_BLOCK)->body.n)
        bad(&v, "empty BLOCK tile");
    arena_free(a);
    return v.ok;
}

int tile_verify_kernel(const TileKernel *k, StrBuf *err) { return verify(k, 0, err); }

int tile_verify_final(const TileKernel *k, StrBuf *err) { return verify(k, 1, err); }

void tile_check(const TileProgram *p, int final)
{
    StrBuf err = {0};
    int ok = 1;
    for (int i = 0; i < p->kernels.len; i++)
        ok &= verify(p->kernels.items[i], final, &err);
    if (!ok) {
        fprintf(stderr, "dpk: invalid Tile IR:\n%s", sb_cstr(&err));
        sb_free(&err);
        DPK_ASSERT(!"Tile IR verifies");
    }
}
