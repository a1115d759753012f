// SVMClassifier / SVMRegressor → a "kernel" step (K [N × n_sv], libsvm's kernels as the spec
// defines them), then:
//  - regressor: value = Σ coef K + rho (a projection);
//  - classifier: libsvm's one-vs-one vote, as the scikit-learn importer builds it: per class
//    pair (i, j), i < j, d = Σ_{sv ∈ i} coef[j-1][sv] K + Σ_{sv ∈ j} coef[i][sv] K + rho[p]
//    (a projection), d > 0 votes i, else j (a threshold, then one projection counting each
//    class's votes); the label is the argmax of the votes (the lowest class on a tie, as
//    libsvm). Without probability estimates the scores output is the decision value per class
//    pair, which later nodes can read (skl2onnx's one-vs-rest decision function); it is not
//    scored as probabilities. With them (prob_a / prob_b, SVC(probability=True)) the scores
//    are ONNX Runtime's probabilities: each pair's Platt sigmoid 1 - σ(d·A + B) clipped to
//    [1e-7, 1 - 1e-7], then libsvm's pairwise coupling (tensor function pairwise_coupling),
//    two classes included. The label output is still the vote (libsvm's and ONNX Runtime's),
//    but a model scored with its probabilities labels a row with its most probable class
//    (predict_proba's argmax), which differs from the vote on rows near a boundary; option
//    "output": "label" scores the vote instead.
#include <string>
#include <vector>

#include "graph.hpp"
#include "pg_predict/importers/svm_builder.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::onnx_import {

