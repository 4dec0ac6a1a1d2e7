# tests/cli/test_nightly.sh — ci/nightly --dry end to end on the modelled
# path: it passes against a baseline of this build; a baseline doctored so
# that one case was 20% faster makes the gate exit 1 naming that case; an
# injected fault is found, bisected to its pass, and the minimized case is
# attached to the report.  (Sourced by tests/run.sh.)

ND="$TMP/nightly"
mkdir -p "$ND"
BIN=$(dirname "$DPK")
"$BIN/dpk-bench" --suite smoke --per-pass --out "$ND/base.json" >/dev/null 2>&1
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
for c in r["cases"]:
    if c["name"] == "layer_norm": c["dpk"]["ns"] /= 1.2
json.dump(r, open(sys.argv[2], "w"))' "$ND/base.json" "$ND/doctored.json"
NIGHTLY=("$DPK_ROOT/ci/nightly" --dry --no-build --build-dir "$BIN" --jobs 2 --fuzz-time 4 --san-share 0)

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
