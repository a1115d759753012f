// One document through a fitted vectorizer (text/vectorizer.hpp).
#include "pg_predict/text/vectorizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "pg_predict/common/error.hpp"

namespace pg_predict::text {

namespace {

uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

uint64_t term_hash(std::string_view term) {
    // FNV-1a: the table's own hash, not scikit-learn's (that one is murmurhash3_32 below).
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : term) h = (h ^ c) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

}  // namespace

uint32_t murmurhash3_32(const char* data, size_t length, uint32_t seed) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(data);
    const size_t blocks = length / 4;
    uint32_t h = seed;
    const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
    for (size_t i = 0; i < blocks; ++i) {
        uint32_t k;
        std::memcpy(&k, bytes + 4 * i, 4);  // little-endian, as x86
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5 + 0xe6546b64;
    }
    const uint8_t* tail = bytes + 4 * blocks;
    uint32_t k = 0;
    switch (length & 3) {
        case 3: k ^= uint32_t(tail[2]) << 16; [[fallthrough]];
        case 2: k ^= uint32_t(tail[1]) << 8; [[fallthrough]];
        case 1:
            k ^= tail[0];
            k *= c1;
            k = rotl32(k, 15);
            k *= c2;
            h ^= k;
    }
    h ^= static_cast<uint32_t>(length);
    h ^= h >> 16;
    h *= 0x85ebca6b;
    h ^= h >> 13;
    h *= 0xc2b2ae35;
    h ^= h >> 16;
    return h;
}

Vocabulary::Vocabulary(const std::vector<std::string>& terms) {
    offsets_.reserve(terms.size() + 1);
    offsets_.push_back(0);
    size_t total = 0;
    for (const std::string& t : terms) total += t.size();
    bytes_.reserve(total);
    for (const std::string& t : terms) {
        bytes_ += t;
        offsets_.push_back(bytes_.size());
    }
    size_t size = 16;
    while (size < terms.size() * 2) size *= 2;
    slots_.assign(size, 0);
    for (size_t i = 0; i < terms.size(); ++i) {
        size_t slot = term_hash(terms[i]) & (size - 1);
        while (slots_[slot] != 0) {
            if (term(slots_[slot] - 1) == terms[i])
                fail(ErrorCategory::InvalidModel, "text vectorizer: the vocabulary repeats \"" + terms[i] + "\"");
            slot = (slot + 1) & (size - 1);
        }
        slots_[slot] = static_cast<uint32_t>(i + 1);
    }
}

int64_t Vocabulary::find(std::string_view t) const {
    if (slots_.empty()) return -1;
    const size_t mask = slots_.size() - 1;
    for (size_t slot = term_hash(t) & mask;; slot = (slot + 1) & mask) {
        const uint32_t i = slots_[slot];
        if (i == 0) return -1;
        if (term(i - 1) == t) return i - 1;
    }
}

void Projection::apply(const std::vector<SparseEntry>& row, double* out) const {
    for (int32_t k = 0; k < width; ++k) out[k] = offset.empty() ? 0.0 : offset[k];
    for (const SparseEntry& e : row)
        for (int64_t j = term_begin[e.index]; j < term_begin[e.index + 1]; ++j) out[column[j]] += e.value * weight[j];
}

Vectorizer::Vectorizer(const VectorizerSpec& spec)
    : analyzer_(spec.analyzer),
      vocabulary_(spec.hash_features > 0 ? Vocabulary() : Vocabulary(spec.vocabulary)),
      hash_features_(spec.hash_features),
      alternate_sign_(spec.alternate_sign),
      ops_(spec.ops),
      idf_(spec.idf),
      width_(spec.width()) {
    for (TextOp op : ops_)
        if (op == TextOp::Idf && static_cast<int64_t>(idf_.size()) != width_)
            fail(ErrorCategory::InvalidModel, "text vectorizer: idf has " + std::to_string(idf_.size()) +
                                                  " values for " + std::to_string(width_) + " terms");
}

void Vectorizer::transform(std::string_view document, std::vector<SparseEntry>& row) {
    row.clear();
    if (hash_features_ > 0) {
        const int64_t n = hash_features_;
        analyzer_.analyze(document, [&](std::string_view term) {
            const int32_t h = static_cast<int32_t>(murmurhash3_32(term.data(), term.size(), 0));
            // sklearn/feature_extraction/_hashing_fast.pyx: abs(-2**31) is taken as 2**31.
            const int64_t index = h == INT32_MIN ? (2147483647 - (n - 1)) % n : std::abs(static_cast<int64_t>(h)) % n;
            row.push_back({index, alternate_sign_ && h < 0 ? -1.0 : 1.0});
        });
    } else {
        analyzer_.analyze(document, [&](std::string_view term) {
            const int64_t index = vocabulary_.find(term);
            if (index >= 0) row.push_back({index, 1.0});
        });
    }
    // Sorted by index, duplicates summed in order (csr sum_duplicates keeps a zero sum).
    std::stable_sort(row.begin(), row.end(), [](const SparseEntry& a, const SparseEntry& b) { return a.index < b.index; });
    size_t out = 0;
    for (size_t i = 0; i < row.size();) {
        SparseEntry e = row[i++];
        while (i < row.size() && row[i].index == e.index) e.value += row[i++].value;
        row[out++] = e;
    }
    row.resize(out);
    for (TextOp op : ops_) {
        switch (op) {
            case TextOp::Binary:
                for (SparseEntry& e : row) e.value = 1.0;
                break;
            case TextOp::Sublinear:
                for (SparseEntry& e : row) e.value = std::log(e.value) + 1.0;
                break;
            case TextOp::Idf:
                for (SparseEntry& e : row) e.value *= idf_[e.index];
                break;
            case TextOp::NormL1:
            case TextOp::NormL2: {
                double sum = 0.0;
                for (const SparseEntry& e : row) sum += op == TextOp::NormL1 ? std::fabs(e.value) : e.value * e.value;
                if (sum == 0.0) break;
                if (op == TextOp::NormL2) sum = std::sqrt(sum);
                for (SparseEntry& e : row) e.value /= sum;
                break;
            }
        }
    }
}

}  // namespace pg_predict::text
