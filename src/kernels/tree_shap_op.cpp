// torch.ops.pg_predict.tree_shap: TreeSHAP contributions (kernels/tree_shap.hpp) as a
// TorchScript operator over the program's packed buffers.
//
//   tree_shap(Tensor x, Tensor meta, Tensor trees, Tensor nodes, Tensor thresholds, Tensor edges,
//             Tensor subtrees, Tensor terms, Tensor slots, Tensor tables, Tensor paths,
//             Tensor path_values, Tensor elements, Tensor zero_fractions, Tensor bias)
//       -> Tensor          # [N, groups * (players + 1)] float32, + bias
#include <torch/types.h>

#include "kernel_op.hpp"
#include "pg_predict/kernels/thread_pool.hpp"
#include "pg_predict/kernels/tree_shap.hpp"

namespace pg_predict::kernels {

namespace {

at::Tensor checked(const at::Tensor& t, at::ScalarType type, const char* name) {
    TORCH_CHECK(t.scalar_type() == type, "pg_predict::tree_shap: ", name, " must be ", c10::toString(type));
    TORCH_CHECK(t.device().is_cpu(), "pg_predict::tree_shap: ", name, " must be on the CPU");
    TORCH_CHECK(t.dim() <= 1, "pg_predict::tree_shap: ", name, " must be one-dimensional");
    return t.contiguous();
}

template <typename T>
ShapArray<T> array(const at::Tensor& t) {
    return {t.data_ptr<T>(), t.numel()};
}

at::Tensor tree_shap_op(const at::Tensor& x_in, const at::Tensor& meta_in, const at::Tensor& trees_in,
                        const at::Tensor& nodes_in, const at::Tensor& thresholds_in, const at::Tensor& edges_in,
                        const at::Tensor& subtrees_in, const at::Tensor& terms_in, const at::Tensor& slots_in,
                        const at::Tensor& tables_in, const at::Tensor& paths_in, const at::Tensor& values_in,
                        const at::Tensor& elements_in, const at::Tensor& zeros_in, const at::Tensor& bias_in) {
    TORCH_CHECK(x_in.dim() == 2, "pg_predict::tree_shap: x must be [rows, columns]");
    TORCH_CHECK(x_in.device().is_cpu(), "pg_predict::tree_shap: x must be on the CPU");
    const at::Tensor x = x_in.to(at::kFloat).contiguous();
    const at::Tensor meta = checked(meta_in, at::kLong, "meta"), trees = checked(trees_in, at::kInt, "trees"),
                     nodes = checked(nodes_in, at::kInt, "nodes"),
                     thresholds = checked(thresholds_in, at::kFloat, "thresholds"),
                     edges = checked(edges_in, at::kInt, "edges"),
                     subtrees = checked(subtrees_in, at::kInt, "subtrees"),
                     terms = checked(terms_in, at::kInt, "terms"), slots = checked(slots_in, at::kInt, "slots"),
                     tables = checked(tables_in, at::kFloat, "tables"), paths = checked(paths_in, at::kInt, "paths"),
                     values = checked(values_in, at::kDouble, "path_values"),
                     elements = checked(elements_in, at::kInt, "elements"),
                     zeros = checked(zeros_in, at::kDouble, "zero_fractions"),
                     bias = checked(bias_in, at::kFloat, "bias");
    return op_guard("tree_shap", [&] {
        const ShapView view = make_shap_view(
            {array<int64_t>(meta), array<int32_t>(trees), array<int32_t>(nodes), array<float>(thresholds),
             array<int32_t>(edges), array<int32_t>(subtrees), array<int32_t>(terms), array<int32_t>(slots),
             array<float>(tables), array<int32_t>(paths), array<double>(values), array<int32_t>(elements),
             array<double>(zeros)});
        const int64_t width = int64_t(view.groups) * (view.players + 1);
        TORCH_CHECK(bias.numel() == width, "pg_predict::tree_shap: bias must have ", width, " values");
        at::Tensor out = at::empty({x.size(0), width}, x.options());
        // The pg_predict.cpu_kernel setting picks the path, as for the tree_ensemble op.
        tree_shap(view, x.data_ptr<float>(), x.size(0), x.size(1), out.data_ptr<float>(), pool_threads(),
                  process_isa(), bias.data_ptr<float>());
        return out;
    });
}

}  // namespace
}  // namespace pg_predict::kernels

PG_PREDICT_KERNEL_OP(shap_op_anchor,
                     "tree_shap(Tensor x, Tensor meta, Tensor trees, Tensor nodes, Tensor thresholds, "
                     "Tensor edges, Tensor subtrees, Tensor terms, Tensor slots, Tensor tables, Tensor paths, "
                     "Tensor path_values, Tensor elements, Tensor zero_fractions, Tensor bias) -> Tensor",
                     pg_predict::kernels::tree_shap_op)
