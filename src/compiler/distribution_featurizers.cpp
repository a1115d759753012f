// The featurizer steps that reshape each column's distribution, in TorchScript: power
// (PowerTransformer) and quantile (QuantileTransformer) (featurizer_steps.cpp lists what each
// op becomes).
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/steps.hpp"
#include "featurizer_emitter.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler::featurizer {

// op power: the branches of scikit-learn's formula computed over the whole batch, the lambda of
// each column a buffer (a lambda that selects the log form gets a safe 1 in the division).
void emit_power(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                const std::string& pre, int64_t& width) {
    const std::string at = "step power";
    const std::string method = s.params.at("method").get<std::string>();
    const std::vector<double> lambdas = spec::param_vector(s, "lambdas", at);
    constexpr double kEps = 2.220446049250313e-16;  // np.spacing(1.0)
    // A branch per sign: its exponent (safe where the log form applies) and whether it is the log.
    auto branch = [&](const std::string& name, double shift, double sign, double tolerance, bool log_below) {
        std::vector<double> exponent;
        std::vector<uint8_t> is_log;
        for (double l : lambdas) {
            const double x = shift + sign * l;
            const bool log = log_below ? std::fabs(x) < tolerance : std::fabs(x) <= tolerance;
            exponent.push_back(log ? 1.0 : x);
            is_log.push_back(log ? 1 : 0);
        }
        e.parts.buffers.push_back(make_f64(pre + name, {width}, exponent));
        e.parts.buffers.push_back(make_bool(pre + name + "_log", {width}, is_log));
    };
    const std::string p = e.var(), n = e.var();
    if (method == "box-cox") {
        branch("lambda", 0.0, 1.0, 1e-19, true);
        const std::string l = e.var(), lam = "self." + pre + "lambda";
        e.line(l + " = torch.log(" + h + ")");
        e.line(p + " = torch.where(" + lam + "_log, " + l + ", torch.expm1(" + lam + " * " + l + ") / " + lam + ")");
        // scikit-learn refuses x <= 0; NaN stays NaN.
        e.line(out + " = torch.where(" + h + " > 0.0, " + p + ", torch.full_like(" + h + ", float(\"nan\")))");
        return;
    }
    branch("pos", 0.0, 1.0, kEps, true);   // x >= 0: lambda, log1p where |lambda| < eps
    branch("neg", 2.0, -1.0, kEps, false);  // x < 0: 2 - lambda, log1p where |lambda - 2| <= eps
    const std::string pos = "self." + pre + "pos", neg = "self." + pre + "neg";
    e.line(p + " = torch.where(" + pos + "_log, torch.log1p(" + h + "), (torch.pow(" + h + " + 1.0, " + pos +
           ") - 1.0) / " + pos + ")");
    e.line(n + " = torch.where(" + neg + "_log, -torch.log1p(-" + h + "), -(torch.pow(1.0 - " + h + ", " + neg +
           ") - 1.0) / " + neg + ")");
    e.line(out + " = torch.where(" + h + " >= 0.0, " + p + ", " + n + ")");  // NaN: n, which is NaN
}

// The [C, n] buffers of op quantile: each column's quantiles (xp), the references (fp), each
// segment's slope, the first and last quantile, and each column's offset into the flattened rows.
void add_quantile_buffers(Emitter& e, const std::string& pre, const std::vector<std::vector<double>>& quantiles,
                          const std::vector<double>& refs, int64_t width) {
    const int64_t n = static_cast<int64_t>(refs.size());
    std::vector<double> xp, fp, slope, lo, hi;
    std::vector<int64_t> off;
    for (int64_t c = 0; c < width; ++c) {
        const std::vector<double>& q = quantiles[static_cast<size_t>(c)];
        xp.insert(xp.end(), q.begin(), q.end());
        fp.insert(fp.end(), refs.begin(), refs.end());
        for (int64_t j = 0; j + 1 < n; ++j) slope.push_back((refs[j + 1] - refs[j]) / (q[j + 1] - q[j]));
        slope.push_back(0.0);
        lo.push_back(q.front());
        hi.push_back(q.back());
        off.push_back(c * n);
    }
    e.parts.buffers.push_back(make_f64(pre + "xp", {width, n}, xp));
    e.parts.buffers.push_back(make_f64(pre + "fp", {width, n}, fp));
    e.parts.buffers.push_back(make_f64(pre + "slope", {width, n}, slope));
    e.parts.buffers.push_back(make_f64(pre + "lo", {width}, lo));
    e.parts.buffers.push_back(make_f64(pre + "hi", {width}, hi));
    e.parts.buffers.push_back(make_i64(pre + "off", {width}, off));
}

