-- pg_predict 0.4.0 -> 0.5.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.5.0'" to load this file. \quit

-- ---- 0.5.0: the rest of scikit-learn (issue 13) ------------------------------------------

-- Multi-output models (scikit-learn's n_outputs_ > 1: 2-D coef_, multi-output trees and
-- nearest neighbours, MultiOutputRegressor, RegressorChain, MultiOutputClassifier,
-- ClassifierChain): predict gives several values per row. The summary keeps their number ('outputs'; models from before 0.5.0 have one), the
-- models view shows it, and predict_outputs() returns them as float8[] (predict() and the other
-- one-value functions refuse such a model, naming predict_outputs()). Batched by the
-- PredictBatch node like predict.
CREATE FUNCTION @extschema@.predict_outputs(name text, "row" anyelement)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_predict_outputs'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict_outputs(name text, features real[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_predict_outputs'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict_outputs(name text, features float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_predict_outputs'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION @extschema@.predict_outputs(text, anyelement) IS
'Every value a multi-output model predicts for the row (scikit-learn''s predict row), float8[]; a single-output model''s predict() as a one-element array';

-- The models view's outputs: a multi-output model's number of outputs (classes NULL for a
-- multi-output classifier: its outputs are the labels).
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
       created_at
  FROM @extschema@.model_catalog;
