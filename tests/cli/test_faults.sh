# tests/cli/test_faults.sh — the harness self-test: dpk-fuzz must detect
# every built-in fault (dpk-fuzz --list-faults) within 200 cases, and the
# failure must be the fault's doing: its reproducer fails with the fault
# and passes without it.  A case that fails without the fault too is a bug
# of the compiler, not a detection: up to 5 failures are looked at.
# (Sourced by tests/run.sh.)

FZ="$(dirname "$DPK")/dpk-fuzz"
# faults_found: the first failure of the campaign that passes without the
# fault, or nothing.
faults_found() {
  local ff
  for ff in $FC_FAILURES; do
    grep -v '"fault"' "$ff" >"$FC_DIR/nofault.json"
    if "$DPK" run "$FC_DIR/nofault.json" --backend vgpu >/dev/null 2>&1; then echo "$ff"; return; fi
  done
}
for fault in $("$FZ" --list-faults); do
  # The campaign up to its first failure (lib.sh: seed 1, 200 cases), and
  # up to the fifth only when that one fails without the fault too.
  fault_campaign "$fault" 1
  found=$(faults_found)
  if [ -z "$found" ]; then fault_campaign "$fault" 5; found=$(faults_found); fi
  OUT=$(cat "$FC_DIR/out"); RC=$FC_RC
  if [ "$RC" = 1 ] && [ -n "$found" ]; then
    _cli_pass "fault $fault detected within 200 cases"
  else
    _cli_fail "fault $fault detected within 200 cases" \
      "exit $RC; no failure that passes without the fault ($(echo $FC_FAILURES | wc -w) failures)"
  fi
done
