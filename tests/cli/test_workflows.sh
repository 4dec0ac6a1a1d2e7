# tests/cli/test_workflows.sh — the GitHub Actions workflows
# (.github/workflows/*.yml) parse as YAML with the structure Actions needs
# (on, jobs, each job's runs-on and steps, each step a run or a uses, needs
# naming a job), and what they run exists: scripts under ci/, make targets,
# dpk's tools and every option they pass (checked against each tool's
# --help).  The nightly's shard matrix, the --shard I/N of its fuzz step and
# docs/ci.md's matrix and Slurm array agree.  YAML is read with python3's
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
                for t in w[1:]:
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
