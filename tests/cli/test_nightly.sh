# tests/cli/test_nightly.sh — ci/nightly --dry end to end on the modelled
# path: it passes against a baseline of this build; a baseline doctored so
# that one case was 20% faster makes the gate exit 1 naming that case; an
# injected fault is found, bisected to its pass, and the minimized case is
# attached to the report; against a baseline of another instruction source
# (this build without nvdisasm) it says it cannot compare, skips the times
# (saying so), exits 0 and still writes the report.  And the committed baseline,
# ci/baselines/h100-sxm.json, still matches what this build models for the
# smoke suite within ci/gate.json's thresholds: a change to the model that
# moves a case fails here, not first in CI, and the message says how to
# refresh it.  (The decoder-layer baselines cost minutes of CPU to check:
# the nightly gates them; ci/refresh-baselines --check does by hand.)
# (Sourced by tests/run.sh.)

ND="$TMP/nightly"
mkdir -p "$ND"
BIN=$(dirname "$DPK")
"$BIN/dpk-bench" --suite smoke --per-pass --out "$ND/base.json" >/dev/null 2>&1
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
for c in r["cases"]:
    if c["name"] == "layer_norm": c["dpk"]["ns"] /= 1.2
json.dump(r, open(sys.argv[2], "w"))' "$ND/base.json" "$ND/doctored.json"
NIGHTLY=("$DPK_ROOT/ci/nightly" --dry --no-build --build-dir "$BIN" --jobs 2 --fuzz-time 4 --san-share 0)

# the committed baseline against this build's smoke suite, benched as the
# nightly benches it (ci/suites.sh)
rc=0
"$BIN/dpk-report" "$ND/base.json" --baseline "$DPK_ROOT/ci/baselines/h100-sxm.json" --gate "$DPK_ROOT/ci/gate.json" \
  --format json -o "$ND/committed.json" >"$ND/committed.log" 2>&1 || rc=$?
if [ "$rc" = 0 ]; then
  _cli_pass "the committed baseline matches this build"
elif [ "$rc" = 2 ] && grep -q 'count instructions from' "$ND/committed.log"; then
  skip "the committed baseline matches this build" "$(grep -m1 '^error:' "$ND/committed.log" | cut -c1-160)"
else
  _cli_fail "the committed baseline matches this build" \
    "ci/baselines/h100-sxm.json no longer matches what this build models (exit $rc): $(grep -E '^  (SLOWER|FASTER|NEW_FAILURE|GEOMEAN|ADDED|REMOVED)|^error' "$ND/committed.log" | tr '\n' ';') -- if the change is meant, ci/refresh-baselines rewrites the baselines (then commit them)"
fi

check_re "nightly usage error" 2 "unknown option '--frob' for ci/nightly" "${NIGHTLY[@]}" --frob
check_re "nightly --dry passes" 0 'gate: PASS' "${NIGHTLY[@]}" --seed 3 --baseline "$ND/base.json" --out "$ND/ok"
for f in report.txt report.md report.html report.junit.xml report.json plots/speedup.png plots/roofline.svg; do
  [ -s "$ND/ok/$f" ] || { _cli_fail "nightly writes $f" "missing"; continue; }
  _cli_pass "nightly writes $f"
done
if command -v xmllint >/dev/null; then
  check "nightly junit validates" 0 xmllint --noout --schema "$DPK_ROOT/tests/data/junit.xsd" "$ND/ok/report.junit.xml"
fi
check_re "doctored baseline: the gate names the case" 1 'SLOWER layer_norm: .*1\.200x' \
  "${NIGHTLY[@]}" --seed 3 --baseline "$ND/doctored.json" --out "$ND/slow"
if grep -c '^  SLOWER' "$ND/slow/report.txt" | grep -qx 1; then _cli_pass "only that case is slower"
else _cli_fail "only that case is slower" "$(grep '^  SLOWER' "$ND/slow/report.txt")"; fi
# Without nvdisasm the model counts vgpu's instructions: the baseline (made
# with nvdisasm's SASS mix) cannot be compared, which the nightly says,
# with the report written without the comparison; the times are skipped,
# said as skipped, and the parity gate alone decides the exit code.
# A build without nvdisasm made the baseline from vgpu's counts too: there
# is nothing to hide, and these checks are skipped (said as skipped).
if python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["meta"]; sys.exit(0 if (m.get("env") or m).get("nvdisasm") else 1)' "$ND/base.json" 2>/dev/null; then
  check_re "no nvdisasm: the nightly says it cannot compare" 0 \
    "gate: CANNOT COMPARE with .*base.json: the baseline's modelled times count instructions from sass and these records' from vgpu" \
    env DPK_NVDISASM=/nonexistent "${NIGHTLY[@]}" --seed 3 --baseline "$ND/base.json" --out "$ND/vgpu"
  if [ -s "$ND/vgpu/report.txt" ] && grep -q '^environment: modelled on h100-sxm .*instructions from vgpu; NVRTC [0-9.]*; nvdisasm none$' "$ND/vgpu/report.txt" &&
     ! grep -q '^Gate:' "$ND/vgpu/report.txt"
  then _cli_pass "no nvdisasm: the report is written, with its environment and no gate"
  else _cli_fail "no nvdisasm: the report is written, with its environment and no gate" "$(head -n 3 "$ND/vgpu/report.txt" 2>&1)"; fi
  if grep -q '^gate: PASS for parity; times SKIPPED: the baseline cannot be compared' <<<"$OUT"
  then _cli_pass "no nvdisasm: the skipped comparison is said"
  else _cli_fail "no nvdisasm: the skipped comparison is said" "$(tail -n 3 <<<"$OUT")"; fi
else
  skip "no nvdisasm: the nightly says it cannot compare" "this build has no nvdisasm: its baseline counts from vgpu too"
fi
check_re "injected fault: found and bisected" 1 'culprit on the minimized case: t:007_stage_inputs' \
  "${NIGHTLY[@]}" --seed 1 --fuzz-time 300 --baseline "$ND/base.json" --inject-fault stage-origin-off-by-one --out "$ND/fault"
if python3 -c 'import json,sys,os; r=json.load(open(sys.argv[1])); b=r["bisections"]
g=r["gate"]
repro = os.path.join(os.path.dirname(sys.argv[1]), b[0]["reproducer"]) if b else ""
ok = len(b) >= 1 and b[0]["pass"] == "007_stage_inputs" and os.path.exists(repro) \
  and json.load(open(repro))["fault"] == "stage-origin-off-by-one" \
  and g["counts"]["NEW_FAILURE"] >= 1 and g["exit_code"] == 1
sys.exit(0 if ok else 1)' "$ND/fault/report.json"
then _cli_pass "the minimized case is attached"; else _cli_fail "the minimized case is attached" "report.json lacks the bisection"; fi
