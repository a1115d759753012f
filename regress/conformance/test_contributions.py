#!/usr/bin/python3
"""Conformance: predict_contributions() and explain_prediction() against the libraries.

- XGBoost (binary, multiclass, regression with NULLs): Booster.predict(DMatrix,
  pred_contribs=True), within 1e-5, and the sum against output_margin=True.
- scikit-learn trees, forests, gradient boosting and HistGradientBoosting (NaN included): a
  NumPy reference of path-dependent TreeSHAP written here (XGBoost's TreeShap recursion: extend,
  unwind, unwound sum) over the fitted trees' weighted_n_node_samples (count for
  HistGradientBoosting), and the sum against scikit-learn's raw prediction.
- LightGBM: the fixtures of regress/fixtures/lightgbm (their model.txt read here, with the
  library's decision rules) through the same reference fed with internal_count / leaf_count, and
  the sum against the fixtures' recorded raw scores.
- Linear models: coef_j * z_j per input (z: the imputed / scaled column) and the intercept.
- Every model batched (the PredictBatch node), per row (enable_batching off), for a single row,
  and through the float8[] form; explain_prediction's keys, order and values; the refusals.

Run: /usr/bin/python3 regress/conformance/test_contributions.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import csv
import json
import os
import warnings

import numpy as np

import sklearn_cases  # noqa: F401  (puts python/ on sys.path)
from harness import Failure, add_test, assert_close, assert_equal, main, test
from pgcluster import Cluster
from tables import load_table

import pg_predict  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "lightgbm")
TABLE = "shap_rows"
N_ROWS, N_FEATURES, N_TRAIN = 240, 6, 200
FEATURES = [f"f{i}" for i in range(N_FEATURES)]


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def drop(self, name):
        self.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        load_table(env.conn, TABLE, FEATURES, data(with_nan=True))
        try:
            yield env
        finally:
            env.conn.close()


def data(with_nan, seed=7):
    """N_ROWS × N_FEATURES float32 values (f5 constant); with_nan: NULLs in f1 and f3."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_ROWS, N_FEATURES)).astype(np.float32)
    X[:, 2] = np.round(X[:, 2] * 2).astype(np.float32)   # few distinct values: ties at thresholds
    X[:, 5] = 1.0
    if with_nan:
        X[rng.random(N_ROWS) < 0.15, 1] = np.nan
        X[rng.random(N_ROWS) < 0.1, 3] = np.nan
    return X


def targets(X):
    x = np.nan_to_num(X.astype(np.float64))
    y = x[:, 0] * 2 - x[:, 1] + np.sin(3 * x[:, 2]) + x[:, 3] * x[:, 4]
    classes = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    return y, (y > np.median(y)).astype(int), classes


def flat(value):
    """A contributions array from the database (1-D, or 2-D for several groups) as one list."""
    if value is None:
        return None
    if value and isinstance(value[0], list):
        return [v for row in value for v in row]
    return value


def contributions(env, model, batching=True, where="", form="row", table=TABLE):
    arg = "t" if form == "row" else f"ARRAY[{', '.join(FEATURES)}]::{form}"
    sql = f"SELECT id, predict_contributions(%(m)s, {arg}) FROM {table} t {where} ORDER BY id"
    with env.conn.transaction():
        env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        if batching and form == "row" and not where:
            plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
            if "PredictBatch" not in plan:
                raise Failure(f"{model}: no PredictBatch node in the plan:\n{plan}")
        rows = env.query(sql, {"m": model})
    return [r[0] for r in rows], [flat(r[1]) for r in rows]


def check_contributions(env, model, want, table=TABLE, forms=("row", "float8[]"), atol=1e-5):
    """predict_contributions over the table equals want [rows × groups·(F + 1)] batched, per
    row, for one row alone, and through the array forms."""
    want = np.asarray(want, dtype=np.float64)
    for batching in (True, False):
        for form in forms:
            if form != "row" and not batching:
                continue
            ids, got = contributions(env, model, batching, form=form, table=table)
            assert_close(f"{model} ({form}, {'batched' if batching else 'per row'})", got, want, atol=atol, ids=ids)
        ids, got = contributions(env, model, batching, "WHERE id = 7", table=table)
        assert_close(f"{model} (one row, {'batched' if batching else 'per row'})", got, want[6:7], atol=atol, ids=ids)


