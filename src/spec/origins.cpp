// Column origins (spec/origins.hpp): each step's output columns traced back to the input
// columns they derive from, by the op's family.
#include "pg_predict/spec/origins.hpp"

#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::spec {

namespace {

// The origin of a column reading the columns `origins` (all of one input, none, or mixed).
int32_t joined(int32_t a, int32_t b) {
    if (a == kConstantOrigin) return b;
    if (b == kConstantOrigin) return a;
    return a == b ? a : kMixedOrigin;
}

std::vector<int32_t> through_steps(const std::vector<Step>& steps, std::vector<int32_t> origins,
                                   std::vector<int32_t> vocab, const std::string& where);

// One-hot: each kept category's column from its input column.
std::vector<int32_t> one_hot_origins(const Step& s, const std::vector<int32_t>& in, const std::string& where) {
    std::vector<int32_t> out;
    const auto cats = param_matrix(s, "categories", where);
    const std::vector<int32_t> drop = param_ints(s, "drop", where);
    for (size_t c = 0; c < cats.size() && c < in.size(); ++c)
        out.insert(out.end(), cats[c].size() - (drop[c] >= 0 ? 1 : 0), in[c]);
    return out;
}

// Project: each output from the inputs its matrix row weighs.
std::vector<int32_t> project_origins(const Step& s, const std::vector<int32_t>& in, const std::string& where) {
    std::vector<int32_t> out;
    for (const auto& row : param_matrix(s, "matrix", where)) {
        int32_t o = kConstantOrigin;
        for (size_t j = 0; j < row.size() && j < in.size(); ++j)
            if (row[j] != 0.0) o = joined(o, in[j]);
        out.push_back(o);
    }
    return out;
}

// Concat: each part reads its columns (check_step validated the indices).
std::vector<int32_t> concat_origins(const Step& s, const std::vector<int32_t>& in, const std::vector<int32_t>& in_vocab,
                                    const std::string& where) {
    std::vector<int32_t> out;
    for (size_t k = 0; k < s.parts.size(); ++k) {
        const Step::Part& part = s.parts[k];
        std::vector<int32_t> sub, sub_vocab;
        for (int32_t c : part.columns) {
            sub.push_back(in[static_cast<size_t>(c)]);
            sub_vocab.push_back(in_vocab[static_cast<size_t>(c)]);
        }
        const std::vector<int32_t> o =
            through_steps(part.steps, sub, sub_vocab, where + ".parts[" + std::to_string(k) + "]");
        out.insert(out.end(), o.begin(), o.end());
    }
    return out;
}

std::vector<int32_t> origins_by_op(const Step& s, const std::vector<int32_t>& in, const std::vector<int32_t>& in_vocab,
                                   int32_t width, const std::string& where) {
    switch (s.op) {
    case Op::Affine: case Op::Impute: case Op::Ordinal: case Op::Elementwise: case Op::Threshold: case Op::Clip:
    case Op::IsMissing: case Op::Bucketize: case Op::Power: case Op::Quantile:
        return in;  // column j from column j
    case Op::OneHot: return one_hot_origins(s, in, where);
    case Op::Project: return project_origins(s, in, where);
    case Op::Concat: return concat_origins(s, in, in_vocab, where);
    case Op::Normalize: case Op::Monomials: case Op::Kernel: case Op::Neighbors: case Op::Model: case Op::Tensor: case Op::Linear:
    case Op::TorchScript: case Op::None:
        return std::vector<int32_t>(static_cast<size_t>(width), kMixedOrigin);
    }
    return std::vector<int32_t>(static_cast<size_t>(width), kMixedOrigin);
}

std::vector<int32_t> through_step(const Step& s, const std::vector<int32_t>& in, std::vector<int32_t>& vocab,
                                  const std::string& where) {
    const std::vector<int32_t> in_vocab = vocab;
    const int32_t width = check_step(s, vocab, where);  // validates, and gives the output vocab
    const std::vector<int32_t> out = origins_by_op(s, in, in_vocab, width, where);
    if (out.size() != static_cast<size_t>(width))
        fail(ErrorCategory::Internal, where + ": origins of " + std::to_string(out.size()) + " columns for a step of " +
                                          std::to_string(width));
    return out;
}

std::vector<int32_t> through_steps(const std::vector<Step>& steps, std::vector<int32_t> origins,
                                   std::vector<int32_t> vocab, const std::string& where) {
    for (size_t i = 0; i < steps.size(); ++i)
        origins = through_step(steps[i], origins, vocab, where + "[" + std::to_string(i) + "]");
    return origins;
}

}  // namespace

std::vector<int32_t> column_origins(const Pipeline& p) {
    const size_t w = static_cast<size_t>(p.input_width());
    std::vector<int32_t> origins(w), vocab(w, -1);
    for (size_t i = 0; i < w; ++i) origins[i] = static_cast<int32_t>(i);
    for (const TextInput& t : p.text_inputs)
        if (t.input >= 0 && static_cast<size_t>(t.input) < w) vocab[t.input] = static_cast<int32_t>(t.vocabulary.size());
    return through_steps(p.steps, origins, vocab, "steps");
}

}  // namespace pg_predict::spec
