// What train() accepts: the algorithms, each one's hyperparameters (an unknown key is an error,
// never ignored), and the task the target and the objective ask for.
#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <string>

#include "trainer_internal.hpp"

namespace pg_predict::training {

namespace {

// XGBoost's training parameters train() passes on as given (XGBoosterSetParam), with their
// aliases; n_estimators (num_boost_round) and nthread are train()'s own, seed is its argument.
const std::set<std::string> kXGBoostParams = {
    "objective", "eta", "learning_rate", "gamma", "min_split_loss", "max_depth", "min_child_weight",
    "max_delta_step", "subsample", "sampling_method", "colsample_bytree", "colsample_bylevel",
    "colsample_bynode", "lambda", "reg_lambda", "alpha", "reg_alpha", "tree_method", "scale_pos_weight",
    "max_bin", "grow_policy", "max_leaves", "num_parallel_tree", "base_score", "tweedie_variance_power",
    "n_estimators", "num_boost_round", "nthread"};
// The objectives the XGBoost importer scores that train() can choose between.
const std::set<std::string> kObjectives = {"binary:logistic", "multi:softprob", "reg:squarederror",
                                           "reg:absoluteerror", "count:poisson", "reg:gamma", "reg:tweedie"};
const std::set<std::string> kLinearParams = {"alpha"};
const std::set<std::string> kLogisticParams = {"C", "max_iter", "tol"};

std::string known(const std::set<std::string>& keys) {
    std::string out;
    for (const std::string& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out;
}

}  // namespace

Algorithm parse_algorithm(const std::string& name) {
    if (name == "xgboost") return Algorithm::XGBoost;
    if (name == "linear") return Algorithm::Linear;
    if (name == "logistic") return Algorithm::Logistic;
    invalid("unknown algorithm \"" + name + "\"; train() knows xgboost, linear, logistic");
}

nlohmann::json check_hyperparams(Algorithm algorithm, const std::string& json_text) {
    nlohmann::json h = nlohmann::json::parse(json_text, nullptr, false);
    if (h.is_discarded() || !h.is_object()) invalid("hyperparams must be a JSON object");
    const std::set<std::string>& keys = algorithm == Algorithm::XGBoost  ? kXGBoostParams
                                        : algorithm == Algorithm::Linear ? kLinearParams
                                                                          : kLogisticParams;
    const char* name = algorithm == Algorithm::XGBoost ? "xgboost" : algorithm == Algorithm::Linear ? "linear" : "logistic";
    for (auto it = h.begin(); it != h.end(); ++it) {
        const std::string& key = it.key();
        if (key == "seed" || key == "random_state")
            invalid("hyperparameter \"" + key + "\": pass the seed as train()'s seed argument");
        if (!keys.count(key))
            invalid("unknown hyperparameter \"" + key + "\" for algorithm " + name + "; it knows " + known(keys));
        const nlohmann::json& v = it.value();
        if (key == "objective" || key == "tree_method" || key == "grow_policy" || key == "sampling_method") {
            if (!v.is_string()) invalid("hyperparameter \"" + key + "\" must be a string");
            if (key == "objective" && !kObjectives.count(v.get<std::string>()))
                invalid("objective \"" + v.get<std::string>() + "\" is not supported by train(); supported: " +
                        known(kObjectives));
        } else if (!v.is_number() || !std::isfinite(v.get<double>())) {
            invalid("hyperparameter \"" + key + "\" must be a number");
        }
    }
    const auto positive_int = [&](const char* key) {
        if (h.contains(key) && (!h[key].is_number_integer() || h[key].get<int64_t>() < 1 || h[key].get<int64_t>() > 100000))
            invalid(std::string("hyperparameter \"") + key + "\" must be an integer from 1 to 100000");
    };
    for (const char* key : {"n_estimators", "num_boost_round", "nthread", "max_iter"}) positive_int(key);
    // XGBoost's aliases: both names given would leave one silently unused.
    for (auto [a, b] : {std::pair{"n_estimators", "num_boost_round"}, {"eta", "learning_rate"}, {"gamma", "min_split_loss"},
                        {"lambda", "reg_lambda"}, {"alpha", "reg_alpha"}})
        if (algorithm == Algorithm::XGBoost && h.contains(a) && h.contains(b))
            invalid(std::string("hyperparameters \"") + a + "\" and \"" + b + "\" are the same; give one");
    if (h.contains("alpha") && algorithm == Algorithm::Linear && h["alpha"].get<double>() < 0)
        invalid("hyperparameter \"alpha\" must be >= 0");
    for (const char* key : {"C", "tol"})
        if (h.contains(key) && h[key].get<double>() <= 0) invalid(std::string("hyperparameter \"") + key + "\" must be > 0");
    return h;
}

Task choose_task(Algorithm algorithm, const nlohmann::json& hyperparams, const Request& r) {
    const bool label_target = r.target_kind != ColumnKind::Number;
    const char* kind = r.target_kind == ColumnKind::Text ? "text" : "boolean";
    switch (algorithm) {
        case Algorithm::Linear:
            if (label_target)
                invalid("target column \"" + r.target + "\" is " + kind +
                        ": linear regression needs a numeric target (use algorithm logistic to classify)");
            return Task::Regression;
        case Algorithm::Logistic:
            return Task::Classification;
        case Algorithm::XGBoost: {
            const std::string objective = hyperparams.value("objective", "");
            const bool classifier = objective == "binary:logistic" || objective == "multi:softprob";
            if (label_target && !objective.empty() && !classifier)
                invalid("target column \"" + r.target + "\" is " + kind + ", but objective " + objective +
                        " is a regression: a " + kind + " target needs binary:logistic or multi:softprob");
            return label_target || classifier ? Task::Classification : Task::Regression;
        }
    }
    invalid("unknown algorithm");
}

}  // namespace pg_predict::training
