// Program parts: constant buffers (one make_buffer<T> for every element type) and the size guard.
#include <string>
#include <type_traits>
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

template <typename T>
Buffer make_buffer(std::string name, std::vector<int64_t> shape, std::vector<T> data) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, uint8_t> || std::is_same_v<T, double>);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (n != static_cast<int64_t>(data.size()))
        fail(ErrorCategory::Internal, "buffer " + name + ": shape has " + std::to_string(n) +
                                          " elements but data has " + std::to_string(data.size()));
    Buffer b;
    b.name = std::move(name);
    b.shape = std::move(shape);
    // The dtype, and the one data vector that matches it.
    if constexpr (std::is_same_v<T, float>) b.dtype = DType::Float32, b.f32 = std::move(data);
    else if constexpr (std::is_same_v<T, int64_t>) b.dtype = DType::Int64, b.i64 = std::move(data);
    else if constexpr (std::is_same_v<T, int32_t>) b.dtype = DType::Int32, b.i32 = std::move(data);
    else if constexpr (std::is_same_v<T, uint8_t>) b.dtype = DType::Bool, b.b8 = std::move(data);
    else b.dtype = DType::Float64, b.f64 = std::move(data);
    return b;
}

template Buffer make_buffer(std::string, std::vector<int64_t>, std::vector<float>);
template Buffer make_buffer(std::string, std::vector<int64_t>, std::vector<int64_t>);
template Buffer make_buffer(std::string, std::vector<int64_t>, std::vector<int32_t>);
template Buffer make_buffer(std::string, std::vector<int64_t>, std::vector<uint8_t>);
template Buffer make_buffer(std::string, std::vector<int64_t>, std::vector<double>);

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
