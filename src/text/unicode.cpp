// Unicode as Python sees it (text/analyzer.hpp): UTF-8, str.lower(), re's \w and \s, NFKD for
// strip_accents. The tables are generated from the Python that runs scikit-learn.
#include <algorithm>
#include <cstdint>
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/text/analyzer.hpp"

namespace pg_predict::text {

namespace {

struct CodeRange {
    char32_t first, last;
};
struct CodeMap {
    char32_t from, to;
};
struct CodeSequence {
    char32_t from;
    uint32_t offset, length;
};

#include "unicode_tables.inc"

template <size_t N>
bool in_ranges(const CodeRange (&ranges)[N], char32_t cp) {
    const CodeRange* end = ranges + N;
    const CodeRange* it = std::upper_bound(ranges, end, cp, [](char32_t c, const CodeRange& r) { return c < r.first; });
    return it != ranges && cp <= (it - 1)->last;
}

template <typename T, size_t N>
const T* find_code(const T (&table)[N], char32_t cp) {
    const T* end = table + N;
    const T* it = std::lower_bound(table, end, cp, [](const T& e, char32_t c) { return e.from < c; });
    return it != end && it->from == cp ? it : nullptr;
}

bool is_cased(char32_t cp) { return in_ranges(kCasedRanges, cp); }
bool is_case_ignorable(char32_t cp) { return in_ranges(kCaseIgnorableRanges, cp); }
bool is_combining(char32_t cp) { return cp >= 0x300 && in_ranges(kCombiningRanges, cp); }

// CPython's handle_capital_sigma: U+03A3 lowers to final sigma after a cased letter (case-
// ignorable ones skipped) unless a cased letter follows (the same way).
char32_t lower_sigma(const std::u32string& s, size_t i) {
    size_t j = i;
    char32_t c = 0;
    bool found = false;
    while (j > 0) {
        c = s[--j];
        if (!is_case_ignorable(c)) {
            found = true;
            break;
        }
    }
    bool final_sigma = found && is_cased(c);
    if (final_sigma) {
        for (j = i + 1; j < s.size(); ++j) {
            c = s[j];
            if (!is_case_ignorable(c)) break;
        }
        final_sigma = j == s.size() || !is_cased(c);
    }
    return final_sigma ? 0x3C2 : 0x3C3;
}

// NFKD of one code point into out (Hangul syllables algorithmically).
void decompose(char32_t cp, std::u32string& out) {
    if (cp >= 0xAC00 && cp <= 0xD7A3) {
        const char32_t s = cp - 0xAC00;
        out.push_back(0x1100 + s / 588);
        out.push_back(0x1161 + (s % 588) / 28);
        if (s % 28) out.push_back(0x11A7 + s % 28);
        return;
    }
    if (cp < 0xA0) {
        out.push_back(cp);
        return;
    }
    if (const CodeSequence* d = find_code(kNfkd, cp)) {
        out.append(kNfkdData + d->offset, d->length);
        return;
    }
    out.push_back(cp);
}

}  // namespace

const char* unicode_version() { return kUnicodeVersion; }

bool is_word_char(char32_t cp) {
    if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
    return in_ranges(kWordRanges, cp);
}

bool is_space_char(char32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
    return in_ranges(kSpaceRanges, cp);
}

void decode_utf8(std::string_view bytes, std::u32string& out) {
    out.clear();
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const size_t n = bytes.size();
    auto invalid = [&](size_t at) {
        fail(ErrorCategory::InvalidParameter,
             "text is not valid UTF-8 (byte " + std::to_string(at) + " of " + std::to_string(n) +
                 "): scikit-learn's vectorizers read Unicode text");
    };
    for (size_t i = 0; i < n;) {
        const unsigned char b = p[i];
        if (b < 0x80) {
            out.push_back(b);
            ++i;
            continue;
        }
        size_t len;
        char32_t cp, min;
        if ((b & 0xE0) == 0xC0) len = 2, cp = b & 0x1F, min = 0x80;
        else if ((b & 0xF0) == 0xE0) len = 3, cp = b & 0x0F, min = 0x800;
        else if ((b & 0xF8) == 0xF0) len = 4, cp = b & 0x07, min = 0x10000;
        else invalid(i);
        if (i + len > n) invalid(i);
        for (size_t k = 1; k < len; ++k) {
            if ((p[i + k] & 0xC0) != 0x80) invalid(i);
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) invalid(i);
        out.push_back(cp);
        i += len;
    }
}

void append_utf8(char32_t cp, std::string& out) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

void lower(const std::u32string& in, std::u32string& out) {
    out.clear();
    out.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        const char32_t cp = in[i];
        if (cp < 0x80) {
            out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
        } else if (cp == 0x3A3) {
            out.push_back(lower_sigma(in, i));
        } else if (const CodeMap* m = find_code(kLowerSingle, cp)) {
            out.push_back(m->to);
        } else if (const CodeSequence* e = find_code(kLowerExtra, cp)) {
            out.append(kLowerExtraData + e->offset, e->length);
        } else {
            out.push_back(cp);
        }
    }
}

// NFKD of each non-ASCII code point, keeping the code points `keep` accepts (ASCII as it is: its
// NFKD is itself).
template <typename Keep>
void decompose_keeping(const std::u32string& in, std::u32string& out, Keep keep) {
    out.clear();
    out.reserve(in.size());
    std::u32string d;
    for (char32_t cp : in) {
        if (cp < 0x80) {
            out.push_back(cp);
            continue;
        }
        d.clear();
        decompose(cp, d);
        for (char32_t c : d)
            if (keep(c)) out.push_back(c);
    }
}

// strip_accents_unicode: NFKD without the combining marks (they are all dropped, so NFKD's
// canonical reordering of them does not matter).
void strip_accents_unicode(const std::u32string& in, std::u32string& out) {
    decompose_keeping(in, out, [](char32_t c) { return !is_combining(c); });
}

// strip_accents_ascii: NFKD, then what is ASCII of it.
void strip_accents_ascii(const std::u32string& in, std::u32string& out) {
    decompose_keeping(in, out, [](char32_t c) { return c < 0x80; });
}

}  // namespace pg_predict::text
