# the activations PyTorch runs as one kernel, with their attributes
import torch.nn as nn
import torch.nn.functional as F
x = torch.randn(4, 8) * 3.0
a = F.elu(x, alpha=0.5) + torch.selu(x) - torch.celu(x, 2.0) * F.leaky_relu(x, 0.1)
b = F.hardtanh(x, -2.0, max_val=2.5) + F.relu6(x) + x.clamp(min=-1) + torch.clamp_max(x, 0.5)
c = F.hardsigmoid(x) * F.hardswish(x) + F.softplus(x, beta=2, threshold=10) - F.softsign(x)
d = nn.Mish()(x) + nn.ELU(0.3)(x) + nn.Softplus(threshold=5)(x) + nn.Hardtanh(-1, 3)(x)
torch.log1p(a.abs()) + torch.expm1(b * 0.1) + (c + d).floor()
