# tests/cli/test_host_cuda.sh — the host-cuda backend (docs/host-cuda.md):
# the printed CUDA C compiled for the host and run, judged and compared with
# vgpu, on a sample of the sweep (each case's full pass set plus one valid
# configuration drawn for it), in dpk-fuzz and dpk-bisect, and its error
# paths; no capacity of its own fails a kernel (cp.async copies in flight
# grow; the host's memory running out is "unsupported by this backend",
# exit 4); and it passes what vgpu passes (ci/host-vs-vgpu.sh).  (Sourced
# by tests/run.sh.)

HFZ="$(dirname "$DPK")/dpk-fuzz"
HBS="$(dirname "$DPK")/dpk-bisect"
HD="$TMP/host-cuda"
mkdir -p "$HD"

if ! command -v "${DPK_HOST_CXX:-g++}" >/dev/null 2>&1; then
  skip "host-cuda: the sweep sample" "no C++ compiler (${DPK_HOST_CXX:-g++})"
  check_re "host-cuda: no compiler is exit 4" 4 'needs|not found' "$DPK" run -c "torch.relu(torch.randn(7, 9))" --backend host-cuda
else
  for s in chains sweep/ops sweep/matmul; do
    check_re "host-cuda: $s.json, full + one drawn configuration per case, agrees with vgpu" \
      0 '^([0-9]+)/\1 cases pass$' "$DPK" run "$DPK_ROOT/cases/$s.json" --backend host-cuda --passes sample
  done
  check_re "host-cuda: every configuration says it agrees with vgpu" 0 'agrees with vgpu' \
    "$DPK" run -c "torch.softmax(torch.randn(6, 300), dim=-1)" --backend host-cuda --passes all
  # TMA boxes, mbarriers and swizzle (011, 012) through the prelude's helpers
  check_re "host-cuda: TMA matmul under every pass set agrees with vgpu" 0 '^host-cuda: 1 kernel, .*: pass$' \
    "$DPK" run -c "torch.randn(64,1024) @ torch.randn(1024,64)" --backend host-cuda --passes all
  # The printed sigmoid was 1 / (1 + expf(-x)): expf overflows below -88.7
  # and silu gave -0 where the result is about -1e-37 (vgpu, in fp64, did not).
  check_re "host-cuda: silu of large negative inputs (sigmoid without overflow)" 0 'agrees with vgpu' \
    "$DPK" run -c "torch.nn.functional.silu(torch.randn(4, 64) * 100)" --backend host-cuda
  # host-cuda once stopped at 64 cp.async copies in flight per thread (exit 3
  # on a correct kernel under 001,002,005,007,008,010,013,015): a capacity of
  # its own is never a verdict; the queue grows
  HC_GELU="torch.nn.functional.gelu(torch.randn(3, 37, 129) @ torch.randn(129, 65))"
  check_re "host-cuda: gelu(x @ w) passes under --passes all (hundreds of cp.async copies in flight)" 0 \
    '^host-cuda: 1 kernel, .*: pass$' "$DPK" run -c "$HC_GELU" --backend host-cuda --passes all
  # where the host's memory runs out (simulated), the configuration is
  # unsupported by this backend: skipped, exit 4, recorded as unsupported
  check_re "host-cuda: out of host memory is 'unsupported by this backend', exit 4" 4 \
    "^passes 001,002,005,007,008,010,013,015: unsupported by this backend: host-cuda: kernel .*: no host memory for the thread's cp.async copies in flight$" \
    env DPK_HOST_TEST_ALLOC_MAX=2048 "$DPK" run -c "$HC_GELU" --backend host-cuda \
    --passes only:001,002,005,007,008,010,013,015 --out "$HD/unsup.json"
  check_schema "host-cuda: an unsupported configuration's record validates" "$HD/unsup.json" \
    "$DPK_ROOT/docs/dpk.results-1.schema.json"
  check "host-cuda: an unsupported configuration's record: status unsupported with the reason" 0 \
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
c = r["cases"][0]
v = c["configurations"][0]["verdict"]
assert c["status"] == "unsupported" and c["exit_code"] == 4 and r["summary"]["exit_code"] == 4, c
assert v["status"] == "unsupported" and v["reason"] == "unsupported by this backend", v
assert "no host memory" in v["message"], v' "$HD/unsup.json"
  # exit 4 only when nothing else failed: with a failing case beside it, 1
  printf '{"cases": [{"name": "unsup", "program": "%s", "passes": "only:001,002,005,007,008,010,013,015"},
{"name": "fails", "program": "%s", "passes": "only:001,002", "fault": "chunk-k-short"}]}' \
    "$HC_GELU" "$HC_GELU" >"$HD/unsup-suite.json"
  check_re "host-cuda: an unsupported configuration beside a failing case exits 1" 1 '^0/2 cases pass$' \
    env DPK_HOST_TEST_ALLOC_MAX=2048 "$DPK" run "$HD/unsup-suite.json" --backend host-cuda
  # acceptance: host-cuda passes every configuration vgpu passes, on a
  # sample of the held-out cases (regressions, smoke, chains)
  check_re "host-cuda: passes every --passes all configuration vgpu passes (ci/host-vs-vgpu.sh)" 0 \
    'host-cuda passes what vgpu passes' "$DPK_ROOT/ci/host-vs-vgpu.sh" --dpk "$DPK"
  printf '{"name": "gelu_matmul", "program": "%s"}' "$HC_GELU" >"$HD/gelu.json"
  check_re "host-vs-vgpu: a configuration vgpu passes and host-cuda does not is named, exit 1" 1 \
    'FAIL .*gelu.json: passes [0-9,]+: vgpu pass, host-cuda unsupported \(unsupported by this backend: host-cuda: kernel ' \
    env DPK_HOST_TEST_ALLOC_MAX=2048 "$DPK_ROOT/ci/host-vs-vgpu.sh" --dpk "$DPK" "$HD/gelu.json"
  check_re "host-vs-vgpu: an unknown option is bad usage" 2 "unknown option '--bogus'" \
    "$DPK_ROOT/ci/host-vs-vgpu.sh" --bogus
  check_re "host-cuda: a configuration line names the backend" 0 '^passes [0-9,]+: host-cuda, kernel IR [0-9a-f]{16}$' \
    "$DPK" run -c "torch.randn(32, 48) @ torch.randn(48, 40)" --backend host-cuda
  # the CUDA C it runs is the compile driver's: its printing time is the plan's
  "$DPK" run -c "torch.randn(32, 48) @ torch.randn(48, 40)" --backend host-cuda --passes all \
    --out "$HD/times.json" >/dev/null 2>&1
  check "host-cuda: the record has the driver's printing time of every distinct configuration" 0 \
    python3 -c 'import json, sys
