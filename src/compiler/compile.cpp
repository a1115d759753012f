// compiler::compile: pick the strategy's program parts, add the shared post-processing, and
// hand them to the (only) torch-including file to become a serialized module.
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

std::string compile(const spec::Pipeline& p, Strategy strategy, Output output) {
    const spec::TreeEnsemble& e = p.model;
    check_output(p, output);
    if (e.num_groups < 1)
        fail(ErrorCategory::InvalidModel, "model has " + std::to_string(e.num_groups) + " output groups");
    ProgramParts parts;
    if (output == Output::Contributions) {
        build_contributions(p, parts);
        return build_module(parts);
    }
    if (p.task == spec::Task::Transform) {
        build_transformer(p, parts);
        return build_module(parts);
    }
    // A model other than trees: its file writes the whole forward().
    switch (p.estimator.op) {
        case spec::Op::None:
            break;  // the tree ensemble, below
        case spec::Op::Linear:
            if (output == Output::DecisionFunction && is_svc(p))
                build_svc_decision(p, parts);
            else
                build_linear(p, parts, output, strategy);
            return build_module(parts);
        case spec::Op::TorchScript:
            fail(ErrorCategory::Unsupported,
                 "a TorchScript model's program is its module, wrapped at create_model; it is not "
                 "compiled from the spec (strategies apply to tree models)");
        case spec::Op::Affine: case spec::Op::Impute: case spec::Op::OneHot: case spec::Op::Ordinal: case spec::Op::Elementwise:
        case spec::Op::Threshold: case spec::Op::Clip: case spec::Op::IsMissing: case spec::Op::Normalize: case spec::Op::Project:
        case spec::Op::Bucketize: case spec::Op::Monomials: case spec::Op::Kernel: case spec::Op::Neighbors: case spec::Op::Concat:
        case spec::Op::Power: case spec::Op::Quantile: case spec::Op::Model: case spec::Op::Tensor:
            fail(ErrorCategory::Unsupported,
                 std::string("compile: estimator op \"") + spec::op_name(p.estimator.op) + "\" is not supported");
    }
    if (e.trees.empty()) {
        // Only a base margin: nothing for a strategy to do.
        parts.source = "def margin(self, x: Tensor) -> Tensor:\n"
                       "    return x.new_zeros([x.size(0), " + std::to_string(e.num_groups) +
                       "])\n";
    } else {
        if (e.has_linear_leaves() && strategy != Strategy::TreeTraversal)
            fail(ErrorCategory::InvalidParameter,
                 std::string("strategy '") + strategy_name(strategy) +
                     "' cannot evaluate linear leaves (LightGBM linear_tree): use 'tree_traversal' or 'auto'");
        switch (strategy) {
        case Strategy::Gemm: build_gemm(e, parts); break;
        case Strategy::TreeTraversal: build_tree_traversal(e, parts); break;
        case Strategy::PerfectTreeTraversal: build_perfect_tree_traversal(e, parts); break;
        case Strategy::Native: build_native(e, parts); break;
        case Strategy::Auto:
            fail(ErrorCategory::Internal, "compile: resolve strategy 'auto' with choose_strategy first");
        }
    }
    add_postprocess(p, parts, output);
    return build_module(parts);
}

}  // namespace pg_predict::compiler
