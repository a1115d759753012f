// scikit-learn export documents (src/spec/SKLEARN_FORMAT.md) → pipeline spec: the inputs and
// task, the featurizer steps (composites here, the rest in featurizers.cpp) and the final
// estimator, each found in the registry (estimator_registry.cpp).
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
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

JsonReader step_reader(const JsonReader& step) {
    step.expect_object();
    return step.with_format("scikit-learn " + step.string("type"));
}

void refuse(const JsonReader& at, const std::string& what) { at.unsupported(what + " is not supported"); }

std::string string_choice(const JsonReader& step, const char* key, const char* fallback,
                          std::initializer_list<const char*> allowed) {
    const std::string value = step.string(key, fallback);
    for (const char* a : allowed)
        if (value == a) return value;
    refuse(step, "parameter " + std::string(key) + " = \"" + value + "\"");
}

// --- the document ----------------------------------------------------------------------------

void Document::run() {
    if (!root_.is_object()) root_.invalid("must be a JSON object");
    if (root_.string("format") != "sklearn") root_.need("format").invalid("must be \"sklearn\"");
    if (auto version = root_.optional("version");
        version && !(version->value().is_number_integer() && version->value().get<int64_t>() == 1))
        refuse(*version, "export format version " + version->value().dump());
    read_inputs();
    read_task();

    const JsonReader steps = root_.array("steps");
    if (steps.empty()) steps.invalid("must hold at least the model");
    Columns cols;  // per current column: the text input it carries, or -1
    for (size_t i = 0; i < p_.features.size(); ++i) cols.push_back(text_[i] ? static_cast<int32_t>(i) : -1);
    if (p_.task == spec::Task::Transform) {
        for (size_t i = 0; i < steps.size(); ++i) convert(steps[i], cols, p_.steps);
        read_transformer_output(steps[steps.size() - 1], cols);
    } else {
        for (size_t i = 0; i + 1 < steps.size(); ++i) convert(steps[i], cols, p_.steps);
        const size_t steps_before_model = p_.steps.size();
        read_model(steps[steps.size() - 1], cols);
        lower_text_vectorizers(steps[steps.size() - 1], cols, steps_before_model);
    }

    for (size_t i = 0; i < p_.features.size() && i < text_.size(); ++i) {
        if (!text_[i]) continue;
        const bool vectorized = std::any_of(p_.text_vectorizers.begin(), p_.text_vectorizers.end(),
                                            [&](const spec::TextVectorizer& v) { return v.input == static_cast<int32_t>(i); });
        if (vectorized) {
            if (!vocab_[i].empty())
                root_.invalid("reads the text input \"" + p_.features[i] +
                              "\" both with a vectorizer and with an encoder; only one of them may");
            continue;
        }
        spec::TextInput t;
        t.input = static_cast<int32_t>(i);
        t.vocabulary = vocab_[i];
        t.unknown_is_error = unknown_error_[i];
        p_.text_inputs.push_back(std::move(t));
    }
    spec::validate(p_);
}

void Document::read_inputs() {
    const JsonReader inputs = root_.array("inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
        const JsonReader input = inputs[i].expect_object();
        p_.features.push_back(input.string("name"));
        const std::string type = input.string("type", "numeric");
        if (type != "numeric" && type != "text")
            input.need("type").invalid("must be \"numeric\" or \"text\", not \"" + type + "\"");
        text_.push_back(type == "text");
    }
    vocab_.resize(inputs.size());
    index_.resize(inputs.size());
    unknown_error_.assign(inputs.size(), false);
}

// classes: all numbers (the labels predict() returns), or all strings, or all booleans (text
// labels for predict_label(); the spec's classes become the column indices).
void Document::read_classes(const JsonReader& classes) {
    if (classes.size() == 0) classes.invalid("must list at least one label");
    const auto kind_of = [](const nlohmann::json& v) {
        return v.is_number() ? "a number" : v.is_string() ? "a string" : v.is_boolean() ? "a boolean" : "";
    };
    const std::string kind = kind_of(classes.value()[0]);
    std::set<nlohmann::json> seen;
    for (size_t i = 0; i < classes.size(); ++i) {
        const nlohmann::json& v = classes.value()[i];
        if (kind_of(v)[0] == '\0')
            classes[i].invalid("must be a number, a string or a boolean, not " + v.dump());
        if (kind_of(v) != kind)
            classes[i].invalid("is " + std::string(kind_of(v)) + " where the first label is " + kind +
                               " (the labels of one classifier must all have one type)");
        if (!seen.insert(v).second) classes[i].invalid(v.dump() + " appears twice");
        if (v.is_number()) {
            p_.classes.push_back(v.get<double>());
            continue;
        }
        p_.classes.push_back(static_cast<double>(i));
        // Booleans as PostgreSQL writes them (true::text), so predict_label(...)::bool works.
        p_.class_labels.push_back(v.is_string() ? v.get<std::string>() : v.get<bool>() ? "true" : "false");
    }
}

