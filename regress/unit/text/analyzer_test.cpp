// The text analyzers and HashingVectorizer against scikit-learn's own (text_fixtures.hpp,
// written by gen_text_fixtures.py): every term of every document, every hashed row.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/text/analyzer.hpp"
#include "pg_predict/text/vectorizer.hpp"
#include "text_fixtures.hpp"

namespace text = pg_predict::text;
using nlohmann::json;

namespace {

const json& fixture() {
    static const json doc = [] {
        std::string s;
        for (const char* part : kTextFixtureParts) s += part;
        return json::parse(s);
    }();
    return doc;
}

text::AnalyzerConfig config_of(const json& c) {
    text::AnalyzerConfig a;
    const std::string kind = c.at("analyzer");
    a.kind = kind == "word" ? text::AnalyzerKind::Word : kind == "char" ? text::AnalyzerKind::Char : text::AnalyzerKind::CharWb;
    a.min_n = c.at("ngram_range")[0];
    a.max_n = c.at("ngram_range")[1];
    a.lowercase = c.value("lowercase", true);
    const std::string accents = c.value("strip_accents", "none");
    a.strip_accents = accents == "ascii" ? text::StripAccents::Ascii
                      : accents == "unicode" ? text::StripAccents::Unicode : text::StripAccents::None;
    a.token_class = c.value("token_class", "word") == "word" ? text::TokenClass::Word : text::TokenClass::NonSpace;
    a.min_token_length = c.value("min_token_length", 2);
    if (c.contains("stop_words")) a.stop_words = c.at("stop_words").get<std::vector<std::string>>();
    return a;
}

}  // namespace

TEST(TextAnalyzer, TermsAreScikitLearns) {
    const json& f = fixture();
    const auto docs = f.at("documents").get<std::vector<std::string>>();
    for (const json& c : f.at("cases")) {
        SCOPED_TRACE(c.at("config").dump());
        text::Analyzer analyzer(config_of(c.at("config")));
        for (size_t d = 0; d < docs.size(); ++d) {
            std::vector<std::string> got;
            analyzer.analyze(docs[d], [&](std::string_view t) { got.emplace_back(t); });
            std::sort(got.begin(), got.end());
            const auto want = c.at("terms")[d].get<std::vector<std::string>>();
            EXPECT_EQ(got, want) << "document " << d << ": " << json(docs[d]).dump();
        }
    }
}

TEST(TextAnalyzer, MurmurHashIsScikitLearns) {
    for (const json& m : fixture().at("murmur")) {
        const std::string t = m[0];
        EXPECT_EQ(static_cast<int32_t>(text::murmurhash3_32(t.data(), t.size(), 0)), m[1].get<int64_t>()) << t;
    }
}

TEST(TextVectorizer, HashingRowsAreScikitLearns) {
    const json& f = fixture();
    const auto docs = f.at("documents").get<std::vector<std::string>>();
    for (const json& h : f.at("hashing")) {
        SCOPED_TRACE(h.dump().substr(0, 120));
        text::VectorizerSpec spec;
        spec.analyzer = config_of({{"analyzer", h.at("analyzer")}, {"ngram_range", h.at("ngram_range")}});
        spec.hash_features = h.at("n_features");
        spec.alternate_sign = h.at("alternate_sign");
        if (h.at("binary")) spec.ops.push_back(text::TextOp::Binary);
        text::Vectorizer v(spec);
        std::vector<text::SparseEntry> row;
        for (size_t d = 0; d < docs.size(); ++d) {
            v.transform(docs[d], row);
            std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
            const json& want = h.at("rows")[d];
            ASSERT_EQ(row.size(), want.size()) << "document " << d;
            for (size_t k = 0; k < row.size(); ++k) {
                EXPECT_EQ(row[k].index, want[k][0].get<int64_t>()) << "document " << d;
                EXPECT_EQ(row[k].value, want[k][1].get<double>()) << "document " << d;
            }
        }
    }
}

