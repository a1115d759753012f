// scikit-learn export documents (src/spec/SKLEARN_FORMAT.md) → pipeline spec: featurizer steps
// (scalers folded into one affine op, imputers, encoders, ColumnTransformer/FeatureUnion as
// concat) and the final model (linear models here, trees in sklearn_trees.cpp, naive Bayes,
// k-means, MLPs and kernel SVMs in sklearn_models.cpp).
//
// Decisions the exporter and users should know:
// - Numeric categories are compared with the float32 batch, so they are kept rounded to
//   float32.
// - handle_unknown = "error" is enforced for text inputs (the PostgreSQL side raises while
//   dictionary-encoding); for numeric columns an unseen value is encoded as if unknowns were
//   ignored: all zeros for OneHotEncoder, NaN for OrdinalEncoder.
// - Classifiers without predict_proba in scikit-learn (LinearSVC, Perceptron, RidgeClassifier,
//   SGDClassifier with a loss other than log_loss and modified_huber) output decision values
//   ([-d, d] when binary): their argmax is sklearn's predict, and has_probabilities is false.
//   SGDClassifier(loss="modified_huber") has predict_proba: (clip(d, -1, 1) + 1) / 2, normalized
//   over the classes when there are more than two (spec::PostTransform::ModifiedHuber).
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;

[[noreturn]] void malformed(const std::string& field, const std::string& what) {
    fail(ErrorCategory::InvalidModel, "scikit-learn export: " + field + " " + what);
}

[[noreturn]] void unsupported(const std::string& type, const std::string& what) {
    fail(ErrorCategory::Unsupported, "scikit-learn: " + type + ": " + what + " is not supported");
}

std::string at(const std::string& path, const std::string& key) { return path + "." + key; }
std::string item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

const json* find(const json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
}

const json& member(const json& obj, const std::string& path, const char* key) {
    const json* v = find(obj, key);
    if (v == nullptr) malformed(at(path, key), "is missing");
    return *v;
}

const json& array_of(const json& obj, const std::string& path, const char* key) {
    const json& v = member(obj, path, key);
    if (!v.is_array()) malformed(at(path, key), "must be an array");
    return v;
}

std::string string_of(const json& obj, const std::string& path, const char* key, const char* fallback = nullptr) {
    const json* v = find(obj, key);
    if (v == nullptr && fallback != nullptr) return fallback;
    if (v == nullptr) malformed(at(path, key), "is missing");
    if (!v->is_string()) malformed(at(path, key), "must be a string");
    return v->get<std::string>();
}

// Numbers: JSON numbers or "NaN" / "Infinity" / "-Infinity"; null is NaN where allowed.
double number(const json& v, const std::string& field, bool null_is_nan = false) {
    if (v.is_null() && null_is_nan) return NAN;
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s == "NaN" || s == "nan") return NAN;
        if (s == "Infinity" || s == "inf") return INFINITY;
        if (s == "-Infinity" || s == "-inf") return -INFINITY;
    }
    malformed(field, "must be a number");
}

std::vector<double> numbers(const json& obj, const std::string& path, const char* key) {
    const json& a = array_of(obj, path, key);
    std::vector<double> out;
    for (size_t i = 0; i < a.size(); ++i) out.push_back(number(a[i], item(at(path, key), i)));
    return out;
}

// A vector parameter of `width` entries, or `fallback` everywhere when null/absent.
std::vector<double> per_column(const json& step, const std::string& path, const char* key, size_t width,
                               double fallback) {
    if (find(step, key) == nullptr) return std::vector<double>(width, fallback);
    std::vector<double> v = numbers(step, path, key);
    if (v.size() != width)
        malformed(at(path, key), "has " + std::to_string(v.size()) + " entries for " + std::to_string(width) +
                                     " columns");
    return v;
}

double as_float32(double d) { return static_cast<double>(static_cast<float>(d)); }

class Importer {
public:
    Importer(const json& doc, spec::Pipeline& p) : doc_(doc), p_(p) {}

