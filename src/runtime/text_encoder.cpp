// Text inputs → dictionary indices (runtime/api.hpp). One open-addressing table per text input,
// keyed by the value's bytes: a lookup is one hash and, on a hit, one compare.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <memory>

#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/kept_cache.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/text/vectorizer.hpp"

namespace pg_predict::runtime {

namespace {

using text::hash_bytes;  // the text layer's table hash

// Equal bytes, inline for values up to 16 bytes (two overlapping loads a side): the libc call
// cost more than the compare.
bool same_bytes(const char* a, const char* b, size_t n) {
    if (n >= 8 && n <= 16) {
        uint64_t a0, a1, b0, b1;
        std::memcpy(&a0, a, 8);
        std::memcpy(&b0, b, 8);
        std::memcpy(&a1, a + n - 8, 8);
        std::memcpy(&b1, b + n - 8, 8);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    if (n >= 4 && n < 8) {
        uint32_t a0, a1, b0, b1;
        std::memcpy(&a0, a, 4);
        std::memcpy(&b0, b, 4);
        std::memcpy(&a1, a + n - 4, 4);
        std::memcpy(&b1, b + n - 4, 4);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    if (n < 4) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i]) return false;
        return true;
    }
    return std::memcmp(a, b, n) == 0;
}

struct Dictionary {
    std::vector<std::string> values;
    std::vector<int32_t> slots;  // index into values, or -1; size a power of two
    bool unknown_is_error = false;
    bool unknown_is_missing = false;

    void build() {
        size_t size = 16;
        while (size < values.size() * 2) size *= 2;
        slots.assign(size, -1);
        for (size_t i = 0; i < values.size(); i++) {
            size_t slot = hash_bytes(values[i].data(), values[i].size()) & (size - 1);
            while (slots[slot] >= 0) {
                if (values[slots[slot]] == values[i])
                    fail(ErrorCategory::InvalidModel, "text input vocabulary repeats \"" + values[i] + "\"");
                slot = (slot + 1) & (size - 1);
            }
            slots[slot] = (int32_t)i;
        }
    }

    int32_t find(const char* data, size_t length) const {
        size_t mask = slots.size() - 1;
        for (size_t slot = hash_bytes(data, length) & mask;; slot = (slot + 1) & mask) {
            int32_t i = slots[slot];
            if (i < 0) return -1;
            const std::string& v = values[i];
            if (v.size() == length && same_bytes(v.data(), data, length)) return i;
        }
    }
};

}  // namespace

// A vectorizer and its projection, with the scratch of one row.
struct VectorizerInput {
    text::Vectorizer vectorizer;
    text::Projection projection;
    std::vector<int32_t> slots;
    std::vector<text::SparseEntry> row;

    VectorizerInput(text::ParsedVectorizer parsed, std::vector<int32_t> s)
        : vectorizer(parsed.spec), projection(std::move(parsed.projection)), slots(std::move(s)) {}
};

struct TextEncoder {
    std::vector<Dictionary> by_input;  // indexed by input; empty for numeric inputs
    std::vector<int32_t> vectorizer_at;  // by input: index into vectorizers at a first slot, -2 a later slot, -1 none
    std::vector<std::unique_ptr<VectorizerInput>> vectorizers;
};

