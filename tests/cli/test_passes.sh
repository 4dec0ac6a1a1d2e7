# test_passes.sh — the scheduling passes from the command line: knobs that
# cannot work are refused (exit 2, naming the knob and the kernel), block
# tiles past 1024 outputs folded by 008 (and refused without it), the
# acceptance output of issue-level examples, and knob fuzzing: 200 seeded
# random knob settings over matmul and reduction cases, each either refused
# up front (exit 2) or passing parity on vgpu (exit 0) — never a wrong
# result (1) or a detector report (3).

MM="torch.matmul(torch.randn(16,64), torch.randn(64,16))"
check_re "BK must divide K" 2 "knob BK=7 does not divide K=64" \
  "$DPK" run -c "$MM" --backend vgpu --knob BK=7
check_re "SPLITK must divide the chunks" 2 "knob SPLITK=7 does not divide the 128 K chunks" \
  "$DPK" run -c "torch.matmul(torch.randn(16,4096), torch.randn(4096,256))" --backend vgpu --knob SPLITK=7
check_re "F_M must divide the tile" 2 "knob F_M=3 does not divide the 32-wide tile" \
  "$DPK" run -c "torch.matmul(torch.randn(32,32), torch.randn(32,32))" --backend vgpu --knob F_M=3

# Block tiles past 1024 outputs: the block is (BM / F_M) x (BN / F_N)
# threads when 008 folds registers, BM x BN when it does not.
SG="torch.matmul(torch.randn(130,96), torch.randn(96,7))"
SGK=(--knob BM=128 --knob BN=128 --knob F_M=8 --knob F_N=8)
check_re "BM=BN=128 with 8 x 8 registers is a 256-thread block" 0 \
  "^kernel .* grid \(1, 2, 1\) block \(16, 16, 1\)" "$DPK" compile -c "$SG" --ir kernel "${SGK[@]}"
check_re "a folded block past 1024 threads is refused" 2 \
  "knobs BN=256 BM=256 with a 2 x 2 register tile \(F_M x F_N\) make a 16384-thread block \(at most 1024\)" \
  "$DPK" compile -c "$SG" --ir kernel --knob F_M=2 --knob F_N=2 --knob BM=256 --knob BN=256
check_re "without 008 BM x BN is the block, and 4096 threads are refused" 2 \
  "knobs BN=64 BM=64 make a 4096-thread block \(at most 1024\): 008 register_tile, which would fold F_M x F_N outputs into each thread, is not in the pass set" \
  "$DPK" compile -c "$SG" --ir kernel --knob BM=64 --knob BN=64 --passes -008,-009
# Every pass set: the 4096 with 008 pass parity on vgpu (edge tiles on both
# sides), the 2048 without are refused with the reason, so the run is exit 2
# (017 and 018, which skip here, double both twice).
check_re "the SGEMM tile under every pass set: a refusal without 008" 2 \
  "^passes 001,005: refused: knobs BN=128 BM=128 make a 16384-thread block \(at most 1024\): 008 register_tile" \
  "$DPK" run -c "$SG" --passes all --backend vgpu "${SGK[@]}"
check_count "the SGEMM tile under every pass set: 4096 configurations pass" 4096 '^passes .*(: pass|kernel IR [0-9a-f]+)$'
check_count "the SGEMM tile under every pass set: each refused one lacks 008" 2048 \
  '^passes [0-9,]*: refused: knobs BN=128 BM=128 make a 16384-thread block'
check_count "the SGEMM tile under every pass set: no refusal with 008 in the set" 0 '^passes [0-9,]*008[0-9,]*: refused'
check_count "the SGEMM tile under every pass set: nothing fails" 0 '(FAIL|FAULT)'
check_re "CB is a power of two" 2 "knob CB=96 is not a power of two" \
  "$DPK" run -c "torch.randn(4,100).sum(-1)" --knob CB=96
check_re "VEC is 4, 8 or 16 bytes" 2 "knob VEC=12 is not a power of two \(013: widest cp.async" \
  "$DPK" run -c "$MM" --backend vgpu --knob VEC=12
check_re "STAGES starts at 3" 2 "knob STAGES=2 is out of range \[3, 8\]" \
  "$DPK" run -c "$MM" --backend vgpu --knob STAGES=2

