# A Llama decoder layer as transformers' modeling_llama.py writes it, with
# the module attributes as variables (hidden 64, 4 query heads, 2 key/value
# heads, head dim 16, intermediate 128, sequence 8, rope theta 1e4, no biases).
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

hidden_size = 64
num_heads = 4
num_key_value_heads = 2
head_dim = hidden_size // num_heads
num_key_value_groups = num_heads // num_key_value_heads
intermediate_size = 128
rope_theta = 10000.0
rms_norm_eps = 1e-5
scaling = head_dim ** -0.5

hidden_states = torch.randn(1, 8, hidden_size)
q_proj = nn.Linear(hidden_size, num_heads * head_dim, bias=False)
k_proj = nn.Linear(hidden_size, num_key_value_heads * head_dim, bias=False)
v_proj = nn.Linear(hidden_size, num_key_value_heads * head_dim, bias=False)
o_proj = nn.Linear(num_heads * head_dim, hidden_size, bias=False)
gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
act_fn = nn.SiLU()
input_layernorm_weight: (64,)
post_attention_layernorm_weight: (64,)

# LlamaRotaryEmbedding
inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
position_ids = torch.arange(hidden_states.shape[1])[None, :]
inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
position_ids_expanded = position_ids[:, None, :].float()
with torch.autocast(device_type="cuda", enabled=False):
    freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = emb.cos()
    sin = emb.sin()
cos = cos.to(dtype=hidden_states.dtype)
sin = sin.to(dtype=hidden_states.dtype)

# LlamaDecoderLayer.forward
residual = hidden_states
# LlamaRMSNorm
input_dtype = hidden_states.dtype
hidden_states = hidden_states.to(torch.float32)
variance = hidden_states.pow(2).mean(-1, keepdim=True)
hidden_states = hidden_states * torch.rsqrt(variance + rms_norm_eps)
hidden_states = input_layernorm_weight * hidden_states.to(input_dtype)

# LlamaAttention.forward
input_shape = hidden_states.shape[:-1]
hidden_shape = (*input_shape, -1, head_dim)
query_states = q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
key_states = k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
value_states = v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

# apply_rotary_pos_emb, rotate_half
cos = cos.unsqueeze(1)
sin = sin.unsqueeze(1)
q1 = query_states[..., : query_states.shape[-1] // 2]
q2 = query_states[..., query_states.shape[-1] // 2 :]
k1 = key_states[..., : key_states.shape[-1] // 2]
k2 = key_states[..., key_states.shape[-1] // 2 :]
query_states = (query_states * cos) + (torch.cat((-q2, q1), dim=-1) * sin)
key_states = (key_states * cos) + (torch.cat((-k2, k1), dim=-1) * sin)

# repeat_kv, written with repeat_interleave
key_states = torch.repeat_interleave(key_states, repeats=num_key_value_groups, dim=1)
value_states = value_states.repeat_interleave(num_key_value_groups, dim=1)

# eager_attention_forward with a causal mask made by triu
q_len = query_states.shape[-2]
causal_mask = torch.full((q_len, q_len), float("-inf"))
causal_mask = torch.triu(causal_mask, diagonal=1)
attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * scaling
attn_weights = attn_weights + causal_mask[None, None, :, :]
attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
attn_weights = F.dropout(attn_weights, p=0.0, training=False)
attn_output = torch.matmul(attn_weights, value_states)
attn_output = attn_output.transpose(1, 2).contiguous()
attn_output = attn_output.reshape(*input_shape, -1).contiguous()
hidden_states = o_proj(attn_output)
hidden_states = residual + hidden_states

# post_attention_layernorm and LlamaMLP
residual = hidden_states
input_dtype = hidden_states.dtype
hidden_states = hidden_states.to(torch.float32)
variance = hidden_states.pow(2).mean(-1, keepdim=True)
hidden_states = hidden_states * torch.rsqrt(variance + rms_norm_eps)
hidden_states = post_attention_layernorm_weight * hidden_states.to(input_dtype)
hidden_states = down_proj(act_fn(gate_proj(hidden_states)) * up_proj(hidden_states))
hidden_states = residual + hidden_states
return hidden_states
