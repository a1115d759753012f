# Without shared_preload_libraries a statement that loads pg_predict was planned before the
# library and its planner hook existed: it scores row by row. It must not do so silently: it
# raises a WARNING that names the settings, and batching_available() says false in it and true
# afterwards. session_preload_libraries makes the first statement of a new connection batch.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node('first_statement', preload => 0);
$node->start;
my $hint = qr/shared_preload_libraries = 'pg_predict'.*ALTER DATABASE postgres SET session_preload_libraries = 'pg_predict'/s;

my ($rc, $out, $err) = $node->psql('postgres', 'CREATE EXTENSION pg_predict');
is($rc, 0, 'CREATE EXTENSION without preloading');
like($err, qr/WARNING:  pg_predict is not preloaded/, 'CREATE EXTENSION warns that pg_predict is not preloaded');
like($err, $hint, '... and names both settings');
$node->safe_psql('postgres', rows_sql() . model_sql('churn'));

# A fresh connection: its first statement loads the library; the next one in the same query
# string is planned after, with the hook.
($rc, $out, $err) = $node->psql('postgres', 'SELECT batching_available(); SELECT batching_available()');
is($out, "f\nt", 'the statement that loaded pg_predict does not batch, the next one does');
like($err, qr/WARNING:  pg_predict is not preloaded.*this statement was planned before it loaded/s,
     'the first use in a connection warns');
($rc, $out, $err) = $node->psql('postgres', q{LOAD 'pg_predict'; SELECT batching_available()});
is($out, 't', 'after LOAD every statement batches');

# The first statement's plan: no PredictBatch without preloading...
my $explain = q{EXPLAIN (costs off) SELECT predict('churn', r) FROM scored_rows r};
($rc, $out, $err) = $node->psql('postgres', "SELECT batching_available(); $explain");
like($out, qr/PredictBatch/, 'a statement planned after the loading one batches');
unlike($node->safe_psql('postgres', "SELECT 1; $explain"), qr/PredictBatch/,
       'a first statement planned before pg_predict loads has no PredictBatch node');

# ... and with session_preload_libraries every connection's first statement batches, silently.
$node->safe_psql('postgres', q{ALTER DATABASE postgres SET session_preload_libraries = 'pg_predict'});
($rc, $out, $err) = $node->psql('postgres', 'SELECT batching_available()');
is($out, 't', 'session_preload_libraries: the first statement batches');
unlike($err, qr/not preloaded/, '... and nothing is said');
like($node->safe_psql('postgres', $explain), qr/PredictBatch/, '... its plan has the PredictBatch node');

done_testing();
