-- pg_predict 0.5.0 -> 0.6.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.6.0'" to load this file. \quit

-- ---- 0.6.0: a model's life in SQL (issue 14) ---------------------------------------------

-- ---- 0.6.0: versions, deployment, rollback ------------------------------------------------
-- (versions)

-- ---- 0.6.0: training from a query ----------------------------------------------------------
-- (training)

-- ---- 0.6.0: evaluation -----------------------------------------------------------------------
-- evaluate_model: the deployed model's metrics on the rows of a query (jsonb; README.md,
-- "Evaluate a model"). The query runs as the caller, in a cursor, with the model scored by the
-- PredictBatch node like predict(); `target` names the query's column holding the true value.
-- Rows with a NULL target or a NULL prediction are an error (it says how many), never skipped.
CREATE FUNCTION @extschema@.evaluate_model(name text, query text, target text, threshold float8 DEFAULT 0.5)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pg_predict_evaluate_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.evaluate_model(text, text, text, float8) IS
'The model''s metrics on a query''s rows: accuracy, precision/recall/F1, log loss, ROC AUC, the confusion matrix (classifiers; threshold: a binary model''s positive class above it), RMSE, MAE, R², explained variance (regressors)';

-- ---- 0.6.0: usage statistics -----------------------------------------------------------------
-- (statistics)
