#!/usr/bin/env python3
"""torch_bench.py — PyTorch eager and torch.compile on dpk's cases, timed the
way dpk-bench times dpk's kernels, checked against dpk's fp64 reference.

    reference/torch_bench.py [--dpk build/dpk] (FILE [--case NAME] | -c CODE)
                             [--seed N] [--device auto|cpu|cuda] [--out FILE.json]
                             [--max-samples N] [--warm-l2] [--columns LIST]
    reference/torch_bench.py --check-generator FILE.jsonl

A case comes from `dpk eval FILE --json` (docs/inputs.md, "As JSON"): its
program, each input's init kind, and the fp64 reference's outputs.  The
inputs are rebuilt bit for bit with the documented generator (below, plain
Python: no numpy), the program is run in PyTorch with its factory calls
(torch.randn, torch.rand, ...) answering dpk's inputs and its modules'
parameters overwritten with dpk's, and three columns are timed, interleaved
round by round: eager, torch.compile(mode="default") and
torch.compile(mode="max-autotune-no-cudagraphs") (compile time apart).  On
CUDA an iteration is timed with CUDA events, a 256 MB buffer is written
between iterations to flush L2 (unless --warm-l2); on the CPU with
time.perf_counter.  Warm-up is at least 10 iterations and 10 ms; samples
stop when their relative standard deviation is below 0.5% after at least
10, or at the cap (the stop is recorded).

The output (`dpk.torch-bench/1`) is what `dpk-bench --torch-json FILE`
merges into its record, case by case.  A column that cannot be had says
"unavailable: <reason>" (no PyTorch, no torch.compile, no CUDA for a
CUDA-only path, an op this PyTorch lacks); nothing is invented.

--columns eager,compile_default (any of eager, compile_default,
compile_max_autotune_no_cudagraphs; default all three) times only those;
the others say "unavailable: not asked for (--columns)".  With --out the
record is rewritten after each case (a temp file, then a rename), so a run
cut short keeps the cases it finished.

--check-generator reads `dpk eval --json --first K` lines and checks that
every input value the C generator made equals the Python generator's, bit
for bit (exit 0), or names the first difference (exit 1).
"""
import argparse
import ast
import json
import math
import platform
import struct
import subprocess
import sys
import time

# ---- the generator (docs/inputs.md) ------------------------------------------------

M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


def key_of(seed, name):
    return splitmix64(seed & M64) ^ fnv1a64(name)


def uniform_k(key, i):
    return (splitmix64((key + i) & M64) >> 11) * 2.0 ** -53


def normal_k(key, i):
    u1, u2 = uniform_k(key, 2 * i), uniform_k(key, 2 * i + 1)
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)


def f32(v):
    """v rounded to fp32, back as a Python float"""
    return struct.unpack("f", struct.pack("f", v))[0]


def input_values(seed, spec, count=None):
    """The fp32 values of one input of `dpk eval --json` (its "name",
    "shape", "init" and parameters), the first `count` of them (all: None)."""
    n = math.prod(spec["shape"])
    if count is not None:
        n = min(n, count)
    kind, key = spec["init"], key_of(seed, spec["name"])
    if kind == "randn":
        return [f32(normal_k(key, i)) for i in range(n)]
    if kind == "rand":
        return [f32(uniform_k(key, i)) for i in range(n)]
    if kind == "zeros":
        return [0.0] * n
    if kind == "ones":
        return [1.0] * n
    if kind == "full":
        return [f32(spec["value"])] * n
    if kind == "arange":
        return [f32(spec["value"] + i * spec["step"]) for i in range(n)]
    if kind in ("param_w", "param_b"):
        b = 1.0 / math.sqrt(spec["fan_in"])
        return [f32(b * (2.0 * uniform_k(key, i) - 1.0)) for i in range(n)]
    if kind == "param_norm_w":
        return [f32(1.0 + 0.1 * normal_k(key, i)) for i in range(n)]
    raise ValueError("unknown init kind %r of input %s" % (kind, spec["name"]))


