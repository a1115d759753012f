// Rows against a profile (monitoring/profile.hpp): per column, in one pass and bounded memory,
// the population stability index and Jensen-Shannon distance over the baseline's bins (deciles
// for numbers, categories for text), the two-sample Kolmogorov-Smirnov statistic for numbers
// (exact against the profile's points: the baseline's distribution within 1 / kPoints), the
// largest change of a category's share (L-infinity), the change in NULL share and the share of
// rows in categories the baseline never saw. model_drift() reports one statistic per column,
// chosen by kind or per column in its options, against a threshold (docs/monitoring.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pg_predict/monitoring/profile.hpp"

namespace pg_predict::monitoring {

// The statistics over shares (each list sums to 1, or is all zero). PSI floors a zero share at
// kPsiFloor on both sides; the Jensen-Shannon distance is base 2, in [0, 1] (scipy's
// jensenshannon(p, q, base=2)).
constexpr double kPsiFloor = 1e-4;
double population_stability_index(const std::vector<double>& baseline, const std::vector<double>& current);
double jensen_shannon_distance(const std::vector<double>& baseline, const std::vector<double>& current);
double l_infinity(const std::vector<double>& baseline, const std::vector<double>& current);

struct DriftRow {
    std::string feature;
    std::string kind;       // numeric, categorical
    std::string statistic;  // the one reported: psi, jensen_shannon, ks, linf
    double value;
    double threshold;
    bool anomaly;
    std::string detail;  // JSON text: every statistic, the thresholds, what flagged it
};

class DriftCheck {
public:
    // `baseline`: a profile document; `columns`: the rows' columns, each in the baseline by name
    // and kind; `options`: model_drift's options (JSON text). Throws std::invalid_argument
    // naming what is wrong.
    DriftCheck(const std::string& baseline, std::vector<ColumnSpec> columns, const std::string& options);
    ~DriftCheck();
    DriftCheck(const DriftCheck&) = delete;
    DriftCheck& operator=(const DriftCheck&) = delete;

    void add_number(int column, double v);
    void add_text(int column, std::string_view v);
    void add_null(int column);
    void end_row() { rows_++; }
    // A column's values of n rows at once (nulls[i]: row i is NULL there), then end_rows(n).
    void add_numbers(int column, const double* values, const bool* nulls, int64_t n);
    void add_texts(int column, const std::string_view* values, const bool* nulls, int64_t n);
    void end_rows(int64_t n) { rows_ += n; }

    std::vector<DriftRow> results() const;

    struct Column;

private:
    std::vector<Column*> columns_;
    int64_t rows_ = 0;
};

// Checks model_drift's options for these columns, as DriftCheck would, before any row is read.
void check_drift_options(const std::string& options, const std::vector<ColumnSpec>& columns);

// The option keys and statistics model_drift knows, for its documentation and errors.
const std::vector<std::string>& drift_statistics();

}  // namespace pg_predict::monitoring
