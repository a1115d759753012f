// The rows train() reads: kept per split as they arrive, text as first-seen codes; once all
// are read, the text columns' categories are sorted and each split is expanded into the
// model's input vector (one-hot columns in place of a text column).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "trainer_internal.hpp"

namespace pg_predict::training {

namespace {

// More categories than this in one text column is almost surely an identifier, not a category.
constexpr size_t kMaxCategories = 10000;

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

// rank[code]: the position of the category first seen as `code` among the sorted ones.
std::vector<int32_t> sorted_ranks(const Categories& c) {
    std::vector<int32_t> order(c.values.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return c.values[a] < c.values[b]; });
    std::vector<int32_t> rank(order.size());
    for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = static_cast<int32_t>(i);
    return rank;
}

std::vector<std::string> sorted_values(const Categories& c) {
    std::vector<std::string> v = c.values;
    std::sort(v.begin(), v.end());
    return v;
}

template <typename T>
void append_row(std::vector<T>& x, const std::vector<double>& row) {
    for (double v : row) x.push_back(static_cast<T>(v));
}

}  // namespace

int32_t Categories::add(const char* text, size_t length, const std::string& column) {
    auto [it, added] = code.try_emplace(std::string(text, length), static_cast<int32_t>(values.size()));
    if (added) {
        if (values.size() >= kMaxCategories)
            invalid("text column \"" + column + "\" has more than " + std::to_string(kMaxCategories) +
                    " distinct values; train() one-hot encodes text columns: leave identifiers out of the query");
        values.push_back(it->first);
    }
    return it->second;
}

