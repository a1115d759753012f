-- pg_predict 0.6.0 -> 0.7.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.7.0'" to load this file. \quit

-- ---- 0.7.0: the first hour of a new user (issue 32) ----------------------------------------

-- Whether the running statement was planned with pg_predict's batching node: false when this
-- very statement loaded the library (pg_predict not in shared_preload_libraries or
-- session_preload_libraries), or when pg_predict.enable_batching is off.
CREATE FUNCTION @extschema@.batching_available()
RETURNS bool
AS 'MODULE_PATHNAME', 'pg_predict_batching_available'
LANGUAGE C VOLATILE PARALLEL SAFE;

-- Every function and view says what it is (\df+, \dx+, \dv+).
COMMENT ON FUNCTION @extschema@.batching_available() IS
'Whether this statement batches: false when it loaded pg_predict itself (not preloaded: set shared_preload_libraries or session_preload_libraries) or pg_predict.enable_batching is off';
COMMENT ON FUNCTION @extschema@.drop_model(text) IS
'Remove the model, every version of it, and its grants (its owner or a superuser)';
COMMENT ON FUNCTION @extschema@.predict(text, anyelement) IS
'The model''s prediction for the row (its columns by the model''s feature names): a regressor''s value, a classifier''s class as float8; batched over the scan when pg_predict is preloaded';
COMMENT ON FUNCTION @extschema@.predict(text, real[]) IS
'The model''s prediction for a feature array in the model''s feature order';
COMMENT ON FUNCTION @extschema@.predict(text, float8[]) IS
'The model''s prediction for a feature array in the model''s feature order';
COMMENT ON FUNCTION @extschema@.predict_proba(text, anyelement) IS
'A classifier''s class probabilities for the row, float8[] in the order of models.classes';
COMMENT ON FUNCTION @extschema@.predict_proba(text, real[]) IS
'A classifier''s class probabilities for a feature array, in the order of models.classes';
COMMENT ON FUNCTION @extschema@.predict_proba(text, float8[]) IS
'A classifier''s class probabilities for a feature array, in the order of models.classes';
COMMENT ON FUNCTION @extschema@.predict_label(text, real[]) IS
'The predicted class of a classifier as text, for a feature array';
COMMENT ON FUNCTION @extschema@.predict_label(text, float8[]) IS
'The predicted class of a classifier as text, for a feature array';
COMMENT ON FUNCTION @extschema@.predict_outputs(text, real[]) IS
'Every value a multi-output model predicts, for a feature array';
COMMENT ON FUNCTION @extschema@.predict_outputs(text, float8[]) IS
'Every value a multi-output model predicts, for a feature array';
COMMENT ON FUNCTION @extschema@.transform(text, anyelement) IS
'A scikit-learn transformer''s output for the row (its transform()), float8[]';
COMMENT ON FUNCTION @extschema@.transform(text, real[]) IS
'A scikit-learn transformer''s output for a feature array (its transform()), float8[]';
COMMENT ON FUNCTION @extschema@.transform(text, float8[]) IS
'A scikit-learn transformer''s output for a feature array (its transform()), float8[]';
COMMENT ON FUNCTION @extschema@.decision_function(text, anyelement) IS
'A scikit-learn estimator''s decision_function() for the row: the margin, or one per class, float8[]';
COMMENT ON FUNCTION @extschema@.decision_function(text, real[]) IS
'A scikit-learn estimator''s decision_function() for a feature array, float8[]';
COMMENT ON FUNCTION @extschema@.decision_function(text, float8[]) IS
'A scikit-learn estimator''s decision_function() for a feature array, float8[]';
COMMENT ON FUNCTION @extschema@.score_samples(text, anyelement) IS
'A scikit-learn estimator''s score_samples() for the row (density, outlier score), float8';
COMMENT ON FUNCTION @extschema@.score_samples(text, real[]) IS
'A scikit-learn estimator''s score_samples() for a feature array, float8';
COMMENT ON FUNCTION @extschema@.score_samples(text, float8[]) IS
'A scikit-learn estimator''s score_samples() for a feature array, float8';
COMMENT ON FUNCTION @extschema@.predict_contributions(text, real[]) IS
'Each input''s share of the raw score, then the bias (TreeSHAP for trees, coef * x for linear models), for a feature array';
COMMENT ON FUNCTION @extschema@.predict_contributions(text, float8[]) IS
'Each input''s share of the raw score, then the bias (TreeSHAP for trees, coef * x for linear models), for a feature array';
COMMENT ON FUNCTION @extschema@.explain_contributions(text, float8[], jsonb, int4) IS
'Internal: the jsonb explain_prediction() returns, from predict_contributions() and the row; call explain_prediction()';
COMMENT ON FUNCTION @extschema@.model_usable(text, text[]) IS
'Internal: whether the current role may use a model of this owner and grants (the models view''s usable column)';
COMMENT ON FUNCTION @extschema@.model_stats_entries() IS
'Internal: the usage counts behind the model_stats view; query model_stats';
COMMENT ON FUNCTION @extschema@.model_stats_info() IS
'Entries evicted from the usage statistics (pg_predict.stats_max), the last reset of all of them, and whether they are shared (preloaded) or this session''s';
COMMENT ON FUNCTION @extschema@.model_stats_reset(text) IS
'Forget the usage counts of every model (NULL) or of one model''s versions (a superuser''s, as pg_stat_reset)';
COMMENT ON VIEW @extschema@.model_versions IS
'Every version of every model: which one is deployed, who added it when, and what train() measured';
COMMENT ON VIEW @extschema@.model_stats IS
'Per model version: calls, rows, batches, errors, time in the model and in feature fill, last use, loaded programs';
COMMENT ON TABLE @extschema@.model_catalog IS
'Internal: one row per model version (compiled program, source, owner, grants); read the models and model_versions views';
COMMENT ON SEQUENCE @extschema@.model_catalog_id_seq IS
'Internal: model_catalog ids (a new one for every version: the program cache''s key)';
