# Citus: a coordinator and two workers on this machine. Models created on the coordinator reach
# every node (the catalog is a reference table), a distributed table is scored on the workers
# in PredictBatch nodes with the results of the same table held locally, scores are written
# back between co-located tables, a node added later gets the models, a worker that is down
# gives an error and loses nothing, and pg_dump of the coordinator keeps the models.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $coordinator = citus_node('coordinator');
my $worker1 = citus_node('worker1');
my $worker2 = citus_node('worker2');
my @workers = ($worker1, $worker2);
my $host = $coordinator->host;
$coordinator->safe_psql('postgres', sprintf(q{SELECT citus_set_coordinator_host('%s', %d);
                                              SELECT citus_add_node('%s', %d);}, $host, $coordinator->port,
                                            $host, $worker1->port));

# The extension reaches the worker with CREATE EXTENSION; the models with the first change.
setup_models($coordinator, 'postgres');
$coordinator->safe_psql('postgres', q{
    CREATE TABLE dist AS SELECT * FROM scored_rows;
    SELECT create_distributed_table('dist', 'id');
    SELECT create_model('prep', '{"format": "sklearn", "version": 1, "task": "transformer",
      "inputs": [{"name": "tenure", "type": "numeric"}, {"name": "monthly_charges", "type": "numeric"},
                 {"name": "city", "type": "text"}],
      "steps": [{"type": "ColumnTransformer", "remainder": null, "transformers": [
        {"columns": [0, 1], "steps": [{"type": "StandardScaler", "mean": [1.0, 2.0], "scale": [2.0, 4.0]}]},
        {"columns": [2], "steps": [{"type": "OneHotEncoder", "categories": [["berlin", "paris"]],
                                    "handle_unknown": "ignore", "drop_idx": null}]}]}]}'::jsonb);});
is($coordinator->safe_psql('postgres', q{SELECT partmethod FROM pg_dist_partition
                                          WHERE logicalrelid = 'model_catalog'::regclass}),
   'n', 'the first create_model made the catalog a reference table');

# A node added later gets the models before it scores: the rebalancer copies the reference
# tables to it before it moves shards there.
$coordinator->safe_psql('postgres', sprintf(q{SELECT citus_add_node('%s', %d);
    SELECT rebalance_table_shards('dist', shard_transfer_mode => 'block_writes');}, $host, $worker2->port));
is($coordinator->safe_psql('postgres', q{SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'dist'::regclass}),
   '2', 'dist is spread over both workers');

my $versions_sql = q{SELECT string_agg(format('%s %s %s %s %s %s %s %s %s', id, name, version, deployed, deployed_at,
                                              deployments, owner, usable_by, md5(program)), '; ' ORDER BY name, version)
                       FROM model_catalog};
sub same_catalog_everywhere {
    my ($what) = @_;
    my $expected = $coordinator->safe_psql('postgres', $versions_sql);
    for my $w (@workers) {
        is($w->safe_psql('postgres', $versions_sql), $expected, "$what: " . $w->name . " has the coordinator's catalog");
    }
}
same_catalog_everywhere('after create_model and a node added later');

# Every scoring function over the distributed table equals the same over the local table.
my %calls = (
    predict => [qw(churn segment city forest)],
    predict_proba => [qw(churn segment city forest)],
    predict_label => [qw(churn segment)],
    predict_outputs => [qw(churn)],
    predict_contributions => [qw(churn)],
    transform => [qw(prep)],
);
sub scores {
    my ($table, $function, $model) = @_;
    return $coordinator->safe_psql('postgres',
        "SELECT string_agg(concat(id, ':', $function('$model', r)), ',' ORDER BY id) FROM $table r");
}
for my $function (sort keys %calls) {
    for my $model (@{ $calls{$function} }) {
        my $local = scores('scored_rows', $function, $model);
        isnt($local, '', "$function($model) scores the local rows");
        is(scores('dist', $function, $model), $local, "$function($model): distributed = local, row for row");
    }
}
# A cascade (0.9.0) scores on the workers as per row on the coordinator. A session's SET stays on
# the coordinator, so the setting is the database's, on every node (docs: Cascades).
$coordinator->safe_psql('postgres',
    q{SELECT create_cascade('churn', 'SELECT s.* FROM scored_rows s, generate_series(1, 5)', 0.05, '{"gamma": 0.05}')});
$coordinator->safe_psql('postgres', 'ALTER DATABASE postgres SET pg_predict.cascades = on');  # Citus sends it to the workers
my $cascade_labels = $coordinator->safe_psql('postgres', 'SET pg_predict.enable_batching = off; '
    . q{SELECT string_agg(concat(id, ':', predict_label('churn', r)), ',' ORDER BY id) FROM scored_rows r});
is(scores('dist', 'predict_label', 'churn'), $cascade_labels, 'cascades: distributed = per row on the coordinator');
like($coordinator->safe_psql('postgres', q{EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
                                           SELECT predict_label('churn', r) FROM dist r}),
     qr/Cascade: .*Rows Decided by Cascade: [1-9]/s, '... the workers decide rows through it');
$coordinator->safe_psql('postgres', 'ALTER DATABASE postgres RESET pg_predict.cascades');
$coordinator->safe_psql('postgres', q{SELECT drop_cascade('churn')});

is($coordinator->safe_psql('postgres', q{SELECT string_agg(explain_prediction('churn', r)::text, ';' ORDER BY id) FROM dist r}),
   $coordinator->safe_psql('postgres', q{SELECT string_agg(explain_prediction('churn', r)::text, ';' ORDER BY id) FROM scored_rows r}),
   'explain_prediction: distributed = local');

# The node is in a task's plan: the workers score.
my $plan = $coordinator->safe_psql('postgres', q{EXPLAIN (COSTS OFF) SELECT id, predict_proba('churn', r) FROM dist r});
like($plan, qr/Custom Scan \(Citus Adaptive\).*Task.*Custom Scan \(PredictBatch\).*Seq Scan on dist_\d+/s,
     'EXPLAIN shows PredictBatch in the task plan, over the shard');

# Aggregates combine per shard; WHERE and ORDER BY ... LIMIT over the scores.
for my $query (q{SELECT sum(predict('churn', r)), round(avg((predict_proba('segment', r))[2])::numeric, 12),
                        count(*) FILTER (WHERE predict('forest', r) = 1) FROM %s r},
               q{SELECT string_agg(id::text, ',' ORDER BY id) FROM %s r WHERE (predict_proba('churn', r))[2] > 0.5},
               q{SELECT string_agg(id::text, ',') FROM (SELECT id FROM %s r
                   ORDER BY (predict_proba('segment', r))[1] DESC, id LIMIT 7) top}) {
    is($coordinator->safe_psql('postgres', sprintf($query, 'dist')),
       $coordinator->safe_psql('postgres', sprintf($query, 'scored_rows')),
       'distributed = local: ' . (split /\n/, $query)[0]);
}
# The trust issue's query shapes over the distributed table. A constant in a named ROW(...)::type
# scores as over the local table and per row. Citus sends the row of a subquery or view over a
# distributed table to the workers as an anonymous ROW(...) whose fields are f1, f2, ... (the
# names stay on the coordinator): that is an error that says so, never a score from a row read
# by position.
$coordinator->safe_psql('postgres', q{
    CREATE TYPE churn_row AS (tenure real, monthly_charges real, plan_id real);
    CREATE VIEW dist_const AS SELECT id, tenure, 70.5::real AS monthly_charges, 2::real AS plan_id FROM dist;});
my $row_query = q{SELECT string_agg(concat(id, ':', predict_proba('churn', ROW(tenure, 5, plan_id)::churn_row)), ',' ORDER BY id)
                    FROM %s};
my $want = $coordinator->safe_psql('postgres', sprintf($row_query, 'scored_rows'));
is($coordinator->safe_psql('postgres', sprintf($row_query, 'dist')), $want, 'ROW(..., constant, ...)::type: distributed = local');
is($coordinator->safe_psql('postgres', 'SET pg_predict.enable_batching = off; ' . sprintf($row_query, 'scored_rows')), $want,
   'ROW(..., constant, ...)::type: batched = per row');
for my $query (q{SELECT sum(predict('churn', q)) FROM (SELECT id, tenure, 10::real AS monthly_charges, plan_id FROM dist) q},
               q{SELECT sum(predict('churn', v)) FROM dist_const v}) {
    my (undef, undef, $error) = $coordinator->psql('postgres', $query);
    like($error, qr/needs column "monthly_charges", which record does not have.*DETAIL:  The row has fields without a name.*Citus/s,
         "a subquery's or view's row on Citus is an error that says why: $query");
}
$coordinator->safe_psql('postgres', 'DROP VIEW dist_const; DROP TYPE churn_row');

like($coordinator->safe_psql('postgres', q{EXPLAIN (COSTS OFF) SELECT sum(predict('churn', r)) FROM dist r}),
     qr/Task.*Aggregate.*PredictBatch/s, 'the sum is computed per shard, on the workers');
like($coordinator->safe_psql('postgres', q{EXPLAIN (COSTS OFF) SELECT id FROM dist r WHERE (predict_proba('churn', r))[2] > 0.5}),
     qr/Task.*PredictBatch/s, 'the filter on a score runs on the workers');

# Writing scores back: INSERT ... SELECT between co-located tables runs per shard on the
# workers; a co-located UPDATE ... FROM then sets a column of the scored table.
$coordinator->safe_psql('postgres', q{
    CREATE TABLE churn_scores (id int PRIMARY KEY, score float8);
    SELECT create_distributed_table('churn_scores', 'id', colocate_with => 'dist');
    ALTER TABLE dist ADD COLUMN score float8;});
my $insert = q{INSERT INTO churn_scores SELECT id, (predict_proba('churn', r))[2] FROM dist r};
like($coordinator->safe_psql('postgres', "EXPLAIN (COSTS OFF) $insert"), qr/Task.*Insert on churn_scores_\d+.*PredictBatch/s,
     'INSERT ... SELECT predict_proba() is pushed down to the workers');
$coordinator->safe_psql('postgres', $insert);
$coordinator->safe_psql('postgres', q{UPDATE dist d SET score = s.score FROM churn_scores s WHERE s.id = d.id});
is($coordinator->safe_psql('postgres', q{SELECT string_agg(concat(id, ':', score), ',' ORDER BY id) FROM dist}),
   $coordinator->safe_psql('postgres', q{SELECT string_agg(concat(id, ':', (predict_proba('churn', r))[2]), ',' ORDER BY id) FROM scored_rows r}),
   'the stored scores are the local table\'s');
my ($rc, $out, $err) = $coordinator->psql('postgres', q{UPDATE dist r SET score = predict('churn', r)});
like($err, qr/STABLE functions used in UPDATE queries cannot be called with column references/,
     'a direct UPDATE ... SET = predict() is refused by Citus (documented)');

# Model operations reach every node in the same transaction.
my $churn_v1 = scores('scored_rows', 'predict_proba', 'churn');
$coordinator->safe_psql('postgres', model_sql('segment', 'churn'));
same_catalog_everywhere('after a new version');
my $churn_v2 = scores('scored_rows', 'predict_proba', 'churn');
isnt($churn_v2, $churn_v1, 'version 2 scores differently');
is(scores('dist', 'predict_proba', 'churn'), $churn_v2, 'the workers score version 2');
$coordinator->safe_psql('postgres', q{SELECT rollback_model('churn')});
same_catalog_everywhere('after rollback_model');
is(scores('dist', 'predict_proba', 'churn'), $churn_v1, 'the workers score version 1 again');
$coordinator->safe_psql('postgres', q{SELECT deploy_model('churn', 2)});
same_catalog_everywhere('after deploy_model');
is(scores('dist', 'predict_proba', 'churn'), $churn_v2, 'deploy_model reaches the workers');
$coordinator->safe_psql('postgres', q{BEGIN; SELECT deploy_model('churn', 1); ROLLBACK;});
same_catalog_everywhere('after a rolled-back deploy');
is(scores('dist', 'predict_proba', 'churn'), $churn_v2, 'a rolled-back deploy changes no node');
# The deploy history (0.8.0) is the catalog's: a rollback undoes the last deploy everywhere.
is($coordinator->safe_psql('postgres', q{SELECT string_agg(version::text, ' ' ORDER BY deployed_at) FROM model_deployments
                                          WHERE name = 'churn'}),
   '1 2', 'the deploy history on the coordinator');
is($coordinator->safe_psql('postgres', q{SELECT rollback_model('churn')}), '1', 'rollback_model undoes deploy_model');
same_catalog_everywhere('after undoing a deploy');
is(scores('dist', 'predict_proba', 'churn'), $churn_v1, 'the workers score what the undone deploy replaced');
$coordinator->safe_psql('postgres', q{SELECT deploy_model('churn', 2)});

# A worker never scores another version than the coordinator's snapshot deploys: a deploy
# that commits after a REPEATABLE READ transaction took its snapshot is not seen by its
# shard queries either (the coordinator pins the version in them).
my $session = $coordinator->background_psql('postgres');
$session->query_safe(q{BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM scored_rows;});
$coordinator->safe_psql('postgres', q{SELECT deploy_model('churn', 1)});
is(scores('dist', 'predict_proba', 'churn'), $churn_v1, 'a new statement scores version 1 on the workers');
my $in_snapshot = $session->query_safe(
    q{SELECT string_agg(concat(id, ':', predict_proba('churn', r)), ',' ORDER BY id) FROM dist r});
is($in_snapshot, $churn_v2, "the older snapshot's statement scores version 2 on the workers");
$session->query_safe('COMMIT');
$session->quit;

# Grants and owners are checked on the workers too.
$coordinator->safe_psql('postgres', q{CREATE ROLE analyst LOGIN; GRANT SELECT ON dist TO analyst;});
($rc, $out, $err) = $coordinator->psql('postgres', q{SET ROLE analyst; SELECT sum(predict('city', r)) FROM dist r});
like($err, qr/permission denied for model "city"/, 'a role without USAGE is refused on the workers');
$coordinator->safe_psql('postgres', q{SELECT grant_model_usage('city', 'analyst')});
same_catalog_everywhere('after grant_model_usage');
is($coordinator->safe_psql('postgres', q{SET ROLE analyst; SELECT sum(predict('city', r)) FROM dist r}),
   $coordinator->safe_psql('postgres', q{SELECT sum(predict('city', r)) FROM scored_rows r}), 'once granted, it scores');
$coordinator->safe_psql('postgres', q{SELECT revoke_model_usage('city', 'analyst'); SELECT set_model_owner('forest', 'analyst')});
same_catalog_everywhere('after revoke_model_usage and set_model_owner');

# Changes are refused on a worker, with a message that says where to make them.
($rc, $out, $err) = $worker1->psql('postgres', model_sql('churn', 'on_worker'));
like($err, qr/cannot execute create_model\(\) on a Citus worker/, 'create_model on a worker: clear error');
($rc, $out, $err) = $worker1->psql('postgres', q{SELECT drop_model('churn')});
like($err, qr/cannot execute drop_model\(\) on a Citus worker/, 'drop_model on a worker: clear error');

# train() and evaluate_model() over a distributed query: the rows come to the coordinator.
is($coordinator->safe_psql('postgres', q{SELECT (train('trained', 'SELECT tenure, monthly_charges, plan_id,
        predict(''segment'', d) AS label FROM dist d', 'label', 'xgboost', '{"n_estimators": 5}')) ->> 'rows'}),
   '200', 'train() over a distributed query reads every row');
same_catalog_everywhere('after train()');
is(scores('dist', 'predict', 'trained'), scores('scored_rows', 'predict', 'trained'), 'the trained model scores on the workers');
my $evaluate = q{SELECT e ->> 'rows', e ->> 'accuracy' FROM evaluate_model('segment',
                   'SELECT *, (ARRAY[0, 1, 1])[1 + id %% 3] AS label FROM %s d', 'label') e};
is($coordinator->safe_psql('postgres', sprintf($evaluate, 'dist')), $coordinator->safe_psql('postgres', sprintf($evaluate, 'scored_rows')),
   'evaluate_model() over a distributed query = over the local table');
like($coordinator->safe_psql('postgres', sprintf($evaluate, 'dist')), qr/^200\|0\.\d+$/, '... every row, a real accuracy');
# Profiles: train() leaves them to profile_model on Citus (its new version is not visible to the
# workers before it commits); the profile goes into the catalog, so every node has it, and
# model_drift over a distributed table compares on the coordinator, as over the local table.
is($coordinator->safe_psql('postgres', q{SELECT profiled_at IS NULL FROM models WHERE name = 'trained'}), 't',
   'train() does not profile on Citus');
$coordinator->safe_psql('postgres', q{SELECT profile_model('trained', 'SELECT * FROM dist')});
is($worker1->safe_psql('postgres', q{SELECT (explain_model('trained') -> 'profile' ->> 'rows')}), '200',
   'the profile profile_model took over a distributed table reaches the workers');
same_catalog_everywhere('after profile_model()');
my $drift = q{SELECT string_agg(format('%%s %%s %%s', feature, round(value::numeric, 9), anomaly), ', ' ORDER BY feature)
                FROM model_drift('trained', 'SELECT * FROM %s WHERE id %% 3 = 0')};
is($coordinator->safe_psql('postgres', sprintf($drift, 'dist')), $coordinator->safe_psql('postgres', sprintf($drift, 'scored_rows')),
   'model_drift over a distributed table = over the local table');

# A worker that is down: an error, never a partial result; changes fail and change no node.
my $sum_sql = q{SELECT sum(predict('churn', r)), count(*) FROM dist r};
my $sum = $coordinator->safe_psql('postgres', $sum_sql);
$worker2->stop('fast');
($rc, $out, $err) = $coordinator->psql('postgres', $sum_sql);
isnt($rc, 0, 'a query over a down worker fails');
like($err, qr/connection to the remote node .* failed/, '... with an error naming the node');
is($out, '', '... and no partial sum');
my $before = $coordinator->safe_psql('postgres', $versions_sql);
($rc, $out, $err) = $coordinator->psql('postgres', model_sql('city', 'churn'));
isnt($rc, 0, 'create_model while a worker is down fails');
($rc, $out, $err) = $coordinator->psql('postgres', q{SELECT deploy_model('churn', 2)});
isnt($rc, 0, 'deploy_model while a worker is down fails');
is($coordinator->safe_psql('postgres', $versions_sql), $before, 'the coordinator kept its catalog');
is($worker1->safe_psql('postgres', $versions_sql), $before, 'the running worker kept its catalog');
$worker2->start;
is($coordinator->safe_psql('postgres', $sum_sql), $sum, 'once the worker is back, the same query gives the same result');
same_catalog_everywhere('after the worker came back');

# pg_dump of the coordinator keeps the models: restored into a new database, they score alike.
my $dump = $coordinator->basedir . '/coordinator.sql';
$coordinator->command_ok(['pg_dump', '-d', $coordinator->connstr('postgres'), '-f', $dump,
                          '--exclude-table=dist', '--exclude-table=churn_scores'], 'pg_dump of the coordinator');
$coordinator->safe_psql('postgres', 'CREATE DATABASE restored');
$coordinator->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $coordinator->connstr('restored'), '-f', $dump],
                         'the dump restores');
is($coordinator->safe_psql('restored', $versions_sql), $coordinator->safe_psql('postgres', $versions_sql),
   'the restored database has every model and version');
is($coordinator->safe_psql('restored', q{SELECT string_agg(concat(id, ':', predict_proba('segment', r)), ',' ORDER BY id) FROM scored_rows r}),
   scores('dist', 'predict_proba', 'segment'), 'and scores as the cluster does');

# drop_model reaches every node.
$coordinator->safe_psql('postgres', q{SELECT drop_model('trained')});
same_catalog_everywhere('after drop_model');
($rc, $out, $err) = $coordinator->psql('postgres', q{SELECT sum(predict('trained', r)) FROM dist r});
like($err, qr/model "trained" does not exist/, 'a dropped model is gone on the workers too');

done_testing();
