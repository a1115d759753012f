-- train(): models fitted from a query (XGBoost, linear, logistic), registered through the
-- importer create_model uses, scored by predict over the training table, and every refusal.
-- The numbers themselves are compared with xgboost and scikit-learn by
-- regress/conformance/test_train.py; here: the SQL surface and what must hold whatever the
-- library computes.
CREATE TABLE train_rows AS
SELECT g AS id,
       (g % 17)::float8 / 4 AS a,
       ((g * 7) % 23)::real AS b,
       CASE WHEN g % 11 = 0 THEN NULL ELSE (g % 5) END AS c,
       CASE g % 3 WHEN 0 THEN 'red' WHEN 1 THEN 'green' ELSE 'blue' END::text AS color,
       CASE WHEN g % 13 = 0 THEN NULL ELSE 'v' || (g % 4) END::varchar AS tag,
       (g % 2 = 0) AS flag,
       CASE WHEN (g % 17)::float8 / 4 + ((g * 7) % 23) / 10.0 > 3.5 THEN 'yes' ELSE 'no' END AS churned,
       CASE (g * 5) % 7 WHEN 0 THEN 'gold' WHEN 1 THEN 'gold' WHEN 2 THEN 'silver' ELSE 'bronze' END AS tier,
       2 * ((g % 17)::float8 / 4) - 3 * ((g * 7) % 23) + 1.5 AS linear_y,
       (g % 6)::int AS visits
  FROM generate_series(1, 600) g;

