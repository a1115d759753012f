// The optimizer's entry point: the passes in order, each recorded, the result validated.
#include "pg_predict/optimizer/optimize.hpp"

#include "pg_predict/common/error.hpp"
#include "pg_predict/optimizer/passes.hpp"

namespace pg_predict::optimizer {

spec::Pipeline optimize(const spec::Pipeline& in, Report* report) {
    using Pass = spec::Pipeline (*)(const spec::Pipeline&, std::vector<std::string>&);
    // Unused-column removal runs on the imported pipeline, before fusion can turn a zero scale
    // into a zero weight (a zero weight reads nothing; a zero scale still passes NaN on). Its
    // report keeps the name "prune_columns": EXPLAIN and the regression output show it.
    static const std::pair<const char*, Pass> passes[] = {
        {"prune_columns", remove_unused_columns},
        {"simplify_concat", simplify_concat},
        {"fuse_linear", fuse_linear},
        {"simplify_concat", simplify_concat},  // fusion can leave passthrough parts behind
    };
    // An ensemble's members first, each as if alone; reported only where there are some.
    std::vector<std::string> member_changes;
    spec::Pipeline p = optimize_members(in, member_changes);
    if (report != nullptr && !member_changes.empty())
        report->passes.push_back(PassReport{"optimize_members", std::move(member_changes)});
    for (const auto& [name, pass] : passes) {
        PassReport r{name, {}};
        p = pass(p, r.changes);
        if (report != nullptr) report->passes.push_back(std::move(r));
    }
    try {
        spec::validate(p);
    } catch (const Error& e) {
        fail(ErrorCategory::Internal, std::string("the optimizer produced an invalid pipeline: ") + e.what());
    }
    return p;
}

}  // namespace pg_predict::optimizer
