// torch.ops.pg_predict.logistic (ops.pg_predict.logistic in a program's source): the logistic
// link and expit of every element, the same at every position of a batch (kernels/logistic.hpp).
//
//   logistic(Tensor m) -> Tensor   # same shape and dtype (float32 or float64)
//
// Off the CPU it is ATen's sigmoid: a GPU kernel computes every element alike.
#include <ATen/Parallel.h>
#include <torch/types.h>

#include "kernel_op.hpp"
#include "pg_predict/kernels/logistic.hpp"

namespace pg_predict::kernels {
namespace {

// Elements per task of ATen's intra-op pool: as ATen's own elementwise grain.
constexpr int64_t kGrain = 32768;

at::Tensor logistic_op(const at::Tensor& m_in) {
    if (!m_in.device().is_cpu()) return at::sigmoid(m_in);
    TORCH_CHECK(m_in.scalar_type() == at::kFloat || m_in.scalar_type() == at::kDouble,
                "pg_predict::logistic: m must be float32 or float64");
    const at::Tensor m = m_in.contiguous();
    at::Tensor out = at::empty_like(m);
    op_guard("logistic", [&] {
        at::parallel_for(0, m.numel(), kGrain, [&](int64_t begin, int64_t end) {
            if (m.scalar_type() == at::kFloat)
                logistic(m.data_ptr<float>() + begin, end - begin, out.data_ptr<float>() + begin);
            else
                logistic(m.data_ptr<double>() + begin, end - begin, out.data_ptr<double>() + begin);
        });
    });
    return out;
}

}  // namespace
}  // namespace pg_predict::kernels

PG_PREDICT_KERNEL_OP(logistic_op_anchor, "logistic(Tensor m) -> Tensor", pg_predict::kernels::logistic_op)
