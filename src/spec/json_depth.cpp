// check_json_depth: an iterative scan of a JSON text's nesting, before anything recursive
// reads it (nlohmann's parser is iterative, but copying, dumping and every reader of ours
// recurse once per level).
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/spec/limits.hpp"

namespace pg_predict::spec {

namespace {

struct Level {
    bool object;
    size_t index = 0;   // arrays: the element being read
    std::string key;    // objects: the member being read (truncated)
};

constexpr size_t kKeyChars = 40;    // of a key shown in the path
constexpr size_t kPathLevels = 12;  // of the path shown before "..."

std::string path_of(const std::vector<Level>& stack) {
    std::string path = "$";
    for (size_t i = 0; i < stack.size() && i < kPathLevels; ++i)
        path += stack[i].object ? "." + stack[i].key : "[" + std::to_string(stack[i].index) + "]";
    if (stack.size() > kPathLevels) path += "...";
    return path;
}

}  // namespace

void check_json_depth(std::string_view text, const char* what) {
    std::vector<Level> stack;
    bool in_string = false, escaped = false, reading_key = false, expecting_key = false;
    for (size_t at = 0; at < text.size(); ++at) {
        if ((at & 0xFFFFF) == 0xFFFFF) check_interrupts();  // every MB: documents reach 100 MB
        const char c = text[at];
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
                reading_key = false;
            } else if (reading_key && stack.back().key.size() < kKeyChars) {
                stack.back().key += c;
            }
            continue;
        }
        switch (c) {
        case '"':
            in_string = true;
            reading_key = expecting_key && !stack.empty() && stack.back().object;
            if (reading_key) stack.back().key.clear();
            expecting_key = false;
            break;
        case '{':
        case '[':
            if (stack.size() >= static_cast<size_t>(kMaxJsonDepth))
                fail(ErrorCategory::InvalidModel, std::string(what) + " nests deeper than " +
                                                      std::to_string(kMaxJsonDepth) + " levels at " +
                                                      path_of(stack));
            stack.push_back(Level{c == '{', 0, {}});
            expecting_key = c == '{';
            break;
        case '}':
        case ']':
            if (!stack.empty()) stack.pop_back();
            expecting_key = false;
            break;
        case ',':
            if (!stack.empty()) {
                ++stack.back().index;
                expecting_key = stack.back().object;
            }
            break;
        default:
            break;
        }
    }
}

}  // namespace pg_predict::spec
