// Random tree ensembles and inputs for the strategy tests. Thresholds and inputs share a
// coarse grid so that x == threshold happens often (< versus <=), and inputs include NaN
// and ±inf.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::testing {

inline float grid_value(std::mt19937& rng) {
    return 0.25f * static_cast<float>(std::uniform_int_distribution<int>(-8, 8)(rng));
}

struct TreeShape {
    int max_depth = 4;
    double leaf_probability = 0.3;  // chance an internal position stops early (unbalanced)
    bool force_full_depth = true;   // one root→leaf path reaches max_depth
};

inline int grow(spec::Tree& t, std::mt19937& rng, int num_features, const TreeShape& shape, int depth,
                bool on_deep_path) {
    const int node = static_cast<int>(t.left.size());
    t.left.push_back(-1);
    t.right.push_back(-1);
    t.feature.push_back(0);
    t.threshold.push_back(0.0f);
    t.default_left.push_back(0);
    t.value.push_back(0.0f);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const bool must_split = on_deep_path && depth < shape.max_depth;
    if (depth >= shape.max_depth || (!must_split && u(rng) < shape.leaf_probability)) {
        t.value[node] = static_cast<float>(u(rng) * 2.0 - 1.0);
        return node;
    }
    t.feature[node] = std::uniform_int_distribution<int>(0, num_features - 1)(rng);
    t.threshold[node] = grid_value(rng);
    t.default_left[node] = u(rng) < 0.5;
    const bool deep_left = u(rng) < 0.5;
    const int l = grow(t, rng, num_features, shape, depth + 1, on_deep_path && deep_left);
    const int r = grow(t, rng, num_features, shape, depth + 1, on_deep_path && !deep_left);
    t.left[node] = l;
    t.right[node] = r;
    return node;
}

inline spec::Tree random_tree(std::mt19937& rng, int num_features, const TreeShape& shape, int group) {
    spec::Tree t;
    t.group = group;
    grow(t, rng, num_features, shape, 0, shape.force_full_depth);
    return t;
}

inline spec::Pipeline make_pipeline(spec::Task task, spec::PostTransform transform, int num_groups,
                                    int num_features, spec::Comparison cmp) {
    spec::Pipeline p;
    p.source_format = "test";
    p.objective = "test";
    p.task = task;
    p.transform = transform;
    p.model.num_features = num_features;
    p.model.num_groups = num_groups;
    p.model.comparison = cmp;
    for (int g = 0; g < num_groups; ++g) p.model.base_margin.push_back(0.125f * static_cast<float>(g + 1));
    for (int f = 0; f < num_features; ++f) p.features.push_back("f" + std::to_string(f));
    if (task == spec::Task::Classification) {
        const int classes = num_groups == 1 ? 2 : num_groups;
        for (int c = 0; c < classes; ++c) p.classes.push_back(c);
    }
    return p;
}

inline void add_trees(spec::Pipeline& p, std::mt19937& rng, int count, const TreeShape& shape) {
    for (int i = 0; i < count; ++i)
        p.model.trees.push_back(random_tree(rng, p.model.num_features, shape, i % p.model.num_groups));
}

inline std::vector<float> random_inputs(std::mt19937& rng, int64_t rows, int num_features) {
    std::vector<float> x(static_cast<size_t>(rows * num_features));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (float& v : x) {
        const double r = u(rng);
        if (r < 0.4) v = grid_value(rng);
        else if (r < 0.8) v = static_cast<float>(u(rng) * 5.0 - 2.5);
        else if (r < 0.9) v = std::numeric_limits<float>::quiet_NaN();
        else if (r < 0.95) v = std::numeric_limits<float>::infinity();
        else v = -std::numeric_limits<float>::infinity();
    }
    return x;
}

// x with ±Infinity replaced by ±1e6: the server refuses an infinite input, and a pipeline's
// trees refuse a featurized value beyond float32 (kFloat32OverflowMarker), so rows for
// pipelines with featurizers are finite.
inline std::vector<float> finite(std::vector<float> x) {
    for (float& v : x)
        if (std::isinf(v)) v = v > 0 ? 1e6f : -1e6f;
    return x;
}

}  // namespace pg_predict::testing
