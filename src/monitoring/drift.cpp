#include "pg_predict/monitoring/drift.hpp"

#include "pg_predict/common/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace pg_predict::monitoring {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] void bad_option(const std::string& message) {
    fail(ErrorCategory::InvalidParameter, "model_drift(): " + message);
}

// The thresholds' defaults (docs/monitoring.md): PSI above 0.2 is the usual "significant shift";
// BigQuery's drift checks use 0.3 for the L-infinity distance of categories.
const std::map<std::string, double>& default_thresholds() {
    static const std::map<std::string, double> t = {{"psi", 0.2},       {"jensen_shannon", 0.1}, {"ks", 0.1},
                                                    {"linf", 0.3},      {"null_share", 0.1},     {"new_categories", 0.01}};
    return t;
}

const char* kind_name(ColumnKind kind) { return kind == ColumnKind::Numeric ? "numeric" : "categorical"; }

double share(int64_t part, int64_t whole) { return whole > 0 ? (double)part / (double)whole : 0.0; }

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

double json_number(const nlohmann::json& v) { return v.is_number() ? v.get<double>() : kNaN; }

}  // namespace

const std::vector<std::string>& drift_statistics() {
    static const std::vector<std::string> s = {"psi", "jensen_shannon", "ks", "linf"};
    return s;
}

double population_stability_index(const std::vector<double>& baseline, const std::vector<double>& current) {
    double psi = 0;
    for (size_t i = 0; i < baseline.size(); i++) {
        const double b = std::max(baseline[i], kPsiFloor), c = std::max(current[i], kPsiFloor);
        psi += (c - b) * std::log(c / b);
    }
    return psi;
}

double jensen_shannon_distance(const std::vector<double>& baseline, const std::vector<double>& current) {
    double divergence = 0;
    for (size_t i = 0; i < baseline.size(); i++) {
        const double p = baseline[i], q = current[i], m = (p + q) / 2;
        if (p > 0) divergence += p * std::log2(p / m) / 2;
        if (q > 0) divergence += q * std::log2(q / m) / 2;
    }
    return std::sqrt(std::max(divergence, 0.0));
}

double l_infinity(const std::vector<double>& baseline, const std::vector<double>& current) {
    double d = 0;
    for (size_t i = 0; i < baseline.size(); i++) d = std::max(d, std::fabs(baseline[i] - current[i]));
    return d;
}

// One column: the baseline's summary, the current rows' counters, what to report.
struct DriftCheck::Column {
    ColumnSpec spec;
    std::string statistic;
    std::map<std::string, double> thresholds;
    int64_t baseline_rows = 0, baseline_nulls = 0;
    int64_t rows = 0, nulls = 0;
    // numeric
    std::vector<double> points;  // the baseline's, distinct, with their distribution function
    std::vector<double> points_cdf;
    std::vector<int64_t> at, between;  // current values equal to points[j]; in (points[j-1], points[j])
    std::vector<double> edges, baseline_shares;
    std::vector<int64_t> bin_counts;  // only when an edge is not among the points (counted per value)
    std::vector<int64_t> edge_point;  // else each edge's index in points: bins come from at/between
    // A grid over [points.front(), points.back()]: grid[g] is the first point at or above the
    // cell's low end, so a value is placed by one multiply and a short scan, not a binary search.
    std::vector<uint32_t> grid;
    double grid_low = 0, grid_scale = 0;
    int64_t values = 0, non_finite = 0;
    double sum = 0, baseline_mean = kNaN;
    // categorical
    std::unordered_map<std::string, int64_t> baseline_counts;
    int64_t baseline_other = 0;
    CategoricalValues current;  // its `other`: distinct values beyond kCountedCategories

    void add_number(double v) {
        rows++;
        if (!std::isfinite(v)) {
            non_finite++;
            return;
        }
        values++;
        sum += v;
        const size_t j = first_point_at_or_above(v);
        if (j < points.size() && points[j] == v)
            at[j]++;
        else
            between[j]++;
        if (!bin_counts.empty()) bin_counts[std::upper_bound(edges.begin(), edges.end(), v) - edges.begin()]++;
    }

