"""The bench's tables: generated inside PostgreSQL (setseed + random() in one INSERT ... SELECT
each, so every run has the same rows), exported to numpy / pandas for the libraries, and
sample tables (the first n rows) for the rows measured on a sample."""

import os
import time

from .fmt import log

SEED = 0.42
NF = 28            # higgs features f1..f28
NW = 200           # wide columns c1..c200
HIGGS_FEATURES = [f"f{i}" for i in range(1, NF + 1)]
WIDE_FEATURES = [f"c{i}" for i in range(1, 11)]
CUSTOMER_NUMERIC = ["age", "income", "tenure", "visits", "score", "rate"]
CUSTOMER_TEXT = ["city", "plan", "channel"]
CUSTOMER_COLUMNS = CUSTOMER_NUMERIC + CUSTOMER_TEXT
TABLES = ("higgs", "wide", "customers")


def higgs_ddl():
    cols = ", ".join(f"f{i} real NOT NULL" for i in range(1, NF + 1))
    return (f"CREATE UNLOGGED TABLE higgs (id int NOT NULL, {cols}, label int NOT NULL,"
            " target real NOT NULL)")


def higgs_sql(n):
    """One INSERT ... SELECT: 21 'low-level' columns (momenta ~ exponential, angles ~ uniform,
    pseudo-rapidities ~ normal), 7 'high-level' columns derived from them (as in HIGGS), a
    continuous target and a 0/1 label drawn from a logistic model of the features."""
    low = []
    for i in range(1, 22):
        if i % 3 == 1:
            e = "-ln(1.0 - random())"                                 # momentum-like, >= 0
        elif i % 3 == 2:
            e = "(random() + random() + random() - 1.5) * 2.0"        # ~ normal(0, 1)
        else:
            e = "random() * 6.2832 - 3.1416"                          # angle
        low.append(f"({e})::real AS f{i}")
    high = [
        "sqrt(f1 * f4)::real AS f22",
        "(f2 - f5 + 0.1 * (random() - 0.5))::real AS f23",
        "(f7 * cos(f3 - f6))::real AS f24",
        "(f10 + f13 + f16)::real AS f25",
        "abs(f8 - f11)::real AS f26",
        "ln(1.0 + f19 * f1)::real AS f27",
        "(f1 * f2 + f4 * f5)::real AS f28",
    ]
    z = ("(1.2 * f22 - 0.8 * f1 + sin(f3) * f2 - 0.3 * f25 + (f26 > 1.0)::int"
         " - 0.4 * f28 + 0.6 * f24 * f14 - 0.5 * f17 + 0.3 * f20 * f23 + 0.4 * cos(f12) - 0.6)")
    low_cols = ", ".join(f"f{i}" for i in range(1, 22))
    all_cols = ", ".join(HIGGS_FEATURES)
    return f"""
INSERT INTO higgs (id, {all_cols}, label, target)
SELECT id, {all_cols}, (random() < 1.0 / (1.0 + exp(-z)))::int, (z + 0.2 * (random() - 0.5))::real
  FROM (SELECT id, {all_cols}, {z} AS z
          FROM (SELECT id, {low_cols}, {", ".join(high)}
                  FROM (SELECT g AS id, {", ".join(low)}
                          FROM generate_series(1, {n}) g OFFSET 0) a
                OFFSET 0) b
        OFFSET 0) c"""


def wide_ddl():
    cols = ", ".join(f"c{i} real NOT NULL" for i in range(1, NW + 1))
    return f"CREATE UNLOGGED TABLE wide (id int NOT NULL, {cols}, label int NOT NULL)"


def wide_sql(n):
    cols = ", ".join(f"c{i}" for i in range(1, NW + 1))
    gen = ", ".join(f"random()::real AS c{i}" for i in range(1, NW + 1))
    z = ("(3.0 * (c1 - 0.5) + 4.0 * c2 * c3 - 2.0 * c4 + sin(6.0 * c5) + 2.0 * (c6 > c7)::int"
         " - 1.5 * c8 * c8 + c9 - c10 - 0.7)")
    return f"""
INSERT INTO wide (id, {cols}, label)
SELECT id, {cols}, (random() < 1.0 / (1.0 + exp(-{z})))::int
  FROM (SELECT g AS id, {gen} FROM generate_series(1, {n}) g OFFSET 0) a"""


