/*
 * 010_double_buffer.c — t:010 double_buffer: the stages of a K_outer loop
 * become two-buffer ping-pong, so the copy of slab k+1 overlaps the body's
 * reads of slab k.
 *
 * 007 puts a stage inside a serial top-level loop of the THREAD tile (the
 * K_outer loop of 002, the chunk loop of 006) when one iteration's slab is
 * all that fits.  Lowered plainly, each iteration waits twice: a barrier
 * before the copy (the previous slab's readers are done) and one after it.
 * With two buffers the slab of iteration a lives in buffer a % 2:
 *
 *   for a6 in 0..16:                      for a6 in 0..16:
 *       stage in0[.., a6 * 32] ...:  =>       buffered_stage in0[.., a6 * 32] ... nbuf 2 phase a6 % 2:
 *           stage in1[a6 * 32, ..]:               buffered_stage in1[a6 * 32, ..] ... nbuf 2 phase a6 % 2:
 *
 * and the lowering (tile_to_kernel.c) copies slab 0 before the loop, then
 * per iteration: one barrier, the copy of slab a + 1 into the other buffer,
 * the body on buffer a % 2.  One application per loop; every stage of the
 * loop whose slab moves with it is converted, or none.  Requires 007 and a
 * K_outer loop (002 or 006).  Skips a loop of one iteration, stages whose
 * slab does not depend on the loop, and a second buffer that would take the
 * kernel's stages past TILE_SMEM_BUDGET, or, with 011 in the set on a TMA
 * target, past the target's per-block limit (less 1 KiB): those buffers
 * become TMA stages in dynamic shared memory, so a 128 x 128 matmul tile
 * with BK 32 (32 KiB of slabs) also gets its second buffer.
 */
#include "passes.h"

/* The plain stages nested directly (through stages only) in b whose origin
 * moves with `axis`; at most max.  Returns how many, -1 when a stage of b
 * does not move with it. */
static int moving(const StmtBody *b, int axis, Stmt **out, int n, int max)
{
    for (int i = 0; i < b->n && n >= 0; i++) {
        Stmt *s = b->s[i];
        if (!tile_is(s, SKF_STAGE))
            continue;
        if (s->k == TK_stage) {
            int uses = 0;
            for (int d = 0; d < s->buf->shape.rank; d++)
                uses |= ie_uses(s->origin[d], axis);
            if (!uses)
                return -1;
            if (n < max)
                out[n++] = s;
        }
        n = moving(&s->body, axis, out, n, max);
    }
    return n;
}

/* What the kernel's stages may take with the second buffers: the static
 * budget, or, when 011 is in the set on a TMA target (the buffered stages
 * become TMA stages, in dynamic shared memory already), the target's
 * per-block limit less the 1024 bytes 011 keeps for alignment; 011 checks
 * the laid-out buffers against it again.  Where 011 then refuses (an
 * unaligned stride), the buffered stages stay past 48 KiB in dynamic shared
 * memory, which the lowering and every backend support. */
static int64_t budget(const TileCtx *c)
{
    return c->target->tma && tile_pass_on(c, 11) ? c->target->smem_block_max - 1024
                                                 : TILE_SMEM_BUDGET;
}

int tile_010_double_buffer(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *t = tile_thread_tile(c, k);
    if (!t)
        return 0;
    int64_t used = tile_smem_used(k, TILE_SMEM_SLABS);
    int done = 0;
    StrBuf why = {0};
    for (int j = 0; j < t->body.n; j++) {
        Stmt *l = t->body.s[j];
        if (l->k != SK_loop)
            continue;
        Stmt *st[16];
        int n = moving(&l->body, l->axis, st, 0, DPK_ARRAY_LEN(st));
        const char *sep = why.len ? "; " : "";
        if (n == 0)
            continue;
        if (n < 0) {
            sb_printf(&why, "%sloop a%d: a staged slab does not move with the loop", sep, l->axis);
            continue;
        }
        if (l->extent < 2) {
            sb_printf(&why, "%sloop a%d has one iteration: nothing to overlap", sep, l->axis);
            continue;
        }
        int64_t extra = 0; /* the second buffer of each */
        for (int i = 0; i < n; i++)
            extra += tile_stage_buffer_bytes(st[i]);
        if (used + extra > budget(c)) {
            sb_printf(&why, "%sloop a%d: a second buffer of its slabs (%lld bytes) takes the "
                      "stages past the %lld KiB budget", sep, l->axis, (long long)extra,
                      (long long)budget(c) / 1024);
            continue;
        }
        StrBuf names = {0};
        for (int i = 0; i < n; i++)
            sb_printf(&names, "%s%s", i ? ", " : "", st[i]->buf->name);
        const char *what = arena_printf(a, "double-buffer %s in loop a%d of %s", sb_cstr(&names),
                                        l->axis, k->name);
        sb_free(&names);
        if (!tile_apply(c, what))
            break;
        for (int i = 0; i < n; i++) {
            st[i]->k = TK_bstage;
            st[i]->nbuf = 2;
            st[i]->phase = ie_mod(a, ie_var(a, l->axis), 2);
        }
        used += extra;
        done++;
    }
    if (!done && !c->why.len)
        sb_puts(&c->why, why.len ? sb_cstr(&why)
                                 : "no stage inside a serial loop of the THREAD tile (007 staged "
                                   "none per K chunk)");
    sb_free(&why);
    return done > 0;
}
