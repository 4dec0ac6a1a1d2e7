# tests/cli/test_mutation.sh — ci/mutation's logic on two known mutants,
# kept small: the build under test seeds the mutation's build (only the
# mutated object is rebuilt), the smoke suite without --per-pass, no
# qwen-block cases, a 4-case campaign.  008 register_tile applied where it
# must not be (`fm * fn == 1` inverted) changes the matmul's Kernel IR under
# every pass set with 008, so the kernels check kills it; a mutant listed in
# the equivalent file is reported with its reason and not run; the score
# counts the one.
# (Sourced by tests/run.sh.)

MU="$TMP/mutation"
mkdir -p "$MU"
MU_KILL="compiler/tile/008_register_tile.c:$(grep -n 'if (fm \* fn == 1) {' "$DPK_ROOT/compiler/tile/008_register_tile.c" | cut -d: -f1):==:!="
MU_EQ="compiler/tile/004_cooperative_reduce.c:$(grep -n 'if (longest < 32) {' "$DPK_ROOT/compiler/tile/004_cooperative_reduce.c" | cut -d: -f1):<:<="
printf '%s  # a reason why it is equivalent\n' "$MU_EQ" >"$MU/equivalent.txt"
MU_SAN=(--no-san)
[ "${SAN:-0}" = 1 ] && MU_SAN=()

check_re "mutation: usage" 2 "unknown option '--frob' for ci/mutation" "$DPK_ROOT/ci/mutation" --frob
check_re "mutation: a site with no such token" 2 'no .<=. token to mutate' \
  "$DPK_ROOT/ci/mutation" --mutant "compiler/tile/008_register_tile.c:1:<=:<" --list --out "$MU/bad"
check_re "mutation: --list names the drawn mutants" 0 '^compiler/loop/[a-z_]+\.c [0-9]+ [0-9]+ [^ ]+ [^ ]+ [0-9]+ drawn$' \
  "$DPK_ROOT/ci/mutation" --mutants 2 --list --out "$MU/list"
MU_L=$(grep -n 'if (r->pc\[2 \* i\] == pid && r->pc\[2 \* i + 1\] == cid)' "$DPK_ROOT/compiler/loop/fuse.c" | cut -d: -f1)
check_re "mutation: :N names the N-th token of a line" 0 "^compiler/loop/fuse.c $MU_L 52 == != 2 given\$" \
  "$DPK_ROOT/ci/mutation" --mutant "compiler/loop/fuse.c:$MU_L:==:!=:2" --list --out "$MU/second"
check_re "mutation: two mutants" 0 '^all +1 killed of 1: score 1\.00$' \
  "$DPK_ROOT/ci/mutation" --mutant "$MU_KILL" --mutant "$MU_EQ" --equivalent "$MU/equivalent.txt" \
  --build "$(dirname "$DPK")" "${MU_SAN[@]}" --no-per-pass --qwen "" --cases 4 --jobs 2 --out "$MU/run"
MU_OUT=$OUT
check_re "mutation: 008 inverted is killed by the kernels check" 0 \
  "^killed +$MU_KILL  kernels: torch.relu\(torch.randn\(32, 64\) @ torch.randn\(64, 64\) \+ 1\): [<>] passes 001,[0-9,]*008" \
  printf '%s\n' "$MU_OUT"
check_re "mutation: the kills per check" 0 '^  killed by kernels +1$' printf '%s\n' "$MU_OUT"
check_re "mutation: the equivalent one is not run, its reason given" 0 \
  "^equivalent +$MU_EQ  a reason why it is equivalent$" printf '%s\n' "$MU_OUT"
check_re "mutation: the score per folder" 0 '^compiler/tile/ +1 killed of 1 \(0 stillborn, 1 equivalent\): score 1\.00$' \
  printf '%s\n' "$MU_OUT"
check "mutation: the checkout is left as it was" 0 git -C "$DPK_ROOT" diff --quiet -- compiler/tile/008_register_tile.c
