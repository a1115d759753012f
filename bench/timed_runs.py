"""The measuring loop shared by the in-memory baselines (native.py, sklearn_native.py)."""

import json
import time

import numpy as np


def measure_and_report(predict, X, reps, budget, save=None):
    """Warm up on 1000 rows, run predict(X) up to `reps` times (fewer when the next run would
    exceed `budget` seconds in all), optionally save the last output, and print the JSON line
    bench/pgpb/measure.py reads: {"times", "cpu", "value": sum of the output, "rows"}."""
    predict(X[:1000])  # warm-up: thread pools, buffers, imports
    times, cpu = [], []
    out = None
    for _ in range(reps):
        if times and sum(times) + times[-1] > budget:
            break
        t0, c0 = time.perf_counter(), time.process_time()
        out = predict(X)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    if save:
        np.save(save, out)
    print(json.dumps({"times": times, "cpu": cpu, "value": float(out.sum()),
                      "rows": int(X.shape[0])}))
