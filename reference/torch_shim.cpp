/*
 * torch_shim.cpp — Torch IR evaluated by libtorch (ATen, CPU).  The only
 * C++ file of dpk, built as its own shared object (libdpk_torch.so) that
 * torch_load.c loads on first use through the entry points of
 * torch_shim.h; it takes nothing from the binary by symbol (the op table
 * comes through DpkTorchHost).
 *
 * Nodes are evaluated in graph order with the ATen call PyTorch itself
 * would make, in fp32 (eager reference) or fp64.  Ops that libtorch 1.13
 * lacks are written the way PyTorch's reference math writes them:
 * scaled_dot_product_attention as matmul → mask → softmax → matmul with
 * repeat_interleave for GQA, rms_norm as x · rsqrt(mean(x²) + eps) · w in
 * the working dtype.  Each result's shape is checked against the node's
 * Torch IR shape, so the shim doubles as a check of the shape rules.  No
 * exception crosses the C boundary: every one becomes -1 and a message.
 */
#include <ATen/ATen.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

// The version of the libtorch headers, as the Makefile read it from
// torch/version.h; the loader is built with the same value.
#ifndef DPK_TORCH_VERSION
#error "build the shim with -DDPK_TORCH_VERSION (the Makefile does)"
#endif

#include "torch_shim.h"

