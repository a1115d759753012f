// Featurizer steps → TorchScript (Hummingbird's "other operators"): each step is one or a few
// tensor ops over the whole batch, in float64 like scikit-learn. This file sends each step to its
// family's emitter (featurizer_emitter.hpp) and assembles featurize(); what each op becomes:
//   affine   h * scale + offset
//   impute   where(isnan(h), statistics, h) (| h == missing_value when the step has one)
//   one_hot  (h's column of each kept category == categories) → 0/1
//   ordinal  the same comparison, then index_add_ of the matches' codes into their columns
//   elementwise  the torch function of the numpy ufunc (sign and cbrt keep NaN explicitly)
//   threshold  (h > t).double();  is_missing  isnan(h).double() (| h == missing_value, as impute)
//   normalize  h / the row's norm (1 where it is 0)
//   project  matmul(h, matrixᵀ) + offset, natively for 8 outputs or more
//   bucketize  ops.pg_predict.bucketize: each value's count of its column's edges below it; NaN kept
//   monomials  prod(pow(h[:, None, :], powers), 2) with x^0 = 1
//   kernel   matmul(h, svᵀ), then linear / poly / sigmoid of it; rbf exp(-γ‖x - s‖²) natively
//   neighbors  cdist to the points, a stable sort's first k (natively), the weighted mean of their targets
//   power    both branches of the transform per column (lambdas as buffers), where() picks one
//   quantile  searchsorted of each column in its quantiles from both sides, the two
//            interpolations gathered by torch.take and averaged, the bounds, ndtri for normal
//   tensor   each operand a slice or gather of h (constants a [1, n] buffer, or h with the
//            constants appended), then the torch op: binary ones directly, reduce / softmax over
//            the operand viewed [N, groups, k] along dim 2
//   concat   each part's columns (select_columns), its steps, cat
//   model    the nested pipeline compiled on its own, a submodule called on h (float32 for a
//            bare tree model, which compares float32 inputs); label: argmax → one-hot
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/spec/steps.hpp"
#include "featurizer_emitter.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

