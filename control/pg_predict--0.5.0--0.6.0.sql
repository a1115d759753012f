-- pg_predict 0.5.0 -> 0.6.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.6.0'" to load this file. \quit

-- ---- 0.6.0: a model's life in SQL (issue 14) ---------------------------------------------

-- ---- 0.6.0: versions, deployment, rollback ------------------------------------------------
-- model_catalog keeps one row per VERSION of a model. Every create_model() or train() of an
-- existing name adds a version (1, 2, ...) instead of overwriting; exactly one version per name
-- is deployed, and predict() and the other scoring functions use it. `id` stays unique per row
-- (the program cache's key), so a switch of the deployed version is seen like a replace was.
-- The owner and the grants belong to the name: every version carries the same ones.
ALTER TABLE @extschema@.model_catalog
    ADD COLUMN version     int4,
    ADD COLUMN deployed    bool,
    ADD COLUMN deployed_at timestamptz,  -- when it was last deployed; NULL: never (rollback skips it)
    ADD COLUMN created_by  text,         -- the role that added the version (by name, like owner)
    ADD COLUMN metrics     jsonb;        -- train()'s metrics on its test split (NULL: none)
UPDATE @extschema@.model_catalog
   SET version = 1, deployed = true, deployed_at = created_at, created_by = owner;
ALTER TABLE @extschema@.model_catalog
    ALTER COLUMN version SET NOT NULL,
    ALTER COLUMN deployed SET NOT NULL,
    ADD CONSTRAINT model_catalog_version_check CHECK (version >= 1),
    DROP CONSTRAINT model_catalog_name_key,
    ADD CONSTRAINT model_catalog_name_version_key UNIQUE (name, version);
-- One deployed version per name; the scoring functions look the model up through it.
CREATE UNIQUE INDEX model_catalog_deployed_name ON @extschema@.model_catalog (name) WHERE deployed;

CREATE FUNCTION @extschema@.deploy_model(name text, version int4)
RETURNS void
AS 'MODULE_PATHNAME', 'pg_predict_deploy_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.deploy_model(text, int4) IS
'Make a version of the model the one predict() uses (only its owner or a superuser); plans that use the model are re-planned';

CREATE FUNCTION @extschema@.rollback_model(name text)
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_rollback_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.rollback_model(text) IS
'Deploy the newest version older than the deployed one that was deployed before, and return its number';

CREATE FUNCTION @extschema@.drop_model(name text, version int4)
RETURNS void
AS 'MODULE_PATHNAME', 'pg_predict_drop_model_version'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.drop_model(text, int4) IS
'Remove one version of the model (not the deployed one while others remain; the only one drops the model)';

-- Every version of every model: which one is deployed, who added it when, what train() measured.
CREATE VIEW @extschema@.model_versions AS
SELECT name,
       version,
       deployed,
       owner,
       created_by,
       created_at,
       deployed_at,
       format,
       task,
       strategy,
       (summary OPERATOR(pg_catalog.->>) 'estimator') AS estimator,
       metrics,
       pg_catalog.octet_length(program) AS program_bytes,
       @extschema@.model_usable(owner, usable_by) AS usable
  FROM @extschema@.model_catalog;
GRANT SELECT ON @extschema@.model_versions TO PUBLIC;

-- The models view shows each name's deployed version, and how many versions it has.
CREATE OR REPLACE VIEW @extschema@.models AS
SELECT name,
       owner,
       usable_by,
       @extschema@.model_usable(owner, usable_by) AS usable,  -- by the current role
       format,
       -- the SQL type the artifact was given as (the catalog keeps it as given)
       CASE WHEN source IS NOT NULL THEN 'jsonb'
            WHEN source_text IS NOT NULL THEN 'text'
            ELSE 'bytea' END AS source_type,
       task,
       class_labels AS classes,  -- as text, predict_proba's column order
       features,
       columns,
       -- the columns a query really fetches: those of inputs the optimized model reads
       ARRAY(SELECT c FROM pg_catalog.unnest(columns) WITH ORDINALITY AS u(c, i)
              WHERE (i - 1)::int4 OPERATOR(pg_catalog.<>) ALL (unused_features) ORDER BY i) AS columns_read,
       strategy,
       (summary OPERATOR(pg_catalog.->>) 'objective') AS objective,
       (summary OPERATOR(pg_catalog.->>) 'trees')::int AS trees,
       (summary OPERATOR(pg_catalog.->>) 'depth')::int AS depth,
       -- the model's shape: input features, output values (one per class for a classifier, the
       -- columns transform() returns for a transformer), what computes them (tree_ensemble,
       -- linear, torchscript, ..., none for a transformer) after how many featurizer steps
       pg_catalog.cardinality(features) AS inputs,
       CASE WHEN coalesce((summary OPERATOR(pg_catalog.->>) 'outputs')::int, 1) OPERATOR(pg_catalog.>) 1
                 THEN (summary OPERATOR(pg_catalog.->>) 'outputs')::int
            WHEN task OPERATOR(pg_catalog.=) 'classification' THEN pg_catalog.cardinality(class_labels)
            WHEN task OPERATOR(pg_catalog.=) 'transformer' THEN (summary OPERATOR(pg_catalog.->>) 'num_groups')::int
            ELSE 1 END AS outputs,
       (summary OPERATOR(pg_catalog.->>) 'estimator') AS estimator,
       coalesce((summary OPERATOR(pg_catalog.->>) 'steps')::int, 0) AS steps,
       pg_catalog.octet_length(program) AS program_bytes,
       created_at,  -- of the deployed version
       version,     -- the deployed version
       (SELECT pg_catalog.count(*) FROM @extschema@.model_catalog v
         WHERE v.name OPERATOR(pg_catalog.=) c.name)::int4 AS versions
  FROM @extschema@.model_catalog c
 WHERE deployed;

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
-- Per model version of the current database (README "Usage statistics"): calls (program runs:
-- one per batch, one per row on the per-row path), rows, batches, errors, time running the
-- program and filling its batches (ms), last use, and the backends whose program cache holds it
-- with the bytes the caches count. In shared memory when pg_predict is preloaded; otherwise the
-- counts of the calling session only (the function says so with a NOTICE).
CREATE FUNCTION @extschema@.model_stats_entries(
    OUT model_id bigint, OUT name text, OUT version int4, OUT calls bigint, OUT rows bigint, OUT batches bigint,
    OUT errors bigint, OUT model_time float8, OUT fill_time float8, OUT last_used timestamptz,
    OUT stats_since timestamptz, OUT backends int4, OUT loaded_programs int4, OUT loaded_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_predict_model_stats_entries'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- Every role sees every version of the current database, as PostgreSQL's own statistics views
-- show every table: counts are not secret, and the models view lists every model already.
-- A version whose catalog row is gone (dropped) keeps its counts, with the name and number it
-- had, until a reset or until pg_predict.stats_max evicts it.
CREATE VIEW @extschema@.model_stats AS
SELECT coalesce(c.name, s.name) AS name,
       coalesce(c.version, s.version) AS version,
       s.model_id,
       coalesce(c.deployed, false) AS deployed,
       c.id IS NULL AS dropped,
       s.calls, s.rows, s.batches, s.errors,
       s.model_time, s.fill_time,
       s.last_used,
       s.backends, s.loaded_bytes,
       s.stats_since
  FROM @extschema@.model_stats_entries() s
  LEFT JOIN @extschema@.model_catalog c ON c.id OPERATOR(pg_catalog.=) s.model_id;
GRANT SELECT ON @extschema@.model_stats TO PUBLIC;

-- Forgets the counts of every database's models (NULL) or of one model's versions in the
-- current database. A superuser's, like pg_stat_reset(): GRANT EXECUTE to delegate it.
CREATE FUNCTION @extschema@.model_stats_reset(model text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pg_predict_model_stats_reset'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION @extschema@.model_stats_reset(text) FROM PUBLIC;

-- Entries evicted to make room (pg_predict.stats_max), the last reset of everything, and
-- whether the counts are shared (pg_predict preloaded) or this session's.
CREATE FUNCTION @extschema@.model_stats_info(OUT evicted bigint, OUT stats_reset timestamptz,
                                             OUT shared_memory bool)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_predict_model_stats_info'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- ---- 0.6.0: explanations (issue 15) ------------------------------------------------------
-- predict_contributions(name, row): each input's share of the raw score (the margin before the
-- link) and the bias last, summing to the raw score: exact path-dependent TreeSHAP over the
-- trees' node covers, coef * x for linear models; [class][input + bias] for several groups.
-- Compiled from the spec on first use per backend and batched by the PredictBatch node like
-- predict.
CREATE FUNCTION @extschema@.predict_contributions(name text, "row" anyelement)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_predict_contributions'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict_contributions(name text, features real[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_predict_contributions'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict_contributions(name text, features float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_predict_contributions'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION @extschema@.predict_contributions(text, anyelement) IS
'Each input''s contribution to the raw score, then the bias (XGBoost''s pred_contribs layout): exact TreeSHAP for tree ensembles, coef * x for linear models';

-- The top features of one row's contributions as jsonb (explain_prediction's body).
CREATE FUNCTION @extschema@.explain_contributions(name text, contributions float8[], "row" jsonb, top int4)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pg_predict_explain_contributions'
LANGUAGE C STABLE PARALLEL SAFE;

-- A SQL function the planner inlines, so predict_contributions inside is batched.
CREATE FUNCTION @extschema@.explain_prediction(name text, "row" anyelement, top int4 DEFAULT 5)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT @extschema@.explain_contributions(name, @extschema@.predict_contributions(name, "row"),
                                               pg_catalog.to_jsonb("row"), top) $$;

COMMENT ON FUNCTION @extschema@.explain_prediction(text, anyelement, int4) IS
'The row''s prediction_value (raw score), baseline_prediction_value (bias), class explained, and top_feature_attributions [{feature, value, attribution}] by absolute contribution';
