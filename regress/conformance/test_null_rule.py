#!/usr/bin/python3
"""Conformance: one rule for a NULL feature, whatever the model (issue 32, item 2).

NULL is a missing value. A model with a rule for it (XGBoost's default direction,
HistGradientBoosting's missing_go_to_left) applies the rule, as its library does with NaN. A
model without one gives NULL: scikit-learn 1.2 raises for NaN there. Before, a NaN reaching a
linear model gave NULL, but one reaching scikit-learn's other trees (GradientBoosting,
RandomForest, DecisionTree, ExtraTrees) went right at every split and gave a number.

Each model is scored over one table in which a third of the rows have a NULL feature, batched,
one row per query, on the per-row path (an array argument) and under an early-exit filter
(WHERE predict_proba(...)[2] > 0.5). Rows without a NULL equal the library within 1e-6; rows
with one are NULL for the models without a rule, and equal the library's prediction with NaN
for the models with one.

Run: /usr/bin/python3 regress/conformance/test_null_rule.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib

import numpy as np
import psycopg

import sklearn_cases  # noqa: F401  (puts python/ on sys.path)
from harness import Failure, main, test
from pgcluster import Cluster

import pg_predict  # noqa: E402

TABLE = "nr_rows"
N_ROWS, N_FEATURES = 240, 4
FEATURES = [f"f{i}" for i in range(N_FEATURES)]


class Env:
    pass


@contextlib.contextmanager
def make_env():
    import xgboost as xgb
    from sklearn.ensemble import (GradientBoostingClassifier, HistGradientBoostingClassifier,
                                  RandomForestClassifier)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeRegressor
    rng = np.random.default_rng(2)
    X = rng.normal(size=(N_ROWS, N_FEATURES)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] + 0.5 * X[:, 2] > 0).astype(int)
    missing = X.copy()
    nulls = np.arange(N_ROWS) % 3 == 0
    missing[nulls, np.arange(N_ROWS)[nulls] % N_FEATURES] = np.nan
    env = Env()
    env.X, env.missing, env.nulls = X.astype(np.float64), missing.astype(np.float64), nulls
    env.expect = {}
    with Cluster() as pg:
        conn = pg.connect()
        env.conn = conn
        conn.execute("CREATE EXTENSION pg_predict")
        conn.execute(f"CREATE TABLE {TABLE} (id int, " + ", ".join(f"{f} real" for f in FEATURES) + ")")
        with conn.cursor() as cur:
            with cur.copy(f"COPY {TABLE} FROM STDIN") as cp:
                for i, row in enumerate(missing):
                    cp.write_row([i + 1] + [None if np.isnan(v) else float(v) for v in row])
        conn.execute(f"ANALYZE {TABLE}")
        fit = env.X[~nulls], y[~nulls]
        # name: (estimator, whether it has a rule for a missing value)
        models = {
            "nr_scaled_lr": (make_pipeline(StandardScaler(), LogisticRegression()), False),
            "nr_scaled_gb": (make_pipeline(StandardScaler(), GradientBoostingClassifier(n_estimators=20,
                                                                                        random_state=0)), False),
            "nr_forest": (RandomForestClassifier(n_estimators=15, max_depth=5, random_state=0), False),
            "nr_tree": (DecisionTreeRegressor(max_depth=4, random_state=0), False),
            "nr_hist": (HistGradientBoostingClassifier(max_iter=20, random_state=0), True),
        }
        for name, (model, routes) in models.items():
            model.fit(*fit)
            pg_predict.deploy(conn, name, model, feature_names=FEATURES)
            regressor = not hasattr(model, "predict_proba")
            on_rows = env.missing if routes else env.X  # a model with a rule scores NaN itself
            value = model.predict(on_rows) if regressor else model.predict_proba(on_rows)[:, 1]
            env.expect[name] = (np.where(nulls & (not routes), np.nan, value), regressor)
        stump = DecisionTreeRegressor(max_depth=1, random_state=0).fit(*fit)
        pg_predict.deploy(conn, "nr_stump", stump, feature_names=FEATURES)
        env.stump_reads = int(stump.tree_.feature[0])
        # The stump reads one input: a NULL elsewhere is not looked at (scikit-learn would raise).
        env.expect["nr_stump"] = (np.where(np.isnan(missing[:, env.stump_reads]), np.nan, stump.predict(env.X)),
                                  True)
        from sklearn.linear_model import Lasso
        lasso = Lasso(alpha=0.1).fit(*fit)  # zero weights: inputs it never reads
        pg_predict.deploy(conn, "nr_lasso", lasso, feature_names=FEATURES)
        env.lasso_reads = np.flatnonzero(lasso.coef_)
        env.expect["nr_lasso"] = (np.where(np.isnan(missing[:, env.lasso_reads]).any(axis=1), np.nan,
                                           lasso.predict(env.X)), True)
        booster = xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1, "seed": 0},
                            xgb.DMatrix(X[~nulls], label=y[~nulls], feature_names=FEATURES), 20)
        conn.execute("SELECT create_model('nr_xgb', %s)", [booster.save_raw("json").decode()])
        env.expect["nr_xgb"] = (booster.predict(xgb.DMatrix(missing, feature_names=FEATURES, missing=np.nan)),
                                False)
        try:
            yield env
        finally:
            conn.close()


def scored(env, model, regressor):
    """The prediction (regressor) or the class-1 probability of every row, by the ways of scoring."""
    value = f"predict('{model}', t)" if regressor else f"(predict_proba('{model}', t))[2]"
    ways = {"batched": dict(env.conn.execute(f"SELECT id, {value} FROM {TABLE} t ORDER BY id").fetchall())}
    ids = list(range(1, 31))
    ways["one row per query"] = {i: env.conn.execute(f"SELECT {value} FROM {TABLE} t WHERE id = %s", [i]).fetchone()[0]
                                 for i in ids}
    array = f"predict('{model}', %s::float8[])" if regressor else f"(predict_proba('{model}', %s::float8[]))[2]"
    ways["per-row path"] = {i: env.conn.execute(f"SELECT {array}", [[None if np.isnan(v) else float(v)
                                                                    for v in env.missing[i - 1]]]).fetchone()[0]
                            for i in ids}
    return ways


def check(env, model):
    expect, regressor = env.expect[model]
    for way, got in scored(env, model, regressor).items():
        for i, v in got.items():
            e = expect[i - 1]
            if np.isnan(e):
                if v is not None:
                    raise Failure(f"{model} ({way}): row {i} has a NULL feature and no rule for it, "
                                  f"but predicts {v}, not NULL")
            elif v is None or abs(v - e) > 1e-6:
                raise Failure(f"{model} ({way}): row {i} gives {v}, the library {e}")
    if not regressor:
        # The early exit decides rows from the margin's bounds: a row with no margin is not one.
        passed = {i for (i,) in env.conn.execute(
            f"SELECT id FROM {TABLE} t WHERE (predict_proba('{model}', t))[2] > 0.5").fetchall()}
        want = {i + 1 for i, e in enumerate(expect) if not np.isnan(e) and e > 0.5}
        if passed != want:
            raise Failure(f"{model}: WHERE predict_proba > 0.5 keeps {len(passed)} rows, expected {len(want)}; "
                          f"differ: {sorted(passed ^ want)[:5]}")


@test
def pipeline_linear_gives_null(env):
    check(env, "nr_scaled_lr")


@test
def pipeline_gradient_boosting_gives_null(env):
    check(env, "nr_scaled_gb")


@test
def random_forest_gives_null(env):
    check(env, "nr_forest")


@test
def decision_tree_regressor_gives_null(env):
    check(env, "nr_tree")


@test
def hist_gradient_boosting_applies_its_rule(env):
    check(env, "nr_hist")


@test
def xgboost_applies_its_rule(env):
    check(env, "nr_xgb")


@test
def an_input_the_model_never_reads_is_not_looked_at(env):
    """A NULL in an input no split reads, or with a zero weight, changes nothing, in a row and in
    an array alike (the row's column is not even fetched)."""
    for model, reads in (("nr_stump", [env.stump_reads]), ("nr_lasso", env.lasso_reads)):
        if len(reads) == N_FEATURES or np.isnan(np.delete(env.missing, reads, axis=1)).sum() == 0:
            raise Failure(f"{model}: no row has a NULL in an input it does not read: the test proves nothing")
        check(env, model)
        # Nor is an Infinity there refused (one in a read input is: infinite_inputs.sql).
        row = [float(v) for v in env.X[1]]  # row 2 has no NULL
        row[next(f for f in range(N_FEATURES) if f not in reads)] = float("inf")
        got = env.conn.execute(f"SELECT predict('{model}', %s::float8[])", [row]).fetchone()[0]
        want = env.expect[model][0][1]
        if got is None or abs(got - want) > 1e-6:
            raise Failure(f"{model}: Infinity in an input it does not read gives {got}, expected {want}")


@test
def pruned_plans_keep_the_rule(env):
    """A WHERE on a feature lets the planner decide the splits on it (optimizer/specialize.cpp):
    under `f IS NULL` every split on f is decided, yet f stays read and every row is NULL; under
    a range the rows with a NULL elsewhere stay NULL."""
    for model in ("nr_forest", "nr_scaled_gb", "nr_tree"):
        expect, regressor = env.expect[model]
        value = f"predict('{model}', t)" if regressor else f"(predict_proba('{model}', t))[2]"
        for where, rows in (("f0 IS NULL", np.isnan(env.missing[:, 0])),
                            ("f0 > 0.3", env.missing[:, 0] > 0.3),
                            ("f1 <= -0.2 OR f1 IS NULL", ~(env.missing[:, 1] > -0.2))):
            plan = "\n".join(r[0] for r in env.conn.execute(
                f"EXPLAIN (costs off, verbose) SELECT {value} FROM {TABLE} t WHERE {where}").fetchall())
            got = dict(env.conn.execute(f"SELECT id, {value} FROM {TABLE} t WHERE {where}").fetchall())
            want = {i + 1: expect[i] for i in np.flatnonzero(rows)}
            if set(got) != set(want):
                raise Failure(f"{model} WHERE {where}: {len(got)} rows, expected {len(want)}")
            for i, e in want.items():
                v = got[i]
                if (v is None) != bool(np.isnan(e)) or (v is not None and abs(v - e) > 1e-6):
                    raise Failure(f"{model} WHERE {where}: row {i} gives {v}, expected "
                                  f"{'NULL' if np.isnan(e) else e}\n{plan}")
            if where == "f0 IS NULL":
                features = next(line for line in plan.splitlines() if "Features:" in line)
                if "Pruned:" not in plan or "t.f0" not in features:
                    raise Failure(f"{model} WHERE {where}: expected the splits on f0 decided and f0 still "
                                  f"read (its NULL voids the row)\n{plan}")


@test
def without_nulls_every_row_predicts(env):
    for model, (expect, _) in env.expect.items():
        if np.isnan(expect[~env.nulls]).any():
            raise Failure(f"{model}: a row without a NULL expected no prediction")


@test
def a_value_beyond_float32_after_featurizers_is_an_error(env):
    """A value that the pipeline's featurizers (float64) take beyond float32, where its trees read
    float32: scikit-learn raises ("Input contains infinity or a value too large for
    dtype('float32')"); pg_predict gives an ERROR naming the input, batched, per row, as an
    array and with the model named per row (issue 46: it scored 0.538). A pipeline that stays in
    float64 (scaler, logistic regression) scores the same row, as scikit-learn does."""
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    fit = env.X[~env.nulls], (env.X[~env.nulls, 0] > 0).astype(int)
    gb = make_pipeline(StandardScaler(), GradientBoostingClassifier(n_estimators=5, random_state=0)).fit(*fit)
    row = np.array([[0.5, 1e300, -0.25, 2.0]])
    try:
        gb.predict_proba(row)
    except ValueError as e:
        if "float32" not in str(e):
            raise Failure(f"scikit-learn raised something else: {e}")
    else:
        raise Failure("scikit-learn no longer raises for this row: the test's premise is gone")
    values = ", ".join(repr(float(v)) for v in row[0])
    table = f"(SELECT 1 AS id, {', '.join(f'{v}::float8 AS {c}' for v, c in zip(row[0], FEATURES))}) t"
    for sql in (f"SELECT (predict_proba('nr_scaled_gb', t))[2] FROM {table}",
                f"SELECT (predict_proba('nr_scaled_gb', ARRAY[{values}]::float8[]))[2]",
                f"SELECT (predict_proba(CASE WHEN t.id > 0 THEN 'nr_scaled_gb' END, t))[2] FROM {table}"):
        for batching in ("on", "off"):
            with env.conn.transaction():
                env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
                try:
                    got = env.conn.execute(sql).fetchall()
                except psycopg.Error as e:
                    if e.sqlstate != "22003" or 'input "f1"' not in str(e) or "float32" not in str(e):
                        raise Failure(f"{sql} (batching {batching}): not the error that names input f1: "
                                      f"{e.sqlstate} {e}")
                else:
                    raise Failure(f"{sql} (batching {batching}) scored {got} where scikit-learn raises")
    lr = env.conn.execute(f"SELECT (predict_proba('nr_scaled_lr', t))[2] FROM {table}").fetchone()[0]
    if lr is None or not np.isfinite(lr):
        raise Failure(f"nr_scaled_lr (float64 throughout) gave {lr} for a row scikit-learn scores")


def with_tensor_replaced(program, attribute, values):
    """The TorchScript archive `program` with the int64 tensor `attribute` of its module holding
    `values` (as many as it has): its storage file rewritten in the zip, as a hand edit of the
    catalog's bytes could. (This Python's torch cannot load the program: it calls our ops.)"""
    import io
    import pickle
    import zipfile

    class Call:
        def __init__(self, fn, args):
            self.fn, self.args = fn, args

    class Object:  # a class the pickle makes instances of (the module): its state is kept
        def __setstate__(self, state):
            self.state = state

    class Recorder(pickle.Unpickler):
        def find_class(self, module, name):
            if module.startswith("__torch__"):
                return type(name, (Object,), {})
            return lambda *args: Call(name, args)

        def persistent_load(self, pid):
            return pid  # ('storage', type, key, location, numel)

    zin = zipfile.ZipFile(io.BytesIO(program))
    names = zin.namelist()
    pkl = next(n for n in names if n.endswith("/data.pkl") and n.count("/") == 1)
    root = Recorder(io.BytesIO(zin.read(pkl))).load()
    state = getattr(root, "state", None)
    found = []

    def walk(node, depth=0):
        if depth > 20:
            return
        if isinstance(node, dict):
            tensor = node.get(attribute)
            if isinstance(tensor, Call) and tensor.fn == "_rebuild_tensor_v2":
                found.append(tensor.args[0][2])  # the storage's key
            for v in node.values():
                walk(v, depth + 1)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v, depth + 1)
        elif isinstance(node, Call):
            walk(node.args, depth + 1)

    walk(state if state is not None else root)
    if not found:
        raise Failure(f"no tensor {attribute!r} in the program")
    prefix = pkl.split("/")[0]
    key = f"{prefix}/data/{found[0]}"
    old = zin.read(key)
    new = np.resize(np.array(values, dtype="<i8"), len(old) // 8).tobytes()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for item in zin.infolist():
            zout.writestr(item, new if item.filename == key else zin.read(item.filename))
    return out.getvalue()


@test
def a_damaged_missing_inputs_is_an_error(env):
    """A stored program whose missing_inputs names an input the model does not have (a catalog
    row changed by hand) gives an ERROR when it is loaded, never a read out of range."""
    env.conn.execute("SELECT create_model('nr_damaged', (SELECT source FROM model_catalog WHERE name = 'nr_scaled_gb' "
                     "AND deployed), 'sklearn')")
    program = bytes(env.conn.execute("SELECT program FROM model_catalog WHERE name = 'nr_damaged'").fetchone()[0])
    for bad in (N_FEATURES + 1000, -1, 2**40):
        env.conn.execute("UPDATE model_catalog SET program = %s WHERE name = 'nr_damaged'",
                         [with_tensor_replaced(program, "missing_inputs", [bad])])
        for sql in (f"SELECT (predict_proba('nr_damaged', t))[2] FROM {TABLE} t",
                    "SELECT (predict_proba('nr_damaged', ARRAY[1, 2, 3, 4]::float8[]))[2]"):
            try:
                env.conn.execute(sql).fetchall()
            except psycopg.Error as e:
                if "stored program is damaged" not in str(e):
                    raise Failure(f"{bad}: {sql}: an error that does not say what is wrong: {e}")
            else:
                raise Failure(f"{bad}: {sql} scored with a damaged missing_inputs")
    env.conn.execute("UPDATE model_catalog SET program = %s WHERE name = 'nr_damaged'", [program])
    env.conn.execute(f"SELECT (predict_proba('nr_damaged', t))[2] FROM {TABLE} t").fetchall()  # intact again
    env.conn.execute("SELECT drop_model('nr_damaged')")


if __name__ == "__main__":
    main(make_env)
