// Structural checks on a pipeline spec. Everything downstream (optimizer, compiler, the
// reference evaluator) indexes the tree arrays without bounds checks, so this is the one place
// that makes sure they can.
#include <cmath>
#include <set>
#include <string>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::spec {

namespace {

[[noreturn]] void invalid(const std::string& msg) {
    fail(ErrorCategory::InvalidModel, "invalid pipeline: " + msg);
}

std::string at(size_t tree, size_t node) {
    return "tree " + std::to_string(tree) + ", node " + std::to_string(node) + ": ";
}

void check_tree(const Tree& t, size_t ti, const TreeEnsemble& m) {
    const std::string where = "tree " + std::to_string(ti) + ": ";
    const size_t n = t.left.size();
    if (n == 0) invalid(where + "has no nodes");
    auto same = [&](size_t size, const char* name) {
        if (size != n)
            invalid(where + name + " has " + std::to_string(size) + " entries, left has " +
                    std::to_string(n));
    };
    same(t.right.size(), "right");
    same(t.feature.size(), "feature");
    same(t.threshold.size(), "threshold");
    same(t.default_left.size(), "default_left");
    same(t.value.size(), "value");
    if (t.has_cover()) {
        same(t.cover.size(), "cover");
        for (size_t i = 0; i < n; ++i)
            if (!std::isfinite(t.cover[i]) || t.cover[i] < 0.0) invalid(at(ti, i) + "cover is negative or not finite");
    }
    if (t.is_linear()) {
        same(t.linear_const.size(), "linear const");
        same(t.linear_feature.size(), "linear feature");
        same(t.linear_coeff.size(), "linear coeff");
        for (size_t i = 0; i < n; ++i) {
            if (t.linear_feature[i].size() != t.linear_coeff[i].size())
                invalid(at(ti, i) + "a linear leaf has " + std::to_string(t.linear_feature[i].size()) +
                        " features and " + std::to_string(t.linear_coeff[i].size()) + " coefficients");
            for (int32_t f : t.linear_feature[i])
                if (f < 0 || f >= m.num_features)
                    invalid(at(ti, i) + "linear leaf feature " + std::to_string(f) + " is outside [0, " +
                            std::to_string(m.num_features) + ")");
            if (!std::isfinite(t.linear_const[i])) invalid(at(ti, i) + "linear leaf constant is not finite");
            for (double c : t.linear_coeff[i])
                if (!std::isfinite(c)) invalid(at(ti, i) + "linear leaf coefficient is not finite");
        }
    }
    if (t.group < 0 || t.group >= m.num_groups)
        invalid(where + "group " + std::to_string(t.group) + " is outside [0, " +
                std::to_string(m.num_groups) + ")");

    // Each node must be reached exactly once from the root: in-range children, no node with
    // two parents, no cycle (a cycle through the root would give the root a parent), nothing
    // unreachable.
    std::vector<uint8_t> seen(n, 0);
    seen[0] = 1;
    for (size_t i = 0; i < n; ++i) {
        const int32_t l = t.left[i], r = t.right[i];
        if (l < 0 || r < 0) {
            if (l != -1 || r != -1)
                invalid(at(ti, i) + "a leaf must have left = right = -1, got " +
                        std::to_string(l) + " and " + std::to_string(r));
            // 1e39 in a document is Infinity as a float32: refused like NaN, which the GEMM
            // strategy would otherwise turn into NaN (0 * inf) for rows that never reach it.
            if (!std::isfinite(t.value[i]))
                invalid(at(ti, i) + "leaf value is not finite (" + std::to_string(t.value[i]) + ")");
            continue;
        }
        for (int32_t c : {l, r}) {
            if (static_cast<size_t>(c) >= n)
                invalid(at(ti, i) + "child " + std::to_string(c) + " is outside [0, " +
                        std::to_string(n) + ")");
            if (seen[c])
                invalid(at(ti, i) + "child " + std::to_string(c) +
                        " is reached twice (shared node or cycle)");
            seen[c] = 1;
        }
        if (t.feature[i] < 0 || t.feature[i] >= m.num_features)
            invalid(at(ti, i) + "feature " + std::to_string(t.feature[i]) + " is outside [0, " +
                    std::to_string(m.num_features) + ")");
        // An infinite threshold is legitimate (HistGradientBoosting sends every non-missing
        // value left with +inf); NaN compares false with everything and is refused.
        if (std::isnan(t.threshold[i])) invalid(at(ti, i) + "threshold is NaN");
        if (t.default_left[i] > 1) invalid(at(ti, i) + "default_left must be 0 or 1");
    }
    // n - 1 child slots were each filled once, so all nodes are reachable from the root
    // unless some subtree forms a cycle detached from it; find that case explicitly.
    std::vector<int32_t> stack{0};
    size_t reached = 0;
    while (!stack.empty()) {
        int32_t i = stack.back();
        stack.pop_back();
        ++reached;
        if (!t.is_leaf(i)) {
            stack.push_back(t.left[i]);
            stack.push_back(t.right[i]);
        }
    }
    if (reached != n)
        invalid(where + std::to_string(n - reached) + " node(s) are not reachable from the root");
}

// Text inputs, then the steps from the input vector to the model's: widths, parameter shapes,
// and text columns read only by one_hot / ordinal.
void check_featurizers(const Pipeline& p) {
    const TreeEnsemble& m = p.model;
    std::vector<int32_t> vocab(p.features.size(), -1);
    for (size_t i = 0; i < p.text_inputs.size(); ++i) {
        const TextInput& t = p.text_inputs[i];
        const std::string at = "text_inputs[" + std::to_string(i) + "]: ";
        if (t.input < 0 || static_cast<size_t>(t.input) >= vocab.size())
            invalid(at + "input " + std::to_string(t.input) + " is outside [0, " +
                    std::to_string(vocab.size()) + ")");
        if (vocab[t.input] >= 0) invalid(at + "input " + std::to_string(t.input) + " is listed twice");
        std::set<std::string> seen;
        for (const std::string& v : t.vocabulary)
            if (!seen.insert(v).second) invalid(at + "vocabulary repeats \"" + v + "\"");
        vocab[t.input] = static_cast<int32_t>(t.vocabulary.size());
    }
    // Text vectorizers: distinct slots, none a dictionary-encoded input; the vectorizer itself
    // (analyzer, vocabulary, projection) is checked when the runtime builds it.
    std::vector<uint8_t> written(p.features.size(), 0);
    for (size_t i = 0; i < p.text_vectorizers.size(); ++i) {
        const TextVectorizer& t = p.text_vectorizers[i];
        const std::string at = "text_vectorizers[" + std::to_string(i) + "]: ";
        if (t.slots.empty() || t.slots[0] != t.input) invalid(at + "its first slot must be its input");
        for (int32_t s : t.slots) {
            if (s < 0 || static_cast<size_t>(s) >= written.size())
                invalid(at + "slot " + std::to_string(s) + " is outside [0, " + std::to_string(written.size()) + ")");
            if (written[s] || vocab[s] >= 0) invalid(at + "slot " + std::to_string(s) + " is written twice");
            written[s] = 1;
        }
        if (!t.vectorizer.is_object()) invalid(at + "vectorizer must be an object");
    }
    if (p.steps.empty()) {
        if (p.features.size() != static_cast<size_t>(m.num_features))
            invalid("features lists " + std::to_string(p.features.size()) +
                    " names, num_features is " + std::to_string(m.num_features));
    } else {
        const int32_t width = check_steps(p.steps, vocab, "steps");
        if (width != m.num_features)
            invalid("the steps output " + std::to_string(width) + " columns, the model reads " +
                    std::to_string(m.num_features));
    }
    for (size_t c = 0; c < vocab.size(); ++c)
        if (vocab[c] >= 0)
            invalid("model column " + std::to_string(c) +
                    " is a text input; only one_hot and ordinal steps can read text");
}

// A TorchScript module: the spec holds only its shape (the program is the module).
void check_torchscript_estimator(const Pipeline& p) {
    const Step& e = p.estimator;
    if (!p.model.trees.empty() || !p.steps.empty() || !p.text_inputs.empty())
        invalid("a pipeline with a torchscript estimator has no trees, steps or text inputs");
    if (param_number(e, "inputs", "estimator") != p.model.num_features)
        invalid("estimator: inputs must equal the model's num_features");
    if (param_number(e, "outputs", "estimator") != p.model.num_groups)
        invalid("estimator: outputs must equal the model's num_groups");
}

void check_estimator(const Pipeline& p) {
    const Step& e = p.estimator;
    switch (e.op) {
        case Op::None:
            return;  // the model is the tree ensemble
        case Op::Linear:
            break;
        case Op::TorchScript:
            return check_torchscript_estimator(p);
        case Op::Affine: case Op::Impute: case Op::OneHot: case Op::Ordinal: case Op::Elementwise:
        case Op::Threshold: case Op::Clip: case Op::IsMissing: case Op::Normalize: case Op::Project:
        case Op::Bucketize: case Op::Monomials: case Op::Kernel: case Op::Neighbors: case Op::Concat:
        case Op::Power: case Op::Quantile: case Op::Model: case Op::Tensor:
            fail(ErrorCategory::Unsupported,
                 std::string("pipeline spec: estimator op \"") + op_name(e.op) + "\" is not supported");
    }
    if (!p.model.trees.empty()) invalid("a pipeline with a linear estimator has no trees");
    const auto coef = param_matrix(e, "coef", "estimator");
    const auto intercept = param_vector(e, "intercept", "estimator");
    if (coef.size() != static_cast<size_t>(p.model.num_groups))
        invalid("estimator: coef has " + std::to_string(coef.size()) + " rows for " +
                std::to_string(p.model.num_groups) + " groups");
    if (intercept.size() != coef.size())
        invalid("estimator: intercept has " + std::to_string(intercept.size()) + " entries for " +
                std::to_string(coef.size()) + " coef rows");
    for (size_t r = 0; r < coef.size(); ++r) {
        if (coef[r].size() != static_cast<size_t>(p.model.num_features))
            invalid("estimator: coef row " + std::to_string(r) + " has " + std::to_string(coef[r].size()) +
                    " entries, the model reads " + std::to_string(p.model.num_features));
        for (double d : coef[r]) if (!std::isfinite(d)) invalid("estimator: coef must be finite");
    }
    for (double d : intercept) if (!std::isfinite(d)) invalid("estimator: intercept must be finite");
}

// Declared sizes first: the checks below allocate from them.
void check_shape(const Pipeline& p) {
    const TreeEnsemble& m = p.model;
    auto at_most = [](int64_t n, int64_t limit, const std::string& what) {
        if (n > limit)
            fail(ErrorCategory::Unsupported, "invalid pipeline: " + what + " " + std::to_string(n) +
                                                 " exceeds the limit of " + std::to_string(limit));
    };
    at_most(static_cast<int64_t>(p.features.size()), kMaxFeatures, "the number of input features");
    at_most(m.num_features, p.steps.empty() ? kMaxFeatures : kMaxStepWidth, "num_features");
    at_most(m.num_groups, kMaxGroups, "num_groups");
    at_most(static_cast<int64_t>(p.classes.size()), kMaxGroups, "the number of classes");
    at_most(static_cast<int64_t>(m.trees.size()), kMaxTrees, "the number of trees");
    int64_t nodes = 0;
    for (size_t i = 0; i < m.trees.size(); ++i) {
        at_most(static_cast<int64_t>(m.trees[i].left.size()), kMaxTreeNodes,
                "the number of nodes of tree " + std::to_string(i));
        nodes += static_cast<int64_t>(m.trees[i].left.size());
    }
    at_most(nodes, kMaxTotalNodes, "the number of nodes of all trees");
    for (double c : p.classes)
        if (!std::isfinite(c)) invalid("class labels must be finite");
}

// Text labels: one per class, each class its column index, distinct (predict_label() could
// not tell two apart), no NUL byte (a PostgreSQL text cannot hold one).
void check_class_labels(const Pipeline& p) {
    if (p.class_labels.empty()) return;
    if (p.class_labels.size() != p.classes.size())
        invalid("class_labels lists " + std::to_string(p.class_labels.size()) + " labels for " +
                std::to_string(p.classes.size()) + " classes");
    for (size_t i = 0; i < p.classes.size(); ++i)
        if (p.classes[i] != static_cast<double>(i))
            invalid("with class_labels, classes must be the indices 0.." + std::to_string(p.classes.size() - 1));
    std::set<std::string> seen;
    size_t bytes = 0;
    for (const std::string& label : p.class_labels) {
        if (label.find('\0') != std::string::npos) invalid("a class label contains a NUL byte");
        if (!seen.insert(label).second) invalid("the class label \"" + label + "\" appears twice");
        bytes += label.size();
    }
    if (bytes > kMaxClassLabelBytes)
        invalid("the class labels take " + std::to_string(bytes) + " bytes, more than the limit of " +
                std::to_string(kMaxClassLabelBytes));
}

// Whether s is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_utf8(const std::string& s) {
    const unsigned char* b = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    for (size_t i = 0; i < n;) {
        const unsigned c = b[i];
        size_t len;
        unsigned min;
        if (c < 0x80) { i++; continue; }
        else if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; }
        else return false;
        if (i + len > n) return false;
        unsigned cp = c & (0x7F >> len);
        for (size_t k = 1; k < len; k++) {
            if ((b[i + k] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (b[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

// Every text the spec's JSON carries (the catalog keeps it as jsonb, and PostgreSQL's text is
// UTF-8 here): a model file with other bytes in a name is refused, naming where.
void check_texts(const Pipeline& p) {
    for (size_t i = 0; i < p.features.size(); ++i)
        if (!is_utf8(p.features[i])) invalid("the name of feature " + std::to_string(i) + " is not valid UTF-8");
    for (size_t i = 0; i < p.class_labels.size(); ++i)
        if (!is_utf8(p.class_labels[i])) invalid("class label " + std::to_string(i) + " is not valid UTF-8");
    for (const TextInput& t : p.text_inputs)
        for (size_t k = 0; k < t.vocabulary.size(); ++k)
            if (!is_utf8(t.vocabulary[k]))
                invalid("value " + std::to_string(k) + " of text input " + std::to_string(t.input) +
                        " is not valid UTF-8");
    for (const std::string& line : p.import_paths)
        if (!is_utf8(line)) invalid("an import path line is not valid UTF-8");
    if (!is_utf8(p.source_format) || !is_utf8(p.objective) || !is_utf8(p.decision_shape))
        invalid("the model's format, objective or decision shape is not valid UTF-8");
}

}  // namespace

void validate(const Pipeline& p) {
    const TreeEnsemble& m = p.model;
    if (m.num_features < 0) invalid("num_features is negative");
    check_texts(p);
    check_shape(p);
    check_featurizers(p);
    check_estimator(p);
    if (!p.has_probabilities && p.task != Task::Classification)
        invalid("has_probabilities = false needs a classifier");
    if (m.num_groups < 1) invalid("num_groups must be at least 1");
    if (m.base_margin.size() != static_cast<size_t>(m.num_groups))
        invalid("base_margin has " + std::to_string(m.base_margin.size()) +
                " entries, num_groups is " + std::to_string(m.num_groups));
    for (float b : m.base_margin)
        if (!std::isfinite(b)) invalid("base_margin must be finite");
    for (size_t k = 0; k < m.inputs_without_missing_rule.size(); ++k) {
        const int32_t f = m.inputs_without_missing_rule[k];
        if (f < 0 || f >= m.num_features)
            invalid("inputs_without_missing_rule: input " + std::to_string(f) + " is out of range");
        if (k > 0 && f <= m.inputs_without_missing_rule[k - 1]) invalid("inputs_without_missing_rule must ascend");
    }

    if ((p.transform == PostTransform::Softmax || p.transform == PostTransform::Ovr) && m.num_groups < 2)
        invalid(std::string(transform_name(p.transform)) + " needs at least two groups");
    if (p.task == Task::Transform && p.outputs != 1) invalid("a transformer has no outputs besides its columns");
    if (p.outputs < 1 || p.outputs > kMaxGroups) invalid("outputs must be in [1, " + std::to_string(kMaxGroups) + "]");
    if (p.task == Task::Classification && p.outputs > 1) {
        // A multi-output classifier's program gives one decision value per output: label
        // classes[2k + 1] of output k where it is > 0, else classes[2k].
        if (p.classes.size() != 2 * static_cast<size_t>(p.outputs) || !p.class_labels.empty() || p.has_probabilities)
            invalid("a multi-output classifier lists two numeric labels per output and has no probabilities");
        if (m.num_groups != p.outputs || p.transform != PostTransform::Identity)
            invalid("a multi-output classifier of " + std::to_string(p.outputs) +
                    " outputs has as many groups and the identity transform");
    } else if (p.task == Task::Classification) {
        if (p.classes.empty()) invalid("a classifier needs a non-empty classes list");
        // A binary margin expands to [1 - p, p]; otherwise one margin per class (one group and
        // one class: a classifier fitted on a single class).
        const size_t want = expands_to_two_columns(p) ? 2
                            : p.decision_columns   ? static_cast<size_t>(m.num_groups / 2)  // a probability and a decision each
                                                   : static_cast<size_t>(m.num_groups);
        if (p.classes.size() != want)
            invalid("classes lists " + std::to_string(p.classes.size()) + " labels, " +
                    std::to_string(m.num_groups) + " group(s) need " + std::to_string(want));
        check_class_labels(p);
    } else if (p.task == Task::Transform) {
        // The last featurizer's columns are the output: nothing after the steps.
        if (p.estimator.op != Op::None || !m.trees.empty() || p.transform != PostTransform::Identity)
            invalid("a transformer has no model after its steps (no estimator, trees or transform)");
        if (!p.classes.empty() || !p.class_labels.empty()) invalid("a transformer has no classes");
        if (m.num_groups != m.num_features)
            invalid("a transformer outputs its " + std::to_string(m.num_features) + " featurized columns, not " +
                    std::to_string(m.num_groups));
    } else {
        if (m.num_groups != p.outputs)
            invalid("a regression of " + std::to_string(p.outputs) + " output(s) has as many groups, not " +
                    std::to_string(m.num_groups));
        if (p.outputs > 1 && p.transform != PostTransform::Identity)
            invalid("a multi-output regression has the identity transform");
        if (!p.classes.empty() || !p.class_labels.empty()) invalid("a regression has no classes");
    }
    if (!(p.decision_scale > 0.0) || !(p.score_offset <= 0.0))
        invalid("decision_scale must be positive and score_offset not positive");
    if (!p.decision_shape.empty() && p.decision_shape != "ovr" && p.decision_shape != "ovo")
        invalid("decision_shape must be \"ovr\" or \"ovo\"");
    if (p.transform == PostTransform::TwoSided &&
        (p.task != Task::Classification || m.num_groups != 1 || p.has_probabilities))
        invalid("two_sided needs a one-group classifier without probabilities");
    if (p.decision_columns &&
        (p.task != Task::Classification || !p.has_probabilities || p.transform != PostTransform::Identity ||
         p.model.num_groups != 2 * static_cast<int32_t>(p.classes.size())))
        invalid("decision_columns needs a classifier with probabilities, no link, and two columns per class");
    if (p.transform == PostTransform::ModifiedHuber && (p.task != Task::Classification || !p.has_probabilities))
        invalid("modified_huber needs a classifier with probabilities");
    if (p.transform == PostTransform::Complement &&
        (p.task != Task::Classification || m.num_groups != 1 || p.classes.size() != 2))
        invalid("complement needs a one-group classifier of two classes");

    for (size_t i = 0; i < m.trees.size(); ++i) {
        check_interrupts();
        check_tree(m.trees[i], i, m);
    }
}

}  // namespace pg_predict::spec
