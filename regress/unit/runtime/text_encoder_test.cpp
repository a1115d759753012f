// Dictionary encoding of text inputs: indices by vocabulary position, -1 for unknown values,
// exact byte comparison, and clear errors for a malformed dictionary.
#include <gtest/gtest.h>

#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/runtime/api.hpp"

using namespace pg_predict;

namespace {
runtime::TextEncoder* make(const std::string& json) {
    return runtime::make_text_encoder(json.data(), json.size());
}
int32_t encode(const runtime::TextEncoder* e, int input, const std::string& v) {
    return runtime::encode_text(e, input, v.data(), v.size());
}
}  // namespace

TEST(TextEncoder, IndicesFollowTheVocabulary) {
    auto* e = make(R"([{"input": 2, "vocabulary": ["paris", "berlin", "", "rome"], "unknown_is_error": true},
                      {"input": 0, "vocabulary": ["a"]}])");
    EXPECT_EQ(encode(e, 2, "paris"), 0);
    EXPECT_EQ(encode(e, 2, "berlin"), 1);
    EXPECT_EQ(encode(e, 2, ""), 2);
    EXPECT_EQ(encode(e, 2, "rome"), 3);
    EXPECT_EQ(encode(e, 2, "Rome"), -1);
    EXPECT_EQ(encode(e, 2, "rome "), -1);
    EXPECT_EQ(encode(e, 0, "a"), 0);
    EXPECT_EQ(encode(e, 1, "a"), -1);   // a numeric input
    EXPECT_EQ(encode(e, 7, "a"), -1);   // out of range
    EXPECT_TRUE(runtime::unknown_text_is_error(e, 2));
    EXPECT_FALSE(runtime::unknown_text_is_error(e, 0));
    runtime::free_text_encoder(e);
}

TEST(TextEncoder, LargeVocabulary) {
    std::string json = R"([{"input": 0, "vocabulary": [)";
    for (int i = 0; i < 5000; i++) json += (i ? "," : "") + std::string("\"v") + std::to_string(i) + "\"";
    json += "]}]";
    auto* e = make(json);
    for (int i = 0; i < 5000; i++) ASSERT_EQ(encode(e, 0, "v" + std::to_string(i)), i);
    EXPECT_EQ(encode(e, 0, "v5000"), -1);
    runtime::free_text_encoder(e);
}

TEST(TextEncoder, MalformedDictionariesAreErrors) {
    for (const char* bad : {"{", R"([{"vocabulary": ["a"]}])", R"([{"input": 0, "vocabulary": "a"}])",
                            R"([{"input": 0, "vocabulary": ["a", "a"]}])", R"([{"input": -1, "vocabulary": []}])"}) {
        try {
            runtime::free_text_encoder(make(bad));
            ADD_FAILURE() << "accepted " << bad;
        } catch (const Error& e) {
            EXPECT_EQ(e.category(), ErrorCategory::InvalidModel) << bad;
        }
    }
}

// Every value length the hash and the inline compare treat differently (0-3, 4-7, 8-16, longer,
// the 8-byte steps): a value found only when every byte matches, a changed byte anywhere misses.
TEST(TextEncoder, EveryLengthAndBytePosition) {
    std::string json = R"([{"input": 0, "vocabulary": [)";
    for (int n = 0; n <= 40; n++) json += (n ? "," : "") + std::string("\"") + std::string(n, 'x') + "\"";
    json += "]}]";
    auto* e = make(json);
    for (int n = 0; n <= 40; n++) {
        ASSERT_EQ(encode(e, 0, std::string(n, 'x')), n);
        for (int p = 0; p < n; p++) {
            std::string v(n, 'x');
            v[p] = 'y';
            ASSERT_EQ(encode(e, 0, v), -1) << "length " << n << " byte " << p;
            v[p] = '\0';
            ASSERT_EQ(encode(e, 0, v), -1) << "length " << n << " NUL at " << p;
        }
    }
    runtime::free_text_encoder(e);
}
