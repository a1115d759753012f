// Op tensor → TorchScript (spec/steps.hpp): the ONNX importer's general per-row operation. Each
// operand is gathered from h (a slice when its entries are a run), from a constant buffer when
// it reads constants only, or from h with the constants appended when it mixes both; the
// function is then one torch op, over [N, n] (binary, where) or over the operand viewed as
// [N, groups, k] along dim 2 (reduce, softmax).
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/coupling.hpp"
#include "pg_predict/spec/steps.hpp"
#include "featurizer_emitter.hpp"

namespace pg_predict::compiler::featurizer {

namespace {

std::string binary_expr(const std::string& f, const std::string& a, const std::string& b) {
    if (f == "add") return a + " + " + b;
    if (f == "sub") return a + " - " + b;
    if (f == "mul") return a + " * " + b;
    if (f == "div") return a + " / " + b;
    if (f == "pow") return "torch.pow(" + a + ", " + b + ")";
    if (f == "min") return "torch.minimum(" + a + ", " + b + ")";  // NaN propagates, as numpy's
    if (f == "max") return "torch.maximum(" + a + ", " + b + ")";
    if (f == "less") return "(" + a + " < " + b + ").double()";
    if (f == "less_equal") return "(" + a + " <= " + b + ").double()";
    if (f == "greater") return "(" + a + " > " + b + ").double()";
    if (f == "greater_equal") return "(" + a + " >= " + b + ").double()";
    if (f == "equal") return "(" + a + " == " + b + ").double()";
    if (f == "and") return "torch.logical_and(" + a + " != 0.0, " + b + " != 0.0).double()";
    if (f == "or") return "torch.logical_or(" + a + " != 0.0, " + b + " != 0.0).double()";
    if (f == "xor") return "torch.logical_xor(" + a + " != 0.0, " + b + " != 0.0).double()";
    fail(ErrorCategory::Unsupported, "compiler: tensor function \"" + f + "\" is not binary");
}

// g: [N, groups, k] → [N, groups].
std::string reduce_expr(const std::string& f, const std::string& g) {
    if (f == "reduce_sum") return "torch.sum(" + g + ", 2)";
    if (f == "reduce_mean") return "torch.mean(" + g + ", 2)";
    if (f == "reduce_max") return "torch.amax(" + g + ", 2)";
    if (f == "reduce_min") return "torch.amin(" + g + ", 2)";
    if (f == "reduce_prod") return "torch.prod(" + g + ", 2)";
    if (f == "reduce_log_sum_exp") return "torch.logsumexp(" + g + ", 2)";
    if (f == "reduce_sum_square") return "torch.sum(" + g + " * " + g + ", 2)";
    if (f == "reduce_l1") return "torch.sum(torch.abs(" + g + "), 2)";
    if (f == "reduce_l2") return "torch.sqrt(torch.sum(" + g + " * " + g + ", 2))";
    if (f == "argmax") return "torch.argmax(" + g + ", 2).double()";
    if (f == "argmin") return "torch.argmin(" + g + ", 2).double()";
    fail(ErrorCategory::Unsupported, "compiler: tensor function \"" + f + "\" is not a reduction");
}

}  // namespace

void emit_tensor(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                 int64_t& width) {
    const spec::TensorStep t = spec::read_tensor_step(s, "step tensor");
    const int64_t w = width;
    std::string with_constants;  // h with the constants appended, made once when an operand needs it
    std::vector<std::string> ops;
    for (size_t k = 0; k < t.operands.size(); ++k) {
        const std::vector<int32_t>& o = t.operands[k];
        const std::string name = pre + "op" + std::to_string(k);
        const int64_t n = static_cast<int64_t>(o.size());
        bool reads_x = false, reads_constants = false;
        for (int32_t i : o) (i < w ? reads_x : reads_constants) = true;
        std::string v = out + "_" + std::to_string(k);
        if (!reads_x) {
            std::vector<double> values;
            for (int32_t i : o) values.push_back(t.constants[static_cast<size_t>(i - w)]);
            e.parts.buffers.push_back(make_f64(name, {1, n}, values));
            e.line(v + " = self." + name + ".expand(" + h + ".size(0), " + std::to_string(n) + ")");
        } else {
            std::string from = h;
            if (reads_constants) {
                if (with_constants.empty()) {
                    with_constants = out + "_src";
                    const int64_t c = static_cast<int64_t>(t.constants.size());
                    e.parts.buffers.push_back(make_f64(pre + "constants", {1, c}, t.constants));
                    e.line(with_constants + " = torch.cat([" + h + ", self." + pre + "constants.expand(" + h +
                           ".size(0), " + std::to_string(c) + ")], 1)");
                    e.note_width(w + c);
                }
                from = with_constants;
            }
            const std::vector<int64_t> cols(o.begin(), o.end());
            e.parts.buffers.push_back(make_i64(name, {n}, cols));
            e.line(v + " = " + select_columns(from, name, cols));
        }
        e.note_width(n);
        ops.push_back(v);
    }
    const int64_t n = static_cast<int64_t>(t.operands[0].size());
    const std::string groups = std::to_string(n / t.group), k = std::to_string(t.group);
    const std::string grouped = ops[0] + ".reshape(" + ops[0] + ".size(0), " + groups + ", " + k + ")";
    switch (t.family) {
    case spec::TensorFamily::Binary:
        e.line(out + " = " + binary_expr(t.function, ops[0], ops[1]));
        width = n;
        break;
    case spec::TensorFamily::Where:
        e.line(out + " = torch.where(" + ops[0] + " != 0.0, " + ops[1] + ", " + ops[2] + ")");
        width = n;
        break;
    case spec::TensorFamily::Reduce:
        e.line(out + " = " + reduce_expr(t.function, grouped));
        width = n / t.group;
        break;
    case spec::TensorFamily::Take: {  // the spec's: wrapped, NaN where the index is not one
        const std::string j = out + "_j", ok = out + "_ok", safe = out + "_safe";
        e.line(j + " = torch.where(" + ops[0] + " < 0.0, " + ops[0] + " + " + k + ".0, " + ops[0] + ")");
        e.line(ok + " = (" + j + " >= 0.0) & (" + j + " < " + k + ".0) & (" + j + " == torch.floor(" + j + "))");
        e.line(safe + " = torch.where(" + ok + ", " + j + ", torch.zeros_like(" + j + ")).long()");
        e.line(out + " = torch.where(" + ok + ", " + ops[1] + ".reshape(" + ops[1] + ".size(0), " + std::to_string(n) + ", " +
               k + ").gather(2, " + safe + ".unsqueeze(2)).squeeze(2), torch.full_like(" + j + ", float(\"nan\")))");
        width = n;
        break;
    }
    case spec::TensorFamily::Coupling:
        static_cast<void>(kernels::coupling_op_anchor());
        e.line(out + " = ops.pg_predict.pairwise_coupling(" + ops[0] + ", " + k + ")");
        width = n / t.group;
        break;
    case spec::TensorFamily::Grouped: {
        std::string expr;
        if (t.function == "softmax" || t.function == "log_softmax") {
            expr = "torch." + t.function + "(" + grouped + ", 2)";
        } else if (t.function == "softmax_zero") {  // NaN-propagating max, as the spec's
            const std::string g = out + "_g", m = out + "_m", keep = out + "_keep", ex = out + "_e";
            e.line(g + " = " + grouped);
            e.line(m + " = torch.where(torch.isnan(" + g + ").any(2, keepdim=True), torch.full_like(" + g +
                   "[:, :, :1], float(\"nan\")), " + g + ".amax(2, keepdim=True))");
            e.line(keep + " = torch.abs(" + g + ") > " + double_literal(spec::kSoftmaxZero));
            e.line(ex + " = torch.where(" + keep + ", torch.exp(" + g + " - " + m + "), " + g + " * torch.exp(-" + m + "))");
            expr = "(" + ex + " / torch.where(" + keep + ", " + ex + ", torch.zeros_like(" + ex + ")).sum(2, keepdim=True))";
        } else {  // stable, NaN the largest: the spec's sort
            const bool descending = t.function.find("descending") != std::string::npos;
            const bool indices = t.function.rfind("argsort", 0) == 0;
            expr = "torch.sort(" + grouped + ", stable=True, dim=2, descending=" + (descending ? "True" : "False") + ")" +
                   (indices ? "[1].double()" : "[0]");
        }
        e.line(out + " = " + expr + ".reshape(" + ops[0] + ".size(0), " + std::to_string(n) + ")");
        width = n;
        break;
    }
    }
}

}  // namespace pg_predict::compiler::featurizer
