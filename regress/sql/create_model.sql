-- create_model / drop_model / the models view, and every error they can give.
CREATE EXTENSION pg_predict;
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set binary_file :fixtures 'binary_tiny.json'
\set regression_file :fixtures 'regression_tiny.json'
\set multiclass_file :fixtures 'multiclass_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'regression_file') AS regression_model \gset
SELECT pg_read_file(:'multiclass_file') AS multiclass_model \gset

SELECT create_model('churn', :'binary_model'::jsonb);
SELECT create_model('spend', :'regression_model'::jsonb, 'xgboost');
SELECT create_model('segment', :'multiclass_model'::jsonb, options => '{"strategy": "tree_traversal"}');
SELECT name, format, task, classes, features, columns, strategy, objective, trees, depth,
       program_bytes > 0 AS has_program
  FROM models ORDER BY name;

-- a name's next create_model adds a version and deploys it (options.replace, from before
-- versions, says the same); the versions sql file tests the rest
SELECT create_model('churn', :'regression_model'::jsonb);
SELECT create_model('churn', :'regression_model'::jsonb, options => '{"replace": true}');
SELECT name, task, objective, version, versions FROM models WHERE name = 'churn';
SELECT create_model('churn', :'binary_model'::jsonb, options => '{"replace": "yes"}');
SELECT create_model('churn', :'binary_model'::jsonb, options => '{"deploy": 1}');
SELECT create_model('churn', :'binary_model'::jsonb, options => '{"replace": true}');
SELECT version, deployed, task FROM model_versions WHERE name = 'churn' ORDER BY version;

-- transactional: a rolled-back create or drop leaves no trace
BEGIN;
SELECT create_model('temp', :'binary_model'::jsonb);
SELECT count(*) FROM models WHERE name = 'temp';
ROLLBACK;
SELECT count(*) FROM models WHERE name = 'temp';
BEGIN;
SELECT drop_model('spend');
ROLLBACK;
SELECT count(*) FROM models WHERE name = 'spend';

-- bad arguments
SELECT create_model(NULL, :'binary_model'::jsonb);
SELECT create_model('', :'binary_model'::jsonb);
SELECT create_model('m', NULL);
SELECT create_model('m', :'binary_model'::jsonb, 'onnx');
SELECT create_model('m', :'binary_model'::jsonb, options => '{"strategy": "fastest"}');
SELECT create_model('m', :'binary_model'::jsonb, options => '{"colour": "red"}');
SELECT create_model('m', :'binary_model'::jsonb, options => '[1, 2]');
SELECT create_model('m', :'binary_model'::jsonb, options => '{"features": ["a", "b"]}');
SELECT create_model('m', :'binary_model'::jsonb, options => '{"columns": {"nope": "x"}}');

-- malformed or unsupported models
SELECT create_model('m', '{}');
SELECT create_model('m', '[1, 2, 3]');
SELECT create_model('m', '"a string"');
SELECT create_model('m', '{"learner": {}, "version": [1, 7, 4]}');
SELECT create_model('m', jsonb_set(:'binary_model'::jsonb, '{learner,objective,name}', '"survival:cox"'));
SELECT create_model('m', jsonb_set(:'binary_model'::jsonb, '{learner,gradient_booster,model,trees,0,left_children}', '[1, 7, -1]'));
SELECT create_model('m', jsonb_set(:'binary_model'::jsonb, '{learner,gradient_booster,model,trees,0,split_indices}', '[9, 0, 0]'));
SELECT create_model('m', jsonb_set(:'binary_model'::jsonb, '{learner,gradient_booster,model,trees,0,left_children}', '"oops"'));
SELECT create_model('m', jsonb_set(:'binary_model'::jsonb, '{learner,gradient_booster,name}', '"gblinear"'));
-- scikit-learn: the registry names what it supports; errors name the estimator and the path
SELECT create_model('m', '{"format": "sklearn", "inputs": [{"name": "a"}], "task": "regression", "steps": [{"type": "KernelRidge"}]}');
SELECT create_model('m', '{"format": "sklearn", "inputs": [{"name": "a"}], "task": "regression", "steps": [{"type": "Spline"}, {"type": "Ridge", "coef": [1], "intercept": 0}]}');
SELECT create_model('m', '{"format": "sklearn", "inputs": [{"name": "a"}], "task": "regression", "steps": [{"type": "StandardScaler", "mean": [0], "scale": ["x"]}, {"type": "Ridge", "coef": [1], "intercept": 0}]}');
SELECT create_model('m', '{"format": "sklearn", "inputs": [{"name": "a"}], "task": "regression", "steps": [{"type": "DecisionTreeRegressor", "trees": [{"children_left": [1, 7, -1], "children_right": [2, -1, -1], "feature": [0, -2, -2], "threshold": [0.5, -2, -2], "value": [[[0]], [[1]], [[2]]]}]}]}');
SELECT count(*) FROM models WHERE name = 'm';

-- a jsonb document reaches the importer as text written from it, and the spec goes back to
-- jsonb (both by catalog/jsonb_text.cpp, with interrupt checks): escapes, unicode and exponents
-- survive both ways
SELECT create_model('esc', '{"format": "sklearn", "inputs": [{"name": "q\"uote"}, {"name": "back\\slash"}, {"name": "tab\t\u00f1€😀"}, {"name": "ctl\u0001"}], "task": "regression", "steps": [{"type": "Ridge", "coef": [0.5, -2.5E+3, 0, 1e-7], "intercept": -0.0}]}'::jsonb);
SELECT to_jsonb(features) = '["q\"uote", "back\\slash", "tab\tñ€😀", "ctl\u0001"]'::jsonb AS names_kept,
       (SELECT c.spec->'features' = to_jsonb(features) FROM model_catalog c WHERE c.name = 'esc') AS spec_kept
  FROM models WHERE name = 'esc';
SELECT predict('esc', ARRAY[2, 1, 5, 0]::float8[]) AS minus_2499;
SELECT drop_model('esc');

-- drop
SELECT drop_model('nope');
SELECT drop_model(NULL);
SELECT drop_model('segment');
SELECT name FROM models ORDER BY name;
