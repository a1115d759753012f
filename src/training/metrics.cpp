// The test split's metrics stored with the model. A stand-in until the evaluation module
// (src/evaluation/metrics.cpp, issue 14 §3) lands: the same definitions as scikit-learn's
// accuracy_score, log_loss (probabilities clipped to [1e-15, 1 - 1e-15]), mean_squared_error,
// mean_absolute_error and r2_score.
#include <algorithm>
#include <cmath>

#include "training.hpp"

namespace pg_predict::training {

nlohmann::json test_metrics(Task task, const Labels& labels, const TestPredictions& p) {
    const size_t n = labels.test.size();
    if (n == 0) return nlohmann::json::object();
    if (task == Task::Classification) {
        double correct = 0, loss = 0;
        for (size_t i = 0; i < n; ++i) {
            const double* row = p.values.data() + i * p.width;
            const int predicted = static_cast<int>(std::max_element(row, row + p.width) - row);
            const int truth = static_cast<int>(labels.test[i]);
            correct += predicted == truth;
            // log_loss normalizes each row before clipping, as scikit-learn 1.2 does.
            double sum = 0;
            for (int k = 0; k < p.width; ++k) sum += row[k];
            loss -= std::log(std::clamp(row[truth] / sum, 1e-15, 1 - 1e-15));
        }
        return {{"accuracy", correct / n}, {"log_loss", loss / n}, {"rows", n}};
    }
    double mean = 0;
    for (size_t i = 0; i < n; ++i) mean += labels.test[i];
    mean /= n;
    double se = 0, ae = 0, total = 0;
    for (size_t i = 0; i < n; ++i) {
        const double e = p.values[i] - labels.test[i];
        se += e * e;
        ae += std::abs(e);
        total += (labels.test[i] - mean) * (labels.test[i] - mean);
    }
    nlohmann::json m = {{"rmse", std::sqrt(se / n)}, {"mae", ae / n}, {"rows", n}};
    m["r2"] = total > 0 ? nlohmann::json(1 - se / total) : nlohmann::json(nullptr);
    return m;
}

bool metrics_better(const char* deployed, const char* candidate) noexcept {
    try {
        const nlohmann::json old = nlohmann::json::parse(deployed, nullptr, false);
        const nlohmann::json now = nlohmann::json::parse(candidate, nullptr, false);
        const auto number = [](const nlohmann::json& m, const char* key, double* out) {
            if (!m.is_object() || !m.contains(key) || !m[key].is_number()) return false;
            *out = m[key].get<double>();
            return true;
        };
        double a, b;
        if (number(now, "rmse", &b)) return !number(old, "rmse", &a) || b < a;
        if (!number(now, "accuracy", &b)) return false;
        if (!number(old, "accuracy", &a) || b != a) return !number(old, "accuracy", &a) || b > a;
        double la, lb;
        return number(now, "log_loss", &lb) && number(old, "log_loss", &la) && lb < la;
    } catch (...) {
        return false;
    }
}

}  // namespace pg_predict::training
