"""A minimal test runner for the conformance suites (no pytest needed).

    from harness import test, main, assert_close
    @test
    def binary(env): ...
    if __name__ == "__main__":
        main(fixture=make_env)          # fixture: a context manager factory; its value is `env`

Prints `PASS name (secs)` / `FAIL name: reason` per test and, as the last line,
`conformance: N passed, M failed` (scripts/test.sh adds these up). Exit status 1 if any failed.
A fixture that cannot be set up fails every selected test. `-k SUBSTR` selects tests by name,
`--list` lists them.
"""

import argparse
import contextlib
import os
import sys
import time
import traceback

import numpy as np

# regress/ (pgcluster.py) on the path, whoever runs us.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

_TESTS = []


def test(fn=None, *, name=None):
    """Register fn(env) as a test; usable as @test or add(test(fn, name=...))."""
    def register(f):
        _TESTS.append((name or f.__name__, f))
        return f
    return register(fn) if fn is not None else register


def add_test(name, fn):
    _TESTS.append((name, fn))


class Failure(AssertionError):
    pass


def to_floats(values, width=None):
    """Rows from the database (floats, float lists, None) as a float64 array, None -> NaN.
    width: the row width of a 2-D result (a NULL array becomes a row of NaN)."""
    if width is None:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    out = np.full((len(values), width), np.nan)
    for i, row in enumerate(values):
        if row is None:
            continue
        row = [np.nan if v is None else v for v in row]
        if len(row) != width:
            raise Failure(f"row {i}: array of length {len(row)}, expected {width}")
        out[i] = row
    return out


def _fmt(x):
    return "NULL" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.9g}"


def assert_close(what, got, want, atol=1e-5, rtol=1e-5, ids=None):
    """Every element of got equals want within max(atol, rtol * |want|); NaN/None never do."""
    want = np.asarray(want, dtype=np.float64)
    got = to_floats(got, want.shape[1] if want.ndim == 2 else None)
    if got.shape != want.shape:
        raise Failure(f"{what}: shape {got.shape}, expected {want.shape}")
    tol = np.maximum(atol, rtol * np.abs(want))
    bad = ~(np.abs(got - want) <= tol)
    if bad.any():
        rows = np.unique(np.argwhere(bad)[:, 0]) if got.ndim > 1 else np.flatnonzero(bad)
        diff = np.abs(got - want)
        worst = np.nanmax(np.where(bad, diff, np.nan)) if np.isfinite(diff[bad]).any() else float("nan")
        examples = []
        for r in rows[:3]:
            rid = ids[r] if ids is not None else r
            examples.append(f"row {rid}: got {_row(got[r])}, want {_row(want[r])}")
        raise Failure(f"{what}: {len(rows)} of {len(got)} rows differ (worst |diff| {worst:.3g}); "
                      + "; ".join(examples))


def _row(v):
    if np.ndim(v) == 0:
        return _fmt(float(v))
    return "[" + ", ".join(_fmt(float(x)) for x in v) + "]"


def assert_equal(what, got, want):
    if got != want:
        raise Failure(f"{what}: got {got!r}, want {want!r}")


def main(fixture=None, suite="conformance"):
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="", help="run the tests whose name contains this")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    tests = [(n, f) for n, f in _TESTS if args.k in n]
    if args.list:
        print("\n".join(n for n, _ in tests))
        return
    passed = failed = 0
    done = set()
    t_start = time.time()
    try:
        cm = fixture() if fixture is not None else contextlib.nullcontext()
        with cm as env:
            for name, fn in tests:
                t0 = time.time()
                try:
                    fn(env)
                except Failure as e:
                    failed += 1
                    print(f"FAIL {name}: {e}", flush=True)
                except Exception as e:
                    failed += 1
                    reason = f"{type(e).__name__}: {e}".strip().replace("\n", " | ")
                    print(f"FAIL {name}: {reason}", flush=True)
                    tb = traceback.format_exc().rstrip().splitlines()
                    print("\n".join("    " + line for line in tb[-8:]), flush=True)
                else:
                    passed += 1
                    print(f"PASS {name} ({time.time() - t0:.1f}s)", flush=True)
                done.add(name)
    except Exception as e:
        reason = f"{type(e).__name__}: {e}".strip()
        print(f"fixture failed: {reason}", flush=True)
        traceback.print_exc(file=sys.stdout)
        for name, _ in tests:
            if name not in done:
                failed += 1
                print(f"FAIL {name}: fixture failed: {reason.splitlines()[0][:200]}", flush=True)
    print(f"({time.time() - t_start:.0f}s)")
    print(f"{suite}: {passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)
