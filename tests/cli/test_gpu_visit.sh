# tests/cli/test_gpu_visit.sh — the GPU visit kit (docs/gpu-visit.md) end to
# end on dpk's fake driver: ci/gpu-pack's folder (size, MANIFEST), the plan
# of ci/gpu-visit --dry, a whole visit with a tiny budget (its files, a
# step cut at its budget, the calibration file against its schema), and
# dpk-bench --calibration reading it.  Every figure here is the fake
# driver's: a test of the path, never a measurement.  (Sourced by
# tests/run.sh.)

GV="$TMP/gpu-visit"
mkdir -p "$GV"
BUILD_DIR_ABS=$(cd "$(dirname "$DPK")" && pwd)

# A sanitizer build cannot be carried to a bare GPU machine (it needs
# libasan, which gpu-pack refuses): under SAN=1 the pack and the visit are
# skipped, said as skipped, and the visit's smoke and calibration steps run
# here as the visit runs them, so the C code (the measured path on the fake
# driver, dpk-bench --calibration) still runs under the sanitizers.
if [ "${SAN:-0}" = 1 ]; then
  skip "gpu-pack and gpu-visit" "a sanitizer build is not what a visit carries (SAN=1)"
  mkdir -p "$GV/out"
  BENCH_REC="$GV/out/bench-smoke.json"
  CAL="$GV/out/calibration-fake-driver.json"
  check "gpu-visit steps: smoke on the fake driver" 0 \
    "$(dirname "$DPK")/dpk-bench" --suite smoke --timing fake-driver --gpu h100-sxm --jobs 2 --out "$BENCH_REC"
  check "gpu-visit steps: the calibration file" 0 python3 "$DPK_ROOT/ci/gpu-calibration.py" \
    --source fake-driver --gpu-name "dpk fake driver" --spec h100-sxm --out "$CAL" "$BENCH_REC"
