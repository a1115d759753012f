#!/usr/bin/python3
"""Conformance: TorchScript modules (torch.jit.save) registered with create_model(..., 'torchscript')
against PyTorch itself, row for row.

Small networks are trained here, at test time, by /usr/bin/python3's torch on seeded random data;
every expected number is the module's own output in PyTorch. Each row is compared within 1e-5
through predict / predict_proba on rows (batched by the PredictBatch node, and one row at a time
with pg_predict.enable_batching off) and through the real[] / float8[] overloads. Also: only
superusers and members of pgpredict_torchscript may import a module (SQLSTATE 42501 for others),
and modules of the wrong shape, width or kind are refused with an error that says so.

Run: /usr/bin/python3 regress/conformance/test_torchscript.py [-k name] [--list]
"""

import io
import os
import tempfile

import numpy as np
import psycopg
import torch

from harness import Failure, add_test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")
FIXTURES = os.path.join(HERE, "..", "fixtures")
N_ROWS = 400
FEATURES = ["f0", "f1", "f2", "f3"]
ROLE = "pgpredict_torchscript"


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()

    def query(self, sql, params=None):
        cur = self.conn.execute(sql, params)
        return cur.fetchall() if cur.description is not None else []


def make_env():
    import contextlib

    @contextlib.contextmanager
    def env():
        with Cluster() as pg:
            e = Env(pg)
            e.conn.execute("CREATE EXTENSION pg_predict")
            X = data(0)
            cols = ", ".join(f"{f} real" for f in FEATURES)
            e.conn.execute(f"CREATE TABLE rows (id int PRIMARY KEY, {cols})")
            with e.conn.cursor() as cur:
                with cur.copy(f"COPY rows (id, {', '.join(FEATURES)}) FROM STDIN") as cp:
                    for i, row in enumerate(X):
                        cp.write_row([i + 1] + [float(v) for v in row])
            e.conn.execute("ANALYZE rows")
            e.X = X
            try:
                yield e
            finally:
                e.conn.close()
    return env()


def data(seed, n=N_ROWS):
    rng = np.random.default_rng(seed)
    return rng.normal(0, 1.5, (n, len(FEATURES))).astype(np.float32)


def train(net, X, y, loss, steps=60):
    torch.manual_seed(0)
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    xt = torch.from_numpy(X)
    for _ in range(steps):
        opt.zero_grad()
        loss(net(xt), y).backward()
        opt.step()
    return net.eval()


def saved(module):
    buf = io.BytesIO()
    torch.jit.save(module, buf)
    return buf.getvalue()


def expected(module, X):
    with torch.no_grad():
        return module(torch.from_numpy(X)).numpy().astype(np.float64)