namespace {

using Kind = Value::Kind;
using Matrix = std::vector<std::vector<double>>;

// The kernel step over x; returns the number of support vectors.
Row kernel(const Node& n, const Row& x, size_t& count) {
    if (x.dims.size() != 1) n.unsupported("an SVM over a tensor other than [N, F]");
    const std::string type = n.text("kernel_type", "LINEAR");
    const char* k = type == "LINEAR" ? "linear" : type == "RBF" ? "rbf" : type == "POLY" ? "poly" : type == "SIGMOID" ? "sigmoid" : nullptr;
    if (k == nullptr) n.bad("kernel_type must be LINEAR, POLY, RBF or SIGMOID, not \"" + type + "\"");
    std::vector<double> params = n.numbers("kernel_params", false);
    if (params.empty()) params = {0.0, 0.0, 0.0};
    if (params.size() != 3) n.bad("kernel_params must hold gamma, coef0 and degree");
    const double degree = params[2];
    if (degree < 0 || degree > 64 || degree != static_cast<double>(static_cast<int64_t>(degree)))
        n.bad("the kernel degree must be an integer in [0, 64]");
    const std::vector<double> sv = n.numbers("support_vectors");
    const size_t f = x.text.size();
    if (f == 0 || sv.empty() || sv.size() % f != 0)
        n.bad("has " + std::to_string(sv.size()) + " support vector values for an input of " + std::to_string(f) + " columns");
    count = sv.size() / f;
    Matrix vectors(count, std::vector<double>(f));
    for (size_t i = 0; i < count; ++i)
        for (size_t j = 0; j < f; ++j) vectors[i][j] = sv[i * f + j];
    return then(x, make_step("kernel", {{"support_vectors", spec::matrix_to_json(vectors)}, {"kernel", k}, {"gamma", params[0]},
                                        {"coef0", params[1]}, {"degree", static_cast<int64_t>(degree)}}),
                {static_cast<int64_t>(count)});
}

Row project(const Row& x, const Matrix& m, const std::vector<double>& offset) {
    return then(x, make_step("project", {{"matrix", spec::matrix_to_json(m)}, {"offset", spec::numbers_to_json(offset)}}),
                {static_cast<int64_t>(m.size())});
}

void svm_regressor(Node& n) {
    if (n.integer("one_class", 0) != 0) n.unsupported("a one-class SVM");
    if (n.text("post_transform", "NONE") != "NONE") n.unsupported("post_transform " + n.text("post_transform"));
    size_t count = 0;
    const Row k = kernel(n, n.row_input(0), count);
    const std::vector<double> coef = n.numbers("coefficients");
    const std::vector<double> rho = n.numbers("rho");
    if (coef.size() != count) n.bad("has " + std::to_string(coef.size()) + " coefficients for " + std::to_string(count) + " support vectors");
    if (rho.size() != 1) n.bad("rho must hold one value");
    n.set_output(0, row_value(n.graph, project(k, {coef}, rho)));
}

// ONNX Runtime's SVM probabilities from the decision values d [N, pairs] of classes (i, j),
// i < j in order: r_ij = clip(1 - σ(d·A + B)) and r_ji = 1 - r_ij, coupled.
Row svm_probabilities(Node& n, const Row& decision, size_t k) {
    const size_t pairs = k * (k - 1) / 2;
    const std::vector<double> a = n.numbers("prob_a", false), b = n.numbers("prob_b", false);
    if (a.size() != pairs || b.size() != pairs)
        n.bad("prob_a and prob_b must hold one value per class pair (" + std::to_string(pairs) + "), not " +
              std::to_string(a.size()) + " and " + std::to_string(b.size()));
    n.general("SVM probabilities: Platt scaling per class pair, then pairwise coupling");
    std::vector<double> minus_a, minus_b;
    for (size_t i = 0; i < pairs; ++i) {
        minus_a.push_back(-a[i]);
        minus_b.push_back(-b[i]);
    }
    const std::vector<int64_t> dims{static_cast<int64_t>(pairs)};
    Row r = then(decision, make_step("affine", {{"scale", spec::numbers_to_json(minus_a)}, {"offset", spec::numbers_to_json(minus_b)}}),
                 dims);
    r = then(r, make_step("elementwise", {{"function", "expit"}}), dims);
    // Clipped as ONNX Runtime does, in float32: [1e-7f, 1 - 1e-7f].
    const double lo = static_cast<double>(1.0e-7f), hi = static_cast<double>(1.0f - 1.0e-7f);
    std::vector<int32_t> entries, low(pairs, static_cast<int32_t>(pairs)), high(pairs, static_cast<int32_t>(pairs) + 1);
    for (size_t i = 0; i < pairs; ++i) entries.push_back(static_cast<int32_t>(i));
    r = then(r, make_step("tensor", {{"function", "max"}, {"operands", {entries, low}}, {"constants", {lo, hi}}}), dims);
    r = then(r, make_step("tensor", {{"function", "min"}, {"operands", {entries, high}}, {"constants", {lo, hi}}}), dims);
    // [r_01, r_02, ..., 1 - r_01, 1 - r_02, ...]: r_ij - 0 and 1 - r_ij in one step.
    const int32_t zero = static_cast<int32_t>(pairs), one = zero + 1;
    std::vector<int32_t> left = entries, right(pairs, zero);
    left.insert(left.end(), pairs, one);
    right.insert(right.end(), entries.begin(), entries.end());
    r = then(r, make_step("tensor", {{"function", "sub"}, {"operands", {left, right}}, {"constants", {0.0, 1.0}}}),
             {static_cast<int64_t>(2 * pairs)});
    // The k x k matrix of each row, the diagonal a zero it does not read.
    std::vector<int32_t> matrix(k * k, static_cast<int32_t>(2 * pairs));
    size_t pair = 0;
    for (size_t i = 0; i < k; ++i)
        for (size_t j = i + 1; j < k; ++j, ++pair) {
            matrix[i * k + j] = static_cast<int32_t>(pair);
            matrix[j * k + i] = static_cast<int32_t>(pairs + pair);
        }
    return then(r, make_step("tensor", {{"function", "pairwise_coupling"}, {"operands", nlohmann::json::array({matrix})},
                                        {"constants", {0.0}}, {"group", static_cast<int64_t>(k)}}),
                {static_cast<int64_t>(k)});
}

void svm_classifier(Node& n) {
    const bool probabilities = n.has("prob_a") || n.has("prob_b");
    const ClassLabels labels = read_class_labels(n, "classlabels_ints");
    const std::vector<double>& classes = labels.classes;
    const size_t k = classes.size();
    if (k < 2) n.bad("needs at least two classes");
    size_t count = 0;
    const Row kx = kernel(n, n.row_input(0), count);
    const std::vector<int64_t> per_class = n.integers("vectors_per_class");
    if (per_class.size() != k) n.bad("vectors_per_class must hold one count per class");
    std::vector<size_t> start{0};
    for (int64_t c : per_class) {
        if (c < 0) n.bad("vectors_per_class must not be negative");
        start.push_back(start.back() + static_cast<size_t>(c));
    }
    if (start.back() != count)
        n.bad("vectors_per_class adds up to " + std::to_string(start.back()) + ", there are " + std::to_string(count) + " support vectors");
    const std::vector<double> coef = n.numbers("coefficients");
    if (coef.size() != (k - 1) * count) n.bad("coefficients must hold (classes - 1) x support vectors values");
    const size_t pairs = k * (k - 1) / 2;
    const std::vector<double> rho = n.numbers("rho");
    if (rho.size() != pairs) n.bad("rho must hold one value per class pair (" + std::to_string(pairs) + ")");
    const OneVsOne ovo = one_vs_one(k, start, [&](size_t r, size_t s) { return coef[r * count + s]; });
    const Row decision = project(kx, ovo.decision, rho);
    Row bits = then(decision, make_step("threshold", {{"threshold", 0.0}}), {static_cast<int64_t>(pairs)});
    Value tally = row_value(n.graph, project(bits, ovo.votes, ovo.base));
    n.set_output(0, classifier_label(n, tally, labels, "votes"));
    if (probabilities) {
        if (n.text("post_transform", "NONE") != "NONE")
            n.unsupported("post_transform " + n.text("post_transform") + " of SVM probabilities");
        return n.set_output(1, row_value(n.graph, svm_probabilities(n, decision, k), true));
    }
    // The scores of three classes or more: libsvm's decision value per class pair (what
    // skl2onnx's one-vs-rest graph reads); no probabilities. ONNX Runtime's layout of a binary
    // classifier's scores is its own, so that one is not read.
    if (k > 2) {
        n.graph.reads_decision_values = true;
        return n.set_output(1, row_value(n.graph, decision));
    }
    Value scores;
    scores.kind = Kind::Opaque;
    scores.opaque_why = "the decision values of a binary SVMClassifier, which are no probabilities";
    n.set_output(1, scores);
}

}  // namespace

void add_svm_ops(std::map<std::string, Handler>& t) {
    t["ai.onnx.ml:SVMClassifier"] = svm_classifier;
    t["ai.onnx.ml:SVMRegressor"] = svm_regressor;
}

}  // namespace pg_predict::importers::onnx_import