void Document::read_task() {
    const JsonReader task = root_.need("task");
    const std::string name = task.string();
    if (name == "classification") {
        p_.task = spec::Task::Classification;
        if (auto outputs = root_.optional("outputs"))
            p_.outputs = static_cast<int32_t>(outputs->integer(1, spec::kMaxGroups));
        if (p_.outputs == 1) {
            read_classes(root_.array("classes"));
        } else {
            // A multi-output classifier: the labels of each output, numbers only (predict_outputs()
            // returns them as float8), flattened for its wrapper's importer to check and split.
            const JsonReader per_output = root_.array("classes");
            if (per_output.size() != static_cast<size_t>(p_.outputs))
                per_output.invalid("lists " + std::to_string(per_output.size()) + " outputs' labels, outputs is " +
                                   std::to_string(p_.outputs));
            for (size_t o = 0; o < per_output.size(); ++o) {
                const JsonReader labels = per_output[o].expect_array();
                for (size_t i = 0; i < labels.size(); ++i)
                    if (!labels.value()[i].is_number())
                        refuse(labels[i], "a label that is not a number in a multi-output classifier "
                                          "(predict_outputs() returns float8 labels)");
                const std::vector<double> v = labels.numbers();
                if (v.size() != 2)
                    refuse(labels, "an output of " + std::to_string(v.size()) +
                                       " labels (multi-output classifiers combine binary members)");
                if (v[0] == v[1]) labels.invalid("lists one label twice");
                p_.classes.insert(p_.classes.end(), v.begin(), v.end());
            }
        }
    } else if (name == "regression") {
        p_.task = spec::Task::Regression;
        // A multi-output regressor: predict gives `outputs` values per row (predict_outputs()).
        if (auto outputs = root_.optional("outputs"))
            p_.outputs = static_cast<int32_t>(outputs->integer(1, spec::kMaxGroups));
    } else if (name == "transformer") {
        p_.task = spec::Task::Transform;  // every step a featurizer: transform() gives the last one's columns
    } else if (name == "clustering") {
        refuse(task, "task \"clustering\"");
    } else {
        task.invalid("must be classification, regression, transformer or clustering, not \"" + name + "\"");
    }
    if (auto outputs = root_.optional("outputs"); outputs && p_.task == spec::Task::Transform &&
                                                   outputs->integer(1, spec::kMaxGroups) != 1)
        refuse(*outputs, "several outputs for a transformer");
}

std::string Document::text_name(const Columns& cols) const {
    for (int32_t c : cols)
        if (c >= 0) return p_.features[c];
    return "";
}

void Document::no_text(const JsonReader& step, const std::string& type, const Columns& cols) const {
    const std::string name = text_name(cols);
    if (!name.empty())
        step.invalid("(" + type + ") reads the text input \"" + name +
                     "\"; only OneHotEncoder and OrdinalEncoder can read text");
}

int32_t Document::vocabulary_index(int32_t input, const std::string& value) {
    auto [it, added] = index_[input].emplace(value, static_cast<int32_t>(vocab_[input].size()));
    if (added) vocab_[input].push_back(value);
    return it->second;
}

void Document::unknown_is_error(const Columns& cols) {
    for (int32_t c : cols)
        if (c >= 0) unknown_error_[c] = true;
}

// convert() recurses once per composite: bound it (the document's JSON depth is checked
// before parsing too, but import_sklearn also takes documents built in memory).
Document::Level::Level(Document& d, const JsonReader& step) : doc(d) {
    if (++doc.depth_ > spec::kMaxCompositeNesting) {
        --doc.depth_;
        refuse(step, "nesting Pipeline / ColumnTransformer / FeatureUnion deeper than " +
                         std::to_string(spec::kMaxCompositeNesting) + " levels");
    }
}

