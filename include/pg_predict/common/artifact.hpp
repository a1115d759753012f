// A model artifact as create_model received it. Torch- and JSON-free: src/pg builds one.
#pragma once

#include <string_view>

namespace pg_predict {

// Its SQL type decides how its bytes are read.
enum class ArtifactKind {
    Json,    // jsonb: XGBoost JSON, the scikit-learn document
    Text,    // text: LightGBM's model.txt (or a JSON document given as text)
    Binary,  // bytea: ONNX ModelProto, TorchScript archive (or any of the above as bytes)
};

struct Artifact {
    ArtifactKind kind = ArtifactKind::Json;
    std::string_view bytes;  // the JSON text, the text, or the raw bytes
};

// "jsonb", "text" or "bytea".
const char* artifact_kind_name(ArtifactKind);

}  // namespace pg_predict
