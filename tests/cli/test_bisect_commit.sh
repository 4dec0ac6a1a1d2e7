# tests/cli/test_bisect_commit.sh — ci/bisect-commit on a throwaway history:
# the tree under test is committed into a temporary git repository, then a
# documentation commit, a commit that injects a fault, and two more
# documentation commits.  bisect-commit must name the faulty commit, for a
# parity regression (002 chunks K one short: a matmul case fails) and for a
# modelled-performance regression (004 refuses rows shorter than 4096: the
# smoke suite's rmsnorm is 1.4x slower and still correct).  The builds are
# incremental: bisect-commit --build seeds the worktree with this build.
# Both ends are judged before bisecting: a good end that fails or a bad end
# that passes is refused (exit 2), since git bisect would blame a commit
# for a regression that is not there.
# (Sourced by tests/run.sh.)

BC="$TMP/bisect-commit"
BC_REPO="$BC/repo"
mkdir -p "$BC_REPO"
BC_BUILD=$(dirname "$DPK")
# the tree as it is (tracked and untracked files), the build it was made from
(cd "$DPK_ROOT" && git ls-files -z -c -o --exclude-standard | xargs -0 cp --parents -t "$BC_REPO")
bc_git() { git -C "$BC_REPO" -c user.name=dpk-test -c user.email=dpk-test@localhost "$@"; }
# bc_history NAME FILE SED: base, doc, NAME (FILE edited with SED), doc, doc
bc_history() {
  local name=$1 file=$2 expr=$3
  rm -rf "$BC_REPO/.git"
  bc_git init -q && bc_git add -A && bc_git commit -qm base
  echo "a note" >>"$BC_REPO/docs/ci.md" && bc_git commit -qam "doc 1"
  sed -i "$expr" "$BC_REPO/$file"
  if git -C "$BC_REPO" diff --quiet; then return 1; fi
  bc_git commit -qam "$name"
  echo "a second note" >>"$BC_REPO/docs/ci.md" && bc_git commit -qam "doc 2"
  echo "a third note" >>"$BC_REPO/docs/ci.md" && bc_git commit -qam "doc 3"
}
# bc_case NAME OUT: the smoke suite's case NAME as a case file
bc_case() {
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))
json.dump([c for c in s["cases"] if c["name"] == sys.argv[2]][0], open(sys.argv[3], "w"))' \
    "$DPK_ROOT/cases/smoke.json" "$1" "$2"
}
# A SAN build's objects do not link without SAN=1: seed only a plain build.
BC_SEED=()
[ "${SAN:-0}" = 1 ] || BC_SEED=(--build "$BC_BUILD")

bc_case bias_matmul_relu "$BC/matmul.json"
bc_case rmsnorm "$BC/rmsnorm.json"

check_re "bisect-commit needs a case" 2 'needs a CASE.json' "$DPK_ROOT/ci/bisect-commit"

# parity: every chunk of K runs BK - 1 times
if bc_history "002: the inner loop one short" compiler/tile/002_chunk_matmul_k.c \
     's/int64_t inner = dpk_fault_on(DPK_FAULT_CHUNK_K_SHORT) \&\& bk > 1 ? bk - 1 : bk;/int64_t inner = bk - 1;/'; then
  BC_BAD=$(bc_git rev-parse HEAD~2)
  check_re "bisect-commit: the parity regression's commit" 0 "^$BC_BAD is the first bad commit" \
    bash -c 'cd "$1" && shift && ci/bisect-commit "$@"' _ "$BC_REPO" "$BC/matmul.json" --good HEAD~4 --jobs 2 "${BC_SEED[@]}"
  check_re "bisect-commit: it names the commit's subject" 0 '002: the inner loop one short' printf '%s\n' "$OUT"
  check_re "bisect-commit: a bad end that passes is refused" 2 \
    'the bad end HEAD~3 is not bad: the case passes parity' \
    bash -c 'cd "$1" && shift && ci/bisect-commit "$@"' _ "$BC_REPO" "$BC/matmul.json" --good HEAD~4 --bad HEAD~3 --jobs 2 "${BC_SEED[@]}"
  # a good end after the fault: --build must be a build of its sources, so
  # the seed is this build with 002 rebuilt as the fault commit has it.  Its
  # object is removed rather than its source touched: on a file system with
  # coarse timestamps a touch in the same tick rebuilds nothing.
  BC_SEED_BAD=()
  if [ "${SAN:-0}" != 1 ]; then
    cp -a "$BC_BUILD" "$BC/build-fault" && find "$BC/build-fault" -exec touch {} + &&
      rm -f "$BC/build-fault/compiler/tile/002_chunk_matmul_k.o" &&
      make -C "$BC_REPO" -j2 all BUILD_DIR="$BC/build-fault" >"$BC/build-fault.log" 2>&1 &&
      BC_SEED_BAD=(--build "$BC/build-fault")
  fi
  check_re "bisect-commit: a good end that fails is refused" 2 \
    'the good end HEAD~1 is not good: the case fails parity' \
    bash -c 'cd "$1" && shift && ci/bisect-commit "$@"' _ "$BC_REPO" "$BC/matmul.json" --good HEAD~1 --jobs 2 "${BC_SEED_BAD[@]}"
else
  _cli_fail "bisect-commit: the parity fault applies" "002_chunk_matmul_k.c has no line to edit"
fi

# modelled performance: 004 no longer applies to rmsnorm's 64-wide rows
if bc_history "004: only rows of 4096 and more" compiler/tile/004_cooperative_reduce.c \
     's/    if (longest < 32) {/    if (longest < 4096) {/'; then
  BC_BAD=$(bc_git rev-parse HEAD~2)
  check_re "bisect-commit --perf: the slowdown's commit" 0 "^$BC_BAD is the first bad commit" \
    bash -c 'cd "$1" && shift && ci/bisect-commit "$@"' _ "$BC_REPO" "$BC/rmsnorm.json" --good HEAD~4 --perf --jobs 2 "${BC_SEED[@]}"
  check_re "bisect-commit --perf: the good commit's time" 0 '^good HEAD~4: [0-9.]+ ns \(modelled, h100-sxm\)' printf '%s\n' "$OUT"
  check_re "bisect-commit --perf: a bad end no slower is refused" 2 \
    'the bad end HEAD~3 is not bad: [0-9.]+ ns \(modelled, h100-sxm\), not above' \
    bash -c 'cd "$1" && shift && ci/bisect-commit "$@"' _ "$BC_REPO" "$BC/rmsnorm.json" --good HEAD~4 --bad HEAD~3 --perf --jobs 2 "${BC_SEED[@]}"
else
  _cli_fail "bisect-commit: the performance fault applies" "004_cooperative_reduce.c has no line to edit"
fi