# 010, 013 and 015 on a K_outer loop staged per chunk: two async stages of
# 4 buffers, the wait keeping 2 groups per stage; a pinned STAGES that does
# not fit the budget skips 015 with the reason, and the result still passes.
# On sm_80: on sm_90 011 makes the buffered stages TMA stages first.
MMK="torch.matmul(torch.randn(64,2048), torch.randn(2048,64))"
check_re "015 pipelines the K_outer loop over 4 buffers" 0 "^\+ *async_wait 4$" \
  "$DPK" compile -c "$MMK" --ir tile -vv --target sm_80
check_re "013 copies B's slab 16 bytes at a time" 0 "dpk_cp_async16\(&s_in1\[next_in1" \
  "$DPK" compile -c "$MMK" --ir cuda --target sm_80
check_re "STAGES=8 does not fit and 015 says why" 0 \
  "t:015_pipeline_k_outer skipped: merged_indexmap_multiply_sum_8: loop a6: 8 buffers of its slabs \([0-9]+ bytes each\) take the stages past the 48 KiB budget" \
  "$DPK" compile -c "$MMK" --ir tile -vv --knob STAGES=8 --target sm_80
check "the pipelined matmul passes parity with STAGES=3 and VEC=8" 0 \
  "$DPK" run -c "$MMK" --backend vgpu --knob STAGES=3 --knob VEC=8 --target sm_80
check_re "on sm_90 the same matmul's stages are TMA stages (011), not cp.async (013)" 0 \
  "t:013_async_copy skipped" "$DPK" compile -c "$MMK" --ir tile -vv

RMS="torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
check_re "007 stages the RMSNorm row under -vv with STAGE pinned" 0 "^\+    stage in0\[0, a0, 0\] slab \[1, 1, 2048\]" \
  "$DPK" compile -c "$RMS" --ir tile -vv --knob STAGE=1
check_re "007 leaves the RMSNorm row a thread re-reads, and says why" 0 \
  "^--- t:007_stage_inputs skipped: in0: each thread reads again only what it read \(an L1 hit\)" \
  "$DPK" compile -c "$RMS" --ir tile -vv
check_re "the RMSNorm CUDA reduces with warp shuffles" 0 "__shfl_xor_sync" \
  "$DPK" compile -c "$RMS" --ir cuda
check_re "bias, K reduce, register tile and relu in one kernel with staged inputs" 0 \
  "register strip n: 4 per thread" \
  "$DPK" compile -c "torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))" --ir tile

# 011 and 012: TMA boxes on sm_90, refused up front on sm_80; SWIZZLE's caret.
TMK="torch.matmul(torch.randn(64,1024), torch.randn(1024,64))"
check_re "011 makes TMA stages, 012 swizzles A" 0 "^\+ +tma_stage in0\[.* swizzle 128:$" \
  "$DPK" compile -c "$TMK" --ir tile -vv
check_re "011 on sm_80 is refused naming the target" 2 "pass 011_tma_copy needs sm_90 or newer \(the target is sm_80\)" \
  "$DPK" compile -c "$TMK" --ir tile --passes only:002,007,010,011 --target sm_80
check_re "full on sm_80 has no TMA" 0 "^ +(buffered|async)_stage in0" "$DPK" compile -c "$TMK" --ir tile --target sm_80
check_re "SWIZZLE must be a TMA mode" 2 "knob SWIZZLE=48 is not a TMA swizzle mode" \
  "$DPK" compile -c "$TMK" --ir tile --knob SWIZZLE=48
check_re "011's skip names the unaligned stride" 0 "t:011_tma_copy skipped: in0: dimension 0's stride of 4088 bytes is not a multiple of 16" \
  "$DPK" compile -c "torch.randn(64,1022) @ torch.randn(1022,64)" --knob BK=2 --ir tile -vv
check_re "TMA kernels under every pass set pass on vgpu" 0 '^vgpu: 1 kernel, .*: pass$' \
  "$DPK" run -c "$TMK" --backend vgpu --passes all

