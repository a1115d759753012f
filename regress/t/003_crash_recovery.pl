# kill -9 of a backend in the middle of create_model (a big model, so that it is slow), of a
# replace, after a create committed, and in the middle of a scoring query: after the crash
# restart the catalog has each model wholly or not at all, and every model scores.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# An XGBoost document of $trees full trees of depth $depth over the three features of
# binary_tiny.json (thresholds from a fixed pseudo-random sequence).
sub big_model {
    my ($path, $trees, $depth) = @_;
    my $nodes = 2**($depth + 1) - 1;
    my $inner = 2**$depth - 1;
    my $seed = 12345;
    my $next = sub { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed; };
    open my $fh, '>', $path or die "$path: $!";
    print $fh '{"learner":{"attributes":{},"feature_types":[],"gradient_booster":{"model":{'
      . qq{"gbtree_model_param":{"num_parallel_tree":"1","num_trees":"$trees","size_leaf_vector":"0"},}
      . '"tree_info":[' . join(',', (0) x $trees) . '],"trees":[';
    for my $t (0 .. $trees - 1) {
        my (@left, @right, @parents, @cond, @index, @default);
        for my $n (0 .. $nodes - 1) {
            my $leaf = $n >= $inner;
            push @left, $leaf ? -1 : 2 * $n + 1;
            push @right, $leaf ? -1 : 2 * $n + 2;
            push @parents, $n == 0 ? 2147483647 : int(($n - 1) / 2);
            push @index, $leaf ? 0 : $next->() % 3;
            push @cond, $leaf ? (($next->() % 2001) - 1000) / 100000 : ($next->() % 100);
            push @default, $next->() % 2;
        }
        my $zeros = '[' . join(',', (0) x $nodes) . ']';
        my $list = sub { return '[' . join(',', @_) . ']'; };
        my %tree = (
            base_weights => $zeros, categories => '[]', categories_nodes => '[]',
            categories_segments => '[]', categories_sizes => '[]', default_left => $list->(@default),
            id => $t, left_children => $list->(@left), loss_changes => $zeros,
            parents => $list->(@parents), right_children => $list->(@right),
            split_conditions => $list->(@cond), split_indices => $list->(@index), split_type => $zeros,
            sum_hessian => '[' . join(',', (1) x $nodes) . ']',
            tree_param => '{"num_deleted":"0","num_feature":"3","num_nodes":"' . $nodes . '","size_leaf_vector":"0"}');
        print $fh ',' if $t;
        print $fh '{' . join(',', map { "\"$_\":$tree{$_}" } sort keys %tree) . '}';
    }
    print $fh ']},"name":"gbtree"},"learner_model_param":{"base_score":"5E-1","boost_from_average":"0",'
      . '"num_class":"0","num_feature":"3","num_target":"1"},"objective":{"name":"binary:logistic",'
      . '"reg_loss_param":{"scale_pos_weight":"1"}},"feature_names":["tenure","monthly_charges","plan_id"]},'
      . '"version":[1,7,4]}';
    close $fh;
}

my $node = new_node('crash');
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;
setup_models($node, 'postgres');
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $big = "$tmp/big.json";
big_model($big, 1000, 8);
my $create_big = "SELECT create_model('big', pg_read_file('$big')::jsonb)";

# Runs the statements (each its own -c, so each commits unless a BEGIN came first) in a psql of
# its own; once a backend has been executing $pattern for $delay_ms, kill -9 it. Returns psql's
# stderr, after the server is back.
# Waits for the server to accept connections after a crash restart. Not poll_query_until: it
# writes its query to psql's stdin, and a psql that failed to connect during the restart may
# have exited already, so the write dies with a broken pipe.
sub wait_for_restart {
    for (1 .. 600) {  # up to a minute
        my $up = eval { $node->safe_psql('postgres', 'SELECT 1') eq '1' };
        return if $up;
        usleep(100_000);
    }
    die 'the server did not come back after the crash';
}

