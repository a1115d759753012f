// The runtime's only torch-including file: load program bytes and run a batch. Every
// torch/c10 exception becomes pg_predict::Error(Runtime) so src/pg sees one exception type.
#include <cstring>
#include <sstream>
#include <string>

#include <ATen/Parallel.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/runtime/api.hpp"
#include "program_internal.hpp"

namespace pg_predict::runtime {

struct LoadedModule {
    torch::jit::Module module;
    torch::jit::Method forward;
};

namespace {

template <typename Body>
auto torch_guard(const char* what, Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const Error&) {
        throw;
    } catch (const c10::Error& e) {
        fail(ErrorCategory::Runtime, std::string(what) + ": " + e.what_without_backtrace());
    } catch (const std::exception& e) {
        fail(ErrorCategory::Runtime, std::string(what) + ": " + e.what());
    }
}

void configure_once() {
    static bool done = false;
    if (done) return;
    done = true;
    // The profiling executor re-optimizes the graph during the first runs and again for new
    // shapes (every last, shorter batch of a scan); our programs are a few big ops, which
    // gain nothing from fusion. The plain executor runs them at once.
    torch::jit::getProfilingMode() = false;
    torch::jit::getExecutorMode() = false;
}

}  // namespace

LoadedModule* load_module(const void* bytes, size_t length, int64_t& num_features, int& output_width) {
    return torch_guard("loading the model program failed", [&] {
        configure_once();
        std::istringstream in(std::string(static_cast<const char*>(bytes), length));
        torch::jit::Module module = torch::jit::load(in, torch::kCPU);
        module.eval();
        num_features = module.attr("num_features").toInt();
        output_width = static_cast<int>(module.attr("output_width").toInt());
        auto* loaded = new LoadedModule{module, module.get_method("forward")};
        return loaded;
    });
}

void free_module(LoadedModule* m) { delete m; }

void run_program(Program* p, const float* x, int64_t rows, int64_t cols, float* out) {
    if (p == nullptr || p->module == nullptr) fail(ErrorCategory::Internal, "run_program: null program");
    if (cols != p->num_features)
        fail(ErrorCategory::InvalidParameter, "the model reads " + std::to_string(p->num_features) +
                                                  " features but the batch has " + std::to_string(cols) +
                                                  " columns");
    if (rows < 0) fail(ErrorCategory::Internal, "run_program: negative row count");
    if (rows == 0) return;
    torch_guard("running the model program failed", [&] {
        if (int threads = take_thread_request()) at::set_num_threads(threads);
        c10::InferenceMode inference;
        // The batch is only read: wrapping it avoids a copy.
        at::Tensor input = torch::from_blob(const_cast<float*>(x), {rows, cols}, torch::kFloat32);
        at::Tensor result = p->module->forward({input}).toTensor();
        if (result.dim() != 2 || result.size(0) != rows || result.size(1) != p->output_width ||
            result.scalar_type() != at::kFloat)
            fail(ErrorCategory::Runtime, "the model program returned a tensor of shape " +
                                             c10::str(result.sizes()) + " and type " +
                                             c10::toString(result.scalar_type()) + ", expected [" +
                                             std::to_string(rows) + ", " +
                                             std::to_string(p->output_width) + "] float");
        result = result.contiguous();
        std::memcpy(out, result.data_ptr<float>(), sizeof(float) * rows * p->output_width);
    });
}

}  // namespace pg_predict::runtime
