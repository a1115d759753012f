-- predict / predict_proba on rows and arrays. The fixture models are described in
-- regress/fixtures/README.md; the expected values follow from their trees:
--   churn: margin = (tenure < 10 ? 1 : -1) + (monthly_charges < 50 ? 0.5 : -0.5), p = sigmoid
--   spend: 0.5 + (plan_id < 2 ? 2 : 3)
--   segment: margins [1.5, 0.5 + (tenure < 10 ? 3 : 0), -0.5], softmax
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set binary_file :fixtures 'binary_tiny.json'
\set unnamed_file :fixtures 'binary_unnamed.json'
\set regression_file :fixtures 'regression_tiny.json'
\set multiclass_file :fixtures 'multiclass_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'unnamed_file') AS unnamed_model \gset
SELECT pg_read_file(:'regression_file') AS regression_model \gset
SELECT pg_read_file(:'multiclass_file') AS multiclass_model \gset
SELECT create_model('segment', :'multiclass_model'::jsonb);

CREATE TABLE customers (id int, tenure int, monthly_charges numeric, plan_id smallint, note text);
INSERT INTO customers VALUES
  (1, 5, 30, 1, 'short, cheap'),
  (2, 20, 80, 2, 'long, dear'),
  (3, NULL, 80, 3, 'tenure unknown: goes left'),
  (4, 20, NULL, 1, 'charges unknown: goes right'),
  (5, 10, 50, 2, 'exactly on both thresholds: x < t is false');

SELECT id, predict('churn', c) AS label,
       round((predict_proba('churn', c))[2]::numeric, 6) AS p1,
       round((1 / (1 + exp(-((CASE WHEN coalesce(tenure < 10, true) THEN 1 ELSE -1 END)
                            + (CASE WHEN coalesce(monthly_charges < 50, false) THEN 0.5 ELSE -0.5 END)))))::numeric, 6) AS by_hand
  FROM customers c ORDER BY id;
SELECT id, predict('spend', c) FROM customers c ORDER BY id;
SELECT id, predict('segment', c) AS label,
       array(SELECT round(p::numeric, 4) FROM unnest(predict_proba('segment', c)) p) AS proba
  FROM customers c ORDER BY id;

-- every strategy gives the same answers
SELECT create_model('churn_gemm', :'binary_model'::jsonb, options => '{"strategy": "gemm"}');
SELECT create_model('churn_tt', :'binary_model'::jsonb, options => '{"strategy": "tree_traversal"}');
SELECT create_model('churn_ptt', :'binary_model'::jsonb, options => '{"strategy": "perfect_tree_traversal"}');
SELECT name, strategy FROM models WHERE name LIKE 'churn%' ORDER BY name;
SELECT count(*) AS disagreements FROM customers c
 WHERE predict_proba('churn', c) IS DISTINCT FROM predict_proba('churn_gemm', c)
    OR predict_proba('churn', c) IS DISTINCT FROM predict_proba('churn_tt', c)
    OR predict_proba('churn', c) IS DISTINCT FROM predict_proba('churn_ptt', c);

-- arrays score positionally; NULL elements are missing values
SELECT predict('churn', ARRAY[5, 30, 1]::real[]),
       predict('churn', ARRAY[20, 80, 2]::float8[]),
       predict('churn', ARRAY[20, 80, 2]::int[]::real[]),
       round((predict_proba('churn', ARRAY[NULL, 80, 3]::real[]))[2]::numeric, 6),
       predict('spend', ARRAY[1, 1, 1.5]::numeric[]::float8[]);
-- other arrays need that cast: with real[] and float8[] overloads an int[] is ambiguous
SELECT predict('churn', ARRAY[20, 80, 2]);
-- the row and the array paths agree
SELECT count(*) AS disagreements FROM customers c
 WHERE predict_proba('churn', c) IS DISTINCT FROM
       predict_proba('churn', ARRAY[tenure, monthly_charges, plan_id]::real[]);

-- NULL row or array → NULL; NULL model name → error
SELECT predict('churn', NULL::customers) IS NULL AS null_row,
       predict('churn', NULL::real[]) IS NULL AS null_array,
       predict_proba('churn', NULL::float8[]) IS NULL AS null_proba;
