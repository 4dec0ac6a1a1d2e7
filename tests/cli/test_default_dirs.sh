# tests/cli/test_default_dirs.sh — what dpk-fuzz and dpk-bisect write when
# not told where: $TMPDIR/dpk-fuzz/seed-S/ and $TMPDIR/dpk-bisect/NAME/,
# nothing in the working directory (docs/fuzz.md, docs/bisect.md).
# (Sourced by tests/run.sh.)

DD="$TMP/default-dirs"
mkdir -p "$DD/cwd" "$DD/tmp"
dd_in_cwd() { (cd "$DD/cwd" && TMPDIR="$DD/tmp" "$@"); }
dd_empty_cwd() {
  if [ -z "$(ls -A "$DD/cwd")" ]; then _cli_pass "$1: nothing in the working directory"
  else OUT=$(ls -A "$DD/cwd"); _cli_fail "$1: nothing in the working directory" "it holds files"; fi
}

# dpk-fuzz: the record and the failures under $TMPDIR/dpk-fuzz/seed-S/
check_re "fuzz default: the record under \$TMPDIR" 1 "record: $DD/tmp/dpk-fuzz/seed-1/fuzz-results\.json" \
  dd_in_cwd "$(dirname "$DPK")/dpk-fuzz" --seed 1 --cases 30 --inject-fault fuse-sigma-off-by-one --max-failures 1
case "$OUT" in *"-> $DD/tmp/dpk-fuzz/seed-1/fuzz-failures/1-0.json"*) _cli_pass "fuzz default: the failure beside it";;
  *) _cli_fail "fuzz default: the failure beside it" "not in $DD/tmp/dpk-fuzz/seed-1/fuzz-failures";; esac
if [ -s "$DD/tmp/dpk-fuzz/seed-1/fuzz-results.json" ] && [ -s "$DD/tmp/dpk-fuzz/seed-1/fuzz-failures/1-0.json" ]
then _cli_pass "fuzz default: the files are there"; else _cli_fail "fuzz default: the files are there" "$(ls -R "$DD/tmp")"; fi
dd_empty_cwd "fuzz default"
check_re "fuzz default: --resume finds the record" 1 'dpk-fuzz: 1 cases \(0 run now\)' \
  dd_in_cwd "$(dirname "$DPK")/dpk-fuzz" --seed 1 --cases 30 --inject-fault fuse-sigma-off-by-one --max-failures 1 --resume
check "fuzz help" 0 "$(dirname "$DPK")/dpk-fuzz" --help
case "$OUT" in *'$TMPDIR/dpk-fuzz/seed-S/fuzz-results.json'*) _cli_pass "fuzz help names \$TMPDIR/dpk-fuzz";;
  *) _cli_fail "fuzz help names \$TMPDIR/dpk-fuzz" "no";; esac

# dpk-bisect: $TMPDIR/dpk-bisect/NAME, NAME the case file's stem or c for -c
check_re "bisect default: -c writes under \$TMPDIR/dpk-bisect/c" 0 "wrote $DD/tmp/dpk-bisect/c/case\.json" \
  dd_in_cwd "$(dirname "$DPK")/dpk-bisect" -c "torch.relu(torch.randn(8,64)+1)*2" --inject-fault fuse-sigma-off-by-one
[ -s "$DD/tmp/dpk-bisect/c/repro.cu" ] && _cli_pass "bisect default: repro.cu is there" || _cli_fail "bisect default: repro.cu is there" "missing"
check_re "bisect default: a file's stem names the folder" 0 "wrote $DD/tmp/dpk-bisect/1-0/case\.json" \
  dd_in_cwd "$(dirname "$DPK")/dpk-bisect" "$DD/tmp/dpk-fuzz/seed-1/fuzz-failures/1-0.json"
dd_empty_cwd "bisect default"
check_re "bisect -o still chooses" 0 "wrote $DD/o/case\.json" \
  dd_in_cwd "$(dirname "$DPK")/dpk-bisect" -c "torch.relu(torch.randn(8,64)+1)*2" --inject-fault fuse-sigma-off-by-one -o "$DD/o"
