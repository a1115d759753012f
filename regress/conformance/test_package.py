#!/usr/bin/python3
"""The Python client as a package: `pip install ./python` and the `pg_predict` command.

The fixture copies python/ to a temporary directory, makes a venv with Debian's packages
(`/usr/bin/python3 -m venv --system-site-packages`) and installs the copy into it the way
docs/getting-started.md says, with no network: `pip install --no-build-isolation --no-index`
(pip's own configuration and PIP_* variables are ignored, so nothing but Debian's packages can
satisfy the dependencies). Then it starts a throwaway PostgreSQL with the extension. Every
command runs the venv's `pg_predict` script from outside the repository with no PYTHONPATH, so
what is tested is the installed package.

Checked: the package's version equals control/pg_predict.control's default_version (and the
installed metadata's); `pg_predict export` writes what export() returns; `pg_predict deploy` of
a pickled scikit-learn pipeline (NULLs where imputed, a constant column, a text column with a
category it never saw), an XGBoost JSON file and a pickled XGBRegressor, each scored in SQL and
compared with the library's own predict / predict_proba on every row within 1e-5, batched and
per row; --replace; the warning for a database whose extension is another version (0.3.0,
then updated); the failures (missing file, unpicklable file, unsupported estimator, unfitted
XGBoost model, no server, no extension, a refused create_model) with their messages and exit
statuses.

Run: /usr/bin/python3 regress/conformance/test_package.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'package: N passed, M failed'.
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import pandas as pd

from harness import Failure, add_test, assert_close, assert_equal, main
from pgcluster import Cluster

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PYTHON_DIR = os.path.join(ROOT, "python")
sys.path.insert(0, PYTHON_DIR)
import pg_predict  # noqa: E402  (the repository's copy: the reference the installed one must match)

N_ROWS = 300


def control_version():
    with open(os.path.join(ROOT, "control", "pg_predict.control")) as f:
        m = re.search(r"^default_version\s*=\s*'([^']+)'", f.read(), re.M)
    if not m:
        raise Failure("control/pg_predict.control has no default_version")
    return m.group(1)


# ---- the fixture: a venv holding the installed package, and a server ----------------------------

class Env:
    def __init__(self, tmp, venv, pg):
        self.tmp, self.venv, self.pg = tmp, venv, pg
        self.conn = pg.connect()

    def run(self, *args, expect=0):
        """Runs the venv's pg_predict; fails unless it exits with `expect`. Returns (out, err)."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PG")}
        p = subprocess.run([os.path.join(self.venv, "bin", "pg_predict"), *args], cwd=self.tmp,
                           env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != expect:
            raise Failure(f"pg_predict {' '.join(args)}: exit {p.returncode}, expected {expect}; "
                          f"stderr: {p.stderr.strip()[-800:]}")
        return p.stdout, p.stderr

    def path(self, name):
        return os.path.join(self.tmp, name)

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()


def pip_env():
    """The environment of a machine without pip configuration: no PIP_* (find-links, indexes)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def install(tmp):
    src = os.path.join(tmp, "python")
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns(
        "__pycache__", "build", "*.egg-info"))
    venv = os.path.join(tmp, "venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
                   check=True, capture_output=True, timeout=300)
    p = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation",
                        "--no-index", src], cwd=tmp, env=pip_env(), capture_output=True,
                       text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"pip install failed (exit {p.returncode}):\n{p.stdout}{p.stderr}")
    return venv


@contextlib.contextmanager
def make_env():
    with tempfile.TemporaryDirectory(prefix="pg_predict-package-") as tmp:
        venv = install(tmp)
        with Cluster() as pg:
            env = Env(tmp, venv, pg)
            env.conn.execute("CREATE EXTENSION pg_predict")
            load_table(env)
            yield env


# ---- data: random, with the edge cases ---------------------------------------------------------

CITIES = ["paris", "oslo", "lima", "kyiv"]


def frame(seed=0, n=N_ROWS):
    """Numeric a, b (NULL in 15% of rows), a constant column, a text column; the last rows hold
    a city no model was fitted on."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "a": rng.normal(size=n),
        "b": np.where(rng.random(n) < 0.15, np.nan, rng.normal(2.0, 3.0, size=n)),
        "c": np.full(n, 7.0),
        "city": rng.choice(CITIES, size=n),
    })
    df.loc[n - 5:, "city"] = "quito"
    return df


def train_rows(df):
    return df.iloc[:-5]


def labels(df, seed=0):
    rng = np.random.default_rng(seed + 100)
    b = df["b"].fillna(0.0)
    score = df["a"] + 0.3 * b + (df["city"] == "oslo") + rng.normal(0, 0.5, size=len(df))
    return (score > 0.5).astype(int)


