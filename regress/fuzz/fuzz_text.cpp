// libFuzzer target: any bytes as a document through scikit-learn's text analysis and the
// vectorizers (src/text/): the first byte chooses the analyzer, n-grams, case, accents and
// token class; the rest is the document (valid UTF-8 or not: a PostgreSQL text in a SQL_ASCII
// database may hold any bytes). Error(InvalidParameter) for bytes that are not UTF-8 is the
// one correct refusal; any other exception or sanitizer report is a bug.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/text/vectorizer.hpp"

namespace text = pg_predict::text;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t c = data[0];
    const std::string_view doc(reinterpret_cast<const char*>(data + 1), size - 1);
    text::VectorizerSpec spec;
    spec.analyzer.kind = static_cast<text::AnalyzerKind>(c % 3);
    spec.analyzer.min_n = 1 + (c >> 2) % 2;
    spec.analyzer.max_n = spec.analyzer.min_n + (c >> 3) % 3;
    spec.analyzer.lowercase = (c >> 5) & 1;
    spec.analyzer.strip_accents = static_cast<text::StripAccents>((c >> 6) % 3);
    spec.analyzer.token_class = (c >> 4) & 1 ? text::TokenClass::NonSpace : text::TokenClass::Word;
    spec.analyzer.stop_words = {"the", "σας", "北京"};
    spec.vocabulary = {"the", "ca", "caf", "café", "σ", " a", "ab", "é", "北京"};
    spec.ops = {text::TextOp::Sublinear, text::TextOp::Idf, text::TextOp::NormL2};
    spec.idf = {std::vector<double>(spec.vocabulary.size(), 1.5)};
    spec.float32 = (c >> 3) & 1;
    try {
        std::vector<text::SparseEntry> row;
        text::Vectorizer counted(spec);
        counted.transform(doc, row);
        text::VectorizerSpec hashed = spec;
        hashed.vocabulary.clear();
        hashed.hash_features = 1 + c;
        hashed.idf = {std::vector<double>(static_cast<size_t>(hashed.hash_features), 2.0)};
        hashed.ops = {text::TextOp::Binary, text::TextOp::Idf, text::TextOp::NormL1, text::TextOp::Threshold};
        hashed.threshold = 0.25;
        text::Vectorizer(hashed).transform(doc, row);
        for (const text::SparseEntry& e : row)
            if (e.index < 0 || e.index >= hashed.hash_features) {
                std::fprintf(stderr, "pg_predict fuzz: a hashed index outside [0, n_features)\n");
                std::abort();
            }
    } catch (const pg_predict::Error& e) {
        if (e.category() != pg_predict::ErrorCategory::InvalidParameter) {
            std::fprintf(stderr, "pg_predict fuzz: unexpected error: %s\n", e.what());
            std::abort();
        }
    }
    return 0;
}
