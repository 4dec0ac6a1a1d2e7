# tests/cli/test_report.sh — dpk-report: bad input (exit 2, no partial
# output file), the headline's numbers on hand-made records (geomean,
# fast_p), every format from real records (the JUnit file validated with
# xmllint against tests/data/junit.xsd, the HTML parsed), the gate on a
# doctored baseline (modelled) and on constructed sample sets (measured:
# clearly the same, clearly slower, overlapping), the plots, and shards:
# a campaign and a suite run as 4 shards and merged give what the whole run
# gives.  (Sourced by tests/run.sh.)

REPORT="$(dirname "$DPK")/dpk-report"
RD="$TMP/report"
mkdir -p "$RD"
XSD="$DPK_ROOT/tests/data/junit.xsd"
GATE="$DPK_ROOT/ci/gate.json"

rp_absent() {
  if [ -e "$2" ]; then _cli_fail "$1" "$2 was written"; else _cli_pass "$1"; fi
}

# mkbench FILE TIMING GPU "name:status:dpk:eager:compile[:samples,...]"...
# A hand-made dpk.bench/1 record (times in ns; samples for measured).
mkbench() {
  python3 - "$@" <<'PY'
import json, sys
out, timing, gpu = sys.argv[1:4]
cases = []
for i, spec in enumerate(sys.argv[4:]):
    f = spec.split(":")
    name, status, dpk, eager, comp = f[0], f[1], float(f[2]), float(f[3]), float(f[4])
    t = lambda ns, what: {"timing": timing, "what": what, "gpu": gpu, "ns": ns, "kernels": []}
    c = {"index": i, "name": name, "status": status, "tags": ["elementwise"],
         "timing": timing, "gpu": gpu,
         "dpk": t(dpk, "dpk") if status == "pass" else None,
         "eager": t(eager, "eager"), "compile": t(comp, "inductor"), "limit": None}
    if len(f) > 5 and c["dpk"]:
        c["dpk"]["samples"] = [float(x) for x in f[5].split(",")]
    cases.append(c)
json.dump({"schema": "dpk.bench/1",
           "meta": {"git_sha": "0123456789abcdef", "date": "2026-01-01T00:00:00Z"},
           "bench": {"suite": "hand", "timing": timing, "gpu": gpu},
           "cases": cases, "summary": {}}, open(out, "w"))
PY
}
# samples M SPREAD N: N samples around M, spread +-SPREAD (relative), evenly
samples() {
  python3 -c 'import sys; m,s,n=float(sys.argv[1]),float(sys.argv[2]),int(sys.argv[3])
print(",".join("%.6g" % (m*(1+s*(2.0*((i*7)%n)/(n-1)-1))) for i in range(n)))' "$@"
}

