# Programs shared between backends (docs/execution.md "Programs shared between backends"): one
# backend's native program (trees; LightGBM's; a fused linear pipeline) is written once to shared
# memory and other backends map it. Mapped programs score bit for bit as the loaded ones
# (batched, per row, arrays); programs that need their module (several groups) are not shared; a backend's pins leave with it
# (exit, SIGTERM); a new version and DROP are seen by the next statement; a crash restart starts
# the area empty; beyond pg_predict.shared_programs_size the unpinned images are evicted and
# every score stays right.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node('shared_programs', allows_streaming => 1);
$node->append_conf('postgresql.conf', "pg_predict.shared_programs_size = 1\nrestart_after_crash = on\n");
$node->start;
setup_models($node, 'postgres');

my $id_of = q{(SELECT id FROM model_catalog WHERE name = 'churn' AND deployed)};
my $shared = "SELECT coalesce((SELECT format('%s bytes, %s backends', bytes > 0, backends) FROM shared_programs() "
  . "WHERE model_id = $id_of), 'none')";
my $scores = q{SELECT string_agg(concat(predict('churn', r), ' ', predict_proba('churn', r)), ',' ORDER BY id)
               FROM scored_rows r};
my $per_row = "SET pg_predict.enable_batching = off; $scores";
my $arrays = q{SELECT string_agg(predict_proba('churn', ARRAY[tenure, monthly_charges, plan_id])::text, ',' ORDER BY id)
               FROM scored_rows};
my $one_row = q{SELECT predict_proba('churn', r) FROM scored_rows r WHERE id = 17};

is($node->safe_psql('postgres', 'SELECT size_bytes FROM shared_programs_info()'), 1024 * 1024,
   'the area has pg_predict.shared_programs_size');
is($node->safe_psql('postgres', $shared), 'none', 'nothing shared before a backend loads the model');

# The first backend loads the program from the catalog and writes its image.
my $loader = $node->background_psql('postgres');
my $want = $loader->query_safe($scores);
my $want_per_row = $loader->query_safe($per_row);
is($want_per_row, $want, 'the loading backend: batched = per row');
my $want_arrays = $loader->query_safe($arrays);
my $want_one = $loader->query_safe($one_row);
is($node->safe_psql('postgres', $shared), 't bytes, 0 backends', 'its image is in shared memory, mapped by no one');

# Every other backend maps it: the same bits on every path.
is($node->safe_psql('postgres', $scores), $want, 'a mapping backend scores batched as the loader');
is($node->safe_psql('postgres', $per_row), $want, '... per row');
is($node->safe_psql('postgres', $arrays), $want_arrays, '... arrays');
is($node->safe_psql('postgres', $one_row), $want_one, '... one row');
is($node->safe_psql('postgres', "SET pg_predict.threads = 2; SET pg_predict.batch_size = 64; $scores"), $want,
   '... in batches of 64 on two threads');
my $mapper = $node->background_psql('postgres');
is($mapper->query_safe("$scores; $shared"), "$want\nt bytes, 1 backends", 'a backend that maps it pins it');
like($mapper->query_safe("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $scores"), qr/PredictBatch/,
     '... and scores it in the batching node');