# ---- the reference: path-dependent TreeSHAP (XGBoost's TreeShap, tree_model.cc) -------------

class RefTree:
    """A tree as arrays: left/right (-1 at leaves), value (leaves), cover, and go_left(node, x)."""

    def __init__(self, left, right, value, cover, go_left):
        self.left, self.right = np.asarray(left), np.asarray(right)
        self.value, self.cover = np.asarray(value, dtype=np.float64), np.asarray(cover, dtype=np.float64)
        self.go_left = go_left
        self.mean = np.zeros(len(self.left))
        self._fill_mean(0)

    def _fill_mean(self, n):
        if self.left[n] < 0:
            self.mean[n] = self.value[n]
        else:
            l, r = self.left[n], self.right[n]
            self._fill_mean(l)
            self._fill_mean(r)
            self.mean[n] = (self.mean[l] * self.cover[l] + self.mean[r] * self.cover[r]) / self.cover[n]
        return self.mean[n]


def _extend(path, depth, zero, one, feature):
    path[depth] = [feature, zero, one, 1.0 if depth == 0 else 0.0]
    for i in range(depth - 1, -1, -1):
        path[i + 1][3] += one * path[i][3] * (i + 1) / (depth + 1)
        path[i][3] = zero * path[i][3] * (depth - i) / (depth + 1)


def _unwind(path, depth, index):
    one, zero = path[index][2], path[index][1]
    nxt = path[depth][3]
    for i in range(depth - 1, -1, -1):
        if one != 0:
            tmp = path[i][3]
            path[i][3] = nxt * (depth + 1) / ((i + 1) * one)
            nxt = tmp - path[i][3] * zero * (depth - i) / (depth + 1)
        else:
            path[i][3] = path[i][3] * (depth + 1) / (zero * (depth - i))
    for i in range(index, depth):
        path[i][0:3] = path[i + 1][0:3]


def _unwound_sum(path, depth, index):
    one, zero = path[index][2], path[index][1]
    nxt, total = path[depth][3], 0.0
    for i in range(depth - 1, -1, -1):
        if one != 0:
            tmp = nxt * (depth + 1) / ((i + 1) * one)
            total += tmp
            nxt = path[i][3] - tmp * zero * (depth - i) / (depth + 1)
        elif zero != 0:
            total += path[i][3] / zero / ((depth - i) / (depth + 1))
    return total


def _shap(tree, x, phi, node, depth, parent, zero, one, feature, player):
    path = [list(p) for p in parent[:depth]] + [[0, 0.0, 0.0, 0.0] for _ in range(2)]
    _extend(path, depth, zero, one, feature)
    if tree.left[node] < 0:
        for i in range(1, depth + 1):
            w = _unwound_sum(path, depth, i)
            phi[path[i][0]] += w * (path[i][2] - path[i][1]) * tree.value[node]
        return
    hot, cold = (tree.left[node], tree.right[node]) if tree.go_left(node, x) else (tree.right[node], tree.left[node])
    w = tree.cover[node]
    split = player(node)
    in_zero, in_one = 1.0, 1.0
    k = next((k for k in range(depth + 1) if path[k][0] == split), None)
    if k is not None:
        in_zero, in_one = path[k][1], path[k][2]
        _unwind(path, depth, k)
        depth -= 1
    _shap(tree, x, phi, hot, depth + 1, path, tree.cover[hot] / w * in_zero, in_one, split, player)
    _shap(tree, x, phi, cold, depth + 1, path, tree.cover[cold] / w * in_zero, 0.0, split, player)


def reference(trees, X, n_players, groups=1, base=None, player_of=None):
    """[rows × groups·(n_players + 1)]: per (tree, group) pair the path-dependent TreeSHAP
    values plus the trees' expected values and `base` (one per group) in the bias slots."""
    width = n_players + 1
    out = np.zeros((len(X), groups * width))
    for r, x in enumerate(X):
        for tree, group in trees:
            phi = np.zeros(width)
            phi[n_players] = tree.mean[0]
            if tree.left[0] >= 0:
                player = (lambda n, t=tree: player_of(t, n)) if player_of else (lambda n, t=tree: t.feature[n])
                _shap(tree, x, phi, 0, 0, [], 1.0, 1.0, -1, player)
            out[r, group * width:(group + 1) * width] += phi
    if base is not None:
        for g in range(groups):
            out[:, g * width + n_players] += base[g]
    return out


