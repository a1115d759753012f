// torch.ops.pg_predict.project (ops.pg_predict.project in a program's source): the dense
// projection (kernels/project.hpp) as a TorchScript operator.
//
//   project(Tensor x, Tensor wt, int m, Tensor offset) -> Tensor   # [N, m] float64
//
// wt is the weights' padded transposed copy (a program buffer, laid out once at compile time by
// project_padded). Off the CPU (the CUDA flavour) the op is torch's matmul and add.
#include <torch/library.h>
#include <torch/types.h>

#include "pg_predict/common/error.hpp"
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
    const at::Tensor x = x_in.to(at::kDouble).contiguous();
    const at::Tensor wt = wt_in.to(at::kDouble).contiguous();
    const at::Tensor offset = offset_in.to(at::kDouble).contiguous();
    if (!x.device().is_cpu()) return at::matmul(x, wt.narrow(1, 0, m)) + offset;
    TORCH_CHECK(wt.device().is_cpu() && offset.device().is_cpu(), "pg_predict::project: wt and offset must be on x's device");
    at::Tensor out = at::empty({x.size(0), m}, x.options());
    try {
        project(x.data_ptr<double>(), x.size(0), x.size(1), wt.data_ptr<double>(), m, offset.data_ptr<double>(),
                out.data_ptr<double>(), process_isa());
    } catch (const Error& e) {  // a cancel too: the runtime sees the pending interrupt
        TORCH_CHECK(false, "pg_predict::project: ", e.what());
    }
    return out;
}

}  // namespace

int project_op_anchor() { return 1; }

}  // namespace pg_predict::kernels

TORCH_LIBRARY_FRAGMENT(pg_predict, m) {
    m.def("project(Tensor x, Tensor wt, int m, Tensor offset) -> Tensor", TORCH_FN(pg_predict::kernels::project_op));
}
