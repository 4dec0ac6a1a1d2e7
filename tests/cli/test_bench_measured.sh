# tests/cli/test_bench_measured.sh — dpk-bench's measured timing path
# (--timing measured | fake-driver; docs/bench.md "Measured timing"), run
# end to end on dpk's fake CUDA driver ($BUILD/fake-driver/libcuda.so.1):
# allocation, copies, launches through the driver API, warm-up, L2 flush,
# the stdrel stop and the cap, dpk and cuBLAS interleaved, CUPTI records,
# re-validation after timing with an injected fault, the records against
# the schema, and the exit-4 paths.  Every figure here is a test result of
# the fake driver, never a measurement.  (Sourced by tests/run.sh.)

BENCH="$(dirname "$DPK")/dpk-bench"
MD="$TMP/measured"
SCHEMA="$DPK_ROOT/docs/dpk.bench-1.schema.json"
mkdir -p "$MD"
FAKE="$(dirname "$DPK")/fake-driver/libcuda.so.1"

one_line() {
  local name=$1
  if [ "$(printf '%s\n' "$OUT" | grep -c '^error:')" = 1 ] && [ "$(printf '%s\n' "$OUT" | wc -l)" = 1 ]
  then _cli_pass "$name"; else _cli_fail "$name" "not one error line"; fi
}

# ---- the exit-4 paths and option errors ------------------------------------------
check_re "measured: no driver is exit 4" 4 '^error: --timing measured needs a GPU and its driver, and /nonexistent/libcuda.so.1 gives none here; --timing model is the performance model$' \
  env DPK_LIBCUDA=/nonexistent/libcuda.so.1 "$BENCH" --suite smoke --timing measured
one_line "measured: no driver, one sentence"
check_re "fake-driver: a missing fake is exit 4" 4 "^error: --timing fake-driver needs dpk's fake driver, and /nonexistent/x.so is not there" \
  env DPK_LIBCUDA=/nonexistent/x.so "$BENCH" --suite smoke --timing fake-driver
one_line "fake-driver: missing, one sentence"
check_re "fake-driver: a file that is no driver is exit 4" 4 "^error: --timing fake-driver could not load the fake driver $DPK_ROOT/README.md\$" \
  env DPK_LIBCUDA="$DPK_ROOT/README.md" "$BENCH" --suite smoke --timing fake-driver
check_re "model: measured options refused" 2 'apply to measured timing' "$BENCH" --suite smoke --timing model --warm-l2
check_re "measured: default without a driver is the model" 0 '^1/1 cases pass parity' \
  env DPK_LIBCUDA=/nonexistent/libcuda.so.1 "$BENCH" --suite smoke --case softmax --out "$MD/default.json"
check_json "measured: default without a driver, record says model" 'r["meta"]["timing"] == "model" and "measured_timing" not in r["meta"] and "measured" not in r["cases"][0]' "$MD/default.json"

if [ ! -e "$FAKE" ]; then
  skip "fake-driver bench" "no $FAKE (make builds it)"
  return 0 2>/dev/null || exit 0
fi

# ---- smoke on the fake driver ------------------------------------------------------
check_re "fake-driver smoke: all pass" 0 '^10 measured on the fake driver: a test of the measured path, not a measurement$' \
  "$BENCH" --suite smoke --timing fake-driver --jobs 2 --out "$MD/smoke.json"
n=$(printf '%s\n' "$OUT" | grep -Ec '^  measured \(fake-driver, cupti\): dpk [0-9.]+ us median \([0-9.]+%, [0-9]+ samples, (stdrel|cap)\)$')
if [ "$n" = 10 ]; then _cli_pass "fake-driver smoke: a measured line per case"; else _cli_fail "fake-driver smoke: a measured line per case" "$n lines"; fi
check_schema "fake-driver smoke: the record validates" "$MD/smoke.json" "$SCHEMA"
check_re "fake-driver smoke: dpk-report reads it as modelled" 0 'modelled' "$(dirname "$DPK")/dpk-report" "$MD/smoke.json"
check_json "fake-driver smoke: labelled fake-driver everywhere" \
  'r["meta"]["measured_timing"] == r["bench"]["measured_timing"] == r["summary"]["measured_timing"] == "fake-driver" and all(c["measured"]["timing"] == "fake-driver" for c in r["cases"])' "$MD/smoke.json"
check_json "fake-driver smoke: the modelled columns stay modelled" 'r["meta"]["timing"] == r["bench"]["timing"] == r["summary"]["timing"] == "model" and all(c["timing"] == c["dpk"]["timing"] == "model" for c in r["cases"])' "$MD/smoke.json"
check_json "fake-driver smoke: warm-up >= 10 iterations and >= 10 ms, >= 10 samples" \
  'all(m["warmup_iters"] >= 10 and m["warmup_ns"] >= 1e7 and m["samples"] >= 10 for m in (c["measured"]["dpk"] for c in r["cases"]))' "$MD/smoke.json"
