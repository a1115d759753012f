-- The PredictBatch node: where the planner puts it, and that it gives exactly what the per-row
-- path gives. The model 'churn' is regress/fixtures/binary_tiny.json (see predict.sql).
-- EXPLAIN prints the native kernel's CPU path; the portable one exists on every machine.
SET pg_predict.cpu_kernel = portable;
-- Preloaded (regression.conf): every statement batches, unless batching is switched off.
SELECT batching_available();
SET pg_predict.enable_batching = off;
SELECT batching_available();
RESET pg_predict.enable_batching;
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set binary_file :fixtures 'binary_tiny.json'
\set multiclass_file :fixtures 'multiclass_tiny.json'
\set regression_file :fixtures 'regression_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'multiclass_file') AS multiclass_model \gset
SELECT pg_read_file(:'regression_file') AS regression_model \gset
SELECT create_model('churn', :'binary_model'::jsonb, options => '{"replace": true}');
SELECT create_model('segment', :'multiclass_model'::jsonb, options => '{"replace": true}');

CREATE TABLE customers (id int PRIMARY KEY, tenure int, monthly_charges numeric, plan_id smallint,
                        note text, wide1 float8, wide2 float8);
INSERT INTO customers
SELECT i, CASE WHEN i % 17 = 0 THEN NULL ELSE i % 30 END, (i * 7) % 100, i % 3, 'n' || i, i, -i
  FROM generate_series(1, 20000) i;
CREATE TABLE plans (plan_id smallint PRIMARY KEY, name text);
INSERT INTO plans VALUES (0, 'basic'), (1, 'plus'), (2, 'pro');
ANALYZE customers, plans;

-- The reference: every answer below is compared with the per-row path.
SET pg_predict.enable_batching = off;
CREATE TEMP TABLE expected AS
SELECT id, predict('churn', c) AS label, predict_proba('churn', c) AS proba,
       predict('segment', c) AS segment
  FROM customers c;
CREATE INDEX ON expected (id);
ANALYZE expected;
RESET pg_predict.enable_batching;

-- A target list: the scan returns only the feature columns the model reads.
EXPLAIN (costs off, verbose)
SELECT id, predict('churn', c), predict_proba('churn', c) FROM customers c;
SELECT count(*) AS rows, count(*) FILTER (WHERE e.label IS DISTINCT FROM b.label
                                          OR e.proba IS DISTINCT FROM b.proba) AS mismatches
  FROM expected e JOIN (SELECT id, predict('churn', c) AS label, predict_proba('churn', c) AS proba
                          FROM customers c) b USING (id);

-- An aggregate: the node goes between the Agg and the scan; the whole row is not built.
EXPLAIN (costs off, verbose) SELECT sum(predict('churn', c)) FROM customers c;
SELECT sum(predict('churn', c)) = (SELECT sum(label) FROM expected) AS same_sum FROM customers c;

-- A filter, several calls and models in one node, the same call twice computed once.
EXPLAIN (costs off)
SELECT id, predict('churn', c), predict('churn', c) + 1, predict('segment', c)
  FROM customers c WHERE (predict_proba('churn', c))[2] > 0.5 AND id % 2 = 0;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE b.p1 IS DISTINCT FROM e.label OR b.p2 IS DISTINCT FROM e.label + 1
                        OR b.s IS DISTINCT FROM e.segment) AS mismatches
  FROM (SELECT id, predict('churn', c) p1, predict('churn', c) + 1 p2, predict('segment', c) s
          FROM customers c WHERE (predict_proba('churn', c))[2] > 0.5 AND id % 2 = 0) b
  JOIN expected e USING (id);
SELECT count(*) AS expected_rows FROM expected WHERE proba[2] > 0.5 AND id % 2 = 0;

-- LIMIT stops early: batches start small.
EXPLAIN (analyze, costs off, timing off, summary off)
SELECT id, predict('churn', c) FROM customers c LIMIT 5;