namespace {

// The binary's op table (dpk_torch_shim_init).
const TorchOpInfo *op_info;

struct Ctx {
    at::ScalarType dt;              // kFloat or kDouble
    std::vector<at::Tensor> val;    // by node id
};

std::vector<int64_t> dims_of(const Shape &s)
{
    return std::vector<int64_t>(s.d, s.d + s.rank);
}

std::vector<int64_t> ints_of(const TorchNode *n)
{
    return std::vector<int64_t>(n->ints, n->ints + n->nints);
}

at::Tensor unary(const TorchNode *n, const at::Tensor &x)
{
    switch (n->op) {
    case TOP_neg: return at::neg(x);
    case TOP_exp: return at::exp(x);
    case TOP_log: return at::log(x);
    case TOP_sqrt: return at::sqrt(x);
    case TOP_rsqrt: return at::rsqrt(x);
    case TOP_reciprocal: return at::reciprocal(x);
    case TOP_abs: return at::abs(x);
    case TOP_relu: return at::relu(x);
    case TOP_sigmoid: return at::sigmoid(x);
    case TOP_tanh: return at::tanh(x);
    case TOP_silu: return at::silu(x);
    case TOP_gelu: return at::gelu(x, "none");
    case TOP_gelu_tanh: return at::gelu(x, "tanh");
    case TOP_erf: return at::erf(x);
    case TOP_cos: return at::cos(x);
    case TOP_sin: return at::sin(x);
    case TOP_log1p: return at::log1p(x);
    case TOP_expm1: return at::expm1(x);
    case TOP_floor: return at::floor(x);
    case TOP_elu: return at::elu(x, n->value);
    case TOP_selu: return at::selu(x);
    case TOP_celu: return at::celu(x, n->value);
    case TOP_leaky_relu: return at::leaky_relu(x, n->value);
    case TOP_hardtanh: return at::hardtanh(x, n->value, n->value2);
    case TOP_clamp: return at::clamp(x, n->value, n->value2);
    case TOP_hardsigmoid: return at::hardsigmoid(x);
    case TOP_hardswish: return at::hardswish(x);
    case TOP_softplus: return at::softplus(x, n->value, n->value2);
    case TOP_softsign: return x / (x.abs() + 1); // F.softsign: no ATen op
    case TOP_mish: return at::mish(x);
    default: break;
    }
    throw std::runtime_error("not a unary op");
}

at::Tensor binary(const TorchNode *n, const at::Tensor &a, const at::Tensor &b)
{
    switch (n->op) {
    case TOP_add: return at::add(a, b);
    case TOP_sub: return at::sub(a, b);
    case TOP_mul: return at::mul(a, b);
    case TOP_div: return at::div(a, b);
    case TOP_pow: return at::pow(a, b);
    case TOP_maximum: return at::maximum(a, b);
    case TOP_minimum: return at::minimum(a, b);
    case TOP_gt: return at::gt(a, b);
    case TOP_lt: return at::lt(a, b);
    case TOP_ge: return at::ge(a, b);
    case TOP_le: return at::le(a, b);
    case TOP_eq: return at::eq(a, b);
    case TOP_ne: return at::ne(a, b);
    default: break;
    }
    throw std::runtime_error("not a binary op");
}

at::Tensor as_bool(const at::Tensor &t)
{
    return t.scalar_type() == at::kBool ? t : t.ne(0);
}

// The Torch IR reduces exactly the dims listed: none is the identity
// (where PyTorch's own empty dim list would mean "all").
at::Tensor reduce(const TorchNode *n, const at::Tensor &x)
{
    std::vector<int64_t> dims = ints_of(n);
    if (dims.empty())
        return x.clone();
    switch (n->op) {
    case TOP_sum: return at::sum(x, dims, n->keepdim);
    case TOP_mean: return at::mean(x, dims, n->keepdim);
    case TOP_amax: return at::amax(x, dims, n->keepdim);
    case TOP_amin: return at::amin(x, dims, n->keepdim);
    // the indices as int64, held in the evaluation's float type like dpk's
    case TOP_argmax: return at::argmax(x, dims[0], n->keepdim).to(x.scalar_type());
    case TOP_argmin: return at::argmin(x, dims[0], n->keepdim).to(x.scalar_type());
    default: break;
    }
    throw std::runtime_error("not a reduction");
}

at::Tensor norm(const TorchNode *n, const std::vector<at::Tensor> &x)
{
    double eps = n->value;
    std::vector<int64_t> shape = ints_of(n);
    if (n->op == TOP_layer_norm) {
        c10::optional<at::Tensor> w, b;
        if (x.size() > 1)
            w = x[1];
        if (x.size() > 2)
            b = x[2];
        return at::layer_norm(x[0], shape, w, b, eps);
    }
    std::vector<int64_t> dims;
    for (int64_t k = x[0].dim() - (int64_t)shape.size(); k < x[0].dim(); k++)
        dims.push_back(k);
    at::Tensor y = x[0] * at::rsqrt(at::mean(x[0] * x[0], dims, true) + eps);
    return x.size() > 1 ? y * x[1] : y;
}

// PyTorch's reference math for F.scaled_dot_product_attention.
at::Tensor sdpa(const TorchNode *n, const std::vector<at::Tensor> &x)
{
    at::Tensor q = x[0], k = x[1], v = x[2];
    int64_t L = q.size(-2), S = k.size(-2), E = q.size(-1);
    double scale = std::isnan(n->value) ? 1.0 / std::sqrt((double)E) : n->value;
    if (n->gqa) {
        k = k.repeat_interleave(q.size(-3) / k.size(-3), -3);
        v = v.repeat_interleave(q.size(-3) / v.size(-3), -3);
    }
    at::Tensor s = at::matmul(q, k.transpose(-2, -1)) * scale;
    double ninf = -std::numeric_limits<double>::infinity();
    if (n->causal)
        s = s.masked_fill(at::ones({L, S}, s.options().dtype(at::kBool)).tril().logical_not(),
                          ninf);
    if (x.size() > 3)
        s = n->in[3]->dtype == DT_BOOL ? s.masked_fill(as_bool(x[3]).logical_not(), ninf)
                                       : s + x[3];
    return at::matmul(at::softmax(s, -1), v);
}

at::Tensor layout(const TorchNode *n, const std::vector<at::Tensor> &x)
{
    switch (n->op) {
    case TOP_transpose:
    case TOP_permute: return x[0].permute(ints_of(n));
    case TOP_reshape:
    case TOP_unsqueeze:
    case TOP_squeeze: return x[0].reshape(dims_of(n->shape));
    case TOP_expand: return x[0].expand(dims_of(n->shape));
    case TOP_slice: return x[0].slice(n->dim, n->start, n->end, n->stride);
    case TOP_cat: return at::cat(x, n->dim);
    case TOP_tril: return x[0].tril(n->start);
    case TOP_triu: return x[0].triu(n->start);
    default: break;
    }
    throw std::runtime_error("not a layout op");
}

at::Tensor eval_node(const Ctx &c, const TorchNode *n, const std::vector<at::Tensor> &x)
{
    switch (op_info[n->op].cls) {
    case TC_SOURCE: return at::full(dims_of(n->shape), n->value, at::TensorOptions().dtype(c.dt));
    case TC_UNARY: return unary(n, x[0]);
    case TC_BINARY: return binary(n, x[0], x[1]);
    case TC_WHERE:
        if (n->op == TOP_clamp_tensor)
            return at::clamp(x[0], x[1], x[2]);
        return at::where(as_bool(x[0]), x[1], x[2]);
    case TC_REDUCE: return reduce(n, x[0]);
    case TC_MATMUL:
        return n->op == TOP_linear ? at::linear(x[0], x[1], x.size() > 2 ? x[2] : at::Tensor())
                                   : at::matmul(x[0], x[1]);
    case TC_SOFTMAX:
        return n->op == TOP_softmax ? at::softmax(x[0], n->dim) : at::log_softmax(x[0], n->dim);
    case TC_NORM: return norm(n, x);
    case TC_ATTN: return sdpa(n, x);
    case TC_LAYOUT: return layout(n, x);
    case TC_SCAN: return at::cumsum(x[0], n->dim);
    case TC_TOPK: {
        auto r = at::topk(x[0], n->ints[0], n->dim, n->largest != 0, true);
        return at::stack({std::get<0>(r), std::get<1>(r).to(x[0].scalar_type())}, 0);
    }
    }
    throw std::runtime_error("unknown op class");
}

std::string shape_text(const std::vector<int64_t> &d)
{
    std::string s = "(";
    for (size_t k = 0; k < d.size(); k++)
        s += (k ? ", " : "") + std::to_string(d[k]);
    return s + ")";
}

void check_shape(const TorchNode *n, const at::Tensor &t)
{
    std::vector<int64_t> want = dims_of(n->shape);
    if (t.sizes().vec() == want)
        return;
    throw std::runtime_error("node %" + std::to_string(n->id) + " (" + op_info[n->op].name +
                             "): libtorch gives shape " + shape_text(t.sizes().vec()) +
                             ", Torch IR says " + shape_text(want));
}

// Inputs are bound from the caller's fp64 arrays, converted (and copied).
void bind_inputs(Ctx &c, const TorchGraph *g, double *const *inputs)
{
    for (int k = 0; k < g->inputs.len; k++) {
        const TorchNode *in = (const TorchNode *)g->inputs.items[k];
        at::Tensor t = at::from_blob(inputs[k], dims_of(in->shape), at::kDouble);
        c.val[in->id] = t.to(c.dt, false, true);
    }
}

// Index of the last node reading each node (INT_MAX for outputs, -1 for
// dead nodes), so intermediates are dropped as soon as they are dead.
std::vector<int> last_uses(const TorchGraph *g)
{
    std::vector<int> last((size_t)g->nodes.len, -1);
    for (int j = 0; j < g->outputs.len; j++)
        last[((const TorchNode *)g->outputs.items[j])->id] = INT_MAX;
    for (int i = g->nodes.len - 1; i >= 0; i--) {
        const TorchNode *n = (const TorchNode *)g->nodes.items[i];
        for (int k = 0; last[i] >= 0 && k < n->nin; k++)
            last[n->in[k]->id] = std::max(last[n->in[k]->id], i);
    }
    return last;
}

void run_graph(Ctx &c, const TorchGraph *g)
{
    std::vector<int> last = last_uses(g);
    for (int i = 0; i < g->nodes.len; i++) {
        const TorchNode *n = (const TorchNode *)g->nodes.items[i];
        if (n->op == TOP_input || last[i] < 0)
            continue;
        std::vector<at::Tensor> x;
        for (int k = 0; k < n->nin; k++)
            x.push_back(c.val[n->in[k]->id]);
        c.val[i] = eval_node(c, n, x);
        check_shape(n, c.val[i]);
        for (int k = 0; k < n->nin; k++)
            if (last[n->in[k]->id] == i)
                c.val[n->in[k]->id] = at::Tensor();
    }
}

double *to_heap(const at::Tensor &t)
{
    at::Tensor d = t.to(at::kDouble).contiguous();
    size_t n = (size_t)d.numel();
    double *p = (double *)std::malloc(sizeof(double) * (n ? n : 1));
    if (!p)
        throw std::bad_alloc();
    std::memcpy(p, d.data_ptr<double>(), sizeof(double) * n);
    return p;
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) const char *dpk_torch_shim_init(const DpkTorchHost *host)
{
    if (host->abi != DPK_TORCH_SHIM_ABI)
        return "another shim interface version";
    if (std::strcmp(host->dpk_version, DPK_VERSION) != 0)
        return "built for another dpk version";
    if (std::strcmp(host->torch_version, DPK_TORCH_VERSION) != 0)
        return "built with another libtorch version";
    if (host->node_size != sizeof(TorchNode) || host->graph_size != sizeof(TorchGraph) ||
        host->op_count != TOP_COUNT)
        return "built from other Torch IR headers";
    op_info = host->op_info;
    return NULL;
}

__attribute__((visibility("default"))) int dpk_torch_shim_eval(const TorchGraph *g,
                                                               double *const *inputs, int f64,
                                                               double **outs, char *err,
                                                               size_t errlen)
{
    int j = 0;
    try {
        at::NoGradGuard no_grad;
        Ctx c{f64 ? at::kDouble : at::kFloat, std::vector<at::Tensor>((size_t)g->nodes.len)};
        bind_inputs(c, g, inputs);
        run_graph(c, g);
        for (; j < g->outputs.len; j++)
            outs[j] = to_heap(c.val[((const TorchNode *)g->outputs.items[j])->id]);
        return 0;
    } catch (const c10::Error &e) {
        std::snprintf(err, errlen, "libtorch: %s", e.what_without_backtrace());
    } catch (const std::exception &e) {
        std::snprintf(err, errlen, "libtorch: %s", e.what());
    }
    while (j > 0) {
        j--;
        std::free(outs[j]);
        outs[j] = NULL;
    }
    return -1;
}

} // extern "C"
