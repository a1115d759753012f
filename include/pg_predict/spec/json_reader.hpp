// The one way model documents and stored specs are read: a JSON value together with where it
// is, so that every complaint names the format and the full path of the value at fault:
//
//   xgboost: learner.gradient_booster.model.trees[3].left_children[7]: must be an integer
//
// One set of rules for every format:
//  - a member that is absent or null is missing: need() refuses it, optional() skips it;
//  - a number is a JSON number or one of the strings "NaN", "Infinity", "-Infinity" (how the
//    spec and the exporters write what JSON cannot hold; numpy's "nan", "inf", "-inf" too);
//    null is not a number (nullable_number() reads it as NaN where a format says so);
//  - an integer is a JSON integer or a number with an integral value (3.0, from a float
//    array), within the bounds the caller gives;
//  - malformed values are Error(InvalidModel); what a format cannot score is
//    Error(Unsupported), raised through unsupported() with the same prefix.
// Used by the importers and by the spec's own JSON reader (spec/json.cpp), hence here: the
// importers may include spec, not the other way round.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pg_predict::spec {

class JsonReader {
public:
    // The document's root (path "" is shown as "document"). `format` begins every message:
    // "xgboost", "scikit-learn RandomForestClassifier", "pipeline spec".
    JsonReader(const nlohmann::json& value, std::string format, std::string path = "");

    const nlohmann::json& value() const { return *value_; }
    const std::string& path() const { return path_; }
    const std::string& format() const { return format_; }
    // "format: path", the prefix of this value's messages.
    std::string where() const;
    // The same value read under another format label (a scikit-learn step names its estimator).
    JsonReader with_format(std::string format) const { return JsonReader(*value_, std::move(format), path_); }

    [[noreturn]] void invalid(const std::string& what) const;      // InvalidModel
    [[noreturn]] void unsupported(const std::string& what) const;  // Unsupported

    // --- the kind of this value -----------------------------------------------------------
    bool is_null() const { return value_->is_null(); }
    bool is_array() const { return value_->is_array(); }
    bool is_object() const { return value_->is_object(); }
    bool is_string() const { return value_->is_string(); }
    const JsonReader& expect_object() const;
    const JsonReader& expect_array() const;

    // --- members of an object (this value must be one) --------------------------------------
    bool has(const char* key) const;                        // present and not null
    JsonReader need(const char* key) const;                 // present and not null
    std::optional<JsonReader> optional(const char* key) const;
    JsonReader object(const char* key) const { return need(key).expect_object(); }
    JsonReader array(const char* key) const { return need(key).expect_array(); }
    std::string string(const char* key) const { return need(key).string(); }
    std::string string(const char* key, const char* fallback) const;  // fallback when missing
    double number(const char* key) const { return need(key).number(); }
    double finite(const char* key) const { return need(key).finite(); }
    int64_t integer(const char* key, int64_t lo, int64_t hi) const { return need(key).integer(lo, hi); }
    bool boolean(const char* key) const { return need(key).boolean(); }

    // --- elements of an array (this value must be one) --------------------------------------
    size_t size() const;
    bool empty() const { return size() == 0; }
    JsonReader operator[](size_t i) const;

    // --- this value as ----------------------------------------------------------------------
    std::string string() const;
    double number() const;
    double nullable_number() const;  // null is NaN
    double finite() const;           // a number, not NaN or infinite
    int64_t integer(int64_t lo, int64_t hi) const;
    bool boolean() const;
    // Arrays of numbers; `want` = SIZE_MAX: any length. Elements are named in messages
    // ("...coef[2][5]") but no path is built unless one is at fault.
    std::vector<double> numbers(size_t want = SIZE_MAX) const;
    std::vector<double> finite_numbers(size_t want = SIZE_MAX) const;
    std::vector<int32_t> integers(int64_t lo, int64_t hi) const;
    // rows × cols; cols = SIZE_MAX: any, the same for every row.
    std::vector<std::vector<double>> matrix(size_t rows = SIZE_MAX, size_t cols = SIZE_MAX) const;
    // An array of arrays of numbers, each of any length (per-column categories, edges).
    std::vector<std::vector<double>> ragged_matrix() const;

    // "path.key" and "path[i]", for naming a value without reading it.
    std::string path_of(const char* key) const;
    std::string path_of(size_t i) const;

private:
    const nlohmann::json* value_;
    std::string format_;
    std::string path_;
};

// The number rule on a bare JSON value: nullopt when it is not a number (see above).
std::optional<double> json_number(const nlohmann::json& v);

}  // namespace pg_predict::spec
