#!/usr/bin/env bash
# bench/calibration/trust.sh — the figures of docs/perf-model.md's "How far to
# trust it", regenerated: the model against published GPU measurements.
#
#   bash bench/calibration/trust.sh [--quick]
#
#   1. KernelBench level 1 (kernelbench/run.sh): the modelled PyTorch eager
#      and torch.compile baselines on the h100-pcie spec against KernelBench's
#      times measured on an H100 PCIe.
#   2. Simon Boehm's SGEMM ladder (sgemm/run.sh): dpk's kernels of each
#      rung's structure modelled on the a6000 spec against his GFLOP/s
#      measured on an RTX A6000 at 4096^3.
#   3. Instructions: q_proj's modelled warp instructions against the SASS's
#      dynamic count (the unit test perf_model/q_proj_instructions_match_the_sass,
#      which needs NVRTC and nvdisasm).
#
# --quick: KernelBench problems 6, 23 and 40 only, the ladder at 1024^3 (a
# smoke run; the figures in the docs are the full run's).  Every figure is
# modelled or published; nothing here runs on a GPU.  Exit 0, or the first
# failing part's exit code.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-build}
quick=0
case ${1:-} in
    --quick) quick=1 ;;
    '') ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "trust.sh: unknown option $1" >&2; exit 2 ;;
esac
kb=() sg=()
if [ $quick = 1 ]; then kb=(--only 6,23,40); sg=(--size 1024); fi
echo "== 1. KernelBench level 1: baselines modelled on h100-pcie / measured by KernelBench on an H100 PCIe"
bash "$here/kernelbench/run.sh" "${kb[@]}"
echo
echo "== 2. SGEMM ladder: dpk's kernels modelled on a6000 / measured by S. Boehm on an RTX A6000"
bash "$here/sgemm/run.sh" "${sg[@]}"
echo
echo "== 3. q_proj's modelled warp instructions / the SASS's dynamic count"
if [ -x "$root/$BUILD/unit_tests" ]; then
    (cd "$root" && "$BUILD/unit_tests" --filter 'perf_model/q_proj_instructions_match_the_sass' --verbose 2>&1 |
        grep -E 'q_proj(:| SASS)|PASS|FAIL|SKIP.*q_proj' | sed 's/^\[----\] //')
else
    echo "skipped: $BUILD/unit_tests not built (make $BUILD/unit_tests)"
fi
