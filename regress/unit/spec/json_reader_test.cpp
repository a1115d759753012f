// spec::JsonReader, the one reader of model documents and stored specs: its rules (missing,
// numbers, integers) and that every message names the format and the full path.
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/json_reader.hpp"

using nlohmann::json;
using pg_predict::Error;
using pg_predict::ErrorCategory;
using pg_predict::spec::JsonReader;

namespace {

// The message of the Error `f` throws, which must be of category `want`.
template <class F>
std::string message(F f, ErrorCategory want = ErrorCategory::InvalidModel) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(static_cast<int>(e.category()), static_cast<int>(want)) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

const json kDoc = json::parse(R"({
  "model": {"trees": [{"left": [1, -1, 2.0], "value": [0.5, "NaN", "-Infinity", "nan"]}],
            "name": "m", "empty": null},
  "rows": [[1, 2], [3, 4]], "ragged": [[1], [2, 3]]
})");

}  // namespace

TEST(JsonReader, EveryMessageNamesTheFormatAndThePath) {
    const JsonReader doc(kDoc, "fmt");
    const JsonReader tree = doc.object("model").array("trees")[0];
    EXPECT_EQ(tree.path(), "model.trees[0]");
    EXPECT_EQ(message([&] { tree.array("left").integers(-1, 1); }),
              "fmt: model.trees[0].left[2]: is 2, outside [-1, 1]");
    EXPECT_EQ(message([&] { tree.need("right"); }), "fmt: model.trees[0].right: is missing");
    EXPECT_EQ(message([&] { doc.object("model").need("empty"); }), "fmt: model.empty: is missing");  // null
    EXPECT_EQ(message([&] { doc.object("model").array("name"); }), "fmt: model.name: must be an array");
    EXPECT_EQ(message([&] { doc.object("rows"); }), "fmt: rows: must be an object");
    EXPECT_EQ(message([&] { JsonReader(json::array(), "fmt").object("x"); }), "fmt: document: must be an object");
    EXPECT_EQ(message([&] { tree.need("value").finite_numbers(); }), "fmt: model.trees[0].value[1]: must be a finite number");
    EXPECT_EQ(message([&] { doc.need("rows").unsupported("rows are not supported"); }, ErrorCategory::Unsupported),
              "fmt: rows: rows are not supported");
    EXPECT_EQ(message([&] { doc.with_format("other").need("rows").matrix(2, 3); }),
              "other: rows[0]: has 2 entries, expected 3");
}

TEST(JsonReader, OneRuleForNumbersIntegersAndMissing) {
    const JsonReader tree = JsonReader(kDoc, "fmt").object("model").array("trees")[0];
    const std::vector<double> v = tree.array("value").numbers();
    ASSERT_EQ(v.size(), 4u);
    EXPECT_EQ(v[0], 0.5);
    EXPECT_TRUE(std::isnan(v[1]) && std::isnan(v[3]));
    EXPECT_EQ(v[2], -INFINITY);
    EXPECT_EQ(tree.array("left").integers(-1, 2), (std::vector<int32_t>{1, -1, 2}));  // 2.0 is an integer
    EXPECT_EQ(message([&] { JsonReader(json(2.5), "fmt", "x").integer(0, 9); }), "fmt: x: must be an integer");
    EXPECT_EQ(message([&] { JsonReader(json("1"), "fmt", "x").number(); }),
              "fmt: x: must be a number (or \"NaN\", \"Infinity\", \"-Infinity\")");
    EXPECT_TRUE(std::isnan(JsonReader(json(nullptr), "fmt", "x").nullable_number()));
    const JsonReader model = JsonReader(kDoc, "fmt").object("model");
    EXPECT_FALSE(model.optional("empty").has_value());  // null is absent
    EXPECT_FALSE(model.has("nothing"));
    EXPECT_EQ(model.string("nothing", "fallback"), "fallback");
    EXPECT_EQ(JsonReader(kDoc, "fmt").need("ragged").ragged_matrix(),
              (std::vector<std::vector<double>>{{1}, {2, 3}}));
}