-- GROUP BY and ORDER BY a prediction, window functions.
EXPLAIN (costs off)
SELECT predict('segment', c) AS segment, count(*) FROM customers c GROUP BY 1 ORDER BY 1;
SELECT predict('segment', c) AS segment, count(*) FROM customers c GROUP BY 1 ORDER BY 1;
SELECT segment, count(*) FROM expected GROUP BY 1 ORDER BY 1;
SELECT id FROM customers c ORDER BY (predict_proba('churn', c))[2] DESC, id LIMIT 3;
SELECT id FROM expected ORDER BY proba[2] DESC, id LIMIT 3;
SELECT count(*) AS mismatches FROM (
  SELECT id, sum(predict('churn', c)) OVER (ORDER BY id ROWS 3 PRECEDING) AS w FROM customers c) b
  JOIN (SELECT id, sum(label) OVER (ORDER BY id ROWS 3 PRECEDING) AS w FROM expected) e USING (id)
 WHERE b.w IS DISTINCT FROM e.w;

-- Joins, subqueries, CTEs.
EXPLAIN (costs off)
SELECT p.name, sum(predict('churn', c)) FROM customers c JOIN plans p USING (plan_id) GROUP BY p.name;
SELECT p.name, sum(predict('churn', c)) FROM customers c JOIN plans p USING (plan_id) GROUP BY p.name ORDER BY 1;
SELECT p.name, sum(e.label) FROM expected e JOIN customers c USING (id) JOIN plans p USING (plan_id)
 GROUP BY p.name ORDER BY 1;
WITH scored AS MATERIALIZED (SELECT id, predict('churn', c) AS p FROM customers c)
SELECT count(*) FILTER (WHERE s.p IS DISTINCT FROM e.label) AS mismatches FROM scored s JOIN expected e USING (id);
SELECT count(*) AS mismatches FROM customers c
 WHERE predict('churn', c) IS DISTINCT FROM (SELECT label FROM expected e WHERE e.id = c.id);
-- a call on the nullable side of an outer join: a NULL row scores NULL
SELECT count(*) AS rows, count(predict('churn', c)) AS scored
  FROM plans p LEFT JOIN customers c ON c.plan_id = p.plan_id AND c.id < 0;

-- A whole row that is also used for something else stays whole.
SELECT count(*) AS groups, sum(s) = (SELECT sum(label) FROM expected) AS same_sum
  FROM (SELECT c, sum(predict('churn', c)) AS s FROM customers c GROUP BY c) g;

-- Partitions, even with another column order, are read by column name.
CREATE TABLE parted (id int, tenure int, monthly_charges numeric, plan_id smallint) PARTITION BY RANGE (id);
CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (MINVALUE) TO (10001);
CREATE TABLE parted_high (plan_id smallint, monthly_charges numeric, id int, tenure int);
ALTER TABLE parted ATTACH PARTITION parted_high FOR VALUES FROM (10001) TO (MAXVALUE);
INSERT INTO parted SELECT id, tenure, monthly_charges, plan_id FROM customers;
EXPLAIN (costs off) SELECT sum(predict('churn', p)) FROM parted p;
SELECT count(*) AS mismatches FROM parted p JOIN expected e USING (id)
 WHERE predict('churn', p) IS DISTINCT FROM e.label;
-- Above an Append, each partition's scan returns the feature columns in place of its whole row.
EXPLAIN (verbose, costs off) SELECT plan_id, sum(predict('churn', p)) FROM parted p GROUP BY plan_id;
SELECT bool_and(s = e) AS same_sums FROM
  (SELECT plan_id, sum(predict('churn', p)) AS s FROM parted p GROUP BY plan_id) b JOIN
  (SELECT plan_id, sum(label) AS e FROM customers JOIN expected USING (id) GROUP BY plan_id) x USING (plan_id);
DROP TABLE parted;

-- Arrays: an ARRAY[...] of columns is read like columns.
EXPLAIN (costs off)
SELECT sum(predict('churn', ARRAY[tenure, monthly_charges, plan_id]::real[])) FROM customers;
SELECT sum(predict('churn', ARRAY[tenure, monthly_charges, plan_id]::real[])) = sum(label) AS same
  FROM customers JOIN expected USING (id);

