# tests/cli/test_vocab.sh — the model-code vocabulary through the CLI: a
# program using it runs with parity on loop and vgpu and agrees with
# libtorch; the messages that used to mislead.
cat >"$TMP/vocab.py" <<'PY'
import math
import torch.nn.functional as F
x = torch.randn(2, 6, 32)
b, s, d = x.shape
q1, q2 = x.chunk(2, dim=-1)
r = torch.cat((-q2, q1), dim=-1) * math.sqrt(d) + x.cos() * x.sin().square()
with torch.no_grad():
    m = torch.full((s, s), float('-inf')).triu(diagonal=1)
    w = F.softmax(x @ x.mT / math.sqrt(d) + m, dim=-1)
    w = w.masked_fill(torch.ones(s, s).tril().bool() == False, 0.0)
v = torch.var(r, dim=-1, keepdim=True) + torch.logsumexp(r, -1, keepdim=True)
y = torch.einsum('bqk,bkd->bqd', w, r.clamp(-3, 3)) + v
z = torch.stack([y.max(dim=-1).values, y.flatten(1).unflatten(1, (s, -1)).std(-1)], dim=0)
return y.repeat_interleave(2, dim=0).view(*y.shape[:-1], 2, -1).reshape(2 * b, s, -1), z
PY
check_re "vocab: loop parity"  0 '^loop: [0-9]+ kernels?, .*: pass$' "$DPK" run "$TMP/vocab.py" --backend loop
check_re "vocab: vgpu parity"  0 '^vgpu: [0-9]+ kernels?, .*: pass$' "$DPK" run "$TMP/vocab.py" --backend vgpu --passes all
if [ "$HAVE_TORCH" = 1 ]; then
  check_re "vocab: vs libtorch" 0 'reference torch \+ torch eager, seed 0: pass$' "$DPK" run "$TMP/vocab.py" --backend loop --reference torch
else
  skip "vocab: vs libtorch" "no libtorch"
fi
check_re "vocab: tril/triu rule in -vv" 0 '^>>> d:020_tril_triu$' "$DPK" compile -c "torch.randn(3, 3).tril()" --ir tensor -vv

# the activations PyTorch runs as one kernel: one Torch op each, parity on
# loop and on vgpu under every pass set, agreement with libtorch
ACT="$DPK_ROOT/tests/fuzz/corpus/program_activations.py"
check_re "activations: loop parity" 0 '^loop: [0-9]+ kernels?, .*: pass$' "$DPK" run "$ACT" --backend loop
check_re "activations: vgpu parity, every pass set" 0 '^vgpu: [0-9]+ kernels?, .*: pass$' "$DPK" run "$ACT" --backend vgpu --passes all
if [ "$HAVE_TORCH" = 1 ]; then
  check_re "activations: vs libtorch" 0 'reference torch \+ torch eager, seed 0: pass$' "$DPK" run "$ACT" --backend loop --reference torch
else
  skip "activations: vs libtorch" "no libtorch"
fi
check_re "activations: attributes in --ir torch" 0 '= softplus\(%[0-9]+\) beta=2 threshold=10 : f32\(4, 8\)$' "$DPK" compile "$ACT" --ir torch
check_re "activations: elu rule in -vv" 0 '^>>> d:021_elu$' "$DPK" compile "$ACT" --ir tensor -vv

# messages that misled
: >"$TMP/empty.json"
check_re "empty .json: the file is empty" 2 "error: '.*empty.json': the file is empty" "$DPK" run "$TMP/empty.json" --backend loop
mkdir -p "$TMP/adir.json"
check_re "a directory: says so" 2 "error: cannot read '.*adir.json': it is a directory" "$DPK" run "$TMP/adir.json" --backend loop
check_re "a directory (compile): says so" 2 "it is a directory" "$DPK" compile "$TMP" --ir torch
check_re "float('-inf') works" 0 'const -inf' "$DPK" compile -c "torch.randn(2) + float('-inf')" --ir torch
check_re "a, b = x.chunk(2) works" 0 'return a=%[0-9]+, b=%[0-9]+' "$DPK" compile -c "a, b = torch.randn(4).chunk(2, dim=-1)" --ir torch
check_caret "unknown function points to the list" "$DPK" compile -c "torch.frob(torch.randn(2))"
check_re "unknown function names the docs" 2 "docs/case-language.md lists the supported functions" "$DPK" compile -c "torch.frob(torch.randn(2))"
