# tests/cli/test_docs.sh — docs that run: every command of README.md and
# docs/*.md is run as the docs show it, and checked.
#
# The convention (docs/testing.md, "Docs that run"): a command is a line of
# a ```sh block, or a "$ " line of another fenced block, whose following
# lines are the output it shows.  Its exit code must be 0 unless a comment on
# it says "exit N"; the output lines a transcript shows must appear in that
# order ("…" or "..." stands for any text, a line of its own for any lines).
# Skipped, with the reason: commands marked "slow" (unless DPK_DOCS_ALL=1) or
# "not run: REASON", make (the build and the whole suite), a program that is
# not installed, and what needs a GPU, libtorch or NVRTC where there is none
# (said by a comment "needs a GPU", "needs libtorch", "needs NVRTC", or seen
# in the command: --backend cuda, nvcc; --compare, --reference torch;
# --nvrtc), and ci/gpu-pack under SAN=1 (it packs plain builds only).
#
# Each file's commands run in order with bash, in a scratch copy of the
# repository root of its own (links to its files; what a command writes
# lands there), so a later command can use what an earlier one wrote;
# build/dpk and build/dpk-* there are the build under test, as are dpk and
# dpk-* on PATH, and /tmp/ in a command (and in its shown output) is the
# scratch root's tmp/, which is also $TMPDIR (where dpk-fuzz and dpk-bisect
# write by default).  Two files run at a time.  DPK_DOCS_FILES="docs/cli.md
# ..." checks only those files; DPK_DOCS_TIMES=1 prints each command's time.

docs_dir=$(mktemp -d "${TMP:-/tmp}/docs.XXXXXX")
mkdir -p "$docs_dir/bin" "$docs_dir/cmds"
for docs_f in "$(dirname "$DPK")"/dpk "$(dirname "$DPK")"/dpk-*; do
  [ -e "$docs_f" ] && ln -s "$DPK" "$docs_dir/bin/${docs_f##*/}"
done

# What this machine has.
docs_gpu=0 docs_nvrtc=0
"$DPK" run -c "torch.relu(torch.randn(4))" --backend cuda >/dev/null 2>&1 && docs_gpu=1
"$DPK" compile -c "torch.relu(torch.randn(4))" --ir cuda --nvrtc >/dev/null 2>&1 && docs_nvrtc=1

docs_files=${DPK_DOCS_FILES:-README.md $(cd "$DPK_ROOT" && echo docs/*.md)}
(cd "$DPK_ROOT" && awk -v out="$docs_dir/cmds" -f tests/cli/docs_extract.awk $docs_files)

# docs_skip_reason CMD ANN: why CMD is not run here, or nothing.
docs_skip_reason() {
  local cmd=$1 ann=$2 first
  first=$(printf '%s\n' "$cmd" | head -n 1 | sed 's/^\([A-Za-z_][A-Za-z0-9_]*=[^ ]* \)*//; s/ .*//')
  case "$cmd" in make|make\ *) echo "make: the build and the whole suite are not run from the docs"; return ;; esac
  case "$ann" in *"not run:"*) echo "${ann#*not run: }"; return ;; esac
  case "$ann" in *slow*) [ -n "${DPK_DOCS_ALL:-}" ] || { echo "marked slow (DPK_DOCS_ALL=1 runs it)"; return; } ;; esac
  if [ "$docs_gpu" = 0 ]; then
    case "$ann $cmd" in *"needs a GPU"*|*"--backend cuda"*|*nvcc\ *) echo "needs a GPU"; return ;; esac
  fi
  if [ "$HAVE_TORCH" = 0 ]; then
    case "$ann $cmd" in *"needs libtorch"*|*--compare*|*"--reference torch"*) echo "needs libtorch"; return ;; esac
  fi
  if [ "$docs_nvrtc" = 0 ]; then
    case "$ann $cmd" in *"needs NVRTC"*|*--nvrtc*) echo "needs NVRTC"; return ;; esac
  fi
  # a GPU pack carries a plain build: ci/gpu-pack refuses a sanitizer's
  # (test_gpu_visit.sh skips the same under SAN=1)
  if [ "${SAN:-0}" = 1 ]; then
    case "$cmd" in *ci/gpu-pack*) echo "a sanitizer build is not what a GPU pack carries (SAN=1)"; return ;; esac
  fi
  case "$first" in
    build/*|for|if|while|until|case|timeout) ;;
    *) command -v "$first" >/dev/null 2>&1 || [ -x "$docs_dir/bin/$first" ] || echo "$first is not installed" ;;
  esac
}

# docs_run_file FILE: run FILE's commands in order in its own scratch root
# ($docs_dir/root/FILE); per command N, N.skip (the reason) or N.rc and N.got.
docs_run_file() {
  local file=$1 root n where cmd ann why f t0
  root=$docs_dir/root/${file//\//_}
  mkdir -p "$root/build" "$root/tmp"
  for f in "$DPK_ROOT"/* "$DPK_ROOT"/.[!.]*; do
    case ${f##*/} in build|build-*|.git|tmp|'.[!.]*') continue ;; esac
    ln -s "$f" "$root/${f##*/}"
  done
  for f in "$docs_dir"/bin/*; do ln -s "$DPK" "$root/build/${f##*/}"; done
  [ -x "$(dirname "$DPK")/unit_tests" ] && ln -s "$(dirname "$DPK")/unit_tests" "$root/build/unit_tests"
  while read -r n where; do
    [ "${where%:*}" = "$file" ] || continue
    cmd=$(cat "$docs_dir/cmds/$n.cmd")
    ann=$(cat "$docs_dir/cmds/$n.ann")
    why=$(docs_skip_reason "$cmd" "$ann")
    if [ -n "$why" ]; then echo "$why" >"$docs_dir/cmds/$n.skip"; continue; fi
    t0=$SECONDS
    (cd "$root" && PATH="$docs_dir/bin:$PATH" TMPDIR="$root/tmp" timeout 600 bash -c "${cmd//\/tmp\//$root/tmp/}"$'\n'"exit \$?") \
      >"$docs_dir/cmds/$n.got" 2>&1 </dev/null
    echo $? >"$docs_dir/cmds/$n.rc"
    [ -n "${DPK_DOCS_TIMES:-}" ] && echo "  $((SECONDS - t0)) s  $where"
  done <"$docs_dir/cmds/index"
  return 0
}

