-- pg_predict 0.9.0 (full install script; pg_predict--0.8.0--0.9.0.sql upgrades 0.8.0)
\echo Use "CREATE EXTENSION pg_predict" to load this file. \quit

-- The catalog. Ordinary roles get no privileges on it: the compiled program bytes are executed
-- by libtorch's loader, so only bytes the extension itself produced may ever land here. The C
-- functions below write it as the table's owner after checking model ownership.
CREATE SEQUENCE @extschema@.model_catalog_id_seq;

CREATE TABLE @extschema@.model_catalog (
    id          bigint PRIMARY KEY,          -- new for every create or replace (cache key)
    -- at most NAMEDATALEN - 1 bytes, like a PostgreSQL identifier (create_model says so first)
    name        text NOT NULL UNIQUE CHECK (name <> '' AND pg_catalog.octet_length(name) <= 63),
    -- The owner and the roles that may use the model are kept by role NAME, not OID, so that a
    -- dump restores into a cluster that lacks the roles (pg_restore --no-owner) and a role OID
    -- from another cluster never maps to an unrelated role. A name that resolves to no role
    -- means: only superusers manage the model (NULL: its owner was dropped before 0.2.0).
    owner       text CHECK (owner <> ''),
    usable_by   text[] NOT NULL DEFAULT '{}',  -- grant_model_usage(): role names, 'public' for PUBLIC
    format      text NOT NULL,               -- source format, e.g. 'xgboost'
    -- The artifact as given to create_model, in the column of its SQL type (exactly one is set).
    source      jsonb,                       -- JSON documents given as jsonb (XGBoost, scikit-learn)
    source_text text,                        -- given as text (LightGBM's model.txt, JSON as text)
    source_bytes bytea,                      -- given as bytea (ONNX, TorchScript)
    spec        jsonb NOT NULL,              -- the imported pipeline, readable (before the optimizer; explain_model shows both)
    program     bytea NOT NULL,              -- the compiled TorchScript module
    features    text[] NOT NULL,             -- the model's feature names, input order
    columns     text[] NOT NULL,             -- the column each feature reads
    task        text NOT NULL CHECK (task IN ('regression', 'classification')),
    classes     float8[],                    -- class labels, output order (classifiers)
    strategy    text NOT NULL,               -- how trees were compiled
    options     jsonb NOT NULL,              -- create_model's options
    summary     jsonb NOT NULL,              -- objective, trees, depth, ...
    text_features int4[] NOT NULL DEFAULT '{}', -- inputs read as text (0-based)
    text_inputs jsonb NOT NULL DEFAULT '[]',    -- their dictionaries
    unused_features int4[] NOT NULL DEFAULT '{}', -- inputs the model never reads (not fetched)
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (cardinality(features) = cardinality(columns)),
    CONSTRAINT model_catalog_one_source CHECK (pg_catalog.num_nonnulls(source, source_text, source_bytes) = 1)
);
ALTER SEQUENCE @extschema@.model_catalog_id_seq OWNED BY @extschema@.model_catalog.id;
REVOKE ALL ON @extschema@.model_catalog FROM PUBLIC;
REVOKE ALL ON SEQUENCE @extschema@.model_catalog_id_seq FROM PUBLIC;

-- pg_dump includes the models.
SELECT pg_catalog.pg_extension_config_dump('@extschema@.model_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.model_catalog_id_seq', '');

-- create_model takes the artifact in the SQL type its format comes in: jsonb (XGBoost JSON, the
-- scikit-learn document), text (LightGBM's model.txt; text holding a JSON document is read as
-- JSON, which is what an untyped literal such as create_model('m', '{...}') resolves to) or
-- bytea (ONNX, TorchScript; pg_read_binary_file). format 'auto' detects it.
CREATE FUNCTION @extschema@.create_model(name text, model jsonb, format text DEFAULT 'auto',
                                         options jsonb DEFAULT '{}')
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_create_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.create_model(name text, model text, format text DEFAULT 'auto',
                                         options jsonb DEFAULT '{}')
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_create_model_text'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.create_model(name text, model bytea, format text DEFAULT 'auto',
                                         options jsonb DEFAULT '{}')
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_create_model_bytea'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.create_model(text, jsonb, text, jsonb) IS
'Import a model artifact (XGBoost JSON, scikit-learn document), compile it and store it under a name; returns the version it added. options: features, columns, strategy, replace';
COMMENT ON FUNCTION @extschema@.create_model(text, text, text, jsonb) IS
'Import a model artifact given as text (LightGBM model.txt, or a JSON document), compile it and store it under a name; returns the version it added';
COMMENT ON FUNCTION @extschema@.create_model(text, bytea, text, jsonb) IS
'Import a model artifact given as bytes (ONNX, TorchScript), compile it and store it under a name; returns the version it added';

