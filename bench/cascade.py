#!/usr/bin/python3
"""Cascades (issue 48) on the HIGGS-shaped table: the 500-tree depth-8 XGBoost model m500 with and
without its cascade, at 1 process and with parallel workers.

    /usr/bin/python3 bench/cascade.py setup [--rows 1000000] [--dir /tmp/pgp-cascade]
    /usr/bin/python3 bench/cascade.py sql --cascades on|off [--workers 0|1] [--dir ...]
    /usr/bin/python3 bench/cascade.py agree [--dir ...]
    /usr/bin/python3 bench/cascade.py stop [--dir ...]
    /usr/bin/python3 bench/cascade.py text-setup [--rows 1000000] [--dir /tmp/pgp-cascade-text]
    /usr/bin/python3 bench/cascade.py text-sql --cascades on|off [--workers 0|1] [--dir ...]
    /usr/bin/python3 bench/cascade.py text-agree [--dir ...]

setup generates bench/run.py's higgs table (bench/pgpb/data.py, the same rows), trains m500 with
the xgboost library on the first 100,000 rows as bench/run.py does (500 trees, depth 8, hist),
registers it, and builds its cascade from rows 100,001-300,000 (max_disagreement 0.001),
printing create_cascade's result. sql prints the seconds of `SELECT sum(predict('m500', h)) FROM
higgs h` (the connection's first query, which loads the programs, is run before and not timed),
so it goes under farm-bench as a whole process too:

    farm-bench -n 3 --vs '/usr/bin/python3 bench/cascade.py sql --cascades off' -- \\
        /usr/bin/python3 bench/cascade.py sql --cascades on

agree compares the labels with and without the cascade, and both with the table's label, on
the rows not used to train the model or build the cascade (id > 300,000).

The text-* commands do the same for Willump's Toxic shape: 1M generated comments (bench/text.py's
Zipf words, 40-70 a comment; 15% carry one of 40 "toxic" words, which make the label, 3% of the
labels flipped), TF-IDF word 1-2-grams + char_wb 2-4-grams (a FeatureUnion) + logistic
regression fitted on the first 20,000, the cascade built from comments 20,001-220,000.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def setup(args):
    import numpy as np
    import xgboost as xgb
    from pgcluster import Cluster
    from pgpb import data
    os.makedirs(args.dir, exist_ok=True)
    pg = Cluster(keep=True, settings={"max_worker_processes": 8, "max_parallel_workers": 4,
                                      "shared_buffers": "1GB", "jit": "off"})
    pg.start()
    with pg.connect() as c:
        c.execute("CREATE EXTENSION pg_predict")
        c.execute(f"SELECT setseed({data.SEED})")
        c.execute(data.higgs_ddl())
        c.execute(data.higgs_sql(args.rows))
        c.execute("VACUUM (FREEZE, ANALYZE) higgs")
        cols = ", ".join(data.HIGGS_FEATURES)
        X = data.copy_matrix(c, f"SELECT {cols} FROM higgs WHERE id <= 100000 ORDER BY id", data.NF)
        y = np.array([r[0] for r in c.execute("SELECT label FROM higgs WHERE id <= 100000 ORDER BY id")])
        t0 = time.perf_counter()
        booster = xgb.train({"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "tree_method": "hist",
                             "nthread": 2, "seed": 0}, xgb.DMatrix(X, label=y, feature_names=data.HIGGS_FEATURES),
                            num_boost_round=500)
        print(f"trained m500 in {time.perf_counter() - t0:.1f} s")
        c.execute("SELECT create_model('m500', %s::text)", (booster.save_raw("json").decode(),))
        t0 = time.perf_counter()
        (result,), = c.execute("SELECT create_cascade('m500', 'SELECT * FROM higgs WHERE id > 100000 AND id <= 300000', "
                               "0.001)").fetchall()
        print(f"create_cascade in {time.perf_counter() - t0:.1f} s: {json.dumps(result)}")
    with open(os.path.join(args.dir, "cluster.json"), "w") as f:
        json.dump({"conninfo": pg.conninfo(), "dir": pg.dir, "rows": args.rows, "cascade": result}, f)


def connect(args):
    import psycopg
    info = json.load(open(os.path.join(args.dir, "cluster.json")))
    c = psycopg.connect(info["conninfo"], autocommit=True)
    for k, v in {"max_parallel_workers_per_gather": args.workers, "parallel_setup_cost": 0,
                 "parallel_tuple_cost": 0, "min_parallel_table_scan_size": 0,
                 "pg_predict.cascades": args.cascades}.items():
        c.execute(f"SET {k} = {v}")
    return c


def sql(args):
    with connect(args) as c:
        c.execute("SELECT sum(predict('m500', h)) FROM (SELECT * FROM higgs LIMIT 10) h").fetchall()
        t0 = time.perf_counter()
        c.execute("SELECT sum(predict('m500', h)) FROM higgs h").fetchall()
        print(f"{time.perf_counter() - t0:.3f}")


def agree(args):
    import numpy as np
    out = {}
    for mode in ("off", "on"):
        args.cascades = mode
        with connect(args) as c:
            rows = c.execute("SELECT predict('m500', h)::int, label FROM higgs h WHERE id > 300000 ORDER BY id").fetchall()
            out[mode] = np.array([r[0] for r in rows])
            truth = np.array([r[1] for r in rows])
            if mode == "on":
                plan = "\n".join(r[0] for r in c.execute(
                    "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT sum(predict('m500', h)) FROM higgs h "
                    "WHERE id > 300000"))
    n = len(truth)
    print(f"rows {n}: cascade vs model disagreement {np.mean(out['on'] != out['off']):.5f}; accuracy against the "
          f"label: model {np.mean(out['off'] == truth):.5f}, cascade {np.mean(out['on'] == truth):.5f}")
    print("\n".join(line for line in plan.splitlines() if "Cascade" in line or "Full Model" in line))


def comments(n, seed=48):
    import random
    from text import documents
    docs, _ = documents(n, seed)
    rng = random.Random(seed)
    toxic = ["tox" + "".join(rng.choice("qxzjkv") for _ in range(5)) for _ in range(40)]
    labels = []
    for i, d in enumerate(docs):
        bad = rng.random() < 0.15
        if bad:
            words = d.split()
            words.insert(rng.randrange(len(words) + 1), rng.choice(toxic))
            docs[i] = " ".join(words)
        labels.append(int(bad) if rng.random() >= 0.03 else int(not bad))
    return docs, labels


def text_setup(args):
    import pg_predict
    from pgcluster import Cluster
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline, make_union
    docs, labels = comments(args.rows)
    model = make_pipeline(make_union(TfidfVectorizer(ngram_range=(1, 2)),
                                     TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4))),
                          LogisticRegression(max_iter=500)).fit(docs[:20000], labels[:20000])
    pg = Cluster(keep=True, settings={"max_worker_processes": 8, "max_parallel_workers": 4,
                                      "shared_buffers": "1GB", "jit": "off"})
    pg.start()
    with pg.connect() as c:
        c.execute("CREATE EXTENSION pg_predict")
        c.execute("CREATE UNLOGGED TABLE comments (id int, body text, label int)")
        with c.cursor() as cur, cur.copy("COPY comments (id, body, label) FROM STDIN") as cp:
            for i, (d, y) in enumerate(zip(docs, labels)):
                cp.write_row([i + 1, d, y])
        c.execute("VACUUM (FREEZE, ANALYZE) comments")
        pg_predict.deploy(c, "toxic", model, feature_names=["body"])
        t0 = time.perf_counter()
        (result,), = c.execute("SELECT create_cascade('toxic', 'SELECT * FROM comments WHERE id > 20000 AND "
                               "id <= 220000', 0.001)").fetchall()
        print(f"create_cascade in {time.perf_counter() - t0:.1f} s: {json.dumps(result)}")
    with open(os.path.join(args.dir, "cluster.json"), "w") as f:
        json.dump({"conninfo": pg.conninfo(), "dir": pg.dir, "rows": args.rows, "cascade": result}, f)


def text_sql(args):
    with connect(args) as c:
        # The connection's first query builds the vocabularies: run before, not timed.
        c.execute("SELECT sum(predict('toxic', t)) FROM (SELECT * FROM comments LIMIT 10) t").fetchall()
        t0 = time.perf_counter()
        c.execute("SELECT sum(predict('toxic', t)) FROM comments t").fetchall()
        print(f"{time.perf_counter() - t0:.3f}")


def text_agree(args):
    import numpy as np
    out = {}
    for mode in ("off", "on"):
        args.cascades = mode
        with connect(args) as c:
            rows = c.execute("SELECT predict('toxic', t)::int, label FROM comments t WHERE id > 220000 "
                             "ORDER BY id").fetchall()
            out[mode] = np.array([r[0] for r in rows])
            truth = np.array([r[1] for r in rows])
            if mode == "on":
                plan = "\n".join(r[0] for r in c.execute(
                    "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT sum(predict('toxic', t)) FROM comments t "
                    "WHERE id > 220000"))
    print(f"rows {len(truth)}: cascade vs model disagreement {np.mean(out['on'] != out['off']):.5f}; accuracy "
          f"against the label: model {np.mean(out['off'] == truth):.5f}, cascade {np.mean(out['on'] == truth):.5f}")
    print("\n".join(line for line in plan.splitlines() if "Cascade" in line or "Full Model" in line))


def stop(args):
    import subprocess
    info = json.load(open(os.path.join(args.dir, "cluster.json")))
    subprocess.run(["su", "postgres", "-c", f"/usr/lib/postgresql/15/bin/pg_ctl -D {info['dir']}/data -m fast stop"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["setup", "sql", "agree", "stop", "text-setup", "text-sql", "text-agree"])
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--cascades", default="off", choices=["on", "off"])
    args = ap.parse_args()
    if args.dir is None:
        args.dir = "/tmp/pgp-cascade-text" if args.command.startswith("text") else "/tmp/pgp-cascade"
    {"setup": setup, "sql": sql, "agree": agree, "stop": stop, "text-setup": text_setup, "text-sql": text_sql,
     "text-agree": text_agree}[args.command.replace("_", "-")](args)


if __name__ == "__main__":
    main()
