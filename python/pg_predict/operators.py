"""The registry of the scikit-learn classes pg_predict scores: for each, what kind of step it is,
its family (the overview's row), what it becomes in the pipeline spec (the tensor program's
building blocks, see include/pg_predict/spec/steps.hpp), its limits and what of it the exporter
refuses. Generated from it, between markers, are the table in docs/operators.md and the
overview and refusal list in python/README.md (`python3 -m pg_predict operators --readme FILE`
rewrites a file's blocks); the conformance suite checks that it names exactly the classes the
exporter knows and that both pages are current.
"""

import collections
import re

# family: the overview's row (FAMILIES). refuses: what export() refuses of this class, in words
# (its exporter's ctx.refuse() calls that a fitted estimator can reach; keep them in step), ""
# when nothing beyond what every class is refused (GENERAL_REFUSALS).
Operator = collections.namedtuple("Operator", "name kind becomes notes family refuses",
                                  defaults=("",))

KINDS = ("composition", "featurizer", "selector", "classifier", "regressor", "clustering",
         "outlier detection", "model selection")

# The families of python/README.md's overview, in its order: every operator is in one.
FAMILIES = ("composition", "featurizers", "text", "feature selection", "linear models",
            "generalized linear models", "trees", "kernel SVMs", "naive Bayes", "neural networks",
            "nearest neighbours", "clustering", "mixtures", "outlier detection", "calibration",
            "ensembles", "multi-output", "model selection")

# Refusals shared by several classes.
_SVM_KERNELS = "a `precomputed` or callable kernel; a model fitted on sparse input"
_NEIGHBORS = ("another metric (`cosine`, `precomputed`, a callable; minkowski `p` < 1); "
              "`metric_params` other than seuclidean's `V` and mahalanobis' `VI` or `V` (feature "
              "weights `w`; seuclidean without `V`; a `VI` not positive definite); callable "
              "`weights`; a model fitted on sparse input or on more than 4,194,304 training "
              "values; a 2-D y (KNeighborsRegressor takes one); `n_neighbors` above the training "
              "rows; a RadiusNeighborsClassifier `outlier_label` that is not one of the classes")
_SVC = (_SVM_KERNELS + "; `break_ties=True` with more than two classes or with "
        "`decision_function_shape='ovo'`")
_TREE_OUTPUTS = "a 2-D y with an output of more than two classes"
_GB_INIT = ("`init` other than the default prior, a constant `Dummy*` estimator or 'zero' "
            "(another estimator's prediction depends on the row; `strategy='stratified'` draws "
            "at random)")
_SEARCH = "`refit=False` (no best estimator to predict with)"
_ENSEMBLE_TEXT = "members that read text columns (encode text before the ensemble)"
_VOTING = (_ENSEMBLE_TEXT + "; `weights` that sum to 0 (for a VotingClassifier: with soft "
           "voting)")
_STACKING = (_ENSEMBLE_TEXT + "; a final estimator that is a pipeline, an unsupported class, "
             "or a k-NN of metric seuclidean / mahalanobis")
_MULTI_REGRESSOR = ("a member other than one supported regressor (linear, GLM, tree ensemble, "
                    "MLP, SVR, k-NN), a pipeline for instance; a k-NN member of metric seuclidean / "
                    "mahalanobis")
_MULTI_CLASSIFIER = ("a member other than a binary linear classifier, k-NN classifier or tree "
                     "ensemble of two numeric labels (a pipeline, SVC, naive Bayes, ...); a "
                     "single output (export its estimator alone); a k-NN member of metric seuclidean / "
                     "mahalanobis")

