// libsvm's one-vs-one layout (see include/pg_predict/importers/svm_builder.hpp).
#include "pg_predict/importers/svm_builder.hpp"

namespace pg_predict::importers {

OneVsOne one_vs_one(size_t classes, const std::vector<size_t>& start,
                    const std::function<double(size_t, size_t)>& dual_coef) {
    const size_t count = start.back();
    const size_t pairs = classes * (classes - 1) / 2;
    OneVsOne o;
    o.decision.assign(pairs, std::vector<double>(count, 0.0));
    o.votes.assign(classes, std::vector<double>(pairs, 0.0));
    o.base.assign(classes, 0.0);
    size_t q = 0;
    for (size_t i = 0; i < classes; ++i)
        for (size_t j = i + 1; j < classes; ++j, ++q) {
            // libsvm keeps pair (i, j)'s coefficients of class i's vectors in row j - 1 and of
            // class j's vectors in row i.
            for (size_t s = start[i]; s < start[i + 1]; ++s) o.decision[q][s] = dual_coef(j - 1, s);
            for (size_t s = start[j]; s < start[j + 1]; ++s) o.decision[q][s] = dual_coef(i, s);
            o.votes[i][q] = 1.0;
            o.votes[j][q] = -1.0;
            o.base[j] += 1.0;
        }
    return o;
}

}  // namespace pg_predict::importers
