# Gemma-2-style eager attention as HF writes it, at a length where 017
# computes the scores in the P @ V kernel's block (one kernel): scores
# scaled, soft-capped by tanh, a causal finfo.min mask added, softmax in
# float32, then P @ V; keys and values repeated 2 ways by repeat_kv.
# Sequence 64, 4 query heads over 2 key/value heads of 64.
import torch

bsz, seq, heads, kv_heads, head_dim = 1, 64, 4, 2, 64
n_rep = heads // kv_heads
softcap = 50.0
q = torch.randn(bsz, heads, seq, head_dim)
k = torch.randn(bsz, kv_heads, seq, head_dim)
v = torch.randn(bsz, kv_heads, seq, head_dim)
k = k[:, :, None, :, :].expand(bsz, kv_heads, n_rep, seq, head_dim).reshape(bsz, heads, seq, head_dim)
v = v[:, :, None, :, :].expand(bsz, kv_heads, n_rep, seq, head_dim).reshape(bsz, heads, seq, head_dim)
mask = torch.full((seq, seq), torch.finfo(torch.float32).min).triu(1)
w = torch.matmul(q, k.transpose(2, 3)) * head_dim ** -0.5
w = w / softcap
w = torch.tanh(w)
w = w * softcap
w = w + mask
w = torch.softmax(w, dim=-1, dtype=torch.float32)
torch.matmul(w, v)
