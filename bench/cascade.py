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
    /usr/bin/python3 bench/cascade.py topk-sql --filter on|off [--model m500|shop] [--workers 0|1] [--dir ...]
    /usr/bin/python3 bench/cascade.py topk-agree [--model m500|shop] [--dir ...]
    /usr/bin/python3 bench/cascade.py shop-setup [--rows 1000000] [--dir /tmp/pgp-cascade]   (after setup)
    /usr/bin/python3 bench/cascade.py shop-sql --cascades on|off [--workers 0|1] / shop-agree

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

topk-sql times `SELECT id FROM <table> ORDER BY predict_proba(<model>, t)[2] DESC LIMIT 100`
with pg_predict.approximate_top_k on or off (the model's cascade is its filter); topk-agree gives
the recall of the exact top 100 and checks every returned score is the model's own. shop-setup
adds a scikit-learn pipeline to the same cluster: a `shop` table (20 numbers, two categories,
generated in SQL), StandardScaler + PCA(10) on the numbers and OneHotEncoder on the categories,
then a 100-tree depth-10 random forest, fitted on the first 100,000 rows, its cascade built from
rows 100,001-300,000.

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


def timed_sum(args, table, model):
    """Prints the seconds of SELECT sum(predict(model, t)) FROM table t (the connection's first
    query, which loads the programs, run before and not timed)."""
    with connect(args) as c:
        c.execute(f"SELECT sum(predict('{model}', t)) FROM (SELECT * FROM {table} LIMIT 10) t").fetchall()
        t0 = time.perf_counter()
        c.execute(f"SELECT sum(predict('{model}', t)) FROM {table} t").fetchall()
        print(f"{time.perf_counter() - t0:.3f}")


def labels_agree(args, table, model, first_unused):
    """The labels with and without the cascade, and both against the table's, on the rows from
    id first_unused on (used neither to train the model nor to build the cascade)."""
    import numpy as np
    out = {}
    for mode in ("off", "on"):
        args.cascades = mode
        with connect(args) as c:
            rows = c.execute(f"SELECT predict('{model}', t)::int, label FROM {table} t WHERE id >= {first_unused} "
                             "ORDER BY id").fetchall()
            out[mode] = np.array([r[0] for r in rows])
            truth = np.array([r[1] for r in rows])
    print(f"rows {len(truth)}: cascade vs model disagreement {np.mean(out['on'] != out['off']):.5f}; accuracy "
          f"against the label: model {np.mean(out['off'] == truth):.5f}, cascade {np.mean(out['on'] == truth):.5f}")


def sql(args):
    timed_sum(args, "higgs", "m500")


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


TOPK = {"m500": ("higgs", "m500"), "shop": ("shop", "shop")}


def topk_query(model):
    table, name = TOPK[model]
    return f"SELECT id, (predict_proba('{name}', t))[2] AS p FROM {table} t ORDER BY p DESC LIMIT 100"


def topk_sql(args):
    with connect(args) as c:
        c.execute(f"SET pg_predict.approximate_top_k = {args.filter}")
        table, name = TOPK[args.model]
        c.execute(f"SELECT sum(predict('{name}', t)) FROM (SELECT * FROM {table} LIMIT 10) t").fetchall()
        t0 = time.perf_counter()
        c.execute(topk_query(args.model)).fetchall()
        print(f"{time.perf_counter() - t0:.3f}")


def topk_agree(args):
    out = {}
    for mode in ("off", "on"):
        with connect(args) as c:
            c.execute(f"SET pg_predict.approximate_top_k = {mode}")
            out[mode] = c.execute(topk_query(args.model)).fetchall()
            if mode == "on":
                plan = "\n".join(r[0] for r in c.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + topk_query(args.model)))
                table, name = TOPK[args.model]
                ids = [r[0] for r in out["on"]]
                exact = dict(c.execute(f"SELECT id, (predict_proba('{name}', t))[2] FROM {table} t WHERE id = ANY(%s)",
                                       (ids,)).fetchall())
                wrong = sum(exact[i] != p for i, p in out["on"])
    recall = len({r[0] for r in out["on"]} & {r[0] for r in out["off"]}) / len(out["off"])
    print(f"{args.model}: recall of the exact top 100 {recall:.2f}; scores not the model's own: {wrong}")
    print("\n".join(line.strip() for line in plan.splitlines() if "Filter" in line or "Rows Scored:" in line))


