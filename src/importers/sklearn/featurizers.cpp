// scikit-learn featurizers → spec steps: scalers folded into one affine op, imputers,
// encoders, column selections, Binarizer, Normalizer, PCA / TruncatedSVD, KBinsDiscretizer,
// PolynomialFeatures, FunctionTransformer, PowerTransformer, QuantileTransformer,
// KernelPCA (python/pg_predict/featurizers.py writes them).
#include <cmath>
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

void push_affine(std::vector<spec::Step>& out, std::vector<double> scale, std::vector<double> offset) {
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
    out.push_back(make_step(spec::Op::Affine,
                            {{"scale", spec::numbers_to_json(scale)}, {"offset", spec::numbers_to_json(offset)}}));
}

namespace {

double as_float32(double d) { return static_cast<double>(static_cast<float>(d)); }

// A vector parameter of `width` entries, or `fallback` everywhere when null/absent.
std::vector<double> per_column(const JsonReader& step, const char* key, size_t width, double fallback) {
    const auto v = step.optional(key);
    if (!v) return std::vector<double>(width, fallback);
    std::vector<double> out = v->numbers();
    if (out.size() != width)
        v->invalid("has " + std::to_string(out.size()) + " entries for " + std::to_string(width) + " columns");
    return out;
}

// (x - center) / scale
void push_standardize(std::vector<spec::Step>& out, const std::vector<double>& center,
                      const std::vector<double>& scale, const JsonReader& step) {
    std::vector<double> s(scale.size()), o(scale.size());
    for (size_t c = 0; c < scale.size(); ++c) {
        if (scale[c] == 0 || !std::isfinite(scale[c]) || !std::isfinite(center[c]))
            step.invalid("has a zero or non-finite scale or center in column " + std::to_string(c));
        s[c] = 1.0 / scale[c];
        o[c] = -center[c] / scale[c];
    }
    push_affine(out, std::move(s), std::move(o));
}

// One category of an encoder's column c: a number (as the float32 batch holds it) or, for a
// text input, its index in the vocabulary; NaN stands for a missing-value category.
double category_value(Document& doc, const JsonReader& v, const Columns& cols, size_t c) {
    if (cols[c] >= 0) {
        if (v.is_null()) return NAN;
        if (v.is_string()) return doc.vocabulary_index(cols[c], v.string());
        v.invalid("must be a string: column " + std::to_string(c) + " is the text input \"" +
                  doc.input_name(cols[c]) + "\"");
    }
    if (v.is_string() && !std::isnan(spec::json_number(v.value()).value_or(0.0)))
        v.invalid("is a string, but column " + std::to_string(c) + " is numeric (declare the input as type \"text\")");
    return as_float32(v.nullable_number());
}

// categories of an encoder: per column, its categories' values (category_value).
std::vector<std::vector<double>> categories(Document& doc, const JsonReader& step, const Columns& cols) {
    const JsonReader cats = step.array("categories");
    if (cats.size() != cols.size())
        cats.invalid("has " + std::to_string(cats.size()) + " columns, the step reads " + std::to_string(cols.size()));
    std::vector<std::vector<double>> out(cats.size());
    for (size_t c = 0; c < cats.size(); ++c) {
        const JsonReader column = cats[c].expect_array();
        for (size_t k = 0; k < column.size(); ++k) out[c].push_back(category_value(doc, column[k], cols, c));
    }
    return out;
}

bool same_category(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// infrequent_categories of a OneHotEncoder: per column null (none) or some of its categories;
// returns per column whether each category is infrequent (empty when none is).
std::vector<std::vector<bool>> infrequent_categories(Document& doc, const JsonReader& step, const Columns& cols,
                                                     const std::vector<std::vector<double>>& cats) {
    std::vector<std::vector<bool>> out(cats.size());
    const auto inf = step.optional("infrequent_categories");
    if (!inf || inf->value().is_null()) return out;
    if (!inf->is_array() || inf->size() != cats.size())
        inf->invalid("must be null or an array of " + std::to_string(cats.size()) + " entries");
    for (size_t c = 0; c < cats.size(); ++c) {
        const JsonReader column = (*inf)[c];
        if (column.value().is_null()) continue;
        column.expect_array();
        if (column.empty()) column.invalid("must be null or hold at least one category");
        out[c].assign(cats[c].size(), false);
        for (size_t k = 0; k < column.size(); ++k) {
            const double v = category_value(doc, column[k], cols, c);
            size_t i = 0;
            while (i < cats[c].size() && !same_category(cats[c][i], v)) ++i;
            if (i == cats[c].size()) column[k].invalid("is not one of the column's categories");
            out[c][i] = true;
        }
    }
    return out;
}

// SimpleImputer's and MissingIndicator's missing_values (absent or null: NaN) as the params of
// impute / is_missing: {} for NaN, {"missing_value": m} for a finite number m.
json missing_marker(const JsonReader& step) {
    const auto mv = step.optional("missing_values");
    if (!mv) return json::object();
    const double m = mv->nullable_number();
    if (std::isnan(m)) return json::object();
    if (!std::isfinite(m)) refuse(*mv, "parameter missing_values = " + mv->value().dump() + " (NaN or a finite number)");
    return {{"missing_value", m}};
}

// A column index list of a selection, each in [0, width).
std::vector<int32_t> column_indices(const JsonReader& a, size_t width) {
    return a.expect_array().integers(0, static_cast<int64_t>(width) - 1);
}

// A selection of columns (get_support() of VarianceThreshold, SelectKBest, ...; the features_
// of MissingIndicator, then 1 where missing): a concat of one part.
void select(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out, bool missing) {
    const std::string type = missing ? "MissingIndicator" : "ColumnSelector";
    spec::Step s;
    s.op = spec::Op::Concat;
    spec::Step::Part part;
    part.columns = column_indices(step.array(missing ? "features" : "columns"), cols.size());
    Columns sub;
    for (int32_t c : part.columns) sub.push_back(cols[c]);
    if (part.columns.empty()) refuse(step, "selecting no column");
    if (missing) {
        doc.no_text(step, type, sub);
        part.steps.push_back(make_step(spec::Op::IsMissing, missing_marker(step)));
    }
    s.parts.push_back(std::move(part));
    out.push_back(std::move(s));
    cols = std::move(sub);
}

// (x - mean) · componentsᵀ [/ sqrt(explained_variance)] = x · Mᵀ - M · mean (PCA, TruncatedSVD,
// FastICA; only PCA whitens here: FastICA's whitening is inside its components).
void project(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out, const char* type) {
    const bool is_pca = std::string(type) == "PCA";
    doc.no_text(step, type, cols);
    const size_t w = cols.size();
    const JsonReader components = step.array("components");
    if (components.empty()) components.invalid("must not be empty");
    Matrix m = components.matrix(SIZE_MAX, w);
    const std::vector<double> mean = per_column(step, "mean", w, 0.0);
    if (auto whiten = step.optional("whiten"); whiten && whiten->boolean()) {
        if (!is_pca) refuse(step, "parameter whiten");
        const std::vector<double> ev = per_column(step, "explained_variance", m.size(), 1.0);
        for (size_t r = 0; r < m.size(); ++r) {
            if (!(ev[r] > 0.0))
                refuse(step, "parameter whiten with a zero explained_variance (component " + std::to_string(r) + ")");
            const double d = std::sqrt(ev[r]);
            for (double& v : m[r]) v /= d;
        }
    }
    std::vector<double> offset(m.size(), 0.0);
    for (size_t r = 0; r < m.size(); ++r)
        for (size_t c = 0; c < w; ++c) offset[r] -= m[r][c] * mean[c];
    out.push_back(make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json(m)}, {"offset", spec::numbers_to_json(offset)}}));
    cols.assign(m.size(), -1);
}

}  // namespace

