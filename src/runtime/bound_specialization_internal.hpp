// What cache.cpp takes from bound_specialization.cpp: the specialized pipeline for a model version and a
// set of bounds, to compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pg_predict/optimizer/specialize.hpp"
#include "pg_predict/runtime/api.hpp"

namespace pg_predict::runtime {

std::vector<InputBound> decode_bounds(const std::string& text);

// The specialization of model `id` for `bounds` (encode_bounds' text); parses spec_json when
// the model is not loaded (spec_json may be null when it is).
optimizer::Specialization specialized(int64_t id, const std::string& bounds, const char* spec_json, size_t length);

}  // namespace pg_predict::runtime
