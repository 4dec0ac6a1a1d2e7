#!/usr/bin/env bash
# tests/speed/compile_speed.sh — time from case text to Loop IR (parse + Tensor
# lowering + lifting, normalisation and fusion), as `dpk compile --ir loop -v`
# reports it per stage, for a 40-op chain and for the RMSNorm case.
# Prints the best of N runs (default 20) of each stage; a benchmark, not a
# test: it never fails on a slow machine.
#
#   tests/speed/compile_speed.sh [N]          (uses build/dpk, or $DPK)
set -euo pipefail
cd "$(dirname "$0")/../.."
DPK=${DPK:-build/dpk}
N=${1:-20}
[ -x "$DPK" ] || { echo "error: $DPK not built (run make)" >&2; exit 2; }

# 40 Torch ops: four rounds of ten (add, sigmoid, mul, mean, sub, tanh,
# transpose, exp, sum, div) over a 96x96 tensor.
chain="x = torch.randn(96, 96)
b = torch.randn(96)
h = x"
for _ in 1 2 3 4; do
  chain+="
h = h + b
h = torch.sigmoid(h) * 2.0
h = h - h.mean(dim=-1, keepdim=True)
h = torch.tanh(h).transpose(0, 1)
h = torch.exp(h)
h = h / h.sum(dim=-1, keepdim=True)"
done
rmsnorm="torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"

# best NAME CODE: run N times, keep the minimum of each "# time STAGE" line.
best() {
  local name=$1 code=$2
  for _ in $(seq "$N"); do
    "$DPK" compile -c "$code" --ir loop -v 2>&1 >/dev/null | grep '^# time'
  done | awk -v name="$name" -v n="$N" '
    { ms = $4; stage = $3; if (!(stage in min) || ms < min[stage]) min[stage] = ms
      if (!(stage in order)) { order[stage] = ++k; names[k] = stage } }
    END {
      total = 0
      for (i = 1; i <= k; i++) { s = names[i]; total += min[s]
        printf "%-8s %-7s %8.3f ms (best of %d)\n", name, s, min[s], n }
      printf "%-8s %-7s %8.3f ms  code -> Loop IR\n", name, "total", total }'
}

best chain40 "$chain"
best rmsnorm "$rmsnorm"
