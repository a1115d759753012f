#!/usr/bin/python3
"""The Debian package: `make deb` (scripts/deb.sh) builds postgresql-15-pg-predict_<version>_<arch>.deb
and its -dbgsym, and the package works once installed.

The fixture runs scripts/deb.sh into a temporary directory (under `make test`, scripts/test.sh
has built it in the background since the start: PG_PREDICT_DEB_PREBUILT, waited for), then
installs the package into a
scratch root: a copy of this machine's PostgreSQL 15 (/usr/lib/postgresql/15 and
/usr/share/postgresql/15; PostgreSQL finds its share and lib directories relative to its
binaries) with the package unpacked over it (dpkg -x), and starts a server from there. So the
server that runs CREATE EXTENSION sees only what the package installed, not `make install`'s
files.

Checked: the file names; the control fields (the versioned package name, the version, Depends
on postgresql-15 and on the runtime libraries only, never a -dev package); the files it
installs (the module, the control file and every SQL script of control/); the module carries no
debug info and the -dbgsym package carries it under its build id; every library the module
needs resolves; debian/copyright states the PostgreSQL License; and in the scratch server
CREATE EXTENSION pg_predict, create_model of an XGBoost model and predict (equal to XGBoost's
own), from the packaged module.

Run: /usr/bin/python3 regress/conformance/test_deb.py [-k name] [--list]
Needs debhelper and postgresql-server-dev-all (scripts/install-deps.sh). Takes a build of the
extension with debug info (minutes). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import glob
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time

import numpy as np

from harness import Failure, assert_equal, main, test
from pgcluster import Cluster

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PG_MAJOR = "15"
PACKAGE = f"postgresql-{PG_MAJOR}-pg-predict"


def control_version():
    with open(os.path.join(ROOT, "control", "pg_predict.control")) as f:
        return re.search(r"^default_version\s*=\s*'([^']+)'", f.read(), re.M).group(1)


def sh(*args, **kw):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=kw.pop("timeout", 600), **kw)
    if p.returncode != 0:
        raise Failure(f"{' '.join(args)}: exit {p.returncode}: {(p.stdout + p.stderr)[-1500:]}")
    return p.stdout


class Env:
    pass


def wait_for_prebuilt(prebuilt, timeout=3600):
    """make test builds the package in the background from its start (scripts/test.sh sets
    PG_PREDICT_DEB_PREBUILT): wait for scripts/deb.sh there to finish; its packages' folder."""
    status = os.path.join(prebuilt, "status")
    deadline = time.monotonic() + timeout
    while not os.path.exists(status):
        if time.monotonic() > deadline:
            raise RuntimeError(f"scripts/deb.sh in the background ({prebuilt}) did not finish in {timeout} s")
        time.sleep(2)
    with open(status) as f:
        rc = int(f.read().strip() or 1)
    if rc != 0:
        with open(os.path.join(prebuilt, "log"), errors="replace") as f:
            raise RuntimeError(f"scripts/deb.sh failed (exit {rc}):\n{f.read()[-4000:]}")
    return os.path.join(prebuilt, "dist")


@contextlib.contextmanager
def make_env():
    with tempfile.TemporaryDirectory(prefix="pg_predict-deb-") as tmp:
        os.chmod(tmp, 0o755)  # the server runs as an unprivileged user from the scratch root
        env = Env()
        env.tmp, env.out = tmp, os.path.join(tmp, "dist")
        prebuilt = os.environ.get("PG_PREDICT_DEB_PREBUILT")
        if prebuilt:
            env.out = wait_for_prebuilt(prebuilt)
        else:
            p = subprocess.run(["bash", os.path.join(ROOT, "scripts", "deb.sh")],
                               env={**os.environ, "DEB_DIR": env.out}, capture_output=True, text=True, timeout=3600)
            if p.returncode != 0:
                raise RuntimeError(f"scripts/deb.sh failed (exit {p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-3000:]}")
        arch = sh("dpkg", "--print-architecture").strip()
        env.version = control_version()
        env.deb = os.path.join(env.out, f"{PACKAGE}_{env.version}_{arch}.deb")
        env.dbgsym = os.path.join(env.out, f"{PACKAGE}-dbgsym_{env.version}_{arch}.deb")
        # The scratch root: PostgreSQL 15 as installed here, then the package over it.
        env.root = os.path.join(tmp, "root")
        for d in (f"usr/lib/postgresql/{PG_MAJOR}", f"usr/share/postgresql/{PG_MAJOR}"):
            shutil.copytree(os.path.join("/", d), os.path.join(env.root, d), symlinks=True)
        for f in glob.glob(os.path.join(env.root, f"usr/lib/postgresql/{PG_MAJOR}/lib/pg_predict*")) + \
                glob.glob(os.path.join(env.root, f"usr/share/postgresql/{PG_MAJOR}/extension/pg_predict*")):
            os.remove(f)  # make install's files: the package must bring its own
        sh("dpkg", "-x", env.deb, env.root)
        env.lib = os.path.join(env.root, f"usr/lib/postgresql/{PG_MAJOR}/lib")
        env.share = os.path.join(env.root, f"usr/share/postgresql/{PG_MAJOR}")
        yield env


def field(deb, name):
    return sh("dpkg-deb", "-f", deb, name).strip()


