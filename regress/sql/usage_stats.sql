-- Usage statistics (model_stats): the counts after known queries, batched and per row, errors,
-- resets, the programs backends hold, dropped models, privileges. pg_regress preloads
-- pg_predict (regress/regression.conf): the counts are in shared memory. The model 'stats_churn'
-- is regress/fixtures/binary_tiny.json (features tenure, monthly_charges, plan_id); 'stats_city'
-- regress/fixtures/sklearn_city.json (a text column, handle_unknown='error').
-- EXPLAIN prints the native kernel's CPU path; the portable one exists on every machine.
SET pg_predict.cpu_kernel = portable;
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
\set city_file :abs_srcdir '/fixtures/sklearn_city.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'city_file') AS city_model \gset
SELECT create_model('stats_churn', :'binary_model'::jsonb);
SELECT create_model('stats_city', :'city_model'::jsonb);
SELECT evicted, shared_memory FROM model_stats_info();

CREATE TABLE stats_rows AS
SELECT i AS id, i % 30 AS tenure, (i * 7) % 100 AS monthly_charges, (i % 3)::smallint AS plan_id,
       (ARRAY['berlin', 'paris'])[i % 2 + 1] AS city, 20 + i % 30 AS age
  FROM generate_series(1, 1000) i;
ANALYZE stats_rows;

-- A model version has no row until it is scored (registering it loads nothing in this backend).
SELECT count(*) FROM model_stats WHERE name LIKE 'stats\_%';

-- Batched: 1000 rows in batches of 64 are ceil(1000 / 64) = 16 batches, one call each.
SET pg_predict.batch_size = 64;
EXPLAIN (costs off) SELECT count(predict('stats_churn', r)) FROM stats_rows r;
SELECT count(predict('stats_churn', r)) FROM stats_rows r;
SELECT name, version, deployed, calls, rows, batches, errors, model_time > 0 AS model_timed,
       fill_time > 0 AS fill_timed, last_used >= stats_since AS used_after_since,
       now() - last_used < interval '1 hour' AS recent, dropped,
       model_id = (SELECT id FROM model_catalog WHERE name = 'stats_churn') AS this_version
  FROM model_stats WHERE name = 'stats_churn';
-- 100 rows in batches of 30: 4 more batches, 30 + 30 + 30 + 10.
SET pg_predict.batch_size = 30;
SELECT count(predict('stats_churn', r)) FROM stats_rows r WHERE id <= 100;
SELECT calls, rows, batches FROM model_stats WHERE name = 'stats_churn';
-- At the default batch size, batches grow x4 from 64 rows (so a LIMIT stops early): 1000 rows
-- are 64 + 256 + 680, 3 batches.
RESET pg_predict.batch_size;
SELECT count(predict('stats_churn', r)) FROM stats_rows r;
SELECT calls, rows, batches FROM model_stats WHERE name = 'stats_churn';
-- Two calls of one model in one node run its program once a batch: 3 more.
SELECT sum(predict('stats_churn', r)) = sum(round((predict_proba('stats_churn', r))[2])) AS agree FROM stats_rows r;
SELECT calls, rows, batches FROM model_stats WHERE name = 'stats_churn';

-- Per row: one call per row, no batch; a NULL argument runs nothing. After a reset the version
-- still shows, without counts, as long as a backend holds its program.
SELECT model_stats_reset('stats_churn');
SELECT name, calls, last_used, stats_since, backends FROM model_stats WHERE name = 'stats_churn';
SET pg_predict.enable_batching = off;
SELECT count(predict('stats_churn', r)) FROM stats_rows r WHERE id <= 100;
SELECT predict('stats_churn', ARRAY[5, 60, 1]::real[]), predict('stats_churn', NULL::real[]);
RESET pg_predict.enable_batching;
SELECT name, calls, rows, batches, errors, model_time > 0 AS model_timed, fill_time > 0 AS fill_timed
  FROM model_stats WHERE name = 'stats_churn';

-- Errors: a scoring call that fails counts once, batched or per row; the error is unchanged.
-- An unknown city fails its batch (rows scored before it in the batch are not counted).
SELECT count(predict('stats_city', r)) FROM stats_rows r;
SELECT count(predict('stats_city', r)) FROM (SELECT id, city, age FROM stats_rows UNION ALL
                                             SELECT 1001, 'rome', 30) r;
SET pg_predict.enable_batching = off;
SELECT count(predict('stats_city', r)) FROM (SELECT id, city, age FROM stats_rows WHERE id <= 10 UNION ALL
                                             SELECT 1001, 'rome', 30) r;
SELECT predict('stats_churn', ARRAY[1, 2]::real[]);
RESET pg_predict.enable_batching;
SELECT name, calls, rows, batches, errors FROM model_stats WHERE name LIKE 'stats\_%' ORDER BY name;
-- An error caught inside the statement (a PL/pgSQL handler) counts too.
DO $$
BEGIN
    PERFORM predict('stats_city', r) FROM (SELECT 'rome'::text AS city, 30 AS age) r;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'caught: %', SQLERRM;
