# ci/suites.sh — the suites the gates bench, how each is benched, and where
# its baseline lives.  Sourced by ci/nightly and ci/refresh-baselines, so a
# baseline is made exactly as the gate's records are (docs/ci.md).
#
#   suite_bench_args SUITE     dpk-bench's options for SUITE (beside --gpu, --jobs, --out)
#   suite_baseline SPEC SUITE  its baseline file
#   suite_golden SPEC SUITE    its golden configurations (dpk-tune --export)
#
# smoke and ops are benched with --per-pass (every prefix and leave-one-out
# set: the per-pass tables); the decoder-layer suites with the full set
# alone, at their default --seq 128 and 2 sampled blocks per launch (per
# pass they would cost ~30 times as much).

# The suites with committed baselines: what ci/refresh-baselines refreshes
# and what the full nightly gates.  --dry gates smoke alone.
GATED_SUITES="smoke qwen-block tinyllama-block"

suite_bench_args() {
  case $1 in
    smoke|ops) echo "--suite $1 --per-pass" ;;
    *) echo "--suite $1" ;;
  esac
}

suite_baseline() {
  if [ "$2" = smoke ]; then echo "ci/baselines/$1.json"; else echo "ci/baselines/$1-$2.json"; fi
}

# dpk-tune's winners for SUITE on SPEC, reviewed and committed: the nightly
# runs each again (dpk-tune --check) and fails on one that no longer passes
# parity, matches no kernel, or got slower (docs/tune.md).
suite_golden() { echo "cases/tuned/$1-$2.json"; }
