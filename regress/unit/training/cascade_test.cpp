// create_cascade()'s arithmetic (include/pg_predict/training/cascade.hpp): the three-way split,
// Willump's choice of efficient inputs, the gain importance of a probe model, the threshold.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/training/cascade.hpp"
#include "pg_predict/training/trainer.hpp"

namespace tr = pg_predict::training;

TEST(Cascade, PartsAreHalfAQuarterAndAQuarter) {
    int count[3] = {0, 0, 0};
    for (int64_t row = 0; row < 40000; ++row) ++count[tr::cascade_part(11, row)];
    EXPECT_NEAR(count[0] / 40000.0, 0.5, 0.01);
    EXPECT_NEAR(count[1] / 40000.0, 0.25, 0.01);
    EXPECT_NEAR(count[2] / 40000.0, 0.25, 0.01);
    // A function of (seed, row): the same part again, another seed another split.
    int moved = 0;
    for (int64_t row = 0; row < 1000; ++row) {
        EXPECT_EQ(tr::cascade_part(11, row), tr::cascade_part(11, row));
        moved += tr::cascade_part(11, row) != tr::cascade_part(12, row);
    }
    EXPECT_GT(moved, 300);
}

TEST(Cascade, EfficientInputsAreCheapAndImportant) {
    // Equal costs: the most important until half the cost.
    std::vector<tr::InputValue> equal = {{5, 1}, {1, 1}, {4, 1}, {3, 1}};
    EXPECT_EQ(tr::efficient_inputs(equal, 0.0), (std::vector<size_t>{0, 2}));
    // A costly text input is left out even when it is the most important.
    std::vector<tr::InputValue> text = {{10, 100}, {3, 1}, {2, 1}};
    EXPECT_EQ(tr::efficient_inputs(text, 0.5), (std::vector<size_t>{1, 2}));
    // gamma stops at an input far less cost-effective than the set so far.
    std::vector<tr::InputValue> steep = {{100, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
    EXPECT_EQ(tr::efficient_inputs(steep, 0.5), (std::vector<size_t>{0}));
    EXPECT_EQ(tr::efficient_inputs(steep, 0.0), (std::vector<size_t>{0, 1}));
    // No importance anywhere: nothing to decide with.
    EXPECT_TRUE(tr::efficient_inputs({{0, 1}, {0, 2}}, 0.5).empty());
    // One input only, or the important one costing more than half: nothing cheaper decides.
    EXPECT_TRUE(tr::efficient_inputs({{2, 3}}, 0.5).empty());
    // Willump's Toxic shape: the char n-grams matter most but cost more than half; the words go.
    EXPECT_EQ(tr::efficient_inputs({{0.02, 12.4}, {0.98, 31.9}}, 0.5), (std::vector<size_t>{0}));
}

TEST(Cascade, ThresholdIsTheLowestWithinTheBound) {
    // 10 rows: confidences, and whether the small model agrees with the full one.
    std::vector<float> confidence = {0.99f, 0.95f, 0.9f, 0.8f, 0.7f, 0.65f, 0.6f, 0.55f, 0.52f, 0.5f};
    std::vector<uint8_t> agrees = {1, 1, 1, 0, 1, 1, 0, 1, 0, 1};
    tr::ThresholdChoice none = tr::choose_threshold(confidence, agrees, 0.0);
    EXPECT_TRUE(none.found);
    EXPECT_DOUBLE_EQ(none.outcome.threshold, 0.81);  // above the 0.8 row that disagrees
    EXPECT_DOUBLE_EQ(none.outcome.decided, 0.3);
    EXPECT_DOUBLE_EQ(none.outcome.disagreement, 0.0);
    tr::ThresholdChoice one = tr::choose_threshold(confidence, agrees, 0.1);
    EXPECT_DOUBLE_EQ(one.outcome.threshold, 0.61);  // the 0.6 row would be the second
    EXPECT_DOUBLE_EQ(one.outcome.decided, 0.6);
    EXPECT_DOUBLE_EQ(one.outcome.disagreement, 0.1);
    tr::ThresholdChoice all = tr::choose_threshold(confidence, agrees, 0.3);
    EXPECT_DOUBLE_EQ(all.outcome.threshold, 0.5);
    EXPECT_DOUBLE_EQ(all.outcome.decided, 1.0);
    // Even the most confident rows disagree: no threshold.
    EXPECT_FALSE(tr::choose_threshold({1.0f, 1.0f}, {0, 1}, 0.1).found);
}

TEST(Cascade, GainFollowsTheInformativeColumn) {
    // y depends on column 1 only; column 0 and 2 are noise.
    std::vector<tr::Column> cols = {{"a", tr::ColumnKind::Number}, {"b", tr::ColumnKind::Number},
                                    {"c", tr::ColumnKind::Number}};
    tr::Dataset* d = tr::new_dataset(tr::Request{"xgboost", R"({"n_estimators": 8, "max_depth": 3})", "y",
                                                 tr::ColumnKind::Number, 0.0, 3, 1}, cols);
    uint64_t state = 12345;
    auto noise = [&] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return double(state >> 40) / double(1 << 24);
    };
    for (int i = 0; i < 600; ++i) {
        const double b = noise();
        tr::Cell row[3] = {{noise(), nullptr, 0}, {b, nullptr, 0}, {noise(), nullptr, 0}};
        tr::add_row(d, row, tr::Cell{b > 0.5 ? 1.0 : 0.0, nullptr, 0});
    }
    const tr::Trained t = tr::train(d);
    tr::free_dataset(d);
    const std::vector<double> gain = tr::gain_by_feature(t.document_json, 3);
    ASSERT_EQ(gain.size(), 3u);
    EXPECT_GT(gain[1], 10 * (gain[0] + gain[2]));
    EXPECT_THROW(tr::gain_by_feature(R"({"steps": []})", 3), pg_predict::Error);
}
