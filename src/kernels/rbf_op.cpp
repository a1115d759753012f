// torch.ops.pg_predict.rbf_kernel (ops.pg_predict.rbf_kernel in a program's source): the fused
// RBF kernel matrix (kernels/rbf.hpp) as a TorchScript operator.
//
//   rbf_kernel(Tensor x, Tensor svt, int n, float gamma) -> Tensor   # [N, n] float64
//
// svt is the support vectors' padded column-major copy (a program buffer, laid out once at
// compile time by rbf_padded). Off the CPU (the CUDA flavour) the op is cdist, square and exp
// in torch: the same values up to rounding.
#include <torch/types.h>

#include "kernel_op.hpp"
#include "pg_predict/kernels/rbf.hpp"

namespace pg_predict::kernels {
namespace {

at::Tensor rbf_kernel_op(const at::Tensor& x_in, const at::Tensor& svt_in, int64_t n, double gamma) {
    TORCH_CHECK(x_in.dim() == 2 && svt_in.dim() == 2, "pg_predict::rbf_kernel: x and svt must be two-dimensional");
    TORCH_CHECK(svt_in.size(0) == x_in.size(1), "pg_predict::rbf_kernel: x has ", x_in.size(1),
                " columns, the support vectors ", svt_in.size(0));
    TORCH_CHECK(n >= 0 && svt_in.size(1) == rbf_padded(n), "pg_predict::rbf_kernel: svt holds ", svt_in.size(1),
                " padded columns, not the ", rbf_padded(n), " that ", n, " support vectors take");
    const at::Tensor x = float64_contiguous(x_in), svt = float64_contiguous(svt_in);
    if (!x.device().is_cpu()) {
        const at::Tensor d = at::cdist(x, svt.narrow(1, 0, n).t(), 2.0, 2);  // 2: no matmul form
        return at::exp(d * d * -gamma);
    }
    TORCH_CHECK(svt.device().is_cpu(), "pg_predict::rbf_kernel: svt must be on x's device");
    return op_output("rbf_kernel", x.size(0), n, x.options(), [&](at::Tensor& out) {
        rbf_kernel(x.data_ptr<double>(), x.size(0), x.size(1), svt.data_ptr<double>(), n, gamma,
                   out.data_ptr<double>(), process_isa());
    });
}

}  // namespace
}  // namespace pg_predict::kernels

PG_PREDICT_KERNEL_OP(rbf_op_anchor, "rbf_kernel(Tensor x, Tensor svt, int n, float gamma) -> Tensor",
                     pg_predict::kernels::rbf_kernel_op)
