// libFuzzer target: stored pipeline specs (the catalog's spec column, read back for every
// recompile and by explain_model) through spec::from_json and everything behind it
// (harness.hpp).
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return pg_predict::fuzz::run(data, size, "pipeline spec", [](const std::string& text, const nlohmann::json&) {
        pg_predict::fuzz::exercise(pg_predict::spec::from_json(text));
    });
}
