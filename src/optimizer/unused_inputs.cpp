#include "pg_predict/optimizer/unused_inputs.hpp"

#include <algorithm>

#include "pg_predict/optimizer/passes.hpp"

namespace pg_predict::optimizer {

std::vector<int32_t> unused_inputs(const spec::Pipeline& p) {
    Mask live = estimator_needs(p);
    if (!p.steps.empty()) live = steps_liveness(p.steps, input_vocab(p), live).front();
    // A vectorizer's slots are written together from one column read at its first slot: all
    // live when one is.
    live.resize(std::max(live.size(), p.features.size()), 0);
    for (const spec::TextVectorizer& v : p.text_vectorizers) {
        bool any = false;
        for (int32_t s : v.slots) any = any || live[static_cast<size_t>(s)];
        for (int32_t s : v.slots) live[static_cast<size_t>(s)] = any;
    }
    std::vector<int32_t> unused;
    for (size_t f = 0; f < p.features.size(); f++)
        if (f >= live.size() || !live[f]) unused.push_back(static_cast<int32_t>(f));
    return unused;
}

}  // namespace pg_predict::optimizer
