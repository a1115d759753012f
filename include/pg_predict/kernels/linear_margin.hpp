// The margin of a one-output linear model over simple featurizers, fused: for each row
//   z = (Σ_j term_j(x) · weight_j) + intercept
// where each term reads one input column, imputes it, and is the number itself, the number
// scaled (v · a + b), or a one-hot indicator (v == a, or both NaN). This is the whole program of
// a scikit-learn pipeline "impute / scale numbers, impute / one-hot text, logistic or linear
// regression" (compiler/fused_margin.cpp recognizes it), which in tensor ops built several
// [rows × k] intermediates and a matmul for one dot product a row.
//
// The numbers are the bits of the tensor program it replaces: every step in float64 with the
// same roundings (the product v · a rounded before + b, each term's product rounded before the
// add), the sum over the terms in order from +0.0 and the intercept added last, the order of
// the reference BLAS's dgemm under torch.addmm(intercept, features, coef) (measured: addmm
// there computes temp = Σ in order, then temp + intercept).
#pragma once

#include <cstdint>
#include <vector>

namespace pg_predict::kernels {

enum class LinearTermKind : int64_t {
    Number = 0,     // v
    Scaled = 1,     // v * a + b
    Indicator = 2,  // (v == a || (isnan(v) && isnan(a))) ? 1 : 0
};

// One column of the model's features. v is x[column], replaced by `statistic` when it is NaN or
// equals `missing` (an impute step; without one both are NaN, which leaves v as it is).
struct LinearTerm {
    int64_t column = 0;
    LinearTermKind kind = LinearTermKind::Number;
    double statistic = 0.0;
    double missing = 0.0;
    double a = 0.0;
    double b = 0.0;
    double weight = 0.0;
};

// Terms as a program buffer: kLinearTermFields float64 values per term, in LinearTerm's order
// (column and kind as exact small integers).
constexpr int64_t kLinearTermFields = 7;
std::vector<double> pack_linear_terms(const std::vector<LinearTerm>& terms);
// Reads them back; throws Error(InvalidModel) for a column outside [0, columns) or an unknown
// kind, so a corrupt buffer never reads outside the batch.
std::vector<LinearTerm> unpack_linear_terms(const double* packed, int64_t count, int64_t columns);

// out: rows values, overwritten. x: rows × cols, row-major (float32 or float64: each value is
// widened to float64 first, as x.double() does). Runs over row blocks on torch's intra-op thread
// count in pg_predict's own pool; throws Error(Cancelled) on an interrupt.
void linear_margin(const float* x, int64_t rows, int64_t cols, const std::vector<LinearTerm>& terms,
                   double intercept, double* out);
void linear_margin(const double* x, int64_t rows, int64_t cols, const std::vector<LinearTerm>& terms,
                   double intercept, double* out);

// Defined beside the registration of torch.ops.pg_predict.linear_margin; the compiler references
// it so a static link keeps the registrar.
int linear_margin_op_anchor();

}  // namespace pg_predict::kernels
