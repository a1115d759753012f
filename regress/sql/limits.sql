-- Hostile model documents and settings (issue 10, defects 8-10): each is an ERROR that names
-- the problem, never a crashed backend or gigabytes for one row. src/spec/limits.hpp.
-- EXPLAIN prints the native kernel's CPU path; the portable one exists on every machine.
SET pg_predict.cpu_kernel = portable;
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset

-- 12,000 nested Pipelines with the stack limit raised as administrators do: this killed the
-- backend with SIGSEGV inside the importer's recursion.
SET max_stack_depth = '7MB';
SELECT create_model('deep', ('{"format": "sklearn", "inputs": [{"name": "a"}], "task": "regression", "steps": ['
    || repeat('{"type": "Pipeline", "steps": [', 12000) || '{"type": "StandardScaler"}' || repeat(']}', 12000)
    || ', {"type": "LinearRegression", "coef": [1.0], "intercept": 0.0}]}')::jsonb);
-- FeatureUnion in FeatureUnion: the spec's concat nesting is bounded too
SELECT create_model('unions', ('{"format": "sklearn", "inputs": [{"name": "a"}], "task": "regression", "steps": ['
    || repeat('{"type": "FeatureUnion", "transformers": [{"steps": [', 40) || '{"type": "StandardScaler"}'
    || repeat(']}]}', 40) || ', {"type": "LinearRegression", "coef": [1.0], "intercept": 0.0}]}')::jsonb);
RESET max_stack_depth;
SELECT count(*) FROM models WHERE name IN ('deep', 'unions');

-- a declared shape far beyond any real model: 2^20 features
SELECT create_model('wide', jsonb_set(:'binary_model'::jsonb, '{learner,learner_model_param,num_feature}', '"1048576"'));
-- an infinite leaf (1e39 is Infinity as a float32) is refused as NaN is
SELECT create_model('inf_leaf', jsonb_set(:'binary_model'::jsonb,
    '{learner,gradient_booster,model,trees,0,split_conditions,1}', '1e39'));
SELECT create_model('inf_leaf', jsonb_set(:'binary_model'::jsonb,
    '{learner,gradient_booster,model,trees,0,split_conditions,1}', '-1e39'));

-- a model as wide as allowed (65,536 features): a batch's buffers stay within 256 MB, so
-- rows per batch = 256 MB / 262 kB per row = 1023 at any batch_size, and one row allocates
-- buffers for 64 rows, not for the whole batch (main allocated and zeroed 1 GiB here)
SELECT create_model('wide', jsonb_set(jsonb_set(jsonb_set(:'binary_model'::jsonb,
    '{learner,learner_model_param,num_feature}', '"65536"'), '{learner,feature_names}', '[]'),
    '{learner,feature_types}', '[]'));
CREATE TABLE wide_rows AS SELECT array_fill(0.5::real, ARRAY[65536]) AS a;
SET pg_predict.batch_size = 65536;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT predict('wide', a) FROM wide_rows;
SELECT predict('wide', a) FROM wide_rows;
RESET pg_predict.batch_size;
DROP TABLE wide_rows;
SELECT drop_model('wide');

-- batch_size and threads: any role up to the ceilings; above them, and the ceilings
-- themselves, only a superuser
CREATE ROLE pgp_limits;
SET ROLE pgp_limits;
SET pg_predict.batch_size = 65536;
SET pg_predict.batch_size = 1048576;
SET pg_predict.threads = 16;
SET pg_predict.threads = 256;
SET pg_predict.max_batch_size = 1048576;
SET pg_predict.max_threads = 256;
RESET ROLE;
SET pg_predict.batch_size = 1048576;
SHOW pg_predict.batch_size;
SET pg_predict.max_batch_size = 1024;
SET pg_predict.batch_size = 262144;
SET ROLE pgp_limits;
SET pg_predict.batch_size = 2048;
SET pg_predict.batch_size = 1024;
RESET ROLE;
RESET pg_predict.batch_size;
RESET pg_predict.max_batch_size;
RESET pg_predict.threads;
DROP ROLE pgp_limits;
