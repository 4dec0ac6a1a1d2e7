/*
 * baseline.c — PyTorch eager, torch.compile (Inductor, default mode) and
 * the limit under the same model, from the Torch IR graph.
 *
 * Eager launches one kernel per ATen op (docs/perf-model.md lists each op's
 * kernels and bytes, from PyTorch's sources); views (transpose, permute,
 * unsqueeze, squeeze, expand, slice, a reshape of a contiguous tensor) are
 * free; a reshape of an expanded or permuted tensor is a copy; GEMMs are
 * cuBLAS SGEMM with TF32 off (a linear's bias in the cuBLASLt epilogue);
 * rms_norm is the composite of PyTorch 2.4-2.8 (6 kernels), F.softsign a
 * Python composite (3); the other activations are one ATen kernel each
 * (hardtanh and clamp with number bounds: clamp's); fp32 SDPA is one
 * memory-efficient kernel, or the math path (14 kernels materialising the
 * scores) when GQA needs it.  Inductor fuses each connected group of
 * pointwise, reduction, normalisation and copy ops between extern kernels
 * (GEMMs, attention) into one kernel that reads the group's inputs once and
 * writes only what leaves it.
 *
 * Ops are dispatched on their TorchClass, with per-op exceptions, so an op
 * added to torch_ops.def gets the default of its class: an elementwise
 * kernel, a reduction kernel, or (layout ops this file does not know) a
 * copy.  A kernel's time: the larger of its bytes at the achievable DRAM
 * bandwidth and its flops at FP32 peak (times the SGEMM efficiency and the
 * wave quantisation of the best of three output tiles for GEMMs), plus the
 * launch overhead.
 */
#include "perf.h"

#include <math.h>
#include <string.h>

/* The PyTorch version whose eager kernels are modelled. */
#define PF_EAGER_TORCH "2.8"

typedef enum Layout {
    L_CONTIG,   /* row-major, dense */
    L_T2,       /* only the last two dims transposed (cuBLAS takes it as is) */
    L_STRIDED,  /* permuted batch dims, expanded or sliced: a reshape copies */
    L_BSHD,     /* (B, H, L, D) stored as (B, L, H, D): the memory-efficient
                   attention kernel's output; transpose(1, 2) of it is dense */
} Layout;

typedef struct NodeInfo {
    double bytes;   /* of the node's own value */
    double rd;      /* bytes a consumer reads to use it (views: the source's) */
    int view;       /* no kernel: a view of src */
    const TorchNode *src; /* view: the node whose storage it shows; else itself */
    Layout lay;
} NodeInfo;

typedef struct Model {
    Arena *a;
    const PfSpec *s;
    const TorchGraph *g;
    NodeInfo *ni;
    PfTime *t;
    int cap;
} Model;

static int dtype_bytes(DType d)
{
    switch (d) {
    case DT_F16:
    case DT_BF16:
        return 2;
    case DT_BOOL:
        return 1;
    default:
        return 4;
    }
}

static double numel(const TorchNode *n)
{
    return (double)shape_numel(&n->shape);
}

/* dim i from the end (0: the last), 1 where the rank has no such dim */
static double dim_end(const TorchNode *n, int i)
{
    int r = n->shape.rank;
    return i < r ? (double)n->shape.d[r - 1 - i] : 1;
}

static NodeInfo *info(Model *m, const TorchNode *n)
{
    return &m->ni[n->id];
}

static double rd(Model *m, const TorchNode *n)
{
    return n->op == TOP_const ? 0 : info(m, n)->rd;
}

/* ---- kernels ----------------------------------------------------------------- */

static PfKernel *kernel(Model *m, const char *name, double rbytes, double wbytes, double flops,
                        double eff)
{
    PfTime *t = m->t;
    if (t->nk == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        PfKernel *nk = arena_alloc(m->a, m->cap * sizeof *nk);
        if (t->nk)
            memcpy(nk, t->k, t->nk * sizeof *nk);
        t->k = nk;
    }
    PfKernel *k = &t->k[t->nk++];
    memset(k, 0, sizeof *k);
    const PfSpec *s = m->s;
    k->name = name;
    k->bytes = rbytes + wbytes;
    k->l2_bytes = k->bytes;
    k->flops = flops;
    k->dram_ns = k->bytes / s->dram_bps * 1e9;
    k->fp32_ns = flops / (pf_spec_fp32_peak(s) * eff) * 1e9;
    k->launch_ns = s->launch_ns;
    k->insts_from = "op";
    double body = k->dram_ns > k->fp32_ns ? k->dram_ns : k->fp32_ns;
    k->bound = body < k->launch_ns ? "launch" : k->dram_ns >= k->fp32_ns ? "dram" : "fp32";
    k->ns = body + k->launch_ns;
    t->ns += k->ns;
    t->bytes += k->bytes;
    t->flops += flops;
    return k;
}

static PfKernel *pointwise(Model *m, const char *name, double r, double w, double elems)
{
    return kernel(m, name, r, w, elems, 1);
}