-- a NULL model name (a tenant column that is NULL) gives NULL, like a NULL row; a name per row
-- scores each row with its own model (regress/conformance/test_xgboost.py compares the values)
SELECT bool_and(predict(NULL, c) IS NULL) AS null_name, bool_and(predict_proba(NULL::text, c) IS NULL) AS null_name_proba
  FROM customers c;
SELECT bool_and(predict(CASE WHEN c.id % 2 = 0 THEN 'churn' END, c) IS NOT DISTINCT FROM
                CASE WHEN c.id % 2 = 0 THEN predict('churn', c) END) AS per_row_names
  FROM customers c;

-- errors that name the problem
SELECT predict('nope', c) FROM customers c;
SELECT predict('churn', ARRAY[1, 2]::real[]);
SELECT predict('churn', ARRAY[[1, 2, 3]]::real[]);
SELECT predict('churn', ARRAY['a', 'b', 'c']);
SELECT predict('churn', 42);
SELECT predict_proba('spend', c) FROM customers c;
CREATE TABLE no_charges (tenure int, plan_id int);
INSERT INTO no_charges VALUES (1, 1);
SELECT predict('churn', t) FROM no_charges t;
CREATE TABLE text_charges (tenure int, monthly_charges text, plan_id int);
INSERT INTO text_charges VALUES (1, '30', 1);
SELECT predict('churn', t) FROM text_charges t;

-- features by name, whatever the column order; other column types convert
CREATE TABLE shuffled (note text, plan_id bigint, monthly_charges real, extra bool, tenure float8);
INSERT INTO shuffled VALUES ('x', 1, 30, true, 5), ('y', 2, 80, false, 20);
SELECT note, predict('churn', s), round((predict_proba('churn', s))[2]::numeric, 6) FROM shuffled s ORDER BY note;

-- a model without feature names: arrays work, rows need options.features
SELECT create_model('anon', :'unnamed_model'::jsonb);
SELECT features FROM models WHERE name = 'anon';
SELECT predict('anon', ARRAY[5, 30, 1]::real[]);
SELECT predict('anon', c) FROM customers c;
SELECT create_model('anon', :'unnamed_model'::jsonb,
                    options => '{"features": ["tenure", "monthly_charges", "plan_id"], "replace": true}');
SELECT count(*) AS disagreements FROM customers c WHERE predict_proba('anon', c) IS DISTINCT FROM predict_proba('churn', c);

-- options.columns maps a feature to a differently named column
CREATE TABLE renamed (months int, charges numeric, plan int);
INSERT INTO renamed VALUES (5, 30, 1), (20, 80, 2);
SELECT create_model('churn_renamed', :'binary_model'::jsonb,
                    options => '{"columns": {"tenure": "months", "monthly_charges": "charges", "plan_id": "plan"}}');
SELECT features, columns FROM models WHERE name = 'churn_renamed';
SELECT months, predict('churn_renamed', r) FROM renamed r ORDER BY months;

-- a replace is seen by the next statement; the old version is not used any more
SELECT create_model('flip', :'binary_model'::jsonb);
SELECT predict('flip', ARRAY[5, 30, 1]::real[]) AS before_replace;
SELECT create_model('flip', :'regression_model'::jsonb, options => '{"replace": true}');
SELECT predict('flip', ARRAY[5, 30, 1]::real[]) AS after_replace;
BEGIN;
SELECT drop_model('flip');
SELECT predict('flip', ARRAY[5, 30, 1]::real[]);
ROLLBACK;
SELECT predict('flip', ARRAY[5, 30, 1]::real[]) AS after_rollback;

-- in PL/pgSQL and prepared statements
CREATE FUNCTION churn_label(c customers) RETURNS float8 LANGUAGE plpgsql AS
$$ BEGIN RETURN predict('churn', c); END $$;
SELECT id, churn_label(c) FROM customers c ORDER BY id;
PREPARE score(int) AS SELECT predict('churn', c) FROM customers c WHERE id = $1;
EXECUTE score(1);
EXECUTE score(2);
DEALLOCATE score;

DROP FUNCTION churn_label;
DROP TABLE customers, no_charges, text_charges, shuffled, renamed;
