// train(): a model trained from a query's rows, inside the backend. The torch-free and
// PostgreSQL-free interface src/pg uses (docs/design.md, house rule 1): src/pg reads the rows with
// SPI and hands them over one at a time; everything here may throw pg_predict::Error.
//
// What a column becomes (predict's rules, so predict('m', t) over the training table works):
// a number (smallint ... double precision, numeric, boolean) is one float feature, NULL its
// missing value (NaN); a text column is one-hot encoded over the categories the training rows
// hold, sorted by their bytes, a NULL being no category (all its columns 0), as an unseen
// category is at predict time. The result is a scikit-learn document (src/spec/SKLEARN_FORMAT.md)
// that create_model itself accepts: a ColumnTransformer with the encoders, then the model
// (XGBClassifier / XGBRegressor holding the booster's JSON, LinearRegression / Ridge,
// LogisticRegression).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pg_predict::training {

enum class ColumnKind { Number, Boolean, Text };

struct Column {
    std::string name;
    ColumnKind kind;
};

// One value of a row: a number (NaN for NULL), or text (text == nullptr: NULL).
struct Cell {
    double number;
    const char* text;
    size_t length;
};

// What train() was asked, checked before the query runs: the algorithm ("xgboost", "linear",
// "logistic"), the hyperparameters (a JSON object; an unknown key is an error), the target's
// kind, the test share and the seed of the split, and the threads of this backend (the default
// of "nthread").
struct Request {
    std::string algorithm;
    std::string hyperparams_json;
    std::string target;
    ColumnKind target_kind;
    double test_size;
    int64_t seed;
    int threads;
};

// The rows read so far, the test split and the categories of the text columns.
struct Dataset;

// Checks the request (algorithm, hyperparameters, a text target for a regressor, test_size) and
// starts an empty dataset over `features` (the query's columns but the target).
Dataset* new_dataset(const Request& request, std::vector<Column> features);
void free_dataset(Dataset*) noexcept;

// Appends one row: `features` in the order given to new_dataset, then the target (never NULL:
// src/pg refuses that, naming the column). Whether the row is a test row is decided here from
// (seed, row number): see is_test_row.
void add_row(Dataset*, const Cell* features, const Cell& target);
int64_t row_count(const Dataset*);
// What the model will be, known from the request alone: "classification" or "regression", as
// the catalog's task column names it.
const char* task_name(const Dataset*);

// Whether the row numbered `row` (0-based, the query's order) goes to the test split: its
// hash splitmix64(splitmix64(seed) ^ row), as a number in [0, 1), is below test_size.
bool is_test_row(int64_t seed, int64_t row, double test_size);

struct Trained {
    std::string document_json;  // the scikit-learn document to register (create_model's format "sklearn")
    std::string metrics_json;   // the test split's metrics ({} when test_size is 0)
    std::string summary_json;   // train()'s result: algorithm, task, rows, features, metrics
};

// Trains on the training rows and measures the test rows. Checks interrupts between boosting
// rounds / optimizer steps (common/interrupt.hpp).
Trained train(Dataset*);

}  // namespace pg_predict::training
