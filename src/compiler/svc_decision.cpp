// scikit-learn's decision_function of SVC / NuSVC. The model's program ends in libsvm's
// one-vs-one vote: featurize() computes the decision value d of every pair of classes (i < j;
// d > 0 votes i), a threshold step turns each into a 0/1 vote and the linear estimator counts
// them. The decision program stops before the threshold and computes what scikit-learn does:
//   binary: -d (scikit-learn flips libsvm's sign for two classes);
//   decision_function_shape="ovo": d per pair;
//   "ovr" (the default): votes + c / (3 (|c| + 1)), c_i = Σ_{pairs (i, j)} d - Σ_{pairs (j, i)} d
//   (sklearn.utils.multiclass._ovr_decision_function).
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/steps.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

void build_svc_decision(const spec::Pipeline& p, ProgramParts& parts) {
    const size_t k = p.classes.size();
    const int64_t pairs = static_cast<int64_t>(k * (k - 1) / 2);
    if (p.steps.empty() || p.steps.back().op != spec::Op::Threshold || p.model.num_features != pairs)
        fail(ErrorCategory::Internal, "decision_function: the SVC program does not end in its one-vs-one vote");
    spec::Pipeline decisions = p;  // its featurizers up to the decision values
    decisions.steps.pop_back();
    build_featurizers(decisions, parts);
    parts.num_features = p.input_width();

    std::string s = "def forward(self, x: Tensor) -> Tensor:\n"
                    "    d = self.featurize(x)\n";
    if (k == 2) {
        s += "    return (-d).float()\n";
        parts.output_width = 1;
    } else if (p.decision_shape == "ovo") {
        s += "    return d.float()\n";
        parts.output_width = pairs;
    } else {
        // The votes as the model's own estimator counts them, and the confidences.
        const auto coef = spec::param_matrix(p.estimator, "coef", "estimator");
        const auto intercept = spec::param_vector(p.estimator, "intercept", "estimator");
        std::vector<double> votes(static_cast<size_t>(pairs) * k), confidence(static_cast<size_t>(pairs) * k, 0.0);
        for (size_t c = 0; c < k; ++c)
            for (int64_t q = 0; q < pairs; ++q) votes[q * k + c] = coef[c][q];
        int64_t q = 0;
        for (size_t i = 0; i < k; ++i)
            for (size_t j = i + 1; j < k; ++j, ++q) {
                confidence[q * k + i] = 1.0;
                confidence[q * k + j] = -1.0;
            }
        const int64_t classes = static_cast<int64_t>(k);
        parts.buffers.push_back(make_f64("vote_coef", {pairs, classes}, std::move(votes)));
        parts.buffers.push_back(make_f64("vote_base", {classes}, intercept));
        parts.buffers.push_back(make_f64("confidence_coef", {pairs, classes}, std::move(confidence)));
        s += "    votes = torch.addmm(self.vote_base, (d > 0.0).double(), self.vote_coef)\n"
             "    c = torch.mm(d, self.confidence_coef)\n"
             "    return (votes + c / (3.0 * (torch.abs(c) + 1.0))).float()\n";
        parts.output_width = classes;
    }
    parts.source += s;
}

}  // namespace pg_predict::compiler
