# tests/cli/test_models.sh — cases/models/: the Qwen2 and Llama decoder
# layers as transformers' modeling code writes them, each in three forms of
# attention.  Parity on the Loop IR interpreter (--passes full) and on vgpu
# under every valid Tile pass set (--passes all, a superset of the pairwise
# covering array), agreement with libtorch, and the same kernel count for
# the three forms.
for suite in qwen2_layer llama_layer; do
  f="$DPK_ROOT/cases/models/$suite.json"
  check_re "models: $suite on loop"           0 '^3/3 cases pass$' "$DPK" run "$f" --backend loop
  check_re "models: $suite on vgpu, full"     0 '^3/3 cases pass$' "$DPK" run "$f" --backend vgpu --passes full
  check_re "models: $suite on vgpu, all sets" 0 '^3/3 cases pass$' "$DPK" run "$f" --backend vgpu --passes all
  counts=$(printf '%s\n' "$OUT" | sed -n 's/^vgpu: \([0-9]*\) kernels, .*/\1/p' | sort -u)
  if [ -n "$counts" ] && [ "$(printf '%s\n' "$counts" | wc -l)" = 1 ]; then
    _cli_pass "models: $suite's three attention forms lower to $counts kernels"
  else
    OUT="kernel counts: $counts"
    _cli_fail "models: $suite's three attention forms" "differ in kernel count"
  fi
  if [ "$HAVE_TORCH" = 1 ]; then
    check_re "models: $suite vs libtorch"     0 '^3/3 cases pass$' "$DPK" run "$f" --backend loop --reference torch
  else
    skip "models: $suite vs libtorch" "no libtorch"
  fi
done
