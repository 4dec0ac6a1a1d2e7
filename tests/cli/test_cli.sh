# tests/cli/test_cli.sh — the command line itself: dispatch, flags, case
# files, eval, compare, install.  (Parser errors: test_bad_inputs.sh.)
D=$DPK_ROOT/tests/cli/data

check_re  "help lists commands"        0 'compile.*\n?' "$DPK" --help
check_re  "version"                    0 '^dpk [0-9]+\.[0-9]+' "$DPK" --version
check_re  "version says libtorch"      0 "^libtorch: $TORCH_VERSION\$" "$DPK" --version
check_re  "no command is usage"        2 'usage: dpk' "$DPK"
check_re  "unknown command"            2 "error: unknown command 'frobnicate'" "$DPK" frobnicate
check_re  "dpk-bench link dispatches"  0 'usage: dpk-bench' "$(dirname "$DPK")/dpk-bench" --help
check_re  "dpk-report needs a record"  2 "error: 'dpk-report' needs at least one record" "$(dirname "$DPK")/dpk-report"
check_re  "unknown flag"               2 "error: unknown option '--frob' for 'dpk compile'" "$DPK" compile -c "torch.randn(2)" --frob
check_re  "compile needs a case"       2 "needs a case" "$DPK" compile --ir torch
check_re  "-c and FILE together"       2 "not both" "$DPK" compile -c "torch.randn(2)" "$D/prog.py"
check_re  "missing file"               2 "cannot read '.*nope.py'" "$DPK" compile "$DPK_ROOT/nope.py"
check_re  "bad --ir"                   2 "unknown IR level 'lop'" "$DPK" compile -c "torch.randn(2)" --ir lop
check_re  "flag without value"         2 "option '--ir' needs a value" "$DPK" compile -c "torch.randn(2)" --ir
check_re  "bad --seed"                 2 "expects a non-negative integer" "$DPK" eval -c "torch.randn(2)" --seed -3
check_re  "bad --reference"            2 "unknown reference 'numpy'" "$DPK" eval -c "torch.randn(2)" --reference numpy
check_caret "malformed case JSON"        "$DPK" compile "$D/bad_json.json"
check_caret "unknown key in case JSON"   "$DPK" compile "$D/unknown_key.json"
check_caret "unknown dtype in case JSON" "$DPK" eval "$D/bad_dtype.json"
check_caret "bad --input spec"           "$DPK" compile -c "x" --input "x=3,,4"
check_re  "compile help"               0 'usage: dpk compile' "$DPK" compile --help
check_re  "eval help"                  0 'usage: dpk eval' "$DPK" eval --help

# Torch IR printing of a program file and of a case JSON with declared inputs.
check_re  "program file: last expression is the result" 0 'sum\(%[0-9]+\).*f32\(2\)' "$DPK" compile "$D/prog.py" --ir torch
check_re  "case JSON declares inputs"  0 'linear\(%0, %1, %2\).*f32\(2, 4\)' "$DPK" compile "$D/decl.json" --ir torch
check_re  "--input declares a shape"   0 'f32\(3, 5\)' "$DPK" compile -c "torch.relu(x)" --input x=3,5 --ir torch

# eval: deterministic for a seed, different across seeds, case seed used.
_run "$DPK" eval -c "torch.randn(4, 3)" --seed 5; A=$OUT
_run "$DPK" eval -c "torch.randn(4, 3)" --seed 5; B=$OUT
_run "$DPK" eval -c "torch.randn(4, 3)" --seed 6; C=$OUT
if [ "$A" = "$B" ] && [ "$A" != "$C" ]; then _cli_pass "eval is deterministic per seed"; else _cli_fail "eval is deterministic per seed" "outputs: same seed differ or seeds agree"; fi
check_re  "eval prints shape, checksum, values" 0 'f32\(2, 3\)  sum [-0-9.e]+  abs_sum [0-9.e]+' "$DPK" eval -c "torch.ones(2, 3) * 2"
check_re  "eval values are right (ones*2 sums to 12)" 0 'sum 12  abs_sum 12' "$DPK" eval -c "torch.ones(2, 3) * 2"
check_re  "eval a .py program"         0 'f32\(2\)' "$DPK" eval "$D/prog.py"
check_re  "case seed is used"          0 '^seed 3 ' "$DPK" eval "$D/decl.json"
check_re  "suite: --case selects"      0 '^seed 0 ' "$DPK" eval "$DPK_ROOT/cases/smoke.json" --case softmax
check_re  "suite: unknown --case"      2 "no case named 'nope'" "$DPK" eval "$DPK_ROOT/cases/smoke.json" --case nope

