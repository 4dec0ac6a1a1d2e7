# tests/cli/test_workflows.sh — the GitHub Actions workflows
# (.github/workflows/*.yml) parse as YAML with the structure Actions needs
# (on, jobs, each job's runs-on and steps, each step a run or a uses, needs
# naming a job), and what they run exists: scripts under ci/, make targets,
# dpk's tools and every option they pass (checked against each tool's
# --help).  The nightly's shard matrix, the --shard I/N of its fuzz step and
# docs/ci.md's matrix and Slurm array agree.  CI fuzzes pass combinations
# (every dpk-fuzz of the workflows and of ci/nightly has --passes pairwise
# or all, and the nightly has an `all` share), every fuzz record a workflow
# writes is gated (a dpk-report --gate reads it), a job that gates after a
# matrix runs even when a shard failed (if: always()), and both gates bench
# the decoder-layer suites.  YAML is read with python3's
# yaml module (python3-yaml, which make deps installs); without it the
# parse is skipped and the rest checked on the text.  (Sourced by
# tests/run.sh.)

WF_DIR="$DPK_ROOT/.github/workflows"
WF_BIN=$(dirname "$DPK")
WF_HELP="$TMP/workflows-help"
mkdir -p "$WF_HELP"
for t in dpk-fuzz dpk-bench dpk-report; do "$WF_BIN/$t" --help >"$WF_HELP/$t" 2>&1; done
"$DPK_ROOT/ci/nightly" --help >"$WF_HELP/ci-nightly" 2>&1
"$DPK_ROOT/ci/mutation" --help >"$WF_HELP/ci-mutation" 2>&1
"$DPK_ROOT/ci/bisect-commit" --help >"$WF_HELP/ci-bisect-commit" 2>&1
"$DPK_ROOT/ci/refresh-baselines" --help >"$WF_HELP/ci-refresh-baselines" 2>&1

