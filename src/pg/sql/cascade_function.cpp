// create_cascade(name, query, max_disagreement, options) and drop_cascade(name) (issue 48):
// Willump's end-to-end cascade for the deployed version of a classifier, built from a query's
// rows and labelled by the full model itself (no labels needed). The rows are read as the
// per-row path reads them (make_row_reader, read_row), so the small model's inputs are columns of
// the full model's own batch; the arithmetic is training/cascade.hpp, the small model is fitted
// by train()'s trainer. docs/design.md, "Cascades".
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sql/arguments.hpp"
#include "catalog/catalog.hpp"
#include "binding/model.hpp"
#include "features.hpp"
#include "guard.hpp"
#include "heap_trim.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/training/cascade.hpp"
#include "pg_predict/training/sparse_logistic.hpp"
#include "pg_predict/training/trainer.hpp"

extern "C" {
#include "access/htup_details.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/typcache.h"
}

namespace pg_predict::pg {

namespace {

namespace training = pg_predict::training;

constexpr long kFetchRows = 10000;
constexpr int64 kCostSample = 1000;  // rows whose reading is timed, input by input
constexpr int64 kMinimumRows = 200;
constexpr int64_t kTextTrainRows = 50000;  // rows a text small model's logistic regression is fitted on, at most
constexpr double kTextL2 = 0.01;           // its L2 penalty: scikit-learn's C = 100 (it must follow the model closely)

struct CascadeOptions {
    int64_t seed = 0;
    int trees = 20;
    int depth = 3;
    double gamma = 0.5;  // Algorithm 1's stop: an input below gamma x the set's importance per cost
    bool gamma_given = false;  // else 0.5, 0.25, 0.1 and 0.05 are tried
};

CascadeOptions parse_options(const std::string& text) {
    CascadeOptions o;
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) fail(ErrorCategory::InvalidParameter, "create_cascade: options must be a JSON object");
    for (const auto& [key, value] : j.items()) {
        auto integer = [&](int64_t lo, int64_t hi) {
            if (!value.is_number_integer() || value.get<int64_t>() < lo || value.get<int64_t>() > hi)
                fail(ErrorCategory::InvalidParameter, "create_cascade: option \"" + key + "\" must be an integer in [" +
                                                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
            return value.get<int64_t>();
        };
        if (key == "seed") o.seed = integer(INT64_MIN, INT64_MAX);
        else if (key == "trees") o.trees = static_cast<int>(integer(1, 1000));
        else if (key == "depth") o.depth = static_cast<int>(integer(1, 10));
        else if (key == "gamma") {
            if (!value.is_number() || !(value.get<double>() >= 0.0 && value.get<double>() <= 1.0))
                fail(ErrorCategory::InvalidParameter, "create_cascade: option \"gamma\" must be a number in [0, 1]");
            o.gamma = value.get<double>();
            o.gamma_given = true;
        } else {
            fail(ErrorCategory::InvalidParameter,
                 "create_cascade: unknown option \"" + key + "\" (options: seed, trees, depth, gamma)");
        }
    }
    return o;
}

// The rows as the full model's batch holds them, and what reading them cost.
struct ReadRows {
    int64 rows = 0;
    double* x = nullptr;           // rows x features
    double sample_seconds = 0.0;   // read_row over the first kCostSample rows
    int64 sample_rows = 0;
    double* text_seconds = nullptr;  // per feature: its vectorizer over those rows (0: none)
    int* vectorizer = nullptr;       // per feature: the first slot of the vectorizer writing it, or -1
    // Per vectorizer (text_feature: its first slot), each row's text as the vectorizers read it
    // (data NULL: NULL): the small model on text is trained on the vectorizer's terms.
    int num_texts = 0;
    int* text_feature = nullptr;
    std::string_view* texts = nullptr;  // rows x num_texts
};

// The first column's whole-row values of the query, read into the model's features.
ReadRows read_query_rows(BoundModel* model, const char* query) {
    const CatalogEntry* entry = model->entry;
    const int F = entry->num_features;
    MemoryContext call = CurrentMemoryContext;
    ReadRows r;
    r.text_seconds = (double*)palloc0(sizeof(double) * Max(F, 1));
    r.vectorizer = (int*)palloc(sizeof(int) * Max(F, 1));
    for (int f = 0; f < F; f++) r.vectorizer[f] = -1;
    for (int f = 0; f < F && model->text_encoder != NULL; f++) {
        const int32* slots = NULL;
        const int k = runtime::text_vectorizer_slots(model->text_encoder, f, &slots);
        for (int s = 0; s < k; s++) r.vectorizer[slots[s]] = f;
    }
    r.text_feature = (int*)palloc(sizeof(int) * Max(F, 1));
    for (int f = 0; f < F; f++)
        if (r.vectorizer[f] == f && !entry->is_unused[f]) r.text_feature[r.num_texts++] = f;
    int64 capacity = 4096;
    r.x = (double*)palloc(sizeof(double) * capacity * Max(F, 1));
    r.texts = (std::string_view*)palloc(sizeof(std::string_view) * capacity * Max(r.num_texts, 1));
    Datum* sample = (Datum*)palloc(sizeof(Datum) * kCostSample);

    // The query as the FROM item of one SELECT: a statement of another kind is a syntax error.
    char* body = query_without_terminator(query);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_predict: SPI_connect failed");
    SPIPlanPtr plan = SPI_prepare(psprintf("SELECT q FROM (%s\n) AS q", body), 0, NULL);
    if (plan == NULL)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("create_cascade could not prepare its query: %s", SPI_result_code_string(SPI_result))));
    Portal portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
    RowReader* reader = NULL;
    float* x32 = (float*)MemoryContextAlloc(call, sizeof(float) * Max(F, 1));
    const bool float64 = model->program != NULL && guarded([&] { return runtime::program_reads_float64(model->program); });
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        SPI_cursor_fetch(portal, true, kFetchRows);
        if (SPI_processed == 0) break;
        for (uint64 i = 0; i < SPI_processed; i++) {
            bool isnull;
            Datum value = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
            if (isnull) continue;
            HeapTupleHeader row = DatumGetHeapTupleHeader(value);
            if (reader == NULL)
                reader = make_row_reader(model, HeapTupleHeaderGetTypeId(row), HeapTupleHeaderGetTypMod(row), call);
            if (r.rows == capacity) {
                capacity *= 2;
                r.x = (double*)repalloc_huge(r.x, sizeof(double) * capacity * Max(F, 1));
                r.texts = (std::string_view*)repalloc_huge(r.texts, sizeof(std::string_view) * capacity * Max(r.num_texts, 1));
            }
            double* out = r.x + r.rows * F;
            auto start = std::chrono::steady_clock::now();
            if (float64) {
                read_row(model, reader, row, out);
            } else {
                read_row(model, reader, row, x32);
                for (int f = 0; f < F; f++) out[f] = x32[f];
            }
            if (r.num_texts > 0) {
                HeapTupleData tuple;
                tuple.t_len = HeapTupleHeaderGetDatumLength(row);
                tuple.t_data = row;
                for (int t = 0; t < r.num_texts; t++) {
                    const int f = r.text_feature[t];
                    bool null_text;
                    Datum v = heap_getattr(&tuple, reader->attnums[f], reader->tupdesc, &null_text);
                    r.texts[r.rows * r.num_texts + t] =
                        null_text ? std::string_view() : text_bytes_copy(v, reader->blank_padded[f], call);
                }
            }
            if (r.rows < kCostSample) {
                r.sample_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                MemoryContext old = MemoryContextSwitchTo(call);
                sample[r.rows] = datumCopy(value, false, -1);
                MemoryContextSwitchTo(old);
                r.sample_rows++;
            }
            r.rows++;
        }
        SPI_freetuptable(SPI_tuptable);
    }
    SPI_cursor_close(portal);
    SPI_finish();
    if (reader == NULL) return r;

    // Each text vectorizer's own time over the sample (its first slot writes all of them).
    double* scratch = (double*)palloc(sizeof(double) * Max(F, 1));
    for (int f = 0; f < F; f++) {
        if (entry->is_unused[f] || reader->convert[f] != NULL || !is_vectorized_feature(model, f)) continue;
        auto start = std::chrono::steady_clock::now();
        for (int64 s = 0; s < r.sample_rows; s++) {
            HeapTupleHeader row = DatumGetHeapTupleHeader(sample[s]);
            HeapTupleData tuple;
            tuple.t_len = HeapTupleHeaderGetDatumLength(row);
            tuple.t_data = row;
            bool isnull;
            Datum v = heap_getattr(&tuple, reader->attnums[f], reader->tupdesc, &isnull);
            read_text_feature(model, f, v, isnull, entry->columns[f], reader->blank_padded[f], scratch);
        }
        r.text_seconds[f] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return r;
}