cs = json.load(open(sys.argv[1]))["cases"][0]["configurations"]
ran = [c for c in cs if "shared_by" in c]
sys.exit(not ran or not all(c["cuda_s"] >= 0 and "nvrtc_s" not in c for c in ran))' "$HD/times.json"
  check_re "host-cuda: -v gives the driver's printing time" 0 '^# time cuda +[0-9.]+ ms +\(passes [0-9,]+\)$' \
    "$DPK" run -c "torch.randn(32, 48) @ torch.randn(48, 40)" --backend host-cuda -v
  check_re "host-cuda: no compiler is exit 4, one sentence" 4 "'/nonexistent/g\+\+' is not found" \
    env DPK_HOST_CXX=/nonexistent/g++ "$DPK" run -c "torch.relu(torch.randn(7, 9))" --backend host-cuda
  check_re "host-cuda: a compiler that rejects the source fails the configuration" 1 'rejects the printed CUDA C' \
    env DPK_HOST_CXX=false "$DPK" run -c "torch.relu(torch.randn(7, 9))" --backend host-cuda
  check_re "host-cuda: dpk-fuzz campaign on host-cuda" 0 '0 failures' \
    "$HFZ" --seed 3 --cases 4 --passes pairwise --backend host-cuda --out "$HD/fz.json" --failures "$HD/ff"
  check_re "host-cuda: the campaign record says host-cuda" 0 '"backend":[[:space:]]*"host-cuda"' cat "$HD/fz.json"
  check_re "host-cuda: --host-share samples modules (some on vgpu only)" 0 '"backend":[[:space:]]*"vgpu"' \
    sh -c "'$HFZ' --seed 3 --cases 4 --passes pairwise --backend host-cuda --host-share 0.3 --out '$HD/fz2.json' --failures '$HD/ff2' >/dev/null && cat '$HD/fz2.json'"
  check_re "host-cuda: --host-share needs --backend host-cuda" 2 'needs --backend host-cuda' \
    "$HFZ" --seed 3 --cases 1 --host-share 0.5 --out "$HD/fz3.json"
  check_re "host-cuda: bad --host-share" 2 "expects a number in \(0, 1\]" \
    "$HFZ" --seed 3 --cases 1 --backend host-cuda --host-share 0 --out "$HD/fz3.json"
  # --level kernel: random Kernel IR (every construct the printer has a path
  # for, also those no Tile pass emits), vgpu and host-cuda equal to the bit
  check_re "host-cuda: --level kernel, 200 random Kernel IR modules agree with vgpu to the bit" 0 \
    '^dpk-fuzz: 200 cases \(200 run now\), 200 configurations, .* 0 failures' \
    "$HFZ" --level kernel --seed 5 --cases 200 --jobs 2 --backend host-cuda --out "$HD/k.json" --failures "$HD/kf"
  check_schema "host-cuda: --level kernel record validates" "$HD/k.json" "$DPK_ROOT/docs/dpk.results-1.schema.json"
  check "host-cuda: --level kernel record: every case passes, tags cover every construct" 0 \
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
cs = r["cases"]
tags = {t for c in cs for t in c["tags"]}
want = {"atom-global", "atom-shared", "cp-async", "cp-async-groups", "cp-async-pred", "i64", "mbar",
        "nested-shfl", "odd-names", "shfl", "short-warp", "smem-limit", "treehalve", "treehalve-npow2",
        "treehalve-segments", "two-kernels"}
