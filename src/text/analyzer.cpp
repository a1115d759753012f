// The preprocessor and tokenizer of text/analyzer.hpp (the n-grams are the header's template).
#include "pg_predict/text/analyzer.hpp"

#include "pg_predict/common/error.hpp"

namespace pg_predict::text {

Analyzer::Analyzer(AnalyzerConfig config) : config_(std::move(config)) {
    if (config_.min_n < 1 || config_.max_n < config_.min_n)
        fail(ErrorCategory::InvalidModel, "text analyzer: ngram_range (" + std::to_string(config_.min_n) + ", " +
                                              std::to_string(config_.max_n) + ") is not a range of n >= 1");
    if (config_.min_token_length < 1)
        fail(ErrorCategory::InvalidModel, "text analyzer: tokens must be at least one character long");
    stop_words_.insert(config_.stop_words.begin(), config_.stop_words.end());
}

// decode, then str.lower() and strip_accents in scikit-learn's order (_preprocess).
void Analyzer::preprocess(std::string_view document) {
    decode_utf8(document, text_);
    if (config_.lowercase) {
        lower(text_, scratch_);
        text_.swap(scratch_);
    }
    if (config_.strip_accents == StripAccents::Unicode) {
        strip_accents_unicode(text_, scratch_);
        text_.swap(scratch_);
    } else if (config_.strip_accents == StripAccents::Ascii) {
        strip_accents_ascii(text_, scratch_);
        text_.swap(scratch_);
    }
}

// re.findall of the token pattern: the maximal runs of the class at least min_token_length
// long, without the stop words.
void Analyzer::tokenize() {
    tokens_.clear();
    const std::u32string& t = text_;
    const bool word = config_.token_class == TokenClass::Word;
    for (size_t i = 0; i < t.size();) {
        const bool in = word ? is_word_char(t[i]) : !is_space_char(t[i]);
        if (!in) {
            ++i;
            continue;
        }
        size_t end = i + 1;
        while (end < t.size() && (word ? is_word_char(t[end]) : !is_space_char(t[end]))) ++end;
        if (end - i >= static_cast<size_t>(config_.min_token_length)) {
            tokens_.emplace_back(static_cast<uint32_t>(i), static_cast<uint32_t>(end));
            if (!stop_words_.empty() && is_stop_word(tokens_.size() - 1)) tokens_.pop_back();
        }
        i = end;
    }
}

bool Analyzer::is_stop_word(size_t token) const {
    std::string utf8;
    for (uint32_t c = tokens_[token].first; c < tokens_[token].second; ++c) append_utf8(text_[c], utf8);
    return stop_words_.count(utf8) != 0;
}

}  // namespace pg_predict::text
