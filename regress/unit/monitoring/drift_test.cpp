// Profiles and drift statistics against brute-force computations on the same values.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/monitoring/drift.hpp"
#include "pg_predict/monitoring/profile.hpp"

namespace pg_predict::monitoring {
namespace {

// The two-sample Kolmogorov-Smirnov statistic by definition: the largest gap between the two
// empirical distribution functions, over every value of either sample.
double brute_ks(std::vector<double> a, std::vector<double> b) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::vector<double> all = a;
    all.insert(all.end(), b.begin(), b.end());
    double d = 0;
    for (double x : all) {
        double fa = (double)(std::upper_bound(a.begin(), a.end(), x) - a.begin()) / (double)a.size();
        double fb = (double)(std::upper_bound(b.begin(), b.end(), x) - b.begin()) / (double)b.size();
        d = std::max(d, std::fabs(fa - fb));
    }
    return d;
}

std::string profile_of(const std::vector<double>& values, int nulls = 0) {
    Profiler p({{"x", ColumnKind::Numeric}});
    for (double v : values) {
        p.add_number(0, v);
        p.end_row();
    }
    for (int i = 0; i < nulls; i++) {
        p.add_null(0);
        p.end_row();
    }
    return p.document();
}

DriftRow check(const std::string& baseline, const std::vector<double>& values, const std::string& options = "{}") {
    DriftCheck c(baseline, {{"x", ColumnKind::Numeric}}, options);
    for (double v : values) {
        c.add_number(0, v);
        c.end_row();
    }
    return c.results().at(0);
}

std::vector<double> normal(int n, double mean, unsigned seed, bool rounded = false) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> d(mean, 1.0);
    std::vector<double> v(n);
    for (double& x : v) x = rounded ? std::round(d(rng) * 4) / 4 : d(rng);
    return v;
}