    void run() {
        if (!doc_.is_object()) malformed("document", "must be a JSON object");
        if (string_of(doc_, "document", "format") != "sklearn")
            malformed("format", "must be \"sklearn\"");
        const json* version = find(doc_, "version");
        if (version != nullptr && !(version->is_number_integer() && version->get<int64_t>() == 1))
            unsupported("document", "export format version " + version->dump());
        read_inputs();
        read_task();

        const json& steps = array_of(doc_, "document", "steps");
        if (steps.empty()) malformed("steps", "must hold at least the model");
        std::vector<int32_t> cols;  // per current column: the text input it carries, or -1
        for (size_t i = 0; i < p_.features.size(); ++i) cols.push_back(text_[i] ? static_cast<int32_t>(i) : -1);
        for (size_t i = 0; i + 1 < steps.size(); ++i) convert(steps[i], cols, item("steps", i), p_.steps);
        read_model(steps.back(), cols, item("steps", steps.size() - 1));

        for (size_t i = 0; i < p_.features.size(); ++i) {
            if (!text_[i]) continue;
            spec::TextInput t;
            t.input = static_cast<int32_t>(i);
            t.vocabulary = vocab_[i];
            t.unknown_is_error = unknown_error_[i];
            p_.text_inputs.push_back(std::move(t));
        }
        spec::validate(p_);
    }

private:
    const json& doc_;
    spec::Pipeline& p_;
    std::vector<bool> text_;
    std::vector<std::vector<std::string>> vocab_;
    std::vector<std::map<std::string, int32_t>> index_;
    std::vector<bool> unknown_error_;
    int composite_depth_ = 0;  // Pipeline / ColumnTransformer / FeatureUnion being converted

    // convert() recurses once per composite: bound it (the document's JSON depth is checked
    // before parsing too, but import_sklearn also takes documents built in memory).
    struct CompositeLevel {
        int& depth;
        CompositeLevel(int& d, const std::string& path) : depth(d) {
            if (++depth > spec::kMaxCompositeNesting)
                unsupported("document", "nesting Pipeline / ColumnTransformer / FeatureUnion deeper than " +
                                            std::to_string(spec::kMaxCompositeNesting) + " levels (at " +
                                            path + ")");
        }
        ~CompositeLevel() { --depth; }
    };

    void read_inputs() {
        const json& inputs = array_of(doc_, "document", "inputs");
        for (size_t i = 0; i < inputs.size(); ++i) {
            const std::string path = item("inputs", i);
            if (!inputs[i].is_object()) malformed(path, "must be an object");
            p_.features.push_back(string_of(inputs[i], path, "name"));
            const std::string type = string_of(inputs[i], path, "type", "numeric");
            if (type != "numeric" && type != "text")
                malformed(at(path, "type"), "must be \"numeric\" or \"text\", not \"" + type + "\"");
            text_.push_back(type == "text");
        }
        vocab_.resize(inputs.size());
        index_.resize(inputs.size());
        unknown_error_.assign(inputs.size(), false);
    }

    void read_task() {
        const std::string task = string_of(doc_, "document", "task");
        if (task == "classification") {
            p_.task = spec::Task::Classification;
            const json& classes = array_of(doc_, "document", "classes");
            for (size_t i = 0; i < classes.size(); ++i) {
                if (!classes[i].is_number())
                    unsupported("classes", "a non-numeric class label (" + classes[i].dump() + ")");
                p_.classes.push_back(classes[i].get<double>());
            }
            if (p_.classes.empty()) malformed("classes", "must list at least one label");
        } else if (task == "regression") {
            p_.task = spec::Task::Regression;
        } else if (task == "clustering") {
            unsupported("document", "task \"clustering\"");
        } else {
            malformed("task", "must be classification, regression or clustering, not \"" + task + "\"");
        }
    }

    std::string text_name(const std::vector<int32_t>& cols) const {
        for (int32_t c : cols)
            if (c >= 0) return p_.features[c];
        return "";
    }

    void no_text(const std::string& type, const std::vector<int32_t>& cols, const std::string& path) const {
        const std::string name = text_name(cols);
        if (!name.empty())
            malformed(path, "(" + type + ") reads the text input \"" + name +
                                "\"; only OneHotEncoder and OrdinalEncoder can read text");
    }

    int32_t vocabulary_index(int32_t input, const std::string& value) {
        auto [it, added] = index_[input].emplace(value, static_cast<int32_t>(vocab_[input].size()));
        if (added) vocab_[input].push_back(value);
        return it->second;
    }

    // categories of an encoder: per column, numbers (as the float32 batch holds them) or, for
    // a text input, indices into its vocabulary; NaN stands for a missing-value category.
    std::vector<std::vector<double>> categories(const json& step, const std::string& type,
                                                const std::vector<int32_t>& cols, const std::string& path) {
        if (const json* inf = find(step, "infrequent_categories"))
            for (const json& c : *inf)
                if (!c.is_null()) unsupported(type, "infrequent categories (min_frequency / max_categories)");
        const json& cats = array_of(step, path, "categories");
        if (cats.size() != cols.size())
            malformed(at(path, "categories"), "has " + std::to_string(cats.size()) + " columns, the step reads " +
                                                  std::to_string(cols.size()));
        std::vector<std::vector<double>> out(cats.size());
        for (size_t c = 0; c < cats.size(); ++c) {
            const std::string field = item(at(path, "categories"), c);
            if (!cats[c].is_array()) malformed(field, "must be an array");
            for (size_t k = 0; k < cats[c].size(); ++k) {
                const json& v = cats[c][k];
                if (cols[c] >= 0) {
                    if (v.is_null()) out[c].push_back(NAN);
                    else if (v.is_string()) out[c].push_back(vocabulary_index(cols[c], v.get<std::string>()));
                    else malformed(item(field, k), "must be a string: column " + std::to_string(c) +
                                                       " is the text input \"" + p_.features[cols[c]] + "\"");
                } else {
                    if (v.is_string() && v.get<std::string>() != "NaN" && v.get<std::string>() != "nan")
                        malformed(item(field, k), "is a string, but column " + std::to_string(c) +
                                                      " is numeric (declare the input as type \"text\")");
                    out[c].push_back(as_float32(number(v, item(field, k), true)));
                }
            }
        }
        return out;
    }

