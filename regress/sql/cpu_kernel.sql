-- pg_predict.cpu_kernel: which CPU path the native tree kernel takes. Every path this machine
-- can run must score real XGBoost models (regress/fixtures/make_kernel_models.py) like the
-- portable one; a path it lacks is an error at SET time. The output is the same on every
-- machine: it never lists which paths exist, only facts that hold for all of them.
-- Bit for bit is checked on the regression model (its prediction is the kernel's sum plus the
-- base score) and on the classifier's labels. Its probabilities come from torch's softmax,
-- which is vectorized over a chunk of rows and scalar at the chunk's tail, so their last bit
-- depends on where a row falls in a chunk (timing-sized, and split among parallel workers),
-- not on the kernel: those are compared within 1e-6.
\getenv abs_srcdir PG_ABS_SRCDIR
\set regression_file :abs_srcdir '/fixtures/kernel_regression.json'
\set multiclass_file :abs_srcdir '/fixtures/kernel_multiclass.json'
SELECT pg_read_file(:'regression_file') AS regression_model \gset
SELECT pg_read_file(:'multiclass_file') AS multiclass_model \gset
SELECT create_model('kernel_reg', :'regression_model'::jsonb, options => '{"strategy": "native"}') IS NOT NULL AS created;
SELECT create_model('kernel_multi', :'multiclass_model'::jsonb, options => '{"strategy": "native"}') IS NOT NULL AS created;

-- The training rows' formula (40 features, NULL as missing), on ids the models never saw too.
CREATE TABLE kernel_rows AS
SELECT i AS id,
       ARRAY(SELECT CASE WHEN (i * (j + 3)) % 17 = 0 THEN NULL ELSE sin(i * (j + 1) * 0.37 + j) END::real
               FROM generate_series(0, 39) j ORDER BY j) AS x
  FROM generate_series(1, 4000, 3) i;
ANALYZE kernel_rows;

-- The setting: an enum, auto by default; unknown values are refused with the list.
SELECT enumvals FROM pg_settings WHERE name = 'pg_predict.cpu_kernel';
SHOW pg_predict.cpu_kernel;
SET pg_predict.cpu_kernel = sse4;

-- The reference: the portable path (a plain table, so parallel workers may read it below).
SET pg_predict.cpu_kernel = portable;
CREATE TABLE kernel_reference AS
SELECT id, predict('kernel_reg', x) AS y, predict('kernel_multi', x) AS label, predict_proba('kernel_multi', x) AS p
  FROM kernel_rows;
RESET pg_predict.cpu_kernel;
SELECT count(*) AS rows, count(DISTINCT y) > 1000 AS varied, count(DISTINCT label) AS labels,
       min(greatest(p[1], p[2], p[3])) < 0.6 AND max(greatest(p[1], p[2], p[3])) > 0.9 AS confident
  FROM kernel_reference;
