// The JSON reader every format goes through (spec/json_reader.hpp).
#include "pg_predict/spec/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "pg_predict/common/error.hpp"

namespace pg_predict::spec {

using nlohmann::json;

namespace {

std::string element(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string member(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }

// The integer rule on a bare value; nullopt when it is no integral number.
std::optional<int64_t> json_integer(const json& v) {
    if (v.is_number_integer()) {
        if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
        return v.get<int64_t>();
    }
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::nearbyint(d) == d && std::fabs(d) < 9e15) return static_cast<int64_t>(d);  // 3.0 from a float array
    }
    return std::nullopt;
}

std::string range(int64_t lo, int64_t hi) { return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]"; }

}  // namespace

std::optional<double> json_number(const json& v) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s == "NaN" || s == "nan") return NAN;
        if (s == "Infinity" || s == "inf") return INFINITY;
        if (s == "-Infinity" || s == "-inf") return -INFINITY;
    }
    return std::nullopt;
}

JsonReader::JsonReader(const json& value, std::string format, std::string path)
    : value_(&value), format_(std::move(format)), path_(std::move(path)) {}

std::string JsonReader::where() const { return format_ + ": " + (path_.empty() ? "document" : path_); }

void JsonReader::invalid(const std::string& what) const { fail(ErrorCategory::InvalidModel, where() + ": " + what); }

void JsonReader::unsupported(const std::string& what) const { fail(ErrorCategory::Unsupported, where() + ": " + what); }

const JsonReader& JsonReader::expect_object() const {
    if (!value_->is_object()) invalid("must be an object");
    return *this;
}

const JsonReader& JsonReader::expect_array() const {
    if (!value_->is_array()) invalid("must be an array");
    return *this;
}

std::string JsonReader::path_of(const char* key) const { return member(path_, key); }
std::string JsonReader::path_of(size_t i) const { return element(path_, i); }

bool JsonReader::has(const char* key) const {
    expect_object();
    auto it = value_->find(key);
    return it != value_->end() && !it->is_null();
}

JsonReader JsonReader::need(const char* key) const {
    expect_object();
    auto it = value_->find(key);
    if (it == value_->end() || it->is_null()) JsonReader(*value_, format_, member(path_, key)).invalid("is missing");
    return JsonReader(*it, format_, member(path_, key));
}

std::optional<JsonReader> JsonReader::optional(const char* key) const {
    if (!has(key)) return std::nullopt;
    return JsonReader(value_->at(key), format_, member(path_, key));
}

std::string JsonReader::string(const char* key, const char* fallback) const {
    return has(key) ? string(key) : std::string(fallback);
}

size_t JsonReader::size() const {
    expect_array();
    return value_->size();
}

JsonReader JsonReader::operator[](size_t i) const {
    expect_array();
    if (i >= value_->size()) invalid("has " + std::to_string(value_->size()) + " entries, no entry " + std::to_string(i));
    return JsonReader((*value_)[i], format_, element(path_, i));
}

std::string JsonReader::string() const {
    if (!value_->is_string()) invalid("must be a string");
    return value_->get<std::string>();
}

double JsonReader::number() const {
    const std::optional<double> d = json_number(*value_);
    if (!d) invalid("must be a number (or \"NaN\", \"Infinity\", \"-Infinity\")");
    return *d;
}

double JsonReader::nullable_number() const { return value_->is_null() ? NAN : number(); }

double JsonReader::finite() const {
    const std::optional<double> d = json_number(*value_);
    if (!d || !std::isfinite(*d)) invalid("must be a finite number");
    return *d;
}

int64_t JsonReader::integer(int64_t lo, int64_t hi) const {
    const std::optional<int64_t> i = json_integer(*value_);
    if (!i) invalid("must be an integer");
    if (*i < lo || *i > hi) invalid("is " + std::to_string(*i) + ", outside " + range(lo, hi));
    return *i;
}

bool JsonReader::boolean() const {
    if (!value_->is_boolean()) invalid("must be a boolean");
    return value_->get<bool>();
}

std::vector<double> JsonReader::numbers(size_t want) const {
    expect_array();
    if (want != SIZE_MAX && value_->size() != want)
        invalid("has " + std::to_string(value_->size()) + " entries, expected " + std::to_string(want));
    std::vector<double> out;
    out.reserve(value_->size());
    for (size_t i = 0; i < value_->size(); ++i) {
        const std::optional<double> d = json_number((*value_)[i]);
        if (!d) (*this)[i].number();  // throws, naming the element
        out.push_back(*d);
    }
    return out;
}

std::vector<double> JsonReader::finite_numbers(size_t want) const {
    std::vector<double> out = numbers(want);
    for (size_t i = 0; i < out.size(); ++i)
        if (!std::isfinite(out[i])) (*this)[i].invalid("must be a finite number");
    return out;
}

std::vector<int32_t> JsonReader::integers(int64_t lo, int64_t hi) const {
    expect_array();
    std::vector<int32_t> out;
    out.reserve(value_->size());
    lo = std::max<int64_t>(lo, INT32_MIN);
    hi = std::min<int64_t>(hi, INT32_MAX);
    for (size_t i = 0; i < value_->size(); ++i) {
        const std::optional<int64_t> v = json_integer((*value_)[i]);
        if (!v || *v < lo || *v > hi) (*this)[i].integer(lo, hi);  // throws, naming the element
        out.push_back(static_cast<int32_t>(*v));
    }
    return out;
}

std::vector<std::vector<double>> JsonReader::matrix(size_t rows, size_t cols) const {
    expect_array();
    if (rows != SIZE_MAX && value_->size() != rows)
        invalid("has " + std::to_string(value_->size()) + " rows, expected " + std::to_string(rows));
    std::vector<std::vector<double>> out;
    out.reserve(value_->size());
    for (size_t r = 0; r < value_->size(); ++r) {
        out.push_back((*this)[r].numbers(cols));
        cols = out.back().size();
    }
    return out;
}

std::vector<std::vector<double>> JsonReader::ragged_matrix() const {
    expect_array();
    std::vector<std::vector<double>> out;
    out.reserve(value_->size());
    for (size_t r = 0; r < value_->size(); ++r) out.push_back((*this)[r].numbers());
    return out;
}

}  // namespace pg_predict::spec
