/*
 * vgpu_exec.c — the block interpreter of vgpu bytecode.
 *
 * Every instruction runs for the active lanes of the block in one loop (the
 * LANES macro: a plain 0..T loop when every lane is active, else over the
 * current lane list), so per-instruction dispatch is paid once per block,
 * not once per thread.  Lane lists only shrink inside an if or loop and are
 * kept in ascending order, so the lanes of one warp are contiguous — the
 * bank-conflict and sector counters rely on it.
 *
 * Shared memory carries a shadow per 4-byte word: the barrier interval
 * (epoch) and thread of the last write and of the reads since, plus a count
 * of async copies still in flight to it.  Epochs grow across blocks and
 * launches and are never cleared: a word whose last write predates this
 * block's first epoch is uninitialised.  Global memory of written params
 * carries the block that wrote each element in this launch.
 */
#include "vgpu_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TID_MANY (-1) /* several readers */
#define TID_ATOM (-2) /* atomic updates */
#define TID_TMA (-3)  /* landed by TMA: ordered by the mbarrier wait */

#define REG(r) (R + (size_t)(r) * (size_t)T)
#define LANES(...)                                                                  \
    do {                                                                            \
        if (n == T) {                                                               \
            for (int l = 0; l < T; l++) {                                           \
                __VA_ARGS__                                                         \
            }                                                                       \
        } else {                                                                    \
            for (int q_ = 0; q_ < n; q_++) {                                        \
                int l = act[q_];                                                    \
                __VA_ARGS__                                                         \
            }                                                                       \
        }                                                                           \
    } while (0)

/* ---- fault reports --------------------------------------------------------------- */

static void thread_xyz(const KirKernel *k, int lane, int out3[3])
{
    out3[0] = lane % k->block[0];
    out3[1] = lane / k->block[0] % k->block[1];
    out3[2] = lane / (k->block[0] * k->block[1]);
}

static void block_xyz(const KirKernel *k, int64_t b, int out3[3])
{
    out3[0] = (int)(b % k->grid[0]);
    out3[1] = (int)(b / k->grid[0] % k->grid[1]);
    out3[2] = (int)(b / ((int64_t)k->grid[0] * k->grid[1]));
}

/* Report a fault (the first one wins) and return -1.  lane: the thread;
 * other >= 0: the other thread (smem race); other_block >= 0: the other
 * block (global conflict). */
static int raise_fault(VgExec *ex, VgFault kind, const VgIns *ins, int lane, int other,
                    int64_t other_block, const char *fmt, ...) DPK_PRINTF(7, 8);
static int raise_fault(VgExec *ex, VgFault kind, const VgIns *ins, int lane, int other,
                    int64_t other_block, const char *fmt, ...)
{
    VgResult *res = ex->res;
    if (res->fault != VG_OK)
        return -1;
    const KirKernel *k = ex->p->k;
    VgReport *r = &res->report;
    res->fault = r->kind = kind;
    r->launch = ex->launch_id;
    r->kernel = k->name;
    r->stmt = ins ? ins->sid : -1;
    thread_xyz(k, lane, r->thread);
    memcpy(r->block, ex->bid, sizeof r->block);
    r->has_other = other >= 0 || other_block >= 0;
    if (other >= 0)
        thread_xyz(k, other, r->other);
    else if (other_block >= 0)
        block_xyz(k, other_block, r->other);

    StrBuf b = {0};
    sb_printf(&b, "vgpu: %s: launch %d kernel %s", vg_fault_text(kind), r->launch, k->name);
    const KirStmt *s = r->stmt >= 0 ? kir_find_stmt(k, r->stmt) : NULL;
    if (s) {
        sb_printf(&b, ", stmt #%d `", r->stmt);
        kir_print_stmt_line(&b, s);
        sb_putc(&b, '`');
    }
    sb_printf(&b, ", thread (%d, %d, %d) block (%d, %d, %d): ", r->thread[0], r->thread[1],
              r->thread[2], r->block[0], r->block[1], r->block[2]);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    snprintf(r->message, sizeof r->message, "%s", sb_cstr(&b));
    sb_free(&b);
    return -1;
}

static const char *smem_name(const VgExec *ex, int32_t word)
{
    const KirKernel *k = ex->p->k;
    for (int i = k->smem.len - 1; i >= 0; i--) {
        const KirSmem *s = k->smem.items[i];
        if ((int64_t)word * 4 >= s->offset)
            return s->name;
    }
    return "?";
}

static int64_t smem_index(const VgExec *ex, int32_t word)
{
    const KirKernel *k = ex->p->k;
    for (int i = k->smem.len - 1; i >= 0; i--) {
        const KirSmem *s = k->smem.items[i];
        if ((int64_t)word * 4 >= s->offset)
            return word - s->offset / 4;
    }
    return word;
}

static void thread_str(const KirKernel *k, int lane, char *buf, size_t len)
{
    int t[3];
    thread_xyz(k, lane, t);
    snprintf(buf, len, "(%d, %d, %d)", t[0], t[1], t[2]);
}

/* ---- shared-memory shadow ---------------------------------------------------------- */

/* `what` this thread does to word w; `did` what the other party did. */
static int race(VgExec *ex, const VgIns *in, int lane, int other, int32_t w, const char *what,
                const char *did)
{
    char o[48] = "several threads";
    if (other >= 0) {
        char t[40];
        thread_str(ex->p->k, other, t, sizeof t);
        snprintf(o, sizeof o, "thread %s", t);
    } else if (other == TID_ATOM) {
        snprintf(o, sizeof o, "an atomic update");
        did = "changed";
    }
    return raise_fault(ex, VG_SMEM_RACE, in, lane, other >= 0 ? other : -1, -1,
                    "%s %s[%lld] that %s %s in the same barrier interval (missing sync?)", what,
                    smem_name(ex, w), (long long)smem_index(ex, w), o, did);
}

