// Small queries on the spec types: depths, output width, names.
#include <algorithm>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::spec {

int Tree::depth() const {
    // Level by level rather than recursion: a deep (degenerate) tree must not blow the stack,
    // and capping the walk at size() levels keeps a cyclic, not yet validated tree finite.
    if (left.empty()) return 0;
    std::vector<int32_t> level{0}, next;
    int d = 0;
    for (size_t guard = 0; guard <= size(); ++guard) {
        next.clear();
        for (int32_t n : level) {
            if (n < 0 || static_cast<size_t>(n) >= size() || is_leaf(n)) continue;
            next.push_back(left[n]);
            if (static_cast<size_t>(n) < right.size()) next.push_back(right[n]);
        }
        if (next.empty()) return d;
        ++d;
        level.swap(next);
    }
    return d;
}

int TreeEnsemble::max_depth() const {
    int d = 0;
    for (const Tree& t : trees) d = std::max(d, t.depth());
    return d;
}

bool TreeEnsemble::has_linear_leaves() const {
    for (const Tree& t : trees)
        if (t.is_linear()) return true;
    return false;
}

std::vector<int32_t> TreeEnsemble::read_inputs() const {
    std::vector<int32_t> read;
    for (const Tree& t : trees) {
        for (size_t node = 0; node < t.size(); ++node)
            if (!t.is_leaf(node)) read.push_back(t.feature[node]);
        for (const auto& features : t.linear_feature) read.insert(read.end(), features.begin(), features.end());
    }
    std::sort(read.begin(), read.end());
    read.erase(std::unique(read.begin(), read.end()), read.end());
    return read;
}

bool expands_to_two_columns(const Pipeline& p) {
    const bool two_sided = p.transform == PostTransform::Logistic || p.transform == PostTransform::TwoSided ||
                           p.transform == PostTransform::Complement || p.transform == PostTransform::ModifiedHuber;
    return two_sided && p.task == Task::Classification && p.model.num_groups == 1;
}

bool has_decision_columns(const Pipeline& p) {
    if (p.decision_columns) return p.task == Task::Classification;
    return p.transform == PostTransform::ModifiedHuber && p.task == Task::Classification && p.model.num_groups > 1;
}

int transformed_width(const Pipeline& p) {
    if (p.decision_columns) return p.model.num_groups;  // both halves are the estimator's own
    if (expands_to_two_columns(p)) return 2;
    return has_decision_columns(p) ? 2 * p.model.num_groups : p.model.num_groups;
}

int Pipeline::output_width() const {
    // A one-group binary classifier still has two output columns ([1 - p, p]); its classes
    // list has two labels, so the class count is the width in every classification case.
    if (task == Task::Classification && outputs > 1) return outputs;  // a label per output
    if (task == Task::Classification)
        return static_cast<int>(classes.size()) * (has_decision_columns(*this) ? 2 : 1);
    if (task == Task::Transform) return model.num_groups;
    return outputs;
}

int Pipeline::input_width() const {
    return steps.empty() ? model.num_features : static_cast<int>(features.size());
}

const char* task_name(Task t) {
    switch (t) {
        case Task::Regression: return "regression";
        case Task::Classification: return "classification";
        case Task::Transform: return "transformer";
    }
    return "unknown";
}

const char* transform_name(PostTransform t) {
    switch (t) {
        case PostTransform::Identity: return "identity";
        case PostTransform::Logistic: return "logistic";
        case PostTransform::Softmax: return "softmax";
        case PostTransform::Exp: return "exp";
        case PostTransform::Ovr: return "ovr";
        case PostTransform::TwoSided: return "two_sided";
        case PostTransform::Complement: return "complement";
        case PostTransform::ModifiedHuber: return "modified_huber";
    }
    return "unknown";
}

}  // namespace pg_predict::spec
