// The LightGBM importer against LightGBM 4.6's own predictions (regress/fixtures/lightgbm/:
// real models, rows at, just above and just below split thresholds, NaN, zeros, unseen and
// negative categories): the reference evaluator and the compiled program of every strategy,
// over float64 rows, probabilities/values and raw scores. Then hostile files.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/runtime/api.hpp"

namespace spec = pg_predict::spec;
namespace importers = pg_predict::importers;
namespace runtime = pg_predict::runtime;
using nlohmann::json;
using pg_predict::Artifact;
using pg_predict::ArtifactKind;
using pg_predict::Error;
using pg_predict::ErrorCategory;

namespace {

std::string read_file(const std::string& name) {
    std::ifstream in(std::string(PG_PREDICT_FIXTURES) + "/lightgbm/" + name, std::ios::binary);
    EXPECT_TRUE(in.good()) << name;
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A CSV of numbers with a header; an empty field is NaN. Row-major.
struct Table {
    std::vector<std::string> header;
    std::vector<double> values;
    size_t rows = 0;
    size_t cols() const { return header.size(); }
    double at(size_t r, size_t c) const { return values[r * cols() + c]; }
};

std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, ',')) out.push_back(field);
    if (!line.empty() && line.back() == ',') out.push_back("");
    return out;
}

Table read_csv(const std::string& name) {
    std::stringstream in(read_file(name));
    Table t;
    std::string line;
    std::getline(in, line);
    t.header = split(line);
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        auto fields = split(line);
        fields.resize(t.cols());
        for (const std::string& f : fields) t.values.push_back(f.empty() ? NAN : std::stod(f));
        ++t.rows;
    }
    return t;
}

struct Case {
    std::string name;
    Table x, expected;
    std::string model;
    // The expected columns: pred_0.. then raw_0..
    std::vector<size_t> pred, raw;
};

Case load(const std::string& name) {
    Case c;
    c.name = name;
    c.model = read_file(name + ".model.txt");
    c.x = read_csv(name + ".csv");
    c.expected = read_csv(name + ".expected.csv");
    for (size_t i = 0; i < c.expected.cols(); ++i)
        (c.expected.header[i].rfind("raw_", 0) == 0 ? c.raw : c.pred).push_back(i);
    return c;
}

std::vector<std::string> case_names() {
    std::vector<std::string> names;
    for (const json& c : json::parse(read_file("cases.json"))) names.push_back(c["name"].get<std::string>());
    return names;
}

// What predict_proba / predict give, per row, from the program's output columns: a binary
// classifier's [1 - p, p] gives p, LightGBM's one column.
std::vector<double> lightgbm_columns(const std::vector<float>& out, size_t row, int width, size_t want) {
    std::vector<double> v;
    if (width == 2 && want == 1) v.push_back(out[row * width + 1]);
    else
        for (int k = 0; k < width; ++k) v.push_back(out[row * width + k]);
    return v;
}

// Every row within max(1e-5, 1e-5·|expected|); returns the number of bad rows (and reports
// the first few).
int compare(const Case& c, const std::vector<float>& out, int width, const std::vector<size_t>& cols,
            const std::string& what) {
    int bad = 0;
    for (size_t r = 0; r < c.x.rows; ++r) {
        const std::vector<double> got = lightgbm_columns(out, r, width, cols.size());
        EXPECT_EQ(got.size(), cols.size()) << what;
        if (got.size() != cols.size()) return 1;
        for (size_t k = 0; k < cols.size(); ++k) {
            const double want = c.expected.at(r, cols[k]);
            if (std::fabs(got[k] - want) <= std::max(1e-5, 1e-5 * std::fabs(want))) continue;
            if (++bad <= 3) ADD_FAILURE() << what << " row " << r << " column " << k << ": got " << got[k] << ", LightGBM " << want;
        }
    }
    return bad;
}

std::vector<float> reference(const spec::Pipeline& p, const Case& c) {
    std::vector<float> out(c.x.rows * p.output_width());
    spec::reference_predict(p, c.x.values.data(), static_cast<int64_t>(c.x.rows), out.data());
    return out;
}

