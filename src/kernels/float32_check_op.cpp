// torch.ops.pg_predict.float32_for_trees (compiler::trees_read_float32): a pipeline's featurized
// columns (float64) as the float32 its trees read, refusing a value beyond float32 where
// scikit-learn raises ("Input contains infinity or a value too large for dtype('float32')").
// The runtime finds the marker in the error and names the input that took the row there.
//
//   float32_for_trees(Tensor z) -> Tensor   # z as float32; an error when any is ±Infinity
//
// NaN passes (a missing value); the inputs themselves are finite (the server refuses ±Infinity).
#include <torch/types.h>

#include "kernel_op.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/float32_check.hpp"

namespace pg_predict::kernels {
namespace {

at::Tensor float32_for_trees_op(const at::Tensor& z) {
    at::Tensor x = z.to(at::kFloat);
    TORCH_CHECK(!at::isinf(x).any().item<bool>(), kFloat32OverflowMarker);
    return x;
}

}  // namespace
}  // namespace pg_predict::kernels

PG_PREDICT_KERNEL_OP(float32_check_op_anchor, "float32_for_trees(Tensor z) -> Tensor",
                     pg_predict::kernels::float32_for_trees_op)