# ---- XGBoost -----------------------------------------------------------------------------------

def xgboost_model(objective, y, **params):
    import xgboost as xgb
    X = data(with_nan=True)
    d = xgb.DMatrix(X[:N_TRAIN], label=y[:N_TRAIN], feature_names=FEATURES, missing=np.nan)
    booster = xgb.train({"objective": objective, "max_depth": 4, "eta": 0.3, "base_score": 0.3
                         if objective == "binary:logistic" else 0.5, **params}, d, num_boost_round=12)
    full = xgb.DMatrix(X, feature_names=FEATURES, missing=np.nan)
    return booster, full


def xgboost_test(name, objective, target, **params):
    def run(env):
        y = targets(data(with_nan=True))[target]
        booster, full = xgboost_model(objective, y, **params)
        want = booster.predict(full, pred_contribs=True)
        margin = booster.predict(full, output_margin=True)
        want = want.reshape(len(want), -1)  # multiclass: [rows, classes, F + 1] flattened by class
        env.drop(name)
        env.conn.execute("SELECT create_model(%s, %s::jsonb)", [name, booster.save_raw("json").decode()])
        check_contributions(env, name, want)
        # The contributions of each group sum to its margin.
        groups = want.shape[1] // (N_FEATURES + 1)
        sums = want.reshape(len(want), groups, -1).sum(axis=2)
        assert_close(f"{name}: sums", sums, margin.reshape(len(margin), -1), atol=1e-4)
    return run


add_test("xgboost[binary]", xgboost_test("shap_xgb_binary", "binary:logistic", 1))
add_test("xgboost[multiclass]", xgboost_test("shap_xgb_multi", "multi:softprob", 2, num_class=3))
add_test("xgboost[regression_nulls]", xgboost_test("shap_xgb_reg", "reg:squarederror", 0))


@test
def cpu_kernels_bit_for_bit(env):
    """Deeper trees (whole subtrees share one table in the kernel) against pred_contribs, and every
    TreeSHAP path this machine runs (pg_predict.cpu_kernel) against the portable one bit for bit."""
    import xgboost as xgb
    X = data(with_nan=True)
    _, _, classes = targets(X)
    d = xgb.DMatrix(X[:N_TRAIN], label=classes[:N_TRAIN], feature_names=FEATURES, missing=np.nan)
    booster = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 7, "eta": 0.3,
                         "min_child_weight": 0}, d, num_boost_round=10)
    want = booster.predict(xgb.DMatrix(X, feature_names=FEATURES, missing=np.nan), pred_contribs=True)
    name = "shap_xgb_deep"
    env.drop(name)
    env.conn.execute("SELECT create_model(%s, %s::jsonb)", [name, booster.save_raw("json").decode()])
    check_contributions(env, name, want.reshape(len(want), -1), forms=("row",))

    def contributions_with(kernel):
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.cpu_kernel = {kernel}")
            return [flat(r[0]) for r in env.query(
                f"SELECT predict_contributions(%s, t) FROM {TABLE} t ORDER BY id", [name])]

    ref = contributions_with("portable")
    ran = 0
    for kernel in ("avx512", "avx2", "neon"):
        try:
            with env.conn.transaction():
                env.conn.execute(f"SET LOCAL pg_predict.cpu_kernel = {kernel}")
        except Exception:  # noqa: BLE001  (this machine lacks the path: refused at SET)
            continue
        ran += 1
        assert_equal(f"{name}: {kernel} against portable", contributions_with(kernel), ref)
    print(f"    {ran} kernel path(s) besides portable")


# ---- scikit-learn trees ------------------------------------------------------------------------

def sk_ref_tree(tree, leaf_value):
    """scikit-learn's tree_ (x <= threshold goes left on float32 x; the exporter's NaN goes right)."""
    feature, threshold = tree.feature, tree.threshold

    def go_left(n, x):
        v = x[feature[n]]
        return (not np.isnan(v)) and np.float32(v) <= threshold[n]
    values = np.array([leaf_value(tree.value[n]) for n in range(tree.node_count)])
    t = RefTree(tree.children_left, tree.children_right, values, tree.weighted_n_node_samples, go_left)
    t.feature = feature
    return t