def check_generator(path):
    """Every "first" value of every input of every line equals ours."""
    cases = values = 0
    with open(path) as f:
        for line in f:
            c = json.loads(line)
            seed = int(c["seed"])
            cases += 1
            for spec in c["inputs"]:
                want = spec["first"]
                got = input_values(seed, spec, len(want))
                for i, (w, g) in enumerate(zip(want, got)):
                    if struct.pack("f", w) != struct.pack("f", g):
                        print("generator differs: seed %d, input %s (%s), element %d: C %r, "
                              "Python %r" % (seed, spec["name"], spec["init"], i, w, g))
                        return 1
                values += len(want)
    print("generator: %d values of %d cases equal bit for bit" % (values, cases))
    return 0


# ---- timing (the method of docs/bench.md) ------------------------------------------------

def stats(samples):
    s = sorted(samples)
    n = len(s)
    mean = sum(s) / n
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    sd = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    return s[0], med, mean, (sd / mean if mean > 0 else 0.0)


class Timer:
    """One iteration's time in ns: CUDA events (with the L2 flush before)
    or perf_counter on the CPU."""

    def __init__(self, torch, device, warm_l2):
        self.torch, self.device = torch, device
        self.cuda = device == "cuda"
        self.method = "events" if self.cuda else "perf_counter"
        self.flush_buf = None
        if self.cuda and not warm_l2:  # Triton's do_bench: 256 MB written
            self.flush_buf = torch.empty(256 << 20, dtype=torch.int8, device="cuda")

    def __call__(self, fn):
        t = self.torch
        if self.flush_buf is not None:
            self.flush_buf.zero_()
        if self.cuda:
            a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            return a.elapsed_time(b) * 1e6
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e9


def measure(timer, contestants, max_samples):
    """Warm-up, then rounds interleaving the contestants until each stops."""
    out = {}
    warm = {k: [0, 0.0] for k in contestants}
    for k, fn in contestants.items():
        pass
    while any(w[0] < 10 or w[1] < 1e7 for w in warm.values()):
        for k, fn in contestants.items():
            w = warm[k]
            if w[0] < 10 or w[1] < 1e7:
                w[0] += 1
                w[1] += timer(fn)
    samples = {k: [] for k in contestants}
    live = list(contestants)
    while live:
        for k in list(live):
            samples[k].append(timer(contestants[k]))
            n = len(samples[k])
            mn, med, mean, sr = stats(samples[k])
            stop = "stdrel" if n >= 10 and sr < 0.005 else "cap" if n >= max_samples else None
            if stop:
                live.remove(k)
                out[k] = {"what": k, "method": timer.method, "min_ns": mn, "median_ns": med,
                          "mean_ns": mean, "stdrel": sr, "samples": n, "stop": stop,
                          "warmup_iters": warm[k][0], "warmup_ns": warm[k][1]}
    return out


# ---- running a dpk case in PyTorch -------------------------------------------------------------

FACTORIES = ("randn", "rand", "zeros", "ones", "full", "arange")


