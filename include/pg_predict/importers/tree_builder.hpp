// What every tree-ensemble importer needs, whatever its format: the objective tables (a
// library's objective or loss name -> task, transform of the margins, link of the base score),
// thresholds moved from double to the float32 the program compares in, and one checked way
// from a format's node arrays to a spec::Tree.
//
// Errors name `where`, the format and path of the tree ("xgboost: learner.gradient_booster
// .model.trees[3]"): an InvalidModel error reads "<where>: node 5 has exactly one child".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::importers {

// --- objectives -------------------------------------------------------------------------------

// How a base score stored in output space becomes a margin (XGBoost's ProbToMargin).
enum class Link { Identity, Logit, Log };

// One objective (loss) of a tree library.
struct Objective {
    const char* name;
    spec::Task task;
    spec::PostTransform transform;  // applied to the margins
    Link link;                      // of the base score
    bool multiclass;                // one margin per class (num_class groups)
};

// XGBoost's objectives (checked against xgboost 1.7.4).
const std::vector<Objective>& xgboost_objectives();
// scikit-learn's losses of (Hist)GradientBoosting classifiers and regressors. A classifier's
// entry gives its two-class transform; with more than two classes its loss is a softmax over
// one margin per class (multiclass says whether it allows that).
const std::vector<Objective>& sklearn_gradient_boosting_losses(bool classifier);
const std::vector<Objective>& sklearn_hist_gradient_boosting_losses(bool classifier);

// The entry of `table` named `name`; throws Error(Unsupported) "<what> "name" is not supported;
// supported: a, b, ..." otherwise (`what`: e.g. "XGBoost objective").
const Objective& find_objective(const std::vector<Objective>& table, const std::string& name,
                                const std::string& what);
// "a, b, c": the names of a table, for messages.
std::string objective_names(const std::vector<Objective>& table);

// The margin of base score p under `link`, in float32 as XGBoost computes it; throws
// Error(InvalidModel) naming `where` when p is outside the link's domain.
float base_score_to_margin(float p, Link link, const std::string& where);

// --- thresholds -------------------------------------------------------------------------------

// The largest float32 not above t (NaN stays NaN; above FLT_MAX gives FLT_MAX, below -FLT_MAX
// gives -inf). For every float32 x: x <= t  <=>  x <= round_down_to_float(t).
float round_down_to_float(double t);
// The smallest float32 not below t. For every float32 x: x < t  <=>  x < round_up_to_float(t).
float round_up_to_float(double t);
// A double threshold as the float32 one that splits every float32 input the same way under
// `comparison` (round down for <=, up for <).
float float_threshold(double t, spec::Comparison comparison);
// The largest float32 strictly below t (finite t).
float float_below(double t);

// --- tree structure ---------------------------------------------------------------------------

// A tree as formats write it: parallel arrays over nodes, node 0 the root; a leaf has
// left = right = -1 and its value in `value`; at a split `value` is ignored, and at a leaf
// feature / threshold / default_left are.
struct NodeArrays {
    std::vector<int32_t> left;
    std::vector<int32_t> right;
    std::vector<int32_t> feature;
    std::vector<float> threshold;
    std::vector<uint8_t> default_left;  // empty: a missing value goes right everywhere
    std::vector<float> value;
    std::vector<double> cover;          // empty: the format gave none (spec::Tree::cover)
};

enum class UnreachableNodes {
    Refuse,  // every node must hang off the root (scikit-learn)
    Drop,    // left over by pruning (XGBoost's deleted nodes): not kept
};

// Checks the links of a tree: every child is -1 or in [0, n), a node has two children or none,
// no node is reached twice from the root (no cycle, no shared node), and with Refuse every
// node is reached. Returns which nodes the root reaches (1) and which not (0).
std::vector<uint8_t> check_tree_links(const std::vector<int32_t>& left, const std::vector<int32_t>& right,
                                      UnreachableNodes unreachable, const std::string& where);

// The spec tree of `nodes` for output column `group`: links checked as above, the arrays of
// equal length (at least a root), every split's feature in [0, num_features) and its
// threshold not NaN, the reachable nodes renumbered in their original order (root stays 0).
spec::Tree build_tree(const NodeArrays& nodes, int32_t group, int32_t num_features,
                      UnreachableNodes unreachable, const std::string& where);

// --- categorical splits -----------------------------------------------------------------------

// A split on a set of categories (LightGBM's and HistGradientBoosting's bitsets) becomes a split
// on a derived 0/1 column, 1 when the input's category is in the set. The concat part below
// computes every set of one input column: `round` ("trunc", "floor": how the library turns x
// into an integer category), one_hot over the union of the sets' categories, and a projection
// summing each set. NaN, and any category outside every set, give 0 in every column.
// `sets`: the distinct sets (each ascending, categories >= 0), one output column each in order.
spec::Step::Part category_set_part(int32_t column, const std::vector<std::vector<int32_t>>& sets,
                                   const char* round);
// The same with a missing value (NaN) in set k where with_missing[k] is 1, and any number of
// elementwise functions before the one-hot (none for a text input's vocabulary indices).
spec::Step::Part category_set_part(int32_t column, const std::vector<std::vector<int32_t>>& sets,
                                   const std::vector<uint8_t>& with_missing, const std::vector<const char*>& rounding);

}  // namespace pg_predict::importers
