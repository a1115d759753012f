// ai.onnx.ml featurizers → featurizer steps: Scaler (affine), Normalizer (normalize), Imputer
// (impute), Binarizer (threshold), OneHotEncoder (one_hot; string categories read a text input
// through its vocabulary), LabelEncoder (one_hot, then the values by a projection; of a
// classifier's label: its classes mapped to numbers or names),
// ArrayFeatureExtractor (a gather of columns, or the classes of a label), FeatureVectorizer
// (a concat), ZipMap (the probabilities as they are: SQL returns them as an array).
#include <cmath>
#include <string>
#include <vector>

#include "graph.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::onnx_import {

namespace {

using nlohmann::json;
using Kind = Value::Kind;

// One value per column, or one for all.
std::vector<double> per_column(const Node& n, std::vector<double> v, size_t width, const char* what) {
    if (v.size() == 1) return std::vector<double>(width, v[0]);
    if (v.size() != width)
        n.bad(std::string(what) + " has " + std::to_string(v.size()) + " values for " + std::to_string(width) + " columns");
    return v;
}

void scaler(Node& n) {
    const Row& x = n.row_input(0);
    const size_t w = x.text.size();
    const std::vector<double> scale = per_column(n, n.numbers("scale", false).empty() ? std::vector<double>{1.0} : n.numbers("scale"), w, "scale");
    const std::vector<double> offset = per_column(n, n.numbers("offset", false).empty() ? std::vector<double>{0.0} : n.numbers("offset"), w, "offset");
    std::vector<double> shift;  // (x - offset) * scale
    for (size_t i = 0; i < w; ++i) shift.push_back(-offset[i] * scale[i]);
    n.set_output(0, row_value(n.graph, then(x, make_step("affine", {{"scale", spec::numbers_to_json(scale)},
                                                                     {"offset", spec::numbers_to_json(shift)}}), x.dims)));
}

void normalizer(Node& n) {
    const Value& x = n.input(0);
    const std::string norm = n.text("norm", "MAX");
    const char* spec_norm = norm == "L1" ? "l1" : norm == "L2" ? "l2" : norm == "MAX" ? "max" : nullptr;
    if (spec_norm == nullptr) n.bad("norm must be MAX, L1 or L2, not \"" + norm + "\"");
    // Rows that already sum to one (a softmax, a forest's averaged votes) stay as they are.
    if (x.kind == Kind::Scores && x.probabilities && norm == "L1") return n.set_output(0, x);
    const Row& r = n.row_input(0);
    if (r.dims.size() != 1) n.unsupported("Normalizer of a tensor other than [N, k]");
    Value v = row_value(n.graph, then(r, make_step("normalize", {{"norm", spec_norm}}), r.dims), norm == "L1", x.key);
    n.set_output(0, v);
}

void imputer(Node& n) {
    const Row& x = n.row_input(0);
    if (n.has("imputed_value_strings") || n.has("replaced_value_string")) n.unsupported("imputing strings");
    const double replaced = n.number("replaced_value_float", 0.0);
    if (!std::isnan(replaced)) n.unsupported("an Imputer that replaces " + std::to_string(replaced) + " (only NaN)");
    std::vector<double> values = n.numbers("imputed_value_floats", false);
    if (values.empty())
        for (int64_t v : n.integers("imputed_value_int64s", false)) values.push_back(static_cast<double>(v));
    if (values.empty()) n.bad("attribute imputed_value_floats is missing");
    for (double v : values) if (!std::isfinite(v)) n.bad("imputed values must be finite");
    for (int32_t t : x.text) if (t >= 0) n.unsupported("an Imputer of a string input");
    values = per_column(n, values, x.text.size(), "imputed_value_floats");
    n.set_output(0, row_value(n.graph, then(x, make_step("impute", {{"statistics", spec::numbers_to_json(values)}}), x.dims)));
}

void binarizer(Node& n) {
    const Row& x = n.row_input(0);
    const double t = n.number("threshold", 0.0);
    if (!std::isfinite(t)) n.bad("threshold must be finite");
    n.set_output(0, row_value(n.graph, then(x, make_step("threshold", {{"threshold", t}}), x.dims)));
}

// The categories of each column of x: numbers, or for a text column the vocabulary indices of
// the strings.
std::vector<std::vector<double>> categories(Node& n, const Row& x, const std::vector<std::string>& strings,
                                            const std::vector<int64_t>& ints, bool use_strings, const char* what) {
    std::vector<std::vector<double>> out;
    for (int32_t t : x.text) {
        std::vector<double> c;
        if (use_strings) {
            if (t < 0) n.unsupported(std::string(what) + " of a numeric column by string keys");
            for (const std::string& s : strings) c.push_back(n.graph.vocabulary_index(t, s));
        } else {
            if (t >= 0) n.unsupported(std::string(what) + " of a string input by integer keys");
            for (int64_t v : ints) c.push_back(static_cast<double>(v));
        }
        out.push_back(std::move(c));
    }
    return out;
}

void one_hot_encoder(Node& n) {
    const Row& x = n.row_input(0);
    const std::vector<std::string> strings = n.texts("cats_strings", false);
    const std::vector<int64_t> ints = n.integers("cats_int64s", false);
    if (strings.empty() == ints.empty()) n.bad("exactly one of cats_strings and cats_int64s must be given");
    const bool zeros = n.integer("zeros", 1) != 0;
    const auto cats = categories(n, x, strings, ints, !strings.empty(), "OneHotEncoder");
    if (!zeros) {
        for (int32_t t : x.text) {
            if (t < 0) n.unsupported("zeros = 0 (an error for an unknown category) on a numeric column");
            n.graph.unknown_is_error[static_cast<size_t>(t)] = true;
        }
    }
    std::vector<int64_t> dims = x.dims;
    dims.push_back(static_cast<int64_t>(strings.empty() ? ints.size() : strings.size()));
    n.set_output(0, row_value(n.graph, then(x, make_step("one_hot", {{"categories", spec::matrix_to_json(cats)},
                                                                      {"drop", std::vector<int32_t>(cats.size(), -1)}}), dims)));
}

Value mapped(Node& n, const Row& x, const std::vector<std::vector<double>>& cats, const std::vector<double>& values,
             double fallback);

// A label's classes mapped through the encoder (a classifier's class index to its name or
// number, as converters end a pipeline whose labels were encoded): decision column j's class c
// becomes the value of key c, or the default.
Value encode_label(Node& n, const Value& label, const std::vector<double>& keys, const std::vector<double>& values,
                   double fallback, const std::vector<std::string>& names, const std::string& fallback_name) {
    if (!label.label.names.empty()) n.unsupported("a LabelEncoder of a text label");
    Value v = label;
    std::vector<double> classes = label.label.classes;
    if (classes.empty()) {  // an ArgMax: the index of a column of the value it was taken from
        const Value& from = n.graph.values.at(label.label.tensor);
        const int64_t w = from.kind == Kind::Scores ? from.scores.columns : from.row.width();
        for (int64_t j = 0; j < w; ++j) classes.push_back(static_cast<double>(j));
    }
    v.label.classes.clear();
    v.label.names.clear();
    for (size_t j = 0; j < classes.size(); ++j) {
        const double c = classes[j];
        size_t at = keys.size();
        for (size_t i = 0; i < keys.size(); ++i)
            if (keys[i] == c) at = i;
        if (names.empty()) {
            v.label.classes.push_back(at < keys.size() ? values[at] : fallback);
        } else {
            v.label.names.push_back(at < keys.size() ? names[at] : fallback_name);
            v.label.classes.push_back(static_cast<double>(j));
        }
    }
    return v;
}

void label_encoder(Node& n) {
    if (n.graph.opsets.at("ai.onnx.ml") < 2) n.unsupported("LabelEncoder of ai.onnx.ml opset 1 (string to int maps)");
    const std::vector<std::string> strings = n.texts("keys_strings", false);
    std::vector<int64_t> ints = n.integers("keys_int64s", false);
    const std::vector<double> float_keys = n.numbers("keys_floats", false);
    if (static_cast<int>(!strings.empty()) + static_cast<int>(!ints.empty()) + static_cast<int>(!float_keys.empty()) != 1)
        n.bad("exactly one of keys_strings, keys_int64s and keys_floats must be given");
    std::vector<double> values = n.numbers("values_floats", false);
    double fallback = n.number("default_float", -0.0);
    if (values.empty()) {
        for (int64_t v : n.integers("values_int64s", false)) values.push_back(static_cast<double>(v));
        fallback = static_cast<double>(n.integer("default_int64", -1));
    }
    const std::vector<std::string> value_names = n.texts("values_strings", false);
    const size_t k = !strings.empty() ? strings.size() : !ints.empty() ? ints.size() : float_keys.size();
    if ((value_names.empty() ? values.size() : value_names.size()) != k)
        n.bad("has " + std::to_string(k) + " keys and " +
              std::to_string(value_names.empty() ? values.size() : value_names.size()) + " values");
    if (n.input(0).kind == Kind::Label) {
        if (!strings.empty()) n.unsupported("a LabelEncoder of a label by string keys");
        std::vector<double> keys = float_keys;
        for (int64_t v : ints) keys.push_back(static_cast<double>(v));
        return n.set_output(0, encode_label(n, n.input(0), keys, values, fallback, value_names,
                                            n.text("default_string", "_Unused")));
    }
    if (!value_names.empty()) n.unsupported("LabelEncoder to strings of a computed tensor (only of a classifier's label)");
    const Row& x = n.row_input(0);
    std::vector<std::vector<double>> cats;
    if (!float_keys.empty()) {
        for (int32_t t : x.text) {
            if (t >= 0) n.unsupported("LabelEncoder of a string input by float keys");
            cats.push_back(float_keys);
        }
    } else {
        cats = categories(n, x, strings, ints, !strings.empty(), "LabelEncoder");
    }
    n.set_output(0, mapped(n, x, cats, values, fallback));
}

// CategoryMapper: strings to integers (cats_strings[i] → cats_int64s[i], else default_int64).
void category_mapper(Node& n) {
    const Row& x = n.row_input(0);
    const std::vector<std::string> strings = n.texts("cats_strings");
    const std::vector<int64_t> ints = n.integers("cats_int64s");
    if (strings.size() != ints.size()) n.bad("cats_strings and cats_int64s must have equal lengths");
    for (int32_t t : x.text)
        if (t < 0) n.unsupported("a CategoryMapper of numbers to strings (only strings to integers)");
    std::vector<double> values;
    for (int64_t v : ints) values.push_back(static_cast<double>(v));
    const auto cats = categories(n, x, strings, {}, true, "CategoryMapper");
    n.set_output(0, mapped(n, x, cats, values, static_cast<double>(n.integer("default_int64", -1))));
}

// Each column of x mapped through its categories to `values` (a one-hot, then a projection),
// `fallback` where none matches.
Value mapped(Node& n, const Row& x, const std::vector<std::vector<double>>& cats, const std::vector<double>& values,
             double fallback) {
    const size_t k = values.size();
    const size_t w = x.text.size();
    Row hot = then(x, make_step("one_hot", {{"categories", spec::matrix_to_json(cats)}, {"drop", std::vector<int32_t>(w, -1)}}),
                   {static_cast<int64_t>(w * k)});
    // value = default + Σ_k onehot_k (value_k - default); one-hot entries are never NaN.
    std::vector<std::vector<double>> m(w, std::vector<double>(w * k, 0.0));
    for (size_t c = 0; c < w; ++c)
        for (size_t j = 0; j < k; ++j) m[c][c * k + j] = values[j] - fallback;
    return row_value(n.graph, then(hot, make_step("project", {{"matrix", spec::matrix_to_json(m)},
                                                               {"offset", spec::numbers_to_json(std::vector<double>(w, fallback))}}), x.dims));
}

void array_feature_extractor(Node& n) {
    const Value& x = n.input(0);
    const Value& i = n.input(1);
    if (x.kind == Kind::Constant && i.kind == Kind::Label) return n.set_output(0, label_classes(n, x.constant, i));
    Constant idx = n.constant_input(1);
    idx.shape = {static_cast<int64_t>(idx.values.size())};
    n.set_output(0, gather_row(n, n.row_input(0), idx, -1));
}

void feature_vectorizer(Node& n) {
    const std::vector<int64_t> dims = n.integers("inputdimensions");
    if (dims.size() != n.inputs()) n.bad("has " + std::to_string(n.inputs()) + " inputs and " + std::to_string(dims.size()) + " inputdimensions");
    std::vector<const Row*> parts;
    std::vector<Row> flat;
    flat.reserve(n.inputs());
    for (size_t i = 0; i < n.inputs(); ++i) {
        Row r = n.row_input(i);
        if (r.width() != dims[i])
            n.bad("input " + std::to_string(i) + " has " + std::to_string(r.width()) + " values per row, inputdimensions says " +
                  std::to_string(dims[i]));
        r.dims = {r.width()};
        flat.push_back(std::move(r));
    }
    for (const Row& r : flat) parts.push_back(&r);
    n.set_output(0, concat_rows(n, parts, 1));
}

void zip_map(Node& n) {
    const Value& x = n.input(0);
    if (x.kind != Kind::Row && x.kind != Kind::Scores) n.unsupported("ZipMap of a constant or a label");
    const size_t labels = n.integers("classlabels_int64s", false).size() + n.texts("classlabels_strings", false).size();
    const int64_t width = x.kind == Kind::Scores ? x.scores.columns : x.row.width();
    if (static_cast<int64_t>(labels) != width)
        n.bad("has " + std::to_string(labels) + " class labels for " + std::to_string(width) + " columns");
    n.set_output(0, x);
}

}  // namespace

void add_featurizer_ops(std::map<std::string, Handler>& t) {
    t["ai.onnx.ml:Scaler"] = scaler;
    t["ai.onnx.ml:Normalizer"] = normalizer;
    t["ai.onnx.ml:Imputer"] = imputer;
    t["ai.onnx.ml:Binarizer"] = binarizer;
    t["ai.onnx.ml:OneHotEncoder"] = one_hot_encoder;
    t["ai.onnx.ml:LabelEncoder"] = label_encoder;
    t["ai.onnx.ml:ArrayFeatureExtractor"] = array_feature_extractor;
    t["ai.onnx.ml:FeatureVectorizer"] = feature_vectorizer;
    t["ai.onnx.ml:ZipMap"] = zip_map;
    t["ai.onnx.ml:CategoryMapper"] = category_mapper;
}

}  // namespace pg_predict::importers::onnx_import
