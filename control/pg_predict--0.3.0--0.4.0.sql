-- pg_predict 0.3.0 -> 0.4.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.4.0'" to load this file. \quit

-- ---- 0.4.0: scikit-learn as people use it (issue 13) -------------------------------------

-- transform(): a scikit-learn pipeline that ends in a transformer is a model of task
-- 'transformer'; the models view's outputs is then its number of output columns.
ALTER TABLE @extschema@.model_catalog DROP CONSTRAINT model_catalog_task_check;
ALTER TABLE @extschema@.model_catalog ADD CONSTRAINT model_catalog_task_check
    CHECK (task IN ('regression', 'classification', 'transformer'));

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
       classes,
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
       CASE WHEN task OPERATOR(pg_catalog.=) 'classification' THEN pg_catalog.cardinality(classes)
            WHEN task OPERATOR(pg_catalog.=) 'transformer' THEN (summary OPERATOR(pg_catalog.->>) 'num_groups')::int
            ELSE 1 END AS outputs,
       (summary OPERATOR(pg_catalog.->>) 'estimator') AS estimator,
       coalesce((summary OPERATOR(pg_catalog.->>) 'steps')::int, 0) AS steps,
       pg_catalog.octet_length(program) AS program_bytes,
       created_at
  FROM @extschema@.model_catalog;

-- transform: the output columns of a pipeline that ends in a transformer (scikit-learn's
-- transform), float8[]; batched by the PredictBatch node like predict.
CREATE FUNCTION @extschema@.transform(name text, "row" anyelement)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_transform'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.transform(name text, features real[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_transform'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.transform(name text, features float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_transform'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

-- decision_function: scikit-learn's decision_function, float8[] with one element per margin
-- (one for a binary classifier or an IsolationForest, one per class otherwise).
CREATE FUNCTION @extschema@.decision_function(name text, "row" anyelement)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_decision_function'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.decision_function(name text, features real[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_decision_function'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.decision_function(name text, features float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_decision_function'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

-- score_samples: scikit-learn's score_samples (IsolationForest), float8.
CREATE FUNCTION @extschema@.score_samples(name text, "row" anyelement)
RETURNS float8
AS 'MODULE_PATHNAME', 'pg_predict_score_samples'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.score_samples(name text, features real[])
RETURNS float8
AS 'MODULE_PATHNAME', 'pg_predict_score_samples'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.score_samples(name text, features float8[])
RETURNS float8
AS 'MODULE_PATHNAME', 'pg_predict_score_samples'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;
