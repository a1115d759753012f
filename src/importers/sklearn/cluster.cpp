// scikit-learn KMeans / MiniBatchKMeans / MeanShift (python/pg_predict/cluster.py writes them):
// predict = argmin ‖x - c‖² = argmax 2 x·c - ‖c‖² → the "linear" estimator over the classes
// 0..k-1, without probabilities. Birch: the label of the nearest subcluster center, a
// "neighbors" step with k = 1 over the centers whose targets are the one-hot of their labels.
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

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

// subcluster_centers: n × width, subcluster_labels: per center the index of its label in classes.
// Equally near centers: the lower index, as scikit-learn's argmin.
void birch(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t k = num_classes(step, p);
    const JsonReader centers = step.array("subcluster_centers");
    if (static_cast<int64_t>(centers.size()) * width > spec::kMaxNeighborsValues)
        centers.unsupported(std::to_string(centers.size()) + " subcluster centers of " + std::to_string(width) +
                            " values are more than the " + std::to_string(spec::kMaxNeighborsValues) +
                            " a nearest-neighbours program may keep");
    const Matrix c = finite_matrix(centers, SIZE_MAX, static_cast<size_t>(width));
    const Matrix targets = one_hot_labels(step.array("subcluster_labels"), c.size(), k, "centers");
    p.steps.push_back(make_step(spec::Op::Neighbors, {{"points", spec::matrix_to_json(c)}, {"targets", spec::matrix_to_json(targets)},
                                                      {"k", 1}, {"p", 2}, {"weights", "uniform"}}));
    set_identity_estimator(p, k);
    p.has_probabilities = false;
}

}  // namespace pg_predict::importers::sklearn
