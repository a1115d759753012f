"""The bench's models: trained by XGBoost or scikit-learn on the first --train-rows rows
(cached in bench/.cache/ by a hash of the training data and parameters), then loaded into the
server: XGBoost JSON with create_model, the LightGBM and ONNX rows' models converted from an
XGBoost one, scikit-learn estimators with the Python client's deploy()."""

import hashlib
import json
import os
import sys
import time

from .data import CUSTOMER_NUMERIC, CUSTOMER_TEXT, HIGGS_FEATURES, WIDE_FEATURES
from .fmt import log

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCH)
CACHE = os.path.join(BENCH, ".cache")

# Trained by XGBoost. name: (table, features, params, rounds, label column)
XGB_MODELS = {
    "m500": ("higgs", HIGGS_FEATURES,
             {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1}, 500, "label"),
    "m100": ("higgs", HIGGS_FEATURES,
             {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3}, 100, "label"),
    "reg200": ("higgs", HIGGS_FEATURES,
               {"objective": "reg:squarederror", "max_depth": 6, "eta": 0.1}, 200, "target"),
    "stump": ("higgs", HIGGS_FEATURES,
              {"objective": "binary:logistic", "max_depth": 1, "eta": 0.3}, 1, "label"),
    "wide10": ("wide", WIDE_FEATURES,
               {"objective": "binary:logistic", "max_depth": 6, "eta": 0.2}, 100, "label"),
    # the LightGBM row's model: LightGBM's shape (leaf-wise, 255 leaves), grown by XGBoost
    "lgbm500": ("higgs", HIGGS_FEATURES,
                {"objective": "binary:logistic", "grow_policy": "lossguide", "max_leaves": 255,
                 "max_depth": 0, "eta": 0.1}, 500, "label"),
    # issue 15: explanations (predict_contributions) of a 100-tree depth-6 model
    "shap100": ("higgs", HIGGS_FEATURES,
                {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1}, 100, "label"),
}

# Loaded with create_model. name: (format, the XGBoost model it is made from). The XGBoost
# model is also its baseline: XGBoost's inplace_predict scores the same trees.
CREATED_MODELS = {
    "m500": ("xgboost", "m500"),
    "m100": ("xgboost", "m100"),
    "reg200": ("xgboost", "reg200"),
    "stump": ("xgboost", "stump"),
    "wide10": ("xgboost", "wide10"),
    "lgbm500": ("lightgbm", "lgbm500"),
    "onnx500": ("onnx", "m500"),
    "shap100": ("xgboost", "shap100"),
    # the same model under another name for the contributions rows: their sums are checked
    # against XGBoost's pred_contribs (bench/native.py --contribs), not against predict's labels
    "shap100c": ("xgboost", "shap100"),
}

# Fitted by scikit-learn, deployed with the Python client (python/pg_predict), measured against
# the estimator's own predict. name: (table, what)
SKLEARN_MODELS = {
    "pipe": ("customers", "scikit-learn pipeline: imputer + scaler, one-hot of 3 text columns, "
                          "SelectKBest(12), LogisticRegression"),
    "rf100": ("higgs", "scikit-learn RandomForestClassifier, 100 trees, max_depth 10"),
    "svc": ("customers", "the pipeline's ColumnTransformer, then SVC(kernel='rbf')"),
    "mlp": ("customers", "the pipeline's ColumnTransformer, then MLPClassifier(100 hidden)"),
    "knn": ("higgs", "scikit-learn KNeighborsClassifier(5), 10k training rows"),
    "stack": ("higgs", "scikit-learn StackingClassifier: RandomForest (30 trees, depth 8) + "
                       "LogisticRegression under a LogisticRegression"),
    "prune500": ("customers", "scikit-learn pipeline: one-hot of 3 text columns (imputed), the 6 numbers "
                              "as they are, HistGradientBoostingClassifier 500 trees depth 6 "
                              "(issue 15's pruning rows)"),
    "prune_deep": ("customers", "prune500's ColumnTransformer, then HistGradientBoostingClassifier 200 trees "
                                "of up to 255 leaves, no depth limit (the native kernel's generic layout)"),
}
# Kernel SVMs fit in O(n^2): fewer rows (the support vectors, and so the cost of predicting,
# grow with them).
SKLEARN_TRAIN_ROWS = {"svc": 3000, "mlp": 20000, "knn": 10000, "stack": 100000}


def table_of(model):
    if model in SKLEARN_MODELS:
        return SKLEARN_MODELS[model][0]
    return XGB_MODELS[CREATED_MODELS[model][1]][0]


def is_classifier(model):
    if model in SKLEARN_MODELS:
        return True
    return XGB_MODELS[CREATED_MODELS[model][1]][2]["objective"].startswith("binary:")


# ----------------------------------------------------------------------------------------------
# training


