-- Query shapes that must not change a score (issue 46): every case the differential oracle
-- (regress/conformance/test_query_shapes.py) or a user found, fixed here for good. Each query
-- is compared with the same query per row (enable_batching = off) and with the table row that
-- holds the same values; a mismatch count of 0 is the only right answer.
-- 'qs_churn' is regress/fixtures/binary_tiny.json: features tenure, monthly_charges, plan_id.
SET pg_predict.cpu_kernel = portable;
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set binary_file :fixtures 'binary_tiny.json'
\set city_file :fixtures 'sklearn_city.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'city_file') AS city_model \gset
SELECT create_model('qs_churn', :'binary_model'::jsonb) IS NOT NULL AS created;

CREATE TABLE qs_accounts (id int PRIMARY KEY, age int, income numeric, plan_id smallint);
INSERT INTO qs_accounts SELECT i, i % 40, (i * 37) % 100, i % 3 FROM generate_series(1, 3000) i;
-- The same rows with the constants written into the table: what every shape below must score.
CREATE TABLE qs_expected AS
SELECT id, 10 AS tenure, income AS monthly_charges, plan_id, 70.5::float8 AS charges_const,
       NULL::int AS tenure_null
  FROM qs_accounts;
ALTER TABLE qs_expected ADD PRIMARY KEY (id);
ANALYZE qs_accounts, qs_expected;

-- The trial's query: a constant column of a subquery was read as NULL by the batched path.
EXPLAIN (costs off, verbose)
SELECT id, predict_proba('qs_churn', q)
  FROM (SELECT id, income AS monthly_charges, plan_id, 10 AS tenure FROM qs_accounts) q;
CREATE FUNCTION qs_mismatches(query text) RETURNS TABLE (rows bigint, batched_vs_per_row bigint, vs_table bigint)
LANGUAGE plpgsql AS $$
BEGIN
    SET LOCAL pg_predict.enable_batching = off;
    EXECUTE 'CREATE TEMP TABLE qs_per_row ON COMMIT DROP AS ' || query;
    SET LOCAL pg_predict.enable_batching = on;
    EXECUTE 'CREATE TEMP TABLE qs_batched ON COMMIT DROP AS ' || query;
    RETURN QUERY
    SELECT count(*),
           count(*) FILTER (WHERE b.score IS DISTINCT FROM p.score),
           count(*) FILTER (WHERE b.score IS DISTINCT FROM e.score)
      FROM qs_batched b
      JOIN qs_per_row p USING (id)
      JOIN (SELECT id, predict_proba('qs_churn', x) AS score FROM qs_expected x) e USING (id);
    DROP TABLE qs_per_row, qs_batched;
END $$;
-- (each call below runs in its own transaction: the temporary tables go at its end)
SELECT * FROM qs_mismatches($$
  SELECT id, predict_proba('qs_churn', q) AS score
    FROM (SELECT id, income AS monthly_charges, plan_id, 10 AS tenure FROM qs_accounts) q $$);
-- A view with a constant column.
CREATE VIEW qs_view AS SELECT id, 10 AS tenure, income AS monthly_charges, plan_id, 'pro'::text AS plan
  FROM qs_accounts;
SELECT * FROM qs_mismatches($$ SELECT id, predict_proba('qs_churn', v) AS score FROM qs_view v $$);
-- A NULL constant is a missing value, not an unread feature: the table's NULL column.
CREATE TABLE qs_expected_null AS SELECT id, NULL::int AS tenure, income AS monthly_charges, plan_id FROM qs_accounts;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE s.score IS DISTINCT FROM e.score) AS vs_table
  FROM (SELECT id, predict_proba('qs_churn', q) AS score
          FROM (SELECT id, NULL::int AS tenure, income AS monthly_charges, plan_id FROM qs_accounts) q) s
  JOIN (SELECT id, predict_proba('qs_churn', x) AS score FROM qs_expected_null x) e USING (id);
-- A computed constant (folded by the planner), a float8 constant in the place of a column.
SELECT * FROM qs_mismatches($$
  SELECT id, predict_proba('qs_churn', q) AS score
    FROM (SELECT id, 5 + 5 AS tenure, income AS monthly_charges, plan_id FROM qs_accounts) q $$);
-- A ROW(...) constructor cast to a named type, with a constant field.
CREATE TYPE qs_features AS (tenure int, monthly_charges numeric, plan_id smallint);
SELECT * FROM qs_mismatches($$
  SELECT id, predict_proba('qs_churn', ROW(10, income, plan_id)::qs_features) AS score FROM qs_accounts $$);
-- An explicit array with a constant element.
SELECT * FROM qs_mismatches($$
  SELECT id, predict_proba('qs_churn', ARRAY[10, income, plan_id]::float8[]) AS score FROM qs_accounts $$);
SELECT * FROM qs_mismatches($$
  SELECT id, predict_proba('qs_churn', ARRAY[10::real, income::real, plan_id::real]) AS score FROM qs_accounts $$);