    size_t cell_of(double v) const { return std::min((size_t)((v - grid_low) * grid_scale), grid.size() - 1); }

    size_t first_point_at_or_above(double v) const {
        if (points.empty() || v <= points.front()) return 0;
        if (v > points.back()) return points.size();
        if (grid.empty()) return std::lower_bound(points.begin(), points.end(), v) - points.begin();
        size_t j = grid[cell_of(v)];
        while (points[j] < v) j++;  // points.back() >= v stops it
        return j;
    }

    // grid[g]: the first point whose cell is g or later. The cell of a value never decreases as
    // the value grows, so every point in an earlier cell is below any value of cell g.
    void build_grid() {
        if (points.size() < 2) return;
        grid_low = points.front();
        grid_scale = (double)(4 * points.size()) / (points.back() - points.front());
        if (!std::isfinite(grid_scale) || grid_scale <= 0) return;  // binary search then
        grid.assign(4 * points.size(), 0);
        size_t j = 0;
        for (size_t g = 0; g < grid.size(); g++) {
            while (j + 1 < points.size() && cell_of(points[j]) < g) j++;
            grid[g] = (uint32_t)j;
        }
    }

    // Counts of the current values per bin, from the per-point counts when the edges are points.
    std::vector<int64_t> bins() const {
        if (!bin_counts.empty() || edges.empty()) {
            if (!bin_counts.empty()) return bin_counts;
            return {values};
        }
        std::vector<int64_t> below(points.size() + 1, 0);  // values below points[j]
        int64_t running = 0;
        for (size_t j = 0; j < points.size(); j++) {
            running += between[j];
            below[j] = running;
            running += at[j];
        }
        std::vector<int64_t> out;
        int64_t previous = 0;
        for (int64_t p : edge_point) {
            out.push_back(below[p] - previous);
            previous = below[p];
        }
        out.push_back(values - previous);
        return out;
    }

    void add_text(std::string_view v) {
        rows++;
        current.add(v);
    }

    DriftRow result() const;
};