-- binary classification of a text target, with a text feature, NULLs in numeric and text
-- columns, a boolean feature: what train() returns (the metrics' values are the library's)
SELECT r - 'metrics' - 'name' AS result, r ->> 'name' AS name, r -> 'metrics' ? 'accuracy' AS has_accuracy,
       (r #>> '{metrics,accuracy}')::float8 BETWEEN 0 AND 1 AS accuracy_in_range
  FROM train('tchurn', 'SELECT a, b, c, color, tag, flag, churned FROM train_rows ORDER BY id',
             target => 'churned', hyperparams => '{"max_depth": 3, "n_estimators": 20, "eta": 0.3}') r;
SELECT name, format, task, classes, features, estimator, objective, trees, depth FROM models WHERE name = 'tchurn';
-- the training table scores by name: batched and per row agree, every label is a class
SELECT count(*) AS rows, count(*) FILTER (WHERE p IN ('yes', 'no')) AS labelled,
       count(*) FILTER (WHERE p = churned) > 500 AS mostly_right
  FROM (SELECT predict_label('tchurn', t) AS p, churned FROM train_rows t) s;
CREATE TEMP TABLE per_row AS
SELECT id, (SELECT predict_proba('tchurn', t)) AS p FROM train_rows t;  -- a subquery: the per-row path
SELECT count(*) AS differ FROM train_rows t JOIN per_row USING (id) WHERE predict_proba('tchurn', t) <> per_row.p;
-- the stored source is a document create_model itself accepts, and scores the same
SELECT source ->> 'format' AS format, jsonb_path_query_array(source, '$.steps[*].type') AS steps
  FROM model_catalog WHERE name = 'tchurn';
SELECT create_model('tchurn_copy', (SELECT source FROM model_catalog WHERE name = 'tchurn'));
SELECT count(*) AS differ FROM train_rows t WHERE predict_proba('tchurn', t) <> predict_proba('tchurn_copy', t);
-- an unseen category and a NULL text are no category (all the one-hot columns 0)
SELECT predict_proba('tchurn', r) = predict_proba('tchurn', r2) AS unseen_is_null
  FROM (SELECT 1.0::float8 AS a, 3::real AS b, 2 AS c, 'purple' AS color, 'v9' AS tag, true AS flag) r,
       (SELECT 1.0::float8 AS a, 3::real AS b, 2 AS c, NULL::text AS color, NULL::text AS tag, true AS flag) r2;

-- the split is a function of (seed, row number): the same seed gives the same split
SELECT (train('split1', 'SELECT a, b, churned FROM train_rows ORDER BY id', 'churned', seed => 7,
              hyperparams => '{"n_estimators": 2}') ->> 'test_rows')
     = (train('split2', 'SELECT a, b, churned FROM train_rows ORDER BY id', 'churned', seed => 7,
              hyperparams => '{"n_estimators": 2}') ->> 'test_rows') AS same_split;
-- the document's XGBoost step is checked against the vector before it and the document
SELECT create_model('bad_doc', (SELECT jsonb_set(source, '{inputs}', source -> 'inputs' || '[{"name": "z"}]')
                                FROM model_catalog WHERE name = 'split1'));
SELECT create_model('bad_doc', (SELECT jsonb_set(source, '{steps,0,type}', '"XGBRegressor"')
                                FROM model_catalog WHERE name = 'split1'));
SELECT create_model('bad_doc', (SELECT jsonb_set(source, '{classes}', '["a", "b", "c"]')
                                FROM model_catalog WHERE name = 'split1'));
SELECT create_model('bad_doc', (SELECT source #- '{steps,0,booster}' FROM model_catalog WHERE name = 'split1'));
SELECT create_model('bad_doc', (SELECT jsonb_set(source, '{steps,0,booster,learner,objective,name}', '"reg:squarederror"')
                                FROM model_catalog WHERE name = 'split1'));
SELECT (r ->> 'test_rows')::int AS test_rows, r -> 'metrics' AS metrics
  FROM train('nosplit', 'SELECT a, b, churned FROM train_rows', 'churned', test_size => 0,
             hyperparams => '{"n_estimators": 2}') r;

-- multiclass (a text target of three classes), regression, counts, a boolean target
SELECT r ->> 'objective' AS objective, r ->> 'task' AS task
  FROM train('tier', 'SELECT a, b, color, tier FROM train_rows', 'tier', hyperparams => '{"n_estimators": 5}') r;
SELECT classes, outputs FROM models WHERE name = 'tier';
SELECT count(*) FILTER (WHERE abs(s - 1) < 1e-6) AS sums_to_one
  FROM (SELECT (SELECT sum(v) FROM unnest(predict_proba('tier', t)) v) AS s FROM train_rows t) q;
SELECT r ->> 'objective' AS objective, r ->> 'task' AS task, r -> 'metrics' ? 'rmse' AS has_rmse
  FROM train('reg', 'SELECT a, b, c, color, linear_y FROM train_rows', 'linear_y', hyperparams => '{"n_estimators": 30}') r;
SELECT r ->> 'objective' AS objective
  FROM train('visits', 'SELECT a, b, visits FROM train_rows', 'visits',
             hyperparams => '{"objective": "count:poisson", "n_estimators": 10}') r;
SELECT count(*) FILTER (WHERE predict('visits', t) > 0) AS positive FROM train_rows t;
SELECT train('flagged', 'SELECT a, b, flag FROM train_rows', 'flag', hyperparams => '{"n_estimators": 3}') ->> 'objective' AS objective;
SELECT classes FROM models WHERE name = 'flagged';
SELECT count(*) FILTER (WHERE predict_label('flagged', t)::bool IN (true, false)) AS labels FROM train_rows t;

-- linear: an exact linear target is recovered (closed form, float64); NULLs are imputed by the
-- training rows' mean (a SimpleImputer in the document)
SELECT r ->> 'task' AS task FROM train('lin', 'SELECT a, b, linear_y FROM train_rows', 'linear_y', 'linear') r;
SELECT count(*) FILTER (WHERE abs(predict('lin', t) - linear_y) > 1e-6) AS off FROM train_rows t;
SELECT jsonb_path_query_array(source, '$.steps[*].type') AS steps FROM model_catalog WHERE name = 'lin';
SELECT train('ridge', 'SELECT a, b, c, color, linear_y FROM train_rows', 'linear_y', 'linear',
             '{"alpha": 10}') ->> 'algorithm' AS algorithm;
SELECT jsonb_path_query_array(source, '$.steps[*].type') AS steps FROM model_catalog WHERE name = 'ridge';
SELECT predict('ridge', r) IS NOT NULL AS imputed
  FROM (SELECT 1::float8 AS a, 2::real AS b, NULL::int AS c, 'red' AS color) r;
-- logistic: binary and multinomial; probabilities sum to one
SELECT train('logit', 'SELECT a, b, churned FROM train_rows', 'churned', 'logistic', '{"C": 10}') ->> 'task' AS task;
SELECT count(*) FILTER (WHERE predict_label('logit', t) = churned) > 540 AS mostly_right FROM train_rows t;
SELECT train('logit3', 'SELECT a, b, color, tier FROM train_rows', 'tier', 'logistic') ->> 'task' AS task;
SELECT source #>> '{steps,-1,multi_class}' AS multi_class FROM model_catalog WHERE name = 'logit3';
SELECT count(*) FILTER (WHERE abs(s - 1) < 1e-6) AS sums_to_one
  FROM (SELECT (SELECT sum(v) FROM unnest(predict_proba('logit3', t)) v) AS s FROM train_rows t) q;

-- training over an existing name adds a version and deploys it (the next statement scores it);
-- the test split's metrics are stored with each version
SELECT r ->> 'version' AS version, r ->> 'deployed' AS deployed, r ->> 'features' AS features
  FROM train('lin', 'SELECT a, linear_y FROM train_rows', 'linear_y', 'linear') r;
SELECT features FROM models WHERE name = 'lin';
SELECT version, deployed, created_by, metrics ? 'rmse' AS has_rmse, metrics ? 'r2' AS has_r2
  FROM model_versions WHERE name = 'lin' ORDER BY version;
SELECT version, metrics -> 'rows' AS test_rows, metrics ? 'accuracy' AS has_accuracy, metrics ? 'log_loss' AS has_log_loss
  FROM model_versions WHERE name = 'tchurn';
SELECT metrics IS NULL AS no_metrics FROM model_versions WHERE name = 'nosplit';
-- deploy => 'best': a new version is deployed only when its test metrics beat the deployed one's
-- (rmse for a regressor; accuracy, then log_loss, for a classifier); 'never' stages it
SELECT r ->> 'version' AS version, r ->> 'deployed' AS deployed
  FROM train('best', 'SELECT a, b, linear_y FROM train_rows ORDER BY id', 'linear_y', 'linear', deploy => 'best') r;
SELECT r ->> 'version' AS version, r ->> 'deployed' AS deployed
  FROM train('best', 'SELECT b, linear_y FROM train_rows ORDER BY id', 'linear_y', 'linear', deploy => 'best') r;
SELECT r ->> 'version' AS version, r ->> 'deployed' AS deployed
  FROM train('best', 'SELECT a, b, linear_y FROM train_rows ORDER BY id', 'linear_y', 'linear', '{"alpha": 0.001}',
             deploy => 'best') r;
SELECT r ->> 'version' AS version, r ->> 'deployed' AS deployed
  FROM train('best', 'SELECT a, b, linear_y FROM train_rows ORDER BY id', 'linear_y', 'linear', deploy => 'never') r;
SELECT version, deployed, (metrics ->> 'rmse')::float8 < 1e-3 AS exact FROM model_versions WHERE name = 'best' ORDER BY version;
SELECT (r ->> 'deployed')::bool AS deployed
  FROM train('tchurn', 'SELECT a, churned FROM train_rows ORDER BY id', 'churned', hyperparams => '{"n_estimators": 1, "max_depth": 1}',
             deploy => 'best') r;
SELECT (r ->> 'deployed')::bool AS deployed
  FROM train('tchurn', 'SELECT a, churned FROM train_rows ORDER BY id', 'churned', test_size => 0, deploy => 'best') r;
SELECT version, deployed FROM model_versions WHERE name = 'tchurn' ORDER BY version;

-- exclude: columns the query returns that are not features (an id, other targets)
SELECT r ->> 'version' AS version
  FROM train('excl', 'SELECT * FROM train_rows', 'churned', hyperparams => '{"n_estimators": 2}',
             exclude => ARRAY['id', 'tier', 'linear_y', 'visits']) r;
SELECT features FROM models WHERE name = 'excl';
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', exclude => ARRAY['nope']);
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', exclude => ARRAY['churned']);
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', exclude => ARRAY[NULL]);
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', exclude => NULL);
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', exclude => ARRAY['a']);

-- a new version keeps the name's task: a numeric 0/1 target trains a regression by default,
-- which over a classifier is refused, and nothing is stored
SELECT train('excl', 'SELECT a, b, (churned = ''yes'')::int AS churned FROM train_rows', 'churned',
             hyperparams => '{"n_estimators": 2}');
SELECT train('lin', 'SELECT a, churned FROM train_rows', 'churned', 'logistic');
-- refused before a row is read: this query would divide by zero on its first row
SELECT train('lin', 'SELECT a, (1 / (b - b))::int AS churned FROM train_rows', 'churned', 'logistic');
SELECT name, count(*) AS versions FROM model_versions WHERE name IN ('excl', 'lin') GROUP BY name ORDER BY name;
-- made explicit (a classification objective) it trains a classifier, but its labels {0, 1} are
-- numbers where the name's are text: refused as well (below)
SELECT r ->> 'version' AS version, r ->> 'task' AS task
  FROM train('excl', 'SELECT a, b, (churned = ''yes'')::int AS churned FROM train_rows', 'churned',
             hyperparams => '{"n_estimators": 2, "objective": "binary:logistic"}') r;

-- refusals, each naming what is wrong
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', 'forest');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '{"max_dept": 3}');
SELECT train('bad', 'SELECT a, linear_y FROM train_rows', 'linear_y', 'linear', '{"C": 1}');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '{"seed": 3}');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '{"max_depth": "deep"}');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '{"objective": "rank:pairwise"}');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '{"n_estimators": 0}');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '{"eta": 0.1, "learning_rate": 0.2}');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '[1]');
SELECT train('bad', 'SELECT a, b FROM train_rows', 'churned');
SELECT train('bad', 'SELECT a, CASE WHEN id = 5 THEN NULL ELSE churned END AS churned FROM train_rows ORDER BY id', 'churned');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', 'linear');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '{"objective": "reg:squarederror"}');
SELECT train('bad', 'SELECT a, flag FROM train_rows', 'flag', 'linear');
SELECT train('bad', 'SELECT a, now() AS stamp, churned FROM train_rows', 'churned');
SELECT train('bad', 'SELECT a, ARRAY[b] AS bs, churned FROM train_rows', 'churned');
SELECT train('bad', 'SELECT a, CASE WHEN id = 7 THEN ''-Infinity''::float8 ELSE b END AS b, churned FROM train_rows ORDER BY id', 'churned', 'logistic');
SELECT train('bad', 'SELECT a, churned, now() AS churned2 FROM train_rows', 'churned2');
SELECT train('bad', 'SELECT a, churned FROM train_rows WHERE false', 'churned');
SELECT train('bad', 'SELECT churned FROM train_rows', 'churned');
SELECT train('bad', 'SELECT a, a, churned FROM train_rows', 'churned');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', test_size => 1);
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', test_size => -0.1);
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', deploy => 'sometimes');
SELECT train('bad', 'SELECT a, churned FROM train_rows', 'churned', deploy => NULL);
SELECT train('bad', 'SELECT a, churned FROM train_rows WHERE id = 1', 'churned', test_size => 0);
SELECT train('bad', 'SELECT a, tier FROM train_rows', 'tier', hyperparams => '{"objective": "binary:logistic"}');
SELECT train('bad', 'SELECT a, NULL::text AS color, churned FROM train_rows', 'churned');
SELECT train('bad', 'SELECT a, NULL::float8 AS z, linear_y FROM train_rows', 'linear_y', 'linear');
SELECT train('bad', 'DELETE FROM train_rows', 'churned');
SELECT train('bad', 'DELETE FROM train_rows WHERE a < 0 RETURNING *', 'churned');
SELECT train('bad', 'SELECT a, churned FROM no_such_table', 'churned');
SELECT train(NULL, 'SELECT a, churned FROM train_rows', 'churned');
SELECT train('bad', 'SELECT a, churned FROM train_rows', NULL);
SELECT train('bad', 'SELECT a, visits FROM train_rows', 'visits', hyperparams => '{"objective": "reg:gamma"}');
SELECT count(*) AS nothing_stored FROM models WHERE name = 'bad';

