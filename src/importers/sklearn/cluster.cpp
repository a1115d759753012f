// scikit-learn KMeans / MiniBatchKMeans (python/pg_predict/cluster.py writes them): predict =
// argmin ‖x - c‖² = argmax 2 x·c - ‖c‖² → the "linear" estimator over the classes 0..k-1,
// without probabilities.
#include <string>
#include <vector>

#include "handlers.hpp"

namespace pg_predict::importers::sklearn {

void kmeans(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t k = num_classes(step, p);
    Matrix coef = finite_matrix(step.need("cluster_centers"), k, width);
    for (size_t i = 0; i < k; ++i)
        if (p.classes[i] != static_cast<double>(i))
            step.invalid("classes must be the cluster indices 0.." + std::to_string(k - 1) + " for " +
                         step.string("type"));
    std::vector<double> intercept(k, 0.0);
    for (size_t i = 0; i < k; ++i)
        for (double& c : coef[i]) {
            intercept[i] -= c * c;
            c *= 2.0;
        }
    set_linear(p, coef, intercept, width);
    p.transform = spec::PostTransform::Identity;
    p.has_probabilities = false;
}

}  // namespace pg_predict::importers::sklearn
