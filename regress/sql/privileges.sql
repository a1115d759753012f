-- Per-model privileges (grant_model_usage / revoke_model_usage / set_model_owner), the
-- checks on every predict form and explain_model, role commands (DROP ROLE, REASSIGN OWNED,
-- DROP OWNED, RENAME), read-only transactions, name limits and the search_path trap.
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset

CREATE ROLE pgp_owner;
CREATE ROLE pgp_user;
CREATE ROLE pgp_team;
CREATE ROLE pgp_member IN ROLE pgp_team;
GRANT CREATE ON SCHEMA public TO pgp_owner, pgp_user;
CREATE TABLE pgp_rows (tenure real, monthly_charges real, plan_id real);
INSERT INTO pgp_rows SELECT g, g * 10, g % 3 FROM generate_series(1, 50) g;
GRANT SELECT ON pgp_rows TO PUBLIC;

SET ROLE pgp_owner;
SELECT create_model('owned', :'binary_model'::jsonb);
SELECT predict('owned', ARRAY[5, 30, 1]::real[]);
SELECT name, owner, usable_by, usable FROM models WHERE name = 'owned';
RESET ROLE;

-- a new model is usable by its owner (and superusers) only: every form is refused, once per
-- statement, with the same error
SET ROLE pgp_user;
SELECT name, owner, usable_by, usable FROM models WHERE name = 'owned';
SELECT predict('owned', ARRAY[5, 30, 1]::real[]);
SELECT predict('owned', ARRAY[5, 30, 1]::float8[]);
SELECT predict_proba('owned', ARRAY[5, 30, 1]::real[]);
SELECT sum(predict('owned', r)) FROM pgp_rows r;
SELECT sum((predict_proba('owned', r))[2]) FROM pgp_rows r;
SET pg_predict.enable_batching = off;  -- the per-row path
SELECT sum(predict('owned', r)) FROM pgp_rows r;
RESET pg_predict.enable_batching;
SELECT explain_model('owned') -> 'columns_read';
-- nor may a non-owner grant, revoke or give it away
SELECT grant_model_usage('owned', 'pgp_user');
SELECT revoke_model_usage('owned', 'pgp_user');
SELECT set_model_owner('owned', 'pgp_user');
RESET ROLE;

-- one tenant's role cannot score another tenant's model through a name computed per row: each
-- model the rows name is checked when the node (or the per-row path) first binds it
SET ROLE pgp_owner;
SELECT create_model('tenant_1', :'binary_model'::jsonb);
SELECT create_model('tenant_2', :'binary_model'::jsonb);
SELECT grant_model_usage('tenant_1', 'pgp_user');
RESET ROLE;
SET ROLE pgp_user;
EXPLAIN (COSTS OFF) SELECT count(predict('tenant_' || (1 + (tenure > 40)::int), r)) FROM pgp_rows r;
SELECT count(predict('tenant_' || (1 + (tenure > 40)::int), r)) AS own_tenant FROM pgp_rows r WHERE tenure <= 40;
SELECT count(predict('tenant_' || (1 + (tenure > 40)::int), r)) FROM pgp_rows r;
SET pg_predict.enable_batching = off;  -- the per-row path
SELECT count(predict('tenant_' || (1 + (tenure > 40)::int), r)) FROM pgp_rows r;
RESET pg_predict.enable_batching;
RESET ROLE;
SELECT drop_model('tenant_1'), drop_model('tenant_2');

-- the owner grants its use
SET ROLE pgp_owner;
SELECT grant_model_usage('owned', 'pgp_user');
SELECT grant_model_usage('owned', 'pgp_user');  -- twice is once
SELECT grant_model_usage('owned', 'no_such_role');
SELECT grant_model_usage('no_such_model', 'pgp_user');
RESET ROLE;
SET ROLE pgp_user;
SELECT name, usable_by, usable FROM models WHERE name = 'owned';
SELECT predict('owned', ARRAY[5, 30, 1]::real[]);
SELECT count(*), sum(predict('owned', r)) FROM pgp_rows r;
SELECT explain_model('owned') -> 'columns_read';
PREPARE scored AS SELECT sum(predict('owned', r)) FROM pgp_rows r;
EXECUTE scored;
RESET ROLE;

-- a revoke reaches a statement prepared before it (checked when it runs, not when planned)
SET ROLE pgp_owner;
SELECT revoke_model_usage('owned', 'pgp_user');
RESET ROLE;
SET ROLE pgp_user;
EXECUTE scored;
DEALLOCATE scored;
RESET ROLE;

