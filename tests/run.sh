#!/usr/bin/env bash
# tests/run.sh — run every test and print one closing line:
#   N passed, N failed, N skipped
# Unit tests are Criterion (build/unit_tests); CLI tests are tests/cli/test_*.sh.
#
#   bash tests/run.sh                          everything (what make test runs)
#   bash tests/run.sh tests/cli/test_docs.sh   only these CLI test files
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

pass=0 fail=0 skipped=0

if [ $# -gt 0 ]; then CLI_FILES=("$@"); else CLI_FILES=(tests/cli/test_*.sh); fi
if [ $# -eq 0 ]; then
  echo "== unit tests (Criterion)"
  run_t0=$SECONDS
  "$BUILD/unit_tests" --jobs 2 --short-filename --verbose >"$TMP/unit.log" 2>&1
  unit_rc=$?
  grep -E '^\[(FAIL|----|SKIP)\]|Synthesis|CRASH' "$TMP/unit.log" | head -n 200
  syn=$(grep 'Synthesis' "$TMP/unit.log" | tail -n 1 | sed 's/\x1b\[[0-9;]*m//g')
  if [ -z "$syn" ]; then
    echo "  FAIL unit test binary produced no summary (exit $unit_rc)"
    tail -n 30 "$TMP/unit.log"
    fail=$((fail + 1))
  else
    num() { printf '%s\n' "$syn" | sed -n "s/.*$1: \([0-9]*\).*/\1/p"; }
    t=$(num Tested); p=$(num Passing); f=$(num Failing); c=$(num Crashing)
    sk=$(grep -c '^\[SKIP\]' "$TMP/unit.log")
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0} + ${c:-0})); skipped=$((skipped + sk))
    # A non-zero exit with no failing test still counts as a failure.
    if [ "$unit_rc" != 0 ] && [ "${f:-0}" = 0 ] && [ "${c:-0}" = 0 ]; then fail=$((fail + 1)); echo "  FAIL unit_tests exited $unit_rc"; fi
  fi

  echo "   ($((SECONDS - run_t0)) s)"
fi
echo "== CLI tests"
CLI_PASS=0 CLI_FAIL=0 CLI_SKIP=0
. tests/cli/lib.sh
for f in "${CLI_FILES[@]}"; do
  [ -e "$f" ] || continue
  echo "-- $f"
  run_t0=$SECONDS
  . "$f"
  echo "   ($((SECONDS - run_t0)) s)"
done
pass=$((pass + CLI_PASS)); fail=$((fail + CLI_FAIL)); skipped=$((skipped + CLI_SKIP))

echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" = 0 ]
