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

#include <functional>
#include <string>
#include <vector>

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

// make_view reads every node and entry (4 MB for 500 trees of 255 leaves), and the runtime calls
// a program on chunks of about 10 ms: on one thread, before the pool's, that was 10% of a
// 255-leaf LightGBM query at 2 threads. So the last few views checked are kept, by the storages
// of their five tensors, and reused while every storage is alive and unchanged: a weak
// reference keeps a StorageImpl's address from being taken by another tensor, and the data
// pointer, size and version counter (in-place changes bump it, in inference mode too) say it
// holds what was checked.
struct CheckedTensor {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    const void* data;
    int64_t numel;
    uint32_t version;
    explicit CheckedTensor(const at::Tensor& t)
        : storage(t.storage().getWeakStorageImpl()), data(t.data_ptr()), numel(t.numel()), version(t._version()) {}
    bool same(const at::Tensor& t) const {
        const c10::intrusive_ptr<c10::StorageImpl> alive = storage.lock();
        return alive && alive.get() == t.storage().unsafeGetStorageImpl() && data == t.data_ptr() &&
               numel == t.numel() && version == t._version();
    }
};

struct CheckedView {
    std::vector<CheckedTensor> tensors;
    PackedView view;
};

constexpr size_t kCheckedViews = 4;
thread_local std::vector<CheckedView> checked_views;  // most recently used last

PackedView checked_view(std::initializer_list<const at::Tensor*> tensors, const std::function<PackedView()>& make) {
    for (const at::Tensor* t : tensors)
        if (t->is_inference()) return make();  // no version counter to trust
    for (size_t i = 0; i < checked_views.size(); ++i) {
        const CheckedView& c = checked_views[i];
        bool same = true;
        size_t k = 0;
        for (const at::Tensor* t : tensors) same = same && c.tensors[k++].same(*t);
        if (same) {
            CheckedView hit = std::move(checked_views[i]);
            checked_views.erase(checked_views.begin() + i);
            checked_views.push_back(std::move(hit));
            return checked_views.back().view;
        }
    }
    CheckedView c{{}, make()};  // throws for a corrupt model: nothing is kept
    for (const at::Tensor* t : tensors) c.tensors.emplace_back(*t);
    if (checked_views.size() == kCheckedViews) checked_views.erase(checked_views.begin());
    checked_views.push_back(std::move(c));
    return checked_views.back().view;
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
        const PackedView view = checked_view({&meta, &nodes, &leaves, &cuts, &aux}, [&] {
            return make_view(meta.data_ptr<int64_t>(), meta.numel(), nodes.data_ptr<int32_t>(), nodes.numel(),
                             leaves.data_ptr<float>(), leaves.numel(), cuts.data_ptr<float>(), cuts.numel(),
                             aux.data_ptr<int32_t>(), aux.numel());
        });
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
