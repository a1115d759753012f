// Bounds on what a model document may ask of the server. Every recursion over user input
// (importers, spec reading and validation, optimizer passes, compiler) is bounded by the
// nesting limits, and everything sized from a declared number (not from data that is really
// in the document) by the shape limits, so a small hostile document can neither overflow the
// stack nor make a query allocate gigabytes. docs/semantics.md "Limits" lists them for users.
#pragma once

#include <cstdint>
#include <string_view>

namespace pg_predict::spec {

// JSON nesting of a model document or a stored spec, in levels of objects and arrays.
constexpr int kMaxJsonDepth = 256;
// Steps nested inside a concat's parts (ColumnTransformer / FeatureUnion inside one another).
// The spec of 32 levels is about 4 x 32 JSON levels deep, so every stored spec reads back
// under kMaxJsonDepth.
constexpr int kMaxStepNesting = 32;
// Composites (Pipeline, ColumnTransformer, FeatureUnion) nested in a scikit-learn document.
constexpr int kMaxCompositeNesting = 64;

// Input columns of a model (the batch width) and the width of any step's output.
constexpr int64_t kMaxFeatures = 1 << 16;
constexpr int64_t kMaxStepWidth = 1 << 20;
// Output groups (margins) and class labels.
constexpr int64_t kMaxGroups = 1 << 16;
// All text class labels of one model together (a catalog row keeps them next to the program).
constexpr size_t kMaxClassLabelBytes = 1 << 20;
// Trees of an ensemble, nodes of one tree, nodes of all trees together.
constexpr int64_t kMaxTrees = 1 << 20;
constexpr int64_t kMaxTreeNodes = 1 << 24;
constexpr int64_t kMaxTotalNodes = 1 << 28;
// The training rows a nearest-neighbours model keeps in its program: rows × columns of its
// points (32 MiB of float64).
constexpr int64_t kMaxNeighborsValues = 1 << 22;

// Throws Error(InvalidModel) when `text` nests objects/arrays deeper than kMaxJsonDepth,
// naming the path where it does ("model document nests deeper than 256 levels at
// $.steps[0].steps[0]..."). Scans without recursion and without parsing: run it before a
// parser or any recursive reader sees the text. Malformed JSON is left to the parser.
void check_json_depth(std::string_view text, const char* what);

}  // namespace pg_predict::spec