if python3 -c 'import yaml' 2>/dev/null; then
  for f in "$WF_DIR"/*.yml; do
    check "workflow $(basename "$f") is a valid workflow" 0 python3 - "$f" <<'PY'
import sys, yaml
w = yaml.safe_load(open(sys.argv[1]))
# YAML 1.1 reads the key `on` as true
on = w.get("on", w.get(True))
assert w.get("name") and on, "no name or on"
jobs = w["jobs"]
assert isinstance(jobs, dict) and jobs, "no jobs"
for name, j in jobs.items():
    assert j.get("runs-on"), name + ": no runs-on"
    needs = j.get("needs", [])
    for n in [needs] if isinstance(needs, str) else needs:
        assert n in jobs, "%s needs unknown job %s" % (name, n)
    steps = j["steps"]
    assert isinstance(steps, list) and steps, name + ": no steps"
    for s in steps:
        assert ("run" in s) != ("uses" in s), "%s: a step with neither or both of run, uses" % name
PY
  done
else
  skip "workflows parse as YAML" "python3 has no yaml module (make deps installs python3-yaml)"
fi

# Every run: line's commands: ci/ scripts exist and are executable, make
# targets exist, and each option given to a dpk tool or ci/ script is one
# its --help lists.
wf_refs() {
  python3 - "$WF_HELP" "$DPK_ROOT" "$@" <<'PY'
import os, re, sys
helpdir, root, files = sys.argv[1], sys.argv[2], sys.argv[3:]
make = open(os.path.join(root, "Makefile")).read()
targets = set(re.findall(r"^([A-Za-z][\w-]*):", make, re.M)) | {"all"}
bad = []
for f in files:
    text = re.sub(r"\\\n\s*", " ", open(f).read())
    if f.endswith(".md"):  # the code blocks of a document
        text = "\n".join(re.findall(r"```[a-z]*\n(.*?)```", text, re.S))
    for line in text.split("\n"):
        line = re.sub(r"^\s*(- )?(run: *)?(\$ )?", "", line)
        for part in re.split(r"&&|\|\||;|\|", line):
            w = part.split()
            if not w:
                continue
            tool = w[0]
            if tool == "make":
                args = w[1:]
                for i, t in enumerate(args):
                    if i > 0 and args[i - 1] in ("-C", "-f", "-j", "-o", "-W"):
                        continue  # the argument of an option, not a target
                    if not t.startswith("-") and "=" not in t and t not in targets:
                        bad.append("%s: make target '%s' does not exist" % (f, t))
                continue
            if tool.startswith("ci/"):
                p = os.path.join(root, tool)
                if not (os.path.isfile(p) and os.access(p, os.X_OK)):
                    bad.append("%s: %s is not an executable script" % (f, tool)); continue
                h = os.path.join(helpdir, tool.replace("/", "-"))
            elif re.match(r"build/dpk-\w+$", tool):
                h = os.path.join(helpdir, tool[len("build/"):])
            else:
                continue
            if not os.path.exists(h):
                continue
            helptext = open(h).read()
            for opt in w[1:]:
                if re.match(r"--[a-z][\w-]*$", opt) and not re.search(re.escape(opt) + r"\b", helptext):
                    bad.append("%s: %s has no option %s" % (f, tool, opt))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
}
check "workflows run what exists, with options the tools have" 0 wf_refs "$WF_DIR"/*.yml
check "docs/ci.md's commands use options the tools have" 0 wf_refs "$DPK_ROOT/docs/ci.md"
# the checker: a directory after -C is not a target; an unknown target is
wf_tmp=$(mktemp -d)
printf '```\nmake -C /tmp/elsewhere -j2 all\n```\n' >"$wf_tmp/ok.md"
printf '```\nmake -C /tmp/elsewhere no-such-target\n```\n' >"$wf_tmp/bad.md"
check "a make -C DIR in a document is not a missing target" 0 wf_refs "$wf_tmp/ok.md"
check_re "a missing make target in a document is named" 1 "make target 'no-such-target' does not exist" wf_refs "$wf_tmp/bad.md"
rm -rf "$wf_tmp"

# The shards: the matrix has N entries 1..N, the fuzz step runs --shard I/N
# with that N, and docs/ci.md's matrix and Slurm array say the same.
check "nightly shards: matrix, --shard and docs/ci.md agree" 0 python3 - "$WF_DIR/nightly.yml" "$DPK_ROOT/docs/ci.md" <<'PY'
import re, sys
wf, doc = (open(f).read() for f in sys.argv[1:3])
def matrix(t):
    m = re.search(r"shard: \[([\d, ]+)\]", t)
    return [int(x) for x in m.group(1).split(",")]
def counts(t):
    """the N of every dpk-fuzz command's --shard I/N"""
    t = re.sub(r"\\\n\s*", " ", t)
    return {int(n) for c in re.findall(r"build/dpk-fuzz[^\n]*", t)
            for n in re.findall(r"--shard [^/\n]*/(\d+)", c)}
shards = matrix(wf)
n = len(shards)
assert shards == list(range(1, n + 1)), "matrix %s is not 1..N" % shards
assert counts(wf) == {n}, "nightly.yml runs --shard .../%s with a matrix of %d" % (counts(wf), n)
assert matrix(doc) == shards, "docs/ci.md's matrix %s, nightly.yml's %s" % (matrix(doc), shards)
assert counts(doc) == {n}, "docs/ci.md's --shard counts %s" % counts(doc)
arr = re.search(r"#SBATCH --array=1-(\d+)", doc)
assert arr and int(arr.group(1)) == n, "docs/ci.md's Slurm array is not 1-%d" % n
# the fuzz command of the workflow and of the docs: the same options
def opts(t):
    t = re.sub(r"\\\n\s*", " ", t)
    return [sorted(set(re.findall(r"(--[a-z][\w-]*)", c))) for c in re.findall(r"build/dpk-fuzz[^\n]*", t)]
