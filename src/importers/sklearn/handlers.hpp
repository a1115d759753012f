// The scikit-learn importer's registry of supported classes (Hummingbird's "registry of
// supported operators"): one table, estimator_registry.cpp, maps a scikit-learn class name to
// the one function that converts it, and those functions live in one file per family, named as
// the Python client's module of the family (python/pg_predict/<family>.py, checked by
// test_export.py): document.cpp (the document, Pipeline, ColumnTransformer, FeatureUnion),
// featurizers.cpp (with splines.cpp), text.cpp, linear.cpp, trees.cpp (with
// xgboost_estimators.cpp), svm.cpp, naive_bayes.cpp, neural.cpp, cluster.cpp, mixture.cpp,
// calibration.cpp, neighbors.cpp, multioutput.cpp, ensemble.cpp. Adding a class: its function
// in its family's file, declared below, and one row in estimator_registry.cpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/spec/json_reader.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::importers::sklearn {

using spec::JsonReader;
using Matrix = std::vector<std::vector<double>>;
// Per column of the vector a step reads: the text input it carries (an index into the
// document's inputs), or -1 for a number.
using Columns = std::vector<int32_t>;

class Document;

// A featurizer: reads `step`, appends its spec steps to `out` and sets `cols` to its output.
using Featurizer = void (*)(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out);
// A final estimator: fills p.model / p.estimator / p.transform for the vector of
// `num_features` columns it reads (appending to p.steps what it computes before its model).
using Estimator = void (*)(const JsonReader& step, int32_t num_features, spec::Pipeline& p);

// What a classifier fitted on a single class does in scikit-learn (the others refuse to fit).
enum class OneClass {
    Refused,          // scikit-learn cannot fit it on one class
    ProbaIsOne,       // predicts the class; predict_proba is [1.0]
    NoProbabilities,  // predicts the class; predict_proba has two columns there or none: refused
};

struct Handler {
    const char* type;             // the scikit-learn class name, the document's "type"
    Featurizer featurizer;        // exactly one of featurizer / estimator is set
    Estimator estimator;
    OneClass one_class;
};

// The row of `type`, or nullptr.
const Handler* find_handler(const std::string& type);
// "A, B, C": the featurizer / estimator classes the registry knows, for messages.
std::string featurizer_names();
std::string estimator_names();

// The state of one document's import that featurizers share: the inputs, the vocabulary of
// each text input, and the nesting of composites.
class Document {
public:
    Document(const JsonReader& root, spec::Pipeline& p) : root_(root), p_(p) {}

    // The whole document into p (document.cpp).
    void run();
    // One featurizer step (any registered featurizer, composites included).
    void convert(const JsonReader& step, Columns& cols, std::vector<spec::Step>& out);

    // A step that reads a text input, where only encoders may: InvalidModel naming it.
    void no_text(const JsonReader& step, const std::string& type, const Columns& cols) const;
    // The input name of the first text column in cols ("" when none).
    std::string text_name(const Columns& cols) const;
    const std::string& input_name(int32_t input) const { return p_.features[input]; }
    // The index of `value` in text input `input`'s vocabulary (added when new).
    int32_t vocabulary_index(int32_t input, const std::string& value);
    // handle_unknown = "error": the text inputs among cols refuse values they have not seen.
    void unknown_is_error(const Columns& cols);

    // Text vectorizers (text.cpp): each reads one text input; in Columns its output columns are
    // vectorizer_column(id), among the steps its place is vectorizer_marker(id) until
    // lower_text_vectorizers() replaces both by a projection (spec::TextVectorizer).
    int32_t add_vectorizer(int32_t input, nlohmann::json vectorizer, int64_t width);
    nlohmann::json& vectorizer_json(int32_t id) { return vectorizers_[static_cast<size_t>(id)].json; }
    // Its columns: every term, or the terms a selection after it kept (select_terms).
    int64_t vectorizer_width(int32_t id) const;
    bool vectorizer_selected(int32_t id) const { return !vectorizers_[static_cast<size_t>(id)].selected.empty(); }
    // keep: indices into its current columns, increasing.
    void select_terms(int32_t id, const std::vector<int32_t>& keep);
    // By term: the column that holds it, or -1 where a selection dropped it.
    std::vector<int64_t> column_of_term(int32_t id) const;
    static int32_t vectorizer_column(int32_t id) { return -2 - id; }
    static int32_t vectorizer_of(int32_t column) { return column <= -2 ? -2 - column : -1; }
    static spec::Step vectorizer_marker(int32_t id);
    static bool is_vectorizer_marker(const spec::Step& s, int32_t id);