std::vector<float> compiled(const Case& c, const std::string& options, int& width) {
    static int64_t id = 9000;
    runtime::BuiltModel* m = runtime::build_model(Artifact{ArtifactKind::Text, c.model}, "auto", options);
    runtime::Program* prog = runtime::load_program(++id, m->program.data(), m->program.size());
    width = runtime::program_output_width(prog);
    EXPECT_TRUE(runtime::program_reads_float64(prog) || c.name == "stump") << c.name;
    std::vector<float> out(c.x.rows * width);
    runtime::run_program(prog, c.x.values.data(), static_cast<int64_t>(c.x.rows), static_cast<int64_t>(c.x.cols()),
                         out.data());
    runtime::release_program(prog);
    runtime::free_built_model(m);
    return out;
}

template <typename F>
std::string error_of(F&& f, ErrorCategory cat) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), cat) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

spec::Pipeline import_text(const std::string& text, const json& options = json::object()) {
    return importers::import_lightgbm(text, options);
}

}  // namespace

TEST(LightgbmImporter, DetectsTheFormat) {
    const std::string model = read_file("stump.model.txt");
    EXPECT_EQ(importers::detect_format(Artifact{ArtifactKind::Text, model}), "lightgbm");
    EXPECT_EQ(importers::detect_format(Artifact{ArtifactKind::Binary, model}), "lightgbm");
    const spec::Pipeline p = importers::import_model(Artifact{ArtifactKind::Text, model}, "auto", json::object());
    EXPECT_EQ(p.source_format, "lightgbm");
    EXPECT_EQ(p.features.size(), 8u);
    EXPECT_EQ(p.features[3], "f3");
    // Its options are refused for other formats rather than ignored.
    error_of([&] { importers::import_model(Artifact{ArtifactKind::Json, read_file("../regression_tiny.json")}, "auto",
                                           json{{"raw_score", true}}); },
             ErrorCategory::InvalidParameter);
}

TEST(LightgbmImporter, ReferenceAgreesWithLightgbm) {
    for (const std::string& name : case_names()) {
        SCOPED_TRACE(name);
        const Case c = load(name);
        const spec::Pipeline p = import_text(c.model);
        EXPECT_EQ(compare(c, reference(p, c), p.output_width(), c.pred, name + " reference"), 0);
        const spec::Pipeline raw = import_text(c.model, json{{"raw_score", true}});
        EXPECT_EQ(compare(c, reference(raw, c), raw.output_width(), c.raw, name + " reference raw"), 0);
    }
}

TEST(LightgbmImporter, EveryStrategyAgreesWithLightgbm) {
    for (const std::string& name : case_names()) {
        SCOPED_TRACE(name);
        const Case c = load(name);
        for (const char* strategy : {"native", "gemm", "tree_traversal", "perfect_tree_traversal"}) {
            SCOPED_TRACE(strategy);
            int width = 0;
            std::vector<float> out;
            try {
                out = compiled(c, std::string("{\"strategy\": \"") + strategy + "\"}", width);
            } catch (const Error& e) {
                // A tensor strategy may refuse a model too large for it (deep trees), by name.
                EXPECT_EQ(e.category(), ErrorCategory::InvalidParameter) << e.what();
                std::printf("  %s: %s refused: %s\n", name.c_str(), strategy, e.what());
                continue;
            }
            EXPECT_EQ(compare(c, out, width, c.pred, name + " " + strategy), 0);
        }
        int width = 0;
        const std::vector<float> raw = compiled(c, R"({"raw_score": true})", width);
        EXPECT_EQ(compare(c, raw, width, c.raw, name + " native raw"), 0);
    }
}

TEST(LightgbmImporter, NumIterationKeepsTheFirstIterations) {
    const Case c = load("multiclass");
    const spec::Pipeline all = import_text(c.model);
    EXPECT_EQ(all.model.trees.size(), 120u);  // 30 iterations × 4 classes
    const spec::Pipeline three = import_text(c.model, json{{"num_iteration", 3}});
    ASSERT_EQ(three.model.trees.size(), 12u);
    for (size_t i = 0; i < 12; ++i) EXPECT_EQ(three.model.trees[i].value, all.model.trees[i].value);
    EXPECT_EQ(import_text(c.model, json{{"num_iteration", 0}}).model.trees.size(), 120u);
    EXPECT_EQ(import_text(c.model, json{{"num_iteration", 500}}).model.trees.size(), 120u);
    // average_output divides by the iterations used.
    const Case rf = load("rf");
    const spec::Pipeline rf_all = import_text(rf.model), rf_two = import_text(rf.model, json{{"num_iteration", 2}});
    EXPECT_NEAR(rf_two.model.trees[0].value.back(), rf_all.model.trees[0].value.back() * 10.0f, 1e-6);
    error_of([&] { import_text(c.model, json{{"num_iteration", "3"}}); }, ErrorCategory::InvalidParameter);
    error_of([&] { import_text(c.model, json{{"raw_score", 1}}); }, ErrorCategory::InvalidParameter);
}

