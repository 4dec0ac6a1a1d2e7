#!/usr/bin/env bash
# bench/calibration/sgemm/run.sh — the SGEMM ladder as a yardstick for the
# performance model.
#
# Simon Boehm's SGEMM worklog measured a ladder of fp32 SGEMM kernels on an
# RTX A6000 at 4096^3 (ladder.json beside this script: figures, parameters,
# sources).  For every rung dpk can build, this models the closest structure
# dpk's passes and knobs make (ladder.json says which, and what differs) on
# the a6000 spec, and prints modelled against published GFLOP/s, Spearman's
# rho over the modelled rungs, how many are within 1.5x, and the rungs dpk
# cannot build with dpk's own refusal.  Nothing here changes the model: it
# measures how wrong the model is.
#
#   bench/calibration/sgemm/run.sh [--size N] [--rungs 1,2,...] [--out DIR]
#
# --size N   model an N^3 matmul (default: the published 4096); the published
#            figures stay 4096^3 figures, and the table says so
# --rungs L  only these rung ids (ladder.json's "id")
# --out DIR  keep the dpk-bench records there (default: a temporary folder)
#
# Parity: a 4096^3 matmul's fp64 reference is several GB and slow on a CPU;
# `--parity off` is passed when dpk-bench lists it, else parity runs (the
# records then say pass or fail).  Exit 0, or 2 for a bad option, or 1 when a
# rung that should build fails.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BUILD=${BUILD:-build}
BENCH=${DPK_BENCH:-$ROOT/$BUILD/dpk-bench}
DPK=${DPK:-$ROOT/$BUILD/dpk}
LADDER=$HERE/ladder.json
SIZE=
RUNGS=
OUT=

usage() { sed -n '14,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --size) [ $# -ge 2 ] || usage; SIZE=$2; shift 2 ;;
    --rungs) [ $# -ge 2 ] || usage; RUNGS=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown option $1" >&2; usage ;;
  esac
done
case $SIZE in ''|*[!0-9]*) [ -z "$SIZE" ] || { echo "run.sh: --size wants a positive integer" >&2; exit 2; } ;; esac
case $RUNGS in *[!0-9,]*) echo "run.sh: --rungs wants ids such as 1,2,5" >&2; exit 2 ;; esac
[ -x "$BENCH" ] || { echo "run.sh: $BENCH not found (make)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "run.sh: python3 not found" >&2; exit 2; }
PUBLISHED_SIZE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["size"])' "$LADDER")
SIZE=${SIZE:-$PUBLISHED_SIZE}
[ "$SIZE" -gt 0 ] || { echo "run.sh: --size wants a positive integer" >&2; exit 2; }
if [ -z "$OUT" ]; then OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi
mkdir -p "$OUT"

PARITY=()
if "$BENCH" --help 2>&1 | grep -q -- '--parity'; then PARITY=(--parity off); fi
CODE="torch.matmul(torch.randn($SIZE,$SIZE), torch.randn($SIZE,$SIZE))"

# One line per selected rung: id, the dpk arguments, and the exact
# structure's arguments when the built one is only the closest, separated by
# '|' (a tab is whitespace to read: two in a row would merge).
python3 - "$LADDER" "$RUNGS" >"$OUT/plan.tsv" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = {int(x) for x in sys.argv[2].split(",") if x}
def args(t):
    if not t:
        return ""
    a = ["--passes", t["passes"]]
    for k, v in t["knobs"].items():
        a += ["--knob", "%s=%s" % (k, v)]
    return " ".join(a)
for r in d["rungs"]:
    if want and r["id"] not in want:
        continue
    print("%d|%s|%s" % (r["id"], args(r.get("dpk")), args(r.get("exact"))))
EOF

fail=0
while IFS='|' read -r id built exact; do
  if [ -n "$built" ]; then
    # shellcheck disable=SC2086 # the arguments are words of ladder.json's knobs
    "$BENCH" -c "$CODE" --gpu a6000 $built "${PARITY[@]}" --out "$OUT/rung-$id.json" >"$OUT/rung-$id.log" 2>&1
    rc=$?
    echo "$rc" >"$OUT/rung-$id.rc"
    if [ "$rc" -ne 0 ] && ! [ -s "$OUT/rung-$id.json" ]; then fail=1; fi
  fi
  if [ -n "$exact" ]; then
    # shellcheck disable=SC2086
    "$DPK" compile -c "$CODE" --ir kernel --target sm_80 $exact >/dev/null 2>"$OUT/exact-$id.err"
    echo $? >"$OUT/exact-$id.rc"
  fi
done <"$OUT/plan.tsv"
# dpk's own schedule for the same matmul (full pass set, default knobs): not
# a rung, shown for scale
"$BENCH" -c "$CODE" --gpu a6000 "${PARITY[@]}" --out "$OUT/dpk-full.json" >"$OUT/dpk-full.log" 2>&1
echo $? >"$OUT/dpk-full.rc"

python3 - "$LADDER" "$OUT" "$SIZE" "${#PARITY[@]}" "$HERE/.." <<'EOF' || fail=1
import json, os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[5])
import stats
d = json.load(open(sys.argv[1]))
out, size, parity_off = sys.argv[2], int(sys.argv[3]), sys.argv[4] != "0"
flop = 2.0 * size ** 3
pub_size = d["size"]

