// A logistic regression over sparse rows (a text vectorizer's terms), for create_cascade's small
// model on text: Willump trains its small model on the cheap features themselves, and a
// vectorizer's terms are too many for a dense fit. Torch- and PostgreSQL-free.
#pragma once

#include <cstdint>
#include <vector>

namespace pg_predict::training {

// Rows of term values (CSR), as a vectorizer gives them.
struct SparseRows {
    std::vector<int64_t> begin{0};  // rows + 1
    std::vector<int64_t> index;
    std::vector<float> value;
    int64_t rows() const { return static_cast<int64_t>(begin.size()) - 1; }
};

struct SparseLogistic {
    int outputs = 1;              // 1: a binary model's margin of class 1; else one per class (softmax)
    std::vector<double> weight;   // width x outputs, by term
    std::vector<double> bias;     // outputs
};

// Fits class indices `label` (0 .. classes - 1) of the rows: the summed log loss plus l2 / 2 x the
// squared weights (scikit-learn's LogisticRegression with C = 1 / l2), by full-batch L-BFGS, at
// most `iterations` of them. Deterministic (`seed` is unused: no sampling).
SparseLogistic fit_sparse_logistic(const SparseRows& x, const std::vector<int32_t>& label, int classes, int64_t width,
                                   int epochs, double l2, uint64_t seed);

// The model's margins of one row (outputs values).
void sparse_logistic_margins(const SparseLogistic& m, const int64_t* index, const float* value, int64_t n,
                             double* out);

}  // namespace pg_predict::training
