# pg_dump / restore: into the same cluster, and into a new cluster that lacks the roles owning
# and using the models (pg_restore --no-owner, and psql -f of a plain dump). Every model is
# restored and scores identically; owners and grants are kept by name and resolved there.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $source = new_node('source');
$source->start;
$source->safe_psql('postgres', q{
CREATE ROLE model_owner;
CREATE ROLE model_reader;
CREATE DATABASE src;
});
setup_models($source, 'src');
# The models belong to model_owner; churn is granted to model_reader, city to public.
$source->safe_psql('src', q{
SELECT set_model_owner(name, 'model_owner') FROM models;
SELECT grant_model_usage('churn', 'model_reader');
SELECT grant_model_usage('city', 'public');
});
# churn gets a second version (the segment model, staged, not deployed): a dump keeps every
# version and which one is deployed.
$source->safe_psql('src',
    model_sql('segment', 'churn') =~ s/'xgboost'\);/'xgboost', options => '{"deploy": false}');/r);
my $versions_sql = q{SELECT string_agg(format('%s %s %s %s', name, version, deployed, owner), ', ' ORDER BY name, version)
                       FROM model_versions};
my $versions = $source->safe_psql('src', $versions_sql);
like($versions, qr/churn 1 t model_owner, churn 2 f model_owner,/, 'churn has a staged second version');
my $scores = score_all($source, 'src');
my $privileges_sql = 'SELECT string_agg(format(\'%s %s %s\', name, owner, usable_by), \', \' ORDER BY name) FROM models';
my $privileges = $source->safe_psql('src', $privileges_sql);
is($privileges, 'churn model_owner {model_reader}, city model_owner {public}, forest model_owner {}, segment model_owner {}',
   'owners and grants on the source');

# 0.9.0: a version's cascade (create_cascade) is kept in its catalog row: dumped and restored.
$source->safe_psql('src', q{SELECT create_cascade('churn', 'SELECT s.* FROM scored_rows s, generate_series(1, 5)', 0.05)});
my $cascade_sql = q{SELECT string_agg(format('%s %s %s', name, version, md5(cascade::text)), ', ' ORDER BY name)
                      FROM model_catalog WHERE cascade IS NOT NULL};
my $cascades = $source->safe_psql('src', $cascade_sql);
like($cascades, qr/^churn 1 \w{32}$/, 'churn has a cascade');
# 0.9.0: a version's profile (profile_model) is kept in its catalog row: dumped and restored, and
# model_drift reads it there.
$source->safe_psql('src', q{SELECT profile_model('churn', 'SELECT * FROM scored_rows')});
my $profile_sql = q{SELECT string_agg(format('%s %s %s %s', name, version, md5(profile::text), profiled_at), ', ' ORDER BY name)
                      FROM model_catalog WHERE profile IS NOT NULL};
my $profiles = $source->safe_psql('src', $profile_sql);
like($profiles, qr/^churn 1 \w{32} \d{4}-/, 'churn has a profile');
my $drift_sql = q{SELECT string_agg(format('%s %s %s', feature, round(value::numeric, 9), anomaly), ', ' ORDER BY feature)
                    FROM model_drift('churn', 'SELECT * FROM scored_rows WHERE id % 2 = 0')};
my $drift = $source->safe_psql('src', $drift_sql);

my $custom = "$tmp/src.dump";
my $plain = "$tmp/src.sql";
$source->command_ok(['pg_dump', '-Fc', '-f', $custom, '-d', $source->connstr('src')], 'pg_dump -Fc');
$source->command_ok(['pg_dump', '-f', $plain, '-d', $source->connstr('src')], 'pg_dump (plain)');

# The same cluster.
$source->safe_psql('postgres', 'CREATE DATABASE same');
$source->command_ok(['pg_restore', '-d', $source->connstr('same'), $custom], 'pg_restore in the same cluster');
is(score_all($source, 'same'), $scores, 'same cluster: every model scores identically');
is($source->safe_psql('same', $privileges_sql), $privileges, 'same cluster: owners and grants');

# A new cluster without model_owner and model_reader.
my $target = new_node('target');
$target->start;
$target->safe_psql('postgres', 'CREATE DATABASE restored; CREATE DATABASE restored_plain');
$target->command_ok(['pg_restore', '--no-owner', '--exit-on-error', '-d', $target->connstr('restored'), $custom],
                    'pg_restore --no-owner into a cluster without the roles');
