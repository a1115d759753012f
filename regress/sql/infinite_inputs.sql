-- ±Infinity in an input is an ERROR naming the model and the input (issue 32, item 3), as
-- XGBoost's DMatrix and scikit-learn's check_array refuse it; NULL and NaN stay missing values.
-- 'inf_churn' is regress/fixtures/binary_tiny.json (features tenure, monthly_charges, plan_id):
-- a tree model, so its batch is float32, and any value beyond ±3.4e38 rounds to Infinity there.
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT create_model('inf_churn', :'binary_model'::jsonb);

CREATE TABLE inf_rows (id int, tenure float8, monthly_charges numeric, plan_id float8);
INSERT INTO inf_rows VALUES (1, 5, 30, 1), (2, NULL, 'NaN', 2), (3, 20, 3e38, 3);
-- finite values, NULL and NaN (missing) score; 3e38 is a finite float32
SELECT id, predict('inf_churn', t) IS NOT NULL AS scored FROM inf_rows t ORDER BY id;

-- batched (the PredictBatch node), per row (an array, a row), each naming the input
INSERT INTO inf_rows VALUES (4, 'Infinity', 30, 1);
SELECT id, predict('inf_churn', t) FROM inf_rows t ORDER BY id;
SELECT predict('inf_churn', ARRAY[5, '-Infinity', 1]::float8[]);
SELECT predict('inf_churn', t) FROM inf_rows t WHERE id = 4;
SELECT predict_proba('inf_churn', ARRAY['Infinity', 30, 1]::real[]);
DELETE FROM inf_rows WHERE id = 4;
-- plan_id is read by no tree: an input the model never reads is not looked at, in an array as in
-- a row (whose column is not even fetched)
SELECT predict('inf_churn', ARRAY[5, 30, 'Infinity']::real[]) = predict('inf_churn', ARRAY[5, 30, 1]::real[])
       AS array_same;
INSERT INTO inf_rows VALUES (4, 5, 30, 'Infinity');
SELECT predict('inf_churn', t) = predict('inf_churn', ARRAY[5, 30, 1]::real[]) AS row_same
  FROM inf_rows t WHERE id = 4;
DELETE FROM inf_rows WHERE id = 4;

-- beyond float32's range: Infinity once rounded for this float32 model
INSERT INTO inf_rows VALUES (5, 5, 4e38, 1);
SELECT id, predict('inf_churn', t) FROM inf_rows t ORDER BY id;
DELETE FROM inf_rows WHERE id = 5;
-- a numeric beyond float8's range is Infinity too
INSERT INTO inf_rows VALUES (6, 5, 1e400, 1);
SELECT id, predict('inf_churn', t) FROM inf_rows t ORDER BY id;
DELETE FROM inf_rows WHERE id = 6;

-- a model named per row (as a tenant's model is) reads its columns the same way
ALTER TABLE inf_rows ADD COLUMN m text DEFAULT 'inf_churn';
INSERT INTO inf_rows VALUES (7, 'Infinity', 30, 1);
SELECT id, predict(m, t) FROM inf_rows t ORDER BY id;
SELECT id, predict(m, t) FROM inf_rows t WHERE id IN (1, 7) ORDER BY id;
DELETE FROM inf_rows WHERE id = 7;
SELECT id, predict(m, t) IS NOT NULL AS scored FROM inf_rows t ORDER BY id;

-- nothing is lost: the table and the model are as they were
SELECT count(*) AS rows FROM inf_rows;
SELECT id, predict('inf_churn', t) IS NOT NULL AS scored FROM inf_rows t ORDER BY id;
SELECT drop_model('inf_churn');
DROP TABLE inf_rows;
