-- The optimizer: a selector at the end of a featurizer chain is pushed down to the scan, the
-- scaler folds into the linear model, and explain_model shows what happened.
-- p = sigmoid(1.0 * (b - 1) / 2 - 0.5 * (e - 4) / 0.5 + 0.25) = sigmoid(0.5 b - e + 3.75)
SELECT create_model('selected', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"},
             {"name": "c", "type": "numeric"}, {"name": "d", "type": "numeric"},
             {"name": "e", "type": "numeric"}, {"name": "f", "type": "numeric"}],
  "task": "classification", "classes": [0, 1],
  "steps": [{"type": "StandardScaler", "mean": [0, 1, 2, 3, 4, 5], "scale": [1, 2, 4, 1, 0.5, 1]},
            {"type": "ColumnSelector", "columns": [1, 4]},
            {"type": "LogisticRegression", "coef": [[1.0, -0.5]], "intercept": [0.25],
             "multi_class": "ovr", "loss": "log"}]}'::jsonb);

-- what each pass did, the spec that was compiled, and the columns read
SELECT jsonb_pretty(e - 'before' - 'after') FROM explain_model('selected') e;
SELECT jsonb_pretty(e -> 'after' -> 'steps') AS steps, e -> 'after' -> 'estimator' AS estimator,
       jsonb_array_length(e -> 'before' -> 'steps') AS steps_before
  FROM explain_model('selected') e;
-- the models view says the same
SELECT columns, columns_read FROM models WHERE name = 'selected';

CREATE TABLE wide (id int, a float8, b float8, c float8, d float8, e float8, f float8);
INSERT INTO wide SELECT i, i, i % 7, i % 3, NULL, i % 5 - 2, NULL FROM generate_series(1, 20) i;
-- the scan fetches b and e only: a NULL elsewhere does not matter
EXPLAIN (costs off, verbose) SELECT id, predict_proba('selected', w) FROM wide w;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE abs((predict_proba('selected', w))[2]
                                  - 1 / (1 + exp(-(0.5 * b - e + 3.75)))) > 1e-6) AS wrong
  FROM wide w;
SET pg_predict.enable_batching = off;
SELECT count(*) FILTER (WHERE abs((predict_proba('selected', w))[2]
                                  - 1 / (1 + exp(-(0.5 * b - e + 3.75)))) > 1e-6) AS wrong_per_row
  FROM wide w;
RESET pg_predict.enable_batching;
-- a strategy variant compiles the same optimized program
SET pg_predict.strategy = 'gemm';
SELECT count(*) FILTER (WHERE abs((predict_proba('selected', w))[2]
                                  - 1 / (1 + exp(-(0.5 * b - e + 3.75)))) > 1e-6) AS wrong_gemm
  FROM wide w;
RESET pg_predict.strategy;
-- the setting is an enum of the compiler's strategies (the bench reads its rows from this list);
-- a name outside it is refused at SET
SELECT vartype, enumvals FROM pg_settings WHERE name = 'pg_predict.strategy';
SET pg_predict.strategy = 'fastest';
SHOW pg_predict.strategy;
-- the array form still takes every input, in order
SELECT round((predict_proba('selected', ARRAY[9, 4, 9, 9, 1, 9]::float8[]))[2]::numeric, 6) AS p,
       round(1 / (1 + exp(-(0.5 * 4 - 1 + 3.75)))::numeric, 6) AS by_hand;

-- a zero weight (an L1 model) is an input the model ignores: not fetched, a NULL there is fine
SELECT create_model('sparse', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"},
             {"name": "c", "type": "numeric"}],
  "task": "regression",
  "steps": [{"type": "Lasso", "coef": [0.0, 2.0, 0.0], "intercept": 1.0}]}'::jsonb);
SELECT e -> 'columns_read' AS read, e -> 'columns_not_read' AS not_read FROM explain_model('sparse') e;
EXPLAIN (costs off, verbose) SELECT predict('sparse', w) FROM wide w;
SELECT id, predict('sparse', w) FROM wide w WHERE id <= 3 ORDER BY id;

-- a text input the model ignores is not fetched either (batched and per row)
SELECT create_model('textless', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "city", "type": "text"}, {"name": "age", "type": "numeric"}],
  "task": "regression",
  "steps": [{"type": "ColumnTransformer", "transformers": [
              {"columns": [0], "steps": [{"type": "OneHotEncoder", "categories": [["berlin", "paris"]],
                                          "handle_unknown": "error", "drop_idx": null}]},
              {"columns": [1], "steps": [{"type": "StandardScaler", "mean": [30.0], "scale": [10.0]}]}],
             "remainder": null},
            {"type": "LinearRegression", "coef": [0.0, 0.0, 2.0], "intercept": 1.0}]}'::jsonb);
CREATE TABLE people (id int, city text, age int);
INSERT INTO people VALUES (1, 'paris', 40), (2, 'nowhere', 20), (3, NULL, 30);
EXPLAIN (costs off, verbose) SELECT id, predict('textless', p) FROM people p;
SELECT id, predict('textless', p) FROM people p ORDER BY id;
SET pg_predict.enable_batching = off;
SELECT id, predict('textless', p) FROM people p ORDER BY id;
RESET pg_predict.enable_batching;
DROP TABLE people;
SELECT drop_model('textless');

-- a role may explain a model it may use (it shows the whole spec: privileges.sql); a missing
-- model is an error
CREATE ROLE pgp_optimizer_reader;
SET ROLE pgp_optimizer_reader;
SELECT e -> 'columns_read' AS read FROM explain_model('selected') e;
RESET ROLE;
SELECT grant_model_usage('selected', 'pgp_optimizer_reader');
SET ROLE pgp_optimizer_reader;
SELECT e -> 'columns_read' AS read FROM explain_model('selected') e;
RESET ROLE;
SELECT revoke_model_usage('selected', 'pgp_optimizer_reader');
DROP ROLE pgp_optimizer_reader;
SELECT explain_model('nope');
SELECT explain_model(NULL) IS NULL AS null_name;

DROP TABLE wide;
SELECT drop_model('selected'), drop_model('sparse');
