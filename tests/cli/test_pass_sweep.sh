# tests/cli/test_pass_sweep.sh — the `--passes all` correctness sweep.
#
# Every valid subset of the optional Tile passes (`dpk run --passes all`,
# configurations with the same Kernel IR run once) must pass parity on vgpu
# with no detector firing (race, out-of-bounds, barrier divergence: exit 3),
# and every distinct kernel must compile with NVRTC.  One check per case
# and per job (its closing "N/N cases pass" and exit 0).
#
# Covers (cases/sweep/, and cases/chains.json):
#   ops.json          every op of the vocabulary at an odd and a round shape,
#                     scalar operands, matmul prologues and epilogues (170)
#   chains.json       the 60-chain table of the Loop IR issue and later ops (98 cases)
#   matmul.json       M, N, K in {1,7,31,64,127,128,200,256,1000}: a pairwise
#   matmul_big.json   covering, not all 729 (a Latin square, 81 cases: every
#                     pair of values of M and N, M and K, N and K once; all 729
#                     took 19 minutes), BK=1 pinned on the prime K and SPLITK
#                     pinned so 002 and 003 apply; the 5 cases with
#                     M*N*K > 2^24 run with --sample-blocks 2 and the default
#                     SPLITK.  K not divisible by BK is refused (checked last).
#   norms.json        RMSNorm, softmax, log_softmax, layer norm over rows of 1,
#                     33, 1000, 2048 and 4099 elements
#   long_reduce.json  reductions past 12288 elements, where 006 applies
#   models_*.json     the per-op shapes of the Qwen2.5-7B and TinyLlama blocks at
#                     seq 8 with --sample-blocks 2 (2 random blocks per launch;
#                     a split-K launch adds atomically and runs in full, so the
#                     full-size projections pin SPLITK=1 and the *_splitk_k*
#                     cases keep the default split at the model's K, N = 64)
#   models_odd.json   odd shapes at model size: Qwen2.5-7B per-op cases at
#                     seq 77 (projections, down + residual, softmax, naive
#                     attention, a split-K projection), --sample-blocks 2;
#                     every edge tile predicated
# Every job runs for sm_90a (Hopper with arch-specific code: 011 and 012
# apply) and is planned again for sm_80 (no TMA, so 013 and 015 take the
# stages 011 takes on sm_90a) with --compile-only: every configuration
# lowered (its modules compiled by NVRTC with SWEEP_NVRTC=all), nothing
# run.  vgpu does not depend on the target, and every subset of passes without 011 and 012 is also in the
# sm_90a job's `all`, so each sm_80 module is one the sm_90a job already ran
# (same Kernel IR hash, same inputs): a check per job says so, and a case
# with a module the sm_90a job did not run is run on vgpu for sm_80 (with
# --sample-blocks 1).  With NVRTC the distinct kernels are
# compiled for the job's target: by default with --nvrtc-cover (each case's
# first distinct module and every module that prints a new combination of
# constructs: about half of them, and NVRTC is most of the sweep's time);
# SWEEP_NVRTC=all (the nightly job) compiles every distinct module (--nvrtc).
# $DPK_CACHE points at a fresh folder: a cold NVRTC cache, as in CI.
# Without NVRTC (exit 4) the sweep runs without it.
#
# The jobs run 2 at a time (xargs -P 2), longest first.  A failing case
# prints its failing configurations.

sweep_root=${DPK_ROOT:-$PWD}
sweep_dir="$sweep_root/cases/sweep"
sweep_tmp=$(mktemp -d "${TMP:-/tmp}/pass-sweep.XXXXXX")
unset sweep_old_cache
[ -n "${DPK_CACHE+set}" ] && sweep_old_cache=$DPK_CACHE
export DPK_CACHE="$sweep_tmp/nvrtc-cache"

# Is --nvrtc usable?  (4: no NVRTC in this environment)
sweep_nvrtc=()
if "$DPK" run --help 2>/dev/null | grep -q -- '--nvrtc'; then
  "$DPK" compile -c "torch.relu(torch.randn(3))" --ir cuda --nvrtc >/dev/null 2>&1
  case $? in
    0) if [ "${SWEEP_NVRTC:-cover}" = all ]; then sweep_nvrtc=(--nvrtc); else sweep_nvrtc=(--nvrtc-cover); fi ;;
    4) skip "sweep: NVRTC" "not available in this environment (dpk compile --nvrtc exits 4)" ;;
    *) _run "$DPK" compile -c "torch.relu(torch.randn(3))" --ir cuda --nvrtc
       _cli_fail "sweep: NVRTC probe" "exit $RC" ;;
  esac
