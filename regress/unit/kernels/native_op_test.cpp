// torch.ops.pg_predict.tree_ensemble is registered in the linked binary and callable from
// TorchScript with the packed model as tensors; it gives what kernels::score gives.
#include <gtest/gtest.h>

#include <torch/jit.h>
#include <torch/script.h>

#include <cstring>
#include <random>
#include <vector>

#include "pg_predict/kernels/tree_ensemble.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

// torch::jit's native resolver maps `torch` to aten only; a program's source reaches custom
// ops as `ops.<namespace>.<op>` (what torch::jit::load's importer understands) when defined
// with a resolver that knows `ops`.
struct OpsValue : torch::jit::SugaredValue {
    std::string kind() const override { return "ops"; }
    std::shared_ptr<torch::jit::SugaredValue> attr(const torch::jit::SourceRange&, torch::jit::GraphFunction&,
                                                   const std::string& field) override {
        return std::make_shared<torch::jit::BuiltinModule>(field);
    }
};
struct OpsResolver : torch::jit::Resolver {
    std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name, torch::jit::GraphFunction& m,
                                                           const torch::jit::SourceRange& loc) override {
        if (name == "ops") return std::make_shared<OpsValue>();
        return torch::jit::nativeResolver()->resolveValue(name, m, loc);
    }
    c10::TypePtr resolveType(const std::string&, const torch::jit::SourceRange&) override { return nullptr; }
};

template <typename T>
at::Tensor tensor_of(const std::vector<T>& v, at::ScalarType type) {
    at::Tensor t = at::empty({static_cast<int64_t>(v.size())}, at::TensorOptions().dtype(type));
    if (!v.empty()) std::memcpy(t.data_ptr(), v.data(), v.size() * sizeof(T));
    return t;
}

TEST(NativeOp, CallableFromTorchScript) {
    std::mt19937 rng(5);
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 2, 9,
                                              spec::Comparison::Less);
    testing::TreeShape shape;
    shape.max_depth = 7;
    testing::add_trees(p, rng, 40, shape);
    for (bool perfect : {true, false}) {
        const kernels::PackedEnsemble packed = kernels::pack(p.model, perfect);
        const int64_t rows = 101;
        std::vector<float> x = testing::random_inputs(rng, rows, 9);
        std::vector<float> want(rows * 2);
        kernels::score(kernels::make_view(packed), x.data(), rows, 9, want.data());

        auto cu = std::make_shared<torch::jit::CompilationUnit>();
        cu->define(c10::nullopt,
                   "def f(x: Tensor, meta: Tensor, nodes: Tensor, leaves: Tensor, cuts: Tensor, aux: Tensor):\n"
                   "    return ops.pg_predict.tree_ensemble(x, meta, nodes, leaves, cuts, aux)\n",
                   std::make_shared<OpsResolver>(), nullptr);
        at::Tensor xt = tensor_of(x, at::kFloat).reshape({rows, 9});
        at::Tensor out = cu->run_method("f", xt, tensor_of(packed.meta, at::kLong), tensor_of(packed.nodes, at::kInt),
                                        tensor_of(packed.leaves, at::kFloat), tensor_of(packed.cuts, at::kFloat),
                                        tensor_of(packed.aux, at::kInt))
                             .toTensor();
        ASSERT_EQ(out.sizes(), (std::vector<int64_t>{rows, 2}));
        EXPECT_EQ(std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + rows * 2), want);

        // A corrupt model is an error, not a crash.
        EXPECT_THROW(cu->run_method("f", xt, tensor_of(packed.meta, at::kLong),
                                    tensor_of(std::vector<int32_t>(3, 0), at::kInt), tensor_of(packed.leaves, at::kFloat),
                                    tensor_of(packed.cuts, at::kFloat), tensor_of(packed.aux, at::kInt)),
                     std::exception);  // the interpreter rethrows it as a runtime_error
    }
}

}  // namespace
}  // namespace pg_predict