def train_xgb(data, names, train_rows, info):
    """Train the named XGBoost models; {name: path of its JSON}."""
    import xgboost as xgb
    os.makedirs(CACHE, exist_ok=True)
    paths = {}
    for name in names:
        table, feats, params, rounds, ycol = XGB_MODELS[name]
        X = data[table]["X"][:train_rows]
        y = data[table][ycol][:train_rows]
        p = dict(params, tree_method="hist", nthread=os.cpu_count() or 2, seed=0)
        h = hashlib.sha1()
        h.update(X.tobytes())
        h.update(y.tobytes())
        h.update(json.dumps([feats, p, rounds, xgb.__version__], sort_keys=True).encode())
        path = os.path.join(CACHE, f"{name}-{h.hexdigest()[:16]}.json")
        if os.path.exists(path):
            log(f"  {name}: cached ({os.path.basename(path)})")
            info[f"{name}_train_s"] = "cached"
        else:
            t0 = time.perf_counter()
            bst = xgb.train(p, xgb.DMatrix(X, label=y, feature_names=feats), rounds)
            bst.save_model(path + ".tmp.json")
            os.replace(path + ".tmp.json", path)
            info[f"{name}_train_s"] = round(time.perf_counter() - t0, 1)
            log(f"  {name}: trained {rounds} trees on {len(y)} rows in "
                f"{time.perf_counter() - t0:.1f}s")
        paths[name] = path
    return paths


def sklearn_estimator(name):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier, StackingClassifier
    from sklearn.feature_selection import SelectKBest, f_classif
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from sklearn.svm import SVC

    def columns():
        return ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()),
             CUSTOMER_NUMERIC),
            ("text", make_pipeline(SimpleImputer(strategy="constant", fill_value="none"),
                                   OneHotEncoder(handle_unknown="ignore")), CUSTOMER_TEXT),
        ])
    if name == "pipe":
        return make_pipeline(columns(), SelectKBest(f_classif, k=12),
                             LogisticRegression(max_iter=1000))
    if name == "svc":
        return make_pipeline(columns(), SVC(kernel="rbf"))
    if name == "mlp":
        return make_pipeline(columns(), MLPClassifier(hidden_layer_sizes=(100,), max_iter=60,
                                                      random_state=0))
    if name == "knn":
        return KNeighborsClassifier(5)
    if name == "prune500":
        from sklearn.ensemble import HistGradientBoostingClassifier
        text = ColumnTransformer([
            ("text", make_pipeline(SimpleImputer(strategy="constant", fill_value="none"),
                                   OneHotEncoder(handle_unknown="ignore")), CUSTOMER_TEXT),
        ], remainder="passthrough")
        return make_pipeline(text, HistGradientBoostingClassifier(max_iter=500, max_depth=6, early_stopping=False,
                                                                  random_state=0))
    if name == "prune_deep":
        from sklearn.ensemble import HistGradientBoostingClassifier
        text = ColumnTransformer([
            ("text", make_pipeline(SimpleImputer(strategy="constant", fill_value="none"),
                                   OneHotEncoder(handle_unknown="ignore")), CUSTOMER_TEXT),
        ], remainder="passthrough")
        return make_pipeline(text, HistGradientBoostingClassifier(max_iter=200, max_depth=None, max_leaf_nodes=255,
                                                                  min_samples_leaf=5, early_stopping=False,
                                                                  random_state=0))
    if name == "stack":
        return StackingClassifier(
            [("rf", RandomForestClassifier(n_estimators=30, max_depth=8, random_state=0)),
             ("lr", LogisticRegression(max_iter=1000))],
            final_estimator=LogisticRegression(max_iter=1000), n_jobs=os.cpu_count() or 2)
    return RandomForestClassifier(n_estimators=100, max_depth=10, n_jobs=os.cpu_count() or 2,
                                  random_state=0)


def _bytes_of(X):
    """Bytes of a numpy array or a DataFrame, for hashing."""
    import numpy as np
    if isinstance(X, np.ndarray):
        return X.tobytes()
    return X.to_csv(index=False).encode()


def train_sklearn(data, names, train_rows, info):
    """Fit the named scikit-learn models; {name: path of its joblib file}."""
    import joblib
    import numpy as np
    import sklearn
    os.makedirs(CACHE, exist_ok=True)
    paths = {}
    for name in names:
        table, what = SKLEARN_MODELS[name]
        rows = min(train_rows, SKLEARN_TRAIN_ROWS.get(name, train_rows))
        X = data[table]["X"][:rows]
        y = data[table]["label"][:rows]
        est = sklearn_estimator(name)
        h = hashlib.sha1()
        h.update(_bytes_of(X))
        h.update(np.asarray(y).tobytes())
        h.update(json.dumps([repr(est), sklearn.__version__]).encode())
        path = os.path.join(CACHE, f"{name}-{h.hexdigest()[:16]}.joblib")
        if os.path.exists(path):
            log(f"  {name}: cached ({os.path.basename(path)})")
            info[f"{name}_train_s"] = "cached"
        else:
            t0 = time.perf_counter()
            est.fit(X, y)
            joblib.dump(est, path + ".tmp")
            os.replace(path + ".tmp", path)
            info[f"{name}_train_s"] = round(time.perf_counter() - t0, 1)
            log(f"  {name}: {what}, trained on {len(y)} rows in {time.perf_counter() - t0:.1f}s")
        paths[name] = path
    return paths