    void unknown_is_error(const std::vector<int32_t>& cols) {
        for (int32_t c : cols)
            if (c >= 0) unknown_error_[c] = true;
    }

    static void push_affine(std::vector<spec::Step>& out, std::vector<double> scale, std::vector<double> offset) {
        if (!out.empty() && out.back().op == spec::Op::Affine) {
            // (x * s1 + o1) * s2 + o2 = x * (s1 s2) + (o1 s2 + o2)
            spec::Step& prev = out.back();
            std::vector<double> s1 = spec::param_vector(prev, "scale", "affine");
            std::vector<double> o1 = spec::param_vector(prev, "offset", "affine");
            for (size_t c = 0; c < scale.size(); ++c) {
                offset[c] = o1[c] * scale[c] + offset[c];
                scale[c] = s1[c] * scale[c];
            }
            out.pop_back();
        }
        spec::Step s;
        s.op = spec::Op::Affine;
        s.params = {{"scale", spec::numbers_to_json(scale)}, {"offset", spec::numbers_to_json(offset)}};
        out.push_back(std::move(s));
    }

    // (x - center) / scale
    static void push_standardize(std::vector<spec::Step>& out, const std::vector<double>& center,
                                 const std::vector<double>& scale, const std::string& type, const std::string& path) {
        std::vector<double> s(scale.size()), o(scale.size());
        for (size_t c = 0; c < scale.size(); ++c) {
            if (scale[c] == 0 || !std::isfinite(scale[c]) || !std::isfinite(center[c]))
                malformed(path, "(" + type + ") has a zero or non-finite scale or center in column " +
                                    std::to_string(c));
            s[c] = 1.0 / scale[c];
            o[c] = -center[c] / scale[c];
        }
        push_affine(out, std::move(s), std::move(o));
    }

    // transformer_weights: scikit-learn multiplies the part's whole output by its weight (a
    // weight of 0 keeps NaN as NaN, as NaN * 0 does there).
    void apply_weight(const json& part, const std::string& ppath, const std::string& type,
                      const std::vector<int32_t>& cols, std::vector<spec::Step>& out) const {
        const json* w = find(part, "weight");
        if (w == nullptr) return;
        const double weight = number(*w, at(ppath, "weight"));
        if (!std::isfinite(weight)) malformed(at(ppath, "weight"), "must be a finite number");
        no_text(type + " transformer_weights", cols, ppath);
        if (weight == 1.0 || cols.empty()) return;
        push_affine(out, std::vector<double>(cols.size(), weight), std::vector<double>(cols.size(), 0.0));
    }