def sk_reference(est, X):
    """(reference contributions, the raw score they must sum to) of a fitted tree model."""
    from sklearn.ensemble import (ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor,
                                  RandomForestClassifier, RandomForestRegressor)
    from sklearn.tree import DecisionTreeRegressor
    X64 = X.astype(np.float64)
    if isinstance(est, DecisionTreeRegressor):
        return reference([(sk_ref_tree(est.tree_, lambda v: v[0][0]), 0)], X, N_FEATURES), est.predict(X64)[:, None]
    if isinstance(est, (RandomForestRegressor, ExtraTreesRegressor)):
        n = len(est.estimators_)
        trees = [(sk_ref_tree(t.tree_, lambda v: v[0][0] / n), 0) for t in est.estimators_]
        return reference(trees, X, N_FEATURES), est.predict(X64)[:, None]
    if isinstance(est, RandomForestClassifier):
        n, k = len(est.estimators_), len(est.classes_)
        # Probabilities: each tree's normalized leaf counts, averaged; binary: class 1 only.
        groups = range(1, 2) if k == 2 else range(k)
        trees = [(sk_ref_tree(t.tree_, lambda v, c=c: v[0][c] / v[0].sum() / n), g)
                 for t in est.estimators_ for g, c in enumerate(groups)]
        proba = est.predict_proba(X64)
        return reference(trees, X, N_FEATURES, groups=len(groups)), proba[:, 1:] if k == 2 else proba
    if isinstance(est, GradientBoostingRegressor):
        lr = est.learning_rate
        trees = [(sk_ref_tree(t[0].tree_, lambda v: lr * v[0][0]), 0) for t in est.estimators_]
        base = est._raw_predict_init(X64[:1])[0]
        return reference(trees, X, N_FEATURES, base=base), est.predict(X64)[:, None]
    if isinstance(est, GradientBoostingClassifier):
        lr = est.learning_rate
        k = est.estimators_.shape[1]
        trees = [(sk_ref_tree(row[g].tree_, lambda v: lr * v[0][0]), g) for row in est.estimators_ for g in range(k)]
        base = est._raw_predict_init(X64[:1])[0]
        raw = est.decision_function(X64)
        return reference(trees, X, N_FEATURES, groups=k, base=base), raw.reshape(len(X), -1)
    raise AssertionError(type(est))


def hgb_reference(est, X):
    trees = []
    for g_trees in est._predictors:
        for g, predictor in enumerate(g_trees):
            nodes = predictor.nodes
            left = np.where(nodes["is_leaf"] != 0, -1, nodes["left"])
            right = np.where(nodes["is_leaf"] != 0, -1, nodes["right"])

            def go_left(n, x, nodes=nodes):
                v = x[nodes["feature_idx"][n]]
                return bool(nodes["missing_go_to_left"][n]) if np.isnan(v) else v <= nodes["num_threshold"][n]
            t = RefTree(left, right, nodes["value"], nodes["count"], go_left)
            t.feature = nodes["feature_idx"]
            trees.append((t, g))
    k = len(est._predictors[0])
    base = np.asarray(est._baseline_prediction).reshape(-1)
    base = np.broadcast_to(base, (k,))
    raw = est._raw_predict(X.astype(np.float64))  # [k, rows] in 1.2
    raw = raw.T if raw.shape[0] == k and raw.shape[1] == len(X) else raw
    return reference(trees, X, N_FEATURES, groups=k, base=base), raw.reshape(len(X), -1)


def sklearn_tree_cases():
    from sklearn.ensemble import (ExtraTreesRegressor, GradientBoostingClassifier, GradientBoostingRegressor,
                                  HistGradientBoostingClassifier, HistGradientBoostingRegressor,
                                  RandomForestClassifier, RandomForestRegressor)
    from sklearn.tree import DecisionTreeRegressor
    return {
        # name: (estimator, target, NaN in the data: scikit-learn 1.2's trees refuse NaN)
        "decision_tree": (DecisionTreeRegressor(max_depth=5, random_state=0), 0, False),
        "random_forest_regressor": (RandomForestRegressor(n_estimators=6, max_depth=4, random_state=0), 0, False),
        "extra_trees_regressor": (ExtraTreesRegressor(n_estimators=5, max_depth=4, random_state=0), 0, False),
        "random_forest_binary": (RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0), 1, False),
        "random_forest_multiclass": (RandomForestClassifier(n_estimators=4, max_depth=4, random_state=0), 2, False),
        "gradient_boosting_regressor": (GradientBoostingRegressor(n_estimators=8, max_depth=3, random_state=0), 0,
                                        False),
        "gradient_boosting_binary": (GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0), 1,
                                     False),
        "gradient_boosting_multiclass": (GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0), 2,
                                         False),
        "hist_gradient_boosting_nan": (HistGradientBoostingRegressor(max_iter=8, max_depth=4, random_state=0), 0,
                                       True),
        "hist_gradient_boosting_binary_nan": (HistGradientBoostingClassifier(max_iter=8, max_depth=3,
                                                                             random_state=0), 1, True),
    }