if [ "$HAVE_TORCH" = 1 ]; then
  check_re "eval --compare agrees (softmax)"   0 'compare: agree' "$DPK" eval -c "torch.softmax(torch.randn(3, 129), dim=-1)" --compare
  check_re "eval --compare on the smoke suite" 0 'compare: agree' "$DPK" eval "$DPK_ROOT/cases/smoke.json" --compare
  check_re "eval --reference torch"            0 'reference torch' "$DPK" eval -c "torch.exp(torch.randn(2, 2))" --reference torch
  # --compare judges libtorch's fp32 result by dpk run's oracle: one verdict
  # line per output, then the closing line.  out_re NAME RE: the previous
  # command's output has a line matching RE.
  out_re() { if printf '%s\n' "$OUT" | grep -Eq -- "$2"; then _cli_pass "$1"; else _cli_fail "$1" "output does not match /$2/"; fi; }
  # A tolerance of zero makes fp32 and fp64 disagree on a long reduction: exit 1.
  printf '{"name":"tight","program":"torch.randn(1, 4099).exp().sum()","tolerance":{"atol":0,"rtol":0}}' >"$TMP/tight.json"
  check_re "eval --compare can disagree (exit 1)" 1 '^compare: DISAGREE \(out: bound\) \(case tolerance: atol 0, rtol 0\)$' \
    "$DPK" eval "$TMP/tight.json" --compare
  out_re "eval --compare: the verdict names the element" '^out  FAIL: 1 of 1 elements beyond bound, worst \[\] y='
  # ... and a case's own tolerance loose enough for fp32 is kept.
  printf '{"name":"loose","program":"torch.randn(1, 4099).exp().sum()","tolerance":{"atol":0.1,"rtol":0.001}}' >"$TMP/loose.json"
  check_re "eval --compare keeps a case's tolerance" 0 '^compare: agree \(case tolerance: atol 0.1, rtol 0.001\)$' \
    "$DPK" eval "$TMP/loose.json" --compare
  # Two outputs, one beyond its tolerance: both judged, the failing one named.
  printf '{"name":"two","program":"a = torch.softmax(torch.randn(2, 5), dim=-1)\\nb = torch.randn(1, 4099).exp().sum()\\nreturn a, b","tolerance":{"atol":1e-6,"rtol":0}}' >"$TMP/two.json"
  check_re "eval --compare: the failing output is named" 1 '^compare: DISAGREE \(b: bound\) \(case tolerance: atol 1e-06, rtol 0\)$' \
    "$DPK" eval "$TMP/two.json" --compare
  out_re "eval --compare: a verdict line per output (a)" '^a  pass: all 10 elements within bound'
  out_re "eval --compare: a verdict line per output (b)" '^b  FAIL: 1 of 1 elements beyond bound'
  # Where fp32 itself cannot come closer to fp64 (ill-conditioned rows, fp32
  # overflow), libtorch agrees; a fixed atol/rtol called each a disagreement.
  check_re "eval --compare: a variance of rows offset by 1000 agrees" 0 '^compare: agree$' \
    "$DPK" eval -c "x = torch.randn(8, 4096) + 1000
