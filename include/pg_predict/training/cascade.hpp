// create_cascade()'s arithmetic (Willump, Kraft et al. MLSys 2020, section 4.2), torch- and
// PostgreSQL-free: the rows split three ways, the inputs chosen by importance against measured
// cost, the confidence threshold chosen on one part and measured on another. src/pg reads the
// rows, trains the small model (trainer.hpp) and times both models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pg_predict::training {

// 0: trains the small model (half the rows), 1: chooses the threshold (a quarter), 2: measures
// what is reported (a quarter), from (seed, row) as is_test_row splits.
int cascade_part(int64_t seed, int64_t row);

// One input of the full model (a column it reads, or a text column with its vectorizer).
struct InputValue {
    double importance;  // >= 0
    double cost;        // seconds per row, > 0
};

// Willump's Algorithm 1: inputs by decreasing importance / cost, added while the set costs at
// most half of all inputs together, stopping at the first whose importance per cost is below
// gamma times the set's. Indices into `inputs`, ascending; empty when no input with importance
// costs at most half of all (a single input, or one costly input beside cheap useless ones).
std::vector<size_t> efficient_inputs(const std::vector<InputValue>& inputs, double gamma);

// Per feature column, the summed gain (loss_changes) of the splits on it in the XGBoost booster
// of a train() document (trainer.hpp). Throws Error(Internal) when the document has no booster.
std::vector<double> gain_by_feature(const std::string& document_json, size_t columns);

// Where the small model decides (its confidence, the largest class probability, is at least the
// threshold) and how often it disagrees with the full model there, as shares of all rows.
struct CascadeOutcome {
    double threshold = 1.0;
    double decided = 0.0;
    double disagreement = 0.0;
};
CascadeOutcome cascade_outcome(const std::vector<float>& confidence, const std::vector<uint8_t>& agrees,
                               double threshold);
// The lowest threshold of 0.50, 0.51, ..., 1.00 (a grid, as Willump's multiples of 0.1, so that
// it does not fit the part's noise) whose disagreement is at most max_disagreement. found:
// false when even 1.00 disagrees more.
struct ThresholdChoice {
    CascadeOutcome outcome;
    bool found = false;
};
ThresholdChoice choose_threshold(const std::vector<float>& confidence, const std::vector<uint8_t>& agrees,
                                 double max_disagreement);

}  // namespace pg_predict::training
