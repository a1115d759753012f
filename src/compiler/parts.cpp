// Program parts: constant buffers and the size guard.
#include <string>
#include <utility>

#include "pg_predict/common/error.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

int64_t Buffer::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

int64_t Buffer::nbytes() const {
    const int64_t width = dtype == DType::Int64 || dtype == DType::Float64 ? 8 : dtype == DType::Bool ? 1 : 4;
    return numel() * width;
}

int64_t ProgramParts::total_bytes() const {
    int64_t total = 0;
    for (const Buffer& b : buffers) total += b.nbytes();
    for (const auto& sub : submodules) total += static_cast<int64_t>(sub.second.size());
    return total;
}

namespace {
template <typename T>
void check_size(const std::string& name, const std::vector<int64_t>& shape, const std::vector<T>& data) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (n != static_cast<int64_t>(data.size()))
        fail(ErrorCategory::Internal, "buffer " + name + ": shape has " + std::to_string(n) +
                                          " elements but data has " + std::to_string(data.size()));
}
}  // namespace

Buffer make_f32(std::string name, std::vector<int64_t> shape, std::vector<float> data) {
    check_size(name, shape, data);
    Buffer b;
    b.name = std::move(name);
    b.dtype = DType::Float32;
    b.shape = std::move(shape);
    b.f32 = std::move(data);
    return b;
}

Buffer make_i64(std::string name, std::vector<int64_t> shape, std::vector<int64_t> data) {
    check_size(name, shape, data);
    Buffer b;
    b.name = std::move(name);
    b.dtype = DType::Int64;
    b.shape = std::move(shape);
    b.i64 = std::move(data);
    return b;
}

Buffer make_i32(std::string name, std::vector<int64_t> shape, std::vector<int32_t> data) {
    check_size(name, shape, data);
    Buffer b;
    b.name = std::move(name);
    b.dtype = DType::Int32;
    b.shape = std::move(shape);
    b.i32 = std::move(data);
    return b;
}

Buffer make_bool(std::string name, std::vector<int64_t> shape, std::vector<uint8_t> data) {
    check_size(name, shape, data);
    Buffer b;
    b.name = std::move(name);
    b.dtype = DType::Bool;
    b.shape = std::move(shape);
    b.b8 = std::move(data);
    return b;
}

Buffer make_f64(std::string name, std::vector<int64_t> shape, std::vector<double> data) {
    check_size(name, shape, data);
    Buffer b;
    b.name = std::move(name);
    b.dtype = DType::Float64;
    b.shape = std::move(shape);
    b.f64 = std::move(data);
    return b;
}

void check_program_bytes(int64_t bytes, Strategy strategy) {
    if (bytes <= kMaxProgramBytes) return;
    std::string msg = std::string("the ") + strategy_name(strategy) + " program for this model would need " +
                      std::to_string(bytes >> 20) + " MiB of constants (limit " +
                      std::to_string(kMaxProgramBytes >> 20) + " MiB)";
    msg += strategy == Strategy::Gemm ? "; GEMM grows with 2^depth per tree, use strategy "
                                        "'native', 'tree_traversal' or 'perfect_tree_traversal'"
         : strategy == Strategy::PerfectTreeTraversal
             ? "; perfect trees grow with 2^depth, use strategy 'native' or 'tree_traversal'"
             : "";
    fail(ErrorCategory::InvalidParameter, msg);
}

}  // namespace pg_predict::compiler
