// The featurizer steps whose every output reads the whole row, in TorchScript: normalize,
// project, monomials, kernel and neighbors (featurizer_steps.cpp lists what each op becomes).
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/k_nearest.hpp"
#include "pg_predict/kernels/project.hpp"
#include "pg_predict/kernels/rbf.hpp"
#include "pg_predict/spec/steps.hpp"
#include "featurizer_emitter.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler::featurizer {

namespace {

// Projections to this many outputs or more run natively: the kernel's lanes are the outputs, so
// fewer leave most of them idle (reference BLAS's dgemm is as fast there).
constexpr int64_t kNativeProjectOutputs = 8;

// The rows of `m` (each `width` values, else "<row> has n values, the input width") as the
// columns of a [width, padded] matrix, zero beyond the last row: the native kernels' layout,
// their lanes across the rows.
std::vector<double> padded_transpose(const std::vector<std::vector<double>>& m, int64_t width, int64_t padded,
                                     const std::string& row) {
    std::vector<double> t(static_cast<size_t>(width * padded), 0.0);
    for (size_t j = 0; j < m.size(); ++j) {
        if (static_cast<int64_t>(m[j].size()) != width)
            fail(ErrorCategory::InvalidModel, row + " has " + std::to_string(m[j].size()) + " values, the input " +
                                                  std::to_string(width));
        for (int64_t l = 0; l < width; ++l) t[static_cast<size_t>(l * padded) + j] = m[j][static_cast<size_t>(l)];
    }
    return t;
}

}  // namespace

void emit_normalize(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                    int64_t& width) {
    const auto it = s.params.find("norm");
    const std::string norm = it != s.params.end() && it->is_string() ? it->get<std::string>() : "";
    const std::string n = e.var();
    if (norm == "l1") e.line(n + " = torch.sum(torch.abs(" + h + "), [1], True)");
    else if (norm == "l2") e.line(n + " = torch.sqrt(torch.sum(" + h + " * " + h + ", [1], True))");
    else if (norm == "max") e.line(n + " = torch.amax(torch.abs(" + h + "), [1], True)");
    else fail(ErrorCategory::InvalidModel, "compiler: normalize norm \"" + norm + "\" is not known");
    e.line(out + " = " + h + " / torch.where(" + n + " == 0.0, torch.ones_like(" + n + "), " + n + ")");
}

void emit_project(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                  int64_t& width) {
    const std::string at = "step project";
    const auto m = spec::param_matrix(s, "matrix", at);
    const std::vector<double> off = spec::param_vector(s, "offset", at);
    const int64_t k = static_cast<int64_t>(m.size());
    e.parts.buffers.push_back(make_f64(pre + "offset", {k}, off));
    if (k >= kNativeProjectOutputs) {
        // The native kernel (kernels/project.hpp): the same sums as the reference BLAS's
        // dgemm that torch.matmul calls here (an MLP's model time: 1.08 -> 0.30 s on 200k rows).
        static_cast<void>(kernels::project_op_anchor());
        const int64_t padded = kernels::project_padded(k);
        const std::vector<double> wt = padded_transpose(m, width, padded, at + ": a row of the matrix");
        e.parts.buffers.push_back(make_f64(pre + "wt", {width, padded}, wt));
        e.line(out + " = ops.pg_predict.project(" + h + ", self." + pre + "wt, " + std::to_string(k) + ", self." +
               pre + "offset)");
    } else {
        std::vector<double> flat;
        for (const auto& row : m) flat.insert(flat.end(), row.begin(), row.end());
        e.parts.buffers.push_back(make_f64(pre + "matrix", {k, width}, flat));
        e.line(out + " = torch.matmul(" + h + ", self." + pre + "matrix.t()) + self." + pre + "offset");
    }
    width = k;
}

void emit_monomials(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                    int64_t& width) {
    const std::string at = "step monomials";
    const auto powers = spec::param_matrix(s, "powers", at);
    const int64_t k = static_cast<int64_t>(powers.size());
    std::vector<double> flat;
    for (const auto& row : powers) flat.insert(flat.end(), row.begin(), row.end());
    e.parts.buffers.push_back(make_f64(pre + "powers", {k, width}, flat));
    e.note_width(k * width);  // pow over [N, k, width]
    e.line(out + " = torch.prod(torch.pow(" + h + ".unsqueeze(1), self." + pre + "powers), 2)");
    width = k;
}

