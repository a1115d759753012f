#include "pg_predict/optimizer/unused_inputs.hpp"

#include "pg_predict/optimizer/passes.hpp"

namespace pg_predict::optimizer {

std::vector<int32_t> unused_inputs(const spec::Pipeline& p) {
    Mask live = estimator_needs(p);
    if (!p.steps.empty()) live = steps_liveness(p.steps, input_vocab(p), live).front();
    std::vector<int32_t> unused;
    for (size_t f = 0; f < p.features.size(); f++)
        if (f >= live.size() || !live[f]) unused.push_back(static_cast<int32_t>(f));
    return unused;
}

}  // namespace pg_predict::optimizer