-- Writes: UPDATE ... SET, INSERT ... SELECT, CREATE TABLE AS, COPY (SELECT ...) TO.
ALTER TABLE customers ADD COLUMN score float8;
EXPLAIN (costs off) UPDATE customers c SET score = predict('churn', c);
UPDATE customers c SET score = predict('churn', c);
SELECT count(*) AS mismatches FROM customers c JOIN expected e USING (id) WHERE c.score IS DISTINCT FROM e.label;
CREATE TABLE scored AS SELECT id, predict('churn', c) AS p FROM customers c;
INSERT INTO scored SELECT -id, predict('churn', c) FROM customers c WHERE id <= 100;
SELECT count(*), sum(p) = (SELECT sum(label) FROM expected) + (SELECT sum(label) FROM expected WHERE id <= 100)
  AS same_sum FROM scored;
COPY (SELECT id, predict('churn', c) FROM customers c WHERE id <= 3 ORDER BY id) TO STDOUT;

-- Prepared statements with generic plans, PL/pgSQL.
SET plan_cache_mode = force_generic_plan;
PREPARE score(int) AS SELECT sum(predict('churn', c)) FROM customers c WHERE id <= $1;
EXPLAIN (costs off) EXECUTE score(100);
EXECUTE score(100);
SELECT sum(label) FROM expected WHERE id <= 100;
RESET plan_cache_mode;
CREATE FUNCTION churners(lim int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  SELECT count(*) INTO n FROM customers c WHERE id <= lim AND predict('churn', c) = 1;
  RETURN n;
END $$;
SELECT churners(1000), (SELECT count(*) FROM expected WHERE id <= 1000 AND label = 1);

-- A replace invalidates cached plans: the next execution plans and scores with the new model.
SELECT create_model('segment', :'regression_model'::jsonb, options => '{"replace": true}');
EXECUTE score(100);
PREPARE seg AS SELECT sum(predict('segment', c)) FROM customers c WHERE id <= 10;
EXECUTE seg;
SELECT create_model('segment', :'multiclass_model'::jsonb, options => '{"replace": true}');
EXECUTE seg;
DEALLOCATE seg;
DEALLOCATE score;

-- The per-row path sees a replace or a drop at once, in the same session, also where its call
-- site outlives the statement (PL/pgSQL keeps a simple expression for the transaction).
SET pg_predict.enable_batching = off;
CREATE FUNCTION segment_of(c customers) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
  RETURN predict('segment', c);
END $$;
BEGIN;
SELECT segment_of(c) AS multiclass, segment_of(c) = e.segment AS as_expected
  FROM customers c JOIN expected e USING (id) WHERE id IN (7, 8) ORDER BY id;
SELECT create_model('segment', :'regression_model'::jsonb, options => '{"replace": true}');
SELECT segment_of(c) AS regression, segment_of(c) = predict('segment', c) AS as_a_new_call_site
  FROM customers c WHERE id IN (7, 8) ORDER BY id;
SELECT drop_model('segment');
SELECT segment_of(c) FROM customers c WHERE id = 7;
ROLLBACK;
SELECT segment_of(c) = e.segment AS multiclass_again FROM customers c JOIN expected e USING (id) WHERE id = 7;
DROP FUNCTION segment_of;
RESET pg_predict.enable_batching;

-- Scrollable cursors.
BEGIN;
DECLARE cur SCROLL CURSOR FOR SELECT id, predict('churn', c) FROM customers c WHERE id <= 5 ORDER BY id;
FETCH 3 FROM cur;
FETCH BACKWARD 2 FROM cur;
FETCH LAST FROM cur;
DECLARE cur2 SCROLL CURSOR FOR SELECT id, predict('churn', c) FROM customers c;
FETCH 2 FROM cur2;
FETCH BACKWARD 1 FROM cur2;
COMMIT;

-- Parallel query: the node runs in each worker, under Gather.
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (costs off) SELECT sum(predict('churn', c)) FROM customers c;
SELECT sum(predict('churn', c)) = (SELECT sum(label) FROM expected) AS same_sum FROM customers c;
EXPLAIN (costs off) SELECT id, predict('churn', c) FROM customers c WHERE predict('churn', c) = 1;
SELECT count(*) = (SELECT count(*) FROM expected WHERE label = 1) AS same_count
  FROM customers c WHERE predict('churn', c) = 1;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- Batch sizes: any size gives the same answers.
SET pg_predict.batch_size = 1;
SELECT sum(predict('churn', c)) = (SELECT sum(label) FROM expected) AS same_sum FROM customers c;
SET pg_predict.batch_size = 7;
SELECT sum(predict('churn', c)) = (SELECT sum(label) FROM expected) AS same_sum FROM customers c;
RESET pg_predict.batch_size;
SET pg_predict.batch_size = 0;

-- A column the model never reads is not fetched, and a row need not have it: 'churn' does not
-- split on plan_id.
CREATE TABLE without_plan (tenure int, monthly_charges numeric);
INSERT INTO without_plan VALUES (5, 30), (20, 80);
SELECT tenure, predict('churn', t) FROM without_plan t ORDER BY tenure;
SET pg_predict.enable_batching = off;
SELECT tenure, predict('churn', t) FROM without_plan t ORDER BY tenure;
RESET pg_predict.enable_batching;
DROP TABLE without_plan;

-- Errors found while planning name the problem.
CREATE TABLE no_charges (tenure int, plan_id int);
EXPLAIN (costs off) SELECT predict('churn', t) FROM no_charges t;
EXPLAIN (costs off) SELECT predict('nope', t) FROM no_charges t;
EXPLAIN (costs off) SELECT predict('churn', ARRAY[tenure, plan_id]::real[]) FROM no_charges t;

-- JIT: the planner costs every predict call like a per-row function (COST 1000). Batched calls
-- are costed again, so a query whose cost was the model's is not JIT-compiled (LLVM would take
-- longer than the query); the per-row path keeps the planner's choice.
CREATE FUNCTION plans_jit(query text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE plan jsonb;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
  RETURN plan->0 ? 'JIT';
END $$;
SET max_parallel_workers_per_gather = 0;
SET jit_above_cost = 10000;
SELECT plans_jit('SELECT sum(predict(''churn'', c)) FROM customers c') AS batched,
       plans_jit('SELECT sum(predict(''churn'', c)) FROM customers c, generate_series(1, 50)') AS batched_big_join;
SET pg_predict.enable_batching = off;
SELECT plans_jit('SELECT sum(predict(''churn'', c)) FROM customers c') AS per_row;
RESET pg_predict.enable_batching;
RESET jit_above_cost;
RESET max_parallel_workers_per_gather;
DROP FUNCTION plans_jit;

-- Cancel and statement_timeout work while scoring.
SET statement_timeout = '500ms';
SELECT sum(predict('churn', ARRAY[a % 30, b % 100, a % 3]::real[]))
  FROM generate_series(1, 100000) a, generate_series(1, 100000) b;
RESET statement_timeout;

-- The whole row of a subquery or a view (pulled up into ROW(...) of its columns) is read as the
-- model's columns, like a table's row: same scores as per row, the columns the model reads only,
-- and a column the row lacks is a plan-time error naming it.
CREATE VIEW customer_features AS SELECT id, tenure, monthly_charges * 1 AS monthly_charges, plan_id FROM customers;
EXPLAIN (COSTS OFF) SELECT sum(predict('churn', q)) FROM (SELECT id, tenure, monthly_charges, plan_id FROM customers) q;
EXPLAIN (COSTS OFF) SELECT id, predict('churn', v) FROM customer_features v;
SELECT (SELECT sum(predict('churn', q)) FROM (SELECT tenure, monthly_charges, plan_id FROM customers) q)
     = (SELECT sum(predict('churn', c)) FROM customers c) AS subquery_equal,
       (SELECT sum(predict('churn', v)) FROM customer_features v)
     = (SELECT sum(predict('churn', c)) FROM customers c) AS view_equal;
SELECT sum(predict('churn', q)) FROM (SELECT tenure, plan_id FROM customers) q;
DROP VIEW customer_features;

-- A model name computed per row (a model per tenant): the node groups each batch's rows by the
-- model they name and scores every group at once. Same answers as the per-row path: models of
-- different widths (2 and 3 classes), a NULL name, a name from a joined table; an unknown name is
-- the error naming it; the least recently used models are released beyond pg_predict.cache_size.
CREATE TEMP TABLE tenant_of AS
SELECT id, CASE id % 5 WHEN 0 THEN NULL WHEN 1 THEN 'segment' ELSE 'churn' END AS model FROM customers;
CREATE TABLE plan_models (plan_id smallint PRIMARY KEY, model text);
INSERT INTO plan_models VALUES (0, 'churn'), (1, 'segment'), (2, NULL);
SET pg_predict.enable_batching = off;
CREATE TEMP TABLE expected_per_name AS
SELECT id, predict(m.model, c) AS label, predict_proba(m.model, c) AS proba,
       predict_label(m.model, c) AS text_label, predict_contributions(m.model, c) AS contributions
  FROM customers c JOIN tenant_of m USING (id);
RESET pg_predict.enable_batching;
EXPLAIN (COSTS OFF, VERBOSE)
SELECT id, predict(CASE id % 5 WHEN 0 THEN NULL WHEN 1 THEN 'segment' ELSE 'churn' END, c) FROM customers c;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT sum(predict(CASE id % 5 WHEN 0 THEN NULL WHEN 1 THEN 'segment' ELSE 'churn' END, c)) FROM customers c;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE b.label IS DISTINCT FROM e.label OR b.proba IS DISTINCT FROM e.proba
                        OR b.text_label IS DISTINCT FROM e.text_label
                        OR b.contributions IS DISTINCT FROM e.contributions) AS mismatches,
       count(*) FILTER (WHERE b.label IS NULL) AS null_names
  FROM (SELECT id, predict(m.model, c) AS label, predict_proba(m.model, c) AS proba,
               predict_label(m.model, c) AS text_label, predict_contributions(m.model, c) AS contributions
          FROM customers c JOIN tenant_of m USING (id)) b
  JOIN expected_per_name e USING (id);
