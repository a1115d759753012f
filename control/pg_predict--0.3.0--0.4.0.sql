-- pg_predict 0.3.0 -> 0.4.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.4.0'" to load this file. \quit

-- ---- 0.4.0: scikit-learn as people use it (issue 13) -------------------------------------

-- transform(): a scikit-learn pipeline that ends in a transformer is a model of task
-- 'transformer'; the models view's outputs is then its number of output columns.
ALTER TABLE @extschema@.model_catalog DROP CONSTRAINT model_catalog_task_check;
ALTER TABLE @extschema@.model_catalog ADD CONSTRAINT model_catalog_task_check
    CHECK (task IN ('regression', 'classification', 'transformer'));

-- Class labels of any type scikit-learn allows. class_labels: every classifier's labels as
-- text, in output column order (predict_proba's order, scikit-learn's sorted classes_), what
-- predict_label() returns; a numeric label is written as float8's text ('1' for 1.0). classes
-- keeps the numeric labels predict() returns, NULL when they are not numbers (strings,
-- booleans: predict() refuses such a model, predict_label() gives the label).
ALTER TABLE @extschema@.model_catalog ADD COLUMN class_labels text[];

CREATE FUNCTION @extschema@.predict_label(name text, "row" anyelement)
RETURNS text
AS 'MODULE_PATHNAME', 'pg_predict_predict_label'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict_label(name text, features real[])
RETURNS text
AS 'MODULE_PATHNAME', 'pg_predict_predict_label'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict_label(name text, features float8[])
RETURNS text
AS 'MODULE_PATHNAME', 'pg_predict_predict_label'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION @extschema@.predict_label(text, anyelement) IS
'The predicted class of a classifier as text: scikit-learn''s label (a string, true/false), or a numeric label''s float8 text';

-- The models view shows the classes as text (class_labels): a column's type changes, so the
-- view is made again.
DROP VIEW @extschema@.models;
CREATE VIEW @extschema@.models AS
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
       CASE WHEN task OPERATOR(pg_catalog.=) 'classification' THEN pg_catalog.cardinality(class_labels)
            WHEN task OPERATOR(pg_catalog.=) 'transformer' THEN (summary OPERATOR(pg_catalog.->>) 'num_groups')::int
            ELSE 1 END AS outputs,
       (summary OPERATOR(pg_catalog.->>) 'estimator') AS estimator,
       coalesce((summary OPERATOR(pg_catalog.->>) 'steps')::int, 0) AS steps,
       pg_catalog.octet_length(program) AS program_bytes,
       created_at
  FROM @extschema@.model_catalog;
GRANT SELECT ON @extschema@.models TO PUBLIC;

COMMENT ON VIEW @extschema@.models IS 'Models registered with create_model(), their format and shape, their owners and who may use them';

-- Models from before 0.4.0 have numeric labels: their text is float8's (extra_float_digits 1,
-- the shortest text that reads back as the same float8, whatever the session says).
DO $labels$
DECLARE
    saved text := pg_catalog.current_setting('extra_float_digits');
BEGIN
    PERFORM pg_catalog.set_config('extra_float_digits', '1', true);
    UPDATE @extschema@.model_catalog SET class_labels = classes::pg_catalog.text[] WHERE classes IS NOT NULL;
    PERFORM pg_catalog.set_config('extra_float_digits', saved, true);
END
$labels$;

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
