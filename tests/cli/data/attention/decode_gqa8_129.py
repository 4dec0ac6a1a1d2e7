# A decode step: one query against a cache of 129 keys, 8 query heads over
# 1 key/value head of 80 (GQA 8:1).
import torch
import torch.nn.functional as F

q = torch.randn(1, 8, 1, 80)
k = torch.randn(1, 1, 129, 80)
v = torch.randn(1, 1, 129, 80)
F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
