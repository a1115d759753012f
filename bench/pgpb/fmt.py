"""Printing and number formatting shared by the report and the progress log."""

import math


def log(msg):
    print(msg, flush=True)


def nice_size(n):
    """Round n down to 1, 2 or 5 times a power of ten (sample tables get reused)."""
    if n <= 1:
        return 1
    p = 10 ** int(math.floor(math.log10(n)))
    for m in (5, 2, 1):
        if m * p <= n:
            return m * p
    return p


def fmt_s(x):
    if x is None:
        return ""
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt_rate(x):
    if x is None:
        return ""
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def fmt_ratio(x):
    if x is None:
        return ""
    return f"{x:.2f}x" if x < 100 else f"{x:.0f}x"


def fmt_load(r):
    """The 1-minute load average seen during a row: 'min-max'."""
    lo, hi = r.get("load_min"), r.get("load_max")
    if lo is None:
        return ""
    return f"{lo:.1f}" if abs(hi - lo) < 0.05 else f"{lo:.1f}-{hi:.1f}"