    // Composites recurse through convert(): one level each, bounded by kMaxCompositeNesting.
    struct Level {
        Level(Document& doc, const JsonReader& step);
        ~Level() { --doc.depth_; }
        Document& doc;
    };

private:
    void read_inputs();
    void read_task();
    void read_classes(const JsonReader& classes);
    void read_model(const JsonReader& step, const Columns& cols);
    void read_transformer_output(const JsonReader& last, const Columns& cols);
    void one_class(const JsonReader& step, const Handler* h, const std::string& type);
    void lower_text_vectorizers(const JsonReader& model, const Columns& cols, size_t steps_before_model);

    struct Vectorizer {
        int32_t input;
        nlohmann::json json;
        int64_t width;                  // its terms (or hashed features)
        std::vector<int64_t> selected;  // the terms its columns hold, when a selection followed
    };
    void push_threshold_into_text(std::vector<spec::Step>& steps, const spec::Step& threshold,
                                  const JsonReader& model);
    std::vector<Vectorizer> vectorizers_;

    JsonReader root_;
    spec::Pipeline& p_;
    std::vector<bool> text_;
    std::vector<std::vector<std::string>> vocab_;
    std::vector<std::map<std::string, int32_t>> index_;
    std::vector<bool> unknown_error_;
    int depth_ = 0;
};

// The reader of a step, its messages prefixed "scikit-learn <type>".
JsonReader step_reader(const JsonReader& step);
// Unsupported: "<prefix>: <what> is not supported".
[[noreturn]] void refuse(const JsonReader& at, const std::string& what);
// The string parameter `key` of `step` (`fallback` when absent); refused ("parameter key =
// "value"") unless it is one of `allowed`.
std::string string_choice(const JsonReader& step, const char* key, const char* fallback,
                          std::initializer_list<const char*> allowed);

// --- shared by the featurizers (featurizers.cpp) -------------------------------------------

// Appends y = x * scale + offset, folded into the previous step when that is an affine too.
void push_affine(std::vector<spec::Step>& out, std::vector<double> scale, std::vector<double> offset);

// --- shared by the estimator families (linear.cpp) -------------------------------------

spec::Step make_step(spec::Op op, nlohmann::json params);
Matrix transpose(const Matrix& m);
// 0, 1, ..., width - 1: every column of a vector `width` wide.
inline std::vector<int32_t> all_columns(int32_t width) {
    std::vector<int32_t> c(static_cast<size_t>(width));
    for (int32_t i = 0; i < width; ++i) c[static_cast<size_t>(i)] = i;
    return c;
}
// A non-empty matrix of finite numbers, rows × cols (SIZE_MAX: any, cols the same in every row).
Matrix finite_matrix(const JsonReader& a, size_t rows, size_t cols);
// The linear estimator margin = x · coefᵀ + intercept over `width` columns.
void set_linear(spec::Pipeline& p, const Matrix& coef, const std::vector<double>& intercept, int32_t width);
// InvalidModel unless the document's task is the estimator's.
void need_task(const JsonReader& step, const spec::Pipeline& p, bool classifier);
// The classes of a classifier (need_task first).
size_t num_classes(const JsonReader& step, const spec::Pipeline& p);

// --- shared by GaussianNB and the diagonal mixtures (naive_bayes.cpp) ------------------------

// jll_i = log_prior_i - ½ Σ_j log(2π var_ij) - ½ Σ_j (x_j - θ_ij)² / var_ij for each row i of
// theta / var (var > 0), and a softmax over them: affine + concat [x', x'²] + linear.
void gaussian_log_likelihoods(const Matrix& theta, const Matrix& var, const std::vector<double>& log_prior,
                              spec::Pipeline& p);

// --- shared by the nearest-neighbour models (neighbors.cpp) ----------------------------------

// Row r: the one-hot of labels[r], a class index below `classes`; `labels` holds one per row
// (else "has 3 labels for 4 <rows_are>").
Matrix one_hot_labels(const JsonReader& labels, size_t rows, size_t classes, const char* rows_are);
// The "linear" estimator that passes the `width` columns before it on (a neighbors step's).
void set_identity_estimator(spec::Pipeline& p, size_t width);

// --- the handlers, by family -----------------------------------------------------------------

