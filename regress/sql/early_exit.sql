-- The early exit (issue 15 §2): thresholds and top-K over a boosted model trained in SQL. Every
-- query is compared with the same query under pg_predict.early_exit = off (no differences
-- expected), EXPLAIN shows what is pushed, and EXPLAIN ANALYZE that rows stopped early.
SET client_min_messages = warning;
CREATE TABLE ee_rows AS
  SELECT i AS id, (random() * 4 - 2)::real AS a, (random() * 4 - 2)::real AS b,
         CASE WHEN i % 10 = 0 THEN NULL ELSE round((random() * 6)::numeric, 0)::real END AS c
    FROM (SELECT setseed(0.25)) s, generate_series(1, 3000) i;
ALTER TABLE ee_rows ADD COLUMN label boolean;
UPDATE ee_rows SET label = a + b * b - coalesce(c, 3) / 2 + random() > 1;
SELECT train('ee', 'SELECT a, b, c, label FROM ee_rows ORDER BY id', 'label', seed => 3, test_size => 0,
             hyperparams => '{"n_estimators": 80, "max_depth": 4, "nthread": 1}') IS NOT NULL AS trained;
SET pg_predict.batch_size = 256;

CREATE FUNCTION ee_differences(query text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  SET LOCAL pg_predict.early_exit = on;
  EXECUTE format('CREATE TEMP TABLE ee_on AS %s', query);
  SET LOCAL pg_predict.early_exit = off;
  EXECUTE format('CREATE TEMP TABLE ee_off AS %s', query);
  SELECT count(*) INTO n FROM ((TABLE ee_on EXCEPT ALL TABLE ee_off) UNION ALL (TABLE ee_off EXCEPT ALL TABLE ee_on)) d;
  DROP TABLE ee_on;
  DROP TABLE ee_off;
  RETURN n;
END $$;

-- What EXPLAIN ANALYZE says, as numbers a test can read.
CREATE FUNCTION ee_analyze(query text, what text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS off, TIMING off, SUMMARY off) ' || query LOOP
    IF line LIKE '%' || what || ':%' THEN RETURN trim(split_part(line, what || ':', 2)); END IF;
  END LOOP;
  RETURN NULL;
END $$;

-- thresholds: projected, counted (the node applies the comparison), reversed, between
SELECT ee_differences($$SELECT id, (predict_proba('ee', r))[2] AS p FROM ee_rows r WHERE (predict_proba('ee', r))[2] > 0.9$$) AS projected;
SELECT ee_differences($$SELECT count(*) FROM ee_rows r WHERE (predict_proba('ee', r))[2] >= 0.9$$) AS counted;
SELECT ee_differences($$SELECT id FROM ee_rows r WHERE 0.05 > (predict_proba('ee', r))[2]$$) AS reversed;
SELECT ee_differences($$SELECT id FROM ee_rows r WHERE (predict_proba('ee', r))[1] BETWEEN 0.2 AND 0.3$$) AS between_;
-- top-K, with OFFSET and WITH TIES
SELECT ee_differences($$SELECT id, predict_proba('ee', r) FROM ee_rows r ORDER BY (predict_proba('ee', r))[2] DESC, id LIMIT 20 OFFSET 5$$) AS top_desc;
SELECT ee_differences($$SELECT id FROM ee_rows r ORDER BY (predict_proba('ee', r))[2], id LIMIT 7$$) AS top_asc;
SELECT ee_differences($$SELECT id FROM ee_rows r ORDER BY (predict_proba('ee', r))[2] DESC FETCH FIRST 3 ROWS WITH TIES$$) AS with_ties;

EXPLAIN (COSTS off) SELECT count(*) FROM ee_rows r WHERE (predict_proba('ee', r))[2] > 0.9;
EXPLAIN (COSTS off) SELECT id FROM ee_rows r ORDER BY (predict_proba('ee', r))[2] DESC LIMIT 10;
-- A projected score keeps the comparison in the filter.
EXPLAIN (COSTS off) SELECT id, (predict_proba('ee', r))[1] FROM ee_rows r WHERE (predict_proba('ee', r))[2] > 0.9;

-- The screen ran and stopped rows; the setting turns it off.
SELECT ee_analyze($$SELECT count(*) FROM ee_rows r WHERE (predict_proba('ee', r))[2] > 0.95$$, 'Rows Stopped Early')::int > 0 AS stopped;
SELECT ee_analyze($$SELECT id FROM ee_rows r ORDER BY (predict_proba('ee', r))[2] DESC LIMIT 10$$, 'Rows Stopped Early')::int > 0 AS top_stopped;
SET pg_predict.early_exit = off;
SELECT ee_analyze($$SELECT count(*) FROM ee_rows r WHERE (predict_proba('ee', r))[2] > 0.95$$, 'Early Exit') AS off;
RESET pg_predict.early_exit;
-- A parameter for LIMIT is not pushed (the plan is generic).
PREPARE top(bigint) AS SELECT id FROM ee_rows r ORDER BY (predict_proba('ee', r))[2] DESC LIMIT $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS off) EXECUTE top(5);
RESET plan_cache_mode;
DEALLOCATE top;