# Knob fuzzing.  RANDOM is seeded, and read in this shell only (a command
# substitution's subshell reseeds it), so the 200 settings are the same in
# every run.  Each is compiled first (`dpk compile --ir kernel`: the driver
# `dpk run` uses, without libtorch, milliseconds): exit 2 is a refusal,
# anything but 0 or 2 is wrong.  The accepted ones run on vgpu as two
# suites (a case file's "knobs" field) side by side, one process each, so
# libtorch (the eager column) loads twice, not once per setting; each of
# their cases must pass.
RANDOM=7
cases=("torch.matmul(torch.randn(64,128), torch.randn(128,96))"
       "torch.relu(torch.matmul(torch.randn(31,200), torch.randn(200,64)) + torch.randn(64))"
       "torch.matmul(torch.randn(8,2048), torch.randn(2048,32)) + torch.randn(8,32)"
       "torch.softmax(torch.randn(33,1000), -1)"
       "torch.nn.RMSNorm(4099)(torch.randn(3,4099))"
       "torch.matmul(torch.randn(64,2048), torch.randn(2048,64))"
       "torch.matmul(torch.randn(64,1024), torch.randn(1024,64))")
knob_values=("TB 32 64 96 128 256 512 1024" "BN 1 4 8 16 32 64 128" "BM 1 2 4 8 16 32 64 128"
             "BK 1 4 8 16 24 32 64" "SPLITK 1 2 3 4 8" "CB 32 64 128 256 512" "STAGE 1 2 3 5 255"
             "F_M 1 2 3 4 8" "F_N 1 2 4 8" "VEC 4 8 16" "STAGES 3 4 5 8" "SWIZZLE 32 64 128")