END $$;
SELECT errors FROM model_stats WHERE name = 'stats_city';
-- A model that does not exist is no model version's error.
SELECT predict('no_such_model', ARRAY[1]::real[]);
SELECT name, errors FROM model_stats WHERE name LIKE 'stats\_%' ORDER BY name;
-- A statement that fails mid-way for another reason keeps the counts of the rows it scored
-- before the error (issue 46): 1000 rows in batches of 100 (the first of 64), and row 950's
-- WHERE divides by zero while the tenth batch is read, so nine batches (864 rows) were scored;
-- no error is the model's. Batched, with the model named per row (its groups of at most 100 rows in batches
-- of 64 and 256 rows: 320), and per row (949 calls).
SELECT create_model('midway_churn', :'binary_model'::jsonb);
SET pg_predict.batch_size = 100;
SELECT count(predict('midway_churn', r)) FROM stats_rows r WHERE 1 / (950 - id) IS NOT NULL;
SELECT calls, rows, batches, errors FROM model_stats WHERE name = 'midway_churn';
SELECT model_stats_reset('midway_churn');
SELECT count(predict(CASE WHEN id > 0 THEN 'midway_churn' END, r)) FROM stats_rows r WHERE 1 / (950 - id) IS NOT NULL;
SELECT calls, rows, batches, errors FROM model_stats WHERE name = 'midway_churn';
SELECT model_stats_reset('midway_churn');
SET pg_predict.enable_batching = off;
SELECT count(predict('midway_churn', r)) FROM stats_rows r WHERE 1 / (950 - id) IS NOT NULL;
RESET pg_predict.enable_batching;
SELECT calls, rows, batches, errors FROM model_stats WHERE name = 'midway_churn';
RESET pg_predict.batch_size;
SELECT drop_model('midway_churn');

-- This backend holds both programs: one backend, the bytes the cache counts for a program
-- (its serialized size and 64 kB).
SELECT name, backends, loaded_bytes = (SELECT program_bytes + 65536 FROM models m WHERE m.name = s.name) AS bytes_known
  FROM model_stats s WHERE name LIKE 'stats\_%' ORDER BY name;
-- With a cache of 0 the programs go once idle: the backend holds neither after the query.
SET pg_predict.cache_size = 0;
SELECT count(predict('stats_churn', r)) FROM stats_rows r WHERE id <= 10;
SELECT name, backends, loaded_bytes FROM model_stats WHERE name LIKE 'stats\_%' ORDER BY name;
RESET pg_predict.cache_size;

-- Each version has its row: a new version of stats_churn (deployed) is counted apart from the
-- first, which shows as not deployed, then as dropped (with its name and number) once removed.
SELECT create_model('stats_churn', :'binary_model'::jsonb);
SELECT count(predict('stats_churn', r)) FROM stats_rows r WHERE id <= 10;
SELECT name, version, deployed, dropped, calls, rows FROM model_stats WHERE name = 'stats_churn' ORDER BY version;
SELECT drop_model('stats_churn', 1);
SELECT name, version, deployed, dropped, calls, rows FROM model_stats WHERE name = 'stats_churn' ORDER BY version;

-- A dropped model keeps its counts, under the name it had, until a reset.
SELECT drop_model('stats_city');
SELECT name, version, dropped, calls, errors, backends FROM model_stats WHERE name LIKE 'stats\_%' ORDER BY name, version;
SELECT model_stats_reset('stats_city');
SELECT name, version FROM model_stats WHERE name LIKE 'stats\_%' ORDER BY name, version;

-- Every role sees the counts; only a superuser (or a role granted EXECUTE) resets them.
CREATE ROLE stats_reader;
SET ROLE stats_reader;
SELECT name, calls > 0 AS used FROM model_stats WHERE name LIKE 'stats\_%';
SELECT model_stats_reset('stats_churn');
SELECT model_stats_reset();
RESET ROLE;
GRANT EXECUTE ON FUNCTION model_stats_reset(text) TO stats_reader;
SET ROLE stats_reader;
SELECT model_stats_reset('stats_churn');
RESET ROLE;
SELECT count(*) FROM model_stats WHERE name LIKE 'stats\_%';

-- model_stats_reset() forgets everything and says when.
SELECT count(predict('stats_churn', r)) FROM stats_rows r WHERE id <= 10;
SELECT now() AS before_reset \gset
SELECT model_stats_reset();
SELECT count(*) FROM model_stats WHERE calls > 0;
SELECT evicted, stats_reset >= :'before_reset' AS reset_now FROM model_stats_info();

REVOKE EXECUTE ON FUNCTION model_stats_reset(text) FROM stats_reader;
DROP ROLE stats_reader;
SELECT drop_model('stats_churn');
DROP TABLE stats_rows;