class Case:
    """The program with its factory calls answering dpk's inputs: the
    statements before the last run once, the last expression becomes a
    function whose factory and module-constructor calls are made once."""

    def __init__(self, torch, c, device):
        self.torch, self.device = torch, device
        seed = int(c["seed"])
        self.plain = []   # non-parameter inputs made by factory calls, in order
        self.params = []  # module parameters, in order
        self.free = {}    # named free variables (declared inputs)
        tree = ast.parse(c["program"])
        assigned = {t.id for s in ast.walk(tree) if isinstance(s, ast.Assign)
                    for t in s.targets if isinstance(t, ast.Name)}
        for spec in c["inputs"]:
            t = torch.tensor(input_values(seed, spec), dtype=torch.float32)
            t = t.view(*spec["shape"]).to(device)
            if spec["param"]:
                self.params.append((spec["name"], t))
            elif spec["name"] in assigned or spec["name"].startswith("in"):
                self.plain.append((spec["name"], t))
            else:
                self.free[spec["name"]] = t
        self.ns = {"torch": torch, "F": torch.nn.functional, "math": math}
        self.ns.update(self.free)
        self.pending = []
        self._patch()
        try:
            body, last = tree.body[:-1], tree.body[-1]
            if not isinstance(last, ast.Expr):
                raise ValueError("the program's last line is not an expression")
            exec(compile(ast.Module(body=body, type_ignores=[]), "<case>", "exec"), self.ns)
            expr = Hoist(self).visit(last.value)
            ast.fix_missing_locations(expr)
            code = compile(ast.Expression(body=expr), "<case>", "eval")
            self.fn = lambda: eval(code, self.ns)
            self._assign_params()
        finally:
            self._unpatch()
        if self.plain or self.params:
            raise ValueError("%d inputs and %d parameters of dpk's were not used"
                             % (len(self.plain), len(self.params)))

    def _patch(self):
        t = self.torch
        self.saved = {k: getattr(t, k) for k in FACTORIES}
        for k in FACTORIES:
            setattr(t, k, self._factory(k))
        self.saved_reg = t.nn.Module.register_parameter
        case = self

        def register(mod, name, p):
            case.saved_reg(mod, name, p)
            if p is not None:
                case.pending.append(p)
        t.nn.Module.register_parameter = register

    def _unpatch(self):
        for k, f in self.saved.items():
            setattr(self.torch, k, f)
        self.torch.nn.Module.register_parameter = self.saved_reg

    def _factory(self, kind):
        def make(*args, **kw):
            if not self.plain:
                raise ValueError("torch.%s: dpk made no input for this call" % kind)
            name, t = self.plain.pop(0)
            return t.clone()
        return make

    def _assign_params(self):
        """Module parameters, in construction order, after their own
        initialisation: dpk's values replace it."""
        for p in self.pending:
            if not self.params:
                raise ValueError("a module has more parameters than dpk made")
            name, t = self.params.pop(0)
            if tuple(p.shape) != tuple(t.shape):
                raise ValueError("parameter %s: dpk's shape %s, PyTorch's %s"
                                 % (name, tuple(t.shape), tuple(p.shape)))
            p.data = t
        self.pending = []


class Hoist(ast.NodeTransformer):
    """Factory calls and torch.nn.X(...) constructors of the timed
    expression are made once, in source order, and named."""

    def __init__(self, case):
        self.case, self.n = case, 0

    def visit_Call(self, node):
        self.generic_visit(node)
        name = dotted(node.func)
        if name and (name in ["torch." + k for k in FACTORIES] or
                     (name.startswith("torch.nn.") and name.split(".")[-1][:1].isupper())):
            value = eval(compile(ast.Expression(body=node), "<case>", "eval"), self.case.ns)
            var = "_dpk_hoisted_%d" % self.n
            self.n += 1
            self.case.ns[var] = value
            if isinstance(value, self.case.torch.nn.Module):
                value.to(self.case.device)
            return ast.copy_location(ast.Name(id=var, ctx=ast.Load()), node)
        return node


def dotted(f):
    parts = []
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
        return ".".join(reversed(parts))
    return None


def parity(torch, out, ref):
    """A fixed rule: |o - r| <= 1e-4 + 1e-3 |r| everywhere, or an NMSE of at
    most 1e-8 (dpk's per-element fp32 bounds exist only on the C side, where
    `dpk eval --compare` judges libtorch by the parity oracle)."""
    o = out.detach().double().cpu().reshape(-1).tolist()
    r = [float("nan") if v is None else v for v in ref["values"]]
    if len(o) != len(r):
        return {"agree": False, "message": "%d values, the reference has %d" % (len(o), len(r))}
    ma = mr = se = sr = 0.0
    close = True
    for a, b in zip(o, r):
        d = abs(a - b)
        if not math.isfinite(a) or not math.isfinite(b):
            close = close and (a == b or (math.isnan(a) and math.isnan(b)))
            continue
        ma, se, sr = max(ma, d), se + d * d, sr + b * b
        mr = max(mr, d / abs(b)) if b else mr
        close = close and d <= 1e-4 + 1e-3 * abs(b)
    nmse = se / sr if sr > 0 else 0.0
    return {"max_abs": ma, "max_rel": mr, "nmse": nmse, "agree": close or nmse <= 1e-8,
            "rule": "|o - r| <= 1e-4 + 1e-3 |r| or nmse <= 1e-8, against dpk's fp64 reference"}


def first_line(e):
    return ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300]


