-- predict_outputs(): multi-output regressors (a 2-D coef_, multi-output trees,
-- MultiOutputRegressor, RegressorChain), and the one-value functions refusing them.

-- y0 = 2a + b + 1, y1 = -a + 3
SELECT create_model('mo_linear', '{"format": "sklearn", "version": 1, "task": "regression", "outputs": 2,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "SimpleImputer", "statistics": [0.0, 10.0]},
            {"type": "LinearRegression", "coef": [[2.0, 1.0], [-1.0, 0.0]], "intercept": [1.0, 3.0],
             "n_outputs": 2}]}'::jsonb);
-- one stump, a <= 0.5: (1, 10), else (2, 20)
SELECT create_model('mo_tree', '{"format": "sklearn", "version": 1, "task": "regression", "outputs": 2,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "DecisionTreeRegressor", "n_classes": 1, "n_outputs": 2, "trees": [
    {"children_left": [1, -1, -1], "children_right": [2, -1, -1], "feature": [0, -2, -2],
     "threshold": [0.5, -2, -2], "value": [[[1.5], [15]], [[1], [10]], [[2], [20]]]}]}]}'::jsonb);
-- member 0: a stump on b (b <= 1: 5, else 7); member 1: a single leaf, 4
SELECT create_model('mo_wrapper', '{"format": "sklearn", "version": 1, "task": "regression", "outputs": 2,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "MultiOutputRegressor", "estimators": [
    {"type": "DecisionTreeRegressor", "n_classes": 1, "n_outputs": 1, "trees": [
      {"children_left": [1, -1, -1], "children_right": [2, -1, -1], "feature": [1, -2, -2],
       "threshold": [1, -2, -2], "value": [[[6]], [[5]], [[7]]]}]},
    {"type": "DecisionTreeRegressor", "n_classes": 1, "n_outputs": 1, "trees": [
      {"children_left": [-1], "children_right": [-1], "feature": [-2], "threshold": [-2], "value": [[[4]]]}]}]}]}'::jsonb);
-- order [1, 0]: the first member predicts output 1 = a + 1, the second output 0 from [a, b, y1]:
-- 10 a + 100 y1 = 110 a + 100
SELECT create_model('mo_chain', '{"format": "sklearn", "version": 1, "task": "regression", "outputs": 2,
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "RegressorChain", "order": [1, 0], "estimators": [
    {"type": "Ridge", "coef": [1.0, 0.0], "intercept": 1.0},
    {"type": "LinearRegression", "coef": [10.0, 0.0, 100.0], "intercept": 0.0}]}]}'::jsonb);
-- labels: output 0 in {0, 1} is 1 where a > 0, output 1 in {3, 7} is 7 where -a > 0
SELECT create_model('mo_labels', '{"format": "sklearn", "version": 1, "task": "classification", "outputs": 2,
  "classes": [[0, 1], [3, 7]], "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "MultiOutputClassifier", "estimators": [
    {"type": "LogisticRegression", "classes": [0, 1], "coef": [[1.0]], "intercept": [0.0], "multi_class": "ovr"},
    {"type": "LinearSVC", "classes": [3, 7], "coef": [[-1.0]], "intercept": [0.0], "loss": "squared_hinge"}]}]}'::jsonb);
-- order [1, 0]: output 1 in {3, 7} is 7 where a > 0.5; output 0 in {0, 1} reads [a, output 1]
-- and is 1 where output 1 > 5
SELECT create_model('mo_label_chain', '{"format": "sklearn", "version": 1, "task": "classification", "outputs": 2,
  "classes": [[0, 1], [3, 7]], "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "ClassifierChain", "order": [1, 0], "estimators": [
    {"type": "LogisticRegression", "classes": [3, 7], "coef": [[1.0]], "intercept": [-0.5], "multi_class": "ovr"},
    {"type": "LogisticRegression", "classes": [0, 1], "coef": [[0.0, 1.0]], "intercept": [-5.0], "multi_class": "ovr"}]}]}'::jsonb);
-- a tree of two binary outputs, classes counted per output: a <= 0.5: (3, 1) → 0, (0, 2) → 7;
-- else (1, 3) → 1, (2, 0) → 3
SELECT create_model('mo_label_tree', '{"format": "sklearn", "version": 1, "task": "classification", "outputs": 2,
  "classes": [[0, 1], [3, 7]], "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "DecisionTreeClassifier", "n_classes": [2, 2], "n_outputs": 2, "trees": [
    {"children_left": [1, -1, -1], "children_right": [2, -1, -1], "feature": [0, -2, -2],
     "threshold": [0.5, -2, -2], "value": [[[4, 4], [2, 2]], [[3, 1], [0, 2]], [[1, 3], [2, 0]]]}]}]}'::jsonb);
-- models.classes: two labels per output
SELECT name, task, classes, outputs, estimator, steps FROM models WHERE name LIKE 'mo\_%' ORDER BY name;

CREATE TABLE mo_rows (id int, a float8, b real);
INSERT INTO mo_rows VALUES (1, 0, 0), (2, 1, 2), (3, -2, 5), (4, NULL, 1), (5, 3, NULL);
-- a NULL is imputed in mo_linear (a: 0, b: 10); a tree has no rule for it (scikit-learn 1.2 raises)
-- and gives NULL, as the linear chain does; b is read by no tree
SELECT id, predict_outputs('mo_linear', r) AS linear, predict_outputs('mo_tree', r) AS tree,
       predict_outputs('mo_wrapper', r) AS wrapper, predict_outputs('mo_chain', r) AS chain
  FROM mo_rows r ORDER BY id;
