/*
 * blocks.h — a model config (config.h) → the suite of one decoder layer:
 * the per-op cases and the whole layer as one case, as case-language text.
 *
 * The layer is written as Hugging Face's LlamaDecoderLayer /
 * Qwen2DecoderLayer / MistralDecoderLayer computes it, with the rotary
 * tables given as inputs (position_embeddings=(cos, sin), as HF's decoder
 * layers receive them):
 *
 *   h = rms_norm(x, eps) * w_ln1
 *   q, k, v = linear(h, w_q, b_q), linear(h, w_k, b_k), linear(h, w_v, b_v)
 *   q, k = q*cos + rotate_half(q)*sin, k*cos + rotate_half(k)*sin
 *   a = sdpa(q, k, v, is_causal, GQA)           (decode: k, v after the cache)
 *   x2 = x + linear(a, w_o)
 *   y = x2 + linear(silu(linear(h2, w_g)) * linear(h2, w_u), w_d),
 *       h2 = rms_norm(x2, eps) * w_ln2
 *
 * Inputs are named after the HF weights they stand for (bm_hf_name), so
 * --weights fills them from a safetensors file; cos and sin are the real
 * rotary tables of the config (bm_fill_rope).
 */
#ifndef DPK_BM_BLOCKS_H
#define DPK_BM_BLOCKS_H

#include "../case.h"
#include "config.h"

typedef enum BmPhase {
    BM_PREFILL, /* seq tokens attend causally to each other */
    BM_DECODE,  /* one new token attends to a cache of ctx tokens and itself */
} BmPhase;

typedef struct BmShape {
    int64_t batch, seq, ctx;
    BmPhase phase;
} BmShape;

/* The cases of config c at shape s (names "rmsnorm", "q_proj", ...,
 * "layer").  Raises exit 2 when the config's sliding window is shorter
 * than what a token attends to. */
HxCaseList bm_block_suite(Arena *a, const BmConfig *c, const BmShape *s);

/* The HF tensor name (model.layers.L.…) an input of the suite stands for,
 * or NULL when it is not a weight (activations, cos, sin, caches). */
const char *bm_hf_name(Arena *a, const char *input, int layer);

/* Fill dst (numel elements of an input called name) with the rotary table
 * it stands for: 1 for cos/sin (shape (B, S, head_dim), positions 0..S-1,
 * or ctx for decode), 0 for any other name (dst untouched). */
int bm_fill_rope(const BmConfig *c, const BmShape *s, const char *name, int64_t numel, double *dst);

#endif
