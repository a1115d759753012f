// train(): the rows read, the labels and input vector made, the model fitted, and the
// scikit-learn document that registers it (src/spec/SKLEARN_FORMAT.md).
#include <string>
#include <utility>

#include "trainer_internal.hpp"

namespace pg_predict::training {

namespace {

using nlohmann::json;

const char* algorithm_name(Algorithm a) {
    return a == Algorithm::XGBoost ? "xgboost" : a == Algorithm::Linear ? "linear" : "logistic";
}

// The split expanded into the model's input; without text columns the rows are moved in as
// they are (no second copy of the table).
Matrix input_matrix(const Dataset& d, Rows& rows) {
    const bool float64 = d.algorithm != Algorithm::XGBoost;
    Matrix m = expand(d, rows, float64);
    if (m.x32.empty() && m.x64.empty()) {
        m.x32 = std::move(rows.x32);
        m.x64 = std::move(rows.x64);
    }
    rows.x32 = {};
    rows.x64 = {};
    return m;
}

json document(const Dataset& d, const Labels& labels, const Fitted& fitted) {
    json inputs = json::array();
    for (const Column& c : d.features)
        inputs.push_back({{"name", c.name}, {"type", c.kind == ColumnKind::Text ? "text" : "numeric"}});
    json steps = json::array();
    if (json encoders = encoder_step(d); !encoders.is_null()) steps.push_back(std::move(encoders));
    for (const json& s : fitted.extra_steps) steps.push_back(s);
    steps.push_back(fitted.model_step);
    json doc = {{"format", "sklearn"}, {"version", 1}, {"inputs", inputs},
                {"task", d.task == Task::Classification ? "classification" : "regression"}};
    if (d.task == Task::Classification) doc["classes"] = labels.classes;
    doc["steps"] = std::move(steps);
    return doc;
}

}  // namespace

Trained train(Dataset* d) {
    if (d->rows == 0) invalid("the query returned no rows: nothing to train on");
    if (d->train.count == 0)
        invalid("test_size " + std::to_string(d->request.test_size) + " left no training row among the " +
                std::to_string(d->rows) + " rows");
    for (size_t f = 0; f < d->features.size(); ++f)
        if (d->features[f].kind == ColumnKind::Text && d->categories[f].values.empty())
            invalid("text column \"" + d->features[f].name + "\" is NULL in every row: it has no category to encode");
    Labels labels = make_labels(*d);
    Matrix train_x = input_matrix(*d, d->train);
    Matrix test_x = input_matrix(*d, d->test);
    Fitted fitted = d->algorithm == Algorithm::XGBoost ? fit_xgboost(*d, labels, train_x, test_x)
                                                       : fit_linear(*d, labels, train_x, test_x);
    Trained out;
    json metrics = test_metrics(d->task, labels, fitted.test);
    out.metrics_json = metrics.dump();
    out.document_json = document(*d, labels, fitted).dump();
    json summary = {{"algorithm", algorithm_name(d->algorithm)},
                    {"task", d->task == Task::Classification ? "classification" : "regression"},
                    {"rows", d->rows}, {"train_rows", d->train.count}, {"test_rows", d->test.count},
                    {"features", train_x.cols}, {"metrics", metrics}};
    if (fitted.model_step.contains("booster"))
        summary["objective"] = fitted.model_step["booster"]["learner"]["objective"]["name"];
    out.summary_json = summary.dump();
    return out;
}

}  // namespace pg_predict::training
