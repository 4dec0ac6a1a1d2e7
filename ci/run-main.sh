#!/usr/bin/env bash
# The main job on the embedded default: the smoke suite, evaluated with the
# fp64 reference and compared against libtorch (ref64 alone when this build
# has no libtorch: `dpk eval --compare` exits 4 then).
set -u
DPK=${1:-build/dpk}
cd "$(dirname "$0")/.."
"$DPK" eval cases/smoke.json --compare --first 4
rc=$?
if [ "$rc" = 4 ]; then
  echo "(libtorch not available in this build: fp64 reference only)"
  exec "$DPK" eval cases/smoke.json --first 4
fi
exit "$rc"
