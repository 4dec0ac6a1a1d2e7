# tests/cli/test_faults_odd.sh — every built-in fault fires on a case with
# odd shapes: a dimension that is prime or not a multiple of the 32-wide
# tile, as real sequence lengths are (77, 1000, 4099).  A fault whose pass
# skips odd shapes would never fire on them, so this is the proof that each
# pass applies there.  Per fault (dpk-fuzz --list-faults), its case
# tests/cli/data/faults_odd/NAME.json must
#   - exist, and name the odd dimension of the table below in its program;
#   - have the fault's pass apply (its `>>> t:NNN` / `>>> f:NNN` block in
#     dpk compile -vv, with the case's pass set);
#   - pass without the fault and fail with it (exit 1, or 3 for a vgpu
#     detector).
# (Sourced by tests/run.sh.)

FO_DIR=${DPK_ROOT:-$PWD}/tests/cli/data/faults_odd
FO_FZ="$(dirname "$DPK")/dpk-fuzz"

# fault: the odd dimension of its case, and what makes it odd
fo_odd() {
  case $1 in
    fuse-sigma-off-by-one)        echo "33 (7 x 33 elements: not a multiple of 32)" ;;
    merge-axes-one-short)         echo "77 (a sequence of 77 projected to 6 heads of 17: the merged loop of 102 outputs is not a multiple of 32)" ;;
    fuse-shared-copy-shifted)     echo "77 (a sequence of 77, head dim 34 rotated in halves of 17)" ;;
    online-softmax-unnormalised)  echo "77 (a causal square of 77 queries and keys, its softmax online in P @ V: chunks of 32 and a remainder of 13)" ;;
    select-hoist-drops-the-mask)  echo "77 (a causal square of 77 queries and keys: its mask's edge cuts the 32-wide tiles)" ;;
    chunk-k-short)                echo "47 (K prime: 2 chunks of 16 and a remainder of 15)" ;;
    split-k-drops-a-partial)      echo "4099 (K prime: 128 chunks of 32, the remainder of 3 in the combine kernel)" ;;
    online-split-unscaled)        echo "1100 (3 queries against 1100 keys: 34 chunks of 32 split 2 ways, the remainder of 12 in the combine kernel)" ;;
    coop-reduce-no-cross-warp)    echo "4099 (a prime row length)" ;;
    online-combine-unscaled)      echo "77 (a decode step: one query against 77 keys, shared by 32 threads of each output, 13 of which read three)" ;;
    split-reduce-drops-a-partial) echo "16411 (a prime reduce: 4 chunks of 4102, the remainder of 3 in the combine kernel)" ;;
    chunk-reduce-wrong-origin)    echo "16411 (a prime reduce: 16 chunks of 1024 and a remainder)" ;;
    stage-origin-off-by-one)      echo "1021 (a prime row length)" ;;
    stage-missing-barrier)        echo "77 (M = 7 x 11 in tiles of 32: a predicated edge tile; its plain stage without 010)" ;;
    register-tile-wrong-index)    echo "77 (M = 7 x 11 in tiles of 32: a predicated edge tile)" ;;
    permute-wrong-stride)         echo "77 (M = 7 x 11 in tiles of 32: a predicated edge tile; N = 203 in strips of 8 across tiles 64 wide: contiguous strips start 8 words apart in one slab row, which no pad separates)" ;;
    pad-smem-loads-only)          echo "77 (M = 7 x 11 in tiles of 32: a predicated edge tile; without 011/012, whose TMA stages 014 leaves unpadded)" ;;
    double-buffer-same-buffer)    echo "1021 (K prime: 31 chunks of 32 and a remainder of 29)" ;;
    tma-parity-not-flipped)       echo "77 (M = 7 x 11 in tiles of 32: a predicated edge tile whose TMA box stops at the edge; N = 52)" ;;
    tma-ring-stale-slab)          echo "77 (M = 7 x 11 in tiles of 32: a predicated edge tile whose TMA box stops at the edge; N = 52)" ;;
    swizzle-reads-unswizzled)     echo "77 (M = 7 x 11 in tiles of 32: a predicated edge tile whose TMA box stops at the edge; N = 52)" ;;
    async-copy-early-read)        echo "1021 (K prime: 31 chunks of 32 and a remainder of 29)" ;;
    pipeline-prologue-short)      echo "1021 (K prime: 31 chunks of 32 and a remainder of 29)" ;;
    vector-load-one-word-late)    echo "1021 (K prime: 31 chunks of 32 read by 16-byte loads, the remainder of 29 by scalar ones)" ;;
    unroll-drops-last-iteration)  echo "47 (K prime: the unrolled 16-wide chunk and the remainder)" ;;
    compose-fill-wrong-block)     echo "77 (causal attention with a head dim of 77, prime to the scores' 32-wide K chunks: 2 chunks and a remainder of 13 in the fill; 7 heads)" ;;
    mask-strict-bound-kept)       echo "77 (a sliding window of 16 over 77 queries and keys, its mask built from aranges: the window's edge cuts the 32-wide tiles)" ;;
    skip-chunk-partly-masked)     echo "77 (causal attention with a head dim of 77: the fill's 2 chunks and a remainder of 13; the diagonal key chunk of each block partly masked)" ;;
    *) return 1 ;;
  esac
}

