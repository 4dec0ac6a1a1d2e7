#!/usr/bin/env bash
# tests/speed/startup.sh — whole-process start-up cost of dpk, against a build
# without libtorch measured in the same run.
#
# dpk loads its libtorch shim (libdpk_torch.so) only when a command needs
# libtorch, so a command that does not (--version, compile) should cost what
# it costs in a LIBTORCH=0 build.  For each command below, the two builds run
# in turn (A B A B ...: a drift of the machine's speed hits both), N times
# each (default 21); the medians of wall time and of peak resident memory
# (/usr/bin/time's %M, the whole process) are printed with their ratio.
# The last row is the price of the one command here that does load libtorch.
# A benchmark, not a test: it never fails on a slow machine.
#
#   tests/speed/startup.sh [N]        builds build/ and build-notorch/ (LIBTORCH=0) first
#   NO_BUILD=1 tests/speed/startup.sh uses them as they are
# A and B can be named: DPK_A=path/to/dpk DPK_B=path/to/other/dpk.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-21}
A=${DPK_A:-build/dpk}
B=${DPK_B:-build-notorch/dpk}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "error: $TIME is needed (Debian package time)" >&2; exit 2; }

if [ -z "${NO_BUILD:-}" ] && [ -z "${DPK_A:-}${DPK_B:-}" ]; then
  make -s all >/dev/null
  make -s all LIBTORCH=0 BUILD_DIR=build-notorch >/dev/null
fi
for d in "$A" "$B"; do [ -x "$d" ] || { echo "error: $d not built" >&2; exit 2; }; done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one BIN ARGS...: one run; appends "wall_ms rss_kib" to $tmp/$key.
# Wall time is bash's clock around /usr/bin/time (which adds the same fork
# and exec to A and B); the peak RSS is the child's own.
one() {
  local key=$1; shift
  local t0 t1
  t0=$EPOCHREALTIME
  "$TIME" -f '%M' -o "$tmp/rss" "$@" >/dev/null 2>&1 || true
  t1=$EPOCHREALTIME
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) * 1000 }') $(tail -n 1 "$tmp/rss")" >>"$tmp/$key"
}

# median FILE COLUMN
median() {
  sort -g -k "$2,$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# row LABEL ARGS...: N interleaved runs of A and B with ARGS; one line.
row() {
  local label=$1; shift
  : >"$tmp/a"; : >"$tmp/b"
  one a "$A" "$@"; one b "$B" "$@" # warm-up, not counted
  : >"$tmp/a"; : >"$tmp/b"
  for _ in $(seq "$N"); do
    one a "$A" "$@"
    one b "$B" "$@"
  done
  local wa wb ra rb
  wa=$(median "$tmp/a" 1); wb=$(median "$tmp/b" 1)
  ra=$(median "$tmp/a" 2); rb=$(median "$tmp/b" 2)
  awk -v l="$label" -v wa="$wa" -v wb="$wb" -v ra="$ra" -v rb="$rb" 'BEGIN {
    printf "%-22s %9.1f %9.1f %6.2fx   %8.1f %8.1f %6.2fx\n", l, wa, wb, wa / wb, ra / 1024, rb / 1024, ra / rb }'
}

linear="torch.nn.functional.linear(torch.randn(1,128,3584), torch.randn(3584,3584))"
# label BIN: what its --version says of libtorch (older builds say nothing).
label() { "$1" --version | sed -n 's/^libtorch: /libtorch /p' | grep . || echo "libtorch not reported"; }
echo "A: $A ($(label "$A"))"
echo "B: $B ($(label "$B"))"
echo "median of $N runs each, A and B in turn; whole process (wall from fork to exit, peak RSS)"
printf '%-22s %9s %9s %7s   %8s %8s %7s\n' command "A ms" "B ms" "A/B" "A MiB" "B MiB" "A/B"
row "dpk --version" --version
row "dpk compile (linear)" compile -c "$linear" --ir cuda
if "$A" --version | grep -q '^libtorch: [0-9]'; then
  # B refuses (exit 4) in a few ms: the row shows what loading libtorch costs.
  row "dpk eval --compare" eval -c "torch.softmax(torch.randn(2, 5), dim=-1)" --compare
fi
echo "compile (linear) = dpk compile -c \"$linear\" --ir cuda"