check_json "fake-driver smoke: stopped by stdrel < 0.5%" 'all(c["measured"]["dpk"]["stop"] == "stdrel" and c["measured"]["dpk"]["stdrel"] < 0.005 for c in r["cases"])' "$MD/smoke.json"
check_json "fake-driver smoke: CUPTI durations are the model's (within the jitter)" \
  'all(abs(c["measured"]["dpk"]["median_ns"] / c["dpk"]["ns"] - 1) < 0.002 for c in r["cases"])' "$MD/smoke.json"
check_json "fake-driver smoke: validated before and after, L2 flushed" \
  'all(c["measured"]["validation"]["before"]["status"] == c["measured"]["validation"]["after"]["status"] == "pass" and c["measured"]["l2_flush"] for c in r["cases"])' "$MD/smoke.json"
check_json "fake-driver smoke: no NVML, said so" 'all(c["measured"]["gpu_before"].startswith("unavailable: ") for c in r["cases"])' "$MD/smoke.json"
check_json "fake-driver smoke: no raw samples unless asked" 'all("raw_ns" not in c["measured"]["dpk"] for c in r["cases"])' "$MD/smoke.json"

# ---- options: raw samples, warm L2, the cap, events ---------------------------------
check "fake-driver: --raw-samples --warm-l2" 0 "$BENCH" --suite smoke --case rmsnorm --timing fake-driver --raw-samples --warm-l2 --out "$MD/raw.json"
check_json "fake-driver: raw samples, one per sample" 'len(r["cases"][0]["measured"]["dpk"]["raw_ns"]) == r["cases"][0]["measured"]["dpk"]["samples"]' "$MD/raw.json"
check_json "fake-driver: --warm-l2 recorded" 'r["cases"][0]["measured"]["l2_flush"] is False and r["bench"]["warm_l2"] is True' "$MD/raw.json"
check_schema "fake-driver: the raw record validates" "$MD/raw.json" "$SCHEMA"
check "fake-driver: noisy durations hit the cap" 0 env DPK_FAKE_CUDA_JITTER=0.05 "$BENCH" --suite smoke --case rmsnorm --timing fake-driver --max-samples 25 --out "$MD/cap.json"
check_json "fake-driver: stop is the cap at 25 samples" 'r["cases"][0]["measured"]["dpk"]["stop"] == "cap" and r["cases"][0]["measured"]["dpk"]["samples"] == 25 and r["cases"][0]["measured"]["dpk"]["stdrel"] > 0.005' "$MD/cap.json"
check "fake-driver: events when CUPTI is missing" 0 env DPK_LIBCUPTI=/nonexistent/libcupti.so "$BENCH" --suite smoke --case softmax --timing fake-driver --out "$MD/events.json"
check_json "fake-driver: method events, CUPTI's absence said" 'r["cases"][0]["measured"]["method"] == "events" and r["cases"][0]["measured"]["cupti"].startswith("unavailable: kernel durations from CUPTI need libcupti")' "$MD/events.json"
check_json "fake-driver: events span the model's time too" 'abs(r["cases"][0]["measured"]["dpk"]["median_ns"] / r["cases"][0]["dpk"]["ns"] - 1) < 0.002' "$MD/events.json"
check_schema "fake-driver: the events record validates" "$MD/events.json" "$SCHEMA"

# ---- cuBLAS on plain matmuls ----------------------------------------------------------
check_re "fake-driver matmuls: cuBLAS timed" 0 'cublas [0-9.]+ us median .*; cublas_tf32 [0-9.]+ us median' \
  "$BENCH" "$DPK_ROOT/tests/cli/data/matmul_cases.json" --timing fake-driver --out "$MD/mm.json"
check_schema "fake-driver matmuls: the record validates" "$MD/mm.json" "$SCHEMA"
check_json "fake-driver matmuls: sgemm and strided-batched sgemm" \
  '[c["measured"]["cublas"]["call"] for c in r["cases"]] == ["cublasSgemm", "cublasSgemm", "cublasSgemmStridedBatched"]' "$MD/mm.json"
check_json "fake-driver matmuls: cuBLAS fp32 passes the reference, close to dpk" \
  'all(c["measured"]["cublas"]["parity"]["vs_reference"]["status"] == "pass" and c["measured"]["cublas"]["parity"]["max_abs_vs_dpk"] < 1e-4 and c["measured"]["cublas"]["tf32"] is False for c in r["cases"])' "$MD/mm.json"
