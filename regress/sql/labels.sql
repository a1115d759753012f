-- Classifiers whose labels are not numbers: predict_label() gives the label as text, predict()
-- refuses such a model, and bad label lists are refused at create_model.
-- 'weather': p(yes) = sigmoid(2 a - b); classes ["no", "yes"] (scikit-learn's sorted classes_).
SELECT create_model('weather', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "classification", "classes": ["no", "yes"],
  "steps": [{"type": "LogisticRegression", "coef": [[2.0, -1.0]], "intercept": [0.0],
             "multi_class": "ovr", "loss": "log"}]}'::jsonb);
-- 'medal': three classes, argmax of (a, b, c) + 0; labels sorted as scikit-learn sorts them
SELECT create_model('medal', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "classification", "classes": ["bronze", "gold", "silver"],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]],
             "intercept": [0.0, 0.0, 0.0], "multi_class": "multinomial", "loss": "log"}]}'::jsonb);
-- 'flag': boolean labels, p(true) = sigmoid(a)
SELECT create_model('flag', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "classification", "classes": [false, true],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0, 0.0]], "intercept": [0.0],
             "multi_class": "ovr", "loss": "log"}]}'::jsonb);
-- 'rank': numeric labels keep predict(); their text is float8's
SELECT create_model('rank', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "classification", "classes": [-2, 0.5, 7],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]],
             "intercept": [0.0, 0.0, 0.0], "multi_class": "multinomial", "loss": "log"}]}'::jsonb);
SELECT create_model('line', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "regression",
  "steps": [{"type": "LinearRegression", "coef": [1.0, 1.0], "intercept": 0.5}]}'::jsonb);

-- the models view shows every classifier's classes as text, in predict_proba's order
SELECT name, task, classes, outputs, pg_typeof(classes) FROM models
 WHERE name IN ('weather', 'medal', 'flag', 'rank', 'line') ORDER BY name;

CREATE TABLE obs (id int, a float8, b float8);
INSERT INTO obs VALUES (1, 1, 0), (2, -1, 0), (3, 0, 2), (4, -1, -1), (5, NULL, 1), (6, 3, 1);
-- batched (PredictBatch) and per row give the same labels
EXPLAIN (costs off) SELECT id, predict_label('weather', o) FROM obs o;
SELECT id, predict_label('weather', o) AS weather, predict_label('medal', o) AS medal,
       predict_label('flag', o) AS flag, predict_label('flag', o)::bool AS flag_bool,
       predict_label('rank', o) AS rank_label, predict('rank', o) AS rank
  FROM obs o ORDER BY id;
-- predict_proba's columns are the classes' order: gold (b) is the most probable for row 3
SELECT id, predict_label('medal', o),
       (SELECT c FROM unnest((SELECT classes FROM models WHERE name = 'medal'),
                             predict_proba('medal', o)) AS u(c, p) ORDER BY p DESC LIMIT 1) AS top
  FROM obs o WHERE id <> 5 ORDER BY id;
SET pg_predict.enable_batching = off;
SELECT id, predict_label('weather', o) AS weather, predict_label('medal', o) AS medal,
       predict_label('flag', o) AS flag, predict_label('rank', o) AS rank_label
  FROM obs o ORDER BY id;
RESET pg_predict.enable_batching;
-- the array forms; a NULL array gives NULL
SELECT predict_label('weather', ARRAY[1, 0]::real[]) AS r, predict_label('weather', ARRAY[-1, 0]::float8[]) AS d,
       predict_label('weather', NULL::real[]) IS NULL AS null_gives_null;
-- XGBoost keeps its numeric labels; predict_label gives their text (margin: tenure < 10 ? 1 : -1,
-- plus monthly_charges < 50 ? 0.5 : -0.5: label 1 for v < 1, else 0)
\getenv abs_srcdir PG_ABS_SRCDIR
\set xgb_file :abs_srcdir '/fixtures/binary_tiny.json'
SELECT pg_read_file(:'xgb_file') AS xgb_model \gset
SELECT create_model('xgb', :'xgb_model'::jsonb);
SELECT classes FROM models WHERE name = 'xgb';
SELECT count(*) AS rows, count(*) FILTER (WHERE predict_label('xgb', ARRAY[10 * v, 10 * v, 0]::real[])
                                                = predict('xgb', ARRAY[10 * v, 10 * v, 0]::real[])::text) AS agree,
       count(DISTINCT predict_label('xgb', ARRAY[10 * v, 10 * v, 0]::real[])) AS labels
  FROM generate_series(-5, 5) v;

-- predict() on text labels: an ERROR naming predict_label(), batched, per row and by array
SELECT id, predict('weather', o) FROM obs o;
SET pg_predict.enable_batching = off;
SELECT id, predict('weather', o) FROM obs o;
RESET pg_predict.enable_batching;
SELECT predict('flag', ARRAY[1, 2]::real[]);
-- also where predict() shares its input with a predict_label() call of the same row
SELECT predict_label('weather', o), predict('weather', o) FROM obs o;
-- predict_label() on a regression
SELECT predict_label('line', o) FROM obs o;
SELECT predict_label('line', ARRAY[1, 2]::float8[]);

-- label lists the format refuses
SELECT create_model('bad', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}], "task": "classification", "classes": ["no", 1],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0]], "intercept": [0.0], "multi_class": "ovr", "loss": "log"}]}'::jsonb);
SELECT create_model('bad', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}], "task": "classification", "classes": [true, 1],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0]], "intercept": [0.0], "multi_class": "ovr", "loss": "log"}]}'::jsonb);
SELECT create_model('bad', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}], "task": "classification", "classes": ["no", "no"],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0]], "intercept": [0.0], "multi_class": "ovr", "loss": "log"}]}'::jsonb);
SELECT create_model('bad', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}], "task": "classification", "classes": [["no"], "yes"],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0]], "intercept": [0.0], "multi_class": "ovr", "loss": "log"}]}'::jsonb);
SELECT count(*) AS bad_models FROM models WHERE name = 'bad';

SELECT drop_model(name) FROM models WHERE name IN ('weather', 'medal', 'flag', 'rank', 'line', 'xgb');
DROP TABLE obs;
