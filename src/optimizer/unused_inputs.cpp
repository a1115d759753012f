#include "pg_predict/optimizer/unused_inputs.hpp"

namespace pg_predict::optimizer {

std::vector<int32_t> unused_inputs(const spec::Pipeline& p) {
    std::vector<int32_t> unused;
    if (!p.steps.empty() || !p.estimator.op.empty() || !p.text_inputs.empty()) return unused;
    std::vector<bool> used(p.features.size(), false);
    for (const spec::Tree& tree : p.model.trees)
        for (size_t node = 0; node < tree.size(); node++)
            if (!tree.is_leaf(node) && tree.feature[node] >= 0 && (size_t)tree.feature[node] < used.size())
                used[tree.feature[node]] = true;
    for (size_t f = 0; f < used.size(); f++)
        if (!used[f]) unused.push_back((int32_t)f);
    return unused;
}

}  // namespace pg_predict::optimizer
