// predict_contributions: each input's share of the raw score (the margin before the link),
// plus the bias, per output group: [group][input..., bias] flattened.
//   trees    exact path-dependent TreeSHAP over the node covers (kernels/tree_shap.hpp), the
//            bias being the trees' expected values plus the base margin;
//   linear   coef_j · z_j of each featurized column j, the intercept as the bias.
// A featurized column counts for the input it derives from (spec/origins.hpp): column-wise
// featurizers (imputers, scalers, encoders, LightGBM's rank columns) keep the inputs as the
// players; a step that mixes inputs before the model is refused, as are models without covers.
#include <string>
#include <type_traits>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/tree_shap.hpp"
#include "pg_predict/spec/origins.hpp"
#include "pg_predict/spec/steps.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

namespace {

// A 1-D buffer of `v`, of its element type.
template <typename T>
Buffer flat_buffer(const char* name, const std::vector<T>& v) {
    const std::vector<int64_t> shape{static_cast<int64_t>(v.size())};
    if constexpr (std::is_same_v<T, int64_t>) return make_i64(name, shape, v);
    else if constexpr (std::is_same_v<T, int32_t>) return make_i32(name, shape, v);
    else if constexpr (std::is_same_v<T, float>) return make_f32(name, shape, v);
    else return make_f64(name, shape, v);
}

// flat_buffer of each (name, vector) pair, in order.
void add_flat_buffers(ProgramParts&) {}

template <typename T, typename... Rest>
void add_flat_buffers(ProgramParts& parts, const char* name, const std::vector<T>& v, const Rest&... rest) {
    parts.buffers.push_back(flat_buffer(name, v));
    add_flat_buffers(parts, rest...);
}

std::string estimator_name(const spec::Pipeline& p) {
    const std::string cls = p.objective.substr(0, p.objective.find(':'));
    if (p.source_format == "sklearn") return "scikit-learn's " + cls;
    // An ONNX graph's objective names the output it scores ("output label"), not a model.
    if (p.source_format == "onnx") return "this ONNX model";
    return p.source_format + " model (" + p.objective + ")";
}

// explain_prediction() calls predict_contributions(): the refusal names both.
[[noreturn]] void refuse(const spec::Pipeline& p, const std::string& why) {
    fail(ErrorCategory::Unsupported,
         "contributions (predict_contributions, explain_prediction) are not available for " + estimator_name(p) + ": " + why);
}

// Why a tree model has no covers, and what to do about it.
std::string no_covers(const spec::Pipeline& p) {
    if (p.source_format == "sklearn")
        return "its document has no node covers (weighted_n_node_samples): it was exported before pg_predict 0.6.0; "
               "export it again with the Python client and register it";
    if (p.source_format == "xgboost")
        return "its trees have no sum_hessian (the node covers XGBoost's save_model writes in JSON); save the model "
               "again with XGBoost and register that file";
    if (p.source_format == "lightgbm") return "its trees have no internal_count / leaf_count (node counts)";
    return "its trees carry no node covers";
}

// A binary classifier without probabilities keeps two margin columns [-d, d]: explain d.
bool two_sided(const spec::Pipeline& p) {
    return p.task == spec::Task::Classification && p.transform == spec::PostTransform::Identity &&
           !p.has_probabilities && p.classes.size() == 2 && p.model.num_groups == 2;
}

// The input each model column counts for; refuses a column the model reads that mixes inputs.
std::vector<int32_t> players(const spec::Pipeline& p, const std::vector<uint8_t>& read) {
    const std::vector<int32_t> origin = spec::column_origins(p);
    if (origin.size() != static_cast<size_t>(p.model.num_features))
        fail(ErrorCategory::Internal, "contributions: origins of " + std::to_string(origin.size()) + " columns for " +
                                          std::to_string(p.model.num_features));
    for (size_t c = 0; c < origin.size(); ++c)
        if (read[c] && origin[c] < 0)
            refuse(p, "its featurizers mix input columns before the model (column " + std::to_string(c) +
                          " of the model's input " +
                          (origin[c] == spec::kMixedOrigin ? "reads several inputs" : "reads no input") +
                          "), so contributions would be of transformed columns, not of the inputs");
    return origin;
}

void build_tree_contributions(const spec::Pipeline& p, ProgramParts& parts) {
    static_cast<void>(kernels::shap_op_anchor());
    const spec::TreeEnsemble& e = p.model;
    std::vector<uint8_t> read(static_cast<size_t>(e.num_features), 0);
    for (const spec::Tree& t : e.trees) {
        if (!t.has_cover()) refuse(p, no_covers(p));
        for (size_t n = 0; n < t.size(); ++n)
            if (!t.is_leaf(n)) read[static_cast<size_t>(t.feature[n])] = 1;
    }
    std::vector<int32_t> player = players(p, read);
    for (int32_t& v : player) v = v < 0 ? 0 : v;  // columns no split reads
    const int32_t F = p.input_width(), G = e.num_groups;
    kernels::PackedShap packed = kernels::pack_shap(e, player, F);

    std::vector<float> bias(static_cast<size_t>(G) * (F + 1), 0.0f);
    for (int32_t g = 0; g < G; ++g)
        bias[static_cast<size_t>(g) * (F + 1) + F] =
            static_cast<float>(packed.expected[g] + (e.base_margin.empty() ? 0.0 : e.base_margin[g]));
    add_flat_buffers(parts, "shap_meta", packed.meta, "shap_trees", packed.trees, "shap_nodes", packed.nodes,
                     "shap_thresholds", packed.thresholds, "shap_edges", packed.edges, "shap_subtrees",
                     packed.subtrees, "shap_terms", packed.terms, "shap_slots", packed.slots, "shap_tables",
                     packed.tables, "shap_paths", packed.paths, "shap_path_values", packed.path_values,
                     "shap_elements", packed.elements, "shap_zero_fractions", packed.zero_fractions,
                     "shap_bias", bias);
    std::string s = "def forward(self, x: Tensor) -> Tensor:\n";
    if (!p.steps.empty()) {
        build_featurizers(p, parts);  // trees read the featurized columns as float32, as when scoring
        s += trees_read_float32("x", "self.featurize(x)");
    }
    s += "    c = ops.pg_predict.tree_shap(x, self.shap_meta, self.shap_trees, self.shap_nodes, self.shap_thresholds,\n"
         "                                 self.shap_edges, self.shap_subtrees, self.shap_terms, self.shap_slots,\n"
         "                                 self.shap_tables, self.shap_paths, self.shap_path_values,\n"
         "                                 self.shap_elements, self.shap_zero_fractions, self.shap_bias)\n";
    // No rule for a missing value: a row with one has no prediction, so nothing to explain.
    const std::string missing = missing_rows_mask(e, parts);
    if (!missing.empty()) s += "    c = c.masked_fill(" + missing + ", float('nan'))\n";
    s += "    return c\n";
    parts.source += s;
    parts.num_features = F;
    parts.output_width = static_cast<int64_t>(G) * (F + 1);
}

void build_linear_contributions(const spec::Pipeline& p, ProgramParts& parts) {
    auto coef = spec::param_matrix(p.estimator, "coef", "estimator");
    auto intercept = spec::param_vector(p.estimator, "intercept", "estimator");
    if (two_sided(p) && coef.size() == 2 && intercept.size() == 2) {
        coef.erase(coef.begin());
        intercept.erase(intercept.begin());
    }
    const int64_t G = static_cast<int64_t>(coef.size()), M = p.model.num_features, F = p.input_width();
    if (G < 1 || static_cast<int64_t>(intercept.size()) != G)
        fail(ErrorCategory::InvalidModel, "linear estimator: coef and intercept disagree");
    std::vector<uint8_t> read(static_cast<size_t>(M), 0);
    for (const auto& row : coef) {
        if (static_cast<int64_t>(row.size()) != M) fail(ErrorCategory::InvalidModel, "linear estimator: coef width");
        for (int64_t j = 0; j < M; ++j) read[j] |= row[j] != 0.0;
    }
    const std::vector<int32_t> origin = players(p, read);
    // origin matrix [M, F + 1]: column j of the model adds to its input's slot (unread ones nowhere).
    std::vector<double> to_input(static_cast<size_t>(M * (F + 1)), 0.0);
    for (int64_t j = 0; j < M; ++j)
        if (read[j]) to_input[j * (F + 1) + origin[j]] = 1.0;
    std::vector<double> w;
    for (const auto& row : coef) w.insert(w.end(), row.begin(), row.end());
    std::vector<double> b(static_cast<size_t>(G * (F + 1)), 0.0);
    for (int64_t g = 0; g < G; ++g) b[g * (F + 1) + F] = intercept[g];
    parts.buffers.push_back(make_f64("contrib_coef", {G, M}, std::move(w)));
    parts.buffers.push_back(make_f64("contrib_origin", {M, F + 1}, std::move(to_input)));
    parts.buffers.push_back(make_f64("contrib_intercept", {G, F + 1}, std::move(b)));
    build_featurizers(p, parts);
    parts.source += "def forward(self, x: Tensor) -> Tensor:\n"
                    "    z = self.featurize(x)\n"
                    "    c = (z.unsqueeze(1) * self.contrib_coef).matmul(self.contrib_origin) + self.contrib_intercept\n"
                    "    return c.reshape(z.size(0), " + std::to_string(G * (F + 1)) + ").float()\n";
    parts.num_features = F;
    parts.output_width = G * (F + 1);
}

}  // namespace

