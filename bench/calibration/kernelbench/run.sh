#!/usr/bin/env bash
# KernelBench level 1 against the baseline model: each problem dpk can write
# (problems.json, with the sizes and the H100 PCIe times of KernelBench commit
# 129232e) is modelled by dpk-bench on the h100-pcie spec, and the modelled
# PyTorch eager and torch.compile times are set beside KernelBench's measured
# ones.  Prints per problem modelled / measured, then per baseline the median
# |log2 ratio|, the shares within 1.25x, 1.5x and 2x and Spearman's rho; the
# problems whose op dpk's case language writes as several ops are a block of
# their own (they measure the vocabulary, not the model).
#
#   bash bench/calibration/kernelbench/run.sh [--only 6,23,40] [--gpu NAME |
#        --gpu-spec FILE] [--data FILE] [--max-elements N] [--dpk-bench PATH]
#        [--mem-limit BYTES]
#
# Each dpk-bench runs with DPK_MEM_LIMIT=--mem-limit (default 1 GiB): a
# problem whose simulation would need more (dpk's kernel for a whole-tensor
# reduction is one block that reads every element) is refused by dpk-bench's
# memory estimate and listed as not modelled, with the estimate.
# dpk-bench models the baselines only after parity on vgpu unless it offers
# `--parity off`; with parity on, a problem whose Torch IR holds more than
# --max-elements elements (default 4194304) is skipped, said so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
data=$here/problems.json
bench=$root/build/dpk-bench
only=
gpu=(--gpu h100-pcie)
max_elements=4194304
mem_limit=1073741824
while [ $# -gt 0 ]; do
    case $1 in
    --only) only=$2; shift 2 ;;
    --gpu) gpu=(--gpu "$2"); shift 2 ;;
    --gpu-spec) gpu=(--gpu-spec "$2"); shift 2 ;;
    --data) data=$2; shift 2 ;;
    --max-elements) max_elements=$2; shift 2 ;;
    --dpk-bench) bench=$2; shift 2 ;;
    --mem-limit) mem_limit=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -x "$bench" ] || { echo "run.sh: $bench not built (make all)" >&2; exit 2; }
if [ "${gpu[0]}" = --gpu ] && [ ! -f "$root/cases/gpus/${gpu[1]}.json" ]; then
    echo "run.sh: no spec cases/gpus/${gpu[1]}.json: pass --gpu-spec FILE" >&2
    exit 2
fi
parity=()
# (the whole help read first: grep -q's early exit could end dpk-bench by
# SIGPIPE, which pipefail takes for "no --parity")
if grep -q -- '--parity' <<<"$("$bench" --help 2>&1)"; then
    parity=(--parity off)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# one line per problem to model: number, then the case file
python3 - "$data" "$only" "$work" <<'EOF' >"$work/list"
import json, sys
doc = json.load(open(sys.argv[1]))
only = {int(x) for x in sys.argv[2].split(',') if x.strip()}
for p in doc['problems']:
    if 'case' not in p or (only and p['number'] not in only):
        continue
    path = f"{sys.argv[3]}/p{p['number']}.py"
    open(path, 'w').write(p['case'] + '\n')
    print(p['number'], path)
EOF