sub kill_backend_during {
    my ($statements, $pattern, $delay_ms) = @_;
    my ($out, $err) = ('', '');
    my $psql = IPC::Run::start(['psql', '-X', '-d', $node->connstr('postgres'), map { ('-c', $_) } @$statements],
                               '>', \$out, '2>', \$err);
    (my $like = $pattern) =~ s/'/''/g;
    my $pid;
    for (1 .. 6000) {  # up to a minute for the statement to start
        $pid = $node->safe_psql('postgres',
            "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE '$like'");
        last if $pid;
        usleep(10_000);
    }
    ok($pid, "found the backend running $pattern");
    usleep($delay_ms * 1000);
    kill 'KILL', $pid;
    $psql->finish;
    wait_for_restart();
    return $err;
}

my $scores = score_all($node, 'postgres');

# kill -9 in the middle of create_model: no trace of the model.
my $err = kill_backend_during([$create_big], q{SELECT create_model('big'%}, 300);
like($err, qr/server closed the connection unexpectedly|terminating connection/, 'the create was killed mid-way');
is($node->safe_psql('postgres', q{SELECT count(*) FROM models WHERE name = 'big'}), '0',
   'a create killed mid-way left no model');
is(score_all($node, 'postgres'), $scores, 'after the crash restart every model scores as before');

# kill -9 right after the create committed: the whole model is there and scores.
$err = kill_backend_during([$create_big, 'SELECT pg_sleep(60)'], 'SELECT pg_sleep(60)%', 0);
is($node->safe_psql('postgres', q{SELECT count(*) FROM models WHERE name = 'big'}), '1',
   'a create that committed before the kill is there');
my $big_scores = $node->safe_psql('postgres',
    q{SELECT string_agg(predict('big', r)::text || ' ' || (predict_proba('big', r))[2]::text, ',' ORDER BY id) FROM scored_rows r});
like($big_scores, qr/^[01] 0\.\d+/, 'and it scores');

# In an open transaction: killed after create_model returned, before COMMIT: nothing.
$err = kill_backend_during(['BEGIN', "SELECT create_model('uncommitted', pg_read_file('" . fixture('binary_tiny.json')
      . "')::jsonb)", 'SELECT pg_sleep(60)'], 'SELECT pg_sleep(60)%', 0);
is($node->safe_psql('postgres', q{SELECT count(*) FROM models WHERE name = 'uncommitted'}), '0',
   'a create killed before its COMMIT left no model');

# A replace killed mid-way: the old version stays, whole.
$err = kill_backend_during(["SELECT create_model('churn', pg_read_file('$big')::jsonb, options => '{\"replace\": true}')"],
                           q{SELECT create_model('churn'%}, 300);
like($err, qr/server closed the connection unexpectedly|terminating connection/, 'the replace was killed mid-way');
is(score_all($node, 'postgres'), $scores, 'a replace killed mid-way left the old version');

# kill -9 in the middle of a scoring query.
$err = kill_backend_during(
    [q{SELECT sum(predict('big', r)) FROM (SELECT (g % 20)::real AS tenure, (g % 100)::real AS monthly_charges,
      (g % 4)::real AS plan_id FROM generate_series(1, 2000000) g) r}],
    q{SELECT sum(predict('big'%}, 1500);
like($err, qr/server closed the connection unexpectedly|terminating connection/, 'the scoring query was killed mid-way');
is(score_all($node, 'postgres'), $scores, 'after a crash while scoring, every model scores as before');
# Within float32 rounding: a 1000-tree sum may differ in its last bit with the row's place in
# the batch (the kernel's full blocks and its tail sum in another order), which is no crash's doing.
my @before = split /,/, $big_scores;
my @after = split /,/, $node->safe_psql('postgres',
    q{SELECT string_agg(predict('big', r)::text || ' ' || (predict_proba('big', r))[2]::text, ',' ORDER BY id) FROM scored_rows r});
my $same = @before == @after;
for my $i (0 .. $#before) {
    my ($label_before, $p_before) = split / /, $before[$i];
    my ($label_after, $p_after) = split / /, $after[$i] // '';
    $same &&= defined $p_after && $label_before eq $label_after && abs($p_before - $p_after) <= 1e-6;
}
ok($same, 'the big model too');
$node->safe_psql('postgres', 'CHECKPOINT');
is($node->safe_psql('postgres', 'SELECT count(*) FROM models'), '5', 'the catalog holds exactly the committed models');

done_testing();
