// Strategy names, the CPU choice (native) and Hummingbird's depth heuristic.
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/strategy.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::compiler {

namespace {
constexpr Strategy kAll[] = {Strategy::Auto, Strategy::Gemm, Strategy::TreeTraversal,
                             Strategy::PerfectTreeTraversal, Strategy::Native};
}

const char* strategy_name(Strategy s) {
    switch (s) {
    case Strategy::Auto: return "auto";
    case Strategy::Gemm: return "gemm";
    case Strategy::TreeTraversal: return "tree_traversal";
    case Strategy::PerfectTreeTraversal: return "perfect_tree_traversal";
    case Strategy::Native: return "native";
    }
    return "unknown";
}

Strategy parse_strategy(const std::string& name) {
    std::string valid;
    for (Strategy s : kAll) {
        if (name == strategy_name(s)) return s;
        valid += valid.empty() ? "" : ", ";
        valid += strategy_name(s);
    }
    fail(ErrorCategory::InvalidParameter,
         "unknown strategy \"" + name + "\"; valid strategies are: " + valid);
}

Strategy choose_strategy(const spec::Pipeline& p) {
    if (p.model.has_linear_leaves()) return Strategy::TreeTraversal;  // the only one that has them
    // CPU build: the native kernel scores every tree ensemble (deep or wide ones through its
    // generic layout). A GPU build would use choose_tensor_strategy for GPU-placed programs.
    return Strategy::Native;
}

Strategy choose_tensor_strategy(const spec::Pipeline& p) {
    if (p.model.has_linear_leaves()) return Strategy::TreeTraversal;
    const int depth = p.model.max_depth();
    if (depth <= 3) return Strategy::Gemm;
    if (depth <= 10) return Strategy::PerfectTreeTraversal;
    return Strategy::TreeTraversal;
}

}  // namespace pg_predict::compiler