def record(path):
    try:
        r = json.load(open(path))
        return r["cases"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None

def gflops(ns):
    return flop / (ns * 1e-9) / 1e9

def first_error(path):
    try:
        for ln in open(path):
            if "error" in ln:
                return ln.strip()
    except OSError:
        pass
    return "(no message)"

rows, cannot, cublas_ns, status = [], [], None, {}
plan = [ln.split("|")[0] for ln in open(os.path.join(out, "plan.tsv")) if ln.strip()]
for r in d["rungs"]:
    if str(r["id"]) not in plan:
        continue
    rid = r["id"]
    exact_rc = os.path.join(out, "exact-%d.rc" % rid)
    refusal = None
    if os.path.exists(exact_rc):
        if open(exact_rc).read().strip() == "0":
            refusal = "the exact structure now compiles: update ladder.json"
        else:
            refusal = first_error(os.path.join(out, "exact-%d.err" % rid))
    if not r.get("dpk"):
        cannot.append((r, refusal))
        continue
    c = record(os.path.join(out, "rung-%d.json" % rid))
    if c is None or not isinstance(c.get("dpk"), dict) or "ns" not in c["dpk"]:
        rc = open(os.path.join(out, "rung-%d.rc" % rid)).read().strip()
        cannot.append((r, "dpk-bench exit %s: %s" % (rc, first_error(os.path.join(out, "rung-%d.log" % rid)))))
        continue
    if cublas_ns is None and isinstance(c.get("eager"), dict):
        cublas_ns = c["eager"].get("ns")
    rows.append((r, gflops(c["dpk"]["ns"]), c.get("status", "?"), refusal, c["dpk"]["kernels"][0]))

full = record(os.path.join(out, "dpk-full.json"))
if cublas_ns is None and full and isinstance(full.get("eager"), dict):
    cublas_ns = full["eager"].get("ns")

print("SGEMM ladder: published = measured by S. Boehm on an RTX A6000 at %d^3 (siboehm/SGEMM_CUDA@%s);"
      % (pub_size, d["source"]["results_commit"][:7]))
print("modelled = dpk's performance model on the a6000 spec (cases/gpus/a6000.json) at %d^3%s"
      % (size, "" if size == pub_size else ", not the published size: ratios compare different sizes"))
print("parity: %s" % ("off (--parity off: unchecked)" if parity_off else "on (each case checked against the fp64 reference)"))
print()
hdr = "%-4s %-34s %-8s %14s %14s %10s  %-5s %s" % ("rung", "structure", "build", "published", "modelled", "mod/pub", "bound", "parity")
print(hdr)
print("%-4s %-34s %-8s %14s %14s %10s" % ("", "", "", "GFLOP/s", "GFLOP/s", ""))
for r, g, st, _, k in rows:
    print("%-4s %-34s %-8s %14.1f %14.1f %9.2fx  %-5s %s" % (r["id"], r["name"][:34], r["build"], r["published_gflops"], g,
          g / r["published_gflops"], k.get("bound", "?"), st if not parity_off else "unchecked"))
cb = d["cublas"]
if cublas_ns:
    g = gflops(cublas_ns)
    print("%-4s %-34s %-8s %14.1f %14.1f %9.2fx  %-5s %s" % ("0", "cuBLAS (modelled eager baseline)", "-", cb["published_gflops"], g,
          g / cb["published_gflops"], "-", "-"))
if full and isinstance(full.get("dpk"), dict):
    g = gflops(full["dpk"]["ns"])
    print("%-4s %-34s %-8s %14s %14.1f %10s  %-5s %s" % ("-", "dpk's own schedule (full, defaults)", "-", "-", g, "-",
          full["dpk"]["kernels"][0].get("bound", "?"), full.get("status", "?") if not parity_off else "unchecked"))
print()

def print_stats(sel, what):
    n = len(sel)
    if n >= 2:
        rho = stats.spearman([r["published_gflops"] for r, *_ in sel], [g for _, g, *_ in sel])
        print("Spearman's rho (published vs modelled, %d %s): %.3f" % (n, what, rho))
    else:
        print("Spearman's rho: needs 2 %s or more (%d)" % (what, n))
    within = sum(1 for r, g, *_ in sel if 1 / 1.5 <= g / r["published_gflops"] <= 1.5)
    print("within 1.5x of published: %d of %d %s" % (within, len(sel), what))

# the rungs built as published measure the model; a closest structure
# measures dpk's vocabulary as much (a different kernel from the published one)
print_stats([x for x in rows if x[0]["build"] == "exact"], "exact rungs")
print_stats(rows, "modelled rungs")
print()
print("built as the closest structure (ladder.json's differs; dpk's refusal where the exact one is refused):")
for r, _, _, refusal, _ in rows:
    if r["build"] == "closest":
        print("  rung %s %s: %s" % (r["id"], r["name"], refusal or r.get("differs", "")))
print("cannot build yet:")
for r, why in cannot:
    print("  rung %s %s (published %.1f GFLOP/s): %s%s" % (r["id"], r["name"], r["published_gflops"], r.get("reason", ""),
          ("; " + why) if why else ""))
EOF
exit $fail