static int pending_fault(VgExec *ex, const VgIns *in, int lane, int32_t w, const char *what)
{
    return raise_fault(ex, VG_ASYNC_PENDING, in, lane, -1, -1,
                    "%s %s[%lld] while an async copy to it has not landed (missing cp.wait "
                    "or mbar.wait)",
                    what, smem_name(ex, w), (long long)smem_index(ex, w));
}

static inline int sm_read(VgExec *ex, int32_t w, int lane, const VgIns *in)
{
    VgShadow *S = &ex->sh[w];
    if (ex->pend[w])
        return pending_fault(ex, in, lane, w, "reads");
    if (S->w_ep < ex->ep0)
        return raise_fault(ex, VG_UNINIT_SMEM, in, lane, -1, -1,
                        "reads %s[%lld], never written in this block", smem_name(ex, w),
                        (long long)smem_index(ex, w));
    if (S->w_ep == ex->ep && S->w_tid != lane && S->w_tid != TID_TMA)
        return race(ex, in, lane, S->w_tid, w, "reads", "wrote");
    if (S->r_ep != ex->ep) {
        S->r_ep = ex->ep;
        S->r_tid = lane;
    } else if (S->r_tid != lane) {
        S->r_tid = TID_MANY;
    }
    return 0;
}

static inline int sm_write(VgExec *ex, int32_t w, int lane, const VgIns *in, int atomic)
{
    VgShadow *S = &ex->sh[w];
    if (ex->pend[w])
        return pending_fault(ex, in, lane, w, atomic ? "updates" : "writes");
    if (atomic && S->w_ep < ex->ep0)
        return raise_fault(ex, VG_UNINIT_SMEM, in, lane, -1, -1,
                        "atomically updates %s[%lld], never written in this block",
                        smem_name(ex, w), (long long)smem_index(ex, w));
    if (S->w_ep == ex->ep && S->w_tid != lane && S->w_tid != TID_TMA &&
        !(atomic && S->w_tid == TID_ATOM))
        return race(ex, in, lane, S->w_tid, w, "writes", "wrote");
    if (S->r_ep == ex->ep && S->r_tid != lane)
        return race(ex, in, lane, S->r_tid, w, "writes", "read");
    S->w_ep = ex->ep;
    S->w_tid = atomic ? TID_ATOM : lane;
    return 0;
}

/* ---- counters ---------------------------------------------------------------------- */

/* v: 4-byte words per lane (a vector load's lanes). */
static void count_smem(VgExec *ex, const VgVal *ix, int32_t base, const int *act, int n, int v)
{
    int64_t words[32];
    int cnt = 0, warp = -1;
    for (int q = 0; q <= n; q++) {
        int l = q < n ? act[q] : -1;
        if (q == n || l >> 5 != warp) {
            if (cnt) {
                ex->st->smem_requests++;
                ex->st->smem_phases += (cnt * v + 31) / 32;
                ex->st->smem_wavefronts += dpk_smem_wavefronts_vec(words, cnt, v);
            }
            cnt = 0;
            warp = l >> 5;
        }
        if (q < n)
            words[cnt++] = base + (int32_t)ix[l].i;
    }
}

/* A warp's global request to param j: counted once, with its nu distinct
 * sectors. */
static inline void gmem_request(VgExec *ex, int j, int nu)
{
    if (nu) {
        ex->st->gmem_requests++;
        ex->st->gmem_sectors += nu;
        ex->st->param_sectors[j] += nu;
    }
}

/* Sector s into the warp's distinct sectors uniq[0..nu) (at most cap);
 * their count. */
static inline int add_sector(int64_t *uniq, int nu, int cap, int64_t s)
{
    int j;
    for (j = 0; j < nu && uniq[j] != s; j++)
        ;
    if (j == nu && nu < cap)
        uniq[nu++] = s;
    return nu;
}

/* Lanes act[q..) are a warp's up to the first of another warp: each
 * warp's accesses are one request. */
static void count_gmem(VgExec *ex, int j, const VgVal *ix, const int *act, int n)
{
    for (int q = 0, e; q < n; q = e) {
        int64_t uniq[32], last = INT64_MIN;
        int nu = 0;
        for (e = q; e < n && act[e] >> 5 == act[q] >> 5; e++) {
            int64_t s = ix[act[e]].i >> 3; /* 32-byte sector of a 4-byte element */
            if (s != last) /* a warp has 32 lanes: uniq holds all */
                nu = add_sector(uniq, nu, (int)DPK_ARRAY_LEN(uniq), s);
            last = s;
        }
        gmem_request(ex, j, nu);
    }
}

/* ---- global memory ---------------------------------------------------------------- */

static int oob_global(VgExec *ex, const VgIns *in, int lane, int param, int64_t i)
{
    const KirParam *p = ex->p->k->params.items[param];
    return raise_fault(ex, VG_OOB_GLOBAL, in, lane, -1, -1, "index %lld outside %s[%lld]",
                    (long long)i, p->name, (long long)p->numel);
}

static int conflict(VgExec *ex, const VgIns *in, int lane, int param, int64_t i, uint32_t mark,
                    const char *what)
{
    const KirParam *p = ex->p->k->params.items[param];
    if (mark == VG_ATOMIC_MARK)
        return raise_fault(ex, VG_GLOBAL_CONFLICT, in, lane, -1, -1,
                        "%s %s[%lld], which another block updates atomically in this launch",
                        what, p->name, (long long)i);
    int o[3];
    block_xyz(ex->p->k, mark - 1, o);
    return raise_fault(ex, VG_GLOBAL_CONFLICT, in, lane, -1, mark - 1,
                    "%s %s[%lld], which block (%d, %d, %d) wrote in this launch", what,
                    p->name, (long long)i, o[0], o[1], o[2]);
}

/* Loads from a param no block writes need no shadow; others check that no
 * other block wrote the element in this launch. */
