// The registry of supported scikit-learn classes: name -> the function that converts it
// (handlers.hpp). docs/operators.md's table lists the same classes.
#include <string>

#include "handlers.hpp"

namespace pg_predict::importers::sklearn {

namespace {

constexpr OneClass kRefused = OneClass::Refused;
constexpr OneClass kProbaIsOne = OneClass::ProbaIsOne;
constexpr OneClass kNoProba = OneClass::NoProbabilities;

const Handler kHandlers[] = {
    // document.cpp: composites
    {"Pipeline", pipeline, nullptr, kRefused},
    {"ColumnTransformer", column_transformer, nullptr, kRefused},
    {"FeatureUnion", feature_union, nullptr, kRefused},
    // featurizers.cpp
    {"StandardScaler", standard_scaler, nullptr, kRefused},
    {"RobustScaler", robust_scaler, nullptr, kRefused},
    {"MaxAbsScaler", max_abs_scaler, nullptr, kRefused},
    {"MinMaxScaler", min_max_scaler, nullptr, kRefused},
    {"SimpleImputer", simple_imputer, nullptr, kRefused},
    {"OneHotEncoder", one_hot_encoder, nullptr, kRefused},
    {"CountVectorizer", count_vectorizer, nullptr, kRefused},
    {"TfidfVectorizer", count_vectorizer, nullptr, kRefused},
    {"HashingVectorizer", count_vectorizer, nullptr, kRefused},
    {"TfidfTransformer", tfidf_transformer, nullptr, kRefused},
    {"OrdinalEncoder", ordinal_encoder, nullptr, kRefused},
    {"ColumnSelector", column_selector, nullptr, kRefused},  // VarianceThreshold, SelectKBest, ...
    {"MissingIndicator", missing_indicator, nullptr, kRefused},
    {"Binarizer", binarizer, nullptr, kRefused},
    {"Normalizer", normalizer, nullptr, kRefused},
    {"PCA", pca, nullptr, kRefused},
    {"TruncatedSVD", truncated_svd, nullptr, kRefused},
    {"KBinsDiscretizer", kbins_discretizer, nullptr, kRefused},
    {"PolynomialFeatures", polynomial_features, nullptr, kRefused},
    {"FunctionTransformer", function_transformer, nullptr, kRefused},
    {"PowerTransformer", power_transformer, nullptr, kRefused},
    {"QuantileTransformer", quantile_transformer, nullptr, kRefused},
    {"KernelPCA", kernel_pca, nullptr, kRefused},
    {"SplineTransformer", spline_transformer, nullptr, kRefused},  // splines.cpp
    {"FastICA", fast_ica, nullptr, kRefused},
    // linear.cpp
    {"LinearRegression", nullptr, linear_regressor, kRefused},
    {"Ridge", nullptr, linear_regressor, kRefused},
    {"Lasso", nullptr, linear_regressor, kRefused},
    {"ElasticNet", nullptr, linear_regressor, kRefused},
    {"SGDRegressor", nullptr, linear_regressor, kRefused},
    {"LinearSVR", nullptr, linear_regressor, kRefused},
    {"LogisticRegression", nullptr, logistic_regression, kRefused},
    {"SGDClassifier", nullptr, sgd_classifier, kRefused},
    {"LinearSVC", nullptr, decision_classifier, kRefused},
    {"Perceptron", nullptr, decision_classifier, kRefused},
    {"RidgeClassifier", nullptr, decision_classifier, kNoProba},
    // trees.cpp
    {"DecisionTreeClassifier", nullptr, decision_tree_classifier, kProbaIsOne},
    {"DecisionTreeRegressor", nullptr, decision_tree_regressor, kRefused},
    {"ExtraTreeClassifier", nullptr, extra_tree_classifier, kRefused},
    {"ExtraTreeRegressor", nullptr, extra_tree_regressor, kRefused},
    {"RandomForestClassifier", nullptr, random_forest_classifier, kProbaIsOne},
    {"RandomForestRegressor", nullptr, random_forest_regressor, kRefused},
    {"ExtraTreesClassifier", nullptr, extra_trees_classifier, kProbaIsOne},
    {"ExtraTreesRegressor", nullptr, extra_trees_regressor, kRefused},
    {"GradientBoostingClassifier", nullptr, gradient_boosting_classifier, kRefused},
    {"GradientBoostingRegressor", nullptr, gradient_boosting_regressor, kRefused},
    {"HistGradientBoostingClassifier", nullptr, hist_gradient_boosting_classifier, kNoProba},
    {"HistGradientBoostingRegressor", nullptr, hist_gradient_boosting_regressor, kRefused},
    {"IsolationForest", nullptr, isolation_forest, kRefused},
    // svm.cpp
    {"SVC", nullptr, svc, kRefused},
    {"NuSVC", nullptr, svc, kRefused},
    {"SVR", nullptr, svr, kRefused},
    {"NuSVR", nullptr, svr, kRefused},
    // naive_bayes.cpp
    {"GaussianNB", nullptr, gaussian_nb, kProbaIsOne},
    {"MultinomialNB", nullptr, multinomial_nb, kProbaIsOne},
    {"ComplementNB", nullptr, multinomial_nb, kProbaIsOne},  // the document's prior is zero
    {"BernoulliNB", nullptr, bernoulli_nb, kProbaIsOne},
    // neural.cpp
    {"MLPClassifier", nullptr, mlp_classifier, kNoProba},
    {"MLPRegressor", nullptr, mlp_regressor, kRefused},
    // cluster.cpp
    {"KMeans", nullptr, kmeans, kNoProba},
    {"MiniBatchKMeans", nullptr, kmeans, kNoProba},
    {"MeanShift", nullptr, kmeans, kNoProba},
    {"Birch", nullptr, birch, kNoProba},
    // linear.cpp: the *CV estimators (the plain model once fitted) and other linear regressors
    {"RidgeCV", nullptr, linear_regressor, kRefused},
    {"LassoCV", nullptr, linear_regressor, kRefused},
    {"ElasticNetCV", nullptr, linear_regressor, kRefused},
    {"Lars", nullptr, linear_regressor, kRefused},
    {"LarsCV", nullptr, linear_regressor, kRefused},
    {"LassoLars", nullptr, linear_regressor, kRefused},
    {"LassoLarsCV", nullptr, linear_regressor, kRefused},
    {"LassoLarsIC", nullptr, linear_regressor, kRefused},
    {"OrthogonalMatchingPursuit", nullptr, linear_regressor, kRefused},
    {"OrthogonalMatchingPursuitCV", nullptr, linear_regressor, kRefused},
    {"HuberRegressor", nullptr, linear_regressor, kRefused},
    {"QuantileRegressor", nullptr, linear_regressor, kRefused},
    {"BayesianRidge", nullptr, linear_regressor, kRefused},
    {"ARDRegression", nullptr, linear_regressor, kRefused},
    {"TheilSenRegressor", nullptr, linear_regressor, kRefused},
    {"LogisticRegressionCV", nullptr, logistic_regression, kRefused},
    {"RidgeClassifierCV", nullptr, decision_classifier, kNoProba},
    // linear.cpp: generalized linear models and PLS
    {"PoissonRegressor", nullptr, glm_regressor, kRefused},
    {"GammaRegressor", nullptr, glm_regressor, kRefused},
    {"TweedieRegressor", nullptr, glm_regressor, kRefused},
    {"PLSRegression", nullptr, pls_regression, kRefused},
    // mixture.cpp
    {"GaussianMixture", nullptr, gaussian_mixture, kProbaIsOne},
    {"BayesianGaussianMixture", nullptr, gaussian_mixture, kProbaIsOne},
    // calibration.cpp
    {"CalibratedClassifierCV", nullptr, calibrated_classifier, kRefused},
    // neighbors.cpp
    {"KNeighborsClassifier", nullptr, k_neighbors_classifier, kProbaIsOne},
    {"KNeighborsRegressor", nullptr, k_neighbors_regressor, kRefused},
    // multioutput.cpp
    {"MultiOutputRegressor", nullptr, multi_output_regressor, kRefused},
    {"RegressorChain", nullptr, regressor_chain, kRefused},
    {"MultiOutputClassifier", nullptr, multi_output_classifier, kRefused},
    {"ClassifierChain", nullptr, classifier_chain, kRefused},
    // ensemble.cpp
    {"VotingClassifier", nullptr, voting_classifier, kRefused},
    {"VotingRegressor", nullptr, voting_regressor, kRefused},
    {"BaggingClassifier", nullptr, bagging_classifier, kRefused},
    {"BaggingRegressor", nullptr, bagging_regressor, kRefused},
    {"StackingClassifier", nullptr, stacking_classifier, kRefused},
    {"StackingRegressor", nullptr, stacking_regressor, kRefused},
    {"RadiusNeighborsClassifier", nullptr, k_neighbors_classifier, kProbaIsOne},
    {"RadiusNeighborsRegressor", nullptr, k_neighbors_regressor, kRefused},
    // xgboost_estimators.cpp: XGBoost's scikit-learn estimators (what train() writes)
    {"XGBClassifier", nullptr, xgb_classifier, kRefused},
    {"XGBRegressor", nullptr, xgb_regressor, kRefused},
};

std::string names(bool featurizers) {
    std::string out;
    for (const Handler& h : kHandlers)
        if ((h.featurizer != nullptr) == featurizers) out += (out.empty() ? "" : ", ") + std::string(h.type);
    return out;
}

}  // namespace

const Handler* find_handler(const std::string& type) {
    for (const Handler& h : kHandlers)
        if (type == h.type) return &h;
    return nullptr;
}

std::string featurizer_names() { return names(true); }
std::string estimator_names() { return names(false); }

}  // namespace pg_predict::importers::sklearn