CREATE FUNCTION @extschema@.drop_model(name text)
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_drop_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- predict: the value for a regressor, the class label for a classifier.
-- The row form reads the model's features from the row's columns by name; the array forms
-- read them by position. A NULL feature is a missing value; a NULL row or array gives NULL.
CREATE FUNCTION @extschema@.predict(name text, "row" anyelement)
RETURNS float8
AS 'MODULE_PATHNAME', 'pg_predict_predict'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict(name text, features real[])
RETURNS float8
AS 'MODULE_PATHNAME', 'pg_predict_predict'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict(name text, features float8[])
RETURNS float8
AS 'MODULE_PATHNAME', 'pg_predict_predict'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

-- predict_proba: class probabilities in the model's class order (classifiers only).
CREATE FUNCTION @extschema@.predict_proba(name text, "row" anyelement)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_predict_proba'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict_proba(name text, features real[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_predict_proba'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION @extschema@.predict_proba(name text, features float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'pg_predict_predict_proba'
LANGUAGE C STABLE PARALLEL SAFE COST 1000;

-- explain_model: what the optimizer did to a model (jsonb): "before" (the spec as imported) and
-- "after" (as compiled), "passes" (each optimizer pass and what it changed), and
-- "columns_read" / "columns_not_read" (the inputs the scan fetches and those it leaves out).
CREATE FUNCTION @extschema@.explain_model(name text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pg_predict_explain_model'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.explain_model(text) IS
'The model''s spec before and after optimization, what each optimizer pass did, and the input columns read';

-- ---- 0.2.0: owners and usage by role name, per-model privileges -------------------------

-- Who may use a model (predict, predict_proba, explain_model): its owner, superusers, and the
-- roles granted with grant_model_usage ('public': every role). The same test the C code makes
-- once per statement; the models view shows it for the current role.
CREATE FUNCTION @extschema@.model_usable(owner text, usable_by text[])
RETURNS bool
AS 'MODULE_PATHNAME', 'pg_predict_model_usable'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION @extschema@.grant_model_usage(model text, role text)
RETURNS void
AS 'MODULE_PATHNAME', 'pg_predict_grant_model_usage'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.grant_model_usage(text, text) IS
'Let a role (or ''public'') score the model and explain it; only the model''s owner or a superuser may grant';

CREATE FUNCTION @extschema@.revoke_model_usage(model text, role text)
RETURNS void
AS 'MODULE_PATHNAME', 'pg_predict_revoke_model_usage'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.revoke_model_usage(text, text) IS
'Take back what grant_model_usage gave; only the model''s owner or a superuser may revoke';

CREATE FUNCTION @extschema@.set_model_owner(model text, new_owner text)
RETURNS void
AS 'MODULE_PATHNAME', 'pg_predict_set_model_owner'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.set_model_owner(text, text) IS
'Give the model to another role, as ALTER ... OWNER TO: a superuser, or its owner when a member of the new role';


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
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_deploy_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.deploy_model(text, int4) IS
'Make a version of the model the one predict() uses (only its owner or a superuser) and return it; plans that use the model are re-planned; rollback_model() undoes it';

CREATE FUNCTION @extschema@.rollback_model(name text)
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_rollback_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.rollback_model(text) IS
'Undo the model''s last deployment: deploy the version deployed before it (model_deployments) and return its number';

CREATE FUNCTION @extschema@.drop_model(name text, version int4)
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_drop_model_version'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.drop_model(text, int4) IS
'Remove one version of the model (not the deployed one while others remain; the only one drops the model); returns how many versions remain';

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
                                  seed int8 DEFAULT 0, deploy text DEFAULT 'always',
                                  exclude text[] DEFAULT '{}')
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pg_predict_train'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.train(text, text, text, text, jsonb, float8, int8, text, text[]) IS
'Train a model (xgboost, linear, logistic) on the rows of a query, every column but the target and those in exclude a feature, and register it (a new version keeps the task); returns its test-split metrics';

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
'Remove the model, every version of it, and its grants (its owner or a superuser); returns how many versions it removed';
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

-- ---- 0.8.0: the deploy history, and what the model functions did (issue 32) ---------------

-- Each version keeps the times it was deployed, oldest first: together, a name's deploy history.
-- deploy_model() and a new deployed version append to it; rollback_model() undoes the newest
-- entry. It lives in the catalog's own rows, so it is dropped with its version, replicated with
-- the catalog (standbys, Citus) and dumped with it.
ALTER TABLE @extschema@.model_catalog ADD COLUMN deployments timestamptz[] NOT NULL DEFAULT '{}';

-- Every deployment of every model: the history rollback_model() undoes, newest deployed_at first.
CREATE VIEW @extschema@.model_deployments AS
SELECT c.name,
       c.version,
       d.deployed_at,
       -- the deployment in force: the deployed version's newest
       c.deployed AND d.deployed_at OPERATOR(pg_catalog.=) c.deployments[pg_catalog.cardinality(c.deployments)]
           AS current,
       @extschema@.model_usable(c.owner, c.usable_by) AS usable
  FROM @extschema@.model_catalog c, pg_catalog.unnest(c.deployments) AS d(deployed_at);
GRANT SELECT ON @extschema@.model_deployments TO PUBLIC;
COMMENT ON VIEW @extschema@.model_deployments IS
'Every deployment of every model version (deployed_at): the history rollback_model() undoes, the newest first';


-- ---- 0.9.0: cascades (issue 48) --------------------------------------------------------------

-- A version's cascade (create_cascade): the small model, its inputs and threshold, and what was
-- measured. It lives in the version's own catalog row, so it belongs to that version (a new
-- version has none; a rollback brings the old one back with its cascade), and it is dumped and
-- replicated with the catalog. On Citus the coordinator's ALTER TABLE reaches every node's copy;
-- a worker's own run finds the column (IF NOT EXISTS).
ALTER TABLE @extschema@.model_catalog ADD COLUMN IF NOT EXISTS cascade jsonb;

