// Per-backend cache of loaded programs keyed by catalog row id. A backend is single
// threaded, so no locking. Programs in use (refs > 0) are never evicted; beyond
// kMaxCached entries the least recently used idle ones go.
#include <string>
#include <unordered_map>

#include "pg_predict/common/error.hpp"
#include "pg_predict/runtime/api.hpp"
#include "program_internal.hpp"

namespace pg_predict::runtime {
namespace {

constexpr size_t kMaxCached = 16;

struct Cache {
    std::unordered_map<int64_t, Program*> programs;
    uint64_t clock = 0;
};

// Built on first use, never in a static initializer.
Cache& cache() {
    static Cache* c = new Cache;
    return *c;
}

void destroy(Program* p) {
    free_module(p->module);
    delete p;
}

void evict_idle() {
    Cache& c = cache();
    while (c.programs.size() > kMaxCached) {
        auto victim = c.programs.end();
        for (auto it = c.programs.begin(); it != c.programs.end(); ++it)
            if (it->second->refs == 0 &&
                (victim == c.programs.end() || it->second->last_used < victim->second->last_used))
                victim = it;
        if (victim == c.programs.end()) return;  // all in use: over the bound for now
        destroy(victim->second);
        c.programs.erase(victim);
    }
}

Program* hold(Program* p) {
    ++p->refs;
    p->last_used = ++cache().clock;
    return p;
}

}  // namespace

Program* acquire_cached_program(int64_t id) {
    auto it = cache().programs.find(id);
    return it == cache().programs.end() ? nullptr : hold(it->second);
}

Program* load_program(int64_t id, const void* bytes, size_t length) {
    // Ids are never reused for different bytes, so a cached one is the same program.
    if (Program* p = acquire_cached_program(id)) return p;
    auto* p = new Program;
    p->id = id;
    try {
        p->module = load_module(bytes, length, p->num_features, p->output_width);
    } catch (...) {
        delete p;
        throw;
    }
    cache().programs.emplace(id, p);
    hold(p);
    evict_idle();
    return p;
}

void release_program(Program* p) {
    if (p == nullptr) return;
    if (p->refs <= 0)
        fail(ErrorCategory::Internal, "release_program: program " + std::to_string(p->id) +
                                          " released more often than acquired");
    --p->refs;
    if (p->refs == 0) evict_idle();
}

int program_output_width(const Program* p) {
    if (p == nullptr) fail(ErrorCategory::Internal, "program_output_width: null program");
    return p->output_width;
}

}  // namespace pg_predict::runtime