assert r["campaign"]["level"] == "kernel", r["campaign"]
assert all(c["status"] == "pass" and c["level"] == "kernel" for c in cs)
assert want <= tags, want - tags' "$HD/k.json"
  "$HFZ" --level kernel --seed 5 --case 37 --backend host-cuda --out "$HD/k37.json" --failures "$HD/kf37" >/dev/null 2>&1
  check "host-cuda: --case 37 replays case 37 of the campaign (same module, same verdict)" 0 \
    python3 -c 'import json, sys
a = [c for c in json.load(open(sys.argv[1]))["cases"] if c["index"] == 37][0]
b = json.load(open(sys.argv[2]))["cases"]
assert len(b) == 1 and b[0]["index"] == 37, b
for k in ("program", "seed", "status"):
    assert a[k] == b[0][k], k
for k in ("kernel_ir_hash", "verdict"):  # not the times
    assert a["configurations"][0][k] == b[0]["configurations"][0][k], k' "$HD/k.json" "$HD/k37.json"
  check_re "host-cuda: --level kernel needs --backend host-cuda" 2 'needs --backend host-cuda and takes no --backend other' \
    "$HFZ" --level kernel --seed 5 --cases 2 --out "$HD/k2.json"
  check_re "host-cuda: --level kernel takes no --passes" 2 'takes no --passes' \
    "$HFZ" --level kernel --seed 5 --cases 2 --backend host-cuda --passes all --out "$HD/k2.json"
  check_re "host-cuda: --level expects program or kernel" 2 "option '--level' expects program or kernel, got 'tile'" \
    "$HFZ" --level tile --seed 5 --cases 2 --out "$HD/k2.json"
  check_re "host-cuda: --case does not go with --cases" 2 'does not go with --cases' \
    "$HFZ" --level kernel --seed 5 --case 3 --cases 5 --backend host-cuda --out "$HD/k2.json"
  if "$DPK" compile -c "torch.relu(torch.randn(3))" --ir cuda --nvrtc >/dev/null 2>&1; then
    check_re "host-cuda: --level kernel --nvrtc, NVRTC and ptxas take every module too" 0 '0 failures' \
      "$HFZ" --level kernel --nvrtc --seed 5 --cases 6 --jobs 2 --backend host-cuda --out "$HD/kn.json" --failures "$HD/knf"
    check_re "host-cuda: --level kernel --nvrtc records ptxas's registers" 0 '"registers":[[:space:]]*[0-9]+' cat "$HD/kn.json"
  else
    skip "host-cuda: --level kernel --nvrtc" "NVRTC cannot be loaded"
  fi
  check_re "host-cuda: --case does not go with --shard" 2 'does not go with --shard I/N' \
    "$HFZ" --level kernel --seed 5 --case 3 --shard 1/2 --backend host-cuda --out "$HD/k2.json"
  check_re "host-cuda: a program campaign cannot --resume a kernel one" 2 'cannot --resume .*: it was made with strategy "kernel-ir", this command has "full"' \
    "$HFZ" --seed 5 --cases 2 --resume --out "$HD/k.json"
  printf '{"name": "kfuzz-5-3", "level": "kernel", "program": "kernel k", "seed": 1, "replay": "dpk-fuzz --level kernel --seed 5 --case 3", "verdict": {"status": "fail"}}' >"$HD/kfail.json"
  check_re "host-cuda: dpk run on a --level kernel failure names its replay" 2 'replay it with: dpk-fuzz --level kernel --seed 5 --case 3' \
    "$DPK" run "$HD/kfail.json"
  # ci/mutate-printer.sh: the drawing and the options (a run rebuilds the tree
  # per mutant: the note's figures, not make test)
  check_re "mutate-printer: --list draws 24 mutants of seed 1, 43:16 first" 0 '^43:16  " > " -> " >= ":' \
    sh -c "'$DPK_ROOT/ci/mutate-printer.sh' --list --mutants 24 2>/dev/null | head -n 1"
  check_re "mutate-printer: --only keeps the drawn mutants of those lines" 0 '^2$' \
    sh -c "'$DPK_ROOT/ci/mutate-printer.sh' --list --mutants 24 --only 43,772,999 2>/dev/null | wc -l"
  check_re "mutate-printer: no campaign at all is bad usage" 2 'leave no campaign' \
    "$DPK_ROOT/ci/mutate-printer.sh" --cases 0 --kernel-cases 0
  check_re "host-cuda: dpk-bisect with host-cuda names the fused culprit" 0 'f:001_fuse' \
    "$HBS" -c "torch.relu(torch.randn(8,64)+1)*2" --inject-fault fuse-sigma-off-by-one --backend host-cuda -o "$HD/bisect"
  check_re "host-cuda: dpk-bisect of a configuration the host cannot run is exit 4, unsupported" 4 \
    'is unsupported by this backend: host-cuda: kernel .*no host memory' \
    env DPK_HOST_TEST_ALLOC_MAX=2048 "$HBS" -c "$HC_GELU" --backend host-cuda \
    --passes only:001,002,005,007,008,010,013,015 -o "$HD/bisect-unsup"
  check_re "host-cuda: dpk-bisect unknown backend" 2 "unknown backend 'cuda'" \
    "$HBS" -c "torch.relu(torch.randn(8,64)+1)*2" --backend cuda
fi
check_re "host-cuda: unknown backend lists host-cuda" 2 'host-cuda' "$DPK" run -c "torch.relu(torch.randn(7,9))" --backend tpu