// document.cpp: composites
void pipeline(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void column_transformer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void feature_union(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);

// text.cpp: CountVectorizer, TfidfVectorizer and HashingVectorizer (one function), TfidfTransformer
void count_vectorizer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void tfidf_transformer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
// A column selection (SelectKBest, ...) right after a vectorizer: the terms it keeps.
void select_text(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
// A Binarizer right after a vectorizer: its last transform.
void binarize_text(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
// TruncatedSVD right after a vectorizer (Document::convert sends it here, not to pca())
void project_text(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);

void fast_ica(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);  // featurizers.cpp

// splines.cpp
void spline_transformer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);

// featurizers.cpp
void standard_scaler(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void robust_scaler(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void max_abs_scaler(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void min_max_scaler(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void simple_imputer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void one_hot_encoder(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void ordinal_encoder(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void column_selector(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void missing_indicator(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void binarizer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void normalizer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void pca(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void truncated_svd(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void kbins_discretizer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void power_transformer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void quantile_transformer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void kernel_pca(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void polynomial_features(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);
void function_transformer(Document&, const JsonReader&, Columns&, std::vector<spec::Step>&);

// linear.cpp
void linear_regressor(const JsonReader&, int32_t, spec::Pipeline&);  // LinearRegression, Ridge, Lasso, ...
void logistic_regression(const JsonReader&, int32_t, spec::Pipeline&);
void sgd_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void decision_classifier(const JsonReader&, int32_t, spec::Pipeline&);  // LinearSVC, Perceptron, RidgeClassifier
void glm_regressor(const JsonReader&, int32_t, spec::Pipeline&);  // PoissonRegressor, GammaRegressor, TweedieRegressor
void pls_regression(const JsonReader&, int32_t, spec::Pipeline&);

// trees.cpp
void decision_tree_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void decision_tree_regressor(const JsonReader&, int32_t, spec::Pipeline&);
void extra_tree_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void extra_tree_regressor(const JsonReader&, int32_t, spec::Pipeline&);
void random_forest_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void random_forest_regressor(const JsonReader&, int32_t, spec::Pipeline&);
void extra_trees_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void extra_trees_regressor(const JsonReader&, int32_t, spec::Pipeline&);
void gradient_boosting_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void gradient_boosting_regressor(const JsonReader&, int32_t, spec::Pipeline&);
void hist_gradient_boosting_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void hist_gradient_boosting_regressor(const JsonReader&, int32_t, spec::Pipeline&);
void isolation_forest(const JsonReader&, int32_t, spec::Pipeline&);

// svm.cpp
void svc(const JsonReader&, int32_t, spec::Pipeline&);  // SVC, NuSVC
void svr(const JsonReader&, int32_t, spec::Pipeline&);  // SVR, NuSVR

// naive_bayes.cpp
void multinomial_nb(const JsonReader&, int32_t, spec::Pipeline&);
void bernoulli_nb(const JsonReader&, int32_t, spec::Pipeline&);
void gaussian_nb(const JsonReader&, int32_t, spec::Pipeline&);

// xgboost_estimators.cpp: a booster in XGBoost's own JSON under "booster"
void xgb_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void xgb_regressor(const JsonReader&, int32_t, spec::Pipeline&);

// neural.cpp
void mlp_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void mlp_regressor(const JsonReader&, int32_t, spec::Pipeline&);

// cluster.cpp
void kmeans(const JsonReader&, int32_t, spec::Pipeline&);  // KMeans, MiniBatchKMeans, MeanShift
void birch(const JsonReader&, int32_t, spec::Pipeline&);

// mixture.cpp
void gaussian_mixture(const JsonReader&, int32_t, spec::Pipeline&);  // GaussianMixture, BayesianGaussianMixture

// calibration.cpp
void calibrated_classifier(const JsonReader&, int32_t, spec::Pipeline&);  // CalibratedClassifierCV

// neighbors.cpp
void k_neighbors_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void k_neighbors_regressor(const JsonReader&, int32_t, spec::Pipeline&);

// multioutput.cpp
void multi_output_regressor(const JsonReader&, int32_t, spec::Pipeline&);
void regressor_chain(const JsonReader&, int32_t, spec::Pipeline&);
void multi_output_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void classifier_chain(const JsonReader&, int32_t, spec::Pipeline&);
// ensemble.cpp: meta-estimators over whole member models (op model steps)
void voting_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void voting_regressor(const JsonReader&, int32_t, spec::Pipeline&);
void bagging_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void bagging_regressor(const JsonReader&, int32_t, spec::Pipeline&);
void stacking_classifier(const JsonReader&, int32_t, spec::Pipeline&);
void stacking_regressor(const JsonReader&, int32_t, spec::Pipeline&);

}  // namespace pg_predict::importers::sklearn