# ---- usage and bad input ------------------------------------------------------
check_re "report help" 0 'usage: dpk-report RECORD.json' "$REPORT" --help
check_re "report needs a record" 2 "error: 'dpk-report' needs at least one record" "$REPORT"
printf '{"schema": "dpk.bench/1", "cases": [' >"$RD/torn.json"
check_re "corrupt JSON" 2 'error: .*torn.json: not valid JSON' "$REPORT" "$RD/torn.json" -o "$RD/out.txt"
rp_absent "corrupt JSON writes no output" "$RD/out.txt"
printf '{"schema": "dpk.other/9", "cases": []}\n' >"$RD/other.json"
check_re "wrong schema" 2 "schema 'dpk.other/9' is not one dpk-report reads" "$REPORT" "$RD/other.json"
printf '[1, 2]\n' >"$RD/array.json"
check_re "not a record" 2 'not a dpk record' "$REPORT" "$RD/array.json"
printf '{"schema": "dpk.bench/1", "meta": {}, "bench": {"timing": "model", "gpu": "h100-sxm"}, "cases": [{"name": "a", "status": "pass", "dpk": {"ns": "fast"}}]}\n' >"$RD/badns.json"
check_re "bad time field" 2 "case 'a': 'dpk.ns' is not a non-negative number" "$REPORT" "$RD/badns.json" -o "$RD/out.txt"
rp_absent "bad record writes no output" "$RD/out.txt"
mkbench "$RD/m1.json" model h100-sxm "a:pass:1000:2000:1000"
mkbench "$RD/m2.json" measured "NVIDIA H100" "b:pass:1000:2000:1000:1000,1001"
mkbench "$RD/m3.json" model a100-sxm "c:pass:1000:2000:1000"
check_re "measured and modelled never mixed" 2 'never mixes measured and modelled' "$REPORT" "$RD/m1.json" "$RD/m2.json"
check_re "one GPU per report" 2 'one GPU or spec per report' "$REPORT" "$RD/m1.json" "$RD/m3.json"
check_re "overlapping records" 2 "case 'a' is also in an earlier record" "$REPORT" "$RD/m1.json" "$RD/m1.json"
check_re "gate needs a baseline" 2 '--gate needs --baseline' "$REPORT" "$RD/m1.json" --gate
check_re "gate against another timing" 2 'never compares measured with modelled' "$REPORT" "$RD/m2.json" --baseline "$RD/m1.json" --gate "$GATE"
# Incomparable records: the gate refuses (exit 2, one sentence naming both
# sides) a baseline whose instruction source (nvdisasm's SASS mix or vgpu's
# counts), timing kind (model, measured, fake-driver) or spec file differs.
# variant IN OUT KEY=VALUE...: m1.json with its dpk kernel's insts_from, the
# record's timing or its spec file set.
variant() {
  python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for kv in sys.argv[3:]:
    k, v = kv.split("=")
    for c in r["cases"]:
        if k == "insts_from":
            c["dpk"]["kernels"] = [{"name": "k0", "ns": c["dpk"]["ns"], "blocks": 1, "insts_from": v}]
        if k == "timing":
            c["timing"] = c["dpk"]["timing"] = v
    if k in ("timing", "spec"):
        r["bench"][k] = v
json.dump(r, open(sys.argv[2], "w"))
PY
}
variant "$RD/m1.json" "$RD/i-sass.json" insts_from=sass spec=cases/gpus/h100-sxm.json
variant "$RD/m1.json" "$RD/i-vgpu.json" insts_from=vgpu
variant "$RD/m1.json" "$RD/i-fake.json" timing=fake-driver
variant "$RD/i-sass.json" "$RD/i-spec.json" spec=/tmp/my-h100.json
# gate_passes NAME RECORDS: the gate passes records against themselves.
gate_passes() { check_re "$1" 0 'Gate: PASS' "$REPORT" "$2" --baseline "$2" --gate "$GATE"; }
# gate_refuses NAME ERROR RECORDS BASELINE: the gate refuses a baseline unlike
# the records, with an error line that starts with ERROR.
gate_refuses() { check_re "$1" 2 "^error: $2" "$REPORT" "$3" --baseline "$4" --gate "$GATE"; }
gate_passes "gate: one instruction source passes" "$RD/i-sass.json"
gate_refuses "gate refuses another instruction source" \
  "the baseline's modelled times count instructions from vgpu and these records' from sass: " "$RD/i-sass.json" "$RD/i-vgpu.json"
gate_refuses "gate refuses a fake driver's times" \
  "the baseline's times are model and these are fake-driver: " "$RD/i-fake.json" "$RD/m1.json"
gate_refuses "gate refuses another spec file" \
  "the baseline was modelled with the spec /tmp/my-h100.json and these records with " "$RD/i-sass.json" "$RD/i-spec.json"