-- Scores of the current path against the reference (batched: the CTE keeps the calls in the
-- PredictBatch node rather than in the join's filter).
CREATE VIEW kernel_check AS
WITH scored AS MATERIALIZED (
    SELECT id, current_setting('pg_predict.cpu_kernel') AS setting, predict('kernel_reg', x) AS y,
           predict('kernel_multi', x) AS label, predict_proba('kernel_multi', x) AS p
      FROM kernel_rows)
SELECT min(setting) AS setting, count(*) AS rows,
       count(*) FILTER (WHERE s.y IS DISTINCT FROM r.y OR s.label IS DISTINCT FROM r.label
                           OR greatest(abs(s.p[1] - r.p[1]), abs(s.p[2] - r.p[2]), abs(s.p[3] - r.p[3])) > 1e-6) AS differing
  FROM scored s JOIN kernel_reference r USING (id);

-- Every value of the setting: the available ones score exactly the reference, the others are
-- refused at SET time with a detail naming what this CPU has.
CREATE TEMP TABLE kernel_runs (path text, ran bool, differing bigint, detail text);
DO $$
DECLARE
    path text;
    n bigint;
    why text;
BEGIN
    FOREACH path IN ARRAY (SELECT enumvals FROM pg_settings WHERE name = 'pg_predict.cpu_kernel') LOOP
        BEGIN
            PERFORM set_config('pg_predict.cpu_kernel', path, true);
            SELECT differing INTO n FROM kernel_check;
            INSERT INTO kernel_runs VALUES (path, true, n, NULL);
        EXCEPTION WHEN invalid_parameter_value THEN
            GET STACKED DIAGNOSTICS why = PG_EXCEPTION_DETAIL;
            INSERT INTO kernel_runs VALUES (path, false, NULL, why);
        END;
    END LOOP;
END $$;
SELECT count(*) AS values_tried,
       bool_and(ran) FILTER (WHERE path IN ('auto', 'portable')) AS auto_and_portable_run,
       bool_and(differing = 0) FILTER (WHERE ran) AS every_path_matches_portable,
       count(*) FILTER (WHERE NOT ran) > 0 AS some_path_lacking,  -- neon on x86, avx512/avx2 on ARM
       bool_and(detail LIKE 'This CPU and build offer: portable%') FILTER (WHERE NOT ran) AS refusals_name_the_paths
  FROM kernel_runs;
-- The detail lists exactly the paths that ran.
SELECT bool_and(strpos(d.detail, r.path) > 0) AS lists_every_available_path
  FROM kernel_runs r, (SELECT detail FROM kernel_runs WHERE NOT ran LIMIT 1) d
 WHERE r.ran AND r.path <> 'auto';
-- A refused SET leaves the setting as it was.
SET pg_predict.cpu_kernel = portable;
DO $$
DECLARE lacking text := (SELECT path FROM kernel_runs WHERE NOT ran LIMIT 1);
BEGIN
    EXECUTE format('SET pg_predict.cpu_kernel = %I', lacking);
EXCEPTION WHEN invalid_parameter_value THEN
    NULL;
END $$;
SHOW pg_predict.cpu_kernel;

-- EXPLAIN names the path used: the setting's, or what auto resolves to (never "auto").
EXPLAIN (costs off) SELECT predict('kernel_reg', x) FROM kernel_rows;
RESET pg_predict.cpu_kernel;
CREATE FUNCTION kernel_line(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (costs off) ' || query LOOP
        IF line ~ 'Kernel:' THEN RETURN trim(line); END IF;
    END LOOP;
    RETURN NULL;
END $$;
SELECT kernel_line('SELECT predict(''kernel_reg'', x) FROM kernel_rows')
       = 'Kernel: ' || (SELECT path FROM kernel_runs WHERE ran AND path <> 'auto'
                         ORDER BY array_position(ARRAY['avx512', 'avx2', 'neon', 'portable'], path) LIMIT 1)
       AS auto_shows_the_widest_path;

-- Parallel workers restore the leader's setting (and run its assign hook): with the scan and
-- the PredictBatch node in the workers only, they see the path and score like the reference;
-- for portable, auto, and the widest path named explicitly.
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET pg_predict.cpu_kernel = portable;
EXPLAIN (costs off) SELECT * FROM kernel_check;
SELECT * FROM kernel_check;
RESET pg_predict.cpu_kernel;
SELECT * FROM kernel_check;
SELECT set_config('pg_predict.cpu_kernel', path, false) = path AS set_widest
  FROM kernel_runs WHERE ran AND path <> 'auto'
 ORDER BY array_position(ARRAY['avx512', 'avx2', 'neon', 'portable'], path) LIMIT 1;
SELECT setting = (SELECT path FROM kernel_runs WHERE ran AND path <> 'auto'
                   ORDER BY array_position(ARRAY['avx512', 'avx2', 'neon', 'portable'], path) LIMIT 1)
       AS workers_see_widest, rows, differing
  FROM kernel_check;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET pg_predict.cpu_kernel;

DROP VIEW kernel_check;
DROP FUNCTION kernel_line(text);
DROP TABLE kernel_rows, kernel_reference;
SELECT drop_model('kernel_reg');
SELECT drop_model('kernel_multi');
