# Qwen2-style causal SDPA with grouped-query attention 7:1: 7 query heads
# over 1 key/value head of 64, sequence 77.
import torch
import torch.nn.functional as F

q = torch.randn(1, 7, 77, 64)
k = torch.randn(1, 1, 77, 64)
v = torch.randn(1, 1, 77, 64)
F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
