// compiler::compile: pick the strategy's program parts, add the shared post-processing, and
// hand them to the (only) torch-including file to become a serialized module.
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

std::string compile(const spec::Pipeline& p, Strategy strategy) {
    const spec::TreeEnsemble& e = p.model;
    if (e.num_groups < 1)
        fail(ErrorCategory::InvalidModel, "model has " + std::to_string(e.num_groups) + " output groups");
    ProgramParts parts;
    if (!p.estimator.op.empty()) {
        // A model other than trees: its file writes the whole forward().
        if (p.estimator.op == "torchscript")
            fail(ErrorCategory::Unsupported,
                 "a TorchScript model's program is its module, wrapped at create_model; it is not "
                 "compiled from the spec (strategies apply to tree models)");
        if (p.estimator.op != "linear")
            fail(ErrorCategory::Unsupported, "compile: estimator op \"" + p.estimator.op + "\" is not supported");
        build_linear(p, parts);
        return build_module(parts);
    }
    if (e.trees.empty()) {
        // Only a base margin: nothing for a strategy to do.
        parts.source = "def margin(self, x: Tensor) -> Tensor:\n"
                       "    return x.new_zeros([x.size(0), " + std::to_string(e.num_groups) +
                       "])\n";
    } else {
        switch (strategy) {
        case Strategy::Gemm: build_gemm(e, parts); break;
        case Strategy::TreeTraversal: build_tree_traversal(e, parts); break;
        case Strategy::PerfectTreeTraversal: build_perfect_tree_traversal(e, parts); break;
        case Strategy::Native: build_native(e, parts); break;
        case Strategy::Auto:
            fail(ErrorCategory::Internal, "compile: resolve strategy 'auto' with choose_strategy first");
        }
    }
    add_postprocess(p, parts);
    return build_module(parts);
}

}  // namespace pg_predict::compiler
