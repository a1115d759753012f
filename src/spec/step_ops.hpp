// The featurizer ops inside the spec layer, one family a file: each op's shape check
// (check_<op>) and its double-precision evaluation (evaluate_<op>) side by side. steps.cpp's two
// switches over Op (check_step, apply_steps) are one call per case into these, and -Werror=switch
// makes a new op a build error there until its family has both. Private to src/spec.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/spec/featurizers.hpp"

namespace pg_predict::spec::step_ops {

// Shared by the families (steps.cpp).
// Throws Error(InvalidModel): "invalid pipeline: <where>: <msg>".
[[noreturn]] void invalid(const std::string& where, const std::string& msg);
// The step's parameter `key` (its params an object holding key, else the step's own message).
const nlohmann::json& param(const Step&, const char* key, const std::string& where);
// The step's parameter `key`, one of `choices`; else "<what> must be "a", "b" or "c", not <it>".
const nlohmann::json& param_choice(const Step&, const char* key, std::initializer_list<const char*> choices,
                                   const std::string& what, const std::string& where);
// "<what> has <n> entries for a vector of <w>" unless n == w.
void check_entries(size_t n, size_t w, const std::string& what, const std::string& at);
// "where[i]".
std::string item(const std::string& where, size_t i);
// A step's output width must stay a vector we can allocate.
void check_width(size_t width, const std::string& at);
// check_steps for the steps of a nested step (a concat's part) `nesting` levels deep.
int32_t check_nested(const std::vector<Step>& steps, std::vector<int32_t>& vocab, const std::string& where,
                     int nesting);

// column_steps.cpp: per column: output column c from input column c alone.
void check_affine(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_affine(const Step&, std::vector<double>& x, const std::string& at);
void check_impute(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_impute(const Step&, std::vector<double>& x, const std::string& at);
void check_threshold(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_threshold(const Step&, std::vector<double>& x, const std::string& at);
void check_clip(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_clip(const Step&, std::vector<double>& x, const std::string& at);
void check_is_missing(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_is_missing(const Step&, std::vector<double>& x, const std::string& at);
void check_bucketize(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_bucketize(const Step&, std::vector<double>& x, const std::string& at);
void check_elementwise(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_elementwise(const Step&, std::vector<double>& x, const std::string& at);

// distribution_steps.cpp: per column, reshaping a distribution: PowerTransformer, QuantileTransformer.
void check_power(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_power(const Step&, std::vector<double>& x, const std::string& at);
void check_quantile(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_quantile(const Step&, std::vector<double>& x, const std::string& at);

// category_steps.cpp: categorical encoders: one_hot, ordinal (the ops that read text columns).
void check_one_hot(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_one_hot(const Step&, std::vector<double>& x, const std::string& at);
void check_ordinal(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_ordinal(const Step&, std::vector<double>& x, const std::string& at);

// row_steps.cpp: every output reads the whole row.
void check_normalize(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_normalize(const Step&, std::vector<double>& x, const std::string& at);
void check_project(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_project(const Step&, std::vector<double>& x, const std::string& at);
void check_monomials(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_monomials(const Step&, std::vector<double>& x, const std::string& at);
void check_kernel(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_kernel(const Step&, std::vector<double>& x, const std::string& at);
void check_neighbors(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_neighbors(const Step&, std::vector<double>& x, const std::string& at);

// tensor_steps.cpp: the ONNX importer's general per-row tensor operation.
void check_tensor(const Step&, std::vector<int32_t>& vocab, const std::string& at);
void evaluate_tensor(const Step&, std::vector<double>& x, const std::string& at);

// nested_steps.cpp: steps that hold steps: concat parts, a nested model.
void check_concat(const Step&, std::vector<int32_t>& vocab, const std::string& at, int nesting);
void evaluate_concat(const Step&, std::vector<double>& x, const std::string& at);
void check_model(const Step&, std::vector<int32_t>& vocab, const std::string& at, int nesting);
void evaluate_model(const Step&, std::vector<double>& x, const std::string& at);

}  // namespace pg_predict::spec::step_ops