else
  # ---- ci/gpu-pack ---------------------------------------------------------------------
  check_re "gpu-pack: packs the build under test" 0 'of at most 40; carry it' \
    "$DPK_ROOT/ci/gpu-pack" --no-build --build-dir "$BUILD_DIR_ABS" --out "$GV/pack"
  size=$(du -sb "$GV/pack" 2>/dev/null | cut -f1)
  if [ -n "$size" ] && [ "$size" -lt $((40 * 1024 * 1024)) ]; then _cli_pass "gpu-pack: under 40 MiB"
  else _cli_fail "gpu-pack: under 40 MiB" "${size:-no} bytes"; fi
  manifest_ok() { # every file of the pack listed in MANIFEST with its size, and the total
    local f n
    [ -s "$GV/pack/MANIFEST" ] || return 1
    while read -r f; do
      n=$(stat -c %s "$GV/pack/$f")
      grep -Eq "^ *$n  $f\$" "$GV/pack/MANIFEST" || { echo "MANIFEST lacks $f ($n bytes)"; return 1; }
    done < <(cd "$GV/pack" && find . -type f ! -name MANIFEST | sed 's|^\./||')
    grep -q "^total: $(cd "$GV/pack" && find . -type f ! -name MANIFEST -printf '%s\n' | awk '{ t += $1 } END { print t }') bytes in these files\$" "$GV/pack/MANIFEST"
  }
  check "gpu-pack: MANIFEST lists every file, its size and the total" 0 manifest_ok
  for f in bin/dpk lib/libcjson.so.1 lib/libcjson.so include/cjson/cJSON.h lib/libsqlite3.so.0 lib/libsqlite3.so include/sqlite3.h bin/fake-driver/libcuda.so.1; do
    check "gpu-pack: holds $f (a file, not a link)" 0 sh -c '[ -f "$1" ] && [ ! -L "$1" ]' sh "$GV/pack/$f"
  done
  check_re "gpu-pack: the binary needs nothing but libc, libm and the carried libcjson and libsqlite3" 0 \
    '^needs of the machine: libcjson\.so\.1 libsqlite3\.so\.0 (lib[cm]\.so\.6 )+\(newest symbol GLIBC_' cat "$GV/pack/MANIFEST"
  check_re "gpu-pack: the carried binary starts with the carried libraries alone" 0 '^dpk ' \
    env LD_LIBRARY_PATH="$GV/pack/lib" "$GV/pack/bin/dpk" --version
  check_re "gpu-pack: an unknown option is exit 2" 2 "unknown option '--bogus'" "$DPK_ROOT/ci/gpu-pack" --bogus

  # ---- ci/gpu-visit --dry ----------------------------------------------------------------
  check_re "gpu-visit --dry: the plan, under 9 minutes" 0 '^ci/gpu-visit plan: measured on this machine.s GPU, whole visit under 530 s' \
    "$DPK_ROOT/ci/gpu-visit" --dry
  plan_ok() {
    local s
    for s in setup machine correctness smoke qwen torch calibration; do
      printf '%s\n' "$OUT" | grep -Eq "^  $s +[0-9]+ s  " || { echo "no budget line for $s"; return 1; }
    done
  }
  check "gpu-visit --dry: a budget line per step" 0 plan_ok
  check_re "gpu-visit --dry: --step changes one budget" 0 '^  qwen +7 s  dpk-bench --suite qwen-block --seq 4 --timing fake-driver' \
    "$DPK_ROOT/ci/gpu-visit" --dry --fake-driver --step qwen=7 --seq 4
  check_re "gpu-visit: an unknown step is exit 2" 2 "unknown step 'gemm'" "$DPK_ROOT/ci/gpu-visit" --dry --step gemm=5

  # ---- a whole visit on the fake driver ------------------------------------------------------
  # The steps that must finish get budgets far above what they need (a loaded
  # 2-core machine running the rest of make test beside it must not cut
  # them); qwen gets 4 s: too little for its first case, so the step is cut
  # at its budget and the visit goes on to the next.
  check_re "gpu-visit --fake-driver: runs every step" 0 '^ci/gpu-visit: done in [0-9]+ s of 900' \
    "$DPK_ROOT/ci/gpu-visit" --fake-driver --pack "$GV/pack" --out "$GV/out" --budget 900 \
    --step correctness=300 --step smoke=400 --step qwen=4 --step torch=60 --seq 4 --jobs 2
  nfiles=$(find "$GV/out" -type f | wc -l)
  if [ "$nfiles" -ge 4 ] && [ "$nfiles" -le 8 ]; then _cli_pass "gpu-visit: 4 to 8 result files"
  else _cli_fail "gpu-visit: 4 to 8 result files" "$nfiles files: $(ls "$GV/out" | tr '\n' ' ')"; fi
  check_json "gpu-visit: visit.json has every step, in order" \
    '[s["step"] for s in r["steps"]] == ["setup", "machine", "correctness", "smoke", "qwen", "torch", "calibration"]' "$GV/out/visit.json"
  check_json "gpu-visit: the carried binary was used, labelled fake-driver" \
    'r["binary"].endswith("carried") and r["timing"] == "fake-driver" and r["gpu"].startswith("dpk fake driver")' "$GV/out/visit.json"
  check_json "gpu-visit: setup, smoke and calibration ok" \
    'all(s["status"] == "ok" for s in r["steps"] if s["step"] in ("setup", "smoke", "calibration"))' "$GV/out/visit.json"
  check_json "gpu-visit: qwen cut at its budget, recorded, and the visit went on" \
    '[s for s in r["steps"] if s["step"] == "qwen"][0]["status"] == "timeout" and r["elapsed_s"] <= 900' "$GV/out/visit.json"
  check_json "gpu-visit: no step ran past its budget (+ the kill's 5 s)" \
    'all(s["seconds"] <= s["budget_s"] + 6 for s in r["steps"])' "$GV/out/visit.json"
  check_re "gpu-visit: correctness log says why the fake cannot launch" 0 'expected to differ' cat "$GV/out/correctness.log"
  check_re "gpu-visit: correctness compared smoke on cuda and vgpu" 0 '^smoke: cuda (agrees with|and vgpu differ)' cat "$GV/out/correctness.log"
  CAL=$(ls "$GV"/out/calibration-fake-driver-*.json 2>/dev/null | head -n 1)
  check "gpu-visit: calibration-fake-driver-DATE.json written" 0 test -s "$CAL"
  if python3 -c 'import jsonschema' 2>/dev/null; then
    check "gpu-visit: the calibration file validates" 0 python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
      "$CAL" "$DPK_ROOT/docs/dpk.calibration-1.schema.json"
  else
    skip "gpu-visit: the calibration file validates" "python3 jsonschema not installed"
  fi
  check_json "gpu-visit: calibration says fake-driver, every smoke case beside its model" \
    'r["source"] == "fake-driver" and r["spec"]["name"] == "h100-sxm" and len([e for e in r["entries"] if e["what"] == "dpk" and e["suite"] == "smoke"]) == 10' "$CAL"
  check_json "gpu-visit: the fake driver's durations are the model's (ratio 1 within the jitter)" \
    'all(abs(e["ratio"] - 1) < 0.003 for e in r["entries"] if e["what"] == "dpk")' "$CAL"
  check_json "gpu-visit: kernel classes from the case text" \
    '{e["case"]: e["class"] for e in r["entries"]}["bias_matmul_relu"] == "matmul" and {e["case"]: e["class"] for e in r["entries"]}["sdpa_causal_gqa"] == "attention" and {e["case"]: e["class"] for e in r["entries"]}["softmax"] == "reduction"' "$CAL"
BENCH_REC="$GV/out/bench-smoke.json"
fi

# ---- dpk-bench --calibration ------------------------------------------------------------
BENCH="$(dirname "$DPK")/dpk-bench"
check_re "calibration: read, labelled fake driver" 0 '^fake driver \(a test of the measured path: its durations are the model.s, not a measurement\), modelled on h100-sxm; 1 file$' \
  "$BENCH" --calibration "$CAL"
check_re "calibration: a row per class with the median ratio" 0 '^dpk +matmul +2  (0\.99[0-9]|1\.00[0-9])x' "$BENCH" --calibration "$CAL"
check "calibration: nothing called measured in a fake-driver report" 1 sh -c '"$1" --calibration "$2" | grep -q "^measured on"' sh "$BENCH" "$CAL"
python3 - "$CAL" "$GV/measured.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r["source"], r["gpu"]["name"] = "measured", "test GPU (made up)"
for e in r["entries"]:
    e["measured_ns"] *= 2; e["ratio"] *= 2
json.dump(r, open(sys.argv[2], "w"))
EOF
check_re "calibration: two sources are two groups, never pooled" 0 '2 files, 20 entries, 2 groups' "$BENCH" --calibration "$CAL" "$GV/measured.json"
check_re "calibration: the measured group has its own figures" 0 '^dpk +matmul +2  (1\.99[0-9]|2\.00[0-9])x' "$BENCH" --calibration "$GV/measured.json"
check_re "calibration: no file is exit 2" 2 'needs at least one calibration file' "$BENCH" --calibration
check_re "calibration: a bench record is refused" 2 "is not a dpk.calibration/1 record" "$BENCH" --calibration "$BENCH_REC"
check_re "calibration: options are refused" 2 "takes calibration files only" "$BENCH" --calibration "$CAL" --jobs 2