@test
def file_names(env):
    assert_equal("the packages made", sorted(os.listdir(env.out)),
                 sorted([os.path.basename(env.deb), os.path.basename(env.dbgsym)]))


@test
def control_fields(env):
    assert_equal("Package", field(env.deb, "Package"), PACKAGE)
    assert_equal("Version", field(env.deb, "Version"), env.version)
    assert_equal("Section", field(env.deb, "Section"), "database")
    depends = [d.strip().split()[0] for d in field(env.deb, "Depends").split(",")]
    if f"postgresql-{PG_MAJOR}" not in depends:
        raise Failure(f"Depends lacks postgresql-{PG_MAJOR}: {depends}")
    for want in ("libtorch", "libxgboost", "libprotobuf", "libstdc++6"):
        if not any(d.startswith(want) for d in depends):
            raise Failure(f"Depends lacks the runtime library {want}: {depends}")
    dev = [d for d in depends if d.endswith("-dev")]
    if dev:
        raise Failure(f"Depends names -dev packages: {dev}")
    assert_equal("the -dbgsym package's Package", field(env.dbgsym, "Package"), f"{PACKAGE}-dbgsym")


@test
def installed_files(env):
    files = sorted(line.split()[-1].lstrip(".") for line in sh("dpkg-deb", "-c", env.deb).splitlines()
                   if not line.startswith("d"))
    want = sorted([f"/usr/lib/postgresql/{PG_MAJOR}/lib/pg_predict.so",
                   f"/usr/share/doc/{PACKAGE}/changelog.gz", f"/usr/share/doc/{PACKAGE}/copyright"] +
                  [f"/usr/share/postgresql/{PG_MAJOR}/extension/{os.path.basename(f)}"
                   for f in glob.glob(os.path.join(ROOT, "control", "*")) if f.endswith((".sql", ".control"))])
    assert_equal("the package's files", files, want)
    for f in glob.glob(os.path.join(ROOT, "control", "*.sql")) + glob.glob(os.path.join(ROOT, "control", "*.control")):
        with open(f, "rb") as a, open(os.path.join(env.share, "extension", os.path.basename(f)), "rb") as b:
            if a.read() != b.read():
                raise Failure(f"the packaged {os.path.basename(f)} differs from control/'s")


@test
def debug_info_is_apart(env):
    so = os.path.join(env.lib, "pg_predict.so")
    sections = sh("readelf", "-S", "-W", so)
    if ".debug_info" in sections:
        raise Failure("the packaged pg_predict.so still carries .debug_info")
    build_id = re.search(r"Build ID: ([0-9a-f]+)", sh("readelf", "-n", so))
    if not build_id:
        raise Failure("pg_predict.so has no build id")
    bid = build_id.group(1)
    debug_file = f"./usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"
    listing = sh("dpkg-deb", "-c", env.dbgsym)
    if debug_file not in listing:
        raise Failure(f"the -dbgsym package has no {debug_file}:\n{listing[:1500]}")
    size = os.path.getsize(so)
    if size > 30 * 2 ** 20:
        raise Failure(f"the packaged module is {size / 2 ** 20:.0f} MB: debug info left in?")


@test
def libraries_resolve(env):
    ldd = sh("ldd", os.path.join(env.lib, "pg_predict.so"))
    missing = [line.strip() for line in ldd.splitlines() if "not found" in line]
    if missing:
        raise Failure(f"libraries not found: {missing}")


@test
def copyright_names_the_licence(env):
    with open(os.path.join(env.root, f"usr/share/doc/{PACKAGE}/copyright")) as f:
        text = f.read()
    if "License: PostgreSQL" not in text or "Permission to use, copy, modify, and distribute" not in text:
        raise Failure("debian/copyright does not state the PostgreSQL License with its text")


@test
def create_extension_and_predict(env):
    import xgboost as xgb
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 3, "seed": 0, "nthread": 1},
                        xgb.DMatrix(X, label=y, feature_names=["a", "b", "c"]), 10)
    cluster = Cluster()
    cluster.bindir = os.path.join(env.root, f"usr/lib/postgresql/{PG_MAJOR}/bin")
    with cluster as pg:
        conn = pg.connect()
        assert_equal("the server's pkglibdir", conn.execute("SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")
                     .fetchone()[0], env.lib)
        conn.execute("CREATE EXTENSION pg_predict")
        assert_equal("extversion", conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_predict'")
                     .fetchone()[0], env.version)
        conn.execute("CREATE TABLE t (a real, b real, c real)")
        with conn.cursor().copy("COPY t FROM STDIN") as copy:
            for row in X:
                copy.write_row([float(v) for v in row])
        conn.execute("SELECT create_model('m', %s)", [booster.save_raw("json").decode()])
        got = np.array([r[0] for r in conn.execute("SELECT predict_proba('m', t) FROM t").fetchall()])[:, 1]
        want = booster.predict(xgb.DMatrix(X, feature_names=["a", "b", "c"]))
        if not np.allclose(got, want, rtol=0, atol=1e-6):
            raise Failure(f"the packaged module's probabilities differ from XGBoost's by {np.abs(got - want).max()}")
        loaded = conn.execute("SELECT setting FROM pg_settings WHERE name = 'shared_preload_libraries'").fetchone()[0]
        assert_equal("shared_preload_libraries", loaded, "pg_predict")


if __name__ == "__main__":
    if platform.system() != "Linux":
        raise SystemExit("Linux only")
    main(make_env)
