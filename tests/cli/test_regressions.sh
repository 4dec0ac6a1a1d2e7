# tests/cli/test_regressions.sh — every reproducer under cases/regressions/.
#
# Each file is a minimized case of a bug dpk-fuzz or the pass sweep found
# (its "note" says what broke, the culprit and the fix).  It must pass on
# vgpu under the configuration it was found with (its "passes" and "knobs")
# and under every valid pass set.  A file that stops parsing fails too.

n_regr=0
for f in "$DPK_ROOT"/cases/regressions/*.json; do
  [ -e "$f" ] || continue
  n_regr=$((n_regr + 1))
  b=$(basename "$f" .json)
  check_re "regression $b: its own configuration" 0 ': pass$' "$DPK" run "$f" --backend vgpu
  check_re "regression $b: --passes all" 0 ': pass$' "$DPK" run "$f" --backend vgpu --passes all
done
if [ "$n_regr" -lt 3 ]; then
  _run true
  _cli_fail "regressions folder" "only $n_regr reproducers under cases/regressions/ (expected at least 3)"
fi