# LightGBM's programs (one bucketize, then the trees) are shared too: float8 columns, NULLs.
$node->safe_psql('postgres', q{CREATE TABLE lgb_rows AS SELECT g AS id, }
  . join(', ', map { "CASE WHEN g % 17 = $_ THEN NULL ELSE sin(g * " . ($_ + 1) . ") * 2 END AS f$_" } 0 .. 7)
  . q{ FROM generate_series(1, 500) g; SELECT create_model('lgb', pg_read_file('} . fixture('lightgbm/binary.model.txt')
  . q{'), 'lightgbm');});
my $lgb = q{SELECT string_agg(predict_proba('lgb', r)::text, ',' ORDER BY id) FROM lgb_rows r};
my $lgb_want = $node->safe_psql('postgres', $lgb);
is($node->safe_psql('postgres', q{SELECT count(*) FROM shared_programs() s JOIN model_catalog c ON c.id = s.model_id
                                  WHERE c.name = 'lgb'}), '1', 'a LightGBM program is shared');
is($node->safe_psql('postgres', $lgb), $lgb_want, '... and a mapping backend scores it the same, batched');
is($node->safe_psql('postgres', "SET pg_predict.enable_batching = off; $lgb"), $lgb_want, '... and per row');

# A scikit-learn pipeline fused into one linear kernel (city: a ColumnTransformer with a text
# column, then a logistic regression) is shared too.
my $city = q{SELECT string_agg(concat(predict('city', r), ' ', predict_proba('city', r)), ',' ORDER BY id)
             FROM scored_rows r};
my $city_want = $node->safe_psql('postgres', $city);
is($node->safe_psql('postgres', q{SELECT count(*) FROM shared_programs() s JOIN model_catalog c ON c.id = s.model_id
                                  WHERE c.name = 'city'}), '1', 'a scale / one-hot / logistic pipeline is shared');
is($node->safe_psql('postgres', $city), $city_want, '... and a mapping backend scores it the same, batched');
is($node->safe_psql('postgres', "SET pg_predict.enable_batching = off; $city"), $city_want, '... and per row');

# Programs that need their module stay private: several output groups (segment).
$node->safe_psql('postgres', q{SELECT predict('segment', r) FROM scored_rows r});
is($node->safe_psql('postgres', q{SELECT count(*) FROM shared_programs() s JOIN model_catalog c ON c.id = s.model_id
                                  WHERE c.name = 'segment'}), '0', 'a multiclass model is not shared');

# A backend's pins leave with it: at its exit, and when it is terminated.
$mapper->quit;
$node->poll_query_until('postgres', "$shared = 't bytes, 0 backends'")
  or fail('the pin of a backend that exited stays');
pass('an exiting backend lets go of its pin');
my $victim = $node->background_psql('postgres', on_error_stop => 0);
$victim->query_safe($scores);
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
is($node->safe_psql('postgres', $shared), 't bytes, 1 backends', 'a third backend maps it');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($victim_pid)");
$node->poll_query_until('postgres', "$shared = 't bytes, 0 backends'")
  or fail('the pin of a terminated backend stays');
pass('a terminated backend lets go of its pin');
$victim->quit;

# REVOKE is seen by the next statement of a backend that maps the program.
$node->safe_psql('postgres', q{CREATE ROLE scorer LOGIN; GRANT SELECT ON scored_rows TO scorer;
                               SELECT grant_model_usage('churn', 'scorer');});
my $scorer = $node->background_psql('postgres', on_error_stop => 0, extra_params => ['-U', 'scorer']);
is($scorer->query_safe($scores), $want, 'a role granted the model maps it and scores the same');
$node->safe_psql('postgres', q{SELECT revoke_model_usage('churn', 'scorer')});
$scorer->query($scores);
like($scorer->{stderr}, qr/permission denied for model "churn"/, '... and its next statement after REVOKE is refused');
$scorer->quit;

# A hot standby maps what its own backends load (its area is its own; the ids are the primary's).
$node->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('shared_programs_standby');
$standby->init_from_backup($node, 'base', has_streaming => 1);
$standby->start;
$node->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $scores), $want, 'a standby backend loads the model and scores the same');
is($standby->safe_psql('postgres', $scores), $want, '... another maps it');
is($standby->safe_psql('postgres', $shared), 't bytes, 0 backends', "... from the standby's own area");
$standby->stop;

# A new version: the next statement of a backend holding the old one scores the new one.
$mapper = $node->background_psql('postgres', on_error_stop => 0);
$mapper->query_safe($scores);
my $old_id = $node->safe_psql('postgres', "SELECT $id_of");
$node->safe_psql('postgres', q{SELECT create_model('churn', pg_read_file('} . fixture('regression_tiny.json')
                 . q{')::jsonb, 'xgboost')});
my $new_id = $node->safe_psql('postgres', "SELECT $id_of");
isnt($new_id, $old_id, 'create_model made a new version');
my $regression = q{SELECT string_agg(predict('churn', r)::text, ',' ORDER BY id) FROM scored_rows r};
my $fresh = $node->safe_psql('postgres', $regression);
is($mapper->query_safe($regression), $fresh, "the old version's backend scores the new version in its next statement");
$node->safe_psql('postgres', q{SELECT drop_model('churn')});
$mapper->query($regression);
like($mapper->{stderr}, qr/model "churn" does not exist/, '... and sees DROP in its next statement');
$mapper->quit;
$node->safe_psql('postgres', model_sql('churn'));

# A crash restart reinitializes shared memory: the area starts empty and fills again.
$want = $node->safe_psql('postgres', $scores);
is($node->safe_psql('postgres', $shared), 't bytes, 0 backends', 'the new version is shared');
my $doomed = $node->background_psql('postgres', on_error_stop => 0);
my $doomed_pid = $doomed->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $doomed_pid;
eval { $doomed->quit };  # its server connection is gone: how psql leaves does not matter
$node->poll_query_until('postgres', 'SELECT true') or die 'no restart';
is($node->safe_psql('postgres', 'SELECT images FROM shared_programs_info()'), '0', 'after a crash restart the area is empty');
is($node->safe_psql('postgres', $scores), $want, 'a backend after the restart loads it again');
is($node->safe_psql('postgres', $scores), $want, '... and the next one maps it');
is($node->safe_psql('postgres', $shared), 't bytes, 0 backends', '... from the image written after the restart');

# More models than the area holds: the least recently mapped images without a pin are evicted,
# the area's bytes stay within its size, and every model scores as its own program does.
my $bytes = $node->safe_psql('postgres', "SELECT bytes FROM shared_programs() WHERE model_id = $id_of");
my $tenants = int(1024 * 1024 / $bytes) + 40;
$node->safe_psql('postgres', "SELECT count(create_model('t' || g, pg_read_file('" . fixture('binary_tiny.json')
                 . "')::jsonb, 'xgboost')) FROM generate_series(1, $tenants) g");
my $tenant_scores = "SELECT string_agg(predict_proba('t' || ((id - 1 + 200 * k) % $tenants + 1), r)::text, ',' "
  . "ORDER BY k, id) "
  . "FROM scored_rows r CROSS JOIN generate_series(0, " . int($tenants / 200) . ") k";
my $tenant_want = $node->safe_psql('postgres', "SET pg_predict.cache_size = 0; $tenant_scores");
my ($size, $used, $images, $evicted) = split /\|/,
  $node->safe_psql('postgres', 'SELECT size_bytes, used_bytes, images, evicted FROM shared_programs_info()');
ok($used <= $size, "the images' bytes stay within the area ($used of $size)");
ok($evicted > 0, "images were evicted to make room ($evicted, $images kept)");
is($node->safe_psql('postgres', "SET pg_predict.cache_size = 0; $tenant_scores"), $tenant_want,
   'a backend mapping what is left and loading the rest scores every tenant the same');
is($node->safe_psql('postgres', $scores), $want, 'the first model still scores the same');

done_testing();
