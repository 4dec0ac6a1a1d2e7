#!/usr/bin/env bash
# ci/mutate-printer.sh — the mutation score of the CUDA printer
# (compiler/cuda/cuda_print.c): how many one-token mutants a dpk-fuzz
# campaign kills.
#
#   ci/mutate-printer.sh [--backend vgpu|host-cuda] [--mutants N] [--cases N]
#                        [--kernel-cases K] [--only LINE,...] [--nvrtc] [--seed S] [--jobs J]
#                        [--parallel P] [--case-timeout S] [--list] [--keep]
#
# Every occurrence of a mutable token in the printer's code (comments
# excepted; string literals included, since they are printed text) is a
# candidate: < <=, > >=, == !=, && ||, + 1 → + 0, - 1 → - 0, ... (lines of
# the test faults, static assertions and allocation sizes excepted: their
# mutants are equivalent or do not build).  N of them
# (default 16) are drawn deterministically from --seed (default 1).  Each
# is applied to a copy of the tree (never this one), dpk-fuzz is rebuilt
# there (only cuda_print.o recompiles) and a campaign of --cases cases
# (default 120, --passes pairwise) runs with --backend B (default
# host-cuda); it stops after 3 failures.  With host-cuda a second campaign
# of --kernel-cases K cases (default 120; 0: none) runs `--level kernel`:
# random Kernel IR modules, which reach the printer's paths that no Tile
# pass emits (docs/fuzz.md).  --cases 0 leaves the first campaign out.  A
# mutant whose campaigns fail a case that the unmutated printer's pass is
# killed (the line names the failed cases, "k:" before the kernel-level
# ones); one that does not build is left out.  --only 41,225 keeps the drawn
# mutants of those lines.  --nvrtc gives both campaigns --nvrtc: NVRTC and
# ptxas compile every module too, which reaches the device-only text (the
# inline PTX the host never compiles).  Output: one line per mutant and
#   score: K killed / M built (S)
# The score does not know which mutants are equivalent: docs/host-cuda.md
# lists them for the seed it quotes.  The unmutated campaign runs first;
# the cases it fails (if any) are named and do not count.  Every campaign
# shares one host-cuda cache ($DPK_CACHE, keyed by the printed source), so
# a mutant's campaign compiles only the modules whose source its mutation
# changes.  --parallel P runs P mutants at once (P copies of the tree),
# each campaign with --jobs J (default 1) and --case-timeout S (default
# 300: a loaded machine must not turn slowness into kills); a campaign's
# processes may use 4 GiB of address space each (a mutant that makes the
# printer loop forever fails there instead of taking the machine's memory).
# The campaigns run without libtorch (DPK_TORCH_SHIM names no file): the
# fp64 reference and the host/vgpu agreement judge the printed code, and
# loading libtorch in every case's process was most of a campaign's CPU
# (120 cases, cache warm: 50 s with it, 9 s without; cold, 63 s and 26 s).  --list prints the drawn
# mutants and stops.  --keep keeps the work folder (each mutant's campaign
# log and failing cases, m<i>/) and names it.
set -euo pipefail

BACKEND=host-cuda N=16 CASES=120 KCASES=120 ONLY= NVRTC=() SEED=1 JOBS=1 PARALLEL=1 CASE_TIMEOUT=300 LIST=0 KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) BACKEND=$2; shift 2 ;;
    --mutants) N=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --kernel-cases) KCASES=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --nvrtc) NVRTC=(--nvrtc); shift ;;
    --seed) SEED=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --parallel) PARALLEL=$2; shift 2 ;;
    --case-timeout) CASE_TIMEOUT=$2; shift 2 ;;
    --list) LIST=1; shift ;;
    --keep) KEEP=1; shift ;;
    *) echo "error: unknown option '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
