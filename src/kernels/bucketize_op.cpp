// torch.ops.pg_predict.bucketize (ops.pg_predict.bucketize in a program's source): the native
// bucketize (kernels/bucketize.hpp) as a TorchScript operator.
//
//   bucketize(Tensor x, Tensor edges, Tensor counts, bool right) -> Tensor   # [N, C] float64
//
// edges is [C, K] float64, each column's edges padded with +inf to K; counts [C] int64 says how
// many are real. Off the CPU (the CUDA flavour) the op is torch's searchsorted on the same data.
#include <torch/types.h>

#include "kernel_op.hpp"
#include "pg_predict/kernels/bucketize.hpp"

namespace pg_predict::kernels {
namespace {

at::Tensor searchsorted_op(const at::Tensor& x, const at::Tensor& edges, const at::Tensor& counts, bool right) {
    at::Tensor n = edges.size(1) == 0 ? at::zeros_like(x)
                                      : at::searchsorted(edges, x.t().contiguous(), false, right).t().to(at::kDouble);
    if (right) n = at::minimum(n, counts.to(n.options()));
    return at::where(at::isnan(x), x, n);
}

at::Tensor bucketize_op(const at::Tensor& x_in, const at::Tensor& edges_in, const at::Tensor& counts_in, bool right) {
    TORCH_CHECK(x_in.dim() == 2 && edges_in.dim() == 2, "pg_predict::bucketize: x and edges must be two-dimensional");
    TORCH_CHECK(edges_in.size(0) == x_in.size(1), "pg_predict::bucketize: x has ", x_in.size(1),
                " columns, the edges ", edges_in.size(0));
    TORCH_CHECK(counts_in.dim() == 1 && counts_in.size(0) == edges_in.size(0) && counts_in.scalar_type() == at::kLong,
                "pg_predict::bucketize: counts must be ", edges_in.size(0), " int64 values");
    const at::Tensor x = float64_contiguous(x_in), edges = float64_contiguous(edges_in);
    const at::Tensor counts = counts_in.to(at::kCPU).contiguous();
    const int64_t K = edges.size(1);
    const int64_t* n = counts.data_ptr<int64_t>();
    for (int64_t c = 0; c < counts.size(0); ++c)
        TORCH_CHECK(n[c] >= 0 && n[c] <= K, "pg_predict::bucketize: column ", c, " claims ", n[c], " edges of ", K);
    if (!x.device().is_cpu()) return searchsorted_op(x, edges, counts_in.to(x.device()), right);
    TORCH_CHECK(edges.device().is_cpu(), "pg_predict::bucketize: edges must be on x's device");
    return op_output("bucketize", x.size(0), x.size(1), x.options(), [&](at::Tensor& out) {
        bucketize(x.data_ptr<double>(), x.size(0), x.size(1), edges.data_ptr<double>(), K, n, right,
                  out.data_ptr<double>(), process_isa());
    });
}

}  // namespace
}  // namespace pg_predict::kernels

PG_PREDICT_KERNEL_OP(bucketize_op_anchor, "bucketize(Tensor x, Tensor edges, Tensor counts, bool right) -> Tensor",
                     pg_predict::kernels::bucketize_op)
