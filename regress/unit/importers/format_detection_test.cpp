// Format detection (src/importers/detect.cpp, import.cpp's table): each rule on real and
// damaged bytes, and the dispatch by SQL type.
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <torch/script.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"

namespace pg_predict {
namespace {

using importers::looks_like_lightgbm;
using importers::looks_like_onnx;
using importers::looks_like_torchscript;

std::string saved_module() {
    torch::jit::Module m("Net");
    m.define("def forward(self, x: Tensor) -> Tensor:\n    return x.sum(1)\n");
    std::ostringstream out;
    m.save(out);
    return out.str();
}

// A ModelProto by hand: ir_version 7, producer_name "t", graph {name "g"}.
std::string model_proto(bool with_graph = true) {
    std::string b = {0x08, 0x07, 0x12, 0x01, 't'};
    if (with_graph) b += std::string{0x3a, 0x03, 0x0a, 0x01, 'g'};
    return b;
}

std::string error_of(const Artifact& a, const std::string& format) {
    try {
        importers::import_model(a, format, nlohmann::json::object());
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(FormatDetection, LightGBMText) {
    EXPECT_TRUE(looks_like_lightgbm("tree\nversion=v4\nnum_class=1\n"));
    EXPECT_TRUE(looks_like_lightgbm("tree\r\nversion=v3\r\n"));
    EXPECT_FALSE(looks_like_lightgbm("tree\nversion=4\n"));
    EXPECT_FALSE(looks_like_lightgbm("trees\nversion=v4\n"));
    EXPECT_FALSE(looks_like_lightgbm("tree"));
    EXPECT_FALSE(looks_like_lightgbm(""));
}

TEST(FormatDetection, OnnxModelProto) {
    EXPECT_TRUE(looks_like_onnx(model_proto()));
    EXPECT_FALSE(looks_like_onnx(model_proto(false)));            // no graph
    const std::string full = model_proto();
    for (size_t n = 0; n < full.size(); ++n) EXPECT_FALSE(looks_like_onnx(full.substr(0, n))) << n;
    std::string zero = full;
    zero[1] = 0x00;  // ir_version 0
    EXPECT_FALSE(looks_like_onnx(zero));
    EXPECT_FALSE(looks_like_onnx(std::string{0x12, 0x01, 't'} + full.substr(5)));  // field 1 not first
    EXPECT_FALSE(looks_like_onnx("{\"learner\": {}}"));
    EXPECT_FALSE(looks_like_onnx(std::string(16, '\xff')));       // a varint that never ends
}

TEST(FormatDetection, TorchScriptArchive) {
    const std::string module = saved_module();
    EXPECT_TRUE(looks_like_torchscript(module));
    EXPECT_FALSE(looks_like_torchscript(module.substr(0, module.size() - 1)));  // end of directory cut
    EXPECT_FALSE(looks_like_torchscript(module.substr(0, module.size() / 2)));
    EXPECT_FALSE(looks_like_torchscript("PK\x03\x04"));
    EXPECT_FALSE(looks_like_torchscript(""));
    // a zip archive with data.pkl but no code/ (Python's torch.save of a state_dict) is in
    // test_torchscript.py: libtorch's C++ torch::save writes a module archive
}

TEST(FormatDetection, DispatchBySqlType) {
    const std::string module = saved_module();
    EXPECT_EQ(importers::detect_format(Artifact{ArtifactKind::Binary, module}), "torchscript");
    EXPECT_TRUE(importers::is_torchscript(Artifact{ArtifactKind::Binary, module}, "auto"));
    EXPECT_FALSE(importers::is_torchscript(Artifact{ArtifactKind::Text, "tree\nversion=v4"}, "auto"));
    EXPECT_TRUE(importers::is_torchscript(Artifact{ArtifactKind::Text, "x"}, "torchscript"));
    EXPECT_EQ(importers::detect_format(Artifact{ArtifactKind::Text, " {\"format\": \"sklearn\"}"}), "sklearn");
    EXPECT_NE(error_of(Artifact{ArtifactKind::Text, "x"}, "torchscript")
                  .find("model format \"torchscript\" is given as bytea, not text"),
              std::string::npos);
    EXPECT_NE(error_of(Artifact{ArtifactKind::Binary, std::string("\0\1\2", 3)}, "auto")
                  .find("the bytea value is no format we know (formats a bytea value may hold: xgboost"),
              std::string::npos);
    EXPECT_NE(error_of(Artifact{ArtifactKind::Binary, module}, "nosuch").find("known formats: auto, xgboost"),
              std::string::npos);
    // the torchscript importer reads only the options; the module is the compiler's
    const spec::Pipeline p = importers::import_model(
        Artifact{ArtifactKind::Binary, module}, "auto",
        {{"features", {"a", "b"}}, {"task", "classification"}, {"classes", {1, 2, 3}}});
    EXPECT_EQ(p.source_format, "torchscript");
    EXPECT_EQ(p.estimator.op, spec::Op::TorchScript);
    EXPECT_EQ(p.model.num_features, 2);
    EXPECT_EQ(p.output_width(), 3);
}

}  // namespace
}  // namespace pg_predict
