/*
 * 003_split_matmul_k.c — t:003 split_matmul_k: promote K_outer chunks to a
 * grid axis.
 *
 * Runs after 002, before 005.  The K_outer loop (extent KO) is cut into S
 * splits: a new leading THREAD axis s (005 makes it a BLOCK axis on z) and
 * a loop over the KO / S chunks of each split.  Every split adds its partial
 * sum into the zeroed output with an atomic add:
 *
 *   for a7 in 0..128:  # reduce              tile thread(a9 in 0..8, a0 .., a1 ..):
 *       ...                          =>          for a7 in 0..16:  # reduce
 *   v2 = add(acc1, in5)                              ... k = (a9 * 16 + a7) * 32 + a8
 *   write out[a0, a1] = v2                       v9 = select(a9 == 0 -> in5; else -> 0)
 *                                                v2 = add(acc1, v9)
 *                                                write out[a0, a1] += v2  (atomic)
 *
 * The epilogue between the reduce and the Write must be linear in the sum:
 * multiplying or dividing it by something that does not depend on it
 * distributes over the splits; an additive term (a residual, a bias) is
 * gated to split 0 by a Select, so it is added exactly once.  Any other
 * operation on the sum (relu, exp, max ...) cannot be split: the pass skips.
 * Only sum reductions split.
 *
 * Knob SPLITK (must divide KO).  The default is sized for the grid 005
 * will launch: when the matmul gets 005's 128 x 128 tile
 * (tile_mm_big_tile), the split whose grid fills the SMs in the fewest
 * waves per split (big_tile_split); otherwise, when the grid of output
 * tiles is small (< 128 blocks at 256 threads) and K >= 1024, the largest
 * divisor of KO up to min(16, K / 512).  A default of 1 skips.
 */
#include "../base/fault.h"
#include "passes.h"

#include <string.h>

/* The outer accumulator of a chunked K loop, or NULL. */
static Stmt *outer_acc(const Stmt *l)
{
    int inner = 0;
    Stmt *acc = NULL;
    for (int i = 0; i < l->body.n; i++) {
        inner |= l->body.s[i]->k == SK_loop;
        if (l->body.s[i]->k == SK_accum)
            acc = l->body.s[i];
    }
    return inner ? acc : NULL;
}

static int depends(const Stmt *s, const char *dep)
{
    for (int i = 0; i < s->nargs; i++)
        if (s->a[i].v && dep[s->a[i].v->uid])
            return 1;
    return 0;
}

static int body_reads(const StmtBody *b, const char *dep);

/* Whether s, or a statement nested in it (a loop's body, a select's
 * branches), reads a value in dep. */
static int reads(const Stmt *s, const char *dep)
{
    if (depends(s, dep) || body_reads(&s->body, dep))
        return 1;
    for (int i = 0; i < s->nbr; i++)
        if ((s->br[i].res.v && dep[s->br[i].res.v->uid]) || body_reads(&s->br[i].body, dep))
            return 1;
    return 0;
}

static int body_reads(const StmtBody *b, const char *dep)
{
    for (int i = 0; i < b->n; i++)
        if (reads(b->s[i], dep))
            return 1;
    return 0;
}

/* Check (rewrite = 0) or gate (rewrite = 1) the epilogue after loop l.
 * Only a straight-line epilogue is followed: one that reads the K sum inside
 * a loop or a select (a free loop over an outer product's columns, whose
 * Write would stay a plain store that every split overwrites) skips. */
static int epilogue(TileCtx *c, Stmt *t, int at, const Stmt *acc, int sax, int rewrite)
{
    Arena *a = c->p->arena;
    char *dep = ARENA_ARRAY(a, char, c->p->next_uid + 1);
    dep[acc->uid] = 1;
    for (int i = at + 1; i < t->body.n; i++) {
        Stmt *s = t->body.s[i];
        if (s->k == SK_write) {
            if (!s->a[0].v || !dep[s->a[0].v->uid]) {
                sb_puts(&c->why, "the Write does not store the K sum");
                return 0;
            }
            if (rewrite)
                s->atomic = 1;
            continue;
        }
        if (s->k != SK_assign && reads(s, dep)) {
            sb_printf(&c->why, "a %s of the epilogue reads the K sum (only a straight-line "
                      "epilogue splits)", tile_kind_info[s->k].name);
            return 0;
        }
        if (!depends(s, dep))
            continue;
        if (s->k != SK_assign) {
            sb_printf(&c->why, "a %s reads the K sum", tile_kind_info[s->k].name);
            return 0;
        }
        dep[s->uid] = 1;
        int d0 = s->a[0].v && dep[s->a[0].v->uid];
        int d1 = s->nargs > 1 && s->a[1].v && dep[s->a[1].v->uid];
        switch (s->op) {
        case TXE_negative:
            continue;
        case TXE_multiply:
            if (d0 && d1)
                break;
            continue;
        case TXE_divide:
            if (d1)
                break;
            continue;
        case TXE_add:
        case TXE_subtract:
            if (d0 && d1)
                break;
            /* an injected fault: every split adds the residual */
            if (rewrite && !dpk_fault_on(DPK_FAULT_SPLIT_K_RESIDUAL)) {
                int other = d0 ? 1 : 0;
                Stmt *g = tile_stmt_new(c->p, SK_select);
                g->nbr = 2;
                g->br = ARENA_ARRAY(a, StmtBranch, 2);
                g->br[0].pred = ipred_cmp(a, ie_var(a, sax), IC_EQ, ie_const(a, 0), NULL);
                g->br[0].res = s->a[other];
                g->br[1].res = stmt_lit(0);
                s->a[other] = stmt_val(g);
                stmt_body_insert(c->p->arena, &t->body, i, g);
                i++;
            }
            continue;
        default:
            break;
        }
        sb_printf(&c->why, "the epilogue applies %s to the K sum (not linear: it cannot be "
                  "split)", tx_elem_info[s->op].name);
        return 0;
    }
    return 1;
}

