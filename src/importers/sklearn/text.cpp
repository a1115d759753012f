// scikit-learn's text vectorizers (python/pg_predict/text.py writes their steps): CountVectorizer,
// TfidfVectorizer, HashingVectorizer, and TfidfTransformer after one of them.
//
// A vectorizer's output is as wide as its vocabulary (10^5 - 10^6 columns) and is never made
// dense: what reads it must be linear in it, and lower_text_vectorizers() folds the reader's
// coefficients into a projection of the sparse row (spec::TextVectorizer), computed while the
// batch is filled. Supported readers: a linear model or naive Bayes (MultinomialNB,
// ComplementNB, BernoulliNB: its binarize becomes the vectorizer's last transform), or trees, as
// the last step, directly or through a ColumnTransformer or FeatureUnion that puts the
// vectorizer's columns beside others; TruncatedSVD (LSA); a column selection of its terms.
#include <algorithm>
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

namespace {

// The analyzer and transforms of a vectorizer step, as text::parse_vectorizer reads them.
json analyzer_json(const JsonReader& step) {
    json a;
    a["analyzer"] = string_choice(step, "analyzer", "word", {"word", "char", "char_wb"});
    const std::vector<int32_t> range = step.array("ngram_range").integers(1, 1000);
    if (range.size() != 2 || range[0] > range[1]) step.need("ngram_range").invalid("must be [min_n, max_n], min_n <= max_n");
    a["ngram_range"] = range;
    a["lowercase"] = step.boolean("lowercase");
    a["strip_accents"] = step.optional("strip_accents") ? string_choice(step, "strip_accents", "", {"ascii", "unicode"})
                                                        : std::string("none");
    if (a["analyzer"] == "word") {
        const JsonReader pattern = step.object("token_pattern");
        a["token_class"] = string_choice(pattern, "class", "word", {"word", "nonspace"});
        a["min_token_length"] = pattern.need("min_length").integer(1, 1000);
        std::vector<std::string> stop;
        if (auto words = step.optional("stop_words"))
            for (size_t i = 0; i < words->size(); ++i) stop.push_back((*words)[i].string());
        a["stop_words"] = stop;
    }
    return a;
}

void add_tfidf(const JsonReader& step, json& v, int64_t width) {
    json& ops = v["ops"];
    if (step.boolean("sublinear_tf")) ops.push_back("sublinear");
    if (step.boolean("use_idf")) {
        const std::vector<double> idf = step.array("idf").finite_numbers();
        if (static_cast<int64_t>(idf.size()) != width)
            step.need("idf").invalid("has " + std::to_string(idf.size()) + " values for " + std::to_string(width) + " terms");
        v["idfs"].push_back(idf);  // one per idf step (a TfidfTransformer after a TfidfVectorizer)
        ops.push_back("idf");
    }
    if (auto norm = step.optional("norm")) ops.push_back(string_choice(step, "norm", "l2", {"l1", "l2"}));
}

// Marks the vector the vectorizer outputs: every column is "column k of vectorizer id".
void vectorizer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    const std::string type = step.string("type");
    if (cols.size() != 1 || cols[0] < 0)
        step.invalid("(" + type + ") reads " + std::to_string(cols.size()) +
                     " columns; a text vectorizer reads one text input column");
    json v;
    v["analyzer"] = analyzer_json(step);
    v["ops"] = json::array();
    if (string_choice(step, "dtype", "float64", {"float64", "float32"}) == "float32") v["float32"] = true;
    int64_t width;
    if (type == "HashingVectorizer") {
        width = step.need("n_features").integer(1, spec::kMaxStepWidth);
        v["hashing"] = {{"n_features", width}, {"alternate_sign", step.boolean("alternate_sign")}};
        if (step.boolean("binary")) v["ops"].push_back("binary");
        if (step.optional("norm")) v["ops"].push_back(string_choice(step, "norm", "l2", {"l1", "l2"}));
    } else {
        const JsonReader vocab = step.array("vocabulary");
        std::vector<std::string> terms;
        terms.reserve(vocab.size());
        for (size_t i = 0; i < vocab.size(); ++i) terms.push_back(vocab[i].string());
        width = static_cast<int64_t>(terms.size());
        if (width < 1) step.need("vocabulary").invalid("is empty");
        if (width > spec::kMaxStepWidth)
            refuse(step, "a vocabulary of more than " + std::to_string(spec::kMaxStepWidth) + " terms");
        v["vocabulary"] = std::move(terms);
        if (step.boolean("binary")) v["ops"].push_back("binary");
        if (type == "TfidfVectorizer") add_tfidf(step, v, width);
    }
    const int32_t id = doc.add_vectorizer(cols[0], std::move(v), width);
    cols.assign(static_cast<size_t>(width), Document::vectorizer_column(id));
    out.push_back(Document::vectorizer_marker(id));
}

