// torch.ops.pg_predict.k_nearest (ops.pg_predict.k_nearest in a program's source): the k
// smallest distances of each row and their columns (kernels/k_nearest.hpp).
//
//   k_nearest(Tensor d, int k) -> (Tensor, Tensor)   # [N, k] float64, [N, k] int64
//
// The same values as torch.sort(d, dim=1, stable=True) cut to k columns, which it is off the
// CPU (the CUDA flavour).
#include <torch/types.h>

#include <tuple>

#include "kernel_op.hpp"
#include "pg_predict/kernels/k_nearest.hpp"

namespace pg_predict::kernels {
namespace {

std::tuple<at::Tensor, at::Tensor> k_nearest_op(const at::Tensor& d_in, int64_t k) {
    TORCH_CHECK(d_in.dim() == 2, "pg_predict::k_nearest: d must be two-dimensional");
    TORCH_CHECK(k >= 1 && k <= d_in.size(1), "pg_predict::k_nearest: k = ", k, " is not in 1..", d_in.size(1));
    const at::Tensor d = float64_contiguous(d_in);
    if (!d.device().is_cpu()) {
        auto [values, indices] = at::sort(d, /*stable=*/true, /*dim=*/1, /*descending=*/false);
        return {values.narrow(1, 0, k).contiguous(), indices.narrow(1, 0, k).contiguous()};
    }
    at::Tensor dk = at::empty({d.size(0), k}, d.options());
    at::Tensor ik = at::empty({d.size(0), k}, d.options().dtype(at::kLong));
    op_guard("k_nearest", [&] {
        k_nearest(d.data_ptr<double>(), d.size(0), d.size(1), k, dk.data_ptr<double>(), ik.data_ptr<int64_t>());
    });
    return {dk, ik};
}

}  // namespace
}  // namespace pg_predict::kernels

PG_PREDICT_KERNEL_OP(k_nearest_op_anchor, "k_nearest(Tensor d, int k) -> (Tensor, Tensor)",
                     pg_predict::kernels::k_nearest_op)
