"""Citus scale-out: one query over a table distributed over two workers against the same query
over the same rows held in one table on one server, side by side, in one run.

    /usr/bin/python3 bench/citus.py                 # 1M rows, 500 trees of depth 8, 5 runs each
    /usr/bin/python3 bench/citus.py --rows 200000 --runs 3 --pool 4

Three throwaway clusters (regress/pgcluster.py) with shared_preload_libraries = 'citus,pg_predict':
a coordinator, which also holds the local table (the one-server baseline), and two workers.
The model is an XGBoost binary:logistic model trained with /usr/bin/python3's xgboost on 20k of
the rows. Both queries score every row (`sum(predict_proba(...)[2])`, `count(*) FILTER`), so
each is the whole query's time; the runs alternate between the two. On a machine with as many
cores as workers, the ratio shows whether the workers score concurrently (about 0.5 when they
do: each scores half the rows). Prints a Markdown table and one JSON line.
"""

import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
from pgcluster import Cluster  # noqa: E402

FEATURES = [f"f{i}" for i in range(1, 11)]


def settings(shard_count, pool):
    return {"shared_preload_libraries": "'citus,pg_predict'", "max_prepared_transactions": "40",
            "max_connections": "60", "citus.shard_count": str(shard_count),
            "shared_buffers": "512MB", "max_worker_processes": "16",
            # As docs/scaling-out.md recommends: at most as many shard queries at once per worker
            # as it has cores, over connections Citus keeps, whose backends keep the loaded model
            # (a new backend pays for initialising libtorch and loading the program).
            "citus.max_adaptive_executor_pool_size": str(pool),
            "citus.max_cached_conns_per_worker": str(pool)}


def train_model(conn, rows, trees, depth):
    import numpy as np
    import xgboost as xgb
    data = conn.execute(f"SELECT {', '.join(FEATURES)}, label FROM scored ORDER BY id LIMIT {rows}").fetchall()
    array = np.array(data, dtype=np.float32)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": depth, "eta": 0.1, "tree_method": "hist",
                         "nthread": 1}, xgb.DMatrix(array[:, :-1], label=array[:, -1], feature_names=FEATURES),
                        num_boost_round=trees)
    return booster.save_raw("json").decode()