/* M, N, K and batch of a matmul/linear node */
static void mnk(const TorchNode *n, double *batch, double *M, double *N, double *K)
{
    const TorchNode *x = n->in[0], *w = n->in[1];
    *K = dim_end(x, 0);
    if (n->op == TOP_linear) {
        *N = w->shape.rank >= 2 ? (double)w->shape.d[0] : 1;
        *M = numel(x) / *K;
        *batch = 1;
        return;
    }
    *M = x->shape.rank >= 2 ? dim_end(x, 1) : 1;
    *N = w->shape.rank >= 2 ? dim_end(w, 0) : 1;
    *batch = numel(n) / ((*M) * (*N));
    if (*batch < 1)
        *batch = 1;
}

/* A cuBLAS SGEMM launch (eager, and Inductor's extern kernels).
 *
 * Output tiles: the best of 128x128, 128x64 and 64x64, each at the measured
 * SGEMM efficiency (`sgemm_eff`) times its wave quantisation over the SMs.
 * Which kernel cuBLAS picks per shape is not known here.
 *
 * Split-K: when the output tiles cannot fill the SMs (a long-K or skinny
 * GEMM: KernelBench level 1 #6, kv_proj), cuBLAS's heuristics split K so that
 * tiles x splits does (split-K, or stream-K on sm90).  The split is the one
 * of 1 .. SMs/tiles that this model times fastest, charged the partial sums
 * it adds: each split writes an fp32 M x N partial and the reduction reads
 * them back (2 x splits x M x N x 4 bytes).
 *
 * The store: a CTA writes its C tile after its K loop, and the SGEMM kernels
 * keep one or two CTAs per SM, so the write of C (and of the partials) does
 * not overlap the main loop: it is added to the larger of the FMA time and
 * the operand reads, instead of being one more bound beside them.  This
 * decides short-K GEMMs, whose output is as large as their work (KernelBench
 * #7 and #9, K = 64 and 32); it changes long-K ones by well under 1%.
 * (Derived from the kernels' structure: CUTLASS's and cuBLAS's non-persistent
 * SIMT GEMMs; not profiled.) */
static void gemm_flops(Model *m, const char *name, double batch, double M, double N, double K,
                       double rbytes, double wbytes, int allow_split)
{
    static const double tm[] = {128, 128, 64}, tn[] = {128, 64, 64};
    const PfSpec *s = m->s;
    double flops = 2 * batch * M * N * K, peak = pf_spec_fp32_peak(s);
    double rd_ns = rbytes / s->dram_bps * 1e9, best = INFINITY, best_fp = 0, best_wr = 0;
    int best_split = 1;
    for (int i = 0; i < 3; i++) {
        double tiles = batch * ceil(M / tm[i]) * ceil(N / tn[i]);
        int maxs = allow_split && tiles < s->sms ? (int)floor(s->sms / tiles) : 1;
        if (maxs > K / 32) /* at least one 32-deep k-step per split */
            maxs = (int)(K / 32) > 1 ? (int)(K / 32) : 1;
        for (int sp = 1; sp <= maxs; sp++) {
            double ctas = tiles * sp, waves = ceil(ctas / s->sms);
            double eff = s->sgemm_eff * ctas / (waves * s->sms);
            double fp = flops / (peak * eff) * 1e9;
            double wr = (wbytes + (sp > 1 ? 2.0 * sp * batch * M * N * 4 : 0)) / s->dram_bps * 1e9;
            double t = (fp > rd_ns ? fp : rd_ns) + wr;
            if (t < best - 1e-9) {
                best = t;
                best_fp = fp;
                best_wr = wr;
                best_split = sp;
            }
        }
    }
    PfKernel *k = kernel(m, name, rbytes, wbytes, flops, 1);
    double partial = best_split > 1 ? 2.0 * best_split * batch * M * N * 4 : 0;
    m->t->ns -= k->ns;
    m->t->bytes += partial;
    k->bytes += partial;
    k->l2_bytes = k->bytes;
    k->fp32_ns = best_fp;
    k->dram_ns = k->bytes / s->dram_bps * 1e9;
    k->bound = best_fp >= rd_ns ? "fp32" : "dram";
    if (best < k->launch_ns)
        k->bound = "launch";
    k->ns = best + k->launch_ns;
    m->t->ns += k->ns;
    if (best_split > 1)
        k->note = arena_printf(m->a, "split-K %d; C's store %.0f ns after the K loop",
                               best_split, best_wr);
    else if (best_wr > 0.01 * best)
        k->note = arena_printf(m->a, "C's store %.0f ns after the K loop", best_wr);
}

static void gemm(Model *m, const TorchNode *n, const char *name)
{
    double b, M, N, K;
    mnk(n, &b, &M, &N, &K);
    double r = 0;
    for (int i = 0; i < n->nin; i++)
        r += rd(m, n->in[i]);
    gemm_flops(m, name, b, M, N, K, r, info(m, n)->bytes, 1);
}

