// pg_predict.strategy's side in the runtime: the setting's values are the compiler's names.
#include "pg_predict/runtime/strategies.hpp"

#include <cstring>

#include "pg_predict/compiler/strategy.hpp"

namespace pg_predict::runtime {

const char* strategy_name_at(std::size_t i) noexcept {
    // compiler::Strategy counts up from Auto = 0; strategy_name names each and says "unknown"
    // past the last one
    const char* name = compiler::strategy_name(static_cast<compiler::Strategy>(i));
    return std::strcmp(name, "unknown") == 0 ? nullptr : name;
}

}  // namespace pg_predict::runtime
