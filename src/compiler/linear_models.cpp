// The "linear" estimator (Hummingbird: addmm(b, X, W), then sigmoid / softmax / one-vs-rest
// normalisation). scikit-learn computes linear models in float64, and so does the program:
// featurize() gives float64, the margin and the link stay float64, the result is cast last.
// A one-output model over plain featurizers (impute, scale, one-hot: fused_margin.cpp) takes
// the fused native op for its margin on the CPU: the same bits without the [rows × k] tensors
// (the bench's `pipe` pipeline: model time 74 -> 22 ms per 1M rows); on a GPU the tensor ops.
#include <string>
#include <utility>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/steps.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

void build_linear(const spec::Pipeline& p, ProgramParts& parts, Output output, Strategy strategy) {
    const auto coef = spec::param_matrix(p.estimator, "coef", "estimator");
    const auto intercept = spec::param_vector(p.estimator, "intercept", "estimator");
    const int64_t k = static_cast<int64_t>(coef.size());
    const int64_t f = p.model.num_features;
    if (k != p.model.num_groups || static_cast<int64_t>(intercept.size()) != k)
        fail(ErrorCategory::InvalidModel, "linear estimator: coef has " + std::to_string(k) + " rows, intercept " +
                                              std::to_string(intercept.size()) + ", groups " +
                                              std::to_string(p.model.num_groups));
    const int width = output_width(p, output);
    if (output == Output::Predict && width != p.output_width())
        fail(ErrorCategory::Unsupported,
             std::string("transform ") + spec::transform_name(p.transform) + " over " + std::to_string(k) +
                 " groups gives " + std::to_string(width) + " columns, but the model declares " +
                 std::to_string(p.output_width()));

    std::vector<double> w(static_cast<size_t>(f * k));  // [f, k]: addmm(b, z, w)
    for (int64_t g = 0; g < k; ++g) {
        if (static_cast<int64_t>(coef[g].size()) != f)
            fail(ErrorCategory::InvalidModel, "linear estimator: coef row " + std::to_string(g) + " has " +
                                                  std::to_string(coef[g].size()) + " entries, expected " +
                                                  std::to_string(f));
        for (int64_t i = 0; i < f; ++i) w[i * k + g] = coef[g][i];
    }
    parts.buffers.push_back(make_f64("linear_coef", {f, k}, std::move(w)));
    parts.buffers.push_back(make_f64("linear_intercept", {k}, intercept));
    build_featurizers(p, parts);

    std::vector<kernels::LinearTerm> terms;
    const bool native = strategy == Strategy::Auto || strategy == Strategy::Native;
    std::string s = "def forward(self, x: Tensor) -> Tensor:\n";
    if (native && k == 1 && linear_margin_terms(p, coef[0], terms)) {
        static_cast<void>(kernels::linear_margin_op_anchor());
        const int64_t t = static_cast<int64_t>(terms.size());
        parts.buffers.push_back(make_f64("linear_terms", {t, kernels::kLinearTermFields}, kernels::pack_linear_terms(terms)));
        s += "    if x.is_cuda:\n"
             "        m = torch.addmm(self.linear_intercept, self.featurize(x), self.linear_coef)\n"
             "    else:\n"
             "        m = ops.pg_predict.linear_margin(x, self.linear_terms, self.linear_intercept)\n";
        // The runtime's native run applies these links itself, as link_source writes them.
        for (spec::PostTransform t : {spec::PostTransform::Identity, spec::PostTransform::Logistic,
                                      spec::PostTransform::TwoSided, spec::PostTransform::Complement})
            if (output == Output::Predict && p.transform == t && p.decision_scale == 1.0)
                parts.linear_link = spec::transform_name(t);
    } else if (!p.steps.empty() && parts.submodules.empty()) {
        // from_features() is the rest, so models with the same featurizers can share its run.
        parts.from_features = true;
        s += "    return self.from_features(self.featurize(x))\n"
             "def from_features(self, z: Tensor) -> Tensor:\n"
             "    m = torch.addmm(self.linear_intercept, z, self.linear_coef)\n";
    } else {
        s += "    m = torch.addmm(self.linear_intercept, self.featurize(x), self.linear_coef)\n";
    }
    s += output_source(p, output);
    s += "    return r.float()\n";
    parts.source += s;
    parts.num_features = p.input_width();
    parts.output_width = width;
}

void build_transformer(const spec::Pipeline& p, ProgramParts& parts) {
    build_featurizers(p, parts);
    parts.source += "def forward(self, x: Tensor) -> Tensor:\n"
                    "    return self.featurize(x).float()\n";
    parts.num_features = p.input_width();
    parts.output_width = p.output_width();
}

}  // namespace pg_predict::compiler
