-- Errors of per-row scoring calls in model_stats (usage statistics), counted without a PG_TRY
-- per call (src/pg/scoring_marks.hpp): a call that fails counts one error of its model version
-- wherever the error is caught (the statement's end, a SAVEPOINT, a PL/pgSQL handler, nested in
-- another call, a parallel worker); an error raised by anything else counts none, nor does a
-- FATAL one that ends the backend (a terminate). Each case reads the counters
-- before it (\gset) and shows what it added, worked out in the comment above it.
-- 'errs_churn' is regress/fixtures/binary_tiny.json (features tenure, monthly_charges, plan_id);
-- 'errs_city' regress/fixtures/sklearn_city.json (a text column city, handle_unknown='error':
-- 'rome' is an error while the row is read, inside the scoring call).
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
\set city_file :abs_srcdir '/fixtures/sklearn_city.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'city_file') AS city_model \gset
SELECT create_model('errs_churn', :'binary_model'::jsonb);
SELECT create_model('errs_city', :'city_model'::jsonb);

CREATE TABLE errs_rows AS
SELECT i AS id, i % 30 AS tenure, (i * 7) % 100 AS monthly_charges, (i % 3)::smallint AS plan_id,
       (ARRAY['berlin', 'paris'])[i % 2 + 1] AS city, 20 + i % 30 AS age
  FROM generate_series(1, 10) i;
-- Five known cities, then two unknown ones (in insertion order: a seq scan returns them so).
CREATE TABLE errs_mixed AS SELECT * FROM errs_rows WHERE id <= 5;
INSERT INTO errs_mixed VALUES (6, 1, 1, 1, 'rome', 30), (7, 2, 2, 2, 'oslo', 40);

-- The counters of a model's deployed version, zeros before its first use.
CREATE FUNCTION errs_counts(model text, OUT calls bigint, OUT errors bigint) LANGUAGE sql AS $$
    SELECT coalesce(sum(s.calls), 0)::bigint, coalesce(sum(s.errors), 0)::bigint
      FROM model_stats s WHERE s.name = model AND s.deployed $$;

SET pg_predict.enable_batching = off;
SELECT calls AS city_calls, errors AS city_errors FROM errs_counts('errs_city') \gset
SELECT calls AS churn_calls, errors AS churn_errors FROM errs_counts('errs_churn') \gset

-- A failing call at the statement's level: the five known cities are scored (5 calls), 'rome'
-- fails (1 error, not a call).
SELECT count(predict('errs_city', r)) FROM errs_mixed r;
SELECT calls - :city_calls AS new_calls, errors - :city_errors AS new_errors FROM errs_counts('errs_city');

-- In a SAVEPOINT rolled back, then more scoring in the same transaction: the failing statement
-- scored 3 rows, then 'rome' failed (1 error); 4 rows scored after the rollback. The transaction
-- then aborts for another reason (a division by zero), which counts nothing more: 7 calls, 1 error.
SELECT calls AS city_calls, errors AS city_errors FROM errs_counts('errs_city') \gset
BEGIN;
SAVEPOINT before_rome;
SELECT count(predict('errs_city', r)) FROM (SELECT id, city, age FROM errs_rows WHERE id <= 3 UNION ALL
                                             SELECT 99, 'rome', 30) r;
ROLLBACK TO SAVEPOINT before_rome;
SELECT count(predict('errs_city', r)) FROM errs_rows r WHERE id <= 4;
SELECT id / (id - id) FROM errs_rows WHERE id = 1;
ROLLBACK;
SELECT calls - :city_calls AS new_calls, errors - :city_errors AS new_errors FROM errs_counts('errs_city');

-- The same with a COMMIT after the rollback to the savepoint, and a savepoint that fails for
-- another reason after a successful call: 1 + 4 + 1 = 6 calls, 1 error.
SELECT calls AS city_calls, errors AS city_errors FROM errs_counts('errs_city') \gset
BEGIN;
SAVEPOINT s1;
SELECT predict('errs_city', r) FROM (SELECT 'rome'::text AS city, 30 AS age) r;
ROLLBACK TO SAVEPOINT s1;
SELECT count(predict('errs_city', r)) FROM errs_rows r WHERE id <= 4;
SAVEPOINT s2;
SELECT predict('errs_city', r) / 0 FROM errs_rows r WHERE id = 1;
ROLLBACK TO SAVEPOINT s2;
SELECT count(predict('errs_city', r)) FROM errs_rows r WHERE id = 2;
COMMIT;
SELECT calls - :city_calls AS new_calls, errors - :city_errors AS new_errors FROM errs_counts('errs_city');

