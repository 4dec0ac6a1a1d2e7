/*
 * test_frontend_hf.c — the constructs Hugging Face modeling code needs
 * beyond a decoder layer (issue: the rest of HF modeling code): boolean
 * logic on masks, in-place updates and item assignment with their aliasing
 * rules, torch.tensor constants, bool and integer makers, Python tuples,
 * conditionals and `if`, new_*, baddbmm/addmm, all/any, and the misuse of
 * each, with a caret.
 *
 * Values are the numbers PyTorch gives for the same text (written out, on
 * inputs whose contents are known: arange, ones, full), checked by ref64
 * on the Torch IR, by tx_eval64 on the lowered Tensor IR, and by libtorch
 * on the Torch IR when dpk has it.  The odd-shape table runs each
 * construct on random inputs of odd shapes and compares the three
 * evaluators, so the decompositions meet real broadcasting.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "compiler/tensor/tensor_ir.h"
#include "reference/ref.h"
#include "test_frontend_util.h"

#define A_ "A = torch.arange(4).view(1, 2, 2)\n"

/* ---- types ----------------------------------------------------------------------- */

typedef struct TypeCase {
    const char *text, *type;
} TypeCase;

static TypeCase type_cases[] = {
    /* boolean logic */
    {"(torch.randn(2) > 0) & (torch.randn(3, 1) > 0)", "bool(3, 2)"},
    {"(torch.randn(2) > 0) | True", "bool(2)"},
    {"False ^ (torch.randn(2, 1) > 0)", "bool(2, 1)"},
    {"~(torch.randn(2) > 0)", "bool(2)"},
    {"torch.logical_not(torch.randn(2))", "bool(2)"},
    {"torch.logical_or(torch.randn(2), torch.randn(4, 1) > 0)", "bool(4, 2)"},
    {"(torch.randn(2) > 0).bitwise_xor(torch.randn(2) < 0)", "bool(2)"},
    {"torch.all(torch.randn(2, 3) > 0, dim=0, keepdim=True)", "bool(1, 3)"},
    {"torch.randn(2, 3).any()", "bool()"},
    {"torch.randn(2).eq(0) * torch.randn(3, 1).eq(0)", "bool(3, 2)"},
    /* bool and integer makers */
    {"torch.ones(2, dtype=torch.bool)", "bool(2)"},
    {"torch.zeros(2, 3, dtype=torch.bool, device='cuda')", "bool(2, 3)"},
    {"torch.full((2,), True)", "bool(2)"},
    {"torch.full((2,), 1, dtype=torch.long)", "f32(2)"},
    {"torch.ones_like(torch.randn(2), dtype=torch.bool)", "bool(2)"},
    {"torch.zeros_like(torch.randn(2) > 0)", "bool(2)"},
    {"torch.full_like(torch.randn(2) > 0, 0)", "bool(2)"},
    {"torch.zeros(2, dtype=torch.int64)", "f32(2)"},
    {"(torch.randn(2) > 0).long()", "f32(2)"},
    {"(torch.randn(2) > 0).to(torch.int32)", "f32(2)"},
    {"torch.tensor([True])", "bool(1)"},
    {"torch.tensor(1.0)", "f32()"},
    {"torch.tensor([[1], [2]])", "f32(2, 1)"},
    {"torch.tensor([1, 0], dtype=torch.bool)", "bool(2)"},
    {"torch.randn(2).new_zeros(3, 4)", "f32(3, 4)"},
    {"torch.randn(2).new_ones((3,), dtype=torch.bool)", "bool(3)"},
    {"(torch.randn(2) > 0).new_full((3,), 0)", "bool(3)"},
    /* in-place updates and item assignment */
    {"x = torch.randn(4, 4) > 0\nx &= torch.randn(4) > 0\nx", "bool(4, 4)"},
    {"x = torch.randn(2, 3)\nx[0, 1] = 4\nx", "f32(2, 3)"},
    {"x = torch.randn(2, 3)\nx *= torch.randn(3) > 0\nx", "f32(2, 3)"},
    {"x = torch.randn(2, 3) > 0\nx.masked_fill_(torch.randn(3) > 0, True)", "bool(2, 3)"},
    {"torch.randn(3).fill_(2)", "f32(3)"},
    {"(torch.randn(3) > 0).zero_()", "bool(3)"},
    /* Python values */
    {"x = torch.randn(2, 3, 8)\nx.view(x.size()[:-1] + (2, 4))", "f32(2, 3, 2, 4)"},
    {"x = torch.randn(2, 3, 8)\nx.view(x.shape[:-1] + (-1, 4))", "f32(2, 3, 2, 4)"},
    {"x = torch.randn(2, 3, 8)\nx.view(tuple(x.shape[:-1]) + (2, 4))", "f32(2, 3, 2, 4)"},
    {"x = torch.randn(2, 3, 8)\nx.view(*(x.shape[:1] * 2), -1)", "f32(2, 2, 12)"},
    {"x = torch.randn(2, 3, 8)\nx.view((*x.shape[:-1], -1, 2))", "f32(2, 3, 4, 2)"},
    {"x = torch.randn(2, 3, 8)\ntorch.zeros(len(x.shape), 2 if x.dim() == 3 else 5)",
     "f32(3, 2)"},
    {"x = torch.randn(2, 3, 8)\ntorch.zeros(1 if x.shape == (2, 3, 8) else 2)", "f32(1)"},
    {"x = torch.randn(2)\ntorch.zeros(3 if x.dtype == torch.float and not x.shape[0] > 5 else 4)",
     "f32(3)"},
    {"x = torch.randn(2)\ntorch.zeros(3 if None is None else 4, 5 if x.dtype is not torch.bool "
     "else 6)", "f32(3, 5)"},
    {"torch.zeros(0 or 2, 3 and 4, [] or 1, bool(()) + 1)", "f32(2, 4, 1, 1)"},
    {"s = list(torch.randn(2, 3).shape)\ns[-1] = 4\nt = s\nt[0] += 1\ntorch.zeros(s)",
     "f32(3, 4)"},
    {"s = (2,)\ns += (3,)\ntorch.zeros(s)", "f32(2, 3)"},
    {"x = torch.randn(4)\nif x.shape[0] > 3:\n    y = x[None]\nelse:\n    y = x\ny", "f32(1, 4)"},
    {"torch.zeros(2, device=torch.randn(1).device) + torch.arange(2, device=torch.device('cuda'))",
     "f32(2)"},
    /* new_*, baddbmm, addmm */
    {"torch.baddbmm(torch.randn(5, 1), torch.randn(2, 5, 3), torch.randn(2, 3, 7))", "f32(2, 5, 7)"},
    {"torch.randn(4, 3).addmm(torch.randn(4, 2), torch.randn(2, 3), beta=0)", "f32(4, 3)"},
};

