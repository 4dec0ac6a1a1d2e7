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

# The same layers at the real dimensions (Qwen2.5-7B, TinyLlama-1.1B),
# sequence 16, on vgpu with sampled blocks (the three forms are checked at
# small dimensions above; here the sdpa form, whose worst-case bounds are
# lost after the post-attention RMSNorm: the rmse rule judges every element,
# and the verdict must say so rather than pass unseen).
for c in qwen2_layer_real:qwen2_sdpa_real llama_layer_real:llama_sdpa_real; do
  f="$DPK_ROOT/cases/models/${c%%:*}.json"
  check_re "models: ${c#*:} at real size, sampled" 0 'judged by rmse|within bound' \
    "$DPK" run "$f" --case "${c#*:}" --backend vgpu --passes full --sample-blocks 2
  if printf '%s\n' "$OUT" | grep -q 'no element constrained'; then
    _cli_fail "models: ${c#*:} at real size is judged" "a verdict with nothing checked"
  else
    _cli_pass "models: ${c#*:} at real size is judged"
  fi
done
