-- KNeighborsClassifier / KNeighborsRegressor: the training rows live in the program; ties at
-- equal distance go to the earlier training row; distance weights count only exact matches
-- where there is one; a NULL (not imputed) feature predicts NULL, an infinite one is an error; refusals name
-- the estimator and the parameter. Every value here is worked out in the comments.
-- points (0,0) 'lo', (2,0) 'hi', (0,4) 'hi'
SELECT create_model('near', '{"format": "sklearn", "version": 1, "task": "classification",
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}], "classes": ["lo", "hi"],
  "steps": [{"type": "KNeighborsClassifier", "n_neighbors": 1, "p": 2, "weights": "uniform",
             "fit_X": [[0, 0], [2, 0], [0, 4]], "y": [0, 1, 1]}]}'::jsonb);
SELECT create_model('near2', '{"format": "sklearn", "version": 1, "task": "regression",
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "KNeighborsRegressor", "n_neighbors": 2, "p": 1, "weights": "distance",
             "fit_X": [[0, 0], [2, 0], [0, 4]], "y": [10, 20, 40]}]}'::jsonb);
CREATE TABLE pts(id int, a float8, b float8);
-- 1: (1, 0) equally far from points 0 and 1: k = 1 takes point 0 ('lo');
--    manhattan distances 1, 1, 5: k = 2 → (10/1 + 20/1) / (1/1 + 1/1) = 15
-- 2: (0, 4) an exact match of point 2: 'hi'; distance weights → only it: 40
-- 3: (1.5, 1): nearest point 1 ('hi'); manhattan 2.5, 1.5, 4.5 → (20/1.5 + 10/2.5) / (1/1.5 + 1/2.5) = 16.25
-- 4: NULL b: NULL
INSERT INTO pts VALUES (1, 1, 0), (2, 0, 4), (3, 1.5, 1), (4, 1, NULL);
SET pg_predict.enable_batching = on;
EXPLAIN (costs off) SELECT predict_label('near', p), predict('near2', p) FROM pts p;
SELECT id, predict_label('near', p), predict_proba('near', p), predict('near2', p) FROM pts p ORDER BY id;
SET pg_predict.enable_batching = off;
SELECT id, predict_label('near', p), predict_proba('near', p), predict('near2', p) FROM pts p ORDER BY id;
RESET pg_predict.enable_batching;
-- an infinite feature is an error naming it, as scikit-learn refuses it
SELECT predict('near2', ARRAY['Infinity', 0]::float8[]);
-- refusals: a metric or weights the importer cannot score, more neighbours than rows
SELECT create_model('bad', '{"format": "sklearn", "version": 1, "task": "regression",
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "KNeighborsRegressor", "n_neighbors": 1, "p": 2, "weights": "gaussian",
             "fit_X": [[0]], "y": [1]}]}'::jsonb);
SELECT create_model('bad', '{"format": "sklearn", "version": 1, "task": "regression",
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "KNeighborsRegressor", "n_neighbors": 1, "p": 0.5, "weights": "uniform",
             "fit_X": [[0]], "y": [1]}]}'::jsonb);
SELECT create_model('bad', '{"format": "sklearn", "version": 1, "task": "regression",
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "KNeighborsRegressor", "n_neighbors": 2, "p": 2, "weights": "uniform",
             "fit_X": [[0]], "y": [1]}]}'::jsonb);
DROP TABLE pts;
SELECT drop_model('near');
SELECT drop_model('near2');