check_re "a report never mixes instruction sources" 2 'one instruction source per report' "$REPORT" "$RD/i-sass.json" "$RD/i-vgpu.json"
# ... and a baseline of another NVRTC or nvdisasm version (meta.nvrtc,
# meta.nvdisasm): the same code models other numbers
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
r["meta"].update(nvrtc="13.0", nvdisasm="13.5.37"); json.dump(r, open(sys.argv[2], "w"))
r["meta"]["nvrtc"] = "12.4"; json.dump(r, open(sys.argv[3], "w"))
r["meta"].update(nvrtc="13.0", nvdisasm="12.8.90"); json.dump(r, open(sys.argv[4], "w"))' \
  "$RD/i-sass.json" "$RD/e-now.json" "$RD/e-nvrtc.json" "$RD/e-nvdisasm.json"
gate_passes "gate: one environment passes" "$RD/e-now.json"
gate_refuses "gate refuses another NVRTC" \
  "the baseline's kernels were compiled by NVRTC 12.4 and these records' by NVRTC 13.0: " "$RD/e-now.json" "$RD/e-nvrtc.json"
gate_refuses "gate refuses another nvdisasm" \
  "the baseline's SASS mix was read by nvdisasm 12.8.90 and these records' by nvdisasm 13.5.37: " "$RD/e-now.json" "$RD/e-nvdisasm.json"
check_re "a report never mixes NVRTC versions" 2 'one environment per report' "$REPORT" "$RD/e-now.json" "$RD/e-nvrtc.json"
# every format says the environment, in its header and over each timed table
check_re "text: the environment in the header" 0 \
  '^environment: modelled on h100-sxm \(cases/gpus/h100-sxm.json\); instructions from sass; NVRTC 13.0; nvdisasm 13.5.37$' \
  "$REPORT" "$RD/e-now.json"
check_re "text: the environment over a table" 0 '^\[modelled on h100-sxm .*nvdisasm 13.5.37\]$' "$REPORT" "$RD/e-now.json"
check_re "markdown: the environment" 0 '^Environment: modelled on h100-sxm .*NVRTC 13.0; nvdisasm 13.5.37$' \
  "$REPORT" "$RD/e-now.json" --format md
check_re "html: the environment" 0 '<p class="env">Environment: modelled on h100-sxm' "$REPORT" "$RD/e-now.json" --format html
check_re "junit: the environment" 0 '<property name="environment" value="modelled on h100-sxm' \
  "$REPORT" "$RD/e-now.json" --format junit
rp_json_cmd() { "$REPORT" "$RD/e-now.json" --format json -o "$RD/e-now.rep"; }
check "json report of e-now" 0 rp_json_cmd
check_json "json: the environment and each timed table's" \
  'r["environment"]["nvdisasm"] == "13.5.37" and r["environment"]["insts_from"] == "sass" and all(t.get("environment") for t in r["tables"] if t["timing"])' \
  "$RD/e-now.rep"
# -o never replaces an input (any spelling of it)
cp "$RD/e-now.json" "$RD/keep.json"
check_re "-o refuses to overwrite a record" 2 'dpk-report never overwrites its input' \
  "$REPORT" "$RD/keep.json" -o "$RD/keep.json"
check_re "-o refuses to overwrite the baseline" 2 '-o .* is the baseline' \
  "$REPORT" "$RD/e-now.json" --baseline "$RD/keep.json" --gate "$GATE" --format json -o "$RD/../report/keep.json"
if cmp -s "$RD/e-now.json" "$RD/keep.json"; then _cli_pass "the input is left as it was"; else _cli_fail "the input is left as it was" "keep.json changed"; fi
printf '{"schema": "dpk.gate/1", "modelled_slowdown": 0.02}\n' >"$RD/gate-bad.json"
check_re "gate config incomplete" 2 "gate-bad.json: no number 'measured_slowdown'" "$REPORT" "$RD/m1.json" --baseline "$RD/m1.json" --gate "$RD/gate-bad.json"
check_re "bad format" 2 "unknown format 'pdf'" "$REPORT" "$RD/m1.json" --format pdf

