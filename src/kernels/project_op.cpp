// torch.ops.pg_predict.project (ops.pg_predict.project in a program's source): the dense
// projection (kernels/project.hpp) as a TorchScript operator.
//
//   project(Tensor x, Tensor wt, int m, Tensor offset) -> Tensor   # [N, m] float64
//
// wt is the weights' padded transposed copy (a program buffer, laid out once at compile time by
// project_padded). Off the CPU (the CUDA flavour) the op is torch's matmul and add.
#include <torch/types.h>

#include "kernel_op.hpp"
#include "pg_predict/kernels/project.hpp"

namespace pg_predict::kernels {
namespace {

at::Tensor project_op(const at::Tensor& x_in, const at::Tensor& wt_in, int64_t m, const at::Tensor& offset_in) {
    TORCH_CHECK(x_in.dim() == 2 && wt_in.dim() == 2, "pg_predict::project: x and wt must be two-dimensional");
    TORCH_CHECK(wt_in.size(0) == x_in.size(1), "pg_predict::project: x has ", x_in.size(1), " columns, the weights ",
                wt_in.size(0));
    TORCH_CHECK(m >= 0 && wt_in.size(1) == project_padded(m), "pg_predict::project: wt holds ", wt_in.size(1),
                " padded outputs, not the ", project_padded(m), " that ", m, " outputs take");
    TORCH_CHECK(offset_in.dim() == 1 && offset_in.size(0) == m, "pg_predict::project: offset must hold ", m,
                " values");
    const at::Tensor x = float64_contiguous(x_in), wt = float64_contiguous(wt_in),
                     offset = float64_contiguous(offset_in);
    if (!x.device().is_cpu()) return at::matmul(x, wt.narrow(1, 0, m)) + offset;
    TORCH_CHECK(wt.device().is_cpu() && offset.device().is_cpu(), "pg_predict::project: wt and offset must be on x's device");
    return op_output("project", x.size(0), m, x.options(), [&](at::Tensor& out) {
        project(x.data_ptr<double>(), x.size(0), x.size(1), wt.data_ptr<double>(), m, offset.data_ptr<double>(),
                out.data_ptr<double>(), process_isa());
    });
}

}  // namespace
}  // namespace pg_predict::kernels

PG_PREDICT_KERNEL_OP(project_op_anchor, "project(Tensor x, Tensor wt, int m, Tensor offset) -> Tensor",
                     pg_predict::kernels::project_op)
