// Op tensor (spec/steps.hpp): the general per-row tensor operation the ONNX importer lowers a
// node to when no specific step computes it (a product of two computed tensors, a maximum over
// an axis, a softmax in the middle of a graph, a comparison per column, ...). Each operand is a
// list of entries of [x | constants]; the function combines them entry by entry (binary,
// where) or group by group (reduce, softmax). Its shape check and double-precision evaluation.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"
#include "step_ops.hpp"

namespace pg_predict::spec {

using step_ops::invalid;

const std::vector<TensorFunction>& tensor_functions() {
    static const std::vector<TensorFunction> functions = {
        {"add", TensorFamily::Binary},          {"sub", TensorFamily::Binary},
        {"mul", TensorFamily::Binary},          {"div", TensorFamily::Binary},
        {"pow", TensorFamily::Binary},          {"min", TensorFamily::Binary},
        {"max", TensorFamily::Binary},          {"less", TensorFamily::Binary},
        {"less_equal", TensorFamily::Binary},   {"greater", TensorFamily::Binary},
        {"greater_equal", TensorFamily::Binary}, {"equal", TensorFamily::Binary},
        {"and", TensorFamily::Binary},          {"or", TensorFamily::Binary},
        {"xor", TensorFamily::Binary},          {"where", TensorFamily::Where},
        {"reduce_sum", TensorFamily::Reduce},   {"reduce_mean", TensorFamily::Reduce},
        {"reduce_max", TensorFamily::Reduce},   {"reduce_min", TensorFamily::Reduce},
        {"reduce_prod", TensorFamily::Reduce},  {"reduce_log_sum_exp", TensorFamily::Reduce},
        {"reduce_sum_square", TensorFamily::Reduce}, {"reduce_l1", TensorFamily::Reduce},
        {"reduce_l2", TensorFamily::Reduce},    {"argmax", TensorFamily::Reduce},
        {"argmin", TensorFamily::Reduce},       {"softmax", TensorFamily::Grouped},
        {"log_softmax", TensorFamily::Grouped}, {"softmax_zero", TensorFamily::Grouped},
        {"sort_descending", TensorFamily::Grouped},
        {"sort_ascending", TensorFamily::Grouped}, {"argsort_descending", TensorFamily::Grouped},
        {"argsort_ascending", TensorFamily::Grouped},  {"pairwise_coupling", TensorFamily::Coupling},
        {"take", TensorFamily::Take},
    };
    return functions;
}

const TensorFunction* find_tensor_function(const std::string& name) {
    for (const TensorFunction& f : tensor_functions())
        if (name == f.name) return &f;
    return nullptr;
}

double apply_binary(const std::string& f, double a, double b) {
    if (f == "add") return a + b;
    if (f == "sub") return a - b;
    if (f == "mul") return a * b;
    if (f == "div") return a / b;
    if (f == "pow") return std::pow(a, b);
    // numpy's maximum / minimum: NaN wins.
    if (f == "min") return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    if (f == "max") return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    if (f == "less") return a < b ? 1.0 : 0.0;
    if (f == "less_equal") return a <= b ? 1.0 : 0.0;
    if (f == "greater") return a > b ? 1.0 : 0.0;
    if (f == "greater_equal") return a >= b ? 1.0 : 0.0;
    if (f == "equal") return a == b ? 1.0 : 0.0;
    if (f == "and") return a != 0 && b != 0 ? 1.0 : 0.0;
    if (f == "or") return a != 0 || b != 0 ? 1.0 : 0.0;
    if (f == "xor") return (a != 0) != (b != 0) ? 1.0 : 0.0;
    fail(ErrorCategory::InvalidModel, "invalid pipeline: tensor function \"" + f + "\" is not binary");
}

void pairwise_coupling(const double* r, size_t k, double* p) {
    std::vector<double> scratch(k * k + k);
    pairwise_coupling(r, k, p, scratch.data());
}

void pairwise_coupling(const double* r, size_t k, double* p, double* scratch) {
    double* q = scratch;
    double* qp = scratch + k * k;
    std::fill(scratch, scratch + k * k + k, 0.0);
    const double eps = 0.005 / static_cast<double>(k);
    for (size_t t = 0; t < k; ++t) {
        p[t] = 1.0 / static_cast<double>(k);
        for (size_t j = 0; j < t; ++j) {
            q[t * k + t] += r[j * k + t] * r[j * k + t];
            q[t * k + j] = q[j * k + t];
        }
        for (size_t j = t + 1; j < k; ++j) {
            q[t * k + t] += r[j * k + t] * r[j * k + t];
            q[t * k + j] = -r[j * k + t] * r[t * k + j];
        }
    }
    for (int iteration = 0; iteration < 100; ++iteration) {
        // The stopping condition, with Qp and pQp computed afresh for accuracy.
        double pqp = 0.0, max_error = 0.0;
        for (size_t t = 0; t < k; ++t) {
            qp[t] = 0.0;
            for (size_t j = 0; j < k; ++j) qp[t] += q[t * k + j] * p[j];
            pqp += p[t] * qp[t];
        }
        if (std::isnan(pqp)) break;  // NaN in r: no probabilities (ONNX Runtime's float compares stop at 1 / k)
        for (size_t t = 0; t < k; ++t) max_error = std::max(max_error, std::fabs(qp[t] - pqp));
        if (max_error < eps) return;
        for (size_t t = 0; t < k; ++t) {
            const double diff = (-qp[t] + pqp) / q[t * k + t];
            p[t] += diff;
            pqp = (pqp + diff * (diff * q[t * k + t] + 2.0 * qp[t])) / (1.0 + diff) / (1.0 + diff);
            for (size_t j = 0; j < k; ++j) {
                qp[j] = (qp[j] + diff * q[t * k + j]) / (1.0 + diff);
                p[j] /= 1.0 + diff;
            }
        }
    }
    for (size_t t = 0; t < k; ++t)
        if (std::isnan(p[t]) || std::isnan(q[t * k + t])) {
            std::fill(p, p + k, NAN);
            return;
        }
}

double apply_reduction(const std::string& f, const double* x, size_t k) {
    if (f == "argmax" || f == "argmin") {
        size_t best = 0;
        for (size_t i = 1; i < k; ++i) {
            if (std::isnan(x[best])) break;
            if (std::isnan(x[i]) || (f == "argmax" ? x[i] > x[best] : x[i] < x[best])) best = i;
        }
        return static_cast<double>(best);
    }
    double acc = f == "reduce_prod" ? 1.0 : f == "reduce_max" ? -INFINITY : f == "reduce_min" ? INFINITY : 0.0;
    if (f == "reduce_log_sum_exp") {
        double m = -INFINITY;
        for (size_t i = 0; i < k; ++i) m = std::isnan(x[i]) || std::isnan(m) ? NAN : std::max(m, x[i]);
        if (std::isnan(m) || std::isinf(m)) return m;
        for (size_t i = 0; i < k; ++i) acc += std::exp(x[i] - m);
        return m + std::log(acc);
    }
    for (size_t i = 0; i < k; ++i) {
        const double v = x[i];
        if (f == "reduce_sum" || f == "reduce_mean") acc += v;
        else if (f == "reduce_prod") acc *= v;
        else if (f == "reduce_max") acc = apply_binary("max", acc, v);
        else if (f == "reduce_min") acc = apply_binary("min", acc, v);
        else if (f == "reduce_sum_square" || f == "reduce_l2") acc += v * v;
        else if (f == "reduce_l1") acc += std::fabs(v);
    }
    if (f == "reduce_mean") return acc / static_cast<double>(k);
    if (f == "reduce_l2") return std::sqrt(acc);
    return acc;
}

namespace {

// Softmax / log-softmax of one group, into `out`.
void softmax_group(bool log, const double* x, size_t k, double* out) {
    double m = -INFINITY;
    for (size_t i = 0; i < k; ++i) m = std::isnan(x[i]) || std::isnan(m) ? NAN : std::max(m, x[i]);
    double sum = 0.0;
    for (size_t i = 0; i < k; ++i) sum += std::exp(x[i] - m);
    for (size_t i = 0; i < k; ++i) out[i] = log ? x[i] - m - std::log(sum) : std::exp(x[i] - m) / sum;
}

// ONNX Runtime's ComputeSoftmaxZero: entries within 1e-7 of zero are left out of the softmax
// (scaled by exp(-max), so they stay about 0).
void softmax_zero_group(const double* x, size_t k, double* out) {
    double m = -INFINITY;
    for (size_t i = 0; i < k; ++i) m = std::isnan(x[i]) || std::isnan(m) ? NAN : std::max(m, x[i]);
    double sum = 0.0;
    for (size_t i = 0; i < k; ++i) {
        const bool zero = !(std::fabs(x[i]) > kSoftmaxZero);
        out[i] = zero ? x[i] * std::exp(-m) : std::exp(x[i] - m);
        if (!zero) sum += out[i];
    }
    for (size_t i = 0; i < k; ++i) out[i] /= sum;
}

// A group sorted (stable: equal values keep their order; NaN the largest, as torch.sort), into
// `out`: the values, or (argsort) their indices in the group.
void sort_group(const std::string& f, const double* x, size_t k, double* out) {
    const bool descending = f == "sort_descending" || f == "argsort_descending";
    std::vector<size_t> order(k);
    for (size_t i = 0; i < k; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const double u = x[a], v = x[b];
        if (descending) return (std::isnan(u) && !std::isnan(v)) || u > v;
        return (!std::isnan(u) && std::isnan(v)) || u < v;
    });
    const bool indices = f.rfind("argsort", 0) == 0;
    for (size_t i = 0; i < k; ++i) out[i] = indices ? static_cast<double>(order[i]) : x[order[i]];
}

}  // namespace

