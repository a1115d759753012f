-- pg_predict.cpu_kernel: which CPU path the native tree kernel takes. Every path this machine
-- can run must score real XGBoost models (regress/fixtures/make_kernel_models.py) bit for bit
-- like the portable one; a path it lacks is an error at SET time. The output is the same on
-- every machine: it never lists which paths exist, only facts that hold for all of them.
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/regress/fixtures/kernel_binary.json'
\set multiclass_file :abs_srcdir '/regress/fixtures/kernel_multiclass.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'multiclass_file') AS multiclass_model \gset
SELECT create_model('kernel_binary', :'binary_model'::jsonb, options => '{"strategy": "native"}') IS NOT NULL AS created;
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
SELECT id, predict('kernel_binary', x) AS label, predict_proba('kernel_binary', x) AS p,
       predict_proba('kernel_multi', x) AS pm
  FROM kernel_rows;
RESET pg_predict.cpu_kernel;
SELECT count(*) AS rows, count(DISTINCT label) AS labels, min(p[2]) < 0.1 AND max(p[2]) > 0.9 AS confident,
       count(DISTINCT pm) > 100 AS varied
  FROM kernel_reference;

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
            SELECT count(*) INTO n
              FROM kernel_rows r JOIN kernel_reference ref USING (id)
             WHERE predict('kernel_binary', r.x) IS DISTINCT FROM ref.label
                OR predict_proba('kernel_binary', r.x) IS DISTINCT FROM ref.p
                OR predict_proba('kernel_multi', r.x) IS DISTINCT FROM ref.pm;
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
EXPLAIN (costs off) SELECT predict('kernel_binary', x) FROM kernel_rows;
RESET pg_predict.cpu_kernel;
CREATE FUNCTION kernel_line(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (costs off) ' || query LOOP
        IF line ~ 'Kernel:' THEN RETURN trim(line); END IF;
    END LOOP;
    RETURN NULL;
END $$;
SELECT kernel_line('SELECT predict(''kernel_binary'', x) FROM kernel_rows')
       = 'Kernel: ' || (SELECT path FROM kernel_runs WHERE ran AND path <> 'auto'
                         ORDER BY array_position(ARRAY['avx512', 'avx2', 'neon', 'portable'], path) LIMIT 1)
       AS auto_shows_the_widest_path;

-- Parallel workers restore the leader's setting (and run its assign hook): with the whole plan
-- in a worker (force_parallel_mode), the worker sees the path and scores exactly the reference;
-- for portable, auto, and the widest path named explicitly.
SET force_parallel_mode = on;
EXPLAIN (costs off)
SELECT min(current_setting('pg_predict.cpu_kernel')), count(*) FILTER (WHERE predict_proba('kernel_multi', r.x) IS DISTINCT FROM ref.pm)
  FROM kernel_rows r JOIN kernel_reference ref USING (id);
CREATE VIEW parallel_check AS
SELECT min(current_setting('pg_predict.cpu_kernel')) AS worker_setting,
       count(*) FILTER (WHERE predict_proba('kernel_multi', r.x) IS DISTINCT FROM ref.pm
                           OR predict_proba('kernel_binary', r.x) IS DISTINCT FROM ref.p) AS differing
  FROM kernel_rows r JOIN kernel_reference ref USING (id);
SET pg_predict.cpu_kernel = portable;
SELECT * FROM parallel_check;
RESET pg_predict.cpu_kernel;
SELECT * FROM parallel_check;
SELECT set_config('pg_predict.cpu_kernel', path, false) = path AS set_widest
  FROM kernel_runs WHERE ran AND path <> 'auto'
 ORDER BY array_position(ARRAY['avx512', 'avx2', 'neon', 'portable'], path) LIMIT 1;
SELECT worker_setting = (SELECT path FROM kernel_runs WHERE ran AND path <> 'auto'
                          ORDER BY array_position(ARRAY['avx512', 'avx2', 'neon', 'portable'], path) LIMIT 1)
       AS worker_sees_widest, differing
  FROM parallel_check;
RESET force_parallel_mode;
RESET pg_predict.cpu_kernel;

DROP VIEW parallel_check;
DROP FUNCTION kernel_line(text);
DROP TABLE kernel_rows, kernel_reference;
SELECT drop_model('kernel_binary');
SELECT drop_model('kernel_multi');