// Runs `program` over rows x cols of x (double), in float where the program reads float.
double run_timed(runtime::Program* program, const double* x, int64_t rows, int64_t cols, float* out) {
    const bool float64 = runtime::program_reads_float64(program);
    std::vector<float> x32;
    const auto start = std::chrono::steady_clock::now();
    if (float64) {
        runtime::run_program(program, x, rows, cols, out);
    } else {
        x32.assign(x, x + rows * cols);
        runtime::run_program(program, x32.data(), rows, cols, out);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

size_t argmax(const float* p, int k) {
    size_t best = 0;
    for (int c = 1; c < k; c++)
        if (p[c] > p[best]) best = static_cast<size_t>(c);  // the first of ties, as numpy
    return best;
}

// Everything after the rows are read: torch, XGBoost and JSON, inside guarded(). Returns the
// catalog's cascade document (with the small model) and create_cascade's result.
struct Built {
    std::string stored;
    std::string result;
};

// A backend-unique cache id for a program no catalog row holds (catalog ids are positive).
int64_t scratch_program_id() {
    static int64_t next = -1000;
    return next--;
}

// The share of the `part` rows' top 1% by the model's value (descending, or ascending) that are
// among their top c x 1% by the filter's estimate: what a top-K filter keeps of the exact top.
double filter_recall(const std::vector<double>& value, const std::vector<float>& estimate,
                     const std::vector<int>& part, int which, bool descending, int factor) {
    std::vector<int64_t> rows;
    for (size_t i = 0; i < part.size(); i++)
        if (part[i] == which) rows.push_back(static_cast<int64_t>(i));
    const size_t k = std::max<size_t>(1, rows.size() / 100);
    const size_t kept = std::min(rows.size(), k * static_cast<size_t>(factor));
    const double sign = descending ? 1.0 : -1.0;
    std::vector<int64_t> by_value = rows, by_estimate = rows;
    std::stable_sort(by_value.begin(), by_value.end(), [&](int64_t a, int64_t b) { return sign * value[a] > sign * value[b]; });
    std::stable_sort(by_estimate.begin(), by_estimate.end(),
                     [&](int64_t a, int64_t b) { return sign * estimate[a] > sign * estimate[b]; });
    std::vector<uint8_t> is_kept(part.size(), 0);
    for (size_t i = 0; i < kept; i++) is_kept[by_estimate[i]] = 1;
    size_t found = 0;
    for (size_t i = 0; i < k; i++) found += is_kept[by_value[i]];
    return static_cast<double>(found) / static_cast<double>(k);
}

// A classifier gets a cascade (its small model also the filter of its probabilities); a
// regressor (proba_width 0) only a filter, a small regressor of the model's value.
// The projection document of a sparse logistic regression over V terms (runtime::TextProjection).
nlohmann::json projection_json(const training::SparseLogistic& m, int64_t V) {
    std::vector<int64_t> term_begin{0};
    std::vector<int32_t> column;
    std::vector<double> weight;
    for (int64_t t = 0; t < V; t++) {
        for (int k = 0; k < m.outputs; k++) {
            const double w = m.weight[t * m.outputs + k];
            if (w == 0.0) continue;
            column.push_back(k);
            weight.push_back(w);
        }
        term_begin.push_back(static_cast<int64_t>(column.size()));
    }
    return {{"width", m.outputs}, {"term_begin", term_begin}, {"column", column}, {"weight", weight}, {"offset", m.bias}};
}

Built build_cascade(const CatalogEntry* entry, runtime::Program* full, runtime::TextEncoder* encoder, int proba_width,
                    int label_offset, int output_width, const ReadRows& r, double max_disagreement,
                    const CascadeOptions& o) {
    const int F = entry->num_features;
    const int64_t n = r.rows;
    const bool regression = !entry->classification;
    // The full model's labels (its class indices) or values, and its time per row.
    std::vector<float> out(static_cast<size_t>(n) * output_width);
    const double full_seconds = run_timed(full, r.x, n, F, out.data()) / static_cast<double>(n);
    std::vector<int32_t> label(static_cast<size_t>(n));
    std::vector<double> value_of(regression ? static_cast<size_t>(n) : 0);
    for (int64_t i = 0; i < n; i++) {
        if (regression)
            value_of[i] = out[i * output_width];
        else
            label[i] = static_cast<int32_t>(argmax(out.data() + i * output_width + label_offset, proba_width));
    }

    // The inputs: the model's columns, those it reads; a text vectorizer (its slots) is one input
    // of its own, "body" or, where a column feeds several, "body (vectorizer 2)".
    std::vector<std::string> names;
    std::vector<std::vector<int>> columns_of;
    std::map<std::string, std::vector<int>> vectorizers_of_column;
    for (int f = 0; f < F; f++)
        if (!entry->is_unused[f] && r.vectorizer[f] == f)
            vectorizers_of_column[entry->columns[f][0] ? entry->columns[f] : entry->features[f]].push_back(f);
    for (int f = 0; f < F; f++) {
        if (entry->is_unused[f]) continue;
        std::string name = entry->columns[f][0] ? entry->columns[f] : entry->features[f];
        if (r.vectorizer[f] >= 0 && vectorizers_of_column[name].size() > 1) {
            const auto& firsts = vectorizers_of_column[name];
            name += " (vectorizer " +
                    std::to_string(std::find(firsts.begin(), firsts.end(), r.vectorizer[f]) - firsts.begin() + 1) + ")";
        }
        auto at = std::find(names.begin(), names.end(), name);
        if (at == names.end()) {
            names.push_back(name);
            columns_of.emplace_back();
            at = names.end() - 1;
        }
        columns_of[static_cast<size_t>(at - names.begin())].push_back(f);
    }
    if (names.empty()) fail(ErrorCategory::InvalidParameter, "create_cascade: the model reads no input");
    std::vector<int> part(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) part[i] = training::cascade_part(o.seed, i);

    // Costs, measured: a vectorizer's own time; the rest of the row's reading shared equally.
    const double sample = static_cast<double>(std::max<int64_t>(r.sample_rows, 1));
    std::vector<double> cost(names.size(), 0.0);
    double text_total = 0.0;
    size_t plain = 0;
    for (size_t i = 0; i < names.size(); i++) {
        for (int f : columns_of[i]) cost[i] += r.text_seconds[f] / sample;
        text_total += cost[i];
        plain += cost[i] == 0.0 ? 1 : 0;
    }
    const double rest = std::max(r.sample_seconds / sample - text_total, 0.0);
    for (double& c : cost)
        if (c == 0.0) c = std::max(rest / static_cast<double>(std::max<size_t>(plain, 1)), 1e-9);

    // A classifier's text vectorizers, as the small model reads them: a logistic regression on the
    // vectorizer's terms, fitted on the training part to give the model's label, its margins side
    // columns F, F + 1, ... (Willump trains the small model on the cheap features themselves; the
    // model's own projection of one vectorizer alone decides almost nothing).
    struct TextSide {
        int feature;
        int column;  // its first side column (F + ...)
        nlohmann::json projection;
    };
    std::vector<TextSide> sides;
    int E = 0;
    std::vector<double> side;  // n x E, filled once E is known
    std::vector<training::SparseLogistic> side_models;
    std::vector<int64_t> index;
    std::vector<double> values;
    for (int t = 0; t < r.num_texts && !regression && encoder != nullptr; t++) {
        const int f = r.text_feature[t];
        const int64_t V = runtime::text_vectorizer_width(encoder, f);
        training::SparseRows x;
        std::vector<int32_t> y;
        std::vector<uint8_t> seen(static_cast<size_t>(proba_width), 0);
        for (int64_t i = 0; i < n && x.rows() < kTextTrainRows; i++) {
            const std::string_view s = r.texts[i * r.num_texts + t];
            if (part[i] != 0 || s.data() == nullptr) continue;
            runtime::vectorize_text_sparse(encoder, f, s.data(), s.size(), index, values);
            x.index.insert(x.index.end(), index.begin(), index.end());
            for (double v : values) x.value.push_back(static_cast<float>(v));
            x.begin.push_back(static_cast<int64_t>(x.index.size()));
            y.push_back(label[i]);
            seen[label[i]] = 1;
        }
        if (std::count(seen.begin(), seen.end(), 1) < 2) continue;
        side_models.push_back(training::fit_sparse_logistic(x, y, proba_width, V, 200, kTextL2, static_cast<uint64_t>(o.seed)));
        sides.push_back({f, F + E, projection_json(side_models.back(), V)});
        E += side_models.back().outputs;
        // The vectorizer's input reads the side columns instead of the model's projection.
        for (auto& cols : columns_of)
            if (!cols.empty() && r.vectorizer[cols[0]] == f) {
                cols.clear();
                for (int k = 0; k < side_models.back().outputs; k++) cols.push_back(sides.back().column + k);
            }
    }
    if (E > 0) {
        side.assign(static_cast<size_t>(n) * E, 0.0);
        std::vector<float> v32;
        for (size_t t = 0; t < sides.size(); t++) {
            int slot = 0;
            while (r.text_feature[slot] != sides[t].feature) slot++;
            const int width = side_models[t].outputs, at = sides[t].column - F;
            for (int64_t i = 0; i < n; i++) {
                double* out = side.data() + i * E + at;
                const std::string_view s = r.texts[i * r.num_texts + slot];
                if (s.data() == nullptr) {
                    for (int k = 0; k < width; k++) out[k] = std::nan("");
                    continue;
                }
                runtime::vectorize_text_sparse(encoder, sides[t].feature, s.data(), s.size(), index, values);
                v32.assign(values.begin(), values.end());
                training::sparse_logistic_margins(side_models[t], index.data(), v32.data(), static_cast<int64_t>(index.size()), out);
            }
        }
    }

    // Column c of row i as the small model reads it: the model's batch column, or a side column.
    auto cell = [&](int64_t i, int c) { return c < F ? r.x[i * F + c] : side[i * E + (c - F)]; };
    // A small model over `inputs` (cols: the columns it reads).
    auto fit = [&](const std::vector<size_t>& inputs, int trees, int depth, std::vector<int>& cols) {
        cols.clear();
        for (size_t i : inputs) cols.insert(cols.end(), columns_of[i].begin(), columns_of[i].end());
        std::vector<training::Column> spec;
        for (int c : cols) spec.push_back({"x" + std::to_string(c), training::ColumnKind::Number});
        const char* objective = regression ? "reg:squarederror" : proba_width == 2 ? "binary:logistic" : "multi:softprob";
        const std::string hyper =
            nlohmann::json{{"n_estimators", trees}, {"max_depth", depth}, {"objective", objective}}.dump();
        training::Dataset* d = training::new_dataset(
            training::Request{"xgboost", hyper, "label", training::ColumnKind::Number, 0.0, o.seed, 1}, spec);
        try {
            std::vector<training::Cell> cells(cols.size());
            for (int64_t i = 0; i < n; i++) {
                if (part[i] != 0) continue;
                for (size_t k = 0; k < cols.size(); k++) cells[k] = {cell(i, cols[k]), nullptr, 0};
                const double target = regression ? value_of[i] : static_cast<double>(label[i]);
                training::add_row(d, cells.data(), training::Cell{target, nullptr, 0});
            }
            training::Trained t = training::train(d);
            training::free_dataset(d);
            return t;
        } catch (...) {
            training::free_dataset(d);
            throw;
        }
    };
    std::vector<int32_t> seen(static_cast<size_t>(std::max(proba_width, 1)), 0);
    for (int64_t i = 0; i < n; i++)
        if (part[i] == 0 && !regression) seen[label[i]] = 1;
    if (!regression && std::count(seen.begin(), seen.end(), 1) < 2)
        fail(ErrorCategory::InvalidParameter,
             "create_cascade: the model gives one class to every row of the query's training part; a cascade "
             "needs rows of at least two classes");

    // Importance: a probe over every input (Willump's fallback for any model), then Algorithm 1.
    std::vector<size_t> all(names.size());
    for (size_t i = 0; i < all.size(); i++) all[i] = i;
    std::vector<int> probe_cols;
    const training::Trained probe = fit(all, 30, 4, probe_cols);
    const std::vector<double> gain = training::gain_by_feature(probe.document_json, probe_cols.size());
    std::vector<training::InputValue> value(names.size(), {0.0, 0.0});
    double gain_total = 0.0;
    for (size_t k = 0; k < probe_cols.size(); k++) gain_total += gain[k];
    {
        size_t k = 0;
        for (size_t i = 0; i < names.size(); i++) {
            for (size_t c = 0; c < columns_of[i].size(); c++, k++) value[i].importance += gain[k];
            value[i].cost = cost[i];
        }
    }
    double all_inputs = 0.0;
    for (size_t i = 0; i < names.size(); i++) all_inputs += cost[i];
    const double exact = all_inputs + full_seconds;

    // A small model per candidate input set (Algorithm 1 at several gammas, unless the options
    // name one): the one that would save the most on the threshold part is kept; the report part
    // stays untouched by the choice.
    struct Candidate {
        double gamma = 0.0;
        std::vector<size_t> chosen;
        std::vector<int> cols;
        nlohmann::json doc;
        std::vector<double> classes;
        std::vector<float> out;
        int width = 0;
        double seconds = 0.0;
        double chosen_cost = 0.0;
        training::ThresholdChoice choice{};
        double score = -1.0;
    };
    const std::vector<double> gammas = o.gamma_given ? std::vector<double>{o.gamma}
                                                     : std::vector<double>{0.5, 0.25, 0.1, 0.05};
    std::vector<std::vector<size_t>> tried;
    Candidate best;
    for (double gamma : gammas) {
        Candidate c;
        c.gamma = gamma;
        c.chosen = training::efficient_inputs(value, gamma);
        if (c.chosen.empty() || std::find(tried.begin(), tried.end(), c.chosen) != tried.end()) continue;
        tried.push_back(c.chosen);
        // The small model, its outputs on every row, and its time per row.
        const training::Trained small = fit(c.chosen, o.trees, o.depth, c.cols);
        c.doc = nlohmann::json::parse(small.document_json);
        const Artifact artifact{ArtifactKind::Json, small.document_json};
        runtime::BuiltModel* built = runtime::build_model(artifact, "sklearn", "{}");
        std::string bytes;
        try {
            bytes = built->program;
            c.classes = built->classes;
        } catch (...) {
            runtime::free_built_model(built);
            throw;
        }
        runtime::free_built_model(built);
        runtime::Program* small_program = runtime::load_program(scratch_program_id(), bytes.data(), bytes.size());
        std::vector<double> xs(static_cast<size_t>(n) * c.cols.size());
        for (int64_t i = 0; i < n; i++)
            for (size_t k = 0; k < c.cols.size(); k++) xs[i * c.cols.size() + k] = cell(i, c.cols[k]);
        c.width = runtime::program_output_width(small_program);
        c.out.resize(static_cast<size_t>(n) * c.width);
        try {
            c.seconds = run_timed(small_program, xs.data(), n, static_cast<int64_t>(c.cols.size()), c.out.data()) /
                        static_cast<double>(n);
        } catch (...) {
            runtime::release_program(small_program);
            throw;
        }
        runtime::release_program(small_program);
        if (c.width != (regression ? 1 : static_cast<int>(c.classes.size())))
            fail(ErrorCategory::Internal, "create_cascade: the small model's outputs are not its classes");
        for (size_t i : c.chosen) c.chosen_cost += cost[i];
        if (regression) {
            // The filter keeping the most of the threshold part's top; the cheaper of equals.
            std::vector<float> estimate(c.out.begin(), c.out.end());
            c.score = filter_recall(value_of, estimate, part, 1, true, 10) - 1e-9 * c.chosen_cost / all_inputs;
        } else {
            std::vector<float> confidence;
            std::vector<uint8_t> agrees;
            for (int64_t i = 0; i < n; i++) {
                if (part[i] != 1) continue;
                const float* p = c.out.data() + i * c.width;
                const size_t k = argmax(p, c.width);
                confidence.push_back(p[k]);
                agrees.push_back(static_cast<int32_t>(c.classes[k]) == label[i]);
            }
            c.choice = training::choose_threshold(confidence, agrees, max_disagreement);
            if (c.choice.found)
                c.score = exact / (c.chosen_cost + c.seconds +
                                   (1.0 - c.choice.outcome.decided) * (all_inputs - c.chosen_cost + full_seconds));
        }
        if (c.score > best.score) best = std::move(c);
    }
    if (tried.empty())
        fail(ErrorCategory::InvalidParameter,
             "create_cascade: no input of the model that tells its classes apart costs at most half of reading "
             "them all; a cascade would save nothing");
    if (best.score < 0.0)
        fail(ErrorCategory::InvalidParameter,
             "create_cascade: even the small model's surest rows disagree with the model on more than max_disagreement "
             "of the rows; no cascade is built (try more rows, more trees or a larger max_disagreement)");

    nlohmann::json inputs = nlohmann::json::array(), costs = nlohmann::json::object(),
                   importance = nlohmann::json::object();
    for (size_t i : best.chosen) inputs.push_back(names[i]);
    for (size_t i = 0; i < names.size(); i++) {
        costs[names[i]] = cost[i];
        importance[names[i]] = gain_total > 0 ? value[i].importance / gain_total : 0.0;
    }
    nlohmann::json result = {
        {"version", entry->version},
        {"inputs", inputs},
        {"trees", o.trees},
        {"depth", o.depth},
        {"gamma", best.gamma},
        {"rows", {{"train", std::count(part.begin(), part.end(), 0)},
                  {"threshold", std::count(part.begin(), part.end(), 1)},
                  {"report", std::count(part.begin(), part.end(), 2)}}},
        {"seed", o.seed},
        {"seconds_per_row", {{"inputs", costs}, {"full_model", full_seconds}, {"small_model", best.seconds}}},
        {"importance", importance},
    };
    nlohmann::json stored;
    if (regression) {
        // Every row's features are read and filtered; 5% of them scored by the model.
        std::vector<float> estimate(best.out.begin(), best.out.end());
        result["uses"] = {"top_k_filter"};
        result["note"] =
            "a regressor: only the top-K filter is built (pg_predict.approximate_top_k); max_disagreement does not apply";
        result["threshold"] = nullptr;
        result["disagreement"] = nullptr;
        result["decided"] = nullptr;
        result["recall"] = {{"descending", filter_recall(value_of, estimate, part, 2, true, 10)},
                            {"ascending", filter_recall(value_of, estimate, part, 2, false, 10)}};
        result["speedup"] = exact / (all_inputs + best.seconds + 0.05 * full_seconds);
        stored = result;
        stored["classes"] = nlohmann::json::array();
    } else {
        std::vector<float> confidence;
        std::vector<uint8_t> agrees;
        for (int64_t i = 0; i < n; i++) {
            if (part[i] != 2) continue;
            const float* p = best.out.data() + i * best.width;
            const size_t k = argmax(p, best.width);
            confidence.push_back(p[k]);
            agrees.push_back(static_cast<int32_t>(best.classes[k]) == label[i]);
        }
        const double threshold = best.choice.outcome.threshold;
        const training::CascadeOutcome report = training::cascade_outcome(confidence, agrees, threshold);
        // Per row: every input read and the full model, against the chosen inputs and the small
        // model, then the rest for the undecided rows.
        const double cascade = best.chosen_cost + best.seconds +
                               (1.0 - report.decided) * (all_inputs - best.chosen_cost + full_seconds);
        result["uses"] = {"cascade", "top_k_filter"};
        result["threshold"] = threshold;
        result["max_disagreement"] = max_disagreement;
        result["disagreement"] = report.disagreement;
        result["decided"] = report.decided;
        result["speedup"] = exact / cascade;
        stored = result;
        stored["classes"] = best.classes;  // the full model's class index of each small output
    }
    stored["features"] = best.cols;  // the full model's batch columns the small model reads, or side columns
    stored["model"] = best.doc;
    nlohmann::json text = nlohmann::json::array();  // the side columns' projections it reads
    for (const TextSide& t : sides)
        for (int c : best.cols)
            if (c == t.column) text.push_back({{"input", t.feature}, {"column", t.column}, {"projection", t.projection}});
    stored["text"] = text;
    return {stored.dump(), result.dump()};
}

}  // namespace

}  // namespace pg_predict::pg