OPERATORS = [
    # composition
    Operator("Pipeline", "composition", "its steps in order", "", family="composition"),
    Operator("ColumnTransformer", "composition", "`concat` of the parts' steps over their columns",
             "columns by name, index, mask or slice; `remainder` drop / passthrough / an "
             "estimator; `transformer_weights` (a scale of the part's output)",
             family="composition"),
    Operator("FeatureUnion", "composition", "`concat` of the parts, each over the whole vector",
             "`transformer_weights`", family="composition"),
    # featurizers
    Operator("StandardScaler", "featurizer", "`affine`", "`with_mean` / `with_std` off allowed",
             family="featurizers"),
    Operator("MinMaxScaler", "featurizer", "`affine` (+ `clip`)", "`clip=True` supported",
             family="featurizers"),
    Operator("MaxAbsScaler", "featurizer", "`affine`", "", family="featurizers"),
    Operator("RobustScaler", "featurizer", "`affine`", "", family="featurizers"),
    Operator("SimpleImputer", "featurizer", "`impute`",
             "`missing_values` NaN (SQL NULL) or a number (numeric columns; a NULL is missing "
             "too, where scikit-learn raises); text columns too (constant / most_frequent)",
             family="featurizers",
             refuses="`add_indicator=True`; a string `missing_values`; a column entirely missing "
             "at fit time, unless `strategy='constant'` (scikit-learn drops it: refit with "
             "`keep_empty_features=True`)"),
    Operator("OneHotEncoder", "featurizer", "`one_hot`",
             "numeric or **text** columns (dictionary-encoded while the batch is filled); "
             "`handle_unknown` error / ignore / infrequent_if_exist; `drop`; infrequent "
             "categories (`min_frequency`, `max_categories`: per feature a `one_hot` of the "
             "frequent ones and a `project` summing the infrequent ones into its last column)",
             family="featurizers",
             refuses="a missing value among a text column's categories (impute text columns "
             "first)"),
    Operator("OrdinalEncoder", "featurizer", "`ordinal`",
             "numeric or text columns; `handle_unknown` error / use_encoded_value",
             family="featurizers",
             refuses="a missing value among a text column's categories (impute text columns "
             "first)"),
    Operator("CountVectorizer", "featurizer", "a text vectorizer (`text_vectorizers`)",
             "one **text** column; analyzers `word`, `char`, `char_wb`; `ngram_range`, `lowercase`, "
             "`strip_accents` (ascii, unicode), `stop_words` (a list, 'english'), `binary`, the fitted "
             "`vocabulary_`, `dtype` (float64, float32, int64, int32); as scikit-learn 1.2 over Unicode "
             "(Python's `str.lower`, `\\w`, NFKD); "
             "read by a linear model or naive Bayes (its coefficients become a sparse projection of "
             "the row: never a dense row of the vocabulary's width), by trees (the terms their splits "
             "read) or by a TruncatedSVD (LSA), directly or in a ColumnTransformer / FeatureUnion, after a "
             "column selection (SelectKBest, ...) or a Binarizer if any; "
             "NULL text is missing in every column it gives",
             family="text",
             refuses="a callable analyzer, tokenizer, preprocessor or strip_accents; a `token_pattern` "
                     "other than the maximal runs of `\\w` or `\\S` (`\\b\\w\\w+\\b`, `\\w+`, `\\w{n,}`, `\\S+`); "
                     "`input` other than 'content'; a `dtype` narrower than 32 bits; any step between it and the model "
                     "but TfidfTransformer, a column selection, Binarizer and TruncatedSVD"),
    Operator("TfidfVectorizer", "featurizer", "a text vectorizer (`text_vectorizers`)",
             "as CountVectorizer, then `use_idf` (the fitted `idf_`), `smooth_idf`, `sublinear_tf`, "
             "`norm` (l1, l2, None)",
             family="text",
             refuses="as CountVectorizer; `dtype` other than float64 and float32"),
    Operator("HashingVectorizer", "featurizer", "a text vectorizer (`text_vectorizers`)",
             "as CountVectorizer, terms hashed by MurmurHash3 of their UTF-8 into `n_features` "
             "(`alternate_sign`), then `binary`, `norm`",
             family="text",
             refuses="as CountVectorizer; `dtype` other than float64 and float32"),
    Operator("TfidfTransformer", "featurizer", "joins the vectorizer before it",
             "right after a vectorizer: `use_idf`, `sublinear_tf`, `norm` (in the vectorizer's dtype)",
             family="text",
             refuses="anywhere else"),
    Operator("FunctionTransformer", "featurizer", "`elementwise`",
             "only a known numpy ufunc (log1p, sqrt, exp, ...) or the identity",
             family="featurizers",
             refuses="any other `func` (a Python function, a lambda); `kw_args`"),
    Operator("Binarizer", "featurizer", "`threshold`", "", family="featurizers"),
    Operator("Normalizer", "featurizer", "`normalize`", "l1, l2, max", family="featurizers"),
    Operator("MissingIndicator", "featurizer", "`is_missing`",
             "`features` missing-only or all; `missing_values` NaN or a number, as SimpleImputer",
             family="featurizers", refuses="`sparse=True`; a string `missing_values`"),
    Operator("PCA", "featurizer", "`project`", "`whiten` supported", family="featurizers"),
    Operator("TruncatedSVD", "featurizer", "`project`", "", family="featurizers"),
    Operator("KBinsDiscretizer", "featurizer", "`bucketize` (+ `one_hot`)",
             "encode ordinal, onehot, onehot-dense", family="featurizers"),
    Operator("PolynomialFeatures", "featurizer", "`monomials`",
             "`interaction_only`, `include_bias`", family="featurizers"),
    Operator("PowerTransformer", "featurizer", "`power` (+ `affine`)",
             "yeo-johnson, box-cox (a value <= 0 scores NULL where scikit-learn raises); "
             "`standardize` on or off", family="featurizers"),
    Operator("QuantileTransformer", "featurizer", "`quantile` (searchsorted + interpolation)",
             "output_distribution uniform or normal; NaN stays NaN", family="featurizers",
             refuses="`n_quantiles=1`"),
    Operator("KernelPCA", "featurizer", "`kernel` against `X_fit_` + `project` (the centering folded in)",
             "kernels linear, rbf, poly, sigmoid, cosine (`normalize` + linear), precomputed (the "
             "input row is the kernel against the training rows); the training rows are in the program",
             family="featurizers", refuses="a callable `kernel`"),
    Operator("LabelEncoder", "featurizer", "`ordinal` (one column)",
             "on its own, fitted on y: `transform` of one numeric or text column; an unseen label "
             "is an error, as in scikit-learn", family="featurizers"),
    Operator("SplineTransformer", "featurizer",
             "per feature: `concat` [x − t per knot interval, `bucketize` + `one_hot` of the "
             "interval] + `monomials` + `project` (the B-splines' polynomials)",
             "any degree, uniform or quantile or given knots, `include_bias`; extrapolation "
             "constant, linear, continue, periodic, and error (beyond the knots the values are "
             "NaN: NULL after a model, where scikit-learn raises); a NULL input gives NaN",
             family="featurizers",
             refuses="a column constant at fit time (its splines are all zero: drop it first)"),
    Operator("FastICA", "featurizer", "`project`",
             "every `whiten` of 1.2 (`unit-variance`, `arbitrary-variance`, False)",
             family="featurizers"),
    # selectors
    Operator("VarianceThreshold", "selector", "column selection (`concat`)",
             "unread inputs are not fetched", family="feature selection"),
    Operator("SelectKBest", "selector", "column selection (`concat`)",
             "unread inputs are not fetched", family="feature selection"),
    Operator("SelectPercentile", "selector", "column selection (`concat`)",
             "unread inputs are not fetched", family="feature selection"),
    Operator("SelectFromModel", "selector", "column selection (`concat`)",
             "unread inputs are not fetched", family="feature selection"),
    # linear models
    Operator("LogisticRegression", "classifier", "`linear` + sigmoid / softmax / one-vs-rest",
             "binary, multinomial, ovr", family="linear models"),
    Operator("SGDClassifier", "classifier",
             "`linear` (+ sigmoid for log loss, clip + normalization for modified Huber)",
             "predict_proba with `loss='log_loss'` and `'modified_huber'` (the losses scikit-learn "
             "gives it for)", family="linear models"),
    Operator("LinearSVC", "classifier", "`linear` (decision values)", "no predict_proba",
             family="linear models"),
    Operator("Perceptron", "classifier", "`linear` (decision values)", "no predict_proba",
             family="linear models"),
    Operator("RidgeClassifier", "classifier", "`linear` (decision values)", "no predict_proba",
             family="linear models"),
    Operator("LinearRegression", "regressor", "`linear`",
             "a 2-D y: one margin per target (predict_outputs())", family="linear models"),
    Operator("Ridge", "regressor", "`linear`",
             "a 2-D y: one margin per target (predict_outputs())", family="linear models"),
    Operator("Lasso", "regressor", "`linear`",
             "a 2-D y: one margin per target (predict_outputs())", family="linear models"),
    Operator("ElasticNet", "regressor", "`linear`",
             "a 2-D y: one margin per target (predict_outputs())", family="linear models"),
    Operator("SGDRegressor", "regressor", "`linear`", "", family="linear models"),
    Operator("LinearSVR", "regressor", "`linear`", "", family="linear models"),
    # trees
    Operator("DecisionTreeClassifier", "classifier", "tree ensemble (`<=`, float32)",
             "native kernel or GEMM / TreeTraversal / PerfectTreeTraversal; a 2-D y of binary "
             "outputs: P(second label) − 1/2 per output, each output's label (predict_outputs())",
             family="trees", refuses=_TREE_OUTPUTS),
    Operator("DecisionTreeRegressor", "regressor", "tree ensemble (`<=`, float32)", "a 2-D y: one tree per (tree, target), each target a group (predict_outputs())",
             family="trees"),
    Operator("RandomForestClassifier", "classifier", "tree ensemble, averaged",
             "a 2-D y of binary outputs: as DecisionTreeClassifier", family="trees",
             refuses=_TREE_OUTPUTS),
    Operator("RandomForestRegressor", "regressor", "tree ensemble, averaged", "a 2-D y: one tree per (tree, target), each target a group (predict_outputs())",
             family="trees"),
    Operator("ExtraTreesClassifier", "classifier", "tree ensemble, averaged",
             "a 2-D y of binary outputs: as DecisionTreeClassifier", family="trees",
             refuses=_TREE_OUTPUTS),
    Operator("ExtraTreesRegressor", "regressor", "tree ensemble, averaged", "a 2-D y: one tree per (tree, target), each target a group (predict_outputs())",
             family="trees"),
    Operator("GradientBoostingClassifier", "classifier", "tree ensemble + sigmoid / softmax",
             "log-loss and exponential loss; `init` the default prior or 'zero'", family="trees",
             refuses=_GB_INIT),
    Operator("GradientBoostingRegressor", "regressor", "tree ensemble", "", family="trees",
             refuses=_GB_INIT),
    Operator("HistGradientBoostingClassifier", "classifier",
             "tree ensemble + sigmoid / softmax (NaN follows `missing_go_to_left`)",
             "NULL needs no imputer; thresholds compared in float32 (exact for float32 "
             "inputs); `categorical_features`: NULL, negative and unseen categories go where "
             "missing values go", family="trees"),
    Operator("HistGradientBoostingRegressor", "regressor", "tree ensemble (+ exp for poisson)",
             "losses squared_error, absolute_error, quantile, poisson; as the classifier",
             family="trees"),
    Operator("IsolationForest", "outlier detection",
             "tree ensemble of path lengths, two-sided decision [−d, d]",
             "predict = −1 (outlier) / 1 (inlier); models.task says classification; "
             "no predict_proba; `max_features` < 1 supported", family="outlier detection",
             refuses="a non-negative `offset_` (only when set by hand)"),
    # other models
    Operator("SVC", "classifier",
             "`kernel` + `project` (pairwise decisions) + `threshold` + `linear` (votes)",
             "linear, rbf, poly, sigmoid kernels; libsvm's one-vs-one vote; no predict_proba "
             "(also with `probability=True`)", family="kernel SVMs",
             refuses=_SVC),
    Operator("NuSVC", "classifier", "as SVC", "as SVC", family="kernel SVMs",
             refuses=_SVC),
    Operator("SVR", "regressor", "`kernel` + `linear`", "linear, rbf, poly, sigmoid kernels",
             family="kernel SVMs", refuses=_SVM_KERNELS),
    Operator("NuSVR", "regressor", "`kernel` + `linear`", "as SVR", family="kernel SVMs",
             refuses=_SVM_KERNELS),
    Operator("GaussianNB", "classifier", "`affine` + `concat` [x, x²] + `linear` + softmax", "",
             family="naive Bayes"),
    Operator("BernoulliNB", "classifier", "(`threshold`) + `linear` + softmax", "`binarize`",
             family="naive Bayes"),
    Operator("MultinomialNB", "classifier", "`linear` + softmax", "", family="naive Bayes"),
    Operator("ComplementNB", "classifier", "`linear` + softmax", "`norm`; scores without the prior, as "
             "scikit-learn", family="naive Bayes"),
    Operator("MLPClassifier", "classifier", "`project` + activation per hidden layer, `linear` + "
             "sigmoid / softmax", "identity, logistic, tanh, relu", family="neural networks",
             refuses="multilabel classification (a 2-D y)"),
    Operator("MLPRegressor", "regressor", "`project` + activation per hidden layer, `linear`",
             "as MLPClassifier", family="neural networks",
             refuses="several targets (a 2-D y)"),
    Operator("KMeans", "clustering", "`linear` (2·c·x − ‖c‖²), argmax",
             "predict = cluster index; models.task says classification (classes 0..k−1); "
             "no predict_proba", family="clustering"),
    Operator("MiniBatchKMeans", "clustering", "as KMeans", "as KMeans", family="clustering"),
    Operator("MeanShift", "clustering", "as KMeans", "predict = the nearest of `cluster_centers_`; "
             "as KMeans", family="clustering"),
    Operator("Birch", "clustering", "`neighbors` (k = 1 over `subcluster_centers_`, targets the "
             "one-hot of their labels) + `linear` (identity), argmax",
             "predict = the label of the nearest subcluster; `n_clusters` an int, None or a "
             "clusterer; classes = the labels; no predict_proba; a NULL (not imputed) feature "
             "predicts NULL", family="clustering"),
    # model selection: the fitted best estimator, and the *CV linear models
    Operator("GridSearchCV", "model selection", "its `best_estimator_` (a model or a Pipeline)",
             "at the top or as a Pipeline step; nested searches too", family="model selection",
             refuses=_SEARCH),
    Operator("RandomizedSearchCV", "model selection", "as GridSearchCV", "as GridSearchCV",
             family="model selection", refuses=_SEARCH),
    Operator("HalvingGridSearchCV", "model selection", "as GridSearchCV", "as GridSearchCV",
             family="model selection", refuses=_SEARCH),
    Operator("HalvingRandomSearchCV", "model selection", "as GridSearchCV", "as GridSearchCV",
             family="model selection", refuses=_SEARCH),
    Operator("LogisticRegressionCV", "classifier", "as LogisticRegression", "the fitted `C_`",
             family="linear models"),
    Operator("RidgeClassifierCV", "classifier", "as RidgeClassifier", "no predict_proba",
             family="linear models"),
    Operator("RidgeCV", "regressor", "`linear`", "single target; the fitted best model",
             family="linear models"),
    Operator("LassoCV", "regressor", "`linear`", "single target; the fitted best model",
             family="linear models"),
    Operator("ElasticNetCV", "regressor", "`linear`", "single target; the fitted best model",
             family="linear models"),
    Operator("LarsCV", "regressor", "`linear`", "single target; the fitted best model",
             family="linear models"),
    Operator("LassoLarsCV", "regressor", "`linear`", "single target; the fitted best model",
             family="linear models"),
    Operator("LassoLarsIC", "regressor", "`linear`", "single target; the fitted best model",
             family="linear models"),
    Operator("OrthogonalMatchingPursuitCV", "regressor", "`linear`",
             "single target; the fitted best model", family="linear models"),
    Operator("Lars", "regressor", "`linear`", "single target", family="linear models"),
    Operator("LassoLars", "regressor", "`linear`", "single target", family="linear models"),
    Operator("OrthogonalMatchingPursuit", "regressor", "`linear`", "single target",
             family="linear models"),
    Operator("HuberRegressor", "regressor", "`linear`", "single target", family="linear models"),
    Operator("QuantileRegressor", "regressor", "`linear`", "single target", family="linear models"),
    Operator("BayesianRidge", "regressor", "`linear`",
             "single target; predict without `return_std`", family="linear models"),
    Operator("ARDRegression", "regressor", "`linear`",
             "single target; predict without `return_std`", family="linear models"),
    Operator("TheilSenRegressor", "regressor", "`linear`", "single target", family="linear models"),
    # generalized linear models
    Operator("PoissonRegressor", "regressor", "`linear` + exp", "log link",
             family="generalized linear models"),
    Operator("GammaRegressor", "regressor", "`linear` + exp", "log link",
             family="generalized linear models"),
    Operator("TweedieRegressor", "regressor", "`linear` (+ exp)",
             "link log, identity, or auto (identity for `power` <= 0, else log)",
             family="generalized linear models"),
    Operator("PLSRegression", "regressor", "`affine` ((x − x_mean) / x_std) + `linear`",
             "a 2-D y: one value per target (predict_outputs())", family="linear models"),
    # mixtures
    Operator("GaussianMixture", "clustering",
             "diag / spherical: as GaussianNB; full / tied: `project` + square per component, "
             "`linear` + softmax",
             "predict = component index, predict_proba = the responsibilities; models.task says "
             "classification (classes 0..k−1); every covariance type", family="mixtures"),
    Operator("BayesianGaussianMixture", "clustering", "as GaussianMixture",
             "as GaussianMixture; both weight concentration priors", family="mixtures"),
    # calibration
    Operator("CalibratedClassifierCV", "classifier",
             "`project` (decision values) + per class `affine` + expit (sigmoid) or hinge sums "
             "(isotonic) + `normalize` + `linear` (the members' mean)",
             "sigmoid and isotonic; `ensemble` True or False; over a linear classifier",
             family="calibration",
             refuses="a base estimator other than a linear classifier (a tree, an SVC, a "
             "pipeline, ...)"),
    # nearest neighbours
    Operator("KNeighborsClassifier", "classifier",
             "`neighbors` (cdist to the training rows, the k nearest, weighted class counts) + "
             "`linear` (identity)",
             "minkowski with any p >= 1 (2 euclidean, 1 manhattan, inf chebyshev; p < 1 fails in "
             "scikit-learn's predict and is refused); seuclidean (`V`) and mahalanobis (`VI` "
             "or `V`) as a `project` of the rows first; `weights` uniform or distance "
             "(a zero distance: only the exact matches count); equal distances at the k-th place "
             "go to the lower training row; a NULL (not imputed) or infinite feature predicts "
             "NULL; at most 4,194,304 training values (rows × columns)",
             family="nearest neighbours", refuses=_NEIGHBORS),
    Operator("KNeighborsRegressor", "regressor", "`neighbors` (the weighted mean of the k "
             "nearest targets) + `linear` (identity)",
             "as KNeighborsClassifier; a 2-D y: the mean of each target (predict_outputs())",
             family="nearest neighbours", refuses=_NEIGHBORS),
    # multi-output wrappers
    Operator("MultiOutputRegressor", "regressor",
             "tree members: one tree ensemble, member k's trees in group k; other members: "
             "`concat` of each member's steps + `project` (+ exp), `linear` (identity)",
             "one value per target (predict_outputs()); any supported regressor (tree ensembles "
             "among others: a `model` step each)", family="multi-output",
             refuses=_MULTI_REGRESSOR),
    Operator("RegressorChain", "regressor",
             "per member a `concat` [the vector, its steps + `project`, or its `model` step (tree "
             "ensembles)] that appends its prediction; `linear` (identity) picks the outputs in "
             "`order_`",
             "one value per target (predict_outputs()); any supported regressor: linear, GLM, KNN, "
             "SVR, MLP, tree ensembles (later trees read the prediction as float32, as "
             "scikit-learn)", family="multi-output", refuses=_MULTI_REGRESSOR),
    Operator("MultiOutputClassifier", "classifier",
             "`concat` of each member's steps + `project` (its decision value d: the second label "
             "where d > 0), `linear` (identity)",
             "each output's label (predict_outputs()); binary members with numeric labels "
             "(multi-label): linear classifiers, KNeighborsClassifier, tree ensembles (a `model` "
             "step, d = P(c1) − P(c0)); models.classes lists two labels per output",
             family="multi-output", refuses=_MULTI_CLASSIFIER),
    Operator("ClassifierChain", "classifier",
             "per member a `concat` [the vector, its d + `threshold` / `clip` + `project` (the label "
             "c0 + (c1 − c0)·[d > 0])] that appends its label; `linear` picks the outputs in `order_`",
             "as MultiOutputClassifier; later members read the earlier predicted labels "
             "(scikit-learn 1.2)", family="multi-output", refuses=_MULTI_CLASSIFIER),
    # ensembles and meta-estimators
    Operator("VotingClassifier", "classifier",
             "`concat` of `model` steps (each member's whole pipeline) + `linear` (the weighted "
             "sum)",
             "voting soft (the weighted mean of predict_proba) or hard (the weighted count of "
             "the members' labels; a tie goes to the first class; no predict_proba); `weights`; "
             "'drop'; members may be pipelines", family="ensembles", refuses=_VOTING),
    Operator("VotingRegressor", "regressor", "as VotingClassifier",
             "the weighted mean; `weights`; 'drop'", family="ensembles", refuses=_VOTING),
    Operator("BaggingClassifier", "classifier",
             "`concat` of `model` steps over each member's `estimators_features_` + `linear` (the mean)",
             "any supported base estimator; the mean of predict_proba, or of votes when the base "
             "has none; `max_features`, `bootstrap_features`", family="ensembles"),
    Operator("BaggingRegressor", "regressor", "as BaggingClassifier", "the mean of the members",
             family="ensembles"),
    Operator("StackingClassifier", "classifier",
             "`concat` of `model` steps (+ the input with passthrough) + the final estimator",
             "`stack_method` predict_proba (binary: P(classes[1]) only), decision_function "
             "(linear members), predict; `passthrough`; the final estimator any supported model "
             "(not a pipeline); decision_function: the final estimator's (linear, gradient "
             "boosting)", family="ensembles", refuses=_STACKING),
    Operator("StackingRegressor", "regressor", "as StackingClassifier",
             "`passthrough`; the final estimator any supported regressor (not a pipeline)",
             family="ensembles", refuses=_STACKING),
    Operator("RadiusNeighborsClassifier", "classifier", "`neighbors` with `radius` (every "
             "training row within it, weighted class counts) + `linear` (identity)",
             "as KNeighborsClassifier; a row with no training row within the radius predicts "
             "`outlier_label` (a class: predict_proba 1 for it) or, without one (scikit-learn "
             "raises), NULL", family="nearest neighbours", refuses=_NEIGHBORS),
    Operator("RadiusNeighborsRegressor", "regressor", "`neighbors` with `radius` (the weighted "
             "mean of the targets within it) + `linear` (identity)",
             "as RadiusNeighborsClassifier; a row with no training row within the radius "
             "predicts NULL (scikit-learn: NaN and a warning)", family="nearest neighbours",
             refuses=_NEIGHBORS),
]

