"""XGBoost's own predictor on rows already in memory: one measurement, in its own process.

    /usr/bin/python3 bench/native.py --data X.npy --model m.json --threads 2 --reps 3 \
        [--classifier] [--save preds.npy]

Prints one JSON line: {"times": [...], "cpu": [...], "value": <sum of outputs>, "rows": N}. Run as a separate
process so that the caller can watch this process's memory (the data array plus whatever
XGBoost allocates) and so that the thread count of one measurement never leaks into the next.
The output is what pg_predict's predict() returns: the class label (p > 0.5) for a binary
classifier, the value for a regressor; the time includes that last step.
"""

import argparse

import numpy as np
import xgboost as xgb

from timed_runs import measure_and_report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--budget", type=float, default=1e9,
                    help="stop repeating when the next run would exceed this many seconds")
    ap.add_argument("--classifier", action="store_true")
    ap.add_argument("--contribs", action="store_true",
                    help="TreeSHAP: predict(DMatrix, pred_contribs=True); the output is each row's first "
                         "contribution (what the bench's predict_contributions row sums)")
    ap.add_argument("--save", help="write the outputs of the last run here (.npy, float64)")
    a = ap.parse_args()

    X = np.load(a.data)
    X = np.ascontiguousarray(X, dtype=np.float32)
    bst = xgb.Booster(model_file=a.model)
    bst.set_param({"nthread": a.threads})

    def predict(M):
        if a.contribs:
            d = xgb.DMatrix(M, feature_names=bst.feature_names, nthread=a.threads)
            return bst.predict(d, pred_contribs=True)[:, 0].astype(np.float64)
        p = bst.inplace_predict(M)
        if a.classifier:
            return (p > 0.5).astype(np.float64)
        return p.astype(np.float64)

    measure_and_report(predict, X, a.reps, a.budget, a.save)

if __name__ == "__main__":
    main()