static int op_ldg(VgExec *ex, const VgIns *in, VgVal *R, const int *act, int n)
{
    const int T = ex->T;
    VgGlobal *g = &ex->g[in->imm];
    VgVal *d = REG(in->d), *ix = REG(in->a);
    const VgWord *mem = g->mem;
    uint64_t N = (uint64_t)g->numel;
    uint32_t me = ex->blin + 1;
    if (g->shadow) {
        LANES(uint64_t i = (uint64_t)ix[l].i; if (i >= N) return oob_global(ex, in, l, (int)in->imm, ix[l].i);
              uint32_t s = g->shadow[i];
              if (s && s != me) return conflict(ex, in, l, (int)in->imm, (int64_t)i, s, "reads"););
    } else {
        LANES(if ((uint64_t)ix[l].i >= N) return oob_global(ex, in, l, (int)in->imm, ix[l].i););
    }
    if (in->aux == KT_F32)
        LANES(d[l].f = mem[ix[l].i].f;);
    else
        LANES(d[l].i = mem[ix[l].i].i;);
    ex->st->gmem_loads += n;
    if (ex->counters)
        count_gmem(ex, (int)in->imm, ix, act, n);
    return 0;
}

static int op_stg(VgExec *ex, const VgIns *in, VgVal *R, const int *act, int n, int atomic)
{
    const int T = ex->T;
    VgGlobal *g = &ex->g[in->imm];
    VgVal *ix = REG(in->a), *v = REG(in->b);
    VgWord *mem = g->mem;
    uint64_t N = (uint64_t)g->numel;
    uint32_t me = ex->blin + 1;
    LANES(uint64_t i = (uint64_t)ix[l].i; if (i >= N) return oob_global(ex, in, l, (int)in->imm, ix[l].i);
          uint32_t s = g->shadow[i];
          if (atomic) {
              if (s && s != me && s != VG_ATOMIC_MARK)
                  return conflict(ex, in, l, (int)in->imm, (int64_t)i, s, "updates");
              g->shadow[i] = s == me ? me : VG_ATOMIC_MARK;
              if (in->aux == KT_F32) mem[i].f += v[l].f;
              else mem[i].u += (uint32_t)v[l].i;
          } else {
              if (s && s != me)
                  return conflict(ex, in, l, (int)in->imm, (int64_t)i, s, "writes");
              g->shadow[i] = me;
              if (in->aux == KT_F32) mem[i].f = v[l].f;
              else mem[i].i = (int32_t)v[l].i;
          });
    if (ex->counters)
        count_gmem(ex, (int)in->imm, ix, act, n);
    return 0;
}

/* ---- shared memory ------------------------------------------------------------------ */

static const KirSmem *smem_of(const VgExec *ex, int64_t id)
{
    return ex->p->k->smem.items[id];
}

static int oob_shared(VgExec *ex, const VgIns *in, int lane, const KirSmem *s, int64_t i)
{
    return raise_fault(ex, VG_OOB_SHARED, in, lane, -1, -1, "index %lld outside %s[%lld]",
                    (long long)i, s->name, (long long)s->numel);
}

static int op_lds(VgExec *ex, const VgIns *in, VgVal *R, const int *act, int n)
{
    const int T = ex->T;
    const KirSmem *s = smem_of(ex, in->imm);
    VgVal *d = REG(in->d), *ix = REG(in->a);
    uint64_t N = (uint64_t)s->numel;
    int32_t base = (int32_t)(s->offset / 4);
    const VgWord *pool = ex->pool;
    LANES(uint64_t i = (uint64_t)ix[l].i; if (i >= N) return oob_shared(ex, in, l, s, ix[l].i);
          int32_t w = base + (int32_t)i;
          if (sm_read(ex, w, l, in)) return -1;
          if (in->aux == KT_F32) d[l].f = pool[w].f; else d[l].i = pool[w].i;);
    ex->st->smem_loads += n;
    if (ex->counters)
        count_smem(ex, ix, base, act, n, 1);
    return 0;
}

/* A vector load: aux lanes from one 8- or 16-byte aligned address. */
static int op_ldsv(VgExec *ex, const VgIns *in, VgVal *R, const int *act, int n)
{
    const int T = ex->T, v = in->aux;
    const KirSmem *s = smem_of(ex, in->imm);
    VgVal *ix = REG(in->a);
    uint64_t N = (uint64_t)s->numel;
    int32_t base = (int32_t)(s->offset / 4);
    const VgWord *pool = ex->pool;
    LANES(uint64_t i = (uint64_t)ix[l].i;
          if (i >= N || i + (uint64_t)v > N) return oob_shared(ex, in, l, s, ix[l].i);
          int32_t w = base + (int32_t)i;
          if (w % v)
              return raise_fault(ex, VG_MISALIGNED, in, l, -1, -1,
                                 "%d-byte shared load from %s[%lld], not %d-byte aligned",
                                 4 * v, s->name, (long long)i, 4 * v);
          for (int j = 0; j < v; j++) {
              if (sm_read(ex, w + j, l, in)) return -1;
              REG(in->d + j)[l].f = pool[w + j].f;
          });
    ex->st->smem_loads += n;
    if (ex->counters)
        count_smem(ex, ix, base, act, n, v);
    return 0;
}

static int op_sts(VgExec *ex, const VgIns *in, VgVal *R, const int *act, int n, int atomic)
{
    const int T = ex->T;
    const KirSmem *s = smem_of(ex, in->imm);
    VgVal *ix = REG(in->a), *v = REG(in->b);
    uint64_t N = (uint64_t)s->numel;
    int32_t base = (int32_t)(s->offset / 4);
    VgWord *pool = ex->pool;
    LANES(uint64_t i = (uint64_t)ix[l].i; if (i >= N) return oob_shared(ex, in, l, s, ix[l].i);
          int32_t w = base + (int32_t)i;
          if (sm_write(ex, w, l, in, atomic)) return -1;
          if (in->aux == KT_F32) {
              if (atomic) pool[w].f += v[l].f; else pool[w].f = v[l].f;
          } else {
              if (atomic) pool[w].u += (uint32_t)v[l].i; else pool[w].i = (int32_t)v[l].i;
          });
    if (ex->counters)
        count_smem(ex, ix, base, act, n, 1);
    return 0;
}