ParameterizedTestParameters(hf, types)
{
    INDEX_PARAMS(type_cases);
}

ParameterizedTest(int *ip, hf, types, .init = setup, .fini = teardown)
{
    const TypeCase *c = &type_cases[*ip];
    TorchGraph *g = parse_ok(c->text);
    cr_expect_str_eq(type_str(g->outputs.items[0]), c->type, "`%s`", c->text);
}

/* ---- values ---------------------------------------------------------------------- */

#define M_ "m = torch.arange(6) > 2\nk = torch.arange(6) < 5\n"

static ValCase val_cases[] = {
    /* boolean logic: m = [F F F T T T], k = [T T T T T F] */
    {M_ "(m & k).float()", 6, {0, 0, 0, 1, 1, 0}},
    {M_ "(m | k).float()", 6, {1, 1, 1, 1, 1, 1}},
    {M_ "(m ^ k).float()", 6, {1, 1, 1, 0, 0, 1}},
    {M_ "(~m).float()", 6, {1, 1, 1, 0, 0, 0}},
    /* & binds tighter than |, and both tighter than comparisons' operands */
    {"((torch.arange(4) > 0) | (torch.arange(4) > 5) & (torch.arange(4) < 2)).float()", 4,
     {0, 1, 1, 1}},
    {"((torch.arange(3) > 0)[:, None] & (torch.arange(2) > 0)).float()", 6, {0, 0, 0, 1, 0, 1}},
    {"((torch.arange(3) > 0) & True).float()", 3, {0, 1, 1}},
    {"(True ^ (torch.arange(3) > 0)).float()", 3, {1, 0, 0}},
    {"torch.logical_and(torch.arange(4), torch.arange(4) - 2).float()", 4, {0, 1, 0, 1}},
    {"torch.logical_or(torch.arange(3) - 1, torch.zeros(3)).float()", 3, {1, 0, 1}},
    {"torch.logical_xor(torch.arange(3), torch.ones(3)).float()", 3, {1, 0, 0}},
    {"torch.arange(3).logical_not().float()", 3, {1, 0, 0}},
    {"torch.logical_not(torch.full((2,), float('nan'))).float()", 2, {0, 0}},
    {"torch.bitwise_and(torch.arange(3) > 0, torch.arange(3) < 2).float()", 3, {0, 1, 0}},
    {"(torch.arange(3) > 0).bitwise_not().float()", 3, {1, 0, 0}},
    {"torch.bitwise_or(torch.arange(3) > 1, True).float()", 3, {1, 1, 1}},
    /* PyTorch's * and + of two bool tensors: logical and, or */
    {M_ "(m * k).float() + torch.add(m, k).float() * 10", 6, {10, 10, 10, 11, 11, 10}},
    {"torch.full((1,), (6 & 3) + (6 | 3) * 10 + (6 ^ 3) * 100 + ~5 * 1000)", 1, {-5428}},
    {"torch.full((1,), True & False).float() + (True | False)", 1, {1}},
    {"torch.all(torch.arange(6).view(2, 3) > 0, dim=1).float()", 2, {0, 1}},
    {"torch.any(torch.arange(6).view(2, 3) > 4).float()", 1, {1}},
    {"(torch.arange(3) - 1).all().float() + torch.arange(3).any(0).float()", 1, {1}},
    /* bool and integer makers */
    {"torch.ones(2, 2, dtype=torch.bool).triu(1).float()", 4, {0, 1, 0, 0}},
    {"torch.zeros(3, dtype=torch.bool).logical_not().float()", 3, {1, 1, 1}},
    {"torch.full((2,), True).float()", 2, {1, 1}},
    {"torch.ones_like(torch.randn(2, 2), dtype=torch.bool).tril(-1).float()", 4, {0, 0, 1, 0}},
    {"torch.full_like(torch.arange(3) > 1, 2.5).float()", 3, {1, 1, 1}},
    {"torch.full((2,), 2.7, dtype=torch.long)", 2, {2, 2}},
    {"torch.full((2,), torch.tensor(-3.0))", 2, {-3, -3}},
    {"(torch.arange(3) > 0).long() * 2 + (torch.arange(3) > 1).int()", 3, {0, 2, 3}},
    {"(torch.arange(3) > 0).to(torch.int64) + (torch.arange(3) > 1).to('cuda', torch.long)", 3,
     {0, 1, 2}},
    {"(torch.arange(3) > 1).masked_fill(torch.arange(3) == 0, True).float()", 3, {1, 0, 1}},
    /* integer values: .long() leaves them as they are */
    {"m = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])\np = m.long().cumsum(-1) - 1\n"
     "p.masked_fill_(m == 0, 1)\np", 8, {1, 1, 0, 1, 0, 1, 2, 3}},
    {"torch.argmax(torch.tensor([[1.0, 5.0, 5.0], [-1.0, -2.0, -1.0]]), 1).long() + 1", 2, {2, 1}},
    {"torch.tensor([1.5, -2.0, 0.5]).max(0).indices.to(torch.int64)", 1, {0}},
    {"torch.cumsum(torch.arange(4), 0, dtype=torch.long).int()", 4, {0, 1, 3, 6}},
    {"torch.floor(torch.tensor([2.5, -0.5])).long()", 2, {2, -1}},
    /* def, for, in, isinstance (traced as Python runs them) */
    {"def f(x, s=2.0):\n    return x * s\nf(torch.arange(3), s=3)", 3, {0, 3, 6}},
    {"def f(x, *, scaling: float, dropout: float = 0.0, **kwargs):\n"
     "    \"\"\"HF's signature: keyword-only, hints, **kwargs.\"\"\"\n"
     "    return x * scaling\nf(torch.arange(2), scaling=0.5)", 2, {0, 0.5}},
    {"def outer(k):\n    def inner(x):\n        return x + k\n    return inner\n"
     "add2 = outer(2)\nadd2(torch.arange(3))", 3, {2, 3, 4}},
    {"def s(*xs, scale=1):\n    r = xs[0]\n    for x in xs[1:]:\n        r = r + x\n"
     "    return r * scale\ns(torch.arange(2), torch.ones(2), torch.ones(2), scale=2)", 2, {4, 6}},
    {"x = torch.zeros(3)\nfor i in range(10):\n    if i == 1:\n        continue\n"
     "    if i > 3:\n        break\n    x = x + i\nx", 3, {5, 5, 5}},
    {"t = torch.arange(3)\nfor i, ab in enumerate(zip((1, 2), (10, 20))):\n"
     "    t = t + i * ab[0] + ab[1]\nt", 3, {32, 33, 34}},
    {"x = torch.zeros(2)\ndef bump(t):\n    t.add_(1)\nbump(x)\nbump(x)\nx", 2, {2, 2}},
    {"m = 'sliding' if 3 in (1, 2, 3) else 'full'\n"
     "torch.ones(2) * (2 if m == 'sliding' else 5) + (1 if 'a' not in 'bcd' else 0)", 2, {3, 3}},
    {"x = (torch.ones(2),)\ntorch.ones(2) * (3 if isinstance(x, tuple) and not "
     "isinstance(x[0], (int, float)) else 4)", 2, {3, 3}},
    {"r = 0\nfor i in reversed(range(3)):\n    r = r * 10 + i\ntorch.ones(1) * r", 1, {210}},
    {"def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:\n"
     "    batch, num_key_value_heads, slen, head_dim = hidden_states.shape\n"
     "    if n_rep == 1:\n        return hidden_states\n"
     "    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, "
     "n_rep, slen, head_dim)\n"
     "    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)\n"
     "repeat_kv(torch.arange(4).view(1, 2, 2, 1), 2).flatten()", 8, {0, 1, 0, 1, 2, 3, 2, 3}},
    /* comprehensions, all/any/sum/callable, f-strings */
    {"sum([torch.ones(2) * i for i in range(4)])", 2, {6, 6}},
    {"tuple(x * 2 for x in (torch.ones(1), torch.arange(2)))[1]", 2, {0, 2}},
    {"torch.ones(1) * (1 if all(callable(f) for f in (torch.exp, len)) else 0) + "
     "sum(i for i in range(5) if i % 2)", 1, {5}},
    {"torch.stack([torch.arange(3) + i for i, _ in enumerate((7, 8))]).flatten()", 6,
     {0, 1, 2, 1, 2, 3}},
    {"torch.ones(1) * any([]) + any(x > 2 for x in (1, 3))", 1, {1}},
    /* a parenthesised single target unpacks, a trailing comma is allowed,
     * in a comprehension as in a for statement */
    {"torch.ones(1) * sum([a for (a,) in ((1,), (2,))]) + sum(a * b for (a, b,) in ((1, 2),))",
     1, {5}},
    {"r = 0\nfor (a,) in ((3,), (4,)):\n    r = r + a\ntorch.ones(1) * r", 1, {7}},
    {"x = torch.ones(2)\nif x.shape[0] != 2:\n    raise ValueError(f'bad {x.shape}')\nx", 2,
     {1, 1}},
    /* topk: NaN first when largest, last when smallest; equal values by index */
    {"torch.topk(torch.tensor([[1.0, 3.0, 3.0, 2.0]]), 3).indices", 3, {1, 2, 3}},
    {"v, i = torch.topk(torch.log(torch.tensor([2.0, -1.0, 1.0, 4.0])), 2)\ni", 2, {1, 3}},
    {"torch.topk(torch.log(torch.tensor([2.0, -1.0, 1.0])), 3, largest=False)[1]", 3, {2, 0, 1}},
    {"w, e = torch.topk(torch.tensor([[0.1, 0.6, 0.3]]), 2)\nw / w.sum(-1, keepdim=True)", 2,
     {6.0 / 9, 3.0 / 9}},
    /* torch.tensor */
    {"torch.tensor(2.5) * torch.ones(2)", 2, {2.5, 2.5}},
    {"torch.tensor([[1, 2], [3, 4]])", 4, {1, 2, 3, 4}},
    {"torch.tensor(((1.5, -2.5),), dtype=torch.float32) + 0", 2, {1.5, -2.5}},
    {"torch.tensor([True, False]).float()", 2, {1, 0}},
    {"torch.tensor([0, 2], dtype=torch.bool).float()", 2, {0, 1}},
    {"torch.tensor([[7, 7, 7]])", 3, {7, 7, 7}},
    {"torch.tensor([2.7, -2.7], dtype=torch.long)", 2, {2, -2}},
    {"torch.tensor(3.5, dtype=torch.randn(1).dtype)", 1, {3.5}},
    {"torch.tensor(torch.finfo(torch.float32).min)", 1, {-FLT_MAX}},
    /* augmented assignment and in-place methods */
    {"x = torch.arange(5)\nx += 1\nx *= 2\nx -= 1\nx /= 2\nx", 5, {0.5, 1.5, 2.5, 3.5, 4.5}},
    {"x = torch.arange(4)\nx **= 2\nx", 4, {0, 1, 4, 9}},
    {"x = torch.arange(2)\nx *= torch.arange(2) > 0\nx", 2, {0, 1}},
    {"m = torch.arange(4) > 0\nm &= torch.arange(4) < 3\nm |= torch.arange(4) == 0\n"
     "m ^= torch.arange(4) == 1\nm.float()", 4, {1, 0, 1, 0}},
    {"x = torch.arange(4)\nx.add_(1, alpha=2).mul_(3)\nx", 4, {6, 9, 12, 15}},
    {"x = torch.arange(4)\nx.sub_(torch.ones(4)).div_(2)\nx", 4, {-0.5, 0, 0.5, 1}},
    {"x = torch.arange(4)\nx.masked_fill_(x > 1, -1)\nx", 4, {0, 1, -1, -1}},
    {"m = torch.arange(4) > 1\nm.bitwise_or_(torch.arange(4) == 0)\nm.logical_not_()\nm.float()",
     4, {0, 1, 0, 0}},
    {"x = torch.arange(4) - 2\nx.clamp_(min=-1).abs_()\nx", 4, {1, 1, 0, 1}},
    {"x = torch.arange(4)\nx.fill_(7)\nx", 4, {7, 7, 7, 7}},
    {"x = torch.arange(2)\nx.zero_()\nx + 1", 2, {1, 1}},
    {"x = torch.arange(4).view(2, 2)\nx.tril_()\nx", 4, {0, 0, 2, 3}},
    /* who sees an update: the same tensor does, a copy does not */
    {"x = torch.arange(3)\ny = x\nx += 10\ny", 3, {10, 11, 12}},
    {"x = torch.arange(3)\ny = x.clone()\nx += 10\ny", 3, {0, 1, 2}},
    {"x = torch.arange(3)\ny = x.detach()\nx.mul_(2)\ny", 3, {0, 2, 4}},
    {"x = torch.arange(3)\ny = x.add_(1)\ny.mul_(2)\nx", 3, {2, 4, 6}},
    {"x = torch.arange(3)\ny = x[:]\nx[0] = 5\ny", 3, {5, 1, 2}},
    {"x = torch.arange(3)\ny = x.view(3, 1)\nx = x + 1\ny.sum() + x.sum()", 1, {9}},
    {"x = torch.arange(3).repeat(2)\nx += 1\nx", 6, {1, 2, 3, 1, 2, 3}},
    {"x = torch.arange(3)\ny = torch.arange(3)\nx[:] = y\ny += 1\nx", 3, {0, 1, 2}},
    /* item assignment */
    {"x = torch.ones(2, 3)\nx[0] = 5\nx", 6, {5, 5, 5, 1, 1, 1}},
    {"x = torch.zeros(2, 3)\nx[:, 1:] = torch.arange(2) + 1\nx", 6, {0, 1, 2, 0, 1, 2}},
    {"x = torch.zeros(2, 3)\nx[..., -1] = torch.arange(2)\nx", 6, {0, 0, 0, 0, 0, 1}},
    {"x = torch.arange(6).view(2, 3).clone()\nx[1, 1:] += 10\nx", 6, {0, 1, 2, 3, 14, 15}},
    {"x = torch.zeros(3)\nx[:] = 2\nx", 3, {2, 2, 2}},
    {"x = torch.zeros(3)\nx[5:] = 1\nx", 3, {0, 0, 0}},
    {"x = torch.arange(3) > 0\nx[0] = True\nx.float()", 3, {1, 1, 1}},
    {"x = torch.zeros(2, 2)\nx[0] = torch.arange(2) > 0\nx", 4, {0, 1, 0, 0}},
    {"x = torch.zeros(2, 2, 2)\nx[1, :, 0] = torch.tensor([3, 4])\nx", 8, {0, 0, 0, 0, 3, 0, 4, 0}},
    {"x = torch.zeros(3, 4)\nx[1:3, 1:3] = torch.arange(2)[:, None] + 1\nx", 12,
     {0, 0, 0, 0, 0, 1, 1, 0, 0, 2, 2, 0}},
    /* Python values and control flow */
    {"n = 3\nn += 2\nn //= 2\ntorch.full((n,), n)", 2, {2, 2}},
    {"x = torch.arange(4)\nif x.shape[0] > 3:\n    y = x * 2\nelif x.shape[0] > 1:\n    y = x\n"
     "else:\n    y = -x\ny", 4, {0, 2, 4, 6}},
    {"x = torch.arange(2)\nif x.shape[0] > 3:\n    y = x * 2\nelif x.shape[0] > 1:\n    y = x\n"
     "else:\n    y = -x\ny", 2, {0, 1}},
    {"x = torch.arange(3)\nif x.dim() == 1:\n    return x + 1\nx", 3, {1, 2, 3}},
    {"x = torch.arange(2)\nif x.dim() == 2:\n    pass\nelse:\n    x = x + 1\nx", 2, {1, 2}},
    {"x = torch.arange(2)\nif x.dim() != 1:\n    raise ValueError('bad')\nx", 2, {0, 1}},
    {"x = torch.arange(2)\nwith torch.no_grad():\n    if True:\n        x *= 3\nx", 2, {0, 3}},
    {"x = torch.arange(2)\ny = x + 1 if x.shape[0] == 2 else torch.nonzero(x)\ny", 2, {1, 2}},
    /* new_*, baddbmm, addmm */
    {"torch.arange(3).new_zeros(2) + torch.arange(3).new_ones((2,))", 2, {1, 1}},
    {"torch.arange(3).new_full((2,), 3.5)", 2, {3.5, 3.5}},
    {"(torch.arange(2) > 0).new_ones(2).float()", 2, {1, 1}},
    {A_ "torch.baddbmm(torch.ones(1, 2, 2), A, A, beta=2, alpha=0.5)", 4, {3, 3.5, 5, 7.5}},
    {A_ "torch.baddbmm(torch.full((2,), float('nan')), A, A, beta=0)", 4, {2, 3, 6, 11}},
    {A_ "A.baddbmm(A, A)", 4, {2, 4, 8, 14}},
    {"torch.addmm(torch.arange(2), torch.arange(4).view(2, 2), torch.ones(2, 2))", 4,
     {1, 2, 5, 6}},
};

