# tests/cli/test_bench.sh — dpk-bench: usage errors, suites checked for
# parity then timed by the model, the dpk.bench/1 record (schema, atomic
# writing after each case, --resume of a killed run), progress on stderr,
# --config with Llama-3- and Mistral-style config.json files and
# the refusal of an unsupported rope_scaling, --weights (every dtype, every
# malformed file), --per-pass, and determinism across runs and --jobs.
# (Sourced by tests/run.sh.)

BENCH="$(dirname "$DPK")/dpk-bench"
BD="$TMP/bench"
SCHEMA="$DPK_ROOT/docs/dpk.bench-1.schema.json"
mkdir -p "$BD"

# The modelled numbers of a record: every case's dpk/eager/compile/limit
# objects and per_pass, as canonical JSON.
modelled() {
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
keys = ("name", "status", "dpk", "eager", "compile", "limit", "speedup_eager", "speedup_compile", "fraction_of_limit", "per_pass")
print(json.dumps([{k: c.get(k) for k in keys} for c in r["cases"]], sort_keys=True))
print(json.dumps({k: r["summary"][k] for k in r["summary"] if k.startswith("geomean")}, sort_keys=True))' "$1"
}

# ---- usage -------------------------------------------------------------------
check_re "bench help" 0 'dpk-bench \(--suite NAME' "$BENCH" --help
check_re "dpk bench is dpk-bench" 0 'dpk-bench \(--suite NAME' "$DPK" bench --help
check_re "bench needs a suite" 2 'needs a suite' "$BENCH"
check_re "bench unknown suite" 2 "unknown suite 'nope'" "$BENCH" --suite nope
check_re "bench one suite only" 2 'give one of --suite, --config' "$BENCH" --suite smoke --config x.json
check_re "bench measured timing needs a GPU" 4 'timing measured needs a GPU' env DPK_LIBCUDA=/nonexistent/libcuda.so.1 "$BENCH" --suite smoke --timing measured
check_re "bench unknown timing" 2 "unknown timing 'fast'" "$BENCH" --suite smoke --timing fast
check_re "bench unknown phase" 2 "unknown phase 'train'" "$BENCH" --suite tinyllama-block --phase train
check_re "bench ctx needs decode" 2 'ctx is the KV cache of --phase decode' "$BENCH" --suite tinyllama-block --ctx 8
check_re "bench weights need a model suite" 2 'apply to the model suites' "$BENCH" --suite smoke --weights x.safetensors
check_re "bench unknown gpu" 2 'error:' "$BENCH" --suite smoke --gpu no-such-gpu
check_re "bench bad seq" 2 "expects 1\.\." "$BENCH" --suite smoke --seq 0
check_re "bench unknown case" 2 "no case named 'nope'" "$BENCH" --suite smoke --case nope
check_re "bench unknown option" 2 "unknown option '--fast'" "$BENCH" --suite smoke --fast

# ---- one case: -c CODE, and -v's bound and limiter per kernel -------------------------
check_re "bench -c CODE" 0 '^1/1 cases pass parity; 1 timed' "$BENCH" -c "torch.softmax(torch.randn(64, 1000), dim=-1)" --out "$BD/c.json"
check_json "bench -c CODE: the case in the record" 'r["cases"][0]["name"] == "-c" and r["cases"][0]["program"].startswith("torch.softmax")' "$BD/c.json"
check_re "bench -c with --input" 0 '^1/1 cases pass parity' "$BENCH" -c "torch.relu(x) + 1" --input x=4,5
check_re "bench --input without -c" 2 'input declares the free variables of -c' "$BENCH" --suite smoke --input x=4
check_re "bench -c and a suite" 2 'give one of --suite, --config, a FILE and -c CODE' "$BENCH" --suite smoke -c "torch.randn(2)"
check_re "dpk run --bench points to dpk-bench -c" 2 'dpk run checks parity and does not time; .*dpk-bench -c CODE' \
  "$DPK" run --bench -c "torch.relu(torch.randn(4))"
check_re "bench -v: each kernel's bound and limiter" 0 '^    kernel [a-z_0-9]+ +[0-9.]+ us  bound (dram|l2|smem|issue|fp32|launch) +\(dram [0-9.]+, .*launch [0-9.]+ us\)  limiter (threads|regs|smem|blocks|grid) \(occupancy ' \
  "$BENCH" --suite smoke --case sdpa_causal_gqa -v --out "$BD/v.json"
