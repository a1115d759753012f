-- PowerTransformer, QuantileTransformer, KernelPCA: transform() of hand-written documents whose
-- values are worked out in the comments, batched and per row; refusals name the estimator and
-- the parameter.
-- yeo-johnson with lambda 1 is the identity; lambda 0 is log1p(x) for x >= 0 and
-- -((1 - x)^2 - 1) / 2 below: -1 → -1.5. box-cox with lambda 0 is log(x): 1 → 0, and a value
-- <= 0 (scikit-learn raises) is NaN, as is NULL.
SELECT create_model('power', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "ColumnTransformer", "remainder": null, "transformers": [
    {"columns": [0, 1], "steps": [{"type": "PowerTransformer", "method": "yeo-johnson",
                                   "lambdas": [1.0, 0.0], "mean": null, "scale": null}]},
    {"columns": [1], "steps": [{"type": "PowerTransformer", "method": "box-cox",
                                "lambdas": [0.0], "mean": [1.0], "scale": [2.0]}]}]}]}'::jsonb);
-- quantiles [0, 5, 5, 10] over references [0, 0.25, 0.75, 1]: 5 is the mean of the two
-- interpolations (0.75 from below, 0.25 from above) = 0.5; 2.5 → 0.125, 3 → 0.15; the bounds 0 and 10
-- → 0 and 1, beyond them too. The normal output of quantiles [0, 10]: 5 → 0.5 → 0.
SELECT create_model('quant', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
  "steps": [{"type": "ColumnTransformer", "remainder": null, "transformers": [
    {"columns": [0], "steps": [{"type": "QuantileTransformer", "output_distribution": "uniform",
                                "quantiles": [[0, 5, 5, 10]], "references": [0, 0.25, 0.75, 1]}]},
    {"columns": [1], "steps": [{"type": "QuantileTransformer", "output_distribution": "normal",
                                "quantiles": [[0, 10]], "references": [0, 1]}]}]}]}'::jsonb);
-- linear KernelPCA fitted on the rows 0 and 2: the kernel against them is [0, 2x], the
-- centerer's K_fit_rows [0, 2] and K_fit_all 1 center it to [1 - x, x - 1]; alphas
-- [-0.5, 0.5] give x - 1.
SELECT create_model('kpca', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "KernelPCA", "kernel": "linear", "gamma": 1.0, "degree": 3, "coef0": 1.0,
             "X_fit": [[0], [2]], "alphas": [[-0.5], [0.5]], "K_fit_rows": [0, 2],
             "K_fit_all": 1}]}'::jsonb);
SELECT name, task, inputs, outputs, estimator, steps FROM models WHERE name IN ('power', 'quant', 'kpca') ORDER BY name;
CREATE TABLE fz (id int, a float8, b float8);
INSERT INTO fz VALUES (1, 3, 0), (2, -2, -1), (3, 5, 1), (4, 2.5, 5), (5, 10, NULL), (6, -7, 12);
SET pg_predict.enable_batching = on;
EXPLAIN (costs off) SELECT transform('power', f), transform('quant', f), transform('kpca', f) FROM fz f;
SELECT id, transform('power', f), transform('quant', f), transform('kpca', f) FROM fz f ORDER BY id;
SET pg_predict.enable_batching = off;
SELECT id, transform('power', f), transform('quant', f), transform('kpca', f) FROM fz f ORDER BY id;
RESET pg_predict.enable_batching;
-- the normal output clips 0 and 1 to ±ndtri(1e-7 - eps) = ±5.19933758...
SELECT (transform('quant', ARRAY[0, 0]::float8[]))[2] BETWEEN -5.1993376 AND -5.1993374 AS low_clipped,
       (transform('quant', ARRAY[0, 10]::float8[]))[2] BETWEEN 5.1993374 AND 5.1993376 AS high_clipped;
-- refusals
SELECT create_model('bad', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "PowerTransformer", "method": "log", "lambdas": [1]}]}'::jsonb);
SELECT create_model('bad', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "QuantileTransformer", "output_distribution": "lognormal",
             "quantiles": [[0, 1]], "references": [0, 1]}]}'::jsonb);
SELECT create_model('bad', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "QuantileTransformer", "output_distribution": "uniform",
             "quantiles": [[1, 0]], "references": [0, 1]}]}'::jsonb);
SELECT create_model('bad', '{"format": "sklearn", "version": 1, "task": "transformer",
  "inputs": [{"name": "a", "type": "numeric"}],
  "steps": [{"type": "KernelPCA", "kernel": "cosine", "gamma": 1.0, "degree": 3, "coef0": 1.0,
             "X_fit": [[0], [2]], "alphas": [[-0.5], [0.5]], "K_fit_rows": [0, 2],
             "K_fit_all": 1}]}'::jsonb);
DROP TABLE fz;
SELECT drop_model('power'), drop_model('quant'), drop_model('kpca');
