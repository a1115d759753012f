// The compiler's only torch-including file: program parts → torch::jit::Module → bytes.
#include <cstring>
#include <sstream>
#include <string>

#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/script.h>

#include "pg_predict/common/error.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {
namespace {

// torch::jit's native resolver maps `torch` to aten only. Custom ops (the native kernel's
// torch.ops.pg_predict.tree_ensemble) are written `ops.<namespace>.<op>` in a program's source,
// which is also how the saved code spells them and what torch::jit::load's importer resolves.
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
    c10::TypePtr resolveType(const std::string& name, const torch::jit::SourceRange& loc) override {
        return torch::jit::nativeResolver()->resolveType(name, loc);
    }
};

at::Tensor to_tensor(const Buffer& b) {
    const c10::ScalarType type = b.dtype == DType::Float32 ? at::kFloat
                               : b.dtype == DType::Int64   ? at::kLong
                               : b.dtype == DType::Int32   ? at::kInt
                               : b.dtype == DType::Float64 ? at::kDouble
                                                           : at::kBool;
    at::Tensor t = at::empty(b.shape, at::TensorOptions().dtype(type));
    if (b.numel() == 0) return t;
    // bool is one byte holding 0 or 1, the same layout as the uint8 vector.
    const void* src = b.dtype == DType::Float32 ? static_cast<const void*>(b.f32.data())
                    : b.dtype == DType::Int64   ? static_cast<const void*>(b.i64.data())
                    : b.dtype == DType::Int32   ? static_cast<const void*>(b.i32.data())
                    : b.dtype == DType::Float64 ? static_cast<const void*>(b.f64.data())
                                                : static_cast<const void*>(b.b8.data());
    std::memcpy(t.data_ptr(), src, static_cast<size_t>(b.nbytes()));
    return t;
}

}  // namespace

std::string build_module(const ProgramParts& parts) {
    try {
        torch::jit::Module module("PgPredictProgram");
        for (const Buffer& b : parts.buffers) module.register_buffer(b.name, to_tensor(b));
        // Read back by runtime::load_program to check batches and size outputs.
        module.register_attribute("num_features", c10::IntType::get(), parts.num_features);
        module.register_attribute("output_width", c10::IntType::get(), parts.output_width);
        module.register_attribute("reads_float64", c10::BoolType::get(), parts.reads_float64);
        for (const auto& [name, bytes] : parts.submodules) {
            std::istringstream in(bytes);
            module.register_module(name, torch::jit::load(in));
        }
        if (parts.from_features) {
            std::string names;
            for (const std::string& b : parts.featurizer_buffers) names += (names.empty() ? "" : ",") + b;
            module.register_attribute("featurizer_source", c10::StringType::get(), parts.featurizer_source);
            module.register_attribute("featurizer_buffers", c10::StringType::get(), names);
        }
        if (!parts.from_features_link.empty())
            module.register_attribute("from_features_link", c10::StringType::get(), parts.from_features_link);
        if (!parts.linear_link.empty())
            module.register_attribute("linear_link", c10::StringType::get(), parts.linear_link);
        if (!parts.one_row_link.empty())
            module.register_attribute("one_row_link", c10::StringType::get(), parts.one_row_link);
        module.define(parts.source, std::make_shared<OpsResolver>());
        std::ostringstream out;
        module.save(out);
        return out.str();
    } catch (const c10::Error& e) {
        fail(ErrorCategory::Internal, std::string("building the TorchScript program failed: ") +
                                          e.what_without_backtrace() + "\nsource:\n" + parts.source);
    } catch (const std::exception& e) {
        fail(ErrorCategory::Internal, std::string("building the TorchScript program failed: ") +
                                          e.what() + "\nsource:\n" + parts.source);
    }
}

}  // namespace pg_predict::compiler
