#!/usr/bin/python3
"""Conformance: profiles and drift (profile_model, model_drift) against numpy and scipy on the
same rows.

A model trained by train() on "last month" (seeded random rows: three numbers, one with a few
NULLs, two text columns) keeps a profile of its training rows. Then:
  - a shifted month (x0's mean moved by one standard deviation, a city never seen in 8% of the
    rows, 30 points more NULLs in x1) flags exactly x0, x1, city and the output, each for its
    reason, and nothing else;
  - a fresh draw of last month's distribution (4,000 rows, as the training rows) flags nothing;
  - every statistic against numpy / scipy computed on all the rows: the profile's counts,
    moments, points and bin shares exactly, PSI / Jensen-Shannon / L-infinity over the same
    bins within 1e-9, Kolmogorov-Smirnov within 1e-3 of scipy.stats.ks_2samp (the baseline is
    kept as 1,000 order statistics) and exactly for a baseline of at most 1,000 rows;
  - a baseline query (drift between two windows) gives what the stored profile gives;
  - a scikit-learn pipeline (ColumnTransformer) deployed by pg_predict.deploy is profiled by
    profile_model; the models and model_versions views say when;
  - bad input is an ERROR that names the problem and changes nothing; a role with USAGE runs
    model_drift on rows it can read but cannot take a profile.

Run: /usr/bin/python3 regress/conformance/test_drift.py [-k name] [--list]
"""

import contextlib
import json
import math

import numpy as np
import psycopg
from scipy.spatial.distance import jensenshannon
from scipy.stats import ks_2samp

import sklearn_cases  # noqa: F401  (puts python/ on sys.path)
from harness import Failure, main, test
from pgcluster import Cluster

import pg_predict  # noqa: E402

N = 4000
CITIES = ["paris", "lyon", "nice", "lille"]
PLANS = ["basic", "pro"]


def month(seed, shifted=False, n=N):
    rng = np.random.default_rng(seed)
    x0 = rng.normal(0, 1, n).astype(np.float32).astype(np.float64)
    x1 = rng.normal(5, 2, n).astype(np.float32).astype(np.float64)
    x2 = rng.uniform(0, 10, n).astype(np.float32).astype(np.float64)
    city = rng.choice(CITIES, n, p=[0.4, 0.3, 0.2, 0.1]).astype(object)
    plan = rng.choice(PLANS, n, p=[0.7, 0.3]).astype(object)
    x1_null = rng.random(n) < 0.05
    if shifted:
        x0 = (x0 + 1.0).astype(np.float32).astype(np.float64)
        city[rng.random(n) < 0.08] = "marseille"
        x1_null = rng.random(n) < 0.35
    y = 2 * x0 + np.where(x1_null, 5.0, x1) - 0.3 * x2 + (city == "paris") + rng.normal(0, 0.5, n)
    x1 = np.where(x1_null, np.nan, x1)
    return {"x0": x0, "x1": x1, "x2": x2, "city": city, "plan": plan, "y": y}


TABLES = {"last_month": month(1), "this_month": month(2, shifted=True), "like_last": month(3),
          "small_base": month(4, n=600)}


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()
        self.conn.autocommit = True

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def load(self, name, data):
        self.conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, x0 real, x1 real, x2 real, city text, "
                          "plan text, y float8)")
        with self.conn.cursor() as cur:
            with cur.copy(f"COPY {name} FROM STDIN") as cp:
                for i in range(len(data["y"])):
                    cp.write_row([i + 1] + [None if isinstance(data[c][i], float) and math.isnan(data[c][i])
                                            else data[c][i].item() if hasattr(data[c][i], "item") else data[c][i]
                                            for c in ("x0", "x1", "x2", "city", "plan", "y")])

    def drift(self, query, baseline=None, options="{}", name="m"):
        rows = self.query("SELECT feature, kind, statistic, value, threshold, anomaly, detail "
                          "FROM model_drift(%s, %s, %s, %s)", (name, query, baseline, options))
        return {r[0]: {"kind": r[1], "statistic": r[2], "value": r[3], "threshold": r[4], "anomaly": r[5],
                       "detail": r[6]} for r in rows}

    def column(self, sql):
        return [r[0] for r in self.query(sql)]


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        for name, data in TABLES.items():
            env.load(name, data)
        env.query("SELECT train('m', 'SELECT x0, x1, x2, city, plan, y FROM last_month', 'y', "
                  "hyperparams => '{\"n_estimators\": 20, \"max_depth\": 3}')")
        try:
            yield env
        finally:
            env.conn.close()


