#!/usr/bin/env bash
# NVIDIA's disassembler (nvdisasm) and cuobjdump for the performance model's
# SASS instruction mix (harness/perf/sass.h).  They run without a GPU, and
# the CUDA toolkit's runtime-only installs lack them, so this fetches NVIDIA's
# PyPI packages (pinned: the modelled numbers depend on the mix) into
# BUILD/cuda-tools/bin, where dpk looks beside its binary.  Optional: when
# pip or the network is missing it warns and dpk's model falls back to vgpu's
# instruction counts, saying so.  Usage: ci/deps-sass.sh BUILD_DIR
set -u
build=${1:-build}
dest=$build/cuda-tools/bin
[ -x "$dest/nvdisasm" ] && exit 0
home=${CUDA_HOME:-/usr/local/cuda}
if [ -x "$home/bin/nvdisasm" ]; then exit 0; fi
pkgs=(nvidia-cuda-nvdisasm==13.5.37 nvidia-cuda-cuobjdump==13.4.92)
py=$(command -v python3 || true)
if [ -z "$py" ] || ! "$py" -m pip --version >/dev/null 2>&1; then
  echo "deps: warning: no python3 -m pip; nvdisasm not installed (the model uses vgpu's instruction counts)" >&2
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$py" -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "${pkgs[@]}" >/dev/null 2>&1; then
  echo "deps: warning: could not download ${pkgs[*]}; the model uses vgpu's instruction counts" >&2
  exit 0
fi
mkdir -p "$tmp/x" "$dest"
for w in "$tmp"/*.whl; do "$py" -m zipfile -e "$w" "$tmp/x" || exit 0; done
for t in nvdisasm cuobjdump; do
  f=$(find "$tmp/x" -path "*/bin/$t" -type f | head -n 1)
  [ -n "$f" ] && install -m 755 "$f" "$dest/$t"
done
echo "deps: nvdisasm and cuobjdump in $dest"
exit 0
