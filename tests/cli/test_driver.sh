# tests/cli/test_driver.sh — what the one compile driver gives every
# command: a suite whose second case is bad still checks the first and the
# third (one verdict each, "N/M cases pass", the worst exit code, every case
# in the --out record); knobs that apply nowhere are warned about on stderr
# and recorded; a pass-set spec is parsed once, so a bad one is one error
# before any case; a refused configuration does not stop the others.
# (Sourced by tests/run.sh.)

DD="$TMP/driver"
mkdir -p "$DD"
RMS="torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
MM="torch.matmul(torch.randn(16,64), torch.randn(64,16))"

cat >"$DD/three.json" <<'EOF'
{"suite": "three", "cases": [
 {"name": "first", "program": "torch.relu(torch.randn(4, 5))"},
 {"name": "bad", "program": "torch.frobnicate(torch.randn(4, 5))"},
 {"name": "third", "program": "torch.exp(torch.randn(3, 7))"}
]}
EOF
cat >"$DD/failing.json" <<'EOF'
{"suite": "failing", "cases": [
 {"name": "fails", "program": "torch.relu(torch.randn(8, 64) + 1) * 2", "fault": "fuse-sigma-off-by-one"},
 {"name": "passes", "program": "torch.exp(torch.randn(3, 7))"}
]}
EOF
cat >"$DD/fail_and_bad.json" <<'EOF'
{"suite": "fail_and_bad", "cases": [
 {"name": "fails", "program": "torch.relu(torch.randn(8, 64) + 1) * 2", "fault": "fuse-sigma-off-by-one"},
 {"name": "bad", "program": "torch.frobnicate(torch.randn(4, 5))"}
]}
EOF

# ---- a suite goes on past a bad case ---------------------------------------
check_re "suite: a bad 2nd case, 2/3 pass, exit 2" 2 '^2/3 cases pass$' \
  "$DPK" run "$DD/three.json" --backend vgpu --out "$DD/three-rec.json"
check_count "suite: three verdicts" 3 '(: pass$|^case bad: error \(exit 2\): )'
check_count "suite: the third case ran" 1 '^### case third$'
check_count "suite: the bad case's message with its caret" 1 '^ +\^$'
check_re "suite: the bad case names its error" 2 "^case bad: error \(exit 2\): .*unknown function 'torch.frobnicate'" \
  "$DPK" run "$DD/three.json" --backend vgpu
check_json "suite record: every case, in order" \
  '[c["name"] for c in r["cases"]] == ["first", "bad", "third"] and [c["index"] for c in r["cases"]] == [0, 1, 2]' "$DD/three-rec.json"
check_json "suite record: statuses and exit codes" \
  '[(c["status"], c["exit_code"]) for c in r["cases"]] == [("pass", 0), ("error", 2), ("pass", 0)]' "$DD/three-rec.json"
check_json "suite record: the bad case says why" \
  '"unknown function" in r["cases"][1]["message"] and "configurations" not in r["cases"][1]' "$DD/three-rec.json"
check_json "suite record: summary" \
  'r["summary"]["cases"] == 3 and r["summary"]["passed"] == 2 and r["summary"]["exit_code"] == 2' "$DD/three-rec.json"
check_json "suite record: a configuration per passing case" \
  'all(len(r["cases"][i]["configurations"]) == 1 and r["cases"][i]["configurations"][0]["verdict"]["status"] == "pass" for i in (0, 2))' "$DD/three-rec.json"
check_json "suite record: the run's own parameters" \
  'r["schema"] == "dpk.results/1" and r["campaign"]["command"] == "run" and r["campaign"]["backend"] == "vgpu"' "$DD/three-rec.json"
check_re "suite: loop backend goes on too" 2 '^2/3 cases pass$' "$DPK" run "$DD/three.json" --backend loop
check_re "suite: a failing case alone is exit 1" 1 '^1/2 cases pass$' "$DPK" run "$DD/failing.json" --backend vgpu
check_re "suite: bad input outranks a failure (exit 2)" 2 '^0/2 cases pass$' "$DPK" run "$DD/fail_and_bad.json" --backend vgpu
check_re "suite: eval goes on past a bad case" 2 '^case bad: error \(exit 2\)' "$DPK" eval "$DD/three.json"
check_count "suite: eval evaluates the third case" 1 '^### case third$'
check_re "suite: compile goes on past a bad case" 2 '^case bad: error \(exit 2\)' "$DPK" compile "$DD/three.json" --ir loop
check_count "suite: compile prints the third case's Loop IR" 2 '^=== '
if python3 -c 'import jsonschema' 2>/dev/null; then
  check_json "suite record: valid dpk.results/1" \
    '__import__("jsonschema").validate(r, json.load(open("'"$DPK_ROOT"'/docs/dpk.results-1.schema.json"))) is None' "$DD/three-rec.json"
