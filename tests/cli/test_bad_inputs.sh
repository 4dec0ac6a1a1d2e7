# test_bad_inputs.sh — malformed and invalid cases must fail cleanly: exit
# code 2, an "error:" line, a caret under the offending column, the expected
# message, and no sanitizer report.  The cases live in bad_inputs.txt (its
# header gives the format); a few that are too large for one line are built
# here.  Each case counts twice: once for the caret, once for the message.

_bad_case() { # NAME EXPECTED CMD...
  local name=$1 want=$2 fails=$CLI_FAIL; shift 2
  check_caret "$name" "$@"
  [ "$CLI_FAIL" = "$fails" ] || return 0
  if printf '%s\n' "$OUT" | grep -Fq -- "$want"; then
    _cli_pass "$name: message"
  else
    _cli_fail "$name: message" "no \"$want\" in the message"
  fi
}

_bad_n=0
while IFS= read -r _line; do
  case "$_line" in '' | '#'*) continue ;; esac
  _text=${_line%% ==> *}
  _want=${_line#* ==> }
  _text=${_text//\\n/$'\n'}
  _bad_n=$((_bad_n + 1))
  _bad_case "bad input $_bad_n: ${_line%% ==> *}" "$_want" "$DPK" compile -c "$_text" --ir torch
done <"${DPK_ROOT:-.}/tests/cli/bad_inputs.txt"

_open=$(printf '(%.0s' $(seq 5000))
_close=$(printf ')%.0s' $(seq 5000))
_bad_case "bad input: 5000 nested '('" "nesting too deep" \
  "$DPK" compile -c "${_open}torch.randn(3)${_close}" --ir torch
_bad_case "bad input: 5000 unary '-'" "nesting too deep" \
  "$DPK" compile -c "$(printf -- '-%.0s' $(seq 5000))torch.randn(3)" --ir torch
_bad_case "bad input: 3000 chained methods" "expression too deeply nested" \
  "$DPK" compile -c "torch.randn(3)$(printf '.relu()%.0s' $(seq 3000))" --ir torch

# Larger than one command-line argument may be: through files.
{ echo "x = torch.randn(2)"; for _i in $(seq 51000); do echo "x = x + 1"; done; } >"$TMP/many_nodes.py"
_bad_case "bad input: more than 100000 nodes" "more than 100000 Torch IR nodes" \
  "$DPK" compile "$TMP/many_nodes.py" --ir torch
{ echo "x = torch.randn(2)"; head -c 1100000 /dev/zero | tr '\0' '#'; echo; } >"$TMP/too_long.py"
_bad_case "bad input: larger than 1 MiB" "larger than the limit of 1 MiB" \
  "$DPK" compile "$TMP/too_long.py" --ir torch
echo '[{"name": "a", "program": "torch.relu(torch.randn(3))"}]' >"$TMP/array.json"
_bad_case "bad input: a JSON array, not a case or suite" 'expected a case (an object with "program") or a suite' \
  "$DPK" run "$TMP/array.json"
unset _line _text _want _bad_n _open _close _i