// TF-IDF rows in float32 are bit for bit scikit-learn's: each product rounded as float, the
// norm's sum of float squares exact in double whatever its order. (numpy's float32 log may be
// its own SIMD one: sublinear tf is allowed one float32 ulp.) Float64 rows agree to rounding.
TEST(TextVectorizer, WeightedRowsAreScikitLearns) {
    const json& f = fixture();
    auto docs = f.at("documents").get<std::vector<std::string>>();
    for (const json& w : f.at("weighted")) {
        const json what = {{"ops", w.at("ops")}, {"float32", w.at("float32")}, {"analyzer", w.at("analyzer")}};
        SCOPED_TRACE(what.dump());
        text::VectorizerSpec spec;
        spec.analyzer = config_of({{"analyzer", w.at("analyzer")}, {"ngram_range", w.at("ngram_range")}});
        spec.vocabulary = w.at("vocabulary").get<std::vector<std::string>>();
        const auto ops = w.at("ops").get<std::vector<std::string>>();
        const bool sublinear = std::find(ops.begin(), ops.end(), "sublinear") != ops.end();
        for (const std::string& op : ops)
            spec.ops.push_back(op == "binary" ? text::TextOp::Binary : op == "sublinear" ? text::TextOp::Sublinear
                               : op == "idf" ? text::TextOp::Idf : op == "l1" ? text::TextOp::NormL1
                               : op == "l2" ? text::TextOp::NormL2 : text::TextOp::Threshold);
        if (!w.at("idf").empty()) spec.idf = {w.at("idf").get<std::vector<double>>()};
        spec.threshold = w.at("threshold");
        spec.float32 = w.at("float32");
        text::Vectorizer v(spec);
        std::vector<text::SparseEntry> row;
        const json& rows = w.at("rows");
        for (size_t d = 0; d < rows.size(); ++d) {
            v.transform(docs[d], row);
            std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
            const json& want = rows[d];
            ASSERT_EQ(row.size(), want.size()) << "document " << d;
            for (size_t k = 0; k < row.size(); ++k) {
                EXPECT_EQ(row[k].index, want[k][0].get<int64_t>()) << "document " << d;
                const double x = want[k][1];
                if (spec.float32 && !sublinear)
                    EXPECT_EQ(row[k].value, x) << "document " << d;
                else if (spec.float32)
                    EXPECT_LE(std::fabs(row[k].value - x), std::fabs(x) * 1.2e-7) << "document " << d;
                else
                    EXPECT_NEAR(row[k].value, x, std::fabs(x) * 1e-14) << "document " << d;
            }
        }
    }
}

TEST(TextAnalyzer, RefusesInvalidUtf8) {
    text::Analyzer analyzer(text::AnalyzerConfig{});
    for (std::string bad : {std::string("ab\xff"), std::string("\xc3"), std::string("\xed\xa0\x80"),
                            std::string("\xc0\xaf"), std::string("\xf4\x90\x80\x80")}) {
        try {
            analyzer.analyze(bad, [](std::string_view) {});
            ADD_FAILURE() << "no error for " << json::binary_t(std::vector<uint8_t>(bad.begin(), bad.end())).size();
        } catch (const pg_predict::Error& e) {
            EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
        }
    }
}

TEST(TextVectorizer, SameVocabularyIsShared) {
    text::VectorizerSpec spec;
    spec.vocabulary = {"cat", "dog", "bird"};
    text::Vectorizer a(spec), b(spec);
    EXPECT_EQ(a.vocabulary(), b.vocabulary());
    spec.vocabulary = {"cat", "dog", "fish"};
    text::Vectorizer c(spec);
    EXPECT_NE(a.vocabulary(), c.vocabulary());
    std::vector<text::SparseEntry> row;
    c.transform("fish and cat", row);
    ASSERT_EQ(row.size(), 2u);
}