TextEncoder* make_text_encoder(const char* text_inputs_json, size_t length) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text_inputs_json, text_inputs_json + length);
    } catch (const nlohmann::json::exception& e) {
        fail(ErrorCategory::InvalidModel, std::string("text inputs: ") + e.what());
    }
    auto encoder = new TextEncoder();
    try {
        for (const auto& input : doc) {
            int32_t index = input.at("input").get<int32_t>();
            if (index < 0 || index > (1 << 20)) fail(ErrorCategory::InvalidModel, "text inputs: bad input index");
            if (input.contains("vectorizer")) {
                std::vector<int32_t> slots = input.at("slots").get<std::vector<int32_t>>();
                auto v = std::make_unique<VectorizerInput>(text::parse_vectorizer(input["vectorizer"]), slots);
                if (static_cast<int32_t>(slots.size()) != v->projection.width || slots.empty() || slots[0] != index)
                    fail(ErrorCategory::InvalidModel, "text inputs: a vectorizer's slots do not match its projection");
                for (int32_t s : slots) {
                    if (s < 0 || s > (1 << 20)) fail(ErrorCategory::InvalidModel, "text inputs: bad slot");
                    if ((size_t)s >= encoder->vectorizer_at.size()) encoder->vectorizer_at.resize(s + 1, -1);
                    encoder->vectorizer_at[s] = s == index ? (int32_t)encoder->vectorizers.size() : -2;
                }
                encoder->vectorizers.push_back(std::move(v));
                continue;
            }
            if ((size_t)index >= encoder->by_input.size()) encoder->by_input.resize(index + 1);
            Dictionary& d = encoder->by_input[index];
            d.values = input.at("vocabulary").get<std::vector<std::string>>();
            d.unknown_is_error = input.value("unknown_is_error", false);
            d.unknown_is_missing = input.value("unknown_is_missing", false);
            d.build();
        }
    } catch (const nlohmann::json::exception& e) {
        delete encoder;
        fail(ErrorCategory::InvalidModel, std::string("text inputs: ") + e.what());
    } catch (...) {
        delete encoder;
        throw;
    }
    return encoder;
}

void free_text_encoder(TextEncoder* encoder) noexcept { delete encoder; }

namespace {

// The encoders of the last few model versions used (runtime/api.hpp).
KeptCache<int64_t, TextEncoder>& kept() {
    static KeptCache<int64_t, TextEncoder> cache(8, free_text_encoder);
    return cache;
}

}  // namespace

TextEncoder* find_text_encoder(int64_t id) noexcept { return kept().acquire(id); }

void keep_text_encoder(int64_t id, TextEncoder* encoder) { kept().keep(id, encoder); }

void release_text_encoder(TextEncoder* encoder) noexcept { kept().release(encoder); }

int32_t encode_text(const TextEncoder* encoder, int32_t input, const char* value, size_t length) noexcept {
    if (input < 0 || (size_t)input >= encoder->by_input.size()) return -1;
    const Dictionary& d = encoder->by_input[input];
    return d.slots.empty() ? -1 : d.find(value, length);
}

bool unknown_text_is_error(const TextEncoder* encoder, int32_t input) noexcept {
    return input >= 0 && (size_t)input < encoder->by_input.size() && encoder->by_input[input].unknown_is_error;
}

int32_t text_vectorizer_slots(const TextEncoder* encoder, int32_t input, const int32_t** slots) noexcept {
    if (input < 0 || (size_t)input >= encoder->vectorizer_at.size()) return -1;
    const int32_t at = encoder->vectorizer_at[input];
    if (at < 0) return at == -2 ? 0 : -1;
    const VectorizerInput& v = *encoder->vectorizers[at];
    *slots = v.slots.data();
    return (int32_t)v.slots.size();
}

void vectorize_text(TextEncoder* encoder, int32_t input, const char* value, size_t length, double* out) {
    VectorizerInput& v = *encoder->vectorizers[encoder->vectorizer_at[input]];
    v.vectorizer.transform(std::string_view(value, length), v.row);
    v.projection.apply(v.row, out);
}

struct TextProjection {
    text::Projection projection;
};

TextProjection* make_text_projection(const TextEncoder* encoder, int32_t input, const char* json, size_t length) {
    if (input < 0 || (size_t)input >= encoder->vectorizer_at.size() || encoder->vectorizer_at[input] < 0)
        fail(ErrorCategory::InvalidModel, "a cascade's text projection names no vectorizer of the model");
    const VectorizerInput& v = *encoder->vectorizers[encoder->vectorizer_at[input]];
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(json, json + length);
    } catch (const nlohmann::json::exception& e) {
        fail(ErrorCategory::InvalidModel, std::string("a cascade's text projection: ") + e.what());
    }
    return new TextProjection{text::parse_projection(doc, v.vectorizer.width())};
}

