-- Predicate-based model pruning (pg_predict.prune_models): the scan's WHERE clause on a feature
-- column specializes the model (tree nodes no allowed value reaches are removed; a column the
-- specialized model does not read is not fetched). Every result must equal the unpruned plan's
-- bit for bit: each query below is compared with prune_models = off on every row.
SET client_min_messages = warning;  -- the schedule made it already; alone, this makes it
CREATE EXTENSION IF NOT EXISTS pg_predict;
RESET client_min_messages;
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
-- tree 1: tenure < 10 ? +1 : -1 (missing left); tree 2: monthly_charges < 50 ? +0.5 : -0.5 (missing right)
SELECT create_model('prune_binary', :'binary_model'::jsonb) IS NOT NULL AS created;
-- A text column one-hot encoded before a decision tree (scikit-learn): the root splits on
-- plan = 'pro', then on tenure.
SELECT create_model('prune_plan', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "plan", "type": "text"}, {"name": "tenure", "type": "numeric"}],
  "task": "regression",
  "steps": [
    {"type": "ColumnTransformer", "transformers": [
       {"columns": [0], "steps": [{"type": "OneHotEncoder", "categories": [["basic", "plus", "pro"]],
                                   "handle_unknown": "ignore", "drop_idx": null}]},
       {"columns": [1], "steps": []}], "remainder": null},
    {"type": "DecisionTreeRegressor", "n_outputs": 1,
     "trees": [{"children_left": [1, 3, 5, -1, -1, -1, -1], "children_right": [2, 4, 6, -1, -1, -1, -1],
                "feature": [2, 3, 3, -2, -2, -2, -2], "threshold": [0.5, 12.5, 24.5, -2, -2, -2, -2],
                "value": [[[0]], [[0]], [[0]], [[1]], [[2]], [[10]], [[20]]]}]}]}'::jsonb) IS NOT NULL AS created;

CREATE TABLE prune_customers (id int, tenure int, monthly_charges float8, plan text, note varchar);
INSERT INTO prune_customers
SELECT i, CASE WHEN i % 11 = 0 THEN NULL ELSE i % 30 END,
       CASE WHEN i % 13 = 0 THEN NULL WHEN i % 17 = 0 THEN 'NaN'::float8 ELSE (i * 7) % 100 + (i % 3) * 0.25 END,
       CASE WHEN i % 9 = 0 THEN NULL ELSE (ARRAY['basic', 'plus', 'pro', 'team'])[1 + i % 4] END,
       CASE WHEN i % 2 = 0 THEN 'pro' ELSE 'basic' END
  FROM generate_series(1, 600) i;
ANALYZE prune_customers;
SET max_parallel_workers_per_gather = 0;  -- one plan shape for EXPLAIN
SET pg_predict.cpu_kernel = portable;   -- the same Kernel line on every machine

-- What EXPLAIN shows: the predicate, trees and nodes, and the column no longer read.
EXPLAIN (costs off) SELECT id, predict('prune_binary', c) FROM prune_customers c WHERE tenure >= 10;
EXPLAIN (costs off) SELECT id, predict('prune_plan', c) FROM prune_customers c WHERE plan = 'pro';
EXPLAIN (costs off) SELECT sum(predict('prune_binary', c)) FROM prune_customers c
 WHERE tenure BETWEEN 2 AND 8 AND monthly_charges < 50;
-- An IN list: the set of text values (one-hot of 'pro' is 0 for both), a range of numbers;
-- here the specialized model reads no column at all.
EXPLAIN (costs off) SELECT id, predict('prune_plan', c) FROM prune_customers c
 WHERE plan IN ('basic', 'plus') AND tenure IN (1, 5, 12);
-- Nothing decided (tenure >= 5 still splits at 10): the stored program, no Pruned line.
EXPLAIN (costs off) SELECT id, predict('prune_binary', c) FROM prune_customers c WHERE tenure >= 5;