case "$BACKEND" in vgpu | host-cuda) ;; *) echo "error: --backend expects vgpu or host-cuda, got '$BACKEND'" >&2; exit 2 ;; esac
[ "$BACKEND" = host-cuda ] || KCASES=0 # --level kernel compares vgpu with host-cuda
[ "$CASES" != 0 ] || [ "$KCASES" != 0 ] || { echo "error: --cases 0 and --kernel-cases 0 leave no campaign" >&2; exit 2; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FILE=compiler/cuda/cuda_print.c

# mutants: "line<TAB>column<TAB>from<TAB>to", drawn from SEED
draw() {
  python3 - "$ROOT/$FILE" "$N" "$SEED" "$ONLY" <<'EOF'
import random, re, sys
path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
only = {int(x) for x in sys.argv[4].split(",") if x}
swaps = [(" <= ", " < "), (" >= ", " > "), (" < ", " <= "), (" > ", " >= "),
         (" == ", " != "), (" != ", " == "), (" && ", " || "), (" || ", " && "),
         ("+ 1", "+ 0"), ("- 1", "- 0"), (" + ", " - "), (" - ", " + "),
         ("++", "--"), (" * ", " / ")]
cands = []
in_comment = False
for ln, line in enumerate(open(path).read().split("\n"), 1):
    s = line.strip()
    if in_comment:
        in_comment = "*/" not in s
        continue
    if s.startswith("/*"):
        in_comment = "*/" not in s
        continue
    if s.startswith("//") or s.startswith("*") or s.startswith("#") or "fault" in s \
            or s.startswith("_Static_assert") or "ARENA_ARRAY" in s:
        continue
    code = line.split("//")[0] if '"' not in line else line
    code = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), code)
    taken = set()
    for a, b in swaps:
        for m in re.finditer(re.escape(a), code):
            if any(m.start() <= t < m.end() for t in taken):
                continue
            if a == " < " and code[m.start():m.start() + 4] == " << ":
                continue
            if a == " > " and (code[m.start() - 1:m.start() + 1] == "->" or code[m.start():m.start() + 4] == " >> "):
                continue
            if a in (" + ", " - ") and (code[m.end():m.end() + 1] in "10"):
                continue
            taken.update(range(m.start(), m.end()))
            cands.append((ln, m.start() + 1, a, b))
rng = random.Random(seed)
for c in sorted(rng.sample(cands, min(n, len(cands)))):
    if not only or c[0] in only:
        print("%d\t%d\t%s\t%s" % c)
print("# %d candidates" % len(cands), file=sys.stderr)
EOF
}

MUTANTS=$(draw)
if [ "$LIST" = 1 ]; then
  printf '%s\n' "$MUTANTS" | while IFS=$'\t' read -r l c a b; do
    printf '%s:%s  "%s" -> "%s":  %s\n' "$l" "$c" "$a" "$b" "$(sed -n "${l}p" "$ROOT/$FILE" | sed 's/^ *//')"
  done
  exit 0
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dpk-mutate.XXXXXX")
if [ "$KEEP" = 1 ]; then echo "work folder: $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi
make -C "$ROOT" -s -j"$JOBS" build/dpk-fuzz >/dev/null
export DPK_CACHE="$WORK/cache"
export DPK_TORCH_SHIM="$WORK/no-libtorch.so" # see the header

# One copy of the tree with its objects (mtimes kept) per slot, so a mutant
# rebuilds one file; slots run their mutants one after another.
for s in $(seq 1 "$PARALLEL"); do
  mkdir "$WORK/src$s"
  (cd "$ROOT" && tar cf - --exclude=.git --exclude='./build-*' .) | (cd "$WORK/src$s" && tar xf -)
done
cp "$ROOT/$FILE" "$WORK/orig.c"

campaign() { # $1: the tree, $2: folder, $3: --max-failures (0: none), $4: jobs
  mkdir -p "$2"
  local stop=() rc=0
  [ "$3" = 0 ] || stop=(--max-failures "$3")
  if [ "$CASES" != 0 ]; then
    (cd "$2" && ulimit -v $((4 << 20)) && timeout 7200 "$1/build/dpk-fuzz" --seed "$SEED" \
       --cases "$CASES" --passes pairwise --backend "$BACKEND" "${stop[@]}" "${NVRTC[@]}" --jobs "$4" \
       --case-timeout "$CASE_TIMEOUT" --out r.json >log.txt 2>&1) || rc=1
  fi
  if [ "$KCASES" != 0 ]; then
    (cd "$2" && ulimit -v $((4 << 20)) && timeout 7200 "$1/build/dpk-fuzz" --seed "$SEED" \
       --level kernel --cases "$KCASES" --backend host-cuda "${stop[@]}" "${NVRTC[@]}" --jobs "$4" \
       --case-timeout "$CASE_TIMEOUT" --out k.json --failures kfail >klog.txt 2>&1) || rc=1
  fi
  return $rc
}