BY_NAME = {op.name: op for op in OPERATORS}

# Classes export() refuses because the registry has none (its message lists the supported ones):
# python/README.md's examples; the conformance suite fits each and checks that it is refused.
UNSUPPORTED_EXAMPLES = ("AdaBoostClassifier", "AdaBoostRegressor", "GaussianProcessClassifier",
                        "GaussianProcessRegressor", "LinearDiscriminantAnalysis",
                        "QuadraticDiscriminantAnalysis", "OneClassSVM", "LocalOutlierFactor",
                        "KNNImputer", "TransformedTargetRegressor")

# What export() refuses whatever the class.
GENERAL_REFUSALS = (
    "an estimator that is not fitted",
    "class labels of mixed types or of a type other than number, string and boolean; integer "
    "labels a float8 cannot hold exactly (encode them); a label with a NUL character",
    "an input column read both as text and as a number",
    "an encoder whose string categories do not come straight from an input column (imputed at "
    "most: text cannot be weighted or otherwise transformed)",
    "a model anywhere but at the end of a pipeline (a `KMeans` step before the model, say)",
)


def _notes(op):
    """The notes column: the limits, then what is refused."""
    if not op.refuses:
        return op.notes
    return f"{op.notes}; refused: {op.refuses}" if op.notes else f"refused: {op.refuses}"


