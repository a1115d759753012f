// What every strategy shares after the trees: per-tree values → group margins, row
// chunking, base margin, and the link function (sigmoid / softmax / exp).
#include <algorithm>
#include <cmath>
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/float32_check.hpp"
#include "pg_predict/kernels/logistic.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

std::string trees_read_float32(const std::string& to, const std::string& from) {
    static_cast<void>(kernels::float32_check_op_anchor());
    return "    " + to + " = ops.pg_predict.float32_for_trees(" + from + ")\n";
}

SplitCode split_code(const spec::TreeEnsemble& e) {
    SplitCode c;
    c.comparison = e.comparison;
    c.num_features = e.num_features;
    c.folded = true;
    for (const spec::Tree& tree : e.trees)
        for (size_t n = 0; n < tree.size(); ++n)
            if (!tree.is_leaf(n) && !std::isfinite(tree.threshold[n])) c.folded = false;
    return c;
}

int64_t split_column(const SplitCode& c, int32_t feature, bool default_left) {
    return c.folded && !default_left ? c.num_features + feature : feature;
}

std::string inputs_source(const SplitCode& c, const std::string& indent) {
    if (!c.folded) return indent + "xa = x\n";
    // With t finite: -inf < t and -inf <= t always hold, +inf < t and +inf <= t never do.
    return indent + "nan = torch.isnan(x)\n" + indent +
           "xa = torch.cat([x.masked_fill(nan, float(\"-inf\")), x.masked_fill(nan, float(\"inf\"))], 1)\n";
}

std::string go_left_expr(const SplitCode& c, const std::string& v, const std::string& t,
                         const std::string& d) {
    const char* op = c.comparison == spec::Comparison::Less ? " < " : " <= ";
    if (c.folded) return "(" + v + op + t + ")";
    // NaN compares false either way, so it must take the node's default direction.
    return "torch.where(torch.isnan(" + v + "), " + d + ", " + v + op + t + ")";
}

std::string go_right_expr(const SplitCode& c, const std::string& v, const std::string& t,
                          const std::string& d) {
    // Without NaN (folded), not (v < t) is v >= t.
    if (c.folded) return "(" + v + (c.comparison == spec::Comparison::Less ? " >= " : " > ") + t + ")";
    return "torch.logical_not(" + go_left_expr(c, v, t, d) + ")";
}

std::string lookup_expr(const std::string& table, const std::string& idx, int64_t trees) {
    return table + ".index_select(0, " + idx + ".view(-1)).view(" + idx + ".size(0), " +
           std::to_string(trees) + ")";
}

int64_t traversal_chunk_rows(int64_t trees) {
    // ~256k elements per [rows × trees] tensor; measured faster than whole 10k-row batches.
    return std::max<int64_t>(16, (int64_t(1) << 18) / std::max<int64_t>(1, trees));
}

std::string reduce_trees_source(const spec::TreeEnsemble& e, ProgramParts& parts,
                                const std::string& indent) {
    if (e.num_groups == 1) return indent + "margin = per_tree.sum(1, keepdim=True)\n";
    std::vector<int64_t> group;
    group.reserve(e.trees.size());
    for (const spec::Tree& t : e.trees) group.push_back(t.group);
    parts.buffers.push_back(make_i64("tree_group", {static_cast<int64_t>(group.size())}, group));
    return indent + "margin = per_tree.new_zeros([per_tree.size(0), " + std::to_string(e.num_groups) +
           "]).index_add_(1, self.tree_group, per_tree)\n";
}


