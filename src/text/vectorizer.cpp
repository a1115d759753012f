// One document through a fitted vectorizer (text/vectorizer.hpp).
#include "pg_predict/text/vectorizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "pg_predict/common/error.hpp"

namespace pg_predict::text {

namespace {

uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

uint64_t term_hash(std::string_view term) { return hash_bytes(term.data(), term.size()); }

}  // namespace

// Category values and terms are short (one or two steps); byte stores into a word would stall
// on store forwarding, which cost more than the hash.
uint64_t hash_bytes(const char* data, size_t length) noexcept {
    uint64_t h = (length + 1) * 0x9E3779B97F4A7C15ull;
    for (; length >= 8; data += 8, length -= 8) {
        uint64_t w;
        std::memcpy(&w, data, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    if (length >= 4) {
        uint32_t a, b;
        std::memcpy(&a, data, 4);
        std::memcpy(&b, data + length - 4, 4);
        w = uint64_t(a) << 32 | b;
    } else if (length > 0) {
        w = uint64_t((unsigned char)data[0]) << 16 | uint64_t((unsigned char)data[length / 2]) << 8 |
            (unsigned char)data[length - 1];
    }
    h = (h ^ w) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
}

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
    while (size < terms.size() * 3) size *= 2;
    slots_.assign(size, 0);
    for (size_t i = 0; i < terms.size(); ++i) {
        const uint64_t h = term_hash(terms[i]);
        size_t slot = h & (size - 1);
        while (slots_[slot] != 0) {
            if (term((slots_[slot] & 0xFFFFFFFFu) - 1) == terms[i])
                fail(ErrorCategory::InvalidModel, "text vectorizer: the vocabulary repeats \"" + terms[i] + "\"");
            slot = (slot + 1) & (size - 1);
        }
        slots_[slot] = (h & 0xFFFFFFFF00000000ull) | static_cast<uint32_t>(i + 1);
    }
}

int64_t Vocabulary::find(std::string_view t) const {
    if (slots_.empty()) return -1;
    const size_t mask = slots_.size() - 1;
    const uint64_t h = term_hash(t), tag = h & 0xFFFFFFFF00000000ull;
    for (size_t slot = h & mask;; slot = (slot + 1) & mask) {
        const uint64_t s = slots_[slot];
        if (s == 0) return -1;
        if ((s & 0xFFFFFFFF00000000ull) != tag) continue;
        const uint32_t i = static_cast<uint32_t>(s) - 1;
        const uint64_t b = offsets_[i], e = offsets_[i + 1];
        if (e - b == t.size() && std::memcmp(bytes_.data() + b, t.data(), t.size()) == 0) return i;
    }
}

void Vocabulary::find_all(const std::string& bytes, const std::vector<std::pair<uint32_t, uint32_t>>& terms,
                          std::vector<int64_t>& out, std::vector<uint64_t>& hashes) const {
    out.assign(terms.size(), -1);
    if (slots_.empty()) return;
    const size_t mask = slots_.size() - 1;
    hashes.resize(terms.size());
    for (size_t k = 0; k < terms.size(); ++k) {
        hashes[k] = term_hash(std::string_view(bytes.data() + terms[k].first, terms[k].second));
        __builtin_prefetch(&slots_[hashes[k] & mask]);
    }
    // The candidates (a slot whose hash half agrees), their offsets prefetched.
    for (size_t k = 0; k < terms.size(); ++k) {
        const uint64_t tag = hashes[k] & 0xFFFFFFFF00000000ull;
        for (size_t slot = hashes[k] & mask;; slot = (slot + 1) & mask) {
            const uint64_t s = slots_[slot];
            if (s == 0) break;
            if ((s & 0xFFFFFFFF00000000ull) != tag) continue;
            out[k] = static_cast<int64_t>(static_cast<uint32_t>(s) - 1);
            __builtin_prefetch(&offsets_[out[k]]);
            break;
        }
    }
    for (size_t k = 0; k < terms.size(); ++k) {
        if (out[k] < 0) continue;
        const std::string_view t(bytes.data() + terms[k].first, terms[k].second);
        const uint64_t b = offsets_[out[k]], e = offsets_[out[k] + 1];
        if (e - b == t.size() && std::memcmp(bytes_.data() + b, t.data(), t.size()) == 0) continue;
        out[k] = find(t);  // another term with the same hash half (rare): the full probe
    }
}

void Projection::apply(const std::vector<SparseEntry>& row, double* out) const {
    for (int32_t k = 0; k < width; ++k) out[k] = offset.empty() ? 0.0 : offset[k];
    for (const SparseEntry& e : row)
        for (int64_t j = term_begin[e.index]; j < term_begin[e.index + 1]; ++j) out[column[j]] += e.value * weight[j];
}

std::shared_ptr<const Vocabulary> shared_vocabulary(const std::vector<std::string>& terms) {
    static std::unordered_map<uint64_t, std::vector<std::weak_ptr<const Vocabulary>>> kept;
    uint64_t key = terms.size();
    for (const std::string& t : terms) key = (key ^ term_hash(t)) * 0x100000001b3ull;
    auto& same_key = kept[key];
    for (auto it = same_key.begin(); it != same_key.end();) {
        std::shared_ptr<const Vocabulary> v = it->lock();
        if (v == nullptr) {
            it = same_key.erase(it);
            continue;
        }
        bool equal = v->size() == static_cast<int64_t>(terms.size());
        for (size_t i = 0; equal && i < terms.size(); ++i) equal = v->term(static_cast<int64_t>(i)) == terms[i];
        if (equal) return v;
        ++it;
    }
    auto made = std::make_shared<const Vocabulary>(terms);
    same_key.push_back(made);
    return made;
}

Vectorizer::Vectorizer(const VectorizerSpec& spec)
    : analyzer_(spec.analyzer),
      vocabulary_(spec.hash_features > 0 ? std::make_shared<const Vocabulary>() : shared_vocabulary(spec.vocabulary)),
      hash_features_(spec.hash_features),
      alternate_sign_(spec.alternate_sign),
      ops_(spec.ops),
      idf_(spec.idf),
      threshold_(spec.threshold),
      float32_(spec.float32),
      width_(spec.width()) {
    size_t idfs = 0;
    for (TextOp op : ops_)
        if (op == TextOp::Idf) {
            if (idfs == idf_.size() || static_cast<int64_t>(idf_[idfs].size()) != width_)
                fail(ErrorCategory::InvalidModel, "text vectorizer: idf weighting " + std::to_string(idfs + 1) +
                                                      " does not have one value for each of its " +
                                                      std::to_string(width_) + " terms");
            ++idfs;
        }
    if (idfs != idf_.size()) fail(ErrorCategory::InvalidModel, "text vectorizer: more idf weightings than idf steps");
}

namespace {

// The transforms in float64, or over float32 data as scikit-learn computes them there (kFloat32:
// numpy's float32 log and +1, scipy's float32 product by the idf diagonal, sklearn's row norms
// with the squares in float and their sum and the division in double, the quotient stored as
// float, binarize comparing with the threshold cast to float32). Counts and hashed signs are
// exact in float.
template <bool kFloat32>
void apply_ops(const std::vector<TextOp>& ops, const std::vector<std::vector<double>>& idfs, double threshold,
               std::vector<SparseEntry>& row) {
    auto round = [](double x) { return kFloat32 ? static_cast<double>(static_cast<float>(x)) : x; };
    auto product = [](double a, double b) {
        return kFloat32 ? static_cast<double>(static_cast<float>(a) * static_cast<float>(b)) : a * b;
    };
    const std::vector<double>* idf = idfs.data();
    for (TextOp op : ops) {
        switch (op) {
            case TextOp::Binary:
                for (SparseEntry& e : row) e.value = 1.0;
                break;
            case TextOp::Sublinear:
                for (SparseEntry& e : row)
                    e.value = kFloat32 ? static_cast<double>(std::log(static_cast<float>(e.value)) + 1.0f)
                                       : std::log(e.value) + 1.0;
                break;
            case TextOp::Idf:
                for (SparseEntry& e : row) e.value = product(e.value, (*idf)[e.index]);
                ++idf;
                break;
            case TextOp::NormL1:
            case TextOp::NormL2: {
                double sum = 0.0;
                for (const SparseEntry& e : row) sum += op == TextOp::NormL1 ? std::fabs(e.value) : product(e.value, e.value);
                if (sum == 0.0) break;
                if (op == TextOp::NormL2) sum = std::sqrt(sum);
                for (SparseEntry& e : row) e.value = round(e.value / sum);
                break;
            }
            case TextOp::Threshold: {
                // x > t ? 1 : 0, the zeros dropped from the row as scikit-learn's binarize drops
                // them (what follows, a sublinear tf or an idf's document count, sees the ones).
                const double t = round(threshold);
                size_t kept = 0;
                for (const SparseEntry& e : row)
                    if (e.value > t) row[kept++] = {e.index, 1.0};
                row.resize(kept);
                break;
            }
        }
    }
}

}  // namespace

void Vectorizer::transform(std::string_view document, std::vector<SparseEntry>& row) {
    row.clear();
    if (entry_of_.size() != static_cast<size_t>(width_)) entry_of_.assign(static_cast<size_t>(width_), -1);
    auto add = [&](int64_t index, double value) {
        int32_t& e = entry_of_[static_cast<size_t>(index)];
        if (e < 0) {
            e = static_cast<int32_t>(row.size());
            row.push_back({index, value});
        } else {
            row[static_cast<size_t>(e)].value += value;
        }
    };
    if (hash_features_ > 0) {
        const int64_t n = hash_features_;
        analyzer_.analyze(document, [&](std::string_view term) {
            const int32_t h = static_cast<int32_t>(murmurhash3_32(term.data(), term.size(), 0));
            // sklearn/feature_extraction/_hashing_fast.pyx: abs(-2**31) is taken as 2**31.
            const int64_t index = h == INT32_MIN ? (2147483647 - (n - 1)) % n : std::abs(static_cast<int64_t>(h)) % n;
            add(index, alternate_sign_ && h < 0 ? -1.0 : 1.0);
        });
    } else {
        pending_.clear();
        pending_at_.clear();
        analyzer_.analyze(document, [&](std::string_view term) {
            pending_at_.emplace_back(static_cast<uint32_t>(pending_.size()), static_cast<uint32_t>(term.size()));
            pending_.append(term);
        });
        vocabulary_->find_all(pending_, pending_at_, found_, hashes_);
        for (int64_t index : found_)
            if (index >= 0) add(index, 1.0);
    }
    for (const SparseEntry& e : row) entry_of_[static_cast<size_t>(e.index)] = -1;
    if (float32_)
        apply_ops<true>(ops_, idf_, threshold_, row);
    else
        apply_ops<false>(ops_, idf_, threshold_, row);
}

}  // namespace pg_predict::text