def shop_setup(args):
    import numpy as np
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import PCA
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    import pandas as pd
    import pg_predict
    nums = [f"n{i}" for i in range(20)]
    with connect(args) as c:
        c.execute("SELECT setseed(0.48)")
        c.execute("CREATE TABLE shop (id int PRIMARY KEY, " + ", ".join(f"{n} real" for n in nums) +
                  ", city text, plan text, label int)")
        gen = ", ".join(f"(random() * 2 - 1)::real" for _ in nums)
        c.execute(f"INSERT INTO shop SELECT g, {gen}, 'city' || (random() * 49)::int, "
                  f"(ARRAY['free','basic','pro','team','enterprise'])[1 + (random() * 4)::int], 0 "
                  f"FROM generate_series(1, {args.rows}) g")
        # The label: a noisy function of a few numbers and both categories.
        c.execute("UPDATE shop SET label = (n0 + 0.8 * n1 * n2 - 0.6 * n3 + 0.3 * (length(city) - 5) "
                  "+ CASE plan WHEN 'pro' THEN 0.5 WHEN 'free' THEN -0.5 ELSE 0 END + 0.4 * (random() - 0.5) > 0)::int")
        c.execute("VACUUM (FREEZE, ANALYZE) shop")
        rows = c.execute("SELECT " + ", ".join(nums) + ", city, plan, label FROM shop WHERE id <= 100000 "
                         "ORDER BY id").fetchall()
        df = pd.DataFrame(rows, columns=nums + ["city", "plan", "label"])
        ct = ColumnTransformer([("num", make_pipeline(StandardScaler(), PCA(10, random_state=0)), nums),
                                ("cat", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"])])
        model = make_pipeline(ct, RandomForestClassifier(100, max_depth=10, random_state=0, n_jobs=2))
        t0 = time.perf_counter()
        model.fit(df[nums + ["city", "plan"]], df["label"])
        print(f"trained shop in {time.perf_counter() - t0:.1f} s")
        pg_predict.deploy(c, "shop", model)
        t0 = time.perf_counter()
        (result,), = c.execute("SELECT create_cascade('shop', 'SELECT * FROM shop WHERE id > 100000 AND id <= 300000', "
                               "0.001)").fetchall()
        print(f"create_cascade in {time.perf_counter() - t0:.1f} s: {json.dumps(result)}")


def shop_sql(args):
    timed_sum(args, "shop", "shop")


def shop_agree(args):
    labels_agree(args, "shop", "shop", 300001)


def stop(args):
    import subprocess
    info = json.load(open(os.path.join(args.dir, "cluster.json")))
    subprocess.run(["su", "postgres", "-c", f"/usr/lib/postgresql/15/bin/pg_ctl -D {info['dir']}/data -m fast stop"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["setup", "sql", "agree", "stop", "text-setup", "text-sql", "text-agree",
                                        "topk-sql", "topk-agree", "shop-setup", "shop-sql", "shop-agree"])
    ap.add_argument("--filter", default="off", choices=["on", "off"])
    ap.add_argument("--model", default="m500", choices=sorted(TOPK))
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--cascades", default="off", choices=["on", "off"])
    args = ap.parse_args()
    if args.dir is None:
        args.dir = "/tmp/pgp-cascade-text" if args.command.startswith("text") else "/tmp/pgp-cascade"
    {"setup": setup, "sql": sql, "agree": agree, "stop": stop, "text-setup": text_setup, "text-sql": text_sql,
     "text-agree": text_agree, "topk-sql": topk_sql, "topk-agree": topk_agree, "shop-setup": shop_setup,
     "shop-sql": shop_sql, "shop-agree": shop_agree}[args.command.replace("_", "-")](args)


if __name__ == "__main__":
    main()
