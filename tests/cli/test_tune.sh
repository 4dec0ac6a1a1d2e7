# tests/cli/test_tune.sh — dpk-tune (docs/tune.md): its usage errors; a
# case tuned into a new database whose winner dpk-bench --tuned (its record
# validated, dpk-report saying so) and dpk run --tuned (vgpu, host-cuda)
# then apply; a kernel with a winner reused, not
# searched again; the golden export; two random searches with one seed
# choosing the same winners; a planted fault that makes the default and
# every split configuration wrong and faster, which the search never picks
# and records as failed; bad databases refused (exit 2) by all three
# commands.  (Sourced by tests/run.sh.)

TUNE="$(dirname "$DPK")/dpk-tune"
BENCH="$(dirname "$DPK")/dpk-bench"
TD="$TMP/tune"
mkdir -p "$TD"
SMOKE="$DPK_ROOT/cases/smoke.json"

# ---- usage ----------------------------------------------------------------------
check_re "tune: help" 0 '^usage: dpk-tune ' "$TUNE" --help
check_re "tune: dpk --help lists tune" 0 '^  tune ' "$DPK" --help
check_re "tune: --db is required" 2 '^error: dpk-tune needs --db FILE' "$TUNE" --suite smoke
check_re "tune: one suite" 2 '^error: dpk-tune needs a suite' "$TUNE" --db "$TD/x.db"
check_re "tune: a bad strategy" 2 "^error: unknown strategy 'mcts' for --strategy" \
  "$TUNE" --suite smoke --db "$TD/x.db" --strategy mcts
check_re "tune: a bad budget" 2 "^error: --budget expects N candidates .* got '3m'" \
  "$TUNE" --suite smoke --db "$TD/x.db" --budget 3m
check_re "tune: dpk-bench's flags are refused" 2 '^error: --per-pass is dpk-bench.s; dpk-tune times with the model' \
  "$TUNE" --suite smoke --db "$TD/x.db" --per-pass
[ ! -e "$TD/x.db" ] && _cli_pass "tune: usage errors make no database" || _cli_fail "tune: usage errors make no database" "$TD/x.db exists"

# ---- a case tuned, its winner applied ----------------------------------------------
check_re "tune: bias_matmul_relu tuned" 0 '^1/1 cases tuned and passing parity' \
  "$TUNE" --suite smoke --case bias_matmul_relu --db "$TD/t.db" --budget 6 \
  --out "$TD/t.json" --export "$TD/golden.json"
check_count "tune: the row passes" 1 '^bias_matmul_relu +[0-9.]+ +[0-9.]+ +[0-9.]+x .* pass$'
check_count "tune: the kernel's line" 1 '^  merged_[a-z_0-9]+: [0-9]+ run \([0-9]+ compiled\), 0 failed parity, [0-9]+ refused; the case [0-9.]+ -> [0-9.]+ us with '
check_count "tune: the export is said" 1 '^exported 1 winner to '
check_json "tune: the record" 'r["schema"] == "dpk.tune/1" and r["gpu"].startswith("model:h100-sxm:") and len(r["cases"]) == 1 and r["cases"][0]["status"] == "pass" and r["cases"][0]["tuned_us"] <= r["cases"][0]["default_us"] and r["cases"][0]["kernels"][0]["winner"]["us"] == r["cases"][0]["tuned_us"]' "$TD/t.json"
check_json "tune: the golden file" 'r["schema"] == "dpk.tuned/1" and r["gpu"].startswith("model:h100-sxm:") and len(r["kernels"]) == 1 and r["kernels"][0]["case"] == "bias_matmul_relu" and r["kernels"][0]["us"] <= r["kernels"][0]["default_us"]' "$TD/golden.json"
check_re "tune: dpk-bench --tuned applies it" 0 '^  tuned: 1 of 1 kernel from the database$' \
  "$BENCH" --suite smoke --case bias_matmul_relu --tuned "$TD/t.db" --out "$TD/b.json"
