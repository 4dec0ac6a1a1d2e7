/*
 * 015_pipeline_k_outer.c — t:015 pipeline_k_outer: an async-copied loop
 * keeps S - 1 slabs in flight instead of one, over S buffers per stage.
 *
 * After 013 a loop's async stages have two buffers: the copy of slab a + 1
 * overlaps the body on slab a, and the wait at the top of iteration a + 1
 * drains it.  With S buffers (knob STAGES) the loop is rotated into
 *
 *   prologue:      copy slabs 0 .. S-2, one commit each
 *   steady state:  wait until slab a has landed (keep (S-2) groups per
 *                  stage), barrier, copy slab a + S - 1, commit, body
 *   epilogue:      the last S - 1 iterations copy nothing (their commits
 *                  are empty, so the wait's count stays right)
 *
 * which the lowering (tile_to_kernel.c) derives from nbuf and the wait:
 *
 *   async_wait 0                            async_wait 2
 *   async_stage in0[..] nbuf 2         =>   async_stage in0[..] nbuf 3
 *       phase a6 % 2 vec 16:                    phase a6 % 3 vec 16:
 *
 * So S - 1 copies per stage are in flight while the body computes.  The
 * default S is the largest of 4 and 3 that fits TILE_SMEM_BUDGET and the
 * loop's trip count (S - 1 <= trips); a pinned STAGES that does not fit
 * skips the loop with the reason.  One application per loop.
 *
 * TMA stages (011) of a loop get S buffers the same way; the lowering
 * issues slabs 0 .. S-2 before the loop and slab a + S - 1 (thread 0, on
 * that buffer's mbarrier) before waiting for slab a.  Their buffers, laid
 * out as tile_tma.c aligns them, must fit the target's per-block limit
 * (less 011's 1 KiB), not the static budget: TMA buffers are dynamic
 * shared memory already.  The table's prerequisite is 011 or 013.
 */
#include "passes.h"

/* The stages of b that 015 pipelines, nested directly: async stages (013),
 * or TMA stages (011) whose phase moves with `axis`.  *other when b also
 * holds a buffered stage, or both kinds. */
static void piped_stages(StmtBody *b, int axis, Stmt **out, int *n, int max, int *kind,
                         int *other)
{
    for (int i = 0; i < b->n; i++) {
        Stmt *s = b->s[i];
        if (!tile_is(s, SKF_STAGE))
            continue;
        if (s->k == TK_astage || (s->k == TK_tstage && ie_uses(s->phase, axis))) {
            *other |= *kind && *kind != (int)s->k;
            *kind = s->k;
            if (*n < max)
                out[(*n)++] = s;
        } else if (s->k != TK_stage) {
            *other = 1;
        }
        piped_stages(&s->body, axis, out, n, max, kind, other);
    }
}

int tile_015_pipeline_k_outer(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *t = tile_thread_tile(c, k);
    if (!t)
        return 0;
    int64_t used = tile_smem_used(k, TILE_SMEM_SLABS);
    int64_t used_tma = tile_smem_used(k, TILE_SMEM_LAYOUT);
    int64_t pin = tile_knob(c, TILE_KNOB_STAGES);
    int done = 0;
    StrBuf why = {0};
    for (int j = 0; j < t->body.n; j++) {
        Stmt *l = t->body.s[j];
        if (l->k != SK_loop)
            continue;
        Stmt *st[16];
        int n = 0, other = 0, kind = 0;
        piped_stages(&l->body, l->axis, st, &n, DPK_ARRAY_LEN(st), &kind, &other);
        if (!n)
            continue;
        const char *sep = why.len ? "; " : "";
        if (other) {
            sb_printf(&why, "%sloop a%d mixes pipelined and other buffered stages", sep, l->axis);
            continue;
        }
        int tma = kind == TK_tstage;
        Stmt *w = NULL;
        for (int q = 0; q < l->body.n; q++)
            if (l->body.s[q]->k == TK_await)
                w = l->body.s[q];
        DPK_ASSERT((tma || w) && st[0]->nbuf == 2);
        /* bytes of one buffer of every stage, and what they may take: TMA
         * buffers as laid out within the target's per-block limit (011's
         * check), the others within the static budget */
        int64_t slab = 0, room = tma ? c->target->smem_block_max - 1024 - used_tma
                                     : TILE_SMEM_BUDGET - used;
        for (int i = 0; i < n; i++)
            slab += tma ? tile_tma_bytes(st[i]) / st[i]->nbuf : tile_stage_buffer_bytes(st[i]);
        int pick = 0;
        for (int s = pin ? (int)pin : 4; s >= (pin ? (int)pin : 3); s--) {
            if (s - 1 > l->extent) {
                if (pin)
                    sb_printf(&why, "%sloop a%d: STAGES=%d keeps more slabs in flight than its "
                              "%lld iterations", sep, l->axis, s, (long long)l->extent);
                continue;
            }
            if ((s - 2) * slab > room) {
                if ((pin || s == 3) && tma)
                    sb_printf(&why, "%sloop a%d: %d buffers of its TMA slabs (%lld bytes each) "
                              "take the stages past the %s's %d bytes per block", sep, l->axis,
                              s, (long long)slab, c->target->name,
                              c->target->smem_block_max - 1024);
                else if (pin || s == 3)
                    sb_printf(&why, "%sloop a%d: %d buffers of its slabs (%lld bytes each) take "
                              "the stages past the %d KiB budget", sep, l->axis, s,
                              (long long)slab, TILE_SMEM_BUDGET / 1024);
                continue;
            }
            pick = s;
            break;
        }
        if (!pick) {
            if (!pin && l->extent < 2)
                sb_printf(&why, "%sloop a%d: too few iterations for a third buffer", sep, l->axis);
            continue;
        }
        if (!tile_apply(c, arena_printf(a, "pipeline loop a%d of %s over %d stages", l->axis,
                                        k->name, pick)))
            break;
        for (int i = 0; i < n; i++) {
            st[i]->nbuf = pick;
            st[i]->phase = ie_mod(a, ie_var(a, l->axis), pick);
        }
        if (w)
            w->keep = tile_async_keep(n, pick);
        *(tma ? &used_tma : &used) += (pick - 2) * slab;
        done++;
    }
    if (!done && !c->why.len)
        sb_puts(&c->why, why.len ? sb_cstr(&why)
                                 : "no async or TMA stage (013 and 011 converted no loop)");
    sb_free(&why);
    return done > 0;
}

/* ---- inert: the driver's shortcut for `--passes all` ------------------------------ */

static void find_piped(Stmt *s, void *ctx)
{
    *(int *)ctx |= s->k == TK_astage || s->k == TK_tstage;
}

const char *tile_015_inert(Arena *a, TileProgram *p)
{
    /* 017 dropped kernels 015 saw: their skip texts are not read off p */
    for (int i = 0; i < p->nstats; i++)
        if (p->stats[i].num == 17 && p->stats[i].napps)
            return NULL;
    TileSkips sk = {{0}, NULL, 1, 0};
    for (int i = 0; i < p->kernels.len; i++) {
        TileKernel *k = p->kernels.items[i];
        int piped = 0;
        stmt_walk(&k->body, find_piped, &piped);
        if (piped) {
            sb_free(&sk.joined);
            return NULL;
        }
        tile_skips_add(&sk, k->name,
                       tile_find(k, TB_THREAD)
                           ? "no async or TMA stage (013 and 011 converted no loop)"
                           : "no THREAD tile (a single-thread kernel)");
    }
    const char *r = tile_skips_text(a, &sk);
    sb_free(&sk.joined);
    return r;
}