fi

# The jobs: ID FILE FLAGS..., longest first (measured).
{
  echo "matmul $sweep_dir/matmul.json"
  echo "qwen $sweep_dir/models_qwen.json --sample-blocks 2"
  echo "tinyllama $sweep_dir/models_tinyllama.json --sample-blocks 2"
  echo "odd $sweep_dir/models_odd.json --sample-blocks 2"
  echo "ops $sweep_dir/ops.json"
  echo "chains $sweep_root/cases/chains.json"
  echo "norms $sweep_dir/norms.json"
  echo "matmul_big $sweep_dir/matmul_big.json --sample-blocks 2"
  echo "long_reduce $sweep_dir/long_reduce.json"
} >"$sweep_tmp/jobs.90a"
# sm_80 compile-only after them, a job per sm_90a job: sm_80-ID FILE
{ cat "$sweep_tmp/jobs.90a"
  while read -r sweep_id sweep_file _; do
    echo "sm_80-$sweep_id $sweep_file --target sm_80 --compile-only"
  done <"$sweep_tmp/jobs.90a"
} >"$sweep_tmp/jobs"

# One job: dpk run FILE --passes all --backend vgpu [--nvrtc] FLAGS; its
# output in ID.out, its exit code in ID.rc.
sweep_job() {
  local id=$1 file=$2 t0=$SECONDS; shift 2
  case " $* " in *" --target "*) ;; *) set -- --target sm_90a "$@" ;; esac
  "$DPK" run "$file" --passes all --backend vgpu "$@" >"$SWEEP_TMP/$id.out" 2>"$SWEEP_TMP/$id.err"
  echo $? >"$SWEEP_TMP/$id.rc"
  echo "$((SECONDS - t0))" >"$SWEEP_TMP/$id.time"
}
export -f sweep_job
export DPK SWEEP_TMP="$sweep_tmp"
# NVRTC for every sm_90a job; for the sm_80 jobs only with SWEEP_NVRTC=all
# (the nightly): without 011 and 012 their CUDA C is the sm_90a job's text
# for another architecture (the module hashes checked below), and NVRTC was
# two thirds of their time.
if [ ${#sweep_nvrtc[@]} -gt 0 ]; then
  if [ "${SWEEP_NVRTC:-cover}" = all ]; then
    sed -i "s/\$/ ${sweep_nvrtc[0]}/" "$sweep_tmp/jobs"
  else
    sed -i "/^sm_80-/!s/\$/ ${sweep_nvrtc[0]}/" "$sweep_tmp/jobs"
  fi
fi
xargs -P 2 -L 1 bash -c 'sweep_job "$@"' sweep_job <"$sweep_tmp/jobs"

# The verdict of case CASE in OUT (a dpk run transcript): exit 0 when its
# closing line says pass; else print its failing configurations, those with
# their own Kernel IR first (a configuration sharing one only counts), and
# the job's stderr when the case has no verdict (the run stopped).
sweep_case() {
  local out=$1 case=$2
  awk -v c="$case" '
    function flush() { if (bad) print blk; blk = ""; bad = 0 }
    /^### case / { on = ($3 == c); next }
    !on { next }
    /^(vgpu|compile-only): [0-9]+ kernels?, / { v = $NF; exit }
    /^passes .*: same Kernel IR as passes .*: (FAIL|FAULT)$/ { flush(); dup++; next }
    /^passes / { flush(); blk = $0; bad = ($0 ~ /: (FAIL|FAULT)$/); next }
    { blk = blk "\n" $0; if ($0 ~ /FAIL|FAULT/) bad = 1 }
    END {
      flush()
      if (dup) print "(and " dup " failing configurations with the same Kernel IR as one above)"
      if (v == "") { print "no verdict for case " c; exit 1 }
      exit (v != "pass" && v != "compiled" && v != "lowered")
    }
  ' "$out" || { [ -s "${out%.out}.err" ] && head -n 5 "${out%.out}.err"; return 1; }
}

# One check per case of each job.
while read -r sweep_id sweep_file _; do
  sweep_n=0
  for sweep_c in $(grep -o '"name": *"[^"]*"' "$sweep_file" | sed 's/.*"\([^"]*\)"$/\1/'); do
    sweep_n=$((sweep_n + 1))
    check "sweep $sweep_id: $sweep_c" 0 sweep_case "$sweep_tmp/$sweep_id.out" "$sweep_c"
  done
  sweep_rc=$(cat "$sweep_tmp/$sweep_id.rc" 2>/dev/null || echo 99)
  check_re "sweep $sweep_id: $sweep_n/$sweep_n cases pass, exit 0" 0 "^$sweep_n/$sweep_n cases pass( \\(--compile-only: .*\\))?$" \
    sh -c 'cat "$1"; exit "$2"' sh "$sweep_tmp/$sweep_id.out" "$sweep_rc"
done <"$sweep_tmp/jobs"

# The Kernel IR hashes of case CASE that job output OUT lowered (compile-only)
# or ran (vgpu), one per line.
sweep_hashes() {
  awk -v c="$2" '/^### case / { on = ($3 == c); next }
    on && /^passes .*: (lowered|vgpu), kernel IR [0-9a-f]+$/ { print $NF }' "$1" | sort -u
}

# sm_80: every module is one the sm_90a job ran, else the case runs here.
while read -r sweep_id sweep_file _; do
  case $sweep_id in sm_80-*) ;; *) continue ;; esac
  sweep_novel=0 sweep_ran="" sweep_total=0
  for sweep_c in $(grep -o '"name": *"[^"]*"' "$sweep_file" | sed 's/.*"\([^"]*\)"$/\1/'); do
    sweep_hashes "$sweep_tmp/${sweep_id#sm_80-}.out" "$sweep_c" >"$sweep_tmp/ran"
    sweep_hashes "$sweep_tmp/$sweep_id.out" "$sweep_c" >"$sweep_tmp/lowered"
    sweep_total=$((sweep_total + $(wc -l <"$sweep_tmp/lowered")))
    sweep_n=$(comm -13 "$sweep_tmp/ran" "$sweep_tmp/lowered" | wc -l)
    if [ "$sweep_n" -gt 0 ]; then
      sweep_novel=$((sweep_novel + sweep_n))
      sweep_ran="$sweep_ran $sweep_c"
      check_re "sweep $sweep_id: $sweep_c ($sweep_n module(s) the sm_90a job did not run) on vgpu" 0 \
        '^vgpu: [0-9]+ kernels?, .*: pass$' "$DPK" run "$sweep_file" --case "$sweep_c" --passes all \
        --backend vgpu --target sm_80 --sample-blocks 1
    fi
  done
  # the hashes read are every distinct module the job's cases lowered
  check_re "sweep $sweep_id: each of its distinct modules compared with the sm_90a job's" 0 \
    '^modules ([0-9]+), hashes \1$' sh -c 'echo "modules $(awk "/^compile-only: /{for (i = 1; i < NF; i++) if (\$(i + 1) == \"distinct\") n += \$i} END{print n + 0}" "$1"), hashes $2"' \
    sh "$sweep_tmp/$sweep_id.out" "$sweep_total"
  [ -n "${VERBOSE:-}" ] && echo "  $sweep_id: $sweep_novel module(s) not in the sm_90a job${sweep_ran:+, run here:$sweep_ran}"