// The vectorizer whose columns `cols` are, when its marker is the last step (nothing but a
// TfidfTransformer, a selection or a Binarizer between): its id, or -1.
int32_t vectorizer_just_before(const Document& doc, const Columns& cols, const std::vector<spec::Step>& out) {
    const int32_t id = cols.empty() ? -1 : Document::vectorizer_of(cols[0]);
    if (id < 0 || out.empty() || !Document::is_vectorizer_marker(out.back(), id) ||
        static_cast<int64_t>(cols.size()) != doc.vectorizer_width(id))
        return -1;
    return id;
}

}  // namespace

// TruncatedSVD right after a vectorizer (LSA): its components become the vectorizer's
// projection, and its k outputs are ordinary numbers for whatever follows (any estimator).
void project_text(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    const int32_t id = vectorizer_just_before(doc, cols, out);
    if (id < 0) refuse(step, "TruncatedSVD other than right after a text vectorizer (and its TfidfTransformer)");
    const int64_t width = doc.vectorizer_width(id);
    if (auto mean = step.optional("mean"); mean && mean->size() > 0)
        refuse(step, "a centred projection (PCA) of a text vectorizer's columns");
    if (step.boolean("whiten")) refuse(step, "whiten=True after a text vectorizer");
    const Matrix components = finite_matrix(step.need("components"), SIZE_MAX, static_cast<size_t>(width));
    const size_t k = components.size();
    std::vector<int64_t> term_begin;
    std::vector<int32_t> column;
    std::vector<double> weight;
    const std::vector<int64_t> column_of_term = doc.column_of_term(id);
    term_begin.reserve(column_of_term.size() + 1);
    for (const int64_t c : column_of_term) {
        term_begin.push_back(static_cast<int64_t>(column.size()));
        if (c < 0) continue;
        for (size_t j = 0; j < k; ++j)
            if (components[j][static_cast<size_t>(c)] != 0.0) {
                column.push_back(static_cast<int32_t>(j));
                weight.push_back(components[j][static_cast<size_t>(c)]);
            }
    }
    term_begin.push_back(static_cast<int64_t>(column.size()));
    doc.vectorizer_json(id)["projection"] = {{"width", k}, {"term_begin", term_begin}, {"column", column},
                                             {"weight", weight}, {"offset", std::vector<double>(k, 0.0)}};
    cols.assign(k, -1);  // numbers from here on
}

// VarianceThreshold, SelectKBest, SelectPercentile, SelectFromModel, ... over a vectorizer's
// columns alone: the vectorizer keeps only the selected terms' columns. Its norm is still taken
// over every term, as scikit-learn normalizes the row before the selection sees it.
void select_text(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    const int32_t id = vectorizer_just_before(doc, cols, out);
    if (id < 0)
        refuse(step, "a column selection over a text vectorizer's columns and others together (select right "
                     "after the vectorizer, in its own pipeline)");
    const std::vector<int32_t> keep = step.array("columns").integers(0, static_cast<int64_t>(cols.size()) - 1);
    if (keep.empty()) refuse(step, "selecting no column");
    for (size_t i = 1; i < keep.size(); ++i)
        if (keep[i] <= keep[i - 1]) step.need("columns").invalid("must be increasing after a text vectorizer");
    doc.select_terms(id, keep);
    cols.assign(keep.size(), cols[0]);
}

