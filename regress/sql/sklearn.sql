-- scikit-learn pipelines with a text column, from hand-written export documents
-- (regress/fixtures/README.md): p = sigmoid([city = berlin] - [city = paris] + 0.05 (age - 30)).
\getenv abs_srcdir PG_ABS_SRCDIR
\set city_file :abs_srcdir '/fixtures/sklearn_city.json'
\set svc_file :abs_srcdir '/fixtures/sklearn_city_svc.json'
SELECT pg_read_file(:'city_file') AS city_model \gset
SELECT pg_read_file(:'svc_file') AS svc_model \gset
SELECT create_model('city', :'city_model'::jsonb);
SELECT create_model('city_svc', :'svc_model'::jsonb, 'sklearn');
SELECT name, format, task, classes, features FROM models WHERE name LIKE 'city%' ORDER BY name;

CREATE TABLE people (id int, city text, age int);
INSERT INTO people VALUES (1, 'paris', 40), (2, 'berlin', 20), (3, 'berlin', 30), (4, NULL, 30),
  (5, 'paris', NULL);
SELECT id, predict('city', p) AS label, round((predict_proba('city', p))[2]::numeric, 6) AS p1,
       round((1 / (1 + exp(-(CASE city WHEN 'berlin' THEN 1 WHEN 'paris' THEN -1 ELSE 0 END
                              + 0.05 * (age - 30)))))::numeric, 6) AS by_hand
  FROM people p ORDER BY id;
-- the model defines no missing value for age (no imputer): a NULL age scores NULL; a NULL city
-- one-hot encodes as no category (zeros), as scikit-learn does for a value it does not know
-- the same through the per-row path
SET pg_predict.enable_batching = off;
SELECT id, predict('city', p) AS label, round((predict_proba('city', p))[2]::numeric, 6) AS p1
  FROM people p ORDER BY id;
RESET pg_predict.enable_batching;

-- varchar works like text; a value the encoder never saw is an error naming it
CREATE TABLE visitors (city varchar(20), age numeric);
INSERT INTO visitors VALUES ('paris', 30), ('rome', 30);
SELECT city, predict('city', v) FROM visitors v WHERE city = 'paris';
SELECT city, predict('city', v) FROM visitors v;
SET pg_predict.enable_batching = off;
SELECT city, predict('city', v) FROM visitors v;
RESET pg_predict.enable_batching;

-- a text feature needs a text column; a text model cannot read arrays
CREATE TABLE numeric_city (city int, age int);
SELECT predict('city', n) FROM numeric_city n;
SELECT predict('city', ARRAY[1, 30]::real[]);

-- a classifier without probabilities: labels only
SELECT id, predict('city_svc', p) FROM people p ORDER BY id;
SELECT predict_proba('city_svc', p) FROM people p;

DROP TABLE people, visitors, numeric_city;
SELECT drop_model('city'), drop_model('city_svc');