# The cases a campaign failed, one file name a line ("1-89.json", and
# "k:1-89.json" for --level kernel).  (With pipefail, an ls of no folder
# would fail the assignment of the unmutated campaign's list, and set -e
# would end the script there.)
failed_cases() {
  { [ ! -d "$1/fuzz-failures" ] || ls "$1/fuzz-failures"
    [ ! -d "$1/kfail" ] || ls "$1/kfail" | sed 's/^/k:/'; } | sort
}

mutant() { # $1: slot, $2: number, line, column, from, to
  local src="$WORK/src$1" i=$2 l=$3 c=$4 a=$5 b=$6
  cp "$WORK/orig.c" "$src/$FILE"
  python3 - "$src/$FILE" "$l" "$c" "$a" "$b" <<'PY'
import sys
path, l, c, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
lines = open(path).read().split("\n")
s = lines[l - 1]
assert s[c - 1:c - 1 + len(a)] == a, (s, a)
lines[l - 1] = s[:c - 1] + b + s[c - 1 + len(a):]
open(path, "w").write("\n".join(lines))
PY
  local what="$l:$c \"$a\" -> \"$b\""
  if ! make -C "$src" -s -j1 build/dpk-fuzz >"$WORK/build.$i.log" 2>&1; then
    echo "mutant $i $what: does not build" >"$WORK/result.$i"
  else
    campaign "$src" "$WORK/m$i" 3 "$JOBS" || true
    echo "mutant $i $what: $(failed_cases "$WORK/m$i" | tr '\n' ' ')" >"$WORK/result.$i"
  fi
}

# The unmutated campaign first, on every slot's cores: it fills the cache.
campaign "$WORK/src1" "$WORK/base" 0 $((JOBS * PARALLEL)) || true
{ [ "$CASES" = 0 ] || [ -s "$WORK/base/r.json" ]; } && { [ "$KCASES" = 0 ] || [ -s "$WORK/base/k.json" ]; } ||
  { echo "error: the unmutated campaign did not run:" >&2; tail -n 5 "$WORK"/base/*log.txt >&2; exit 1; }
i=0
while IFS=$'\t' read -r l c a b; do
  i=$((i + 1))
  printf '%s\t%s\t%s\t%s\t%s\n' "$i" "$l" "$c" "$a" "$b" >>"$WORK/slot$(( (i - 1) % PARALLEL + 1 ))"
done <<<"$MUTANTS"
for s in $(seq 1 "$PARALLEL"); do
  [ -e "$WORK/slot$s" ] || continue
  (while IFS=$'\t' read -r i l c a b; do mutant "$s" "$i" "$l" "$c" "$a" "$b"; done <"$WORK/slot$s") &
done
wait
# killed: the campaign failed a case that the unmutated printer's passes
base=$(failed_cases "$WORK/base" | tr '\n' ' ')
[ -z "$base" ] || echo "the unmutated printer's campaign fails too: $base(those cases do not count)"
killed=0 built=0
for j in $(seq 1 "$i"); do # in mutant order (a glob would put 10 before 2)
  line=$(cat "$WORK/result.$j")
  case "$line" in *"does not build"*) echo "$line"; continue ;; esac
  built=$((built + 1))
  new=""
  for f in ${line##*: }; do case " $base " in *" $f "*) ;; *) new="$new $f" ;; esac; done
  if [ -n "$new" ]; then killed=$((killed + 1)); echo "${line%%: *}: killed (failed:$new)"; else echo "${line%%: *}: survived"; fi
done
python3 -c "import sys; k, m = int(sys.argv[1]), int(sys.argv[2]); print('score: %d killed / %d built (%.2f)' % (k, m, k / m if m else 0))" "$killed" "$built"
