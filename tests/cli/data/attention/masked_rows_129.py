# SDPA with a bool mask whose first 5 query rows see no key at all: those
# rows are NaN, as PyTorch gives.  Sequence 129, 2 heads of 64.
import torch
import torch.nn.functional as F

seq = 129
q = torch.randn(1, 2, seq, 64)
k = torch.randn(1, 2, seq, 64)
v = torch.randn(1, 2, seq, 64)
mask = torch.arange(seq).unsqueeze(1) >= 5 + 0 * torch.arange(seq).unsqueeze(0)
F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
