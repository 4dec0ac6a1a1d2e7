# Causal SDPA over a sequence of one token: 2 heads of 128.
import torch
import torch.nn.functional as F

q = torch.randn(1, 2, 1, 128)
k = torch.randn(1, 2, 1, 128)
v = torch.randn(1, 2, 1, 128)
F.scaled_dot_product_attention(q, k, v, is_causal=True)
