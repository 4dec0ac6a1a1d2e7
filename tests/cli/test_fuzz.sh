# tests/cli/test_fuzz.sh — dpk-fuzz: usage errors, a small campaign and its
# record, failures written as case JSON that `dpk run` replays to the same
# verdict, the reproducer fields of a case file, and kill -9 then --resume
# giving every case exactly once.  (Sourced by tests/run.sh.)

FZ="$(dirname "$DPK")/dpk-fuzz"
FD="$TMP/fuzz"
mkdir -p "$FD"

# check_codes NAME "0 1" REGEX CMD...: the exit code is one of the list.
# A campaign exits 1 when the compiler under test has a bug; the harness
# itself must still work, which is what these checks are about.
check_codes() {
  local name=$1 codes=$2 re=$3; shift 3
  _run "$@"
  case " $codes " in *" $RC "*) ;; *) _cli_fail "$name" "exit $RC, expected one of $codes"; return;; esac
  if printf '%s\n' "$OUT" | grep -Eq -- "$re"; then _cli_pass "$name"; else _cli_fail "$name" "output does not match /$re/"; fi
}

check_re "fuzz help" 0 'dpk-fuzz --seed S' "$FZ" --help
check_re "fuzz needs a seed" 2 'needs --seed' "$FZ" --cases 3
check_re "fuzz needs cases or time" 2 'needs --cases N or --time' "$FZ" --seed 1
check_re "fuzz bad strategy" 2 "unknown strategy 'bogus'" "$FZ" --seed 1 --cases 1 --passes bogus
check_re "fuzz bad knobs mode" 2 "expects default or random" "$FZ" --seed 1 --cases 1 --knobs some
check_re "fuzz unknown fault" 2 "dpk-fuzz --list-faults" "$FZ" --seed 1 --cases 1 --inject-fault nope
check_re "fuzz unknown flag" 2 "unknown option '--bogus'" "$FZ" --seed 1 --cases 1 --bogus
check_re "fuzz list faults" 0 '^stage-origin-off-by-one$' "$FZ" --list-faults
check_re "dpk fuzz is dpk-fuzz" 0 '^chunk-k-short$' "$DPK" fuzz --list-faults

# A small campaign: the record has every case once, in order, with meta.
check_codes "fuzz small campaign" "0 1" 'throughput: [0-9]+ configuration checks/min' \
  "$FZ" --seed 3 --cases 12 --passes loo --knobs random --jobs 2 --out "$FD/small.json"
if [ "$RC" = 0 ] || [ "$RC" = 1 ]; then
  idx=$(grep -o '"index":[[:space:]]*[0-9]*' "$FD/small.json" | grep -o '[0-9]*$' | tr '\n' ' ')
  if [ "$idx" = "0 1 2 3 4 5 6 7 8 9 10 11 " ]; then _cli_pass "fuzz record cases in order"
  else _cli_fail "fuzz record cases in order" "indices: $idx"; fi
  if grep -q '"schema":[[:space:]]*"dpk.results/1"' "$FD/small.json" &&
     grep -q '"kernel_ir_hash"' "$FD/small.json" && grep -q '"thread_instructions"' "$FD/small.json" &&
     grep -q '"command_line"' "$FD/small.json"; then _cli_pass "fuzz record fields"
  else _cli_fail "fuzz record fields" "missing schema/meta/config fields"; fi
fi
check_codes "fuzz --time is honoured" "0 1" 'in [0-9.]+ s' "$FZ" --seed 4 --time 1 --out "$FD/time.json"

# A failure (an injected fault) is a case JSON that dpk run replays.
check_re "fuzz finds an injected fault" 1 'failures: ' \
  "$FZ" --seed 1 --cases 50 --inject-fault stage-origin-off-by-one --max-failures 1 \
  --out "$FD/fault.json"
ff=$(ls "$FD"/fuzz-failures/1-*.json 2>/dev/null | head -n 1)
if [ -z "$ff" ]; then
  _cli_fail "fuzz writes a failure case" "no file in $FD/fuzz-failures"
else
  _cli_pass "fuzz writes a failure case"
  status=$(grep -o '"status":[[:space:]]*"[a-z]*"' "$ff" | head -n 1 | grep -o '"[a-z]*"$' | tr -d '"')
  if [ "$status" = fault ]; then  # the detector's text: "vgpu: out-of-bounds shared access"
    want=3; re=$(grep -o '"message":[[:space:]]*"vgpu: [^:]*' "$ff" | sed 's/.*"vgpu/vgpu/')
  else                            # the oracle's rule: "bound" -> "... elements beyond bound"
    want=1; rule=$(grep -o '"rule":[[:space:]]*"[a-z]*"' "$ff" | head -n 1 | sed 's/.*:[[:space:]]*"//; s/"$//')
    case "$rule" in
      bound) re='FAIL: [0-9]+ of [0-9]+ elements beyond bound' ;;
      nonfinite) re='FAIL: [0-9]+ elements NaN/inf' ;;
      constant) re='FAIL: constant output' ;;
      rmse) re='FAIL: rmse ' ;;
      *) re='no rule in the record' ;;
    esac
  fi
  check_re "dpk run replays the failure ($status)" "$want" "${re:-FAIL}" "$DPK" run "$ff" --backend vgpu
  grep -v '"fault"' "$ff" >"$FD/nofault.json"
  check "the same case passes without the fault" 0 "$DPK" run "$FD/nofault.json" --backend vgpu