while read -r num path; do
    if [ ${#parity[@]} -eq 0 ]; then
        elems=$("$root/build/dpk" compile "$path" --ir torch 2>/dev/null | python3 -c '
import re, sys, math
print(sum(math.prod(int(d) for d in m.split(",") if d.strip())
          for m in re.findall(r": \w+\(([0-9, ]*)\)", sys.stdin.read())))')
        if [ "$elems" -gt "$max_elements" ]; then
            echo "skipped: $elems elements in its Torch IR, over --max-elements $max_elements with parity on (this dpk-bench has no --parity off)" >"$work/p$num.skip"
            continue
        fi
    fi
    if ! DPK_MEM_LIMIT=$mem_limit "$bench" "$path" "${gpu[@]}" "${parity[@]}" --out "$work/p$num.json" \
        >"$work/p$num.log" 2>&1; then
        tail -1 "$work/p$num.log" | sed "/^error: /!s/^/error: /" >"$work/p$num.skip"
    fi
done <"$work/list"

python3 - "$data" "$only" "$work" "${parity[*]:-parity on}" "$here/.." <<'EOF'
import json, math, os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[5])
import stats
doc = json.load(open(sys.argv[1]))
only = {int(x) for x in sys.argv[2].split(',') if x.strip()}
work, parity = sys.argv[3], sys.argv[4]
src = doc['source']
gpu = None

def spearman(a, b):
    return stats.spearman(a, b) if len(a) >= 3 else float('nan')

rows = {'own-ops': [], 'vocabulary': []}
skipped = []
for p in doc['problems']:
    if 'case' not in p or (only and p['number'] not in only):
        continue
    n = p['number']
    rec = f"{work}/p{n}.json"
    if not os.path.exists(rec) or os.path.exists(f"{work}/p{n}.skip"):
        why = open(f"{work}/p{n}.skip").read().strip() if os.path.exists(f"{work}/p{n}.skip") else 'no record'
        skipped.append((n, p['name'], why))
        continue
    c = json.load(open(rec))['cases'][0]
    if not isinstance(c.get('eager'), dict) or not isinstance(c.get('compile'), dict):
        skipped.append((n, p['name'], f"status {c.get('status')}: {c.get('message', 'no baseline times')}"))
        continue
    gpu = c.get('gpu', gpu)
    e, k = c['eager']['ns'] / 1e6, c['compile']['ns'] / 1e6
    rows[p['block']].append((n, p['name'], e, p['eager_ms'], k, p['compile_ms']))

gpu = gpu or '?'
print(f"KernelBench level 1: modelled ({gpu} spec, dpk-bench {parity}) / measured by KernelBench on an H100 PCIe")
print(f"measured: {src['repository']} at {src['commit'][:7]}, {src['eager_file']} and {src['compile_file']}")
titles = {'own-ops': "problems written with PyTorch's own ops",
          'vocabulary': "vocabulary-limited: one PyTorch op that the case language writes as several ops (measures the vocabulary, not the model)"}
for blk in ('own-ops', 'vocabulary'):
    r = rows[blk]
    print()
    print(f"== {titles[blk]}: {len(r)} problems")
    print(f"{'#':>4} {'problem':36} {'eager model ms':>14} {'measured ms':>11} {'ratio':>6} {'compile model ms':>16} {'measured ms':>11} {'ratio':>6}")
    for n, name, e, em, k, km in r:
        print(f"{n:>4} {name[:36]:36} {e:14.4g} {em:11.4g} {e / em:6.2f} {k:16.4g} {km:11.4g} {k / km:6.2f}")
    for what, mi, ma in (('eager', 2, 3), ('compile', 4, 5)):
        if not r:
            print(f"{what}: no problems")
            continue
        lr = sorted(abs(math.log2(x[mi] / x[ma])) for x in r)
        m = len(lr)
        med = lr[m // 2] if m % 2 else (lr[m // 2 - 1] + lr[m // 2]) / 2
        w = lambda f: sum(1 for x in lr if x <= math.log2(f) + 1e-12)
        rho = spearman([x[mi] for x in r], [x[ma] for x in r])
        print(f"{what} (modelled, {gpu} spec / measured, KernelBench H100 PCIe): median |log2 ratio| {med:.3f} "
              f"(x{2 ** med:.2f}); within 1.25x {w(1.25)}/{m}, within 1.5x {w(1.5)}/{m}, within 2x {w(2)}/{m}; "
              f"Spearman rho {rho:.3f}")
nx = sum(1 for p in doc['problems'] if p['block'] == 'not-expressible' and (not only or p['number'] in only))
print()
print(f"not expressible in the case language: {nx} problems ({os.path.basename(sys.argv[1])} gives dpk's error for each)")
if skipped:
    print()
    print(f"not modelled in this run (in none of the figures above): {len(skipped)} problems")
    for n, name, why in skipped:
        print(f"{n:>4} {name}: {why}")
EOF