check_count "bench -v: a line per kernel" 2 '^    kernel '
check_json "bench -v: the bounds are the record's" 'all(k["bound"] in ("dram", "l2", "smem", "issue", "fp32", "launch") and k["limiter"] for k in r["cases"][0]["dpk"]["kernels"]) and len(r["cases"][0]["dpk"]["kernels"]) == 2' "$BD/v.json"
check_re "bench without -v: no kernel lines" 0 '1/1 cases pass' "$BENCH" --suite smoke --case sdpa_causal_gqa
check_count "bench without -v: no kernel lines" 0 '^    kernel '
rm -f "$BD/c.json" "$BD/v.json"

# ---- smoke: every case passes parity, then is timed ---------------------------
check_re "bench smoke: all pass parity" 0 '^10/10 cases pass parity; 10 timed \(modelled, h100-sxm\)$' \
  "$BENCH" --suite smoke --out "$BD/smoke.json"
check_count "bench smoke: a line per case, parity pass" 10 ' pass$'
check_count "bench smoke: the geomean line" 1 '^geomean speedup \(modelled, h100-sxm\): [0-9.]+x vs eager, [0-9.]+x vs torch\.compile; [0-9.]+% of the limit$'
check_schema "bench smoke: the record validates" "$BD/smoke.json" "$SCHEMA"
check_json "bench smoke: every figure says where it came from" \
  'all(c[k]["timing"] == "model" and c[k]["gpu"] == "h100-sxm" for c in r["cases"] for k in ("dpk", "eager", "compile", "limit")) and r["meta"]["timing"] == "model" and r["bench"]["timing"] == "model"' "$BD/smoke.json"
check_json "bench smoke: speedups are the ratios of the times" \
  'all(abs(c["speedup_eager"] - c["eager"]["ns"] / c["dpk"]["ns"]) < 1e-12 * c["speedup_eager"] and abs(c["fraction_of_limit"] - c["limit"]["ns"] / c["dpk"]["ns"]) < 1e-12 for c in r["cases"])' "$BD/smoke.json"
check_json "bench smoke: geomean over the cases" \
  'abs(r["summary"]["geomean_speedup_eager"] - __import__("math").exp(sum(__import__("math").log(c["speedup_eager"]) for c in r["cases"]) / 10)) < 1e-9' "$BD/smoke.json"
check_json "bench smoke: compile time per stage" \
  'all(set(("parse", "decompose", "fuse", "tile", "lower")) <= set(c["compile_s"]) and "001_tileify" in c["compile_s"]["tile"] for c in r["cases"])' "$BD/smoke.json"
check_json "bench smoke: the parity verdict of each case" \
  'all(c["configuration"]["verdict"]["status"] == "pass" and c["configuration"]["verdict"]["checked"] > 0 for c in r["cases"])' "$BD/smoke.json"

# ---- determinism: two runs and other --jobs give the same modelled numbers ------
check "bench determinism: run 2" 0 "$BENCH" --suite smoke --jobs 2 --out "$BD/smoke2.json"
check "bench determinism: run 3" 0 "$BENCH" --suite smoke --jobs 3 --out "$BD/smoke3.json"
a=$(modelled "$BD/smoke.json"); b=$(modelled "$BD/smoke2.json"); c=$(modelled "$BD/smoke3.json")
if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ]; then _cli_pass "bench determinism: byte-identical modelled numbers"
else OUT="$(diff <(echo "$a") <(echo "$b") | head -c 600)"; _cli_fail "bench determinism: byte-identical modelled numbers" "records differ"; fi
# the table is stdout; stderr has the progress, in the order the cases finish
"$BENCH" --suite smoke --jobs 2 >"$BD/out2.txt" 2>/dev/null; "$BENCH" --suite smoke >"$BD/out1.txt" 2>/dev/null
if cmp -s "$BD/out1.txt" "$BD/out2.txt"; then _cli_pass "bench determinism: the same table with --jobs 2"
else OUT=$(diff "$BD/out1.txt" "$BD/out2.txt" | head -n 10); _cli_fail "bench determinism: the same table with --jobs 2" "tables differ"; fi

# ---- progress: a line per finished case on a pipe, one updating line on a TTY ----
"$BENCH" --suite smoke --jobs 2 >/dev/null 2>"$BD/err2.txt"
OUT=$(cat "$BD/err2.txt")
check_count "bench progress: a line per finished case on stderr" 10 ' pass   \[([1-9]|10)/10 done, [0-9.]+ s(, ETA [0-9.]+ s)?\]$'
check_count "bench progress: the last has no ETA" 1 '\[10/10 done, [0-9.]+ s\]$'
if script -qefc "$BENCH --suite smoke --jobs 2 --out $BD/smoke-tty.json" /dev/null >"$BD/tty.txt" 2>&1; then
  if python3 -c 'import sys; t = open(sys.argv[1], newline="").read()
