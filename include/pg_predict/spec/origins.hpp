// Which input column each column a pipeline's steps produce derives from: what lets
// predict_contributions credit a featurized column (an imputed value, a one-hot indicator, a
// LightGBM rank or category-set column) to the input the user gave.
#pragma once

#include <cstdint>
#include <vector>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::spec {

// An origin is an input column index (>= 0), or one of these.
constexpr int32_t kMixedOrigin = -1;     // the column reads several inputs (PCA, polynomials, ...)
constexpr int32_t kConstantOrigin = -2;  // the column reads no input (a projection's zero row)

// One origin per column the pipeline's steps give the estimator (model.num_features of them;
// with no steps, input i is column i). Column-wise steps (scalers, imputers, encoders,
// bucketize, ...) keep each column's origin, one_hot gives its indicators their column's,
// a projection row reading the columns of one input keeps that input, and a concat joins its
// parts'; every other step mixes.
std::vector<int32_t> column_origins(const Pipeline&);

}  // namespace pg_predict::spec
