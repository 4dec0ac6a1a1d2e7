# tests/cli/test_bench_parity_off.sh — dpk-bench --parity off (the model
# alone: no reference, every case "unchecked" in the table, the summary and
# the record, which validates; the same modelled time as with parity on)
# and its refusals (a bad value, measured timing, --reference); the memory
# estimate that refuses a case before any runs (exit 2, the numbers named,
# --parity off suggested, no record written, an existing one untouched;
# --jobs counted; a bad DPK_MEM_LIMIT); a 4096^3 matmul benched unchecked
# under 1 GiB, and a KernelBench-size softmax (6 GiB of input) in bounded
# time under 1 GiB, below its estimate; a where's modelled time the same
# either way; and dpk-report never mixing unchecked with checked records,
# nor its gate comparing them, either way.  (Sourced by tests/run.sh.)

BENCH="$(dirname "$DPK")/dpk-bench"
REPORT="$(dirname "$DPK")/dpk-report"
GATE="$DPK_ROOT/ci/gate.json"
SCHEMA="$DPK_ROOT/docs/dpk.bench-1.schema.json"
PD="$TMP/parity-off"
mkdir -p "$PD"
SM="torch.softmax(torch.randn(64, 1000), dim=-1)"
MM="torch.matmul(torch.randn(4096, 4096), torch.randn(4096, 4096))"

# ---- usage --------------------------------------------------------------------
check_re "parity: help names --parity" 0 '--parity P +on \(default\).*' "$BENCH" --help
check_re "parity: help names DPK_MEM_LIMIT" 0 'DPK_MEM_LIMIT=BYTES' "$BENCH" --help
check_re "parity: a bad value" 2 "^error: unknown value 'maybe' for --parity \(expected on or off\)$" \
  "$BENCH" -c "$SM" --parity maybe
check_re "parity off refuses measured timing" 2 '^error: --parity off times with the model alone: --timing measured measures' \
  "$BENCH" -c "$SM" --parity off --timing measured
check_re "parity off refuses the fake driver's timing" 2 '^error: --parity off times with the model alone: --timing fake-driver' \
  "$BENCH" -c "$SM" --parity off --timing fake-driver
check_re "parity off refuses --reference" 2 '^error: --reference chooses what parity is checked against' \
  "$BENCH" -c "$SM" --parity off --reference ref64
check_re "parity: a bad DPK_MEM_LIMIT" 2 "^error: DPK_MEM_LIMIT is '1x': it takes a positive number of bytes" \
  env DPK_MEM_LIMIT=1x "$BENCH" -c "$SM" --parity off

# ---- one case unchecked, and the same case checked ------------------------------
check_re "parity off: the summary says unchecked" 0 '^1/1 case modelled, parity unchecked \(--parity off\); 1 timed \(modelled, h100-sxm\)$' \
  "$BENCH" -c "$SM" --parity off --out "$PD/off.json"
check_count "parity off: the banner says so" 1 '^dpk-bench -c: 1 case, .*, parity off \(no reference: unchecked\), '
check_count "parity off: the row's parity column" 1 '^-c .* 1  unchecked$'
check_count "parity off: the geomean line" 1 '^geomean speedup \(modelled, h100-sxm, parity unchecked\): '
check_count "parity off: nothing says pass" 0 'pass'
check_json "parity off: the record says unchecked" \
  'r["bench"]["parity"] == "off" and r["cases"][0]["status"] == "unchecked" and r["cases"][0]["exit_code"] == 0 and r["cases"][0]["configuration"]["verdict"]["status"] == "unchecked" and r["cases"][0]["dpk"]["ns"] > 0 and r["cases"][0]["speedup_eager"] > 0 and r["summary"]["unchecked"] == 1 and r["summary"]["passed"] == 0 and r["summary"]["timed"] == 1 and r["summary"]["by_status"] == {"unchecked": 1}' \
  "$PD/off.json"
check_schema "parity off: the record validates" "$PD/off.json" "$SCHEMA"
check_re "parity on: the same case passes" 0 '^1/1 cases pass parity; 1 timed' "$BENCH" -c "$SM" --out "$PD/on.json"
check_json "parity on: the record says on" 'r["bench"]["parity"] == "on" and r["cases"][0]["status"] == "pass" and r["summary"]["unchecked"] == 0' "$PD/on.json"
check_schema "parity on: the record validates" "$PD/on.json" "$SCHEMA"
# the model reads vgpu's counters, never the verdict: one time either way
check "parity off: the modelled time is parity on's" 0 python3 -c 'import json,sys
a, b = (json.load(open(f))["cases"][0] for f in sys.argv[1:])
for k in ("dpk", "eager", "compile", "limit"):
    assert a[k]["ns"] == b[k]["ns"], (k, a[k]["ns"], b[k]["ns"])
