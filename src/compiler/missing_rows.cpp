// A tree ensemble without a rule for a missing value (spec::TreeEnsemble::
// inputs_without_missing_rule) has no margin for a row with a NaN in one of those inputs: its
// programs mask such rows to NaN, so the prediction is NULL (docs/semantics.md).
#include "program_parts.hpp"

namespace pg_predict::compiler {

std::string missing_rows_mask(const spec::TreeEnsemble& e, ProgramParts& parts) {
    const std::vector<int32_t>& inputs = e.inputs_without_missing_rule;
    if (inputs.empty()) return "";
    const auto n = static_cast<int64_t>(inputs.size());
    parts.buffers.push_back(make_i64("missing_inputs", {n}, std::vector<int64_t>(inputs.begin(), inputs.end())));
    if (n == e.num_features) return "torch.isnan(x).any(1, keepdim=True)";  // every input: no gather
    return "torch.isnan(x.index_select(1, self.missing_inputs)).any(1, keepdim=True)";
}

}  // namespace pg_predict::compiler