// Binarizer over a vectorizer's columns alone: its row thresholded (an absent term stays 0, so
// the threshold must be >= 0, as scikit-learn requires of a sparse input).
void binarize_text(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    const int32_t id = vectorizer_just_before(doc, cols, out);
    if (id < 0)
        refuse(step, "a Binarizer over a text vectorizer's columns and others together (binarize right after the "
                     "vectorizer, in its own pipeline)");
    const double t = step.need("threshold").finite();
    if (!(t >= 0.0)) refuse(step, "threshold below 0 after a text vectorizer (every absent term would be 1)");
    json& v = doc.vectorizer_json(id);
    v["ops"].push_back("threshold");
    v["threshold"] = t;
}

void count_vectorizer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    vectorizer(doc, step, cols, out);
}

// Right after a vectorizer (a Binarizer between allowed): its transforms join the vectorizer's,
// after those it has, with their own idf weights.
void tfidf_transformer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    const int32_t id = vectorizer_just_before(doc, cols, out);
    if (id < 0 || doc.vectorizer_selected(id))
        refuse(step, "TfidfTransformer other than right after a text vectorizer (before any column selection of "
                     "its terms)");
    add_tfidf(step, doc.vectorizer_json(id), doc.vectorizer_width(id));
}

}  // namespace pg_predict::importers::sklearn