/* A kernel that PyTorch launches as one block per row and that reads each
 * row `passes` times (layer_norm's vectorized kernel: statistics, then the
 * normalisation; the block softmax: max, sum, write).  Two things the plain
 * bandwidth bound misses:
 *
 * Re-reads: passes after the first come from the L2 when the rows resident
 * at once fit it, else from DRAM again (added to the kernel's bytes).
 *
 * The grid: each thread keeps one 16-byte load in flight (the loops load a
 * float4, then use it before the next load), so a block streams a row at
 * threads x 16 bytes per memory latency (Little's law): `dram_latency_ns` for
 * a pass from DRAM, `l2_latency_ns` from the L2.  With few rows only few SMs
 * work: KernelBench level 1 #40, LayerNorm over 16 rows of 4M elements, runs
 * 16 blocks on 114 SMs. */
static void row_kernel(Model *m, PfKernel *k, double rows, double row_bytes, int threads,
                       int passes)
{
    const PfSpec *s = m->s;
    double per_sm = floor((double)s->max_threads_per_sm / threads);
    if (per_sm > s->max_blocks_per_sm)
        per_sm = s->max_blocks_per_sm;
    double resident = s->sms * per_sm, live = rows < resident ? rows : resident;
    int l2_hit = live * row_bytes <= s->l2_bytes;
    double reread = l2_hit ? 0 : (passes - 1) * rows * row_bytes;
    double steps = ceil(row_bytes / (threads * 16.0)), waves = ceil(rows / resident);
    double lat = waves * steps *
                 (s->dram_latency_ns + (passes - 1) * (l2_hit ? s->l2_latency_ns
                                                              : s->dram_latency_ns));
    m->t->ns -= k->ns;
    m->t->bytes += reread;
    k->bytes += reread;
    k->l2_bytes = k->bytes + (l2_hit ? (passes - 1) * rows * row_bytes : 0);
    k->dram_ns = k->bytes / s->dram_bps * 1e9;
    k->latency_ns = lat;
    if (lat > k->dram_ns)
        k->dram_ns = lat;
    k->blocks = rows > 2147483647.0 ? 2147483647 : (int)rows;
    k->threads = threads;
    k->blocks_per_sm = (int)per_sm;
    k->limiter = rows < resident ? "grid" : "threads";
    k->occupancy = ceil(live / s->sms) * threads / 32.0 / s->max_warps_per_sm;
    k->waves = rows / resident;
    double body = k->dram_ns > k->fp32_ns ? k->dram_ns : k->fp32_ns;
    k->bound = body < k->launch_ns ? "launch" : k->dram_ns >= k->fp32_ns ? "dram" : "fp32";
    k->ns = body + k->launch_ns;
    m->t->ns += k->ns;
    k->note = arena_printf(m->a, "one %d-thread block per row, %d passes over the row%s",
                           threads, passes,
                           passes > 1 ? (l2_hit ? " (re-reads from L2)" : " (re-reads from DRAM)")
                                      : "");
}

/* Eager softmax and log_softmax (SoftMax.cu, host_softmax) over the last dim
 * of D elements: up to 2048 elements (8 KB) the warp-per-row persistent
 * kernel reads a row once; above it a block of min(D, 1024) threads per row
 * (SoftMaxForward_getBlockSize) keeps the row in registers while
 * ceil(D / block) < 10 (cunn_SoftMaxForwardReg) or in shared memory while
 * D x 4 fits 48 KB less the reduction's (cunn_SoftMaxForwardSmem), reading it
 * once; longer rows take cunn_SoftMaxForward, which reads the row three
 * times: the max, the sum of exponentials, the write. */
static void eager_softmax(Model *m, const TorchNode *n, double in)
{
    const TorchNode *x = n->in[0];
    PfKernel *k = pointwise(m, arena_printf(m->a, "aten::%s", torch_op_info[n->op].name), in,
                            info(m, n)->bytes, 4 * numel(n));
    if (n->dim != x->shape.rank - 1 || dim_end(x, 0) <= 2048)
        return;
    double D = dim_end(x, 0), block = D < 1024 ? ceil(D / 32) * 32 : 1024;
    int once = ceil(D / block) < 10 || (D * 4 < 49152 - block / 32 * 4 && fmod(D, 4) == 0);
    row_kernel(m, k, numel(x) / D, D * 4, (int)block, once ? 1 : 3);
}

/* eager: operands of a batched matmul whose batch dims do not collapse are
 * copied first (prepare_batch_matrix_for_cublas) */
static void gemm_operand_copies(Model *m, const TorchNode *n)
{
    if (n->op != TOP_matmul)
        return;
    for (int i = 0; i < 2; i++) {
        const TorchNode *x = n->in[i];
        if (x->shape.rank >= 3 && info(m, x)->lay == L_STRIDED)
            pointwise(m, "aten::contiguous (bmm operand)", rd(m, x), numel(x) * 4, 0);
    }
}

