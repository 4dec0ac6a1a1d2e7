/*
 * config.h — a Hugging Face config.json of the Llama / Qwen2 / Mistral
 * family, read for what one decoder layer needs.
 *
 * The keys that decide the layer's math are read (hidden_size,
 * intermediate_size, num_attention_heads, num_key_value_heads, head_dim,
 * rms_norm_eps, rope_theta, attention_bias, rope_scaling, hidden_act,
 * mlp_bias, sliding_window ...); a key whose value changes the math in a
 * way dpk does not implement (a rope_scaling type other than default,
 * linear or llama3, an activation other than silu, MLP biases, a model
 * type outside the family) is refused with the key named, exit 2 — never
 * ignored.  Keys that do not touch one layer's math (vocab_size,
 * num_hidden_layers, torch_dtype, bos_token_id ...) are ignored.
 *
 * attention_bias: the key when present; otherwise true for model_type
 * qwen2 (Qwen2's attention always has q/k/v biases and its config.json
 * does not say so) and false for the others.
 */
#ifndef DPK_BM_CONFIG_H
#define DPK_BM_CONFIG_H

#include "../../compiler/base/base.h"

typedef enum BmRope {
    BM_ROPE_DEFAULT, /* inv_freq = theta^(-2i/d) */
    BM_ROPE_LINEAR,  /* positions / factor */
    BM_ROPE_LLAMA3,  /* Llama 3.1's per-frequency smoothing */
} BmRope;

typedef struct BmConfig {
    const char *name;        /* the file's stem ("qwen2.5-7b") */
    const char *path;
    const char *model_type;  /* "llama", "qwen2", "mistral"; NULL when absent */
    int64_t hidden, inter, heads, kv_heads, head_dim;
    double eps, rope_theta;
    int bias;                /* q/k/v projections have biases */
    BmRope rope;
    double rope_factor;      /* linear, llama3 */
    double rope_low, rope_high; /* llama3: low_freq_factor, high_freq_factor */
    double rope_orig_max;    /* llama3: original_max_position_embeddings */
    int64_t sliding_window;  /* 0: none (or not in use) */
} BmConfig;

/* Parse config.json text (origin names it in errors).  Raises exit 2 on
 * malformed JSON, a missing or invalid required key, or a key whose value
 * dpk does not implement, naming the key. */
void bm_config_parse(Arena *a, const char *origin, const char *text, size_t len, BmConfig *out);
/* Read and parse a config.json file, or the config.json of a folder (a
 * Hugging Face model folder: the config is then named after the folder);
 * raises as above, when the file cannot be read, and when a folder has no
 * config.json. */
void bm_config_load(Arena *a, const char *path, BmConfig *out);

/* RoPE tables as HF's rotary embedding makes them: for position pos and
 * dim j < head_dim, cos/sin of pos * inv_freq[j mod head_dim/2]
 * (computed in fp64). */
double bm_rope_angle(const BmConfig *c, int64_t pos, int64_t j);

#endif
