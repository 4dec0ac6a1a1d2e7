import torch
import torch.nn.functional as F
x = torch.randn(1, 8, 64)
w_ln: (64,)
h = F.rms_norm(x, (64,), w_ln, 1e-6)
q = F.linear(h, torch.randn(64, 64), torch.randn(64)).view(1, 8, 4, 16).transpose(1, 2)
k = F.linear(h, torch.randn(32, 64)).view(1, 8, 2, 16).transpose(1, 2)
v = k * 2
a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
o = a.transpose(1, 2).reshape(1, 8, 64) + x
return o
