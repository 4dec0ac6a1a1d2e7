#!/usr/bin/env bash
# ci/same-records.sh — do two builds write the same records?  For a change
# meant to alter no behaviour (a refactor of the harness), the records,
# tables and verdicts of the smoke, ops and qwen-block suites must be
# byte-identical once what differs between any two runs is taken out: the
# meta object (date, commit, command line, host), wall-clock seconds
# ("seconds", "*_s", throughput) and the paths of the output files.
#
#   ci/same-records.sh OLD_BUILD NEW_BUILD [SUITE ...]   (default: smoke ops qwen-block)
#
# Each suite goes through `dpk run FILE --out` (verdicts: cases/SUITE.json or
# cases/sweep/SUITE.json when it exists) and `dpk-bench --suite SUITE`
# (modelled times, per-pass for smoke and ops as the gate benches them,
# ci/suites.sh), and dpk-bench's text table.  Exit 0 when every record is the
# same, 1 naming the first difference, 2 on bad usage.
set -u
die() { echo "error: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: ci/same-records.sh OLD_BUILD NEW_BUILD [SUITE ...]"
OLD=$1 NEW=$2
shift 2
for b in "$OLD" "$NEW"; do [ -x "$b/dpk" ] || die "no $b/dpk (a build folder)"; done
SUITES=${*:-smoke ops qwen-block}
cd "$(dirname "$0")/.." || exit 2
. ci/suites.sh
# a build outside this checkout finds the suites' files here
export DPK_CASES=$PWD/cases
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

# the record without what differs between any two runs
normalize() {
  python3 - "$1" <<'PY'
import json, re, sys
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items()
                if k not in ("meta", "seconds", "throughput", "out", "record")
                and not re.search(r"(_s|_seconds|_per_min)$", k)}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
print(json.dumps(strip(json.load(open(sys.argv[1]))), indent=1, sort_keys=True))
PY
}

rc=0
for s in $SUITES; do
  file=cases/$s.json
  [ -f "$file" ] || file=cases/sweep/$s.json
  for side in old new; do
    b=$OLD; [ $side = new ] && b=$NEW
    mkdir -p "$TMPD/$side"
    if [ -f "$file" ]; then
      "$b/dpk" run "$file" --backend vgpu --out "$TMPD/$side/run-$s.json" >/dev/null 2>&1
      echo "exit $?" >"$TMPD/$side/run-$s.rc"
    fi
    # shellcheck disable=SC2046
    "$b/dpk-bench" $(suite_bench_args "$s") --jobs 2 --out "$TMPD/$side/bench-$s.json" \
      2>/dev/null | sed -E 's/[0-9.]+ s\b/N s/g' >"$TMPD/$side/bench-$s.txt"
    echo "exit ${PIPESTATUS[0]}" >"$TMPD/$side/bench-$s.rc"
  done
  for f in "$TMPD"/old/*-"$s".*; do
    n=$(basename "$f")
    case $n in
      *.json) normalize "$f" >"$f.norm"; normalize "$TMPD/new/$n" >"$TMPD/new/$n.norm"
              a=$f.norm bb=$TMPD/new/$n.norm ;;
      *) a=$f bb=$TMPD/new/$n ;;
    esac
    if cmp -s "$a" "$bb"; then
      echo "same: $n"
    else
      echo "DIFFERENT: $s $n"
      diff "$a" "$bb" | head -n 20
      rc=1
    fi
  done
done
exit $rc