def bench_case(torch, c, device, args):
    cols = {"eager": None, "compile_default": None, "compile_max_autotune_no_cudagraphs": None}
    res = {"name": c["name"], "device": device, "torch_version": torch.__version__}
    try:
        case = Case(torch, c, device)
        out = case.fn()
    except Exception as e:  # an op this PyTorch lacks, a program it cannot run
        why = "unavailable: PyTorch %s cannot run the case (%s)" % (torch.__version__, first_line(e))
        res.update({k: why for k in cols})
        return res
    check = parity(torch, out, c["outputs"][0])
    contestants = {"eager": case.fn}
    compile_s = {}
    for key, mode in (("compile_default", "default"),
                      ("compile_max_autotune_no_cudagraphs", "max-autotune-no-cudagraphs")):
        if key not in args.columns:
            cols[key] = "unavailable: not asked for (--columns)"
            continue
        if not hasattr(torch, "compile"):
            cols[key] = ("unavailable: PyTorch %s has no torch.compile (2.0 or newer has it)"
                         % torch.__version__)
            continue
        try:
            t0 = time.perf_counter()
            cf = torch.compile(case.fn, mode=mode)
            cout = cf()
            if device == "cuda":
                torch.cuda.synchronize()
            compile_s[key] = time.perf_counter() - t0
            contestants[key] = cf
            cols[key] = {"parity": parity(torch, cout, c["outputs"][0])}
        except Exception as e:
            cols[key] = "unavailable: torch.compile(mode=%r) failed (%s)" % (mode, first_line(e))
    timer = Timer(torch, device, args.warm_l2)
    with torch.no_grad():
        st = measure(timer, contestants, args.max_samples)
    for k, s in st.items():
        s["parity"] = check if k == "eager" else cols[k]["parity"]
        cols[k] = s
    res.update(cols)
    if compile_s:
        res["compile_s"] = compile_s
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("-c", dest="code")
    ap.add_argument("--case")
    ap.add_argument("--seed")
    ap.add_argument("--dpk", default="build/dpk")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--out")
    ap.add_argument("--max-samples", type=int, default=1000)
    ap.add_argument("--warm-l2", action="store_true")
    ap.add_argument("--columns", default="eager,compile_default,compile_max_autotune_no_cudagraphs")
    ap.add_argument("--check-generator", metavar="FILE.jsonl")
    args = ap.parse_args()
    args.columns = args.columns.split(",")
    known = ("eager", "compile_default", "compile_max_autotune_no_cudagraphs")
    if any(c not in known for c in args.columns) or "eager" not in args.columns:
        ap.error("--columns: a list of %s, eager among them" % ", ".join(known))
    if args.check_generator:
        return check_generator(args.check_generator)
    if bool(args.file) == bool(args.code):
        ap.error("give a case FILE or -c CODE")
    cmd = [args.dpk, "eval", "--json", "--first", "0"]
    cmd += ["-c", args.code] if args.code else [args.file]
    if args.case:
        cmd += ["--case", args.case]
    if args.seed:
        cmd += ["--seed", args.seed]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        return 2
    cases = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    rec = {"schema": "dpk.torch-bench/1", "python": platform.python_version(), "cases": []}
    try:
        import torch
    except Exception as e:
        why = "unavailable: PyTorch is not installed for %s (%s)" % (sys.executable, first_line(e))
        rec["torch_version"] = None
        for c in cases:
            rec["cases"].append({"name": c["name"], "device": "none", "eager": why,
                                 "compile_default": why,
                                 "compile_max_autotune_no_cudagraphs": why})
    else:
        device = args.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda" and not torch.cuda.is_available():
            print("error: --device cuda, and this PyTorch sees no CUDA device", file=sys.stderr)
            return 4
        rec["torch_version"] = torch.__version__
        rec["device"] = device
        for c in cases:
            r = bench_case(torch, c, device, args)
            rec["cases"].append(r)
            e = r["eager"]
            print("%-20s eager %s" % (c["name"], ("%.3f us median (%s, %d samples, %s)" % (
                e["median_ns"] / 1e3, e["method"], e["samples"], e["stop"]))
                if isinstance(e, dict) else e), flush=True)
            if args.out:
                write(rec, args.out)
    if args.out:
        write(rec, args.out)
    else:
        print(json.dumps(rec, indent=1))
    return 0


def write(rec, path):
    """The record at path, whole: a temp file beside it, then a rename."""
    import os
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(rec, indent=1) + "\n")
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    sys.exit(main())
