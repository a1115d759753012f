#include "pg_predict/monitoring/profile.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace pg_predict::monitoring {

namespace {

// splitmix64: a uniform double in (0, 1).
double uniform(uint64_t* state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Algorithm L's gap to the next value that enters a full reservoir.
int64_t skip(uint64_t* state, double w) {
    return (int64_t)std::floor(std::log(uniform(state)) / std::log1p(-w)) + 1;
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json numeric_document(const std::string& name, const NumericValues& c) {
    nlohmann::json d;
    d["name"] = name;
    d["kind"] = "numeric";
    d["rows"] = c.rows;
    d["nulls"] = c.nulls;
    d["non_finite"] = c.nans;
    d["values"] = c.values;
    d["min"] = c.values > 0 ? number(c.min) : nlohmann::json(nullptr);
    d["max"] = c.values > 0 ? number(c.max) : nlohmann::json(nullptr);
    d["mean"] = c.values > 0 ? number(c.mean) : nlohmann::json(nullptr);
    // the population standard deviation (numpy's std, ddof 0)
    d["stddev"] = c.values > 0 ? number(std::sqrt(c.m2 / (double)c.values)) : nlohmann::json(nullptr);
    std::vector<double> sorted = c.sample;
    std::sort(sorted.begin(), sorted.end());
    const int64_t n = (int64_t)sorted.size();
    d["sampled"] = c.values > n;
    std::vector<double> points;
    if (n <= kPoints) {
        points = sorted;
    } else {
        for (int64_t i = 0; i < kPoints; i++) {
            // ceil((i + 1) n / kPoints) - 1, in integers
            int64_t rank = ((i + 1) * n + kPoints - 1) / kPoints - 1;
            points.push_back(sorted[rank]);
        }
    }
    d["points"] = points;
    // Decile edges of the values, taken among the points (so that model_drift counts bins from
    // its per-point counts), without repeats (ties make fewer bins), and their shares.
    std::vector<double> edges;
    for (int k = 1; k < kBins && n > 0; k++) {
        double e = points[(size_t)(k * (int64_t)points.size() / kBins)];
        if (e > sorted.front() && (edges.empty() || e > edges.back())) edges.push_back(e);
    }
    std::vector<double> shares(edges.size() + 1, 0.0);
    for (size_t b = 0; b <= edges.size() && n > 0; b++) {
        auto lo = b == 0 ? sorted.begin() : std::lower_bound(sorted.begin(), sorted.end(), edges[b - 1]);
        auto hi = b == edges.size() ? sorted.end() : std::lower_bound(sorted.begin(), sorted.end(), edges[b]);
        shares[b] = (double)(hi - lo) / (double)n;
    }
    d["bins"] = {{"edges", edges}, {"shares", shares}};
    return d;
}

nlohmann::json categorical_document(const std::string& name, const CategoricalValues& c) {
    std::vector<std::pair<std::string, int64_t>> counts(c.counts.begin(), c.counts.end());
    std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    int64_t other = c.other;
    nlohmann::json categories = nlohmann::json::array();
    for (size_t i = 0; i < counts.size(); i++) {
        if (i < (size_t)kCategories)
            categories.push_back({counts[i].first, counts[i].second});
        else
            other += counts[i].second;
    }
    nlohmann::json d;
    d["name"] = name;
    d["kind"] = "categorical";
    d["rows"] = c.rows;
    d["nulls"] = c.nulls;
    d["categories"] = categories;
    d["other"] = other;
    d["distinct"] = (int64_t)counts.size();
    d["distinct_counted_fully"] = c.other == 0;
    return d;
}

}  // namespace

void NumericValues::add(double v) {
    rows++;
    if (!std::isfinite(v)) {
        nans++;
        return;
    }
    const int64_t index = values++;
    if (index == 0) {
        min = max = v;
    } else {
        min = std::min(min, v);
        max = std::max(max, v);
    }
    // Welford: one pass, no cancellation
    const double delta = v - mean;
    mean += delta / (double)values;
    m2 += delta * (v - mean);
    if (index < kSample) {
        sample.push_back(v);
        if (index == kSample - 1) {
            w = std::exp(std::log(uniform(&rng)) / kSample);
            next_pick = index + skip(&rng, w);
        }
        return;
    }
    if (index != next_pick) return;
    sample[(size_t)(uniform(&rng) * kSample) % kSample] = v;
    w *= std::exp(std::log(uniform(&rng)) / kSample);
    next_pick = index + skip(&rng, w);
}

void NumericValues::add_null() {
    rows++;
    nulls++;
}

void CategoricalValues::add(std::string_view v) {
    rows++;
    auto found = counts.find(std::string(v));
    if (found != counts.end())
        found->second++;
    else if ((int64_t)counts.size() < kCountedCategories)
        counts.emplace(std::string(v), 1);
    else
        other++;
}

void CategoricalValues::add_null() {
    rows++;
    nulls++;
}

Profiler::Profiler(std::vector<ColumnSpec> columns) : columns_(std::move(columns)) {
    for (const ColumnSpec& c : columns_) {
        if (c.kind == ColumnKind::Numeric) {
            index_.push_back((int)numeric_.size());
            numeric_.emplace_back();
        } else {
            index_.push_back((int)categorical_.size());
            categorical_.emplace_back();
        }
    }
}

void Profiler::add_numbers(int column, const double* values, const bool* nulls, int64_t n) {
    NumericValues& c = numeric_[index_[column]];
    for (int64_t i = 0; i < n; i++) nulls[i] ? c.add_null() : c.add(values[i]);
}

void Profiler::add_texts(int column, const std::string_view* values, const bool* nulls, int64_t n) {
    CategoricalValues& c = categorical_[index_[column]];
    for (int64_t i = 0; i < n; i++) nulls[i] ? c.add_null() : c.add(values[i]);
}

void Profiler::add_null(int column) {
    if (columns_[column].kind == ColumnKind::Numeric)
        numeric_[index_[column]].add_null();
    else
        categorical_[index_[column]].add_null();
}

std::string Profiler::document() const {
    nlohmann::json d;
    d["rows"] = rows_;
    nlohmann::json columns = nlohmann::json::array();
    for (size_t c = 0; c < columns_.size(); c++)
        columns.push_back(columns_[c].kind == ColumnKind::Numeric
                              ? numeric_document(columns_[c].name, numeric_[index_[c]])
                              : categorical_document(columns_[c].name, categorical_[index_[c]]));
    d["columns"] = columns;
    return d.dump();
}

}  // namespace pg_predict::monitoring