def sklearn_tree_test(case):
    def run(env):
        est, target, with_nan = sklearn_tree_cases()[case]
        X = data(with_nan=with_nan)
        y = targets(X)[target]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X[:N_TRAIN], y[:N_TRAIN])
        hist = type(est).__name__.startswith("Hist")
        want, raw = hgb_reference(est, X) if hist else sk_reference(est, X)
        groups = want.shape[1] // (N_FEATURES + 1)
        # The reference itself: its contributions sum to the library's raw score.
        assert_close(f"{case}: reference sums", want.reshape(len(X), groups, -1).sum(axis=2), raw, atol=1e-6)
        table = TABLE if with_nan else "shap_rows_dense"
        if not with_nan and not env.query("SELECT to_regclass('shap_rows_dense')")[0][0]:
            load_table(env.conn, "shap_rows_dense", FEATURES, X)
        name = f"shap_{case}"
        env.drop(name)
        pg_predict.deploy(env.conn, name, est, feature_names=FEATURES)
        check_contributions(env, name, want, table=table)
    return run


for _case in sklearn_tree_cases():
    add_test(f"sklearn[{_case}]", sklearn_tree_test(_case))


# ---- LightGBM fixtures -------------------------------------------------------------------------

def lgb_trees(model_text):
    """The fixture's trees as RefTrees with LightGBM's decisions (tree.h's NumericalDecision and
    CategoricalDecision) and data counts as covers; the player of a node is its raw feature."""
    trees, blocks = [], model_text.split("\nTree=")[1:]
    k = int(next(l.split("=")[1] for l in model_text.splitlines() if l.startswith("num_tree_per_iteration=")))
    for i, block in enumerate(blocks):
        kv = dict(l.split("=", 1) for l in block.split("end of trees")[0].splitlines()[1:] if "=" in l)
        arr = lambda key, t=float: [t(v) for v in kv[key].split()] if key in kv else []  # noqa: E731
        leaves = int(kv["num_leaves"])
        leaf_value = arr("leaf_value")
        if leaves == 1:
            t = RefTree([-1], [-1], leaf_value, [1.0], None)
            trees.append((t, i % k))
            continue
        feat, thr, dec = arr("split_feature", int), arr("threshold"), arr("decision_type", int)
        lc, rc = arr("left_child", int), arr("right_child", int)
        cat_b, cat_t = arr("cat_boundaries", int), arr("cat_threshold", int)
        internal = leaves - 1
        node = lambda c: c if c >= 0 else internal + ~c  # noqa: E731
        left = [node(c) for c in lc] + [-1] * leaves
        right = [node(c) for c in rc] + [-1] * leaves
        value = [0.0] * internal + leaf_value
        cover = arr("internal_count") + arr("leaf_count")

        def go_left(n, x, feat=feat, thr=thr, dec=dec, cat_b=cat_b, cat_t=cat_t):
            v, d = x[feat[n]], dec[n]
            if d & 1:  # categorical: int(v) in the node's bitset
                if np.isnan(v) or v < 0:
                    return False
                c, ci = int(v), int(thr[n])
                words = cat_t[cat_b[ci]:cat_b[ci + 1]]
                return c // 32 < len(words) and (words[c // 32] >> (c % 32)) & 1 == 1
            missing = (d >> 2) & 3
            if np.isnan(v) and missing != 2:
                v = 0.0
            if (missing == 1 and -1e-35 <= v <= 1e-35) or (missing == 2 and np.isnan(v)):
                return bool(d & 2)
            return v <= thr[n]
        t = RefTree(left, right, value, cover, go_left)
        t.feature = feat + [0] * leaves
        trees.append((t, i % k))
    return trees, k


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array([[np.nan if v == "" else float(v) for v in r] for r in rows[1:]], dtype=np.float64)