namespace pg_predict::importers::sklearn {

int32_t Document::add_vectorizer(int32_t input, nlohmann::json v, int64_t width) {
    vectorizers_.push_back({input, std::move(v), width, {}});
    return static_cast<int32_t>(vectorizers_.size() - 1);
}

int64_t Document::vectorizer_width(int32_t id) const {
    const Vectorizer& v = vectorizers_[static_cast<size_t>(id)];
    return v.selected.empty() ? v.width : static_cast<int64_t>(v.selected.size());
}

void Document::select_terms(int32_t id, const std::vector<int32_t>& keep) {
    Vectorizer& v = vectorizers_[static_cast<size_t>(id)];
    std::vector<int64_t> terms;
    terms.reserve(keep.size());
    for (const int32_t k : keep) terms.push_back(v.selected.empty() ? k : v.selected[static_cast<size_t>(k)]);
    v.selected = std::move(terms);
}

std::vector<int64_t> Document::column_of_term(int32_t id) const {
    const Vectorizer& v = vectorizers_[static_cast<size_t>(id)];
    std::vector<int64_t> out(static_cast<size_t>(v.width), v.selected.empty() ? 0 : -1);
    if (v.selected.empty()) {
        for (size_t t = 0; t < out.size(); ++t) out[t] = static_cast<int64_t>(t);
    } else {
        for (size_t c = 0; c < v.selected.size(); ++c) out[static_cast<size_t>(v.selected[c])] = static_cast<int64_t>(c);
    }
    return out;
}

spec::Step Document::vectorizer_marker(int32_t id) {
    spec::Step s;
    s.op = spec::Op::None;
    s.params = {{"text_vectorizer", id}};
    return s;
}

bool Document::is_vectorizer_marker(const spec::Step& s, int32_t id) {
    return s.op == spec::Op::None && s.params.is_object() && s.params.value("text_vectorizer", -1) == id;
}

namespace {

// Replaces each marker part (columns [input], steps [marker]) by one reading the slots.
void replace_markers(std::vector<spec::Step>& steps, const std::vector<std::vector<int32_t>>& slots) {
    for (spec::Step& s : steps) {
        if (s.op != spec::Op::Concat) continue;
        for (spec::Step::Part& part : s.parts) {
            if (part.steps.size() == 1 && part.steps[0].op == spec::Op::None && part.steps[0].params.is_object() &&
                part.steps[0].params.contains("text_vectorizer")) {
                part.columns = slots[part.steps[0].params["text_vectorizer"].get<size_t>()];
                part.steps.clear();
            } else {
                replace_markers(part.steps, slots);
            }
        }
    }
}

bool has_marker(const std::vector<spec::Step>& steps) {
    for (const spec::Step& s : steps) {
        if (s.op == spec::Op::None && s.params.is_object() && s.params.contains("text_vectorizer")) return true;
        for (const spec::Step::Part& part : s.parts)
            if (has_marker(part.steps)) return true;
    }
    return false;
}

int32_t marker_of(const spec::Step& s) {
    return s.op == spec::Op::None && s.params.is_object() ? s.params.value("text_vectorizer", -1) : -1;
}

}  // namespace

// steps end in a vectorizer's marker or in a concat (a ColumnTransformer, a FeatureUnion):
// the threshold goes into each vectorizer reached, and at the end of each other part.
void Document::push_threshold_into_text(std::vector<spec::Step>& steps, const spec::Step& threshold,
                                        const JsonReader& model) {
    const double t = threshold.params.at("threshold").get<double>();
    auto into_vectorizer = [&](int32_t id) {
        json& v = vectorizers_[static_cast<size_t>(id)].json;
        if (v.contains("projection"))
            refuse(model, "binarize over a TruncatedSVD of text beside a text vectorizer's own columns");
        if (!(t >= 0.0)) refuse(model, "binarize below 0 after a text vectorizer (every absent term would be 1)");
        if (v.contains("threshold")) refuse(model, "binarize after a Binarizer of a text vectorizer's columns");
        v["ops"].push_back("threshold");
        v["threshold"] = t;
    };
    if (steps.empty()) fail(ErrorCategory::Internal, "scikit-learn: a text vectorizer reached by no step");
    if (const int32_t id = marker_of(steps.back()); id >= 0) return into_vectorizer(id);
    if (steps.back().op != spec::Op::Concat)
        refuse(model, "binarize after a text vectorizer and a step that is not a ColumnTransformer or FeatureUnion");
    for (spec::Step::Part& part : steps.back().parts) {
        if (part.steps.size() == 1 && marker_of(part.steps[0]) >= 0)
            into_vectorizer(marker_of(part.steps[0]));
        else if (has_marker(part.steps))
            push_threshold_into_text(part.steps, threshold, model);
        else
            part.steps.push_back(threshold);
    }
}

// The estimator reads each vectorizer's columns as one block of its input: its coefficients
// there become the vectorizer's projection (one column per output group, terms with a zero
// coefficient left out of it), and the block becomes K columns it reads with weight 1.
void Document::lower_text_vectorizers(const JsonReader& model, const Columns& cols, size_t steps_before_model) {
    if (vectorizers_.empty()) return;
    const std::string type = step_reader(model).string("type");
    // A vectorizer projected by a TruncatedSVD (project_text) feeds numbers to anything; the
    // others are read by the estimator, which must be linear.
    bool linear_readers = false;
    for (const Vectorizer& v : vectorizers_) linear_readers = linear_readers || !v.json.contains("projection");
    if (linear_readers && p_.estimator.op == spec::Op::Linear && p_.steps.size() == steps_before_model + 1 &&
        p_.steps.back().op == spec::Op::Threshold) {
        // BernoulliNB's binarize: each vectorizer thresholds its own row (before its projection);
        // the other columns keep the step.
        const spec::Step threshold = std::move(p_.steps.back());
        p_.steps.pop_back();
        push_threshold_into_text(p_.steps, threshold, model);
    }
    const bool own_steps = p_.steps.size() != steps_before_model;  // the estimator's own featurizers
    const bool linear = p_.estimator.op == spec::Op::Linear && !own_steps;
    const bool trees = p_.estimator.op == spec::Op::None && !p_.model.trees.empty() && !own_steps;
    if (linear_readers && !linear && !trees)
        refuse(model, type + " after a text vectorizer (what reads a vectorizer's columns: TruncatedSVD, a linear "
                             "model, MultinomialNB, or trees, as the last step)");
    Matrix coef = linear_readers && linear ? spec::param_matrix(p_.estimator, "coef", "estimator") : Matrix();
    const size_t G = coef.size();
    std::vector<size_t> widths(vectorizers_.size(), G);  // each vectorizer's K
    int64_t num_features = p_.model.num_features;
    std::vector<std::pair<int32_t, size_t>> blocks;  // (vectorizer, first column)
    for (size_t c = 0; c < cols.size();) {
        const int32_t id = vectorizer_of(cols[c]);
        if (id < 0) {
            ++c;
            continue;
        }
        const size_t width = static_cast<size_t>(vectorizer_width(id));
        for (size_t k = 0; k < width; ++k)
            if (c + k >= cols.size() || cols[c + k] != cols[c])
                fail(ErrorCategory::Internal, "scikit-learn: a text vectorizer's columns are not one block");
        blocks.emplace_back(id, c);
        c += width;
    }
    size_t linear_count = 0;
    for (const Vectorizer& v : vectorizers_) linear_count += v.json.contains("projection") ? 0 : 1;
    if (blocks.size() != linear_count) refuse(model, "a text vectorizer whose columns do not all reach " + type);
    std::vector<nlohmann::json> projections(vectorizers_.size());
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
        const int32_t id = b->first;  // not a structured binding: a lambda below captures start
        const size_t start = b->second;
        const size_t V = static_cast<size_t>(vectorizer_width(id));  // its columns here
        const std::vector<int64_t> column_of = column_of_term(id);     // by term (-1: not selected)
        std::vector<int64_t> term_begin;
        std::vector<int32_t> column;
        std::vector<double> weight;
        term_begin.reserve(column_of.size() + 1);
        if (trees) {
            // The terms the splits read, each its own column (weight 1); the splits renumbered.
            std::vector<int32_t> used;
            for (const spec::Tree& tree : p_.model.trees)
                for (size_t n = 0; n < tree.feature.size(); ++n)
                    if (tree.left[n] >= 0 && tree.feature[n] >= static_cast<int32_t>(start) &&
                        tree.feature[n] < static_cast<int32_t>(start + V))
                        used.push_back(tree.feature[n] - static_cast<int32_t>(start));
            std::sort(used.begin(), used.end());
            used.erase(std::unique(used.begin(), used.end()), used.end());
            if (used.empty()) used.push_back(0);  // no split reads the text: one column nobody reads
            const int32_t K = static_cast<int32_t>(used.size());
            size_t u = 0;  // selected columns increase with their terms
            for (const int64_t c : column_of) {
                term_begin.push_back(static_cast<int64_t>(column.size()));
                if (c >= 0 && u < used.size() && used[u] == static_cast<int32_t>(c)) {
                    column.push_back(static_cast<int32_t>(u++));
                    weight.push_back(1.0);
                }
            }
            term_begin.push_back(static_cast<int64_t>(column.size()));
            auto renumber = [&](int32_t f) {
                if (f >= static_cast<int32_t>(start + V)) return f - static_cast<int32_t>(V) + K;
                if (f < static_cast<int32_t>(start)) return f;
                return static_cast<int32_t>(start) +
                       static_cast<int32_t>(std::lower_bound(used.begin(), used.end(), f - static_cast<int32_t>(start)) -
                                            used.begin());
            };
            for (spec::Tree& tree : p_.model.trees)
                for (size_t n = 0; n < tree.feature.size(); ++n)
                    if (tree.left[n] >= 0) tree.feature[n] = renumber(tree.feature[n]);
            for (int32_t& f : p_.model.inputs_without_missing_rule) f = renumber(f);
            p_.model.inputs_without_missing_rule.erase(
                std::unique(p_.model.inputs_without_missing_rule.begin(), p_.model.inputs_without_missing_rule.end()),
                p_.model.inputs_without_missing_rule.end());
            projections[static_cast<size_t>(id)] = {{"width", K}, {"term_begin", term_begin}, {"column", column},
                                                    {"weight", weight}, {"offset", std::vector<double>(K, 0.0)}};
            widths[static_cast<size_t>(id)] = static_cast<size_t>(K);
            num_features += K - static_cast<int64_t>(V);
            continue;
        }
        for (const int64_t c : column_of) {
            term_begin.push_back(static_cast<int64_t>(column.size()));
            if (c < 0) continue;  // a term the selection dropped: still in the norm, no weight
            for (size_t g = 0; g < G; ++g)
                if (coef[g][start + static_cast<size_t>(c)] != 0.0) {
                    column.push_back(static_cast<int32_t>(g));
                    weight.push_back(coef[g][start + static_cast<size_t>(c)]);
                }
        }
        term_begin.push_back(static_cast<int64_t>(column.size()));
        projections[static_cast<size_t>(id)] = {{"width", G}, {"term_begin", term_begin}, {"column", column},
                                                {"weight", weight}, {"offset", std::vector<double>(G, 0.0)}};
        for (size_t g = 0; g < G; ++g) {
            std::vector<double>& row = coef[g];
            std::vector<double> unit(G, 0.0);
            unit[g] = 1.0;
            row.erase(row.begin() + static_cast<std::ptrdiff_t>(start), row.begin() + static_cast<std::ptrdiff_t>(start + V));
            row.insert(row.begin() + static_cast<std::ptrdiff_t>(start), unit.begin(), unit.end());
        }
    }
    // The slots: the column's own input first, then inputs added after the document's.
    const size_t document_inputs = p_.features.size();
    std::vector<uint8_t> taken(document_inputs, 0);
    std::vector<std::vector<int32_t>> slots(vectorizers_.size());
    for (size_t id = 0; id < vectorizers_.size(); ++id) {
        const int32_t input = vectorizers_[id].input;
        const bool projected = vectorizers_[id].json.contains("projection");
        const size_t K = projected ? vectorizers_[id].json["projection"]["width"].get<size_t>() : widths[id];
        for (size_t k = 0; k < K; ++k) {
            if (k == 0 && !taken[static_cast<size_t>(input)]) {
                taken[static_cast<size_t>(input)] = 1;
                slots[id].push_back(input);
            } else {
                slots[id].push_back(static_cast<int32_t>(p_.features.size()));
                p_.features.push_back(p_.features[static_cast<size_t>(input)]);
            }
        }
        spec::TextVectorizer tv;
        tv.input = slots[id][0];
        tv.slots = slots[id];
        tv.vectorizer = std::move(vectorizers_[id].json);
        if (!projected) tv.vectorizer["projection"] = std::move(projections[id]);
        p_.text_vectorizers.push_back(std::move(tv));
    }
    if (!p_.steps.empty() && Document::is_vectorizer_marker(p_.steps[0], 0)) {
        // The pipeline's own input is the text: what follows reads the slots, in input order.
        if (document_inputs != 1 || vectorizers_.size() != 1)
            fail(ErrorCategory::Internal, "scikit-learn: a pipeline-level vectorizer over several inputs");
        p_.steps.erase(p_.steps.begin());
    }
    replace_markers(p_.steps, slots);
    if (has_marker(p_.steps)) refuse(model, "a text vectorizer in this place of the pipeline");
    if (linear_readers && linear) {
        p_.estimator.params["coef"] = spec::matrix_to_json(coef);
        p_.model.num_features = static_cast<int32_t>(coef.empty() ? 0 : coef[0].size());
    } else if (linear_readers) {
        p_.model.num_features = static_cast<int32_t>(num_features);
    }
}

}  // namespace pg_predict::importers::sklearn