def customers_ddl():
    return ("CREATE UNLOGGED TABLE customers (id int NOT NULL, age real NOT NULL, "
            "income real NOT NULL, tenure real NOT NULL, visits real NOT NULL, score real, "
            "rate real NOT NULL, city text NOT NULL, plan text NOT NULL, channel text, "
            "label int NOT NULL)")


def customers_sql(n):
    """A churn-like table for the scikit-learn pipeline: six numeric columns (score NULL in
    ~5% of the rows), three text columns (channel NULL in ~5%), a 0/1 label."""
    cities = "ARRAY['berlin','madrid','oslo','paris','rome','lisbon','vienna','prague']"
    return f"""
INSERT INTO customers (id, age, income, tenure, visits, score, rate, city, plan, channel, label)
SELECT id, age, income, tenure, visits, score, rate, city, plan, channel,
       (random() < 1.0 / (1.0 + exp(-(0.04 * (age - 40) + 0.5 * (ln(income) - 10)
          + 0.3 * (visits - 3) - sin(2 * coalesce(score, 0)) - 0.02 * (tenure - 36)
          + CASE plan WHEN 'pro' THEN 1.0 WHEN 'plus' THEN 0.3 WHEN 'basic' THEN -0.6
                      ELSE 0 END
          + CASE WHEN city IN ('berlin', 'oslo', 'vienna') THEN 0.5 ELSE -0.3 END))))::int
  FROM (SELECT g AS id,
               (18 + 60 * random())::real AS age,
               exp(9 + 2 * random())::real AS income,
               floor(72 * random())::real AS tenure,
               floor(8 * random())::real AS visits,
               CASE WHEN random() < 0.05 THEN NULL
                    ELSE ((random() + random() + random() - 1.5) * 2)::real END AS score,
               random()::real AS rate,
               ({cities})[1 + floor(8 * random())::int] AS city,
               (ARRAY['basic','basic','plus','pro','enterprise'])[1 + floor(5 * random())::int]
                 AS plan,
               CASE WHEN random() < 0.05 THEN NULL
                    ELSE (ARRAY['email','phone','web'])[1 + floor(3 * random())::int] END
                 AS channel
          FROM generate_series(1, {n}) g OFFSET 0) a"""


DDL = {"higgs": higgs_ddl, "wide": wide_ddl, "customers": customers_ddl}
FILL = {"higgs": higgs_sql, "wide": wide_sql, "customers": customers_sql}