def close(what, got, want, tol):
    if got is None or not abs(got - want) <= tol:
        raise Failure(f"{what}: {got}, expected {want} (within {tol})")


def values(env, table, column):
    got = [np.nan if v is None else v for v in env.column(f"SELECT {column} FROM {table} ORDER BY id")]
    if column in ("city", "plan"):
        return np.array(got, dtype=object)
    # real columns come back as their shortest decimal: rounding it to float32 gives the value
    return np.array(got, dtype=np.float64).astype(np.float32).astype(np.float64)


def binned_shares(x, edges):
    x = x[~np.isnan(x)]
    counts = np.bincount(np.searchsorted(edges, x, side="right"), minlength=len(edges) + 1)
    return counts / len(x)


def psi(b, c):
    b, c = np.maximum(b, 1e-4), np.maximum(c, 1e-4)
    return float(np.sum((c - b) * np.log(c / b)))


@test
def training_profile_matches_numpy(env):
    profile = env.query("SELECT profile FROM model_catalog WHERE name = 'm'")[0][0]
    if profile["rows"] != N or profile["version"] != 1 or "last_month" not in profile["query"]:
        raise Failure(f"the profile's rows, version or query: {profile['rows']}, {profile['version']}")
    columns = {c["name"]: c for c in profile["columns"]}
    read = env.query("SELECT columns_read FROM models WHERE name = 'm'")[0][0]
    if sorted(columns) != sorted(read + ["output"]) or not {"x0", "x1", "x2", "city"} <= set(read):
        raise Failure(f"profiled columns {sorted(columns)}: expected columns_read {read} and the output")
    for name in ("x0", "x1", "x2"):
        c, x = columns[name], values(env, "last_month", name)
        v = np.sort(x[~np.isnan(x)])
        if c["rows"] != N or c["nulls"] != int(np.isnan(x).sum()) or c["values"] != len(v):
            raise Failure(f"{name}: counts {c['rows']}, {c['nulls']}, {c['values']}")
        close(f"{name} mean", c["mean"], v.mean(), 1e-9 * max(1, abs(v.mean())))
        close(f"{name} stddev", c["stddev"], v.std(), 1e-9)
        if c["min"] != v[0] or c["max"] != v[-1]:
            raise Failure(f"{name}: min/max {c['min']}, {c['max']} against {v[0]}, {v[-1]}")
        ranks = [((i + 1) * len(v) + 999) // 1000 - 1 for i in range(1000)]
        if c["points"] != [float(v[r]) for r in ranks]:
            raise Failure(f"{name}: the points are not the values at ranks ceil((i + 1) n / 1000)")
        shares = binned_shares(v, np.array(c["bins"]["edges"]))
        if not np.allclose(c["bins"]["shares"], shares, rtol=0, atol=1e-12):
            raise Failure(f"{name}: bin shares {c['bins']['shares']} against {shares.tolist()}")
    for name in [c for c in ("city", "plan") if c in columns]:
        x = values(env, "last_month", name)
        got = {k: n for k, n in columns[name]["categories"]}
        want = {k: int((x == k).sum()) for k in set(x)}
        if got != want or columns[name]["nulls"] != 0 or columns[name]["other"] != 0:
            raise Failure(f"{name}: categories {got} against {want}")
    predictions = np.array(env.column("SELECT predict('m', t) FROM last_month t ORDER BY id"))
    close("output mean", columns["output"]["mean"], predictions.mean(), 1e-9)
    if env.query("SELECT profiled_at IS NOT NULL FROM models WHERE name = 'm'") != [(True,)]:
        raise Failure("models.profiled_at is NULL after train()")
    if env.query("SELECT explain_model('m') -> 'profile' = profile FROM model_catalog WHERE name = 'm'") != [(True,)]:
        raise Failure("explain_model does not show the deployed version's profile")


@test
def shifted_month_flags_exactly_what_moved(env):
    d = env.drift("SELECT * FROM this_month")
    read = env.query("SELECT columns_read FROM models WHERE name = 'm'")[0][0]
    if sorted(d) != sorted(read + ["output"]):
        raise Failure(f"one row per column read ({read}) and the output: {sorted(d)}")
    flagged = {f: r["detail"]["flagged_by"] for f, r in d.items() if r["anomaly"]}
    want = {"x0": ["psi"], "x1": ["null_share"], "city": ["psi", "new_categories"], "output": ["psi"]}
    if flagged != want:
        raise Failure(f"flagged {flagged}, expected {want}")
    if d["city"]["detail"]["new_categories"] != ["marseille"]:
        raise Failure(f"new categories: {d['city']['detail']['new_categories']}")


@test
def same_distribution_flags_nothing(env):
    d = env.drift("SELECT * FROM like_last")
    flagged = {f: r["detail"]["flagged_by"] for f, r in d.items() if r["anomaly"]}
    if flagged:
        raise Failure(f"rows drawn like the training rows flagged {flagged}")
    for stat in ("ks", "jensen_shannon"):
        d = env.drift("SELECT * FROM like_last", options=json.dumps({"numeric_statistic": stat}))
        if any(r["anomaly"] for r in d.values()):
            raise Failure(f"{stat}: flagged {[f for f, r in d.items() if r['anomaly']]}")


@test
def statistics_match_scipy(env):
    d = env.drift("SELECT * FROM this_month", options='{"numeric_statistic": "ks"}')
    for name in ("x0", "x1", "x2"):
        base, now = values(env, "last_month", name), values(env, "this_month", name)
        base, now = base[~np.isnan(base)], now[~np.isnan(now)]
        det = d[name]["detail"]
        close(f"{name} ks", d[name]["value"], ks_2samp(base, now).statistic, 1e-3)
        edges = np.array(det["bins"]["edges"])
        b, c = binned_shares(base, edges), binned_shares(now, edges)
        close(f"{name} psi", det["psi"], psi(b, c), 1e-9)
        close(f"{name} jensen_shannon", det["jensen_shannon"], jensenshannon(b, c, base=2), 1e-9)
        close(f"{name} linf", det["linf"], float(np.max(np.abs(b - c))), 1e-12)
    for name in ("x1",):
        b_null = np.isnan(values(env, "last_month", name)).mean()
        c_null = np.isnan(values(env, "this_month", name)).mean()
        close("x1 null share change", d[name]["detail"]["null_share_change"], c_null - b_null, 1e-12)
    base, now = values(env, "last_month", "city"), values(env, "this_month", "city")
    cats = sorted(set(base))
    b = np.array([np.mean(base == k) for k in cats] + [0.0])
    c = np.array([np.mean(now == k) for k in cats] + [np.mean(now == "marseille")])
    det = d["city"]["detail"]
    close("city psi", d["city"]["value"], psi(b, c), 1e-9)
    close("city jensen_shannon", det["jensen_shannon"], jensenshannon(b, c, base=2), 1e-9)
    close("city linf", det["linf"], float(np.max(np.abs(b - c))), 1e-12)
    close("city new category share", det["new_category_share"], float(np.mean(now == "marseille")), 1e-12)


@test
def small_baseline_ks_is_exact(env):
    d = env.drift("SELECT * FROM this_month", baseline="SELECT * FROM small_base",
                  options='{"numeric_statistic": "ks"}')
    for name in ("x0", "x2"):
        base = values(env, "small_base", name)
        now = values(env, "this_month", name)
        close(f"{name} ks", d[name]["value"], ks_2samp(base[~np.isnan(base)], now[~np.isnan(now)]).statistic, 1e-12)


@test
def baseline_query_gives_what_the_profile_gives(env):
    stored = env.drift("SELECT * FROM this_month")
    windows = env.drift("SELECT * FROM this_month", baseline="SELECT * FROM last_month")
    for f in stored:
        for key in ("value", "anomaly"):
            if stored[f][key] != windows[f][key]:
                raise Failure(f"{f} {key}: {windows[f][key]} against the stored profile's {stored[f][key]}")


@test
def pipeline_profile(env):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    import pandas as pd
    data = TABLES["last_month"]
    frame = pd.DataFrame({c: data[c] for c in ("x0", "x2", "city")})
    pipe = Pipeline([("prep", ColumnTransformer([("num", StandardScaler(), ["x0", "x2"]),
                                                 ("cat", OneHotEncoder(handle_unknown="ignore"), ["city"])])),
                     ("model", Ridge())]).fit(frame, data["y"])
    pg_predict.deploy(env.conn, "pipe", pipe)
    if env.query("SELECT profiled_at FROM models WHERE name = 'pipe'") != [(None,)]:
        raise Failure("an imported model has a profile before profile_model")
    doc = env.query("SELECT profile_model('pipe', 'SELECT * FROM last_month')")[0][0]
    columns = {c["name"]: c for c in doc["columns"]}
    if sorted(columns) != ["city", "output", "x0", "x2"]:
        raise Failure(f"profiled {sorted(columns)}")
    close("x2 mean", columns["x2"]["mean"], float(np.mean(data["x2"])), 1e-9)
    want = pipe.predict(frame)
    close("output mean", columns["output"]["mean"], float(np.mean(want)), 1e-6)
    got = {k: n for k, n in columns["city"]["categories"]}
    if got != {k: int((data["city"] == k).sum()) for k in CITIES}:
        raise Failure(f"city categories {got}")
    if env.query("SELECT profiled_at IS NOT NULL FROM model_versions WHERE name = 'pipe'") != [(True,)]:
        raise Failure("model_versions.profiled_at is NULL after profile_model")
    d = env.drift("SELECT * FROM like_last", name="pipe")
    if any(r["anomaly"] for r in d.values()):
        raise Failure(f"pipe: flagged {[f for f, r in d.items() if r['anomaly']]}")


@test
def classifier_output(env):
    """A binary classifier's output is its second class's probability; a multiclass one's, its label."""
    from sklearn.linear_model import LogisticRegression
    import pandas as pd
    data = TABLES["last_month"]
    frame = pd.DataFrame({"x0": data["x0"], "x2": data["x2"]})
    binary = LogisticRegression().fit(frame, np.where(data["y"] > np.median(data["y"]), "high", "low"))
    pg_predict.deploy(env.conn, "binary", binary)
    doc = env.query("SELECT profile_model('binary', 'SELECT * FROM last_month')")[0][0]
    output = {c["name"]: c for c in doc["columns"]}["output"]
    want = binary.predict_proba(frame)[:, 1]
    if output["kind"] != "numeric":
        raise Failure(f"a binary classifier's output is {output['kind']}")
    close("binary output mean", output["mean"], float(np.mean(want)), 1e-6)
    close("binary output max", output["max"], float(np.max(want)), 1e-6)
    tiers = np.select([data["y"] < 3, data["y"] < 7], ["low", "mid"], "high")
    multi = LogisticRegression(max_iter=500).fit(frame, tiers)
    pg_predict.deploy(env.conn, "multi", multi)
    doc = env.query("SELECT profile_model('multi', 'SELECT * FROM last_month')")[0][0]
    output = {c["name"]: c for c in doc["columns"]}["output"]
    labels = multi.predict(frame)
    if output["kind"] != "categorical" or {k: n for k, n in output["categories"]} != \
            {k: int((labels == k).sum()) for k in set(labels)}:
        raise Failure(f"a multiclass classifier's output: {output['kind']} {output.get('categories')}")


@test
def multi_output_model_has_no_output_row(env):
    from sklearn.linear_model import LinearRegression
    import pandas as pd
    data = TABLES["last_month"]
    frame = pd.DataFrame({"x0": data["x0"], "x2": data["x2"]})
    pg_predict.deploy(env.conn, "two", LinearRegression().fit(frame, np.column_stack([data["y"], -data["y"]])))
    doc = env.query("SELECT profile_model('two', 'SELECT * FROM last_month')")[0][0]
    if sorted(c["name"] for c in doc["columns"]) != ["x0", "x2"]:
        raise Failure(f"a two-output model's profile: {[c['name'] for c in doc['columns']]}")
    d = env.drift("SELECT * FROM like_last", name="two")
    if sorted(d) != ["x0", "x2"] or any(r["anomaly"] for r in d.values()):
        raise Failure(f"a two-output model's drift: {d}")


def expect_error(env, sql, params, fragment):
    try:
        env.query(sql, params)
    except psycopg.Error as e:
        if fragment not in str(e):
            raise Failure(f"{sql}: error {str(e).splitlines()[0]!r} does not say {fragment!r}")
        return
    raise Failure(f"{sql}: no error (expected one saying {fragment!r})")


@test
def bad_input_errors_and_changes_nothing(env):
    before = env.query("SELECT profile, profiled_at FROM model_catalog WHERE name = 'm'")
    cases = [
        ("SELECT * FROM model_drift('nope', 'SELECT * FROM this_month')", None, 'model "nope" does not exist'),
        ("SELECT * FROM model_drift('m', 'SELECT x0, x1 FROM this_month')", None, 'has no column "x2"'),
        ("SELECT * FROM model_drift('m', 'SELECT * FROM this_month', 'SELECT x0 FROM last_month')", None,
         'the baseline query has no column "x1"'),
        ("SELECT * FROM model_drift('m', 'SELECT * FROM this_month', "
         "'SELECT x0, x1, x2, plan, plan AS x3, 1 AS city FROM last_month')", None, 'column "city" of the baseline'),
        ("SELECT * FROM model_drift('m', 'SELECT * FROM this_month', options => %s)",
         ('{"numeric_statistic": "median"}',), 'unknown statistic "median"'),
        ("SELECT * FROM model_drift('m', 'SELECT * FROM this_month', options => %s)",
         ('{"features": {"zzz": {}}}',), 'features names "zzz"'),
        # options are checked before the baseline query reads a row
        ("SELECT * FROM model_drift('m', 'SELECT * FROM this_month', "
         "'SELECT *, 1 / (id - id) AS boom FROM last_month', %s)",
         ('{"categorical_statistic": "ks"}',), 'statistic "ks" in categorical_statistic is for numeric columns'),
        ("SELECT * FROM model_drift('m', '')", None, "query must not be an empty string"),
        ("SELECT profile_model('m', 'SELECT * FROM this_month WHERE false')", None, "the query returned no rows"),
        ("SELECT profile_model('m', 'SELECT * FROM this_month', 7)", None, 'model "m" has no version 7'),
        ("SELECT profile_model('m', 'SELECT x0 FROM this_month')", None, 'has no column "x1"'),
    ]
    for sql, params, fragment in cases:
        expect_error(env, sql, params, fragment)
    if env.query("SELECT profile, profiled_at FROM model_catalog WHERE name = 'm'") != before:
        raise Failure("a failed call changed the profile")
    from sklearn.linear_model import Ridge
    import pandas as pd
    data = TABLES["small_base"]
    pg_predict.deploy(env.conn, "noprofile",
                      Ridge().fit(pd.DataFrame({"x0": data["x0"], "x2": data["x2"]}), data["y"]))
    expect_error(env, "SELECT * FROM model_drift('noprofile', 'SELECT * FROM this_month')", None,
                 'version 1 of model "noprofile" has no profile')


@test
def usage_runs_drift_but_only_the_owner_profiles(env):
    env.conn.execute("DROP ROLE IF EXISTS analyst")
    env.conn.execute("CREATE ROLE analyst LOGIN")
    env.conn.execute("GRANT SELECT ON this_month TO analyst")
    conn = env.pg.connect(user="analyst")
    conn.autocommit = True
    try:
        try:
            conn.execute("SELECT * FROM model_drift('m', 'SELECT * FROM this_month')")
            raise Failure("a role without USAGE ran model_drift")
        except psycopg.Error as e:
            if "permission denied" not in str(e):
                raise Failure(f"without USAGE: {e}")
        env.query("SELECT grant_model_usage('m', 'analyst')")
        rows = conn.execute("SELECT count(*) FROM model_drift('m', 'SELECT * FROM this_month')").fetchall()
        if rows != [(env.query("SELECT cardinality(columns_read) + 1 FROM models WHERE name = 'm'")[0][0],)]:
            raise Failure(f"with USAGE: {rows}")
        for sql, fragment in (("SELECT * FROM model_drift('m', 'SELECT * FROM last_month')", "permission denied"),
                              ("SELECT profile_model('m', 'SELECT * FROM this_month')", "must be owner")):
            try:
                conn.execute(sql)
                raise Failure(f"analyst: {sql} did not fail")
            except psycopg.Error as e:
                if fragment not in str(e):
                    raise Failure(f"analyst: {sql}: {e}")
    finally:
        conn.close()


if __name__ == "__main__":
    main(fixture=make_env)
