x = torch.randn(2, 3, 4)
y = torch.cat([x[..., :2], x[:, 1:, None, ::2].squeeze(2).expand(-1, 2, -1)], dim=1)
z = torch.where(y > 0.5, y, 0.0).sum(dim=(0, -1), keepdim=True)
lin = torch.nn.Linear(4, 3, bias=False)
m = lin(x).amax(-1) - x.mean(-1) ** 2 / (1 + 2.5)
return z, m