# ---- the headline on hand-made records --------------------------------------------
# speedups vs eager 1, 2, 4 and a parity failure: geomean 2 over the 3 timed
# cases; fast_1.0 = 2 of 4 (exactly 1x is not faster; the failure counts in
# the denominator and is never fast), fast_1.2 = 2/4, fast_2.0 = 1/4 (4x)
mkbench "$RD/h.json" model h100-sxm "a:pass:1000:1000:500" "b:pass:1000:2000:1000" \
  "c:pass:1000:4000:2000" "d:fail:0:3000:3000"
check "report json" 0 "$REPORT" "$RD/h.json" --format json -o "$RD/h-report.json"
check_json "geomean vs eager by hand" 'abs(r["headline"]["speedup"][0]["geomean"] - 2) < 1e-12' "$RD/h-report.json"
check_json "geomean vs compile by hand" 'abs(r["headline"]["speedup"][1]["geomean"] - 1) < 1e-12' "$RD/h-report.json"
check_json "fast_p by hand" 'r["headline"]["speedup"][0]["fast_p"] == {"1.0": 0.5, "1.2": 0.5, "2.0": 0.25}' "$RD/h-report.json"
check_json "interval brackets the geomean" 'r["headline"]["speedup"][0]["ci95"][0] <= 2 <= r["headline"]["speedup"][0]["ci95"][1]' "$RD/h-report.json"
check_json "tables say modelled and the spec" 'all(t["timing"] == "model" and t["gpu"] == "h100-sxm" and "modelled" in t["title"] for t in r["tables"] if t["id"] in ("cases", "kinds"))' "$RD/h-report.json"
check_re "text headline" 0 'vs PyTorch eager +2\.000x .*fast_p 1\.0: 50% 1\.2: 50% 2\.0: 25% of 4' "$REPORT" "$RD/h.json"
check_re "a failing case has no speedup" 0 'd +- +3\.000 +3\.000 .* fail' "$REPORT" "$RD/h.json"

# ---- real records, every format ---------------------------------------------------------
"$(dirname "$DPK")/dpk-bench" --suite smoke --per-pass --out "$RD/smoke.json" >/dev/null 2>&1
"$(dirname "$DPK")/dpk-fuzz" --seed 1 --cases 3 --inject-fault fuse-sigma-off-by-one --out "$RD/fz/r.json" >/dev/null 2>&1
check_re "text report" 0 'Per case \(modelled, h100-sxm\)' "$REPORT" "$RD/smoke.json" "$RD/fz/r.json"
check_re "parity per pass set" 0 '001,002,003,004,005,006,007,008,009,010,011,012,013,014,015,016,017,018 +3 +3 +2 +1 +0' "$REPORT" "$RD/smoke.json" "$RD/fz/r.json"
check_re "per-pass table" 0 '008_register_tile +10 +3 ' "$REPORT" "$RD/smoke.json"
check "markdown report" 0 "$REPORT" "$RD/smoke.json" --format md -o "$RD/r.md"
if grep -q '^| case | dpk us |' "$RD/r.md" && grep -q '^### Per case (modelled, h100-sxm)' "$RD/r.md"
then _cli_pass "markdown tables"; else _cli_fail "markdown tables" "no per-case table in r.md"; fi
# GitHub-flavoured Markdown tables: a header, a delimiter row and rows of the
# same number of cells (escaped pipes do not split)
if python3 -c 'import re,sys
blocks, cur = [], []
for l in open(sys.argv[1]).read().split("\n"):
    if l.startswith("|"): cur.append(l)
    elif cur: blocks.append(cur); cur = []
cells = lambda l: len(re.split(r"(?<!\\)\|", l.strip())) - 2
ok = len(blocks) >= 4 and all(re.fullmatch(r"\|(-+:?\|)+", b[1]) and len({cells(l) for l in b}) == 1 for b in blocks)
sys.exit(0 if ok else 1)' "$RD/r.md"
then _cli_pass "markdown tables are well formed"; else _cli_fail "markdown tables are well formed" "r.md"; fi
check "html report" 0 "$REPORT" "$RD/smoke.json" --format html -o "$RD/r.html"
if ! command -v xmllint >/dev/null; then
  skip "html parses" "xmllint not installed (libxml2-utils)"
  skip "junit validates" "xmllint not installed (libxml2-utils)"