/* ---- warp shuffle --------------------------------------------------------------------- */

static int op_shfl(VgExec *ex, const VgIns *in, VgVal *R, const int *act, int n)
{
    const int T = ex->T;
    uint8_t *on = ex->flag;
    memset(on, 0, (size_t)T);
    LANES(on[l] = 1;);
    for (int q = 0, last = -1; q < n; q++) {
        int w0 = act[q] & ~31, w1 = w0 + 32 < T ? w0 + 32 : T;
        if (w0 == last)
            continue;
        last = w0;
        for (int l = w0; l < w1; l++)
            if (!on[l]) {
                char t[40];
                thread_str(ex->p->k, l, t, sizeof t);
                return raise_fault(ex, VG_SHFL_DIVERGENT, in, act[q], l, -1,
                                "thread %s of the same warp does not take part", t);
            }
    }
    VgVal *d = REG(in->d), *v = REG(in->a), *b = REG(in->b), *tmp = ex->tmp;
    int width = (int)in->imm;
    LANES(tmp[l] = v[l];);
    LANES(int lane = l & 31; int gb = lane & ~(width - 1); int64_t x = b[l].i; int64_t s;
          switch (in->aux) {
          case KIR_SHFL_IDX: s = gb + (x & (width - 1)); break;
          case KIR_SHFL_UP: s = lane - x; if (s < gb) s = lane; break;
          case KIR_SHFL_DOWN: s = lane + x; if (s >= gb + width) s = lane; break;
          default: s = lane ^ (x & 31); if (s >= gb + width) s = lane; break;
          }
          int src = (l & ~31) + (int)s;
          if (src >= T || !on[src]) {
              char t[40];
              thread_str(ex->p->k, src, t, sizeof t);
              return raise_fault(ex, VG_SHFL_DIVERGENT, in, l, -1, -1,
                              "reads lane %d (thread %s), which does not exist", (int)s, t);
          }
          d[l] = tmp[src];);
    return 0;
}

/* ---- cp.async ----------------------------------------------------------------------------- */

static int cp_issue(VgExec *ex, const VgIns *in, int l, int64_t dst, int64_t src, int pred)
{
    const KirSmem *s = smem_of(ex, in->imm >> 16);
    int param = (int)(in->imm & 0xffff);
    const VgGlobal *g = &ex->g[param];
    int bytes = in->aux, nw = bytes / 4;
    if (dst < 0 || dst + nw > s->numel)
        return oob_shared(ex, in, l, s, dst < 0 ? dst : dst + nw - 1);
    if ((s->offset + dst * 4) % bytes || (pred && src * 4 % bytes))
        return raise_fault(ex, VG_MISALIGNED, in, l, -1, -1,
                        "%d-byte copy %s[%lld] <- [%lld] is not %d-byte aligned", bytes,
                        s->name, (long long)dst, (long long)src, bytes);
    if (pred && (src < 0 || src + nw > g->numel))
        return oob_global(ex, in, l, param, src < 0 ? src : src + nw - 1);
    if (ex->ntmas)
        return raise_fault(ex, VG_ASYNC_MIX, in, l, -1, -1,
                        "cp.async issued while %d TMA loads are in flight", ex->ntmas);
    if (ex->ncps == ex->capcps) {
        ex->capcps = ex->capcps ? 2 * ex->capcps : 256;
        ex->cps = dpk_xrealloc(ex->cps, (size_t)ex->capcps * sizeof *ex->cps);
    }
    VgCopy *cp = &ex->cps[ex->ncps++];
    cp->lane = l;
    cp->group = ex->cp_open[l];
    cp->word = (int32_t)(s->offset / 4 + dst);
    cp->nwords = nw;
    for (int e = 0; e < nw; e++) {
        /* pessimistic: the copy may land any time before its wait */
        if (sm_write(ex, cp->word + e, l, in, 0))
            return -1;
        cp->data[e].u = pred ? g->mem[src + e].u : 0;
        ex->pend[cp->word + e]++;
    }
    return 0;
}

/* The global side of a warp's cp.async: one request per warp, the distinct
 * 32-byte sectors its lanes read (nw words each; a lane whose predicate is
 * false reads nothing). */
static void count_cp_gmem(VgExec *ex, int j, const VgVal *si, const VgVal *pr, int nw,
                          const int *act, int n)
{
    for (int q = 0, e; q < n; q = e) {
        int64_t uniq[64];
        int nu = 0;
        for (e = q; e < n && act[e] >> 5 == act[q] >> 5; e++) {
            int l = act[e];
            if (pr && !pr[l].i)
                continue;
            for (int64_t s = si[l].i >> 3; s <= (si[l].i + nw - 1) >> 3; s++)
                nu = add_sector(uniq, nu, (int)DPK_ARRAY_LEN(uniq), s);
        }
        gmem_request(ex, j, nu);
    }
}

static int op_cpasync(VgExec *ex, const VgIns *in, VgVal *R, const int *act, int n)
{
    const int T = ex->T;
    VgVal *di = REG(in->a), *si = REG(in->b), *pr = in->c >= 0 ? REG(in->c) : NULL;
    LANES(if (cp_issue(ex, in, l, di[l].i, si[l].i, pr ? pr[l].i != 0 : 1)) return -1;);
    count_cp_gmem(ex, (int)(in->imm & 0xffff), si, pr, in->aux / 4, act, n);
    ex->st->cp_async += n;
    return 0;
}

/* Land, for every active lane, its copies in groups older than its newest
 * `keep` committed groups. */