def lightgbm_test(case):
    def run(env):
        with open(os.path.join(FIXTURES, f"{case}.model.txt")) as f:
            model = f.read()
        features, X = read_csv(os.path.join(FIXTURES, f"{case}.csv"))
        header, expected = read_csv(os.path.join(FIXTURES, f"{case}.expected.csv"))
        raw = expected[:, [i for i, h in enumerate(header) if h.startswith("raw_")]]
        table = f"shap_lgb_{case}"
        env.conn.execute(f"DROP TABLE IF EXISTS {table}")
        env.conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, "
                         + ", ".join(f"{c} double precision" for c in features) + ")")
        with env.conn.cursor() as cur:
            with cur.copy(f"COPY {table} (id, {', '.join(features)}) FROM STDIN") as cp:
                for i, row in enumerate(X):
                    cp.write_row([i + 1] + [None if np.isnan(v) else float(v) for v in row])
        trees, k = lgb_trees(model)
        n = len(features)
        want = reference(trees, X[:40], n, groups=k)  # the reference is plain Python: 40 rows
        name = f"shap_lgb_{case}"
        env.drop(name)
        env.conn.execute("SELECT create_model(%s, %s::text)", [name, model])
        sql = f"SELECT id, predict_contributions(%(m)s, t) FROM {table} t WHERE id <= 40 ORDER BY id"
        for batching in (True, False):
            with env.conn.transaction():
                env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
                got = [flat(r[1]) for r in env.query(sql, {"m": name})]
            assert_close(f"{name} ({'batched' if batching else 'per row'})", got, want, atol=1e-5)
        # Every row: the contributions sum to LightGBM's recorded raw score.
        if raw.shape[1]:
            got = [flat(r[1]) for r in env.query(
                f"SELECT id, predict_contributions(%(m)s, t) FROM {table} t ORDER BY id", {"m": name})]
            sums = np.asarray(got).reshape(len(got), k, n + 1).sum(axis=2)
            assert_close(f"{name}: sums", sums, raw, atol=1e-5)
    return run


for _case in ("binary", "multiclass", "categorical", "categorical_multiclass", "regression", "zero_as_missing",
              "no_missing", "stump", "deep"):
    if os.path.exists(os.path.join(FIXTURES, f"{_case}.model.txt")):
        add_test(f"lightgbm[{_case}]", lightgbm_test(_case))


# ---- linear models -----------------------------------------------------------------------------

def linear_test(name, make, target, nan):
    def run(env):
        est = make()
        X = data(with_nan=nan)
        y = targets(X)[target]
        est.fit(X[:N_TRAIN].astype(np.float64), y[:N_TRAIN])
        # z: what the final estimator reads (the steps before it applied), in float64
        z = X.astype(np.float64)
        for _, step in getattr(est, "steps", [])[:-1]:
            z = step.transform(z)
        final = est.steps[-1][1] if hasattr(est, "steps") else est
        coef = np.atleast_2d(final.coef_)
        intercept = np.atleast_1d(final.intercept_)
        want = np.concatenate([np.concatenate([z * coef[g], np.full((len(z), 1), intercept[g])], axis=1)
                               for g in range(len(coef))], axis=1)
        table = TABLE if nan else "shap_rows_dense"
        if not nan and not env.query("SELECT to_regclass('shap_rows_dense')")[0][0]:
            load_table(env.conn, "shap_rows_dense", FEATURES, X)
        model = f"shap_{name}"
        env.drop(model)
        pg_predict.deploy(env.conn, model, est, feature_names=FEATURES)
        check_contributions(env, model, want, table=table)
    return run


def _linear_cases():
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return {
        "linear_regression": (lambda: LinearRegression(), 0, False),
        "ridge_imputed_scaled_nulls": (lambda: make_pipeline(SimpleImputer(), StandardScaler(), Ridge()), 0, True),
        "logistic_binary": (lambda: LogisticRegression(max_iter=500), 1, False),
        "logistic_multiclass": (lambda: LogisticRegression(max_iter=500), 2, False),
    }


