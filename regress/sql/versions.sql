-- Versions (0.6.0): create_model of an existing name adds a version, one version per name is
-- deployed and scored, deploy_model / rollback_model switch it (transactionally, re-planning
-- prepared statements), drop_model(name, version) removes one, pg_predict.keep_versions
-- bounds how many are kept, and only the owner (or a superuser) changes any of it.
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
\set regression_file :abs_srcdir '/fixtures/regression_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'regression_file') AS regression_model \gset

CREATE TABLE version_rows (tenure real, monthly_charges real, plan_id real);
INSERT INTO version_rows SELECT g % 20, g * 7 % 100, g % 3 FROM generate_series(1, 200) g;
-- the same artifacts under names of their own: what each version must score
SELECT create_model('v_regression', :'regression_model'::jsonb);
SELECT create_model('v_binary', :'binary_model'::jsonb);
CREATE VIEW version_check AS
SELECT count(*) AS rows,
       bool_and(predict('versioned', r) = predict('v_regression', r)) AS scores_regression,
       bool_and(predict('versioned', r) = predict('v_binary', r)) AS scores_binary
  FROM version_rows r;

SELECT create_model('versioned', :'regression_model'::jsonb);
SELECT create_model('versioned', :'binary_model'::jsonb);
SELECT * FROM version_check;
SELECT name, version, versions, task FROM models WHERE name = 'versioned';
-- a staged version: added, not deployed
SELECT create_model('versioned', :'regression_model'::jsonb, options => '{"deploy": false}');
SELECT * FROM version_check;
SELECT version, deployed, deployed_at IS NOT NULL AS was_deployed, owner, created_by, format, task, metrics
  FROM model_versions WHERE name = 'versioned' ORDER BY version;

-- a prepared statement is re-planned for the version deployed when it runs
PREPARE scored AS SELECT sum(predict('versioned', r)) = (SELECT sum(predict('v_binary', q)) FROM version_rows q)
  AS binary_scored FROM version_rows r;
EXECUTE scored;
-- rollback_model undoes the last deployment (1: 2 is deployed, 3 was added without)
SELECT rollback_model('versioned');
SELECT * FROM version_check;
EXECUTE scored;
SELECT rollback_model('versioned');
-- deploy_model: any version
SELECT deploy_model('versioned', 3);
SELECT * FROM version_check;
-- EXPLAIN names the version a plan scores (from version 2 on)
EXPLAIN (COSTS OFF) SELECT predict('versioned', r) FROM version_rows r;
SELECT deploy_model('versioned', 9);
SELECT deploy_model('nope', 1);
SELECT deploy_model('versioned', NULL);
SELECT deploy_model(NULL, 1);
SELECT rollback_model(NULL);
SELECT rollback_model('versioned');  -- 1: it undoes deploy_model('versioned', 3) (deploy_history.sql)
SELECT deploy_model('versioned', 2);
SELECT version, deployed FROM model_versions WHERE name = 'versioned' ORDER BY version;

-- the switch is transactional
BEGIN;
SELECT deploy_model('versioned', 1);
SELECT * FROM version_check;
ROLLBACK;
SELECT name, version FROM models WHERE name = 'versioned';
EXECUTE scored;

-- drop_model(name, version): not the deployed one while others remain
SELECT drop_model('versioned', 2);
SELECT drop_model('versioned', 7);
SELECT drop_model('versioned', NULL);
SELECT drop_model('versioned', 1);
SELECT version, deployed FROM model_versions WHERE name = 'versioned' ORDER BY version;
SELECT * FROM version_check;

-- pg_predict.keep_versions: the newest N and the deployed one stay
SET pg_predict.keep_versions = 2;
SELECT create_model('versioned', :'regression_model'::jsonb, options => '{"deploy": false}');
SELECT create_model('versioned', :'regression_model'::jsonb, options => '{"deploy": false}');
SELECT version, deployed FROM model_versions WHERE name = 'versioned' ORDER BY version;
SET pg_predict.keep_versions = -1;
RESET pg_predict.keep_versions;

-- the only version: dropping it drops the model
SELECT create_model('single', :'regression_model'::jsonb);
SELECT drop_model('single', 1);
SELECT count(*) FROM model_versions WHERE name = 'single';

-- owners: only the owner (or a superuser) adds, deploys, rolls back or drops a version; a role
-- granted the model's use scores every version it is given, and nothing more
CREATE ROLE version_owner;
CREATE ROLE version_user;
GRANT SELECT ON version_rows TO version_user;
SET ROLE version_owner;
SELECT create_model('owned_versions', :'regression_model'::jsonb);
SELECT grant_model_usage('owned_versions', 'version_user');
RESET ROLE;
-- a superuser adds a version: the model keeps its owner and grants, created_by says who
SELECT create_model('owned_versions', :'binary_model'::jsonb);
SELECT version, deployed, owner, created_by FROM model_versions WHERE name = 'owned_versions' ORDER BY version;
SET ROLE version_user;
SELECT count(*), bool_and(predict('owned_versions', r) BETWEEN 0 AND 1) AS binary_version FROM version_rows r;
SELECT create_model('owned_versions', :'regression_model'::jsonb);
SELECT deploy_model('owned_versions', 1);
SELECT rollback_model('owned_versions');
SELECT drop_model('owned_versions', 1);
RESET ROLE;
SET ROLE version_owner;
SELECT rollback_model('owned_versions');
SELECT drop_model('owned_versions', 2);
RESET ROLE;
SELECT version, deployed FROM model_versions WHERE name = 'owned_versions' ORDER BY version;

-- a read-only transaction changes nothing
BEGIN READ ONLY;
SELECT deploy_model('versioned', 4);
ROLLBACK;
BEGIN READ ONLY;
SELECT rollback_model('versioned');
ROLLBACK;

SELECT drop_model('owned_versions');
SELECT drop_model('versioned');
SELECT count(*) FROM model_versions WHERE name IN ('versioned', 'owned_versions');
SELECT drop_model('v_regression');
SELECT drop_model('v_binary');
DROP VIEW version_check;
DROP TABLE version_rows;
DROP ROLE version_owner;
DROP ROLE version_user;