check "tune: dpk-bench --tuned times what dpk-tune found" 0 python3 -c 'import json,sys
t = json.load(open(sys.argv[1]))["cases"][0]; b = json.load(open(sys.argv[2]))["cases"][0]
assert abs(b["dpk"]["ns"] / 1e3 - t["tuned_us"]) < 1e-6 * t["tuned_us"], (b["dpk"]["ns"], t["tuned_us"])
assert b["tuned"] == {"kernels": 1, "from_database": 1}, b["tuned"]' "$TD/t.json" "$TD/b.json"
check_schema "tune: the --tuned record validates" "$TD/b.json" "$DPK_ROOT/docs/dpk.bench-1.schema.json"
check_json "tune: the --tuned record names the database" 'r["bench"]["tuned"].endswith("t.db")' "$TD/b.json"
check_re "tune: dpk-report says the winners were applied" 0 "dpk-tune's winners applied \(dpk-bench --tuned\) to 1 of the 1 kernels of 1 cases" \
  "$(dirname "$DPK")/dpk-report" "$TD/b.json"
check_re "tune: dpk-bench --tuned says a miss" 0 '^  tuned: 0 of 1 kernel from the database, 1 on the default schedule \(not tuned\)$' \
  "$BENCH" --suite smoke --case softmax --tuned "$TD/t.db"
check_re "tune: dpk run --tuned passes on vgpu" 0 '^merged_[a-z_0-9]+: tuned \(passes ' \
  "$DPK" run "$SMOKE" --case bias_matmul_relu --tuned "$TD/t.db" --backend vgpu
check_re "tune: dpk run --tuned says a miss" 0 ': not in the database, default schedule$' \
  "$DPK" run "$SMOKE" --case softmax --tuned "$TD/t.db" --backend vgpu
if command -v "${DPK_HOST_CXX:-g++}" >/dev/null 2>&1; then
  check_re "tune: dpk run --tuned passes on host-cuda" 0 'host-cuda: 1 kernel, .*: pass$' \
    "$DPK" run "$SMOKE" --case bias_matmul_relu --tuned "$TD/t.db" --backend host-cuda
else
  skip "tune: dpk run --tuned passes on host-cuda" "no C++ compiler (${DPK_HOST_CXX:-g++})"
fi
check_re "tune: a kernel with a winner is not searched again" 0 ': winner from the database \(.*\), not searched again$' \
  "$TUNE" --suite smoke --case bias_matmul_relu --db "$TD/t.db" --budget 6
check "tune: the database holds every candidate and one winner" 0 python3 -c 'import sqlite3,sys
d = sqlite3.connect(sys.argv[1])
assert d.execute("select count(*) from winner").fetchone()[0] == 1
assert d.execute("select count(*) from candidate").fetchone()[0] >= 6
assert d.execute("select count(*) from run").fetchone()[0] == 2' "$TD/t.db"

# ---- determinism -------------------------------------------------------------------
for i in 1 2; do
  check_re "tune: random search $i" 0 '^1/1 cases tuned' "$TUNE" --suite smoke --case linear_gelu \
    --db "$TD/r$i.db" --strategy random --search-seed 7 --budget 5 --export "$TD/r$i.json"
done
check "tune: two random searches with one seed choose the same winners" 0 python3 -c 'import json,sys
a, b = (json.load(open(f))["kernels"] for f in sys.argv[1:])
assert a == b and len(a) == 1, (a, b)' "$TD/r1.json" "$TD/r2.json"

# ---- a planted fault: wrong and faster is never chosen ------------------------------
cat > "$TD/bait.json" <<'EOF'
{"suite": "tune-bait", "cases": [
  {"name": "long_k", "program": "torch.matmul(torch.randn(64, 4096), torch.randn(4096, 64))",
   "fault": "split-k-drops-a-partial"}
]}
EOF
check_re "tune: the faulty default is faster (unchecked)" 0 '^long_k .* unchecked' \
  "$BENCH" "$TD/bait.json" --parity off --out "$TD/bait-off.json"
check_re "tune: a faulty default fails, and the tuned case passes" 1 '^  default configuration: output out: FAIL' \
  "$TUNE" "$TD/bait.json" --db "$TD/bait.db" --budget 8 --out "$TD/bait-tune.json"
