-- pg_predict 0.8.0 -> 0.9.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.9.0'" to load this file. \quit

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
