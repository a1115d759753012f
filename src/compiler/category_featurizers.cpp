// The categorical encoders in TorchScript: one_hot and ordinal, one comparison of each
// (column, category) pair (featurizer_steps.cpp lists what each op becomes).
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/steps.hpp"
#include "featurizer_emitter.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler::featurizer {

namespace {

int64_t size_of(const std::vector<double>& v) { return static_cast<int64_t>(v.size()); }

// The comparison of each (column, category) pair shared by one_hot and ordinal: a bool [N, K]
// expression in `eq`. `keep(c, k)` chooses the pairs.
template <typename Keep>
std::string emit_matches(Emitter& e, const std::string& in, const std::vector<std::vector<double>>& cats,
                         const std::string& pre, Keep keep, std::vector<int64_t>& column_of,
                         std::vector<double>& value) {
    std::vector<uint8_t> is_nan;
    bool any_nan = false;
    for (size_t c = 0; c < cats.size(); ++c)
        for (size_t k = 0; k < cats[c].size(); ++k) {
            if (!keep(c, k)) continue;
            column_of.push_back(static_cast<int64_t>(c));
            const bool nan = std::isnan(cats[c][k]);
            value.push_back(cats[c][k]);  // NaN equals nothing: only the isnan test matches it
            is_nan.push_back(nan ? 1 : 0);
            any_nan = any_nan || nan;
        }
    const int64_t K = static_cast<int64_t>(column_of.size());
    e.parts.buffers.push_back(make_i64(pre + "column", {K}, column_of));
    e.parts.buffers.push_back(make_f64(pre + "category", {K}, value));
    const std::string v = e.var(), eq = e.var();
    e.line(v + " = " + select_columns(in, pre + "column", column_of));
    std::string expr = "(" + v + " == self." + pre + "category)";
    if (any_nan) {
        e.parts.buffers.push_back(make_bool(pre + "nan", {K}, is_nan));
        expr = "torch.logical_or(" + expr + ", torch.logical_and(torch.isnan(" + v + "), self." + pre + "nan))";
    }
    e.line(eq + " = " + expr);
    return eq;
}

}  // namespace

void emit_one_hot(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                  int64_t& width) {
    const std::string at = "step one_hot";
    const auto cats = spec::param_matrix(s, "categories", at);
    const std::vector<int32_t> drop = spec::param_ints(s, "drop", at);
    std::vector<int64_t> column_of;
    std::vector<double> value;
    const std::string eq = emit_matches(
        e, h, cats, pre, [&](size_t c, size_t k) { return static_cast<int32_t>(k) != drop[c]; }, column_of,
        value);
    e.line(out + " = " + eq + ".double()");
    width = static_cast<int64_t>(column_of.size());
}

void emit_ordinal(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                  int64_t& width) {
    const std::string at = "step ordinal";
    const auto cats = spec::param_matrix(s, "categories", at);
    const double unknown = spec::param_number(s, "unknown_value", at);
    const double missing = spec::param_number(s, "missing_value", at);
    std::vector<int64_t> column_of;
    std::vector<double> value, code;
    for (const auto& col : cats)
        for (size_t k = 0; k < col.size(); ++k) code.push_back(std::isnan(col[k]) ? missing : double(k));
    const std::string eq = emit_matches(e, h, cats, pre, [](size_t, size_t) { return true; }, column_of, value);
    e.parts.buffers.push_back(make_f64(pre + "code", {size_of(code)}, code));
    e.parts.buffers.push_back(make_f64(pre + "unknown", {width}, std::vector<double>(width, unknown)));
    const std::string v = "h" + std::to_string(e.vars - 2);  // emit_matches' selected values
    const std::string hit = e.var(), codes = e.var();
    e.line(hit + " = " + h + ".new_zeros([" + h + ".size(0), " + std::to_string(width) +
           "]).index_add_(1, self." + pre + "column, " + eq + ".double())");
    e.line(codes + " = " + h + ".new_zeros([" + h + ".size(0), " + std::to_string(width) +
           "]).index_add_(1, self." + pre + "column, torch.where(" + eq + ", self." + pre + "code.expand_as(" +
           v + "), torch.zeros_like(" + v + ")))");
    e.line(out + " = torch.where(" + hit + " > 0.0, " + codes + ", self." + pre + "unknown)");
}

}  // namespace pg_predict::compiler::featurizer
