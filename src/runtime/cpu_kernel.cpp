// pg_predict.cpu_kernel's side in the runtime: names of the native kernel's paths, what this
// build and CPU offer, and the process-wide choice (kernels::set_process_isa).
#include <string>

#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/runtime/api.hpp"

namespace pg_predict::runtime {

using kernels::Isa;

bool cpu_kernel_available(const char* name) noexcept {
    try {  // parse_isa and available_isas allocate: bad_alloc
        Isa isa;
        if (name == nullptr || !kernels::parse_isa(name, &isa)) return false;
        if (isa == Isa::Auto) return true;
        for (Isa have : kernels::available_isas())
            if (have == isa) return true;
    } catch (...) {
    }
    return false;
}

const char* available_cpu_kernels() noexcept {
    try {
        static const std::string text = [] {
            std::string s;
            for (Isa isa : kernels::available_isas()) s += (s.empty() ? "" : ", ") + std::string(kernels::isa_name(isa));
            return s;
        }();
        return text.c_str();
    } catch (...) {
        return "portable";
    }
}

void set_cpu_kernel(const char* name) noexcept {
    try {
        Isa isa;
        if (name != nullptr && kernels::parse_isa(name, &isa)) kernels::set_process_isa(isa);
    } catch (...) {  // unavailable (or bad_alloc): keep the current path
    }
}

void set_bitvector_layout(bool on) noexcept { kernels::set_bitvector_enabled(on); }

bool bitvector_layout_built() noexcept { return kernels::bitvector_built(); }

const char* native_cpu_kernel(int depth, int num_features, const char* layout) noexcept {
    const std::string known = layout != nullptr ? layout : "";
    if (known == "generic" || (known == "bitvector" && !kernels::bitvector_enabled())) return "generic";
    // A model stored before its layout was recorded: pack() then chose the generic layout
    // beyond these (and for NaN thresholds, which no importer produces).
    if (known.empty() && (depth > kernels::kMaxPerfectDepth || num_features > 128)) return "generic";
    try {
        const Isa isa = kernels::resolve_isa(kernels::process_isa());
        if (known == "bitvector")  // scored by the AVX2 code on AVX-512 CPUs too
            return isa == Isa::Avx2 || isa == Isa::Avx512 ? "bitvector (avx2)" : "bitvector (portable)";
        return kernels::isa_name(isa);
    } catch (...) {
        return "portable";
    }
}

}  // namespace pg_predict::runtime
