# Citus: ALTER EXTENSION pg_predict UPDATE on a coordinator whose catalog is already a reference
# table (0.7.0 -> 0.8.0 adds model_catalog.deployments and the model_deployments view, and
# drops and creates the functions whose result changed). Every node ends at the new version with
# the same catalog, the distributed table scores as before, and the new behaviour (the deploy
# history that rollback_model undoes) reaches the workers.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $coordinator = citus_node('coordinator');
my $worker = citus_node('worker');
my $host = $coordinator->host;
$coordinator->safe_psql('postgres', sprintf(q{SELECT citus_set_coordinator_host('%s', %d);
                                              SELECT citus_add_node('%s', %d);}, $host, $coordinator->port,
                                            $host, $worker->port));

# 0.7.0, two versions of churn (the second deployed), a forest, a distributed table.
$coordinator->safe_psql('postgres', "CREATE EXTENSION pg_predict VERSION '0.7.0';" . rows_sql()
                        . model_sql('churn') . model_sql('churn') . model_sql('forest') . q{
    CREATE TABLE dist AS SELECT * FROM scored_rows;
    SELECT create_distributed_table('dist', 'id');});
my $version_sql = q{SELECT extversion FROM pg_extension WHERE extname = 'pg_predict'};
is($worker->safe_psql('postgres', $version_sql), '0.7.0', 'the worker has 0.7.0');
is($coordinator->safe_psql('postgres', q{SELECT partmethod FROM pg_dist_partition
                                          WHERE logicalrelid = 'model_catalog'::regclass}),
   'n', 'the catalog is a reference table');

my $scores_sql = q{SELECT string_agg(concat(id, ':', predict('churn', r), ':', predict_proba('forest', r)), ',' ORDER BY id)
                     FROM %s r};
my $before = $coordinator->safe_psql('postgres', sprintf($scores_sql, 'scored_rows'));
is($coordinator->safe_psql('postgres', sprintf($scores_sql, 'dist')), $before, '0.7.0: distributed = local');

$coordinator->safe_psql('postgres', q{ALTER EXTENSION pg_predict UPDATE TO '0.8.0'});
is($coordinator->safe_psql('postgres', $version_sql), '0.8.0', 'the coordinator is at 0.8.0');
is($worker->safe_psql('postgres', $version_sql), '0.8.0', 'Citus took the update to the worker');

my $catalog_sql = q{SELECT string_agg(format('%s %s %s %s %s', name, version, deployed, deployments, md5(program)), '; '
                                      ORDER BY name, version) FROM model_catalog};
my $catalog = $coordinator->safe_psql('postgres', $catalog_sql);
like($catalog, qr/churn 2 t \{"[^"]+"\}/, 'the deployed version starts its history');
is($worker->safe_psql('postgres', $catalog_sql), $catalog, 'the worker has the coordinator catalog, deployments included');
is($coordinator->safe_psql('postgres', sprintf($scores_sql, 'dist')), $before, '0.8.0: the distributed table scores as before');

# The new functions, through the reference table: rollback undoes the last deploy everywhere.
is($coordinator->safe_psql('postgres', model_sql('churn') =~ s/SELECT create_model/SELECT 'added', create_model/r),
   'added|3', 'create_model returns the version it added');
is($coordinator->safe_psql('postgres', q{SELECT rollback_model('churn')}), '2', 'rollback_model undoes it');
is($coordinator->safe_psql('postgres', q{SELECT rollback_model('churn')}), '1', 'and the deploy before');
is($worker->safe_psql('postgres', q{SELECT string_agg(format('%s%s', version, CASE WHEN current THEN '*' END), ' '
                                      ORDER BY deployed_at) FROM model_deployments WHERE name = 'churn'}),
   '1*', 'the worker sees the history the rollbacks left');
is($worker->safe_psql('postgres', $catalog_sql), $coordinator->safe_psql('postgres', $catalog_sql),
   'the worker has the coordinator catalog after the rollbacks');
is($coordinator->safe_psql('postgres', sprintf($scores_sql, 'dist')),
   $coordinator->safe_psql('postgres', sprintf($scores_sql, 'scored_rows')),
   'the workers score with version 1, as the coordinator does');

# 0.9.0: the cascade column reaches the workers' copies, and a cascade built on the coordinator
# is in the workers' catalog.
$coordinator->safe_psql('postgres', q{ALTER EXTENSION pg_predict UPDATE TO '0.9.0'});
is($worker->safe_psql('postgres', $version_sql), '0.9.0', 'Citus took the 0.9.0 update to the worker');
$coordinator->safe_psql('postgres',
    q{SELECT create_cascade('churn', 'SELECT s.* FROM scored_rows s, generate_series(1, 5)', 0.05)});
my $cascade_sql = q{SELECT string_agg(format('%s %s %s', name, version, md5(cascade::text)), '; ' ORDER BY name, version)
                      FROM model_catalog WHERE cascade IS NOT NULL};
like($coordinator->safe_psql('postgres', $cascade_sql), qr/^churn 1 \w{32}$/, 'churn version 1 has a cascade');
is($worker->safe_psql('postgres', $cascade_sql), $coordinator->safe_psql('postgres', $cascade_sql),
   'the worker has the cascade');

done_testing();