-- only the owner trains over a model; the query runs with the caller's rights
CREATE ROLE train_other;
GRANT SELECT ON train_rows TO train_other;
CREATE TABLE train_secret AS SELECT a, churned FROM train_rows;
SET ROLE train_other;
SELECT train('tchurn', 'SELECT a, churned FROM train_rows', 'churned');
SELECT train('others', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '{"n_estimators": 2}') ->> 'rows' AS rows;
SELECT owner FROM models WHERE name = 'others';
SELECT train('others2', 'SELECT a, churned FROM train_secret', 'churned');
RESET ROLE;
-- read-only transactions refuse before the query runs
BEGIN READ ONLY;
SELECT train('ro', 'SELECT a, churned FROM train_rows', 'churned');
ROLLBACK;
-- a rolled-back train() leaves nothing
BEGIN;
SELECT train('rolled', 'SELECT a, churned FROM train_rows', 'churned', hyperparams => '{"n_estimators": 2}') ->> 'rows' AS rows;
ROLLBACK;
SELECT count(*) AS rolled FROM models WHERE name = 'rolled';

-- a new version keeps the type of its name's labels (issue 46): the README's tour trained a
-- boolean target over a name whose labels were {0, 1}, and predict() failed for every caller.
-- Refused before a row is read (the query would divide by zero), naming both; nothing stored.
SELECT train('labels', 'SELECT a, b, (churned = ''yes'')::int AS churned FROM train_rows', 'churned',
             hyperparams => '{"n_estimators": 2, "objective": "binary:logistic"}') ->> 'version' AS version;