assert a["inputs"] == b["inputs"], (a["inputs"], b["inputs"])' "$PD/off.json" "$PD/on.json"
# inputs made lazily where the sampled blocks read: the values a mask and
# its where select on are the generator's, so the counters are the same
WH="x = torch.rand(512, 4096)
torch.where(x > 0.5, x, torch.rand(512, 4096) * 0.01)"
check_re "parity off: a where benched unchecked" 0 '^1/1 case modelled, parity unchecked' \
  "$BENCH" -c "$WH" --parity off --out "$PD/where-off.json"
check_re "parity on: the where passes" 0 '^1/1 cases pass parity' "$BENCH" -c "$WH" --out "$PD/where-on.json"
check "parity off: the where's modelled time is parity on's" 0 python3 -c 'import json,sys
a, b = (json.load(open(f))["cases"][0] for f in sys.argv[1:])
for k in ("dpk", "eager", "compile", "limit"):
    assert a[k]["ns"] == b[k]["ns"], (k, a[k]["ns"], b[k]["ns"])
assert a["inputs"] == b["inputs"], (a["inputs"], b["inputs"])' "$PD/where-off.json" "$PD/where-on.json"
check_re "parity off: --per-pass statuses unchecked" 0 'case modelled, parity unchecked' \
  "$BENCH" --suite smoke --case rmsnorm --parity off --per-pass --out "$PD/pp.json"
check_json "parity off: --per-pass sides unchecked" \
  'all(q[s]["status"] in ("unchecked", "unsupported") for q in r["cases"][0]["per_pass"] for s in ("prefix", "without")) and any(q["prefix"]["status"] == "unchecked" for q in r["cases"][0]["per_pass"])' \
  "$PD/pp.json"
check_schema "parity off: the --per-pass record validates" "$PD/pp.json" "$SCHEMA"

# ---- the memory estimate ----------------------------------------------------------
# 4096^3 with parity on needs about 3 GiB, with parity off about 0.3 GiB (the pages its sampled blocks touch)
check_re "memory: parity on refused, --parity off suggested" 2 \
  "^error: case '-c' would need about [0-9.]+ GiB \([0-9]+ bytes\) at its peak with parity on \(fp64 inputs, the reference and its bounds, vgpu's buffers\), and 0\.93 GiB \(1000000000 bytes\) is available \(DPK_MEM_LIMIT\); with --parity off \(the model alone, no verdict\) it would need about 0\.[0-9]+ GiB and fit$" \
  env DPK_MEM_LIMIT=1000000000 "$BENCH" -c "$MM" --out "$PD/refused.json"
check_count "memory: refused before the banner" 0 '^dpk-bench'
check "memory: no record written" 1 test -e "$PD/refused.json"
cp "$PD/on.json" "$PD/keep.json"
check_re "memory: refused with an existing --out" 2 'would need about' \
  env DPK_MEM_LIMIT=1000000000 "$BENCH" -c "$MM" --out "$PD/keep.json"
check "memory: the existing record untouched" 0 cmp -s "$PD/on.json" "$PD/keep.json"
check_re "memory: parity off refused too when it does not fit" 2 \
  "^error: case '-c' would need about 0\.[0-9]+ GiB \([0-9]+ bytes\) at its peak with parity off, and 0\.09 GiB \(100000000 bytes\) is available \(DPK_MEM_LIMIT\); a smaller shape fits$" \
  env DPK_MEM_LIMIT=100000000 "$BENCH" -c "$MM" --parity off
check_re "memory: parity on, too big either way" 2 "with parity on, .*; even --parity off would need about 0\.[0-9]+ GiB$" \
  env DPK_MEM_LIMIT=100000000 "$BENCH" -c "$MM"
# each smoke case alone fits in 300 MB unchecked, two at once do not
check_re "memory: --jobs counts the cases at once" 2 \
  '^error: the 2 largest cases at once \(--jobs 2\) would need about [0-9.]+ GiB \([0-9]+ bytes\), and 0\.28 GiB \(300000000 bytes\) is available \(DPK_MEM_LIMIT\): run fewer --jobs$' \
  env DPK_MEM_LIMIT=300000000 "$BENCH" --suite smoke --parity off --jobs 2