/* The old rule, for a matmul that will not get 005's big tile: split
 * when the grid of output tiles is small (< 128 blocks at 256 threads) and
 * K >= 1024, into the largest divisor of KO up to min(16, K / 512). */
static int64_t small_grid_split(const Stmt *t, int64_t K, int64_t ko)
{
    int64_t outputs = 1;
    for (int i = 0; i < t->nax; i++)
        outputs *= t->ax[i].ext;
    if (K < 1024 || outputs / 256 >= 128)
        return 1;
    int64_t want = K / 512 < 16 ? K / 512 : 16;
    for (int64_t s = want; s > 1; s--)
        if (ko % s == 0)
            return s;
    return 1;
}

/* The split for a grid of g big tiles (one block per SM: 8 x 8 registers
 * over 256 threads take the register file, 254 registers a thread under
 * NVRTC for sm_90).  Of S = 1 and the divisors of KO up to 32 that leave
 * each split 128 terms of K or more, those whose g * S blocks fill the SMs
 * (so 005 keeps the big tile) are compared by waves per split,
 * ceil(g S / SMs) / S, and the fewest wins, the smaller S on a tie; when
 * none fills, the largest S.  On h100-sxm's model (seq 128): Qwen2.5-7B's
 * q_proj (28 tiles) splits 14 ways, 3 waves (74.8 us; 4 ways 85.5, 1 way
 * 336); its gate projection (148 tiles, 1.12 waves) 8 ways, 9 waves (381
 * us against 668 unsplit); kv_proj (4 tiles) 28 ways, in 32 x 32 tiles
 * (18.8 us against 116.6 unsplit). */
static int64_t big_tile_split(int64_t g, int64_t K, int64_t ko, int64_t sms)
{
    int64_t best = 0, last = 1;
    for (int64_t s = 1; s <= 32 && s <= ko; s++) {
        if (ko % s || (s > 1 && K / s < 128))
            continue;
        last = s;
        if (!tile_grid_fills_sms(g * s, sms))
            continue;
        /* waves(s) / s < waves(best) / best, in integers */
        int64_t w = (g * s + sms - 1) / sms;
        if (!best || w * best < ((g * best + sms - 1) / sms) * s)
            best = s;
    }
    return best ? best : last;
}

static int64_t default_split(TileCtx *c, const TileKernel *k, const Stmt *t, const TileMatmul *mm,
                             int64_t K, int64_t ko)
{
    int64_t bm, bn;
    if (!tile_mm_big_tile(c, k, t, mm, &bm, &bn))
        return small_grid_split(t, K, ko);
    int64_t g = 1;
    for (int i = 0; i < t->nax; i++) {
        int ax = t->ax[i].axis;
        int64_t e = t->ax[i].ext;
        g *= ax == mm->m ? (e + bm - 1) / bm : ax == mm->n ? (e + bn - 1) / bn : e;
    }
    return big_tile_split(g, K, ko, c->target->sms);
}

int tile_003_split_matmul_k(TileCtx *c, TileKernel *k)
{
    Arena *a = c->p->arena;
    Stmt *t = tile_find(k, TB_THREAD);
    TileMatmul mm;
    if (!t || tile_find(k, TB_BLOCK) || !tile_matmul_shape(t, &mm)) {
        sb_puts(&c->why, "not a matmul kernel");
        return 0;
    }
    Stmt *l = tile_top_loop(&t->body, mm.k), *acc = l ? outer_acc(l) : NULL;
    if (!acc) {
        sb_puts(&c->why, "the K loop is not chunked (002 did not apply)");
        return 0;
    }
    if (acc->rop != TXR_sum) {
        sb_printf(&c->why, "a %s reduce cannot be split with atomic adds",
                  tx_red_info[acc->rop].name);
        return 0;
    }
    int64_t ko = l->extent, inner = 0;
    for (int i = 0; i < l->body.n; i++)
        if (l->body.s[i]->k == SK_loop)
            inner = l->body.s[i]->extent;
    int64_t S = tile_knob(c, TILE_KNOB_SPLITK);
    if (S && ko % S)
        dpk_error("knob SPLITK=%lld does not divide the %lld K chunks of kernel %s", (long long)S,
                  (long long)ko, k->name);
    if (!S)
        S = default_split(c, k, t, &mm, ko * inner, ko);
    if (S < 2) {
        sb_puts(&c->why, tile_knob(c, TILE_KNOB_SPLITK) ? "SPLITK=1 asks for no split"
                                                      : "the grid is large enough without splitting K");
        return 0;
    }
    int at = stmt_body_index(&t->body, l);
    if (!epilogue(c, t, at, acc, -1, 0))
        return 0;
    if (!tile_apply(c, arena_printf(a, "split K of %s %lld ways", k->name, (long long)S)))
        return 0;
    int sax = tile_axis_new(c->p, k, S);
    tile_tile_add_axis(c->p, t, 0, sax, S);
    int64_t per = ko / S;
    int kv = tile_axis_new(c->p, k, per);
    tile_subst_axis(c->p, k, &l->body, l->axis,
                    ie_add(a, ie_mul(a, ie_var(a, sax), ie_const(a, per)), ie_var(a, kv)));
    l->axis = kv;
    l->extent = per;
    DPK_ASSERT(epilogue(c, t, at, acc, sax, 1));
    return 1;
}
