# Usage statistics (model_stats) across backends: with pg_predict preloaded, parallel workers'
# counts add up (batched and per row), another session sees a statement's per-row calls as soon
# as the statement ends, the backends holding a program are counted and leave when they exit,
# and pg_predict.stats_max evicts the least recently used version. Without preloading, a
# session sees its own usage only, with a NOTICE that says why (docs/execution.md "Usage
# statistics").
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node('usage_stats');
$node->append_conf('postgresql.conf', "pg_predict.stats_max = 10\nmax_worker_processes = 8\nmax_parallel_workers = 8\n");
$node->start;
setup_models($node, 'postgres');
$node->safe_psql('postgres', q{
CREATE TABLE big AS SELECT g AS id, (g % 20)::real AS tenure, (g * 7 % 100)::real AS monthly_charges,
                           (g % 4)::real AS plan_id FROM generate_series(1, 100000) g;
ANALYZE big;
SELECT model_stats_reset();
});
is($node->safe_psql('postgres', 'SELECT shared_memory FROM model_stats_info()'), 't', 'the counts are in shared memory');

my $stats_sql = q{SELECT format('calls %s rows %s batches %s errors %s', calls, rows, batches, errors)
                  FROM model_stats WHERE name = 'churn'};
# Only workers scan (the leader does not take part): every row is scored in a worker.
my $parallel = q{SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET parallel_leader_participation = off; SET pg_predict.batch_size = 50;};

my $plan = $node->safe_psql('postgres', $parallel
    . q{EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT sum(predict('churn', b)) FROM big b});
like($plan, qr/Workers Launched: 2.*Parallel Custom Scan \(PredictBatch\).*Batches: \d+/s, 'two workers scored batched');
# EXPLAIN ANALYZE gathers the workers' counts (the leader scored nothing).
like($plan, qr/Batches: 200[01]\n.*Rows Scored: 100000\n/s, "EXPLAIN ANALYZE shows the workers' batches and rows");
# Each worker scores its share in batches of 50 (batches up to 64 rows do not grow; each
# worker's last one may be short): 100000 rows in 2000 or 2001 batches, one call each.
my ($calls, $rows, $batches) = split /\|/, $node->safe_psql('postgres',
    q{SELECT calls, rows, batches FROM model_stats WHERE name = 'churn'});
is($rows, '100000', "the workers' rows add up");
ok($batches == 2000 || $batches == 2001, "the workers' batches add up ($batches)");
is($calls, $batches, 'one call a batch');

# Per row in the workers: each worker's calls reach the entry when its statement ends.
$node->safe_psql('postgres', 'SELECT model_stats_reset()');
$plan = $node->safe_psql('postgres', $parallel . q{SET pg_predict.enable_batching = off;
    EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT sum(predict('churn', b)) FROM big b WHERE id <= 30000});
like($plan, qr/Workers Launched: 2/, 'two workers scored per row');
unlike($plan, qr/PredictBatch/, '... without the batching node');
is($node->safe_psql('postgres', $stats_sql), 'calls 30000 rows 30000 batches 0 errors 0',
   "the workers' per-row calls add up");

# Another session sees a statement's per-row calls once the statement ends, before its
# transaction does.
$node->safe_psql('postgres', 'SELECT model_stats_reset()');
my $session = $node->background_psql('postgres', on_error_stop => 0);
$session->query_safe(q{BEGIN; SET pg_predict.enable_batching = off;
                       SELECT count(predict('churn', r)) FROM scored_rows r});
is($node->safe_psql('postgres', $stats_sql), 'calls 200 rows 200 batches 0 errors 0',
   "a statement's per-row calls are seen when it ends, before its transaction");
# A failing call counts when its transaction aborts.
$session->query(q{SELECT predict('churn', ARRAY[1, 2]::real[])});
$session->query('ROLLBACK');  # (query_safe would see the error above again)
is($node->safe_psql('postgres', $stats_sql), 'calls 200 rows 200 batches 0 errors 1', 'an error counts');

# Backends holding the program: the session above; then one more while a second one holds it.
is($node->safe_psql('postgres', q{SELECT backends FROM model_stats WHERE name = 'churn'}), '1',
   'one backend holds churn');
is($node->safe_psql('postgres', q{SELECT predict('churn', ARRAY[1, 2, 3]::real[]) IS NOT NULL;
                                  SELECT backends FROM model_stats WHERE name = 'churn'}), "t\n2",
   'two while this session holds it too');
$session->quit;
# The backend ends a moment after its client.
ok($node->poll_query_until('postgres', q{SELECT backends = 0 FROM model_stats WHERE name = 'churn'}),
   'a backend that exits holds nothing');

# pg_predict.stats_max = 10: the 11th and 12th versions evict the least recently used.
$node->safe_psql('postgres', 'SELECT model_stats_reset()');
for my $i (1 .. 12) {
    $node->safe_psql('postgres', model_sql('churn', "copy$i") . "SELECT predict('copy$i', ARRAY[1, 2, 3]::real[])");
}
is($node->safe_psql('postgres', q{SELECT string_agg(name, ',' ORDER BY name) FROM model_stats WHERE calls > 0}),
   join(',', sort map { "copy$_" } 3 .. 12), 'the first two versions were evicted');
is($node->safe_psql('postgres', 'SELECT evicted FROM model_stats_info()'), '2', 'model_stats_info counts them');
$node->stop;

# Without preloading: this session's counts only, and a NOTICE saying so.
my $alone = new_node('usage_stats_no_preload', preload => 0);
$alone->start;
setup_models($alone, 'postgres');
# LOAD first: a session's first statement is planned before pg_predict is loaded, so per row.
# Then 200 rows at the default batch size: 64 + 136, two batches.
my ($rc, $out, $err) = $alone->psql('postgres', q{LOAD 'pg_predict'; SELECT count(predict('churn', r)) FROM scored_rows r;
    SELECT calls, rows, backends FROM model_stats WHERE name = 'churn'});
is($out, "200\n2|200|1", 'a session sees its own usage');
like($err, qr/NOTICE:  pg_predict is not in shared_preload_libraries: model_stats shows this session's usage only/,
     '... with a NOTICE naming the setting');
($rc, $out, $err) = $alone->psql('postgres', q{SELECT count(*) FROM model_stats});
is($out, '0', "another session sees none of it");
is($alone->safe_psql('postgres', 'SELECT shared_memory FROM model_stats_info()'), 'f', 'model_stats_info says so');
$alone->stop;

done_testing();
