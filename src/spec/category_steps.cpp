// The categorical encoders (spec/steps.hpp documents each op): one_hot and ordinal, the ops
// besides impute that may read a text column's vocabulary indices. Each op's shape check and
// its double-precision evaluation sit side by side; spec/steps.cpp dispatches to them.
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/steps.hpp"
#include "step_ops.hpp"

namespace pg_predict::spec::step_ops {

using nlohmann::json;

namespace {

// x is category c: equal, or both NaN.
bool matches(double x, double c) { return x == c || (std::isnan(x) && std::isnan(c)); }

int32_t check_categories(const Step& s, const std::vector<int32_t>& vocab, const std::string& where,
                         std::vector<std::vector<double>>& cats) {
    cats = param_matrix(s, "categories", where);
    if (cats.size() != vocab.size())
        invalid(where, std::string("op ") + op_name(s.op) + " has categories for " + std::to_string(cats.size()) +
                           " columns, its input has " + std::to_string(vocab.size()));
    for (size_t c = 0; c < cats.size(); ++c) {
        for (size_t i = 0; i < cats[c].size(); ++i) {
            const double v = cats[c][i];
            if (std::isinf(v)) invalid(where, "column " + std::to_string(c) + " lists an infinite category");
            for (size_t j = 0; j < i; ++j)
                if (matches(v, cats[c][j]))
                    invalid(where, "column " + std::to_string(c) + " lists category " + std::to_string(v) + " twice");
            if (vocab[c] >= 0 && !std::isnan(v) && (v < 0 || v >= vocab[c] || v != std::floor(v)))
                invalid(where, "column " + std::to_string(c) + " reads a text input, category " +
                                   std::to_string(v) + " is no index into its vocabulary of " +
                                   std::to_string(vocab[c]));
        }
    }
    return static_cast<int32_t>(cats.size());
}

}  // namespace

void check_one_hot(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    std::vector<std::vector<double>> cats;
    check_categories(s, vocab, at, cats);
    std::vector<int32_t> drop = param_ints(s, "drop", at);
    if (drop.size() != w)
        invalid(at, "one_hot drop has " + std::to_string(drop.size()) + " entries for " +
                        std::to_string(w) + " columns");
    size_t out = 0;
    for (size_t c = 0; c < w; ++c) {
        if (drop[c] < -1 || drop[c] >= static_cast<int32_t>(cats[c].size()))
            invalid(at, "one_hot drop " + std::to_string(drop[c]) + " of column " + std::to_string(c) +
                            " is not a category index");
        out += cats[c].size() - (drop[c] >= 0 ? 1 : 0);
    }
    vocab.assign(out, -1);
}

void evaluate_one_hot(const Step& s, std::vector<double>& x, const std::string& at) {
    const auto cats = param_matrix(s, "categories", at);
    const std::vector<int32_t> drop = param_ints(s, "drop", at);
    std::vector<double> y;
    for (size_t c = 0; c < x.size(); ++c)
        for (size_t k = 0; k < cats[c].size(); ++k)
            if (static_cast<int32_t>(k) != drop[c]) y.push_back(matches(x[c], cats[c][k]) ? 1.0 : 0.0);
    x = std::move(y);
}

void check_ordinal(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    std::vector<std::vector<double>> cats;
    check_categories(s, vocab, at, cats);
    // NaN encodes "no category"; an infinite code is no index.
    for (const char* key : {"unknown_value", "missing_value"})
        if (std::isinf(param_number(s, key, at)))
            invalid(at, std::string("ordinal ") + key + " must not be infinite");
    vocab.assign(w, -1);
}

void evaluate_ordinal(const Step& s, std::vector<double>& x, const std::string& at) {
    const auto cats = param_matrix(s, "categories", at);
    const double unknown = param_number(s, "unknown_value", at);
    const double missing = param_number(s, "missing_value", at);
    for (size_t c = 0; c < x.size(); ++c) {
        double code = unknown;
        for (size_t k = 0; k < cats[c].size(); ++k)
            if (matches(x[c], cats[c][k])) code = std::isnan(cats[c][k]) ? missing : static_cast<double>(k);
        x[c] = code;
    }
}

}  // namespace pg_predict::spec::step_ops