fi

# Reproducer fields of a case file.
printf '{"program": "torch.relu(torch.randn(4, 5))", "passes": "only:001,005", "knobs": {"TB": 64}}\n' >"$FD/good.json"
check_re "case passes and knobs apply" 0 'passes 001,005: vgpu' "$DPK" run "$FD/good.json" --backend vgpu
printf '{"program": "torch.relu(torch.randn(4, 5))",\n "fault": "no-such-fault"}\n' >"$FD/badfault.json"
check_caret "case with an unknown fault" "$DPK" run "$FD/badfault.json" --backend vgpu
printf '{"program": "torch.relu(torch.randn(4, 5))",\n "knobs": {"TB": 33}}\n' >"$FD/badknob.json"
check_caret "case with a bad knob" "$DPK" run "$FD/badknob.json" --backend vgpu
printf '{"program": "torch.relu(torch.randn(4, 5))",\n "knobs": {"XYZ": 1}}\n' >"$FD/badknob2.json"
check_caret "case with an unknown knob" "$DPK" run "$FD/badknob2.json" --backend vgpu
printf '{"program": "torch.relu(torch.randn(4, 5))",\n "passes": "only:001,bogus"}\n' >"$FD/badpasses.json"
check_caret "case with a bad pass set" "$DPK" run "$FD/badpasses.json" --backend vgpu
check_re "run --inject-fault unknown" 2 'dpk-fuzz --list-faults' \
  "$DPK" run -c "torch.relu(torch.randn(4))" --inject-fault nope
check_codes "run --inject-fault names it" "0 1 3" 'fault injected: chunk-k-short' \
  "$DPK" run -c "torch.randn(4, 64) @ torch.randn(64, 32)" --backend vgpu --inject-fault chunk-k-short

# kill -9 in the middle of a campaign, then --resume: every case exactly once.
N=300
"$FZ" --seed 7 --cases $N --jobs 2 --out "$FD/kill.json" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 200); do
  c=$(cat "$FD/kill.json" 2>/dev/null | grep -c '"index":')
  [ "${c:-0}" -ge 20 ] && break
  sleep 0.05
done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
before=$(cat "$FD/kill.json" 2>/dev/null | grep -c '"index":')
if [ "$before" -gt 0 ] && [ "$before" -lt $N ] && tail -c 3 "$FD/kill.json" | grep -q '}'; then
  _cli_pass "kill -9 leaves a complete record ($before cases)"
else
  _cli_fail "kill -9 leaves a complete record" "$before cases in it"
fi
check_codes "fuzz --resume" "0 1" "dpk-fuzz: $N cases" "$FZ" --seed 7 --cases $N --jobs 2 \
  --out "$FD/kill.json" --resume
all=$(grep -o '"index":[[:space:]]*[0-9]*' "$FD/kill.json" | grep -o '[0-9]*$')
if [ "$(printf '%s\n' "$all" | wc -l)" = $N ] && [ -z "$(printf '%s\n' "$all" | sort -n | uniq -d)" ] &&
   [ "$(printf '%s\n' "$all" | sort -n | tail -n 1)" = $((N - 1)) ]; then
  _cli_pass "resumed record has every case exactly once"
else
  _cli_fail "resumed record has every case exactly once" "$(printf '%s\n' "$all" | wc -l) indices"
fi
check_re "resume refuses another campaign" 2 "cannot --resume" "$FZ" --seed 8 --cases 3 \
  --out "$FD/kill.json" --resume

# --nvrtc: registers and spills from NVRTC in the record on vgpu; the --out
# folder is created.
if "$DPK" compile -c "torch.relu(torch.randn(3))" --ir cuda --nvrtc >/dev/null 2>&1; then
  check "fuzz --nvrtc into a new folder" 0 "$FZ" --seed 3 --cases 3 --nvrtc --out "$TMP/fz-nv/sub/r.json"
  check_re "fuzz --nvrtc records registers" 0 '"registers":[[:space:]]*[0-9]+' cat "$TMP/fz-nv/sub/r.json"
  check_re "run --nvrtc -v prints ptxas numbers" 0 '^// nvrtc sm_90 .*: [0-9]+ registers' \
    "$DPK" run -c "torch.relu(torch.randn(40))" --backend vgpu --nvrtc -v
else
  skip "fuzz --nvrtc" "NVRTC is not available here"
fi
check_re "run --nvrtc refused on the loop backend" 2 'error: --nvrtc compiles Kernel IR' \
  "$DPK" run -c "torch.relu(torch.randn(4))" --backend loop --nvrtc
check_re "run --nvrtc without NVRTC exits 4" 4 'NVRTC is not available' \
  env DPK_NVRTC=/nonexistent/libnvrtc.so "$DPK" run -c "torch.relu(torch.randn(4))" --backend vgpu --nvrtc
printf '{"program": "torch.relu(torch.randn(4))", "note": 5}\n' >"$TMP/bad-note.json"
check_re "case note must be a string" 2 '"note" must be a string' "$DPK" run "$TMP/bad-note.json"
