// optimize_members: each op model step's nested pipeline (an ensemble's member) through the
// whole optimizer, as it would be optimized alone.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/optimizer/passes.hpp"

namespace pg_predict::optimizer {

namespace {

void visit(std::vector<spec::Step>& steps, const std::string& where, std::vector<std::string>& changes) {
    for (size_t i = 0; i < steps.size(); ++i) {
        check_interrupts();
        spec::Step& s = steps[i];
        const std::string at = where + "[" + std::to_string(i) + "]";
        for (size_t j = 0; j < s.parts.size(); ++j) visit(s.parts[j].steps, at + ".parts[" + std::to_string(j) + "].steps", changes);
        if (s.op != spec::Op::Model) continue;
        const spec::Pipeline member = spec::model_pipeline(s, at);
        const std::string before = spec::to_json(member);
        const std::string after = spec::to_json(optimize(member));
        if (after == before) continue;
        s.params["pipeline"] = nlohmann::json::parse(after);
        changes.push_back(at + " model: its pipeline optimized");
    }
}

}  // namespace

spec::Pipeline optimize_members(const spec::Pipeline& in, std::vector<std::string>& changes) {
    spec::Pipeline p = in;
    visit(p.steps, "steps", changes);
    return p;
}

}  // namespace pg_predict::optimizer