// y (uniform, in [0, 1]) through the normal quantile function, clipped as scikit-learn clips it.
void emit_normal_quantile(Emitter& e, const std::string& y) {
    const double eps = 2.220446049250313e-16;
    // ndtri: erfinv's estimate, then one Halley step on erfc (exact in the tails, where
    // 2y - 1 has lost y's digits); TorchScript compiled here has no torch.special.
    const std::string q = e.var(), r = e.var(), u = e.var();
    e.line(q + " = torch.erfinv(2.0 * " + y + " - 1.0) * " + double_literal(std::sqrt(2.0)));
    e.line(r + " = 0.5 * torch.erfc(-" + q + " / " + double_literal(std::sqrt(2.0)) + ") - " + y);
    e.line(u + " = " + r + " * " + double_literal(std::sqrt(2.0 * M_PI)) + " * torch.exp(" + q + " * " + q + " / 2.0)");
    e.line(q + " = torch.where(torch.isfinite(" + q + "), " + q + " - " + u + " / (1.0 + " + q + " * " + u +
           " / 2.0), " + q + ")");
    e.line(y + " = torch.clamp(" + q + ", " + double_literal(spec::normal_quantile(1e-7 - eps)) + ", " +
           double_literal(spec::normal_quantile(1.0 - (1e-7 - eps))) + ")");
}

// op quantile: numpy's interp from below (the last quantile <= x, searchsorted right) and
// from above (the first quantile >= x, searchsorted left), each a gather of a segment's start,
// slope and value from [C, n] buffers; values outside the quantiles and at the last one take
// the end reference, as numpy's interp does.
void emit_quantile(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                   const std::string& pre, int64_t& width) {
    const std::string at = "step quantile";
    const auto quantiles = spec::param_matrix(s, "quantiles", at);
    const std::vector<double> refs = spec::param_vector(s, "references", at);
    const bool normal = s.params.at("output") == "normal";
    const int64_t n = static_cast<int64_t>(refs.size());
    add_quantile_buffers(e, pre, quantiles, refs, width);
    e.note_width(width * 8);  // the index and gathered temporaries
    const std::string self = "self." + pre;
    const std::string xt = e.var(), j = e.var(), k = e.var(), up = e.var(), dn = e.var(), y = e.var();
    const std::string first = double_literal(refs.front()), last = double_literal(refs.back());
    const std::string n2 = std::to_string(n - 2), n1 = std::to_string(n - 1);
    e.line(xt + " = " + h + ".t().contiguous()");
    e.line(j + " = torch.clamp(torch.searchsorted(" + self + "xp, " + xt + ", right=True).t() - 1, 0, " + n2 + ") + " +
           self + "off");
    e.line(k + " = torch.clamp(torch.searchsorted(" + self + "xp, " + xt + ", right=False).t(), 1, " + n1 + ") + " +
           self + "off");
    e.line(up + " = torch.take(" + self + "slope, " + j + ") * (" + h + " - torch.take(" + self + "xp, " + j +
           ")) + torch.take(" + self + "fp, " + j + ")");
    e.line(up + " = torch.where(" + h + " < " + self + "lo, torch.full_like(" + h + ", " + first + "), torch.where(" +
           h + " >= " + self + "hi, torch.full_like(" + h + ", " + last + "), " + up + "))");
    e.line(dn + " = torch.take(" + self + "slope, " + k + " - 1) * (" + h + " - torch.take(" + self + "xp, " + k +
           ")) + torch.take(" + self + "fp, " + k + ")");
    e.line(dn + " = torch.where(" + h + " <= " + self + "lo, torch.full_like(" + h + ", " + first + "), torch.where(" +
           h + " > " + self + "hi, torch.full_like(" + h + ", " + last + "), " + dn + "))");
    e.line(y + " = 0.5 * (" + up + " + " + dn + ")");
    const std::string bound = double_literal(1e-7);  // scikit-learn's BOUNDS_THRESHOLD
    const std::string at_hi = normal ? h + " + " + bound + " > " + self + "hi" : h + " == " + self + "hi";
    const std::string at_lo = normal ? h + " - " + bound + " < " + self + "lo" : h + " == " + self + "lo";
    e.line(y + " = torch.where(" + at_hi + ", torch.ones_like(" + h + "), " + y + ")");
    e.line(y + " = torch.where(" + at_lo + ", torch.zeros_like(" + h + "), " + y + ")");
    if (normal) emit_normal_quantile(e, y);
    e.line(out + " = torch.where(torch.isnan(" + h + "), " + h + ", " + y + ")");
}

}  // namespace pg_predict::compiler::featurizer
