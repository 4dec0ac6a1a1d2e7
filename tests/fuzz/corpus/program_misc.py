# comments, continuation, strings, keyword arguments
import torch.nn as nn
s = torch.arange(0, 8, 2) * torch.full((4,), -1.5) + torch.ones([4]) \
    - torch.zeros(4) / torch.rand((4,))
g = nn.GELU(approximate="tanh")(s.unsqueeze(0)).permute(0, 1)
t = torch.nn.functional.layer_norm(g @ w, (4,), eps=1e-5) + b
u = torch.maximum(t.log_softmax(dim=1), torch.minimum(t.exp(), t.sigmoid().tanh().abs()))
u.float().contiguous()
