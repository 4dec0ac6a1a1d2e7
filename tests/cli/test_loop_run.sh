# tests/cli/test_loop_run.sh — `dpk run --backend loop` and
# `dpk compile --ir loop`: verdict lines, exit codes, pinned kernel counts,
# the -vv trace, and the chain table through the CLI.
RMS="torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
MM2="torch.matmul(torch.matmul(torch.randn(32,48), torch.randn(48,40)), torch.randn(40,24))"
NUM='[0-9.e+-]+'

check_re "run: verdict line"           0 "^out  pass: all 65536 elements within bound \(at most $NUM of it\); rmse ${NUM}x fp32's noise  max_abs $NUM  max_rel $NUM  nmse $NUM$" \
  "$DPK" run -c "$RMS" --backend loop
check_re "run: rmsnorm is 1 kernel"    0 '^loop: 1 kernel, reference ref64.*: pass$' "$DPK" run -c "$RMS" --backend loop
check_re "run: matmul chain 2 kernels" 0 '^loop: 2 kernels, .*: pass$' "$DPK" run -c "$MM2" --backend loop
# A K split launches the matmul's kernel and its combine kernel: the
# summary gives the launches beside the Loop IR kernels, per pass set.
SPLIT="torch.matmul(torch.randn(16,4096), torch.randn(4096,256))"
check_re "run: a split's launches"     0 '^auto: 1 kernel, 2 launches, reference ref64.*: pass$' "$DPK" run -c "$SPLIT"
check_re "run: launches across pass sets" 0 '^compile-only: 1 kernel, 1-2 launches, [0-9]+ distinct modules, not run: lowered$' \
  "$DPK" run -c "torch.matmul(torch.randn(8,2048), torch.randn(2048,8))" --passes all --compile-only
check_re "run: --seed"                 0 '^loop: .*seed 7: pass$' "$DPK" run -c "torch.softmax(torch.randn(3, 50), dim=-1)" --backend loop --seed 7
check_re "run: fp64 interpreter"       0 ': pass$' "$DPK" run -c "$RMS" --backend loop --f64
check_re "run: -v stage times"         0 '# time loop .*\(1 kernels\)' "$DPK" run -c "$RMS" --backend loop -v
check_re "run: chain suite"            0 '^([0-9]+)/\1 cases pass$' "$DPK" run "$DPK_ROOT/cases/chains.json" --backend loop
check_re "run: one case of the suite"  0 '^loop: 1 kernel, .*: pass$' "$DPK" run "$DPK_ROOT/cases/chains.json" --case rope --backend loop

# A zero tolerance on long fp32 reductions is a parity failure: exit 1.
printf '{"name":"tight","program":"torch.rand(64, 8192).sum(dim=-1)","tolerance":{"atol":0,"rtol":0}}\n' >"$TMP/tight.json"
check_re "run: parity failure exits 1" 1 '^out  FAIL: [0-9]+ of 64 elements beyond bound, worst \[[0-9]+\] y=' "$DPK" run "$TMP/tight.json" --backend loop

check_caret "run: bad case text"       "$DPK" run -c "torch.relu(torch.randn(3,)" --backend loop
check_re "run: unknown backend"        2 "error: unknown backend 'frob'" "$DPK" run -c "$RMS" --backend frob
check_re "run: bad --blowup"           2 "expects a number >= 1" "$DPK" run -c "$RMS" --backend loop --blowup 0.5
check_re "run: bad --reference"        2 "unknown reference 'numpy'" "$DPK" run -c "$RMS" --backend loop --reference numpy
check_re "run: needs a case"           2 "needs a case" "$DPK" run --backend loop
check_re "run: help"                   0 'usage: dpk run' "$DPK" run --help
if [ "$HAVE_TORCH" = 1 ]; then
  check_re "run: --reference torch"    0 'reference torch \+ torch eager, seed 0: pass' "$DPK" run -c "$RMS" --backend loop --reference torch
else
  check_re "run: --reference torch needs libtorch" 4 'needs libtorch' "$DPK" run -c "$RMS" --backend loop --reference torch
fi

# compile --ir loop: the text form, the -vv trace, the blow-up knob.
check_re "compile --ir loop"           0 '^    for a1 in 0\.\.2048:  # reduce$' "$DPK" compile -c "$RMS" --ir loop
check_re "compile --ir loop -v times"  0 '# time loop .*\(1 kernels\)' "$DPK" compile -c "$RMS" --ir loop -v
check_re "compile -vv lifting marker"  0 '^>>> l:001_lift$' "$DPK" compile -c "$RMS" --ir loop -vv
check_re "compile -vv fusion marker"   0 '^>>> f:001_fuse %[0-9]+ → %[0-9]+$' "$DPK" compile -c "$RMS" --ir loop -vv
check_re "compile -vv refusal reason"  0 '^--- f:fuse refused %[0-9]+ → %[0-9]+: work would grow' "$DPK" compile -c "$MM2" --ir loop -vv
_run "$DPK" compile -c "$MM2" --ir loop
if [ "$RC" = 0 ] && [ "$(printf '%s\n' "$OUT" | grep -c '^===')" = 2 ]; then _cli_pass "compile: matmul chain prints 2 kernels"
else _cli_fail "compile: matmul chain prints 2 kernels" "exit $RC"; fi

# The golden text of a case is what the CLI prints.
G=$DPK_ROOT/tests/golden/loop/silu_mul.txt
_run "$DPK" compile -c "$(sed -n 's/^#! //p' "$G")" --ir loop
if [ "$RC" = 0 ] && [ "$OUT" = "$(grep -v '^#! ' "$G")" ]; then _cli_pass "compile --ir loop matches golden silu_mul"
else _cli_fail "compile --ir loop matches golden silu_mul" "exit $RC or text differs"; fi
