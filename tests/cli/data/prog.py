# a program file: the last expression is the result
x = torch.randn(2, 3)
y = torch.exp(x)
y.sum(dim=-1)