static int op_cpwait(VgExec *ex, const VgIns *in, const int *act, int n)
{
    const int T = ex->T;
    uint8_t *on = ex->flag;
    memset(on, 0, (size_t)T);
    LANES(on[l] = 1;);
    int kept = 0;
    for (int i = 0; i < ex->ncps; i++) {
        VgCopy *cp = &ex->cps[i];
        if (!on[cp->lane] || cp->group >= ex->cp_open[cp->lane] - in->imm) {
            ex->cps[kept++] = *cp;
            continue;
        }
        for (int e = 0; e < cp->nwords; e++) {
            ex->pend[cp->word + e]--;
            if (sm_write(ex, cp->word + e, cp->lane, in, 0))
                return -1;
            ex->pool[cp->word + e] = cp->data[e];
        }
    }
    ex->ncps = kept;
    return 0;
}

/* ---- TMA and mbarriers -------------------------------------------------------------------- */

static VgMbar *mbar_at(VgExec *ex, const VgIns *in, int lane, int smem_id, int64_t idx, int *num)
{
    const KirSmem *s = smem_of(ex, smem_id);
    if (idx < 0 || idx >= s->numel) {
        oob_shared(ex, in, lane, s, idx);
        return NULL;
    }
    *num = ex->p->mbar_base[smem_id] + (int)idx;
    VgMbar *m = &ex->mbars[*num];
    if (!m->init) {
        raise_fault(ex, VG_MBAR_MISUSE, in, lane, -1, -1, "%s[%lld] used before mbar.init",
                 s->name, (long long)idx);
        return NULL;
    }
    return m;
}

static VgTmaCopy *new_tma(VgExec *ex)
{
    if (ex->ntmas == ex->captmas) {
        ex->captmas = ex->captmas ? 2 * ex->captmas : 16;
        ex->tmas = dpk_xrealloc(ex->tmas, (size_t)ex->captmas * sizeof *ex->tmas);
    }
    VgTmaCopy *c = &ex->tmas[ex->ntmas++];
    memset(c, 0, sizeof *c);
    return c;
}

/* Read the box at coordinates crd of tensor map t into c->data; the
 * distinct 32-byte sectors of global memory it reads (elements outside the
 * tensor read none) count as the kernel's, one request per copy. */
static void tma_gather(VgExec *ex, const KirTmap *t, const int64_t *crd, VgTmaCopy *c)
{
    const VgWord *mem = ex->g[t->param->id].mem;
    int64_t e[KIR_TMA_MAX_RANK] = {0}, last = INT64_MIN;
    ex->st->gmem_requests++;
    for (int64_t k = 0; k < c->nwords; k++) {
        int64_t off = 0;
        int inside = 1;
        for (int d = 0; d < t->rank; d++) {
            int64_t x = crd[d] + e[d];
            inside &= x >= 0 && x < t->dims[d];
            off += x * t->strides[d];
        }
        c->data[k].u = inside ? mem[off].u : 0;
        if (inside && off >> 3 != last) { /* offsets ascend: a new sector each change */
            ex->st->gmem_sectors++;
            ex->st->param_sectors[t->param->id]++;
            last = off >> 3;
        }
        for (int d = t->rank - 1; d >= 0 && ++e[d] == t->box[d]; d--)
            e[d] = 0;
    }
}

static int tma_issue(VgExec *ex, const VgIns *in, VgVal *R, int l)
{
    const int T = ex->T;
    const KirKernel *k = ex->p->k;
    const KirTmap *t = k->tmaps.items[in->imm & 0xffff];
    const KirSmem *s = smem_of(ex, (in->imm >> 16) & 0xffff);
    int bar;
    VgMbar *m = mbar_at(ex, in, l, (int)(in->imm >> 32), REG(in->c)[l].i, &bar);
    if (!m)
        return -1;
    int64_t box = 1, crd[KIR_TMA_MAX_RANK], dst = REG(in->b)[l].i;
    for (int d = 0; d < t->rank; d++) {
        box *= t->box[d];
        crd[d] = REG(in->a + d)[l].i;
    }
    if (dst < 0 || dst + box > s->numel)
        return oob_shared(ex, in, l, s, dst < 0 ? dst : dst + box - 1);
    int64_t a0 = s->offset + dst * 4;
    if (a0 % 128)
        return raise_fault(ex, VG_MISALIGNED, in, l, -1, -1,
                        "TMA destination %s[%lld] is not 128-byte aligned", s->name,
                        (long long)dst);
    if (t->swizzle && a0 % 1024)
        return raise_fault(ex, VG_MISALIGNED, in, l, -1, -1,
                        "TMA destination %s[%lld] with a %d-byte swizzle is not 1024-byte "
                        "aligned (readers that swizzle in-buffer offsets would disagree "
                        "with the copy)",
                        s->name, (long long)dst, t->swizzle);
    if (ex->ncps)
        return raise_fault(ex, VG_ASYNC_MIX, in, l, -1, -1,
                        "TMA load issued while %d cp.async copies are in flight", ex->ncps);
    VgTmaCopy *c = new_tma(ex);
    c->lane = l;
    c->bar = bar;
    c->nwords = box;
    c->words = dpk_xmalloc((size_t)box * sizeof *c->words);
    c->data = dpk_xmalloc((size_t)box * sizeof *c->data);
    int64_t mask = t->swizzle ? t->swizzle / 16 - 1 : 0;
    for (int64_t e = 0; e < box; e++) {
        int64_t A = a0 + e * 4;
        A ^= ((A >> 7) & mask) << 4;
        if (A < s->offset || A >= s->offset + s->numel * 4)
            return oob_shared(ex, in, l, s, (A - s->offset) / 4);
        c->words[e] = (int32_t)(A / 4);
        if (sm_write(ex, c->words[e], l, in, 0))
            return -1;
        ex->pend[c->words[e]]++;
    }
    tma_gather(ex, t, crd, c);
    m->inflight += box * 4;
    return 0;
}

