#!/usr/bin/python3
"""Run Hummingbird's own scikit-learn and XGBoost tests, unmodified, against pg_predict.

    /usr/bin/python3 regress/peer/run.py HUMMINGBIRD_CHECKOUT [-k PATTERN] [--out summary.md]
        [--files test_a.py ...] [--input table|array]

Starts a throwaway pg_predict server (regress/pgcluster.py: the installed extension, as an
unprivileged user when we are root), then runs each tests/test_sklearn_*.py and
tests/test_xgboost_converter.py of the checkout with `/usr/bin/python3 -m pytest`, with our
stand-in `hummingbird` package (regress/peer/shim) first on sys.path: its convert() deploys the
fitted model with python/pg_predict and scores the test's rows with SQL. Writes a summary
(markdown): passed / failed / errors / skipped per file, the skips by reason, the failures
grouped by cause with one example each. "Applicable" = every collected test except those
skipped because a library is not importable here (onnxruntime, tvm, lightgbm, onnxmltools...).
"""

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REGRESS = os.path.dirname(HERE)
sys.path.insert(0, REGRESS)
from pgcluster import Cluster  # noqa: E402

PYTHON = "/usr/bin/python3"
# A skip reason that names a library this machine lacks (Hummingbird's own wording).
LIBRARY_WORDS = re.compile(r"\b(ONNX\w*|ORT|TVM|LightGBM|prophet|Spark\w*)\b", re.I)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", help="a Hummingbird checkout (the folder that holds tests/)")
    ap.add_argument("--files", nargs="*", help="test files (default: test_sklearn_*.py, test_xgboost_converter.py)")
    ap.add_argument("-k", default=None, help="pytest -k expression")
    ap.add_argument("--input", choices=["table", "array"], default="table",
                    help="how the rows reach SQL (see shim/hummingbird/ml/container.py)")
    ap.add_argument("--out", help="write the markdown summary here too")
    ap.add_argument("--details", help="write every test's outcome and failure message here (JSON lines)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per test file")
    args = ap.parse_args()

    tests_dir = os.path.join(os.path.abspath(args.checkout), "tests")
    files = args.files or (sorted(glob.glob(os.path.join(tests_dir, "test_sklearn_*.py")))
                           + [os.path.join(tests_dir, "test_xgboost_converter.py")])
    files = [f if os.path.isabs(f) else os.path.join(tests_dir, os.path.basename(f)) for f in files]
    results = []  # (file, testcase, outcome, message)
    t0 = time.time()
    with Cluster(prefix="pg_predict-peer-") as pg, tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PEER_DSN=pg.dsn, PEER_INPUT=args.input, PYTHONDONTWRITEBYTECODE="1",
                   PYTHONPATH=os.path.join(HERE, "shim"))
        for f in files:
            xml = os.path.join(tmp, os.path.basename(f) + ".xml")
            cmd = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                   f"--junitxml={xml}", "-o", "junit_family=xunit2", f]
            if args.k:
                cmd += ["-k", args.k]
            print(f"--- {os.path.basename(f)}", flush=True)
            try:
                p = subprocess.run(cmd, cwd=tests_dir, env=env, timeout=args.timeout,
                                   capture_output=True, text=True)
                print(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-2000:], flush=True)
            except subprocess.TimeoutExpired:
                print(f"timed out after {args.timeout} s", flush=True)
            results += parse(f, xml)
    report = summarize(results, args, time.time() - t0)
    print(report)
    if args.out:
        with open(args.out, "w") as out:
            out.write(report)
    if args.details:
        with open(args.details, "w") as out:
            for f, test, outcome, message in results:
                out.write(json.dumps({"file": f, "test": test, "outcome": outcome, "message": message}) + "\n")


def parse(path, xml):
    name = os.path.basename(path)
    if not os.path.exists(xml):
        return [(name, "(whole file)", "error", "no junit report: pytest timed out or crashed")]
    out = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        test = f"{case.get('classname', '').split('.')[-1]}.{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or "") + "\n" + (child.text or "")
                break
        out.append((name, test, outcome, message))
    return out


def skip_is_library(message):
    return bool(LIBRARY_WORDS.search(message.split("\n")[0]))


def cause(message):
    """A failure's cause: its exception and message, numbers and model names blurred."""
    first = message.strip().split("\n")[0]
    lines = message.strip().split("\n")
    # The error's own line from the traceback (E   ...) says more than pytest's message.
    e_lines = [l[1:].strip() for l in lines if l.startswith("E ")]
    if e_lines:
        first = e_lines[0]
        if first.startswith("AssertionError") and len(e_lines) > 1 and "tolerance" in " ".join(e_lines[:3]):
            first = "AssertionError: Not equal to tolerance (" + ", ".join(
                l for l in e_lines if l.startswith("Mismatched elements"))[:60] + ")"
    first = re.sub(r"hb_\d+", "hb_N", first)
    first = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", first)
    first = re.sub(r"'[^']*'", "'…'", first) if "Not equal" in first else first
    return first[:160]


def summarize(results, args, secs):
    per_file = collections.OrderedDict()
    for f, _, outcome, _ in results:
        per_file.setdefault(f, collections.Counter())[outcome] += 1
    lines = ["| file | tests | passed | failed | errors | skipped (missing library) | skipped (other) |",
             "|---|---|---|---|---|---|---|"]
    total = collections.Counter()
    skipped_lib = collections.Counter()
    skips = collections.Counter()
    for f, test, outcome, msg in results:
        if outcome == "skipped":
            reason = msg.split("\n")[0][:120]
            skips[reason] += 1
            if skip_is_library(msg):
                skipped_lib[f] += 1
    for f, c in per_file.items():
        n = sum(c.values())
        lines.append(f"| {f} | {n} | {c['passed']} | {c['failed']} | {c['error']} | {skipped_lib[f]} "
                     f"| {c['skipped'] - skipped_lib[f]} |")
        total.update(c)
    n = sum(total.values())
    lib = sum(skipped_lib.values())
    applicable = n - lib
    lines.append(f"| **all** | {n} | {total['passed']} | {total['failed']} | {total['error']} | {lib} "
                 f"| {total['skipped'] - lib} |")
    pct = 100.0 * total["passed"] / applicable if applicable else 0.0
    head = [f"Input form: `{args.input}`; {secs / 60:.0f} min.", "",
            f"**{total['passed']} of {applicable} applicable tests pass ({pct:.1f} %)**; "
            f"{n} collected, {lib} skipped because a library is missing here "
            f"(applicable = collected − those; a test skipped for another reason counts as not passed). "
            f"Without every skipped test: {total['passed']} of {n - total['skipped']} "
            f"({100.0 * total['passed'] / max(1, n - total['skipped']):.1f} %).", ""]
    causes = collections.OrderedDict()
    for f, test, outcome, msg in results:
        if outcome in ("failed", "error"):
            causes.setdefault(cause(msg), []).append(f"{f}::{test}")
    body = ["", "### Failures by cause", "", "| tests | cause | example |", "|---|---|---|"]
    for c, tests in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        body.append(f"| {len(tests)} | `{c.replace('|', '/')}` | {tests[0]} |")
    body += ["", "### Skips by reason", "", "| tests | reason | missing library |", "|---|---|---|"]
    for r, k in skips.most_common():
        body.append(f"| {k} | {r.replace('|', '/')} | {'yes' if skip_is_library(r) else 'no'} |")
    return "\n".join(head + lines + body) + "\n"


if __name__ == "__main__":
    main()
