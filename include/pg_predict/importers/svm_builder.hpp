// What an SVM importer shares with the others (scikit-learn's document, ONNX's SVMClassifier):
// libsvm's one-vs-one classifier as two linear layers over the kernel values.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace pg_predict::importers {

struct OneVsOne {
    // The decision of each class pair (i, j), i < j, in libsvm's order: pairs × support vectors.
    std::vector<std::vector<double>> decision;
    // Each class's votes over the pairs' signs (bit = decision > 0): bit votes for i, 1 - bit for
    // j, so votes[i][q] = 1, votes[j][q] = -1 and base[j] = 1 per pair: classes × pairs.
    std::vector<std::vector<double>> votes;
    std::vector<double> base;
};

// `start` has classes + 1 entries: where each class's support vectors begin (the last one is the
// count). dual_coef(r, s) is libsvm's dual coefficient r (0 .. classes - 2) of support vector s.
OneVsOne one_vs_one(size_t classes, const std::vector<size_t>& start,
                    const std::function<double(size_t, size_t)>& dual_coef);

}  // namespace pg_predict::importers