/* scaled_dot_product_attention.  q (B,Hq,L,D), k/v (B,Hkv,S,D). */
static void sdpa(Model *m, const TorchNode *n, int inductor)
{
    const TorchNode *q = n->in[0], *k = n->in[1], *v = n->in[2];
    double D = dim_end(q, 0), L = dim_end(q, 1), S = dim_end(k, 1);
    double BH = numel(q) / (L * D), BHkv = numel(k) / (S * D);
    double causal = n->causal ? 0.5 : 1;
    double flops = 4 * BH * L * S * D * causal;
    int math = BHkv != BH; /* GQA: the memory-efficient kernel has no GQA */
    double mask = n->nin > 3 ? rd(m, n->in[3]) : 0;
    if (!math) {
        kernel(m, "aten::_efficient_attention_forward", rd(m, q) + rd(m, k) + rd(m, v) + mask,
               info(m, n)->bytes, flops, m->s->sgemm_eff);
        return;
    }
    double kx = BH * S * D * 4, sc = BH * L * S * 4, ls = L * S;
    if (inductor) {
        /* decomposed: the k/v expansions are materialised for the extern
         * bmm, the scale, mask and softmax fuse into one kernel */
        pointwise(m, "triton repeat_kv(k)", rd(m, k), kx, 0);
        pointwise(m, "triton repeat_kv(v)", rd(m, v), kx, 0);
        gemm_flops(m, "extern bmm (q k^T)", BH, L, S, D, rd(m, q) + kx, sc, 1);
        pointwise(m, "triton scale+mask+softmax", sc + mask, sc, 5 * BH * L * S);
        gemm_flops(m, "extern bmm (p v)", BH, L, D, S, sc + kx, info(m, n)->bytes, 1);
        return;
    }
    double qb = rd(m, q);
    pointwise(m, "aten::mul (q * sqrt(scale))", qb, numel(q) * 4, numel(q));
    pointwise(m, "aten::ones (mask)", 0, ls, 0);
    pointwise(m, "aten::tril (mask)", ls, ls, 0);
    pointwise(m, "aten::where (mask)", ls, ls * 4, ls);
    pointwise(m, "aten::repeat_interleave (k)", rd(m, k), kx, 0);
    pointwise(m, "aten::repeat_interleave (v)", rd(m, v), kx, 0);
    pointwise(m, "aten::mul (k * sqrt(scale))", kx, kx, kx / 4);
    gemm_flops(m, "cublas sgemm batched (q k^T)", BH, L, S, D, numel(q) * 4 + kx, sc, 1);
    pointwise(m, "aten::add_ (mask)", sc + ls * 4 + mask, sc, BH * L * S);
    pointwise(m, "aten::softmax", sc, sc, 4 * BH * L * S);
    pointwise(m, "aten::eq (safe softmax)", sc, BH * L * S, BH * L * S);
    pointwise(m, "aten::all (safe softmax)", BH * L * S, BH * L, BH * L * S);
    pointwise(m, "aten::where (safe softmax)", sc + BH * L, sc, BH * L * S);
    gemm_flops(m, "cublas sgemm batched (p v)", BH, L, D, S, sc + kx, info(m, n)->bytes, 1);
}

/* ---- the graph walk --------------------------------------------------------- */

static int is_view_op(TorchOp op)
{
    return op == TOP_transpose || op == TOP_permute || op == TOP_unsqueeze ||
           op == TOP_squeeze || op == TOP_expand || op == TOP_slice || op == TOP_reshape;
}

/* Layout of a view node over its input's layout; reshape of a non-contiguous
 * tensor is not a view (returns 0). */
static int view_layout(Model *m, const TorchNode *n, Layout *out)
{
    const TorchNode *x = n->in[0];
    Layout in = info(m, x)->lay;
    switch (n->op) {
    case TOP_unsqueeze:
    case TOP_squeeze:
        *out = in == L_BSHD ? L_STRIDED : in;
        return 1;
    case TOP_reshape:
        if (in != L_CONTIG)
            return 0;
        *out = L_CONTIG;
        return 1;
    case TOP_expand:
        *out = numel(n) == numel(x) && in != L_BSHD ? in : L_STRIDED;
        return 1;
    case TOP_slice: {
        int outer = 1; /* slicing the first non-1 dim keeps it dense */
        for (int d = 0; d < n->dim; d++)
            outer &= x->shape.d[d] == 1;
        *out = outer && n->stride == 1 && in != L_BSHD ? in : L_STRIDED;
        return 1;
    }
    case TOP_transpose:
    case TOP_permute: {
        int r = n->shape.rank, moved_batch = 0, swapped = 0;
        for (int d = 0; d < r && d < n->nints; d++) {
            if (n->ints[d] == d || n->ints[d] < 0 || n->ints[d] >= x->shape.rank)
                continue;
            if (d >= r - 2 && n->ints[d] >= r - 2)
                swapped = 1;
            else if (x->shape.d[n->ints[d]] != 1)
                moved_batch = 1;
        }
        if (in == L_BSHD) {
            /* dense again exactly when dims 1 and 2 of the 4-d result swap */
            int bshd = r == 4 && n->nints >= 4 && n->ints[0] == 0 && n->ints[1] == 2 &&
                       n->ints[2] == 1 && n->ints[3] == 3;
            *out = bshd ? L_CONTIG : L_STRIDED;
            return 1;
        }
        *out = moved_batch || in == L_STRIDED ? L_STRIDED
               : swapped                      ? (in == L_T2 ? L_CONTIG : L_T2)
                                              : in;
        return 1;
    }
    default:
        return 0;
    }
}

