-- pg_predict 0.5.0 -> 0.6.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.6.0'" to load this file. \quit

-- ---- 0.6.0: a model's life in SQL (issue 14) ---------------------------------------------

-- ---- 0.6.0: versions, deployment, rollback ------------------------------------------------
-- (versions)

-- ---- 0.6.0: training from a query ----------------------------------------------------------
-- (training)

-- ---- 0.6.0: evaluation -----------------------------------------------------------------------
-- (evaluation)

-- ---- 0.6.0: usage statistics -----------------------------------------------------------------
-- Per model version of the current database (README "Usage statistics"): calls (program runs:
-- one per batch, one per row on the per-row path), rows, batches, errors, time running the
-- program and filling its batches (ms), last use, and the backends whose program cache holds it
-- with the bytes the caches count. In shared memory when pg_predict is preloaded; otherwise the
-- counts of the calling session only (the function says so with a NOTICE).
CREATE FUNCTION @extschema@.model_stats_entries(
    OUT model_id bigint, OUT name text, OUT calls bigint, OUT rows bigint, OUT batches bigint,
    OUT errors bigint, OUT model_time float8, OUT fill_time float8, OUT last_used timestamptz,
    OUT stats_since timestamptz, OUT backends int4, OUT loaded_programs int4, OUT loaded_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_predict_model_stats_entries'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- Every role sees every version of the current database, as PostgreSQL's own statistics views
-- show every table: counts are not secret, and the models view lists every model already.
-- A version whose catalog row is gone (dropped) keeps its counts, with the name it had, until
-- a reset or until pg_predict.stats_max evicts it.
CREATE VIEW @extschema@.model_stats AS
SELECT coalesce(c.name, s.name) AS name,
       s.model_id,
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