def load_table(env):
    df = frame()
    env.conn.execute("CREATE TABLE rows (id int PRIMARY KEY, a float8, b float8, c float8, "
                     "city text)")
    with env.conn.cursor() as cur:
        with cur.copy("COPY rows (id, a, b, c, city) FROM STDIN") as cp:
            for i, r in enumerate(df.itertuples(index=False)):
                cp.write_row([i + 1, float(r.a), None if np.isnan(r.b) else float(r.b),
                              float(r.c), r.city])


def pipeline(seed=0, C=1.0):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    df = frame(seed)
    pipe = make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["a", "b", "c"]),
            ("text", OneHotEncoder(handle_unknown="ignore"), ["city"]),
        ]),
        LogisticRegression(C=C))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pipe.fit(train_rows(df), labels(train_rows(df), seed))


def dump(env, name, model):
    import joblib
    path = env.path(name)
    joblib.dump(model, path)
    return path


def scores(env, sql_expr, batching):
    """sql_expr over every row of the table in id order, through the PredictBatch node or the
    per-row path."""
    with env.conn.transaction():
        env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        return [r[0] for r in env.query(f"SELECT {sql_expr} FROM rows r ORDER BY id")]


def check_model(env, name, predict, proba=None):
    for batching in (True, False):
        how = "batched" if batching else "per row"
        assert_close(f"{name}: predict ({how})", scores(env, f"predict('{name}', r)", batching),
                     predict)
        if proba is not None:
            assert_close(f"{name}: predict_proba ({how})",
                         scores(env, f"predict_proba('{name}', r)", batching), proba)
    # A batch of one row.
    got = env.query(f"SELECT predict('{name}', r) FROM rows r WHERE id = {N_ROWS}")
    assert_close(f"{name}: predict (one row)", [got[0][0]], predict[-1:])


# ---- versions ------------------------------------------------------------------------------------

def test_version_matches_extension(env):
    want = control_version()
    assert_equal("pg_predict.__version__ (python/pg_predict/__init__.py) vs default_version in "
                 "control/pg_predict.control", pg_predict.__version__, want)
    out, _ = env.run("--version")
    assert_equal("pg_predict --version", out.strip(), f"pg_predict {want}")
    p = subprocess.run([os.path.join(env.venv, "bin", "python"), "-c",
                        "import importlib.metadata as m; print(m.version('pg_predict'))"],
                       cwd=env.tmp, capture_output=True, text=True, timeout=120, env=pip_env())
    assert_equal("installed distribution's version", p.stdout.strip(), want)
    # the install examples
    for readme in (os.path.join("docs", "getting-started.md"), os.path.join("python", "README.md")):
        with open(os.path.join(ROOT, readme)) as f:
            shown = re.findall(r"pg_predict --version\s+# pg_predict (\S+)", f.read())
        if not shown or set(shown) != {want}:
            raise Failure(f"{readme}: the install example shows version(s) {shown}, not {want}")
    if not os.path.exists(os.path.join(ROOT, "control", f"pg_predict--{want}.sql")):
        raise Failure(f"no install script control/pg_predict--{want}.sql")
    assert_equal("the server's extension version",
                 env.query("SELECT extversion FROM pg_extension WHERE extname = 'pg_predict'"),
                 [(want,)])


def test_installed_package_is_the_one_run(env):
    p = subprocess.run([os.path.join(env.venv, "bin", "python"), "-c",
                        "import pg_predict; print(pg_predict.__file__)"],
                       cwd=env.tmp, capture_output=True, text=True, timeout=120, env=pip_env())
    where = p.stdout.strip()
    if not where.startswith(os.path.join(env.venv, "lib")):
        raise Failure(f"the venv imports pg_predict from {where!r}, not its site-packages "
                      f"({p.stderr.strip()[-300:]})")
    out, _ = env.run("operators")
    from pg_predict import operators
    assert_equal("pg_predict operators", out.rstrip("\n"), operators.markdown().rstrip("\n"))


# ---- export ------------------------------------------------------------------------------------

def test_cli_export(env):
    pipe = pipeline()
    path = dump(env, "pipe.joblib", pipe)
    want = json.loads(json.dumps(pg_predict.export(pipe), allow_nan=False))
    out, _ = env.run("export", path)
    assert_equal("pg_predict export (stdout)", json.loads(out), want)
    env.run("export", path, "-o", env.path("pipe.json"))
    with open(env.path("pipe.json")) as f:
        assert_equal("pg_predict export -o", json.load(f), want)


# ---- deploy ------------------------------------------------------------------------------------