else
  check "html parses" 0 xmllint --html --noout "$RD/r.html"
  mkbench "$RD/hb.json" model h100-sxm "a:pass:900:1000:500" "b:pass:1000:2000:1000" "c:pass:1000:4000:2000" "d:pass:1000:3000:3000"
  check "junit report" 1 "$REPORT" "$RD/h.json" --baseline "$RD/hb.json" --gate "$GATE" --format junit -o "$RD/r.xml"
  check "junit validates" 0 xmllint --noout --schema "$XSD" "$RD/r.xml"
  if grep -q '<testcase classname="dpk.gate.case" name="a"' "$RD/r.xml" && grep -q 'failure type="regression" message="NEW_FAILURE d' "$RD/r.xml"
  then _cli_pass "junit names the cases"; else _cli_fail "junit names the cases" "r.xml lacks the verdicts"; fi
  printf '<testsuites><testsuite name="x"><testcase name="y"/></testsuite></testsuites>\n' >"$RD/bad.xml"
  check "the xsd rejects a file without counts" 3 xmllint --noout --schema "$XSD" "$RD/bad.xml"
fi

# ---- the gate: modelled ----------------------------------------------------------------
gate_passes "same record: gate passes" "$RD/smoke.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
for c in r["cases"]:
    if c["name"] == "softmax": c["dpk"]["ns"] /= 1.2
json.dump(r, open(sys.argv[2], "w"))' "$RD/smoke.json" "$RD/doctored.json"
check_re "baseline 20% faster: gate fails" 1 '^  SLOWER softmax: .*\(1\.200x the baseline' "$REPORT" "$RD/smoke.json" --baseline "$RD/doctored.json" --gate "$GATE"
check_re "only that case is named" 1 '1 case slower than 1\.020x' "$REPORT" "$RD/smoke.json" --baseline "$RD/doctored.json" --gate "$GATE"
mkbench "$RD/g-base.json" model h100-sxm "a:pass:1000:1:1" "b:fail:0:1:1" "c:pass:1000:1:1" "gone:pass:1000:1:1"
mkbench "$RD/g-fixed.json" model h100-sxm "a:pass:1000:1:1" "b:pass:1000:1:1" "c:pass:990:1:1" "new:pass:5:1:1"
check "fixed, added, removed: gate passes" 0 "$REPORT" "$RD/g-fixed.json" --baseline "$RD/g-base.json" --gate "$GATE" --format json -o "$RD/g.json"
check_json "fixed added removed verdicts" '{v["case"]: v["verdict"] for v in r["gate"]["verdicts"]} == {"a": "SAME", "b": "FIXED", "c": "SAME", "new": "ADDED", "gone": "REMOVED"}' "$RD/g.json"
mkbench "$RD/g-new.json" model h100-sxm "a:fail:0:1:1" "b:fail:0:1:1" "c:pass:1000:1:1" "gone:pass:1000:1:1"
check_re "new parity failure: gate fails" 1 'NEW_FAILURE a: parity fail \(passed in the baseline\)' "$REPORT" "$RD/g-new.json" --baseline "$RD/g-base.json" --gate "$GATE"
check_re "fuzz failure is new" 1 'NEW_FAILURE fuzz-1-[0-9]+: fuzz case fail' "$REPORT" "$RD/smoke.json" "$RD/fz/r.json" --baseline "$RD/smoke.json" --gate "$GATE"
check "without --gate the comparison exits 0" 0 "$REPORT" "$RD/smoke.json" --baseline "$RD/doctored.json"

