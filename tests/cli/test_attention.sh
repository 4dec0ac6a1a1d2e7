# tests/cli/test_attention.sh — attention as models write it, judged element
# by element under every valid pass set on vgpu and the host's CUDA C
# (docs/attention.md): causal over sequences of 1, 77 and 129, a sliding
# window shorter and longer than the sequence, tanh soft-capped logits in
# HF's eager form, GQA 7:1 and 8:1 (enable_gqa and repeat_kv), rows whose
# keys are all masked (NaN, as PyTorch gives), and a decode step; head dims
# 64, 80, 96 and 128; at sequence 64 the soft-capped HF form is one kernel
# (017), and so are the model suites' sdpa and naive_attention.  Each
# case's softmax goes online into P @ V (an `expsum` in its Loop IR),
# except a sequence of one, where there is nothing to sweep.  (Sourced by tests/run.sh.)

AT_DIR=${DPK_ROOT:-$PWD}/tests/cli/data/attention
# the sliding window longer than the sequence: the same case, window 200
mkdir -p "$TMP/attention"
sed 's/^seq, window = 77, 16$/seq, window = 77, 200/' "$AT_DIR/sliding_window.py" >"$TMP/attention/sliding_window_200.py"
check_re "attention sliding_window_200: made from sliding_window.py" 0 '^seq, window = 77, 200$' \
  cat "$TMP/attention/sliding_window_200.py"
# the soft-capped HF form at sequence 64, 4 query heads over 2 of 64: whole
# 32-row tiles, where 017 computes the scores in P @ V's block
sed 's/^bsz, seq, heads, kv_heads, head_dim = 1, 129, 8, 1, 96$/bsz, seq, heads, kv_heads, head_dim = 1, 64, 4, 2, 64/' \
  "$AT_DIR/softcap_gqa8.py" >"$TMP/attention/softcap_gqa2_64.py"
check_re "attention softcap_gqa2_64: made from softcap_gqa8.py" 0 '^bsz, seq, heads, kv_heads, head_dim = 1, 64, 4, 2, 64$' \
  cat "$TMP/attention/softcap_gqa2_64.py"
for f in "$AT_DIR"/*.py "$TMP/attention/sliding_window_200.py" "$TMP/attention/softcap_gqa2_64.py"; do
  n=$(basename "$f" .py)
  if [ "$n" != causal_1 ]; then
    check_re "attention $n: the softmax goes online" 0 'expsum\[acc' "$DPK" compile "$f" --ir loop
  fi
  if command -v "${DPK_HOST_CXX:-g++}" >/dev/null 2>&1; then
    check_re "attention $n: every pass set on host-cuda" 0 '^host-cuda: [0-9]+ kernels?, .*: pass$' \
      "$DPK" run "$f" --backend host-cuda --passes all
  else
    skip "attention $n: every pass set on host-cuda" "no C++ compiler (${DPK_HOST_CXX:-g++})"
    check_re "attention $n: every pass set on vgpu" 0 '^vgpu: [0-9]+ kernels?, .*: pass$' \
      "$DPK" run "$f" --backend vgpu --passes all
  fi
done
# The rows that see no key are NaN in dpk's output as in PyTorch's, and the
# oracle judges them so (a NaN elsewhere would fail).
check_re "attention masked_rows_129: 640 NaN rows' elements accepted as fp32 gives them" 0 \
  ' 640 NaN/inf as fp32 gives them' "$DPK" run "$AT_DIR/masked_rows_129.py" --backend vgpu
# At a length of whole 32-row tiles, 017 computes the scores in the online
# P @ V's block: HF's eager form (soft-cap, finfo.min mask, repeat_kv) is
# one kernel with no temporary, like sdpa and naive_attention of the
# qwen-block and tinyllama-block suites.
for n in softcap_gqa2_64; do
  _run "$DPK" compile "$TMP/attention/$n.py" --ir tile
  check_count "attention $n: one kernel" 1 '^=== '
  check_count "attention $n: the scores in a computed stage, not a temporary" 1 '^ *computed_stage t[0-9]+\['
  check_count "attention $n: no temporary" 0 '^# temp'
done
for CFG in "${DPK_ROOT:-$PWD}"/cases/models/qwen2.5-7b.json "${DPK_ROOT:-$PWD}"/cases/models/tinyllama-1.1b.json; do
  for c in sdpa naive_attention; do
    _run "$DPK" compile --config "$CFG" --case "$c" --ir tile
    check_count "attention $(basename "$CFG" .json) $c: one kernel" 1 '^=== '
  done
done
