"""One definition per bench row: its key (what --only matches), the SQL or baseline it runs,
its settings, and what it needs (table, model, the baseline and floor it is compared with)."""

import re

from .data import HIGGS_FEATURES, WIDE_FEATURES
from .models import is_classifier

# the scan floor of each table: what reading the data costs without scoring
FLOOR_OF = {"higgs": "floor", "wide": "wide.floor", "customers": "pipe.floor"}

# the rows a target depends on: measured on the whole table unless really slow
KEY_ROWS = {"floor", "m500.batched.auto.t1", "m500.batched.auto.t2", "m500.batched.native.t1",
            "m500.batched.native.t2", "m500.batched.auto.w1", "m500.batched.auto.w2",
            "m500.plpy_batch.t1", "m500.plpy_batch.t2", "stump.batched.auto.t1", "wide.floor",
            "wide.batched.auto.t1", "wide.batched.auto.t2"}


class Row:
    def __init__(self, key, group, label, kind, table, sql=None, model=None, threads=1,
                 workers=0, strategy=None, batched=None, native=None, kernel=None, settings=None):
        self.key, self.group, self.label, self.kind = key, group, label, kind
        self.table, self.sql, self.model = table, sql, model
        self.threads, self.workers, self.strategy = threads, workers, strategy
        self.batched = batched          # True: needs enable_batching on; False: off
        self.native = native            # for kind 'native': dict(classifier=, engine=)
        self.kernel = kernel            # pg_predict.cpu_kernel value; "" when the GUC is absent
        self.settings = settings or {}  # other settings the row runs with, e.g. pg_predict.prune_models
        self.key_row = key in KEY_ROWS  # a target depends on it: whole table up to --key-max-seconds
        self.r = {"status": "pending"}  # results

    @property
    def cmp_threads(self):
        """Thread count to compare with the library: threads, or the number of workers."""
        return self.workers if self.workers else self.threads

    @property
    def baseline_key(self):
        """The row of the training library's own predictor this row is compared with."""
        if self.kind == "train":  # train(): Python xgboost's own xgb.train
            return f"{self.group}.native.t{self.threads}"
        if self.kind in ("floor", "native", "train-native") or not self.model:
            return None
        return f"{self.group}.native.t{self.cmp_threads}"

    @property
    def floor_key(self):
        return None if self.kind in ("floor", "native", "train-native") else FLOOR_OF[self.table]


def predict_sql(model, alias="h"):
    return f"SELECT sum(predict('{model}', {alias})) FROM {{T}} {alias}"


def floor_sql(columns):
    return "SELECT sum(" + " + ".join(columns) + ") FROM {T}"


def workers_label(w):
    return f"{w} parallel worker{'s' if w > 1 else ''}"