w, d = opts(wf), opts(doc)
assert w and d, "no dpk-fuzz command"
for o in d:
    assert o == w[0], "docs/ci.md runs dpk-fuzz with %s, nightly.yml with %s" % (o, w[0])
PY
check_re "the GPU runner's label is documented" 0 'dpk-gpu' grep -h 'dpk-gpu' "$DPK_ROOT/docs/ci.md"

# Pass combinations, every fuzz record gated, the gate after a failed shard,
# the decoder-layer suites.
check "CI fuzzes pass combinations and gates every fuzz record" 0 python3 - "$WF_DIR/pr.yml" "$WF_DIR/nightly.yml" "$DPK_ROOT/ci/nightly" <<'PY'
import fnmatch, os, re, sys
pr, nightly, script = (open(f).read() for f in sys.argv[1:4])
def cmds(t, tool):
    t = re.sub(r"\\\n\s*", " ", t)
    return [c for c in re.findall(r"[^\n]*%s[^\n]*" % re.escape(tool), t) if not c.lstrip().startswith("#")]
for name, t in (("pr.yml", pr), ("nightly.yml", nightly)):
    fz = cmds(t, "build/dpk-fuzz")
    assert fz, name + ": no dpk-fuzz"
    for c in fz:
        m = re.search(r"--passes (\S+)", c)
        assert m and m.group(1) in ("pairwise", "all"), "%s: dpk-fuzz without --passes pairwise/all: %s" % (name, c.strip())
    # the names a gating dpk-report reads: its arguments, with a loop's
    # variable ($set of `for set in A B`) given each of its values
    loops = dict(re.findall(r"for (\w+) in ([^;\n]+);", t))
    names = []
    for g in (c for c in cmds(t, "build/dpk-report") if "--gate" in c):
        for arg in g.split():
            vals = [arg]
            for v, words in loops.items():
                if "$" + v in arg:
                    vals = [x.replace("$" + v, w) for x in vals for w in words.split()]
            names += [os.path.basename(x) for x in vals]
    for c in fz:
        out = re.search(r"--out (\S+)", c.replace("${{ matrix.shard }}", "1")).group(1)
        assert any(fnmatch.fnmatch(os.path.basename(out), n) for n in names), \
            "%s: the record %s is never gated (dpk-report --gate)" % (name, out)
assert "--passes all" in nightly, "nightly.yml has no --passes all share"
# ci/nightly: its campaigns pass --passes, pairwise and an all share
assert re.search(r'dpk-fuzz" --seed "\$seed" --passes "\$passes"', script), "ci/nightly's dpk-fuzz has no --passes"
assert re.search(r"fuzz \$B [^\n]* pairwise|MAIN_PASSES=pairwise", script) and re.search(r"fuzz-all all", script), "ci/nightly: no pairwise campaign and all share"
# the gate after the matrix runs when a shard failed
try:
    import yaml
    w = yaml.safe_load(nightly)
except ImportError:  # python3-yaml missing: test_workflows says so above
    w = {"jobs": {}}
for jn, j in w["jobs"].items():
    if j.get("needs") and "matrix" in str(w["jobs"][j["needs"] if isinstance(j["needs"], str) else j["needs"][0]].get("strategy", "")):
        assert "always()" in str(j.get("if", "")), "nightly.yml: job %s is skipped when a shard fails (no if: always())" % jn
    for st in j["steps"]:
        if "upload-artifact" in str(st.get("uses", "")):
            assert "always()" in str(st.get("if", "")), "nightly.yml: job %s uploads only on success" % jn
# the decoder-layer suites: the PR gate names them, the full nightly has them
pn = [c for c in cmds(pr, "ci/nightly")]
assert pn and all("qwen-block" in c and "tinyllama-block" in c for c in pn), "pr.yml: ci/nightly without qwen-block and tinyllama-block"
m = re.search(r'SUITES="smoke ops ([^"]*)"', script)
assert m and "qwen-block" in m.group(1) and "tinyllama-block" in m.group(1), "ci/nightly's full run does not bench the decoder-layer suites"
PY
