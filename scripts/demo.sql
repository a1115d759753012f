-- The demo: a customers table of 10,000 rows (make run, scripts/run-demo.sh; and the test that
-- runs every SQL line of README.md and docs/ against it, regress/conformance/test_docs_sql.py).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_predict;
ALTER EXTENSION pg_predict UPDATE;  -- a demo database from an earlier version
DROP TABLE IF EXISTS customers;
CREATE TABLE customers (
  id              int PRIMARY KEY,
  tenure          int,               -- months as a customer
  monthly_charges double precision,  -- NULL for some rows: a missing value for the model
  plan_id         int,               -- 1 basic .. 4 premium
  churned         boolean
);
\o /dev/null
SELECT setseed(0.42);
\o
INSERT INTO customers
SELECT id, tenure, charges, plan_id,
       random() < 1 / (1 + exp(-(1.2 - 0.06 * tenure + 0.025 * coalesce(charges, 60)
                                  - 0.4 * plan_id - 1.0)))
FROM (SELECT id,
             (random() * 72)::int AS tenure,
             CASE WHEN random() < 0.02 THEN NULL
                  ELSE round((20 + random() * 100)::numeric, 2)::float8 END AS charges,
             1 + (random() * 3)::int AS plan_id
      FROM generate_series(1, 10000) AS id) s;
ANALYZE customers;
