"""scikit-learn's own predict on rows already in memory: one measurement, in its own process.

    /usr/bin/python3 bench/sklearn_native.py --data X.npy|frame.pkl --model m.joblib \
        --threads 2 --reps 3 [--save preds.npy]

The scikit-learn counterpart of native.py: the estimator (a fitted pipeline or forest, saved
with joblib) predicts the whole table at once, as a Python scoring service would after reading
the rows out of the database. `--threads` sets the estimator's n_jobs where it has one (forests)
and caps the BLAS/OpenMP pools (threadpoolctl). Prints one JSON line:
{"times": [...], "cpu": [...], "value": <sum of predict>, "rows": N}.
"""

import argparse

import joblib
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from timed_runs import measure_and_report


def set_n_jobs(est, n):
    """n_jobs=n on the estimator and every step that has the parameter."""
    params = {k: n for k in est.get_params(deep=True) if k == "n_jobs" or k.endswith("__n_jobs")}
    if params:
        est.set_params(**params)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help=".npy (a float32 matrix) or .pkl (a DataFrame)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--budget", type=float, default=1e9,
                    help="stop repeating when the next run would exceed this many seconds")
    ap.add_argument("--save", help="write the outputs of the last run here (.npy, float64)")
    a = ap.parse_args()

    X = np.load(a.data) if a.data.endswith(".npy") else pd.read_pickle(a.data)
    est = joblib.load(a.model)
    set_n_jobs(est, a.threads)

    def predict(M):
        return np.asarray(est.predict(M), dtype=np.float64)

    with threadpool_limits(limits=a.threads):
        measure_and_report(predict, X, a.reps, a.budget, a.save)


if __name__ == "__main__":
    main()
