// spec → serialized TorchScript module. The header is torch-free; the bytes it returns are
// what the catalog stores and what runtime::load_program reads back.
#pragma once

#include <string>

#include "pg_predict/compiler/strategy.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::compiler {

// The module's forward(x: Tensor[N, F] float32) -> Tensor[N, output_width] float32 returns
// what predict_proba returns for classification (class probabilities, model class order) and
// the predicted value for regression. `strategy` must not be Auto (resolve it first).
std::string compile(const spec::Pipeline&, Strategy strategy);

}  // namespace pg_predict::compiler