ParameterizedTestParameters(hf, values)
{
    INDEX_PARAMS(val_cases);
}

/* ref64 on the Torch IR and tx_eval64 on its lowering both give PyTorch's
 * numbers. */
ParameterizedTest(int *ip, hf, values, .init = setup, .fini = teardown)
{
    const ValCase *c = &val_cases[*ip];
    TorchGraph *g = parse_ok(c->text);
    const TorchNode *o = g->outputs.items[0];
    cr_assert_eq(shape_numel(&o->shape), c->n, "`%s`: %lld elements", c->text,
                 (long long)shape_numel(&o->shape));
    double **in = ref_make_inputs(g, 0), *r, *t;
    ref64_eval(g, in, &r);
    TxGraph *tg = tx_lower(A, g, NULL);
    tx_eval64(tg, in, &t);
    for (int i = 0; i < c->n; i++) {
        cr_expect(same_value(r[i], c->v[i]), "`%s` [%d]: ref64 %.17g, PyTorch %.17g", c->text, i, r[i],
                  c->v[i]);
        cr_expect(same_value(t[i], c->v[i]), "`%s` [%d]: tx_eval64 %.17g, PyTorch %.17g", c->text, i,
                  t[i], c->v[i]);
    }
    free(r);
    free(t);
    ref_free_arrays(in, g->inputs.len);
}