TEST(LightgbmImporter, HostileFilesGiveCleanErrors) {
    const std::string good = read_file("categorical.model.txt");
    const auto expect_bad = [](const std::string& text, const std::string& needle) {
        SCOPED_TRACE(needle);
        std::string msg;
        try {
            importers::import_lightgbm(text, json::object());
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            msg = e.what();
        }
        EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    };
    const auto replace_line = [&](std::string text, const std::string& key, const std::string& value) {
        const size_t at = text.find("\n" + key + "=");
        EXPECT_NE(at, std::string::npos) << key;
        const size_t end = text.find('\n', at + 1);
        return text.replace(at + 1, end - at - 1, key + "=" + value);
    };
    // Truncated anywhere: in the header, inside a tree, between trees.
    expect_bad(good.substr(0, 40), "");
    expect_bad(good.substr(0, good.find("Tree=3") + 200), "");
    expect_bad(good.substr(0, good.find("Tree=3")), "end of trees");
    expect_bad("", "first line");
    expect_bad("tree\nversion=v4\n", "num_class");
    // Wrong numbers of values, bad numbers.
    expect_bad(replace_line(good, "leaf_value", "1 2 3"), "leaf_value\" has 3 values");
    expect_bad(replace_line(good, "threshold", "x"), "threshold");
    expect_bad(replace_line(good, "num_leaves", "-4"), "num_leaves");
    expect_bad(replace_line(good, "num_leaves", "99999999999"), "num_leaves");
    expect_bad(replace_line(good, "max_feature_idx", "2000000000"), "max_feature_idx");
    expect_bad(replace_line(good, "feature_names", "a b"), "feature_names");
    expect_bad(replace_line(good, "feature_names", "a a b c d e"), "twice");
    // A name that is not UTF-8 (found by the fuzzer: the spec's JSON could not be written).
    expect_bad(replace_line(good, "feature_names", "f0 \xff f2 f3 f4 f5"), "feature 1 is not valid UTF-8");
    expect_bad(replace_line(good, "feature_names", "f0 \xc0\xaf f2 f3 f4 f5"), "feature 1 is not valid UTF-8");
    expect_bad(replace_line(good, "feature_names", "f0 \xed\xa0\x80 f2 f3 f4 f5"), "feature 1 is not valid UTF-8");
    EXPECT_NO_THROW(importers::import_lightgbm(replace_line(good, "feature_names", "f0 \xc3\xa9t\xc3\xa9 f2 f3 f4 \xf0\x9f\x99\x82"),
                                               json::object()));
    // Child indices out of range, shared, cyclic.
    const std::string stump = read_file("binary.model.txt");
    const size_t t0 = stump.find("Tree=0");
    const std::string left = stump.substr(stump.find("left_child=", t0));
    const std::string first_tree_left = left.substr(0, left.find('\n'));
    auto with_left = [&](const std::string& values) {
        std::string s = stump;
        return s.replace(s.find(first_tree_left), first_tree_left.size(), "left_child=" + values);
    };
    std::string kids = first_tree_left.substr(11);
    expect_bad(with_left("99" + kids.substr(kids.find(' '))), "left_child[0]");
    expect_bad(with_left("0" + kids.substr(kids.find(' '))), "a second time");  // the root its own child
    expect_bad(with_left("-1" + kids.substr(kids.find(' '))), "");               // leaf 0 twice or node unreached
    // Bad bitsets: a categorical threshold that indexes no set, boundaries that go back.
    expect_bad(replace_line(good, "cat_boundaries", "0 5 2"), "");
    expect_bad(replace_line(good, "tree_sizes", "1 2"), "tree_sizes");
    expect_bad(replace_line(good, "objective", "lambdarank_xyz"), "not supported");
    expect_bad(replace_line(good, "num_tree_per_iteration", "3"), "");
    // The good file still reads.
    EXPECT_NO_THROW(importers::import_lightgbm(good, json::object()));
}