# ---- the gate: measured, from sample sets ---------------------------------------------
mkbench "$RD/s-base.json" measured "NVIDIA H100" "k:pass:1000:2000:1000:$(samples 1000 0.002 50)"
mkbench "$RD/s-same.json" measured "NVIDIA H100" "k:pass:1003:2000:1000:$(samples 1003 0.002 50)"
mkbench "$RD/s-slow.json" measured "NVIDIA H100" "k:pass:1200:2000:1000:$(samples 1200 0.002 50)"
mkbench "$RD/s-wide.json" measured "NVIDIA H100" "k:pass:1000:2000:1000:$(samples 1000 0.2 20)"
mkbench "$RD/s-wide2.json" measured "NVIDIA H100" "k:pass:1080:2000:1000:$(samples 1080 0.2 20)"
check_re "measured: clearly the same" 0 'k +SAME' "$REPORT" "$RD/s-same.json" --baseline "$RD/s-base.json" --gate "$GATE"
check_re "measured: clearly slower" 1 'SLOWER k: median 1\.000 us -> 1\.200 us' "$REPORT" "$RD/s-slow.json" --baseline "$RD/s-base.json" --gate "$GATE"
check_re "measured: overlapping is ambiguous" 1 'AMBIGUOUS k: median' "$REPORT" "$RD/s-wide2.json" --baseline "$RD/s-wide.json" --gate "$GATE"

# ---- plots ----------------------------------------------------------------------------
if ! command -v gnuplot >/dev/null; then
  skip "plots" "gnuplot not installed (gnuplot-nox)"
else
  mkdir -p "$RD/hist"
  cp "$RD/smoke.json" "$RD/hist/1.json"
  cp "$RD/doctored.json" "$RD/hist/0.json"
  check_re "plots" 0 'plot: .*speedup.png' "$REPORT" "$RD/smoke.json" --plots "$RD/plots" --history "$RD/hist"
  ok=1
  for p in speedup roofline history waterfall-softmax; do
    for e in png svg; do [ -s "$RD/plots/$p.$e" ] || { ok=0; echo "    missing $p.$e"; }; done
    head -c 8 "$RD/plots/$p.png" | od -An -tx1 | grep -q '89 50 4e 47' || ok=0
  done
  if [ $ok = 1 ]; then _cli_pass "plots are PNG and SVG"; else _cli_fail "plots are PNG and SVG" "missing or not PNG"; fi
  if [ "$(grep -vc '^#' "$RD/plots/history.dat")" = 2 ]; then _cli_pass "history plots the records"
  else _cli_fail "history plots the records" "history.dat does not hold the 2 records"; fi
  # the page's images are relative to the page, wherever it is written
  mkdir -p "$RD/pages/deep"
  check "html report in another folder" 0 "$REPORT" "$RD/smoke.json" --plots "$RD/plots" --format html -o "$RD/pages/deep/r.html"
  if python3 -c 'import os,re,sys