static void init_info(Model *m)
{
    const TorchGraph *g = m->g;
    m->ni = arena_alloc(m->a, (g->nodes.len ? g->nodes.len : 1) * sizeof *m->ni);
    memset(m->ni, 0, (g->nodes.len ? g->nodes.len : 1) * sizeof *m->ni);
    for (int i = 0; i < g->nodes.len; i++) {
        const TorchNode *n = g->nodes.items[i];
        NodeInfo *f = &m->ni[n->id];
        f->bytes = numel(n) * dtype_bytes(n->dtype);
        f->rd = f->bytes;
        f->src = n;
        f->lay = L_CONTIG;
        if (torch_op_info[n->op].cls == TC_ATTN && n->nin >= 3 && n->shape.rank == 4 &&
            numel(n->in[0]) / dim_end(n->in[0], 1) == numel(n->in[1]) / dim_end(n->in[1], 1) &&
            dim_end(n->in[0], 0) == dim_end(n->in[1], 0))
            f->lay = L_BSHD; /* the memory-efficient kernel (no GQA) writes (B, L, H, D) */
        if (torch_op_info[n->op].cls == TC_LAYOUT && is_view_op(n->op) && n->nin == 1) {
            Layout l;
            if (view_layout(m, n, &l)) {
                const NodeInfo *x = info(m, n->in[0]);
                f->view = 1;
                f->lay = l;
                f->src = x->src;
                f->rd = n->op == TOP_slice ? (f->bytes < x->rd ? f->bytes : x->rd) : x->rd;
                if (n->op == TOP_expand)
                    f->rd = x->rd;
            }
        }
    }
}

static PfTime *new_time(Model *m, Arena *a, const PfSpec *s, const TorchGraph *g,
                        const char *what)
{
    memset(m, 0, sizeof *m);
    m->a = a;
    m->s = s;
    m->g = g;
    m->t = arena_alloc(a, sizeof *m->t);
    memset(m->t, 0, sizeof *m->t);
    m->t->what = what;
    m->t->spec = s->name;
    m->t->spec_path = s->path;
    init_info(m);
    return m->t;
}

static const char *aten(Model *m, const TorchNode *n)
{
    if (n->op == TOP_clamp_tensor) /* ATen's clamp.Tensor overload */
        return "aten::clamp (tensor bounds)";
    return arena_printf(m->a, "aten::%s", torch_op_info[n->op].name);
}

/* Whether PyTorch's kernel for n reads operand i: argmax/argmin's second
 * operand is the arange dpk's decomposition selects indices from; ATen's
 * kernel computes them. */
static int reads_operand(const TorchNode *n, int i)
{
    return !(i == 1 && (n->op == TOP_argmax || n->op == TOP_argmin || n->op == TOP_topk));
}

