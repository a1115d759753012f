# Extension upgrades: install each older version, register models (XGBoost and scikit-learn
# fixtures, owned by different roles, one of them dropped), run ALTER EXTENSION pg_predict
# UPDATE, and check that every model scores identically and owners and privileges are right.
# A new version adds one line: its name at the end of @versions.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PgPredictTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my @versions = ('0.1.0', '0.2.0', '0.3.0', '0.4.0', '0.5.0', '0.6.0', '0.7.0', '0.8.0', '0.9.0');
my $latest = $versions[-1];

my $node = new_node('upgrade');
$node->start;
$node->safe_psql('postgres', 'CREATE ROLE model_owner; CREATE ROLE gone; CREATE ROLE someone');
is($node->safe_psql('postgres', q{SELECT default_version FROM pg_available_extensions WHERE name = 'pg_predict'}),
   $latest, "the control file's default version is the last of \@versions");

my $owners_sql = q{SELECT string_agg(format('%s %s', name, coalesce(owner::text, '(none)')), ', ' ORDER BY name) FROM models};

for my $i (0 .. $#versions - 1) {
    my $from = $versions[$i];
    my $db = "from_" . ($from =~ s/\./_/gr);
    # "gone" was dropped by the iteration before.
    $node->safe_psql('postgres', 'CREATE ROLE gone') if $i > 0;
    $node->safe_psql('postgres', "CREATE DATABASE $db");
    $node->safe_psql($db, "CREATE EXTENSION pg_predict VERSION '$from'; " . rows_sql());
    is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'pg_predict'}), $from,
       "installed $from");
    # Models by a superuser, by model_owner, and by a role dropped afterwards.
    $node->safe_psql($db, model_sql('churn') . model_sql('city') . q{
GRANT CREATE ON SCHEMA public TO model_owner, gone;
SELECT pg_read_file('} . fixture('multiclass_tiny.json') . q{') AS segment_doc \gset
SELECT pg_read_file('} . fixture('sklearn_trees/rf_classifier2.json') . q{') AS forest_doc \gset
SET ROLE model_owner;
SELECT create_model('segment', :'segment_doc'::jsonb);
SET ROLE gone;
SELECT create_model('forest', (:'forest_doc'::jsonb) -> 'document', 'sklearn');
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM model_owner, gone;
});
    # Allowed before 0.2.0 (the model keeps a bare OID); from 0.2.0 on the role's models are
    # given away first.
    $node->safe_psql($db, 'REASSIGN OWNED BY gone TO model_owner') if $from ne '0.1.0';
    $node->safe_psql($db, 'DROP ROLE gone');
    my $scores = score_all($node, $db);
    # Text class labels need the 0.4.0 catalog: before the update, a clear error.
    my $labels_sql = q{SELECT create_model('weather', '{"format": "sklearn", "version": 1,
  "inputs": [{"name": "x0", "type": "numeric"}], "task": "classification", "classes": ["no", "yes"],
  "steps": [{"type": "LogisticRegression", "coef": [[1.0]], "intercept": [0.0], "multi_class": "ovr", "loss": "log"}]}'::jsonb)};
    my ($labels_rc, $labels_out, $labels_err) = $node->psql($db, $labels_sql);
    if ($from lt '0.4.0') {
        like($labels_err, qr/predates version 0\.4\.0 and keeps numeric class labels only.*ALTER EXTENSION pg_predict UPDATE/s,
             "$from: a model with text labels needs the update");
    } else {
        # 0.4.0 has text labels: registered before the update, dropped for the checks below.
        is($labels_rc, 0, "$from: a model with text labels before the update");
        $node->safe_psql($db, q{SELECT drop_model('weather')});
    }

    for my $to (@versions[$i + 1 .. $#versions]) {
        $node->safe_psql($db, "ALTER EXTENSION pg_predict UPDATE TO '$to'");
        is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'pg_predict'}), $to,
           "$from updated to $to");
        is(score_all($node, $db), $scores, "$from -> $to: every model scores identically");
        is($node->safe_psql($db, 'SELECT count(*) FROM models'), '4', "$from -> $to: every model is there");
    }

    # 0.7.0: every function, view, table and sequence of the extension has a comment, and
    # batching_available() answers (the node preloads pg_predict).
    is($node->safe_psql($db, q{SELECT count(*) FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
                                 AND d.refclassid = 'pg_extension'::regclass
                               WHERE e.extname = 'pg_predict' AND d.deptype = 'e'
                                 AND obj_description(d.objid, d.classid::regclass::text) IS NULL}),
       '0', "$from -> $latest: every object of the extension has a comment");
    is($node->safe_psql($db, 'SELECT batching_available()'), 't', "$from -> $latest: batching_available()");

    # Owners and privileges as docs/privileges.md ("Upgrading") says of an upgraded catalog.
    my $super = $node->safe_psql($db, 'SELECT current_user');
    my $forest_owner = $from eq '0.1.0' ? '(none)' : 'model_owner';
    is($node->safe_psql($db, $owners_sql), "churn $super, city $super, forest $forest_owner, segment model_owner",
       "$from -> $latest: owners by name; a dropped owner leaves none");
    # 0.1.0 had no per-model privileges: its models stay usable by every role.
    is($node->safe_psql($db, q{SET ROLE someone; SELECT count(*) FROM models WHERE usable}),
       $from eq '0.1.0' ? '4' : '0', "$from -> $latest: models from before keep who may use them");
    my ($rc, $out, $err) = $node->psql($db, q{SET ROLE someone; SELECT drop_model('segment')});
    like($err, qr/must be owner of model "segment"/, "$from -> $latest: only the owner may drop");
    $node->safe_psql($db, q{SET ROLE model_owner; SELECT revoke_model_usage('segment', 'public')});
    ($rc, $out, $err) = $node->psql($db, q{SET ROLE someone; SELECT predict('segment', ARRAY[1, 2, 3]::real[])});
    like($err, qr/permission denied for model "segment"/, "$from -> $latest: the owner can revoke the use");
    ($rc, $out, $err) = $node->psql($db, 'DROP ROLE model_owner');
    like($err, qr/role "model_owner" cannot be dropped because some objects depend on it/,
         "$from -> $latest: DROP ROLE refused while the role owns models");
    $node->safe_psql($db, model_sql('churn', 'new_model'));
    is($node->safe_psql($db, q{SELECT usable_by FROM models WHERE name = 'new_model'}), '{}',
       "$from -> $latest: a new model is usable by its owner only");

    # 0.3.0: the models from before keep their jsonb source; text and bytea artifacts come in.
    is($node->safe_psql($db, q{SELECT string_agg(DISTINCT source_type, ',') FROM models}), 'jsonb',
       "$from -> $latest: the sources from before are jsonb");
    $node->safe_psql($db, "SELECT create_model('as_text', pg_read_file('" . fixture('binary_tiny.json') . "'));"
                        . "SELECT create_model('as_bytea', pg_read_binary_file('" . fixture('binary_tiny.json') . "'));");
    is($node->safe_psql($db, q{SELECT string_agg(format('%s %s %s', name, format, source_type), ', ' ORDER BY name)
                               FROM models WHERE name LIKE 'as\_%'}),
       'as_bytea xgboost bytea, as_text xgboost text', "$from -> $latest: text and bytea artifacts");
    for my $m ('as_text', 'as_bytea') {
        is(score_all($node, $db, $m) =~ s/^\w+: //r, score_all($node, $db, 'churn') =~ s/^\w+: //r,
           "$from -> $latest: $m scores as the jsonb churn");
    }

    # 0.4.0: the models from before show their numeric classes as text, and predict_label() gives
    # predict()'s label as text on every row, batched and per row.
    is($node->safe_psql($db, q{SELECT string_agg(format('%s %s %s', name, classes, pg_typeof(classes)), ', ' ORDER BY name)
                               FROM models WHERE name IN ('churn', 'city', 'forest', 'segment')}),
       'churn {0,1} text[], city {0,1} text[], forest {0,1} text[], segment {0,1,2} text[]',
       "$from -> $latest: the classes of the models from before, as text");
    is($node->safe_psql($db, q{SELECT string_agg(format('%s %s', name, class_labels), ', ' ORDER BY name)
                               FROM model_catalog WHERE name IN ('churn', 'segment')}),
       'churn {0,1}, segment {0,1,2}', "$from -> $latest: the upgrade filled the catalog's class_labels");
    for my $batching ('on', 'off') {
        my $agree = join(' ', map {
            $node->safe_psql($db, "SET pg_predict.enable_batching = $batching; "
                . "SELECT count(predict_label('$_', r)) || '/' || count(*) FILTER (WHERE predict_label('$_', r) "
                . "IS NOT DISTINCT FROM predict('$_', r)::text) FROM scored_rows r")
        } qw(churn city forest segment));
        is($agree, '200/200 ' x 3 . '200/200', "$from -> $latest: predict_label = predict's text (batching $batching)");
    }
    $node->safe_psql($db, $labels_sql);
    is($node->safe_psql($db, q{SELECT string_agg(predict_label('weather', r), ',' ORDER BY id) FROM scored_rows r WHERE id BETWEEN 5 AND 8}),
       'no,no,yes,yes', "$from -> $latest: text labels after the update (x0 = -1/3, 0, 1/3, 2/3)");
    # 0.4.0: decision_function of a model registered before (the city logistic regression: its
    # margin, the log-odds of its probabilities); transform() of a predictor and
    # decision_function of a forest are errors that say why; a transformer can be registered.
    is($node->safe_psql($db, q{SELECT count(*) FROM scored_rows r
                               WHERE NOT abs((decision_function('city', r))[1]
                                             - ln((predict_proba('city', r))[2] / (predict_proba('city', r))[1])) < 1e-5}),
       '0', "$from -> $latest: decision_function of a model registered before");
    ($rc, $out, $err) = $node->psql($db, q{SELECT transform('city', r) FROM scored_rows r});
    like($err, qr/model "city" is a classification model; transform\(\) needs a pipeline that ends in a transformer/,
         "$from -> $latest: transform() of a model registered before names its kind");
    ($rc, $out, $err) = $node->psql($db, q{SELECT decision_function('forest', r) FROM scored_rows r});
    like($err, qr/decision_function is not available for scikit-learn's RandomForestClassifier/,
         "$from -> $latest: decision_function of a forest registered before is refused");
    $node->safe_psql($db, q{SELECT create_model('prep', '{"format": "sklearn", "version": 1, "task": "transformer",
        "inputs": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "numeric"}],
        "steps": [{"type": "StandardScaler", "mean": [1.0, 2.0], "scale": [2.0, 4.0]}]}'::jsonb)});
    is($node->safe_psql($db, q{SELECT format('%s %s %s', task, outputs, transform('prep', ARRAY[3, 6]::float8[]))
                               FROM models WHERE name = 'prep'}),
       'transformer 2 {1,1}', "$from -> $latest: a transformer registered after the upgrade");
    # A nearest-neighbours classifier (its training rows in the program) with text labels.
    $node->safe_psql($db, q{SELECT create_model('near', '{"format": "sklearn", "version": 1, "task": "classification",
        "inputs": [{"name": "a", "type": "numeric"}], "classes": ["lo", "hi"],
        "steps": [{"type": "KNeighborsClassifier", "n_neighbors": 3, "p": 2, "weights": "uniform",
                   "fit_X": [[0.0], [1.0], [9.0], [10.0]], "y": [0, 0, 1, 1]}]}'::jsonb)});
    is($node->safe_psql($db, q{SELECT format('%s %s %s', predict_label('near', ARRAY[2]::float8[]),
                                             predict_label('near', ARRAY[8]::float8[]),
                                             (SELECT array_agg(round(v::numeric, 4))
                                              FROM unnest(predict_proba('near', ARRAY[0.5]::float8[])) v))}),
       'lo hi {0.6667,0.3333}', "$from -> $latest: a KNeighborsClassifier registered after the upgrade");
    # The featurizer ops power and quantile: yeo-johnson with lambda 1 (the identity), then the
    # uniform quantile of quantiles [0, 10]: 5 → 0.5, 12 → 1.
    $node->safe_psql($db, q{SELECT create_model('fz', '{"format": "sklearn", "version": 1, "task": "transformer",
        "inputs": [{"name": "a", "type": "numeric"}],
        "steps": [{"type": "PowerTransformer", "method": "yeo-johnson", "lambdas": [1.0]},
                  {"type": "QuantileTransformer", "output_distribution": "uniform",
                   "quantiles": [[0, 10]], "references": [0, 1]}]}'::jsonb)});
    is($node->safe_psql($db, q{SELECT format('%s %s', transform('fz', ARRAY[5]::float8[]),
                                             transform('fz', ARRAY[12]::float8[]))}),
       '{0.5} {1}', "$from -> $latest: PowerTransformer and QuantileTransformer registered after the upgrade");
    # 0.5.0: predict_outputs() of the models from before is predict() in a one-element array
    # (batched and per row), their outputs in the models view unchanged; a multi-output
    # regressor registered after the update gives every output, and predict() refuses it.
    for my $batching ('on', 'off') {
        my $agree = join(' ', map {
            $node->safe_psql($db, "SET pg_predict.enable_batching = $batching; "
                . "SELECT count(*) FILTER (WHERE predict_outputs('$_', r) IS NOT DISTINCT FROM ARRAY[predict('$_', r)]) "
                . "|| '/' || count(*) FROM scored_rows r")
        } qw(churn city forest segment));
        is($agree, '200/200 ' x 3 . '200/200', "$from -> $latest: predict_outputs of models from before (batching $batching)");
    }
    is($node->safe_psql($db, q{SELECT string_agg(format('%s %s', name, outputs), ', ' ORDER BY name)
                               FROM models WHERE name IN ('churn', 'segment')}),
       'churn 2, segment 3', "$from -> $latest: models.outputs of the models from before");
    # Two outputs: y0 = 2a + 1, y1 = -a + 3 (x = 2: 5 and 1).
    $node->safe_psql($db, q{SELECT create_model('two', '{"format": "sklearn", "version": 1, "task": "regression",
        "outputs": 2, "inputs": [{"name": "a", "type": "numeric"}],
        "steps": [{"type": "LinearRegression", "coef": [[2.0], [-1.0]], "intercept": [1.0, 3.0], "n_outputs": 2}]}'::jsonb)});
    is($node->safe_psql($db, q{SELECT format('%s %s', predict_outputs('two', ARRAY[2]::float8[]), outputs)
                               FROM models WHERE name = 'two'}),
       '{5,1} 2', "$from -> $latest: a multi-output regressor registered after the upgrade");
    ($rc, $out, $err) = $node->psql($db, q{SELECT predict('two', ARRAY[2]::float8[])});
    like($err, qr/model "two" predicts 2 outputs per row; predict\(\) returns one value/,
         "$from -> $latest: predict() of a multi-output regressor is refused");
    # Op model (0.5.0): a VotingRegressor of 2a + 1 and 10, weights 1 and 3: at a = 3, (7 + 30) / 4.
    $node->safe_psql($db, q{SELECT create_model('vote', '{"format": "sklearn", "version": 1, "task": "regression",
        "inputs": [{"name": "a", "type": "numeric"}],
        "steps": [{"type": "VotingRegressor", "weights": [1, 3], "estimators": [
            {"task": "regression", "steps": [{"type": "LinearRegression", "coef": [2.0], "intercept": 1.0}]},
            {"task": "regression", "steps": [{"type": "LinearRegression", "coef": [0.0], "intercept": 10.0}]}]}]}'::jsonb)});
    is($node->safe_psql($db, q{SELECT predict('vote', ARRAY[3]::float8[])}),
       '9.25', "$from -> $latest: a VotingRegressor (op model) registered after the upgrade");
    # 0.6.0: each model from before is its version 1, deployed, added by its owner (before 0.6.0); a new
    # create_model adds version 2 (keeping the owner) and a rollback scores version 1 again.
    is($node->safe_psql($db, q{SELECT string_agg(format('%s %s %s %s', name, version, deployed, created_by IS NOT DISTINCT FROM owner),
                                                 ', ' ORDER BY name)
                               FROM model_versions WHERE name IN ('churn', 'city', 'forest', 'segment')}),
       # From 0.6.0 on a version keeps who added it: forest's was the dropped role "gone".
       'churn 1 t t, city 1 t t, forest 1 t ' . ($from lt '0.6.0' ? 't' : 'f') . ', segment 1 t t',
       "$from -> $latest: the models from before are version 1");
    $node->safe_psql($db, model_sql('churn', 'segment') =~ s/'xgboost'\);/'xgboost', options => '{"replace": true}');/r);
    is($node->safe_psql($db, q{SELECT format('%s %s %s', version, versions, owner) FROM models WHERE name = 'segment'}),
       '2 2 model_owner', "$from -> $latest: create_model of a model from before adds version 2");
    isnt(score_all($node, $db, 'segment'), (grep { /^segment: / } split /\n/, $scores)[0],
         "$from -> $latest: version 2 scores differently");
    is($node->safe_psql($db, q{SELECT rollback_model('segment')}), '1', "$from -> $latest: rollback_model");
    is(score_all($node, $db, 'segment'), (grep { /^segment: / } split /\n/, $scores)[0],
       "$from -> $latest: after the rollback, version 1 scores as before the upgrade");
    # Evaluation (0.6.0): evaluate_model() of a model registered before the update, its own
    # predict() as the target (every row right), and its error for a target it does not have.
    is($node->safe_psql($db, q{SELECT format('%s %s %s', d->>'rows', (d->>'accuracy')::float8, d->>'classes')
        FROM evaluate_model('churn', 'SELECT *, predict(''churn'', r) AS truth FROM scored_rows r', 'truth') AS d}),
       '200 1 ["0", "1"]', "$from -> $latest: evaluate_model() of a model from before the update");
    ($rc, $out, $err) = $node->psql($db, q{SELECT evaluate_model('churn', 'SELECT * FROM scored_rows', 'truth')});
    like($err, qr/target column "truth" is not a column of the query/,
         "$from -> $latest: evaluate_model() names a missing target column");
    # 0.6.0: the usage statistics of a model registered before (200 rows: batches of 64 and 136).
    $node->safe_psql($db, q{SELECT model_stats_reset('churn')});
    is($node->safe_psql($db, q{SELECT count(predict('churn', r)) FROM scored_rows r;
                               SELECT format('%s calls, %s rows, %s batches, dropped %s, %s backend', calls, rows,
                                             batches, dropped, backends) FROM model_stats WHERE name = 'churn'}),
       "200\n2 calls, 200 rows, 2 batches, dropped f, 1 backend", "$from -> $latest: model_stats counts a model from before");
    # 0.6.0 (explanations): contributions of the models from before sum to their margins (the
    # XGBoost churn: the log-odds of its probability; the city logistic regression likewise); the
    # forest exported before covers were kept is refused with what to do.
    for my $m ('churn', 'city') {
        is($node->safe_psql($db, "SELECT count(*) FROM scored_rows r WHERE NOT abs((SELECT sum(v) FROM "
                               . "unnest(predict_contributions('$m', r)) v) - ln((predict_proba('$m', r))[2] "
                               . "/ (predict_proba('$m', r))[1])) < 1e-4"),
           '0', "$from -> $latest: contributions of $m, registered before, sum to its margin");
    }
    ($rc, $out, $err) = $node->psql($db, q{SELECT predict_contributions('forest', r) FROM scored_rows r});
    like($err, qr/contributions \(predict_contributions, explain_prediction\) are not available for scikit-learn's RandomForestClassifier: .*export it again/,
         "$from -> $latest: contributions of a forest exported without covers are refused");
    like($node->safe_psql($db, q{SELECT explain_prediction('city', r, 2) FROM scored_rows r WHERE id = 1}),
         qr/"top_feature_attributions": \[\{.*\}, \{.*\}\]/, "$from -> $latest: explain_prediction after the upgrade");
    # Training (0.6.0): train() over a model from before adds version 2 (its owner kept),
    # deployed, with its test-split metrics, and it scores the table it was trained on. Its
    # labels keep the model's type (numbers 0 and 1): a boolean target is refused (issue 46).
    my $refused = '';
    $node->psql($db, q{SELECT train('churn', 'SELECT tenure, monthly_charges, plan_id, city,
                                                 predict(''churn'', s) = 1 AS churned FROM scored_rows s',
                                 'churned', hyperparams => '{"n_estimators": 5}')}, stderr => \$refused);
    like($refused, qr/train\(\) gives model "churn" boolean labels, but its version 1 has numeric labels \{0, 1\}/,
         "$from -> $latest: train() keeps a model from before's numeric labels");
    is($node->safe_psql($db, q{SELECT format('%s %s %s', r->>'version', r->>'deployed', r->>'rows')
        FROM train('churn', 'SELECT tenure, monthly_charges, plan_id, city, (predict(''churn'', s) = 1)::int AS churned
                             FROM scored_rows s', 'churned',
                   hyperparams => '{"n_estimators": 5, "objective": "binary:logistic"}') AS r}),
       '2 true 200', "$from -> $latest: train() adds a version to a model from before");
    is($node->safe_psql($db, q{SELECT format('%s %s %s %s', v.version, v.owner = o.owner, v.metrics ? 'accuracy', v.format)
                               FROM model_versions v, model_versions o
                               WHERE v.name = 'churn' AND v.deployed AND o.name = 'churn' AND o.version = 1}),
       '2 t t sklearn', "$from -> $latest: the trained version, its owner and metrics");
    is($node->safe_psql($db, q{SELECT count(predict_label('churn', s)) FROM scored_rows s}),
       '200', "$from -> $latest: the trained version scores its training table");
    # 0.9.0: profiles. train() profiled the version it added; a version from before has none
    # until profile_model takes one; model_drift compares rows with the deployed version's.
    is($node->safe_psql($db, q{SELECT string_agg(format('%s %s', version, profiled_at IS NOT NULL), ' ' ORDER BY version)
                               FROM model_versions WHERE name = 'churn'}),
       '1 f 2 t', "$from -> $latest: train() profiles its version, one from before has no profile");
    is($node->safe_psql($db, q{SELECT (profile_model('churn', 'SELECT * FROM scored_rows', 1))->>'rows'}),
       '200', "$from -> $latest: profile_model profiles a version from before");
    is($node->safe_psql($db, q{SELECT format('%s %s', count(*) = (SELECT cardinality(columns_read) + 1 FROM models
                                                            WHERE name = 'churn'), count(*) FILTER (WHERE anomaly))
                               FROM model_drift('churn', 'SELECT * FROM scored_rows')}),
       't 0', "$from -> $latest: model_drift of the training rows against the profile train() took");
    # 0.8.0: the deploy history. A version from before keeps the deployment it had (its
    # deployed_at); train()'s version 2 is recorded on top, and rollback_model() undoes it.
    my $history_sql = q{SELECT string_agg(version::text || CASE WHEN current THEN '*' ELSE '' END, ' ' ORDER BY deployed_at)
                          FROM model_deployments WHERE name = 'churn'};
    is($node->safe_psql($db, $history_sql), '1 2*', "$from -> $latest: the deploy history of a model from before");
    # segment's version 2 above was rolled back: its deployment left the history.
    is($node->safe_psql($db, q{SELECT format('%s %s', version, deployed_at IS NOT NULL) FROM model_deployments
                               WHERE name = 'segment'}),
       '1 t', "$from -> $latest: a version from before has its deployment, the rolled-back one none");
    is($node->safe_psql($db, q{SELECT rollback_model('churn')}), '1', "$from -> $latest: rollback_model undoes train's deploy");
    is($node->safe_psql($db, $history_sql), '1*', "$from -> $latest: the undone deployment leaves the history");
    # create_model, deploy_model and drop_model return what they did.
    is($node->safe_psql($db, q{SELECT deploy_model('churn', 2)}), '2', "$from -> $latest: deploy_model returns the version");
    is($node->safe_psql($db, model_sql('churn') =~ s/SELECT create_model/SELECT 'added', create_model/r),
       'added|3', "$from -> $latest: create_model returns the version it added");
    is($node->safe_psql($db, q{SELECT drop_model('churn', 1)}), '2', "$from -> $latest: drop_model(name, version) returns the versions left");
    is($node->safe_psql($db, q{SELECT drop_model('segment')}), '2', "$from -> $latest: drop_model(name) returns the versions removed");
}

# A fresh install of the latest version has the same catalog as an upgraded one.
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION pg_predict');
my $columns_sql = q{SELECT string_agg(format('%s %s %s', attname, format_type(atttypid, atttypmod), attnotnull), ', ' ORDER BY attname)
  FROM pg_attribute WHERE attrelid = 'model_catalog'::regclass AND attnum > 0 AND NOT attisdropped};
my $view_sql = q{SELECT string_agg(format('%s %s', attname, format_type(atttypid, atttypmod)), ', ' ORDER BY attnum)
  FROM pg_attribute WHERE attrelid = 'models'::regclass AND attnum > 0};
my $first = 'from_' . ($versions[0] =~ s/\./_/gr);
is($node->safe_psql($first, $columns_sql), $node->safe_psql('fresh', $columns_sql),
   'upgraded and fresh catalogs have the same columns');
is($node->safe_psql($first, $view_sql), $node->safe_psql('fresh', $view_sql),
   'upgraded and fresh models views have the same columns');
my $evaluate_sql = q{SELECT format('%s(%s) %s %s', proname, pg_get_function_arguments(oid), pg_get_function_result(oid), provolatile)
  FROM pg_proc WHERE proname = 'evaluate_model'};
is($node->safe_psql($first, $evaluate_sql), $node->safe_psql('fresh', $evaluate_sql),
   'upgraded and fresh databases have the same evaluate_model()');
my $stats_view_sql = $view_sql =~ s/'models'::regclass/'model_stats'::regclass/r;
is($node->safe_psql($first, $stats_view_sql), $node->safe_psql('fresh', $stats_view_sql),
   'upgraded and fresh model_stats views have the same columns');
my $train_sql = q{SELECT format('%s(%s) %s %s', proname, pg_get_function_arguments(oid), pg_get_function_result(oid), provolatile)
  FROM pg_proc WHERE proname = 'train'};
is($node->safe_psql($first, $train_sql), $node->safe_psql('fresh', $train_sql),
   'upgraded and fresh databases have the same train()');
my $functions_sql = q{SELECT string_agg(format('%s(%s) %s', proname, pg_get_function_arguments(oid), pg_get_function_result(oid)), ', '
  ORDER BY proname, pg_get_function_arguments(oid)) FROM pg_proc WHERE proname IN ('create_model', 'drop_model', 'deploy_model', 'rollback_model')};
is($node->safe_psql($first, $functions_sql), $node->safe_psql('fresh', $functions_sql),
   'upgraded and fresh databases have the same create_model, drop_model, deploy_model and rollback_model');
my $deployments_view_sql = $view_sql =~ s/'models'::regclass/'model_deployments'::regclass/r;
is($node->safe_psql($first, $deployments_view_sql), $node->safe_psql('fresh', $deployments_view_sql),
   'upgraded and fresh model_deployments views have the same columns');

# 0.7.0 -> 0.8.0 drops and creates the functions whose result changed: an object that depends
# on one (a SQL-standard function body) stops the update, whole, with PostgreSQL's own error
# (docs/privileges.md, Upgrading); a quoted body records no dependency and keeps working.
$node->safe_psql('postgres', 'CREATE DATABASE dependent');
$node->safe_psql('dependent', "CREATE EXTENSION pg_predict VERSION '0.7.0'; " . model_sql('churn') . q{
CREATE FUNCTION retire_churn() RETURNS void LANGUAGE sql BEGIN ATOMIC SELECT drop_model('churn'); END;
CREATE FUNCTION retire_quoted() RETURNS void LANGUAGE sql AS $$ SELECT drop_model('churn') $$;});
my ($dep_rc, $dep_out, $dep_err) = $node->psql('dependent', 'ALTER EXTENSION pg_predict UPDATE');
isnt($dep_rc, 0, 'a function whose body depends on drop_model stops the update to 0.8.0');
like($dep_err, qr/cannot drop function drop_model\(text\) because other objects depend on it/,
     "the update's error is PostgreSQL's, naming the function");
is($node->safe_psql('dependent', q{SELECT format('%s %s', extversion, (SELECT count(*) FROM models))
                                   FROM pg_extension WHERE extname = 'pg_predict'}),
   '0.7.0 1', 'the failed update changed nothing');
$node->safe_psql('dependent', 'DROP FUNCTION retire_churn(); ALTER EXTENSION pg_predict UPDATE');
is($node->safe_psql('dependent', q{SELECT extversion FROM pg_extension WHERE extname = 'pg_predict'}), $latest,
   'without it the update runs');
$node->safe_psql('dependent', 'SELECT retire_quoted()');
is($node->safe_psql('dependent', 'SELECT count(*) FROM models'), '0', 'a quoted body calls the new drop_model');

# The role for TorchScript imports is cluster-wide: created once, left by DROP EXTENSION (a
# CREATE EXTENSION after that finds it).
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_roles WHERE rolname = 'pgpredict_torchscript'}), '1',
   'one pgpredict_torchscript role for every database');
$node->safe_psql('fresh', 'DROP EXTENSION pg_predict');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_roles WHERE rolname = 'pgpredict_torchscript'}), '1',
   'DROP EXTENSION leaves the role');
$node->safe_psql('fresh', 'CREATE EXTENSION pg_predict');
is($node->safe_psql('fresh', q{SELECT extversion FROM pg_extension WHERE extname = 'pg_predict'}), $latest,
   'CREATE EXTENSION again, the role already there');

done_testing();