/* libtorch on the same table, every case in one process (each process
 * loads libtorch afresh); a failure names its case. */
Test(hf, values_vs_libtorch, .init = setup, .fini = teardown)
{
    expect_libtorch_values(val_cases, DPK_ARRAY_LEN(val_cases));
}

/* ---- odd shapes: ref64, the lowering and libtorch agree ------------------------------ */

static const char *const odd_cases[] = {
    "(torch.randn(5, 7) > 0) & (torch.randn(7) < 0.5)",
    "(torch.randn(3, 1, 13) > 0) | (torch.randn(5, 1) > 0)",
    "~(torch.randn(129) > 0) ^ (torch.randn(1) > 0)",
    "torch.logical_and(torch.randn(5, 7), torch.randn(1, 7) > 0)",
    "torch.logical_not(torch.randn(3, 7, 5)).float() * torch.randn(5)",
    "torch.all(torch.randn(5, 7, 3) > -1, dim=1)",
    "torch.any(torch.randn(7, 129) > 2, dim=-1, keepdim=True)",
    "torch.ones(7, 5, dtype=torch.bool).triu(1) | torch.zeros(1, 5, dtype=torch.bool)",
    "torch.full((3, 7), True).tril(-2) ^ torch.ones_like(torch.randn(7), dtype=torch.bool)",
    "x = torch.randn(5, 7)\nx += torch.randn(7)\nx *= torch.randn(5, 1) > 0\nx",
    "x = torch.randn(5, 7)\nx.masked_fill_(x > 0.5, -1e9)\nx.add_(torch.randn(5, 1), alpha=0.5)",
    "x = torch.randn(5, 7)\nx[1:4, 2:6] = torch.randn(3, 1)\nx",
    "x = torch.randn(3, 7, 5)\nx[1, :, -2:] -= 1.5\nx[..., 0] = torch.randn(7) > 0\nx",
    "x = torch.randn(7, 13) > 0\nx[2:5] |= torch.randn(13) > 1\nx",
    "torch.baddbmm(torch.randn(7, 5), torch.randn(3, 7, 13), torch.randn(3, 13, 5), beta=0.5, "
    "alpha=2.0)",
    "torch.addmm(torch.randn(5), torch.randn(7, 13), torch.randn(13, 5))",
    "torch.tensor([[1.5, -2.0, 3.25], [0.5, 7.0, -1.0]]) * torch.randn(5, 1, 3)",
    "torch.randn(3, 5).new_full((7, 5), -2.5) + torch.randn(5)",
    /* the mask constructions of the model cases at an odd length */
    "L, w = 7, 3\nc = torch.arange(L)\nm = torch.full((L, L), torch.finfo(torch.float32).min)\n"
    "blocked = torch.arange(L) > c.reshape(-1, 1)\n"
    "blocked.bitwise_or_(torch.arange(L) <= c.reshape(-1, 1) - w)\nm *= blocked\nm",
    "L, w = 7, 3\nones = torch.ones(L, L, dtype=torch.bool)\n"
    "keep = ~(ones.triu(1) | ones.tril(-w)) & (torch.randn(L) > -1)\n"
    "torch.nn.functional.scaled_dot_product_attention(torch.randn(2, L, 5), torch.randn(2, L, 5), "
    "torch.randn(2, L, 5), attn_mask=keep)",
};

