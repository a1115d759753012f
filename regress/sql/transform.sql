-- transform(), decision_function(), score_samples(): a pipeline that ends in a transformer, the
-- decision values of a classifier, and every wrong pairing of a function and a model.
\getenv abs_srcdir PG_ABS_SRCDIR
\set city_file :abs_srcdir '/fixtures/sklearn_city.json'
\set svc_file :abs_srcdir '/fixtures/sklearn_city_svc.json'
\set xgb_file :abs_srcdir '/fixtures/binary_tiny.json'
\set forest_file :abs_srcdir '/fixtures/sklearn_trees/rf_classifier2.json'
SELECT pg_read_file(:'city_file') AS city_model \gset
SELECT pg_read_file(:'svc_file') AS svc_model \gset
SELECT pg_read_file(:'xgb_file') AS xgb_model \gset
SELECT pg_read_file(:'forest_file') AS forest_model \gset

-- impute a (mean 2), then scale: ((a or 2) - 1) / 2 and (b - 2) / 4; and one-hot a text column
SELECT create_model('prep', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"},
             {"name": "city", "type": "text"}],
  "steps": [{"type": "ColumnTransformer", "remainder": null, "transformers": [
    {"columns": [0, 1], "steps": [
       {"type": "SimpleImputer", "statistics": [2.0, 0.0]},
       {"type": "StandardScaler", "mean": [1.0, 2.0], "scale": [2.0, 4.0]}]},
    {"columns": [2], "steps": [{"type": "OneHotEncoder", "categories": [["berlin", "paris"]],
                                "handle_unknown": "ignore", "drop_idx": null}]}]}]}'::jsonb);
SELECT name, task, classes, inputs, outputs, estimator, steps FROM models WHERE name = 'prep';

CREATE TABLE rows (id int, a float8, b real, city text);
INSERT INTO rows VALUES (1, 3, 6, 'paris'), (2, NULL, 2, 'berlin'), (3, -1, -2, 'rome'), (4, 1, NULL, NULL);
-- a NULL a is imputed with 2, a NULL b with 0; a city the encoder never saw (or NULL) is all zeros
SELECT id, transform('prep', r) FROM rows r ORDER BY id;
SET pg_predict.enable_batching = off;
SELECT id, transform('prep', r) FROM rows r ORDER BY id;
RESET pg_predict.enable_batching;
EXPLAIN (costs off) SELECT transform('prep', r) FROM rows r;

-- numbers only: the array forms (features by position)
SELECT create_model('scale', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "StandardScaler", "mean": [1.0, 2.0], "scale": [2.0, 4.0]}]}'::jsonb);
SELECT transform('scale', ARRAY[3, 6]::float8[]), transform('scale', ARRAY[3, 6]::real[]);
-- a NaN the scaler passes on stays NaN in its element, as in scikit-learn; a NULL row is NULL
SELECT transform('scale', ARRAY[NULL, 6]::float8[]), transform('scale', NULL::float8[]);

-- predict() and predict_proba() on a transformer, transform() on a predictor: errors that say
-- what to use, at plan time (batched) and on the per-row path
SELECT create_model('city', :'city_model'::jsonb);
SELECT create_model('city_svc', :'svc_model'::jsonb, 'sklearn');
SELECT create_model('xgb', :'xgb_model'::jsonb);
SELECT create_model('forest', (:'forest_model'::jsonb) -> 'document', 'sklearn');
SELECT predict('prep', r) FROM rows r;
SELECT predict_proba('scale', ARRAY[1, 2]::real[]);
SELECT transform('city', r) FROM rows r;
SELECT transform('xgb', ARRAY[1, 2]::real[]);
SET pg_predict.enable_batching = off;
SELECT predict('prep', r) FROM rows r;
SELECT transform('city', r) FROM rows r;
RESET pg_predict.enable_batching;
SELECT transform('prep', 42);

-- decision_function: the logistic regression's margin
-- [city = berlin] - [city = paris] + 0.5 (age - 30) / 10, one element for a binary model
CREATE TABLE people (id int, city text, age int);
INSERT INTO people VALUES (1, 'paris', 40), (2, 'berlin', 20), (3, 'berlin', 30), (4, NULL, 30),
  (5, 'paris', NULL);
SELECT id, decision_function('city', p) AS decision,
       (CASE city WHEN 'berlin' THEN 1 WHEN 'paris' THEN -1 ELSE 0 END + 0.05 * (age - 30))::float8 AS by_hand,
       predict('city', p) AS label
  FROM people p ORDER BY id;
SET pg_predict.enable_batching = off;
SELECT id, decision_function('city', p) AS decision FROM people p ORDER BY id;
RESET pg_predict.enable_batching;

-- LinearSVC (the same coefficients): the same margin
SELECT id, decision_function('city_svc', p) FROM people p ORDER BY id;

-- estimators without them: an ERROR naming the estimator
SELECT decision_function('forest', ARRAY[1, 2, 3, 4]::real[]);
SELECT score_samples('city', p) FROM people p;
SELECT decision_function('xgb', ARRAY[1, 2]::real[]);
SELECT decision_function('prep', r) FROM rows r;
CREATE TABLE forest_rows AS SELECT 1.0::real AS x0, 2.0::real AS x1, 3.0::real AS x2, 4.0::real AS x3;
SELECT decision_function('forest', f) FROM forest_rows f;
SET pg_predict.enable_batching = off;
SELECT score_samples('city', p) FROM people p;
SELECT decision_function('forest', f) FROM forest_rows f;
RESET pg_predict.enable_batching;

DROP TABLE rows, people, forest_rows;
SELECT drop_model('prep'), drop_model('scale'), drop_model('city'), drop_model('city_svc'), drop_model('xgb'),
       drop_model('forest');