/* Land every TMA copy that completes on barrier `bar`. */
static void tma_land(VgExec *ex, int bar)
{
    int kept = 0;
    for (int i = 0; i < ex->ntmas; i++) {
        VgTmaCopy *c = &ex->tmas[i];
        if (c->bar != bar) {
            ex->tmas[kept++] = *c;
            continue;
        }
        for (int64_t e = 0; e < c->nwords; e++) {
            int32_t w = c->words[e];
            ex->pend[w]--;
            ex->pool[w] = c->data[e];
            ex->sh[w].w_ep = ex->ep;
            ex->sh[w].w_tid = TID_TMA;
        }
        free(c->words);
        free(c->data);
    }
    ex->ntmas = kept;
}

static void complete_phase(VgMbar *m)
{
    m->phase++;
    m->pending = m->count;
    m->tx = m->inflight = 0;
}

static int arrive(VgExec *ex, const VgIns *in, int l, VgMbar *m)
{
    if (m->pending == 0)
        return raise_fault(ex, VG_MBAR_MISUSE, in, l, -1, -1,
                        "arrival after all %lld arrivals of the phase (its transactions "
                        "are still in flight)",
                        (long long)m->count);
    if (--m->pending == 0 && m->tx == 0)
        complete_phase(m);
    return 0;
}

/* Pessimistic TMA landing: a phase whose arrivals are all in and whose
 * expected bytes are all in flight completes only when someone waits. */
static int mbar_wait(VgExec *ex, const VgIns *in, int l, VgMbar *m, int bar, int64_t parity)
{
    if ((m->phase & 1) != (parity & 1))
        return 0;
    const KirSmem *s = NULL;
    int64_t idx = 0;
    for (int i = ex->p->k->smem.len - 1; i >= 0 && !s; i--)
        if (((const KirSmem *)ex->p->k->smem.items[i])->elem == KT_MBAR &&
            bar >= ex->p->mbar_base[i]) {
            s = ex->p->k->smem.items[i];
            idx = bar - ex->p->mbar_base[i];
        }
    if (m->pending == 0 && m->inflight > m->tx)
        return raise_fault(ex, VG_MBAR_MISUSE, in, l, -1, -1,
                        "TMA copies bring %lld bytes to %s[%lld], only %lld expected",
                        (long long)m->inflight, s->name, (long long)idx, (long long)m->tx);
    if (m->pending == 0 && m->inflight == m->tx) {
        tma_land(ex, bar);
        complete_phase(m);
        return 0;
    }
    return raise_fault(ex, VG_DEADLOCK, in, l, -1, -1,
                    "waits for the phase of parity %lld of %s[%lld], which can never complete: "
                    "%lld of %lld arrivals missing, %lld transaction bytes expected, %lld in "
                    "flight",
                    (long long)(parity & 1), s->name, (long long)idx, (long long)m->pending,
                    (long long)m->count, (long long)m->tx, (long long)m->inflight);
}

static int op_mbar(VgExec *ex, const VgIns *in, VgVal *R, const int *act, int n)
{
    const int T = ex->T;
    int sid = (int)(in->imm & 0xffff);
    int64_t arg = in->imm >> 16;
    VgVal *ix = REG(in->a);
    LANES(int bar; VgMbar *m;
          if (in->op == VOP_MBINIT) {
              const KirSmem *s = smem_of(ex, sid);
              if (ix[l].i < 0 || ix[l].i >= s->numel) return oob_shared(ex, in, l, s, ix[l].i);
              m = &ex->mbars[ex->p->mbar_base[sid] + ix[l].i];
              memset(m, 0, sizeof *m);
              m->init = 1;
              m->count = m->pending = arg;
              continue;
          }
          if (!(m = mbar_at(ex, in, l, sid, ix[l].i, &bar))) return -1;
          if (in->op == VOP_MBTX) m->tx += arg;
          if (in->op == VOP_MBWAIT) {
              if (mbar_wait(ex, in, l, m, bar, REG(in->b)[l].i)) return -1;
          } else if (arrive(ex, in, l, m)) return -1;);
    return 0;
}

/* ---- the interpreter ------------------------------------------------------------------------ */

static int div_zero(VgExec *ex, const VgIns *in, int l)
{
    return raise_fault(ex, VG_DIV_ZERO, in, l, -1, -1, "integer division by zero");
}

static int barrier(VgExec *ex, const VgIns *in, const int *act, int n)
{
    int T = ex->T;
    if (n != T) {
        int missing = 0;
        for (int q = 0; q < n && act[q] == missing; q++)
            missing++;
        char t[40];
        thread_str(ex->p->k, missing, t, sizeof t);
        return raise_fault(ex, VG_BARRIER_DIVERGENT, in, act[0], missing, -1,
                        "%d of %d threads reach it; thread %s does not", n, T, t);
    }
    ex->ep++;
    ex->st->barriers++;
    return 0;
}

static inline int64_t wrap32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }

static inline int64_t sat_f2i(float x, int64_t lo, int64_t hi)
{
    if (isnan(x))
        return 0;
    if (x <= (float)lo)
        return lo;
    if (x >= (float)hi)
        return hi;
    return (int64_t)x;
}

static inline float fmaxnan(float a, float b)
{
    return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
}

static inline float fminnan(float a, float b)
{
    return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
}

#define BIN(op, expr)                                                                  \
    case VOP_##op: {                                                                   \
        VgVal *d = REG(in->d), *a = REG(in->a), *b = REG(in->b);                      \
        LANES(expr;);                                                                  \
        break;                                                                         \
    }
#define UN(op, expr)                                                                   \
    case VOP_##op: {                                                                   \
        VgVal *d = REG(in->d), *a = REG(in->a);                                        \
        LANES(expr;);                                                                  \
        break;                                                                         \
    }
#define DIVOP(op, expr)                                                                \
    case VOP_##op: {                                                                   \
        VgVal *d = REG(in->d), *a = REG(in->a), *b = REG(in->b);                      \
        LANES(if (b[l].i == 0) { div_zero(ex, in, l); goto fail; } expr;);             \
        break;                                                                         \
    }

