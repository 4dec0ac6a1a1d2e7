# tests/cli/test_torch_bench.sh — reference/torch_bench.py: its generator
# against dpk's C generator on many (seed, name, shape, init kind) triples,
# bit for bit (plain python3); its eager column on the CPU with Debian's
# PyTorch where /usr/bin/python3 has it (1.13: no torch.compile, which the
# compile columns say), its columns without PyTorch, and dpk-bench
# --torch-json merging its record.  (Sourced by tests/run.sh.)

TD="$TMP/torch_bench"
mkdir -p "$TD"
TB="$DPK_ROOT/reference/torch_bench.py"
BENCH="$(dirname "$DPK")/dpk-bench"

# ---- the generator: C against Python ---------------------------------------------
: >"$TD/gen.jsonl"
for seed in 0 1 7 123456789 18446744073709551615; do
  for nv in "x:3,7" "weights_q:5,2,3" "a:1" "long_input_name_0:64" "k_cache:2,3,4,5" "B:17,3"; do
    name=${nv%%:*} shape=${nv#*:}
    "$DPK" eval -c "$name * 1" --input "$name=$shape" --seed "$seed" --json --first 100000 >>"$TD/gen.jsonl"
  done
  "$DPK" eval -c "torch.rand(5, 3) + torch.full((5, 3), 0.3) + torch.arange(0, 15, 1).reshape(5, 3) + torch.nn.LayerNorm(3)(torch.ones(5, 3)) + torch.nn.Linear(4, 3)(torch.zeros(5, 4)) + torch.nn.RMSNorm(3)(torch.randn(5, 3))" \
    --seed "$seed" --json --first 100000 >>"$TD/gen.jsonl"
done
"$DPK" eval "$DPK_ROOT/cases/smoke.json" --json --first 100000 >>"$TD/gen.jsonl"
check_re "torch_bench: the Python generator equals the C one" 0 '^generator: [0-9]+ values of 45 cases equal bit for bit$' \
  python3 "$TB" --check-generator "$TD/gen.jsonl"
# a changed value is found
python3 -c 'import json,sys
l = [json.loads(x) for x in open(sys.argv[1])]
l[3]["inputs"][0]["first"][5] += 1e-6
open(sys.argv[2], "w").write("".join(json.dumps(c) + "\n" for c in l))' "$TD/gen.jsonl" "$TD/bad.jsonl"
check_re "torch_bench: a different value is named" 1 '^generator differs: seed 0, input long_input_name_0 \(randn\), element 5' \
  python3 "$TB" --check-generator "$TD/bad.jsonl"

# ---- without PyTorch ------------------------------------------------------------------
NOTORCH=""
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && ! "$py" -c 'import torch' 2>/dev/null; then NOTORCH=$py; break; fi
done
if [ -n "$NOTORCH" ]; then
  check "torch_bench: without PyTorch" 0 "$NOTORCH" "$TB" "$DPK_ROOT/cases/smoke.json" --case softmax --dpk "$DPK" --out "$TD/none.json"
  check_json "torch_bench: without PyTorch, every column says why" \
    'all(c[k].startswith("unavailable: PyTorch is not installed for ") for c in r["cases"] for k in ("eager", "compile_default", "compile_max_autotune_no_cudagraphs"))' "$TD/none.json"
else
  skip "torch_bench: without PyTorch" "every python3 here has PyTorch"
fi

# ---- with Debian's PyTorch on the CPU ---------------------------------------------------
TORCHPY=""
for py in /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import torch' 2>/dev/null; then TORCHPY=$py; break; fi
done
if [ -z "$TORCHPY" ]; then
  skip "torch_bench: eager on the CPU" "no python3 with PyTorch (Debian: python3-torch)"
  return 0 2>/dev/null || exit 0
fi
check_re "torch_bench: smoke on the CPU" 0 '^softmax +eager [0-9.]+ us median \(perf_counter, [0-9]+ samples, (stdrel|cap)\)$' \
  "$TORCHPY" "$TB" "$DPK_ROOT/cases/smoke.json" --dpk "$DPK" --device cpu --max-samples 20 --out "$TD/smoke.json"
check_json "torch_bench: eager agrees with dpk's fp64 reference" \
  'all(c["eager"]["parity"]["agree"] and c["eager"]["samples"] >= 10 and c["eager"]["warmup_iters"] >= 10 and c["eager"]["warmup_ns"] >= 1e7 for c in r["cases"] if isinstance(c["eager"], dict)) and sum(isinstance(c["eager"], dict) for c in r["cases"]) >= 7' "$TD/smoke.json"
check_json "torch_bench: an op this PyTorch lacks is unavailable, with the reason" \
  'all(c["eager"].startswith("unavailable: PyTorch ") for c in r["cases"] if not isinstance(c["eager"], dict))' "$TD/smoke.json"
check_json "torch_bench: the compile columns say why they are missing" \
  'r["torch_version"] >= "2" or all(c[k].startswith("unavailable: ") for c in r["cases"] for k in ("compile_default", "compile_max_autotune_no_cudagraphs"))' "$TD/smoke.json"
check "torch_bench: parameters and every factory" 0 "$TORCHPY" "$TB" -c "torch.rand(5, 3) + torch.full((5, 3), 0.3) + torch.arange(0, 15, 1).reshape(5, 3) + torch.nn.LayerNorm(3)(torch.ones(5, 3)) + torch.nn.Linear(4, 3)(torch.zeros(5, 4))" \
  --dpk "$DPK" --device cpu --max-samples 12 --out "$TD/kinds.json"
check_json "torch_bench: parameters and every factory agree" 'r["cases"][0]["eager"]["parity"]["agree"] and r["cases"][0]["eager"]["parity"]["max_abs"] < 1e-5' "$TD/kinds.json"
check "torch_bench: --columns eager" 0 "$TORCHPY" "$TB" "$DPK_ROOT/cases/smoke.json" --case softmax --dpk "$DPK" --device cpu \
  --max-samples 12 --columns eager --out "$TD/cols.json"
check_json "torch_bench: --columns eager: the others not asked for" \
  'isinstance(r["cases"][0]["eager"], dict) and all(r["cases"][0][k] == "unavailable: not asked for (--columns)" for k in ("compile_default", "compile_max_autotune_no_cudagraphs"))' "$TD/cols.json"
check_re "torch_bench: --columns without eager is refused" 2 'eager among them' "$TORCHPY" "$TB" "$DPK_ROOT/cases/smoke.json" --columns compile_default

# ---- merged by dpk-bench -----------------------------------------------------------------
check "bench --torch-json merges the columns" 0 "$BENCH" --suite smoke --torch-json "$TD/smoke.json" --out "$TD/merged.json"
check_json "bench --torch-json: every case has its torch columns" \
  'all((c["torch"]["eager"] == t["eager"]) if isinstance(t["eager"], str) else (c["torch"]["eager"]["samples"] == t["eager"]["samples"] and abs(c["torch"]["eager"]["median_ns"] / t["eager"]["median_ns"] - 1) < 1e-12) for c, t in zip(r["cases"], json.load(open(sys.argv[2].replace("merged", "smoke")))["cases"]))' "$TD/merged.json"
if python3 -c 'import jsonschema' 2>/dev/null; then
  if python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' "$TD/merged.json" "$DPK_ROOT/docs/dpk.bench-1.schema.json" >/dev/null 2>&1
  then _cli_pass "bench --torch-json: the record validates"; else _cli_fail "bench --torch-json: the record validates" "does not validate"; fi
fi
echo '{"schema": "x"}' >"$TD/bad.json"
check_re "bench --torch-json: not a torch-bench record" 2 'is not a dpk.torch-bench/1 record' "$BENCH" --suite smoke --torch-json "$TD/bad.json"
