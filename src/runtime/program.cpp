// The runtime's torch file (with shared_featurizer.cpp): load program bytes, move them to a device, run a batch. Every
// torch/c10 exception becomes pg_predict::Error(Runtime) so src/pg sees one exception type.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <ATen/Parallel.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/kernels/background.hpp"
#include "pg_predict/kernels/bucketize.hpp"
#include "pg_predict/kernels/logistic.hpp"
#include "pg_predict/kernels/thread_pool.hpp"
#include "pg_predict/runtime/api.hpp"
#include "loaded_module.hpp"
#include "program_internal.hpp"

// The legacy fuser's switches (torch/csrc/jit/codegen/fuser/interface.h, exported by
// libtorch_cpu in 1.13 and 2.x; Debian's libtorch-dev does not ship that header).
namespace torch::jit {
TORCH_API void overrideCanFuseOnCPU(bool value);
TORCH_API void overrideCanFuseOnGPU(bool value);
}  // namespace torch::jit

namespace pg_predict::runtime {

namespace {

// An exception while an interrupt is pending is the interrupt's doing (the native kernel stops
// with Error(Cancelled), which the TorchScript interpreter rethrows as a plain runtime_error).
template <typename Body>
auto torch_guard(const char* what, Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const Error& e) {
        if (e.category() != ErrorCategory::Cancelled) check_interrupts();
        throw;
    } catch (const c10::Error& e) {
        check_interrupts();
        fail(ErrorCategory::Runtime, std::string(what) + ": " + e.what_without_backtrace());
    } catch (const std::exception& e) {
        check_interrupts();
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
    // No runtime-generated fused kernels. The legacy executor still hands GPU graphs to the
    // legacy fuser, which compiles CUDA code at the first run: on an H200 (libtorch 2.11) its
    // kernel for the QuantileTransformer/PowerTransformer programs failed with "misaligned
    // address", a sticky error that poisons the CUDA context, and the fused kernel's destructor
    // then aborted the backend at exit. Unfused ops are also the ones the CPU runs, so both
    // devices compute the same operations.
    torch::jit::overrideCanFuseOnCPU(false);
    torch::jit::overrideCanFuseOnGPU(false);
    torch::jit::setTensorExprFuserEnabled(false);
#if defined(__GLIBC__)
    // A model's temporaries are up to a few MB each (featurize chunks, kernel matrices, tree
    // scores), allocated and freed for every op of every batch. glibc serves blocks above its
    // mmap threshold (128 kB at first, raised only as such blocks are freed) with fresh
    // mappings and trims the heap top above twice that, so each op paid page faults on new
    // memory: an RBF SVC (2048 support vectors) scored 20k rows in 2.0-3.0 s in a new
    // backend, and in 0.46 s once an earlier large free had raised the threshold. Fixed
    // thresholds keep such blocks in the heap (a backend may keep up to 64 MB it freed).
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

// The kernel's arrays, the base margin and the link of a program whose forward() (or, after
// its featurizer, from_features()) is the native kernel, the base margin and the link named by
// attribute `link_attr`, reading `width` columns. The buffers belong to the module, which lives
// as long as the Program. False (nothing set) for any other shape.
bool set_up_native(const torch::jit::Module& module, Program& shape, const char* link_attr, int64_t width) {
    const at::Tensor meta = module.attr("native_meta").toTensor(), nodes = module.attr("native_nodes").toTensor(),
                     leaves = module.attr("native_leaves").toTensor(), cuts = module.attr("native_cuts").toTensor(),
                     aux = module.attr("native_aux").toTensor(), base = module.attr("base_margin").toTensor();
    for (const at::Tensor* t : {&meta, &nodes, &leaves, &cuts, &aux, &base})
        if (!t->is_contiguous() || !t->device().is_cpu()) return false;
    if (meta.scalar_type() != at::kLong || nodes.scalar_type() != at::kInt || leaves.scalar_type() != at::kFloat ||
        cuts.scalar_type() != at::kFloat || aux.scalar_type() != at::kInt || base.scalar_type() != at::kFloat)
        return false;
    const kernels::PackedView view = kernels::make_view(
        meta.data_ptr<int64_t>(), meta.numel(), nodes.data_ptr<int32_t>(), nodes.numel(), leaves.data_ptr<float>(),
        leaves.numel(), cuts.data_ptr<float>(), cuts.numel(), aux.data_ptr<int32_t>(), aux.numel());
    if ((width >= 0 && view.num_features != width) || base.numel() != view.num_groups ||
        view.num_groups > kMaxOneRowGroups ||
        !one_row_link(module.attr(link_attr).toStringRef(), view.num_groups, shape.output_width, &shape.link))
        return false;
    shape.native = view;
    shape.native_meta = meta.data_ptr<int64_t>();
    shape.native_meta_size = meta.numel();
    shape.native_lengths[0] = nodes.numel();
    shape.native_lengths[1] = leaves.numel();
    shape.native_lengths[2] = cuts.numel();
    shape.native_lengths[3] = aux.numel();
    shape.native_arrays[0] = nodes.data_ptr<int32_t>();
    shape.native_arrays[1] = leaves.data_ptr<float>();
    shape.native_arrays[2] = cuts.data_ptr<float>();
    shape.native_arrays[3] = aux.data_ptr<int32_t>();
    shape.base_margin = base.data_ptr<float>();
    return true;
}

// Whether any method of the module or its submodules calls a pg_predict:: operator: read once,
// at load, from the methods' graphs.
bool calls_native_ops(const torch::jit::Module& module) {
    for (const torch::jit::Module& m : module.modules())
        for (const torch::jit::Method& method : m.get_methods())
            if (method.graph()->toString(false).find("pg_predict::") != std::string::npos) return true;
    return false;
}

// A featurizer that is exactly one bucketize of the batch, as the compiler's emit_bucketize
// writes it for LightGBM's programs: its edges and counts, viewed in the module's buffers, so
// run_bucketized can run the whole program. False (nothing set) for any other featurizer.
bool set_up_bucketize(const torch::jit::Module& module, Program& shape) {
    if (!shape.native_rest || shape.native.num_groups != 1 || !module.hasattr("featurizer_source")) return false;
    static const std::regex form(
        "def featurize\\(self, x: Tensor\\) -> Tensor:\n"
        "    h = x\\.double\\(\\)\n"
        "    (\\w+) = ops\\.pg_predict\\.bucketize\\(h, self\\.(\\w+), self\\.(\\w+), (True|False)\\)\n"
        "    return \\1\n");
    const std::string source = module.attr("featurizer_source").toStringRef();
    std::smatch m;
    if (!std::regex_match(source, m, form) || !module.hasattr(m[2].str()) || !module.hasattr(m[3].str())) return false;
    const at::Tensor edges = module.attr(m[2].str()).toTensor(), counts = module.attr(m[3].str()).toTensor();
    if (edges.dim() != 2 || counts.dim() != 1 || edges.scalar_type() != at::kDouble ||
        counts.scalar_type() != at::kLong || !edges.is_contiguous() || !counts.is_contiguous() ||
        !edges.device().is_cpu() || !counts.device().is_cpu() || edges.size(0) != shape.num_features ||
        counts.size(0) != shape.num_features || shape.native.num_features != shape.num_features)
        return false;
    const int64_t* n = counts.data_ptr<int64_t>();
    for (int64_t c = 0; c < counts.size(0); ++c)
        if (n[c] < 0 || n[c] > edges.size(1)) return false;
    shape.bucket_edges = edges.data_ptr<double>();
    shape.bucket_counts = n;
    shape.bucket_stride = edges.size(1);
    shape.bucket_right = m[4].str() == "True";
    return true;
}

// A linear model fused into ops.pg_predict.linear_margin with its link alone after it (the
// compiler's "linear_link" attribute): its terms, viewed in the module's buffer and unpacked
// (which checks every column), its intercept and its link, for run_linear. False for any other.
bool set_up_linear(const torch::jit::Module& module, Program& shape) {
    if (!module.hasattr("linear_link") || !module.hasattr("linear_terms") || !module.hasattr("linear_intercept"))
        return false;
    const at::Tensor terms = module.attr("linear_terms").toTensor(), b = module.attr("linear_intercept").toTensor();
    if (terms.dim() != 2 || terms.size(1) != kernels::kLinearTermFields || terms.scalar_type() != at::kDouble ||
        !terms.is_contiguous() || !terms.device().is_cpu() || b.numel() != 1 || b.scalar_type() != at::kDouble ||
        !b.device().is_cpu() ||
        !one_row_link(module.attr("linear_link").toStringRef(), 1, shape.output_width, &shape.link))
        return false;
    shape.linear_packed = terms.data_ptr<double>();
    shape.linear_count = terms.size(0);
    shape.linear_terms = kernels::unpack_linear_terms(shape.linear_packed, shape.linear_count, shape.num_features);
    shape.linear_intercept = b.contiguous().data_ptr<double>()[0];
    return true;
}

// missing_inputs are positions in the rows the native kernel reads (the batch, or its featurized
// columns), which mask_missing_margins reads row by row without further checks: a catalog row
// changed by hand must give an ERROR at load, not a read out of range. (The TorchScript program
// reads them through index_select, which checks.)
void check_missing_inputs(const at::Tensor& m, const Program& shape) {
    if (!shape.one_row && !shape.native_rest) return;  // not read natively (yet)
    const int64_t* inputs = m.data_ptr<int64_t>();
    for (int64_t i = 0; i < m.numel(); ++i)
        if (inputs[i] < 0 || inputs[i] >= shape.native.num_features)
            fail(ErrorCategory::InvalidModel, "the stored program is damaged: missing_inputs names column " +
                                                  std::to_string(inputs[i]) + " of rows of " +
                                                  std::to_string(shape.native.num_features) +
                                                  " columns; register the model again");
}

}  // namespace

void release_free_memory() noexcept {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

LoadedModule* load_module(const void* bytes, size_t length, Program& shape) {
    return torch_guard("loading the model program failed", [&] {
        configure_once();
        std::istringstream in(std::string(static_cast<const char*>(bytes), length));
        torch::jit::Module module = torch::jit::load(in, torch::kCPU);
        module.eval();
        shape.num_features = module.attr("num_features").toInt();
        shape.output_width = static_cast<int>(module.attr("output_width").toInt());
        shape.reads_float64 = module.hasattr("reads_float64") && module.attr("reads_float64").toBool();
        if (module.hasattr("one_row_link")) shape.one_row = set_up_native(module, shape, "one_row_link", shape.num_features);
        if (module.hasattr("missing_inputs")) {
            const at::Tensor m = module.attr("missing_inputs").toTensor().contiguous();
            if (m.scalar_type() != at::kLong || m.dim() != 1)
                fail(ErrorCategory::InvalidModel, "the stored program is damaged: missing_inputs is not a list of input "
                                                  "positions; register the model again");
            shape.missing_inputs.assign(m.data_ptr<int64_t>(), m.data_ptr<int64_t>() + m.numel());
            check_missing_inputs(m, shape);
        }
        shape.native_ops = calls_native_ops(module);
        shape.linear = set_up_linear(module, shape);
        auto* loaded = new LoadedModule(module);
        loaded->featurizer = share_featurizer(loaded->module, &shape.shared_bytes);
        if (loaded->featurizer != nullptr) {
            loaded->featurize = loaded->module.get_method("featurize");
            loaded->from_features = loaded->module.get_method("from_features");
            if (module.hasattr("from_features_link"))
                shape.native_rest = set_up_native(module, shape, "from_features_link", -1);
            shape.bucketizes = set_up_bucketize(module, shape);
        }
        if (module.hasattr("missing_inputs") && (shape.one_row || shape.native_rest))
            check_missing_inputs(module.attr("missing_inputs").toTensor().contiguous(), shape);
        return loaded;
    });
}

void free_module(LoadedModule* m) { delete m; }

const char* cuda_unavailable_reason() {
#ifdef PG_PREDICT_WITH_CUDA
    static int available = -1;  // asked once per backend: the answer does not change
    if (available < 0) {
        try {
            available = torch::cuda::is_available() ? 1 : 0;
        } catch (...) {
            available = 0;
        }
    }
    return available ? nullptr
                     : "no CUDA GPU is visible to this server process (check the driver and "
                       "CUDA_VISIBLE_DEVICES in the server's environment)";
#else
    return "pg_predict was built without CUDA (rebuild with -DPG_PREDICT_CUDA=ON against a "
           "CUDA-enabled libtorch)";
#endif
}

LoadedModule* copy_module_to_device(const LoadedModule* cpu, Device device) {
    if (device == Device::Cpu) fail(ErrorCategory::Internal, "copy_module_to_device: already on the CPU");
    if (const char* why = cuda_unavailable_reason())
        fail(ErrorCategory::Unsupported, std::string("cannot use CUDA: ") + why);
    return torch_guard("moving the model program to the GPU failed", [&] {
        // A round trip through the serialized form gives a module that shares no tensor with
        // the CPU one (Module::to moves parameters in place, clones share them).
        std::stringstream bytes;
        cpu->module.save(bytes);
        const torch::Device cuda(torch::kCUDA, 0);
        torch::jit::Module module = torch::jit::load(bytes, cuda);
        module.to(cuda);
        module.eval();
        auto* loaded = new LoadedModule(module);
        loaded->device = cuda;
        return loaded;
    });
}

namespace {

// The batch buffers handed out by alloc_batch_buffer, by address: a pinned tensor each when
// CUDA is usable (kept alive here), else plain memory.
struct BatchBuffer {
    at::Tensor pinned;
    std::unique_ptr<float[]> plain;
    size_t floats = 0;
};

std::map<const float*, BatchBuffer>& batch_buffers() {
    static auto* buffers = new std::map<const float*, BatchBuffer>;
    return *buffers;
}

// [x, x + n) as a slice of the pinned batch buffer it lies in, or an undefined tensor.
at::Tensor pinned_slice(const float* x, int64_t n) {
    auto& buffers = batch_buffers();
    auto it = buffers.upper_bound(x);
    if (it == buffers.begin()) return at::Tensor();
    --it;
    const BatchBuffer& b = it->second;
    if (!b.pinned.defined() || x + n > it->first + b.floats) return at::Tensor();
    return b.pinned.narrow(0, x - it->first, n);
}

}  // namespace

float* alloc_batch_buffer(size_t floats) {
    return torch_guard("allocating a batch buffer failed", [&] {
        BatchBuffer b;
        b.floats = floats;
        float* data;
        if (cuda_unavailable_reason() == nullptr) {
            b.pinned = torch::zeros({static_cast<int64_t>(std::max<size_t>(floats, 1))},
                                    torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(true));
            data = b.pinned.data_ptr<float>();
        } else {
            b.plain.reset(new float[std::max<size_t>(floats, 1)]());
            data = b.plain.get();
        }
        batch_buffers().emplace(data, std::move(b));
        return data;
    });
}

void free_batch_buffer(float* x) noexcept {
    try {
        batch_buffers().erase(x);
    } catch (...) {
    }
}

namespace {

// A pinned host buffer of at least n floats, reused across batches.
at::Tensor& staging(at::Tensor& buffer, int64_t n) {
    if (!buffer.defined() || buffer.numel() < n)
        buffer = torch::empty({n}, torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(true));
    return buffer;
}

void check_result(const at::Tensor& result, int64_t rows, int width) {
    if (result.dim() != 2 || result.size(0) != rows || result.size(1) != width ||
        result.scalar_type() != at::kFloat)
        fail(ErrorCategory::Runtime, "the model program returned a tensor of shape " +
                                         c10::str(result.sizes()) + " and type " +
                                         c10::toString(result.scalar_type()) + ", expected [" +
                                         std::to_string(rows) + ", " + std::to_string(width) +
                                         "] float");
}

// host x → pinned (unless x is a pinned batch buffer already) → GPU → program → pinned → host
// out. The copy back waits for the GPU, so the pinned input is free again on return.
void run_on_device(LoadedModule* m, const float* x, int64_t rows, int64_t cols, int width, float* out) {
    at::Tensor host = pinned_slice(x, rows * cols);
    if (host.defined()) {
        host = host.view({rows, cols});
    } else {
        at::Tensor& in = staging(m->pinned_in, rows * cols);
        std::memcpy(in.data_ptr<float>(), x, sizeof(float) * rows * cols);
        host = in.narrow(0, 0, rows * cols).view({rows, cols});
    }
    at::Tensor input = torch::empty({rows, cols}, torch::TensorOptions().dtype(torch::kFloat32).device(m->device));
    input.copy_(host, /*non_blocking=*/true);
    at::Tensor result = m->forward({input}).toTensor();
    check_result(result, rows, width);
    at::Tensor& back = staging(m->pinned_out, rows * width);
    back.narrow(0, 0, rows * width).view({rows, width}).copy_(result);
    std::memcpy(out, back.data_ptr<float>(), sizeof(float) * rows * width);
}

}  // namespace

namespace {

void check_batch(const Program* p, int64_t rows, int64_t cols) {
    // A mapped program has no module: only the native paths (program_splits, bucketizes, linear) run it.
    if (p == nullptr || (p->module == nullptr && !(p->mapped && (program_splits(p) || p->bucketizes || p->linear))))
        fail(ErrorCategory::Internal, "run_program: null program");
    if (cols != p->num_features)
        fail(ErrorCategory::InvalidParameter, "the model reads " + std::to_string(p->num_features) +
                                                  " features but the batch has " + std::to_string(cols) +
                                                  " columns");
    if (rows < 0) fail(ErrorCategory::Internal, "run_program: negative row count");
}

// `input` (rows × cols, on the CPU) through the program on the CPU; outputs into `out`.
void run_on_cpu(const Program* p, const at::Tensor& input, int64_t rows, float* out) {
    at::Tensor result = p->module->forward({input}).toTensor();
    check_result(result, rows, p->output_width);
    result = result.contiguous();
    std::memcpy(out, result.data_ptr<float>(), sizeof(float) * rows * p->output_width);
}

// Rows per program call: a batch (pg_predict.batch_size may be 2^20 rows) runs in chunks of
// about kChunkTarget, and an interrupt is checked between them, so cancel and
// statement_timeout are honoured within a few ms whatever the batch size. The rate is learnt
// per program from the chunks it ran; a call costs tens of microseconds, so chunks of this
// length cost nothing measurable.
// Chunks are whole multiples of the native kernel's 64-row block, so every row lands in the same
// block (and its trees are summed in the same order) as without chunks: a chunk length learnt
// from timings must not change a score, not even in its last bit.
constexpr auto kChunkTarget = std::chrono::milliseconds(10);
constexpr int64_t kChunkAlign = 64;
constexpr int64_t kFirstChunkRows = 4 * kChunkAlign;  // before anything is known about the program

int64_t next_chunk_rows(const Program* p) {
    if (p->ns_per_row <= 0) return kFirstChunkRows;
    const double rows = std::chrono::nanoseconds(kChunkTarget).count() / p->ns_per_row;
    const int64_t wanted = rows > 1e12 ? int64_t(1e12) : static_cast<int64_t>(rows);
    return std::max<int64_t>(kChunkAlign, wanted / kChunkAlign * kChunkAlign);
}

void learn_rate(Program* p, int64_t rows, std::chrono::steady_clock::duration took) {
    const double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    const double rate = std::max(ns, 1.0) / static_cast<double>(rows);
    // The newest chunk weighs most: a program slows down when the machine gets busy.
    p->ns_per_row = p->ns_per_row <= 0 ? rate : 0.5 * p->ns_per_row + 0.5 * rate;
}

// Torch's intra-op thread count for a program. A program that calls pg_predict's native ops
// runs them on pg_predict's pool (pool_threads) and its torch ops on one thread: those are a
// few elementwise ops on a chunk, and at 2 threads libgomp's workers spin for milliseconds after
// each, on the cores the pool is scoring on (a LightGBM model at pg_predict.threads = 2 was no
// faster than at 1: a spinning libgomp thread had 42% of the samples).
int torch_threads(const Program* p) { return p->native_ops ? 1 : kernels::pool_threads(); }

// The one door from a batch into the kernel or the program: the batch's checks, then body()
// under the C++ guard, with the thread counts pg_predict.threads asks for and inference mode on.
template <typename Body>
void enter_batch(const Program* p, int64_t rows, int64_t cols, Body&& body) {
    check_batch(p, rows, cols);
    torch_guard("running the model program failed", [&] {
        if (int threads = take_thread_request()) kernels::set_pool_threads(threads);
        if (at::get_num_threads() != torch_threads(p)) at::set_num_threads(torch_threads(p));
        c10::InferenceMode inference;
        body();
    });
}

// A batch through the program in row chunks, with an interrupt check between them.
// run(module, first_row, rows).
template <typename Run>
void run_batch(Program* p, int64_t rows, int64_t cols, Run run) {
    if (rows == 0) return check_batch(p, rows, cols);
    enter_batch(p, rows, cols, [&] {
        for (int64_t start = 0; start < rows;) {
            check_interrupts();
            const int64_t n = std::min(rows - start, next_chunk_rows(p));
            const auto began = std::chrono::steady_clock::now();
            run(p->module, start, n);
            learn_rate(p, n, std::chrono::steady_clock::now() - began);
            start += n;
        }
    });
}

}  // namespace

void name_program_inputs(Program* p, const char* model, const char* const* inputs, int count) noexcept {
    if (p == nullptr || !p->input_names.empty()) return;
    try {
        p->model_name = model != nullptr ? model : "";
        for (int i = 0; i < count; ++i) p->input_names.emplace_back(inputs[i] != nullptr ? inputs[i] : "");
    } catch (...) {  // bad_alloc: the errors name positions instead
    }
}

namespace {

bool is_float32_overflow(const Error& e) {
    return std::string_view(e.what()).find(kFloat32OverflowMarker) != std::string_view::npos;
}

// The ERROR for a batch whose featurized values go beyond float32 where the trees read float32
// (scikit-learn raises there). It names the first such row's input that takes it there: the
// first whose value, set to 0, brings the row's featurized values back in range. Only on the
// error path: the batch is featurized again, then the row once per input.
[[noreturn]] void fail_float32_overflow(const Program* p, const at::Tensor& batch) {
    std::string what = "an input";
    try {
        c10::InferenceMode inference;
        auto featurize = p->module->module.find_method("featurize");
        if (featurize) {
            const at::Tensor x = batch.to(torch::kFloat64);
            auto overflows = [&](const at::Tensor& rows) {
                return torch::isinf((*featurize)({rows.to(batch.scalar_type())}).toTensor().to(torch::kFloat32)).any(1);
            };
            const at::Tensor bad = overflows(x).nonzero();
            if (bad.size(0) > 0) {
                const int64_t r = bad[0][0].item<int64_t>();
                for (int64_t i = 0; i < x.size(1); ++i) {
                    at::Tensor row = x.narrow(0, r, 1).clone();
                    const double value = row[0][i].item<double>();
                    row[0][i] = 0.0;
                    if (overflows(row).item<bool>()) continue;
                    const bool named = i < static_cast<int64_t>(p->input_names.size()) && !p->input_names[i].empty();
                    std::ostringstream text;
                    text.precision(17);
                    text << (named ? "input \"" + p->input_names[i] + "\"" : "input " + std::to_string(i + 1))
                         << " = " << value;
                    what = text.str();
                    break;
                }
            }
        }
    } catch (...) {  // the diagnosis is best effort: the error stands without it
    }
    const std::string model = p->model_name.empty() ? "the model" : "model \"" + p->model_name + "\"";
    fail(ErrorCategory::OutOfRange,
         model + ": " + what + " is too large for float32 after the pipeline's featurizers, and its trees read "
                 "float32 (scikit-learn raises here: \"Input contains infinity or a value too large for "
                 "dtype('float32')\"); bound the column, or pass NULL for a missing value");
}

// body(), with a float32 overflow inside the program reported as fail_float32_overflow says;
// batch() wraps the batch's rows as a tensor (only then); p is read then too (the program whose
// rows were being scored).
template <typename Body, typename Batch>
void naming_float32_overflow(const Program* const& p, Batch&& batch, Body&& body) {
    try {
        body();
    } catch (const Error& e) {
        if (!is_float32_overflow(e)) throw;
        fail_float32_overflow(p, batch());
    }
}

}  // namespace

void run_program(Program* p, const float* x, int64_t rows, int64_t cols, float* out) {
    if (runs_natively(p) && p->linear) return run_linear(p, x, rows, cols, out);
    if (runs_natively(p)) {
        // featurize() begins with x.double(): exact.
        check_batch(p, rows, cols);
        const std::vector<double> x64(x, x + rows * cols);
        return run_bucketized(p, x64.data(), rows, cols, out);
    }
    if (program_splits(p) && rows > 0) {
        // The kernel, then the program's own tail: what the TorchScript program computes, bit
        // for bit (test_overlap.py, one_row_test.cpp), without its interpreter.
        std::vector<float> margins(rows);
        enter_batch(p, rows, cols, [&] {
            kernels::score(p->native, x, rows, cols, margins.data(), kernels::process_isa());
            mask_missing_margins(p, x, rows, cols, margins.data(), 1);
        });
        return run_program_tail(p, margins.data(), rows, out);
    }
    const auto batch = [&] { return torch::from_blob(const_cast<float*>(x), {rows, cols}, torch::kFloat32); };
    naming_float32_overflow(p, batch, [&] {
        run_batch(p, rows, cols, [&](LoadedModule* m, int64_t start, int64_t n) {
            const float* xs = x + start * cols;
            float* outs = out + start * p->output_width;
            if (!m->device.is_cpu()) return run_on_device(m, xs, n, cols, p->output_width, outs);
            // The batch is only read: wrapping it avoids a copy.
            run_on_cpu(p, torch::from_blob(const_cast<float*>(xs), {n, cols}, torch::kFloat32), n, outs);
        });
    });
}

namespace {

// The program's own tail (compiler/postprocess.cpp: link_source) over margins [n, 1], on the
// same float32 ATen ops: [n, output_width], contiguous.
at::Tensor program_tail(const Program* p, const at::Tensor& margins) {
    const at::Tensor base = torch::from_blob(const_cast<float*>(p->base_margin), {1}, torch::kFloat32);
    const at::Tensor m = margins + base;
    at::Tensor r;
    switch (p->link) {
    case spec::PostTransform::Identity: r = m; break;
    case spec::PostTransform::Logistic: {
        // ops.pg_predict.logistic's arithmetic (kernels/logistic.hpp), in place on the sum.
        kernels::logistic(m.data_ptr<float>(), m.numel(), m.data_ptr<float>());
        r = p->output_width == 2 ? torch::cat({1.0 - m, m}, 1) : m;
        break;
    }
    case spec::PostTransform::TwoSided: r = torch::cat({-m, m}, 1); break;
    case spec::PostTransform::Complement: r = torch::cat({1.0 - m, m}, 1); break;
    default: fail(ErrorCategory::Internal, "program_tail: unexpected link");
    }
    return r.contiguous();
}

// Rows per call of the tail: below ATen's parallel grain, and a multiple of the program's
// 64-row chunks, so the link's vectorized blocks fall where they fall in run_program.
constexpr int64_t kLinkRows = 16384;

}  // namespace

void score_undecided_rows(Program* p, const float* x, int64_t rows, int64_t cols, const uint8_t* verdict,
                          float* out) {
    if (!p->one_row || p->native.num_groups != 1) fail(ErrorCategory::Internal, "score_undecided_rows: not a one-row program");
    enter_batch(p, rows, cols, [&] {
        std::vector<float> packed, margins;
        std::vector<int64_t> where;
        for (int64_t start = 0; start < rows; start += kLinkRows) {
            check_interrupts();
            const int64_t n = std::min(kLinkRows, rows - start);
            packed.clear();
            where.clear();
            for (int64_t r = start; r < start + n; ++r) {
                if (verdict[r] != kScreenUndecided) continue;
                packed.insert(packed.end(), x + r * cols, x + (r + 1) * cols);
                where.push_back(r - start);
            }
            if (where.empty()) continue;
            std::vector<float> scored(where.size());
            kernels::score(p->native, packed.data(), static_cast<int64_t>(where.size()), cols, scored.data(),
                           kernels::process_isa());
            mask_missing_margins(p, packed.data(), static_cast<int64_t>(where.size()), cols, scored.data(), 1);
            margins.assign(n, 0.0f);
            for (size_t k = 0; k < where.size(); ++k) margins[where[k]] = scored[k];
            const at::Tensor r = program_tail(p, torch::from_blob(margins.data(), {n, 1}, torch::kFloat32));
            const float* values = r.data_ptr<float>();
            const int width = p->output_width;
            for (int64_t k : where)
                std::memcpy(out + (start + k) * width, values + k * width, sizeof(float) * width);
        }
    });
}

void run_program(Program* p, const double* x, int64_t rows, int64_t cols, float* out) {
    if (runs_natively(p)) return p->linear ? run_linear(p, x, rows, cols, out) : run_bucketized(p, x, rows, cols, out);
    if (p != nullptr && p->mapped && p->module == nullptr) {
        // No module: the rows as float32 (the module's input.to(kFloat32): round to nearest),
        // then the native path every float32 batch of such a program takes.
        check_batch(p, rows, cols);
        std::vector<float> x32(static_cast<size_t>(rows * cols));
        for (size_t i = 0; i < x32.size(); ++i) x32[i] = static_cast<float>(x[i]);
        return run_program(p, x32.data(), rows, cols, out);
    }
    const auto batch = [&] {
        const at::Tensor all = torch::from_blob(const_cast<double*>(x), {rows, cols}, torch::kFloat64);
        return p->reads_float64 ? all : all.to(torch::kFloat32);
    };
    naming_float32_overflow(p, batch, [&] {
        run_batch(p, rows, cols, [&](LoadedModule* m, int64_t start, int64_t n) {
            at::Tensor input = torch::from_blob(const_cast<double*>(x + start * cols), {n, cols}, torch::kFloat64);
            float* outs = out + start * p->output_width;
            if (!p->reads_float64) input = input.to(torch::kFloat32);
            if (m->device.is_cpu()) return run_on_cpu(p, input, n, outs);
            // Float64 batches are not staged through pinned memory: a plain copy to the GPU.
            at::Tensor result = m->forward({input.to(m->device)}).toTensor();
            check_result(result, n, p->output_width);
            at::Tensor host = result.to(torch::kCPU).contiguous();
            std::memcpy(outs, host.data_ptr<float>(), sizeof(float) * n * p->output_width);
        });
    });
}

namespace {
// Rows a native rest scores one at a time (score_row_natively) rather than through ATen's tail.
constexpr int64_t kNativeRowsOneByOne = 32;
}  // namespace

bool native_programs = true;

void set_native_programs(bool on) noexcept { native_programs = on; }

bool runs_natively(const Program* p) noexcept {
    return p != nullptr && (p->bucketizes || p->linear) && p->device == Device::Cpu &&
           (native_programs || p->module == nullptr);
}

namespace {

// The link of a linear program over its float64 margins, as link_source writes it, each value
// then rounded to float32 (the program's r.float()).
void linear_link(const Program* p, const double* m, int64_t rows, float* out) {
    for (int64_t r = 0; r < rows; ++r) apply_link(p->link, 1, p->output_width, m + r, out + r * p->output_width);
}

template <typename T>
void run_linear_rows(Program* p, const T* x, int64_t rows, int64_t cols, float* out) {
    if (!p->linear) fail(ErrorCategory::Internal, "run_linear: not a linear program");
    check_batch(p, rows, cols);
    if (rows <= kNativeRowsOneByOne) {  // plain C++ only, as run_one_row: nothing of torch's is touched
        double m[kNativeRowsOneByOne];
        kernels::linear_margin(x, rows, cols, p->linear_terms, p->linear_intercept, m);
        return linear_link(p, m, rows, out);
    }
    enter_batch(p, rows, cols, [&] {
        std::vector<double> m(static_cast<size_t>(std::min(rows, kLinkRows)));
        for (int64_t start = 0; start < rows; start += kLinkRows) {
            check_interrupts();
            const int64_t n = std::min(kLinkRows, rows - start);
            kernels::linear_margin(x + start * cols, n, cols, p->linear_terms, p->linear_intercept, m.data());
            linear_link(p, m.data(), n, out + start * p->output_width);
        }
    });
}

}  // namespace

void run_linear(Program* p, const float* x, int64_t rows, int64_t cols, float* out) {
    run_linear_rows(p, x, rows, cols, out);
}

void run_linear(Program* p, const double* x, int64_t rows, int64_t cols, float* out) {
    run_linear_rows(p, x, rows, cols, out);
}

void run_bucketized(Program* p, const double* x, int64_t rows, int64_t cols, float* out) {
    if (!p->bucketizes) fail(ErrorCategory::Internal, "run_bucketized: the program does not bucketize");
    if (rows <= kNativeRowsOneByOne) {
        // A few rows (a one-row statement's): plain C++ only, as run_one_row; nothing of torch's
        // is touched (its first use in a backend dirties megabytes: thread pools, dispatch tables).
        check_batch(p, rows, cols);
        constexpr int64_t kStackColumns = 256;  // a row of most models, without allocating
        double z[kStackColumns];
        float z32[kStackColumns];
        std::vector<double> wide_z;
        std::vector<float> wide_z32;
        double* zs = z;
        float* z32s = z32;
        if (cols > kStackColumns) {
            wide_z.resize(static_cast<size_t>(cols));
            wide_z32.resize(static_cast<size_t>(cols));
            zs = wide_z.data();
            z32s = wide_z32.data();
        }
        for (int64_t r = 0; r < rows; ++r) {
            kernels::bucketize(x + r * cols, 1, cols, p->bucket_edges, p->bucket_stride, p->bucket_counts,
                               p->bucket_right, zs, kernels::process_isa());
            for (int64_t i = 0; i < cols; ++i) z32s[i] = static_cast<float>(zs[i]);  // from_features' z.float()
            score_row_natively(p, z32s, out + r * p->output_width);
        }
        return;
    }
    enter_batch(p, rows, cols, [&] {
        const int width = p->output_width;
        std::vector<double> z;
        std::vector<float> z32, margins;
        // In runs of kLinkRows (a multiple of the kernel's 64-row blocks, as the interpreter's
        // chunks are): each row meets the same block and the same tail either way.
        for (int64_t start = 0; start < rows; start += kLinkRows) {
            check_interrupts();
            const int64_t n = std::min(kLinkRows, rows - start);
            z.resize(static_cast<size_t>(n * cols));
            z32.resize(z.size());
            kernels::bucketize(x + start * cols, n, cols, p->bucket_edges, p->bucket_stride, p->bucket_counts,
                               p->bucket_right, z.data(), kernels::process_isa());
            for (size_t i = 0; i < z.size(); ++i) z32[i] = static_cast<float>(z[i]);  // from_features' z.float()
            float* o = out + start * width;
            margins.resize(static_cast<size_t>(n));
            kernels::score(p->native, z32.data(), n, cols, margins.data(), kernels::process_isa());
            mask_missing_margins(p, z32.data(), n, cols, margins.data(), 1);
            const at::Tensor r = program_tail(p, torch::from_blob(margins.data(), {n, 1}, torch::kFloat32));
            std::memcpy(o, r.data_ptr<float>(), sizeof(float) * n * width);
        }
    });
}

const void* program_featurizer(const Program* p) noexcept {
    return p != nullptr && p->module != nullptr && p->module->device.is_cpu() ? p->module->featurizer : nullptr;
}

void run_sharing_featurizer(Program* const* programs, const int64_t* rows, size_t count, const double* x,
                            int64_t cols, float* out) {
    if (count == 0) return;
    int64_t total = 0;
    for (size_t i = 0; i < count; ++i) {
        check_batch(programs[i], rows[i], cols);
        if (program_featurizer(programs[i]) == nullptr || program_featurizer(programs[i]) != program_featurizer(programs[0]))
            fail(ErrorCategory::Internal, "run_sharing_featurizer: the programs do not share their featurizer");
        total += rows[i];
    }
    // Which program's rows are being scored: a float32 overflow names that program's input.
    const Program* scoring = programs[0];
    int64_t first = 0, scoring_rows = total;
    const auto batch = [&] {
        return torch::from_blob(const_cast<double*>(x + first * cols), {scoring_rows, cols}, torch::kFloat64);
    };
    naming_float32_overflow(scoring, batch, [&] { enter_batch(programs[0], total, cols, [&] {
        const at::Tensor input = torch::from_blob(const_cast<double*>(x), {total, cols}, torch::kFloat64);
        const at::Tensor z = (*programs[0]->module->featurize)({input}).toTensor();
        at::Tensor z32;  // the featurized rows as the trees read them, for native rests
        for (size_t i = 0; i < count; ++i) {
            check_interrupts();
            const Program* p = programs[i];
            const int64_t n = rows[i], width = p->output_width;
            scoring = p;
            scoring_rows = n;
            if (p->native_rest && p->native.num_features == z.size(1)) {
                // from_features() without the interpreter: the rows as float32 (its z.float()),
                // the kernel, the base margin and the link; a few rows one at a time.
                if (!z32.defined()) z32 = z.to(torch::kFloat32).contiguous();
                if (torch::isinf(z32.narrow(0, first, n)).any().item<bool>())  // from_features() raises so
                    fail(ErrorCategory::OutOfRange, kFloat32OverflowMarker);
                const float* zs = z32.data_ptr<float>() + first * z32.size(1);
                // (program_tail takes one margin column: other links go row by row too.)
                if (n <= kNativeRowsOneByOne || p->native.num_groups != 1) {
                    for (int64_t r = 0; r < n; ++r) score_row_natively(p, zs + r * z32.size(1), out + r * width);
                } else {
                    std::vector<float> margins(n);
                    kernels::score(p->native, zs, n, z32.size(1), margins.data(), kernels::process_isa());
                    mask_missing_margins(p, zs, n, z32.size(1), margins.data(), 1);
                    const at::Tensor r = program_tail(p, torch::from_blob(margins.data(), {n, 1}, torch::kFloat32));
                    std::memcpy(out, r.data_ptr<float>(), sizeof(float) * n * width);
                }
            } else {
                at::Tensor result = (*p->module->from_features)({z.narrow(0, first, n)}).toTensor();
                check_result(result, n, width);
                result = result.contiguous();
                std::memcpy(out, result.data_ptr<float>(), sizeof(float) * n * width);
            }
            out += n * width;
            first += n;
        }
    }); });
}

namespace {
double background_kernel_ms = 0.0;  // written by the one background job, read after its end
}

bool program_splits(const Program* p) noexcept {
    return program_scores_one_row(p) && p->native.num_groups == 1 && p->device == Device::Cpu && !p->reads_float64;
}

bool start_background_kernel(const Program* p, const float* x, int64_t rows, int64_t cols, float* margins) {
    if (!program_splits(p)) fail(ErrorCategory::Internal, "start_background_kernel: the program does not split");
    int threads = 1;
    enter_batch(p, rows, cols, [&] { threads = kernels::pool_threads(); });
    // Copies: the job only reads the program's packed buffers, which the caller's hold on the
    // program keeps alive, and touches nothing of torch's.
    const kernels::PackedView view = p->native;
    const kernels::Isa isa = kernels::process_isa();
    return kernels::start_background(
        [p, view, x, rows, cols, margins, isa] {
            const auto began = std::chrono::steady_clock::now();
            kernels::score(view, x, rows, cols, margins, isa);
            mask_missing_margins(p, x, rows, cols, margins, 1);  // reads p->missing_inputs only
            background_kernel_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
        },
        threads - 1);
}

double finish_background_kernel() {
    kernels::finish_background();
    return background_kernel_ms;  // the job wrote it before its end, which the wait saw
}

void abandon_background_kernel() noexcept { kernels::abandon_background(); }

void run_program_tail(Program* p, float* margins, int64_t rows, float* out) {
    if (!program_splits(p)) fail(ErrorCategory::Internal, "run_program_tail: the program does not split");
    torch_guard("running the model program failed", [&] {
        c10::InferenceMode inference;
        const int width = p->output_width;
        for (int64_t start = 0; start < rows; start += kLinkRows) {
            const int64_t n = std::min(kLinkRows, rows - start);
            const at::Tensor r = program_tail(p, torch::from_blob(margins + start, {n, 1}, torch::kFloat32));
            std::memcpy(out + start * width, r.data_ptr<float>(), sizeof(float) * n * width);
        }
    });
}

}  // namespace pg_predict::runtime