def test_cli_deploy_sklearn_pipeline(env):
    pipe = pipeline()
    _, err = env.run("deploy", "--dsn", env.pg.dsn, "--name", "pipe",
                     dump(env, "pipe.joblib", pipe))
    if "deployed 'pipe'" not in err:
        raise Failure(f"no confirmation on stderr: {err!r}")
    df = frame()
    check_model(env, "pipe", pipe.predict(df), pipe.predict_proba(df))


def test_cli_deploy_versions(env):
    # A taken name gets a new version: deployed, or staged with --no-deploy (--replace, from
    # before versions, is accepted and changes nothing).
    first, second = pipeline(seed=1), pipeline(seed=2, C=0.05)
    env.run("deploy", "--dsn", env.pg.dsn, "--name", "again", dump(env, "first.pkl", first))
    env.run("deploy", "--dsn", env.pg.dsn, "--name", "again", dump(env, "second.pkl", second))
    df = frame()
    check_model(env, "again", second.predict(df), second.predict_proba(df))
    env.run("deploy", "--dsn", env.pg.dsn, "--name", "again", "--no-deploy", env.path("first.pkl"))
    check_model(env, "again", second.predict(df), second.predict_proba(df))
    env.run("deploy", "--dsn", env.pg.dsn, "--name", "again", "--replace", env.path("first.pkl"))
    check_model(env, "again", first.predict(df), first.predict_proba(df))
    rows = env.conn.execute("SELECT version, deployed FROM model_versions WHERE name = 'again' "
                            "ORDER BY version").fetchall()
    if rows != [(1, False), (2, False), (3, False), (4, True)]:
        raise Failure(f"versions of 'again': {rows}")
    env.conn.execute("SELECT rollback_model('again')")
    check_model(env, "again", second.predict(df), second.predict_proba(df))


def test_cli_deploy_xgboost(env):
    import xgboost as xgb
    df = frame()
    X = train_rows(df)[["a", "b", "c"]]
    y = labels(train_rows(df))
    clf = xgb.XGBClassifier(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
    path = env.path("booster.json")
    clf.get_booster().save_model(path)
    env.run("deploy", "--dsn", env.pg.dsn, "--name", "xgb_file", path)
    X_all = df[["a", "b", "c"]]
    check_model(env, "xgb_file", clf.predict(X_all), clf.predict_proba(X_all))
    pg_predict.deploy(env.conn, "xgb_object", clf)  # the same model, from the object
    check_model(env, "xgb_object", clf.predict(X_all), clf.predict_proba(X_all))

    reg = xgb.XGBRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, X["a"] * 2 + y)
    env.run("deploy", "--dsn", env.pg.dsn, "--name", "xgb_pickle",
            dump(env, "xgb.joblib", reg))
    check_model(env, "xgb_pickle", reg.predict(X_all))


def test_cli_deploy_warns_on_another_extension_version(env):
    """A database whose extension is still 0.3.0: deploy warns, deploys; after ALTER EXTENSION
    pg_predict UPDATE it does not warn."""
    env.conn.execute("CREATE DATABASE older")
    with env.pg.connect("older") as conn:
        conn.execute("CREATE EXTENSION pg_predict VERSION '0.3.0'")
        pipe = pipeline()
        path = dump(env, "pipe.joblib", pipe)
        _, err = env.run("deploy", "--dsn", env.pg.conninfo("older"), "--name", "p", path)
        for part in ("warning", f"client is version {pg_predict.__version__}", "extension 0.3.0",
                     "ALTER EXTENSION pg_predict UPDATE", "deployed 'p'"):
            if part not in err:
                raise Failure(f"an 0.3.0 extension: {part!r} not in {err!r}")
        row = frame().iloc[:1]
        a, b, c, city = row.iloc[0]
        got = [r[0] for r in conn.execute(
            "SELECT predict('p', r) FROM (VALUES (%s::float8, %s::float8, %s::float8, %s::text))"
            " AS r(a, b, c, city)", [a, None if np.isnan(b) else b, c, city]).fetchall()]
        assert_close("predict in the 0.3.0 database", got, pipe.predict(row))
        conn.execute("ALTER EXTENSION pg_predict UPDATE")
        _, err = env.run("deploy", "--dsn", env.pg.conninfo("older"), "--name", "p", "--replace",
                         path)
        if "warning" in err:
            raise Failure(f"a warning after the update: {err!r}")


