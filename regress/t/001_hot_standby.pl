# A streaming replica scores as its primary, follows a replace made on the primary, and refuses
# to change models first, before any import work, with an error that says why.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = new_node('primary', allows_streaming => 1);
$primary->start;
setup_models($primary, 'postgres');
my $before = score_all($primary, 'postgres');

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

is(score_all($standby, 'postgres'), $before, 'the standby scores every model as the primary');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'it is a standby');

# A retrain on the primary reaches the standby: 'churn' becomes the multiclass model.
$primary->safe_psql('postgres',
    model_sql('segment', 'churn') =~ s/'xgboost'\);/'xgboost', options => '{"replace": true}');/r);
$primary->wait_for_catchup($standby);
my $after = score_all($primary, 'postgres', 'churn');
isnt($after, (split /\n/, $before)[0], 'the replace changed the scores on the primary');
is(score_all($standby, 'postgres', 'churn'), $after, 'the standby follows the replace');

# Changes are refused on the standby, before the document is even read (an invalid one gives
# the same error), and drop_model of an unknown name says the same, not "does not exist".
my ($rc, $out, $err) = $standby->psql('postgres', model_sql('churn', 'new_model'));
like($err, qr/cannot execute create_model\(\) during recovery/, 'create_model on a standby: clear error');
($rc, $out, $err) = $standby->psql('postgres', q{SELECT create_model('x', '{"not": "a model"}')});
like($err, qr/cannot execute create_model\(\) during recovery/, '... before any import work');
($rc, $out, $err) = $standby->psql('postgres', q{SELECT create_model('churn', '{}', options => '{"replace": true}')});
like($err, qr/cannot execute create_model\(\) during recovery/, '... and for a replace');
($rc, $out, $err) = $standby->psql('postgres', q{SELECT drop_model('churn')});
like($err, qr/cannot execute drop_model\(\) during recovery/, 'drop_model on a standby: clear error');
($rc, $out, $err) = $standby->psql('postgres', q{SELECT drop_model('no_such_model')});
like($err, qr/cannot execute drop_model\(\) during recovery/, '... also for an unknown name');
($rc, $out, $err) = $standby->psql('postgres', q{SELECT grant_model_usage('churn', 'public')});
like($err, qr/cannot execute grant_model_usage\(\) during recovery/, 'grants too');
is(score_all($standby, 'postgres'), score_all($primary, 'postgres'), 'nothing changed on either side');

# Versions: the replace above added version 2; a rollback on the primary reaches the standby,
# which scores version 1 again and refuses to switch versions itself.
my $versions_sql = q{SELECT string_agg(format('%s %s', version, deployed), ', ' ORDER BY version)
                       FROM model_versions WHERE name = 'churn'};
is($standby->safe_psql('postgres', $versions_sql), '1 f, 2 t', 'the standby lists both versions of churn');
$primary->safe_psql('postgres', q{SELECT rollback_model('churn')});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $versions_sql), '1 t, 2 f', 'the rollback reaches the standby');
is(score_all($standby, 'postgres', 'churn'), (split /\n/, $before)[0], 'the standby scores version 1 again');
# Profiles: taken on the primary, replicated with the catalog; a standby runs model_drift against
# the profile but cannot take one.
$primary->safe_psql('postgres', q{SELECT profile_model('churn', 'SELECT * FROM scored_rows')});
$primary->wait_for_catchup($standby);
my $drift_sql = q{SELECT string_agg(format('%s %s', feature, anomaly), ', ' ORDER BY feature)
                    FROM model_drift('churn', 'SELECT * FROM scored_rows')};
is($standby->safe_psql('postgres', $drift_sql), $primary->safe_psql('postgres', $drift_sql),
   'model_drift on the standby against the replicated profile');
for my $call (q{SELECT deploy_model('churn', 2)}, q{SELECT rollback_model('churn')}, q{SELECT drop_model('churn', 2)},
              q{SELECT profile_model('churn', 'SELECT * FROM scored_rows')}) {
    ($rc, $out, $err) = $standby->psql('postgres', $call);
    like($err, qr/during recovery/, "$call on a standby: clear error");
}

# Usage statistics: a standby counts the scoring it does, in its own shared memory (version 1
# is deployed again; score_all scores its 200 rows in one node).
$standby->safe_psql('postgres', 'SELECT model_stats_reset()');
score_all($standby, 'postgres', 'churn');
is($standby->safe_psql('postgres', q{SELECT format('%s rows, version %s', rows, version) FROM model_stats WHERE name = 'churn'}),
   '200 rows, version 1', 'the standby counts its own scoring (model_stats)');

done_testing();
