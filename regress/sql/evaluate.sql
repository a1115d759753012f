-- evaluate_model(name, query, target, threshold): the metrics document, its numbers worked out
-- by hand or recomputed in SQL from predict()/predict_proba() of the same rows, and its errors.
-- (regress/conformance/test_evaluate.py compares every metric with scikit-learn's.)

-- 'ev_weather': p(yes) = sigmoid(2 a - b), classes ["no", "yes"]
SELECT create_model('ev_weather', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "classification", "classes": ["no", "yes"],
  "steps": [{"type": "LogisticRegression", "coef": [[2.0, -1.0]], "intercept": [0.0],
             "multi_class": "ovr", "loss": "log"}]}'::jsonb);
-- 'ev_medal': the argmax of (a, b, -a - b) is bronze, gold, silver
SELECT create_model('ev_medal', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "classification", "classes": ["bronze", "gold", "silver"],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]],
             "intercept": [0.0, 0.0, 0.0], "multi_class": "multinomial", "loss": "log"}]}'::jsonb);
-- 'ev_rank': the same with numeric labels -2, 0.5, 7
SELECT create_model('ev_rank', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "classification", "classes": [-2, 0.5, 7],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]],
             "intercept": [0.0, 0.0, 0.0], "multi_class": "multinomial", "loss": "log"}]}'::jsonb);
-- 'ev_flag': boolean labels, p(true) = sigmoid(a)
SELECT create_model('ev_flag', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "classification", "classes": [false, true],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0, 0.0]], "intercept": [0.0],
             "multi_class": "ovr", "loss": "log"}]}'::jsonb);
-- 'ev_svc': no probabilities, label 1 when a - b > 0
SELECT create_model('ev_svc', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "classification", "classes": [0, 1],
  "steps": [{"type": "LinearSVC", "coef": [[1.0, -1.0]], "intercept": [0.0],
             "multi_class": "ovr", "loss": "squared_hinge"}]}'::jsonb);
-- 'ev_line': a + b + 0.5
SELECT create_model('ev_line', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "task": "regression",
  "steps": [{"type": "LinearRegression", "coef": [1.0, 1.0], "intercept": 0.5}]}'::jsonb);

CREATE TABLE ev_obs (id int, a float8, b float8, y text, medal text, rank int, flag bool, v float8);
-- 2a - b per row: 2, -2, -2, -1, 5, 0.5; y is wrong for rows 3 and 5
INSERT INTO ev_obs VALUES
  (1, 1, 0, 'yes', 'bronze', -2, true, 1.5),
  (2, -1, 0, 'no', 'silver', 7, false, 0),
  (3, 0, 2, 'yes', 'gold', 0, false, 2),
  (4, -1, -1, 'no', 'platinum', 7, false, -1),
  (5, 3, 1, 'no', 'bronze', -2, true, 4.5),
  (6, 0.5, 0.5, 'yes', 'gold', 7, true, 2);

-- the scoring query evaluate_model runs has the model's calls in a PredictBatch node
EXPLAIN (COSTS OFF) SELECT predict_proba('ev_weather', q), (q.y)::text FROM (
SELECT a, b, y FROM ev_obs
) q;