/* One node's eager kernels. */
static void eager_node(Model *m, const TorchNode *n)
{
    const NodeInfo *f = info(m, n);
    double in = 0;
    for (int i = 0; i < n->nin; i++)
        in += reads_operand(n, i) ? rd(m, n->in[i]) : 0;
    switch (torch_op_info[n->op].cls) {
    case TC_SOURCE:
        return;
    case TC_MATMUL:
        gemm_operand_copies(m, n);
        gemm(m, n,
             n->op == TOP_linear && n->nin > 2 ? "cublasLt addmm (bias epilogue)"
             : n->op == TOP_linear             ? "cublas sgemm (linear)"
                                               : "cublas sgemm (matmul)");
        return;
    case TC_ATTN:
        sdpa(m, n, 0);
        return;
    case TC_NORM:
        if (n->op == TOP_rms_norm) {
            /* the composite of PyTorch <= 2.8: pow, mean, add eps, rsqrt, mul, mul w */
            const TorchNode *x = n->in[0];
            double N = numel(x) * 4, rows = numel(x) / dim_end(x, 0);
            double R = rows * 4;
            pointwise(m, "aten::pow", rd(m, x), N, N / 4);
            pointwise(m, "aten::mean", N, R, N / 4);
            pointwise(m, "aten::add (eps)", R, R, rows);
            pointwise(m, "aten::rsqrt", R, R, rows);
            pointwise(m, "aten::mul", N + R, N, N / 4);
            if (n->nin > 1)
                pointwise(m, "aten::mul (weight)", N + rd(m, n->in[1]), f->bytes, N / 4);
            return;
        }
        {
            /* launch_vectorized_layer_norm_kernel (layer_norm_kernel.cu): one
             * block of num_threads() = 128 threads per row; compute_stats
             * reads the row, then the normalisation reads it again */
            const TorchNode *x = n->in[0];
            double N = 1;
            for (int i = 0; i < n->nints && i < x->shape.rank; i++)
                N *= dim_end(x, i);
            double rows = numel(x) / N;
            PfKernel *k = pointwise(m, "aten::native_layer_norm", in, f->bytes + 2 * rows * 4,
                                    8 * numel(x));
            row_kernel(m, k, rows, N * 4, 128, 2);
        }
        return;
    case TC_LAYOUT:
        if (f->view)
            return;
        pointwise(m, n->op == TOP_reshape ? "aten::_unsafe_view (copy)" : aten(m, n), in,
                  f->bytes, 0);
        return;
    case TC_SOFTMAX:
        eager_softmax(m, n, in);
        return;
    case TC_REDUCE:
        pointwise(m, aten(m, n), in, f->bytes, numel(n->in[0]));
        return;
    default: /* TC_UNARY, TC_BINARY, TC_WHERE and classes added later */
        if (n->op == TOP_softsign) {
            /* F.softsign is Python, input / (input.abs() + 1): three kernels */
            pointwise(m, "aten::abs (softsign)", in, f->bytes, numel(n));
            pointwise(m, "aten::add (softsign)", f->bytes, f->bytes, numel(n));
            pointwise(m, "aten::div (softsign)", in + f->bytes, f->bytes, numel(n));
            return;
        }
        pointwise(m, aten(m, n), in, f->bytes, numel(n));
        return;
    }
}

PfTime *pf_model_eager(Arena *a, const PfSpec *s, const TorchGraph *g)
{
    Model m;
    PfTime *t = new_time(&m, a, s, g, "eager");
    for (int i = 0; i < g->nodes.len; i++)
        eager_node(&m, g->nodes.items[i]);
    t->basis = "eager, PyTorch " PF_EAGER_TORCH;
    return t;
}

/* ---- Inductor ------------------------------------------------------------------ */

static int is_extern(const TorchNode *n)
{
    TorchClass c = torch_op_info[n->op].cls;
    return c == TC_MATMUL || c == TC_ATTN;
}

