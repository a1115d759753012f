"""A stand-in for Microsoft Hummingbird's `hummingbird` package, put first on sys.path by
regress/peer/run.py: `hummingbird.ml.convert(model, backend, ...)` deploys the fitted model into
a running pg_predict server and returns an object whose predict / predict_proba / transform /
decision_function / score_samples run SQL. Only what Hummingbird's own tests import is here."""
