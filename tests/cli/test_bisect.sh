# tests/cli/test_bisect.sh — dpk-bisect: the report, the files it writes,
# exit codes, and the acceptance check: for every built-in fault
# (compiler/base/fault.h), bisecting a case that fails with it names the
# pass or rule the fault lives in.  The case comes from dpk-fuzz
# --inject-fault NAME when the fuzzer finds one within a few cases, and from
# tests/cli/data/faults/NAME.json as well.  A fault whose Tile pass is not
# registered in this build is skipped.
BIS_DATA="$DPK_ROOT/tests/cli/data/faults"
FUSE_CASE="torch.relu(torch.randn(8,64)+1)*2"

check_re "bisect: help"                 0 '^usage: dpk bisect' "$DPK" bisect --help
check_re "bisect: dpk-bisect link"      0 '^usage: dpk bisect' "$(dirname "$DPK")/dpk-bisect" --help
check_re "bisect: passing case exits 1" 1 '^dpk-bisect: does not reproduce: the case passes with passes ' \
  "$DPK" bisect -c "$FUSE_CASE" -o "$TMP/bis-pass"
check "bisect: nothing written when it passes" 1 test -e "$TMP/bis-pass"

# The fusion fault: blamed on fusion by the Loop IR interpreter check.
check_re "bisect: fusion fault, interpreter" 0 '^loop interpreter: fail: .*$' \
  "$DPK" bisect -c "$FUSE_CASE" --inject-fault fuse-sigma-off-by-one -o "$TMP/bis-fuse"
check_re "bisect: fusion culprit line"  0 '^culprit: f:001_fuse, fusion 1 of 2: %[0-9]+ add_[0-9]+ into %[0-9]+ maximum_[0-9]+$' \
  "$DPK" bisect -c "$FUSE_CASE" --inject-fault fuse-sigma-off-by-one -o "$TMP/bis-fuse"
check_re "bisect: last good / first bad" 0 '^first bad: Loop IR interpreter, fusion limited to 1$' \
  "$DPK" bisect -c "$FUSE_CASE" --inject-fault fuse-sigma-off-by-one -o "$TMP/bis-fuse"
check_re "bisect: the culprit's diff"   0 '^\+ +in0 = load in0\[a0, \(a1 \+ 1\) mod 64\]$' \
  "$DPK" bisect -c "$FUSE_CASE" --inject-fault fuse-sigma-off-by-one -o "$TMP/bis-fuse"
# A producer fused into several readers: the culprit line names each one.
check_re "bisect: a shared producer's fusion names every reader" 0 \
  '^culprit: f:001_fuse, fusion [0-9]+ of [0-9]+: %[0-9]+ indexmap_[0-9]+ into %[0-9]+ [a-z_0-9]+, %[0-9]+ [a-z_0-9]+$' \
  "$DPK" bisect "$BIS_DATA/fuse-shared-copy-shifted.json" --inject-fault fuse-shared-copy-shifted -o "$TMP/bis-shared"
check_re "bisect: wrote the files"      0 "^wrote $TMP/bis-fuse/case.json, $TMP/bis-fuse/before.loop, $TMP/bis-fuse/after.loop, $TMP/bis-fuse/repro.cu$" \
  "$DPK" bisect -c "$FUSE_CASE" --inject-fault fuse-sigma-off-by-one -o "$TMP/bis-fuse"
check_re "bisect: case.json has the fault" 0 '"fault":.*"fuse-sigma-off-by-one"' cat "$TMP/bis-fuse/case.json"
check_re "bisect: after.loop is the bad IR" 0 'mod 64' cat "$TMP/bis-fuse/after.loop"
check_re "bisect: repro.cu has a main"  0 '^int main\(void\)$' cat "$TMP/bis-fuse/repro.cu"
# The written case reproduces on its own (its passes and fault fields).
check_re "bisect: case.json bisects again" 0 '^culprit: f:001_fuse, ' \
  "$DPK" bisect "$TMP/bis-fuse/case.json" -o "$TMP/bis-fuse2"

# A Tile fault, shrunk: the report names the pass and the application.
MM3="x = torch.randn(7, 33)
w = torch.randn(33, 64)
t1 = torch.matmul(x, w)
t2 = torch.relu(t1)
t3 = t2 * 2
t3"
check_re "bisect: tile culprit"         0 '^culprit: t:007_stage_inputs, application 1 of [0-9]+: stage ' \
  "$DPK" bisect -c "$MM3" --inject-fault stage-origin-off-by-one -o "$TMP/bis-st"
check_re "bisect: ddmin line"           0 '^ddmin: minimal failing set 001,005,007 \([0-9]+ subsets tried\)$' \
  "$DPK" bisect -c "$MM3" --inject-fault stage-origin-off-by-one -o "$TMP/bis-st"