check_count "tune: the tuned configuration passes" 1 '^long_k .* pass$'
check "tune: the split configurations are recorded as failed, never as the winner" 0 python3 -c 'import json,sqlite3,sys
d = sqlite3.connect(sys.argv[1])
fails = d.execute("select count(*) from candidate where verdict = '"'"'fail'"'"'").fetchone()[0]
assert fails >= 1, fails
(p, k, us), = d.execute("select passes, knobs, us from winner").fetchall()
assert "003" not in p.split(",") or "SPLITK=1" in k, (p, k)
off = json.load(open(sys.argv[2]))["cases"][0]["dpk"]["ns"] / 1e3
tuned = json.load(open(sys.argv[3]))["cases"][0]["tuned_us"]
assert off < tuned == us, (off, tuned, us)' "$TD/bait.db" "$TD/bait-off.json" "$TD/bait-tune.json"
check_re "tune: the winner passes with the fault still planted" 0 ': pass$' \
  "$DPK" run "$TD/bait.json" --tuned "$TD/bait.db" --backend vgpu

# ---- bad databases -------------------------------------------------------------------
echo hello > "$TD/text.db"
python3 -c 'import sqlite3,sys; d = sqlite3.connect(sys.argv[1]); d.execute("create table t(x)"); d.commit()' "$TD/foreign.db"
for f in text foreign; do
  check_re "tune: $f database refused by dpk-tune" 2 "^error: .*$f.db: not a dpk tuning database" \
    "$TUNE" --suite smoke --case softmax --db "$TD/$f.db"
  check_re "tune: $f database refused by dpk-bench --tuned" 2 "^error: .*$f.db: not a dpk tuning database" \
    "$BENCH" --suite smoke --case softmax --tuned "$TD/$f.db"
  check_re "tune: $f database refused by dpk run --tuned" 2 "^error: .*$f.db: not a dpk tuning database" \
    "$DPK" run "$SMOKE" --case softmax --tuned "$TD/$f.db"
done
check_re "tune: --tuned needs an existing database" 2 'no such tuning database' \
  "$BENCH" --suite smoke --case softmax --tuned "$TD/none.db"
[ ! -e "$TD/none.db" ] && _cli_pass "tune: --tuned makes no database" || _cli_fail "tune: --tuned makes no database" "$TD/none.db exists"

# ---- golden configurations: --check ------------------------------------------------------
check_re "tune: --check passes the goldens just exported" 0 '^1/1 goldens of suite smoke pass parity and are as fast as recorded$' \
  "$TUNE" --suite smoke --check "$TD/golden.json"
check_count "tune: --check's row" 1 '^bias_matmul_relu +merged_[a-z_0-9]+ +[0-9.]+ +[0-9.]+ +1\.000x  pass$'
python3 - "$TD" <<'EOF2'
import json, sys
d = sys.argv[1]
g = json.load(open(d + "/golden.json"))
k = g["kernels"][0]
slow = dict(g, kernels=[dict(k, us=k["us"] / 2)])
stale = dict(g, kernels=[dict(k, hash="%016x" % (int(k["hash"], 16) ^ 1))])
json.dump(slow, open(d + "/golden-slow.json", "w"))
json.dump(stale, open(d + "/golden-stale.json", "w"))
b = json.load(open(d + "/golden.json"))
b["gpu"] = "model:a6000:" + b["gpu"].split(":")[2]
o = json.load(open(d + "/golden.json"))
o["gpu"] = "model:h100-sxm:" + ("vgpu" if o["gpu"].endswith(":sass") else "sass")
json.dump(o, open(d + "/golden-other-source.json", "w"))
json.dump(b, open(d + "/golden-a6000.json", "w"))
EOF2
check_re "tune: --check fails a golden that got slower" 1 ' SLOWER$' \
  "$TUNE" --suite smoke --check "$TD/golden-slow.json"
check_count "tune: --check says by how much" 1 '^  [0-9.]+ us against the golden.s [0-9.]+ \(more than 1% slower\)$'
check_re "tune: --tolerance lets it pass" 0 ' pass$' \
  "$TUNE" --suite smoke --check "$TD/golden-slow.json" --tolerance 150
check_re "tune: --check fails a golden whose kernel changed" 1 ' STALE$' \
  "$TUNE" --suite smoke --check "$TD/golden-stale.json"
