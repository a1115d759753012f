// The operation of a pipeline step, parsed once from the spec's "op" string (spec/steps.hpp
// lists each op's parameters). Code that treats ops differently switches over Op without a
// default, and the build makes a missing case an error (-Werror=switch): a new op is a compile
// error at every place that must handle it, not a string that falls through an if-chain.
#pragma once

#include <optional>
#include <string_view>

namespace pg_predict::spec {

enum class Op {
    None,         // no step: the estimator of a pipeline whose model is its tree ensemble
    // featurizers
    Affine,
    Impute,
    OneHot,
    Ordinal,
    Elementwise,
    Threshold,
    Clip,
    IsMissing,
    Normalize,
    Project,
    Bucketize,
    Monomials,
    Kernel,
    Neighbors,
    Concat,
    Power,  // PowerTransformer: yeo-johnson or box-cox with a lambda per column
    Quantile,  // QuantileTransformer: interpolation over each column's quantiles
    Tensor,  // the ONNX importer's general per-row tensor operation (binary, where, reduce, softmax)
    Model,  // a whole nested pipeline (an ensemble's member): its prediction as columns
    // estimators
    Linear,
    TorchScript,  // a foreign TorchScript module: the spec holds its shape, the program is the module
};

// The op's name in the spec's JSON ("affine", "one_hot", ...; "" for None).
const char* op_name(Op);
// The op named `name`, or nullopt when there is none ("" included).
std::optional<Op> op_from_name(std::string_view name);

}  // namespace pg_predict::spec
