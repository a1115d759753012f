// A profile of a model's inputs and output: what the rows a version learned from (or any rows)
// looked like, in bounded memory, in one pass. profile_model() stores one with a version;
// model_drift() compares rows against it (monitoring/drift.hpp).
//
// The document (JSON text, docs/monitoring.md):
//   {"rows": N, "columns": [{"name", "kind": "numeric"|"categorical", "rows", "nulls", ...}]}
// numeric: "nans", "min", "max", "mean", "stddev", "points" (at most kPoints order statistics,
//   sorted: every value when there are at most kPoints, else the values at ranks
//   ceil((i + 1) n / kPoints), so the points' distribution function is within 1 / kPoints of the
//   values'), "sampled" (more than kSample values: points and bins come from a uniform sample),
//   "bins": {"edges": [...], "shares": [...]} (deciles of the values, among the points: the
//   points at k/10 of their count; shares of the values in (-inf, e1), [e1, e2), ..., [ek, inf)).
// categorical: "categories": [[value, count], ...] (the kCategories most frequent, most frequent
//   first), "other" (rows in the categories beyond those), "distinct".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pg_predict::monitoring {

enum class ColumnKind { Numeric, Categorical };

struct ColumnSpec {
    std::string name;
    ColumnKind kind;
};

constexpr int kPoints = 1000;       // order statistics a numeric column keeps
constexpr int kSample = 20000;      // values kept to compute them (exact up to this many)
constexpr int kBins = 10;           // decile bins for the binned statistics
constexpr int kCategories = 1000;   // categories a categorical column keeps
constexpr int kCountedCategories = 100000;  // distinct values counted in one pass before "other"

// One numeric column's values: moments exactly, and a uniform sample (reservoir, algorithm L,
// seeded so that the same rows give the same profile).
struct NumericValues {
    int64_t rows = 0, nulls = 0, nans = 0, values = 0;
    double min = 0, max = 0, mean = 0, m2 = 0;
    std::vector<double> sample;
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    double w = 0;           // algorithm L's running weight
    int64_t next_pick = 0;  // index of the next value that enters the sample
    void add(double v);
    void add_null();
};

// One categorical column's values: counts per value (the first kCountedCategories distinct
// values; later new ones count in `other`).
struct CategoricalValues {
    int64_t rows = 0, nulls = 0, other = 0;
    std::unordered_map<std::string, int64_t> counts;
    void add(std::string_view v);
    void add_null();
};

class Profiler {
public:
    explicit Profiler(std::vector<ColumnSpec> columns);
    void add_number(int column, double v) { numeric_[index_[column]].add(v); }
    void add_text(int column, std::string_view v) { categorical_[index_[column]].add(v); }
    void add_null(int column);
    void end_row() { rows_++; }
    // A column's values of n rows at once (nulls[i]: row i is NULL there), then end_rows(n).
    void add_numbers(int column, const double* values, const bool* nulls, int64_t n);
    void add_texts(int column, const std::string_view* values, const bool* nulls, int64_t n);
    void end_rows(int64_t n) { rows_ += n; }
    int64_t rows() const { return rows_; }
    std::string document() const;  // the profile (JSON text)

private:
    std::vector<ColumnSpec> columns_;
    std::vector<int> index_;  // column -> its place in numeric_ or categorical_
    std::vector<NumericValues> numeric_;
    std::vector<CategoricalValues> categorical_;
    int64_t rows_ = 0;
};

}  // namespace pg_predict::monitoring