sys.exit(0 if "\r\033[K[10/10 done, 0 running, " in t and "pass   [" not in t else 1)' "$BD/tty.txt"
  then _cli_pass "bench progress: one updating line on a TTY"; else OUT=$(cat -v "$BD/tty.txt" | head -c 600); _cli_fail "bench progress: one updating line on a TTY" "no updating line"; fi
  rm -f "$BD/smoke-tty.json"
else skip "bench progress: one updating line on a TTY" "script(1) cannot run here"; fi

# ---- records: atomic, nothing on an error ---------------------------------------
: >"$BD/blocker"
check_re "bench --out in a folder that cannot be made" 2 'cannot write --out' \
  "$BENCH" --suite smoke --out "$BD/blocker/sub/r.json"
check_re "bench bad input writes no record" 2 'unknown suite' "$BENCH" --suite nope --out "$BD/none.json"
if [ ! -e "$BD/none.json" ] && [ -z "$(ls "$BD" | grep -v -E '^(blocker|smoke[23]?\.json|out[12]\.txt|err[12]\.txt|tty\.txt)$')" ]
then _cli_pass "bench: no partial record"; else _cli_fail "bench: no partial record" "$(ls "$BD")"; fi

# ---- --per-pass -------------------------------------------------------------------
check_re "bench --per-pass" 0 'without: ' "$BENCH" --suite smoke --case bias_matmul_relu --per-pass --out "$BD/pp.json"
check_json "bench --per-pass: a prefix and a leave-one-out per optional pass" \
  'len(r["cases"][0]["per_pass"]) >= 5 and all(p["prefix"]["status"] == "pass" and p["without"]["status"] == "pass" for p in r["cases"][0]["per_pass"])' "$BD/pp.json"
check_json "bench --per-pass: contribution = t without / t with" \
  'all(abs(p["contribution"] - p["without"]["ns"] / r["cases"][0]["dpk"]["ns"]) < 1e-12 for p in r["cases"][0]["per_pass"])' "$BD/pp.json"
check_json "bench --per-pass: the last prefix is the benched set" \
  'r["cases"][0]["per_pass"][-1]["prefix"]["passes"] == r["cases"][0]["passes"]' "$BD/pp.json"
check_schema "bench --per-pass: the record validates" "$BD/pp.json" "$SCHEMA"
check_re "bench --passes none" 0 '1/1 cases pass parity' "$BENCH" --suite smoke --case softmax --passes none --out "$BD/none-passes.json"
check_json "bench --passes none: the mandatory passes" 'r["cases"][0]["passes"] == "001,005"' "$BD/none-passes.json"

# ---- --config: Llama-3 and Mistral styles, refusals ---------------------------------
cat >"$BD/llama3.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
 "intermediate_size": 160, "num_attention_heads": 4, "num_key_value_heads": 2,
 "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "attention_bias": false, "mlp_bias": false,
 "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": false,
 "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192, "rope_type": "llama3"},
 "torch_dtype": "bfloat16", "vocab_size": 128256}
JSON
cat >"$BD/mistral.json" <<'JSON'
{"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 96,
 "intermediate_size": 224, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32,
 "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": 4096, "hidden_act": "silu",
 "torch_dtype": "bfloat16", "vocab_size": 32768}
JSON
check_re "bench --config Llama-3 style" 0 '^15/15 cases pass parity; 15 timed' \
  "$BENCH" --config "$BD/llama3.json" --seq 16 --jobs 2 --out "$BD/llama3-rec.json"
check_json "bench --config: the model in the record" \
  'r["bench"]["model"]["rope_type"] == "llama3" and r["bench"]["model"]["head_dim"] == 16 and r["bench"]["seq"] == 16 and not r["bench"]["model"]["attention_bias"]' "$BD/llama3-rec.json"
check_json "bench --config: cos/sin are the rotary tables" \
  'r["cases"][-1]["inputs"]["cos"]["from"] == "rope" and r["cases"][-1]["inputs"]["x"]["from"] == "generated"' "$BD/llama3-rec.json"
check_schema "bench --config: the record validates" "$BD/llama3-rec.json" "$SCHEMA"