// The rbf kernel: ‖x - s‖² summed directly, as libsvm's predict does (the form ‖x‖² + ‖s‖² -
// 2 x·s cancels digits), with exp, in one native pass (kernels/rbf.hpp): cdist, square and exp
// in torch took 4x its time for 2054 support vectors, mostly in cdist. An infinite x is
// infinitely far from every (finite) support vector: K = exp(-inf) = 0.
void emit_rbf_kernel(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                     const std::string& pre, int64_t width, const std::vector<std::vector<double>>& sv,
                     const std::string& at) {
    const int64_t n = static_cast<int64_t>(sv.size());
    static_cast<void>(kernels::rbf_op_anchor());
    const double gamma = spec::param_number(s, "gamma", at);
    if (!std::isfinite(gamma)) fail(ErrorCategory::InvalidModel, at + ": gamma must be a finite number");
    const int64_t padded = kernels::rbf_padded(n);
    const std::vector<double> svt = padded_transpose(sv, width, padded, at + ": a support vector");
    e.parts.buffers.push_back(make_f64(pre + "svt", {width, padded}, svt));
    e.line(out + " = ops.pg_predict.rbf_kernel(" + h + ", self." + pre + "svt, " + std::to_string(n) +
           ", " + double_literal(gamma) + ")");
}

// K = kernel(h, support vectors) [N × n].
void emit_kernel(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                 const std::string& pre, int64_t& width) {
    const std::string at = "step kernel";
    const auto sv = spec::param_matrix(s, "support_vectors", at);
    const auto it = s.params.find("kernel");
    const std::string kernel = it != s.params.end() && it->is_string() ? it->get<std::string>() : "";
    const int64_t n = static_cast<int64_t>(sv.size());
    if (kernel == "rbf") {
        emit_rbf_kernel(e, s, h, out, pre, width, sv, at);
        width = n;
        return;
    }
    std::vector<double> flat;
    for (const auto& row : sv) flat.insert(flat.end(), row.begin(), row.end());
    e.parts.buffers.push_back(make_f64(pre + "sv", {n, width}, flat));
    e.parts.buffers.push_back(make_f64(pre + "gamma", {1}, {spec::param_number(s, "gamma", at)}));
    e.parts.buffers.push_back(make_f64(pre + "coef0", {1}, {spec::param_number(s, "coef0", at)}));
    e.parts.buffers.push_back(make_f64(pre + "degree", {1}, {spec::param_number(s, "degree", at)}));
    const std::string g = "self." + pre + "gamma", c0 = "self." + pre + "coef0";
    const std::string dot = e.var();
    e.line(dot + " = torch.matmul(" + h + ", self." + pre + "sv.t())");
    if (kernel == "linear") {
        e.line(out + " = " + dot);
    } else if (kernel == "poly") {
        e.line(out + " = torch.pow(" + dot + " * " + g + " + " + c0 + ", self." + pre + "degree)");
    } else if (kernel == "sigmoid") {
        e.line(out + " = torch.tanh(" + dot + " * " + g + " + " + c0 + ")");
    } else {
        fail(ErrorCategory::InvalidModel, "compiler: kernel \"" + kernel + "\" is not known");
    }
    width = n;
}

// The names a neighbors step's source uses, made up front so that it reads as it always has.
struct NeighborsVars {
    std::string d, dk, ik, t, w, mean;
};

// Every point within the radius, weighted; no point: the "outside" targets (or NaN).
void emit_radius_mean(Emitter& e, const spec::Step& s, const std::string& pre, const NeighborsVars& v,
                      bool by_distance, int64_t c, const std::string& at) {
    const std::string &d = v.d, &w = v.w, &mean = v.mean;
    const std::string in = e.var(), total = e.var(), empty = e.var();
    e.parts.buffers.push_back(make_f64(pre + "radius", {1}, {spec::param_number(s, "radius", at)}));
    e.line(in + " = " + d + " <= self." + pre + "radius");
    if (by_distance) {
        const std::string zero = e.var();
        e.line(zero + " = (" + d + " == 0.0)");
        e.line(w + " = torch.where(" + zero + ".any(1, keepdim=True), " + zero + ".double(), torch.where(" + in +
               ", 1.0 / " + d + ", torch.zeros_like(" + d + ")))");
    } else {
        e.line(w + " = " + in + ".double()");
    }
    e.line(total + " = " + w + ".sum(1, keepdim=True)");
    e.line(empty + " = " + total + " == 0.0");
    e.line(mean + " = torch.mm(" + w + ", self." + pre + "targets) / torch.where(" + empty + ", torch.ones_like(" +
           total + "), " + total + ")");
    std::vector<double> outside(static_cast<size_t>(c), NAN);
    if (s.params.contains("outside")) outside = spec::param_vector(s, "outside", at);
    e.parts.buffers.push_back(make_f64(pre + "outside", {1, c}, outside));
    e.line(mean + " = torch.where(" + empty + ", self." + pre + "outside.expand_as(" + mean + "), " + mean + ")");
}