void standard_scaler(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "StandardScaler", cols);
    push_standardize(out, per_column(step, "mean", cols.size(), 0.0), per_column(step, "scale", cols.size(), 1.0),
                     step);
}

void robust_scaler(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "RobustScaler", cols);
    push_standardize(out, per_column(step, "center", cols.size(), 0.0),
                     per_column(step, "scale", cols.size(), 1.0), step);
}

void max_abs_scaler(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "MaxAbsScaler", cols);
    push_standardize(out, std::vector<double>(cols.size(), 0.0), per_column(step, "scale", cols.size(), 1.0), step);
}

void min_max_scaler(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "MinMaxScaler", cols);
    push_affine(out, per_column(step, "scale", cols.size(), 1.0), per_column(step, "min", cols.size(), 0.0));
    // clip: the scaled value clipped to feature_range, as scikit-learn does after scaling.
    if (auto clip = step.optional("clip"); clip && clip->boolean()) {
        const JsonReader range = step.need("feature_range");
        const std::vector<double> r = range.numbers();
        if (r.size() != 2 || !std::isfinite(r[0]) || !std::isfinite(r[1]) || !(r[0] < r[1]))
            range.invalid("must be [min, max] with finite min < max");
        out.push_back(make_step(spec::Op::Clip, {{"min", r[0]}, {"max", r[1]}}));
    }
}