-- to a group: its members may use it; to public: every role
SET ROLE pgp_owner;
SELECT grant_model_usage('owned', 'pgp_team');
RESET ROLE;
SET ROLE pgp_member;
SELECT predict('owned', ARRAY[5, 30, 1]::real[]);
RESET ROLE;
SET ROLE pgp_user;
SELECT predict('owned', ARRAY[5, 30, 1]::real[]);
RESET ROLE;
SET ROLE pgp_owner;
SELECT grant_model_usage('owned', 'PUBLIC');
RESET ROLE;
SET ROLE pgp_user;
SELECT predict('owned', ARRAY[5, 30, 1]::real[]);
RESET ROLE;
SET ROLE pgp_owner;
SELECT revoke_model_usage('owned', 'public');
SELECT name, usable_by FROM models WHERE name = 'owned';
-- the owner may not give the model to a role it is not a member of
SELECT set_model_owner('owned', 'pgp_user');
RESET ROLE;

-- DROP ROLE is refused while the role owns models or holds a grant
DROP ROLE pgp_owner;
DROP ROLE pgp_team;
-- DROP OWNED revokes the grants, REASSIGN OWNED moves the models
DROP OWNED BY pgp_team;
SELECT name, owner, usable_by FROM models WHERE name = 'owned';
DROP ROLE pgp_member, pgp_team;
REASSIGN OWNED BY pgp_owner TO pgp_user;
SELECT name, owner FROM models WHERE name = 'owned';
SET ROLE pgp_user;  -- now its owner
SELECT create_model('owned', :'binary_model'::jsonb, options => '{"replace": true}');
RESET ROLE;
-- a renamed role keeps its models
ALTER ROLE pgp_user RENAME TO pgp_renamed;
SELECT name, owner FROM models WHERE name = 'owned';
ALTER ROLE pgp_renamed RENAME TO pgp_user;
-- a superuser may give it to anyone
SELECT set_model_owner('owned', 'pgp_owner');
SELECT set_model_owner('owned', 'no_such_role');
SELECT name, owner FROM models WHERE name = 'owned';
-- DROP OWNED drops the role's models
SET ROLE pgp_owner;
SELECT create_model('second', :'binary_model'::jsonb);
RESET ROLE;
DROP OWNED BY pgp_owner;
SELECT count(*) FROM models WHERE name IN ('owned', 'second');
DROP ROLE pgp_owner;

-- read-only transactions (and hot standbys) say so before any work
BEGIN READ ONLY;
SELECT create_model('ro', :'binary_model'::jsonb);
ROLLBACK;
BEGIN READ ONLY;
SELECT drop_model('no_such_model');
ROLLBACK;

-- names: at most 63 bytes
SELECT create_model(repeat('n', 64), :'binary_model'::jsonb);
SELECT create_model(repeat('é', 32), :'binary_model'::jsonb);
SELECT create_model(repeat('n', 63), :'binary_model'::jsonb);
SELECT drop_model(repeat('n', 63));

-- No search_path trap: an operator or function in a schema searched before pg_catalog is never
-- called by the extension (its catalog statements run as the table's owner).
CREATE SCHEMA pgp_trap;
CREATE FUNCTION pgp_trap.fire(text, text) RETURNS bool LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'search_path trap fired'; END $$;
CREATE OPERATOR pgp_trap.= (LEFTARG = text, RIGHTARG = text, FUNCTION = pgp_trap.fire);
CREATE FUNCTION pgp_trap.array_append(text[], text) RETURNS text[] LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'search_path trap fired'; END $$;
CREATE FUNCTION pgp_trap.array_remove(text[], text) RETURNS text[] LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'search_path trap fired'; END $$;
CREATE FUNCTION pgp_trap.nextval(regclass) RETURNS bigint LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'search_path trap fired'; END $$;
CREATE FUNCTION pgp_trap.now() RETURNS timestamptz LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'search_path trap fired'; END $$;
SET search_path = pgp_trap, public, pg_catalog;
SELECT public.create_model('trapped', :'binary_model'::jsonb);
SELECT public.create_model('trapped', :'binary_model'::jsonb, options => '{"replace": true}');
SELECT public.grant_model_usage('trapped', 'pgp_user');
SELECT public.revoke_model_usage('trapped', 'pgp_user');
SELECT public.predict('trapped', ARRAY[5, 30, 1]::real[]);
SELECT public.explain_model('trapped') OPERATOR(pg_catalog.->) 'columns_read';
SELECT sum(public.predict('trapped', r)) FROM public.pgp_rows r;
SELECT name, usable FROM public.models WHERE name OPERATOR(pg_catalog.=) 'trapped';
DROP OWNED BY pgp_user;
SELECT public.drop_model('trapped');
RESET search_path;
DROP SCHEMA pgp_trap CASCADE;

REVOKE CREATE ON SCHEMA public FROM pgp_user;
DROP TABLE pgp_rows;
DROP ROLE pgp_user;