def test_make_wheel(env):
    """`make wheel` (scripts/wheel.sh) builds the client from a copy: python/ gains no build/ or
    *.egg-info, the wheel carries the version and the PostgreSQL License, and it installs with no
    network into a fresh venv whose `pg_predict --version` says that version."""
    before = sorted(os.listdir(PYTHON_DIR))
    out = os.path.join(env.tmp, "wheels")
    p = subprocess.run(["bash", os.path.join(ROOT, "scripts", "wheel.sh")], env={**pip_env(), "WHEEL_DIR": out},
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise Failure(f"scripts/wheel.sh failed (exit {p.returncode}): {p.stderr[-800:]}")
    assert_equal("python/ after make wheel", sorted(os.listdir(PYTHON_DIR)), before)
    wheel = f"pg_predict-{control_version()}-py3-none-any.whl"
    assert_equal("the wheels built", sorted(os.listdir(out)), [wheel])
    import zipfile
    with zipfile.ZipFile(os.path.join(out, wheel)) as z:
        meta = z.read(f"pg_predict-{control_version()}.dist-info/METADATA").decode()
    if "License: PostgreSQL" not in meta:
        raise Failure(f"the wheel's metadata names no PostgreSQL License: {meta[:400]!r}")
    venv = os.path.join(env.tmp, "wheel-venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], check=True,
                   capture_output=True, timeout=300)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-deps", "--no-index", os.path.join(out, wheel)],
                   check=True, capture_output=True, env=pip_env(), timeout=600)
    version = subprocess.run([os.path.join(venv, "bin", "pg_predict"), "--version"], capture_output=True, text=True,
                             env=pip_env(), timeout=300).stdout
    if control_version() not in version:
        raise Failure(f"the wheel's pg_predict --version: {version!r}")


# ---- failures ------------------------------------------------------------------------------------

def expect_failure(env, status, parts, *args):
    _, err = env.run(*args, expect=status)
    lines = err.strip().splitlines()
    if len(lines) != 1 or not lines[0].startswith("pg_predict: "):
        raise Failure(f"pg_predict {' '.join(args)}: not one 'pg_predict: ' line: {err!r}")
    for part in parts:
        if part not in err:
            raise Failure(f"pg_predict {' '.join(args)}: {part!r} not in {err!r}")


def test_cli_failures(env):
    from sklearn.gaussian_process import GaussianProcessRegressor
    dsn = env.pg.dsn
    missing = env.path("missing.joblib")
    expect_failure(env, 2, [missing, "no such file"], "export", missing)
    expect_failure(env, 2, [missing, "no such file"], "deploy", "--dsn", dsn, "--name", "m",
                   missing)
    expect_failure(env, 2, ["missing.onnx", "no such file"], "deploy", "--dsn", dsn, "--name",
                   "m", env.path("missing.onnx"))
    garbage = env.path("garbage.pkl")
    with open(garbage, "wb") as f:
        f.write(b"not a pickle\n")
    expect_failure(env, 2, ["cannot load", garbage], "export", garbage)
    df = frame()
    gp = GaussianProcessRegressor().fit(df[["a"]].iloc[:40], df["a"].iloc[:40])
    gp_path = dump(env, "gp.joblib", gp)
    for command in (["export", gp_path], ["deploy", "--dsn", dsn, "--name", "gp", gp_path]):
        expect_failure(env, 2, ["cannot export GaussianProcessRegressor"], *command)
    import xgboost as xgb
    unfitted = dump(env, "unfitted.joblib", xgb.XGBRegressor())
    expect_failure(env, 2, [unfitted, "XGBRegressor is not a fitted XGBoost model"], "deploy",
                   "--dsn", dsn, "--name", "m", unfitted)
    pipe_path = dump(env, "pipe.joblib", pipeline())
    expect_failure(env, 3, ["cannot connect to the server"], "deploy", "--dsn",
                   f"host={env.tmp} port=1 user=postgres", "--name", "m", pipe_path)
    env.conn.execute("CREATE DATABASE bare")
    expect_failure(env, 1, ["extension is not installed", "'bare'", "CREATE EXTENSION"],
                   "deploy", "--dsn", env.pg.conninfo("bare"), "--name", "m", pipe_path)
    expect_failure(env, 1, ["create_model failed", "strategy"], "deploy", "--dsn", dsn,
                   "--name", "m", "--strategy", "bogus", pipe_path)
    assert_equal("models left by the failures",
                 env.query("SELECT count(*) FROM models WHERE name IN ('m', 'gp')"), [(0,)])


for _fn in [test_version_matches_extension, test_installed_package_is_the_one_run,
            test_cli_export, test_cli_deploy_sklearn_pipeline, test_cli_deploy_versions,
            test_cli_deploy_xgboost, test_cli_deploy_warns_on_another_extension_version,
            test_cli_failures, test_make_wheel]:
    add_test(_fn.__name__[len("test_"):], _fn)

if __name__ == "__main__":
    main(fixture=make_env, suite="package")
