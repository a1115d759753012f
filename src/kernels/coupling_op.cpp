// torch.ops.pg_predict.pairwise_coupling (ops.pg_predict.pairwise_coupling in a program's
// source): spec::pairwise_coupling over every row's groups.
//
//   pairwise_coupling(Tensor r, int k) -> Tensor   # [N, g·k·k] float64 → [N, g·k]
//
// Off the CPU the rows go to the CPU and back: the loop is short and data-dependent.
#include <vector>

#include <torch/types.h>

#include "kernel_op.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/kernels/coupling.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::kernels {
namespace {

at::Tensor coupling_op(const at::Tensor& r_in, int64_t k) {
    TORCH_CHECK(r_in.dim() == 2, "pg_predict::pairwise_coupling: r must be two-dimensional");
    TORCH_CHECK(k >= 2 && r_in.size(1) % (k * k) == 0, "pg_predict::pairwise_coupling: ", r_in.size(1),
                " entries are not groups of ", k, " x ", k);
    const at::Tensor r = float64_contiguous(r_in.to(at::kCPU));
    const int64_t rows = r.size(0), groups = r.size(1) / (k * k);
    at::Tensor out = op_output("pairwise_coupling", rows, groups * k, r.options(), [&](at::Tensor& o) {
        const double* in = r.data_ptr<double>();
        double* p = o.data_ptr<double>();
        std::vector<double> scratch(static_cast<size_t>(k * k + k));  // once per batch, not per row
        for (int64_t i = 0; i < rows * groups; ++i) {
            if ((i & 4095) == 0) check_interrupts();
            spec::pairwise_coupling(in + i * k * k, static_cast<size_t>(k), p + i * k, scratch.data());
        }
    });
    return out.to(r_in.device());
}

}  // namespace
}  // namespace pg_predict::kernels

PG_PREDICT_KERNEL_OP(coupling_op_anchor, "pairwise_coupling(Tensor r, int k) -> Tensor", pg_predict::kernels::coupling_op)
