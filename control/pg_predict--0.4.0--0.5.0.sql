-- pg_predict 0.4.0 -> 0.5.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.5.0'" to load this file. \quit

-- ---- 0.5.0: the rest of scikit-learn (issue 13) ------------------------------------------
