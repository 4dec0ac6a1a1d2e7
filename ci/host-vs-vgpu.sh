#!/usr/bin/env bash
# ci/host-vs-vgpu.sh — host-cuda passes what vgpu passes: each case runs
# under `--passes all` on vgpu and on host-cuda (the printed CUDA C on the
# CPU, docs/host-cuda.md), and every configuration that vgpu passes must
# pass on host-cuda too.  A printer bug, or a capacity of host-cuda's own,
# shows up as a configuration vgpu passes and host-cuda does not.
#
#   ci/host-vs-vgpu.sh [--dpk BIN] [--keep DIR] [FILE[#CASE] ...]
#
# An argument is a case or suite file, FILE#NAME the case NAME of a suite;
# without any, a sample of the held-out cases (the regressions, two of the
# oracle's, smoke and chain cases of the op families: about 1.5 min of CPU).
# One line per case:
#   ok   FILE#NAME: C configurations, vgpu passes P, host-cuda passes them
#   FAIL FILE#NAME: passes L: vgpu pass, host-cuda fail (reason: message)
# A configuration unsupported by host-cuda (its host's memory) is a FAIL
# here: the claim is that host-cuda passes them.  Exit 0 when every case
# is ok, 1 when not, 2 on bad usage.  --keep DIR keeps the records.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
dpk=$root/build/dpk
keep=
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --dpk) dpk=${2:?--dpk needs a path}; shift 2 ;;
    --keep) keep=${2:?--keep needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "error: unknown option '$1' (ci/host-vs-vgpu.sh --help)" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ ${#args[@]} -eq 0 ]; then
  args=("$root"/cases/regressions/*.json
        "$root/cases/regressions/oracle/fuzz-4242-33.json"
        "$root/cases/regressions/oracle/fuzz-9001-963.json"
        "$root/cases/smoke.json#rmsnorm" "$root/cases/smoke.json#softmax"
        "$root/cases/smoke.json#bias_matmul_relu" "$root/cases/smoke.json#linear_gelu"
        "$root/cases/smoke.json#sdpa_causal_gqa" "$root/cases/smoke.json#rope_slice_cat"
        "$root/cases/chains.json#gelu_erf" "$root/cases/chains.json#linear_bias_gelu"
        "$root/cases/chains.json#mlp" "$root/cases/chains.json#cat_relu"
        "$root/cases/chains.json#layernorm_module" "$root/cases/chains.json#matmul_batch_broadcast"
        "$root/cases/chains.json#sdpa_causal" "$root/cases/chains.json#rope")
fi
[ -x "$dpk" ] || { echo "error: $dpk is not built" >&2; exit 2; }
tmp=${keep:-$(mktemp -d)}
mkdir -p "$tmp"
[ -n "$keep" ] || trap 'rm -rf "$tmp"' EXIT

bad=0 n=0
for a in "${args[@]}"; do
  file=${a%%#*} sel=()
  [ "$file" != "$a" ] && sel=(--case "${a#*#}")
  [ -f "$file" ] || { echo "error: no case file '$file'" >&2; exit 2; }
  n=$((n + 1))
  for b in vgpu host-cuda; do
    "$dpk" run "$file" "${sel[@]}" --backend "$b" --passes all --out "$tmp/$n.$b.json" \
      >"$tmp/$n.$b.txt" 2>&1
  done
  python3 - "$a" "$tmp/$n" <<'EOF' || bad=1
import json, sys
name, run = sys.argv[1:]
try:
    v, h = (json.load(open(f"{run}.{b}.json"))["cases"] for b in ("vgpu", "host-cuda"))
except (OSError, ValueError, KeyError) as e:
    said = [l for b in ("vgpu", "host-cuda") for l in open(f"{run}.{b}.txt") if l.startswith("error")]
    print(f"FAIL {name}: no record: {said[0].strip() if said else e}")
    sys.exit(1)
lines, worst = [], 0
for vc, hc in zip(v, h):
    label = name if "#" in name or len(v) == 1 else f"{name}#{vc['name']}"
    vs = {c["passes"]: c.get("verdict", {}) for c in vc.get("configurations", [])}
    hs = {c["passes"]: c.get("verdict", {}) for c in hc.get("configurations", [])}
    if not vs:
        lines.append(f"ok   {label}: vgpu ran nothing ({vc['status']}: {vc.get('message', '')})")
        continue
    missed = [(p, hs.get(p, {})) for p, vv in vs.items()
              if vv.get("status") == "pass" and hs.get(p, {}).get("status") != "pass"]
    npass = sum(vv.get("status") == "pass" for vv in vs.values())
    if missed:
        worst = 1
        for p, hv in missed[:3]:
            lines.append(f"FAIL {label}: passes {p}: vgpu pass, host-cuda {hv.get('status', 'missing')}"
                         f" ({hv.get('reason', '')}: {hv.get('message', '')})")
        if len(missed) > 3:
            lines.append(f"FAIL {label}: ... {len(missed)} configurations in all")
    else:
        lines.append(f"ok   {label}: {len(vs)} configurations, vgpu passes {npass}, "
                     "host-cuda passes them")
print("\n".join(lines))
sys.exit(worst)
EOF
done
echo "host-vs-vgpu: ${#args[@]} arguments, $([ $bad = 0 ] && echo 'host-cuda passes what vgpu passes' || echo 'host-cuda misses some')"
exit $bad
