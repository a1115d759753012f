// The pipeline spec: what a model computes, independent of the library that trained it and of
// the tensor program it is compiled to. Importers produce it, the compiler consumes it, and the
// catalog keeps its JSON form beside the compiled program so a user can read what was loaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pg_predict/spec/featurizers.hpp"

namespace pg_predict::spec {

// Transform: a pipeline that ends in a featurizer (scikit-learn's transform): no model, the
// output is the last step's columns (model.num_groups of them).
enum class Task { Regression, Classification, Transform };

// Which way a split sends x: XGBoost goes left when x < threshold, scikit-learn and LightGBM
// when x <= threshold.
enum class Comparison { Less, LessEqual };

// Applied to the raw margins (the sum of the leaves plus the base margin).
enum class PostTransform {
    Identity,   // regression values, or raw margins
    Logistic,   // 1 / (1 + exp(-m)); a one-group classifier outputs [1 - p, p]
    Softmax,    // over the groups
    Exp,        // count:poisson
    Ovr,        // one-vs-rest: sigmoid per group, then divided by the row's sum
    TwoSided,   // a one-group classifier outputs [-m, m]: decision values, no probabilities;
                // argmax is classes[1] when m > 0, classes[0] otherwise (IsolationForest)
    Complement, // a one-group classifier whose margin is P(classes[1]) outputs [1 - m, m]
                // (a binary forest: half the trees of one group per class)
    ModifiedHuber,  // scikit-learn's SGDClassifier(loss="modified_huber"): p = (clip(m, -1, 1) + 1) / 2;
                    // one group outputs [1 - p, p]; K groups output [q, m], q = p / sum(p) (uniform
                    // when the sum is 0): predict_proba is q, predict the argmax of m (see
                    // has_decision_columns: clipping ties q where m does not)
};

// One decision tree in array form, node 0 the root. A leaf has left = right = -1 and its
// value in `value`; for an internal node `value` is ignored.
struct Tree {
    std::vector<int32_t> left;
    std::vector<int32_t> right;
    std::vector<int32_t> feature;
    std::vector<float> threshold;
    std::vector<uint8_t> default_left;  // where a missing (NaN) input goes at this node
    std::vector<float> value;
    // Each node's cover (the training weight reaching it: XGBoost's sum_hessian, LightGBM's
    // counts, scikit-learn's weighted_n_node_samples), one per node, or empty when the source
    // lacks it. Only TreeSHAP (predict_contributions) reads it; scoring never does.
    std::vector<double> cover;
    bool has_cover() const { return !cover.empty(); }
    int32_t group = 0;                  // the output column this tree's leaves add to
    // LightGBM's linear trees (linear_tree=true): one entry per node, or all empty. Leaf n
    // outputs linear_const[n] + sum_k linear_coeff[n][k] * x[linear_feature[n][k]] computed in
    // double, or value[n] when one of those inputs is NaN. Only TreeTraversal compiles them.
    std::vector<double> linear_const;
    std::vector<std::vector<int32_t>> linear_feature;
    std::vector<std::vector<double>> linear_coeff;
    bool is_linear() const { return !linear_const.empty(); }

    size_t size() const { return left.size(); }
    bool is_leaf(size_t node) const { return left[node] < 0; }
    int depth() const;                  // a single leaf has depth 0
};

struct TreeEnsemble {
    int32_t num_features = 0;
    int32_t num_groups = 1;             // width of the raw margin
    Comparison comparison = Comparison::Less;
    std::vector<float> base_margin;     // one per group, in margin space
    std::vector<Tree> trees;
    // The inputs (ascending) where a missing value (NaN) has no rule: a NaN in one of them makes
    // the row's margin NaN, so its prediction NULL (docs/semantics.md, NULL is a missing value).
    // Empty for models with a rule (XGBoost's and LightGBM's default direction,
    // HistGradientBoosting's missing_go_to_left). scikit-learn 1.2's other trees have none (they
    // refuse NaN): their importer lists the inputs the trees read. The list outlives the splits:
    // specialization may decide every split on an input, which is still read to void the row.
    std::vector<int32_t> inputs_without_missing_rule;

    int max_depth() const;
    bool has_linear_leaves() const;
    std::vector<int32_t> read_inputs() const;  // ascending: those a split or a linear leaf reads
};

struct Pipeline {
    std::string source_format;          // e.g. "xgboost"
    std::string objective;              // the source library's name for it
    Task task = Task::Regression;
    std::vector<double> classes;        // classification: the label of each output column
    // Labels that are not numbers (scikit-learn's string or boolean classes_), as text, one per
    // output column; `classes` then holds the column indices 0..k-1. Empty: the labels are the
    // numbers in `classes`.
    std::vector<std::string> class_labels;
    std::vector<std::string> features;  // input names in input order; "" where unknown
    TreeEnsemble model;
    PostTransform transform = PostTransform::Identity;

