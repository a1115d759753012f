#include "pg_predict/kernels/tree_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace pg_predict::kernels {
namespace {

constexpr int64_t kScreenRows = 4096;  // rows screened together: their buffers stay in L2

struct TreeRange {
    int64_t index;  // perfect: block * kLanes + lane; generic: tree
    float min, max;
};

// Trees by leaf spread, largest first; trees whose leaves are all zero (the perfect layout's
// padding) are dropped: they add nothing to any row.
void sort_by_spread(std::vector<TreeRange>& trees) {
    trees.erase(std::remove_if(trees.begin(), trees.end(),
                               [](const TreeRange& t) { return t.min == 0.0f && t.max == 0.0f; }),
                trees.end());
    std::stable_sort(trees.begin(), trees.end(), [](const TreeRange& a, const TreeRange& b) {
        return double(a.max) - a.min > double(b.max) - b.min;
    });
}

// Stage ends (in units): 2, 4, 8, ... units, until about half of them; at least one stage.
std::vector<int64_t> stage_ends(int64_t units) {
    std::vector<int64_t> ends;
    for (int64_t end = std::min<int64_t>(2, units); end > 0; end *= 2) {
        ends.push_back(std::min(end, units));
        if (2 * end >= units) break;
    }
    return ends;
}

std::vector<TreeRange> perfect_trees(const PackedView& v) {
    const int64_t leaf_words = int64_t(1) << v.depth;
    std::vector<TreeRange> trees;
    for (int64_t b = 0; b < v.units; ++b)
        for (int lane = 0; lane < kLanes; ++lane) {
            const float* l = v.leaves + (b * kLanes + lane) * leaf_words;
            const auto [lo, hi] = std::minmax_element(l, l + leaf_words);
            trees.push_back({b * kLanes + lane, *lo, *hi});
        }
    return trees;
}

void stage_perfect(const PackedView& v, StagedEnsemble& s, const std::vector<TreeRange>& trees) {
    const int D = v.depth;
    const int64_t node_words = kLanes * ((int64_t(1) << D) - 1), leaf_words = int64_t(kLanes) << D;
    const int64_t units = (static_cast<int64_t>(trees.size()) + kLanes - 1) / kLanes;
    PackedEnsemble& p = s.packed;
    p.meta = {kFormatVersion, static_cast<int64_t>(Layout::Perfect), v.num_features, 1, v.less_equal ? 1 : 0,
              D, units};
    p.nodes.assign(units * node_words, 0);  // padding lanes: any path, leaves 0
    p.leaves.assign(units * leaf_words, 0.0f);
    p.cuts.assign(v.cuts, v.cuts + v.num_cuts);
    p.aux.assign(v.aux, v.aux + 2 * v.num_features + 1);
    p.aux.resize(p.aux.size() + units, 0);
    for (size_t k = 0; k < trees.size(); ++k) {
        const int64_t from_block = trees[k].index / kLanes, from_lane = trees[k].index % kLanes;
        const int64_t to_block = k / kLanes, to_lane = k % kLanes;
        for (int l = 0; l < D; ++l) {
            const int64_t level = kLanes * ((int64_t(1) << l) - 1), width = int64_t(1) << l;
            std::memcpy(&p.nodes[to_block * node_words + level + to_lane * width],
                        v.nodes + from_block * node_words + level + from_lane * width, sizeof(int32_t) * width);
        }
        std::memcpy(&p.leaves[to_block * leaf_words + to_lane * (int64_t(1) << D)],
                    v.leaves + from_block * leaf_words + from_lane * (int64_t(1) << D), sizeof(float) << D);
    }
    const PackedView all = make_view(p);
    int64_t begin = 0;
    for (int64_t end : stage_ends(units)) {
        PackedView stage = all;
        stage.units = end - begin;
        stage.nodes = all.nodes + begin * node_words;
        stage.num_nodes = stage.units * node_words;
        stage.leaves = all.leaves + begin * leaf_words;
        stage.num_leaves = stage.units * leaf_words;
        stage.num_aux = 2 * int64_t(v.num_features) + 1 + stage.units;
        s.stages.push_back(stage);
        s.stage_trees.push_back(std::min<int64_t>(end * kLanes, trees.size()) - begin * kLanes);
        begin = end;
    }
}

std::vector<TreeRange> generic_trees(const PackedView& v) {
    std::vector<TreeRange> trees;
    std::vector<int64_t> seen(v.num_leaves, -1), stack;
    for (int64_t t = 0; t < v.units; ++t) {
        float lo = INFINITY, hi = -INFINITY;
        stack.assign(1, v.tree_root()[t]);
        while (!stack.empty()) {
            const int64_t n = stack.back();
            stack.pop_back();
            if (seen[n] == t) continue;
            seen[n] = t;
            const int32_t* w = v.nodes + 4 * n;
            if (w[2] < 0) {
                lo = std::min(lo, v.leaves[n]);
                hi = std::max(hi, v.leaves[n]);
            } else {
                stack.push_back(w[2]);
                stack.push_back(w[3]);
            }
        }
        trees.push_back({t, lo, hi});
    }
    return trees;
}

void stage_generic(const PackedView& v, StagedEnsemble& s, const std::vector<TreeRange>& trees) {
    const int64_t count = static_cast<int64_t>(trees.size());
    // Units are trees here: stages of 32, 64, ... trees, as the perfect layout's blocks.
    int64_t begin = 0;
    for (int64_t end : stage_ends((count + kLanes - 1) / kLanes)) {
        end = std::min(end * kLanes, count);
        std::vector<int32_t> aux;
        for (int64_t k = begin; k < end; ++k) aux.push_back(v.tree_root()[trees[k].index]);
        aux.resize(2 * (end - begin), 0);  // one group
        s.stage_aux.push_back(std::move(aux));
        begin = end;
    }
    for (const auto& aux : s.stage_aux) {
        PackedView stage = v;
        stage.num_groups = 1;
        stage.units = static_cast<int64_t>(aux.size()) / 2;
        stage.aux = aux.data();
        stage.num_aux = static_cast<int64_t>(aux.size());
        s.stages.push_back(stage);
        s.stage_trees.push_back(stage.units);
    }
}

}  // namespace

