// Spec tensor function "pairwise_coupling" as a TorchScript operator: libsvm's iterative
// coupling (spec::pairwise_coupling) runs per row until it converges, which torch ops would
// spell as a loop of masked updates; natively it is the spec's own loop, row by row.
#pragma once

namespace pg_predict::kernels {

// Defined beside the registration of torch.ops.pg_predict.pairwise_coupling; the compiler
// references it so a static link keeps the registrar.
int coupling_op_anchor();

}  // namespace pg_predict::kernels
