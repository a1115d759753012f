// Turning SQL values into the model's features: by column name for rows, by position for
// arrays. SQL NULL becomes NaN, which the model treats as a missing value. A batch is float32
// for tree models (XGBoost and scikit-learn round their input to float32 too) and float64 for
// programs that compute in float64 (runtime::program_reads_float64), so float8 columns reach
// those unrounded.
#pragma once

#include <string_view>

#include "binding/model.hpp"

namespace pg_predict::pg {

// Converts one non-NULL datum of a numeric type to float64 (numeric rounds to nearest); a
// float32 batch then rounds that to nearest, as a training library would.
typedef double (*FeatureConverter)(Datum value);

// The converter for a column type (domains resolved), or NULL if the type is not numeric.
FeatureConverter converter_for_type(Oid type);

// Whether a column type can feed a text input (text, varchar, char, name, domains over them).
bool is_text_type(Oid type);

// Whether a text column is blank-padded (char(n), or a domain over it): its trailing blanks are
// not part of the value, as PostgreSQL's char(n) -> text cast drops them.
bool is_blank_padded(Oid type);

// A text feature's value as the model sees it: its index in the input's vocabulary, or -1
// (an error naming the value and `column` when the model's encoder refuses unknown values).
// blank_padded: the value is a char(n)'s, whose trailing blanks are dropped first.
float encode_text_feature(const BoundModel* model, int feature, Datum value, const char* column, bool blank_padded);

// Text feature f of the row whose features are x: a dictionary's index into x[f], or, at the
// first slot of a scikit-learn vectorizer, its K projected values into x at its slots (nothing
// at a later slot: written with the first). NULL is NaN at every slot written: the row's
// prediction is NULL, as for any missing value a model has no rule for.
void read_text_feature(const BoundModel* model, int f, Datum value, bool isnull, const char* column,
                       bool blank_padded, float* x);
void read_text_feature(const BoundModel* model, int f, Datum value, bool isnull, const char* column,
                       bool blank_padded, double* x);
// Whether feature f is written by a vectorizer (not read by itself, a value a column).
bool is_vectorized_feature(const BoundModel* model, int f);

// A cascade's own projection (width values into out) of the vectorizer at first slot f on one
// text value, without the model's: NaN for a NULL. exec/cascade.cpp fills its small model's text
// inputs with it where the batch holds the text for later.
void read_text_projected(const BoundModel* model, int f, Datum value, bool isnull, bool blank_padded,
                         runtime::TextProjection* projection, int width, float* out);

// A text value's bytes as the vectorizers read them (UTF-8, a char(n)'s padding trimmed), copied
// into `context`: what create_cascade trains its text small model on.
std::string_view text_bytes_copy(Datum value, bool blank_padded, MemoryContext context);

// A feature the model never reads stands in a node's feature list as this marker: a NULL of
// type void, which no feature can have. Never a plain Const: a subquery's or view's constant
// column (`10 AS tenure`) or an array's constant element is a feature like any other, and
// taking it for an unread one scored the row with a different value (issue 46).
Node* make_unread_feature();
bool is_unread_feature(const Node* expr);

// Finds each feature's column in `tupdesc` by name (entry->columns), checking it exists and is
// numeric (text for a text feature); errors name the model, the column and `row_type`. Fills
// attnums (1-based).
void resolve_feature_columns(const CatalogEntry* entry, TupleDesc tupdesc, const char* row_type,
                             AttrNumber* attnums);

// Where each of a model's features sits in a row type, and how to convert it. Resolved once
// per row type; errors name the missing or ill-typed column.
struct RowReader {
    Oid type_id;
    int32 typmod;
    TupleDesc tupdesc;
    int num_features;
    AttrNumber* attnums;        // per feature, 1-based
    FeatureConverter* convert;  // per feature; NULL for a text feature
    bool* blank_padded;         // per feature: a char(n) column (is_blank_padded)
    Datum* values;              // tupdesc->natts: a row with NULLs is deformed into these once
    bool* nulls;
};

RowReader* make_row_reader(const BoundModel* model, Oid type_id, int32 typmod,
                           MemoryContext context);

// Fills x[0 .. num_features) from one row value. Feature: float or double.
template <typename Feature>
void read_row(const BoundModel* model, const RowReader* reader, HeapTupleHeader row, Feature* x);

// Fills x[0 .. num_features) from a one-dimensional numeric array with exactly that many
// elements. Feature: float or double.
template <typename Feature>
void read_array(const BoundModel* model, ArrayType* array, Feature* x);

// Refuses an infinite input with an ERROR naming the model and the feature: XGBoost's DMatrix
// and scikit-learn's check_array refuse ±Infinity, and rounding to float32 (a float32 batch)
// turns any value beyond ±3.4e38 into one. x: rows × features; NaN (a NULL) is the missing
// value and passes. One pass per batch, or per row on the per-row path.
template <typename Feature>
void check_finite(const BoundModel* model, const Feature* x, size_t rows, int features);

}  // namespace pg_predict::pg
