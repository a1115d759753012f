-- pg_predict 0.5.0 -> 0.6.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.6.0'" to load this file. \quit

-- ---- 0.6.0: a model's life in SQL (issue 14) ---------------------------------------------

-- ---- 0.6.0: versions, deployment, rollback ------------------------------------------------
-- (versions)

-- ---- 0.6.0: training from a query ----------------------------------------------------------
-- train: fit a model on a query's rows and register it under a name (a new model, or a new
-- version of the caller's own). target names the query's label column, every other column is a
-- feature read by name (numbers, booleans; text one-hot encoded). algorithm: xgboost, linear,
-- logistic. Returns what was trained and its metrics on the test split (jsonb).
CREATE FUNCTION @extschema@.train(name text, query text, target text, algorithm text DEFAULT 'xgboost',
                                  hyperparams jsonb DEFAULT '{}', test_size float8 DEFAULT 0.2,
                                  seed int8 DEFAULT 0, deploy text DEFAULT 'always')
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pg_predict_train'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.train(text, text, text, text, jsonb, float8, int8, text) IS
'Train a model (xgboost, linear, logistic) on the rows of a query and register it; returns its test-split metrics';

-- ---- 0.6.0: evaluation -----------------------------------------------------------------------
-- (evaluation)

-- ---- 0.6.0: usage statistics -----------------------------------------------------------------
-- (statistics)