// The weighted mean of the k nearest points' targets.
void emit_k_nearest_mean(Emitter& e, const spec::Step& s, const std::string& pre, const NeighborsVars& v,
                         bool by_distance, int64_t c, const std::string& at) {
    const std::string &d = v.d, &dk = v.dk, &ik = v.ik, &t = v.t, &w = v.w, &mean = v.mean;
    const std::string k = std::to_string(static_cast<int64_t>(spec::param_number(s, "k", at)));
    e.note_width(static_cast<int64_t>(spec::param_number(s, "k", at)) * c);  // the gathered targets
    // The first k of a stable sort, without sorting (kernels/k_nearest.hpp): the full sort
    // of 10,000 distances a row cost as much as computing them.
    static_cast<void>(kernels::k_nearest_op_anchor());
    e.line(dk + ", " + ik + " = ops.pg_predict.k_nearest(" + d + ", " + k + ")");
    e.line(t + " = self." + pre + "targets.index_select(0, " + ik + ".view(-1)).view(" + ik + ".size(0), " + k +
           ", " + std::to_string(c) + ")");
    if (by_distance) {
        // scikit-learn: 1 / d, but a row with a zero distance counts only its exact matches.
        const std::string zero = e.var();
        e.line(zero + " = (" + dk + " == 0.0)");
        e.line(w + " = torch.where(" + zero + ".any(1, keepdim=True), " + zero + ".double(), 1.0 / " + dk + ")");
    } else {
        e.line(w + " = torch.ones_like(" + dk + ")");
    }
    e.line(mean + " = torch.bmm(" + w + ".unsqueeze(1), " + t + ").squeeze(1) / " + w + ".sum(1, keepdim=True)");
}

// The weighted mean of the targets of the k nearest points [N × C] (spec/steps.hpp: op
// neighbors). The distances are summed directly (cdist without the matmul form, which cancels
// digits and would move ties); a stable sort takes the lower point index first among equal
// distances, as the reference does (topk's order among ties is unspecified).
void emit_neighbors(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                    const std::string& pre, int64_t& width) {
    const std::string at = "step neighbors";
    const auto points = spec::param_matrix(s, "points", at);
    const auto targets = spec::param_matrix(s, "targets", at);
    const int64_t n = static_cast<int64_t>(points.size());
    const int64_t c = targets.empty() ? 0 : static_cast<int64_t>(targets[0].size());
    const bool by_radius = s.params.contains("radius");
    const double p = spec::param_number(s, "p", at);
    const auto weights = s.params.find("weights");
    const bool by_distance = weights != s.params.end() && *weights == "distance";
    std::vector<double> flat;
    for (const auto& row : points) flat.insert(flat.end(), row.begin(), row.end());
    e.parts.buffers.push_back(make_f64(pre + "points", {n, width}, flat));
    flat.clear();
    for (const auto& row : targets) flat.insert(flat.end(), row.begin(), row.end());
    e.parts.buffers.push_back(make_f64(pre + "targets", {n, c}, flat));
    NeighborsVars v{e.var(), e.var(), e.var(), e.var(), e.var(), ""};  // braces: made in this order
    e.note_width(n);
    // compute_mode 2: donot_use_mm_for_euclid_dist (TorchScript takes the int)
    // Minkowski's p as a float literal (cdist's p = inf is the largest difference).
    const std::string p_literal = std::isinf(p) ? std::string("float(\"inf\")") : "float(" + double_literal(p) + ")";
    e.line(v.d + " = torch.cdist(" + h + ", self." + pre + "points, " + p_literal + ", 2)");
    v.mean = e.var();
    if (by_radius) emit_radius_mean(e, s, pre, v, by_distance, c, at);
    else emit_k_nearest_mean(e, s, pre, v, by_distance, c, at);
    // A row with NaN or ±inf has no nearest points (scikit-learn refuses it): NaN out.
    e.line(out + " = torch.where(torch.isfinite(" + h + ").all(1, keepdim=True), " + v.mean + ", torch.full_like(" +
           v.mean + ", float(\"nan\")))");
    width = c;
}

}  // namespace pg_predict::compiler::featurizer