std::string link_source(const spec::Pipeline& p) {
    // Not torch.sigmoid: its result depends on the element's position (kernels/logistic.hpp).
    static_cast<void>(kernels::logistic_op_anchor());
    switch (p.transform) {
    case spec::PostTransform::Identity: return "    r = m\n";
    case spec::PostTransform::Exp: return "    r = torch.exp(m)\n";
    case spec::PostTransform::Softmax: return "    r = torch.softmax(m, 1)\n";
    case spec::PostTransform::TwoSided: return "    r = torch.cat([-m, m], 1)\n";
    case spec::PostTransform::Complement: return "    r = torch.cat([1.0 - m, m], 1)\n";
    case spec::PostTransform::Ovr: return "    e = ops.pg_predict.logistic(m)\n    r = e / e.sum(1, keepdim=True)\n";
    case spec::PostTransform::ModifiedHuber: {
        // scikit-learn's SGDClassifier.predict_proba for loss="modified_huber".
        std::string s = "    p = (torch.clamp(m, -1.0, 1.0) + 1.0) / 2.0\n";
        if (spec::expands_to_two_columns(p)) return s + "    r = torch.cat([1.0 - p, p], 1)\n";
        return s + "    total = p.sum(1, keepdim=True)\n"
                   "    q = torch.where(total == 0.0, torch.full_like(p, 1.0 / " + std::to_string(p.model.num_groups) +
                   "), p / total)\n"
                   "    r = torch.cat([q, m], 1)\n";
    }
    case spec::PostTransform::Logistic:
        return spec::expands_to_two_columns(p) ? "    e = ops.pg_predict.logistic(m)\n    r = torch.cat([1.0 - e, e], 1)\n"
                                               : "    r = ops.pg_predict.logistic(m)\n";
    }
    fail(ErrorCategory::Internal, "compiler: unknown post transform");
}

void add_postprocess(const spec::Pipeline& p, ProgramParts& parts, Output output) {
    const spec::TreeEnsemble& e = p.model;
    const int groups = e.num_groups;
    const int width = output_width(p, output);
    if (output == Output::Predict && width != p.output_width())
        fail(ErrorCategory::Unsupported,
             std::string("transform ") + spec::transform_name(p.transform) + " over " +
                 std::to_string(groups) + " groups gives " + std::to_string(width) +
                 " columns, but the model declares " + std::to_string(p.output_width()));
    if (!e.base_margin.empty() && static_cast<int>(e.base_margin.size()) != groups)
        fail(ErrorCategory::InvalidModel, "base_margin has " + std::to_string(e.base_margin.size()) +
                                              " values for " + std::to_string(groups) + " groups");
    std::vector<float> base(e.base_margin);
    base.resize(groups, 0.0f);
    parts.buffers.push_back(make_f32("base_margin", {groups}, base));
    parts.num_features = p.input_width();
    parts.output_width = width;

    const std::string g = std::to_string(groups);
    std::string s = "def forward(self, x: Tensor) -> Tensor:\n";
    if (!p.steps.empty()) {
        // Featurizers run in float64; scikit-learn's trees read their output cast to float32.
        // from_features() is the rest, so models with the same featurizers can share its run.
        build_featurizers(p, parts);
        parts.from_features = parts.submodules.empty();
        if (parts.from_features)
            s += "    return self.from_features(self.featurize(x))\n"
                 "def from_features(self, z: Tensor) -> Tensor:\n" +
                 trees_read_float32("x", "z");
        else
            s += trees_read_float32("x", "self.featurize(x)");
    }
    if (parts.chunk_rows > 0) {
        // Bounded intermediates: margin() sees at most chunk_rows rows at a time.
        const std::string c = std::to_string(parts.chunk_rows);
        s += "    n = x.size(0)\n"
             "    m = x.new_empty([n, " + g + "])\n"
             "    for start in range(0, n, " + c + "):\n"
             "        rows = min(" + c + ", n - start)\n"
             "        m.narrow(0, start, rows).copy_(self.margin(x.narrow(0, start, rows)))\n";
    } else {
        s += "    m = self.margin(x)\n";
    }
    if (adds_base_margin(p, output)) s += "    m = m + self.base_margin\n";
    // No rule for a missing value: a row with a NaN where the trees have none has no margin (the
    // runtime's native paths do the same).
    const std::string missing = missing_rows_mask(e, parts);
    if (!missing.empty()) s += "    m = m.masked_fill(" + missing + ", float('nan'))\n";
    s += output_source(p, output);
    // The one-row shortcut applies the model's own link: only for the stored program.
    if (parts.native_margin && p.steps.empty() && output == Output::Predict)
        parts.one_row_link = spec::transform_name(p.transform);
    // The same for the rest after a featurizer shared with other models (run_sharing_featurizer).
    if (parts.native_margin && parts.from_features && output == Output::Predict)
        parts.from_features_link = spec::transform_name(p.transform);
    s += "    return r\n";
    parts.source += s;
}

}  // namespace pg_predict::compiler