EXPLAIN (COSTS OFF)
SELECT sum(predict(pm.model, c)) FROM customers c JOIN plan_models pm USING (plan_id);
SET pg_predict.enable_batching = off;
SELECT sum(predict(pm.model, c)) AS join_per_row FROM customers c JOIN plan_models pm USING (plan_id) \gset
RESET pg_predict.enable_batching;
SELECT sum(predict(pm.model, c)) = :join_per_row AS join_name_equal
  FROM customers c JOIN plan_models pm USING (plan_id);
SELECT sum(predict(CASE WHEN id = 777 THEN 'no_such_model' ELSE 'churn' END, c)) FROM customers c;
-- No room for two programs: each model is released when the other is bound, and all rows score.
SET pg_predict.cache_size = 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT sum(predict(m.model, c)) FROM customers c JOIN tenant_of m USING (id);
SELECT count(*) FILTER (WHERE b.label IS DISTINCT FROM e.label) AS mismatches_tiny_cache
  FROM (SELECT id, predict(m.model, c) AS label FROM customers c JOIN tenant_of m USING (id)) b
  JOIN expected_per_name e USING (id);
RESET pg_predict.cache_size;
DROP TABLE plan_models;

-- A primary key lookup returns at most one row: its call stays with the per-row function (no
-- PredictBatch node to plan and start), and scores what a batched scan of that row scores. A
-- range, an IN list or a non-unique key is batched as before.
EXPLAIN (costs off) SELECT id, predict('churn', c) FROM customers c WHERE id = 3;
EXPLAIN (costs off) SELECT id, predict('churn', c) FROM customers c WHERE id IN (3, 4);
SELECT (SELECT predict_proba('churn', c) FROM customers c WHERE id = 3) =
       (SELECT predict_proba('churn', c) FROM customers c WHERE id BETWEEN 3 AND 3) AS lookup_equals_batched;
CREATE TABLE deferred_key (id int UNIQUE DEFERRABLE INITIALLY DEFERRED, tenure int, monthly_charges numeric,
                           plan_id smallint);
INSERT INTO deferred_key SELECT id, tenure, monthly_charges, plan_id FROM customers WHERE id <= 10;
SET enable_seqscan = off;
-- a deferrable unique index may hold two rows of one key until commit: batched
EXPLAIN (costs off) SELECT predict('churn', d) FROM deferred_key d WHERE id = 3;
RESET enable_seqscan;
DROP TABLE deferred_key;

DROP FUNCTION churners;
DROP TABLE customers, plans, scored, no_charges;