void check_contributions(const spec::Pipeline& p) {
    if (p.task == spec::Task::Transform) refuse(p, "the pipeline ends in a transformer; it predicts nothing to explain");
    if (p.source_format == "sklearn" && p.score_offset != 0.0)
        refuse(p, "an isolation forest's score is not the sum of its trees' values");
    switch (p.estimator.op) {
    case spec::Op::None:
        if (p.model.has_linear_leaves()) refuse(p, "TreeSHAP does not cover linear leaves (LightGBM linear_tree)");
        for (const spec::Tree& t : p.model.trees)
            if (!t.has_cover()) refuse(p, no_covers(p));
        return;
    case spec::Op::Linear:
        if (is_svc(p)) refuse(p, "a kernel machine's margin is not linear in its inputs");
        return;
    default:
        refuse(p, "pg_predict explains tree ensembles and linear models only");
    }
}

int contributions_width(const spec::Pipeline& p) {
    const int groups = p.estimator.op == spec::Op::Linear && two_sided(p) ? 1 : p.model.num_groups;
    return groups * (p.input_width() + 1);
}

void build_contributions(const spec::Pipeline& p, ProgramParts& parts) {
    check_contributions(p);
    if (p.estimator.op == spec::Op::Linear)
        build_linear_contributions(p, parts);
    else
        build_tree_contributions(p, parts);
}

}  // namespace pg_predict::compiler