bool can_stage(const PackedView& v) { return v.num_groups == 1 && v.units > 0; }

StagedEnsemble stage(const PackedView& bitvector_or_other) {
    // Stages are subsets of trees: the bitvector layout's are staged on its generic part (the
    // explicit-node walk, as before that layout existed).
    const PackedView v = generic_part(bitvector_or_other);
    StagedEnsemble s;
    std::vector<TreeRange> trees = v.layout == Layout::Perfect ? perfect_trees(v) : generic_trees(v);
    sort_by_spread(trees);
    s.trees = static_cast<int64_t>(trees.size());
    if (trees.empty()) return s;  // every row's margin is 0: the bounds decide at once
    if (v.layout == Layout::Perfect)
        stage_perfect(v, s, trees);
    else
        stage_generic(v, s, trees);
    // Bounds after each stage, from the trees after it (in double: exact enough for sums of
    // float32 leaves, and the allowance below covers the rest).
    int64_t done = 0;
    double abs_sum = 0;
    for (const TreeRange& t : trees) abs_sum += std::max(std::fabs(double(t.min)), std::fabs(double(t.max)));
    for (int64_t n : s.stage_trees) {
        done += n;
        double lo = 0, hi = 0;
        for (size_t k = done; k < trees.size(); ++k) lo += trees[k].min, hi += trees[k].max;
        s.remaining_min.push_back(lo);
        s.remaining_max.push_back(hi);
    }
    // Any float32 summation of n terms is within (n - 1)·2^-24·Σ|term| of the real sum; the
    // kernel's full sum and the screen's partial sums each are, hence twice, with a margin.
    s.rounding = 2.02 * double(s.trees + 1) * std::ldexp(1.0, -24) * abs_sum + 1e-30;
    return s;
}

void screen(const StagedEnsemble& s, const float* x, int64_t rows, int64_t cols, Interval outside_of,
            Interval inside_of, uint8_t* verdict, ScreenCounts* counts) {
    counts->rows += rows;
    if (s.stages.empty()) {  // no trees: the margin is 0
        const uint8_t v = 0.0 < outside_of.lower || 0.0 > outside_of.upper                ? kOutside
                          : 0.0 >= inside_of.lower && 0.0 <= inside_of.upper ? kInside
                                                                                : kUndecided;
        std::fill(verdict, verdict + rows, v);
        return;
    }
    const Isa isa = process_isa();
    std::vector<float> compact, margins;
    std::vector<double> partial;
    std::vector<int64_t> active, next;
    for (int64_t first = 0; first < rows; first += kScreenRows) {
        const int64_t n = std::min(kScreenRows, rows - first);
        const float* xs = x + first * cols;
        active.resize(n);
        std::iota(active.begin(), active.end(), int64_t(0));
        partial.assign(n, 0.0);
        margins.resize(n);
        compact.resize(n * cols);
        const float* stage_x = xs;  // the active rows' features, in order
        int64_t walked = 0;         // trees of the stages so far
        for (size_t st = 0; st < s.stages.size() && !active.empty(); ++st) {
            walked += s.stage_trees[st];
            const int64_t live = static_cast<int64_t>(active.size());
            score(s.stages[st], stage_x, live, cols, margins.data(), isa);
            counts->tree_visits += live * s.stage_trees[st];
            counts->stage_rows += live;
            const bool last = st + 1 == s.stages.size();
            next.clear();
            for (int64_t k = 0; k < live; ++k) {
                const int64_t r = active[k];
                partial[r] += margins[k];
                const double lo = partial[r] + s.remaining_min[st] - s.rounding,
                             hi = partial[r] + s.remaining_max[st] + s.rounding;
                uint8_t v = kUndecided;
                if (std::isfinite(lo) && std::isfinite(hi)) {
                    if (hi < outside_of.lower || lo > outside_of.upper)
                        v = kOutside;
                    else if (lo >= inside_of.lower && hi <= inside_of.upper)
                        v = kInside;
                }
                verdict[first + r] = v;
                if (v == kUndecided && !last) {
                    // Compact the row for the next stage (stage_x may be `compact` itself: the
                    // destination never passes the source).
                    if (stage_x + k * cols != compact.data() + next.size() * cols)
                        std::memmove(compact.data() + next.size() * cols, stage_x + k * cols, sizeof(float) * cols);
                    next.push_back(r);
                }
                counts->outside += v == kOutside;
                counts->inside += v == kInside;
                counts->early += v != kUndecided && walked < s.trees;
            }
            active.swap(next);
            stage_x = compact.data();
        }
    }
}

}  // namespace pg_predict::kernels
