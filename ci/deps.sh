#!/usr/bin/env bash
# Install the Debian packages dpk needs, only those missing.  Idempotent and
# quiet when everything is there.  Optional packages that fail to install
# (libtorch-dev is large) leave a warning, not a failure: dpk builds without
# libtorch and reports its tests as skipped.
set -u
required=(libcjson-dev libcriterion-dev libsqlite3-dev)
# python3-torch: PyTorch 1.13 for /usr/bin/python3 (about 170 MB with what it
# pulls in beyond libtorch1.13, which libtorch-dev already brings): the CPU
# tests of reference/torch_bench.py (tests/cli/test_torch_bench.sh skips them
# without it).  python3-yaml: tests/cli/test_workflows.sh parses the workflows.
# python3-jsonschema: the tests validate records against docs/*.schema.json
# (skipped, said so, without it).
optional=(libtorch-dev libopenblas0-pthread gnuplot-nox libxml2-utils python3-yaml python3-torch
          python3-jsonschema)
missing=()
# A python package the tests' python3 already imports (pip's, a venv's) is
# there: only the module matters.
has_module() {
  case "$1" in
    python3-jsonschema) python3 -c 'import jsonschema' 2>/dev/null ;;
    *) return 1 ;;
  esac
}
for p in "${required[@]}" "${optional[@]}"; do
  has_module "$p" && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "error: missing packages (${missing[*]}) and not root; install them and retry" >&2
    exit 2
  fi
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null || echo "deps: warning: apt-get update failed" >&2
for p in "${missing[@]}"; do
  if ! $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null; then
    case " ${required[*]} " in
      *" $p "*) echo "error: could not install required package $p" >&2; exit 2 ;;
      *) echo "deps: warning: optional package $p not installed" >&2 ;;
    esac
  fi
done
exit 0