TensorStep read_tensor_step(const Step& s, const std::string& at) {
    TensorStep t;
    const auto& f = step_ops::param(s, "function", at);
    if (!f.is_string()) invalid(at, "tensor function must be a name");
    const TensorFunction* fn = find_tensor_function(f.get<std::string>());
    if (fn == nullptr) invalid(at, "tensor function " + f.dump() + " is not known");
    t.function = fn->name;
    t.family = fn->family;
    t.constants = s.params.contains("constants") ? param_vector(s, "constants", at) : std::vector<double>{};
    const auto operands = param_matrix(s, "operands", at);
    for (const auto& o : operands) {
        std::vector<int32_t> idx;
        for (double v : o) {
            if (v != std::floor(v) || v < 0 || v > 2147483647.0) invalid(at, "tensor operands must hold entry indices");
            idx.push_back(static_cast<int32_t>(v));
        }
        t.operands.push_back(std::move(idx));
    }
    if (s.params.contains("group")) {
        const double g = param_number(s, "group", at);
        if (!(g >= 1 && g <= 2147483647.0) || g != std::floor(g)) invalid(at, "tensor group must be a positive integer");
        t.group = static_cast<int64_t>(g);
    }
    return t;
}

void step_ops::check_tensor(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const TensorStep t = read_tensor_step(s, at);
    const size_t want = t.family == TensorFamily::Binary || t.family == TensorFamily::Take ? 2
                        : t.family == TensorFamily::Where                                   ? 3
                                                                                            : 1;
    if (t.operands.size() != want)
        invalid(at, "tensor function \"" + t.function + "\" takes " + std::to_string(want) + " operands, not " +
                        std::to_string(t.operands.size()));
    const size_t n = t.operands[0].size(), limit = vocab.size() + t.constants.size();
    for (size_t i = 0; i < t.operands.size(); ++i) {
        const auto& o = t.operands[i];
        const bool candidates = t.family == TensorFamily::Take && i == 1;
        if (candidates ? o.size() / static_cast<size_t>(t.group) != n || o.size() % static_cast<size_t>(t.group) != 0
                       : o.size() != n)
            invalid(at, candidates ? "tensor function take needs group k candidates for each index"
                                   : "tensor operands must have equal lengths");
        for (int32_t i : o)
            if (static_cast<size_t>(i) >= limit)
                invalid(at, "tensor operand entry " + std::to_string(i) + " is beyond the " + std::to_string(vocab.size()) +
                                " columns and " + std::to_string(t.constants.size()) + " constants");
    }
    size_t width = n;
    if (t.family == TensorFamily::Take) {
        if (t.group > static_cast<int64_t>(kMaxStepWidth)) invalid(at, "tensor function take: group too large");
    } else if (t.family == TensorFamily::Coupling) {
        const size_t k = static_cast<size_t>(t.group);
        if (k < 2 || k > 4096 || n % (k * k) != 0)
            invalid(at, "tensor function pairwise_coupling needs a group k of 2 to 4096 and k x k entries per group, not " +
                            std::to_string(n) + " entries for k = " + std::to_string(t.group));
        width = n / k;
    } else if (t.family == TensorFamily::Reduce || t.family == TensorFamily::Grouped) {
        if (t.group < 1 || n % static_cast<size_t>(t.group) != 0)
            invalid(at, "tensor group " + std::to_string(t.group) + " does not divide its " + std::to_string(n) + " entries");
        if (t.family == TensorFamily::Reduce) width = n / static_cast<size_t>(t.group);
    } else if (s.params.contains("group")) {
        invalid(at, "only the reduce, softmax, sort and coupling tensor functions take a group");
    }
    step_ops::check_width(width, at);
    vocab.assign(width, -1);
}

