// The training module without PostgreSQL: the split, the refusals, and the documents it writes
// imported by the scikit-learn importer and evaluated by the reference evaluator. (Agreement
// with xgboost and scikit-learn themselves: regress/conformance/test_train.py.)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/training/trainer.hpp"

namespace tr = pg_predict::training;
using pg_predict::Error;

namespace {

tr::Request request(const std::string& algorithm, const std::string& hyperparams, tr::ColumnKind target_kind,
                    double test_size = 0.0) {
    return tr::Request{algorithm, hyperparams, "y", target_kind, test_size, 7, 1};
}

tr::Cell number(double v) { return tr::Cell{v, nullptr, 0}; }
tr::Cell text(const char* s) { return tr::Cell{NAN, s, std::strlen(s)}; }

struct DatasetGuard {
    tr::Dataset* d;
    ~DatasetGuard() { tr::free_dataset(d); }
};

// Rows of (a, b, color) with y = 2a - 3b + 1 + (color == "red" ? 4 : 0).
const char* const kColors[] = {"red", "blue", "green"};
double linear_target(int i) { return 2.0 * (i % 7) - 3.0 * (i % 5) + 1 + (i % 3 == 0 ? 4 : 0); }

}  // namespace

TEST(Training, SplitIsDeterministicAndNearTestSize) {
    int test = 0;
    for (int64_t row = 0; row < 100000; ++row) {
        bool t = tr::is_test_row(42, row, 0.25);
        EXPECT_EQ(t, tr::is_test_row(42, row, 0.25));
        test += t;
    }
    EXPECT_NEAR(test / 100000.0, 0.25, 0.01);
    int differ = 0;
    for (int64_t row = 0; row < 1000; ++row) differ += tr::is_test_row(42, row, 0.5) != tr::is_test_row(43, row, 0.5);
    EXPECT_GT(differ, 300);  // another seed, another split
    for (int64_t row = 0; row < 1000; ++row) EXPECT_FALSE(tr::is_test_row(42, row, 0.0));
}

TEST(Training, RefusesWhatItCannotUse) {
    std::vector<tr::Column> cols = {{"a", tr::ColumnKind::Number}};
    EXPECT_THROW(tr::new_dataset(request("forest", "{}", tr::ColumnKind::Number), cols), Error);
    EXPECT_THROW(tr::new_dataset(request("xgboost", R"({"max_dept": 3})", tr::ColumnKind::Number), cols), Error);
    EXPECT_THROW(tr::new_dataset(request("linear", R"({"C": 1})", tr::ColumnKind::Number), cols), Error);
    EXPECT_THROW(tr::new_dataset(request("linear", "{}", tr::ColumnKind::Text), cols), Error);
    EXPECT_THROW(tr::new_dataset(request("xgboost", R"({"objective": "reg:squarederror"})", tr::ColumnKind::Text), cols),
                 Error);
    EXPECT_THROW(tr::new_dataset(request("xgboost", "{}", tr::ColumnKind::Number, 1.0), cols), Error);
    EXPECT_THROW(tr::new_dataset(request("xgboost", "{}", tr::ColumnKind::Number), {}), Error);
    try {
        tr::new_dataset(request("xgboost", R"({"n_estimators": 10, "max_dept": 3})", tr::ColumnKind::Number), cols);
        FAIL() << "an unknown hyperparameter was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("\"max_dept\""), std::string::npos) << e.what();
    }
    // An empty result and a target with one class are refused after reading.
    DatasetGuard empty{tr::new_dataset(request("xgboost", "{}", tr::ColumnKind::Number), cols)};
    EXPECT_THROW(tr::train(empty.d), Error);
    DatasetGuard one{tr::new_dataset(request("logistic", "{}", tr::ColumnKind::Text), cols)};
    for (int i = 0; i < 10; ++i) {
        tr::Cell x = number(i);
        tr::add_row(one.d, &x, text("yes"));
    }
    EXPECT_THROW(tr::train(one.d), Error);
}

