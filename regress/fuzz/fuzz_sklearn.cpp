// libFuzzer target: sklearn documents through import_model("sklearn") and everything behind it
// (harness.hpp).
#include "harness.hpp"
#include "pg_predict/importers/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return pg_predict::fuzz::run(data, size, "model document", [](const std::string&, const nlohmann::json& doc) {
        pg_predict::fuzz::exercise(pg_predict::importers::import_model(doc, "sklearn"));
    });
}
