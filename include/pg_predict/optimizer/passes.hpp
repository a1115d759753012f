// The optimizer's passes and the liveness analysis under them (optimize.hpp runs them in
// order). Each takes a valid pipeline and returns an equivalent valid one, appending what it
// changed to `changes`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::optimizer {

using Mask = std::vector<bool>;  // one flag per column of a vector

// --- analysis (liveness.cpp) ---

// Per input column: -1 for a number, else the vocabulary size of the text input it carries.
std::vector<int32_t> input_vocab(const spec::Pipeline&);

// The vocab of each step's input, plus the last step's output at the end (steps.size() + 1).
std::vector<std::vector<int32_t>> step_vocabs(const std::vector<spec::Step>&, std::vector<int32_t> in);

// The columns of one step's input its `live_out` outputs depend on. Ops that are not known to
// work column by column (normalize, project, any op this file does not list) need all of them
// once any output is live. When some output is live, at least one input is reported, so a
// shrunk step always has an input.
// The liveness of each list of steps (by its address) that steps_liveness walked, nested
// concat parts included: a pass that then visits those lists reads it here instead of walking
// every subtree again at each level (which made nested FeatureUnions cubic).
using LivenessMemo = std::map<const std::vector<spec::Step>*, std::vector<Mask>>;

Mask step_needs(const spec::Step&, const std::vector<int32_t>& in_vocab, const Mask& live_out,
                LivenessMemo* memo = nullptr);

// The same through a list of steps: live[i] = the live columns of step i's input, and
// live[steps.size()] = live_out.
std::vector<Mask> steps_liveness(const std::vector<spec::Step>&, const std::vector<int32_t>& in_vocab,
                                 const Mask& live_out, LivenessMemo* memo = nullptr);

// The columns of the estimator's input (the last step's output) that it reads: a nonzero
// coefficient in some row of a linear model, a split of some tree; all for another estimator.
Mask estimator_needs(const spec::Pipeline&);

// --- passes ---

// The members of an ensemble: every op model step's nested pipeline, wherever it sits (concat
// parts included), optimized on its own (optimize.hpp), so a member's scaler folds into its
// linear model as it would alone.
spec::Pipeline optimize_members(const spec::Pipeline&, std::vector<std::string>& changes);

// Dead-column removal: every step keeps only the columns something downstream reads (params
// of per-column ops shrink, concat parts nothing reads go, the estimator's coefficients and
// tree features are renumbered). Where the first step cannot select columns itself, a
// selection (a concat of one passthrough part) is put in front. A pipeline without steps is
// left as it is: its unused inputs are only left out of the scan.
spec::Pipeline remove_unused_columns(const spec::Pipeline&, std::vector<std::string>& changes);

// Concat clean-up: a concat that passes its whole input through in order goes (its part's
// steps, if any, take its place); a pure selection followed by a concat folds into it.
spec::Pipeline simplify_concat(const spec::Pipeline&, std::vector<std::string>& changes);

// Algebraic fusion of adjacent linear maps: affine∘affine, affine→project, project→project
// (when it is cheaper), affine or project before a linear estimator, and a trailing affine of
// a concat part into the linear estimator's block of coefficients. An impute (or any other
// op) between them blocks it, so NaN still reaches the same outputs.
spec::Pipeline fuse_linear(const spec::Pipeline&, std::vector<std::string>& changes);

}  // namespace pg_predict::optimizer