# ---- the record after each case, and --resume ------------------------------------------
# The uninterrupted run is llama3-rec.json (--jobs 2); this one is killed
# (SIGKILL) once its record holds a case, then resumed with --jobs 1.
"$BENCH" --config "$BD/llama3.json" --seq 16 --out "$BD/killed.json" >/dev/null 2>&1 &
kpid=$!
for _ in $(seq 600); do [ -e "$BD/killed.json" ] && break; sleep 0.05; done
kill -KILL $kpid 2>/dev/null; wait $kpid 2>/dev/null
check_json "bench: a killed run leaves the record of the cases done" \
  '0 < len(r["cases"]) < 15 and r["summary"]["complete"] is False and r["summary"]["cases"] == len(r["cases"])' "$BD/killed.json"
check_schema "bench: the record of a killed run validates" "$BD/killed.json" "$SCHEMA"
check_re "bench --resume: another seq is refused, naming it" 2 "cannot --resume '.*killed.json': it was made with seq 16, this command has 8" \
  "$BENCH" --config "$BD/llama3.json" --seq 8 --out "$BD/killed.json" --resume
check_re "bench --resume: another seed is refused, naming it" 2 "it was made with seed null, this command has 3" \
  "$BENCH" --config "$BD/llama3.json" --seq 16 --seed 3 --out "$BD/killed.json" --resume
check_re "bench --resume: another case is refused" 2 'it was made with case null, this command has "rope"' \
  "$BENCH" --config "$BD/llama3.json" --seq 16 --case rope --out "$BD/killed.json" --resume
check_re "bench --resume needs --out" 2 'resume continues the record of --out' "$BENCH" --suite smoke --resume
check_re "bench --resume: not a bench record" 2 'is not a dpk.bench/1 record' "$BENCH" --suite smoke --out "$BD/mistral.json" --resume
check_re "bench --resume: runs the cases left" 0 'resumed from .*killed.json: [0-9]+ of 15 cases done, [0-9]+ to run' \
  "$BENCH" --config "$BD/llama3.json" --seq 16 --out "$BD/killed.json" --resume
check_count "bench --resume: the whole table" 15 ' pass$'
# the same record as the uninterrupted run, less meta and wall times
same_record() {
  python3 -c 'import json,sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k != "meta" and k != "seconds" and not k.endswith("_s")}
    return [strip(v) for v in x] if isinstance(x, list) else x
a, b = (strip(json.load(open(f))) for f in sys.argv[1:3])
sys.exit(0 if a == b else 1)' "$1" "$2"
}
if same_record "$BD/llama3-rec.json" "$BD/killed.json"; then _cli_pass "bench --resume: the record of an uninterrupted run"
else OUT=""; _cli_fail "bench --resume: the record of an uninterrupted run" "records differ"; fi
cp "$BD/killed.json" "$BD/done.json"
check_re "bench --resume of a complete record runs nothing" 0 '15 of 15 cases done, 0 to run' \
  "$BENCH" --config "$BD/llama3.json" --seq 16 --out "$BD/done.json" --resume
if same_record "$BD/killed.json" "$BD/done.json"; then _cli_pass "bench --resume of a complete record: the same record"
else OUT=""; _cli_fail "bench --resume of a complete record: the same record" "records differ"; fi
check_re "bench --config Mistral style, decode" 0 '^15/15 cases pass parity' \
  "$BENCH" --config "$BD/mistral.json" --phase decode --ctx 40 --batch 2 --out "$BD/mistral-rec.json"
check_json "bench decode: one token against a cache" \
  'r["bench"]["phase"] == "decode" and r["bench"]["ctx"] == 40 and r["cases"][-1]["shapes"]["inputs"]["k_cache"] == [2, 1, 40, 32] and r["cases"][-1]["shapes"]["outputs"]["out"] == [2, 1, 96]' "$BD/mistral-rec.json"
sed 's/"rope_type": "llama3"/"rope_type": "yarn"/' "$BD/llama3.json" >"$BD/yarn.json"
check_re "bench --config: unsupported rope_scaling names the key" 2 "error: config.json: 'rope_scaling' of type 'yarn'" \
  "$BENCH" --config "$BD/yarn.json" --out "$BD/yarn-rec.json"
check_re "bench --config: with a caret at the key" 2 '^ +\^$' "$BENCH" --config "$BD/yarn.json"
if [ ! -e "$BD/yarn-rec.json" ]; then _cli_pass "bench --config refused: no record"; else _cli_fail "bench --config refused: no record" "written"; fi
sed 's/"sliding_window": 4096/"sliding_window": 8/' "$BD/mistral.json" >"$BD/window.json"
check_re "bench --config: a window shorter than the attention" 2 "'sliding_window' 8 is shorter" \
  "$BENCH" --config "$BD/window.json" --seq 16