-- binary: the document's keys, the confusion matrix (rows true, columns predicted)
SELECT jsonb_object_keys(evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y')) AS key ORDER BY 1;
WITH e AS (SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y') AS d)
SELECT d->'model' AS model, d->'task' AS task, d->'rows' AS rows, d->'classes' AS classes,
       d->'unseen_classes' AS unseen, d->'positive_class' AS positive, d->'threshold' AS threshold,
       d->'confusion_matrix' AS confusion,
       (d->>'accuracy')::float8 = 4 / 6.0::float8 AS accuracy_4_of_6,
       -- positives (2, -2, 0.5) against negatives (-2, -1, 5): 4 pairs right, 1 tie of 9
       (d->>'roc_auc')::float8 = 4.5 / 9 AS roc_auc,
       d->'per_class'->'yes' AS yes,
       (d->'macro_avg'->>'precision')::float8 = (2 / 3.0::float8 + 2 / 3.0::float8) / 2 AS macro_precision
  FROM e;
-- log loss: the mean of -ln p(true class) over predict_proba's probabilities of the same rows,
-- each row renormalised to sum 1 (as scikit-learn does: float32 probabilities sum to 1 +- 1e-7)
WITH p AS (SELECT y, predict_proba('ev_weather', o) AS pr FROM ev_obs o),
     e AS (SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y') AS d)
SELECT abs((d->>'log_loss')::float8 - (SELECT avg(-ln(CASE y WHEN 'yes' THEN pr[2] ELSE pr[1] END / (pr[1] + pr[2])))
                                         FROM p)) < 1e-12
       AS log_loss_agrees
  FROM e;
-- threshold: p(yes) of row 6 is sigmoid(0.5) = 0.62, no longer above 0.7
SELECT d->'threshold' AS threshold, d->'confusion_matrix' AS confusion
  FROM evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y', threshold => 0.7) AS d;
-- a trailing semicolon and a comment are fine; the target may be any expression's column
SELECT d->'rows' AS rows, d->'confusion_matrix' AS confusion
  FROM evaluate_model('ev_weather', 'SELECT a, b, CASE WHEN id < 4 THEN ''yes'' ELSE ''no'' END AS "Truth"
                                      FROM ev_obs WHERE id <> 6 -- six is out
                                     ; ', 'Truth') AS d;

-- multiclass with text labels; "platinum" is no class of the model: an unseen class at the end,
-- never predicted, its row counted wrong; no log loss (the model gives it no probability)
-- predictions: bronze (a), silver (-a-b), gold (b), silver, bronze, bronze (a = b: the first)
SELECT d->'classes' AS classes, d->'unseen_classes' AS unseen, d->'confusion_matrix' AS confusion,
       (d->>'accuracy')::float8 = 4 / 6.0::float8 AS accuracy_4_of_6, d->'log_loss' AS log_loss,
       d ? 'roc_auc' AS has_roc_auc, d->'per_class'->'platinum' AS platinum
  FROM evaluate_model('ev_medal', 'SELECT a, b, medal FROM ev_obs', 'medal') AS d;
-- without the unseen row: log loss over predict_proba's probabilities
WITH p AS (SELECT medal, predict_proba('ev_medal', o) AS pr FROM ev_obs o WHERE medal <> 'platinum'),
     e AS (SELECT evaluate_model('ev_medal', 'SELECT a, b, medal FROM ev_obs WHERE medal <> ''platinum''', 'medal') AS d)
SELECT d->'unseen_classes' AS unseen,
       abs((d->>'log_loss')::float8 - (SELECT avg(-ln(pr[CASE medal WHEN 'bronze' THEN 1 WHEN 'gold' THEN 2 ELSE 3 END]
                                                        / (pr[1] + pr[2] + pr[3])))
                                         FROM p)) < 1e-12 AS log_loss_agrees
  FROM e;
-- numeric labels and a numeric target compare as numbers (7 = 7.0); 0 is no class: unseen "0"
SELECT d->'classes' AS classes, d->'unseen_classes' AS unseen, d->'confusion_matrix' AS confusion
  FROM evaluate_model('ev_rank', 'SELECT a, b, rank FROM ev_obs', 'rank') AS d;
-- a text target compares with the labels' text ('0.5', '7')
SELECT d->'unseen_classes' AS unseen, d->'confusion_matrix' AS confusion
  FROM evaluate_model('ev_rank', 'SELECT a, b, CASE WHEN rank = 0 THEN ''0.5'' ELSE rank::text END AS r FROM ev_obs', 'r') AS d;
-- boolean labels and a boolean target; p(true) = sigmoid(a): true for rows 1, 5, 6 (and 3: a = 0 is not above 0.5)
SELECT d->'classes' AS classes, d->'confusion_matrix' AS confusion, (d->>'roc_auc')::float8 AS roc_auc
  FROM evaluate_model('ev_flag', 'SELECT a, b, flag FROM ev_obs', 'flag') AS d;
-- a boolean target of a model with numeric labels 0 and 1: false is 0, true is 1
SELECT d->'classes' AS classes, d->'unseen_classes' AS unseen, d->'confusion_matrix' AS confusion
  FROM evaluate_model('ev_svc', 'SELECT a, b, a > b AS label FROM ev_obs', 'label') AS d;
-- no probabilities: predict()'s labels, no log loss, no ROC AUC, no threshold
SELECT d->'confusion_matrix' AS confusion, d->'log_loss' AS log_loss, d->'roc_auc' AS roc_auc,
       d->'threshold' AS threshold
  FROM evaluate_model('ev_svc', 'SELECT a, b, (a > b)::int AS label FROM ev_obs', 'label') AS d;

-- regression: the document's keys, and each metric recomputed from predict() in SQL
SELECT jsonb_object_keys(evaluate_model('ev_line', 'SELECT a, b, v FROM ev_obs', 'v')) AS key ORDER BY 1;
WITH p AS (SELECT v, predict('ev_line', o) AS pr FROM ev_obs o),
     s AS (SELECT avg((v - pr) ^ 2) AS mse, avg(abs(v - pr)) AS mae, sum((v - pr) ^ 2) AS ss_res,
                  sum((v - (SELECT avg(v) FROM p)) ^ 2) AS ss_tot, var_pop(v - pr) AS var_err, var_pop(v) AS var_y
             FROM p),
     e AS (SELECT evaluate_model('ev_line', 'SELECT a, b, v FROM ev_obs', 'v') AS d)
SELECT d->'rows' AS rows,
       abs((d->>'rmse')::float8 - sqrt(mse)) < 1e-12 AS rmse, abs((d->>'mse')::float8 - mse) < 1e-12 AS mse,
       abs((d->>'mae')::float8 - mae) < 1e-12 AS mae, abs((d->>'r2')::float8 - (1 - ss_res / ss_tot)) < 1e-12 AS r2,
       abs((d->>'explained_variance')::float8 - (1 - var_err / var_y)) < 1e-12 AS explained_variance
  FROM e, s;
-- a constant target: R² and explained variance 1 when every prediction is right, else 0
SELECT d->'r2' AS r2, d->'explained_variance' AS explained_variance
  FROM evaluate_model('ev_line', 'SELECT 1 AS a, 1 AS b, 2.5 AS v FROM generate_series(1, 3)', 'v') AS d;
SELECT d->'r2' AS r2, d->'explained_variance' AS explained_variance
  FROM evaluate_model('ev_line', 'SELECT g AS a, 0 AS b, 2.5 AS v FROM generate_series(1, 3) g', 'v') AS d;

-- errors
SELECT evaluate_model('no_such_model', 'SELECT a, b, y FROM ev_obs', 'y');
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'label');
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'Y');
SELECT evaluate_model('ev_weather', 'SELECT a, b, CASE WHEN id % 2 = 0 THEN y END AS y FROM ev_obs', 'y');
SELECT evaluate_model('ev_weather', 'SELECT CASE WHEN id < 3 THEN a END AS a, b, y FROM ev_obs', 'y');
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs WHERE false', 'y');
SELECT evaluate_model('ev_weather', '  ; ', 'y');
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs; SELECT 1', 'y');
SELECT evaluate_model('ev_weather', 'SELECT a, y FROM ev_obs', 'y');
SELECT evaluate_model('ev_line', 'SELECT a, b, y FROM ev_obs', 'y');
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y', threshold => 1.5);
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y', threshold => 'NaN');
SELECT evaluate_model('ev_medal', 'SELECT a, b, medal FROM ev_obs', 'medal', threshold => 0.7);
SELECT evaluate_model('ev_svc', 'SELECT a, b, 1 AS label FROM ev_obs', 'label', threshold => 0.7);
SELECT evaluate_model('ev_line', 'SELECT a, b, v FROM ev_obs', 'v', threshold => 0.7);
SELECT evaluate_model(NULL, 'SELECT 1', 'y');
SELECT evaluate_model('ev_weather', NULL, 'y');
SELECT evaluate_model('ev_weather', 'SELECT 1', NULL);
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y', NULL);
SELECT evaluate_model('ev_weather', 'SELECT a, b, y, y AS medal FROM ev_obs', 'medal')->'unseen_classes' AS same_column_twice;
-- 1000 distinct targets the model does not know: the wrong column
SELECT evaluate_model('ev_weather', 'SELECT 1 AS a, 1 AS b, g::text AS y FROM generate_series(1, 1000) g', 'y');
-- a transformer and a multi-output model
SELECT create_model('ev_scale', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "StandardScaler", "mean": [1.0, 2.0], "scale": [2.0, 4.0]}]}'::jsonb);
SELECT evaluate_model('ev_scale', 'SELECT a, b, v FROM ev_obs', 'v');
SELECT create_model('ev_two', '{"format": "sklearn", "version": 1, "task": "regression", "outputs": 2,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "LinearRegression", "coef": [[2.0, 1.0], [-1.0, 0.0]], "intercept": [1.0, 3.0],
             "n_outputs": 2}]}'::jsonb);
SELECT evaluate_model('ev_two', 'SELECT a, b, v FROM ev_obs', 'v');

-- privileges: like predict(), only roles that may use the model; the query runs as the caller
CREATE ROLE ev_user;
GRANT SELECT ON ev_obs TO ev_user;
SET ROLE ev_user;
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y');
RESET ROLE;
SELECT grant_model_usage('ev_weather', 'ev_user');
REVOKE SELECT ON ev_obs FROM ev_user;
SET ROLE ev_user;
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y');
RESET ROLE;
GRANT SELECT ON ev_obs TO ev_user;
SET ROLE ev_user;
SELECT evaluate_model('ev_weather', 'SELECT a, b, y FROM ev_obs', 'y')->'rows' AS rows;
RESET ROLE;
REVOKE SELECT ON ev_obs FROM ev_user;
SELECT revoke_model_usage('ev_weather', 'ev_user');
DROP ROLE ev_user;

SELECT drop_model(name) FROM models WHERE name LIKE 'ev\_%' ORDER BY name;
DROP TABLE ev_obs;
