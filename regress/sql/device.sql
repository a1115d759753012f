-- pg_predict.device and the GPU settings, on a server without CUDA (the default CPU build):
-- auto scores on the CPU, cuda is a clear error, EXPLAIN names the device. A CUDA build on a
-- GPU machine is tested by scripts/gpu/run-on-gpu.sh instead.
-- EXPLAIN prints the native kernel's CPU path; the portable one exists on every machine.
SET pg_predict.cpu_kernel = portable;
\getenv abs_srcdir PG_ABS_SRCDIR
\set binary_file :abs_srcdir '/fixtures/binary_tiny.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT create_model('device_churn', :'binary_model'::jsonb, options => '{"replace": true}');
CREATE TABLE device_rows AS
SELECT i AS id, i % 30 AS tenure, (i * 7) % 100 AS monthly_charges, (i % 3)::smallint AS plan_id
  FROM generate_series(1, 5000) i;
ANALYZE device_rows;

-- Defaults and validation.
SHOW pg_predict.device;
SHOW pg_predict.gpu_min_rows;
SHOW pg_predict.gpu_batch_size;
SHOW pg_predict.max_gpu_backends;
SET pg_predict.device = gpu;
SET pg_predict.gpu_batch_size = 0;
SET pg_predict.gpu_min_rows = 0;
SET pg_predict.max_gpu_backends = 2;  -- a server setting (postgresql.conf, reload)

-- auto without CUDA: the CPU, with the CPU batch size.
CREATE TEMP TABLE reference AS
SELECT sum(predict('device_churn', r)) AS s FROM device_rows r;
EXPLAIN (costs off) SELECT sum(predict('device_churn', r)) FROM device_rows r;
EXPLAIN (analyze, costs off, timing off, summary off)
SELECT sum(predict('device_churn', r)) FROM device_rows r;
SET pg_predict.gpu_min_rows = 1;  -- even for every batch and the per-row path
SELECT sum(predict('device_churn', r)) = (SELECT s FROM reference) AS same FROM device_rows r;
SET pg_predict.enable_batching = off;
SELECT sum(predict('device_churn', r)) = (SELECT s FROM reference) AS same FROM device_rows r;
RESET pg_predict.enable_batching;
RESET pg_predict.gpu_min_rows;

-- cpu: the same.
SET pg_predict.device = cpu;
EXPLAIN (costs off) SELECT sum(predict('device_churn', r)) FROM device_rows r;
SELECT sum(predict('device_churn', r)) = (SELECT s FROM reference) AS same FROM device_rows r;

-- cuda without CUDA: an error naming the reason, for the batched node (EXPLAIN too) and the
-- per-row path; never a silent CPU run.
SET pg_predict.device = cuda;
SELECT sum(predict('device_churn', r)) FROM device_rows r;
EXPLAIN (costs off) SELECT sum(predict('device_churn', r)) FROM device_rows r;
SET pg_predict.enable_batching = off;
SELECT predict('device_churn', ARRAY[1, 2, 3]::real[]);
RESET pg_predict.enable_batching;
RESET pg_predict.device;
SELECT sum(predict('device_churn', r)) = (SELECT s FROM reference) AS same FROM device_rows r;

DROP TABLE device_rows;
SELECT drop_model('device_churn');