// NaN → statistic. A text column stays a text input: its statistic (a string) becomes its
// vocabulary index. A NaN statistic (strategy "constant" with fill_value NaN) leaves NaN;
// the exporter refuses the case where scikit-learn drops an all-missing column.
void simple_imputer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    json params = missing_marker(step);
    if (params.contains("missing_value") && !doc.text_name(cols).empty())
        refuse(step, "parameter missing_values = " + step.need("missing_values").value().dump() +
                         " for the text input \"" + doc.text_name(cols) + "\" (only NaN: NULL)");
    if (auto ind = step.optional("add_indicator"); ind && ind->value().is_boolean() && ind->boolean())
        refuse(step, "parameter add_indicator = true");
    const JsonReader stats = step.array("statistics");
    if (stats.size() != cols.size())
        stats.invalid("has " + std::to_string(stats.size()) + " entries for " + std::to_string(cols.size()) +
                      " columns");
    std::vector<double> values;
    for (size_t c = 0; c < stats.size(); ++c) {
        const JsonReader v = stats[c];
        if (cols[c] >= 0) {
            if (!v.is_string())
                v.invalid("must be a string: column " + std::to_string(c) + " is the text input \"" +
                          doc.input_name(cols[c]) + "\"");
            values.push_back(doc.vocabulary_index(cols[c], v.string()));
        } else {
            if (v.is_string() && !std::isnan(spec::json_number(v.value()).value_or(0.0)))
                v.invalid("is a string, but column " + std::to_string(c) +
                          " is numeric (declare the input as type \"text\")");
            values.push_back(v.nullable_number());
        }
    }
    params["statistics"] = spec::numbers_to_json(values);
    out.push_back(make_step(spec::Op::Impute, std::move(params)));
}

