-- The catalog is not writable by ordinary roles, models are owned, and pg_predict objects
-- behave as ordinary catalog rows.
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset

CREATE ROLE pgp_alice;
CREATE ROLE pgp_bob;
GRANT CREATE ON SCHEMA public TO pgp_alice, pgp_bob;

SET ROLE pgp_alice;
SELECT create_model('alice_model', :'binary_model'::jsonb);
SELECT name, owner FROM models WHERE name = 'alice_model';
SELECT predict('alice_model', ARRAY[5, 30, 1]::real[]);
-- no direct access to the catalog table
SELECT count(*) FROM model_catalog;
INSERT INTO model_catalog (id, name) VALUES (1, 'x');
UPDATE model_catalog SET program = '\x00';
RESET ROLE;

SET ROLE pgp_bob;
-- only its owner may score with it (until a grant, see privileges.sql), replace or drop it
SELECT predict('alice_model', ARRAY[20, 80, 2]::real[]);
SELECT drop_model('alice_model');
SELECT create_model('alice_model', :'binary_model'::jsonb, options => '{"replace": true}');
RESET ROLE;

-- a superuser may
SELECT create_model('alice_model', :'binary_model'::jsonb, options => '{"replace": true}');
SELECT name, owner FROM models WHERE name = 'alice_model';
SET ROLE pgp_alice;
SELECT drop_model('alice_model');
RESET ROLE;

-- the extension's tables are dumped with the data
SELECT c.relname, e.extname
  FROM pg_extension e, unnest(e.extconfig) cfg JOIN pg_class c ON c.oid = cfg
 ORDER BY c.relname;

-- every function, view, table and sequence of the extension says what it is (\df+, \dx+)
SELECT d.classid::regclass AS kind,
       CASE WHEN d.classid = 'pg_proc'::regclass THEN d.objid::regprocedure::text ELSE d.objid::regclass::text END AS object
  FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid AND d.refclassid = 'pg_extension'::regclass
 WHERE e.extname = 'pg_predict' AND d.deptype = 'e'
   AND obj_description(d.objid, d.classid::regclass::text) IS NULL
 ORDER BY 1, 2;

REVOKE CREATE ON SCHEMA public FROM pgp_alice, pgp_bob;
DROP ROLE pgp_alice;
DROP ROLE pgp_bob;