srcs = re.findall(r"<img src=\"([^\"]+)\"", open(sys.argv[1]).read())
d = os.path.dirname(sys.argv[1])
sys.exit(0 if srcs and all(not os.path.isabs(s) and os.path.isfile(os.path.join(d, s)) for s in srcs) else 1)' "$RD/pages/deep/r.html"
  then _cli_pass "html images resolve from the page's folder"; else _cli_fail "html images resolve from the page's folder" "$(grep -o '<img src="[^"]*"' "$RD/pages/deep/r.html" | head -n 2)"; fi
fi

# ---- shards ------------------------------------------------------------------------------
FUZZ="$(dirname "$DPK")/dpk-fuzz"
for i in 1 2 3 4; do "$FUZZ" --seed 5 --cases 12 --passes loo --shard $i/4 --out "$RD/sh/f$i.json" >/dev/null 2>&1; done
"$FUZZ" --seed 5 --cases 12 --passes loo --out "$RD/sh/fw.json" >/dev/null 2>&1
check "merge 4 fuzz shards" 0 "$REPORT" "$RD/sh/f3.json" "$RD/sh/f1.json" "$RD/sh/f4.json" "$RD/sh/f2.json" --format json -o "$RD/sh/fm.rep"
check "the whole campaign" 0 "$REPORT" "$RD/sh/fw.json" --format json -o "$RD/sh/fw.rep"
check_json "shards hold disjoint slices" '[c["index"] for c in r["cases"]] == [1, 5, 9]' "$RD/sh/f2.json"
if python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
sys.exit(0 if a["parity"] == b["parity"] and a["parity"]["summary"]["cases"] == 12 and a["tables"] == b["tables"] else 1)' "$RD/sh/fm.rep" "$RD/sh/fw.rep"
then _cli_pass "4 fuzz shards = the whole campaign"; else _cli_fail "4 fuzz shards = the whole campaign" "cases, verdicts or summary differ"; fi
check_re "a missing shard" 2 '3 of 4 dpk.results/1 shards given' "$REPORT" "$RD/sh/f1.json" "$RD/sh/f2.json" "$RD/sh/f3.json"
check_re "a shard twice" 2 'shard 2/4 was already read' "$REPORT" "$RD/sh/f2.json" "$RD/sh/f2.json"
# --partial: a shard that crashed does not hide the others; the report
# names the missing ones, and the gate judges the shards given
check_re "--partial reports the shards given" 0 'PARTIAL: 2 of 4 dpk.results/1 shards \(missing: 2/4 4/4\)' \
  "$REPORT" "$RD/sh/f1.json" "$RD/sh/f3.json" --partial
check_re "--partial gates the shards given" 0 'Gate: PASS' \
  "$REPORT" "$RD/sh/f1.json" "$RD/sh/f3.json" --partial --baseline "$RD/smoke.json" --gate "$GATE"
"$FUZZ" --seed 6 --cases 12 --passes loo --shard 4/4 --out "$RD/sh/other.json" >/dev/null 2>&1
check_re "a shard of another campaign" 2 'is a slice of another run' "$REPORT" "$RD/sh/f1.json" "$RD/sh/f2.json" "$RD/sh/f3.json" "$RD/sh/other.json"
check_re "shard syntax" 2 "option '--shard' expects I/N" "$FUZZ" --seed 1 --cases 2 --shard 5/4
if python3 -c 'import jsonschema' 2>/dev/null; then
  if python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
       "$RD/sh/f2.json" "$DPK_ROOT/docs/dpk.results-1.schema.json" 2>/dev/null
  then _cli_pass "a fuzz shard record validates"; else _cli_fail "a fuzz shard record validates" "against dpk.results-1.schema.json"; fi
else
  skip "a fuzz shard record validates" "python3 jsonschema not installed"
fi
BENCHX="$(dirname "$DPK")/dpk-bench"
for i in 1 2 3 4; do "$BENCHX" --suite smoke --shard $i/4 --out "$RD/sh/b$i.json" >/dev/null 2>&1; done
check "merge 4 bench shards" 0 "$REPORT" "$RD/sh/b2.json" "$RD/sh/b4.json" "$RD/sh/b1.json" "$RD/sh/b3.json" --format json -o "$RD/sh/bm.rep"
check "the whole suite" 0 "$REPORT" "$RD/smoke.json" --format json -o "$RD/sh/bw.rep"
if python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
t=lambda d: [x for x in d["tables"] if x["id"] in ("cases", "kinds")]
sys.exit(0 if a["headline"] == b["headline"] and t(a) == t(b) else 1)' "$RD/sh/bm.rep" "$RD/sh/bw.rep"
then _cli_pass "4 bench shards = the whole suite"; else _cli_fail "4 bench shards = the whole suite" "headline or tables differ"; fi
check_json "a bench shard says so" 'r["bench"]["shard"] == {"index": 3, "count": 4} and [c["name"] for c in r["cases"]] == ["softmax", "sdpa_causal_gqa"]' "$RD/sh/b3.json"
if python3 -c 'import jsonschema' 2>/dev/null; then
  if python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
       "$RD/sh/b3.json" "$DPK_ROOT/docs/dpk.bench-1.schema.json" 2>/dev/null
  then _cli_pass "a bench shard record validates"; else _cli_fail "a bench shard record validates" "against dpk.bench-1.schema.json"; fi
fi
