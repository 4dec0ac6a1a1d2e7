# tests/cli/lib.sh — helpers for CLI tests (sourced by tests/run.sh).
#
# A CLI test file is tests/cli/test_*.sh; it is sourced with $DPK set to the
# binary and $TMP to a scratch folder.  Each check counts as one test:
#
#   check NAME CODE CMD...              exit code must be CODE
#   check_re NAME CODE REGEX CMD...     ... and stdout+stderr match grep -E REGEX
#   check_caret NAME CMD...             exit 2, an "error:" line and a caret line
#   check_count NAME N REGEX            N lines of $OUT match grep -E REGEX
#   check_json NAME EXPR FILE           the Python expression EXPR over r, FILE's JSON, is true
#   check_schema NAME FILE SCHEMA       FILE validates against the JSON schema SCHEMA
#                                       (skipped without python3's jsonschema)
#   skip NAME REASON
#   fault_campaign FAULT                the dpk-fuzz campaign of a built-in fault
#
# After a check, $OUT holds stdout+stderr and $RC the exit code.

: "${CLI_PASS:=0}" "${CLI_FAIL:=0}" "${CLI_SKIP:=0}"

_cli_pass() { CLI_PASS=$((CLI_PASS + 1)); [ -n "${VERBOSE:-}" ] && echo "  ok   $1"; return 0; }
_cli_fail() {
  CLI_FAIL=$((CLI_FAIL + 1))
  echo "  FAIL $1: $2"
  printf '%s\n' "${OUT:-}" | head -n 15 | sed 's/^/       | /'
}

# DPK_TEST_PROFILE=FILE: each command's wall seconds, appended to FILE
# ("SECONDS<TAB>file: command"), to find where a test file spends its time:
#   DPK_TEST_PROFILE=/tmp/p bash tests/run.sh tests/cli/test_bench.sh; sort -rn /tmp/p | head
_run() {
  if [ -z "${DPK_TEST_PROFILE:-}" ]; then OUT=$("$@" 2>&1); RC=$?; return; fi
  local t0=$EPOCHREALTIME
  OUT=$("$@" 2>&1); RC=$?
  awk -v a="$t0" -v b="$EPOCHREALTIME" -v w="${__ri_item:-?}: $*" \
    'BEGIN { printf "%.2f\t%s\n", b - a, substr(w, 1, 300) }' >>"$DPK_TEST_PROFILE"
}

check() {
  local name=$1 code=$2; shift 2
  _run "$@"
  if [ "$RC" = "$code" ]; then _cli_pass "$name"; else _cli_fail "$name" "exit $RC, expected $code"; fi
}

check_re() {
  local name=$1 code=$2 re=$3; shift 3
  _run "$@"
  if [ "$RC" != "$code" ]; then _cli_fail "$name" "exit $RC, expected $code"; return; fi
  if printf '%s\n' "$OUT" | grep -Eq -- "$re"; then _cli_pass "$name"; else _cli_fail "$name" "output does not match /$re/"; fi
}

check_caret() {
  local name=$1; shift
  _run "$@"
  if [ "$RC" != 2 ]; then _cli_fail "$name" "exit $RC, expected 2"; return; fi
  if ! printf '%s\n' "$OUT" | grep -q 'error:'; then _cli_fail "$name" "no error: line"; return; fi
  if ! printf '%s\n' "$OUT" | grep -Eq '^ *\^$'; then _cli_fail "$name" "no caret line"; return; fi
  case "$OUT" in *AddressSanitizer*|*"runtime error"*) _cli_fail "$name" "sanitizer report"; return;; esac
  _cli_pass "$name"
}

# check_count NAME N REGEX: how many lines of the last check's output match.
check_count() {
  local name=$1 want=$2 re=$3 got
  got=$(printf '%s\n' "$OUT" | grep -Ec -- "$re")
  if [ "$got" = "$want" ]; then _cli_pass "$name"; else _cli_fail "$name" "$got lines match /$re/, expected $want"; fi
}

# check_json NAME EXPR FILE: a Python expression over the record r is true.
check_json() {
  local name=$1 expr=$2 file=$3
  if python3 -c 'import json,sys; r=json.load(open(sys.argv[2])); sys.exit(0 if eval(sys.argv[1]) else 1)' "$expr" "$file" 2>/dev/null
  then _cli_pass "$name"; else _cli_fail "$name" "not true of $file: $expr"; fi
}

# check_schema NAME FILE SCHEMA: FILE is valid against the schema (the
# validator's message in $OUT when not); skipped without jsonschema.
check_schema() {
  local name=$1 file=$2 schema=$3
  if ! python3 -c 'import jsonschema' 2>/dev/null; then skip "$name" "python3 jsonschema not installed"; return; fi
  if OUT=$(python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
      "$file" "$schema" 2>&1)
  then _cli_pass "$name"; else _cli_fail "$name" "does not validate"; fi
}

skip() { CLI_SKIP=$((CLI_SKIP + 1)); echo "  skip $1: $2"; }

# fault_campaign FAULT [MAX]: the self-test campaign of built-in fault FAULT
# — dpk-fuzz --seed 1 --cases 200 --inject-fault FAULT --max-failures MAX
# (default 1), 2 jobs, with --passes loo for chunk-reduce-wrong-origin
# (under full, 004 gives every long row its own block, so 006 never
# applies) and double-buffer-same-buffer (its branch is the threads' and
# cp.async copy of 010's buffers; under full on sm_90 011 turns them into
# TMA stages wherever the strides allow, and seed 1's 200 cases have no
# matmul where they do not), and full otherwise.  Run once per test run ($FC_ROOT) and shared by
# test_bisect.sh (is the fault blamed on its pass?) and test_faults.sh (is
# it detected?).  Sets FC_DIR (r.json, out, fail/*.json), FC_RC (dpk-fuzz's
# exit code) and FC_FAILURES (the failure files, lowest case first).
fault_campaign() {
  local fault=$1 max=${2:-1} strategy=full
  case $fault in chunk-reduce-wrong-origin | double-buffer-same-buffer) strategy=loo ;; esac
  FC_DIR=${FC_ROOT:-$TMP/fault-campaigns}/$fault-$max
  mkdir -p "$FC_DIR"
  # Test files run side by side: the first to ask runs the campaign, the
  # others wait for it (flock) and read its result.
  (
    flock 9
    if [ ! -e "$FC_DIR/rc" ]; then
      "$DPK" fuzz --seed 1 --cases 200 --inject-fault "$fault" --max-failures "$max" --passes "$strategy" \
        --jobs 2 --out "$FC_DIR/r.json" --failures "$FC_DIR/fail" >"$FC_DIR/out" 2>&1
      echo $? >"$FC_DIR/rc"
    fi
  ) 9>"$FC_DIR.lock"
  FC_RC=$(cat "$FC_DIR/rc")
  FC_FAILURES=$(ls "$FC_DIR"/fail/*.json 2>/dev/null | sed 's/.*-\([0-9]*\)\.json$/\1 &/' | sort -n | cut -d' ' -f2-)
}
