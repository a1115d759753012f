// XGBoost through its C API (Debian's libxgboost-dev): the training rows in one DMatrix, one
// boosting round per XGBoosterUpdateOneIter with an interrupt check between rounds, as Python's
// xgb.train(params, dtrain, num_boost_round) does it; the booster saved as JSON.
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <xgboost/c_api.h>

#include "pg_predict/common/interrupt.hpp"
#include "trainer_internal.hpp"

namespace pg_predict::training {

namespace {

// XGBoost's message without its "[hh:mm:ss] file:line: " prefix and its stack trace.
std::string last_error() {
    std::string message = XGBGetLastError();
    message = message.substr(0, message.find('\n'));
    if (!message.empty() && message[0] == '[') {
        size_t source = message.find("] ");
        size_t text = source == std::string::npos ? source : message.find(": ", source);
        if (text != std::string::npos) message = message.substr(text + 2);
    }
    return message;
}

void check(int rc, const char* what) {
    if (rc != 0) invalid(std::string("xgboost: ") + what + ": " + last_error());
}

struct DMatrixDeleter {
    void operator()(void* m) const noexcept { XGDMatrixFree(m); }
};
struct BoosterDeleter {
    void operator()(void* b) const noexcept { XGBoosterFree(b); }
};
using DMatrix = std::unique_ptr<void, DMatrixDeleter>;
using Booster = std::unique_ptr<void, BoosterDeleter>;

DMatrix make_dmatrix(const float* x, int64_t rows, int64_t cols, int threads) {
    DMatrixHandle handle = nullptr;
    check(XGDMatrixCreateFromMat_omp(x, static_cast<bst_ulong>(rows), static_cast<bst_ulong>(cols), NAN, &handle, threads),
          "creating the DMatrix");
    return DMatrix(handle);
}

// The value of a hyperparameter as XGBoost's parameter parser reads it (Python passes str(v)).
std::string param_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

Fitted fit_xgboost(const Dataset& d, const Labels& labels, Matrix& train, const Matrix& test) {
    const nlohmann::json& h = d.hyperparams;
    const int threads = h.value("nthread", d.request.threads);
    const int rounds = h.value("n_estimators", h.value("num_boost_round", 100));

    // The parameters, in the order Python's Booster(params) sets a dict's: the user's, then ours.
    std::vector<std::pair<std::string, std::string>> params;
    std::string objective = h.value("objective", "");
    if (d.task == Task::Classification) {
        if (objective.empty()) objective = labels.num_classes == 2 ? "binary:logistic" : "multi:softprob";
        if (objective == "binary:logistic" && labels.num_classes != 2)
            invalid("objective binary:logistic needs two classes; target column \"" + d.request.target + "\" has " +
                    std::to_string(labels.num_classes) + " (use multi:softprob)");
    } else if (objective.empty()) {
        objective = "reg:squarederror";
    }
    for (auto it = h.begin(); it != h.end(); ++it)
        if (it.key() != "n_estimators" && it.key() != "num_boost_round" && it.key() != "nthread" && it.key() != "objective")
            params.emplace_back(it.key(), param_text(it.value()));
    params.emplace_back("objective", objective);
    if (objective == "multi:softprob") params.emplace_back("num_class", std::to_string(labels.num_classes));
    if (!h.contains("tree_method")) params.emplace_back("tree_method", "hist");
    params.emplace_back("seed", std::to_string(d.request.seed));
    params.emplace_back("nthread", std::to_string(threads));

    DMatrix dtrain = make_dmatrix(train.x32.data(), train.rows, train.cols, threads);
    check(XGDMatrixSetFloatInfo(dtrain.get(), "label", labels.train.data(), static_cast<bst_ulong>(labels.train.size())),
          "setting the labels");
    train.x32 = {};  // the DMatrix holds its own copy: the rows' goes before the boosting rounds
    BoosterHandle handle = nullptr;
    DMatrixHandle caches[1] = {dtrain.get()};
    check(XGBoosterCreate(caches, 1, &handle), "creating the booster");
    Booster booster(handle);
    for (const auto& [key, value] : params)
        check(XGBoosterSetParam(booster.get(), key.c_str(), value.c_str()), ("parameter " + key).c_str());
    for (int round = 0; round < rounds; ++round) {
        check_interrupts();
        check(XGBoosterUpdateOneIter(booster.get(), round, dtrain.get()), "training");
    }
    dtrain.reset();  // the training rows' copy goes before the test rows are scored

    Fitted fitted;
    bst_ulong length = 0;
    const char* raw = nullptr;
    check(XGBoosterSaveModelToBuffer(booster.get(), "{\"format\": \"json\"}", &length, &raw), "saving the model");
    fitted.model_step = {{"type", d.task == Task::Classification ? "XGBClassifier" : "XGBRegressor"},
                         {"booster", nlohmann::json::parse(raw, raw + length)}};

    if (test.rows > 0) {
        DMatrix dtest = make_dmatrix(test.x32.data(), test.rows, test.cols, threads);
        bst_ulong n = 0;
        const float* out = nullptr;
        check(XGBoosterPredict(booster.get(), dtest.get(), 0, 0, 0, &n, &out), "scoring the test rows");
        if (objective == "binary:logistic") {
            fitted.test.width = 2;
            for (bst_ulong i = 0; i < n; ++i) {
                fitted.test.values.push_back(1.0 - out[i]);
                fitted.test.values.push_back(out[i]);
            }
        } else {
            fitted.test.width = objective == "multi:softprob" ? labels.num_classes : 1;
            fitted.test.values.assign(out, out + n);
        }
    }
    return fitted;
}

}  // namespace pg_predict::training
