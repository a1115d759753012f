// libFuzzer target: LightGBM model texts through import_lightgbm and everything behind it
// (harness.hpp's exercise: validation, optimizer, the spec's JSON round trip, reference
// evaluation). The input is the text itself, not a JSON document.
#include <string>

#include "harness.hpp"
#include "pg_predict/importers/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        pg_predict::fuzz::exercise(pg_predict::importers::import_lightgbm(text, nlohmann::json::object()));
    } catch (const pg_predict::Error& e) {
        if (e.category() == pg_predict::ErrorCategory::Internal)
            pg_predict::fuzz::bug(std::string("internal error: ") + e.what());
    }
    return 0;
}