    // Before the model: featurizer steps over the input vector (none for a bare model such as
    // an XGBoost booster; then model.num_features == features.size()), and the dictionary of
    // each text input.
    std::vector<Step> steps;
    std::vector<TextInput> text_inputs;
    std::vector<TextVectorizer> text_vectorizers;  // text read by scikit-learn vectorizers
    // A model other than a tree ensemble (Op::Linear, ...), or Op::None when `model` is it.
    // With an estimator, `model` holds no trees and only describes its output: num_features =
    // the width it reads, num_groups = its margin width, base_margin zeros.
    Step estimator;
    // False for classifiers that have no predict_proba in their library (LinearSVC,
    // Perceptron, RidgeClassifier, SGDClassifier with a hinge loss): the output columns are
    // decision values whose argmax is the predicted class, and predict_proba must refuse.
    bool has_probabilities = true;
    // A classifier whose label is not the argmax of its probabilities (an ONNX graph's label
    // taken by its own ArgMax over the scores, issue 46): the estimator's 2k columns are the
    // probabilities, then the k decision values whose argmax predict gives (has_decision_columns).
    bool decision_columns = false;
    // scikit-learn's decision_function and score_samples from the raw margin m (before
    // `transform`, base margin included): decision_function = m * decision_scale (the
    // exponential loss of GradientBoostingClassifier folds a 2 into its margin). IsolationForest
    // keeps its offset_ (score_offset, negative; 0 = not an isolation forest): score_samples =
    // -2^-(m - base_margin), decision_function = score_samples - score_offset.
    double decision_scale = 1.0;
    double score_offset = 0.0;
    // SVC / NuSVC: decision_function_shape, "ovr" (votes plus confidences) or "ovo" (libsvm's
    // value per pair of classes); "" where the document did not say (exported before it was kept).
    std::string decision_shape;
    // A multi-output model (scikit-learn's n_outputs_ > 1: 2-D coef_, multi-output trees,
    // MultiOutputRegressor, RegressorChain, MultiOutputClassifier, ClassifierChain): the values
    // its predict gives per row, one per group, in scikit-learn's column order; 1 for every other
    // model. predict_outputs() in SQL. A regressor's groups are the values; a classifier's are a
    // decision value per output k (label classes[2k + 1] where > 0, else classes[2k]).
    int32_t outputs = 1;
    // How the importer lowered the source graph, one line per node (ONNX: "node 3 (Div): tensor
    // div", the spec ops or the general tensor step it became); explain_model shows it. Empty for
    // the other formats.
    std::vector<std::string> import_paths;

    // Columns of the program's input: features.size() (the model's own width when there are
    // no steps).
    int input_width() const;

    // Columns of the program's output: `outputs` for regression, one per class for classification
    // (two per class with has_decision_columns), the featurized width for a transformer.
    int output_width() const;
};

// Whether the transform turns a one-group classifier's margin into two output columns
// (logistic [1 - p, p], two_sided [-m, m], complement [1 - m, m], modified_huber [1 - p, p]).
bool expands_to_two_columns(const Pipeline&);
// Whether a classifier's output is its probabilities followed by one decision value per class
// (modified_huber over K groups): predict_proba reads the first half, predict takes the argmax
// of the second. PostgreSQL's side knows such a program by its width, twice the classes.
bool has_decision_columns(const Pipeline&);
// The columns the transform gives: 2 when expands_to_two_columns, twice the groups with
// has_decision_columns, else one per group.
int transformed_width(const Pipeline&);

const char* task_name(Task);
const char* transform_name(PostTransform);

// JSON form stored in the catalog. Floats are written so they read back bit for bit.
std::string to_json(const Pipeline&);
Pipeline from_json(const std::string& text);  // throws Error(InvalidModel)

// Structural checks (child indices in range and acyclic, features < num_features, groups <
// num_groups, sizes agree). Throws Error(InvalidModel) naming the tree and node.
void validate(const Pipeline&);

// A plain recursive evaluation of the pipeline: the reference the compiled strategies are
// tested against. x is rows × num_features, row-major; out is rows × output_width().
void reference_predict(const Pipeline&, const float* x, int64_t rows, float* out);
// The same over float64 rows: they reach the featurizers unrounded (a bare model rounds them
// to float32 first, as its program does).
void reference_predict(const Pipeline&, const double* x, int64_t rows, float* out);

// Op model (spec/steps.hpp): its nested pipeline, parsed and validated; its output ("predict",
// "decision_function" or "label"); and the columns that output gives. Throw
// Error(InvalidModel) naming `where`.
Pipeline model_pipeline(const Step&, const std::string& where);
std::string model_output(const Step&, const std::string& where);
int32_t model_width(const Pipeline&, const std::string& output, const std::string& where);

}  // namespace pg_predict::spec
