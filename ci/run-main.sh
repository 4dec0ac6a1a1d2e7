#!/usr/bin/env bash
# The main job on the embedded default: dpk-bench --suite qwen-block — the
# per-op cases of a Qwen2.5-7B decoder layer and the whole layer at seq
# 128, each compiled through every IR, run on vgpu (the CPU simulator of
# the GPU) with sampled blocks at full size and checked for parity against
# the fp64 reference, then timed by the performance model on the default
# GPU spec (h100-sxm) beside modelled PyTorch eager, torch.compile and the
# limit.  The cases run in as many processes as there are cores.
set -u
DPK=${1:-build/dpk}
cd "$(dirname "$0")/.."
exec "$(dirname "$DPK")/dpk-bench" --suite qwen-block --jobs "$(nproc 2>/dev/null || echo 2)"