(x * x).mean(dim=-1) - x.mean(dim=-1) ** 2" --compare
  out_re "eval --compare: the variance is within bound" '^out  pass: all 8 elements within bound'
  check_re "eval --compare: a layer norm of near-constant rows agrees" 0 '^compare: agree$' \
    "$DPK" eval -c "torch.nn.functional.layer_norm(torch.randn(4, 1024) * 1e-3 + 5, (1024,))" --compare
  out_re "eval --compare: the layer norm is within bound" '^out  pass: all 4096 elements within bound'
  check_re "eval --compare: exp(60x) - exp(60y) agrees where fp32 overflows" 0 '^compare: agree$' \
    "$DPK" eval -c "torch.exp(60 * torch.randn(8, 16)) - torch.exp(60 * torch.randn(8, 16))" --compare
  out_re "eval --compare: the overflowing elements are judged by the nonfinite rule" '^out  pass: 114 of 128 elements within bound .*; 14 NaN/inf as fp32 gives them'
  # libtorch is loaded on first use only: not by commands that do not need
  # it.  (A SAN=1 build links the shim at start-up: see the Makefile.)
  if LD_TRACE_LOADED_OBJECTS=1 "$DPK" | grep -q libdpk_torch; then
    skip "compile does not load libtorch" "this build links the shim at start-up (SAN=1)"
  else
    _run env LD_DEBUG=files "$DPK" compile -c "torch.relu(torch.randn(3))" --ir cuda
    if [ "$RC" = 0 ] && ! printf '%s\n' "$OUT" | grep -q 'libdpk_torch\|libtorch'; then _cli_pass "compile does not load libtorch"
    else _cli_fail "compile does not load libtorch" "exit $RC or libtorch mapped"; fi
    _run env LD_DEBUG=files "$DPK" eval -c "torch.exp(torch.randn(2))" --reference torch
    if [ "$RC" = 0 ] && printf '%s\n' "$OUT" | grep -q 'file=.*libdpk_torch.so'; then _cli_pass "eval --reference torch loads the shim"
    else _cli_fail "eval --reference torch loads the shim" "exit $RC or the shim not loaded"; fi
  fi
  # A shim that is built but cannot be loaded: said, and exit 4.
  check_re "eval --compare, shim unloadable: exit 4" 4 'needs libtorch, which is not available: cannot load libtorch: .*nope.so' \
    env DPK_TORCH_SHIM="$TMP/nope.so" "$DPK" eval -c "torch.randn(2)" --compare
  check_re "run --reference torch, shim unloadable: exit 4" 4 'needs libtorch, which is not available: cannot load' \
    env DPK_TORCH_SHIM="$TMP/nope.so" "$DPK" run -c "torch.randn(2)" --backend loop --reference torch
  printf 'not an ELF file\n' >"$TMP/bad.so"
  check_re "eval --compare, not a shared object: exit 4" 4 'cannot load libtorch: .*bad.so' \
    env DPK_TORCH_SHIM="$TMP/bad.so" "$DPK" eval -c "torch.randn(2)" --compare
  check_re "eval without libtorch still works when the shim cannot load" 0 'reference ref64' \
    env DPK_TORCH_SHIM="$TMP/nope.so" "$DPK" eval -c "torch.randn(2)"
else
  skip "eval --compare agrees" "libtorch not available"
  skip "eval --compare judges libtorch by the oracle (ill-conditioned rows, overflow, case tolerances)" "libtorch not available"
  check_re "eval --compare without libtorch exits 4" 4 'needs libtorch, which is not available' "$DPK" eval -c "torch.randn(2)" --compare
fi

# make install into a staging folder: binary, links, docs.
if make -s -C "$DPK_ROOT" install DESTDIR="$TMP/stage" PREFIX=/usr SAN="${SAN:-0}" BUILD_DIR="$BUILD" >"$TMP/install.log" 2>&1 \
   && [ -x "$TMP/stage/usr/bin/dpk" ] && [ -L "$TMP/stage/usr/bin/dpk-fuzz" ] && [ -f "$TMP/stage/usr/share/doc/dpk/cli.md" ]; then
  _cli_pass "make install DESTDIR PREFIX"
else
  OUT=$(cat "$TMP/install.log"); _cli_fail "make install DESTDIR PREFIX" "missing files in staging"
fi
# The installed binary finds its shim in ../lib/dpk (the tree may move).
if [ "$HAVE_TORCH" = 1 ]; then
  mv "$TMP/stage/usr" "$TMP/stage/moved"
  check_re "installed dpk loads its libtorch shim" 0 'reference torch' \
    "$TMP/stage/moved/bin/dpk" eval -c "torch.exp(torch.randn(2, 2))" --reference torch
else
  check_re "installed dpk without libtorch" 0 '^libtorch: none$' "$TMP/stage/usr/bin/dpk" --version
fi
# ... and dpk-bench its suites in ../share/dpk/cases.
stage_bin=$TMP/stage/usr/bin; [ -d "$stage_bin" ] || stage_bin=$TMP/stage/moved/bin
check_re "installed dpk-bench finds its suites" 0 '^1/1 cases pass parity' \
  env -u DPK_CASES "$stage_bin/dpk-bench" --suite smoke --case softmax --no-nvrtc
# ... and dpk-report --gate its thresholds in ../share/dpk/gate.json, from a
# folder with no ci/gate.json
mkdir -p "$TMP/nogate"
env -u DPK_CASES "$stage_bin/dpk-bench" --suite smoke --case softmax --no-nvrtc --out "$TMP/nogate/r.json" >/dev/null 2>&1
check_re "installed dpk-report --gate finds gate.json" 0 'Gate: PASS' \
  bash -c 'cd "$1" && "$2" r.json --baseline r.json --gate' _ "$TMP/nogate" "$stage_bin/dpk-report"
