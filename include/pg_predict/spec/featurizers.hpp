// The steps of a pipeline before its model (scikit-learn featurizers, ColumnTransformer), and
// text inputs. A Pipeline with no steps and no text inputs is a bare model, as imported from
// XGBoost.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/spec/op.hpp"

namespace pg_predict::spec {

// A text input column is dictionary-encoded while the batch is filled: the float the model
// sees is the value's index in `vocabulary`, NaN for NULL, and -1 for a value not in it
// (NaN with unknown_is_missing).
struct TextInput {
    int32_t input = 0;                   // which input column (index into Pipeline::features)
    std::vector<std::string> vocabulary;
    bool unknown_is_error = false;       // the encoder's handle_unknown = "error"
    // A value not in the vocabulary is a missing value: XGBoost's categories, where pandas
    // gives an unknown category code -1 and XGBoost reads that as missing.
    bool unknown_is_missing = false;
};

// A text input read by a scikit-learn vectorizer (CountVectorizer, TfidfVectorizer,
// HashingVectorizer, and a TfidfTransformer after one): while the batch is filled, the text's
// sparse row (text/vectorizer.hpp) is projected onto the inputs `slots`, which the program reads
// as numbers. `vectorizer` is what text::parse_vectorizer reads: the analyzer, the vocabulary or
// hashing, the transforms and the projection. The first vectorizer of a column writes the
// column's own input first; the other slots are inputs added after the document's own, named
// after the column.
struct TextVectorizer {
    int32_t input = 0;            // the text column's input (its name is the column's)
    std::vector<int32_t> slots;   // the inputs the projection writes, in its column order
    nlohmann::json vectorizer;
};

// One step: an operator family with its fitted parameters (named arrays and scalars, kept as
// JSON so each family reads what it needs), or a ColumnTransformer-like concatenation whose
// parts read chosen columns of the step's input.
struct Step {
    Op op = Op::None;                    // Op::Affine, Op::OneHot, Op::Concat, Op::Linear, ...
    nlohmann::json params;
    struct Part {
        std::vector<int32_t> columns;    // columns of the step's input this part reads
        std::vector<Step> steps;         // applied in order; empty = passthrough
    };
    std::vector<Part> parts;             // op == Op::Concat only
};

}  // namespace pg_predict::spec
