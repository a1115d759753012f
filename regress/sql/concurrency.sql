-- A query keeps the model version it started with, even when another session replaces the
-- model and commits while the query runs.
CREATE EXTENSION IF NOT EXISTS dblink;
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
\set regression_file :abs_srcdir '/fixtures/regression_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'regression_file') AS regression_model \gset
SELECT create_model('flip', :'binary_model'::jsonb, options => '{"replace": true}');
CREATE TABLE rows_to_score AS
SELECT i AS id, i % 30 AS tenure, (i * 7) % 100 AS monthly_charges, i % 3 AS plan_id
  FROM generate_series(1, 50000) i;

-- Replaces 'flip' by a regression model (predictions 2.5 or 3.5 instead of 0 or 1) from
-- another session, once, when the query reaches row `at`.
CREATE FUNCTION replace_elsewhere(id int, at int, model text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF id = at THEN
    PERFORM * FROM dblink(format('dbname=%s port=%s host=%s', current_database(),
                                 current_setting('port'),
                                 split_part(current_setting('unix_socket_directories'), ',', 1)),
                          format('SELECT create_model(%L, %L::jsonb, options => ''{"replace": true}'')::text',
                                 'flip', model)) AS done(result text);
  END IF;
  RETURN true;
END $$;

SELECT count(*) FILTER (WHERE p IN (0, 1)) AS old_version,
       count(*) FILTER (WHERE p NOT IN (0, 1)) AS new_version
  FROM (SELECT predict('flip', r) AS p, replace_elsewhere(id, 100, :'regression_model') AS side_effect
          FROM rows_to_score r ORDER BY id) s;
-- the next statement sees the new version
SELECT DISTINCT predict('flip', r) IN (2.5, 3.5) AS new_version FROM rows_to_score r;

-- the same through the per-row path
SELECT create_model('flip', :'binary_model'::jsonb, options => '{"replace": true}');
SET pg_predict.enable_batching = off;
SELECT count(*) FILTER (WHERE p IN (0, 1)) AS old_version,
       count(*) FILTER (WHERE p NOT IN (0, 1)) AS new_version
  FROM (SELECT predict('flip', r) AS p, replace_elsewhere(id, 100, :'regression_model') AS side_effect
          FROM rows_to_score r ORDER BY id) s;
RESET pg_predict.enable_batching;
SELECT DISTINCT predict('flip', r) IN (2.5, 3.5) AS new_version FROM rows_to_score r;

DROP FUNCTION replace_elsewhere;
DROP TABLE rows_to_score;
SELECT drop_model('flip');