def build_rows(threads, strategies, kernels):
    """Every row, in report order. strategies: pg_predict.strategy's values (auto first);
    kernels: pg_predict.cpu_kernel's values other than auto, or None when the server has no
    such setting (then one placeholder row per model and thread count, printed n/a)."""
    feats = ", ".join(HIGGS_FEATURES)
    rows = []
    A = rows.append

    def native(group, model, what, t, table="higgs", engine="xgboost"):
        A(Row(f"{group}.native.t{t}", group, f"{what}, {t} thr", "native", table, model=model,
              threads=t, native={"classifier": is_classifier(model), "engine": engine}))

    def kernel_rows(group, model, table, alias, what):
        for k in (kernels if kernels is not None else [""]):
            for t in threads:
                A(Row(f"{group}.batched.kernel{'=' + k if k else ''}.t{t}", group,
                      f"{what} batched, cpu_kernel {k or '(setting absent)'}, {t} thr",
                      "batched", table, predict_sql(model, alias), model, threads=t,
                      strategy="auto", batched=True, kernel=k))

    # -- the 500-tree model, the main event
    A(Row("floor", "m500", "scan floor: sum(f1+...+f28)", "floor", "higgs",
          floor_sql(HIGGS_FEATURES)))
    for s in strategies:
        for t in threads:
            A(Row(f"m500.batched.{s}.t{t}", "m500", f"pg_predict batched, {s}, {t} thr",
                  "batched", "higgs", predict_sql("m500"), "m500", threads=t, strategy=s,
                  batched=True))
    kernel_rows("m500", "m500", "higgs", "h", "pg_predict")
    for w in (1, 2):
        A(Row(f"m500.batched.auto.w{w}", "m500", f"pg_predict batched, auto, {workers_label(w)}",
              "batched", "higgs", predict_sql("m500"), "m500", threads=1, workers=w,
              strategy="auto", batched=True))
    for t in threads:
        A(Row(f"m500.perrow.auto.t{t}", "m500", f"pg_predict per-row, auto, {t} thr",
              "per-row", "higgs", predict_sql("m500"), "m500", threads=t, strategy="auto",
              batched=False))
    for s in strategies:
        if s != "auto":
            A(Row(f"m500.perrow.{s}.t1", "m500", f"pg_predict per-row, {s}, 1 thr",
                  "per-row", "higgs", predict_sql("m500"), "m500", threads=1, strategy=s,
                  batched=False))
    for w in (1, 2):
        A(Row(f"m500.perrow.auto.w{w}", "m500", f"pg_predict per-row, auto, {workers_label(w)}",
              "per-row", "higgs", predict_sql("m500"), "m500", threads=1, workers=w,
              strategy="auto", batched=False))
    for t in threads:
        native("m500", "m500", "XGBoost native", t)
    A(Row("m500.plpy_row.t1", "m500", "PL/Python row-wise, 1 thr", "plpy-row", "higgs",
          f"SELECT sum(py_predict_row('m500', 1, ARRAY[{feats}])) FROM {{T}}", "m500"))
    for t in threads:
        A(Row(f"m500.plpy_batch.t{t}", "m500", f"PL/Python batched (array_agg), {t} thr",
              "plpy-batch", "higgs",
              f"SELECT sum(p) FROM unnest(py_predict_batch('m500', {t}, "
              f"(SELECT array_agg(ARRAY[{feats}]) FROM {{T}}))) p", "m500", threads=t))
    # -- the small models
    for m, what in (("m100", "100 trees depth 3"), ("reg200", "regressor 200 trees depth 6")):
        for t in threads:
            A(Row(f"{m}.batched.auto.t{t}", m, f"{m} ({what}) batched, {t} thr", "batched",
                  "higgs", predict_sql(m), m, threads=t, strategy="auto", batched=True))
        if m == "m100":
            kernel_rows(m, m, "higgs", "h", m)
        A(Row(f"{m}.perrow.auto.t1", m, f"{m} ({what}) per-row, 1 thr", "per-row", "higgs",
              predict_sql(m), m, threads=1, strategy="auto", batched=False))
        for t in threads:
            native(m, m, f"{m} ({what}) XGBoost native", t)
    A(Row("stump.batched.auto.t1", "stump", "stump (1 tree depth 1) batched, 1 thr", "batched",
          "higgs", predict_sql("stump"), "stump", threads=1, strategy="auto", batched=True))
    A(Row("stump.perrow.auto.t1", "stump", "stump (1 tree depth 1) per-row, 1 thr", "per-row",
          "higgs", predict_sql("stump"), "stump", threads=1, strategy="auto", batched=False))
    native("stump", "stump", "stump XGBoost native", 1)
    # -- the wide table
    A(Row("wide.floor", "wide", "wide scan floor: sum(c1+...+c10)", "floor", "wide",
          floor_sql(WIDE_FEATURES)))
    for t in threads:
        A(Row(f"wide.batched.auto.t{t}", "wide", f"wide10 batched, {t} thr", "batched", "wide",
              predict_sql("wide10", "w"), "wide10", threads=t, strategy="auto", batched=True))
    kernel_rows("wide", "wide10", "wide", "w", "wide10")
    A(Row("wide.perrow.auto.t1", "wide", "wide10 per-row, 1 thr", "per-row", "wide",
          predict_sql("wide10", "w"), "wide10", threads=1, strategy="auto", batched=False))
    for t in threads:
        native("wide", "wide10", "wide10 XGBoost native", t, table="wide")
    # -- the other formats: the same kind of trees read from LightGBM's and ONNX's files,
    #    against XGBoost's own predictor on the XGBoost model they were converted from
    for m, what in (("lgbm500", "LightGBM 500 trees 255 leaves"),
                    ("onnx500", "ONNX TreeEnsembleClassifier of m500")):
        for t in threads:
            A(Row(f"{m}.batched.auto.t{t}", m, f"{m} ({what}) batched, {t} thr", "batched",
                  "higgs", predict_sql(m), m, threads=t, strategy="auto", batched=True))
        A(Row(f"{m}.perrow.auto.t1", m, f"{m} per-row, 1 thr", "per-row", "higgs",
              predict_sql(m), m, threads=1, strategy="auto", batched=False))
        for t in threads:
            native(m, m, f"{m}: XGBoost native on the same trees", t)
    # -- scikit-learn: the pipeline over text columns, a random forest, an SVC, an MLP, a k-NN
    #    classifier (10k training rows in the program) and a stacking ensemble
    A(Row("pipe.floor", "pipe", "customers scan floor: sum(numbers + text lengths)", "floor",
          "customers", "SELECT sum(age + income + tenure + visits + coalesce(score, 0) + rate"
          " + length(city) + length(plan) + length(coalesce(channel, ''))) FROM {T}"))
    for m, table, alias in (("pipe", "customers", "c"), ("rf100", "higgs", "h"),
                            ("svc", "customers", "c"), ("mlp", "customers", "c"),
                            ("knn", "higgs", "h"), ("stack", "higgs", "h")):
        for t in threads:
            A(Row(f"{m}.batched.auto.t{t}", m, f"{m} batched, {t} thr", "batched", table,
                  predict_sql(m, alias), m, threads=t, strategy="auto", batched=True))
        A(Row(f"{m}.perrow.auto.t1", m, f"{m} per-row, 1 thr", "per-row", table,
              predict_sql(m, alias), m, threads=1, strategy="auto", batched=False))
        for t in threads:
            native(m, m, f"{m} scikit-learn predict", t, table=table, engine="sklearn")
    # -- train() (issue 14): 100 trees of depth 6 over the whole higgs table (label), against
    #    Python xgboost's xgb.train on the same rows, parameters and threads
    hyper = '{{"n_estimators": 100, "max_depth": 6, "nthread": %d}}'
    for t in threads:
        A(Row(f"train.sql.t{t}", "train", f"train() xgboost 100 trees depth 6, {t} thr", "train", "higgs",
              f"SELECT train('bench_train', 'SELECT {feats}, label FROM {{T}}', 'label', "
              f"hyperparams => '{hyper % t}', test_size => 0)", threads=t))
        A(Row(f"train.native.t{t}", "train", f"Python xgb.train 100 trees depth 6, {t} thr", "train-native",
              "higgs", threads=t))
    # -- issue 15: predict_contributions (TreeSHAP) of a 100-tree depth-6 model, against
    #    XGBoost's pred_contribs at the same thread count and pg_predict's predict on the query
    for t in threads:
        A(Row(f"shap100.batched.auto.t{t}", "shap100", f"shap100 predict batched, {t} thr", "batched",
              "higgs", predict_sql("shap100"), "shap100", threads=t, strategy="auto", batched=True))
        native("shap100", "shap100", "shap100 XGBoost native predict", t)
    for t in threads:
        A(Row(f"shap100c.contrib.batched.t{t}", "shap100c", f"shap100 predict_contributions batched, {t} thr",
              "batched", "higgs", "SELECT sum((predict_contributions('shap100c', h))[1]) FROM {T} h", "shap100c",
              threads=t, strategy="auto", batched=True))
        native("shap100c", "shap100c", "shap100 XGBoost pred_contribs", t, engine="xgboost_contribs")
    # -- issue 15 §2: the early exit on m500, against the same query with pg_predict.early_exit
    #    off (the value each returns must be the same)
    queries = {"threshold": "SELECT count(*) FROM {T} h WHERE (predict_proba('m500', h))[2] > 0.95",
               "topk": "SELECT sum(id) FROM (SELECT id FROM {T} h ORDER BY (predict_proba('m500', h))[2] DESC "
                       "LIMIT 100) top"}
    for what, sql in queries.items():
        for t in threads:
            for mode in ("on", "off"):
                A(Row(f"ee.{what}.{mode}.t{t}", "ee", f"m500 {what}, early exit {mode}, {t} thr", "batched",
                      "higgs", sql, "m500", threads=t, strategy="auto", batched=True,
                      settings={"pg_predict.early_exit": mode}))
    # -- issue 15 §3: predicate pruning. A 500-tree model over a one-hot text column, a query
    #    fixing that column (scikit-learn's HistGradientBoosting): the model specialized for
    #    plan = 'pro' against prune_models = off
    #    prune_deep: the same over deep trees (up to 255 leaves, the kernel's generic layout)
    for m in ("prune500", "prune_deep"):
        pruned_sql = f"SELECT sum(predict('{m}', c)) FROM {{T}} c WHERE plan = 'pro'"
        for t in threads:
            A(Row(f"{m}.pruned.t{t}", m, f"{m} WHERE plan = 'pro', pruned, {t} thr", "batched",
                  "customers", pruned_sql, m, threads=t, strategy="auto", batched=True,
                  settings={"pg_predict.prune_models": "on"}))
            A(Row(f"{m}.unpruned.t{t}", m, f"{m} WHERE plan = 'pro', prune_models off, {t} thr",
                  "batched", "customers", pruned_sql, m, threads=t, strategy="auto", batched=True,
                  settings={"pg_predict.prune_models": "off"}))
    return rows


def select(rows, pattern):
    """The rows whose key matches the regex, plus the scan floor and the library baseline
    each is compared with; nothing else (so --only runs just what those rows need)."""
    if not pattern:
        return rows
    rx = re.compile(pattern)
    keys = {r.key for r in rows}
    keep = set()
    for r in rows:
        if rx.search(r.key):
            keep.add(r.key)
            keep.update(k for k in (r.floor_key, r.baseline_key) if k in keys)
    return [r for r in rows if r.key in keep]


def needs(rows):
    """(tables, models) the rows need: tables to generate, models to create."""
    tables = {r.table for r in rows}
    models = {r.model for r in rows if r.model}
    return tables, models