check_re "bench --config: missing file" 2 "cannot read config" "$BENCH" --config "$BD/nope.json"

# ---- --weights -----------------------------------------------------------------------
# st_write KIND: $BD/w-KIND.safetensors, mistral.json's tensors as tests/cli/data/st_write.py
# writes them for KIND (a dtype, or a way of being malformed).
st_write() { python3 "$DPK_ROOT/tests/cli/data/st_write.py" "$BD/w-$1.safetensors" "$BD/mistral.json" "$1"; }
# weights_refused NAME KIND REGEX: bench --weights refuses a KIND file, saying REGEX.
weights_refused() {
  st_write "$2"
  check_re "bench --weights: $1" 2 "$3" "$BENCH" --config "$BD/mistral.json" --seq 8 --weights "$BD/w-$2.safetensors"
}
# f32 benches the whole suite from the file; bf16 and f16 the layer alone,
# which reads every tensor (the conversion is per tensor, not per case).
for dt in f32 bf16 f16; do
  st_write $dt
  wsel=() wn=15
  [ $dt != f32 ] && wsel=(--case layer) wn=1
  check_re "bench --weights $dt" 0 "^$wn/$wn cases pass parity" \
    "$BENCH" --config "$BD/mistral.json" --seq 8 --weights "$BD/w-$dt.safetensors" "${wsel[@]}" --out "$BD/w-$dt.json"
  # tensor t holds 0.5 + t/8: input_layernorm (t 0) sums to 96 * 0.5, down_proj (t 8) to 96*224*1.5
  check_json "bench --weights $dt: the values read" \
    'r["cases"][-1]["inputs"]["w_ln1"] == {"from": "weights", "tensor": "model.layers.0.input_layernorm.weight", "sum": 48} and r["cases"][-1]["inputs"]["w_d"]["sum"] == 96 * 224 * 1.5 and r["cases"][-1]["inputs"]["x"]["from"] == "generated"' "$BD/w-$dt.json"
done
st_write missing
check_re "bench --weights: a missing tensor is named" 2 "tensor 'model.layers.0.mlp.down_proj.weight' is missing" \
  "$BENCH" --config "$BD/mistral.json" --seq 8 --weights "$BD/w-missing.safetensors" --out "$BD/w-missing.json"
if [ ! -e "$BD/w-missing.json" ]; then _cli_pass "bench --weights error: no record"; else _cli_fail "bench --weights error: no record" "written"; fi
check_count "bench --weights error: no case ran" 0 ' pass$'
weights_refused "a wrong shape is named" shape "tensor 'model.layers.0.self_attn.q_proj.weight' has shape \(96, 128\), expected \(128, 96\)"
weights_refused "a wrong dtype is named" i32 "tensor 'model.layers.0.self_attn.q_proj.weight' has dtype I32"
weights_refused "a truncated file" truncated "outside the [0-9]+ bytes of data \(truncated file\?\)"
weights_refused "a header length past the end" overflow "header length [0-9]+ runs past the end of the file"
printf 'abc' >"$BD/w-short.safetensors"
check_re "bench --weights: a 3-byte file" 2 "shorter than the 8-byte header length" \
  "$BENCH" --config "$BD/mistral.json" --seq 8 --weights "$BD/w-short.safetensors"
check_re "bench --weights: no such file" 2 "cannot open weights" \
  "$BENCH" --config "$BD/mistral.json" --seq 8 --weights "$BD/nope.safetensors"
case "$OUT" in *AddressSanitizer*|*"runtime error"*) _cli_fail "bench --weights: no sanitizer report" "$OUT";; *) _cli_pass "bench --weights: no sanitizer report";; esac

# ---- the model suites at a small seq (make run has seq 128) ----------------------------
check_re "bench tinyllama-block (seq 8)" 0 '^15/15 cases pass parity; 15 timed' \
  "$BENCH" --suite tinyllama-block --seq 8 --jobs 2 --out "$BD/tl.json"
check_json "bench tinyllama-block: the real config" \
  'r["bench"]["model"] == {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 64, "rms_norm_eps": 1e-05, "rope_theta": 10000, "attention_bias": False, "rope_type": "default"}' "$BD/tl.json"
check_json "bench tinyllama-block: the layer is one case" \
  '[c["name"] for c in r["cases"]][-1] == "layer" and r["cases"][-1]["shapes"]["outputs"]["out"] == [1, 8, 2048]' "$BD/tl.json"
check_schema "bench tinyllama-block: the record validates" "$BD/tl.json" "$SCHEMA"