# ----------------------------------------------------------------------------------------------
# loading into the server


def create_models(conn, names, xgb_paths, info):
    """create_model for each named model in its format; {name: the XGBoost JSON it comes from}
    (what its baseline and the numerical checks score)."""
    paths = {}
    for name in names:
        fmt, source = CREATED_MODELS[name]
        with open(xgb_paths[source]) as f:
            js = f.read()
        t0 = time.perf_counter()
        if fmt == "xgboost":
            conn.execute("SELECT create_model(%s, %s::jsonb)", (name, js))
        elif fmt == "lightgbm":
            from .lightgbm_text import to_lightgbm
            conn.execute("SELECT create_model(%s, %s::text)",
                         (name, to_lightgbm(json.loads(js), XGB_MODELS[source][1])))
        else:
            sys.path.insert(0, BENCH)
            from xgb_to_onnx import convert
            onnx = convert(json.loads(js), XGB_MODELS[source][1]).SerializeToString()
            conn.execute("SELECT create_model(%s, %s::bytea, 'onnx', %s::jsonb)",
                         (name, onnx, json.dumps({"features": XGB_MODELS[source][1]})))
        info[f"{name}_create_model_s"] = round(time.perf_counter() - t0, 2)
        paths[name] = xgb_paths[source]
    return paths


def deploy_sklearn(conn, paths, info):
    import joblib
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import pg_predict
    for name, path in paths.items():
        est = joblib.load(path)
        t0 = time.perf_counter()
        # the forest is fitted on a numpy matrix: name its inputs after the table's columns
        names = HIGGS_FEATURES if SKLEARN_MODELS[name][0] == "higgs" else None
        pg_predict.deploy(conn, name, est, feature_names=names)
        info[f"{name}_create_model_s"] = round(time.perf_counter() - t0, 2)


def describe_models(conn, info):
    """The models as the server sees them, into info["models"] and the log."""
    rows = conn.execute("SELECT name, format, trees, depth, strategy, program_bytes FROM models "
                        "ORDER BY name").fetchall()
    info["models"] = [dict(zip(("name", "format", "trees", "depth", "strategy", "program_bytes"),
                               r)) for r in rows]
    for r in rows:
        log(f"  {r[0]}: {r[1]}, {r[2]} trees, depth {r[3]}, strategy {r[4]}, program {r[5]} "
            f"bytes, create_model {info.get(f'{r[0]}_create_model_s')}s")


PLPY = r"""
CREATE EXTENSION IF NOT EXISTS plpython3u;

-- The model is loaded once per backend (GD cache), then one call per row.
CREATE FUNCTION py_predict_row(model text, nthread int, f real[]) RETURNS float8 AS $$
import numpy as np
st = GD.get(model)
if st is None:
    import xgboost as xgb
    plan = plpy.prepare("SELECT model, objective FROM bench_model_json WHERE name = $1", ["text"])
    r = plpy.execute(plan, [model])[0]
    bst = xgb.Booster()
    bst.load_model(bytearray(r["model"], "utf-8"))
    st = GD[model] = {"bst": bst, "clf": r["objective"].startswith("binary:"), "nthread": None}
if st["nthread"] != nthread:
    st["bst"].set_param({"nthread": nthread})
    st["nthread"] = nthread
p = float(st["bst"].inplace_predict(np.asarray(f, dtype=np.float32).reshape(1, -1))[0])
return float(p > 0.5) if st["clf"] else p
$$ LANGUAGE plpython3u STABLE;

-- The PostgresML-documented pattern: array_agg the rows, one call, a numpy matrix, one predict.
CREATE FUNCTION py_predict_batch(model text, nthread int, m real[]) RETURNS float8[] AS $$
import numpy as np
st = GD.get(model)
if st is None:
    import xgboost as xgb
    plan = plpy.prepare("SELECT model, objective FROM bench_model_json WHERE name = $1", ["text"])
    r = plpy.execute(plan, [model])[0]
    bst = xgb.Booster()
    bst.load_model(bytearray(r["model"], "utf-8"))
    st = GD[model] = {"bst": bst, "clf": r["objective"].startswith("binary:"), "nthread": None}
if st["nthread"] != nthread:
    st["bst"].set_param({"nthread": nthread})
    st["nthread"] = nthread
X = np.asarray(m, dtype=np.float32)
p = st["bst"].inplace_predict(X)
if st["clf"]:
    p = (p > 0.5).astype(np.float64)
return p.tolist()
$$ LANGUAGE plpython3u STABLE;
"""


def install_plpython(conn, xgb_paths):
    """The PL/Python rows' functions, and the XGBoost JSON they load (table bench_model_json)."""
    conn.execute("CREATE TABLE bench_model_json (name text PRIMARY KEY, model text NOT NULL,"
                 " objective text NOT NULL)")
    for name, path in xgb_paths.items():
        with open(path) as f:
            conn.execute("INSERT INTO bench_model_json VALUES (%s, %s, %s)",
                         (name, f.read(), XGB_MODELS[name][2]["objective"]))
    conn.execute(PLPY)
