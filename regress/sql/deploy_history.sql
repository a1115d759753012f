-- The deploy history (0.8.0): every deployment of a version is kept (model_deployments), and
-- rollback_model() undoes the newest one, as an undo stack: it deploys the version deployed
-- before it, whatever its number. create_model, deploy_model and drop_model return what they
-- did.
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
\set regression_file :abs_srcdir '/fixtures/regression_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'regression_file') AS regression_model \gset

-- The history in order, and what each step left deployed.
CREATE VIEW history AS
SELECT string_agg(version::text || CASE WHEN current THEN '*' ELSE '' END, ' ' ORDER BY deployed_at) AS deployments
  FROM model_deployments WHERE name = 'h';

-- create_model returns the version it added; a deployed one enters the history
SELECT create_model('h', :'regression_model'::jsonb) AS added;
SELECT create_model('h', :'binary_model'::jsonb) AS added;
-- a staged version (deploy false) is added, not deployed: no history entry
SELECT create_model('h', :'regression_model'::jsonb, options => '{"deploy": false}') AS added;
SELECT * FROM history;

-- deploy_model returns the version it deployed, and records it
SELECT deploy_model('h', 1) AS deployed;
SELECT deploy_model('h', 3) AS deployed;
SELECT * FROM history;
-- deploying the deployed version changes nothing, and adds nothing
SELECT deploy_model('h', 3) AS deployed;
SELECT * FROM history;

-- after deploy_model(name, 1) a rollback undoes it: what served before comes back, whatever its number
SELECT deploy_model('h', 1) AS deployed;
SELECT rollback_model('h') AS rolled_back_to;
SELECT version FROM models WHERE name = 'h';
SELECT * FROM history;
-- each rollback undoes one more: 3 came after 1, 1 after 2, 2 after 1
SELECT rollback_model('h') AS rolled_back_to;
SELECT rollback_model('h') AS rolled_back_to;
SELECT * FROM history;
SELECT rollback_model('h') AS rolled_back_to;
SELECT * FROM history;
-- the first deployment: nothing before it
SELECT rollback_model('h');
SELECT version FROM models WHERE name = 'h';

-- a deploy after rollbacks starts from there
SELECT deploy_model('h', 3) AS deployed;
SELECT deploy_model('h', 2) AS deployed;
SELECT * FROM history;
-- a dropped version leaves the history with it: the rollback skips to what is left (1)
SELECT drop_model('h', 3) AS versions_left;
SELECT * FROM history;
SELECT rollback_model('h') AS rolled_back_to;
SELECT * FROM history;

-- the history is transactional
BEGIN;
SELECT deploy_model('h', 2) AS deployed;
SELECT * FROM history;
ROLLBACK;
SELECT * FROM history;
SELECT version FROM models WHERE name = 'h';

-- the scores follow: version 1 is the regression
CREATE TABLE h_rows (tenure real, monthly_charges real, plan_id real);
INSERT INTO h_rows SELECT g % 20, g * 7 % 100, g % 3 FROM generate_series(1, 50) g;
SELECT create_model('h_regression', :'regression_model'::jsonb) AS added;
SELECT bool_and(predict('h', r) = predict('h_regression', r)) AS scores_version_1 FROM h_rows r;

-- pg_predict.keep_versions removes old versions, and their history with them
SET pg_predict.keep_versions = 1;
SELECT create_model('h', :'binary_model'::jsonb) AS added;
RESET pg_predict.keep_versions;
SELECT version, deployed FROM model_versions WHERE name = 'h' ORDER BY version;
SELECT * FROM history;
SELECT rollback_model('h');

-- who may read the history: the model's users (the usable column), as model_versions
CREATE ROLE history_reader;
SET ROLE history_reader;
SELECT count(*) > 0 AS sees_rows, bool_or(usable) AS may_use FROM model_deployments WHERE name = 'h';
RESET ROLE;
DROP ROLE history_reader;

-- drop_model returns how many versions it removed; dropping the name again is an error, and a
-- model created again under the name starts a new history
SELECT drop_model('h') AS versions_removed;
SELECT drop_model('h');
SELECT count(*) FROM model_deployments WHERE name = 'h';
SELECT create_model('h', :'regression_model'::jsonb) AS added;
SELECT * FROM history;
SELECT drop_model('h', 1) AS versions_left;
SELECT drop_model('h_regression') AS versions_removed;
DROP VIEW history;
DROP TABLE h_rows;
