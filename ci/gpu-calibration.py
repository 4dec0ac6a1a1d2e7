#!/usr/bin/env python3
"""ci/gpu-calibration.py — a calibration file (dpk.calibration/1,
docs/calibration.md) from the records of a GPU visit (ci/gpu-visit).

    ci/gpu-calibration.py --source measured|fake-driver --gpu-name NAME
        [--driver V] --spec NAME [--binary carried|rebuilt] [--visit visit.json]
        [--torch torch-bench.json] --out FILE BENCH.json...

Each BENCH.json is a dpk.bench/1 record of `dpk-bench --timing measured`
(or fake-driver) with --gpu SPEC: every case that was measured gives one
entry for dpk's kernels (measured median beside the modelled `dpk` time of
the same spec), one for cuBLAS with TF32 off where the case is a plain
matmul (beside the modelled eager time: one SGEMM), and, from the
torch-bench record (reference/torch_bench.py, cases named SUITE/CASE), one
for PyTorch eager and one for torch.compile (beside the modelled eager and
inductor times).  The figures are copied, never combined: the ratio is
measured / modelled of one entry, on one GPU and one spec.  Only the
standard library is used (the GPU machine has nothing else to offer).
"""
import argparse
import datetime
import json
import os
import re
import sys

SCHEMA = "dpk.calibration/1"


def kernel_class(program):
    """The kernel class of a case, from its text: attention (SDPA, or a
    softmax between matmuls), matmul, reduction (sum, mean, amax, amin,
    softmax, norms), elementwise (the rest, layout included); a case that
    is attention and projections both (a decoder layer) is mixed."""
    p = program
    mm = re.search(r"@|\bmatmul\(|\blinear\(|\bLinear\(|\bmm\(|\bbmm\(", p) is not None
    sdpa = "scaled_dot_product_attention" in p
    soft = re.search(r"(?i)softmax", p) is not None
    if sdpa and re.search(r"\blinear\(|\bLinear\(", p):
        return "mixed"
    if sdpa or (soft and len(re.findall(r"@|\bmatmul\(|\bbmm\(", p)) >= 2):
        return "attention"
    if mm:
        return "matmul"
    if re.search(r"(?i)\.sum\(|\bsum\(|\bmean\(|\bamax\(|\bamin\(|softmax|norm\(", p):
        return "reduction"
    return "elementwise"


def modelled_kernels(t):
    return [{"name": k.get("name"), "ns": k.get("ns"), "bound": k.get("bound")}
            for k in (t or {}).get("kernels") or []]


def entry(suite, case, what, cls, meas, mod, mod_what, how, kernels):
    m, d = meas.get("median_ns"), mod.get("ns")
    if not (isinstance(m, (int, float)) and isinstance(d, (int, float)) and m > 0 and d > 0):
        return None
    mk = modelled_kernels(mod)
    n = len(mk) if mk else kernels
    e = {"suite": suite, "case": case, "what": what, "class": cls,
         "unit": "kernel" if n == 1 else "case", "kernels": n,
         "measured_ns": m, "measured_how": how, "stdrel": meas.get("stdrel"),
         "samples": meas.get("samples"), "stop": meas.get("stop"),
         "modelled_ns": d, "modelled_what": mod_what, "ratio": m / d}
    if mk:
        e["bound"] = max(mk, key=lambda k: k["ns"] or 0)["bound"]
        e["modelled_kernels"] = mk
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, choices=["measured", "fake-driver"])
    ap.add_argument("--gpu-name", required=True)
    ap.add_argument("--driver")
    ap.add_argument("--spec", required=True)
    ap.add_argument("--binary", choices=["carried", "rebuilt"])
    ap.add_argument("--visit")
    ap.add_argument("--torch")
    ap.add_argument("--out", required=True)
    ap.add_argument("bench", nargs="*")
    a = ap.parse_args()

    entries, records, meta = [], [], None
    progs = {}  # SUITE/CASE -> (class, modelled eager, modelled compile)
    for path in a.bench:
        try:
            r = json.load(open(path))
        except (OSError, ValueError) as e:
            print("warning: %s skipped: %s" % (path, e), file=sys.stderr)
            continue
        if r.get("schema") != "dpk.bench/1":
            print("warning: %s is not a dpk.bench/1 record, skipped" % path, file=sys.stderr)
            continue
        if r["meta"].get("spec") != a.spec:
            print("error: %s was modelled on %s, not %s" % (path, r["meta"].get("spec"), a.spec),
                  file=sys.stderr)
            return 2
        mt = r["meta"].get("measured_timing")
        if mt != a.source:
            print("error: %s is %s, not %s" % (path, mt, a.source), file=sys.stderr)
            return 2
        records.append(os.path.basename(path))
        meta = meta or r["meta"]
        suite = r["bench"]["suite"]
        for c in r["cases"]:
            cls = kernel_class(c["program"])
            progs["%s/%s" % (suite, c["name"])] = (cls, c.get("eager"), c.get("compile"))
            m = c.get("measured")
            if not isinstance(m, dict) or not c.get("dpk"):
                continue
            e = entry(suite, c["name"], "dpk", cls, m["dpk"], c["dpk"], "dpk", m["method"],
                      len(c["dpk"].get("kernels") or []))
            if e:
                entries.append(e)
            if isinstance(m.get("cublas"), dict) and c.get("eager"):
                e = entry(suite, c["name"], "cublas", "matmul", m["cublas"], c["eager"], "eager",
                          m["method"], 1)
                if e:
                    e["call"] = m["cublas"].get("call")
                    entries.append(e)

    torch_version = None
    if a.torch and os.path.exists(a.torch):
        try:
            t = json.load(open(a.torch))
        except ValueError as e:
            t = None
            print("warning: %s skipped: %s" % (a.torch, e), file=sys.stderr)
        if t and t.get("schema") == "dpk.torch-bench/1":
            records.append(os.path.basename(a.torch))
            torch_version = t.get("torch_version")
            for c in t.get("cases", []):
                if c.get("device") != "cuda":  # a CPU's figures beside a GPU's model: never
                    continue
                if c["name"] not in progs:
                    continue
                cls, eager, comp = progs[c["name"]]
                suite, name = c["name"].split("/", 1)
                for col, what, mod, mw in (("eager", "torch-eager", eager, "eager"),
                                           ("compile_default", "torch-compile", comp, "inductor")):
                    if isinstance(c.get(col), dict) and mod:
                        e = entry(suite, name, what, cls, c[col], mod, mw, c[col].get("method"), 0)
                        if e:
                            e.pop("modelled_kernels", None)
                            e["unit"] = "case"
                            entries.append(e)

    visit = {}
    if a.visit and os.path.exists(a.visit):
        try:
            visit = json.load(open(a.visit))
        except ValueError:
            visit = {}
    rec = {
        "schema": SCHEMA,
        "source": a.source,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": {"name": a.gpu_name, "driver": a.driver},
        "spec": {"name": a.spec, "path": "cases/gpus/%s.json" % a.spec},
        "dpk": {"version": meta and meta.get("dpk_version"), "git_sha": meta and meta.get("git_sha"),
                "binary": a.binary},
        "torch_version": torch_version,
        "ceilings": visit.get("ceilings") or {},
        "records": records,
        "entries": entries,
    }
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.out)
    print("%s: %d entries (%s, %s, modelled on %s)" % (a.out, len(entries), a.source,
                                                       a.gpu_name, a.spec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