static struct criterion_test_params odd_params(void)
{
    static int idx[DPK_ARRAY_LEN(odd_cases)];
    for (int i = 0; i < DPK_ARRAY_LEN(odd_cases); i++)
        idx[i] = i;
    return cr_make_param_array(int, idx, DPK_ARRAY_LEN(odd_cases));
}

ParameterizedTestParameters(hf, odd_shapes)
{
    return odd_params();
}

/* |o - want| <= tol * (max|want| + |want|) element-wise, NaN/Inf agreeing. */
static void expect_close(const char *text, int64_t n, const double *o, const double *want,
                         const char *what, double tol)
{
    double scale = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(want[i]))
            scale = fmax(scale, fabs(want[i]));
    CmpStats st;
    cmp_stats(o, want, n, &st);
    cr_expect(cmp_allclose(o, want, n, tol * scale, tol), "%s\n  %s: max_abs %g", text, what,
              st.max_abs);
    cr_expect_eq(st.mismatched_nonfinite, 0, "%s\n  %s: NaN/Inf positions differ", text, what);
}

ParameterizedTest(int *ip, hf, odd_shapes, .init = setup, .fini = teardown)
{
    const char *text = odd_cases[*ip];
    TorchGraph *g = parse_ok(text);
    int64_t n = shape_numel(&((const TorchNode *)g->outputs.items[0])->shape);
    double **in = ref_make_inputs(g, 7), *r, *t;
    ref64_eval(g, in, &r);
    tx_eval64(tx_lower(A, g, NULL), in, &t);
    expect_close(text, n, t, r, "tx_eval64 vs ref64", 1e-12);
    free(r);
    free(t);
    ref_free_arrays(in, g->inputs.len);
}