    void convert(const json& step, std::vector<int32_t>& cols, const std::string& path, std::vector<spec::Step>& out) {
        check_interrupts();  // per step: nested compositions can be deep
        if (!step.is_object()) malformed(path, "must be an object");
        const std::string type = string_of(step, path, "type");
        const size_t w = cols.size();
        if (type == "Pipeline") {
            CompositeLevel level(composite_depth_, path);
            const json& steps = array_of(step, path, "steps");
            for (size_t i = 0; i < steps.size(); ++i) convert(steps[i], cols, item(at(path, "steps"), i), out);
        } else if (type == "ColumnTransformer" || type == "FeatureUnion") {
            CompositeLevel level(composite_depth_, path);
            spec::Step s;
            s.op = spec::Op::Concat;
            std::vector<int32_t> result;
            const json& parts = array_of(step, path, "transformers");
            std::vector<std::pair<const json*, std::string>> all;
            for (size_t i = 0; i < parts.size(); ++i) all.emplace_back(&parts[i], item(at(path, "transformers"), i));
            if (type == "ColumnTransformer")
                if (const json* rem = find(step, "remainder")) all.emplace_back(rem, at(path, "remainder"));
            for (const auto& [part, ppath] : all) {
                if (!part->is_object()) malformed(ppath, "must be an object");
                spec::Step::Part sp;
                if (type == "ColumnTransformer") {
                    const json& columns = array_of(*part, ppath, "columns");
                    for (size_t i = 0; i < columns.size(); ++i) {
                        if (!columns[i].is_number_integer() || columns[i].get<int64_t>() < 0 ||
                            columns[i].get<int64_t>() >= static_cast<int64_t>(w))
                            malformed(item(at(ppath, "columns"), i),
                                      "must be a column index in [0, " + std::to_string(w) + ")");
                        sp.columns.push_back(columns[i].get<int32_t>());
                    }
                } else {
                    for (size_t c = 0; c < w; ++c) sp.columns.push_back(static_cast<int32_t>(c));
                }
                std::vector<int32_t> sub;
                for (int32_t c : sp.columns) sub.push_back(cols[c]);
                const json* steps = find(*part, "steps");
                if (steps != nullptr && !steps->is_array()) malformed(at(ppath, "steps"), "must be an array");
                if (steps != nullptr)
                    for (size_t i = 0; i < steps->size(); ++i)
                        convert((*steps)[i], sub, item(at(ppath, "steps"), i), sp.steps);
                apply_weight(*part, ppath, type, sub, sp.steps);
                // Each FeatureUnion part reads the whole vector: unions in a row multiply the width.
                if (result.size() + sub.size() > static_cast<size_t>(spec::kMaxStepWidth))
                    unsupported(type, "an output wider than " + std::to_string(spec::kMaxStepWidth) +
                                          " columns (at " + path + ")");
                result.insert(result.end(), sub.begin(), sub.end());
                s.parts.push_back(std::move(sp));
            }
            if (s.parts.empty()) malformed(path, "(" + type + ") has no transformers");
            out.push_back(std::move(s));
            cols = std::move(result);
        } else if (type == "StandardScaler") {
            no_text(type, cols, path);
            push_standardize(out, per_column(step, path, "mean", w, 0.0), per_column(step, path, "scale", w, 1.0),
                             type, path);
        } else if (type == "RobustScaler") {
            no_text(type, cols, path);
            push_standardize(out, per_column(step, path, "center", w, 0.0), per_column(step, path, "scale", w, 1.0),
                             type, path);
        } else if (type == "MaxAbsScaler") {
            no_text(type, cols, path);
            push_standardize(out, std::vector<double>(w, 0.0), per_column(step, path, "scale", w, 1.0), type, path);
        } else if (type == "MinMaxScaler") {
            no_text(type, cols, path);
            push_affine(out, per_column(step, path, "scale", w, 1.0), per_column(step, path, "min", w, 0.0));
            // clip: the scaled value clipped to feature_range, as scikit-learn does after scaling.
            if (const json* clip = find(step, "clip"); clip != nullptr) {
                if (!clip->is_boolean()) malformed(at(path, "clip"), "must be a boolean");
                if (clip->get<bool>()) {
                    const std::vector<double> range = numbers(step, path, "feature_range");
                    if (range.size() != 2 || !std::isfinite(range[0]) || !std::isfinite(range[1]) ||
                        !(range[0] < range[1]))
                        malformed(at(path, "feature_range"), "must be [min, max] with finite min < max");
                    spec::Step s;
                    s.op = spec::Op::Clip;
                    s.params = {{"min", range[0]}, {"max", range[1]}};
                    out.push_back(std::move(s));
                }
            }
        } else if (type == "SimpleImputer") {
            convert_imputer(step, cols, path, out);
        } else if (type == "OneHotEncoder") {
            spec::Step s;
            s.op = spec::Op::OneHot;
            const auto cats = categories(step, type, cols, path);
            const std::string unknown = string_of(step, path, "handle_unknown", "error");
            if (unknown == "error") unknown_is_error(cols);
            else if (unknown != "ignore" && unknown != "infrequent_if_exist")
                unsupported(type, "parameter handle_unknown = \"" + unknown + "\"");
            std::vector<int32_t> drop(w, -1);
            if (const json* d = find(step, "drop_idx")) {
                if (!d->is_array() || d->size() != w)
                    malformed(at(path, "drop_idx"), "must be null or an array of " + std::to_string(w) + " entries");
                for (size_t c = 0; c < w; ++c) {
                    const json& v = (*d)[c];
                    if (v.is_null()) continue;
                    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
                        v.get<int64_t>() >= static_cast<int64_t>(cats[c].size()))
                        malformed(item(at(path, "drop_idx"), c), "must be null or a category index");
                    drop[c] = v.get<int32_t>();
                }
            }
            json jc = json::array();
            size_t width = 0;
            for (size_t c = 0; c < w; ++c) {
                jc.push_back(spec::numbers_to_json(cats[c]));
                width += cats[c].size() - (drop[c] >= 0 ? 1 : 0);
            }
            s.params = {{"categories", jc}, {"drop", drop}};
            out.push_back(std::move(s));
            cols.assign(width, -1);
        } else if (type == "OrdinalEncoder") {
            spec::Step s;
            s.op = spec::Op::Ordinal;
            const auto cats = categories(step, type, cols, path);
            const std::string unknown = string_of(step, path, "handle_unknown", "error");
            double unknown_value = NAN;
            if (unknown == "error") {
                unknown_is_error(cols);
            } else if (unknown == "use_encoded_value") {
                unknown_value = number(member(step, path, "unknown_value"), at(path, "unknown_value"), true);
            } else {
                unsupported(type, "parameter handle_unknown = \"" + unknown + "\"");
            }
            const json* missing = find(step, "encoded_missing_value");
            const double missing_value = missing ? number(*missing, at(path, "encoded_missing_value"), true) : NAN;
            json jc = json::array();
            for (const auto& c : cats) jc.push_back(spec::numbers_to_json(c));
            s.params = {{"categories", jc},
                        {"unknown_value", spec::number_to_json(unknown_value)},
                        {"missing_value", spec::number_to_json(missing_value)}};
            out.push_back(std::move(s));
            cols.assign(w, -1);
        } else if (type == "ColumnSelector" || type == "MissingIndicator") {
            // A selection of columns (get_support() of VarianceThreshold, SelectKBest, ...; the
            // features_ of MissingIndicator, then 1 where missing): a concat of one part.
            const char* key = type == "ColumnSelector" ? "columns" : "features";
            const json& columns = array_of(step, path, key);
            spec::Step s;
            s.op = spec::Op::Concat;
            spec::Step::Part part;
            std::vector<int32_t> sub;
            for (size_t i = 0; i < columns.size(); ++i) {
                if (!columns[i].is_number_integer() || columns[i].get<int64_t>() < 0 ||
                    columns[i].get<int64_t>() >= static_cast<int64_t>(w))
                    malformed(item(at(path, key), i), "must be a column index in [0, " + std::to_string(w) + ")");
                part.columns.push_back(columns[i].get<int32_t>());
                sub.push_back(cols[part.columns.back()]);
            }
            if (part.columns.empty()) unsupported(type, "selecting no column");
            if (type == "MissingIndicator") {
                if (const json* mv = find(step, "missing_values");
                    mv != nullptr && !std::isnan(number(*mv, at(path, "missing_values"), true)))
                    unsupported(type, "parameter missing_values = " + mv->dump() + " (only NaN)");
                no_text(type, sub, path);
                spec::Step m;
                m.op = spec::Op::IsMissing;
                m.params = json::object();
                part.steps.push_back(std::move(m));
            }
            s.parts.push_back(std::move(part));
            out.push_back(std::move(s));
            cols = std::move(sub);
        } else if (type == "Binarizer") {
            no_text(type, cols, path);
            const double t = number(member(step, path, "threshold"), at(path, "threshold"));
            if (std::isnan(t)) unsupported(type, "parameter threshold = NaN");
            spec::Step s;
            s.op = spec::Op::Threshold;
            s.params = {{"threshold", spec::number_to_json(t)}};
            out.push_back(std::move(s));
        } else if (type == "Normalizer") {
            no_text(type, cols, path);
            const std::string norm = string_of(step, path, "norm", "l2");
            if (norm != "l1" && norm != "l2" && norm != "max")
                unsupported(type, "parameter norm = \"" + norm + "\"");
            spec::Step s;
            s.op = spec::Op::Normalize;
            s.params = {{"norm", norm}};
            out.push_back(std::move(s));
        } else if (type == "PCA" || type == "TruncatedSVD") {
            // (x - mean) · componentsᵀ [/ sqrt(explained_variance)] = x · Mᵀ - M · mean.
            no_text(type, cols, path);
            const json& comp = array_of(step, path, "components");
            std::vector<std::vector<double>> m;
            for (size_t r = 0; r < comp.size(); ++r) {
                const std::string rp = item(at(path, "components"), r);
                if (!comp[r].is_array() || comp[r].size() != w)
                    malformed(rp, "must be an array of " + std::to_string(w) + " numbers");
                m.emplace_back();
                for (size_t c = 0; c < w; ++c) m.back().push_back(number(comp[r][c], item(rp, c)));
            }
            if (m.empty()) malformed(at(path, "components"), "must not be empty");
            const std::vector<double> mean = per_column(step, path, "mean", w, 0.0);
            const json* whiten = find(step, "whiten");
            if (whiten != nullptr && !whiten->is_boolean()) malformed(at(path, "whiten"), "must be a boolean");
            if (whiten != nullptr && whiten->get<bool>()) {
                if (type != "PCA") unsupported(type, "parameter whiten");
                const std::vector<double> ev = per_column(step, path, "explained_variance", m.size(), 1.0);
                for (size_t r = 0; r < m.size(); ++r) {
                    if (!(ev[r] > 0.0))
                        unsupported(type, "parameter whiten with a zero explained_variance (component " +
                                              std::to_string(r) + ")");
                    const double d = std::sqrt(ev[r]);
                    for (double& v : m[r]) v /= d;
                }
            }
            std::vector<double> offset(m.size(), 0.0);
            json rows = json::array();
            for (size_t r = 0; r < m.size(); ++r) {
                for (size_t c = 0; c < w; ++c) offset[r] -= m[r][c] * mean[c];
                rows.push_back(spec::numbers_to_json(m[r]));
            }
            spec::Step s;
            s.op = spec::Op::Project;
            s.params = {{"matrix", rows}, {"offset", spec::numbers_to_json(offset)}};
            out.push_back(std::move(s));
            cols.assign(m.size(), -1);
        } else if (type == "KBinsDiscretizer") {
            // The bin index (searchsorted of the inner edges, side "right"), then for onehot a
            // 0/1 per bin.
            no_text(type, cols, path);
            const json& be = array_of(step, path, "bin_edges");
            if (be.size() != w)
                malformed(at(path, "bin_edges"), "has " + std::to_string(be.size()) + " entries for " +
                                                     std::to_string(w) + " columns");
            const std::string encode = string_of(step, path, "encode", "ordinal");
            if (encode != "ordinal" && encode != "onehot" && encode != "onehot-dense")
                unsupported(type, "parameter encode = \"" + encode + "\"");
            json inner = json::array(), cats = json::array();
            size_t width = 0;
            for (size_t c = 0; c < w; ++c) {
                const std::string cp = item(at(path, "bin_edges"), c);
                if (!be[c].is_array() || be[c].size() < 2) malformed(cp, "must be an array of at least 2 edges");
                std::vector<double> edges;
                for (size_t i = 1; i + 1 < be[c].size(); ++i) edges.push_back(number(be[c][i], item(cp, i)));
                inner.push_back(spec::numbers_to_json(edges));
                std::vector<double> bins;
                for (size_t b = 0; b + 1 < be[c].size(); ++b) bins.push_back(static_cast<double>(b));
                cats.push_back(spec::numbers_to_json(bins));
                width += bins.size();
            }
            spec::Step s;
            s.op = spec::Op::Bucketize;
            s.params = {{"edges", inner}};
            out.push_back(std::move(s));
            if (encode != "ordinal") {
                spec::Step oh;
                oh.op = spec::Op::OneHot;
                oh.params = {{"categories", cats}, {"drop", std::vector<int32_t>(w, -1)}};
                out.push_back(std::move(oh));
                cols.assign(width, -1);
            } else {
                cols.assign(w, -1);
            }
        } else if (type == "PolynomialFeatures") {
            // powers_: one row per output column, the power of each input column.
            no_text(type, cols, path);
            const json& pw = array_of(step, path, "powers");
            if (pw.empty()) malformed(at(path, "powers"), "must not be empty");
            json rows = json::array();
            for (size_t k = 0; k < pw.size(); ++k) {
                const std::string rp = item(at(path, "powers"), k);
                if (!pw[k].is_array() || pw[k].size() != w)
                    malformed(rp, "must be an array of " + std::to_string(w) + " powers");
                for (size_t c = 0; c < w; ++c)
                    if (!pw[k][c].is_number_integer() || pw[k][c].get<int64_t>() < 0 || pw[k][c].get<int64_t>() > 64)
                        malformed(item(rp, c), "must be an integer power in [0, 64]");
                rows.push_back(pw[k]);
            }
            spec::Step s;
            s.op = spec::Op::Monomials;
            s.params = {{"powers", rows}};
            out.push_back(std::move(s));
            cols.assign(pw.size(), -1);
        } else if (type == "FunctionTransformer") {
            // func null is the identity; else an element-wise numpy ufunc, by name.
            const json* f = find(step, "func");
            if (f == nullptr) return;
            if (!f->is_string()) malformed(at(path, "func"), "must be a string (a numpy ufunc name)");
            if (const json* kw = find(step, "kw_args"); kw != nullptr && !kw->empty())
                unsupported(type, "parameter kw_args");
            const std::string name = f->get<std::string>();
            if (!spec::is_elementwise_function(name))
                unsupported(type, "parameter func = \"" + name + "\" (not a known element-wise numpy ufunc)");
            no_text(type, cols, path);
            spec::Step s;
            s.op = spec::Op::Elementwise;
            s.params = {{"function", name}};
            out.push_back(std::move(s));
            cols.assign(w, -1);
        } else {
            unsupported(type, "the transformer");
        }
    }

    // NaN → statistic. A text column stays a text input: its statistic (a string) becomes its
    // vocabulary index. A NaN statistic (strategy "constant" with fill_value NaN) leaves NaN;
    // the exporter refuses the case where scikit-learn drops an all-missing column.
    void convert_imputer(const json& step, std::vector<int32_t>& cols, const std::string& path,
                         std::vector<spec::Step>& out) {
        const std::string type = "SimpleImputer";
        if (const json* mv = find(step, "missing_values"); mv != nullptr && !std::isnan(number(*mv, at(path, "missing_values"), true)))
            unsupported(type, "parameter missing_values = " + mv->dump() + " (only NaN)");
        if (const json* ind = find(step, "add_indicator"); ind != nullptr && ind->is_boolean() && ind->get<bool>())
            unsupported(type, "parameter add_indicator = true");
        const json& stats = array_of(step, path, "statistics");
        if (stats.size() != cols.size())
            malformed(at(path, "statistics"), "has " + std::to_string(stats.size()) + " entries for " +
                                                  std::to_string(cols.size()) + " columns");
        std::vector<double> values;
        for (size_t c = 0; c < stats.size(); ++c) {
            const std::string field = item(at(path, "statistics"), c);
            if (cols[c] >= 0) {
                if (!stats[c].is_string())
                    malformed(field, "must be a string: column " + std::to_string(c) + " is the text input \"" +
                                         p_.features[cols[c]] + "\"");
                values.push_back(vocabulary_index(cols[c], stats[c].get<std::string>()));
            } else {
                if (stats[c].is_string() && stats[c] != "NaN" && stats[c] != "nan")
                    malformed(field, "is a string, but column " + std::to_string(c) +
                                         " is numeric (declare the input as type \"text\")");
                values.push_back(number(stats[c], field, true));
            }
        }
        spec::Step s;
        s.op = spec::Op::Impute;
        s.params = {{"statistics", spec::numbers_to_json(values)}};
        out.push_back(std::move(s));
    }

    // --- the final model ----------------------------------------------------------------

    void read_model(const json& step, const std::vector<int32_t>& cols, const std::string& path) {
        if (!step.is_object()) malformed(path, "must be an object");
        const std::string type = string_of(step, path, "type");
        const std::string name = text_name(cols);
        if (!name.empty())
            malformed(path, "(" + type + ") reads the text input \"" + name +
                                "\" directly; encode it with OneHotEncoder or OrdinalEncoder");
        const int32_t width = static_cast<int32_t>(cols.size());
        p_.source_format = "sklearn";
        p_.objective = type;
        p_.model.num_features = width;
        p_.model.comparison = spec::Comparison::LessEqual;
        static const char* kRegressors[] = {"LinearRegression", "Ridge",        "Lasso",    "ElasticNet",
                                            "SGDRegressor",     "LinearSVR"};
        static const char* kClassifiers[] = {"LogisticRegression", "SGDClassifier", "LinearSVC", "Perceptron",
                                             "RidgeClassifier"};
        if (p_.task == spec::Task::Classification && p_.classes.size() == 1) return one_class(type);
        for (const char* r : kRegressors)
            if (type == r) return linear_regressor(step, type, path);
        for (const char* c : kClassifiers)
            if (type == c) return linear_classifier(step, type, path);
        if (import_sklearn_tree_model(step, width, p_)) return;
        if (import_sklearn_other_model(step, path, width, p_)) return;
        unsupported(type, "the estimator");
    }

    // A classifier fitted on a single class predicts it for every row, as scikit-learn does for
    // the estimators it can fit so (the others refuse one class in fit). The program is the
    // constant 1.0 (one output column), whatever the row: predict_proba is [1.0] where
    // scikit-learn's is; it is refused where scikit-learn's has two columns [1 - p, p] for the
    // one class (HistGradientBoostingClassifier, MLPClassifier) or does not exist.
    void one_class(const std::string& type) {
        static const std::map<std::string, bool> kProbaIsOne = {
            {"DecisionTreeClassifier", true},          {"RandomForestClassifier", true},
            {"ExtraTreesClassifier", true},            {"GaussianNB", true},
            {"MultinomialNB", true},                   {"BernoulliNB", true},
            {"HistGradientBoostingClassifier", false}, {"MLPClassifier", false},
            {"RidgeClassifier", false},                {"KMeans", false},
            {"MiniBatchKMeans", false}};
        const auto it = kProbaIsOne.find(type);
        if (it == kProbaIsOne.end())
            malformed("classes", "lists one label, but scikit-learn cannot fit " + type + " on one class");
        set_linear({std::vector<double>(static_cast<size_t>(p_.model.num_features), 0.0)}, {1.0});
        p_.transform = spec::PostTransform::Identity;
        p_.has_probabilities = it->second;
    }

    std::vector<std::vector<double>> coef_rows(const json& step, const std::string& path) {
        const json& coef = array_of(step, path, "coef");
        std::vector<std::vector<double>> rows;
        if (!coef.empty() && coef[0].is_array()) {
            for (size_t r = 0; r < coef.size(); ++r) {
                if (!coef[r].is_array()) malformed(item(at(path, "coef"), r), "must be an array");
                rows.emplace_back();
                for (size_t i = 0; i < coef[r].size(); ++i)
                    rows.back().push_back(number(coef[r][i], item(item(at(path, "coef"), r), i)));
            }
        } else {
            rows.push_back(numbers(step, path, "coef"));
        }
        for (size_t r = 0; r < rows.size(); ++r)
            if (rows[r].size() != static_cast<size_t>(p_.model.num_features))
                malformed(item(at(path, "coef"), r), "has " + std::to_string(rows[r].size()) +
                                                         " coefficients, the model reads " +
                                                         std::to_string(p_.model.num_features) + " features");
        return rows;
    }

    std::vector<double> intercepts(const json& step, const std::string& path, size_t k) {
        const json* v = find(step, "intercept");
        std::vector<double> out;
        if (v == nullptr) out.assign(k, 0.0);
        else if (v->is_array()) out = numbers(step, path, "intercept");
        else out.assign(1, number(*v, at(path, "intercept")));
        if (out.size() != k)
            malformed(at(path, "intercept"), "has " + std::to_string(out.size()) + " entries for " +
                                                 std::to_string(k) + " coef rows");
        return out;
    }

    void set_linear(std::vector<std::vector<double>> coef, std::vector<double> intercept) {
        p_.model.num_groups = static_cast<int32_t>(coef.size());
        p_.model.base_margin.assign(coef.size(), 0.0f);
        json rows = json::array();
        for (const auto& r : coef) rows.push_back(spec::numbers_to_json(r));
        p_.estimator.op = spec::Op::Linear;
        p_.estimator.params = {{"coef", rows}, {"intercept", spec::numbers_to_json(intercept)}};
    }

    void linear_regressor(const json& step, const std::string& type, const std::string& path) {
        if (p_.task != spec::Task::Regression)
            malformed("task", "is classification, but the model " + type + " is a regressor");
        auto coef = coef_rows(step, path);
        if (coef.size() != 1) unsupported(type, "multi-output regression (" + std::to_string(coef.size()) + " targets)");
        set_linear(std::move(coef), intercepts(step, path, 1));
        p_.transform = spec::PostTransform::Identity;
    }

    void linear_classifier(const json& step, const std::string& type, const std::string& path) {
        if (p_.task != spec::Task::Classification)
            malformed("task", "is regression, but the model " + type + " is a classifier");
        auto coef = coef_rows(step, path);
        const size_t k = coef.size();
        std::vector<double> b = intercepts(step, path, k);
        const size_t n = p_.classes.size();
        if (k == 1 ? n != 2 : k != n)
            malformed(at(path, "coef"), "has " + std::to_string(k) + " rows for " + std::to_string(n) +
                                            " classes (one row when binary, else one per class)");
        bool proba = false, modified_huber = false;
        std::string multi = "ovr";
        if (type == "LogisticRegression") {
            proba = true;
            multi = string_of(step, path, "multi_class", "auto");
            if (multi == "auto")
                multi = k == 1 || string_of(step, path, "solver", "lbfgs") == "liblinear" ? "ovr" : "multinomial";
            if (multi != "ovr" && multi != "multinomial")
                unsupported(type, "parameter multi_class = \"" + multi + "\"");
        } else if (type == "SGDClassifier") {
            const std::string loss = string_of(step, path, "loss", "hinge");
            modified_huber = loss == "modified_huber";
            proba = loss == "log_loss" || loss == "log" || modified_huber;
        }
        if (modified_huber) {
            // predict is the sign (binary) or the argmax of the decision values, which the
            // transform keeps next to the probabilities when there are more than two classes.
            p_.transform = spec::PostTransform::ModifiedHuber;
        } else if (!proba) {
            // Decision values; a binary model's d becomes [-d, d] so that argmax is sklearn's
            // predict (d > 0 → classes[1], ties → classes[0]).
            if (k == 1) {
                std::vector<double> neg(coef[0]);
                for (double& d : neg) d = -d;
                coef.insert(coef.begin(), std::move(neg));
                b = {-b[0], b[0]};
            }
            p_.has_probabilities = false;
            p_.transform = spec::PostTransform::Identity;
        } else if (k == 1) {
            // Binary: ovr gives [1 - σ(d), σ(d)]; multinomial softmax([-d, d]) = σ(±2d).
            if (multi == "multinomial") {
                for (double& d : coef[0]) d *= 2.0;
                b[0] *= 2.0;
            }
            p_.transform = spec::PostTransform::Logistic;
        } else {
            p_.transform = multi == "multinomial" ? spec::PostTransform::Softmax : spec::PostTransform::Ovr;
        }
        set_linear(std::move(coef), std::move(b));
    }
};

}  // namespace

spec::Pipeline import_sklearn(const nlohmann::json& document) {
    spec::Pipeline p;
    Importer(document, p).run();
    return p;
}

}  // namespace pg_predict::importers
