// The values of the pg_predict.strategy setting, from the compiler's strategies (torch-free).
#pragma once

#include <cstddef>

namespace pg_predict::runtime {

// The i-th strategy name ("auto" first, then every other compiler::Strategy), nullptr past the
// last. The setting's enum is built from it, so a strategy added to the compiler becomes a
// value of the setting (and rows of the bench, which reads pg_settings.enumvals). Never throws.
const char* strategy_name_at(std::size_t i) noexcept;

}  // namespace pg_predict::runtime