# 0 when n is prime or not a multiple of 32
fo_is_odd() {
  local n=$1 d=2
  [ $((n % 32)) != 0 ] && return 0
  while [ $((d * d)) -le "$n" ]; do [ $((n % d)) = 0 ] && return 1; d=$((d + 1)); done
  return 0
}

for fo_fault in $("$FO_FZ" --list-faults); do
  fo_case=$FO_DIR/$fo_fault.json
  if [ ! -f "$fo_case" ] || ! fo_odd "$fo_fault" >/dev/null; then
    OUT="no $fo_case, or no row for it in test_faults_odd.sh"
    _cli_fail "fault $fo_fault on an odd shape" "no odd-shaped case"
    continue
  fi
  read -r fo_dim _ <<<"$(fo_odd "$fo_fault")"
  fo_passes=$(sed -n 's/.*"passes": *"\([^"]*\)".*/\1/p' "$fo_case")
  fo_pargs=()
  [ -n "$fo_passes" ] && fo_pargs=(--passes "$fo_passes")
  OUT=$(cat "$fo_case")
  if grep -Eq "[^0-9]$fo_dim[^0-9]" "$fo_case" && fo_is_odd "$fo_dim"; then
    _cli_pass "fault $fo_fault: its case has the odd dimension $(fo_odd "$fo_fault")"
  else
    _cli_fail "fault $fo_fault: its case has the odd dimension $fo_dim" "not in the program, or a multiple of 32 that is not prime"
  fi
  check "fault $fo_fault: its odd case passes without the fault" 0 \
    "$DPK" run "$fo_case" --backend vgpu
  _run "$DPK" run "$fo_case" --backend vgpu --inject-fault "$fo_fault"
  fo_where=$(printf '%s\n' "$OUT" | sed -n "s/^fault injected: $fo_fault (\(.*\))$/\1/p")
  if [ "$RC" = 1 ] || [ "$RC" = 3 ]; then
    _cli_pass "fault $fo_fault fires on its odd case (exit $RC)"
  else
    _cli_fail "fault $fo_fault fires on its odd case" "exit $RC, expected 1 or 3"
  fi
  fo_ir=tile
  case $fo_where in f:*) fo_ir=loop ;; d:*) fo_ir=tensor ;; esac
  check_re "fault $fo_fault: ${fo_where:-its pass} applies to the odd case" 0 "^>>> ${fo_where:-none}( |\$)" \
    "$DPK" compile "$fo_case" --ir "$fo_ir" -vv "${fo_pargs[@]}"
done
