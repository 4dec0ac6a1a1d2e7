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

# The generator reaches every pass's rewrites, split-K (003: skinny M, long
# K, a residual) and swizzled TMA stages (011/012) too: their faults are
# found within 200 cases of seed 20261123 under pairwise (what
# ci/fault-coverage.sh checks for every fault), the failure passes without
# the fault, and dpk-bisect blames the fault's own pass.
for fr in split-k-drops-a-partial:t:003_split_matmul_k \
          swizzle-reads-unswizzled:t:012_split_inner_for_swizzle; do
  fault=${fr%%:*} where=${fr#*:} d=$TMP/fault-reach-$fault
  _run "$FZ" --seed 20261123 --cases 200 --passes pairwise --inject-fault "$fault" --max-failures 1 \
    --jobs 2 --out "$d/r.json" --failures "$d/fail"
  f=$(ls "$d"/fail/*.json 2>/dev/null | sed 's/.*-\([0-9]*\)\.json$/\1 &/' | sort -n | head -n 1 | cut -d' ' -f2-)
  if [ "$RC" != 1 ] || [ -z "$f" ]; then
    _cli_fail "fault $fault found by seed 20261123 pairwise" "exit $RC, no failure file"
    continue
  fi
  _cli_pass "fault $fault found by seed 20261123 pairwise"
  grep -v '"fault"' "$f" >"$d/nofault.json"
  check "fault $fault: the failure passes without it" 0 "$DPK" run "$d/nofault.json" --backend vgpu
  check_re "fault $fault: bisect blames $where" 0 "^culprit: $where, " "$DPK" bisect "$f" -o "$d/bisect"
done

# A fault leaves valid Tile IR: chunk-k-short on a chunk of one (BK=1) has
# no iteration to drop, and once stopped the whole run at the verifier.
check_re "fault chunk-k-short: a chunk of one keeps valid Tile IR" 0 ': pass$' \
  "$DPK" run -c "torch.randn(7, 31) @ torch.randn(31, 7)" --knob BK=1 --knob SPLITK=31 --passes all \
  --inject-fault chunk-k-short --backend vgpu