SELECT train('labels', 'SELECT a, b, (1 / (b - b) = 1) AS churned FROM train_rows', 'churned');
SELECT train('labels', 'SELECT a, b, churned FROM train_rows', 'churned');
SELECT train('tier', 'SELECT a, b, (churned = ''yes'') AS tier FROM train_rows', 'tier');
SELECT name, count(*) AS versions FROM model_versions WHERE name IN ('labels', 'tier') GROUP BY name ORDER BY name;
-- the same labels' type adds a version
SELECT train('labels', 'SELECT a, b, (churned = ''yes'')::int AS churned FROM train_rows', 'churned',
             hyperparams => '{"n_estimators": 3, "objective": "binary:logistic"}') ->> 'version' AS version;
-- create_model keeps its right to change them, and says so
SELECT create_model('labels', (SELECT source FROM model_catalog WHERE name = 'tier' AND deployed)) AS version;
SELECT create_model('labels', (SELECT source FROM model_catalog WHERE name = 'reg' AND deployed)) AS version;
SELECT create_model('labels', (SELECT source FROM model_catalog WHERE name = 'reg' AND deployed)) AS version;
SELECT drop_model('labels');

SELECT drop_model(name) FROM models WHERE name IN ('tchurn', 'tchurn_copy', 'split1', 'split2', 'nosplit', 'tier', 'reg',
       'visits', 'flagged', 'lin', 'ridge', 'logit', 'logit3', 'others', 'best', 'excl') ORDER BY name;
DROP TABLE train_rows, train_secret;
DROP ROLE train_other;
