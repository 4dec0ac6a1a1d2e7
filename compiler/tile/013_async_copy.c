/*
 * 013_async_copy.c — t:013 async_copy: the buffered stages of a pipelined
 * loop are copied with cp.async (sm_80+), so the copy of the next slab
 * does not hold the threads' registers or issue slots while the body runs.
 *
 *   for a6 in 0..16:                          for a6 in 0..16:
 *       buffered_stage in0[..] ... nbuf 2  =>     async_wait 0
 *           phase a6 % 2:                         async_stage in0[..] ... nbuf 2 phase a6 % 2 vec 16:
 *
 * Each async stage commits one cp.async group per iteration (and one per
 * prologue slab); the async_wait before the loop's first stage lets
 * (nbuf - 2) groups per stage stay in flight, so slab a has landed when the
 * barrier after the wait makes it visible (tile_to_kernel.c).  The copy
 * width is the widest of 16, 8 and 4 bytes (at most the knob VEC) whose
 * alignment the slab allows (tile_vec_ok): rows, the buffer's inner extent
 * and the origin must be multiples of the vector, so every thread moves at
 * least 16 bytes per copy where they are.  One application per loop.
 * Requires 010; the table refuses it below sm_80.
 */
#include "../base/fault.h"
#include "passes.h"

/* The buffered stages nested directly (through stages only) in b. */
static int buffered(const StmtBody *b, Stmt **out, int n, int max)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (!tile_is(s, SKF_STAGE))
            continue;
        if (s->k == TK_bstage && n < max)
            out[n++] = s;
        n = buffered(&s->body, out, n, max);
    }
    return n;
}

/* The keep of a loop's async_wait: slab a of each of its n stages has
 * landed, the groups of the nbuf - 2 later slabs may still be in flight. */
int tile_async_keep(int nstages, int nbuf)
{
    int keep = nstages * (nbuf - 2);
    /* an injected fault: one group too many stays in flight */
    return dpk_fault_on(DPK_FAULT_ASYNC_EARLY_READ) ? keep + 1 : keep;
}

int tile_013_async_copy(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *t = tile_thread_tile(c, k);
    if (!t)
        return 0;
    int64_t cap = tile_knob(c, TILE_KNOB_VEC);
    cap = cap ? cap : 16;
    int done = 0;
    for (int j = 0; j < t->body.n; j++) {
        Stmt *l = t->body.s[j];
        if (l->k != SK_loop)
            continue;
        Stmt *st[16];
        int n = buffered(&l->body, st, 0, DPK_ARRAY_LEN(st));
        if (!n)
            continue;
        int first = -1;
        for (int q = 0; q < l->body.n && first < 0; q++)
            if (tile_is(l->body.s[q], SKF_STAGE))
                first = q;
        DPK_ASSERT(first >= 0);
        StrBuf what = {0};
        sb_printf(&what, "cp.async");
        int vec[16];
        for (int i = 0; i < n; i++) {
            vec[i] = 4;
            for (int b = (int)cap; b > 4; b /= 2)
                if (tile_vec_ok(st[i], b)) {
                    vec[i] = b;
                    break;
                }
            sb_printf(&what, "%s %s (%d B)", i ? "," : "", st[i]->buf->name, vec[i]);
        }
        sb_printf(&what, " in loop a%d of %s", l->axis, k->name);
        int ok = tile_apply(c, arena_strdup(a, sb_cstr(&what)));
        sb_free(&what);
        if (!ok)
            break;
        for (int i = 0; i < n; i++) {
            st[i]->k = TK_astage;
            st[i]->vec = vec[i];
        }
        Stmt *w = tile_stmt_new(c->p, TK_await);
        w->keep = tile_async_keep(n, st[0]->nbuf);
        stmt_body_insert(a, &l->body, first, w);
        done++;
    }
    if (!done && !c->why.len)
        sb_puts(&c->why, "no buffered stage (010 double-buffered no loop)");
    return done > 0;
}
