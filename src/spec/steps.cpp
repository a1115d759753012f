// Featurizer steps: the parameter readers, and the two switches over Op that send each step to
// its family (step_ops.hpp): its shape check (check_step) and its double-precision evaluation,
// which the compiled programs are tested against (apply_steps). spec/steps.hpp lists the ops.
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/spec/json_reader.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"
#include "step_ops.hpp"

namespace pg_predict::spec {

using nlohmann::json;

namespace step_ops {

void invalid(const std::string& where, const std::string& msg) {
    fail(ErrorCategory::InvalidModel, "invalid pipeline: " + where + ": " + msg);
}

const json& param(const Step& s, const char* key, const std::string& where) {
    if (!s.params.is_object()) invalid(where, std::string("op ") + op_name(s.op) + ": params must be an object");
    auto it = s.params.find(key);
    if (it == s.params.end()) invalid(where, std::string("op ") + op_name(s.op) + ": parameter \"" + key + "\" is missing");
    return *it;
}

const json& param_choice(const Step& s, const char* key, std::initializer_list<const char*> choices,
                         const std::string& what, const std::string& where) {
    const json& v = param(s, key, where);
    std::string list;
    size_t i = 0;
    for (const char* c : choices) {
        if (v == c) return v;
        list += std::string(i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + "\"" + c + "\"";
        ++i;
    }
    invalid(where, what + " must be " + list + ", not " + v.dump());
}

void check_entries(size_t n, size_t w, const std::string& what, const std::string& at) {
    if (n != w)
        invalid(at, what + " has " + std::to_string(n) + " entries for a vector of " + std::to_string(w));
}

std::string item(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

// FeatureUnion parts each read the whole input, so unions in a row multiply the width of a
// small document.
void check_width(size_t width, const std::string& at) {
    if (width > static_cast<size_t>(kMaxStepWidth))
        invalid(at, "outputs more than " + std::to_string(kMaxStepWidth) + " columns");
}

namespace {

// Whether the op may read a text column (the vocabulary indices of a text input).
bool may_read_text(Op op) {
    switch (op) {
        case Op::OneHot: case Op::Ordinal: case Op::Impute: case Op::Concat:
            return true;
        case Op::None: case Op::Affine: case Op::Elementwise: case Op::Threshold: case Op::Clip:
        case Op::IsMissing: case Op::Normalize: case Op::Project: case Op::Bucketize: case Op::Monomials:
        case Op::Kernel: case Op::Neighbors: case Op::Linear: case Op::TorchScript: case Op::Power:
        case Op::Quantile: case Op::Model: case Op::Tensor:
            return false;
    }
    return false;
}

// The step's shape, by its family; `vocab` becomes its output's.
void check_by_op(const Step& s, std::vector<int32_t>& vocab, const std::string& at, int nesting) {
    switch (s.op) {
        case Op::Affine: return check_affine(s, vocab, at);
        case Op::Impute: return check_impute(s, vocab, at);
        case Op::OneHot: return check_one_hot(s, vocab, at);
        case Op::Ordinal: return check_ordinal(s, vocab, at);
        case Op::Elementwise: return check_elementwise(s, vocab, at);
        case Op::Threshold: return check_threshold(s, vocab, at);
        case Op::Clip: return check_clip(s, vocab, at);
        case Op::IsMissing: return check_is_missing(s, vocab, at);
        case Op::Normalize: return check_normalize(s, vocab, at);
        case Op::Project: return check_project(s, vocab, at);
        case Op::Bucketize: return check_bucketize(s, vocab, at);
        case Op::Monomials: return check_monomials(s, vocab, at);
        case Op::Kernel: return check_kernel(s, vocab, at);
        case Op::Neighbors: return check_neighbors(s, vocab, at);
        case Op::Power: return check_power(s, vocab, at);
        case Op::Quantile: return check_quantile(s, vocab, at);
        case Op::Tensor: return check_tensor(s, vocab, at);
        case Op::Model: return check_model(s, vocab, at, nesting);
        case Op::Concat: return check_concat(s, vocab, at, nesting);
        case Op::None: case Op::Linear: case Op::TorchScript:
            fail(ErrorCategory::Unsupported, "pipeline spec: " + at + ": op \"" + op_name(s.op) + "\" is not a featurizer");
    }
}

void check_one(const Step& s, std::vector<int32_t>& vocab, const std::string& at, int nesting) {
    if (s.op != Op::Concat && !s.parts.empty()) invalid(at, std::string("op ") + op_name(s.op) + " has parts; only concat has");
    const bool reads_text = [&] {
        for (int32_t v : vocab) if (v >= 0) return true;
        return false;
    }();
    if (reads_text && !may_read_text(s.op))
        invalid(at, std::string("op ") + op_name(s.op) + " reads a text input; only one_hot, ordinal and impute can");
    check_by_op(s, vocab, at, nesting);
    check_width(vocab.size(), at);
}

// One step on one row, by its family.
void evaluate(const Step& s, std::vector<double>& x, const std::string& at) {
    switch (s.op) {
        case Op::Affine: return evaluate_affine(s, x, at);
        case Op::Impute: return evaluate_impute(s, x, at);
        case Op::OneHot: return evaluate_one_hot(s, x, at);
        case Op::Ordinal: return evaluate_ordinal(s, x, at);
        case Op::Elementwise: return evaluate_elementwise(s, x, at);
        case Op::Threshold: return evaluate_threshold(s, x, at);
        case Op::Clip: return evaluate_clip(s, x, at);
        case Op::IsMissing: return evaluate_is_missing(s, x, at);
        case Op::Normalize: return evaluate_normalize(s, x, at);
        case Op::Project: return evaluate_project(s, x, at);
        case Op::Bucketize: return evaluate_bucketize(s, x, at);
        case Op::Monomials: return evaluate_monomials(s, x, at);
        case Op::Kernel: return evaluate_kernel(s, x, at);
        case Op::Neighbors: return evaluate_neighbors(s, x, at);
        case Op::Power: return evaluate_power(s, x, at);
        case Op::Quantile: return evaluate_quantile(s, x, at);
        case Op::Tensor: return evaluate_tensor(s, x, at);
        case Op::Model: return evaluate_model(s, x, at);
        case Op::Concat: return evaluate_concat(s, x, at);
        case Op::None: case Op::Linear: case Op::TorchScript:
            fail(ErrorCategory::Unsupported, std::string("reference: op \"") + op_name(s.op) + "\" is not a featurizer");
    }
}

}  // namespace

int32_t check_nested(const std::vector<Step>& steps, std::vector<int32_t>& vocab, const std::string& where,
                     int nesting) {
    for (size_t i = 0; i < steps.size(); ++i) {
        check_interrupts();  // per step: nested compositions can be deep
        check_one(steps[i], vocab, item(where, i), nesting);
    }
    return static_cast<int32_t>(vocab.size());
}

}  // namespace step_ops

using step_ops::param;

json number_to_json(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return d;
}

json numbers_to_json(const std::vector<double>& v) {
    json a = json::array();
    for (double d : v) a.push_back(number_to_json(d));
    return a;
}

json matrix_to_json(const std::vector<std::vector<double>>& m) {
    json rows = json::array();
    for (const auto& row : m) rows.push_back(numbers_to_json(row));
    return rows;
}

double param_number(const json& v, const std::string& field) {
    return JsonReader(v, "invalid pipeline", field).number();
}

// The step's parameter `key`, read through the one JSON reader: "invalid pipeline:
// steps[2].scale[3]: must be a number ...".
static JsonReader param_reader(const Step& s, const char* key, const std::string& where) {
    param(s, key, where);  // params an object holding key, or the step's own message
    return JsonReader(s.params, "invalid pipeline", where).need(key);
}

double param_number(const Step& s, const char* key, const std::string& where) {
    return param_reader(s, key, where).number();
}

double missing_marker(const Step& s, const std::string& where) {
    return s.params.is_object() && s.params.contains("missing_value") ? param_number(s, "missing_value", where) : NAN;
}

std::vector<double> param_vector(const Step& s, const char* key, const std::string& where) {
    return param_reader(s, key, where).numbers();
}

std::vector<std::vector<double>> param_matrix(const Step& s, const char* key, const std::string& where) {
    return param_reader(s, key, where).ragged_matrix();
}

std::vector<int32_t> param_ints(const Step& s, const char* key, const std::string& where) {
    return param_reader(s, key, where).integers(INT32_MIN, INT32_MAX);
}

int32_t check_steps(const std::vector<Step>& steps, std::vector<int32_t>& vocab, const std::string& where) {
    return step_ops::check_nested(steps, vocab, where, 0);
}

int32_t check_step(const Step& step, std::vector<int32_t>& vocab, const std::string& where) {
    step_ops::check_one(step, vocab, where, 0);
    return static_cast<int32_t>(vocab.size());
}

std::vector<double> apply_steps(const std::vector<Step>& steps, std::vector<double> x) {
    for (const Step& s : steps) step_ops::evaluate(s, x, std::string("step ") + op_name(s.op));
    return x;
}

}  // namespace pg_predict::spec
