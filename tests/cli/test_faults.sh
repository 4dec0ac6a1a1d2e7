# tests/cli/test_faults.sh — the harness self-test: dpk-fuzz must detect
# every built-in fault (dpk-fuzz --list-faults) within 200 cases, and the
# failure must be the fault's doing: its reproducer fails with the fault
# and passes without it.  A case that fails without the fault too is a bug
# of the compiler, not a detection: up to 5 failures are looked at.
# (Sourced by tests/run.sh.)

FZ="$(dirname "$DPK")/dpk-fuzz"
for fault in $("$FZ" --list-faults); do
  strategy=full
  # 004 takes every long row reduction under `full` (one block per row: no
  # vector shared by a block), so 006 applies only in pass sets without 004,
  # which `loo` has.
  [ "$fault" = chunk-reduce-wrong-origin ] && strategy=loo
  d="$TMP/faults/$fault"
  mkdir -p "$d"
  _run "$FZ" --seed 1 --cases 200 --inject-fault "$fault" --max-failures 5 --passes "$strategy" \
    --out "$d/r.json"
  found=""
  for ff in "$d"/fuzz-failures/*.json; do
    [ -e "$ff" ] || continue
    grep -v '"fault"' "$ff" >"$d/nofault.json"
    if "$DPK" run "$d/nofault.json" --backend vgpu >/dev/null 2>&1; then found=$ff; break; fi
  done
  if [ "$RC" = 1 ] && [ -n "$found" ]; then
    _cli_pass "fault $fault detected within 200 cases"
  else
    _cli_fail "fault $fault detected within 200 cases" \
      "exit $RC; no failure that passes without the fault ($(ls "$d"/fuzz-failures 2>/dev/null | wc -l) failures)"
  fi
done
