// Recognizes the pipelines whose one-output linear margin the fused native op computes
// (kernels/linear_margin.hpp) and lays out its terms: steps that are a concat of parts, each
// part (optional impute, then optional one_hot or affine) over some input columns, or the
// same shape over all input columns without the concat. Anything else keeps the tensor program.
#include <cmath>
#include <cstdint>
#include <vector>

#include "pg_predict/kernels/linear_margin.hpp"
#include "pg_predict/spec/steps.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {
namespace {

using kernels::LinearTerm;
using kernels::LinearTermKind;

// The terms of one part: its columns through its steps, in the order the tensor program's
// columns come out (one_hot: per column, its kept categories in order).
bool part_terms(const std::vector<int32_t>& columns, const std::vector<spec::Step>& steps,
                std::vector<LinearTerm>& terms) {
    const size_t w = columns.size();
    size_t next = 0;
    const spec::Step* impute = nullptr;
    if (next < steps.size() && steps[next].op == spec::Op::Impute) impute = &steps[next++];
    const spec::Step* last = nullptr;
    if (next < steps.size() && (steps[next].op == spec::Op::OneHot || steps[next].op == spec::Op::Affine))
        last = &steps[next++];
    if (next != steps.size()) return false;

    std::vector<double> statistics(w, NAN);
    double missing = NAN;
    if (impute != nullptr) {
        statistics = spec::param_vector(*impute, "statistics", "step impute");
        missing = spec::missing_marker(*impute, "step impute");
        if (statistics.size() != w) return false;
    }
    std::vector<std::vector<double>> categories;
    std::vector<int32_t> drop;
    std::vector<double> scale, offset;
    if (last != nullptr && last->op == spec::Op::OneHot) {
        categories = spec::param_matrix(*last, "categories", "step one_hot");
        drop = spec::param_ints(*last, "drop", "step one_hot");
        if (categories.size() != w || drop.size() != w) return false;
    } else if (last != nullptr) {
        scale = spec::param_vector(*last, "scale", "step affine");
        offset = spec::param_vector(*last, "offset", "step affine");
        if (scale.size() != w || offset.size() != w) return false;
    }
    for (size_t i = 0; i < w; ++i) {
        LinearTerm t;
        t.column = columns[i];
        t.statistic = statistics[i];
        t.missing = missing;
        if (!categories.empty()) {
            t.kind = LinearTermKind::Indicator;
            for (size_t k = 0; k < categories[i].size(); ++k) {
                if (static_cast<int32_t>(k) == drop[i]) continue;
                t.a = categories[i][k];
                terms.push_back(t);
            }
        } else if (!scale.empty()) {
            t.kind = LinearTermKind::Scaled;
            t.a = scale[i];
            t.b = offset[i];
            terms.push_back(t);
        } else {
            terms.push_back(t);
        }
    }
    return true;
}

}  // namespace

bool linear_margin_terms(const spec::Pipeline& p, const std::vector<double>& coef, std::vector<LinearTerm>& terms) {
    terms.clear();
    if (p.steps.size() == 1 && p.steps[0].op == spec::Op::Concat) {
        for (const spec::Step::Part& part : p.steps[0].parts)
            if (!part_terms(part.columns, part.steps, terms)) return false;
    } else {
        std::vector<int32_t> all(static_cast<size_t>(p.input_width()));
        for (size_t c = 0; c < all.size(); ++c) all[c] = static_cast<int32_t>(c);
        if (!part_terms(all, p.steps, terms)) return false;
    }
    if (terms.size() != coef.size()) return false;  // the tensor program reports the mismatch
    for (size_t j = 0; j < terms.size(); ++j) {
        if (terms[j].column < 0 || terms[j].column >= p.input_width()) return false;
        terms[j].weight = coef[j];
    }
    return true;
}

}  // namespace pg_predict::compiler
