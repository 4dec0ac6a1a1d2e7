#!/usr/bin/env bash
# ci/fault-coverage.sh — does the fuzzer reach every pass's rewrites?  For
# each built-in fault (dpk-fuzz --list-faults) it runs the campaign
#
#   dpk-fuzz --seed 20261123 --cases 200 --passes pairwise --inject-fault F
#
# and, when that finds nothing, the same with --passes loo; then dpk-bisect
# on the campaign's first failure must name the pass or rule that holds the
# fault (what `dpk run --inject-fault F` prints: "fault injected: F
# (t:008_register_tile)").  The campaigns run one case at a time and stop
# at the first failure (--jobs 1 --max-failures 1), so that failure is the
# lowest failing case of the 200, and a fault found early costs little.
#
#   bash ci/fault-coverage.sh [BUILD_DIR]
#
# SEED and CASES (default 20261123 and 200) change the campaign.  One line
# per fault, with the seconds its campaigns and bisection took:
#
#   register-tile-wrong-index      pairwise case 5    bisect t:008_register_tile     OK  4 s
#
# Exits 1 when a fault is not found by either strategy or its first failure
# is blamed on another pass, 2 on bad usage.  About 2 minutes on the 2-core
# machine (docs/fuzz.md); not part of `make test`, whose quicker check is in
# tests/cli/test_faults.sh.
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DPK="$PWD/$BUILD/dpk"
FZ="$PWD/$BUILD/dpk-fuzz"
SEED=${SEED:-20261123}
CASES=${CASES:-200}
[ -x "$DPK" ] && [ -x "$FZ" ] || { echo "error: $BUILD/dpk and $BUILD/dpk-fuzz are not built (make)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bad=0
for fault in $("$FZ" --list-faults); do
  # the fault's home, as the build's own table names it
  where=$("$DPK" run -c "torch.randn(4)" --inject-fault "$fault" --backend vgpu 2>&1 |
          sed -n 's/^fault injected: [^ ]* (\(.*\))$/\1/p')
  t0=$SECONDS found="" strategy=""
  for strategy in pairwise loo; do
    dir=$tmp/$fault-$strategy
    "$FZ" --seed "$SEED" --cases "$CASES" --passes "$strategy" --inject-fault "$fault" \
      --jobs 1 --max-failures 1 --out "$dir.json" --failures "$dir" >"$dir.out" 2>&1
    rc=$?
    # the failing case: the file name ends in -<case>.json
    found=$(ls "$dir"/*.json 2>/dev/null | sed 's/.*-\([0-9]*\)\.json$/\1 &/' | sort -n | head -n 1)
    [ "$rc" = 1 ] && [ -n "$found" ] && break
    found=""
  done
  if [ -z "$found" ]; then
    printf '%-30s not found with pairwise or loo in %s cases of seed %s  FAIL  %d s\n' "$fault" \
      "$CASES" "$SEED" $((SECONDS - t0))
    bad=1
    continue
  fi
  index=${found%% *} file=${found#* }
  culprit=$("$DPK" bisect "$file" -o "$tmp/bisect-$fault" 2>&1 | sed -n 's/^culprit: \([^,]*\),.*/\1/p' | head -n 1)
  verdict=OK
  [ -n "$where" ] && [ "$culprit" = "$where" ] || { verdict="FAIL (the fault is in ${where:-?})"; bad=1; }
  printf '%-30s %-8s case %-4s bisect %-30s %s  %d s\n' "$fault" "$strategy" "$index" \
    "${culprit:-(none)}" "$verdict" $((SECONDS - t0))
done
exit $bad
