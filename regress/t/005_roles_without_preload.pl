# Without shared_preload_libraries the role hook is installed when a session loads pg_predict
# (its first pg_predict call, or LOAD): from then on DROP ROLE is refused while the role owns
# models, and REASSIGN OWNED / DROP OWNED handle them, as when preloaded (sql/privileges.sql).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node('no_preload', preload => 0);
$node->start;
is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'), '', 'pg_predict is not preloaded');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_predict; CREATE ROLE model_owner; CREATE ROLE heir;'
    . model_sql('churn') . model_sql('city'));
$node->safe_psql('postgres', q{SELECT set_model_owner('churn', 'model_owner'); SELECT set_model_owner('city', 'model_owner')});

my ($rc, $out, $err) = $node->psql('postgres', q{LOAD 'pg_predict'; DROP ROLE model_owner});
like($err, qr/role "model_owner" cannot be dropped because some objects depend on it/,
     'DROP ROLE refused in a session that loaded pg_predict');
($rc, $out, $err) = $node->psql('postgres', q{SELECT predict('churn', ARRAY[1, 2, 3]::real[]); DROP ROLE model_owner});
like($err, qr/owner of pg_predict models in database postgres: churn, city/, '... also after a pg_predict call');
$node->safe_psql('postgres', q{LOAD 'pg_predict'; REASSIGN OWNED BY model_owner TO heir; DROP ROLE model_owner});
is($node->safe_psql('postgres', q{SELECT string_agg(name || ' ' || owner, ', ' ORDER BY name) FROM models}),
   'churn heir, city heir', 'REASSIGN OWNED moved the models');
$node->safe_psql('postgres', q{LOAD 'pg_predict'; DROP OWNED BY heir; DROP ROLE heir});
is($node->safe_psql('postgres', 'SELECT count(*) FROM models'), '0', 'DROP OWNED dropped them');

done_testing();