-- Every row of each query equals the unpruned plan's (IS DISTINCT FROM: exact, NULLs included).
CREATE FUNCTION prune_check(query text) RETURNS TABLE (rows bigint, differ bigint, pruned bool)
LANGUAGE plpgsql AS $$
DECLARE plan_text text := '';
        line text;
BEGIN
  SET LOCAL pg_predict.prune_models = off;
  EXECUTE 'CREATE TEMP TABLE prune_off AS ' || query;
  SET LOCAL pg_predict.prune_models = on;
  EXECUTE 'CREATE TEMP TABLE prune_on AS ' || query;
  FOR line IN EXECUTE 'EXPLAIN (costs off) ' || query LOOP plan_text := plan_text || line; END LOOP;
  RETURN QUERY SELECT (SELECT count(*) FROM prune_on),
                      (SELECT count(*) FROM prune_on n FULL JOIN prune_off f USING (id)
                        WHERE n.score IS DISTINCT FROM f.score OR n.id IS NULL OR f.id IS NULL),
                      plan_text LIKE '%Pruned:%';
  DROP TABLE prune_off;
  DROP TABLE prune_on;
END $$;

SELECT q, r.* FROM (VALUES
  ('tenure = 10'), ('tenure < 10'), ('tenure <= 9'), ('tenure > 9'), ('tenure >= 10'), ('tenure < 10::bigint'),
  ('tenure BETWEEN 3 AND 7'), ('tenure IS NULL'), ('10 <= tenure'), ('tenure = 10::bigint'),
  ('monthly_charges < 50'), ('monthly_charges >= 50'), ('monthly_charges = 49.5'),
  ('monthly_charges > 49.999999999'), ('monthly_charges IS NULL'),
  ('monthly_charges >= 50 AND tenure < 10'),
  ('tenure < 10 OR tenure IS NULL'), ('tenure + 0 >= 10'), ('tenure <> 10'),
  ('tenure IN (12, 15)'), ('tenure IN (3, 15)')) AS t(q),
  LATERAL prune_check('SELECT id, predict(''prune_binary'', c) AS score FROM prune_customers c WHERE ' || q) r
ORDER BY q;

SELECT q, r.* FROM (VALUES
  ('plan = ''pro'''), ('plan = ''basic'''), ('plan = ''team'''), ('plan IN (''plus'')'),
  ('plan IS NULL'), ('plan = ''pro'' AND tenure > 20'), ('plan = ''pro'' AND plan = ''basic'''),
  ('plan IN (''pro'', ''plus'')'), ('plan IN (''basic'', ''plus'', NULL)'), ('plan IN (''plus'') AND plan IN (''pro'', ''plus'')'),
  ('plan = ''pro'' COLLATE "C"'), ('plan LIKE ''pro'''), ('plan NOT IN (''pro'')'),
  ('plan IN (''basic'', ''plus'') AND tenure IN (1, 5, 12)')) AS t(q),
  LATERAL prune_check('SELECT id, predict(''prune_plan'', c) AS score FROM prune_customers c WHERE ' || q) r
ORDER BY q;

