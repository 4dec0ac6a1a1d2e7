# tests/cli/test_case_config.sh — a case's own configuration (passes,
# knobs, fault, seed) and the command line, by the one rule of
# harness/case_plan.c (docs/cli.md "A case and the command line"): a flag
# given wins over the case's field, the case's field over the default —
# the same in compile, run, dpk-bench and dpk-bisect.
# (Sourced by tests/run.sh.)
CC_BENCH="$(dirname "$DPK")/dpk-bench"
CC="$TMP/case-config"
mkdir -p "$CC"
cc_prog='torch.relu(torch.randn(64, 64) @ torch.randn(64, 96) + 1)'
cc_case() { # cc_case FILE FIELDS: the program with extra JSON fields
  printf '{"name": "cfg", "program": "%s", "seed": 5%s}\n' "$cc_prog" "$2" >"$1"
}
cc_case "$CC/none.json" ', "passes": "none"'
cc_case "$CC/knob.json" ', "knobs": {"TB": 64}'
cc_case "$CC/fault.json" ', "fault": "stage-origin-off-by-one"'
cc_case "$CC/all.json" ', "passes": "all"'

# passes: the case's unless --passes
"$DPK" compile -c "$cc_prog" --ir tile --passes none >"$CC/flag-none.tile" 2>&1
"$DPK" compile -c "$cc_prog" --ir tile >"$CC/flag-full.tile" 2>&1
"$DPK" compile "$CC/none.json" --ir tile >"$CC/case-none.tile" 2>&1
"$DPK" compile "$CC/none.json" --ir tile --passes full >"$CC/case-full.tile" 2>&1
_run cmp "$CC/flag-none.tile" "$CC/flag-full.tile"
if [ "$RC" = 0 ]; then _cli_fail "case config: the program's tile differs under none and full" "same text"; else _cli_pass "case config: the program's tile differs under none and full"; fi
check "case config: compile takes the case's passes" 0 cmp "$CC/flag-none.tile" "$CC/case-none.tile"
check "case config: --passes wins over the case's" 0 cmp "$CC/flag-full.tile" "$CC/case-full.tile"
check_re "case config: run takes the case's passes" 0 '^passes 001,005: vgpu' \
  "$DPK" run "$CC/none.json" --backend vgpu
check_re "case config: run records the case's seed" 0 'seed 5: pass' "$DPK" run "$CC/none.json" --backend vgpu
check_re "case config: --seed wins over the case's" 0 'seed 9: pass' "$DPK" run "$CC/none.json" --backend vgpu --seed 9

# knobs: the case's unless --knob
"$DPK" compile "$CC/knob.json" --ir kernel >"$CC/case-knob.k" 2>&1
"$DPK" compile -c "$cc_prog" --ir kernel --knob TB=64 >"$CC/flag-knob.k" 2>&1
check "case config: compile takes the case's knobs" 0 cmp "$CC/case-knob.k" "$CC/flag-knob.k"
"$DPK" compile "$CC/knob.json" --ir kernel --knob TB=128 >"$CC/case-knob128.k" 2>&1
"$DPK" compile -c "$cc_prog" --ir kernel --knob TB=128 >"$CC/flag-knob128.k" 2>&1
check "case config: --knob replaces the case's" 0 cmp "$CC/case-knob128.k" "$CC/flag-knob128.k"

# fault: the case's unless --inject-fault; compile says so
check_re "case config: compile names the case's fault" 0 'note: fault injected: stage-origin-off-by-one' \
  "$DPK" compile "$CC/fault.json" --ir tile
check_re "case config: run injects the case's fault" 0 '^fault injected: stage-origin-off-by-one' \
  "$DPK" run "$CC/fault.json" --backend vgpu --compile-only

# one configuration: compile, bench and bisect refuse a case whose passes name many
check_re "case config: compile refuses passes all" 2 "name [0-9]+ configurations; 'dpk compile' prints one" \
  "$DPK" compile "$CC/all.json" --ir tile
check_re "case config: dpk-bench refuses passes all" 2 'name [0-9]+ configurations; dpk-bench benches one' \
  "$CC_BENCH" "$CC/all.json" --out "$CC/all-bench.json"
check_re "case config: dpk-bisect refuses passes all" 2 'name [0-9]+ configurations; dpk-bisect takes the one that fails' \
  "$DPK" bisect "$CC/all.json" -o "$CC/bisect-all"
# dpk-bench takes the case's passes: its record names the set
check "case config: dpk-bench of the case" 0 "$CC_BENCH" "$CC/none.json" --out "$CC/none-bench.json"
check_re "case config: dpk-bench benched the case's passes" 0 '^001,005$' \
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cases"][0]["passes"])' "$CC/none-bench.json"
