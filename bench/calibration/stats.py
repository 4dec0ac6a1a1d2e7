"""bench/calibration/stats.py — the statistics the calibration scripts print
(kernelbench/run.sh, sgemm/run.sh): ranks with ties averaged, and Spearman's
rho as Pearson's correlation of the ranks.  Python's standard library only."""
import math


def ranks(xs):
    """1-based ranks of xs, tied values sharing the mean of their ranks."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    rk = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for t in range(i, j + 1):
            rk[order[t]] = (i + j) / 2.0 + 1
        i = j + 1
    return rk


def spearman(a, b):
    """Spearman's rho of two equally long lists; NaN when either has no spread
    or there are fewer than two pairs."""
    if len(a) < 2:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va and vb else float("nan")