// Without infrequent categories one one_hot over the categories, less the dropped one. With
// them (min_frequency / max_categories), scikit-learn's layout per column is the frequent
// categories in order, then one column for the infrequent ones, drop_idx counting in that
// order: per column a concat part with a one_hot over the frequent categories and one whose
// one_hot over the infrequent ones is summed by a project (with handle_unknown
// "infrequent_if_exist": 1 minus the frequent ones, so that an unknown value, no category of
// the one_hot, lands there too). Sizes stay linear in the categories.
void one_hot_encoder(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    const size_t w = cols.size();
    const auto cats = categories(doc, step, cols);
    const auto infrequent = infrequent_categories(doc, step, cols, cats);
    const std::string unknown = step.string("handle_unknown", "error");
    if (unknown == "error") doc.unknown_is_error(cols);
    else if (unknown != "ignore" && unknown != "infrequent_if_exist")
        refuse(step, "parameter handle_unknown = \"" + unknown + "\"");
    // Per column its frequent categories and its infrequent ones (empty: none).
    std::vector<std::vector<double>> frequent(w), rare(w);
    for (size_t c = 0; c < w; ++c)
        for (size_t k = 0; k < cats[c].size(); ++k)
            (!infrequent[c].empty() && infrequent[c][k] ? rare : frequent)[c].push_back(cats[c][k]);
    std::vector<int32_t> drop(w, -1);
    if (auto d = step.optional("drop_idx")) {
        if (!d->is_array() || d->size() != w) d->invalid("must be null or an array of " + std::to_string(w) + " entries");
        for (size_t c = 0; c < w; ++c)
            if (!d->value()[c].is_null()) {
                const size_t grouped = frequent[c].size() + (rare[c].empty() ? 0 : 1);
                drop[c] = static_cast<int32_t>((*d)[c].integer(0, static_cast<int64_t>(grouped) - 1));
            }
    }
    const auto hot = [](const std::vector<double>& categories, int32_t dropped) {
        return make_step(spec::Op::OneHot, {{"categories", json::array({spec::numbers_to_json(categories)})},
                                            {"drop", json::array({dropped})}});
    };
    bool any_infrequent = false;
    for (const auto& r : rare) any_infrequent = any_infrequent || !r.empty();
    if (!any_infrequent) {
        json jc = json::array();
        size_t width = 0;
        for (size_t c = 0; c < w; ++c) {
            jc.push_back(spec::numbers_to_json(cats[c]));
            width += cats[c].size() - (drop[c] >= 0 ? 1 : 0);
        }
        out.push_back(make_step(spec::Op::OneHot, {{"categories", jc}, {"drop", drop}}));
        cols.assign(width, -1);
        return;
    }
    spec::Step concat;
    concat.op = spec::Op::Concat;
    const auto add = [&](size_t c, std::vector<spec::Step> steps) {
        spec::Step::Part part;
        part.columns = {static_cast<int32_t>(c)};
        part.steps = std::move(steps);
        concat.parts.push_back(std::move(part));
    };
    size_t width = 0;
    for (size_t c = 0; c < w; ++c) {
        const size_t n_frequent = frequent[c].size();
        const bool drops_frequent = drop[c] >= 0 && static_cast<size_t>(drop[c]) < n_frequent;
        if (n_frequent > (drops_frequent ? 1 : 0)) {
            add(c, {hot(frequent[c], drops_frequent ? drop[c] : -1)});
            width += n_frequent - (drops_frequent ? 1 : 0);
        }
        if (rare[c].empty() || static_cast<size_t>(drop[c]) == n_frequent) continue;
        if (unknown == "infrequent_if_exist" && n_frequent > 0)  // 1 - Σ frequent
            add(c, {hot(frequent[c], -1), make_step(spec::Op::Project, {{"matrix", json::array({std::vector<double>(n_frequent, -1.0)})},
                                                                         {"offset", json::array({1.0})}})});
        else if (unknown == "infrequent_if_exist")  // every value is infrequent or unknown
            add(c, {hot(rare[c], -1), make_step(spec::Op::Project, {{"matrix", json::array({std::vector<double>(rare[c].size(), 0.0)})},
                                                                     {"offset", json::array({1.0})}})});
        else  // Σ infrequent
            add(c, {hot(rare[c], -1), make_step(spec::Op::Project, {{"matrix", json::array({std::vector<double>(rare[c].size(), 1.0)})},
                                                                     {"offset", json::array({0.0})}})});
        width += 1;
    }
    if (width == 0) refuse(step, "a drop that leaves no output column");
    out.push_back(std::move(concat));
    cols.assign(width, -1);
}

void ordinal_encoder(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    const auto cats = categories(doc, step, cols);
    const std::string unknown = step.string("handle_unknown", "error");
    double unknown_value = NAN;
    if (unknown == "error") {
        doc.unknown_is_error(cols);
    } else if (unknown == "use_encoded_value") {
        unknown_value = step.need("unknown_value").nullable_number();
    } else {
        refuse(step, "parameter handle_unknown = \"" + unknown + "\"");
    }
    const auto missing = step.optional("encoded_missing_value");
    const double missing_value = missing ? missing->nullable_number() : NAN;
    json jc = json::array();
    for (const auto& c : cats) jc.push_back(spec::numbers_to_json(c));
    out.push_back(make_step(spec::Op::Ordinal, {{"categories", jc},
                                                {"unknown_value", spec::number_to_json(unknown_value)},
                                                {"missing_value", spec::number_to_json(missing_value)}}));
    cols.assign(cols.size(), -1);
}

void column_selector(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    select(doc, step, cols, out, false);
}

void missing_indicator(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    select(doc, step, cols, out, true);
}

void binarizer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "Binarizer", cols);
    const double t = step.number("threshold");
    if (std::isnan(t)) refuse(step, "parameter threshold = NaN");
    out.push_back(make_step(spec::Op::Threshold, {{"threshold", spec::number_to_json(t)}}));
}

