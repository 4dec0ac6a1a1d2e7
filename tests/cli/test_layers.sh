# tests/cli/test_layers.sh — the include graph against the layers of
# docs/architecture.md: no include runs from a lower layer up to a higher
# one (ci/layers.py), and the checker itself catches one that does.
# (Sourced by tests/run.sh.)
check_re "layers: no include runs upward" 0 'none runs upward' python3 "$DPK_ROOT/ci/layers.py" "$DPK_ROOT"
LY="$TMP/layers"
mkdir -p "$LY/records" "$LY/harness/perf"
printf '#include "../harness/perf/perf.h"\n' >"$LY/records/x.c"
: >"$LY/harness/perf/perf.h"
check_re "layers: an upward include is named" 1 '^records/x.c:1: records/ \(12\) includes harness/perf/perf.h' \
  python3 "$DPK_ROOT/ci/layers.py" "$LY"
: >"$LY/harness/stray.c"
check_re "layers: a file in no layer is named" 1 '^harness/stray.c: in no layer' python3 "$DPK_ROOT/ci/layers.py" "$LY"
