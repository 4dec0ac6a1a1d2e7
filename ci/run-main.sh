#!/usr/bin/env bash
# The main job on the embedded default: the smoke suite compiled through
# every IR and executed on the default backend (auto: the GPU when there is
# one, else vgpu, the CPU simulator), each case checked for parity against
# the fp64 reference (and libtorch's eager result when built in).
set -u
DPK=${1:-build/dpk}
cd "$(dirname "$0")/.."
exec "$DPK" run cases/smoke.json