namespace {

// What one column reports: its statistic and its thresholds ("__main": the statistic's own).
struct ColumnSettings {
    std::string statistic;
    std::map<std::string, double> thresholds;
};

void check_statistic(const std::string& s, ColumnKind kind, const std::string& where) {
    const auto& all = drift_statistics();
    if (std::find(all.begin(), all.end(), s) == all.end())
        bad_option("unknown statistic \"" + s + "\" in " + where + " (known: psi, jensen_shannon, ks, linf)");
    if (s == "ks" && kind == ColumnKind::Categorical)
        bad_option("statistic \"ks\" in " + where + " is for numeric columns");
}

double threshold_value(const nlohmann::json& v, const std::string& where) {
    if (!v.is_number() || !(v.get<double>() >= 0)) bad_option(where + " must be a number >= 0");
    return v.get<double>();
}

// model_drift's options for these columns, one setting per column (docs/monitoring.md).
std::vector<ColumnSettings> parse_options(const std::string& options_text, const std::vector<ColumnSpec>& specs) {
    nlohmann::json options = options_text.empty() ? nlohmann::json::object() : nlohmann::json::parse(options_text);
    if (!options.is_object()) bad_option("options must be a JSON object");
    std::string numeric_statistic = "psi", categorical_statistic = "psi";
    std::map<std::string, double> thresholds = default_thresholds();
    nlohmann::json per_feature = nlohmann::json::object();
    for (auto& [key, value] : options.items()) {
        if (key == "numeric_statistic" || key == "categorical_statistic") {
            if (!value.is_string()) bad_option(key + " must be a string");
            check_statistic(value.get<std::string>(),
                            key == "numeric_statistic" ? ColumnKind::Numeric : ColumnKind::Categorical, key);
            (key == "numeric_statistic" ? numeric_statistic : categorical_statistic) = value.get<std::string>();
        } else if (key == "thresholds") {
            if (!value.is_object()) bad_option("thresholds must be a JSON object");
            for (auto& [name, t] : value.items()) {
                if (!default_thresholds().count(name))
                    bad_option("unknown threshold \"" + name +
                               "\" (known: psi, jensen_shannon, ks, linf, null_share, new_categories)");
                thresholds[name] = threshold_value(t, "thresholds." + name);
            }
        } else if (key == "output") {  // read by model_drift() itself: whether to score the output
            if (!value.is_boolean()) bad_option("output must be true or false");
        } else if (key == "features") {
            if (!value.is_object()) bad_option("features must be a JSON object");
            per_feature = value;
        } else {
            bad_option("unknown option \"" + key +
                       "\" (known: numeric_statistic, categorical_statistic, thresholds, features, output)");
        }
    }
    for (auto& [name, settings] : per_feature.items()) {
        bool found = false;
        for (const ColumnSpec& s : specs) found = found || s.name == name;
        if (!found) bad_option("features names \"" + name + "\", which the model does not read");
        if (!settings.is_object()) bad_option("features." + name + " must be a JSON object");
    }
    std::vector<ColumnSettings> out;
    for (const ColumnSpec& spec : specs) {
        ColumnSettings c{spec.kind == ColumnKind::Numeric ? numeric_statistic : categorical_statistic, thresholds};
        if (per_feature.contains(spec.name)) {
            for (auto& [key, value] : per_feature[spec.name].items()) {
                const std::string where = "features." + spec.name + "." + key;
                if (key == "statistic") {
                    if (!value.is_string()) bad_option(where + " must be a string");
                    check_statistic(value.get<std::string>(), spec.kind, where);
                    c.statistic = value.get<std::string>();
                } else if (key == "threshold") {
                    c.thresholds["__main"] = threshold_value(value, where);
                } else if (key == "null_share" || key == "new_categories") {
                    c.thresholds[key] = threshold_value(value, where);
                } else {
                    bad_option("unknown key \"" + key + "\" in features." + spec.name +
                               " (known: statistic, threshold, null_share, new_categories)");
                }
            }
        }
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace

void check_drift_options(const std::string& options, const std::vector<ColumnSpec>& columns) {
    parse_options(options, columns);
}

DriftCheck::DriftCheck(const std::string& baseline_text, std::vector<ColumnSpec> specs, const std::string& options_text) {
    const std::vector<ColumnSettings> settings = parse_options(options_text, specs);
    nlohmann::json baseline = nlohmann::json::parse(baseline_text);
    std::unordered_map<std::string, const nlohmann::json*> by_name;
    if (!baseline.contains("columns") || !baseline["columns"].is_array())
        bad_option("the baseline profile has no columns");
    for (const nlohmann::json& c : baseline["columns"]) by_name[c.value("name", "")] = &c;

    try {
        for (size_t i = 0; i < specs.size(); i++) {
            const ColumnSpec& spec = specs[i];
            auto found = by_name.find(spec.name);
            if (found == by_name.end()) bad_option("the baseline has no column \"" + spec.name + "\"");
            const nlohmann::json& b = *found->second;
            if (b.value("kind", "") != kind_name(spec.kind))
                bad_option("column \"" + spec.name + "\" is " + kind_name(spec.kind) + " here but " +
                           b.value("kind", "?") + " in the baseline");
            Column* c = new Column();
            columns_.push_back(c);
            c->spec = spec;
            c->statistic = settings[i].statistic;
            c->thresholds = settings[i].thresholds;
            c->baseline_rows = b.value("rows", (int64_t)0);
            c->baseline_nulls = b.value("nulls", (int64_t)0);
            if (spec.kind == ColumnKind::Numeric) {
                std::vector<double> points = b.at("points").get<std::vector<double>>();
                const double m = (double)points.size();
                for (size_t i = 0; i < points.size(); i++) {
                    if (!c->points.empty() && c->points.back() == points[i]) {
                        c->points_cdf.back() = (double)(i + 1) / m;
                        continue;
                    }
                    c->points.push_back(points[i]);
                    c->points_cdf.push_back((double)(i + 1) / m);
                }
                c->at.assign(c->points.size(), 0);
                c->between.assign(c->points.size() + 1, 0);
                c->edges = b.at("bins").at("edges").get<std::vector<double>>();
                c->baseline_shares = b.at("bins").at("shares").get<std::vector<double>>();
                for (double e : c->edges) {
                    auto at = std::lower_bound(c->points.begin(), c->points.end(), e);
                    if (at == c->points.end() || *at != e) {
                        c->bin_counts.assign(c->edges.size() + 1, 0);
                        break;
                    }
                    c->edge_point.push_back(at - c->points.begin());
                }
                c->build_grid();
                c->baseline_mean = json_number(b.value("mean", nlohmann::json(nullptr)));
            } else {
                for (const nlohmann::json& pair : b.at("categories"))
                    c->baseline_counts[pair.at(0).get<std::string>()] = pair.at(1).get<int64_t>();
                c->baseline_other = b.value("other", (int64_t)0);
            }
        }
    } catch (...) {
        for (Column* c : columns_) delete c;
        columns_.clear();
        throw;
    }
}

DriftCheck::~DriftCheck() {
    for (Column* c : columns_) delete c;
}

void DriftCheck::add_number(int column, double v) { columns_[column]->add_number(v); }
void DriftCheck::add_text(int column, std::string_view v) { columns_[column]->add_text(v); }
void DriftCheck::add_numbers(int column, const double* values, const bool* nulls, int64_t n) {
    Column* c = columns_[column];
    for (int64_t i = 0; i < n; i++) {
        if (nulls[i]) {
            c->rows++;
            c->nulls++;
        } else {
            c->add_number(values[i]);
        }
    }
}

void DriftCheck::add_texts(int column, const std::string_view* values, const bool* nulls, int64_t n) {
    Column* c = columns_[column];
    for (int64_t i = 0; i < n; i++) {
        if (nulls[i]) {
            c->rows++;
            c->nulls++;
        } else {
            c->add_text(values[i]);
        }
    }
}

void DriftCheck::add_null(int column) {
    columns_[column]->rows++;
    columns_[column]->nulls++;
}

DriftRow DriftCheck::Column::result() const {
    nlohmann::json detail;
    std::map<std::string, double> stats;
    detail["rows"] = rows;
    detail["baseline_rows"] = baseline_rows;
    const double null_share = share(nulls, rows), baseline_null_share = share(baseline_nulls, baseline_rows);
    detail["null_share"] = null_share;
    detail["baseline_null_share"] = baseline_null_share;
    const double null_change = rows > 0 && baseline_rows > 0 ? null_share - baseline_null_share : kNaN;
    detail["null_share_change"] = number_or_null(null_change);
    double new_share = 0;
    if (spec.kind == ColumnKind::Numeric) {
        detail["non_finite"] = non_finite;
        detail["mean"] = number_or_null(values > 0 ? sum / (double)values : kNaN);
        detail["baseline_mean"] = number_or_null(baseline_mean);
        const std::vector<int64_t> counts = bins();
        std::vector<double> shares(counts.size());
        for (size_t i = 0; i < counts.size(); i++) shares[i] = share(counts[i], values);
        const bool comparable = values > 0 && !points.empty();
        stats["psi"] = comparable ? population_stability_index(baseline_shares, shares) : kNaN;
        stats["jensen_shannon"] = comparable ? jensen_shannon_distance(baseline_shares, shares) : kNaN;
        stats["linf"] = comparable ? l_infinity(baseline_shares, shares) : kNaN;
        // Two-sample KS against the points: the baseline's distribution is constant between
        // points, the current one's rises, so the largest gap is at a point or just below one.
        double ks = 0, below_total = 0;
        for (size_t j = 0; j < points.size(); j++) {
            const double below = below_total + (double)between[j];  // current values < points[j]
            ks = std::max(ks, std::fabs(below / (double)values - (j == 0 ? 0.0 : points_cdf[j - 1])));
            below_total = below + (double)at[j];
            ks = std::max(ks, std::fabs(below_total / (double)values - points_cdf[j]));
        }
        stats["ks"] = comparable ? ks : kNaN;
        detail["bins"] = {{"edges", edges}, {"baseline_shares", baseline_shares}, {"shares", shares}};
    } else {
        // Bins: the baseline's categories, its "other" (categories beyond those it kept), then
        // each category it never saw. With an "other", an unseen value may be one of those.
        const auto& counts = current.counts;
        std::vector<double> baseline, shares;
        int64_t baseline_total = 0, total = 0, in_other = current.other, unseen_rows = 0;
        for (const auto& [name, count] : baseline_counts) baseline_total += count;
        baseline_total += baseline_other;
        for (const auto& [name, count] : counts) total += count;
        total += current.other;
        std::vector<std::pair<std::string, int64_t>> unseen;
        for (const auto& [name, count] : baseline_counts) {
            auto found = counts.find(name);
            baseline.push_back(share(count, baseline_total));
            shares.push_back(share(found == counts.end() ? 0 : found->second, total));
        }
        for (const auto& [name, count] : counts)
            if (!baseline_counts.count(name)) {
                if (baseline_other > 0)
                    in_other += count;
                else
                    unseen.emplace_back(name, count);
            }
        if (baseline_other > 0 || in_other > 0) {
            baseline.push_back(share(baseline_other, baseline_total));
            shares.push_back(share(in_other, total));
        }
        std::sort(unseen.begin(), unseen.end(), [](const auto& a, const auto& b) {
            return a.second != b.second ? a.second > b.second : a.first < b.first;
        });
        nlohmann::json listed = nlohmann::json::array();
        for (const auto& [name, count] : unseen) {
            baseline.push_back(0.0);
            shares.push_back(share(count, total));
            unseen_rows += count;
            if (listed.size() < 10) listed.push_back(name);
        }
        new_share = share(unseen_rows, total);
        detail["new_categories"] = listed;
        detail["new_category_count"] = (int64_t)unseen.size();
        detail["new_category_share"] = new_share;
        detail["new_categories_known"] = baseline_other == 0;
        const bool comparable = total > 0 && baseline_total > 0;
        stats["psi"] = comparable ? population_stability_index(baseline, shares) : kNaN;
        stats["jensen_shannon"] = comparable ? jensen_shannon_distance(baseline, shares) : kNaN;
        stats["linf"] = comparable ? l_infinity(baseline, shares) : kNaN;
    }
    for (const auto& [name, value] : stats) detail[name] = number_or_null(value);

    DriftRow row;
    row.feature = spec.name;
    row.kind = kind_name(spec.kind);
    row.statistic = statistic;
    row.value = stats.at(statistic);
    auto main = thresholds.find("__main");
    row.threshold = main != thresholds.end() ? main->second : thresholds.at(statistic);
    nlohmann::json flagged = nlohmann::json::array();
    if (std::isfinite(row.value) && row.value > row.threshold) flagged.push_back(statistic);
    if (std::isfinite(null_change) && std::fabs(null_change) > thresholds.at("null_share")) flagged.push_back("null_share");
    if (spec.kind == ColumnKind::Categorical && new_share > thresholds.at("new_categories"))
        flagged.push_back("new_categories");
    row.anomaly = !flagged.empty();
    detail["thresholds"] = {{statistic, row.threshold},
                            {"null_share", thresholds.at("null_share")}};
    if (spec.kind == ColumnKind::Categorical) detail["thresholds"]["new_categories"] = thresholds.at("new_categories");
    detail["flagged_by"] = flagged;
    row.detail = detail.dump();
    return row;
}

std::vector<DriftRow> DriftCheck::results() const {
    std::vector<DriftRow> rows;
    for (const Column* c : columns_) rows.push_back(c->result());
    return rows;
}

}  // namespace pg_predict::monitoring