bool is_test_row(int64_t seed, int64_t row, double test_size) {
    const uint64_t h = splitmix64(splitmix64(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(row));
    return static_cast<double>(h >> 11) * 0x1.0p-53 < test_size;
}

Dataset* new_dataset(const Request& request, std::vector<Column> features) {
    if (!(request.test_size >= 0.0 && request.test_size < 1.0)) invalid("test_size must be at least 0 and below 1");
    auto d = std::make_unique<Dataset>();
    d->request = request;
    d->algorithm = parse_algorithm(request.algorithm);
    d->hyperparams = check_hyperparams(d->algorithm, request.hyperparams_json);
    d->task = choose_task(d->algorithm, d->hyperparams, request);
    if (features.empty())
        invalid("the query has no feature column: none besides the target \"" + request.target + "\" and those excluded");
    if (static_cast<int64_t>(features.size()) > 65536) invalid("the query has more than 65536 feature columns");
    d->features = std::move(features);
    d->categories.resize(d->features.size());
    return d.release();
}

void free_dataset(Dataset* d) noexcept { delete d; }

int64_t row_count(const Dataset* d) { return d->rows; }

const char* task_name(const Dataset* d) { return d->task == Task::Classification ? "classification" : "regression"; }

void add_row(Dataset* d, const Cell* cells, const Cell& target) {
    thread_local std::vector<double> row;
    row.clear();
    for (size_t f = 0; f < d->features.size(); ++f) {
        const Cell& c = cells[f];
        if (d->features[f].kind != ColumnKind::Text) {
            if (std::isinf(c.number))
                invalid("column \"" + d->features[f].name + "\" holds an infinite value in row " +
                        std::to_string(d->rows + 1) + ": train() needs finite numbers (NULL for a missing one)");
            row.push_back(c.number);
        }
        else if (c.text == nullptr) row.push_back(NAN);
        else row.push_back(d->categories[f].add(c.text, c.length, d->features[f].name));
    }
    double y;
    switch (d->request.target_kind) {
        case ColumnKind::Text: y = d->target_categories.add(target.text, target.length, d->request.target); break;
        case ColumnKind::Boolean: y = target.number; break;
        case ColumnKind::Number:
            y = target.number;
            if (!std::isfinite(y))
                invalid("target column \"" + d->request.target + "\" holds " + (std::isnan(y) ? "NaN" : "an infinite value") +
                        " in row " + std::to_string(d->rows + 1));
            break;
    }
    Rows& split = is_test_row(d->request.seed, d->rows, d->request.test_size) ? d->test : d->train;
    if (d->algorithm == Algorithm::XGBoost) append_row(split.x32, row);
    else append_row(split.x64, row);
    split.y.push_back(y);
    ++split.count;
    ++d->rows;
}

int64_t expanded_width(const Dataset& d) {
    int64_t width = 0;
    for (size_t f = 0; f < d.features.size(); ++f)
        width += d.features[f].kind == ColumnKind::Text ? static_cast<int64_t>(d.categories[f].values.size()) : 1;
    return width;
}

Matrix expand(const Dataset& d, const Rows& rows, bool float64) {
    Matrix m;
    m.rows = rows.count;
    m.cols = expanded_width(d);
    const size_t in = d.features.size();
    bool any_text = false;
    for (const Column& c : d.features) any_text = any_text || c.kind == ColumnKind::Text;
    // Without text columns the rows are the matrix: the caller moves them (no copy).
    if (!any_text) return m;
    std::vector<std::vector<int32_t>> ranks(in);
    std::vector<int64_t> offset(in);
    int64_t at = 0;
    for (size_t f = 0; f < in; ++f) {
        offset[f] = at;
        if (d.features[f].kind == ColumnKind::Text) {
            ranks[f] = sorted_ranks(d.categories[f]);
            at += static_cast<int64_t>(ranks[f].size());
        } else {
            ++at;
        }
    }
    const auto fill = [&](auto& out, const auto& x) {
        out.assign(static_cast<size_t>(m.rows * m.cols), 0);
        for (int64_t r = 0; r < m.rows; ++r) {
            auto* dst = out.data() + r * m.cols;
            const auto* src = x.data() + r * in;
            for (size_t f = 0; f < in; ++f) {
                if (d.features[f].kind != ColumnKind::Text) dst[offset[f]] = src[f];
                else if (!std::isnan(src[f])) dst[offset[f] + ranks[f][static_cast<int32_t>(src[f])]] = 1;
            }
        }
    };
    if (float64) fill(m.x64, rows.x64);
    else fill(m.x32, rows.x32);
    return m;
}

Labels make_labels(Dataset& d) {
    Labels l;
    if (d.task == Task::Regression) {
        l.train.assign(d.train.y.begin(), d.train.y.end());
        l.test.assign(d.test.y.begin(), d.test.y.end());
        l.classes = nullptr;
        return l;
    }
    // The class of each code or value, in the classes' sorted order.
    std::vector<double> distinct;
    std::vector<int32_t> rank;
    if (d.request.target_kind == ColumnKind::Text) {
        rank = sorted_ranks(d.target_categories);
        l.classes = sorted_values(d.target_categories);
        l.num_classes = static_cast<int>(rank.size());
    } else {
        for (const Rows* s : {&d.train, &d.test}) distinct.insert(distinct.end(), s->y.begin(), s->y.end());
        std::sort(distinct.begin(), distinct.end());
        distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
        if (distinct.size() > 1000)
            invalid("target column \"" + d.request.target + "\" has " + std::to_string(distinct.size()) +
                    " distinct values: too many classes for a classifier (a regression objective?)");
        l.classes = nlohmann::json::array();
        for (double v : distinct) {
            if (d.request.target_kind == ColumnKind::Boolean) l.classes.push_back(v != 0);
            else l.classes.push_back(v);
        }
        l.num_classes = static_cast<int>(distinct.size());
    }
    if (l.num_classes < 2)
        invalid("target column \"" + d.request.target + "\" has a single value: a classifier needs at least two classes");
    const auto index = [&](double y) -> float {
        if (!rank.empty()) return static_cast<float>(rank[static_cast<int32_t>(y)]);
        return static_cast<float>(std::lower_bound(distinct.begin(), distinct.end(), y) - distinct.begin());
    };
    for (double y : d.train.y) l.train.push_back(index(y));
    for (double y : d.test.y) l.test.push_back(index(y));
    return l;
}

nlohmann::json encoder_step(const Dataset& d) {
    using nlohmann::json;
    json parts = json::array();
    json passthrough = json::array();
    const auto flush = [&] {
        if (!passthrough.empty()) parts.push_back({{"columns", passthrough}, {"steps", json::array()}});
        passthrough = json::array();
    };
    bool any_text = false;
    for (size_t f = 0; f < d.features.size(); ++f) {
        if (d.features[f].kind != ColumnKind::Text) {
            passthrough.push_back(f);
            continue;
        }
        any_text = true;
        flush();
        json encoder = {{"type", "OneHotEncoder"},
                        {"categories", json::array({sorted_values(d.categories[f])})},
                        {"handle_unknown", "ignore"},
                        {"drop_idx", nullptr}};
        parts.push_back({{"columns", json::array({f})}, {"steps", json::array({encoder})}});
    }
    flush();
    if (!any_text) return nullptr;
    return {{"type", "ColumnTransformer"}, {"transformers", parts}, {"remainder", nullptr}};
}

}  // namespace pg_predict::training
