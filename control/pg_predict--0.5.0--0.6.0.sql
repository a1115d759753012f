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
-- (statistics)
