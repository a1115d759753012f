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
};

const char* strategy_name(Strategy);           // "gemm", "tree_traversal", ...
Strategy parse_strategy(const std::string&);   // throws Error(InvalidParameter)

// Hummingbird's heuristic: depth ≤ 3 → GEMM, ≤ 10 → PerfectTreeTraversal, else TreeTraversal.
Strategy choose_strategy(const spec::Pipeline&);

}  // namespace pg_predict::compiler