EXPLAIN (COSTS OFF) SELECT id, predict_outputs('mo_linear', r) FROM mo_rows r;
SET pg_predict.enable_batching = off;
SELECT id, predict_outputs('mo_linear', r) AS linear, predict_outputs('mo_tree', r) AS tree,
       predict_outputs('mo_wrapper', r) AS wrapper, predict_outputs('mo_chain', r) AS chain
  FROM mo_rows r ORDER BY id;
RESET pg_predict.enable_batching;
SELECT predict_outputs('mo_chain', ARRAY[2, 0]::float8[]), predict_outputs('mo_tree', ARRAY[0.5, 0]::real[]);

-- the labels; a = 0 is no side of either margin: the first label
SELECT id, predict_outputs('mo_labels', r) AS labels, predict_outputs('mo_label_chain', r) AS chain,
       predict_outputs('mo_label_tree', r) AS tree
  FROM mo_rows r ORDER BY id;
SET pg_predict.enable_batching = off;
SELECT id, predict_outputs('mo_labels', r) AS labels, predict_outputs('mo_label_chain', r) AS chain,
       predict_outputs('mo_label_tree', r) AS tree
  FROM mo_rows r ORDER BY id;
RESET pg_predict.enable_batching;

-- never a silent first column: every one-value function refuses, batched or not
SELECT predict('mo_linear', r) FROM mo_rows r;
SELECT predict_proba('mo_tree', r) FROM mo_rows r;
SET pg_predict.enable_batching = off;
SELECT predict('mo_chain', r) FROM mo_rows r;
SELECT decision_function('mo_linear', ARRAY[1, 2]::float8[]);
SELECT predict_label('mo_labels', ARRAY[1]::float8[]);
RESET pg_predict.enable_batching;
SELECT predict('mo_label_chain', r) FROM mo_rows r;

-- a tree member is an op model step: a chain whose first member is a leaf (4), the second
-- reading [a, 4] (a + 4); a MultiOutputRegressor of that leaf and a ridge (a)
SELECT create_model('mo_tree_chain', '{"format": "sklearn", "version": 1, "task": "regression", "outputs": 2,
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "RegressorChain", "order": [0, 1], "estimators": [
    {"type": "DecisionTreeRegressor", "n_classes": 1, "n_outputs": 1, "trees": [
      {"children_left": [-1], "children_right": [-1], "feature": [-2], "threshold": [-2], "value": [[[4]]]}]},
    {"type": "Ridge", "coef": [1.0, 1.0], "intercept": 0.0}]}]}'::jsonb);
SELECT create_model('mo_tree_mixed', '{"format": "sklearn", "version": 1, "task": "regression", "outputs": 2,
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "MultiOutputRegressor", "estimators": [
    {"type": "DecisionTreeRegressor", "n_classes": 1, "n_outputs": 1, "trees": [
      {"children_left": [-1], "children_right": [-1], "feature": [-2], "threshold": [-2], "value": [[[4]]]}]},
    {"type": "Ridge", "coef": [1.0], "intercept": 0.0}]}]}'::jsonb);
SELECT predict_outputs('mo_tree_chain', ARRAY[3]::float8[]) AS chain, predict_outputs('mo_tree_mixed', ARRAY[3]::float8[]) AS mixed;

-- documents that do not agree with themselves
SELECT create_model('mo_bad', '{"format": "sklearn", "version": 1, "task": "regression", "outputs": 3,
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "LinearRegression", "coef": [[2.0], [-1.0]], "intercept": [1.0, 3.0]}]}'::jsonb);
SELECT create_model('mo_bad', '{"format": "sklearn", "version": 1, "task": "regression", "outputs": 2,
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "GradientBoostingRegressor", "n_classes": 1, "n_outputs": 1, "init": [0.0],
             "learning_rate": 0.1, "loss": "squared_error", "trees": [[
    {"children_left": [-1], "children_right": [-1], "feature": [-2], "threshold": [-2], "value": [[[4]]]}]]}]}'::jsonb);
SELECT create_model('mo_bad', '{"format": "sklearn", "version": 1, "task": "classification", "outputs": 2,
  "classes": [[0, 1], [0, 1]], "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0]], "intercept": [0.0]}]}'::jsonb);
SELECT create_model('mo_bad', '{"format": "sklearn", "version": 1, "task": "classification", "outputs": 2,
  "classes": [[0, 1], ["no", "yes"]], "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "MultiOutputClassifier", "estimators": []}]}'::jsonb);
SELECT create_model('mo_bad', '{"format": "sklearn", "version": 1, "task": "classification", "outputs": 2,
  "classes": [[0, 1], [0, 1, 2]], "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "MultiOutputClassifier", "estimators": []}]}'::jsonb);
SELECT count(*) FROM models WHERE name = 'mo_bad';

DROP TABLE mo_rows;
SELECT drop_model(name) FROM models WHERE name LIKE 'mo\_%' ORDER BY name;