def timed(conn, sql):
    start = time.perf_counter()
    cursor = conn.execute(sql)
    result = cursor.fetchone() if cursor.description is not None else None
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE of both queries (every task)")
    parser.add_argument("--pool", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="shard queries at once per worker (default: this machine's cores / 2)")
    args = parser.parse_args()

    clusters = [Cluster(settings=settings(args.shards, args.pool), prefix=f"pgp-citus-{name}-") for name in ("c", "w1", "w2")]
    try:
        for cluster in clusters:
            cluster.start()
            with cluster.connect() as conn:
                conn.execute(f"ALTER SYSTEM SET citus.local_hostname = '{cluster.dir}'")
                conn.execute("SELECT pg_reload_conf()")
                conn.execute("CREATE EXTENSION citus")
        coordinator, workers = clusters[0], clusters[1:]
        for worker in workers:
            # Shards are the workers' parallelism: a Gather per shard query would start a new
            # process per task, which pays for loading the model again.
            with worker.connect() as conn:
                conn.execute("ALTER SYSTEM SET max_parallel_workers_per_gather = 0")
                conn.execute("SELECT pg_reload_conf()")
        with coordinator.connect() as conn:
            conn.execute("SELECT citus_set_coordinator_host(%s, %s)", (coordinator.dir, coordinator.port))
            for worker in workers:
                conn.execute("SELECT citus_add_node(%s, %s)", (worker.dir, worker.port))
            conn.execute("SELECT citus_set_node_property(%s, %s, 'shouldhaveshards', false)",
                         (coordinator.dir, coordinator.port))
            conn.execute("CREATE EXTENSION pg_predict")
            columns = ", ".join(f"(random() * 10)::real AS {f}" for f in FEATURES)
            conn.execute("SELECT setseed(0.42)")
            conn.execute(f"CREATE TABLE scored AS SELECT g AS id, {columns} FROM generate_series(1, {args.rows}) g")
            conn.execute("ALTER TABLE scored ADD COLUMN label int")
            conn.execute("UPDATE scored SET label = (f1 + f2 * f3 / 10 - f4 + random() * 4 > 8)::int")
            conn.execute("VACUUM (FREEZE, ANALYZE) scored")
            conn.execute("CREATE TABLE dist (LIKE scored)")
            conn.execute("SELECT create_distributed_table('dist', 'id')")
            conn.execute("INSERT INTO dist SELECT * FROM scored")
            conn.execute("VACUUM (FREEZE, ANALYZE) dist")
            model = train_model(conn, 20000, args.trees, args.depth)
            conn.execute("SELECT create_model('bench', %s::jsonb, 'xgboost')", (model,))
            query = ("SELECT round(sum((predict_proba('bench', t))[2])::numeric, 3), "
                     "count(*) FILTER (WHERE predict('bench', t) = 1) FROM {} t")
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + query.format("dist")).fetchall())
            assert "PredictBatch" in plan and "Task" in plan, plan
            # Four ways to run it. "one core": no parallel workers and no overlap (pg_predict
            # scores the batch while the scan fills the next one in a second thread), on the
            # coordinator and, through SET LOCAL with citus.propagate_set_commands = 'local', in
            # the shard queries: against the local one-core run it shows whether the two workers
            # score at the same time (about 0.5 when they do).
            one_core = ("SET LOCAL max_parallel_workers_per_gather = 0", "SET LOCAL pg_predict.overlap = off")
            variants = (("local", "scored", ()), ("local_one_core", "scored", one_core),
                        ("distributed", "dist", ()), ("distributed_one_core", "dist", one_core))
            conn.execute("SET citus.propagate_set_commands = 'local'")
            times = {name: [] for name, _, _ in variants}
            results = {}
            timed(conn, query.format("scored"))  # warm: the program loaded, the pages cached
            timed(conn, query.format("dist"))
            for _ in range(args.runs):
                for name, table, sets in variants:
                    with conn.transaction():
                        for command in sets:
                            conn.execute(command)
                        seconds, result = timed(conn, query.format(table))
                    times[name].append(seconds)
                    results[name] = tuple(str(v) for v in result)
            assert len(set(results.values())) == 1, results
            # The control: what this machine gives two processes at once. The local table's two
            # halves, one core each, in two sessions at the same time; the distributed one-core
            # run matches it when the two workers score concurrently.
            halves = [query.format("scored") + f" WHERE id {op} {args.rows // 2}" for op in ("<=", ">")]
            times["local_two_halves_at_once"] = []
            with coordinator.connect() as second:
                for _ in range(args.runs):
                    for session in (conn, second):
                        for command in one_core:
                            session.execute(command.replace("SET LOCAL", "SET"))
                    start = time.perf_counter()
                    with concurrent.futures.ThreadPoolExecutor(2) as pool:
                        list(pool.map(lambda pair: pair[0].execute(pair[1]).fetchone(), zip((conn, second), halves)))
                    times["local_two_halves_at_once"].append(time.perf_counter() - start)
            conn.execute("RESET ALL")
            # Writing the scores back: INSERT ... SELECT into a co-located table, pushed down (each
            # worker scores and inserts its shards), against the same into a local table.
            conn.execute("CREATE TABLE scores_local (id int, score float8)")
            conn.execute("CREATE TABLE scores_dist (id int, score float8)")
            conn.execute("SELECT create_distributed_table('scores_dist', 'id', colocate_with => 'dist')")
            insert = "INSERT INTO {} SELECT id, (predict_proba('bench', t))[2] FROM {} t"
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN (COSTS OFF) " + insert.format("scores_dist", "dist")).fetchall())
            assert "Insert on scores_dist_" in plan and "PredictBatch" in plan, plan
            for name in ("insert_local", "insert_distributed"):
                times[name] = []
            for _ in range(args.runs):
                for name, target, source in (("insert_local", "scores_local", "scored"),
                                             ("insert_distributed", "scores_dist", "dist")):
                    conn.execute(f"TRUNCATE {target}")
                    seconds, _ = timed(conn, insert.format(target, source))
                    times[name].append(seconds)
            assert conn.execute("SELECT count(*) FROM scores_dist").fetchone()[0] == args.rows
            if args.explain:
                conn.execute("SET citus.explain_all_tasks = on")
                for table in ("scored", "dist"):
                    print("\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, COSTS OFF) " + query.format(table)).fetchall()))
            local_plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + query.format("scored")).fetchall())
        median = {name: statistics.median(values) for name, values in times.items()}
        labels = {"local": "one server, local table (%s, overlap)" % ("parallel query" if "Gather" in local_plan else "serial"),
                  "local_one_core": "one server, local table, one core",
                  "distributed": f"Citus, two workers, {args.shards} shards, {args.pool} connection(s) per worker",
                  "distributed_one_core": "Citus, the same, one core per shard query",
                  "local_two_halves_at_once": "control: the local table's two halves in two sessions at once, one core each",
                  "insert_local": "write-back: INSERT ... SELECT into a local table",
                  "insert_distributed": "write-back: INSERT ... SELECT into a co-located distributed table (pushed down)"}
        print(f"| query over {args.rows:,} rows ({args.trees} trees, depth {args.depth}), {os.cpu_count()} cores | median of {args.runs} | runs |")
        print("|---|---|---|")
        for name in times:
            print(f"| {labels[name]} | {median[name]:.3f} s | {', '.join(f'{t:.3f}' for t in times[name])} |")
        ratio = median["distributed"] / median["local"]
        ratio_one_core = median["distributed_one_core"] / median["local_one_core"]
        print(f"| ratio distributed / local | {ratio:.2f} | |")
        print(f"| ratio distributed / local, one core each | {ratio_one_core:.2f} | |")
        control = median["local_two_halves_at_once"] / median["local_one_core"]
        print(f"| ratio control (two halves at once) / local, one core | {control:.2f} | |")
        write_back = median["insert_distributed"] / median["insert_local"]
        print(f"| ratio write-back distributed / local | {write_back:.2f} | |")
        print(json.dumps({"rows": args.rows, "cpus": os.cpu_count(), "seconds": times, "same_result": True,
                          "ratio": ratio, "ratio_one_core": ratio_one_core, "ratio_control": control,
                          "ratio_write_back": write_back}))
    finally:
        for cluster in reversed(clusters):
            if cluster.started:
                cluster.stop()


if __name__ == "__main__":
    main()
