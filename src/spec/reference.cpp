// The plain evaluation every compiled strategy is tested against: walk each tree, sum the
// leaves per group in float32 in tree order, add the base margin, apply the link.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::spec {
namespace {

float leaf_value(const Tree& tree, Comparison cmp, const float* row) {
    size_t node = 0;
    // A validated tree is acyclic, so the walk ends; the bound only guards a corrupt one.
    for (size_t steps = 0; steps <= tree.size(); ++steps) {
        if (tree.is_leaf(node)) {
            if (!tree.is_linear()) return tree.value[node];
            double out = tree.linear_const[node];  // LightGBM's linear leaf, in double
            for (size_t k = 0; k < tree.linear_feature[node].size(); ++k) {
                const double v = row[tree.linear_feature[node][k]];
                if (std::isnan(v)) return tree.value[node];
                out += tree.linear_coeff[node][k] * v;
            }
            return static_cast<float>(out);
        }
        const float v = row[tree.feature[node]];
        const float t = tree.threshold[node];
        bool left;
        if (std::isnan(v))
            left = tree.default_left[node] != 0;
        else
            left = cmp == Comparison::Less ? v < t : v <= t;
        node = static_cast<size_t>(left ? tree.left[node] : tree.right[node]);
    }
    fail(ErrorCategory::InvalidModel, "reference_predict: tree has a cycle");
}

// The logistic link as every compiled program computes it (kernels/logistic.hpp).
float sigmoid(float m) { return 1.0f / (1.0f + std::exp(-m)); }

// A linear estimator after the (double) featurized row, link included, all in double as
// scikit-learn computes it.
void linear_row(const Pipeline& p, const std::vector<std::vector<double>>& coef,
                const std::vector<double>& intercept, const std::vector<double>& z, float* o) {
    const size_t k = coef.size();
    std::vector<double> m(k);
    for (size_t g = 0; g < k; ++g) {
        double acc = intercept[g];
        for (size_t f = 0; f < z.size(); ++f) acc += z[f] * coef[g][f];
        m[g] = acc;
    }
    auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    switch (p.transform) {
    case PostTransform::Identity:
        for (size_t g = 0; g < k; ++g) o[g] = static_cast<float>(m[g]);
        break;
    case PostTransform::Exp:
        for (size_t g = 0; g < k; ++g) o[g] = static_cast<float>(std::exp(m[g]));
        break;
    case PostTransform::Logistic:
        if (p.task == Task::Classification && k == 1) {
            const double prob = sig(m[0]);
            o[0] = static_cast<float>(1.0 - prob);
            o[1] = static_cast<float>(prob);
        } else {
            for (size_t g = 0; g < k; ++g) o[g] = static_cast<float>(sig(m[g]));
        }
        break;
    case PostTransform::Softmax: {
        double top = m[0], total = 0.0;
        for (double v : m) top = std::max(top, v);
        for (double& v : m) total += (v = std::exp(v - top));
        for (size_t g = 0; g < k; ++g) o[g] = static_cast<float>(m[g] / total);
        break;
    }
    case PostTransform::TwoSided:
        o[0] = static_cast<float>(-m[0]);
        o[1] = static_cast<float>(m[0]);
        break;
    case PostTransform::Complement:
        o[0] = static_cast<float>(1.0 - m[0]);
        o[1] = static_cast<float>(m[0]);
        break;
    case PostTransform::ModifiedHuber: {
        std::vector<double> prob(k);
        double total = 0.0;
        for (size_t g = 0; g < k; ++g) total += (prob[g] = (std::clamp(m[g], -1.0, 1.0) + 1.0) / 2.0);
        if (k == 1) {
            o[0] = static_cast<float>(1.0 - prob[0]);
            o[1] = static_cast<float>(prob[0]);
            break;
        }
        for (size_t g = 0; g < k; ++g) {
            o[g] = static_cast<float>(total == 0.0 ? 1.0 / static_cast<double>(k) : prob[g] / total);
            o[k + g] = static_cast<float>(m[g]);
        }
        break;
    }
    case PostTransform::Ovr: {
        double total = 0.0;
        for (double& v : m) total += (v = sig(v));
        for (size_t g = 0; g < k; ++g) o[g] = static_cast<float>(m[g] / total);
        break;
    }
    }
}

template <typename Input>
void predict_rows(const Pipeline& p, const Input* x, int64_t rows, float* out) {
    const TreeEnsemble& e = p.model;
    const int groups = e.num_groups;
    const int width = p.output_width();
    const bool binary = expands_to_two_columns(p);
    // The tree path below keeps float32 margins like the libraries that train trees.
    if (width != transformed_width(p))
        fail(ErrorCategory::Unsupported,
             std::string("reference_predict: transform ") + transform_name(p.transform) +
                 " over " + std::to_string(groups) + " groups does not give " +
                 std::to_string(width) + " output columns");

    const int in_width = p.input_width();
    if (p.task == Task::Transform) {  // the featurized row is the output
        for (int64_t r = 0; r < rows; ++r) {
            std::vector<double> z(x + r * in_width, x + (r + 1) * in_width);
            const std::vector<double> y = apply_steps(p.steps, std::move(z));
            for (int g = 0; g < width; ++g) out[r * width + g] = static_cast<float>(y[g]);
        }
        return;
    }
    switch (p.estimator.op) {
        case Op::None:
            break;  // the tree ensemble, below
        case Op::Linear: {
            const auto coef = param_matrix(p.estimator, "coef", "estimator");
            const auto intercept = param_vector(p.estimator, "intercept", "estimator");
            for (int64_t r = 0; r < rows; ++r) {
                std::vector<double> z(x + r * in_width, x + (r + 1) * in_width);
                linear_row(p, coef, intercept, apply_steps(p.steps, std::move(z)), out + r * width);
            }
            return;
        }
        case Op::TorchScript:
            fail(ErrorCategory::Unsupported,
                 "reference_predict cannot evaluate a TorchScript module: only libtorch runs it (the "
                 "spec describes its shape, the program is the module)");
        case Op::Affine: case Op::Impute: case Op::OneHot: case Op::Ordinal: case Op::Elementwise:
        case Op::Threshold: case Op::Clip: case Op::IsMissing: case Op::Normalize: case Op::Project:
        case Op::Bucketize: case Op::Monomials: case Op::Kernel: case Op::Neighbors: case Op::Concat:
        case Op::Power: case Op::Quantile: case Op::Model: case Op::Tensor:
            fail(ErrorCategory::Unsupported,
                 std::string("reference_predict: estimator op \"") + op_name(p.estimator.op) + "\"");
    }

    std::vector<float> margin(groups);
    std::vector<float> featurized;
    for (int64_t r = 0; r < rows; ++r) {
        const Input* input = x + r * in_width;
        if (!p.steps.empty()) {
            // scikit-learn's trees read the featurized (float64) matrix cast to float32.
            std::vector<double> z(input, input + in_width);
            z = apply_steps(p.steps, std::move(z));
            featurized.assign(z.begin(), z.end());
        } else {
            featurized.assign(input, input + in_width);  // a bare model reads float32
        }
        const float* row = featurized.data();
        std::fill(margin.begin(), margin.end(), 0.0f);
        for (const Tree& tree : e.trees) margin[tree.group] += leaf_value(tree, e.comparison, row);
        for (int g = 0; g < groups; ++g)
            if (static_cast<size_t>(g) < e.base_margin.size()) margin[g] += e.base_margin[g];
        // A model without a rule for a missing value has no margin for a row with one.
        if (std::any_of(e.inputs_without_missing_rule.begin(), e.inputs_without_missing_rule.end(),
                        [&](int32_t f) { return std::isnan(row[f]); }))
            std::fill(margin.begin(), margin.end(), std::numeric_limits<float>::quiet_NaN());

        float* o = out + r * width;
        switch (p.transform) {
        case PostTransform::Identity:
            for (int g = 0; g < groups; ++g) o[g] = margin[g];
            break;
        case PostTransform::Exp:
            for (int g = 0; g < groups; ++g) o[g] = std::exp(margin[g]);
            break;
        case PostTransform::Logistic:
            if (binary) {
                const float prob = sigmoid(margin[0]);
                o[0] = 1.0f - prob;
                o[1] = prob;
            } else {
                for (int g = 0; g < groups; ++g) o[g] = sigmoid(margin[g]);
            }
            break;
        case PostTransform::Softmax: {
            float top = margin[0];
            for (int g = 1; g < groups; ++g) top = std::max(top, margin[g]);
            float total = 0.0f;
            for (int g = 0; g < groups; ++g) total += (o[g] = std::exp(margin[g] - top));
            for (int g = 0; g < groups; ++g) o[g] /= total;
            break;
        }
        case PostTransform::TwoSided:
            o[0] = -margin[0];
            o[1] = margin[0];
            break;
        case PostTransform::Complement:
            o[0] = 1.0f - margin[0];
            o[1] = margin[0];
            break;
        case PostTransform::ModifiedHuber: {
            // Produced only for linear estimators; kept here so every transform has a reference.
            float total = 0.0f;
            for (int g = 0; g < groups; ++g) total += (o[g] = (std::clamp(margin[g], -1.0f, 1.0f) + 1.0f) / 2.0f);
            if (binary) {
                o[1] = o[0];
                o[0] = 1.0f - o[1];
                break;
            }
            for (int g = 0; g < groups; ++g) {
                o[g] = total == 0.0f ? 1.0f / static_cast<float>(groups) : o[g] / total;
                o[groups + g] = margin[g];
            }
            break;
        }
        case PostTransform::Ovr: {
            float total = 0.0f;
            for (int g = 0; g < groups; ++g) total += (o[g] = sigmoid(margin[g]));
            for (int g = 0; g < groups; ++g) o[g] /= total;
            break;
        }
        }
    }
}

}  // namespace

void reference_predict(const Pipeline& p, const float* x, int64_t rows, float* out) {
    predict_rows(p, x, rows, out);
}

void reference_predict(const Pipeline& p, const double* x, int64_t rows, float* out) {
    predict_rows(p, x, rows, out);
}

}  // namespace pg_predict::spec
