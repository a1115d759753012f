// What the files of src/training share (not part of the interface src/pg sees).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/training/trainer.hpp"

namespace pg_predict::training {

enum class Algorithm { XGBoost, Linear, Logistic };
enum class Task { Regression, Classification };

// A text column's categories: codes in the order first seen while reading, sorted at the end.
struct Categories {
    std::unordered_map<std::string, int32_t> code;
    std::vector<std::string> values;  // by code
    int32_t add(const char* text, size_t length, const std::string& column);
};

// One split's rows: row-major, one value per query column but the target (a text column's
// first-seen code, NaN for NULL), in float32 for XGBoost (its DMatrix is float32) and in float64
// for the linear models (scikit-learn fits them in float64).
struct Rows {
    std::vector<float> x32;
    std::vector<double> x64;
    std::vector<double> y;  // the target: a number, or a text / boolean label's code
    int64_t count = 0;
};

struct Dataset {
    Request request;
    Algorithm algorithm;
    Task task;
    nlohmann::json hyperparams;  // checked: only keys the algorithm knows
    std::vector<Column> features;
    std::vector<Categories> categories;  // per feature (used by text columns)
    Categories target_categories;         // a text or boolean target's labels
    Rows train, test;
    int64_t rows = 0;
};

// A split expanded into the model's input vector: numbers as they are, each text column as its
// one-hot columns (categories sorted), row-major float32 or float64 as the Rows were.
struct Matrix {
    std::vector<float> x32;
    std::vector<double> x64;
    int64_t rows = 0;
    int64_t cols = 0;
};

// The labels a classifier learns: the target's distinct values sorted (text by bytes, false
// before true, numbers ascending) as the document's "classes", and y as indices into them.
struct Labels {
    nlohmann::json classes;        // the document's classes: strings, booleans or numbers
    std::vector<float> train;   // class indices (classification) or the target (regression)
    std::vector<double> test;   // the same for the test rows (for the metrics)
    int num_classes = 0;
};

// The model's result on the test rows, for the metrics: per row the value (regression) or the
// probability of each class (classification: rows × num_classes).
struct TestPredictions {
    std::vector<double> values;
    int width = 1;
};

struct Fitted {
    nlohmann::json model_step;  // the document's last step
    nlohmann::json extra_steps = nlohmann::json::array();  // between the encoders and the model (an imputer)
    TestPredictions test;
};

[[noreturn]] inline void invalid(const std::string& message) { fail(ErrorCategory::InvalidParameter, message); }

// request.cpp: the algorithm's name, the hyperparameters it knows, the task.
Algorithm parse_algorithm(const std::string& name);
nlohmann::json check_hyperparams(Algorithm, const std::string& json_text);
Task choose_task(Algorithm, const nlohmann::json& hyperparams, const Request&);

// dataset.cpp
Matrix expand(const Dataset&, const Rows&, bool float64);
Labels make_labels(Dataset&);
// The input names and the document's ColumnTransformer (null when no column is text).
nlohmann::json encoder_step(const Dataset&);
int64_t expanded_width(const Dataset&);

// xgboost_trainer.cpp / linear_trainer.cpp
// fit_xgboost frees train's rows once its DMatrix holds them.
Fitted fit_xgboost(const Dataset&, const Labels&, Matrix& train, const Matrix& test);
Fitted fit_linear(const Dataset&, const Labels&, Matrix& train, Matrix& test);

// test_split_metrics.cpp: the test split's metrics (the evaluation module's document).
nlohmann::json test_metrics(Task, const Labels&, const TestPredictions&);

}  // namespace pg_predict::training