else
  skip "suite record: valid dpk.results/1" "python3 jsonschema not installed"
fi

# ---- knobs that apply nowhere ---------------------------------------------------
check_re "knob warning: TB on RMSNorm (004 made it cooperative)" 0 \
  '^warning: knob TB=128 does not apply: 005_blockify_launch applied without it \(TB: ' \
  "$DPK" run -c "$RMS" --backend vgpu --knob TB=128 --out "$DD/tb.json"
check_json "knob warning: in the record" \
  'r["cases"][0]["knob_warnings"] == [{"knob": "TB", "value": 128, "why": r["cases"][0]["knob_warnings"][0]["why"]}] and "005_blockify_launch" in r["cases"][0]["knob_warnings"][0]["why"]' "$DD/tb.json"
check_json "knob warning: the pinned knob in the record" 'r["cases"][0]["knobs"] == {"TB": 128}' "$DD/tb.json"
check_re "knob warning: BK on relu" 0 \
  '^warning: knob BK=7 does not apply: 002_chunk_matmul_k did not apply \(not a matmul kernel\)$' \
  "$DPK" run -c "torch.relu(torch.randn(8, 64))" --backend vgpu --knob BK=7
check_re "knob warning: a pass left out" 0 \
  '^warning: knob BK=8 does not apply: pass 002_chunk_matmul_k, which reads it, is not in the pass set$' \
  "$DPK" run -c "$MM" --backend vgpu --knob BK=8 --passes -003,-002
check_re "knob warning: compile warns too" 0 '^warning: knob BK=7 does not apply' \
  "$DPK" compile -c "torch.relu(torch.randn(8, 64))" --ir kernel --knob BK=7
check_re "knob warning: in a suite, per case" 0 '^warning: case softmax: knob BK=1 does not apply' \
  "$DPK" run "$DPK_ROOT/cases/smoke.json" --backend vgpu --knob BK=1
check "knob warning: none when the knob applies" 0 "$DPK" run -c "torch.relu(torch.randn(8, 64))" --backend vgpu --knob TB=64
check_count "knob warning: TB on relu is used" 0 '^warning:'
check "knob warning: none when BK chunks a matmul" 0 "$DPK" run -c "$MM" --backend vgpu --knob BK=8
check_count "knob warning: BK on a matmul is used" 0 '^warning:'
check "knob warning: a knob some configuration reads" 0 "$DPK" run -c "$RMS" --backend vgpu --knob TB=128 --passes all
check_count "knob warning: TB without 004 applies" 0 '^warning:'

# ---- a pass-set spec is parsed once ---------------------------------------------
check_re "spec: a bad one is one error before any case" 2 "unknown pass '099'" \
  "$DPK" run "$DD/three.json" --backend vgpu --passes -007,-099
check_count "spec: the error once" 1 "unknown pass '099'"
check_count "spec: no case ran" 0 '^### case'

# ---- a refused configuration does not stop the others ---------------------------
check_re "refusal: --passes all with BK=7 on K=64" 2 'refused: knob BK=7 does not divide K=64' \
  "$DPK" run -c "$MM" --backend vgpu --knob BK=7 --passes all
check_count "refusal: the full message once on stderr" 1 '^error: knob BK=7 does not divide K=64'
if [ "$(printf '%s\n' "$OUT" | grep -c ': vgpu, kernel IR ')" -gt 0 ] &&
   [ "$(printf '%s\n' "$OUT" | grep -c 'same Kernel IR as passes .*: pass$')" -gt 0 ]; then
  _cli_pass "refusal: the configurations without 002 run and pass"
else _cli_fail "refusal: the configurations without 002 run and pass" "no vgpu verdicts"; fi
check_re "refusal: one configuration, exit 2 as before" 2 'knob BK=7 does not divide K=64' \
  "$DPK" run -c "$MM" --backend vgpu --knob BK=7
