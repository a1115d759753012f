// libFuzzer target: ONNX ModelProto bytes through import_onnx and everything behind it
// (harness.hpp). Seeded with the converters' graphs of regress/fixtures/onnx.
#include "harness.hpp"
#include "pg_predict/importers/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    pg_predict::spec::Pipeline p;
    try {
        p = pg_predict::importers::import_onnx(bytes, nlohmann::json::object());
    } catch (const pg_predict::Error& e) {
        if (e.category() == pg_predict::ErrorCategory::Internal)
            pg_predict::fuzz::bug(std::string("internal error: ") + e.what());
        return 0;
    }
    try {
        pg_predict::fuzz::exercise(p);
    } catch (const pg_predict::Error& e) {
        if (e.category() == pg_predict::ErrorCategory::Internal)
            pg_predict::fuzz::bug(std::string("internal error: ") + e.what());
    }
    return 0;
}
