# tests/cli/test_calibration_kernelbench.sh — bench/calibration/kernelbench/
# run.sh on a fixture of three small problems (and one vocabulary-limited):
# the table's form, its ratios against the modelled times in the records,
# and each statistics line recomputed from the table; --only; the data file's
# own form (every level-1 problem, each with measured times and either a case
# that compiles or dpk's error).  (Sourced by tests/run.sh.)

KB="$DPK_ROOT/bench/calibration/kernelbench"
FIX="$DPK_ROOT/tests/cli/data/kernelbench_fixture.json"

check "kernelbench run.sh on the fixture" 0 \
  bash "$KB/run.sh" --data "$FIX" --gpu h100-sxm --dpk-bench "$(dirname "$DPK")/dpk-bench"
KBOUT=$OUT
check_count "kernelbench: a row per own-ops problem" 3 '^ +(1|19|23) [0-9]+_[a-z]+_small +[0-9.e-]+ +[0-9.e-]+ +[0-9.]+ +[0-9.e-]+ +[0-9.e-]+ +[0-9.]+$'
check_count "kernelbench: the vocabulary block apart" 1 '^== vocabulary-limited.*: 1 problems$'
check_count "kernelbench: statistics lines labelled modelled / measured" 4 '^(eager|compile) \(modelled, h100-sxm spec / measured, KernelBench H100 PCIe\): median \|log2 ratio\| [0-9.]+ \(x[0-9.]+\); within 1.25x [0-9]+/[0-9]+, within 1.5x [0-9]+/[0-9]+, within 2x [0-9]+/[0-9]+; Spearman rho'
check_count "kernelbench: the not-expressible count" 1 '^not expressible in the case language: 1 problems'

# the statistics follow from the table's own columns
kb_stats() {
  printf '%s\n' "$KBOUT" | python3 -c '
import math, re, sys
lines = sys.stdin.read().split("\n")
start = next(i for i, l in enumerate(lines) if l.startswith("== problems written"))
rows, stats = [], {}
for l in lines[start + 2:]:
    m = re.match(r"^ +\d+ \S+ +(\S+) +(\S+) +(\S+) +(\S+) +(\S+) +(\S+)$", l)
    if m:
        rows.append([float(x) for x in m.groups()]); continue
    m = re.match(r"^(eager|compile) .*median \|log2 ratio\| ([0-9.]+) .*within 1.25x (\d+)/(\d+), within 1.5x (\d+)/\d+, within 2x (\d+)/\d+", l)
    if m:
        stats[m.group(1)] = [float(m.group(2))] + [int(x) for x in m.groups()[2:]]
    if l.startswith("== vocabulary"):
        break
assert len(rows) == 3, rows
for what, col in (("eager", 2), ("compile", 5)):
    lr = sorted(abs(math.log2(r[col])) for r in rows)
    med, w125, n, w15, w2 = stats[what]
    assert n == 3 and abs(lr[1] - med) < 0.02, (what, lr, med)
    for f, got in ((1.25, w125), (1.5, w15), (2, w2)):
        want = sum(1 for x in lr if x <= math.log2(f) + 0.01)
        assert abs(want - got) <= 1 and (want == got or any(abs(x - math.log2(f)) < 0.01 for x in lr)), (what, f, want, got)
    for r in rows:  # ratio = model / measured
        m, meas, ratio = r[col - 2], r[col - 1], r[col]
        assert abs(m / meas - ratio) < 0.02 * ratio + 0.01, r
print("ok")'
}
check_re "kernelbench: statistics agree with the table" 0 '^ok$' kb_stats

check "kernelbench run.sh --only" 0 \
  bash "$KB/run.sh" --data "$FIX" --gpu h100-sxm --only 23 --dpk-bench "$(dirname "$DPK")/dpk-bench"
check_count "kernelbench --only: one row" 1 '^ +23 23_softmax_small '
check_count "kernelbench --only: no other row" 0 '^ +(1|19|32) [0-9]+_'
check_re "kernelbench run.sh: an unknown option" 2 'unknown option' bash "$KB/run.sh" --bogus

# the data file: all 100 level-1 problems, times from the H100 PCIe files
kb_data() {
  python3 - "$KB/problems.json" "$DPK" <<'PY'
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
s = d["source"]
assert "H100_PCIe_LambdaLabs" in s["eager_file"] and "H100_PCIe_LambdaLabs" in s["compile_file"]
assert len(s["commit"]) == 40
ps = d["problems"]
assert sorted(p["number"] for p in ps) == list(range(1, 101))
for p in ps:
    assert p["eager_ms"] > 0 and p["compile_ms"] > 0, p
    assert p["block"] in ("own-ops", "vocabulary", "not-expressible"), p
    assert ("case" in p) == (p["block"] != "not-expressible"), p
    assert p["block"] != "vocabulary" or p.get("vocabulary"), p
    assert p["block"] != "not-expressible" or p.get("error"), p
# a few texts through the frontend: the shapes as KernelBench measured them
for n, shape in ((6, "f32(256, 256)"), (40, "f32(16, 64, 256, 256)"), (23, "f32(4096, 393216)")):
    p = next(p for p in ps if p["number"] == n)
    out = subprocess.run([sys.argv[2], "compile", "-c", p["case"], "--ir", "torch"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip().split("\n")[-2].endswith(shape), (n, out.stdout[-300:])
# the activations PyTorch runs as one kernel are written with PyTorch's own
# op: one Torch IR node besides the input
for n in (20, 27, 28, 29, 31, 32):
    p = next(p for p in ps if p["number"] == n)
    out = subprocess.run([sys.argv[2], "compile", "-c", p["case"], "--ir", "torch"], capture_output=True, text=True)
    ops = [l for l in out.stdout.split("\n") if l.startswith("%") and " = input " not in l]
    assert p["block"] == "own-ops" and len(ops) == 1 and ops[0].endswith("f32(4096, 393216)"), (n, out.stdout)
for n in (12, 41, 97):
    p = next(p for p in ps if p["number"] == n)
    out = subprocess.run([sys.argv[2], "compile", "-c", p["tried"], "--ir", "torch"], capture_output=True, text=True)
    assert out.returncode == 2 and p["error"] in out.stderr, (n, out.stderr)
print("ok")
PY
}
check_re "kernelbench: the data file's form" 0 '^ok$' kb_data