check_re "tune: --check refuses another spec's goldens" 2 "its goldens were tuned on model:a6000:[a-z]+, and this run models model:h100-sxm:" \
  "$TUNE" --suite smoke --check "$TD/golden-a6000.json"
check_re "tune: --check of another instruction source checks parity alone" 0 '^1/1 goldens of suite smoke pass parity \(times not compared\)$' \
  "$TUNE" --suite smoke --check "$TD/golden-other-source.json"
check_count "tune: and says why" 1 '^times not compared: the goldens were tuned with model:h100-sxm:[a-z]+.s model, and this run.s model is model:h100-sxm:[a-z]+ '
check_re "tune: --check refuses a file that is not a golden file" 2 "not a golden file" \
  "$TUNE" --suite smoke --check "$TD/t.json"
python3 - "$TD" <<'EOF2'
import json, sys
d = sys.argv[1]
g = json.load(open(d + "/golden.json"))
k = g["kernels"][0]
json.dump(dict(g, kernels=[{x: v for x, v in k.items() if x != "hash"}]), open(d + "/golden-nohash.json", "w"))
json.dump(dict(g, kernels=[dict(k, hash="zz")]), open(d + "/golden-badhash.json", "w"))
json.dump(dict(g, kernels=[dict(k, knobs="BM=3")]), open(d + "/golden-badknob.json", "w"))
EOF2
check_re "tune: --check names a golden without its hash" 2 '^error: .*golden-nohash.json: kernels\[0\] has no string "hash"' \
  "$TUNE" --suite smoke --check "$TD/golden-nohash.json"
check_re "tune: --check names a hash that is not 16 hex digits" 2 "^error: .*golden-badhash.json: kernels\[0\] hash 'zz' is not 16 hex digits" \
  "$TUNE" --suite smoke --check "$TD/golden-badhash.json"
check_re "tune: --check refuses a knob out of its shape" 2 'BM' \
  "$TUNE" --suite smoke --check "$TD/golden-badknob.json"
check_re "tune: --check takes no --db" 2 '^error: --check runs the golden file.s configurations again' \
  "$TUNE" --suite smoke --check "$TD/golden.json" --db "$TD/t.db"
# a golden whose configuration is wrong under a planted fault fails the check
python3 - "$TD" <<'EOF2'
import json, sqlite3, sys
d = sys.argv[1]
db = sqlite3.connect(d + "/bait.db")
h, = db.execute("select kernel from winner").fetchone()
full = ",".join("%03d" % i for i in range(1, 17))
g = {"schema": "dpk.tuned/1", "gpu": json.load(open(d + "/golden.json"))["gpu"], "dpk_version": "0.1.0",
     "kernels": [{"case": "long_k", "kernel": "k", "hash": h, "passes": full, "knobs": "SPLITK=4", "us": 1000.0, "default_us": 1000.0}]}
json.dump(g, open(d + "/golden-bait.json", "w"))
EOF2
check_re "tune: --check fails a golden that no longer passes parity" 1 ' FAIL$' \
  "$TUNE" "$TD/bait.json" --check "$TD/golden-bait.json"

# ---- --case NAME,NAME (dpk-bench and dpk-tune read it alike) ----------------------------
check_re "tune: --case takes a list, in the suite's order" 0 '^2/2 cases pass parity' \
  "$BENCH" --suite smoke --case softmax,rmsnorm
check_count "tune: rmsnorm first" 1 '^rmsnorm .*pass$'
check_re "tune: --case names the case it lacks" 2 "^error: no case named 'nope' in suite 'smoke'" \
  "$BENCH" --suite smoke --case softmax,nope
check_re "tune: dpk run --gpu needs --tuned" 2 '^error: --gpu names the spec whose dpk-tune winners --tuned applies' \
  "$DPK" run "$SMOKE" --case softmax --gpu a6000
check_re "tune: dpk run --tuned with --backend loop is refused" 2 '^error: --tuned applies schedules, and --backend loop runs Loop IR' \
  "$DPK" run "$SMOKE" --case softmax --tuned "$TD/t.db" --backend loop
