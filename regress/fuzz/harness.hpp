// What every fuzz target does with a document: the path of create_model up to the compiler
// (depth check, parse, import, validate, optimize, the spec's JSON round trip) plus the
// reference evaluation of the imported and the optimized pipeline. The compiler needs
// libtorch and is left out. An Error is a correct answer, except an Internal one (a broken
// invariant); anything else thrown, and any sanitizer report, is a bug libFuzzer records.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/optimizer/unused_inputs.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::fuzz {

[[noreturn]] inline void bug(const std::string& what) {
    std::fprintf(stderr, "pg_predict fuzz: %s\n", what.c_str());
    std::abort();
}

// Scores one row of zeros and one of NaN (missing), when the model is small enough to do it
// quickly: evaluation of any validated spec must stay in bounds.
inline void evaluate(const spec::Pipeline& p) {
    int64_t nodes = 0;
    for (const spec::Tree& t : p.model.trees) nodes += static_cast<int64_t>(t.size());
    if (p.input_width() > 4096 || nodes > 100000 || p.output_width() > 4096) return;
    std::vector<float> x(2 * static_cast<size_t>(p.input_width()), 0.0f);
    for (size_t i = x.size() / 2; i < x.size(); ++i) x[i] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> out(2 * static_cast<size_t>(p.output_width()));
    spec::reference_predict(p, x.data(), 2, out.data());
}

// Where a target writes the specs it imported (FUZZ_WRITE_SPECS=dir): the spec target's seeds.
inline void maybe_write_spec(const std::string& text) {
    static const char* dir = std::getenv("FUZZ_WRITE_SPECS");
    static int n = 0;
    if (dir == nullptr) return;
    std::ofstream(std::string(dir) + "/spec-" + std::to_string(getpid()) + "-" + std::to_string(++n) + ".json")
        << text;
}

inline void exercise(const spec::Pipeline& p) {
    const std::string text = spec::to_json(p);
    maybe_write_spec(text);
    spec::Pipeline back;
    try {
        back = spec::from_json(text);  // the catalog keeps this text: it must read back
    } catch (const Error& e) {
        bug(std::string("the spec of an imported model does not read back: ") + e.what());
    }
    if (spec::to_json(back) != text) bug("the spec's JSON round trip changed it");
    const spec::Pipeline optimized = optimizer::optimize(p);
    optimizer::unused_inputs(optimized);
    evaluate(p);
    evaluate(optimized);
}

// Runs `body` on the parsed document; expected errors end the input quietly.
inline int run(const uint8_t* data, size_t size, const char* what,
               const std::function<void(const std::string&, const nlohmann::json&)>& body) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    nlohmann::json doc;
    try {
        spec::check_json_depth(text, what);
        doc = nlohmann::json::parse(text);
    } catch (const Error&) {
        return 0;
    } catch (const nlohmann::json::exception&) {
        return 0;
    }
    try {
        body(text, doc);
    } catch (const Error& e) {
        if (e.category() == ErrorCategory::Internal) bug(std::string("internal error: ") + e.what());
    }
    return 0;
}

}  // namespace pg_predict::fuzz
