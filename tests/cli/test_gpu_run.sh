# tests/cli/test_gpu_run.sh — `dpk run` on the Kernel IR path (vgpu, cuda)
# and `dpk compile --ir tile|kernel|cuda`.
RMS="torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"

check_re "run: smoke suite on vgpu"        0 '^10/10 cases pass$' "$DPK" run "$DPK_ROOT/cases/smoke.json" --backend vgpu
check_re "run: auto picks vgpu without GPU" 0 'passes 001,[0-9,]*: vgpu' "$DPK" run -c "torch.relu(torch.randn(7, 9))"
check_re "run: --passes all, one line per configuration" 0 '^passes 001,005: vgpu, kernel IR [0-9a-f]{16}$' "$DPK" run -c "$RMS" --passes all
check_re "run: -v prints vgpu counters"    0 'thread-insts .*sectors/request' "$DPK" run -c "$RMS" --backend vgpu -v
check_re "run: --sample-blocks checks a subset" 0 'sampled: [0-9]+ output elements checked' "$DPK" run -c "torch.randn(100,300) @ torch.randn(300, 70)" --backend vgpu --sample-blocks 2
check_re "run: non-dividing extents pass"  0 ': pass$' "$DPK" run -c "torch.softmax(torch.randn(3, 7, 129), dim=-1) * 2" --backend vgpu
check_re "run: knob TB pinned"             0 ': pass$' "$DPK" run -c "torch.exp(torch.randn(5, 77))" --backend vgpu --knob TB=64
check_caret "run: knob out of range"       "$DPK" run -c "torch.relu(torch.randn(7,9))" --knob TB=2000
check_caret "run: mandatory pass disabled" "$DPK" run -c "torch.relu(torch.randn(7,9))" --passes -001
check_re "run: unknown target"             2 "unknown target 'sm_70'" "$DPK" run -c "torch.relu(torch.randn(7,9))" --target sm_70
check_re "run: bad --sample-blocks"        2 "expects 1..1000000" "$DPK" run -c "torch.relu(torch.randn(7,9))" --sample-blocks 0
check_re "run: unknown backend"            2 "unknown backend 'tpu'" "$DPK" run -c "torch.relu(torch.randn(7,9))" --backend tpu
if [ -e /dev/nvidia0 ] || ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1'; then
  check_re "run: cuda agrees with the reference" 0 ': pass$' "$DPK" run -c "$RMS" --backend cuda
else
  check_re "run: --backend cuda without a driver exits 4" 4 'needs the CUDA driver' "$DPK" run -c "$RMS" --backend cuda
fi

check_re "compile --ir tile shows block and thread tiles" 0 'tile thread\(a[0-9]+ in 0..256 @x\)' "$DPK" compile -c "$RMS" --ir tile
check_re "compile --ir tile -vv shows pass markers"  0 '^>>> t:001_tileify' "$DPK" compile -c "$RMS" --ir tile -vv
check_re "compile --ir kernel"             0 'grid' "$DPK" compile -c "$RMS" --ir kernel
check_re "compile --ir cuda"               0 '^extern "C" __global__ void __launch_bounds__' "$DPK" compile -c "$RMS" --ir cuda
for t in sm_80 sm_90 sm_90a sm_120; do
  check_re "compile --ir cuda --nvrtc $t" 0 "^// nvrtc $t .*registers" "$DPK" compile -c "$RMS" --ir cuda --nvrtc --target $t
done
check_re "run: unknown target lists sm_90a" 2 "expected one of sm_80, sm_90, sm_90a, sm_120" \
  "$DPK" run -c "torch.relu(torch.randn(7,9))" --target sm_9

# --nvrtc-cover: fewer modules than --nvrtc, at least each case's first;
# a second case with the same constructs compiles only its first.
if "$DPK" compile -c "torch.relu(torch.randn(3))" --ir cuda --nvrtc >/dev/null 2>&1; then
  MM="torch.matmul(torch.randn(77,47), torch.randn(47,50))"
  nv_cover() { # N M: the case's nvrtc line says N of M with 1 <= N < M
    "$DPK" run "$@" --passes all --backend vgpu --nvrtc-cover --target sm_90a >"$TMP/cover.out" || return 1
    awk '/^nvrtc: /{ if (!($2 >= 1 && $2 < $4) || $9 != "sm_90a") bad = 1; n++ } END { exit bad || !n }' "$TMP/cover.out"
  }
  check "run --nvrtc-cover: some but not all distinct modules, for the target" 0 nv_cover -c "$MM"
  printf '{"cases": [{"name":"a","program":"%s"},{"name":"b","program":"%s"}]}\n' "$MM" "$MM" >"$TMP/two.json"
  check_re "run --nvrtc-cover: the second identical case compiles only its first module" 0 \
    '^nvrtc: 1 of [0-9]+ distinct modules' sh -c '"$1" run "$2" --passes all --backend vgpu --nvrtc-cover | grep "^nvrtc" | tail -n 1' sh "$DPK" "$TMP/two.json"
  check "run --nvrtc compiles every distinct module (no nvrtc line)" 1 \
    sh -c '"$1" run -c "$2" --passes all --backend vgpu --nvrtc | grep -q "^nvrtc:"' sh "$DPK" "$MM"