void step_ops::evaluate_tensor(const Step& s, std::vector<double>& x, const std::string& at) {
    const TensorStep t = read_tensor_step(s, at);
    std::vector<double> src = x;
    src.insert(src.end(), t.constants.begin(), t.constants.end());
    std::vector<std::vector<double>> ops;
    for (const auto& o : t.operands) {
        std::vector<double> v;
        for (int32_t i : o) v.push_back(src[static_cast<size_t>(i)]);
        ops.push_back(std::move(v));
    }
    const size_t n = ops[0].size(), k = static_cast<size_t>(t.group);
    std::vector<double> out;
    switch (t.family) {
    case TensorFamily::Binary:
        for (size_t i = 0; i < n; ++i) out.push_back(apply_binary(t.function, ops[0][i], ops[1][i]));
        break;
    case TensorFamily::Where:
        for (size_t i = 0; i < n; ++i) out.push_back(ops[0][i] != 0 ? ops[1][i] : ops[2][i]);
        break;
    case TensorFamily::Reduce:
        for (size_t g = 0; g < n / k; ++g) out.push_back(apply_reduction(t.function, ops[0].data() + g * k, k));
        break;
    case TensorFamily::Take:
        for (size_t i = 0; i < n; ++i) {
            double j = ops[0][i];
            if (j < 0) j += static_cast<double>(k);
            const bool ok = j >= 0 && j < static_cast<double>(k) && j == std::floor(j);
            out.push_back(ok ? ops[1][i * k + static_cast<size_t>(j)] : NAN);
        }
        break;
    case TensorFamily::Coupling:
        out.resize(n / k);
        for (size_t g = 0; g < n / (k * k); ++g) pairwise_coupling(ops[0].data() + g * k * k, k, out.data() + g * k);
        break;
    case TensorFamily::Grouped:
        out.resize(n);
        for (size_t g = 0; g < n / k; ++g) {
            if (t.function == "softmax" || t.function == "log_softmax")
                softmax_group(t.function == "log_softmax", ops[0].data() + g * k, k, out.data() + g * k);
            else if (t.function == "softmax_zero")
                softmax_zero_group(ops[0].data() + g * k, k, out.data() + g * k);
            else
                sort_group(t.function, ops[0].data() + g * k, k, out.data() + g * k);
        }
        break;
    }
    x = std::move(out);
}

}  // namespace pg_predict::spec
