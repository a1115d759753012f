// torch.ops.pg_predict.tree_ensemble: the native tree kernel as a TorchScript operator.
//
//   tree_ensemble(Tensor x, Tensor meta, Tensor nodes, Tensor leaves, Tensor cuts, Tensor aux)
//       -> Tensor                                  # [N, num_groups] float32 raw margins
//
// The packed model travels as the program's own buffers (meta int64, nodes int32, leaves
// float32, cuts float32, aux int32; see kernels/tree_ensemble.hpp), so a saved program is
// self-contained. Only registration happens at load time: no torch op runs during static
// initialization (the postmaster may load this library).
#include <torch/library.h>
#include <torch/types.h>

#include <string>

#include "kernel_op.hpp"
#include "pg_predict/kernels/thread_pool.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels {

namespace detail {
// pg_predict.threads, on our own sleeping pool rather than OpenMP's spinning one (see
// kernels/thread_pool.hpp).
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
    // The background thread has its own count.
    run_parallel(on_background_thread() ? 0 : pool_threads(), begin, end, grain, fn);
}
}  // namespace detail

namespace {

void check_tensor(const at::Tensor& t, at::ScalarType type, const char* name) {
    TORCH_CHECK(t.scalar_type() == type, "pg_predict::tree_ensemble: ", name, " must be ",
                c10::toString(type), ", got ", c10::toString(t.scalar_type()));
    TORCH_CHECK(t.device().is_cpu(), "pg_predict::tree_ensemble: ", name, " must be on the CPU");
    TORCH_CHECK(t.dim() <= 1, "pg_predict::tree_ensemble: ", name, " must be one-dimensional");
}

at::Tensor tree_ensemble(const at::Tensor& x_in, const at::Tensor& meta_in, const at::Tensor& nodes_in,
                         const at::Tensor& leaves_in, const at::Tensor& cuts_in, const at::Tensor& aux_in) {
    TORCH_CHECK(x_in.dim() == 2, "pg_predict::tree_ensemble: x must be [rows, features]");
    TORCH_CHECK(x_in.device().is_cpu(), "pg_predict::tree_ensemble: x must be on the CPU");
    const at::Tensor x = x_in.to(at::kFloat).contiguous();
    const at::Tensor meta = meta_in.contiguous(), nodes = nodes_in.contiguous(),
                     leaves = leaves_in.contiguous(), cuts = cuts_in.contiguous(), aux = aux_in.contiguous();
    check_tensor(meta, at::kLong, "meta");
    check_tensor(nodes, at::kInt, "nodes");
    check_tensor(leaves, at::kFloat, "leaves");
    check_tensor(cuts, at::kFloat, "cuts");
    check_tensor(aux, at::kInt, "aux");
    return op_guard("tree_ensemble", [&] {
        const PackedView view = make_view(meta.data_ptr<int64_t>(), meta.numel(), nodes.data_ptr<int32_t>(),
                                          nodes.numel(), leaves.data_ptr<float>(), leaves.numel(),
                                          cuts.data_ptr<float>(), cuts.numel(), aux.data_ptr<int32_t>(), aux.numel());
        at::Tensor out = at::empty({x.size(0), view.num_groups}, x.options());
        score(view, x.data_ptr<float>(), x.size(0), x.size(1), out.data_ptr<float>(), process_isa());
        return out;
    });
}

}  // namespace

// Referenced from the compiler so that a static link keeps this object (and its registrar).
int native_op_anchor() { return 1; }

}  // namespace pg_predict::kernels

TORCH_LIBRARY(pg_predict, m) {
    // A catch-all kernel: inference only, CPU tensors checked inside.
    m.def("tree_ensemble(Tensor x, Tensor meta, Tensor nodes, Tensor leaves, Tensor cuts, Tensor aux) -> Tensor",
          TORCH_FN(pg_predict::kernels::tree_ensemble));
}
