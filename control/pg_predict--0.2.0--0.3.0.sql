-- pg_predict 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.3.0'" to load this file. \quit

-- The view shows the new columns.
DROP VIEW @extschema@.models;

-- The artifact as given, in the column of its SQL type: models from before were all jsonb.
ALTER TABLE @extschema@.model_catalog
    ALTER COLUMN source DROP NOT NULL,
    ADD COLUMN source_text text,
    ADD COLUMN source_bytes bytea,
    ADD CONSTRAINT model_catalog_one_source
        CHECK (pg_catalog.num_nonnulls(source, source_text, source_bytes) = 1);

-- create_model takes the artifact in the SQL type its format comes in: jsonb (XGBoost JSON, the
-- scikit-learn document), text (LightGBM's model.txt; text holding a JSON document is read as
-- JSON, which is what an untyped literal such as create_model('m', '{...}') resolves to) or
-- bytea (ONNX, TorchScript; pg_read_binary_file). format 'auto' detects it.
CREATE FUNCTION @extschema@.create_model(name text, model text, format text DEFAULT 'auto',
                                         options jsonb DEFAULT '{}')
RETURNS void
AS 'MODULE_PATHNAME', 'pg_predict_create_model_text'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.create_model(name text, model bytea, format text DEFAULT 'auto',
                                         options jsonb DEFAULT '{}')
RETURNS void
AS 'MODULE_PATHNAME', 'pg_predict_create_model_bytea'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.create_model(text, text, text, jsonb) IS
'Import a model artifact given as text (LightGBM model.txt, or a JSON document), compile it and store it under a name';
COMMENT ON FUNCTION @extschema@.create_model(text, bytea, text, jsonb) IS
'Import a model artifact given as bytes (ONNX, TorchScript), compile it and store it under a name';

COMMENT ON FUNCTION @extschema@.create_model(text, jsonb, text, jsonb) IS
'Import a model artifact (XGBoost JSON, scikit-learn document), compile it and store it under a name. options: features, columns, strategy, replace';

-- ---- 0.3.0: artifacts of every SQL type, TorchScript --------------------------------------

-- Importing foreign TorchScript runs the user's operators inside the server (libtorch's loader
-- and interpreter are not hardened against hostile programs): only superusers and members of
-- this role may do it. Roles are cluster-wide, so the role is created only when missing (another
-- database's CREATE EXTENSION may have made it) and DROP EXTENSION leaves it: drop it by hand
-- once no database uses pg_predict. (PostgreSQL reserves role names that start with "pg_".)
DO $role$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'pgpredict_torchscript') THEN
        CREATE ROLE pgpredict_torchscript NOLOGIN;
        COMMENT ON ROLE pgpredict_torchscript IS 'pg_predict: may create models from TorchScript modules (create_model(..., ''torchscript''))';
    END IF;
END
$role$;

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
       -- the model's shape: input features, output values (one per class for a classifier),
       -- what computes them (tree_ensemble, linear, torchscript, ...) after how many featurizer steps
       pg_catalog.cardinality(features) AS inputs,
       CASE WHEN task OPERATOR(pg_catalog.=) 'classification'
            THEN pg_catalog.cardinality(classes) ELSE 1 END AS outputs,
       (summary OPERATOR(pg_catalog.->>) 'estimator') AS estimator,
       coalesce((summary OPERATOR(pg_catalog.->>) 'steps')::int, 0) AS steps,
       pg_catalog.octet_length(program) AS program_bytes,
       created_at
  FROM @extschema@.model_catalog;
GRANT SELECT ON @extschema@.models TO PUBLIC;

COMMENT ON VIEW @extschema@.models IS 'Models registered with create_model(), their format and shape, their owners and who may use them';