for _name, (_make, _target, _nan) in _linear_cases().items():
    add_test(f"linear[{_name}]", linear_test(_name, _make, _target, _nan))


# ---- explain_prediction ------------------------------------------------------------------------

@test
def explain_prediction_keys(env):
    y = targets(data(with_nan=True))[1]
    booster, full = xgboost_model("binary:logistic", y)
    contribs = booster.predict(full, pred_contribs=True)
    env.drop("shap_explain")
    env.conn.execute("SELECT create_model('shap_explain', %s::jsonb)", [booster.save_raw("json").decode()])
    for batching in ("on", "off"):
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
            rows = env.query(f"SELECT id, explain_prediction('shap_explain', t, top => 3), to_jsonb(t) "
                             f"FROM {TABLE} t ORDER BY id")
        for rid, doc, row in rows:
            want = contribs[rid - 1]
            assert_close(f"row {rid}: prediction_value", [doc["prediction_value"]], [want.sum()], atol=1e-4)
            assert_close(f"row {rid}: baseline", [doc["baseline_prediction_value"]], [want[-1]])
            assert_equal(f"row {rid}: class", doc["class"], "1")
            top = doc["top_feature_attributions"]
            order = sorted(range(N_FEATURES), key=lambda i: -abs(want[i]))
            assert_equal(f"row {rid}: top features count", len(top), 3)
            for entry, i in zip(top, order):
                if abs(abs(want[i]) - abs(entry["attribution"])) > 1e-5:
                    raise Failure(f"row {rid}: top features {top}, want order {order} of {want}")
                assert_equal(f"row {rid}: value of {entry['feature']}", entry["value"], row[entry["feature"]])
    # top => NULL: every feature; a negative top is an error.
    doc = env.query(f"SELECT explain_prediction('shap_explain', t, NULL) FROM {TABLE} t WHERE id = 1")[0][0]
    assert_equal("top NULL: all features", len(doc["top_feature_attributions"]), N_FEATURES)
    try:
        env.query(f"SELECT explain_prediction('shap_explain', t, -1) FROM {TABLE} t WHERE id = 1")
        raise Failure("a negative top was accepted")
    except Failure:
        raise
    except Exception as e:  # noqa: BLE001
        env.conn.rollback()
        if "top must not be negative" not in str(e):
            raise Failure(f"negative top: {e}")


# ---- refusals ----------------------------------------------------------------------------------

def expect_refusal(env, model, fragment):
    try:
        env.query(f"SELECT predict_contributions(%s, t) FROM {TABLE} t LIMIT 1", [model])
    except Exception as e:  # noqa: BLE001
        env.conn.rollback()
        if fragment not in str(e):
            raise Failure(f"{model}: the error does not say {fragment!r}: {e}")
        return
    raise Failure(f"{model}: predict_contributions was not refused")


@test
def refusals(env):
    from sklearn.decomposition import PCA
    from sklearn.ensemble import IsolationForest, RandomForestRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC
    X = data(with_nan=False).astype(np.float64)
    y, yb, _ = targets(X)
    cases = {
        "shap_refuse_pca": (make_pipeline(PCA(n_components=3), RandomForestRegressor(n_estimators=2, max_depth=3)), y,
                            "mix input columns"),
        "shap_refuse_svc": (SVC(), yb, "not linear"),
        "shap_refuse_iforest": (IsolationForest(n_estimators=5, random_state=0), None, "isolation forest"),
    }
    for name, (est, target, fragment) in cases.items():
        est.fit(X[:N_TRAIN], None if target is None else target[:N_TRAIN])
        env.drop(name)
        pg_predict.deploy(env.conn, name, est, feature_names=FEATURES)
        expect_refusal(env, name, fragment)
    # A document exported before covers were kept: re-export.
    est = RandomForestRegressor(n_estimators=2, max_depth=3, random_state=0).fit(X[:N_TRAIN], y[:N_TRAIN])
    doc = pg_predict.export(est, FEATURES)
    text = json.dumps(doc).replace('"weighted_n_node_samples"', '"unused_covers"')
    env.drop("shap_refuse_old")
    env.conn.execute("SELECT create_model('shap_refuse_old', %s::jsonb)", [text])
    expect_refusal(env, "shap_refuse_old", "export it again")


if __name__ == "__main__":
    main(fixture=make_env)
