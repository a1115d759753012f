-- pg_predict 0.3.0 -> 0.4.0
\echo Use "ALTER EXTENSION pg_predict UPDATE TO '0.4.0'" to load this file. \quit

-- ---- 0.4.0: scikit-learn as people use it (issue 13) -------------------------------------