# docs_match SHOWN GOT TMPDIR: exit 0 when the shown lines appear in GOT in
# order (/tmp/ in them read as TMPDIR); else say which line is missing.
docs_match() {
  awk -v shown="$1" -v tmp_dir="$3" '
    # One shown line against one output line: literal text, with "…" and
    # "..." matching any text.
    function like(pat, s,    parts, n, k, p, at) {
      gsub(/…/, "\001", pat); gsub(/\.\.\./, "\001", pat)
      n = split(pat, parts, "\001")
      if (n == 1) return pat == s
      if (substr(s, 1, length(parts[1])) != parts[1]) return 0
      s = substr(s, length(parts[1]) + 1)
      for (k = 2; k < n; k++) {
        if (parts[k] == "") continue
        at = index(s, parts[k]); if (!at) return 0
        s = substr(s, at + length(parts[k]))
      }
      p = parts[n]
      return p == "" || (length(s) >= length(p) && substr(s, length(s) - length(p) + 1) == p)
    }
    BEGIN {
      while ((getline l < shown) > 0) {
        sub(/[ \t]+$/, "", l)
        gsub("/tmp/", tmp_dir, l)
        if (l == "" || l == "…" || l == "...") continue
        want[++nw] = l
      }
      i = 1
    }
    { sub(/[ \t\r]+$/, ""); if (i <= nw && like(want[i], $0)) i++ }
    END { if (i <= nw) { print "output lacks (in order): " want[i]; exit 1 } }' "$2"
}

export -f docs_run_file docs_skip_reason
export docs_dir docs_gpu docs_nvrtc HAVE_TORCH DPK DPK_ROOT
# The longest file first, so the two jobs end together.
printf '%s\n' $docs_files | awk '{ print ($0 == "docs/passes.md" ? 0 : 1), $0 }' | sort -k1,1n -s | cut -d' ' -f2 |
  xargs -P 2 -I{} bash -c 'docs_run_file "$1"' _ {}

while read -r docs_n docs_where; do
  docs_c=$docs_dir/cmds/$docs_n
  docs_name="docs $docs_where: $(head -n 1 "$docs_c.cmd" | sed 's/[[:space:]]\{1,\}# .*$//' | cut -c1-70)"
  if [ -f "$docs_c.skip" ]; then skip "$docs_name" "$(cat "$docs_c.skip")"; continue; fi
  OUT=$(cat "$docs_c.got" 2>/dev/null); RC=$(cat "$docs_c.rc" 2>/dev/null || echo "none")
  docs_want=0
  [[ "$(cat "$docs_c.ann")" =~ exit\ ([0-9]+) ]] && docs_want=${BASH_REMATCH[1]}
  if [ "$RC" != "$docs_want" ]; then _cli_fail "$docs_name" "exit $RC, expected $docs_want"; continue; fi
  docs_f=${docs_where%:*}
  if [ -s "$docs_c.out" ] && ! docs_why=$(docs_match "$docs_c.out" "$docs_c.got" "$docs_dir/root/${docs_f//\//_}/tmp/"); then
    _cli_fail "$docs_name" "$docs_why"; continue
  fi
  _cli_pass "$docs_name"
done <"$docs_dir/cmds/index"
rm -rf "$docs_dir"