-- An error raised by something else in the statement counts none: the division fails after
-- the first row's call succeeded (1 call); an argument that fails is evaluated before the call
-- (no call).
SELECT calls AS churn_calls, errors AS churn_errors FROM errs_counts('errs_churn') \gset
SELECT predict('errs_churn', r) / 0 FROM errs_rows r;
SELECT predict('errs_churn', ARRAY[tenure / (id - id), 1, 2]::real[]) FROM errs_rows r;
SELECT calls - :churn_calls AS new_calls, errors - :churn_errors AS new_errors FROM errs_counts('errs_churn');

-- Calls inside a function called per row, whose exception block catches the error: the five
-- known cities are scored, 'rome' and 'oslo' fail and are caught: 5 calls, 2 errors.
CREATE FUNCTION errs_city_or_null(r errs_mixed) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
    RETURN predict('errs_city', r);
EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
END $$;
SELECT calls AS city_calls, errors AS city_errors FROM errs_counts('errs_city') \gset
SELECT count(s) AS scored, count(*) - count(s) AS failed FROM (SELECT errs_city_or_null(r) AS s FROM errs_mixed r) q;
SELECT calls - :city_calls AS new_calls, errors - :city_errors AS new_errors FROM errs_counts('errs_city');

-- A successful call, then another error caught by the same block: 4 calls, no error.
CREATE FUNCTION errs_score_then_divide(r errs_rows) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    p float8;
BEGIN
    p := predict('errs_churn', r);
    PERFORM 1 / (r.id - r.id);
    RETURN 'divided';
EXCEPTION WHEN division_by_zero THEN
    RETURN 'caught';
END $$;
SELECT calls AS churn_calls, errors AS churn_errors FROM errs_counts('errs_churn') \gset
SELECT errs_score_then_divide(r), count(*) FROM errs_rows r WHERE id <= 4 GROUP BY 1;
SELECT calls - :churn_calls AS new_calls, errors - :churn_errors AS new_errors FROM errs_counts('errs_churn');

-- Nested: errs_city's calls (in the function, caught) feed errs_churn's per-row calls. All 7
-- rows reach errs_churn (a NULL element is a missing value): errs_city 5 calls and 2 errors,
-- errs_churn 7 calls and no error.
SELECT calls AS city_calls, errors AS city_errors FROM errs_counts('errs_city') \gset
SELECT calls AS churn_calls, errors AS churn_errors FROM errs_counts('errs_churn') \gset
SELECT count(predict('errs_churn', ARRAY[errs_city_or_null(r), 1, 2]::real[])) FROM errs_mixed r;
SELECT calls - :city_calls AS new_calls, errors - :city_errors AS new_errors FROM errs_counts('errs_city');
SELECT calls - :churn_calls AS new_calls, errors - :churn_errors AS new_errors FROM errs_counts('errs_churn');

-- Nested, uncaught: errs_city fails on 'rome' (the 6th row) inside errs_churn's argument, so
-- errs_churn was called for the five rows before it: errs_city 5 calls and 1 error, errs_churn
-- 5 calls and no error.
SELECT calls AS city_calls, errors AS city_errors FROM errs_counts('errs_city') \gset
SELECT calls AS churn_calls, errors AS churn_errors FROM errs_counts('errs_churn') \gset
SELECT count(predict('errs_churn', ARRAY[predict('errs_city', r), 1, 2]::real[])) FROM errs_mixed r;
SELECT calls - :city_calls AS new_calls, errors - :city_errors AS new_errors FROM errs_counts('errs_city');
SELECT calls - :churn_calls AS new_calls, errors - :churn_errors AS new_errors FROM errs_counts('errs_churn');

-- A DO block catching each of three failing calls in its own exception block: 3 errors.
SELECT calls AS city_calls, errors AS city_errors FROM errs_counts('errs_city') \gset
DO $$
BEGIN
    FOR i IN 1..3 LOOP
        BEGIN
            PERFORM predict('errs_city', r) FROM (SELECT 'rome'::text AS city, 30 AS age) r;
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
    END LOOP;
END $$;
SELECT calls - :city_calls AS new_calls, errors - :city_errors AS new_errors FROM errs_counts('errs_city');

-- In a parallel worker (the leader only gathers): the worker scores the five known cities and
-- fails on 'rome'; its ERROR ends it, and it counts the error as it leaves the plan (the leader,
-- which rethrows it, counts none): 5 calls, 1 error.
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
EXPLAIN (costs off) SELECT count(predict('errs_city', r)) FROM errs_mixed r;
SELECT calls AS city_calls, errors AS city_errors FROM errs_counts('errs_city') \gset
SELECT count(predict('errs_city', r)) FROM errs_mixed r;
SELECT calls - :city_calls AS new_calls, errors - :city_errors AS new_errors FROM errs_counts('errs_city');
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;

RESET pg_predict.enable_batching;
DROP FUNCTION errs_city_or_null(errs_mixed), errs_score_then_divide(errs_rows), errs_counts(text);
DROP TABLE errs_rows, errs_mixed;
SELECT drop_model('errs_churn');
SELECT drop_model('errs_city');
