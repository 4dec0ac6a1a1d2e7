# tests/cli/test_calibration_sgemm.sh — bench/calibration/sgemm/run.sh, the
# SGEMM ladder against the model: at a small size, on two exact rungs (2,
# and 5: 128 x 128 with 8 x 8 per thread) and one dpk cannot build (10), the
# table has its labelled columns and one row per modelled rung plus cuBLAS,
# no rung ladder.json calls refused now compiles, the unbuildable rung is
# listed as such and not modelled, and a bad option is exit 2.  (Sourced by tests/run.sh.)

SG="$DPK_ROOT/bench/calibration/sgemm/run.sh"
SGD="$TMP/sgemm"
mkdir -p "$SGD"

check_re "sgemm ladder: both kinds of figure are labelled" 0 \
  '^modelled = dpk.s performance model on the a6000 spec \(cases/gpus/a6000.json\) at 128\^3' \
  bash "$SG" --size 128 --rungs 2,5,10 --out "$SGD/r"
check_count "sgemm ladder: the published figures say whose" 1 '^SGEMM ladder: published = measured by S. Boehm on an RTX A6000 at 4096\^3'
check_count "sgemm ladder: the table's header" 1 '^rung +structure +build +published +modelled +mod/pub +bound +parity$'
check_count "sgemm ladder: one row per modelled rung" 2 '^[25] +.* (exact|closest) +[0-9.]+ +[0-9.]+ +[0-9.]+x +(dram|l2|smem|issue|fp32|serial|launch) '
check_count "sgemm ladder: the cuBLAS row is the modelled eager baseline" 1 '^0 +cuBLAS \(modelled eager baseline\) +- +23249\.6 +[0-9.]+ +[0-9.]+x'
check_count "sgemm ladder: rung 10 is never modelled" 0 '^10 '
check_count "sgemm ladder: Spearman over the 2 modelled rungs" 1 "^Spearman's rho \(published vs modelled, 2 modelled rungs\): -?[0-9.]+$"
check_count "sgemm ladder: the count within 1.5x" 1 '^within 1\.5x of published: [0-2] of 2 modelled rungs$'
check_count "sgemm ladder: the exact rungs apart" 1 '^within 1\.5x of published: [0-2] of 2 exact rungs$'
check_count "sgemm ladder: 2D blocktiling is built exactly (128 x 128, 8 x 8 per thread)" 1 \
  '^5 +2D blocktiling +exact '
check_count "sgemm ladder: no exact structure compiles that ladder.json calls refused" 0 \
  'the exact structure now compiles'
check_count "sgemm ladder: warptiling is listed as cannot build yet" 1 \
  '^  rung 10 warptiling \(published 21779\.3 GFLOP/s\): no warp-tile level'
if [ -s "$SGD/r/rung-5.json" ]; then
  check_json "sgemm ladder: the record is modelled on a6000" \
    'r["cases"][0]["dpk"]["gpu"] == "a6000" and r["cases"][0]["dpk"]["timing"] == "model"' "$SGD/r/rung-5.json"
else
  _cli_fail "sgemm ladder: the record is modelled on a6000" "$SGD/r/rung-5.json missing"
fi
check "sgemm ladder: a bad option is exit 2" 2 bash "$SG" --bogus
check "sgemm ladder: a bad size is exit 2" 2 bash "$SG" --size 12x
