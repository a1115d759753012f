"""The registry of the scikit-learn classes pg_predict scores: for each, what kind of step it is,
what it becomes in the pipeline spec (the tensor program's building blocks, see
include/pg_predict/spec/steps.hpp), and its limits. The table in docs/operators.md is generated
from it (`python3 -m pg_predict operators --readme docs/operators.md`), and the conformance suite
checks that it names exactly the classes the exporter knows and that the page is current.
"""

import collections

Operator = collections.namedtuple("Operator", "name kind becomes notes")

KINDS = ("composition", "featurizer", "selector", "classifier", "regressor", "clustering",
         "outlier detection", "model selection")

OPERATORS = [
    # composition
    Operator("Pipeline", "composition", "its steps in order", ""),
    Operator("ColumnTransformer", "composition", "`concat` of the parts' steps over their columns",
             "columns by name, index, mask or slice; `remainder` drop / passthrough / an "
             "estimator; `transformer_weights` (a scale of the part's output)"),
    Operator("FeatureUnion", "composition", "`concat` of the parts, each over the whole vector",
             "`transformer_weights`"),
    # featurizers
    Operator("StandardScaler", "featurizer", "`affine`", "`with_mean` / `with_std` off allowed"),
    Operator("MinMaxScaler", "featurizer", "`affine` (+ `clip`)", "`clip=True` supported"),
    Operator("MaxAbsScaler", "featurizer", "`affine`", ""),
    Operator("RobustScaler", "featurizer", "`affine`", ""),
    Operator("SimpleImputer", "featurizer", "`impute`",
             "`missing_values` NaN (SQL NULL) or a number (numeric columns; a NULL is missing "
             "too, where scikit-learn raises); text columns too (constant / most_frequent); "
             "no `add_indicator`"),
    Operator("OneHotEncoder", "featurizer", "`one_hot`",
             "numeric or **text** columns (dictionary-encoded while the batch is filled); "
             "`handle_unknown` error / ignore / infrequent_if_exist; `drop`; infrequent "
             "categories (`min_frequency`, `max_categories`: per feature a `one_hot` of the "
             "frequent ones and a `project` summing the infrequent ones into its last column)"),
    Operator("OrdinalEncoder", "featurizer", "`ordinal`",
             "numeric or text columns; `handle_unknown` error / use_encoded_value"),
    Operator("FunctionTransformer", "featurizer", "`elementwise`",
             "only a known numpy ufunc (log1p, sqrt, exp, ...) or the identity"),
    Operator("Binarizer", "featurizer", "`threshold`", ""),
    Operator("Normalizer", "featurizer", "`normalize`", "l1, l2, max"),
    Operator("MissingIndicator", "featurizer", "`is_missing`",
             "`features` missing-only or all; `missing_values` NaN or a number, as SimpleImputer"),
    Operator("PCA", "featurizer", "`project`", "`whiten` supported"),
    Operator("TruncatedSVD", "featurizer", "`project`", ""),
    Operator("KBinsDiscretizer", "featurizer", "`bucketize` (+ `one_hot`)",
             "encode ordinal, onehot, onehot-dense"),
    Operator("PolynomialFeatures", "featurizer", "`monomials`",
             "`interaction_only`, `include_bias`"),
    Operator("PowerTransformer", "featurizer", "`power` (+ `affine`)",
             "yeo-johnson, box-cox (a value <= 0 scores NULL where scikit-learn raises); "
             "`standardize` on or off"),
    Operator("QuantileTransformer", "featurizer", "`quantile` (searchsorted + interpolation)",
             "output_distribution uniform or normal; NaN stays NaN"),
    Operator("KernelPCA", "featurizer", "`kernel` against `X_fit_` + `project` (the centering folded in)",
             "kernels linear, rbf, poly, sigmoid, cosine (`normalize` + linear), precomputed (the "
             "input row is the kernel against the training rows); the training rows are in the program"),
    Operator("LabelEncoder", "featurizer", "`ordinal` (one column)",
             "on its own, fitted on y: `transform` of one numeric or text column; an unseen label "
             "is an error, as in scikit-learn"),
    Operator("SplineTransformer", "featurizer",
             "per feature: `concat` [x − t per knot interval, `bucketize` + `one_hot` of the "
             "interval] + `monomials` + `project` (the B-splines' polynomials)",
             "any degree, uniform or quantile or given knots, `include_bias`; extrapolation "
             "constant, linear, continue, periodic, and error (beyond the knots the values are "
             "NaN: NULL after a model, where scikit-learn raises); a NULL input gives NaN; a "
             "column constant at fit time is refused"),
    Operator("FastICA", "featurizer", "`project`",
             "every `whiten` of 1.2 (`unit-variance`, `arbitrary-variance`, False)"),
    # selectors
    Operator("VarianceThreshold", "selector", "column selection (`concat`)",
             "unread inputs are not fetched"),
    Operator("SelectKBest", "selector", "column selection (`concat`)",
             "unread inputs are not fetched"),
    Operator("SelectPercentile", "selector", "column selection (`concat`)",
             "unread inputs are not fetched"),
    Operator("SelectFromModel", "selector", "column selection (`concat`)",
             "unread inputs are not fetched"),
    # linear models
    Operator("LogisticRegression", "classifier", "`linear` + sigmoid / softmax / one-vs-rest",
             "binary, multinomial, ovr"),
    Operator("SGDClassifier", "classifier",
             "`linear` (+ sigmoid for log loss, clip + normalization for modified Huber)",
             "predict_proba with `loss='log_loss'` and `'modified_huber'` (the losses scikit-learn "
             "gives it for)"),
    Operator("LinearSVC", "classifier", "`linear` (decision values)", "no predict_proba"),
    Operator("Perceptron", "classifier", "`linear` (decision values)", "no predict_proba"),
    Operator("RidgeClassifier", "classifier", "`linear` (decision values)", "no predict_proba"),
    Operator("LinearRegression", "regressor", "`linear`",
             "a 2-D y: one margin per target (predict_outputs())"),
    Operator("Ridge", "regressor", "`linear`",
             "a 2-D y: one margin per target (predict_outputs())"),
    Operator("Lasso", "regressor", "`linear`",
             "a 2-D y: one margin per target (predict_outputs())"),
    Operator("ElasticNet", "regressor", "`linear`",
             "a 2-D y: one margin per target (predict_outputs())"),
    Operator("SGDRegressor", "regressor", "`linear`", ""),
    Operator("LinearSVR", "regressor", "`linear`", ""),
    # trees
    Operator("DecisionTreeClassifier", "classifier", "tree ensemble (`<=`, float32)",
             "native kernel or GEMM / TreeTraversal / PerfectTreeTraversal; a 2-D y of binary "
             "outputs: P(second label) − 1/2 per output, each output's label (predict_outputs())"),
    Operator("DecisionTreeRegressor", "regressor", "tree ensemble (`<=`, float32)", "a 2-D y: one tree per (tree, target), each target a group (predict_outputs())"),
    Operator("RandomForestClassifier", "classifier", "tree ensemble, averaged",
             "a 2-D y of binary outputs: as DecisionTreeClassifier"),
    Operator("RandomForestRegressor", "regressor", "tree ensemble, averaged", "a 2-D y: one tree per (tree, target), each target a group (predict_outputs())"),
    Operator("ExtraTreesClassifier", "classifier", "tree ensemble, averaged",
             "a 2-D y of binary outputs: as DecisionTreeClassifier"),
    Operator("ExtraTreesRegressor", "regressor", "tree ensemble, averaged", "a 2-D y: one tree per (tree, target), each target a group (predict_outputs())"),
    Operator("GradientBoostingClassifier", "classifier", "tree ensemble + sigmoid / softmax",
             "log-loss and exponential loss; `init` the default prior or 'zero'"),
    Operator("GradientBoostingRegressor", "regressor", "tree ensemble", ""),
    Operator("HistGradientBoostingClassifier", "classifier",
             "tree ensemble + sigmoid / softmax (NaN follows `missing_go_to_left`)",
             "NULL needs no imputer; thresholds compared in float32 (exact for float32 "
             "inputs); `categorical_features`: NULL, negative and unseen categories go where "
             "missing values go"),
    Operator("HistGradientBoostingRegressor", "regressor", "tree ensemble (+ exp for poisson)",
             "losses squared_error, absolute_error, quantile, poisson; as the classifier"),
    Operator("IsolationForest", "outlier detection",
             "tree ensemble of path lengths, two-sided decision [−d, d]",
             "predict = −1 (outlier) / 1 (inlier); models.task says classification; "
             "no predict_proba; `max_features` < 1 supported"),
    # other models
    Operator("SVC", "classifier",
             "`kernel` + `project` (pairwise decisions) + `threshold` + `linear` (votes)",
             "linear, rbf, poly, sigmoid kernels; libsvm's one-vs-one vote; no predict_proba "
             "(also with `probability=True`); `break_ties` only for two classes"),
    Operator("NuSVC", "classifier", "as SVC", "as SVC"),
    Operator("SVR", "regressor", "`kernel` + `linear`", "linear, rbf, poly, sigmoid kernels"),
    Operator("NuSVR", "regressor", "`kernel` + `linear`", "as SVR"),
    Operator("GaussianNB", "classifier", "`affine` + `concat` [x, x²] + `linear` + softmax", ""),
    Operator("BernoulliNB", "classifier", "(`threshold`) + `linear` + softmax", "`binarize`"),
    Operator("MultinomialNB", "classifier", "`linear` + softmax", ""),
    Operator("MLPClassifier", "classifier", "`project` + activation per hidden layer, `linear` + "
             "sigmoid / softmax", "identity, logistic, tanh, relu; not multilabel"),
    Operator("MLPRegressor", "regressor", "`project` + activation per hidden layer, `linear`",
             "single target"),
    Operator("KMeans", "clustering", "`linear` (2·c·x − ‖c‖²), argmax",
             "predict = cluster index; models.task says classification (classes 0..k−1); "
             "no predict_proba"),
    Operator("MiniBatchKMeans", "clustering", "as KMeans", "as KMeans"),
    Operator("MeanShift", "clustering", "as KMeans", "predict = the nearest of `cluster_centers_`; "
             "as KMeans"),
    Operator("Birch", "clustering", "`neighbors` (k = 1 over `subcluster_centers_`, targets the "
             "one-hot of their labels) + `linear` (identity), argmax",
             "predict = the label of the nearest subcluster; `n_clusters` an int, None or a "
             "clusterer; classes = the labels; no predict_proba; a NULL (not imputed) feature "
             "predicts NULL"),
    # model selection: the fitted best estimator, and the *CV linear models
    Operator("GridSearchCV", "model selection", "its `best_estimator_` (a model or a Pipeline)",
             "`refit=False` refused (no best estimator to predict with)"),
    Operator("RandomizedSearchCV", "model selection", "as GridSearchCV", "as GridSearchCV"),
    Operator("HalvingGridSearchCV", "model selection", "as GridSearchCV", "as GridSearchCV"),
    Operator("HalvingRandomSearchCV", "model selection", "as GridSearchCV", "as GridSearchCV"),
    Operator("LogisticRegressionCV", "classifier", "as LogisticRegression", "the fitted `C_`"),
    Operator("RidgeClassifierCV", "classifier", "as RidgeClassifier", "no predict_proba"),
    Operator("RidgeCV", "regressor", "`linear`", "single target; the fitted best model"),
    Operator("LassoCV", "regressor", "`linear`", "single target; the fitted best model"),
    Operator("ElasticNetCV", "regressor", "`linear`", "single target; the fitted best model"),
    Operator("LarsCV", "regressor", "`linear`", "single target; the fitted best model"),
    Operator("LassoLarsCV", "regressor", "`linear`", "single target; the fitted best model"),
    Operator("LassoLarsIC", "regressor", "`linear`", "single target; the fitted best model"),
    Operator("OrthogonalMatchingPursuitCV", "regressor", "`linear`",
             "single target; the fitted best model"),
    Operator("Lars", "regressor", "`linear`", "single target"),
    Operator("LassoLars", "regressor", "`linear`", "single target"),
    Operator("OrthogonalMatchingPursuit", "regressor", "`linear`", "single target"),
    Operator("HuberRegressor", "regressor", "`linear`", "single target"),
    Operator("QuantileRegressor", "regressor", "`linear`", "single target"),
    Operator("BayesianRidge", "regressor", "`linear`",
             "single target; predict without `return_std`"),
    Operator("ARDRegression", "regressor", "`linear`",
             "single target; predict without `return_std`"),
    Operator("TheilSenRegressor", "regressor", "`linear`", "single target"),
    # generalized linear models
    Operator("PoissonRegressor", "regressor", "`linear` + exp", "log link"),
    Operator("GammaRegressor", "regressor", "`linear` + exp", "log link"),
    Operator("TweedieRegressor", "regressor", "`linear` (+ exp)",
             "link log, identity, or auto (identity for `power` <= 0, else log)"),
    Operator("PLSRegression", "regressor", "`affine` ((x − x_mean) / x_std) + `linear`",
             "a 2-D y: one value per target (predict_outputs())"),
    # mixtures
    Operator("GaussianMixture", "clustering",
             "diag / spherical: as GaussianNB; full / tied: `project` + square per component, "
             "`linear` + softmax",
             "predict = component index, predict_proba = the responsibilities; models.task says "
             "classification (classes 0..k−1); every covariance type"),
    Operator("BayesianGaussianMixture", "clustering", "as GaussianMixture",
             "as GaussianMixture; both weight concentration priors"),
    # calibration
    Operator("CalibratedClassifierCV", "classifier",
             "`project` (decision values) + per class `affine` + expit (sigmoid) or hinge sums "
             "(isotonic) + `normalize` + `linear` (the members' mean)",
             "sigmoid and isotonic; `ensemble` True or False; the base estimator must be a "
             "linear classifier"),
    # nearest neighbours
    Operator("KNeighborsClassifier", "classifier",
             "`neighbors` (cdist to the training rows, the k nearest, weighted class counts) + "
             "`linear` (identity)",
             "minkowski with any p >= 1 (2 euclidean, 1 manhattan, inf chebyshev; p < 1 fails in "
             "scikit-learn's predict and is refused); seuclidean (`V`) and mahalanobis (`VI` "
             "or `V`) as a `project` of the rows first; `weights` uniform or distance "
             "(a zero distance: only the exact matches count); equal distances at the k-th place "
             "go to the lower training row; a NULL (not imputed) or infinite feature predicts "
             "NULL; at most 4,194,304 training values (rows × columns)"),
    Operator("KNeighborsRegressor", "regressor", "`neighbors` (the weighted mean of the k "
             "nearest targets) + `linear` (identity)",
             "as KNeighborsClassifier; a 2-D y: the mean of each target (predict_outputs())"),
    # multi-output wrappers
    Operator("MultiOutputRegressor", "regressor",
             "tree members: one tree ensemble, member k's trees in group k; other members: "
             "`concat` of each member's steps + `project` (+ exp), `linear` (identity)",
             "one value per target (predict_outputs()); any supported regressor (tree ensembles "
             "among others: a `model` step each)"),
    Operator("RegressorChain", "regressor",
             "per member a `concat` [the vector, its steps + `project`, or its `model` step (tree "
             "ensembles)] that appends its prediction; `linear` (identity) picks the outputs in "
             "`order_`",
             "one value per target (predict_outputs()); any supported regressor: linear, GLM, KNN, "
             "SVR, MLP, tree ensembles (later trees read the prediction as float32, as "
             "scikit-learn)"),
    Operator("MultiOutputClassifier", "classifier",
             "`concat` of each member's steps + `project` (its decision value d: the second label "
             "where d > 0), `linear` (identity)",
             "each output's label (predict_outputs()); binary members with numeric labels "
             "(multi-label): linear classifiers, KNeighborsClassifier, tree ensembles (a `model` "
             "step, d = P(c1) − P(c0)); models.classes lists two labels per output"),
    Operator("ClassifierChain", "classifier",
             "per member a `concat` [the vector, its d + `threshold` / `clip` + `project` (the label "
             "c0 + (c1 − c0)·[d > 0])] that appends its label; `linear` picks the outputs in `order_`",
             "as MultiOutputClassifier; later members read the earlier predicted labels "
             "(scikit-learn 1.2)"),
    # ensembles and meta-estimators
    Operator("VotingClassifier", "classifier",
             "`concat` of `model` steps (each member's whole pipeline) + `linear` (the weighted "
             "sum)",
             "voting soft (the weighted mean of predict_proba) or hard (the weighted count of "
             "the members' labels; a tie goes to the first class; no predict_proba); `weights`; "
             "'drop'; members may be pipelines"),
    Operator("VotingRegressor", "regressor", "as VotingClassifier", "the weighted mean; `weights`; 'drop'"),
    Operator("BaggingClassifier", "classifier",
             "`concat` of `model` steps over each member's `estimators_features_` + `linear` (the mean)",
             "any supported base estimator; the mean of predict_proba, or of votes when the base "
             "has none; `max_features`, `bootstrap_features`"),
    Operator("BaggingRegressor", "regressor", "as BaggingClassifier", "the mean of the members"),
    Operator("StackingClassifier", "classifier",
             "`concat` of `model` steps (+ the input with passthrough) + the final estimator",
             "`stack_method` predict_proba (binary: P(classes[1]) only), decision_function "
             "(linear members), predict; `passthrough`; the final estimator any supported model "
             "(not a pipeline); decision_function: the final estimator's (linear, gradient "
             "boosting)"),
    Operator("StackingRegressor", "regressor", "as StackingClassifier",
             "`passthrough`; the final estimator any supported regressor (not a pipeline)"),
    Operator("RadiusNeighborsClassifier", "classifier", "`neighbors` with `radius` (every "
             "training row within it, weighted class counts) + `linear` (identity)",
             "as KNeighborsClassifier; a row with no training row within the radius predicts "
             "`outlier_label` (a class: predict_proba 1 for it) or, without one (scikit-learn "
             "raises), NULL"),
    Operator("RadiusNeighborsRegressor", "regressor", "`neighbors` with `radius` (the weighted "
             "mean of the targets within it) + `linear` (identity)",
             "as RadiusNeighborsClassifier; a row with no training row within the radius "
             "predicts NULL (scikit-learn: NaN and a warning)"),
]

BY_NAME = {op.name: op for op in OPERATORS}

BEGIN = "<!-- operators: generated by `python3 -m pg_predict operators --readme docs/operators.md` -->"
END = "<!-- operators: end -->"


def markdown():
    """The operator table, grouped by kind, as docs/operators.md shows it."""
    lines = ["| scikit-learn class | kind | compiled to | notes |", "|---|---|---|---|"]
    for kind in KINDS:
        for op in OPERATORS:
            if op.kind == kind:
                lines.append(f"| `{op.name}` | {op.kind} | {op.becomes} | {op.notes} |")
    return "\n".join(lines)


def readme_block():
    return BEGIN + "\n" + markdown() + "\n" + END


def update_readme(path):
    """Rewrite the block between the markers in `path`; True if it changed."""
    with open(path) as f:
        text = f.read()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{path}: no operator table markers ({BEGIN!r} ... {END!r})")
    new = text[:start] + readme_block() + text[end + len(END):]
    if new != text:
        with open(path, "w") as f:
            f.write(new)
    return new != text


def readme_is_current(path):
    with open(path) as f:
        return readme_block() in f.read()