$target->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $target->connstr('restored_plain'), '-f', $plain],
                    'psql -f of the plain dump into a cluster without the roles');
for my $db ('restored', 'restored_plain') {
    is($target->safe_psql($db, 'SELECT count(*) FROM models'), '4', "$db: every model restored");
    is(score_all($target, $db), $scores, "$db: every model scores identically");
    is($target->safe_psql($db, $privileges_sql), $privileges, "$db: owners and grants kept by name");
    is($target->safe_psql($db, $versions_sql), $versions, "$db: every version, the deployed one marked");
    is($target->safe_psql($db, $cascade_sql), $cascades, "$db: the cascade restored with its version");
    is($target->safe_psql($db, $profile_sql), $profiles, "$db: the profile restored with its version");
    is($target->safe_psql($db, $drift_sql), $drift, "$db: model_drift against the restored profile");
}
# The restored staged version is whole: deployed there, it scores as the segment model.
$target->safe_psql('restored', q{SELECT deploy_model('churn', 2)});
is(score_all($target, 'restored', 'churn') =~ s/^churn: //r, score_all($source, 'src', 'segment') =~ s/^segment: //r,
   'the restored version 2 scores as the model it was made from');

# There, a name that denotes no role grants nothing; once the role exists, it is resolved.
$target->safe_psql('postgres', 'CREATE ROLE someone; CREATE ROLE model_reader');
$target->safe_psql('restored', 'GRANT SELECT ON scored_rows TO PUBLIC');
my ($rc, $out, $err) = $target->psql('restored', q{SET ROLE someone; SELECT predict('churn', ARRAY[1, 2, 3]::real[])});
like($err, qr/permission denied for model "churn"/, 'another role may not use a model it was not granted');
is($target->safe_psql('restored', q{SET ROLE someone; SELECT predict('city', r) FROM scored_rows r WHERE id = 1}),
   $source->safe_psql('src', q{SELECT predict('city', r) FROM scored_rows r WHERE id = 1}),
   'a model granted to public scores for any role');
is($target->safe_psql('restored', q{SET ROLE model_reader; SELECT predict('churn', ARRAY[1, 2, 3]::real[])}), '1',
   'a grant to a role created after the restore takes effect');
($rc, $out, $err) = $target->psql('restored', q{SET ROLE someone; SELECT drop_model('churn')});
like($err, qr/owned by role "model_owner", which does not exist in this cluster/, 'an absent owner: only superusers manage the model');
$target->safe_psql('restored', q{SELECT set_model_owner('churn', 'someone')});
$target->safe_psql('restored', q{SET ROLE someone; SELECT drop_model('churn')});
is($target->safe_psql('restored', 'SELECT count(*) FROM models'), '3', 'a superuser gave it to a role, which dropped it');

# 0.3.0: artifacts given as text and bytea are dumped and restored as given, and score the same.
my $doc = fixture('binary_tiny.json');
$source->safe_psql('postgres', 'CREATE DATABASE typed');
$source->safe_psql('typed', 'CREATE EXTENSION pg_predict;' . rows_sql()
    . "SELECT create_model('as_text', pg_read_file('$doc')); SELECT create_model('as_bytea', pg_read_binary_file('$doc'));");
my $typed_sql = q{SELECT string_agg(format('%s %s %s %s', name, source_type, md5(source_text), md5(source_bytes)), ', ' ORDER BY name)
  FROM models JOIN model_catalog USING (name)};
my $typed = $source->safe_psql('typed', $typed_sql);
like($typed, qr/^as_bytea bytea  \w{32}, as_text text \w{32} $/, 'typed: the sources as given');
my $typed_scores = score_all($source, 'typed', 'as_text', 'as_bytea');
my $typed_dump = "$tmp/typed.dump";
$source->command_ok(['pg_dump', '-Fc', '-f', $typed_dump, '-d', $source->connstr('typed')], 'typed: pg_dump -Fc');
$target->safe_psql('postgres', 'CREATE DATABASE typed');
$target->command_ok(['pg_restore', '--no-owner', '--exit-on-error', '-d', $target->connstr('typed'), $typed_dump],
                    'typed: pg_restore into another cluster');
is($target->safe_psql('typed', $typed_sql), $typed, 'typed: restored byte for byte');
is(score_all($target, 'typed', 'as_text', 'as_bytea'), $typed_scores, 'typed: every model scores identically');

done_testing();
