// Programs whose featurizers are the same share them (runtime/shared_featurizer.cpp): found by
// content, never by name, and run once for several programs' rows with the same results.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/runtime/api.hpp"
#include "program_ids.hpp"
#include "sklearn_fixtures.hpp"

namespace pg_predict {
namespace {

using json = nlohmann::json;

// The fixtures' ColumnTransformer (imputer, scalers, one-hot) before a 3-class logistic
// regression: its forward() is from_features(featurize(x)).
json logistic_doc() {
    const json fixtures = json::parse(testing::kSklearnFixtures);
    for (const json& c : fixtures["cases"])
        if (c["name"] == "logreg_multinomial") return c["doc"];
    ADD_FAILURE() << "no logreg_multinomial fixture";
    return {};
}

runtime::Program* load(const json& doc) {
    runtime::BuiltModel* built = runtime::build_model(Artifact{ArtifactKind::Json, doc.dump()}, "sklearn", "{}");
    const std::string program = built->program;
    runtime::free_built_model(built);
    return runtime::load_program(testing::next_program_id(), program.data(), program.size());
}

// Another tenant's model: the same featurizer, its own coefficients.
json other_estimator(json doc, double shift) {
    for (json& row : doc["steps"][1]["coef"])
        for (json& w : row) w = w.get<double>() + shift;
    return doc;
}

std::vector<double> rows(int n, int seed) {
    std::vector<double> x;
    for (int r = 0; r < n; ++r) {
        x.push_back(std::sin(r + seed) * 4);        // a
        x.push_back(r % 5 == 0 ? NAN : r * 0.25);   // b (missing: imputed)
        x.push_back((r + seed) % 4 - 1);            // city (vocabulary index, -1 unknown)
        x.push_back(r % 3 == 0 ? 5 : 2);            // lvl
    }
    return x;
}

TEST(SharedFeaturizer, SameFeaturizerIsSharedAndRunsOnceWithTheSameResults) {
    const json doc = logistic_doc();
    runtime::Program* a = load(doc);
    runtime::Program* b = load(other_estimator(doc, 0.5));
    ASSERT_NE(runtime::program_featurizer(a), nullptr);
    EXPECT_EQ(runtime::program_featurizer(a), runtime::program_featurizer(b));
    // b's featurizer buffers are a's: the cache does not count them twice.
    EXPECT_LT(runtime::program_bytes(b), runtime::program_bytes(a));

    const std::vector<double> xa = rows(70, 1), xb = rows(45, 2);
    std::vector<float> want_a(70 * 3), want_b(45 * 3);
    runtime::run_program(a, xa.data(), 70, 4, want_a.data());
    runtime::run_program(b, xb.data(), 45, 4, want_b.data());
    std::vector<double> x(xa);
    x.insert(x.end(), xb.begin(), xb.end());
    runtime::Program* programs[] = {a, b};
    const int64_t counts[] = {70, 45};
    std::vector<float> out(115 * 3);
    runtime::run_sharing_featurizer(programs, counts, 2, x.data(), 4, out.data());
    for (size_t i = 0; i < want_a.size(); ++i) EXPECT_NEAR(out[i], want_a[i], 1e-6) << i;
    for (size_t i = 0; i < want_b.size(); ++i) EXPECT_NEAR(out[want_a.size() + i], want_b[i], 1e-6) << i;
    EXPECT_NE(want_a, want_b);  // the estimators differ, and each program used its own

    // A featurizer fitted on other data (another imputed value) is not shared. (A scaler's
    // mean would not do: the optimizer folds the scalers into the linear model's weights.)
    json moved = doc;
    moved["steps"][0]["transformers"][0]["steps"][0]["statistics"][0] = 1.5;
    runtime::Program* c = load(moved);
    ASSERT_NE(runtime::program_featurizer(c), nullptr);
    EXPECT_NE(runtime::program_featurizer(c), runtime::program_featurizer(a));
    runtime::Program* mixed[] = {a, c};
    EXPECT_THROW(runtime::run_sharing_featurizer(mixed, counts, 2, x.data(), 4, out.data()), Error);

    // The shared buffers outlive the program that loaded them first.
    runtime::set_cache_limit(0);
    runtime::release_program(a);  // freed: nothing idle is kept
    runtime::run_program(b, xb.data(), 45, 4, out.data());
    for (size_t i = 0; i < want_b.size(); ++i) EXPECT_EQ(out[i], want_b[i]) << i;
    runtime::release_program(b);
    runtime::release_program(c);
    runtime::set_cache_limit(size_t(128) << 20);
}

}  // namespace
}  // namespace pg_predict