-- Scores in an aggregate (the node between the Agg and the scan) and in a filter.
SELECT r.* FROM prune_check('SELECT 1 AS id, sum(predict(''prune_plan'', c)) AS score
                               FROM prune_customers c WHERE plan = ''plus''') r;
SELECT r.* FROM prune_check('SELECT id, predict(''prune_plan'', c) AS score FROM prune_customers c
                              WHERE plan = ''pro'' AND predict(''prune_plan'', c) > 5') r;

-- An index scan's condition holds for its rows too.
CREATE INDEX prune_customers_tenure ON prune_customers (tenure);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (costs off) SELECT id, predict('prune_binary', c) FROM prune_customers c WHERE tenure = 12;
SELECT r.* FROM prune_check('SELECT id, predict(''prune_binary'', c) AS score FROM prune_customers c WHERE tenure = 12') r;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- A partitioned table: the node over each partition's scan is pruned by that scan's filter,
-- and a node over the Append (an aggregate over all partitions) by what every partition's says.
CREATE TABLE prune_parted (id int, tenure int, monthly_charges float8, plan text) PARTITION BY RANGE (id);
CREATE TABLE prune_parted_1 PARTITION OF prune_parted FOR VALUES FROM (0) TO (300);
CREATE TABLE prune_parted_2 PARTITION OF prune_parted FOR VALUES FROM (300) TO (1000);
INSERT INTO prune_parted SELECT id, tenure, monthly_charges, plan FROM prune_customers;
ANALYZE prune_parted;
EXPLAIN (costs off) SELECT id, predict('prune_binary', p) FROM prune_parted p WHERE tenure >= 10;
SELECT r.* FROM prune_check('SELECT id, predict(''prune_binary'', p) AS score FROM prune_parted p WHERE tenure >= 10') r;
EXPLAIN (costs off) SELECT sum(predict('prune_binary', p)) FROM prune_parted p WHERE tenure >= 10;
SELECT r.* FROM prune_check('SELECT 1 AS id, sum(predict(''prune_binary'', p)) AS score FROM prune_parted p
                              WHERE tenure >= 10') r;
-- UNION ALL branches filtered differently: the node reads the union's row (no push-down), so
-- nothing is pruned.
EXPLAIN (costs off)
SELECT sum(predict('prune_binary', u)) FROM (SELECT * FROM prune_customers WHERE tenure >= 10 AND monthly_charges > 60
                                             UNION ALL
                                             SELECT * FROM prune_customers WHERE tenure >= 20) u;
SELECT r.* FROM prune_check('SELECT 1 AS id, sum(predict(''prune_binary'', u)) AS score
                               FROM (SELECT * FROM prune_customers WHERE tenure >= 10 AND monthly_charges > 60
                                     UNION ALL SELECT * FROM prune_customers WHERE tenure >= 20) u') r;
DROP TABLE prune_parted;

-- Not pruned: a clause above the node (an outer join's), and a parameter of a generic plan.
EXPLAIN (costs off)
SELECT a.id, predict('prune_binary', b) FROM prune_customers a
  LEFT JOIN prune_customers b ON a.id = b.id + 1 AND b.tenure >= 10;
SET plan_cache_mode = force_generic_plan;
PREPARE by_tenure(int) AS SELECT id, predict('prune_binary', c) FROM prune_customers c WHERE tenure >= $1;
EXPLAIN (costs off) EXECUTE by_tenure(10);
SET plan_cache_mode = force_custom_plan;
EXPLAIN (costs off) EXECUTE by_tenure(10);
-- A re-executed statement scores with the specialized program it compiled once; both runs
-- equal the unpruned query.
CREATE TEMP TABLE prepared_1 AS EXECUTE by_tenure(10);
CREATE TEMP TABLE prepared_2 AS EXECUTE by_tenure(10);
SET pg_predict.prune_models = off;
CREATE TEMP TABLE unpruned AS SELECT id, predict('prune_binary', c) FROM prune_customers c WHERE tenure >= 10;
RESET pg_predict.prune_models;
SELECT (SELECT count(*) FROM unpruned) AS rows,
       (SELECT count(*) FROM prepared_1 p FULL JOIN unpruned u USING (id) WHERE p.predict IS DISTINCT FROM u.predict) AS differ_1,
       (SELECT count(*) FROM prepared_2 p FULL JOIN unpruned u USING (id) WHERE p.predict IS DISTINCT FROM u.predict) AS differ_2;
DEALLOCATE by_tenure;
RESET plan_cache_mode;

-- The setting switches it off.
SET pg_predict.prune_models = off;
EXPLAIN (costs off) SELECT id, predict('prune_binary', c) FROM prune_customers c WHERE tenure >= 10;
RESET pg_predict.prune_models;
SHOW pg_predict.prune_models;

DROP FUNCTION prune_check(text);
DROP TABLE prune_customers;
SELECT drop_model('prune_binary');
SELECT drop_model('prune_plan');
