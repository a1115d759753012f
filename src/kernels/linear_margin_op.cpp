// torch.ops.pg_predict.linear_margin (ops.pg_predict.linear_margin in a program's source): the
// fused linear margin (kernels/linear_margin.hpp) as a TorchScript operator.
//
//   linear_margin(Tensor x, Tensor terms, Tensor intercept) -> Tensor   # [N, 1] float64
//
// terms is the packed [T, kLinearTermFields] float64 buffer the compiler wrote, intercept a
// one-value float64 buffer. CPU only: a program placed on a GPU takes its tensor-op branch
// instead (compiler/linear_models.cpp), so the op refuses other devices.
#include <torch/types.h>

#include "kernel_op.hpp"
#include "pg_predict/kernels/linear_margin.hpp"

namespace pg_predict::kernels {
namespace {

at::Tensor linear_margin_op(const at::Tensor& x_in, const at::Tensor& terms_in, const at::Tensor& intercept_in) {
    TORCH_CHECK(x_in.dim() == 2, "pg_predict::linear_margin: x must be two-dimensional");
    TORCH_CHECK(terms_in.dim() == 2 && terms_in.size(1) == kLinearTermFields,
                "pg_predict::linear_margin: terms must be [T, ", kLinearTermFields, "]");
    TORCH_CHECK(intercept_in.numel() == 1, "pg_predict::linear_margin: intercept must hold one value");
    TORCH_CHECK(x_in.device().is_cpu() && terms_in.device().is_cpu() && intercept_in.device().is_cpu(),
                "pg_predict::linear_margin: runs on the CPU only");
    TORCH_CHECK(x_in.scalar_type() == at::kFloat || x_in.scalar_type() == at::kDouble,
                "pg_predict::linear_margin: x must be float32 or float64");
    const at::Tensor x = x_in.contiguous();
    const at::Tensor packed = terms_in.to(at::kDouble).contiguous();
    const double intercept = intercept_in.to(at::kDouble).item<double>();
    return op_output("linear_margin", x.size(0), 1, x.options().dtype(at::kDouble), [&](at::Tensor& out) {
        const std::vector<LinearTerm> terms = unpack_linear_terms(packed.data_ptr<double>(), packed.size(0), x.size(1));
        if (x.scalar_type() == at::kFloat)
            linear_margin(x.data_ptr<float>(), x.size(0), x.size(1), terms, intercept, out.data_ptr<double>());
        else
            linear_margin(x.data_ptr<double>(), x.size(0), x.size(1), terms, intercept, out.data_ptr<double>());
    });
}

}  // namespace
}  // namespace pg_predict::kernels

PG_PREDICT_KERNEL_OP(linear_margin_op_anchor, "linear_margin(Tensor x, Tensor terms, Tensor intercept) -> Tensor",
                     pg_predict::kernels::linear_margin_op)
