-- create_model takes the artifact as jsonb, text or bytea; format 'auto' detects it; the catalog
-- keeps it as given; models and EXPLAIN show the format and the shape.
-- EXPLAIN prints the native kernel's CPU path; the portable one exists on every machine.
SET pg_predict.cpu_kernel = portable;
CREATE EXTENSION IF NOT EXISTS pg_predict;
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set binary_file :fixtures 'binary_tiny.json'
\set city_file :fixtures 'sklearn_city.json'
SELECT pg_read_file(:'binary_file') AS binary_model \gset
SELECT pg_read_binary_file(:'binary_file') AS binary_bytes \gset

-- the same XGBoost document as jsonb, as text, as bytea, and as an untyped literal (which
-- PostgreSQL resolves to the text overload: text that holds JSON is read as JSON)
SELECT create_model('as_jsonb', :'binary_model'::jsonb);
SELECT create_model('as_text', pg_read_file(:'binary_file'));
SELECT create_model('as_bytea', pg_read_binary_file(:'binary_file'));
SELECT create_model('as_literal', :'binary_model');
SELECT create_model('sk_text', pg_read_file(:'city_file'), 'sklearn');
SELECT name, format, source_type, task, inputs, outputs, estimator, steps, trees, depth
  FROM models WHERE name LIKE 'as\_%' OR name = 'sk_text' ORDER BY name;
-- the catalog keeps each source in the column of its type, byte for byte
SELECT name, source IS NOT NULL AS jsonb, source_text IS NOT NULL AS text, source_bytes IS NOT NULL AS bytea,
       coalesce(source_text, convert_from(source_bytes, 'UTF8')) = :'binary_model' AS as_given
  FROM model_catalog WHERE name LIKE 'as\_%' ORDER BY name;
-- every one scores the same
CREATE TABLE formats_rows AS
SELECT g AS id, (g % 20)::real AS tenure, (g * 7 % 100)::real AS monthly_charges, (g % 4)::real AS plan_id
  FROM generate_series(1, 50) g;
SELECT count(*), bool_and(predict_proba('as_jsonb', c) = predict_proba('as_bytea', c)
                AND predict_proba('as_jsonb', c) = predict_proba('as_text', c)
                AND predict_proba('as_jsonb', c) = predict_proba('as_literal', c)) AS equal
  FROM formats_rows c;
-- a new version keeps one source column set, its own
SELECT create_model('as_text', :'binary_model'::jsonb, options => '{"replace": true}');
SELECT version, source IS NOT NULL AS jsonb, source_text IS NULL AS text_cleared
  FROM model_catalog WHERE name = 'as_text' ORDER BY version;

-- EXPLAIN shows the format and the shape
EXPLAIN (COSTS OFF) SELECT predict('as_bytea', c) FROM formats_rows c;
EXPLAIN (COSTS OFF) SELECT predict('sk_text', ARRAY[1, 2, 3]::real[]) FROM formats_rows c;
SELECT explain_model('as_bytea') -> 'before' -> 'source_format' AS explained_format;

-- errors: a NULL model of every type, a value of no format, a format given the wrong type
SELECT create_model('m', NULL);
SELECT create_model('m', NULL::bytea);
SELECT create_model('m', NULL::jsonb);
SELECT create_model('m', 'not a model');
SELECT create_model('m', '"a JSON string"');
SELECT create_model('m', '\x00010203'::bytea);
SELECT create_model('m', ''::bytea);
-- a LightGBM text given as another format: what the text is, not a JSON parser's position
SELECT create_model('m', 'tree' || chr(10) || 'version=v4', 'xgboost');
SELECT create_model('m', 'not json', 'sklearn');
SELECT create_model('m', 'tree' || chr(10) || 'version=v4', 'torchscript');
SELECT create_model('m', :'binary_model'::jsonb, 'torchscript');
SELECT create_model('m', :'binary_model', 'nosuch');
SELECT create_model('m', '{"broken": ');
SELECT create_model('m', '\x7b2262726f6b656e223a20'::bytea);
-- format 'torchscript' on bytes that are no module (as a superuser: the import refuses)
SELECT create_model('m', '\x504b0304'::bytea, 'torchscript', '{"features": ["a"]}');
-- options that belong to TorchScript modules only
SELECT create_model('m', :'binary_model'::jsonb, options => '{"task": "classification"}');
SELECT count(*) FROM models WHERE name = 'm';
SELECT drop_model(name) FROM models WHERE name LIKE 'as\_%' OR name = 'sk_text';
DROP TABLE formats_rows;

-- importing TorchScript is for superusers and members of pgpredict_torchscript: others are
-- refused before anything reads the bytes, whatever they hold
SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = 'pgpredict_torchscript';
CREATE ROLE formats_user;
GRANT CREATE ON SCHEMA public TO formats_user;
SET ROLE formats_user;
\set VERBOSITY sqlstate
SELECT create_model('m', '\x504b0304'::bytea, 'torchscript', '{"features": ["a"]}');
\set VERBOSITY default
SELECT create_model('m', '\x504b0304'::bytea, 'torchscript', '{"features": ["a"]}');
SELECT create_model('mine', :'binary_bytes'::bytea);  -- other formats: no privilege needed
SELECT name, format, source_type, owner FROM models WHERE name = 'mine';
RESET ROLE;
GRANT pgpredict_torchscript TO formats_user;
SET ROLE formats_user;
SELECT create_model('m', '\x504b0304'::bytea, 'torchscript', '{"features": ["a"]}');
RESET ROLE;
SELECT drop_model('mine');
REVOKE CREATE ON SCHEMA public FROM formats_user;
DROP ROLE formats_user;
