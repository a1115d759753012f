// torch.ops.pg_predict.tree_ensemble is registered in the linked binary and callable from
// TorchScript with the packed model as tensors; it gives what kernels::score gives.
#include <gtest/gtest.h>

#include <ATen/core/dispatch/Dispatcher.h>
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


// The op keeps the views it checked (tree_ensemble_op.cpp): the same tensors are not checked
// again, but a buffer changed in place, or a new buffer where a checked one was freed, is.
TEST(NativeOp, CheckedViewsFollowTheirTensors) {
    std::mt19937 rng(6);
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 5,
                                              spec::Comparison::Less);
    testing::TreeShape shape;
    shape.max_depth = 12;  // past the perfect layout: explicit nodes to corrupt
    testing::add_trees(p, rng, 20, shape);
    const kernels::PackedEnsemble packed = kernels::pack(p.model, false);
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("pg_predict::tree_ensemble", "").typed<at::Tensor(
        const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
        const at::Tensor&)>();
    const int64_t rows = 64;
    std::vector<float> x = testing::random_inputs(rng, rows, 5);
    std::vector<float> want(rows);
    kernels::score(kernels::make_view(packed), x.data(), rows, 5, want.data());
    const at::Tensor xt = tensor_of(x, at::kFloat).reshape({rows, 5});
    const at::Tensor meta = tensor_of(packed.meta, at::kLong), leaves = tensor_of(packed.leaves, at::kFloat),
                     cuts = tensor_of(packed.cuts, at::kFloat), aux = tensor_of(packed.aux, at::kInt);
    at::Tensor nodes = tensor_of(packed.nodes, at::kInt);
    for (int call = 0; call < 3; ++call) {  // checked once, then reused
        const at::Tensor out = op.call(xt, meta, nodes, leaves, cuts, aux);
        EXPECT_EQ(std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + rows), want);
    }
    // A child index past the end, written in place: the version counter sends it back to make_view.
    nodes.index_put_({2}, int32_t(1) << 30);
    EXPECT_THROW(op.call(xt, meta, nodes, leaves, cuts, aux), c10::Error);
    // A fresh corrupt buffer (its own storage) is checked too.
    std::vector<int32_t> bad = packed.nodes;
    bad[2] = int32_t(1) << 30;
    EXPECT_THROW(op.call(xt, meta, tensor_of(bad, at::kInt), leaves, cuts, aux), c10::Error);
    // And the intact one still scores.
    const at::Tensor out = op.call(xt, meta, tensor_of(packed.nodes, at::kInt), leaves, cuts, aux);
    EXPECT_EQ(std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + rows), want);
}

}  // namespace
}  // namespace pg_predict