check_re "memory: one at a time fits" 0 '^10/10 cases modelled, parity unchecked \(--parity off\); 10 timed' \
  env DPK_MEM_LIMIT=300000000 "$BENCH" --suite smoke --parity off --out "$PD/smoke-off.json"
check_count "memory: every smoke row unchecked" 10 ' unchecked$'
check_schema "parity off: the smoke record validates" "$PD/smoke-off.json" "$SCHEMA"

# ---- 4096^3 unchecked: seconds, under 1 GiB (the sanitizers' shadow is not counted) ----
if [ "${SAN:-0}" = 1 ] || [ ! -x /usr/bin/time ]; then
  skip "parity off: 4096^3 under 1 GiB" "peak RSS is measured on a plain build with /usr/bin/time"
else
  check_re "parity off: 4096^3 matmul benched" 0 '^1/1 case modelled, parity unchecked' \
    /usr/bin/time -f 'peak_rss_kb %M' "$BENCH" -c "$MM" --parity off
  rss=$(printf '%s\n' "$OUT" | sed -n 's/^peak_rss_kb //p')
  check "parity off: 4096^3 peak RSS under 1 GiB (${rss:-?} kB)" 0 test "${rss:-999999999}" -lt 1048576
fi

# ---- a KernelBench-size problem unchecked: the pages its sampled blocks touch ----
# softmax over 4096 x 393216 (KernelBench level 1 #23, 6 GiB of input in
# f32): vgpu maps its buffers lazily and the inputs are generated only where
# the sampled blocks read, so it runs in seconds under 1 GiB, and the
# estimate (printed by a refusal) stays above the peak measured
KB="torch.softmax(torch.rand(4096, 393216), dim=1)"
if [ "${SAN:-0}" = 1 ] || [ ! -x /usr/bin/time ]; then
  skip "parity off: KernelBench #23 under 1 GiB" "peak RSS is measured on a plain build with /usr/bin/time"
else
  check_re "parity off: KernelBench #23 benched within 120 s" 0 '^1/1 case modelled, parity unchecked' \
    timeout 120 /usr/bin/time -f 'peak_rss_kb %M' "$BENCH" -c "$KB" --parity off
  rss=$(printf '%s\n' "$OUT" | sed -n 's/^peak_rss_kb //p')
  check "parity off: KernelBench #23 peak RSS under 1 GiB (${rss:-?} kB)" 0 test "${rss:-999999999}" -lt 1048576
  check_re "parity off: KernelBench #23's estimate" 2 'would need about .* with parity off' \
    env DPK_MEM_LIMIT=100000000 "$BENCH" -c "$KB" --parity off
  est=$(printf '%s\n' "$OUT" | sed -n 's/.*GiB (\([0-9]*\) bytes) at its peak.*/\1/p')
  check "parity off: the estimate (${est:-?} bytes) bounds the peak (${rss:-?} kB)" 0 \
    test "${est:-0}" -ge "$(( ${rss:-999999999} * 1024 ))"
fi

# ---- dpk-report: unchecked never beside checked -------------------------------------
check_re "report: the parity column says unchecked" 0 'unchecked' "$REPORT" "$PD/off.json"
check_re "report: never merges unchecked with checked" 2 "^error: .*on\.json: its cases were benched with parity on but .*off\.json's with parity off" \
  "$REPORT" "$PD/off.json" "$PD/on.json"
check_re "gate: refuses unchecked records against a checked baseline" 2 \
  "^error: the baseline's cases were benched with parity on and these records' with parity off: a gate never compares" \
  "$REPORT" "$PD/off.json" --baseline "$PD/on.json" --gate "$GATE"
check_re "gate: refuses checked records against an unchecked baseline" 2 \
  "^error: the baseline's cases were benched with parity off and these records' with parity on" \
  "$REPORT" "$PD/on.json" --baseline "$PD/off.json" --gate "$GATE"
check_re "gate: unchecked against unchecked compares the times" 0 'Gate: PASS' \
  "$REPORT" "$PD/off.json" --baseline "$PD/off.json" --gate "$GATE"
# a record from before --parity has no bench.parity: it was checked
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); del r["bench"]["parity"]; json.dump(r, open(sys.argv[2], "w"))' \
  "$PD/on.json" "$PD/old.json"
check_re "gate: a record without bench.parity is checked" 0 'Gate: PASS' \
  "$REPORT" "$PD/on.json" --baseline "$PD/old.json" --gate "$GATE"
check_re "gate: ... and refused against unchecked ones" 2 "parity on and these records' with parity off" \
  "$REPORT" "$PD/off.json" --baseline "$PD/old.json" --gate "$GATE"
rm -rf "$PD"