namespace featurizer {

// Columns `cols` of the [N, W] tensor `in` (their indices in the 1-D int64 buffer `index`): a
// slice where they are an ascending run (a view, no copy), else a gather with the index
// broadcast over the rows. Not index_select along dim 1: ATen copies that one element per
// memcpy call (1.6 ms vs 0.4 ms for 15 columns of a 4096-row float64 batch, torch 1.13).
std::string select_columns(const std::string& in, const std::string& index, const std::vector<int64_t>& cols) {
    bool run = !cols.empty();
    for (size_t i = 1; i < cols.size() && run; ++i) run = cols[i] == cols[i - 1] + 1;
    if (run) return in + "[:, " + std::to_string(cols.front()) + ":" + std::to_string(cols.back() + 1) + "]";
    return "torch.gather(" + in + ", 1, self." + index + ".unsqueeze(0).expand(" + in + ".size(0), " +
           std::to_string(cols.size()) + "))";
}

// A double as a TorchScript float literal that reads back exactly.
std::string double_literal(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::string emit_step(Emitter& e, const spec::Step& s, const std::string& h, int64_t& width) {
    check_interrupts();  // per step: nested compositions can be deep
    const std::string pre = e.prefix();
    const std::string out = e.var();
    switch (s.op) {
    case spec::Op::Affine: emit_affine(e, s, h, out, pre, width); break;
    case spec::Op::Impute: emit_impute(e, s, h, out, pre, width); break;
    case spec::Op::OneHot: emit_one_hot(e, s, h, out, pre, width); break;
    case spec::Op::Ordinal: emit_ordinal(e, s, h, out, pre, width); break;
    case spec::Op::Elementwise: emit_elementwise(e, s, h, out, pre, width); break;
    case spec::Op::Threshold: emit_threshold(e, s, h, out, pre, width); break;
    case spec::Op::Clip: emit_clip(e, s, h, out, pre, width); break;
    case spec::Op::IsMissing: emit_is_missing(e, s, h, out, pre, width); break;
    case spec::Op::Normalize: emit_normalize(e, s, h, out, pre, width); break;
    case spec::Op::Project: emit_project(e, s, h, out, pre, width); break;
    case spec::Op::Bucketize: emit_bucketize(e, s, h, out, pre, width); break;
    case spec::Op::Monomials: emit_monomials(e, s, h, out, pre, width); break;
    case spec::Op::Kernel: emit_kernel(e, s, h, out, pre, width); break;
    case spec::Op::Neighbors: emit_neighbors(e, s, h, out, pre, width); break;
    case spec::Op::Power: emit_power(e, s, h, out, pre, width); break;
    case spec::Op::Quantile: emit_quantile(e, s, h, out, pre, width); break;
    case spec::Op::Model: emit_model(e, s, h, out, pre, width); break;
    case spec::Op::Tensor: emit_tensor(e, s, h, out, pre, width); break;
    case spec::Op::Concat: emit_concat(e, s, h, out, pre, width); break;
    case spec::Op::None: case spec::Op::Linear: case spec::Op::TorchScript: {
        fail(ErrorCategory::Unsupported,
             std::string("compiler: featurizer op \"") + spec::op_name(s.op) + "\" is not supported");
    }
    }
    e.note_width(width);
    return out;
}

}  // namespace featurizer

using featurizer::Emitter;
using featurizer::emit_step;

namespace {

// build_featurizers' body; its caller records what it added.
void emit_featurizers(const spec::Pipeline& p, ProgramParts& parts);

}  // namespace

void build_featurizers(const spec::Pipeline& p, ProgramParts& parts) {
    const size_t first_buffer = parts.buffers.size(), source_start = parts.source.size();
    emit_featurizers(p, parts);
    parts.featurizer_source = parts.source.substr(source_start);
    parts.featurizer_buffers.clear();
    for (size_t b = first_buffer; b < parts.buffers.size(); ++b) parts.featurizer_buffers.push_back(parts.buffers[b].name);
}

namespace {

void emit_featurizers(const spec::Pipeline& p, ProgramParts& parts) {
    parts.reads_float64 = true;  // featurize() starts with x.double()
    Emitter e{parts, "", 0, 0};
    std::string h = "x.double()";
    int64_t width = p.input_width();
    e.note_width(width);
    if (!p.steps.empty()) {
        e.line("h = x.double()");
        h = "h";
        for (const spec::Step& s : p.steps) h = emit_step(e, s, h, width);
    }
    if (width != p.model.num_features)
        fail(ErrorCategory::Internal, "compiler: the featurizers give " + std::to_string(width) +
                                          " columns, the model reads " + std::to_string(p.model.num_features));
    const int64_t chunk = featurize_chunk_rows(e.widest);
    if (chunk == 0) {
        parts.source += "def featurize(self, x: Tensor) -> Tensor:\n" + e.src + "    return " + h + "\n";
        return;
    }
    // Wide intermediates (a kernel over thousands of support vectors, an MLP's hidden layer,
    // ...): featurize a few rows at a time. Temporaries of megabytes are mapped and unmapped
    // for every op, and the page faults dominate: measured here, an RBF SVC with 4830 support
    // vectors ran 40× and an MLP with 100 hidden units 28× slower than in 1 MB chunks.
    const std::string c = std::to_string(chunk);
    parts.source += "def featurize_rows(self, x: Tensor) -> Tensor:\n" + e.src + "    return " + h + "\n";
    parts.source += "def featurize(self, x: Tensor) -> Tensor:\n"
                    "    n = x.size(0)\n"
                    "    if n <= " + c + ":\n"
                    "        return self.featurize_rows(x)\n"
                    "    outs: List[Tensor] = []\n"
                    "    for start in range(0, n, " + c + "):\n"
                    "        outs.append(self.featurize_rows(x.narrow(0, start, min(" + c + ", n - start))))\n"
                    "    return torch.cat(outs, 0)\n";
}

}  // namespace

int64_t featurize_chunk_rows(int64_t widest) {
    constexpr int64_t kMaxElements = int64_t(1) << 17;  // 1 MB of float64 per intermediate
    constexpr int64_t kTypicalBatch = 4096;
    if (widest * kTypicalBatch <= kMaxElements) return 0;  // the whole batch stays small
    return std::max<int64_t>(16, kMaxElements / std::max<int64_t>(1, widest));
}

}  // namespace pg_predict::compiler
