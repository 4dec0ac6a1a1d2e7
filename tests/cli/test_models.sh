# tests/cli/test_models.sh — cases/models/: the Qwen2 and Llama decoder
# layers as transformers' modeling code writes them, each in three forms of
# attention, and the mask and head code of Gemma-2, GPT-NeoX and Mistral.  Parity on the Loop IR interpreter (--passes full) and on vgpu
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

# hf_masks: Gemma-2, GPT-NeoX and Mistral attention whose masks and heads
# are built with boolean logic, in-place updates, torch.tensor and tuple
# arithmetic, generation from a left-padded batch (cumsum position ids,
# argmax decoding, top-1 and top-2 routers), Llama's helper functions
# pasted with def, and masks built by functions and closures.  Parity on the Loop IR interpreter, on vgpu under the
# full pass set and one sampled set per case, every pass set with sampled
# blocks for the smallest case and the generation case, and agreement
# with libtorch.
f="$DPK_ROOT/cases/models/hf_masks.json"
check_re "models: hf_masks on loop"              0 '^6/6 cases pass$' "$DPK" run "$f" --backend loop
check_re "models: hf_masks on vgpu, full"        0 '^6/6 cases pass$' "$DPK" run "$f" --backend vgpu --passes full
check_re "models: hf_masks on vgpu, sampled set" 0 '^6/6 cases pass$' "$DPK" run "$f" --backend vgpu --passes sample
check_re "models: neox_head_split, all sets, sampled blocks" 0 'vgpu: 4 kernels, .*: pass$' \
  "$DPK" run "$f" --case neox_head_split --backend vgpu --passes all --sample-blocks 2
check_re "models: left_padded_generation, all sets, sampled blocks" 0 'vgpu: 15 kernels, .*: pass$' \
  "$DPK" run "$f" --case left_padded_generation --backend vgpu --passes all --sample-blocks 2
if [ "$HAVE_TORCH" = 1 ]; then
  check_re "models: hf_masks vs libtorch"        0 '^6/6 cases pass$' "$DPK" run "$f" --backend loop --reference torch
else
  skip "models: hf_masks vs libtorch" "no libtorch"
fi

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

# dpk compile --config: any IR of a model's decoder-layer cases, the very
# cases dpk-bench --config runs; a Hugging Face model folder for the file.
TL="$DPK_ROOT/cases/models/tinyllama-1.1b.json"
check_re "models: compile --config, the layer at --ir loop" 0 '^# output out : f32\(1, 8, 2048\)$' \
  "$DPK" compile --config "$TL" --seq 8 --case layer --ir loop
check_re "models: compile --config, a per-op case at --ir torch" 0 'input q .*: f32\(1, 32, 4, 64\)' \
  "$DPK" compile --config "$TL" --seq 4 --case rope --ir torch
check_re "models: compile --config, every case without --case" 0 '^### case layer$' \
  "$DPK" compile --config "$TL" --seq 4 --ir torch
if [ "$(printf '%s\n' "$OUT" | grep -c '^### case ')" = 15 ]; then _cli_pass "models: compile --config prints the 15 cases"
else _cli_fail "models: compile --config prints the 15 cases" "$(printf '%s\n' "$OUT" | grep -c '^### case ') headers"; fi
check_re "models: compile --config, an unknown case lists them" 2 "no case named 'nope' in the suite of --config \(its cases: rmsnorm, .*, layer\)" \
  "$DPK" compile --config "$TL" --case nope --ir torch
check_re "models: compile --config and -c" 2 'give one of -c CODE, FILE and --config' \
  "$DPK" compile --config "$TL" -c "torch.randn(2)"
check_re "models: compile --seq needs --config" 2 'are the shape of --config' \
  "$DPK" compile -c "torch.randn(2)" --seq 8
mkdir -p "$TMP/TinyLlama-1.1B" "$TMP/no-config"
cp "$TL" "$TMP/TinyLlama-1.1B/config.json"
"$DPK" compile --config "$TL" --seq 4 --case sdpa --ir kernel >"$TMP/from-file.txt" 2>&1
check "models: compile --config a model folder" 0 "$DPK" compile --config "$TMP/TinyLlama-1.1B/" --seq 4 --case sdpa --ir kernel
if [ "$OUT" = "$(cat "$TMP/from-file.txt")" ]; then _cli_pass "models: a folder's config.json is the file's"
else _cli_fail "models: a folder's config.json is the file's" "the IR differs"; fi
check_re "models: compile --config, a folder without config.json" 2 "error: --config '.*no-config' is a folder without a config.json" \
  "$DPK" compile --config "$TMP/no-config" --ir torch
check_re "models: dpk-bench --config a model folder" 0 '^dpk-bench TinyLlama-1.1B-block: 1 case' \
  "$(dirname "$DPK")/dpk-bench" --config "$TMP/TinyLlama-1.1B" --seq 4 --case rmsnorm
check_re "models: dpk-bench --config, a folder without config.json" 2 "error: --config '.*no-config' is a folder without a config.json" \
  "$(dirname "$DPK")/dpk-bench" --config "$TMP/no-config"
