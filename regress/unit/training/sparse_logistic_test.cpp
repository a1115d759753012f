#include "pg_predict/training/sparse_logistic.hpp"

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"

namespace pg_predict::training {
namespace {

// Rows of one term each: term t (of 3) in row r = r % 3, labelled by the term (3 classes) or by
// whether it is term 0 (2 classes).
SparseRows rows(int n) {
    SparseRows x;
    for (int r = 0; r < n; r++) {
        x.index.push_back(r % 3);
        x.value.push_back(1.0f);
        x.begin.push_back(static_cast<int64_t>(x.index.size()));
    }
    return x;
}

TEST(SparseLogistic, BinaryLearnsTheTermThatMakesTheLabel) {
    const SparseRows x = rows(300);
    std::vector<int32_t> label;
    for (int r = 0; r < 300; r++) label.push_back(r % 3 == 0 ? 1 : 0);
    const SparseLogistic m = fit_sparse_logistic(x, label, 2, 3, 100, 1e-2, 7);
    ASSERT_EQ(m.outputs, 1);
    double margin[1];
    for (int t = 0; t < 3; t++) {
        const int64_t index = t;
        const float value = 1.0f;
        sparse_logistic_margins(m, &index, &value, 1, margin);
        if (t == 0)
            EXPECT_GT(margin[0], 2.0) << "term " << t;
        else
            EXPECT_LT(margin[0], -2.0) << "term " << t;
    }
}

TEST(SparseLogistic, MulticlassSoftmaxAndTheSameFitForTheSameSeed) {
    const SparseRows x = rows(300);
    std::vector<int32_t> label;
    for (int r = 0; r < 300; r++) label.push_back(r % 3);
    const SparseLogistic a = fit_sparse_logistic(x, label, 3, 3, 100, 1e-2, 7);
    const SparseLogistic b = fit_sparse_logistic(x, label, 3, 3, 100, 1e-2, 7);
    EXPECT_EQ(a.weight, b.weight);
    ASSERT_EQ(a.outputs, 3);
    for (int t = 0; t < 3; t++) {
        const int64_t index = t;
        const float value = 1.0f;
        double margin[3];
        sparse_logistic_margins(a, &index, &value, 1, margin);
        for (int k = 0; k < 3; k++)
            if (k != t) EXPECT_GT(margin[t], margin[k] + 2.0) << "term " << t << " class " << k;
    }
}

TEST(SparseLogistic, RefusesOneClass) {
    EXPECT_THROW(fit_sparse_logistic(rows(3), {0, 0, 0}, 1, 3, 1, 0.0, 0), Error);
}

}  // namespace
}  // namespace pg_predict::training
