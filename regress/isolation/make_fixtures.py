#!/usr/bin/python3
"""Fixtures of the isolation suite, written into the directory given as argv[1]:

  model_a.json   an XGBoost regressor over f1, f2, f3 trained while f3 was constant, so it never
                 splits on f3 and a plan for it reads no f3 (the optimizer drops the input)
  model_b.json   the retrained model: the target now depends on f3, and so do its splits
  rows.csv       the table the specs score (id, f1, f2, f3; float32 values)
  predictions.csv  XGBoost's own predictions of both models for those rows (model, id, value)

The specs compare pg_predict's sums with these, so an expected output names a model ('A' or
'B'), never a number copied from a run.
"""
import csv
import os
import sys

import numpy as np
import xgboost as xgb


def train(x, y):
    booster = xgb.train({"max_depth": 3, "eta": 0.3, "base_score": 0.5, "nthread": 1,
                         "seed": 0}, xgb.DMatrix(x, label=y, feature_names=["f1", "f2", "f3"]),
                        num_boost_round=8)
    return booster


def main(out):
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, size=(600, 3)).astype(np.float32)
    x_constant_f3 = x.copy()
    x_constant_f3[:, 2] = 0.0
    model_a = train(x_constant_f3, x[:, 0] + 0.5 * x[:, 1])
    model_b = train(x, x[:, 0] + 0.5 * x[:, 1] + 3.0 * x[:, 2])
    assert "f3" not in model_a.get_score(importance_type="weight"), "A must not split on f3"
    assert "f3" in model_b.get_score(importance_type="weight"), "B must split on f3"

    rows = rng.uniform(-2, 2, size=(200, 3)).astype(np.float32)
    model_a.save_model(os.path.join(out, "model_a.json"))
    model_b.save_model(os.path.join(out, "model_b.json"))
    with open(os.path.join(out, "rows.csv"), "w", newline="") as f:
        w = csv.writer(f)
        for i, r in enumerate(rows):
            w.writerow([i] + [repr(float(v)) for v in r])
    test = xgb.DMatrix(rows, feature_names=["f1", "f2", "f3"])
    with open(os.path.join(out, "predictions.csv"), "w", newline="") as f:
        w = csv.writer(f)
        for name, model in (("A", model_a), ("B", model_b)):
            for i, v in enumerate(model.predict(test)):
                w.writerow([name, i, repr(float(v))])


if __name__ == "__main__":
    main(sys.argv[1])
