// How a tree ensemble is turned into tensor operations (Hummingbird, OSDI'20 §4.1).
#pragma once

#include <string>

namespace pg_predict::spec { struct Pipeline; }

namespace pg_predict::compiler {

enum class Strategy {
    Auto,                   // choose by the depth heuristic
    Gemm,                   // three matrix products per tree batch; shallow trees
    TreeTraversal,          // gather per level through explicit child pointers; any depth
    PerfectTreeTraversal,   // trees padded to perfect ones, children computed; depth ≤ ~10
    Native,                 // the native kernel (kernels/tree_ensemble.hpp) as one TorchScript
                            // op over the packed model kept in the program's buffers; any depth
};

const char* strategy_name(Strategy);           // "gemm", "tree_traversal", ..., "native"
Strategy parse_strategy(const std::string&);   // throws Error(InvalidParameter)

// What "auto" resolves to. This is a CPU-only build: the native kernel beats every tensor
// strategy on the CPU for any tree ensemble (docs/design.md, platform facts), so it is always Native.
Strategy choose_strategy(const spec::Pipeline&);

// Hummingbird's heuristic over the tensor strategies: depth ≤ 3 → GEMM, ≤ 10 →
// PerfectTreeTraversal, else TreeTraversal. What the GPU build will choose for programs placed
// on a GPU, where the native kernel (CPU only) does not run.
Strategy choose_tensor_strategy(const spec::Pipeline&);

}  // namespace pg_predict::compiler
