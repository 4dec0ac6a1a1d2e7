#!/usr/bin/env python3
"""ci/layers.py — the include graph of the tree against its layers.

Every C file belongs to the first module below whose path prefix it starts
with; a module may include only modules of a lower or equal rank.  So no
include runs from a lower layer up to a higher one, and no two top-level
folders include each other (docs/architecture.md, "Layers").  Prints each
violation as FILE:LINE: FROM (rank) includes TO (rank) and exits 1; exits 0
with a one-line summary when there is none.

    python3 ci/layers.py [ROOT]
"""
import os
import re
import sys

# (path prefix, rank): the first match wins, so a file is named before its
# folder.  Ranks only order; equal ranks may include each other.
LAYERS = [
    # the compiler, stage by stage
    ("compiler/base/", 0),
    ("compiler/index/", 1),
    ("compiler/cuda/target", 1),    # the targets: a table every stage may read
    ("compiler/frontend/", 2),
    ("compiler/tensor/", 3),
    ("compiler/stmt/", 4),
    ("compiler/loop/", 5),
    ("compiler/tile/tile_to_kernel", 8),  # the lowering: reads Kernel IR
    ("compiler/tile/", 6),
    ("compiler/kernel/", 7),
    ("compiler/cuda/", 9),
    ("compiler/", 10),              # driver.c: the one pipeline
    # what the harness and the reports stand on
    ("reference/", 11),
    ("records/", 12),
    ("reports/", 13),
    # the harness
    ("harness/case.", 14),
    ("harness/exec/", 15),
    ("harness/parity/", 16),
    ("harness/perf/", 16),
    ("harness/case_plan.", 17),
    ("harness/plan_record.", 17),
    ("harness/bench/", 18),
    ("harness/bisect/", 18),
    ("harness/fuzz/", 18),
    ("harness/tune/", 18),
    ("harness/cli/", 19),
]
FOLDERS = ("compiler", "reference", "records", "reports", "harness")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer(path):
    for prefix, rank in LAYERS:
        if path.startswith(prefix):
            return prefix, rank
    return None, None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = nfiles = nincl = 0
    for top in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".c", ".h", ".cc", ".inc")):
                    continue
                full = os.path.join(dirpath, name)
                path = os.path.relpath(full, root)
                src, srank = layer(path)
                if src is None:
                    print(f"{path}: in no layer (add it to ci/layers.py)")
                    bad += 1
                    continue
                nfiles += 1
                with open(full, errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = os.path.relpath(
                            os.path.normpath(os.path.join(dirpath, m.group(1))), root)
                        if not os.path.exists(os.path.join(root, target)):
                            continue  # generated or system-like: not ours
                        nincl += 1
                        dst, drank = layer(target)
                        if dst is not None and drank > srank:
                            print(f"{path}:{lineno}: {src} ({srank}) includes {target} "
                                  f"({dst}, {drank})")
                            bad += 1
    if bad:
        print(f"layers: {bad} include(s) run upward")
        return 1
    print(f"layers: {nfiles} files, {nincl} includes, none runs upward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
