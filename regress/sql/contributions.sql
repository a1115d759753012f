-- predict_contributions and explain_prediction: the SQL surface and the refusals. The numbers
-- follow from the trees by hand (regress/conformance/test_contributions.py compares every tree
-- family with the libraries). The model is binary_tiny.json with consistent covers:
--   tree 0: tenure < 10 (NULL left): leaf 1 (cover 3) | leaf -1 (cover 1); expected 0.5
--   tree 1: monthly_charges < 50 (NULL right): leaf 0.5 (cover 1) | leaf -0.5 (cover 3); expected -0.25
-- A stump's SHAP value is its leaf minus its expected value; the bias is the expected values
-- plus the base margin (base_score 0.5: margin 0), 0.25.
SET client_min_messages = warning;  -- runnable alone, quiet in the schedule
CREATE EXTENSION IF NOT EXISTS pg_predict;
RESET client_min_messages;
SET pg_predict.cpu_kernel = portable;  -- EXPLAIN names the kernel: the same on every machine
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set binary_file :fixtures 'binary_tiny.json'
\set multiclass_file :fixtures 'multiclass_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_file(:'multiclass_file') AS multiclass_model \gset
SELECT jsonb_set(jsonb_set(:'binary_model'::jsonb,
         '{learner,gradient_booster,model,trees,0,sum_hessian}', '[4, 3, 1]'),
         '{learner,gradient_booster,model,trees,1,sum_hessian}', '[4, 1, 3]') AS shap_model \gset
SELECT create_model('shap_churn', :'shap_model'::jsonb);

CREATE TABLE shap_customers (id int, tenure int, monthly_charges numeric, plan_id smallint);
INSERT INTO shap_customers VALUES
  (1, 5, 30, 1), (2, 20, 80, 2), (3, NULL, 80, 3), (4, 20, NULL, 1), (5, 10, 50, 2);

-- [tenure, monthly_charges, plan_id, bias], batched, against the leaves by hand
SELECT id, predict_contributions('shap_churn', c) AS contributions,
       ARRAY[CASE WHEN coalesce(tenure < 10, true) THEN 1 ELSE -1 END - 0.5,
             CASE WHEN coalesce(monthly_charges < 50, false) THEN 0.5 ELSE -0.5 END + 0.25,
             0, 0.25]::float8[] AS by_hand
  FROM shap_customers c ORDER BY id;
EXPLAIN (costs off) SELECT id, predict_contributions('shap_churn', c) FROM shap_customers c;
-- the per-row path and the arrays agree with the batched one; the sum is the margin
SET pg_predict.enable_batching = off;
SELECT count(*) AS disagreements FROM shap_customers c
 WHERE predict_contributions('shap_churn', c) IS DISTINCT FROM
       ARRAY[CASE WHEN coalesce(tenure < 10, true) THEN 1 ELSE -1 END - 0.5,
             CASE WHEN coalesce(monthly_charges < 50, false) THEN 0.5 ELSE -0.5 END + 0.25, 0, 0.25]::float8[];
RESET pg_predict.enable_batching;
SELECT count(*) AS disagreements FROM shap_customers c
 WHERE predict_contributions('shap_churn', c) IS DISTINCT FROM
       predict_contributions('shap_churn', ARRAY[tenure, monthly_charges, plan_id]::float8[]);
SELECT id, round((SELECT sum(v) FROM unnest(predict_contributions('shap_churn', c)) v)::numeric, 6) AS total,
       round(ln(p / (1 - p))::numeric, 6) AS margin
  FROM shap_customers c, LATERAL (SELECT (predict_proba('shap_churn', c))[2] AS p) q ORDER BY id;
SELECT predict_contributions('shap_churn', NULL::shap_customers) IS NULL AS null_row;

-- explain_prediction: the top features by |attribution|, their values, the bias, the sum
SELECT id, explain_prediction('shap_churn', c) FROM shap_customers c ORDER BY id;
SELECT explain_prediction('shap_churn', c, top => 1) FROM shap_customers c WHERE id = 1;
SELECT explain_prediction('shap_churn', c, top => -1) FROM shap_customers c WHERE id = 1;
EXPLAIN (costs off) SELECT explain_prediction('shap_churn', c) FROM shap_customers c;

-- a multiclass model gives [class][feature + bias]: one tree per class (base margin 0.5), a
-- single leaf (its value is all bias: 1 + 0.5, -1 + 0.5) for classes 0 and 2, for class 1 a stump
-- tenure < 10 ? 3 : 0 whose covers are 1 at every node: its expected value is (3 + 0) / 1 = 3
-- (XGBoost divides by the node's own cover), so the bias is 3.5 and tenure adds 0 or -3
SELECT create_model('shap_segment', :'multiclass_model'::jsonb);
SELECT id, predict_contributions('shap_segment', c) FROM shap_customers c WHERE id IN (1, 2) ORDER BY id;
SELECT explain_prediction('shap_segment', c, top => 1) ->> 'class' AS explained_class,
       predict_label('shap_segment', c) AS predicted
  FROM shap_customers c WHERE id IN (1, 2) ORDER BY id;

-- refusals: a model without covers, a NULL name
SELECT create_model('shap_no_covers', :'binary_model'::jsonb
       #- '{learner,gradient_booster,model,trees,0,sum_hessian}' #- '{learner,gradient_booster,model,trees,1,sum_hessian}');
SELECT predict_contributions('shap_no_covers', c) FROM shap_customers c;
SELECT bool_and(predict_contributions(NULL, c) IS NULL) AS null_name FROM shap_customers c;
SELECT drop_model('shap_churn');
SELECT drop_model('shap_segment');
SELECT drop_model('shap_no_covers');
DROP TABLE shap_customers;
