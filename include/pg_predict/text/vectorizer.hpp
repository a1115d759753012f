// scikit-learn's CountVectorizer, TfidfVectorizer, HashingVectorizer and TfidfTransformer on
// one document: the analyzer's terms counted by vocabulary index (or hashed: MurmurHash3 of the
// UTF-8 term, as HashingVectorizer), then the transforms in the order the fitted pipeline applies
// them (binary, sublinear tf, idf, l1/l2 norms), as a sparse row, in float64.
//
// What follows the vectorizer reads K columns of the row through a projection: y = row · W +
// offset, W sparse by term (a linear model's coefficients, TruncatedSVD's components, or the
// unit columns a tree reads). A row of 10^6 terms is never made dense.
//
// The vocabulary and the projection are flat arrays indexed by offsets, so that one read-only
// copy can later be shared by every backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/text/analyzer.hpp"

namespace pg_predict::text {

// The lookup tables' own hash of a short byte string (vocabularies, text dictionaries): eight
// bytes a step, the last 1-7 by two overlapping loads. Not scikit-learn's (murmurhash3_32).
uint64_t hash_bytes(const char* data, size_t length) noexcept;

// MurmurHash3_x86_32 of the bytes (sklearn.utils.murmurhash3_32 of a str hashes its UTF-8).
uint32_t murmurhash3_32(const char* data, size_t length, uint32_t seed);

// The terms of a fitted vocabulary_, by index: an open-addressing table over one byte buffer.
class Vocabulary {
public:
    Vocabulary() = default;
    explicit Vocabulary(const std::vector<std::string>& terms);  // throws on a repeated term
    int64_t find(std::string_view term) const;                   // -1 when absent
    // The indices of many terms at once (-1 where absent), their table slots prefetched first:
    // a vocabulary of 10^6 terms is a cache miss a term, and the misses then overlap.
    void find_all(const std::string& bytes, const std::vector<std::pair<uint32_t, uint32_t>>& terms,
                  std::vector<int64_t>& out, std::vector<uint64_t>& scratch) const;
    int64_t size() const { return static_cast<int64_t>(offsets_.empty() ? 0 : offsets_.size() - 1); }
    std::string_view term(int64_t i) const { return {bytes_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]}; }

private:
    std::string bytes_;              // the terms, back to back
    std::vector<uint64_t> offsets_;  // term i is bytes_[offsets_[i], offsets_[i + 1])
    // Per slot the term's index + 1 (0: empty) in the low half, its hash's high half above, so
    // that a probe compares bytes only where the hashes agree. A power of two, a third full.
    std::vector<uint64_t> slots_;
};

// The vocabulary of `terms`, one copy per process for every vectorizer with the same terms (two
// models fitted with one vectorizer, a model's versions): kept while one of them holds it.
std::shared_ptr<const Vocabulary> shared_vocabulary(const std::vector<std::string>& terms);

enum class TextOp {
    Binary,     // every stored value is 1 (X.data.fill(1))
    Sublinear,  // log(x) + 1
    Idf,        // x * idf[index]
    NormL1,     // x / sum |x| (a zero row stays)
    NormL2,     // x / sqrt(sum x^2)
    Threshold,  // x > threshold ? 1 : 0, the zeros dropped (Binarizer, BernoulliNB's binarize)
};

struct VectorizerSpec {
    AnalyzerConfig analyzer;
    std::vector<std::string> vocabulary;  // by index; empty when hashing
    int64_t hash_features = 0;            // HashingVectorizer's n_features (> 0: hashing)
    bool alternate_sign = true;
    std::vector<TextOp> ops;
    std::vector<std::vector<double>> idf;  // the k-th TextOp::Idf's weights, by index
    double threshold = 0.0;               // TextOp::Threshold's, >= 0
    // dtype=np.float32: every stored value is rounded to float32 after each op, and each op
    // computes as scikit-learn's float32 code does (products in float, the norm's sum in double).
    bool float32 = false;

    int64_t width() const { return hash_features > 0 ? hash_features : static_cast<int64_t>(vocabulary.size()); }
};

struct SparseEntry {
    int64_t index;
    double value;
};

// y = row · W + offset over the K columns that follow the vectorizer; W by term (CSR).
struct Projection {
    int32_t width = 0;                  // K
    std::vector<int64_t> term_begin;    // V + 1 entries
    std::vector<int32_t> column;        // the entries' columns in [0, K)
    std::vector<double> weight;
    std::vector<double> offset;         // K

    void apply(const std::vector<SparseEntry>& row, double* out) const;
};

class Vectorizer {
public:
    explicit Vectorizer(const VectorizerSpec& spec);

    // The document's row: one entry per term index, in the order of their first occurrence (a
    // function of the document alone; scikit-learn sorts by index, which changes sums only in
    // their last bits), hashed collisions summed and a zero sum kept as scikit-learn keeps it.
    // Throws Error(InvalidParameter) for bytes that are not UTF-8.
    void transform(std::string_view document, std::vector<SparseEntry>& row);

    int64_t width() const { return width_; }
    const Vocabulary* vocabulary() const { return vocabulary_.get(); }

private:
    Analyzer analyzer_;
    std::shared_ptr<const Vocabulary> vocabulary_;
    int64_t hash_features_;
    bool alternate_sign_;
    std::vector<TextOp> ops_;
    std::vector<std::vector<double>> idf_;
    double threshold_;
    bool float32_;
    int64_t width_;
    std::string pending_;                                  // the document's terms, back to back
    std::vector<std::pair<uint32_t, uint32_t>> pending_at_;  // (offset, length) into pending_
    std::vector<int64_t> found_;
    std::vector<uint64_t> hashes_;
    std::vector<int32_t> entry_of_;  // by term index: its entry in the row being built, or -1
};

// A vectorizer and its projection as spec::TextVectorizer::vectorizer holds them (the scikit-learn
// importer writes it, src/importers/sklearn/text.cpp): {"analyzer": {...}, "vocabulary": [...] or
// "hashing": {"n_features", "alternate_sign"}, "ops": ["binary" | "sublinear" | "idf" | "l1" |
// "l2" | "threshold", ...], "idfs": [[...] per "idf" op] (or one "idf": [...]), "threshold": t,
// "float32": bool (absent: false),
// "projection": {"width", "term_begin", "column", "weight", "offset"}}.
// Throws Error(InvalidModel) naming what is malformed.
struct ParsedVectorizer {
    VectorizerSpec spec;
    Projection projection;
};
ParsedVectorizer parse_vectorizer(const nlohmann::json& v);
// A projection alone ({"width", "term_begin", "column", "weight", "offset"}) over V terms.
Projection parse_projection(const nlohmann::json& p, int64_t V);
// One line for EXPLAIN and explain_model: "tfidf word 1-2-grams, 12,345 terms".
std::string describe_vectorizer(const nlohmann::json& v);

}  // namespace pg_predict::text