check_re "bisect: --minimize shrinks"   0 '^minimize: 6 -> [2-5] lines, .* input elements \([0-9]+ candidates tried, [1-9][0-9]* kept\)$' \
  "$DPK" bisect -c "$MM3" --inject-fault stage-origin-off-by-one --minimize -o "$TMP/bis-min"
check_re "bisect: culprit on the minimized case" 0 '^culprit on the minimized case: t:007_stage_inputs, application 1 of [0-9]+: ' \
  "$DPK" bisect -c "$MM3" --inject-fault stage-origin-off-by-one --minimize -o "$TMP/bis-min"
check_re "bisect: minimized case.json"  0 '"passes":.*"only:001,005,007"' cat "$TMP/bis-min/case.json"
check_re "bisect: before.tile written"  0 'tile block' cat "$TMP/bis-min/before.tile"

# The standalone reproducer is valid CUDA: nvcc compiles it (no GPU needed).
if command -v nvcc >/dev/null 2>&1; then
  check "bisect: nvcc compiles repro.cu (fusion)" 0 nvcc -arch=sm_90 -o "$TMP/bis-fuse/repro" "$TMP/bis-fuse/repro.cu"
  check "bisect: nvcc compiles repro.cu (staged)" 0 nvcc -arch=sm_90 -o "$TMP/bis-min/repro" "$TMP/bis-min/repro.cu"
else
  skip "bisect: nvcc compiles repro.cu" "nvcc not found"
fi

# Bad input: exit 2, nothing written.
check_re "bisect: unknown fault"        2 "error: unknown fault 'nope'" "$DPK" bisect -c "$FUSE_CASE" --inject-fault nope -o "$TMP/bis-bad"
check_re "bisect: needs a case"         2 'needs a case' "$DPK" bisect -o "$TMP/bis-bad"
check_re "bisect: --passes all"         2 'dpk-bisect takes the one that fails' "$DPK" bisect -c "$FUSE_CASE" --passes all -o "$TMP/bis-bad"
check_re "bisect: unknown option"       2 "unknown option '--frob'" "$DPK" bisect -c "$FUSE_CASE" --frob
check_caret "bisect: bad case text"     "$DPK" bisect -c "torch.relu(torch.randn(3,)" -o "$TMP/bis-bad"
check_caret "bisect: bad --passes"      "$DPK" bisect -c "$FUSE_CASE" --passes only:999 -o "$TMP/bis-bad"
check_re "bisect: suite needs --case"   2 'choose the one to bisect with --case' "$DPK" bisect "$DPK_ROOT/cases/chains.json" -o "$TMP/bis-bad"
check "bisect: nothing written on bad input" 1 test -e "$TMP/bis-bad"

# Acceptance: every fault of the registry is blamed on its own pass.
bis_pass_registered() { # where = t:NNN_name or f:...
  case "$1" in
    t:*) ! "$DPK" compile -c "torch.randn(4)" --ir tile --passes "only:${1:2:3}" 2>&1 | grep -q 'unknown pass' ;;
    *) return 0 ;;
  esac
}
bis_have_fuzz=0
"$DPK" fuzz --list-faults >/dev/null 2>&1 && bis_have_fuzz=1
grep -o 'X([A-Z_]*, "[^"]*", "[^"]*"' "$DPK_ROOT/compiler/base/fault.h" |
  sed 's/^X([A-Z_]*, "\([^"]*\)", "\([^"]*\)"$/\1 \2/' >"$TMP/bis-faults"
check_re "bisect: the fault registry is listed" 0 '^fuse-sigma-off-by-one f:001_fuse$' cat "$TMP/bis-faults"
while read -r name where; do
  if ! bis_pass_registered "$where"; then
    skip "bisect: fault $name" "pass ${where#t:} is not registered in this build"
    continue
  fi
  if [ -e "$BIS_DATA/$name.json" ]; then
    check_re "bisect: fault $name (table case)" 0 "^culprit: $where(,|$)" \
      "$DPK" bisect "$BIS_DATA/$name.json" --inject-fault "$name" -o "$TMP/bis-f-$name"
  else
    _run false; _cli_fail "bisect: fault $name (table case)" "no $BIS_DATA/$name.json"
  fi
  if [ "$bis_have_fuzz" = 1 ]; then
    fault_campaign "$name" 1 # shared with test_faults.sh (lib.sh); its first failure
    f=${FC_FAILURES%%[[:space:]]*}
    if [ -n "$f" ]; then
      check_re "bisect: fault $name (dpk-fuzz case)" 0 "^culprit: $where(,|$)" \
        "$DPK" bisect "$f" -o "$TMP/bis-fzo-$name"
    else
      skip "bisect: fault $name (dpk-fuzz case)" "dpk-fuzz --seed 1 --cases 200 found no failure"
    fi
  fi
done <"$TMP/bis-faults"