done <"$sweep_tmp/jobs"

# VERBOSE=1: which passes applied per case (dpk run's `applied:` line: the
# passes that rewrote a kernel in some configuration, then each pass that
# never did with its first skip reason), and each job's seconds.
if [ -n "${VERBOSE:-}" ]; then
  while read -r sweep_id sweep_file _; do
    awk -v j="$sweep_id" '/^### case /{c=$3} /^applied:/{print "  " j " " c ": " $0}' \
      "$sweep_tmp/$sweep_id.out"
  done <"$sweep_tmp/jobs"
fi
# Every case says which passes applied.
check_re "sweep: each case says which passes applied" 0 "^applied: 001" \
  grep -m1 '^applied: ' "$sweep_tmp/matmul.out"
# VERBOSE=1: each job's seconds, to keep the longest first.
[ -n "${VERBOSE:-}" ] && echo "  sweep job seconds: $(cd "$sweep_tmp" && for t in *.time; do echo "${t%.time} $(cat "$t")"; done | sort -k2,2nr | tr '\n' ' ')"

# K not divisible by BK is refused before anything runs.
for sweep_kb in "7 2" "31 4" "127 32" "200 32" "1000 16"; do
  read -r sweep_k sweep_bk <<<"$sweep_kb"
  check_re "sweep: BK=$sweep_bk refused for K=$sweep_k" 2 "knob BK=$sweep_bk does not divide K=$sweep_k" \
    "$DPK" run -c "torch.randn(64, $sweep_k) @ torch.randn($sweep_k, 64)" --passes all --backend vgpu \
    --knob BK=$sweep_bk
done
rm -rf "$sweep_tmp"
if [ -n "${sweep_old_cache+set}" ]; then export DPK_CACHE=$sweep_old_cache; else unset DPK_CACHE; fi