TEST(Profile, MomentsAndPointsOfEveryValue) {
    std::vector<double> v = normal(800, 2.0, 1);
    nlohmann::json d = nlohmann::json::parse(profile_of(v, 200))["columns"][0];
    EXPECT_EQ(d["rows"], 1000);
    EXPECT_EQ(d["nulls"], 200);
    double mean = 0;
    for (double x : v) mean += x;
    mean /= (double)v.size();
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    EXPECT_NEAR(d["mean"].get<double>(), mean, 1e-12);
    EXPECT_NEAR(d["stddev"].get<double>(), std::sqrt(var / (double)v.size()), 1e-12);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(d["points"].get<std::vector<double>>(), sorted);  // at most kPoints: every value
    EXPECT_EQ(d["min"].get<double>(), sorted.front());
    EXPECT_EQ(d["sampled"], false);
    double total = 0;
    for (double s : d["bins"]["shares"]) total += s;
    EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(Profile, PointsAreOrderStatisticsBeyondKPoints) {
    std::vector<double> v = normal(5000, 0.0, 2);
    nlohmann::json d = nlohmann::json::parse(profile_of(v))["columns"][0];
    std::vector<double> points = d["points"].get<std::vector<double>>();
    ASSERT_EQ(points.size(), (size_t)kPoints);
    std::sort(v.begin(), v.end());
    for (int i = 0; i < kPoints; i++) EXPECT_EQ(points[i], v[(size_t)((i + 1) * 5000 + kPoints - 1) / kPoints - 1]);
}

TEST(Profile, SampleIsBoundedAndSeeded) {
    std::vector<double> v = normal(3 * kSample, 0.0, 3);
    std::string a = profile_of(v), b = profile_of(v);
    EXPECT_EQ(a, b);  // the same rows give the same profile
    nlohmann::json d = nlohmann::json::parse(a)["columns"][0];
    EXPECT_EQ(d["sampled"], true);
    EXPECT_EQ(d["values"], 3 * kSample);
    // a uniform sample: its median within a few hundredths of the values' (n = 20,000)
    std::vector<double> points = d["points"].get<std::vector<double>>();
    EXPECT_NEAR(points[kPoints / 2], 0.0, 0.05);
}

TEST(Drift, KsIsExactAgainstAtMostKPointsOfBaseline) {
    for (bool ties : {false, true}) {
        std::vector<double> base = normal(700, 0.0, 4, ties), now = normal(1500, 0.3, 5, ties);
        EXPECT_NEAR(check(profile_of(base), now, R"({"numeric_statistic": "ks"})").value, brute_ks(base, now), 1e-12)
            << "ties " << ties;
    }
}

TEST(Drift, KsWithinOneOverKPointsOfLargerBaseline) {
    std::vector<double> base = normal(9000, 0.0, 6), now = normal(3000, 0.2, 7);
    EXPECT_NEAR(check(profile_of(base), now, R"({"numeric_statistic": "ks"})").value, brute_ks(base, now),
                1.0 / kPoints);
}

TEST(Drift, BinnedStatisticsFromTheBins) {
    std::vector<double> base = normal(4000, 0.0, 8), now = normal(4000, 1.0, 9);
    DriftRow row = check(profile_of(base), now);
    nlohmann::json detail = nlohmann::json::parse(row.detail);
    std::vector<double> b = detail["bins"]["baseline_shares"], c = detail["bins"]["shares"];
    std::vector<double> edges = detail["bins"]["edges"];
    // the current shares by counting
    std::vector<double> counted(edges.size() + 1, 0.0);
    for (double x : now) counted[std::upper_bound(edges.begin(), edges.end(), x) - edges.begin()] += 1.0 / now.size();
    for (size_t i = 0; i < c.size(); i++) EXPECT_NEAR(c[i], counted[i], 1e-12);
    double psi = 0, js = 0;
    for (size_t i = 0; i < b.size(); i++) {
        double p = std::max(b[i], kPsiFloor), q = std::max(c[i], kPsiFloor);
        psi += (q - p) * std::log(q / p);
        double m = (b[i] + c[i]) / 2;
        if (b[i] > 0) js += b[i] * std::log2(b[i] / m) / 2;
        if (c[i] > 0) js += c[i] * std::log2(c[i] / m) / 2;
    }
    EXPECT_EQ(row.statistic, "psi");
    EXPECT_NEAR(row.value, psi, 1e-12);
    EXPECT_NEAR(detail["jensen_shannon"].get<double>(), std::sqrt(js), 1e-12);
    EXPECT_TRUE(row.anomaly);
    EXPECT_FALSE(check(profile_of(base), normal(4000, 0.0, 10)).anomaly);
}

TEST(Drift, NullShareAndNewCategories) {
    Profiler p({{"c", ColumnKind::Categorical}});
    for (int i = 0; i < 1000; i++) {
        if (i % 10 == 0)
            p.add_null(0);
        else
            p.add_text(0, i % 3 == 0 ? "a" : "b");
        p.end_row();
    }
    DriftCheck c(p.document(), {{"c", ColumnKind::Categorical}}, "{}");
    for (int i = 0; i < 1000; i++) {
        if (i % 2 == 0)
            c.add_null(0);
        else
            c.add_text(0, i % 7 == 0 ? "new" : i % 3 == 0 ? "a" : "b");
        c.end_row();
    }
    DriftRow row = c.results().at(0);
    nlohmann::json d = nlohmann::json::parse(row.detail);
    EXPECT_NEAR(d["null_share_change"].get<double>(), 0.5 - 0.1, 1e-12);
    EXPECT_EQ(d["new_categories"], nlohmann::json::array({"new"}));
    EXPECT_GT(d["new_category_share"].get<double>(), 0.1);
    EXPECT_TRUE(row.anomaly);
}

TEST(Drift, OptionsAreChecked) {
    std::string base = profile_of(normal(100, 0, 11));
    for (const char* bad : {R"({"bogus": 1})", R"({"numeric_statistic": "median"})", R"({"thresholds": {"psi": -1}})",
                            R"({"features": {"nope": {}}})", R"({"features": {"x": {"statistic": "what"}}})",
                            R"({"features": {"x": {"colour": 1}}})", R"([1])"})
        EXPECT_THROW(DriftCheck(base, {{"x", ColumnKind::Numeric}}, bad), Error) << bad;
    EXPECT_THROW(DriftCheck(base, {{"y", ColumnKind::Numeric}}, "{}"), Error);      // not in the baseline
    EXPECT_THROW(DriftCheck(base, {{"x", ColumnKind::Categorical}}, "{}"), Error);  // another kind
    DriftRow row = check(base, normal(100, 0, 12), R"({"features": {"x": {"statistic": "ks", "threshold": 0.5}}})");
    EXPECT_EQ(row.statistic, "ks");
    EXPECT_EQ(row.threshold, 0.5);
}

}  // namespace
}  // namespace pg_predict::monitoring