void Document::convert(const JsonReader& raw, Columns& cols, std::vector<spec::Step>& out) {
    check_interrupts();  // per step: nested compositions can be deep
    const JsonReader step = step_reader(raw);
    const std::string type = step.string("type");
    const Handler* h = find_handler(type);
    if (h == nullptr)
        step.unsupported("transformer \"" + type + "\" is not supported; supported: " + featurizer_names());
    if (h->featurizer == nullptr)
        step.unsupported(type + " is an estimator; only the last step may be one");
    if (type == "TruncatedSVD" && !cols.empty() && cols[0] <= -2) return project_text(*this, step, cols, out);
    if (type == "ColumnSelector" && !cols.empty() && cols[0] <= -2) return select_text(*this, step, cols, out);
    if (type == "Binarizer" && !cols.empty() && cols[0] <= -2) return binarize_text(*this, step, cols, out);
    if (type != "TfidfTransformer" && std::any_of(cols.begin(), cols.end(), [](int32_t c) { return c <= -2; }))
        refuse(step, type + " after a text vectorizer (what reads a vectorizer's columns: TfidfTransformer, a column "
                            "selection such as SelectKBest, TruncatedSVD, or as the last step a linear model, naive "
                            "Bayes or trees, directly or beside other columns in a ColumnTransformer or FeatureUnion)");
    h->featurizer(*this, step, cols, out);
}

// --- the final estimator ---------------------------------------------------------------------

// A pipeline that ends in a featurizer: its output columns are the result, and they must be
// numbers (a text column passed through to the end has no float8 value).
void Document::read_transformer_output(const JsonReader& last, const Columns& cols) {
    if (!vectorizers_.empty())
        refuse(last, "transform() of a text vectorizer (a sparse row as wide as its vocabulary)");
    const std::string name = text_name(cols);
    if (!name.empty())
        last.invalid("(the last step) passes the text input \"" + name +
                     "\" through to the output; transform() returns numbers: encode it with OneHotEncoder or "
                     "OrdinalEncoder");
    const int32_t width = static_cast<int32_t>(cols.size());
    if (width < 1) last.invalid("(the last step) outputs no columns");
    p_.source_format = "sklearn";
    p_.objective = step_reader(last).string("type");
    p_.model.num_features = width;
    p_.model.num_groups = width;
    p_.model.base_margin.assign(static_cast<size_t>(width), 0.0f);
    p_.model.comparison = spec::Comparison::LessEqual;
}

void Document::read_model(const JsonReader& raw, const Columns& cols) {
    const JsonReader step = step_reader(raw);
    const std::string type = step.string("type");
    const std::string name = text_name(cols);
    if (!name.empty())
        step.invalid("(" + type + ") reads the text input \"" + name +
                     "\" directly; encode it with OneHotEncoder or OrdinalEncoder");
    const int32_t width = static_cast<int32_t>(cols.size());
    p_.source_format = "sklearn";
    p_.objective = type;
    p_.model.num_features = width;
    p_.model.comparison = spec::Comparison::LessEqual;
    const Handler* h = find_handler(type);
    if (h == nullptr || h->estimator == nullptr)
        step.unsupported("estimator \"" + type + "\" is not supported" +
                         (h != nullptr ? " as the last step (it is a transformer)" : "") +
                         "; supported: " + estimator_names());
    const bool multi_output_classifiers = h->estimator == multi_output_classifier || h->estimator == classifier_chain ||
                                          h->estimator == decision_tree_classifier ||
                                          h->estimator == random_forest_classifier || h->estimator == extra_trees_classifier;
    if (p_.task == spec::Task::Classification && p_.outputs > 1 && !multi_output_classifiers)
        step.unsupported("is a single-output classifier, but the document's outputs is " + std::to_string(p_.outputs) +
                         " (multi-output classification: MultiOutputClassifier, ClassifierChain, decision trees and "
                         "forests)");
    if (p_.task == spec::Task::Classification && p_.classes.size() == 1) return one_class(step, h, type);
    h->estimator(step, width, p_);
    if (p_.task == spec::Task::Regression && p_.model.num_groups != p_.outputs)
        step.unsupported("predicts " + std::to_string(p_.model.num_groups) + " value(s) per row, but the document's "
                         "outputs is " + std::to_string(p_.outputs));
}

// A classifier fitted on a single class predicts it for every row, as scikit-learn does for
// the estimators it can fit so (the others refuse one class in fit). The program is the
// constant 1.0 (one output column), whatever the row: predict_proba is [1.0] where
// scikit-learn's is; it is refused where scikit-learn's has two columns [1 - p, p] for the
// one class (HistGradientBoostingClassifier, MLPClassifier) or does not exist.
void Document::one_class(const JsonReader& step, const Handler* h, const std::string& type) {
    if (h->one_class == OneClass::Refused)
        root_.need("classes").invalid("lists one label, but scikit-learn cannot fit " + type + " on one class");
    set_linear(p_, {std::vector<double>(static_cast<size_t>(p_.model.num_features), 0.0)}, {1.0},
               p_.model.num_features);
    p_.transform = spec::PostTransform::Identity;
    p_.has_probabilities = h->one_class == OneClass::ProbaIsOne;
}

