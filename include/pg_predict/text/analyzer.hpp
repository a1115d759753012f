// scikit-learn's text analysis (sklearn/feature_extraction/text.py, 1.2), exactly: the
// preprocessor (str.lower, strip_accents), the tokenizer (a token_pattern of the supported
// family), stop words, and the word, char and char_wb n-grams, over Unicode as the Python that
// runs scikit-learn classifies it (src/text/unicode_tables.inc, generated from that Python).
//
// Supported token patterns (with or without "(?u)"): maximal runs of word characters (re's \w:
// str.isalnum() or "_") of at least n code points, written \b\w\w+\b, \w\w+, \b\w+\b, \w+,
// \b\w{n,}\b, \w{n,}; and maximal runs of non-white-space (\S+, \S\S+, \S{n,}, [^\s]+). For all of
// them re.findall gives the maximal runs of the class that are long enough, which is what
// this code computes; the Python client refuses any other pattern, naming it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace pg_predict::text {

enum class AnalyzerKind { Word, Char, CharWb };
enum class StripAccents { None, Ascii, Unicode };
enum class TokenClass { Word, NonSpace };  // re's \w, or \S

struct AnalyzerConfig {
    AnalyzerKind kind = AnalyzerKind::Word;
    int32_t min_n = 1, max_n = 1;           // ngram_range
    bool lowercase = true;
    StripAccents strip_accents = StripAccents::None;
    TokenClass token_class = TokenClass::Word;
    int32_t min_token_length = 2;           // \w\w+: 2
    std::vector<std::string> stop_words;    // compared with the tokens after preprocessing
};

// Analyzes documents: decode(UTF-8) -> preprocess -> tokens -> n-grams. Not thread-safe (it
// keeps its scratch buffers); one per thread.
class Analyzer {
public:
    explicit Analyzer(AnalyzerConfig config);

    // Calls emit(std::string_view term) for every term of the document (the UTF-8 bytes of each
    // n-gram as scikit-learn's analyzer() returns it; word n-grams joined by " "). Throws
    // Error(InvalidParameter) for bytes that are not UTF-8 (Python's decode would raise).
    template <typename Emit>
    void analyze(std::string_view document, Emit&& emit);

    const AnalyzerConfig& config() const { return config_; }

private:
    void preprocess(std::string_view document);
    void tokenize();
    bool is_stop_word(size_t token) const;

    AnalyzerConfig config_;
    std::unordered_set<std::string> stop_words_;
    std::u32string text_;                                  // the preprocessed document
    std::vector<std::pair<uint32_t, uint32_t>> tokens_;    // [begin, end) into text_
    std::string term_;                                     // the current word n-gram, UTF-8
    std::u32string scratch_;
    std::string utf8_;                                     // what the n-grams are slices of
    std::vector<uint32_t> at_;                             // byte offsets into utf8_
};

// UTF-8 <-> code points. decode throws Error(InvalidParameter) naming the byte offset.
void decode_utf8(std::string_view bytes, std::u32string& out);
void append_utf8(char32_t cp, std::string& out);

// Python's str.lower() of the whole string (final sigma included) and the two strip_accents.
void lower(const std::u32string& in, std::u32string& out);
void strip_accents_unicode(const std::u32string& in, std::u32string& out);
void strip_accents_ascii(const std::u32string& in, std::u32string& out);
bool is_word_char(char32_t cp);   // re's \w
bool is_space_char(char32_t cp);  // re's \s, str.isspace()
const char* unicode_version();    // of the tables: the Python's unicodedata.unidata_version

// --- the template --------------------------------------------------------------------------

// The n-grams are slices of one UTF-8 buffer (utf8_, with each code point's byte offset in
// at_): a unigram or a character n-gram is emitted without a copy; a word n-gram is joined once.
template <typename Emit>
void Analyzer::analyze(std::string_view document, Emit&& emit) {
    preprocess(document);
    const int32_t lo = config_.min_n, hi = config_.max_n;
    if (config_.kind == AnalyzerKind::Word) {
        tokenize();
        // Each token's UTF-8, once.
        utf8_.clear();
        at_.clear();
        for (const auto& [b, e] : tokens_) {
            at_.push_back(static_cast<uint32_t>(utf8_.size()));
            for (uint32_t c = b; c < e; ++c) append_utf8(text_[c], utf8_);
        }
        at_.push_back(static_cast<uint32_t>(utf8_.size()));
        const size_t n_tokens = tokens_.size();
        const std::string_view all(utf8_);
        for (int32_t n = lo; n <= hi && static_cast<size_t>(n) <= n_tokens; ++n) {
            for (size_t i = 0; i + n <= n_tokens; ++i) {
                if (n == 1) {
                    emit(all.substr(at_[i], at_[i + 1] - at_[i]));
                    continue;
                }
                term_.clear();
                for (int32_t k = 0; k < n; ++k) {
                    if (k) term_.push_back(' ');
                    term_.append(all.substr(at_[i + k], at_[i + k + 1] - at_[i + k]));
                }
                emit(std::string_view(term_));
            }
        }
        return;
    }
    // Code points [b, e) of `cps` as UTF-8 into utf8_ with their offsets in at_ (one more at the end).
    auto encode = [&](const char32_t* cps, size_t count) {
        utf8_.clear();
        at_.clear();
        for (size_t i = 0; i < count; ++i) {
            at_.push_back(static_cast<uint32_t>(utf8_.size()));
            append_utf8(cps[i], utf8_);
        }
        at_.push_back(static_cast<uint32_t>(utf8_.size()));
    };
    const std::u32string& t = text_;
    if (config_.kind == AnalyzerKind::Char) {
        // re.sub(r"\s\s+", " "): a run of two or more white-space characters is one space (a
        // single one stays as it is).
        scratch_.clear();
        for (size_t i = 0; i < t.size();) {
            size_t end = i;
            while (end < t.size() && is_space_char(t[end])) ++end;
            if (end - i >= 2) {
                scratch_.push_back(U' ');
                i = end;
            } else {
                scratch_.push_back(t[i++]);
            }
        }
        const size_t len = scratch_.size();
        encode(scratch_.data(), len);
        const std::string_view all(utf8_);
        for (int32_t n = lo; n <= hi && static_cast<size_t>(n) <= len; ++n)
            for (size_t i = 0; i + n <= len; ++i) emit(all.substr(at_[i], at_[i + n] - at_[i]));
        return;
    }
    // char_wb: each white-space separated word, padded with one space each side; a word shorter
    // than n is counted once, whole, and ends the word's n loop (scikit-learn's break).
    size_t i = 0;
    const size_t len = t.size();
    while (i < len) {
        while (i < len && is_space_char(t[i])) ++i;
        if (i >= len) break;
        size_t end = i;
        while (end < len && !is_space_char(t[end])) ++end;
        scratch_.assign(1, U' ');
        scratch_.append(t, i, end - i);
        scratch_.push_back(U' ');
        const size_t w_len = scratch_.size();
        encode(scratch_.data(), w_len);
        const std::string_view all(utf8_);
        auto emit_word = [&](size_t b, size_t e) {
            if (e > w_len) e = w_len;
            emit(all.substr(at_[b], at_[e] - at_[b]));
        };
        for (int32_t n = lo; n <= hi; ++n) {
            size_t offset = 0;
            emit_word(offset, offset + n);
            while (offset + n < w_len) {
                ++offset;
                emit_word(offset, offset + n);
            }
            if (offset == 0) break;
        }
        i = end;
    }
}

}  // namespace pg_predict::text