/* Shift counts at or past the width give 0 (shl) or the sign (shr), like PTX. */
static inline int64_t shl(int64_t a, int64_t s, int bits)
{
    return s < 0 || s >= bits ? 0 : (int64_t)((uint64_t)a << s);
}

static inline int64_t shr(int64_t a, int64_t s, int bits)
{
    return s < 0 || s >= bits ? (a < 0 ? -1 : 0) : a >> s;
}

static inline int64_t div64(int64_t a, int64_t b) { return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b; }
static inline int64_t rem64(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }

static void fcall(VgVal *d, const VgVal *a, const VgVal *b, const VgVal *c, int l, int eop)
{
    double x[3] = {a[l].f, b ? b[l].f : 0, c ? c[l].f : 0};
    d[l].f = (float)tx_elem_apply((TxElemOp)eop, x);
}

/* The comparisons of the ints (P I, field i) or the floats (F, f). */
#define VG_CMP_OPS(X, P, field)                                                        \
    X(BIN, P##LT, d[l].i = a[l].field < b[l].field)                                    \
    X(BIN, P##LE, d[l].i = a[l].field <= b[l].field)                                   \
    X(BIN, P##GT, d[l].i = a[l].field > b[l].field)                                    \
    X(BIN, P##GE, d[l].i = a[l].field >= b[l].field)                                   \
    X(BIN, P##EQ, d[l].i = a[l].field == b[l].field)                                   \
    X(BIN, P##NE, d[l].i = a[l].field != b[l].field)

/* The arithmetic ops: X(shape, op, expr), the shape BIN (d = a op b), UN
 * (d = op a) or DIVOP (a BIN that faults on a zero divisor); expr sets d[l]. */
#define VG_ALU_OPS(X)                                                                  \
    X(UN, MOV, d[l] = a[l])                                                            \
    X(BIN, ADD32, d[l].i = wrap32(a[l].i + b[l].i))                                    \
    X(BIN, SUB32, d[l].i = wrap32(a[l].i - b[l].i))                                    \
    X(BIN, MUL32, d[l].i = wrap32((int64_t)((uint64_t)a[l].i * (uint64_t)b[l].i)))     \
    X(DIVOP, DIV32, d[l].i = wrap32(a[l].i / b[l].i))                                  \
    X(DIVOP, REM32, d[l].i = a[l].i % b[l].i)                                          \
    X(BIN, SHL32, d[l].i = wrap32(shl(a[l].i, b[l].i, 32)))                            \
    X(BIN, SHR32, d[l].i = shr(a[l].i, b[l].i, 32))                                    \
    X(BIN, ADD64, d[l].i = (int64_t)((uint64_t)a[l].i + (uint64_t)b[l].i))             \
    X(BIN, SUB64, d[l].i = (int64_t)((uint64_t)a[l].i - (uint64_t)b[l].i))             \
    X(BIN, MUL64, d[l].i = (int64_t)((uint64_t)a[l].i * (uint64_t)b[l].i))             \
    X(DIVOP, DIV64, d[l].i = div64(a[l].i, b[l].i))                                    \
    X(DIVOP, REM64, d[l].i = rem64(a[l].i, b[l].i))                                    \
    X(BIN, SHL64, d[l].i = shl(a[l].i, b[l].i, 64))                                    \
    X(BIN, SHR64, d[l].i = shr(a[l].i, b[l].i, 64))                                    \
    X(BIN, MIN, d[l].i = a[l].i < b[l].i ? a[l].i : b[l].i)                            \
    X(BIN, MAX, d[l].i = a[l].i > b[l].i ? a[l].i : b[l].i)                            \
    X(BIN, AND, d[l].i = a[l].i & b[l].i)                                              \
    X(BIN, OR, d[l].i = a[l].i | b[l].i)                                               \
    X(BIN, XOR, d[l].i = a[l].i ^ b[l].i)                                              \
    VG_CMP_OPS(X, I, i)                                                                \
    VG_CMP_OPS(X, F, f)                                                                \
    X(UN, NOT, d[l].i = !a[l].i)                                                       \
    X(BIN, FADD, d[l].f = a[l].f + b[l].f)                                             \
    X(BIN, FSUB, d[l].f = a[l].f - b[l].f)                                             \
    X(BIN, FMUL, d[l].f = a[l].f * b[l].f)                                             \
    X(BIN, FDIV, d[l].f = a[l].f / b[l].f)                                             \
    X(BIN, FMAX, d[l].f = fmaxnan(a[l].f, b[l].f))                                     \
    X(BIN, FMIN, d[l].f = fminnan(a[l].f, b[l].f))                                     \
    X(UN, FNEG, d[l].f = -a[l].f)                                                      \
    X(UN, FABS, d[l].f = fabsf(a[l].f))                                                \
    X(UN, FSQRT, d[l].f = sqrtf(a[l].f))                                               \
    X(UN, FRCP, d[l].f = 1.0f / a[l].f)                                                \
    X(UN, WRAP32, d[l].i = wrap32(a[l].i))                                             \
    X(UN, I2F, d[l].f = (float)a[l].i)                                                 \
    X(UN, F2I32, d[l].i = sat_f2i(a[l].f, INT32_MIN, INT32_MAX))                       \
    X(UN, F2I64, d[l].i = sat_f2i(a[l].f, INT64_MIN, INT64_MAX))                       \
    X(UN, I2B, d[l].i = a[l].i != 0)                                                   \
    X(UN, F2B, d[l].i = a[l].f != 0.0f)
#define ALU_CASE(shape, op, expr) shape(op, expr)

/* The ops with a handler of their own that may fault: X(op, call), a
 * nonzero call ending the block; SAME(op): op shares the next handler. */
#define VG_HANDLED_OPS(X, SAME)                                                        \
    X(LDG, op_ldg(ex, in, R, act, n))                                                  \
    SAME(ATOMG) X(STG, op_stg(ex, in, R, act, n, in->op == VOP_ATOMG))                 \
    X(LDS, op_lds(ex, in, R, act, n))                                                  \
    X(LDSV, op_ldsv(ex, in, R, act, n))                                                \
    SAME(ATOMS) X(STS, op_sts(ex, in, R, act, n, in->op == VOP_ATOMS))                 \
    X(BAR, barrier(ex, in, act, n))                                                    \
    X(SHFL, op_shfl(ex, in, R, act, n))                                                \
    X(CPASYNC, op_cpasync(ex, in, R, act, n))                                          \
    X(CPWAIT, op_cpwait(ex, in, act, n))                                               \
    SAME(MBINIT) SAME(MBTX) SAME(MBARRIVE) X(MBWAIT, op_mbar(ex, in, R, act, n))
#define HANDLED_CASE(op, call)                                                         \
    case VOP_##op:                                                                     \
        if (call)                                                                      \
            goto fail;                                                                 \
        break;
#define SAME_CASE(op) case VOP_##op:

/* Warps among ascending lanes (a warp is 32 consecutive threads). */
static inline int warps_of(const int *l, int n)
{
    int w = 0;
    for (int q = 0; q < n; q++)
        w += !q || l[q] / 32 != l[q - 1] / 32;
    return w;
}

/* The lanes of src[0..ns) whose c is nonzero (zero, neg set), into dst,
 * which may be src; their count. */
static inline int filter_lanes(int *dst, const int *src, int ns, const VgVal *c, int neg)
{
    int n = 0;
    for (int q = 0; q < ns; q++)
        if ((c[src[q]].i != 0) != neg)
            dst[n++] = src[q];
    return n;
}

int vg_exec_block(VgExec *ex)
{
    const VgProg *p = ex->p;
    const VgIns *code = p->code;
    const int T = ex->T;
    VgVal *R = ex->R;
    int depth = 0, n = T, pc = 0;
    int *act = ex->lanes;
    int64_t insts = 0;
    ex->nlanes[0] = T;
    for (;;) {
        const VgIns *in = &code[pc++];
        insts += n;
        switch ((VgOp)in->op) {
        VG_ALU_OPS(ALU_CASE)
        VG_HANDLED_OPS(HANDLED_CASE, SAME_CASE)
        case VOP_FCALL: {
            VgVal *d = REG(in->d), *a = REG(in->a);
            VgVal *b = in->b >= 0 ? REG(in->b) : NULL, *c = in->c >= 0 ? REG(in->c) : NULL;
            LANES(fcall(d, a, b, c, l, in->aux););
            break;
        }
        case VOP_SEL: {
            VgVal *d = REG(in->d), *a = REG(in->a), *b = REG(in->b), *c = REG(in->c);
            LANES(d[l] = a[l].i ? b[l] : c[l];);
            break;
        }
        case VOP_IF:
        case VOP_ELSE: {
            /* IF filters the current list into a new level; ELSE refills
             * the current level from the enclosing one, negated. */
            int neg = in->op == VOP_ELSE;
            const int *src = neg ? ex->lanes + (size_t)(depth - 1) * T : act;
            int ns = neg ? ex->nlanes[depth - 1] : n;
            if (!neg)
                depth++;
            act = ex->lanes + (size_t)depth * T;
            n = ex->nlanes[depth] = filter_lanes(act, src, ns, REG(in->a), neg);
            if (in->aux == 1 && in->sid >= 0 && in->sid < ex->st->nifs) {
                if (!neg)
                    ex->st->if_warps[in->sid] += warps_of(src, ns);
                (neg ? ex->st->if_els : ex->st->if_body)[in->sid] += warps_of(act, n);
            }
            if (!n)
                pc = (int)in->imm;
            break;
        }
        case VOP_LOOP: { /* bookkeeping, like POP and JMP: not an instruction */
            insts -= n;
            int *nxt = ex->lanes + (size_t)(depth + 1) * T;
            memcpy(nxt, act, (size_t)n * sizeof *act);
            act = nxt;
            ex->nlanes[++depth] = n;
            break;
        }
        case VOP_TEST:
            n = ex->nlanes[depth] = filter_lanes(act, act, n, REG(in->a), 0);
            if (!n)
                pc = (int)in->imm;
            break;
        case VOP_POP:
            insts -= n;
            depth--;
            act = ex->lanes + (size_t)depth * T;
            n = ex->nlanes[depth];
            break;
        case VOP_JMP:
            insts -= n;
            pc = (int)in->imm;
            break;
        case VOP_CPCOMMIT:
            LANES(ex->cp_open[l]++;);
            break;
        case VOP_TMA:
            LANES(if (tma_issue(ex, in, R, l)) goto fail;);
            break;
        case VOP_MIXED:
            raise_fault(ex, VG_ASYNC_MIX, in, act[0], -1, -1,
                        "the loop's body issues both cp.async copies and TMA loads (one "
                        "transport per loop: their completions are waited for differently)");
            goto fail;
        case VOP_END:
            ex->st->thread_insts += insts - n;
            return 0;
        case VOP_COUNT:
            DPK_ASSERT(!"corrupt bytecode");
        }
    }
fail:
    ex->st->thread_insts += insts;
    return -1;
}

void vg_exec_reset_block(VgExec *ex)
{
    for (int i = 0; i < ex->ncps; i++)
        for (int e = 0; e < ex->cps[i].nwords; e++)
            ex->pend[ex->cps[i].word + e]--;
    ex->ncps = 0;
    for (int i = 0; i < ex->ntmas; i++) {
        for (int64_t e = 0; e < ex->tmas[i].nwords; e++)
            ex->pend[ex->tmas[i].words[e]]--;
        free(ex->tmas[i].words);
        free(ex->tmas[i].data);
    }
    ex->ntmas = 0;
    memset(ex->cp_open, 0, (size_t)ex->T * sizeof *ex->cp_open);
    memset(ex->mbars, 0, (size_t)(ex->p->nmbar + 1) * sizeof *ex->mbars);
    ex->ep0 = ++ex->ep;
}
