// Op names (spec/op.hpp): the only place the spec's "op" strings are spelled.
#include "pg_predict/spec/op.hpp"

namespace pg_predict::spec {

const char* op_name(Op op) {
    switch (op) {
        case Op::None: return "";
        case Op::Affine: return "affine";
        case Op::Impute: return "impute";
        case Op::OneHot: return "one_hot";
        case Op::Ordinal: return "ordinal";
        case Op::Elementwise: return "elementwise";
        case Op::Threshold: return "threshold";
        case Op::Clip: return "clip";
        case Op::IsMissing: return "is_missing";
        case Op::Normalize: return "normalize";
        case Op::Project: return "project";
        case Op::Bucketize: return "bucketize";
        case Op::Monomials: return "monomials";
        case Op::Kernel: return "kernel";
        case Op::Neighbors: return "neighbors";
        case Op::Concat: return "concat";
        case Op::Linear: return "linear";
        case Op::TorchScript: return "torchscript";
        case Op::Power: return "power";
        case Op::Quantile: return "quantile";
        case Op::Model: return "model";
        case Op::Tensor: return "tensor";
    }
    return "?";
}

std::optional<Op> op_from_name(std::string_view name) {
    // Every op but None, in declaration order; a new op is added here and in op_name.
    static constexpr Op kOps[] = {Op::Affine,    Op::Impute, Op::OneHot,    Op::Ordinal,   Op::Elementwise,
                                  Op::Threshold, Op::Clip,   Op::IsMissing, Op::Normalize, Op::Project,
                                  Op::Bucketize, Op::Monomials, Op::Kernel, Op::Concat,    Op::Linear,
                                  Op::TorchScript, Op::Neighbors, Op::Power, Op::Quantile, Op::Model, Op::Tensor};
    for (Op op : kOps)
        if (name == op_name(op)) return op;
    return std::nullopt;
}

}  // namespace pg_predict::spec