void normalizer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "Normalizer", cols);
    const std::string norm = string_choice(step, "norm", "l2", {"l1", "l2", "max"});
    out.push_back(make_step(spec::Op::Normalize, {{"norm", norm}}));
}

void pca(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    project(doc, step, cols, out, "PCA");
}

void truncated_svd(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    project(doc, step, cols, out, "TruncatedSVD");
}

void fast_ica(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    project(doc, step, cols, out, "FastICA");
}

// The bin index (searchsorted of the inner edges, side "right"), then for onehot a 0/1 per bin.
void kbins_discretizer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "KBinsDiscretizer", cols);
    const size_t w = cols.size();
    const JsonReader be = step.array("bin_edges");
    if (be.size() != w) be.invalid("has " + std::to_string(be.size()) + " entries for " + std::to_string(w) + " columns");
    const std::string encode = string_choice(step, "encode", "ordinal", {"ordinal", "onehot", "onehot-dense"});
    json inner = json::array(), cats = json::array();
    size_t width = 0;
    for (size_t c = 0; c < w; ++c) {
        const JsonReader column = be[c];
        if (!column.is_array() || column.size() < 2) column.invalid("must be an array of at least 2 edges");
        const std::vector<double> all = column.numbers();
        inner.push_back(spec::numbers_to_json(std::vector<double>(all.begin() + 1, all.end() - 1)));
        std::vector<double> bins;
        for (size_t b = 0; b + 1 < all.size(); ++b) bins.push_back(static_cast<double>(b));
        cats.push_back(spec::numbers_to_json(bins));
        width += bins.size();
    }
    out.push_back(make_step(spec::Op::Bucketize, {{"edges", inner}}));
    if (encode != "ordinal") {
        out.push_back(make_step(spec::Op::OneHot, {{"categories", cats}, {"drop", std::vector<int32_t>(w, -1)}}));
        cols.assign(width, -1);
    } else {
        cols.assign(w, -1);
    }
}

// powers_: one row per output column, the power of each input column.
void polynomial_features(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "PolynomialFeatures", cols);
    const size_t w = cols.size();
    const JsonReader powers = step.array("powers");
    if (powers.empty()) powers.invalid("must not be empty");
    json rows = json::array();
    for (size_t k = 0; k < powers.size(); ++k) {
        const JsonReader row = powers[k];
        if (!row.is_array() || row.size() != w) row.invalid("must be an array of " + std::to_string(w) + " powers");
        rows.push_back(row.integers(0, 64));
    }
    out.push_back(make_step(spec::Op::Monomials, {{"powers", rows}}));
    cols.assign(powers.size(), -1);
}

// func null is the identity; else an element-wise numpy ufunc, by name.
void function_transformer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    const auto f = step.optional("func");
    if (!f) return;
    const std::string name = f->is_string() ? f->string() : "";
    if (!f->is_string()) f->invalid("must be a string (a numpy ufunc name)");
    if (auto kw = step.optional("kw_args"); kw && !kw->value().empty()) refuse(step, "parameter kw_args");
    if (!spec::is_elementwise_function(name))
        refuse(step, "parameter func = \"" + name + "\" (not a known element-wise numpy ufunc)");
    doc.no_text(step, "FunctionTransformer", cols);
    out.push_back(make_step(spec::Op::Elementwise, {{"function", name}}));
    cols.assign(cols.size(), -1);
}

// The power transform with lambdas_, then (standardize=True) its fitted StandardScaler.
void power_transformer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "PowerTransformer", cols);
    const size_t w = cols.size();
    const std::string method = string_choice(step, "method", "yeo-johnson", {"yeo-johnson", "box-cox"});
    const JsonReader lambdas = step.array("lambdas");
    const std::vector<double> l = lambdas.numbers();
    if (l.size() != w) lambdas.invalid("has " + std::to_string(l.size()) + " entries for " + std::to_string(w) + " columns");
    for (double v : l)
        if (!std::isfinite(v)) lambdas.invalid("must be finite");
    out.push_back(make_step(spec::Op::Power, {{"method", method}, {"lambdas", spec::numbers_to_json(l)}}));
    if (step.optional("mean") || step.optional("scale"))
        push_standardize(out, per_column(step, "mean", w, 0.0), per_column(step, "scale", w, 1.0), step);
    cols.assign(w, -1);
}

