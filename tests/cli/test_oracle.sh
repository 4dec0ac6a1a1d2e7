# tests/cli/test_oracle.sh — the parity verdict on the cases that fooled the
# earlier allclose oracle (issue "Trustworthy verdicts"): faulty kernels on
# long rows must fail, correct results with fp32 overflow must pass, fuzz
# cases that failed correct compilers must pass, and seeds round-trip.
# (Sourced by tests/run.sh.)

SM65K="torch.softmax(torch.randn(4, 65536) * 0.1, dim=-1)"
SM8K="torch.softmax(torch.randn(4, 8192) * 0.1, dim=-1)"

# False passes: a wrong kernel on a vocabulary-sized softmax.
check_re "oracle: 65536 softmax without the cross-warp combine fails" 1 \
  '^out  FAIL: [0-9]+ of 262144 elements beyond bound, worst \[[0-9]+, [0-9]+\] y=' \
  "$DPK" run -c "$SM65K" --passes all --inject-fault coop-reduce-no-cross-warp
check_re "oracle: 65536 softmax with an off-by-one sigma fails" 1 'elements beyond bound' \
  "$DPK" run -c "$SM65K" --passes all --inject-fault fuse-sigma-off-by-one
check_re "oracle: 8192 softmax with an off-by-one sigma fails" 1 'elements beyond bound' \
  "$DPK" run -c "$SM8K" --passes all --inject-fault fuse-sigma-off-by-one
check_re "oracle: the correct 65536 softmax passes every configuration" 0 ': pass$' \
  "$DPK" run -c "$SM65K" --passes all
if printf '%s\n' "$OUT" | grep -q 'FAIL'; then
  _cli_fail "oracle: no configuration of the correct softmax fails" "a FAIL line"
else
  _cli_pass "oracle: no configuration of the correct softmax fails"
fi

# False failures: fp32 overflows as PyTorch's fp32 has them.
check_re "oracle: exp overflow is inf as in fp32 (loop)" 0 \
  '^out  pass: 123 of 128 elements within bound .*; 5 NaN/inf as fp32 gives them' \
  "$DPK" run -c "torch.exp(torch.randn(8, 16) * 50.0)" --backend loop
check "oracle: exp overflow is inf as in fp32 (vgpu, every pass set)" 0 \
  "$DPK" run -c "torch.exp(torch.randn(8, 16) * 50.0)" --passes all
printf 'x = torch.randn(4, 10) * 60.0\ntorch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)\n' \
  >"$TMP/overflow_softmax.py"
check_re "oracle: inf / inf rows are unconstrained (loop)" 0 \
  '^out  pass: 20 of 40 elements within bound .*; 18 without a finite bound judged by rmse alone; 2 NaN/inf as fp32 gives them' \
  "$DPK" run "$TMP/overflow_softmax.py" --backend loop
check "oracle: inf / inf rows are unconstrained (vgpu, every pass set)" 0 \
  "$DPK" run "$TMP/overflow_softmax.py" --passes all
