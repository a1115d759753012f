// spec → serialized TorchScript module. The header is torch-free; the bytes it returns are
// what the catalog stores and what runtime::load_program reads back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pg_predict/compiler/strategy.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::compiler {

// Which of a model's results a program computes.
enum class Output {
    Predict,           // what the catalog's program gives: predict_proba / predict, or transform
    DecisionFunction,  // scikit-learn's decision_function: the raw margin, one column per group
    ScoreSamples,      // scikit-learn's score_samples (IsolationForest): one column
    Contributions,     // predict_contributions: per group each input's share of the margin, then
                       // the bias (compiler/contributions.cpp)
};
const char* output_name(Output);  // "predict", "decision_function", "score_samples", "contributions"

// The module's forward(x: Tensor[N, F] float32) -> Tensor[N, output_width] float32 returns
// what predict_proba returns for classification (class probabilities, model class order), the
// predicted value for regression and the last step's columns for a transformer; with another
// `output`, that result. `strategy` must not be Auto (resolve it first). An output the model's
// estimator lacks is Error(Unsupported) naming the estimator (check_output).
std::string compile(const spec::Pipeline&, Strategy strategy, Output output = Output::Predict);
// Throws Error(Unsupported) unless the pipeline can compute `output`, naming its estimator.
void check_output(const spec::Pipeline&, Output output);

// A user's TorchScript module (torch.jit.save bytes) as a program of the same calling convention:
// loads it, runs it once on a [2, F] batch of zeros to check that it takes a float [N, F] tensor
// and returns [N] or [N, 1] (regression) or [N, k] (k classes), and wraps it in a module whose
// forward casts and reshapes to [N, output_width] float32. `p` is import_torchscript's spec.
// Throws Error(InvalidModel) naming what is wrong with the module. Runs the user's code: the
// caller checked that the role may import TorchScript.
std::string wrap_torchscript(std::string_view module_bytes, const spec::Pipeline& p);

// Rows per chunk in which a pipeline's featurizers run, given the most values per row any of
// their intermediate tensors holds; 0 = the whole batch at once. Bounds each temporary to
// ~1 MB: large ones are mapped and unmapped by the allocator on every op.
int64_t featurize_chunk_rows(int64_t widest);

}  // namespace pg_predict::compiler