class Squeeze(torch.nn.Module):
    """A regressor returning [N] rather than [N, 1]."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x).squeeze(1)


def regression_net(seed=1):
    torch.manual_seed(seed)
    X = data(seed)
    y = torch.from_numpy((np.sin(X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 * X[:, 3]).astype(np.float32))[:, None]
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    return train(net, X, y, torch.nn.functional.mse_loss)


def classifier_net(seed=2):
    torch.manual_seed(seed)
    X = data(seed)
    labels = torch.from_numpy(((X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5).astype(np.int64)))
    net = torch.nn.Sequential(torch.nn.Linear(4, 12), torch.nn.ReLU(), torch.nn.Linear(12, 3))
    train(net, X, labels, torch.nn.functional.cross_entropy)
    return torch.nn.Sequential(net, torch.nn.Softmax(dim=1)).eval()


def create(env, name, artifact, options, format="torchscript", sql_artifact="%(a)s::bytea"):
    env.query("SELECT drop_model(name) FROM models WHERE name = %(n)s", {"n": name})
    env.query(f"SELECT create_model(%(n)s, {sql_artifact}, %(f)s, %(o)s::jsonb)",
              {"n": name, "a": artifact, "f": format, "o": psycopg.types.json.Jsonb(options)})


def scores(env, sql_fn, name, batching):
    arrays = [f"ARRAY[{', '.join(FEATURES)}]::real[]", f"ARRAY[{', '.join(FEATURES)}]::float8[]"]
    with env.conn.transaction():
        env.query(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        forms = ["r"] + arrays
        rows = env.query(f"SELECT {', '.join(f'{sql_fn}(%(n)s, {f})' for f in forms)} FROM rows r ORDER BY id",
                         {"n": name})
    return [[row[k] for row in rows] for k in range(3)]


def check_regressor(env, name, want):
    for batching in (True, False):
        for form, got in zip(["row", "real[]", "float8[]"], scores(env, "predict", name, batching)):
            assert_close(f"{name} predict({form}), batching {batching}", to_floats(got), want)


def check_classifier(env, name, proba, classes):
    labels = np.asarray(classes, dtype=np.float64)[np.argmax(proba, axis=1)]
    for batching in (True, False):
        forms = ["row", "real[]", "float8[]"]
        for form, got in zip(forms, scores(env, "predict_proba", name, batching)):
            assert_close(f"{name} predict_proba({form}), batching {batching}", to_floats(got, 3), proba)
        for form, got in zip(forms, scores(env, "predict", name, batching)):
            assert_close(f"{name} predict({form}), batching {batching}", to_floats(got), labels)


def expect_error(env, sql, params, needle, sqlstate=None):
    try:
        with env.conn.transaction():
            env.query(sql, params)
    except psycopg.Error as e:
        if needle not in str(e):
            raise Failure(f"error {str(e)!r} does not say {needle!r}")
        if sqlstate is not None:
            assert_equal("SQLSTATE", e.sqlstate, sqlstate)
        return
    raise Failure(f"no error; expected one saying {needle!r}")


# ---- scoring -------------------------------------------------------------------------------------

def test_regression_scripted(env):
    net = torch.jit.script(regression_net())
    create(env, "reg", saved(net), {"features": FEATURES})
    check_regressor(env, "reg", expected(net, env.X)[:, 0])
    info = env.query("SELECT format, source_type, task, inputs, outputs, estimator, trees FROM models "
                     "WHERE name = 'reg'")[0]
    assert_equal("models row", info, ("torchscript", "bytea", "regression", 4, 1, "torchscript", 0))
    # a NULL feature is NaN in the module's input; the NaN it gives back is a NULL prediction
    got = env.query("SELECT predict('reg', ARRAY[1, NULL, 2, 3]::real[]), predict('reg', ARRAY[1, 0, 2, 3]::real[])")[0]
    assert_equal("NULL feature", got[0], None)
    if got[1] is None:
        raise Failure("a row without NULLs gave NULL")


def test_regression_traced_flat_output(env):
    """A traced module returning [N], registered with format 'auto' (detected) from a server file
    read by pg_read_binary_file."""
    net = torch.jit.trace(Squeeze(regression_net(3)), torch.from_numpy(env.X[:8]))
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        path = os.path.join(d, "net.pt")
        with open(path, "wb") as f:
            f.write(saved(net))
        os.chmod(path, 0o644)
        create(env, "flat", path, {"features": FEATURES}, format="auto",
               sql_artifact="pg_read_binary_file(%(a)s)")
    assert_equal("detected format", env.query("SELECT format FROM models WHERE name = 'flat'")[0][0],
                 "torchscript")
    check_regressor(env, "flat", expected(net, env.X))


def test_classifier(env):
    net = torch.jit.script(classifier_net())
    classes = [10, 20, 30]
    create(env, "cls", saved(net), {"features": FEATURES, "task": "classification", "classes": classes})
    check_classifier(env, "cls", expected(net, env.X), classes)
    info = env.query("SELECT task, classes, outputs FROM models WHERE name = 'cls'")[0]
    assert_equal("models row", info, ("classification", ["10", "20", "30"], 3))


def test_explain_and_strategy_setting(env):
    net = torch.jit.script(regression_net())
    create(env, "shown", saved(net), {"features": FEATURES})
    plan = "\n".join(r[0] for r in env.query("EXPLAIN (COSTS OFF) SELECT predict('shown', r) FROM rows r"))
    if "shown (torchscript, 4 features -> 1 value)" not in plan:
        raise Failure(f"EXPLAIN does not show the format and shape: {plan}")
    explained = env.query("SELECT explain_model('shown')")[0][0]
    assert_equal("explain_model estimator", explained["before"]["estimator"],
                 {"op": "torchscript", "params": {"inputs": 4, "outputs": 1}})
    # pg_predict.strategy recompiles tree models; a module runs as it is
    want = expected(net, env.X)[:, 0]
    with env.conn.transaction():
        env.query("SET LOCAL pg_predict.strategy = 'gemm'")
        got = env.query("SELECT predict('shown', r) FROM rows r ORDER BY id")
    assert_close("shown with pg_predict.strategy = gemm", to_floats([r[0] for r in got]), want)


# ---- refused -------------------------------------------------------------------------------------

def test_privilege(env):
    net = saved(torch.jit.script(regression_net()))
    env.query("DROP ROLE IF EXISTS ts_plain")
    env.query("CREATE ROLE ts_plain")
    for fmt in ("torchscript", "auto"):  # named, and detected from the bytes
        try:
            with env.conn.transaction():
                env.query("SET LOCAL ROLE ts_plain")
                env.query("SELECT create_model('mine', %(a)s::bytea, %(f)s, %(o)s::jsonb)",
                          {"a": net, "f": fmt, "o": '{"features": ["f0", "f1", "f2", "f3"]}'})
        except psycopg.Error as e:
            assert_equal(f"format {fmt}: SQLSTATE", e.sqlstate, "42501")
            if "permission denied to create a model from a TorchScript module" not in str(e):
                raise Failure(f"format {fmt}: {e}")
        else:
            raise Failure(f"format {fmt}: a role outside {ROLE} imported TorchScript")
    env.query(f"GRANT {ROLE} TO ts_plain")
    with env.conn.transaction():
        env.query("SET LOCAL ROLE ts_plain")
        env.query("SELECT create_model('mine', %(a)s::bytea, 'auto', %(o)s::jsonb)",
                  {"a": net, "o": '{"features": ["f0", "f1", "f2", "f3"]}'})
        owner = env.query("SELECT owner FROM models WHERE name = 'mine'")[0][0]
    assert_equal("a member's model", owner, "ts_plain")
    env.query("SELECT drop_model('mine')")
    env.query("DROP ROLE ts_plain")


def test_refused_modules(env):
    reg = regression_net()
    opts = {"features": FEATURES}

    class Wide(torch.nn.Module):
        def forward(self, x):
            return torch.cat([x[:, :1], x[:, 1:2]], dim=1)

    class Pair(torch.nn.Module):
        def forward(self, x):
            return x.sum(1), x.sum(1)

    class Ints(torch.nn.Module):
        def forward(self, x):
            return x.sum(1).long()

    cases = [
        ("wrong output shape", saved(torch.jit.script(Wide())), opts,
         "a regressor must return [N] or [N, 1]: [2, 4] gives [2, 2] Float"),
        ("wrong input width", saved(torch.jit.script(torch.nn.Linear(5, 1))), opts,
         "the module cannot take a float32 [N, 4] tensor"),
        ("classes that do not match", saved(torch.jit.script(reg)),
         {"features": FEATURES, "task": "classification", "classes": [0, 1, 2]},
         "a classifier with 3 classes must return [N, 3]"),
        ("a tuple", saved(torch.jit.script(Pair())), opts, "forward() must return a Tensor"),
        ("integers", saved(torch.jit.script(Ints())), opts, "forward() must return floats"),
        ("a state_dict, not a module", (lambda b: (torch.save(reg.state_dict(), b), b.getvalue())[1])(io.BytesIO()),
         opts, "not a module saved by torch.jit.save"),
        ("random bytes", bytes(range(256)) * 4, opts, "not a module saved by torch.jit.save"),
        ("no feature names", saved(torch.jit.script(reg)), {}, "option \"features\" is required"),
        ("a strategy", saved(torch.jit.script(reg)), {"features": FEATURES, "strategy": "gemm"},
         "option \"strategy\" does not apply to a TorchScript module"),
    ]
    for what, artifact, options, needle in cases:
        try:
            expect_error(env, "SELECT create_model('bad', %(a)s::bytea, 'torchscript', %(o)s::jsonb)",
                         {"a": artifact, "o": psycopg.types.json.Jsonb(options)}, needle)
        except Failure as e:
            raise Failure(f"{what}: {e}")
    # a zip archive that looks like a module but is broken inside
    good = saved(torch.jit.script(reg))
    broken = good[: len(good) // 2] + bytes(len(good) - len(good) // 2 - 2000) + good[-2000:]
    expect_error(env, "SELECT create_model('bad', %(a)s::bytea, 'torchscript', %(o)s::jsonb)",
                 {"a": broken, "o": psycopg.types.json.Jsonb(opts)}, "torchscript:")
    assert_equal("nothing stored", env.query("SELECT count(*) FROM models WHERE name = 'bad'")[0][0], 0)


# ---- the Python client ---------------------------------------------------------------------------

def test_python_client_deploy(env):
    """pg_predict.deploy sends a torch.jit module as bytea 'torchscript', bytes as bytea and str as
    text (format 'auto'); the command line deploys an artifact file."""
    import subprocess
    import sys
    sys.path.insert(0, PYTHON_DIR)
    import pg_predict

    net = torch.jit.script(regression_net())
    pg_predict.deploy(env.conn, "py_module", net, options={"features": FEATURES})
    pg_predict.deploy(env.conn, "py_bytes", saved(net), options={"features": FEATURES})
    with open(os.path.join(FIXTURES, "binary_tiny.json")) as f:
        text = f.read()
    pg_predict.deploy(env.conn, "py_text", text)
    rows = env.query("SELECT name, format, source_type FROM models WHERE name LIKE 'py\\_%' ORDER BY name")
    assert_equal("deployed", rows, [("py_bytes", "torchscript", "bytea"), ("py_module", "torchscript", "bytea"),
                                    ("py_text", "xgboost", "text")])
    want = expected(net, env.X)[:, 0]
    check_regressor(env, "py_module", want)
    check_regressor(env, "py_bytes", want)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "net.pt")
        with open(path, "wb") as f:
            f.write(saved(net))
        p = subprocess.run([sys.executable, "-m", "pg_predict", "deploy", "--dsn", env.pg.dsn, "--name",
                            "py_cli", "--features", ",".join(FEATURES), path],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=PYTHON_DIR),
                           timeout=120)
        if p.returncode != 0:
            raise Failure(f"deploy exited with {p.returncode}: {p.stderr}")
    check_regressor(env, "py_cli", want)
    env.query("SELECT drop_model(name) FROM models WHERE name LIKE 'py\\_%'")


for _name, _fn in list(globals().items()):
    if _name.startswith("test_") and callable(_fn):
        add_test(_name[len("test_"):], _fn)

if __name__ == "__main__":
    main(fixture=make_env)
