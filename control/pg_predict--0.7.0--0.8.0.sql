-- pg_predict 0.7.0 -> 0.8.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.8.0'" to load this file. \quit

-- ---- 0.8.0: the deploy history, and what the model functions did (issue 32) ---------------

-- Each version keeps the times it was deployed, oldest first: together, a name's deploy history.
-- deploy_model() and a new deployed version append to it; rollback_model() undoes the newest
-- entry. It lives in the catalog's own rows, so it is dropped with its version, replicated with
-- the catalog (standbys, Citus) and dumped with it. The versions from before keep their last
-- deployment, the one 0.7.0 knew.
--
-- On Citus the catalog is a reference table, and ALTER EXTENSION UPDATE on the coordinator runs
-- this script on every node. The coordinator's ALTER TABLE and UPDATE reach every node's copy;
-- a worker's own run then finds the column (IF NOT EXISTS) and leaves the rows alone: Citus
-- refuses its UPDATE ("cannot execute a distributed query from a query on a shard").
ALTER TABLE @extschema@.model_catalog ADD COLUMN IF NOT EXISTS deployments timestamptz[] NOT NULL DEFAULT '{}';
DO $$
DECLARE
    citus_worker boolean := false;
BEGIN
    IF pg_catalog.to_regproc('pg_catalog.citus_is_coordinator') IS NOT NULL THEN
        EXECUTE 'SELECT NOT pg_catalog.citus_is_coordinator() AND EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                   WHERE logicalrelid OPERATOR(pg_catalog.=) ''@extschema@.model_catalog''::pg_catalog.regclass)'
            INTO citus_worker;
    END IF;
    IF NOT citus_worker THEN
        UPDATE @extschema@.model_catalog SET deployments = ARRAY[deployed_at] WHERE deployed_at IS NOT NULL;
    END IF;
END
$$;

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

-- create_model, drop_model and deploy_model say what they did: they returned void before.
DROP FUNCTION @extschema@.create_model(text, jsonb, text, jsonb);
DROP FUNCTION @extschema@.create_model(text, text, text, jsonb);
DROP FUNCTION @extschema@.create_model(text, bytea, text, jsonb);
DROP FUNCTION @extschema@.drop_model(text);
DROP FUNCTION @extschema@.drop_model(text, int4);
DROP FUNCTION @extschema@.deploy_model(text, int4);

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

CREATE FUNCTION @extschema@.drop_model(name text)
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_drop_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.drop_model(name text, version int4)
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_drop_model_version'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.deploy_model(name text, version int4)
RETURNS int4
AS 'MODULE_PATHNAME', 'pg_predict_deploy_model'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.create_model(text, jsonb, text, jsonb) IS
'Import a model artifact (XGBoost JSON, scikit-learn document), compile it and store it under a name; returns the version it added. options: features, columns, strategy, replace';
COMMENT ON FUNCTION @extschema@.create_model(text, text, text, jsonb) IS
'Import a model artifact given as text (LightGBM model.txt, or a JSON document), compile it and store it under a name; returns the version it added';
COMMENT ON FUNCTION @extschema@.create_model(text, bytea, text, jsonb) IS
'Import a model artifact given as bytes (ONNX, TorchScript), compile it and store it under a name; returns the version it added';
COMMENT ON FUNCTION @extschema@.drop_model(text) IS
'Remove the model, every version of it, and its grants (its owner or a superuser); returns how many versions it removed';
COMMENT ON FUNCTION @extschema@.drop_model(text, int4) IS
'Remove one version of the model (not the deployed one while others remain; the only one drops the model); returns how many versions remain';
COMMENT ON FUNCTION @extschema@.deploy_model(text, int4) IS
'Make a version of the model the one predict() uses (only its owner or a superuser) and return it; plans that use the model are re-planned; rollback_model() undoes it';
COMMENT ON FUNCTION @extschema@.rollback_model(text) IS
'Undo the model''s last deployment: deploy the version deployed before it (model_deployments) and return its number';

-- train() takes the query's columns to leave out (an id, a timestamp): exclude.
DROP FUNCTION @extschema@.train(text, text, text, text, jsonb, float8, int8, text);
CREATE FUNCTION @extschema@.train(name text, query text, target text, algorithm text DEFAULT 'xgboost',
                                  hyperparams jsonb DEFAULT '{}', test_size float8 DEFAULT 0.2,
                                  seed int8 DEFAULT 0, deploy text DEFAULT 'always',
                                  exclude text[] DEFAULT '{}')
RETURNS jsonb
AS 'MODULE_PATHNAME', 'pg_predict_train'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.train(text, text, text, text, jsonb, float8, int8, text, text[]) IS
'Train a model (xgboost, linear, logistic) on the rows of a query, every column but the target and those in exclude a feature, and register it (a new version keeps the task); returns its test-split metrics';
