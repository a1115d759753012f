// libFuzzer target: arbitrary bytes given as text and as bytea to import_model("auto"): every
// detection rule (JSON, LightGBM text, ONNX ModelProto, TorchScript zip directory) and the
// importer of whatever format they detect. An Error is a correct answer unless Internal.
#include <string_view>

#include "harness.hpp"
#include "pg_predict/importers/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace pg_predict;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    importers::looks_like_lightgbm(bytes);
    importers::looks_like_onnx(bytes);
    importers::looks_like_torchscript(bytes);
    const nlohmann::json options = {{"features", {"a", "b"}}};
    for (ArtifactKind kind : {ArtifactKind::Text, ArtifactKind::Binary}) {
        try {
            spec::Pipeline p = importers::import_model(Artifact{kind, bytes}, "auto", options);
            spec::validate(p);
        } catch (const Error& e) {
            if (e.category() == ErrorCategory::Internal) fuzz::bug(std::string("internal error: ") + e.what());
        }
    }
    return 0;
}
