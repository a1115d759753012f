-- pg_predict 0.1.0 -> 0.2.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.2.0'" to load this file. \quit

-- The view reads the owner column, whose type changes.
DROP VIEW @extschema@.models;

-- Owners by role name instead of regrole (a dump now restores into a cluster without the
-- role). A role already dropped (a bare OID in 0.1.0) leaves no owner: superusers only.
ALTER TABLE @extschema@.model_catalog
    ALTER COLUMN owner DROP NOT NULL,
    ALTER COLUMN owner TYPE text USING pg_catalog.pg_get_userbyid(owner::pg_catalog.oid);
UPDATE @extschema@.model_catalog c SET owner = NULL
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) c.owner);
ALTER TABLE @extschema@.model_catalog
    ADD CHECK (owner <> ''),
    ADD CHECK (pg_catalog.octet_length(name) <= 63);

-- Per-model privileges. In 0.1.0 every role could score every model: existing models keep that
-- (usable by 'public'); models created from now on are usable by their owner only.
ALTER TABLE @extschema@.model_catalog ADD COLUMN usable_by text[] NOT NULL DEFAULT '{}';
UPDATE @extschema@.model_catalog SET usable_by = '{public}';

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

CREATE VIEW @extschema@.models AS
SELECT name,
       owner,
       usable_by,
       @extschema@.model_usable(owner, usable_by) AS usable,  -- by the current role
       format,
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
       pg_catalog.octet_length(program) AS program_bytes,
       created_at
  FROM @extschema@.model_catalog;
GRANT SELECT ON @extschema@.models TO PUBLIC;

COMMENT ON VIEW @extschema@.models IS 'Models registered with create_model(), their owners and who may use them';
