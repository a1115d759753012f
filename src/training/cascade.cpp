// create_cascade()'s arithmetic: see include/pg_predict/training/cascade.hpp.
#include "pg_predict/training/cascade.hpp"

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/training/trainer.hpp"

namespace pg_predict::training {

int cascade_part(int64_t seed, int64_t row) {
    if (is_test_row(seed, row, 0.5)) return 0;
    return is_test_row(seed, row, 0.75) ? 1 : 2;
}

std::vector<size_t> efficient_inputs(const std::vector<InputValue>& inputs, double gamma) {
    std::vector<size_t> order(inputs.size());
    std::iota(order.begin(), order.end(), 0);
    auto value = [&](size_t i) { return inputs[i].importance / inputs[i].cost; };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value(a) > value(b); });
    double total_cost = 0.0;
    for (const InputValue& v : inputs) total_cost += v.cost;
    std::vector<size_t> chosen;
    double importance = 0.0, cost = 0.0;
    for (size_t i : order) {
        if (!(inputs[i].importance > 0.0)) break;
        if (!chosen.empty() && value(i) < gamma * importance / cost) break;
        if (cost + inputs[i].cost > total_cost / 2) continue;
        chosen.push_back(i);
        importance += inputs[i].importance;
        cost += inputs[i].cost;
    }
    std::sort(chosen.begin(), chosen.end());
    return chosen;
}

namespace {

const nlohmann::json* find_trees(const nlohmann::json& j) {
    if (j.is_object()) {
        if (auto gb = j.find("gradient_booster"); gb != j.end() && gb->contains("model"))
            return &(*gb)["model"].at("trees");
        for (const auto& [key, child] : j.items())
            if (const nlohmann::json* t = find_trees(child)) return t;
    } else if (j.is_array()) {
        for (const auto& child : j)
            if (const nlohmann::json* t = find_trees(child)) return t;
    }
    return nullptr;
}

}  // namespace

std::vector<double> gain_by_feature(const std::string& document_json, size_t columns) {
    std::vector<double> gain(columns, 0.0);
    try {
        const nlohmann::json doc = nlohmann::json::parse(document_json);
        const nlohmann::json* trees = find_trees(doc);
        if (trees == nullptr) fail(ErrorCategory::Internal, "create_cascade: the probe model has no XGBoost booster");
        for (const nlohmann::json& tree : *trees) {
            const auto& left = tree.at("left_children");
            const auto& feature = tree.at("split_indices");
            const auto& loss = tree.at("loss_changes");
            for (size_t n = 0; n < left.size(); ++n) {
                const int64_t f = feature[n].get<int64_t>();
                if (left[n].get<int64_t>() >= 0 && f >= 0 && static_cast<size_t>(f) < columns)
                    gain[static_cast<size_t>(f)] += std::max(0.0, loss[n].get<double>());
            }
        }
    } catch (const nlohmann::json::exception& e) {
        fail(ErrorCategory::Internal, std::string("create_cascade: reading the probe model: ") + e.what());
    }
    return gain;
}

CascadeOutcome cascade_outcome(const std::vector<float>& confidence, const std::vector<uint8_t>& agrees,
                               double threshold) {
    CascadeOutcome o;
    o.threshold = threshold;
    if (confidence.empty()) return o;
    size_t decided = 0, wrong = 0;
    for (size_t r = 0; r < confidence.size(); ++r)
        if (confidence[r] >= threshold) {
            ++decided;
            wrong += agrees[r] ? 0 : 1;
        }
    o.decided = static_cast<double>(decided) / static_cast<double>(confidence.size());
    o.disagreement = static_cast<double>(wrong) / static_cast<double>(confidence.size());
    return o;
}

ThresholdChoice choose_threshold(const std::vector<float>& confidence, const std::vector<uint8_t>& agrees,
                                 double max_disagreement) {
    ThresholdChoice choice;
    for (int step = 50; step <= 100; ++step) {
        const CascadeOutcome o = cascade_outcome(confidence, agrees, step / 100.0);
        if (o.disagreement <= max_disagreement) {
            choice.outcome = o;
            choice.found = true;
            return choice;
        }
    }
    choice.outcome = cascade_outcome(confidence, agrees, 1.0);
    return choice;
}

}  // namespace pg_predict::training