using namespace pg_predict::pg;

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_create_cascade);
PG_PREDICT_SQL_FUNCTION(pg_predict_drop_cascade);

Datum pg_predict_create_cascade(PG_FUNCTION_ARGS) {
    prevent_catalog_change("create_cascade()");
    char* name = required_text_arg(fcinfo, 0, "model name");
    char* query = required_text_arg(fcinfo, 1, "query");
    if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("max_disagreement and options must not be NULL")));
    double max_disagreement = PG_GETARG_FLOAT8(2);
    if (!(max_disagreement > 0.0 && max_disagreement < 0.5))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("max_disagreement must be in (0, 0.5), not %g", max_disagreement),
                        errdetail("It is the share of rows on which the cascade may give another label than the model.")));
    Jsonb* options_jsonb = PG_GETARG_JSONB_P(3);
    char* options_text = JsonbToCString(NULL, &options_jsonb->root, VARSIZE(options_jsonb));
    CascadeOptions options = guarded([&] { return parse_options(options_text); });

    CatalogEntry* entry = catalog_lookup(name, false);
    check_model_owner(name, entry->owner);
    trim_heap_at_transaction_end();
    BoundModel* model = bind_model_entry(name, CurrentMemoryContext);
    load_bound_program(model);
    entry = model->entry;  // the version bound (the deployed one)
    if (entry->classification && !entry->has_probabilities)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("create_cascade: model \"%s\" gives no class probabilities", name)));
    ReadRows rows = read_query_rows(model, query);
    if (rows.rows < kMinimumRows)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("create_cascade needs at least %ld rows; the query returned %ld", (long)kMinimumRows,
                               (long)rows.rows),
                        errhint("A quarter of the rows chooses the threshold and another measures it.")));
    pg_predict::runtime::Program* full = model->program;
    if (!entry->classification && model->output_width != 1)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("create_cascade: model \"%s\" predicts %d values a row; a filter estimates one", name,
                               model->output_width)));
    int proba_width = entry->classification ? model->proba_width : 0, label_offset = model->label_offset, width = model->output_width;
    pg_predict::runtime::TextEncoder* encoder = model->text_encoder;
    Built* built = guarded([&] {
        return new Built(
            build_cascade(entry, full, encoder, proba_width, label_offset, width, rows, max_disagreement, options));
    });
    char* stored = pstrdup(built->stored.c_str());
    char* result = pstrdup(built->result.c_str());
    delete built;
    if (catalog_set_cascade(name, entry->version, stored) < 0)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("create_cascade: version %d of model \"%s\" is no longer deployed", entry->version, name),
                        errhint("Build the cascade again for the version deployed now.")));
    PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(result)));
}

Datum pg_predict_drop_cascade(PG_FUNCTION_ARGS) {
    prevent_catalog_change("drop_cascade()");
    char* name = required_text_arg(fcinfo, 0, "model name");
    CatalogEntry* entry = catalog_lookup(name, false);
    check_model_owner(name, entry->owner);
    PG_RETURN_BOOL(catalog_set_cascade(name, 0, NULL) == 1);
}

}  // extern "C"
