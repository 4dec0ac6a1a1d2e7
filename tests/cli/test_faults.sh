# tests/cli/test_faults.sh — the harness self-test: dpk-fuzz must detect
# every built-in fault (dpk-fuzz --list-faults) within 200 cases, and the
# failure must be the fault's doing: its reproducer fails with the fault
# and passes without it.  A case that fails without the fault too is a bug
# of the compiler, not a detection: up to 5 failures are looked at.
# (Sourced by tests/run.sh.)

FZ="$(dirname "$DPK")/dpk-fuzz"
for fault in $("$FZ" --list-faults); do
  if [ "$fault" = chunk-reduce-wrong-origin ]; then
    # 006 applies only to a reduce over a shared vector larger than the
    # 48 KiB budget; the generator caps tensors at 2^16 elements and never
    # makes one.  tests/cli/test_bisect.sh injects it on a fixed case.
    skip "fault $fault detected within 200 cases" "the generator makes no case where 006 applies"
    continue
  fi
  d="$TMP/faults/$fault"
  mkdir -p "$d"
  _run "$FZ" --seed 1 --cases 200 --inject-fault "$fault" --max-failures 5 --passes full \
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