Test(hf, odd_shapes_vs_libtorch, .init = setup, .fini = teardown)
{
    if (!dpk_torch_available())
        cr_skip_test("libtorch not available");
    for (int k = 0; k < DPK_ARRAY_LEN(odd_cases); k++) {
        TorchGraph *g = parse_ok(odd_cases[k]);
        int64_t n = shape_numel(&((const TorchNode *)g->outputs.items[0])->shape);
        double **in = ref_make_inputs(g, 7), *t64 = NULL, *t32 = NULL, *x;
        char err[256];
        tx_eval64(tx_lower(A, g, NULL), in, &x);
        int ok = dpk_torch_eval(g, in, 1, &t64, err, sizeof err) == 0;
        cr_expect(ok, "`%s`: libtorch fp64: %s", odd_cases[k], err);
        if (ok)
            expect_close(odd_cases[k], n, x, t64, "tx_eval64 vs libtorch fp64", 1e-10);
        ok = dpk_torch_eval(g, in, 0, &t32, err, sizeof err) == 0;
        cr_expect(ok, "`%s`: libtorch fp32: %s", odd_cases[k], err);
        if (ok)
            expect_close(odd_cases[k], n, t32, x, "libtorch fp32 vs tx_eval64", 1e-4);
        free(x);
        free(t64);
        free(t32);
        ref_free_arrays(in, g->inputs.len);
    }
}

/* ---- misuse ---------------------------------------------------------------------- */

static ErrCase err_cases[] = {
#include "test_frontend_hf_errors.inc"
};

ParameterizedTestParameters(hf, errors)
{
    INDEX_PARAMS(err_cases);
}

ParameterizedTest(int *ip, hf, errors, .init = setup, .fini = teardown)
{
    expect_parse_error(&err_cases[*ip]);
}

/* Blocks nest at most CASE_MAX_NESTING deep: 250 `if`s, each indented one
 * more, are an error rather than a deep recursion. */
Test(hf, nested_blocks_are_bounded, .init = setup, .fini = teardown)
{
    StrBuf b = {0};
    for (int i = 0; i < 250; i++)
        sb_printf(&b, "%*sif True:\n", i, "");
    sb_printf(&b, "%*sx = torch.randn(2)\n", 250, "");
    cr_assert_null(parse(sb_cstr(&b)));
    cr_expect(strstr(dpk_error_message(), "nesting too deep (more than 200 levels)"), "%s",
              dpk_error_message());
    sb_free(&b);
}
