// A user's TorchScript module wrapped into a program of the runtime's calling convention
// (forward(x: [N, F] float32) -> [N, output_width] float32, attributes num_features,
// output_width, reads_float64; see module_builder.cpp).
#include <sstream>
#include <string>

#include <torch/script.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"

namespace pg_predict::compiler {

namespace {

[[noreturn]] void bad_module(const std::string& what) {
    fail(ErrorCategory::InvalidModel, "torchscript: " + what);
}

std::string message(const c10::Error& e) { return e.what_without_backtrace(); }

torch::jit::Module load_user_module(std::string_view bytes) {
    try {
        std::istringstream in{std::string(bytes)};
        torch::jit::Module m = torch::jit::load(in, torch::kCPU);
        m.eval();
        return m;
    } catch (const c10::Error& e) {
        bad_module("the bytea value is not a TorchScript module torch.jit.load can read: " + message(e));
    } catch (const std::exception& e) {
        bad_module("the bytea value is not a TorchScript module torch.jit.load can read: " + std::string(e.what()));
    }
}

// Runs the module on a [2, F] batch of zeros and checks what comes back.
void check_output_shape(torch::jit::Module& m, int64_t inputs, int64_t outputs, bool classifier) {
    constexpr int64_t rows = 2;
    c10::IValue result;
    try {
        c10::InferenceMode inference;
        result = m.forward({torch::zeros({rows, inputs}, torch::kFloat32)});
    } catch (const c10::Error& e) {
        bad_module("the module cannot take a float32 [N, " + std::to_string(inputs) + "] tensor (" +
                   std::to_string(inputs) + " features): " + message(e));
    } catch (const std::exception& e) {
        bad_module("the module cannot take a float32 [N, " + std::to_string(inputs) + "] tensor: " + e.what());
    }
    if (!result.isTensor()) bad_module("forward() must return a Tensor, not " + result.tagKind());
    const at::Tensor y = result.toTensor();
    const std::string got = "[" + std::to_string(rows) + ", " + std::to_string(inputs) + "] gives " +
                            c10::str(y.sizes()) + " " + c10::toString(y.scalar_type());
    if (!at::isFloatingType(y.scalar_type())) bad_module("forward() must return floats: " + got);
    const bool fits = classifier ? y.dim() == 2 && y.size(0) == rows && y.size(1) == outputs
                                 : (y.dim() == 1 && y.size(0) == rows) ||
                                       (y.dim() == 2 && y.size(0) == rows && y.size(1) == 1);
    if (!fits)
        bad_module(classifier ? "a classifier with " + std::to_string(outputs) +
                                    " classes must return [N, " + std::to_string(outputs) + "]: " + got
                              : "a regressor must return [N] or [N, 1]: " + got);
}

}  // namespace

std::string wrap_torchscript(std::string_view module_bytes, const spec::Pipeline& p) {
    const int64_t inputs = p.model.num_features;
    const int64_t outputs = p.output_width();
    torch::jit::Module user = load_user_module(module_bytes);
    if (!user.find_method("forward")) bad_module("the module has no forward() method");
    check_output_shape(user, inputs, outputs, p.task == spec::Task::Classification);
    try {
        torch::jit::Module program("PgPredictTorchScript");
        program.register_module("net", user);
        program.register_attribute("num_features", c10::IntType::get(), inputs);
        program.register_attribute("output_width", c10::IntType::get(), outputs);
        program.register_attribute("reads_float64", c10::BoolType::get(), false);
        program.define("def forward(self, x: Tensor) -> Tensor:\n"
                       "    return self.net.forward(x).float().reshape([x.size(0), " +
                       std::to_string(outputs) + "])\n");
        std::ostringstream out;
        program.save(out);
        return out.str();
    } catch (const c10::Error& e) {
        bad_module("forward() must take one Tensor and return a Tensor: " + message(e));
    } catch (const std::exception& e) {  // the TorchScript compiler's ErrorReport
        bad_module("forward() must take one Tensor and return a Tensor: " + std::string(e.what()));
    }
}

}  // namespace pg_predict::compiler