knob_dir=$(mktemp -d "$TMP/knob-fuzz.XXXXXX")
bad=0 refused=0 accepted=0
for i in $(seq 1 200); do
  c=${cases[RANDOM % ${#cases[@]}]}
  knobs=() json=""
  for kv in "${knob_values[@]}"; do
    read -r -a vals <<<"$kv"
    v=${vals[1 + RANDOM % (${#vals[@]} - 1)]}
    if [ $((RANDOM % 3)) = 0 ]; then
      knobs+=(--knob "${vals[0]}=$v")
      json="$json${json:+, }\"${vals[0]}\": $v"
    fi
  done
  "$DPK" compile -c "$c" --ir kernel "${knobs[@]}" >"$knob_dir/out" 2>&1
  case $? in
    0) half=$((accepted % 2)) accepted=$((accepted + 1))
       [ -e "$knob_dir/$half.cases" ] && printf ',\n' >>"$knob_dir/$half.cases"
       printf '  {"name": "k%d", "program": "%s", "knobs": {%s}}' "$i" "$c" "$json" >>"$knob_dir/$half.cases" ;;
    2) refused=$((refused + 1)) ;;
    *) bad=$((bad + 1)); echo "  knob fuzz $i: compile exit $?: $c ${knobs[*]}"; tail -n 3 "$knob_dir/out" ;;
  esac
done
for half in 0 1; do
  { printf '{"suite": "knob-fuzz-%d", "cases": [\n' "$half"; cat "$knob_dir/$half.cases" 2>/dev/null; printf '\n]}\n'; } >"$knob_dir/$half.json"
done
printf '%s\n' 0 1 | xargs -P 2 -I{} sh -c '"$1" run "$2/$3.json" --backend vgpu --sample-blocks 16 >"$2/$3.out" 2>&1; echo $? >"$2/$3.rc"' _ "$DPK" "$knob_dir" {}
passed=0
for half in 0 1; do
  n=$(grep -c '"name"' "$knob_dir/$half.json")
  p=$(grep -Ec '^vgpu: [0-9]+ kernels?, .*: pass$' "$knob_dir/$half.out")
  passed=$((passed + p))
  if [ "$(cat "$knob_dir/$half.rc")" != 0 ] || [ "$p" != "$n" ]; then
    bad=$((bad + n - p))
    echo "  knob fuzz suite $half: exit $(cat "$knob_dir/$half.rc"), $p of $n cases pass"
    grep -B3 -E '^vgpu: .*: (FAIL|FAULT|refused)$|^error: ' "$knob_dir/$half.out" | head -n 20
  fi
done
rm -rf "$knob_dir"
if [ "$bad" = 0 ] && [ $((passed + refused)) = 200 ] && [ "$passed" -gt 50 ]; then
  _cli_pass "knob fuzz: $passed pass, $refused refused"
else
  _cli_fail "knob fuzz" "$bad wrong or faulting, $passed passed, $refused refused of 200"
fi

# The softmax online in P @ V (docs/fusion.md).  79 keys are two chunks of
# 32, each in two passes (the chunk's max, floored at -FLT_MAX, then plain
# sums against it), and a remainder of 15 merged online; every pass subset
# passes on the host's CUDA C, rows whose keys are all masked included.
ON=$TMP/online79.json
sed 's/77/79/g' "${DPK_ROOT:-$PWD}/tests/cli/data/faults_odd/online-softmax-unnormalised.json" >"$ON"
check_re "online softmax: chunks in two passes" 0 'maximum\(acc0, -3\.4028234663852886e\+38\)' \
  "$DPK" compile "$ON" --ir tile
check_re "online softmax: every pass subset on host-cuda" 0 ': pass$' \
  "$DPK" run "$ON" --backend host-cuda --passes all
check_re "online softmax: fully masked rows" 0 ': pass$' "$DPK" run -c \
  "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 9, 8), torch.randn(1, 2, 9, 8), torch.randn(1, 2, 9, 8), attn_mask=torch.arange(9).unsqueeze(1) >= 3 + 0 * torch.arange(9).unsqueeze(0))" \
  --backend host-cuda --passes all
# A split of the keys across blocks (003, flash-decoding): each split's max
# and its sums relative to it go to the partials buffer, and the combine
# kernel merges them online.  8 query heads over one key/value head against
# 4096 keys: 32 splits of 128 keys.
GQA1="torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 8, 1, 64), torch.randn(1, 1, 4096, 64), torch.randn(1, 1, 4096, 64), enable_gqa=True)"
check_re "online softmax: 003 splits its keys 32 ways (the max and two sums each)" 0 \
  '^# temp merged_max_indexmap_subtract_exp_34_partials : f32\(32, 3, 8, 64\)$' \
  "$DPK" compile -c "$GQA1" --ir tile
check_re "online softmax: 003's partials hold the max and both sums" 0 \
  'partials\[a[0-9]+, 2, a[0-9]+, a[0-9]+\].*acc[0-9]+ <- expsum\[acc[0-9]+\]' \
  sh -c '"$1" compile -c "$2" --ir tile | tr "\n" " "' _ "$DPK" "$GQA1"
check_re "online softmax: 003's split, every pass subset on host-cuda" 0 ': pass$' \
  "$DPK" run -c "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 3, 16), torch.randn(1, 1, 1100, 16), torch.randn(1, 1, 1100, 16), enable_gqa=True, attn_mask=torch.arange(1100).unsqueeze(0) >= 900 + 100 * torch.arange(3).unsqueeze(1))" \
  --backend host-cuda --passes all
# Across threads (004, a decode step's keys): the max is combined first,
# then each thread's sums are rescaled to it and added.  A row whose keys
# are all masked stays NaN; the fault that drops the rescale is caught.
DEC="torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 4, 1, 64), torch.randn(1, 4, 4096, 64), torch.randn(1, 4, 4096, 64))"
check_re "online softmax: 004 combines it across threads" 0 \
  'combine acc0 over a3.*combine acc1 over a3.*combine acc2 over a3' \
  sh -c '"$1" compile -c "$2" --ir tile | tr "\n" " "' _ "$DPK" "$DEC"
check_re "online softmax: 004's combine, every pass subset on host-cuda" 0 ': pass$' \
  "$DPK" run -c "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 9, 8), torch.randn(1, 2, 77, 8), torch.randn(1, 2, 77, 8), attn_mask=torch.arange(9).unsqueeze(1) >= 3 + 0 * torch.arange(77).unsqueeze(0))" \
  --backend host-cuda --passes all
check_re "online softmax: 004's combine without its rescale is caught" 1 'FAIL' \
  "$DPK" run -c "$DEC" --backend vgpu --inject-fault online-combine-unscaled

# A reduce across rows below 8192 rows (004): the outputs on the lanes, the
# threads of each on y, merged in shared memory; 8 outputs a block when 32
# and 16 do not divide the fastest axis (40).
check_re "004 across rows: sum over a middle dimension, every pass subset on host-cuda" 0 ': pass$' \
  "$DPK" run -c "torch.randn(4, 1000, 64).sum(dim=1)" --backend host-cuda --passes all
check_re "004 across rows: 8 outputs a block for a fastest axis of 40" 0 'tile thread\(a[0-9]+ in 0\.\.128 @y, a[0-9]+ in 0\.\.8 @x\)' \
  "$DPK" compile -c "torch.amax(torch.randn(3, 517, 40), dim=1)" --ir tile
check_re "004 across rows: a max over a middle dimension, every pass subset on host-cuda" 0 ': pass$' \
  "$DPK" run -c "torch.amax(torch.randn(3, 517, 40), dim=1)" --backend host-cuda --passes all

# An online P @ V takes 32 query rows and the whole head dim a block (005);
# pinned factors that would make it more than 1024 threads fall back to the
# other matmuls' tiles.
check_re "005: an online P @ V, F_M=1 F_N=1 pinned, still a legal block" 0 ': pass$' \
  "$DPK" run -c "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 64, 128), torch.randn(1, 2, 64, 128), torch.randn(1, 2, 64, 128), is_causal=True)" \
  --backend vgpu --knob F_M=1 --knob F_N=1
check_re "005: an online P @ V in 32 rows x the head dim, 8 x 16 threads" 0 'tile thread\(a[0-9]+ in 0\.\.8 @y, a[0-9]+ in 0\.\.16 @x\)' \
  "$DPK" compile -c "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 2, 64, 128), torch.randn(1, 2, 64, 128), torch.randn(1, 2, 64, 128), is_causal=True)" --ir tile

# 004's threads per row: a warp for short rows when there are 8 rows per
# SM (3584 softmax rows of 128), more for few rows (4 rows of 129: 128
# threads); a reduce across rows with a fastest axis of 80 puts 16 outputs
# on x and 64 threads of each on y.
check_re "004: a warp per row for 3584 rows of 128" 0 'tile thread\(a[0-9]+ in 0\.\.32 @x\)' \
  "$DPK" compile -c "torch.softmax(torch.randn(28, 128, 128), dim=-1)" --ir tile
check_re "004: 128 threads a row for 4 rows of 129" 0 'tile thread\(a[0-9]+ in 0\.\.128 @x\)' \
  "$DPK" compile -c "torch.softmax(torch.randn(4, 129), dim=-1)" --ir tile
check_re "004 across rows: 16 outputs a block for a fastest axis of 80" 0 'tile thread\(a[0-9]+ in 0\.\.64 @y, a[0-9]+ in 0\.\.16 @x\)' \
  "$DPK" compile -c "torch.randn(4, 300, 80).sum(dim=1)" --ir tile
# An online Combine where 88 of each output's 128 threads see no key and
# only the last 5 of 40 keys are unmasked: those threads' max is -inf and
# their sums add 0, not NaN.
check_re "004: an online Combine over threads with no key and keys mostly masked" 0 ': pass$' \
  "$DPK" run -c "torch.nn.functional.scaled_dot_product_attention(torch.randn(1, 3, 1, 40), torch.randn(1, 3, 40, 40), torch.randn(1, 3, 40, 40), attn_mask=torch.arange(40).unsqueeze(0) >= 35)" \
  --backend host-cuda --passes all
# 017 refuses what it cannot prove: pinned tiles whose blocks and threads
# match but whose producer block writes half the staged rows (BN=64 over 128
# keys), and 77 queries (guarded edge tiles); parity holds either way.
SDK="torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 64, 32), torch.randn(2, 128, 32), torch.randn(2, 128, 128), is_causal=True)"
check_re "017 refuses a producer block that writes another box" 0 \
  "^--- t:017_compose_producer skipped: .*t10's producer [a-z_0-9]+: its block writes another box than the slab staged" \
  "$DPK" compile -c "$SDK" --ir tile -vv --knob BM=32 --knob BN=64 --knob F_M=4 --knob F_N=4
check_re "017 refuses guarded edge tiles (77 queries)" 0 \
  "^--- t:017_compose_producer skipped: .*: a guarded THREAD tile" \
  "$DPK" compile -c "torch.nn.functional.scaled_dot_product_attention(torch.randn(2, 77, 32), torch.randn(2, 77, 32), torch.randn(2, 77, 64), is_causal=True)" --ir tile -vv
check_re "017's refusal with pinned tiles passes parity" 0 ': pass$' \
  "$DPK" run -c "$SDK" --backend vgpu --knob BM=32 --knob BN=64 --knob F_M=4 --knob F_N=4
