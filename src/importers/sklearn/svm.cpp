// scikit-learn kernel SVMs (python/pg_predict/svm.py writes them). All float64:
//  - SVC / NuSVC: libsvm's one-vs-one vote. "kernel" step → K [N × n_sv]; per class pair
//    (i, j), i < j, in libsvm's order: d = Σ_{sv ∈ i} coef[j-1][sv] K + Σ_{sv ∈ j} coef[i][sv] K
//    + intercept[p] (a "project" step; intercept = -rho, libsvm's own sign, also for binary
//    models); d > 0 votes i, else j ("threshold" step, then a linear estimator that counts
//    each class's votes). The argmax of the votes takes the lowest index on a tie, as libsvm.
//    No probabilities: predict_proba of probability=True models (Platt scaling + pairwise
//    coupling) is not supported.
//  - SVR / NuSVR: "kernel" step, then linear with coef = dual_coef[0], intercept[0].
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/importers/svm_builder.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

namespace {

// The kernel step; returns the number of support vectors.
size_t push_kernel(const JsonReader& step, spec::Pipeline& p, int32_t width) {
    const std::string kernel = step.string("kernel");
    if (kernel != "linear" && kernel != "rbf" && kernel != "poly" && kernel != "sigmoid")
        refuse(step, "kernel \"" + kernel + "\"");
    const Matrix sv = finite_matrix(step.need("support_vectors"), SIZE_MAX, width);
    const JsonReader degree = step.need("degree");
    if (!degree.value().is_number_integer()) degree.invalid("must be an integer in [0, 64]");
    const int64_t d = degree.integer(0, 64);
    p.steps.push_back(make_step(spec::Op::Kernel, {{"support_vectors", spec::matrix_to_json(sv)},
                                                   {"kernel", kernel},
                                                   {"gamma", step.finite("gamma")},
                                                   {"coef0", step.finite("coef0")},
                                                   {"degree", d}}));
    return sv.size();
}

}  // namespace

void svc(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t k = num_classes(step, p);
    const JsonReader ns = step.need("n_support");
    if (!ns.is_array() || ns.size() != k) ns.invalid("must hold one count per class");
    std::vector<size_t> start{0};
    for (size_t i = 0; i < k; ++i) start.push_back(start.back() + static_cast<size_t>(ns[i].integer(0, INT32_MAX)));
    const size_t n = push_kernel(step, p, width);
    if (start.back() != n)
        ns.invalid("adds up to " + std::to_string(start.back()) + ", there are " + std::to_string(n) +
                   " support vectors");
    const Matrix coef = finite_matrix(step.need("dual_coef"), k - 1, n);
    const size_t pairs = k * (k - 1) / 2;
    const std::vector<double> intercept = step.need("intercept").finite_numbers(pairs);

    const OneVsOne ovo = one_vs_one(k, start, [&](size_t r, size_t s) { return coef[r][s]; });
    p.steps.push_back(
        make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json(ovo.decision)}, {"offset", spec::numbers_to_json(intercept)}}));
    p.steps.push_back(make_step(spec::Op::Threshold, {{"threshold", 0.0}}));
    set_linear(p, ovo.votes, ovo.base, static_cast<int32_t>(pairs));
    p.transform = spec::PostTransform::Identity;
    p.has_probabilities = false;
    // Only decision_function() reads it (compiler/svc_decision.cpp); older documents lack it.
    if (step.optional("decision_function_shape")) {
        p.decision_shape = step.string("decision_function_shape");
        if (p.decision_shape != "ovr" && p.decision_shape != "ovo")
            step.need("decision_function_shape").invalid("must be \"ovr\" or \"ovo\", not \"" + p.decision_shape + "\"");
    }
}

void svr(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    need_task(step, p, false);
    const size_t n = push_kernel(step, p, width);
    set_linear(p, finite_matrix(step.need("dual_coef"), 1, n), step.need("intercept").finite_numbers(1),
               static_cast<int32_t>(n));
    p.transform = spec::PostTransform::Identity;
}

}  // namespace pg_predict::importers::sklearn