def generate(conn, tables, n, info):
    """Create and fill the named tables (each after setseed, so a table's rows do not depend
    on which others a run needs), then freeze, analyze and prewarm them."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    for name in tables:
        conn.execute(DDL[name]())
        t0 = time.perf_counter()
        conn.execute("SELECT setseed(%s)", (SEED,))
        conn.execute(FILL[name](n))
        t1 = time.perf_counter()
        conn.execute(f"VACUUM (FREEZE, ANALYZE) {name}")
        conn.execute(f"SELECT pg_prewarm('{name}')")
        t2 = time.perf_counter()
        size = conn.execute(f"SELECT pg_size_pretty(pg_table_size('{name}'))").fetchone()[0]
        mean = conn.execute(f"SELECT avg(label) FROM {name}").fetchone()[0]
        info[f"{name}_generate_s"] = round(t1 - t0, 2)
        info[f"{name}_vacuum_s"] = round(t2 - t1, 2)
        info[f"{name}_size"] = size
        info[f"{name}_label_mean"] = round(float(mean), 4)
        log(f"  {name}: {n} rows, {size}, label mean {mean:.3f}, generated in {t1 - t0:.1f}s, "
            f"vacuum+prewarm {t2 - t1:.1f}s")


def copy_matrix(conn, select_sql, ncols):
    """Run COPY (select) TO STDOUT in binary and return an [N x ncols] float32 array.
    Every selected column must be `real` and non-NULL. Binary keeps the float32 bits exact."""
    import numpy as np
    chunks = []
    with conn.cursor().copy(f"COPY ({select_sql}) TO STDOUT (FORMAT binary)") as cp:
        for chunk in cp:
            chunks.append(bytes(chunk))
    buf = b"".join(chunks)
    assert buf[:11] == b"PGCOPY\n\xff\r\n\x00", "unexpected COPY header"
    ext = int.from_bytes(buf[15:19], "big")
    body = memoryview(buf)[19 + ext: len(buf) - 2]
    fields = [("n", ">i2")]
    for i in range(ncols):
        fields += [(f"l{i}", ">i4"), (f"v{i}", ">f4")]
    rec = np.frombuffer(body, dtype=np.dtype(fields))
    if len(rec) and (not (rec["n"] == ncols).all()
                     or not all((rec[f"l{i}"] == 4).all() for i in range(ncols))):
        raise RuntimeError("COPY: unexpected NULL or column count")
    X = np.empty((len(rec), ncols), dtype=np.float32)
    for i in range(ncols):
        X[:, i] = rec[f"v{i}"]
    return X


def copy_frame(conn, select_sql, columns):
    """COPY (select) TO STDOUT as text into a DataFrame (NULL → NaN). PostgreSQL writes a real
    in its shortest exact form, so numbers arrive as the float32 values stored."""
    import io
    import pandas as pd
    buf = io.BytesIO()
    with conn.cursor().copy(f"COPY ({select_sql}) TO STDOUT") as cp:
        for chunk in cp:
            buf.write(bytes(chunk))
    buf.seek(0)
    return pd.read_csv(buf, sep="\t", header=None, names=columns, na_values=["\\N"],
                       keep_default_na=False, quoting=3)


def data_file(workdir, table):
    """Where export() leaves a table's inputs for the baselines' own processes."""
    return os.path.join(workdir, "customers.pkl" if table == "customers" else f"{table}.npy")


def label_file(workdir, table):
    """Where export() leaves a numeric table's labels (train_native.py trains on them)."""
    return os.path.join(workdir, f"{table}-label.npy")


def export(conn, tables, workdir):
    """The tables' inputs and labels in memory ({table: {"X", "label"[, "target"]}}), and the
    inputs saved under workdir for native.py / sklearn_native.py."""
    import numpy as np
    data = {}
    if "higgs" in tables:
        hx = copy_matrix(conn, "SELECT " + ", ".join(HIGGS_FEATURES) +
                         ", label::real, target FROM higgs ORDER BY id", NF + 2)
        data["higgs"] = {"X": np.ascontiguousarray(hx[:, :NF]), "label": hx[:, NF],
                         "target": hx[:, NF + 1]}
        np.save(data_file(workdir, "higgs"), data["higgs"]["X"])
        np.save(label_file(workdir, "higgs"), data["higgs"]["label"])
    if "wide" in tables:
        wx = copy_matrix(conn, "SELECT " + ", ".join(WIDE_FEATURES) +
                         ", label::real FROM wide ORDER BY id", 11)
        data["wide"] = {"X": np.ascontiguousarray(wx[:, :10]), "label": wx[:, 10]}
        np.save(data_file(workdir, "wide"), data["wide"]["X"])
    if "customers" in tables:
        cf = copy_frame(conn, "SELECT " + ", ".join(CUSTOMER_COLUMNS) +
                        ", label FROM customers ORDER BY id", CUSTOMER_COLUMNS + ["label"])
        data["customers"] = {"X": cf[CUSTOMER_COLUMNS], "label": cf["label"].to_numpy()}
        data["customers"]["X"].to_pickle(data_file(workdir, "customers"))
    return data


class Samples:
    """Sample tables: the first n rows (ids 1..n) of a table, created on demand, cached.
    Rows that would take too long on the whole table are measured on one and extrapolated."""

    def __init__(self, conn, sizes):
        self.conn, self.sizes, self.made = conn, sizes, set()

    def table(self, base, n):
        if n >= self.sizes[base]:
            return base
        name = f"{base}_s{n}"
        if name not in self.made:
            self.conn.execute(f"DROP TABLE IF EXISTS {name}")
            self.conn.execute(f"CREATE UNLOGGED TABLE {name} AS SELECT * FROM {base} "
                              f"WHERE id <= {n} ORDER BY id")
            self.conn.execute(f"VACUUM (FREEZE, ANALYZE) {name}")
            self.made.add(name)
        return name