def markdown():
    """The operator table, grouped by kind, as docs/operators.md shows it."""
    lines = ["| scikit-learn class | kind | compiled to | notes |", "|---|---|---|---|"]
    for kind in KINDS:
        for op in OPERATORS:
            if op.kind == kind:
                lines.append(f"| `{op.name}` | {op.kind} | {op.becomes} | {_notes(op)} |")
    return "\n".join(lines)


def _names(names):
    """Class names in backquotes, a Classifier and Regressor of one stem (both among `names`)
    written once: `XClassifier`/`Regressor`."""
    out, done = [], set()
    for name in names:
        if name in done:
            continue
        for suffix, other in (("Classifier", "Regressor"), ("Regressor", "Classifier")):
            stem = name[:-len(suffix)]
            if name.endswith(suffix) and stem + other in names:
                out.append(f"`{stem}Classifier`/`Regressor`")
                done |= {stem + "Classifier", stem + "Regressor"}
                break
        else:
            out.append(f"`{name}`")
    return out


def overview_markdown():
    """python/README.md's overview: each family and its classes, every class once."""
    unknown = sorted({op.family for op in OPERATORS} - set(FAMILIES))
    if unknown:
        raise ValueError(f"operators of families missing from FAMILIES: {unknown}")
    lines = ["| family | estimators |", "|---|---|"]
    for family in FAMILIES:
        names = [op.name for op in OPERATORS if op.family == family]
        if not names:
            raise ValueError(f"the family {family!r} has no operators")
        lines.append(f"| {family} | {', '.join(_names(names))} |")
    return "\n".join(lines)


