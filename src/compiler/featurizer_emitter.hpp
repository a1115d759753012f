// The featurizer steps' TorchScript, one family a file (column_, distribution_, category_,
// row_ and nested_featurizers.cpp): what they share. featurizer_steps.cpp's switch over Op is one
// call per case into emit_<op>, and -Werror=switch makes a new op a build error there until its
// family emits it. Private to src/compiler.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pg_predict/spec/featurizers.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler::featurizer {

// The featurize() source being written, and the buffers it reads.
struct Emitter {
    ProgramParts& parts;
    std::string src;
    int vars = 0;
    int bufs = 0;
    int64_t widest = 0;  // the most values per row any intermediate tensor holds

    std::string var() { return "h" + std::to_string(vars++); }
    void note_width(int64_t w) { widest = std::max(widest, w); }
    std::string prefix() { return "fz" + std::to_string(bufs++) + "_"; }
    void line(const std::string& s) { src += "    " + s + "\n"; }
};

// Columns `cols` of the [N, W] tensor `in` (their indices in the 1-D int64 buffer `index`).
std::string select_columns(const std::string& in, const std::string& index, const std::vector<int64_t>& cols);
// A double as a TorchScript float literal that reads back exactly.
std::string double_literal(double v);
// One step over the tensor `h` of `width` columns: the name of its result; `width` becomes its
// output's.
std::string emit_step(Emitter& e, const spec::Step& s, const std::string& h, int64_t& width);

// Each op: the step over `h` into `out`, its buffers named from `pre`; `width` in and out.
// column_featurizers.cpp
void emit_affine(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                 int64_t& width);
void emit_impute(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                 int64_t& width);
void emit_threshold(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                    int64_t& width);
void emit_clip(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
               int64_t& width);
void emit_is_missing(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                     int64_t& width);
void emit_bucketize(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                    int64_t& width);
void emit_elementwise(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                      int64_t& width);
// distribution_featurizers.cpp
void emit_power(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                int64_t& width);
void emit_quantile(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                   int64_t& width);
// category_featurizers.cpp
void emit_one_hot(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                  int64_t& width);
void emit_ordinal(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                  int64_t& width);
// row_featurizers.cpp
void emit_normalize(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                    int64_t& width);
void emit_project(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                  int64_t& width);
void emit_monomials(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                    int64_t& width);
void emit_kernel(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                 int64_t& width);
void emit_neighbors(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                    int64_t& width);
// tensor_featurizers.cpp
void emit_tensor(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                 int64_t& width);
// nested_featurizers.cpp
void emit_concat(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                 int64_t& width);
void emit_model(Emitter&, const spec::Step&, const std::string& h, const std::string& out, const std::string& pre,
                int64_t& width);

}  // namespace pg_predict::compiler::featurizer