// A linear model of an exact linear target with a text column: the document imports, and the
// reference evaluator recovers the target (the one-hot columns in the sorted categories' order).
TEST(Training, LinearDocumentScoresTheTarget) {
    std::vector<tr::Column> cols = {{"a", tr::ColumnKind::Number}, {"color", tr::ColumnKind::Text},
                                    {"b", tr::ColumnKind::Number}};
    DatasetGuard d{tr::new_dataset(request("linear", "{}", tr::ColumnKind::Number, 0.2), cols)};
    for (int i = 0; i < 200; ++i) {
        tr::Cell row[3] = {number(i % 7), text(kColors[i % 3]), number(i % 5)};
        tr::add_row(d.d, row, number(linear_target(i)));
    }
    EXPECT_EQ(tr::row_count(d.d), 200);
    tr::Trained t = tr::train(d.d);
    const nlohmann::json doc = nlohmann::json::parse(t.document_json);
    EXPECT_EQ(doc["steps"][0]["type"], "ColumnTransformer");
    EXPECT_EQ(doc["steps"][0]["transformers"][1]["steps"][0]["categories"][0],
              (nlohmann::json{"blue", "green", "red"}));
    EXPECT_EQ(doc["steps"].back()["type"], "LinearRegression");
    const pg_predict::spec::Pipeline p = pg_predict::importers::import_model(doc, "sklearn");
    // Text inputs reach the spec as vocabulary indices (the order the document lists them).
    const std::vector<std::string> vocab = p.text_inputs.at(0).vocabulary;
    const auto code = [&](const char* s) { return double(std::find(vocab.begin(), vocab.end(), s) - vocab.begin()); };
    std::vector<double> x;
    for (int i = 0; i < 30; ++i) x.insert(x.end(), {double(i % 7), code(kColors[i % 3]), double(i % 5)});
    std::vector<float> out(30);
    pg_predict::spec::reference_predict(p, x.data(), 30, out.data());
    for (int i = 0; i < 30; ++i) EXPECT_NEAR(out[i], linear_target(i), 1e-4) << "row " << i;
    const nlohmann::json metrics = nlohmann::json::parse(t.metrics_json);
    EXPECT_LT(metrics["rmse"].get<double>(), 1e-9);
}

// An XGBoost classifier of a text target: the document's classes are the sorted labels, the
// booster sits in an XGBClassifier step, and it imports with XGBoost's comparison.
TEST(Training, XGBoostDocumentImports) {
    std::vector<tr::Column> cols = {{"a", tr::ColumnKind::Number}, {"b", tr::ColumnKind::Number}};
    DatasetGuard d{tr::new_dataset(request("xgboost", R"({"n_estimators": 5, "max_depth": 2})", tr::ColumnKind::Text), cols)};
    for (int i = 0; i < 300; ++i) {
        tr::Cell row[2] = {number(i % 10), i % 17 == 0 ? number(NAN) : number(i % 4)};
        tr::add_row(d.d, row, text(i % 10 > 4 ? "yes" : "no"));
    }
    tr::Trained t = tr::train(d.d);
    const nlohmann::json doc = nlohmann::json::parse(t.document_json);
    EXPECT_EQ(doc["classes"], (nlohmann::json{"no", "yes"}));
    EXPECT_EQ(doc["steps"].size(), 1u);  // no text feature: no encoder
    EXPECT_EQ(doc["steps"][0]["type"], "XGBClassifier");
    const pg_predict::spec::Pipeline p = pg_predict::importers::import_model(doc, "sklearn");
    EXPECT_EQ(p.model.comparison, pg_predict::spec::Comparison::Less);
    EXPECT_EQ(p.model.trees.size(), 5u);
    EXPECT_EQ(p.class_labels, (std::vector<std::string>{"no", "yes"}));
    const nlohmann::json summary = nlohmann::json::parse(t.summary_json);
    EXPECT_EQ(summary["objective"], "binary:logistic");
    EXPECT_EQ(summary["rows"], 300);
}