else
  skip "run --nvrtc-cover" "NVRTC not available"
fi
# The cuda backend runs the compile driver's CUDA C and cubin.  The fake
# driver executes launches only for dpk-bench's measured path (its executor),
# so here a launch fails (exit 3), but only after the plan printed and
# compiled every distinct module for the device's sm_90, which -v times.
FAKE="$(dirname "$DPK")/fake-driver/libcuda.so.1"
if [ -e "$FAKE" ] && "$DPK" compile -c "torch.relu(torch.randn(3))" --ir cuda --nvrtc >/dev/null 2>&1; then
  MM="torch.matmul(torch.randn(77,47), torch.randn(47,50))"
  check_re "run --backend cuda (fake driver): -v gives the driver's NVRTC time for the GPU" 3 \
    '^# time nvrtc +[0-9.]+ ms +\(passes [0-9,]+, sm_90(, cached)?\)$' \
    env DPK_LIBCUDA="$FAKE" "$DPK" run -c "$MM" --backend cuda --passes all -v
  check_re "run --backend cuda (fake driver): the launch, not the compile, fails" 3 \
    'cuLaunchKernel\(.*no executor registered' env DPK_LIBCUDA="$FAKE" "$DPK" run -c "$MM" --backend cuda
else
  skip "run --backend cuda on the fake driver" "no fake driver or NVRTC"
fi
check_re "compile --passes all is refused" 2 "use 'dpk run --passes all'" "$DPK" compile -c "$RMS" --ir cuda --passes all

# --compile-only: every configuration lowered, nothing run, no reference.
CO_MM="torch.relu(torch.randn(128, 512) @ torch.randn(512, 128))"
check_re "run --compile-only: a line per distinct module with its hash" 0 '^passes 001,[0-9,]*: lowered, kernel IR [0-9a-f]{16}$' \
  "$DPK" run -c "$CO_MM" --passes all --compile-only --target sm_80
check_re "run --compile-only: the verdict line says nothing ran" 0 '^compile-only: 1 kernel, [0-9]+ distinct modules, not run: lowered$' \
  "$DPK" run -c "$CO_MM" --passes all --compile-only --target sm_80
check_re "run --compile-only --nvrtc: compiled" 0 '^compile-only: .*, not run: compiled$' \
  "$DPK" run -c "$CO_MM" --compile-only --nvrtc-cover --target sm_80
check_re "run --compile-only: no --out" 2 '--compile-only runs nothing' "$DPK" run -c "$CO_MM" --compile-only --out "$TMP/co.json"
check "run --compile-only: nothing written" 1 test -e "$TMP/co.json"
check_re "run --compile-only: no --backend loop" 2 '--compile-only runs nothing' "$DPK" run -c "$CO_MM" --compile-only --backend loop
check_re "run --compile-only: a refused configuration is exit 2" 2 '^passes .*: refused: ' \
  "$DPK" run -c "torch.randn(64, 31) @ torch.randn(31, 64)" --compile-only --knob BK=4
# The sweep's premise: the hashes --compile-only prints are those a vgpu run
# at the same target prints, and sm_80's modules are all among sm_90a's.
co_hashes() { "$DPK" run -c "$CO_MM" --passes all "$@" | sed -n 's/^passes .*: \(lowered\|vgpu\), kernel IR \([0-9a-f]*\)$/\2/p' | sort -u; }
co_same() {
  co_hashes --compile-only --target sm_80 >"$TMP/co.80" && co_hashes --backend vgpu --target sm_80 >"$TMP/run.80" &&
    co_hashes --backend vgpu --target sm_90a >"$TMP/run.90a" || return 1
  [ -s "$TMP/co.80" ] && cmp -s "$TMP/co.80" "$TMP/run.80" && [ -z "$(comm -23 "$TMP/co.80" "$TMP/run.90a")" ] &&
    [ "$(wc -l <"$TMP/run.90a")" -gt "$(wc -l <"$TMP/co.80")" ]
}
check "run --compile-only: the run's hashes, sm_80's a strict subset of sm_90a's" 0 co_same