def refused_markdown():
    """python/README.md's list of what export() refuses: the classes it has none for, what
    every class is refused, then each class's refusals (classes of one text in one item)."""
    items = [f"any class not in the table above, for instance "
             f"{', '.join(_names(UNSUPPORTED_EXAMPLES))} (the message lists the supported ones)",
             *GENERAL_REFUSALS]
    by_text = {}
    for op in OPERATORS:
        if op.refuses:
            by_text.setdefault(op.refuses, []).append(op.name)
    items += [f"{', '.join(_names(names))}: {text}" for text, names in by_text.items()]
    return "\n".join(f"- {item}{';' if k < len(items) - 1 else '.'}"
                     for k, item in enumerate(items))


# The generated blocks a page may hold: between `<!-- NAME: generated by ... -->` and
# `<!-- NAME: end -->`, the markdown of BLOCKS[NAME].
BLOCKS = {"operators": markdown, "overview": overview_markdown, "refused": refused_markdown}
BEGIN = "<!-- operators: generated by `python3 -m pg_predict operators --readme docs/operators.md` -->"
END = "<!-- operators: end -->"
_BEGIN = re.compile(r"<!-- ([a-z]+): generated by [^\n]*?-->")


def _blocks(text, path):
    """(name, start, end) of the body of each generated block in `text`."""
    out = []
    for m in _BEGIN.finditer(text):
        name = m.group(1)
        if name not in BLOCKS:
            continue
        end = text.find(f"<!-- {name}: end -->", m.end())
        if end < 0:
            raise ValueError(f"{path}: {m.group(0)!r} has no <!-- {name}: end -->")
        out.append((name, m.end(), end))
    return out


def _read(path):
    with open(path) as f:
        return f.read()


def generated_blocks(path):
    """The names of the generated blocks in the file at `path`, in order."""
    return [name for name, _, _ in _blocks(_read(path), path)]


def update_readme(path):
    """Rewrite every generated block in `path` (docs/operators.md: the operator table;
    python/README.md: the overview and the refusals); True if it changed."""
    text = _read(path)
    blocks = _blocks(text, path)
    if not blocks:
        raise ValueError(f"{path}: no generated block (markers such as {BEGIN!r} ... {END!r})")
    new = text
    for name, start, end in reversed(blocks):
        new = new[:start] + "\n" + BLOCKS[name]() + "\n" + new[end:]
    if new != text:
        with open(path, "w") as f:
            f.write(new)
    return new != text


def readme_is_current(path):
    """True if `path` has generated blocks and each equals what the registry generates."""
    text = _read(path)
    blocks = _blocks(text, path)
    return bool(blocks) and all(text[start:end] == "\n" + BLOCKS[name]() + "\n"
                                for name, start, end in blocks)