// quantiles: per column its quantiles_ (ascending), references: references_, output_distribution.
void quantile_transformer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "QuantileTransformer", cols);
    const size_t w = cols.size();
    const std::string output = string_choice(step, "output_distribution", "uniform", {"uniform", "normal"});
    const JsonReader refs = step.array("references");
    const std::vector<double> r = refs.numbers();
    if (r.size() < 2) refuse(step, "a fit on fewer than 2 quantiles (n_quantiles_ = " + std::to_string(r.size()) + ")");
    for (size_t i = 0; i < r.size(); ++i)
        if (!(r[i] >= 0.0 && r[i] <= 1.0) || (i > 0 && r[i] < r[i - 1])) refs.invalid("must ascend in [0, 1]");
    const JsonReader qs = step.array("quantiles");
    if (qs.size() != w) qs.invalid("has " + std::to_string(qs.size()) + " columns, the step reads " + std::to_string(w));
    json columns = json::array();
    for (size_t c = 0; c < w; ++c) {
        const JsonReader column = qs[c].expect_array();
        const std::vector<double> q = column.numbers();
        if (q.size() != r.size())
            column.invalid("has " + std::to_string(q.size()) + " quantiles for " + std::to_string(r.size()) + " references");
        for (size_t i = 0; i < q.size(); ++i)
            if (!std::isfinite(q[i]) || (i > 0 && q[i] < q[i - 1])) column.invalid("must be finite and ascending");
        columns.push_back(spec::numbers_to_json(q));
    }
    out.push_back(make_step(spec::Op::Quantile, {{"quantiles", columns}, {"references", spec::numbers_to_json(r)},
                                                 {"output", output}}));
    cols.assign(w, -1);
}

// The kernel against the training rows X_fit, then the centered kernel times alphas (the
// eigenvectors over sqrt(eigenvalues)) as one project: with k_c = k - K_fit_rows - mean(k) +
// K_fit_all, k_c · a_r = k · (a_r - mean(a_r)) + Σ_i (K_fit_all - K_fit_rows_i) a_ir.
void kernel_pca(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "KernelPCA", cols);
    const std::string kernel = step.string("kernel");
    if (kernel != "linear" && kernel != "rbf" && kernel != "poly" && kernel != "sigmoid")
        refuse(step, "parameter kernel = \"" + kernel + "\"");
    const Matrix x_fit = finite_matrix(step.need("X_fit"), SIZE_MAX, cols.size());
    const size_t n = x_fit.size();
    const Matrix alphas = finite_matrix(step.need("alphas"), n, SIZE_MAX);
    const size_t k = alphas[0].size();
    if (k == 0) step.need("alphas").invalid("must have at least one component");
    const JsonReader rows = step.array("K_fit_rows");
    const std::vector<double> k_fit_rows = rows.numbers();
    if (k_fit_rows.size() != n) rows.invalid("has " + std::to_string(k_fit_rows.size()) + " entries for " + std::to_string(n) + " rows");
    const double k_fit_all = step.finite("K_fit_all");
    const JsonReader degree = step.need("degree");
    if (!degree.value().is_number_integer()) degree.invalid("must be an integer in [0, 64]");
    out.push_back(make_step(spec::Op::Kernel, {{"support_vectors", spec::matrix_to_json(x_fit)}, {"kernel", kernel},
                                               {"gamma", step.finite("gamma")}, {"coef0", step.finite("coef0")},
                                               {"degree", degree.integer(0, 64)}}));
    Matrix m(k, std::vector<double>(n));
    std::vector<double> offset(k, 0.0);
    for (size_t r = 0; r < k; ++r) {
        double mean = 0.0;
        for (size_t i = 0; i < n; ++i) mean += alphas[i][r];
        mean /= static_cast<double>(n);
        for (size_t i = 0; i < n; ++i) {
            m[r][i] = alphas[i][r] - mean;
            offset[r] += (k_fit_all - k_fit_rows[i]) * alphas[i][r];
        }
    }
    out.push_back(make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json(m)}, {"offset", spec::numbers_to_json(offset)}}));
    cols.assign(k, -1);
}

}  // namespace pg_predict::importers::sklearn