// --- composites ------------------------------------------------------------------------------

void pipeline(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    Document::Level level(doc, step);
    const JsonReader steps = step.array("steps");
    for (size_t i = 0; i < steps.size(); ++i) doc.convert(steps[i], cols, out);
}

namespace {

// transformer_weights: scikit-learn multiplies the part's whole output by its weight (a
// weight of 0 keeps NaN as NaN, as NaN * 0 does there).
void apply_weight(const Document& doc, const JsonReader& part, const std::string& type, const Columns& cols,
                  std::vector<spec::Step>& out) {
    const auto w = part.optional("weight");
    if (!w) return;
    const double weight = w->number();
    if (!std::isfinite(weight)) w->invalid("must be a finite number");
    doc.no_text(part, type + " transformer_weights", cols);
    if (weight == 1.0 || cols.empty()) return;
    push_affine(out, std::vector<double>(cols.size(), weight), std::vector<double>(cols.size(), 0.0));
}

// ColumnTransformer (parts read chosen columns, then the remainder) and FeatureUnion (every
// part reads every column): a concat.
void concat(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out,
            bool column_transformer) {
    Document::Level level(doc, step);
    const std::string type = column_transformer ? "ColumnTransformer" : "FeatureUnion";
    const size_t w = cols.size();
    spec::Step s;
    s.op = spec::Op::Concat;
    Columns result;
    const JsonReader transformers = step.array("transformers");
    std::vector<JsonReader> all;
    for (size_t i = 0; i < transformers.size(); ++i) all.push_back(transformers[i]);
    if (column_transformer)
        if (auto rem = step.optional("remainder")) all.push_back(*rem);
    for (const JsonReader& part : all) {
        part.expect_object();
        spec::Step::Part sp;
        if (column_transformer) {
            sp.columns = part.array("columns").integers(0, static_cast<int64_t>(w) - 1);
        } else {
            for (size_t c = 0; c < w; ++c) sp.columns.push_back(static_cast<int32_t>(c));
        }
        Columns sub;
        for (int32_t c : sp.columns) sub.push_back(cols[c]);
        if (auto steps = part.optional("steps"))
            for (size_t i = 0; i < steps->size(); ++i) doc.convert((*steps)[i], sub, sp.steps);
        apply_weight(doc, part, type, sub, sp.steps);
        // Each FeatureUnion part reads the whole vector: unions in a row multiply the width.
        if (result.size() + sub.size() > static_cast<size_t>(spec::kMaxStepWidth))
            refuse(step, "an output wider than " + std::to_string(spec::kMaxStepWidth) + " columns");
        result.insert(result.end(), sub.begin(), sub.end());
        s.parts.push_back(std::move(sp));
    }
    if (s.parts.empty()) step.invalid("has no transformers");
    out.push_back(std::move(s));
    cols = std::move(result);
}

}  // namespace

void column_transformer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    concat(doc, step, cols, out, true);
}

void feature_union(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    concat(doc, step, cols, out, false);
}

}  // namespace pg_predict::importers::sklearn

namespace pg_predict::importers {

spec::Pipeline import_sklearn(const nlohmann::json& document) {
    spec::Pipeline p;
    try {
        sklearn::Document(spec::JsonReader(document, "scikit-learn"), p).run();
    } catch (const nlohmann::json::exception& e) {
        // Defensive: every access is type-checked by the reader, but a malformed document must
        // never escape as anything but InvalidModel.
        fail(ErrorCategory::InvalidModel, std::string("scikit-learn: the document is malformed: ") + e.what());
    }
    return p;
}

void import_sklearn_estimator(const nlohmann::json& step, int32_t num_features, spec::Pipeline& p) {
    const spec::JsonReader r = sklearn::step_reader(spec::JsonReader(step, "scikit-learn", "step"));
    const sklearn::Handler* h = sklearn::find_handler(r.string("type"));
    if (h == nullptr || h->estimator == nullptr)
        r.unsupported("estimator \"" + r.string("type") + "\" is not supported; supported: " +
                      sklearn::estimator_names());
    p.model.num_features = num_features;
    p.model.comparison = spec::Comparison::LessEqual;
    h->estimator(r, num_features, p);
}

}  // namespace pg_predict::importers