CREATE FUNCTION @extschema@.create_cascade(name text, query text, max_disagreement float8 DEFAULT 0.001,
                                           options jsonb DEFAULT '{}')
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pg_predict_create_cascade'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.create_cascade(text, text, float8, jsonb) IS
'Builds a cascade for the deployed version of classifier name from the query''s rows (labelled by the model itself): a small model on its cheap, informative inputs and the confidence above which its label stands, chosen so that it differs from the model on at most max_disagreement of the rows; the same small model is the top-K filter of its probabilities (pg_predict.approximate_top_k); for a regressor, only a top-K filter of its value; options: seed, trees, depth, gamma. Returns what it chose and measured';

CREATE FUNCTION @extschema@.drop_cascade(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_predict_drop_cascade'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.drop_cascade(text) IS
'Drops the cascade of the deployed version of model name; true if it had one';

-- The models view: whether the deployed version has a cascade.
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
         WHERE v.name OPERATOR(pg_catalog.=) c.name)::int4 AS versions,
       cascade IS NOT NULL AS cascade  -- the deployed version has one (create_cascade)
  FROM @extschema@.model_catalog c
 WHERE deployed;

-- ---- 0.9.0: programs shared between backends (issue 49) -----------------------------------
-- With pg_predict preloaded, one backend's native program (trees, linear models) is kept once in
-- shared memory (pg_predict.shared_programs_size) and other backends map it instead of loading
-- their own copy (docs/execution.md "Programs shared between backends"). One row per image of
-- this database's catalog: the model version (model_catalog.id), its bytes, and how many
-- backends map it now. Empty without preloading. Every role sees them, as model_stats.
CREATE FUNCTION @extschema@.shared_programs(OUT model_id bigint, OUT bytes bigint, OUT backends int4)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_predict_shared_programs'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION @extschema@.shared_programs() IS
'Model programs kept once in shared memory for every backend: version id, bytes, backends mapping it';