-- OFFSET 0 keeps the subquery (it was right before: the row is formed and read by name).
SELECT * FROM qs_mismatches($$
  SELECT id, predict_proba('qs_churn', q) AS score
    FROM (SELECT id, income AS monthly_charges, plan_id, 10 AS tenure FROM qs_accounts OFFSET 0) q $$);

-- char(n) keeps its blank padding in the row; the model sees the value as the char(n) -> text
-- cast gives it, without trailing blanks ('berlin    ' is berlin), batched and per row.
SELECT create_model('qs_city', :'city_model'::jsonb) IS NOT NULL AS created;
SELECT create_model('qs_city_ignore',
                    jsonb_set(:'city_model'::jsonb, '{steps,0,transformers,0,steps,0,handle_unknown}', '"ignore"'))
       IS NOT NULL AS created;
CREATE TABLE qs_people (id int PRIMARY KEY, city char(10), age int);
INSERT INTO qs_people VALUES (1, 'berlin', 25), (2, 'paris', 40), (3, NULL, 30), (4, ' paris', 30);
CREATE TABLE qs_people_text AS SELECT id, city::text AS city, age FROM qs_people;
SELECT p.id, p.city, p.city::text = t.city AS same_text,
       predict_proba('qs_city_ignore', p) = predict_proba('qs_city_ignore', t) AS same_batched
  FROM qs_people p JOIN qs_people_text t USING (id) ORDER BY id;
SET pg_predict.enable_batching = off;
SELECT p.id, predict_proba('qs_city_ignore', p) = predict_proba('qs_city_ignore', t) AS same_per_row
  FROM qs_people p JOIN qs_people_text t USING (id) ORDER BY id;
SELECT id, predict('qs_city', p) FROM qs_people p WHERE id <= 2 ORDER BY id;
RESET pg_predict.enable_batching;
SELECT id, predict('qs_city', p) FROM qs_people p WHERE id <= 2 ORDER BY id;
-- ' paris' keeps its leading blank: unknown to an encoder with handle_unknown='error'.
SELECT id, predict('qs_city', p) FROM qs_people p WHERE id = 4;
-- A domain over char(n).
CREATE DOMAIN qs_city_code AS char(12);
CREATE TABLE qs_people_domain AS SELECT id, city::qs_city_code AS city, age FROM qs_people;
SELECT count(*) FILTER (WHERE predict_proba('qs_city_ignore', d) IS DISTINCT FROM predict_proba('qs_city_ignore', t))
       AS mismatches
  FROM qs_people_domain d JOIN qs_people_text t USING (id);

-- The oracle caught GEMM (a Hummingbird tensor strategy) changing a score's last bits with the
-- batch size: the sum over trees ran across a transposed view, in an order that depended on the
-- rows in the batch. Each strategy must give a row the same bits in a batch of any size and per
-- row. regress/fixtures/kernel_regression.json: 24 trees over 40 features.
\set regression_file :fixtures 'kernel_regression.json'
SELECT pg_read_file(:'regression_file') AS regression_model \gset
SELECT create_model('qs_trees', :'regression_model'::jsonb) IS NOT NULL AS created;
CREATE TABLE qs_wide AS
SELECT i AS id,
       ARRAY(SELECT CASE WHEN (i * (j + 3)) % 17 = 0 THEN NULL ELSE sin(i * (j + 1) * 0.37 + j) END::real
               FROM generate_series(0, 39) j ORDER BY j) AS x
  FROM generate_series(1, 600) i;
CREATE FUNCTION qs_strategy_mismatches(strategy text) RETURNS TABLE (batch_size int, mismatches bigint)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('pg_predict.strategy', strategy, true);
    PERFORM set_config('pg_predict.enable_batching', 'off', true);
    CREATE TEMP TABLE qs_one ON COMMIT DROP AS SELECT id, predict('qs_trees', x) AS y FROM qs_wide;
    PERFORM set_config('pg_predict.enable_batching', 'on', true);
    FOREACH batch_size IN ARRAY ARRAY[1, 3, 64, 4096] LOOP
        PERFORM set_config('pg_predict.batch_size', batch_size::text, true);
        RETURN QUERY SELECT batch_size, count(*) FILTER (WHERE b.y IS DISTINCT FROM o.y)
          FROM (SELECT id, predict('qs_trees', x) AS y FROM qs_wide) b JOIN qs_one o USING (id);
    END LOOP;
    DROP TABLE qs_one;
END $$;
SELECT * FROM qs_strategy_mismatches('gemm');
SELECT * FROM qs_strategy_mismatches('tree_traversal');
SELECT * FROM qs_strategy_mismatches('perfect_tree_traversal');
SELECT * FROM qs_strategy_mismatches('native');

SELECT drop_model('qs_churn'), drop_model('qs_city'), drop_model('qs_city_ignore'), drop_model('qs_trees');