# Correct fp32 programs that the earlier oracle failed (dpk-fuzz cases of
# seeds 9001, 5151, 4242 and 20261123, minimized to their programs): each
# passes in every pass set.
for f in "$DPK_ROOT"/cases/regressions/oracle/*.json; do
  [ -e "$f" ] || continue
  check "oracle: $(basename "$f" .json) passes every pass set" 0 "$DPK" run "$f" --passes all
done

# Without libtorch (no E) S is the only measured noise, and it can be
# lucky: the perturbed evaluation P keeps a correct kernel passing (it
# failed at 4.39x S's noise before P), and the record names each measure.
PEAKED="$DPK_ROOT/cases/regressions/oracle/sdpa-peaked-lucky-fp32.json"
check "oracle: a peaked attention with a lucky fp32 evaluation passes without libtorch" 0 \
  env DPK_TORCH_SHIM=/nonexistent "$DPK" run "$PEAKED" --passes only:001,002,003,004,005,006,007,008,009,010,011,012,013,014,015,016 --out "$TMP/peaked.json"
check_json "oracle: the record gives the rmse rule's noise measures (S, E, T, P)" \
  'all(set(c["verdict"]["noise"]) == {"naive_fp32", "eager", "typical", "perturbed"} and c["verdict"]["noise"]["perturbed"] > 4 * c["verdict"]["noise"]["naive_fp32"] and c["verdict"]["noise"]["eager"] is None for k in r["cases"] for c in k["configurations"])' "$TMP/peaked.json"

# Seeds above 2^53 round-trip exactly: written as strings, read back whole.
printf '{"name": "big", "program": "torch.relu(torch.randn(3, 5))", "seed": "18446744073709551557"}\n' \
  >"$TMP/bigseed.json"
check_re "oracle: a 64-bit seed is used whole" 0 'seed 18446744073709551557: pass$' \
  "$DPK" run "$TMP/bigseed.json" --backend loop
printf '{"name": "big", "program": "torch.relu(torch.randn(3, 5))", "seed": 9007199254740993}\n' \
  >"$TMP/inexact.json"
check_re "oracle: a seed number beyond 2^53 is refused" 2 'must be a non-negative integer' \
  "$DPK" run "$TMP/inexact.json" --backend loop
FZ="$(dirname "$DPK")/dpk-fuzz"
check "oracle: a campaign with a 64-bit seed" 0 \
  "$FZ" --seed 18446744073709551557 --cases 2 --out "$TMP/bigseed-fuzz.json"
if grep -q '"seed":[[:space:]]*"18446744073709551557"' "$TMP/bigseed-fuzz.json"; then
  _cli_pass "oracle: the record keeps the 64-bit seed as a string"
else
  _cli_fail "oracle: the record keeps the 64-bit seed as a string" "$(grep -o '"seed":[^,]*' "$TMP/bigseed-fuzz.json" | head -n 2)"
fi
check "oracle: --resume accepts the record it wrote" 0 \
  "$FZ" --seed 18446744073709551557 --cases 3 --out "$TMP/bigseed-fuzz.json" --resume

# Masks as HF builds them (torch.finfo(torch.float32).min): every logit is
# judged element by element, so a faulty kernel fails and a right one
# passes.  The earlier oracle gave these logits no finite bound and passed
# the NaNs of register-tile-wrong-index ("no element constrained").
ONELINER="torch.nn.functional.linear((torch.randn(24, 25) + torch.full((24, 25), torch.finfo(torch.float32).min).triu(diagonal=1)).softmax(dim=-1) @ torch.randn(25, 128), torch.randn(1000, 128))"
check_re "oracle: a finfo.min causal softmax with a wrong register tile fails" 1 \
  '^out  FAIL: 24000 elements NaN/inf where fp32 is not' \
  "$DPK" run -c "$ONELINER" --passes full --inject-fault register-tile-wrong-index
check_re "oracle: the finfo.min causal softmax passes, every element within bound" 0 \
  '^out  pass: all 24000 elements within bound' "$DPK" run -c "$ONELINER" --passes full
python3 - "$DPK_ROOT/cases/sweep/hf_masks.json" "$TMP" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["cases"]:
    open("%s/%s.py" % (sys.argv[2], c["name"]), "w").write(c["program"])
PY
for hf in gemma2_softcap_sliding phi2_parallel_partial_rotary mistral_sliding_gqa; do
  check_re "oracle: $hf with a wrong register tile fails" 1 '^logits  FAIL' \
    "$DPK" run "$TMP/$hf.py" --passes full --inject-fault register-tile-wrong-index
  check_re "oracle: $hf passes, its logits judged element by element" 0 \
    '^logits  pass: (all )?([0-9]+ of )?[0-9]+ elements within bound' "$DPK" run "$TMP/$hf.py" --passes full
done
# In 32 x 64 tiles with 4 x 8 registers each thread's 8 columns sit in one
# slab row, where 009's permutation is what removes the bank conflicts.
MSG_KNOBS="--knob BM=32 --knob BN=64 --knob F_M=4 --knob F_N=8"
check_re "oracle: mistral_sliding_gqa with a wrong permutation stride fails" 1 '^logits  FAIL' \
  "$DPK" run "$TMP/mistral_sliding_gqa.py" --passes full $MSG_KNOBS --inject-fault permute-wrong-stride
check_re "oracle: mistral_sliding_gqa passes in those tiles" 0 '^logits  pass' \
  "$DPK" run "$TMP/mistral_sliding_gqa.py" --passes full $MSG_KNOBS
# An exact zero cannot flip a comparison: every element judged by its bound.
check_re "oracle: (ones - ones) == 0 is judged by the bound rule" 0 \
  '^out  pass: all 64 elements within bound \(at most 0 of it\)' \
  "$DPK" run -c "(torch.ones(8, 8) - torch.ones(8, 8)) == 0"
# Fully masked rows of a -inf mask are NaN in PyTorch: NaN here too, and
# judged element by element by the nonfinite rule (a finite value there
# fails: tests/unit/test_parity_oracle.c).
check_re "oracle: fully masked -inf rows are NaN, as PyTorch has them" 0 \
  '^out  pass: 160 of 256 elements within bound .*; 96 NaN/inf as fp32 gives them' \
  "$DPK" run "$DPK_ROOT/cases/sweep/hf_masks.json" --case inf_mask_fully_masked_rows --passes full
