# Shared by the TAP tests in regress/t/ (PostgreSQL::Test::Cluster; run by scripts/test.sh's
# `tap` suite, which sets PGPREDICT_ROOT and puts the server's bin directory first on PATH).
package PgPredictTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(new_node citus_node fixture model_sql setup_models score_all rows_sql);

my $root = $ENV{PGPREDICT_ROOT} or die "PGPREDICT_ROOT is not set (run through scripts/test.sh)";

# The path of a fixture under regress/fixtures/.
sub fixture { return "$root/regress/fixtures/$_[0]"; }

# A new cluster with pg_predict preloaded, as the README recommends (preload => 0: not).
sub new_node {
    my ($name, %params) = @_;
    my $preload = exists $params{preload} ? delete $params{preload} : 1;
    my $node = PostgreSQL::Test::Cluster->new($name);
    $node->init(%params);
    $node->append_conf('postgresql.conf', "lc_messages = 'C'\nfsync = off\n");
    $node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_predict'\n") if $preload;
    return $node;
}

# A started Citus node with CREATE EXTENSION citus done (007_citus.pl, 009_citus_upgrade.pl).
# Citus before pg_predict: our hooks wrap Citus's. Two-phase commit writes the reference table.
sub citus_node {
    my ($name) = @_;
    my $pkglib = `pg_config --pkglibdir`;
    chomp $pkglib;
    BAIL_OUT("Citus is not installed ($pkglib/citus.so): run scripts/install-citus.sh") unless -f "$pkglib/citus.so";
    my $node = new_node($name, preload => 0);
    $node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,pg_predict'\n"
                         . "max_connections = 60\nmax_prepared_transactions = 60\ncitus.shard_count = 4\n"
                         # a node connects to itself (shard moves) where the tests listen: a socket
                         . "citus.local_hostname = '" . $node->host . "'\n");
    $node->start;
    $node->safe_psql('postgres', 'CREATE EXTENSION citus');
    return $node;
}

# The models every test registers: name => SQL expression of the document (server-side read)
# and create_model's format. Two XGBoost fixtures and two scikit-learn ones (a text column, a
# random forest).
my %models = (
    churn  => ["pg_read_file('" . fixture('binary_tiny.json') . "')::jsonb", 'xgboost'],
    segment => ["pg_read_file('" . fixture('multiclass_tiny.json') . "')::jsonb", 'xgboost'],
    city   => ["pg_read_file('" . fixture('sklearn_city.json') . "')::jsonb", 'sklearn'],
    forest => ["(pg_read_file('" . fixture('sklearn_trees/rf_classifier2.json') . "')::jsonb) -> 'document'",
               'sklearn'],
);

# SQL that registers model $name (one of the above) under $as (default: the same name).
sub model_sql {
    my ($name, $as) = @_;
    my ($doc, $format) = @{ $models{$name} };
    $as //= $name;
    return "SELECT create_model('$as', $doc, '$format');";
}

# A table every model can score: the fixtures' features by name.
sub rows_sql {
    return q{
CREATE TABLE scored_rows AS
SELECT g AS id, (g % 20)::real AS tenure, (g * 7 % 100)::real AS monthly_charges,
       (g % 4)::real AS plan_id, (ARRAY['berlin', 'paris'])[g % 2 + 1] AS city, 20 + g % 30 AS age,
       ((g % 13) - 6)::real / 3 AS x0, ((g % 7) - 3)::real / 2 AS x1, ((g % 5) - 2)::real AS x2,
       ((g % 11) - 5)::real / 4 AS x3
  FROM generate_series(1, 200) g;
};
}

# CREATE EXTENSION, the scored table and every model, in database $db.
sub setup_models {
    my ($node, $db) = @_;
    $node->safe_psql($db, "CREATE EXTENSION pg_predict;" . rows_sql() . join('', map { model_sql($_) } sort keys %models));
}

# Every model's predictions (and class probabilities) on every row, as one string: two
# clusters, or a cluster before and after, score identically iff these are equal.
sub score_all {
    my ($node, $db, @names) = @_;
    @names = sort keys %models unless @names;
    my @parts;
    for my $m (@names) {  # all four are classifiers
        push @parts, $node->safe_psql($db,
            "SELECT '$m: ' || string_agg(concat(coalesce(predict('$m', r)::text, 'null'), ' ', "
              . "predict_proba('$m', r)::text), ',' ORDER BY id) FROM scored_rows r");
    }
    return join("\n", @parts);
}

1;