void free_text_projection(TextProjection* p) noexcept { delete p; }

int32_t text_projection_width(const TextProjection* p) noexcept { return p->projection.width; }

void vectorize_text_twice(TextEncoder* encoder, int32_t input, const char* value, size_t length, double* out,
                          const TextProjection* p, double* extra) {
    VectorizerInput& v = *encoder->vectorizers[encoder->vectorizer_at[input]];
    v.vectorizer.transform(std::string_view(value, length), v.row);
    if (out != nullptr) v.projection.apply(v.row, out);
    p->projection.apply(v.row, extra);
}

void vectorize_text_sparse(TextEncoder* encoder, int32_t input, const char* value, size_t length,
                           std::vector<int64_t>& index, std::vector<double>& values) {
    VectorizerInput& v = *encoder->vectorizers[encoder->vectorizer_at[input]];
    v.vectorizer.transform(std::string_view(value, length), v.row);
    index.clear();
    values.clear();
    for (const text::SparseEntry& e : v.row) {
        index.push_back(e.index);
        values.push_back(e.value);
    }
}

int64_t text_vectorizer_width(const TextEncoder* encoder, int32_t input) noexcept {
    if (input < 0 || (size_t)input >= encoder->vectorizer_at.size() || encoder->vectorizer_at[input] < 0) return 0;
    return encoder->vectorizers[encoder->vectorizer_at[input]]->vectorizer.width();
}

namespace {

// The vectorizer writing `slot` and the slot's column of its projection, or nullptr.
VectorizerInput* vectorizer_of_slot(const TextEncoder* encoder, int32_t slot, int32_t* column) noexcept {
    for (const auto& v : encoder->vectorizers)
        for (size_t k = 0; k < v->slots.size(); k++)
            if (v->slots[k] == slot) {
                *column = (int32_t)k;
                return v.get();
            }
    return nullptr;
}

}  // namespace

bool is_vectorizer_slot(const TextEncoder* encoder, int32_t slot) noexcept {
    int32_t column;
    return vectorizer_of_slot(encoder, slot, &column) != nullptr;
}

char* explain_text(TextEncoder* encoder, int32_t slot, const char* value, size_t length, int32_t top) {
    int32_t column = 0;
    VectorizerInput* v = vectorizer_of_slot(encoder, slot, &column);
    if (v == nullptr) fail(ErrorCategory::Internal, "explain_text: no vectorizer writes this input");
    v->vectorizer.transform(std::string_view(value, length), v->row);
    struct Term {
        int64_t index;
        double value, attribution;
    };
    std::vector<Term> terms;
    const text::Projection& p = v->projection;
    for (const text::SparseEntry& e : v->row)
        for (int64_t j = p.term_begin[e.index]; j < p.term_begin[e.index + 1]; j++)
            if (p.column[j] == column) terms.push_back({e.index, e.value, e.value * p.weight[j]});
    std::stable_sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
        return std::fabs(a.attribution) > std::fabs(b.attribution);
    });
    if (top >= 0 && terms.size() > (size_t)top) terms.resize(top);
    nlohmann::json out = nlohmann::json::array();
    const text::Vocabulary* vocabulary = v->vectorizer.vocabulary();
    for (const Term& t : terms)
        out.push_back({{"term", vocabulary->size() > 0 ? std::string(vocabulary->term(t.index)) : "#" + std::to_string(t.index)},
                       {"value", t.value},
                       {"attribution", t.attribution}});
    const std::string s = out.dump();
    char* result = (char*)std::malloc(s.size() + 1);
    if (result == nullptr) fail(ErrorCategory::Runtime, "explain_text: out of memory");
    std::memcpy(result, s.c_str(), s.size() + 1);
    return result;
}

bool unknown_text_is_missing(const TextEncoder* encoder, int32_t input) noexcept {
    return input >= 0 && (size_t)input < encoder->by_input.size() && encoder->by_input[input].unknown_is_missing;
}

}  // namespace pg_predict::runtime