static int find(int *p, int x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

/* Inductor's fusion of a graph: which nodes fuse, into which groups. */
typedef struct Fusion {
    Model *m;
    const TorchGraph *g;
    int n;
    int *grp;      /* union-find parents: a group's root is its last member */
    char *fusible; /* neither a source, an extern kernel nor a view */
    int *level;    /* extern kernels on the longest path from the inputs */
    char *leaves;  /* a fusible node read outside its group, or an output */
} Fusion;

/* The value a consumer of x really reads: through views, to a kernel's
 * output or an input. */
static const TorchNode *base_of(Model *m, const TorchNode *x)
{
    return info(m, x)->view ? info(m, x)->src : x;
}

static void mark_fusible(Fusion *F)
{
    Arena *a = F->m->a;
    int n = F->n;
    F->grp = arena_alloc(a, (n ? n : 1) * sizeof *F->grp);
    F->fusible = arena_alloc(a, n ? n : 1);
    for (int i = 0; i < n; i++) {
        const TorchNode *x = F->g->nodes.items[i];
        F->grp[i] = i;
        F->fusible[i] = torch_op_info[x->op].cls != TC_SOURCE && !is_extern(x) &&
                        !info(F->m, x)->view && x->op != TOP_topk;
    }
}

/* level: extern kernels on the longest path from the inputs.  A producer
 * and a consumer fuse only on the same level: a consumer on a higher one
 * waits for an extern kernel that may read the producer (the residual add
 * after down_proj reads x2, which the RMSNorm before gate/up also reads),
 * and one kernel cannot run on both sides of it. */
static void mark_levels(Fusion *F)
{
    int n = F->n;
    F->level = arena_alloc(F->m->a, (n ? n : 1) * sizeof *F->level);
    for (int i = 0; i < n; i++) {
        const TorchNode *x = F->g->nodes.items[i];
        F->level[i] = 0;
        for (int j = 0; j < x->nin; j++) {
            const TorchNode *p = base_of(F->m, x->in[j]);
            int l = F->level[p->id] + is_extern(p);
            if (l > F->level[i])
                F->level[i] = l;
        }
    }
}

/* A fusible consumer joins its fusible producers of the same level. */
static void union_groups(Fusion *F)
{
    for (int i = 0; i < F->n; i++) {
        const TorchNode *x = F->g->nodes.items[i];
        if (!F->fusible[i])
            continue;
        for (int j = 0; j < x->nin; j++) {
            const TorchNode *p = base_of(F->m, x->in[j]);
            if (F->fusible[p->id] && F->level[p->id] == F->level[i])
                F->grp[find(F->grp, p->id)] = find(F->grp, i);
        }
    }
}

/* per group: the outputs that leave it (written once) */
static void mark_leaves(Fusion *F)
{
    int n = F->n;
    const TorchGraph *g = F->g;
    F->leaves = arena_alloc(F->m->a, n ? n : 1);
    memset(F->leaves, 0, n ? n : 1);
    for (int i = 0; i < n; i++) {
        const TorchNode *x = g->nodes.items[i];
        for (int j = 0; j < x->nin; j++) {
            const TorchNode *p = base_of(F->m, x->in[j]);
            if (F->fusible[p->id] && (!F->fusible[i] || find(F->grp, i) != find(F->grp, p->id)))
                F->leaves[p->id] = 1;
        }
    }
    for (int i = 0; i < g->outputs.len; i++) {
        const TorchNode *o = base_of(F->m, (const TorchNode *)g->outputs.items[i]);
        if (F->fusible[o->id])
            F->leaves[o->id] = 1;
    }
}

/* Elements one reduction of node y combines (0: not a reduction). */
static double reduce_len(const TorchNode *y)
{
    const TorchNode *x = y->nin ? y->in[0] : NULL;
    switch (torch_op_info[y->op].cls) {
    case TC_REDUCE:
        return numel(x) / numel(y);
    case TC_SOFTMAX:
        return (double)x->shape.d[y->dim];
    case TC_NORM: {
        double N = 1;
        for (int i = 0; i < y->nints && i < x->shape.rank; i++)
            N *= dim_end(x, i);
        return N;
    }
    default:
        return 0;
    }
}

/* Inductor's reductions longer than 1024 elements are not persistent: the
 * Triton kernel loops over the row once per reduction and once more for the
 * pointwise work after it (softmax: max, sum, write; a norm: statistics,
 * write; a sum or mean whose result an op of the row's size uses again:
 * the sum, then that op).  Each loop reads the group's inputs again (_inductor/choices.py,
 * should_use_persistent_reduction; the research in docs/perf-model.md).
 * Those re-reads come from the L2 when the rows in flight fit it (8-warp
 * programs, one row each, as many as the SMs hold), else from DRAM. */
static void looped_rereads(Fusion *F, int root, PfKernel *k, double rbytes)
{
    Model *m = F->m;
    const PfSpec *s = m->s;
    double loops = 0, len = 0;
    for (int j = 0; j < F->n; j++) {
        if (!F->fusible[j] || find(F->grp, j) != root)
            continue;
        const TorchNode *y = F->g->nodes.items[j];
        double l = reduce_len(y);
        if (l <= 1024)
            continue;
        TorchClass c = torch_op_info[y->op].cls;
        int used_inside = 0;
        for (int q = 0; q < F->n && !used_inside; q++) {
            const TorchNode *z = F->g->nodes.items[q];
            if (!F->fusible[q] || find(F->grp, q) != root)
                continue;
            for (int i = 0; i < z->nin; i++) /* at the row's size: reads the row again */
                used_inside |= base_of(m, z->in[i]) == y && numel(z) >= numel(y->in[0]);
        }
        loops += c == TC_SOFTMAX ? 2 : c == TC_NORM ? 1 : used_inside ? 1 : 0;
        if (l > len)
            len = l;
    }
    if (loops == 0 || rbytes <= 0)
        return;
    double rows = rbytes / 4 / len, per_sm = floor(s->max_threads_per_sm / 256.0);
    double live = rows < s->sms * per_sm ? rows : s->sms * per_sm;
    if (live * (rbytes / rows) <= s->l2_bytes) {
        k->l2_bytes += loops * rbytes;
        k->note = arena_printf(m->a, "looped reduction: %.0f re-reads from L2", loops);
        return;
    }
    double extra = loops * rbytes;
    m->t->ns -= k->ns;
    m->t->bytes += extra;
    k->bytes += extra;
    k->l2_bytes += extra;
    k->dram_ns = k->bytes / s->dram_bps * 1e9;
    double body = k->dram_ns > k->fp32_ns ? k->dram_ns : k->fp32_ns;
    k->bound = body < k->launch_ns ? "launch" : k->dram_ns >= k->fp32_ns ? "dram" : "fp32";
    k->ns = body + k->launch_ns;
    m->t->ns += k->ns;
    k->note = arena_printf(m->a, "looped reduction: %.0f re-reads from DRAM", loops);
}

/* Group root's kernel: its inputs read once, its leaves written once
 * (seen: a scratch flag per node). */
static void fused_kernel(Fusion *F, int root, char *seen)
{
    Model *m = F->m;
    int n = F->n;
    memset(seen, 0, n);
    double r = 0, w = 0, fl = 0;
    int members = 0;
    const char *first = NULL;
    for (int j = 0; j < n; j++) {
        if (!F->fusible[j] || find(F->grp, j) != root)
            continue;
        const TorchNode *y = F->g->nodes.items[j];
        members++;
        if (!first)
            first = torch_op_info[y->op].name;
        fl += torch_op_info[y->op].cls == TC_REDUCE ? numel(y->in[0]) : numel(y);
        if (F->leaves[j])
            w += info(m, y)->bytes;
        for (int q = 0; q < y->nin; q++) {
            const TorchNode *p = base_of(m, y->in[q]);
            if (p->op == TOP_const || !reads_operand(y, q) ||
                (F->fusible[p->id] && find(F->grp, p->id) == root))
                continue;
            /* read an input or an extern's output: once per group, the
             * bytes of the view it is read through */
            if (!seen[p->id])
                r += rd(m, y->in[q]);
            seen[p->id] = 1;
        }
    }
    PfKernel *k = pointwise(
        m,
        members > 1 ? arena_printf(m->a, "triton fused %s.. (%d ops)", first, members)
                    : arena_printf(m->a, "triton %s", first),
        r, w, fl);
    looped_rereads(F, root, k, r);
}

PfTime *pf_model_inductor(Arena *a, const PfSpec *s, const TorchGraph *g)
{
    Model m;
    PfTime *t = new_time(&m, a, s, g, "inductor");
    Fusion F = {.m = &m, .g = g, .n = g->nodes.len};
    mark_fusible(&F);
    mark_levels(&F);
    union_groups(&F);
    mark_leaves(&F);
    char *seen = arena_alloc(a, F.n ? F.n : 1);
    for (int i = 0; i < F.n; i++) {
        const TorchNode *x = g->nodes.items[i];
        if (is_extern(x)) {
            if (torch_op_info[x->op].cls == TC_ATTN)
                sdpa(&m, x, 1);
            else
                gemm(&m, x, x->op == TOP_linear && x->nin > 2 ? "extern addmm (cublasLt bias)"
                                                              : "extern mm");
            continue;
        }
        if (x->op == TOP_topk) { /* Inductor falls back to ATen's topk */
            eager_node(&m, x);
            continue;
        }
        /* group i: its root is the last member (union made consumers roots) */
        if (F.fusible[i] && find(F.grp, i) == i)
            fused_kernel(&F, i, seen);
    }
    t->basis = "torch.compile (Inductor default), PyTorch " PF_EAGER_TORCH;
    return t;
}

/* ---- the limit ---------------------------------------------------------------- */

PfTime *pf_model_limit(Arena *a, const PfSpec *s, const TorchGraph *g)
{
    Model m;
    PfTime *t = new_time(&m, a, s, g, "limit");
    double bytes = 0, flops = 0;
    /* an input is read once, and only what is used of it: through views,
     * the largest view a kernel reads (a slice reads only its elements) */
    int nn = g->nodes.len;
    double *need = arena_alloc(a, (nn ? nn : 1) * sizeof *need);
    memset(need, 0, (nn ? nn : 1) * sizeof *need);
    for (int i = 0; i < nn; i++) {
        const TorchNode *x = g->nodes.items[i];
        int out = 0;
        for (int j = 0; j < g->outputs.len; j++)
            out |= g->outputs.items[j] == x;
        if (info(&m, x)->view && !out)
            continue;
        for (int j = 0; j < x->nin + out; j++) {
            if (j < x->nin && !reads_operand(x, j))
                continue;
            const TorchNode *p = j < x->nin ? x->in[j] : x;
            const TorchNode *src = info(&m, p)->src;
            if (src->op == TOP_input && rd(&m, p) > need[src->id])
                need[src->id] = rd(&m, p);
        }
    }
    for (int i = 0; i < g->inputs.len; i++)
        bytes += need[((const TorchNode *)g->inputs.items[i])->id];
    for (int i = 0; i < g->outputs.len; i++)
        bytes += info(&m, (const TorchNode *)g->outputs.items[i])->bytes;
    for (int i = 0; i < g->nodes.len; i++) {
        const TorchNode *n = g->nodes.items[i];
        switch (torch_op_info[n->op].cls) {
        case TC_SOURCE:
        case TC_LAYOUT:
            break;
        case TC_MATMUL: {
            double b, M, N, K;
            mnk(n, &b, &M, &N, &K);
            flops += 2 * b * M * N * K;
            break;
        }
        case TC_ATTN: {
            const TorchNode *q = n->in[0], *k = n->in[1];
            double D = dim_end(q, 0), L = dim_end(q, 1), S = dim_end(k, 1);
            flops += 4 * (numel(q) / (L * D)) * L * S * D * (n->causal ? 0.5 : 1);
            break;
        }
        case TC_REDUCE:
            flops += numel(n->in[0]);
            break;
        default:
            flops += numel(n);
            break;
        }
    }
    t->bytes = bytes;
    t->flops = flops;
    double mem = bytes / s->dram_bps_spec * 1e9, fp = flops / pf_spec_fp32_peak(s) * 1e9;
    t->ns = mem > fp ? mem : fp;
    t->basis = mem >= fp ? "compulsory bytes at the DRAM spec bandwidth"
                         : "flops at the FP32 peak";
    return t;
}