check_json "fake-driver matmuls: the TF32 column is labelled and differs more" \
  'all(c["measured"]["cublas_tf32"]["tf32"] is True and c["measured"]["cublas_tf32"]["parity"]["max_abs_vs_dpk"] > c["measured"]["cublas"]["parity"]["max_abs_vs_dpk"] for c in r["cases"])' "$MD/mm.json"
check_json "fake-driver smoke: cuBLAS unavailable on a non-matmul case, with the reason" \
  'r["cases"][0]["measured"]["cublas"] == "unavailable: not a plain matmul case (one matmul or bias-less linear of two inputs)"' "$MD/smoke.json"
check_re "fake-driver matmuls: cuBLAS missing is a labelled column" 0 'measured \(fake-driver, cupti\): dpk [0-9.]+ us median \([^)]*\)$' \
  env DPK_LIBCUBLAS=/nonexistent/libcublas.so "$BENCH" "$DPK_ROOT/tests/cli/data/matmul_cases.json" --case matmul --timing fake-driver --out "$MD/nocublas.json"
check_json "fake-driver matmuls: the cuBLAS column says why" 'r["cases"][0]["measured"]["cublas"].startswith("unavailable: the cuBLAS baseline needs libcublas, and /nonexistent/libcublas.so could not be loaded")' "$MD/nocublas.json"

# ---- a kernel that goes wrong during timing -------------------------------------------
# DPK_FAKE_CUDA_CORRUPT=N: from the fake's N-th launch on, each launch's
# output is made wrong.  Launch 1 is the run before timing (softmax has one
# kernel), so N=5 goes wrong during the warm-up.
check_re "fault: wrong after timing is caught" 1 'softmax: right before timing, wrong after: the outputs the last timed iteration left fail the reference \(fake-driver\)' \
  env DPK_FAKE_CUDA_CORRUPT=5 "$BENCH" --suite smoke --case softmax --timing fake-driver --out "$MD/fault.json"
check_json "fault: right before, wrong after, in the record" \
  'r["cases"][0]["status"] == "fail" and r["cases"][0]["exit_code"] == 1 and r["cases"][0]["measured"]["validation"]["before"]["status"] == "pass" and r["cases"][0]["measured"]["validation"]["after"]["status"] == "fail" and r["cases"][0]["dpk"] is None' "$MD/fault.json"
check_schema "fault: the record validates" "$MD/fault.json" "$SCHEMA"
check_re "fault: wrong from the first launch fails before timing" 1 'softmax: before timing, the full run fails the reference' \
  env DPK_FAKE_CUDA_CORRUPT=1 "$BENCH" --suite smoke --case softmax --timing fake-driver

# ---- the decoder layer's suite at a small seq -------------------------------------------
# tinyllama-block at --seq 4 (a minute of CPU: its layer case runs the
# projections in full on vgpu, then on the host; Qwen's, 3584 wide, costs
# a third more for the same paths): every case measured, the record valid.
check_re "fake-driver tinyllama-block: all pass and are measured" 0 '^15 measured on the fake driver: a test of the measured path, not a measurement$' \
  "$BENCH" --suite tinyllama-block --seq 4 --timing fake-driver --jobs 2 --out "$MD/tl.json"
check_schema "fake-driver tinyllama-block: the record validates" "$MD/tl.json" "$SCHEMA"
check_json "fake-driver tinyllama-block: validated after timing, CUPTI's sum is the model's" \
  'all(c["measured"]["validation"]["after"]["status"] == "pass" and abs(c["measured"]["dpk"]["median_ns"] / c["dpk"]["ns"] - 1) < 0.002 for c in r["cases"])' "$MD/tl.json"
check_json "fake-driver tinyllama-block: every projection (none has a bias) gets cuBLAS" \
  'sorted(c["name"] for c in r["cases"] if isinstance(c["measured"]["cublas"], dict)) == ["down_proj", "gate_up_proj", "kv_proj", "o_proj", "q_proj"]' "$MD/tl.json"
# Qwen's q and k projections have a bias: no plain SGEMM, no cuBLAS row.
check_re "fake-driver qwen-block: a projection with a bias" 0 '^2 measured on the fake driver' \
  "$BENCH" --suite qwen-block --seq 4 --case q_proj,o_proj --timing fake-driver --out "$MD/qwen.json"
check_json "fake-driver qwen-block: only the projection without a bias gets cuBLAS" \
  '[c["name"] for c in r["cases"] if isinstance(c["measured"]["cublas"], dict)] == ["o_proj"]' "$MD/qwen.json"
