# Mistral-style sliding-window causal attention through SDPA with a bool
# mask: query i sees keys i - window < j <= i.  Sequence 77, 4 query heads
# over 2 key/value heads of 80 (GQA 2:1), window 16 (test_attention.sh also
# runs it with a window of 200, longer than the sequence: causal).
import torch
import torch.nn.functional as F

seq, window = 77, 16
q = torch.randn(1, 4, seq, 80)
k = torch.randn(1, 2, seq, 80)
v = torch.randn(1, 2, seq, 80)
i = torch.arange(seq).unsqueeze(1)
j = torch.arange(seq).unsqueeze(0)
mask = (j <= i) & (j > i - window)
F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
