#!/usr/bin/python3
"""Text pipelines against scikit-learn (issue 47): TF-IDF (word 1-2-grams, and char_wb 2-4-grams)
+ LogisticRegression over documents of a few hundred bytes.

    /usr/bin/python3 bench/text.py setup [--rows 200000] [--dir /tmp/pgp-text]
    /usr/bin/python3 bench/text.py sql MODEL [--workers 0|1] [--dir ...]     # the whole query
    /usr/bin/python3 bench/text.py sklearn MODEL [--transform] [--dir ...]   # predict_proba (transform)
    /usr/bin/python3 bench/text.py stop [--dir ...]

setup generates the documents (seeded: Zipf-distributed words of a 30k-word vocabulary, 40-70
words each), fits both models on the first 20k, keeps a PostgreSQL cluster with the documents in
an UNLOGGED table and the models deployed, and pickles the documents and pipelines. Each
measuring command prints its own seconds for the work alone (the query; predict_proba on the
documents already in a Python list in memory, BLAS at one thread) on its last line, so the
commands go under farm-bench for the paired ratio as whole processes too:

    farm-bench -n 3 --timeout 900 --vs '/usr/bin/python3 bench/text.py sklearn word' -- \
        /usr/bin/python3 bench/text.py sql word
"""

import argparse
import json
import os
import pickle
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

MODELS = {"word": {"analyzer": "word", "ngram_range": (1, 2)},
          "charwb": {"analyzer": "char_wb", "ngram_range": (2, 4)}}


def documents(n, seed=47):
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzéü"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(30000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    cum, total = [], 0.0
    for w in weights:
        total += w
        cum.append(total)
    import bisect
    docs, labels = [], []
    for _ in range(n):
        k = rng.randint(40, 70)
        words = [vocab[bisect.bisect_left(cum, rng.random() * total)] for _ in range(k)]
        docs.append(" ".join(words))
        labels.append(int(sum(len(w) for w in words[:5]) % 2))
    return docs, labels


def setup(args):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    import pg_predict
    from pgcluster import Cluster
    os.makedirs(args.dir, exist_ok=True)
    docs, labels = documents(args.rows)
    models = {}
    for name, kw in MODELS.items():
        models[name] = make_pipeline(TfidfVectorizer(**kw), LogisticRegression(max_iter=500)).fit(docs[:20000],
                                                                                                   labels[:20000])
    with open(os.path.join(args.dir, "data.pkl"), "wb") as f:
        pickle.dump({"docs": docs, "models": models}, f)
    pg = Cluster(keep=True, settings={"max_worker_processes": 8, "max_parallel_workers": 4,
                                      "shared_buffers": "1GB", "jit": "off"})
    pg.start()
    with pg.connect() as c:
        c.execute("CREATE EXTENSION pg_predict")
        c.execute("CREATE UNLOGGED TABLE docs (id int, body text)")
        with c.cursor() as cur, cur.copy("COPY docs (id, body) FROM STDIN") as cp:
            for i, d in enumerate(docs):
                cp.write_row([i, d])
        c.execute("VACUUM (FREEZE, ANALYZE) docs")
        for name, m in models.items():
            pg_predict.deploy(c, name, m, feature_names=["body"])
        vocab = {n: len(m.steps[0][1].vocabulary_) for n, m in models.items()}
    with open(os.path.join(args.dir, "cluster.json"), "w") as f:
        json.dump({"conninfo": pg.conninfo(), "dir": pg.dir, "rows": args.rows, "vocabulary": vocab}, f)
    print(f"{args.rows} documents, vocabularies {vocab}, cluster in {pg.dir}")


def sql(args):
    import psycopg
    info = json.load(open(os.path.join(args.dir, "cluster.json")))
    with psycopg.connect(info["conninfo"], autocommit=True) as c:
        for k, v in {"max_parallel_workers_per_gather": args.workers, "parallel_setup_cost": 0,
                     "parallel_tuple_cost": 0, "min_parallel_table_scan_size": 0}.items():
            c.execute(f"SET {k} = {v}")
        # A backend builds a model's vocabulary once (its first query): timed apart.
        t0 = time.perf_counter()
        c.execute(f"SELECT (predict_proba('{args.model}', t))[2] FROM (SELECT * FROM docs LIMIT 1) t").fetchall()
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        c.execute(f"SELECT sum((predict_proba('{args.model}', t))[2]) FROM docs t").fetchall()
        print(f"first query of the connection {first:.3f} s; the whole query:")
        print(f"{time.perf_counter() - t0:.3f}")


def sklearn(args):
    from threadpoolctl import threadpool_limits
    with open(os.path.join(args.dir, "data.pkl"), "rb") as f:
        data = pickle.load(f)
    docs, model = data["docs"], data["models"][args.model]
    with threadpool_limits(1):
        t0 = time.perf_counter()
        if args.transform:
            model.steps[0][1].transform(docs)
        else:
            model.predict_proba(docs)
        print(f"{time.perf_counter() - t0:.3f}")


def stop(args):
    import subprocess
    info = json.load(open(os.path.join(args.dir, "cluster.json")))
    subprocess.run(["su", "postgres", "-c", f"/usr/lib/postgresql/15/bin/pg_ctl -D {info['dir']}/data -m fast stop"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["setup", "sql", "sklearn", "stop"])
    ap.add_argument("model", nargs="?", default="word", choices=list(MODELS))
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--dir", default="/tmp/pgp-text")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--transform", action="store_true")
    args = ap.parse_args()
    {"setup": setup, "sql": sql, "sklearn": sklearn, "stop": stop}[args.command](args)


if __name__ == "__main__":
    main()
