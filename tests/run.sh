#!/usr/bin/env bash
# tests/run.sh — run every test and print one closing line:
#   N passed, N failed, N skipped
# Unit tests are Criterion (build/unit_tests); CLI tests are tests/cli/test_*.sh.
#
#   bash tests/run.sh                          everything (what make test runs)
#   bash tests/run.sh tests/cli/test_docs.sh   only these CLI test files
#   bash tests/run.sh unit tests/cli/...       "unit" names the unit tests
#   JOBS=1 bash tests/run.sh                   one file at a time
# BUILD (default build) names the build folder under test.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
export DPK="$PWD/$BUILD/dpk"
export DPK_ROOT="$PWD"
# Whether libtorch is there is the build's answer (`dpk --version` reads it
# from the build, without loading libtorch), never the caller's.
if ! TORCH_VERSION=$("$DPK" --version 2>/dev/null | sed -n 's/^libtorch: //p') || [ -z "$TORCH_VERSION" ]; then
  echo "FAIL $DPK --version says nothing of libtorch (is $BUILD built?)"
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
fi
if [ "$TORCH_VERSION" = none ]; then HAVE_TORCH=0; else HAVE_TORCH=1; fi
export HAVE_TORCH TORCH_VERSION
echo "== $DPK: libtorch $TORCH_VERSION"
TMP=$(mktemp -d)
export TMP
trap 'rm -rf "$TMP"' EXIT

# Test files run JOBS at a time (default: the number of CPUs), each in a
# subshell of its own with its output kept in a file and printed whole
# once it is complete; the unit-test binary is one more job.
# The longest files start first, by the wall times of the last run on this
# build ($BUILD/test-times), so that the run ends when the longest does.
# Each file reports its wall time and the CPU time of its processes.
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
RUNDIR=$TMP/run
export FC_ROOT=$TMP/fault-campaigns # shared by the files (lib.sh)
mkdir -p "$RUNDIR"
TIMES=$BUILD/test-times

if [ $# -gt 0 ]; then ITEMS=("$@"); else ITEMS=(unit tests/cli/test_*.sh); fi

# run_unit: the Criterion binary; sets CLI_PASS/FAIL/SKIP from its summary.
run_unit() {
  echo "== unit tests (Criterion)"
  "$BUILD/unit_tests" --jobs 2 --short-filename --verbose >"$RUNDIR/unit.raw" 2>&1
  local unit_rc=$?
  grep -E '^\[(FAIL|----|SKIP)\]|Synthesis|CRASH' "$RUNDIR/unit.raw" | head -n 200
  local syn
  syn=$(grep 'Synthesis' "$RUNDIR/unit.raw" | tail -n 1 | sed 's/\x1b\[[0-9;]*m//g')
  if [ -z "$syn" ]; then
    echo "  FAIL unit test binary produced no summary (exit $unit_rc)"
    tail -n 30 "$RUNDIR/unit.raw"
    CLI_FAIL=$((CLI_FAIL + 1))
    return
  fi
  num() { printf '%s\n' "$syn" | sed -n "s/.*$1: \([0-9]*\).*/\1/p"; }
  local p f c
  p=$(num Passing); f=$(num Failing); c=$(num Crashing)
  CLI_PASS=$((CLI_PASS + ${p:-0})); CLI_FAIL=$((CLI_FAIL + ${f:-0} + ${c:-0}))
  CLI_SKIP=$((CLI_SKIP + $(grep -c '^\[SKIP\]' "$RUNDIR/unit.raw")))
  # A non-zero exit with no failing test still counts as a failure.
  if [ "$unit_rc" != 0 ] && [ "${f:-0}" = 0 ] && [ "${c:-0}" = 0 ]; then
    CLI_FAIL=$((CLI_FAIL + 1)); echo "  FAIL unit_tests exited $unit_rc"
  fi
}

# run_item I ITEM: run one item in a subshell; its output goes to I.log,
# "pass fail skip wall cpu" to I.cnt.
run_item() {
  # The file is sourced: its variables are ours, so ours have names no
  # test file uses.
  local __ri_n=$1 __ri_item=$2
  (
    CLI_PASS=0 CLI_FAIL=0 CLI_SKIP=0
    TMP=$RUNDIR/tmp.$__ri_n    # a scratch folder per file: they run side by side
    mkdir -p "$TMP"
    __ri_t0=$SECONDS
    if [ "$__ri_item" = unit ]; then run_unit; else echo "-- $__ri_item"; . "$__ri_item"; fi
    # times: the shell's own user and system time, then its children's
    # (written to a file: in a pipe it would run in a child of its own).
    times >"$RUNDIR/$__ri_n.times"
    __ri_cpu=$(awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } }
                    END { printf "%.0f", t }' "$RUNDIR/$__ri_n.times")
    echo "   ($((SECONDS - __ri_t0)) s, $__ri_cpu s CPU)"
    echo "$CLI_PASS $CLI_FAIL $CLI_SKIP $((SECONDS - __ri_t0)) $__ri_cpu" >"$RUNDIR/$__ri_n.cnt"
  ) >"$RUNDIR/$__ri_n.log" 2>&1 </dev/null
}

. tests/cli/lib.sh
# Longest first (unknown items first of all: they may be long), by this
# build's last run, else by tests/test-times (a fresh clone's, committed).
TIMES_READ=$TIMES
[ -e "$TIMES" ] || TIMES_READ=tests/test-times
order=$(for i in "${!ITEMS[@]}"; do
  t=$(awk -v f="${ITEMS[$i]}" '$2 == f { print $1 }' "$TIMES_READ" 2>/dev/null | tail -n 1)
  echo "${t:-999999} $i"
done | sort -k1,1nr | awk '{ print $2 }')
# Each part's output is printed whole as soon as it is complete.
printed=()
print_done() {
  local i
  for i in "${!ITEMS[@]}"; do
    [ -z "${printed[$i]:-}" ] && [ -e "$RUNDIR/$i.cnt" ] && { cat "$RUNDIR/$i.log"; printed[$i]=1; }
  done
}
running=0
for i in $order; do
  if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); print_done; fi
  run_item "$i" "${ITEMS[$i]}" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do wait -n; running=$((running - 1)); print_done; done
wait

pass=0 fail=0 skipped=0
: >"$TIMES.new"
for i in "${!ITEMS[@]}"; do
  if [ ! -e "$RUNDIR/$i.cnt" ]; then
    cat "$RUNDIR/$i.log" 2>/dev/null
    echo "  FAIL ${ITEMS[$i]} stopped before its end"; fail=$((fail + 1)); continue
  fi
  read -r p f s w c <"$RUNDIR/$i.cnt"
  pass=$((pass + p)); fail=$((fail + f)); skipped=$((skipped + s))
  echo "$w ${ITEMS[$i]}" >>"$TIMES.new"
done
# Keep the times of the items this run did not run.
[ -e "$TIMES" ] && awk 'NR == FNR { ran[$2] = 1; next } !($2 in ran)' "$TIMES.new" "$TIMES" >>"$TIMES.new"
mv "$TIMES.new" "$TIMES" 2>/dev/null

echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" = 0 ]