-- The area as a whole, every database's images together: its size, the bytes and images in it,
-- images evicted to make room and programs that stayed private (no room; all 0 without
-- preloading or with pg_predict.shared_programs_size = 0).
CREATE FUNCTION @extschema@.shared_programs_info(OUT size_bytes bigint, OUT used_bytes bigint, OUT images bigint,
                                                 OUT evicted bigint, OUT not_shared bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_predict_shared_programs_info'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION @extschema@.shared_programs_info() IS
'The shared programs'' area: size, bytes and images used, images evicted, programs left private for want of room';

-- ---- 0.9.0: profiles and drift (issue 50) ------------------------------------------------
-- A version's profile (profile_model): what its inputs and output looked like on the rows it
-- learned from, or any rows (docs/monitoring.md). In the version's own catalog row, so it is the
-- owner's, dumped and replicated with the catalog (on Citus, every node's copy).
ALTER TABLE @extschema@.model_catalog ADD COLUMN IF NOT EXISTS profile jsonb;
ALTER TABLE @extschema@.model_catalog ADD COLUMN IF NOT EXISTS profiled_at timestamptz;

CREATE FUNCTION @extschema@.profile_model(name text, query text, version int DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pg_predict_profile_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.profile_model(text, text, int) IS
'Profiles the query''s rows for model name (the deployed version, or version): per column the model reads, count, NULL share, min, max, mean, standard deviation, quantiles and decile bins for numbers, category shares for text; the distribution of the version''s output. Stores the profile with the version (only its owner may) and returns it';

CREATE FUNCTION @extschema@.model_drift(name text, query text, baseline text DEFAULT NULL, options jsonb DEFAULT '{}')
RETURNS TABLE(feature text, kind text, statistic text, value float8, threshold float8, anomaly boolean, detail jsonb)
AS 'MODULE_PATHNAME', 'pg_predict_model_drift'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.model_drift(text, text, text, jsonb) IS
'Compares the query''s rows with the deployed version''s profile (baseline NULL: training-serving skew) or with the baseline query''s rows (drift between two windows): one row per column the model reads and one for its output, with the statistic (options: psi, jensen_shannon, ks, linf), its threshold, whether it or the change in NULL share or new categories flag an anomaly, and every statistic in detail';

-- The models view: when the deployed version's profile was taken.
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
         WHERE v.name OPERATOR(pg_catalog.=) c.name)::int4 AS versions,
       cascade IS NOT NULL AS cascade,  -- the deployed version has one (create_cascade)
       profiled_at  -- when the deployed version's profile was taken (profile_model); NULL: none
  FROM @extschema@.model_catalog c
 WHERE deployed;

-- model_versions: when each version's profile was taken.
CREATE OR REPLACE VIEW @extschema@.model_versions AS
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
       @extschema@.model_usable(owner, usable_by) AS usable,
       profiled_at  -- when its profile was taken (profile_model); NULL: none
  FROM @extschema@.model_catalog;
